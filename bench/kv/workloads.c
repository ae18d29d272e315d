/*
 * workloads.c — the workload table of `ruma kv` (kv.h).
 *
 * YCSB's core workloads as its workloads/workload[a-f] files define them
 * (brianfrankcooper/YCSB): A update heavy (read 0.5 / update 0.5), B read
 * mostly (0.95 / 0.05), C read only, D read latest (read 0.95 / insert
 * 0.05, requestdistribution=latest), E short ranges (scan 0.95 / insert
 * 0.05, maxscanlength=100, scanlengthdistribution=uniform), F
 * read-modify-write (read 0.5 / readmodifywrite 0.5); zipfian requests
 * unless D.  Keys are YCSB's: "user" and the FNV hash of the key number
 * (insertorder=hashed, zeropadding=1).
 *
 * db_bench's benchmarks (google/leveldb benchmarks/db_bench.cc, RocksDB's
 * tools/db_bench_tool.cc): fillseq, fillrandom, overwrite, fillsync
 * (fillrandom with every write synced), readrandom, readseq, readreverse,
 * readwhilewriting (the threads read uniformly while one more thread
 * overwrites); keys are the key number as 16 decimal digits.  Beside
 * them, two of ruma's own: scanfull (each operation one scan of the whole
 * table in one read-only transaction) and scanwhilewriting (the same while
 * one more thread overwrites uniform keys, as readwhilewriting), every
 * scan checked to have read one committed state (snapcheck.h).
 */
#include "bench/kv/kv.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MIX(r, u, i, s, m) { [RUMA_KV_READ] = r, [RUMA_KV_UPDATE] = u, [RUMA_KV_INSERT] = i, \
			     [RUMA_KV_SCAN] = s, [RUMA_KV_RMW] = m }
#define YCSB(n, w, mx, d, sc) \
	{ .name = n, .what = w, .keys = RUMA_KV_KEYS_YCSB, .pattern = RUMA_KV_MIX, .mix = mx, \
	  .dist = d, .load = true, .max_scan = sc }

static const ruma_kv_workload ycsb[] = {
	YCSB("a", "YCSB A: read 50 %, update 50 %, zipfian", MIX(0.5, 0.5, 0, 0, 0),
	     RUMA_KV_ZIPFIAN, 0),
	YCSB("b", "YCSB B: read 95 %, update 5 %, zipfian", MIX(0.95, 0.05, 0, 0, 0),
	     RUMA_KV_ZIPFIAN, 0),
	YCSB("c", "YCSB C: read 100 %, zipfian", MIX(1, 0, 0, 0, 0), RUMA_KV_ZIPFIAN, 0),
	YCSB("d", "YCSB D: read 95 %, insert 5 %, latest", MIX(0.95, 0, 0.05, 0, 0),
	     RUMA_KV_LATEST, 0),
	YCSB("e", "YCSB E: scan 95 % (1..100 entries), insert 5 %, zipfian",
	     MIX(0, 0, 0.05, 0.95, 0), RUMA_KV_ZIPFIAN, 100),
	YCSB("f", "YCSB F: read 50 %, read-modify-write 50 %, zipfian", MIX(0.5, 0, 0, 0, 0.5),
	     RUMA_KV_ZIPFIAN, 0),
};

#define DBB(n, w, p, mx, ld, ...) \
	{ .name = n, .what = w, .keys = RUMA_KV_KEYS_DBBENCH, .pattern = p, .mix = mx, \
	  .dist = RUMA_KV_UNIFORM, .load = ld, __VA_ARGS__ }

static const ruma_kv_workload dbbench[] = {
	DBB("fillseq", "db_bench fillseq: insert ascending keys", RUMA_KV_FILLSEQ,
	    MIX(0, 0, 1, 0, 0), false, .max_scan = 0),
	DBB("fillrandom", "db_bench fillrandom: put uniform keys of [0, records)",
	    RUMA_KV_FILLRANDOM, MIX(0, 1, 0, 0, 0), false, .max_scan = 0),
	DBB("overwrite", "db_bench overwrite: put uniform existing keys", RUMA_KV_MIX,
	    MIX(0, 1, 0, 0, 0), true, .max_scan = 0),
	DBB("fillsync", "db_bench fillsync: fillrandom, every write synced", RUMA_KV_FILLRANDOM,
	    MIX(0, 1, 0, 0, 0), false, .force_sync = true),
	DBB("readrandom", "db_bench readrandom: get uniform existing keys", RUMA_KV_MIX,
	    MIX(1, 0, 0, 0, 0), true, .max_scan = 0),
	DBB("readseq", "db_bench readseq: the table in key order (ops = entries)",
	    RUMA_KV_READSEQ, MIX(0, 0, 0, 1, 0), true, .max_scan = 100),
	DBB("readreverse", "db_bench readreverse: the table in reverse order (ops = entries)",
	    RUMA_KV_READREVERSE, MIX(0, 0, 0, 1, 0), true, .max_scan = 100),
	DBB("readwhilewriting", "db_bench readwhilewriting: readrandom while one more thread "
	    "overwrites", RUMA_KV_MIX, MIX(1, 0, 0, 0, 0), true, .writer = true),
	DBB("scanfull", "the whole table, one read transaction a scan (ops = scans), checked",
	    RUMA_KV_SCANFULL, MIX(0, 0, 0, 1, 0), true, .max_scan = 0),
	DBB("scanwhilewriting", "scanfull while one more thread overwrites uniform keys",
	    RUMA_KV_SCANFULL, MIX(0, 0, 0, 1, 0), true, .writer = true),
};

const ruma_kv_workload *const ruma_kv_workloads[] = {
	&ycsb[0], &ycsb[1], &ycsb[2], &ycsb[3], &ycsb[4], &ycsb[5],
	&dbbench[0], &dbbench[1], &dbbench[2], &dbbench[3],
	&dbbench[4], &dbbench[5], &dbbench[6], &dbbench[7], &dbbench[8], &dbbench[9], NULL,
};

const ruma_kv_workload *ruma_kv_find_workload(const char *name)
{
	for (size_t i = 0; ruma_kv_workloads[i]; i++)
		if (!strcmp(ruma_kv_workloads[i]->name, name))
			return ruma_kv_workloads[i];
	return NULL;
}

const char *ruma_kv_op_name(ruma_kv_op op)
{
	static const char *const names[RUMA_KV_NOPS] = { "read", "update", "insert", "scan",
							 "rmw" };
	return op < RUMA_KV_NOPS ? names[op] : "?";
}

size_t ruma_kv_key(ruma_kv_keys keys, uint64_t n, char *buf)
{
	int len = keys == RUMA_KV_KEYS_YCSB
			  ? snprintf(buf, RUMA_KV_KEY_MAX, "user%" PRIu64, ruma_kv_fnv(n))
			  : snprintf(buf, RUMA_KV_KEY_MAX, "%016" PRIu64, n);
	return (size_t)len;
}
