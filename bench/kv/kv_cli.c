/*
 * kv_cli.c — the command line of `ruma kv` (kv.h): the options table
 * (bench/common/opt.h), the names resolved against the system and
 * workload tables, every value checked before anything runs; a bad one
 * gives "ruma kv: ...\n" and exit status 2.  The usage text.
 *
 * No system calls; RUMA_SEED comes from the caller's envp.
 */
#include "bench/common/opt.h"
#include "bench/kv/kv.h"

#include <ruma/core.h>

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The names as given; resolved after the table parsed. */
struct raw {
	ruma_kv_opts o;
	const char *system, *workload, *dist, *durability;
};

#define O(f) offsetof(struct raw, o.f)
#define S(f) offsetof(struct raw, f)

static const ruma_opt options[] = {
	{ "--system", RUMA_OPT_STR, S(system), 0, 0, "a system name", NULL, RUMA_OPT_NONEMPTY },
	{ "--workload", RUMA_OPT_STR, S(workload), 0, 0, "a workload", NULL, RUMA_OPT_NONEMPTY },
	{ "--distribution", RUMA_OPT_STR, S(dist), 0, 0, "zipfian, uniform or latest", NULL,
	  RUMA_OPT_NONEMPTY },
	{ "--durability", RUMA_OPT_STR, S(durability), 0, 0, "sync or none", NULL,
	  RUMA_OPT_NONEMPTY },
	{ "--dir", RUMA_OPT_STR, O(dir), 0, 0, "a directory", NULL, RUMA_OPT_NONEMPTY },
	{ "--result", RUMA_OPT_STR, O(result), 0, 0, "a file name", NULL, RUMA_OPT_NONEMPTY },
	{ "--records", RUMA_OPT_U64, O(records), 1, 1ull << 40, "1 .. 2^40 records", NULL, 0 },
	{ "--value-size", RUMA_OPT_BYTES, O(value_size), 8, 1 << 20, "8 bytes .. 1 MiB", NULL,
	  0 },
	{ "--memory-limit", RUMA_OPT_BYTES, O(memory), 16ull << 20, 1ull << 40,
	  "16 MiB .. 1 TiB (K, M, G suffixes)", NULL, 0 },
	{ "--cgroup", RUMA_OPT_FLAG, O(cgroup), 0, 0, NULL, NULL, 0 },
	{ "--cgroup-limit", RUMA_OPT_BYTES, O(cgroup_limit), 16ull << 20, 1ull << 40,
	  "16 MiB .. 1 TiB (K, M, G suffixes)", NULL, 0 },
	{ "--threads", RUMA_OPT_UINT, O(threads), 1, RUMA_KV_MAX_THREADS, "1 .. 64 threads",
	  NULL, 0 },
	{ "--runfor", RUMA_OPT_U64, O(runfor), 1, 86400, "1 .. 86400 seconds", NULL, 0 },
	{ "--ops", RUMA_OPT_U64, O(ops), 0, UINT64_MAX, "operations per thread (0: --runfor)",
	  NULL, 0 },
	{ "--load-batch", RUMA_OPT_U64, O(load_batch), 1, 1000000, "1 .. 1e6 inserts", NULL, 0 },
	{ "--seed", RUMA_OPT_U64, O(seed), 0, UINT64_MAX, "a whole number", NULL, 0 },
	{ "--quiet", RUMA_OPT_FLAG, O(quiet), 0, 0, NULL, NULL, 0 },
	{ "--check", RUMA_OPT_FLAG, O(check), 0, 0, NULL, NULL, 0 },
	{ "--list", RUMA_OPT_FLAG, O(list), 0, 0, NULL, NULL, 0 },
	{ "--help", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
};

/* "ruma kv: <message>\n" into err; RUMA_EPARSE. */
#define fail(err, len, ...) ruma_opt_say("kv", err, len, __VA_ARGS__)

/* The workload names, comma-separated. */
static const char *workload_names(char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (size_t i = 0; ruma_kv_workloads[i] && at < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", ruma_kv_workloads[i]->name);
		if (n < 0)
			break;
		at += (size_t)n;
	}
	return buf;
}

/* --system, --workload, --distribution, --durability into o. */
static int resolve(struct raw *w, char *err, size_t len)
{
	ruma_kv_opts *o = &w->o;
	char names[256];
	o->sys = ruma_kv_find_system(w->system ? w->system : "ruma");
	if (!o->sys)
		return fail(err, len, "--system '%s': not built into this binary (built: %s; the "
			    "peers need -DRUMA_PEERS=ON and ./dev.sh bench-deps)", w->system,
			    ruma_kv_system_names(names, sizeof(names)));
	o->wl = ruma_kv_find_workload(w->workload ? w->workload : "a");
	if (!o->wl)
		return fail(err, len, "--workload '%s': unknown (known: %s)", w->workload,
			    workload_names(names, sizeof(names)));
	o->dist = o->wl->dist;
	if (w->dist && !ruma_kv_dist_parse(w->dist, &o->dist))
		return fail(err, len, "--distribution '%s': expected zipfian, uniform or latest",
			    w->dist);
	if (w->durability && strcmp(w->durability, "sync") && strcmp(w->durability, "none"))
		return fail(err, len, "--durability '%s': expected sync (every commit durable) or "
			    "none (no commit waits for the disk)", w->durability);
	o->durability = w->durability && !strcmp(w->durability, "none") ? RUMA_KV_NONE
									  : RUMA_KV_SYNC;
	return 0;
}

/* scanfull, scanwhilewriting: values hold a key number and a stamp; one
 * scan (at most UINT32_MAX entries) holds the table and its meta row. */
static int check_scanfull(const ruma_kv_opts *o, char *err, size_t len)
{
	if (o->wl->pattern != RUMA_KV_SCANFULL)
		return 0;
	if (o->value_size < 16)
		return fail(err, len, "--value-size %" PRIu64 ": %s's values hold a key number and a "
			    "stamp, 16 bytes at least", o->value_size, o->wl->name);
	if (o->records >= UINT32_MAX)
		return fail(err, len, "--records %" PRIu64 ": %s scans at most %u records (and its "
			    "meta row) at once", o->records, o->wl->name, UINT32_MAX - 1);
	return 0;
}

/* Values worth more than the memory budget make an out-of-memory run, which
 * compares fairly only with every system's memory bounded, the kernel's
 * page cache included (LMDB, SQLite and LevelDB read through it): refused
 * without --cgroup rather than measured unfairly. */
static int check_out_of_memory(const ruma_kv_opts *o, char *err, size_t len)
{
	char data[32], mem[32];
	uint64_t bytes;
	if (o->cgroup || o->cgroup_limit)
		return 0;
	if (__builtin_mul_overflow(o->records, o->value_size, &bytes))
		bytes = UINT64_MAX;
	if (bytes <= o->memory)
		return 0;
	return fail(err, len, "--records %" PRIu64 " of %" PRIu64 " bytes (%s) exceed "
		    "--memory-limit %s: an out-of-memory run needs --cgroup, so that no system "
		    "uses memory beyond the budget (the kernel's page cache included)", o->records,
		    o->value_size, ruma_format_size(bytes, data, sizeof(data)),
		    ruma_format_size(o->memory, mem, sizeof(mem)));
}

int ruma_kv_parse(int argc, char **argv, char *const *envp, ruma_kv_opts *o, char *err,
		  size_t errlen)
{
	struct raw w = { .o = {
		.dir = "/tmp/ruma-kv", .records = 1000000, .value_size = 1000,
		.memory = 1ull << 30, .threads = 1, .runfor = 10, .load_batch = 1000,
		.seed = ruma_opt_env_seed(envp),
	} };
	bool help;
	memset(o, 0, sizeof(*o));
	int rc = ruma_opt_parse_driver("kv", options, RUMA_ARRAY_SIZE(options), argc, argv, &w,
				       &help, err, errlen);
	if (rc || help) {
		o->help = help;
		return rc;
	}
	if ((rc = resolve(&w, err, errlen)))
		return rc;
	if ((rc = check_scanfull(&w.o, err, errlen)) ||
	    (rc = check_out_of_memory(&w.o, err, errlen)))
		return rc;
	if (w.o.wl->pattern == RUMA_KV_READSEQ || w.o.wl->pattern == RUMA_KV_READREVERSE) {
		if (w.o.records < w.o.threads)
			return fail(err, errlen, "--records %" PRIu64 ": %s needs at least one "
				    "record per thread", w.o.records, w.o.wl->name);
	}
	*o = w.o;
	return 0;
}

void ruma_kv_usage(FILE *f)
{
	char names[256];
	fprintf(f,
		"usage: ruma kv [options]\n"
		"\n"
		"YCSB's core workloads and db_bench's fills and reads against ruma's store\n"
		"(db.h) and the embedded stores built in as peers (docs/bench/ycsb.md).\n"
		"A load phase (YCSB, and db_bench's reads and overwrite), then a run phase.\n"
		"Options:\n"
		"  --system S         built: %s  [ruma]\n"
		"  --workload W       see below                                  [a]\n"
		"  --distribution D   zipfian (scrambled, 0.99), uniform, latest [the workload's]\n"
		"  --records N        entries loaded (db_bench: the key range)   [1e6]\n"
		"  --value-size B     bytes per value (YCSB: 10 fields of 100 B)  [1000]\n"
		"  --memory-limit B   the store's cache or buffer pool           [1G]\n"
		"  --cgroup           run inside a child memory cgroup of the driver's\n"
		"                     own (page cache counted), limited to the cache\n"
		"                     plus 1/4 of it (at least 64 MiB); refused where\n"
		"                     no memory cgroup can be made; required when\n"
		"                     records x value size exceed --memory-limit\n"
		"  --cgroup-limit B   --cgroup with this limit instead\n"
		"  --threads N        threads (1..64)                            [1]\n"
		"  --runfor S         seconds of the run phase                   [10]\n"
		"  --ops N            operations per thread instead of --runfor  [0]\n"
		"  --durability M     sync: every commit durable when it returns;\n"
		"                     none: no commit waits for the disk         [sync]\n"
		"  --load-batch N     inserts per load transaction               [1000]\n"
		"  --dir D            the store goes in D/kv-<system>, emptied\n"
		"                     before and removed after the run (D too,\n"
		"                     when the run made it)                      [/tmp/ruma-kv]\n"
		"  --seed N           random seed                                [$RUMA_SEED or the clock]\n"
		"  --result F         every figure as rows metric,unit,value,params\n"
		"  --quiet            no per-second CSV on stdout\n"
		"  --check            after the run, read every key written back and\n"
		"                     scan the whole table in order (not timed)\n"
		"                     (scanfull, scanwhilewriting: every scan of the run\n"
		"                     is checked to read one snapshot, with or without it)\n"
		"  --list             the systems and workloads, then exit\n"
		"  --help\n"
		"Workloads:\n", ruma_kv_system_names(names, sizeof(names)));
	for (size_t i = 0; ruma_kv_workloads[i]; i++)
		fprintf(f, "  %-17s  %s\n", ruma_kv_workloads[i]->name, ruma_kv_workloads[i]->what);
	fprintf(f,
		"Output: CSV ts,ops,system,workload,threads,durability on stdout, one row\n"
		"per second; the configuration, what a system cannot honour, the load time,\n"
		"throughput and latency (mean, p50, p99, p99.9, max per operation) on stderr;\n"
		"scans also entries/s; a run with a writer on a system with a version store\n"
		"(ruma) its peak and the time it takes back to its floor after the run.\n"
		"Exit: 0 ok, 1 failure (an error of the store, a wrong or missing value\n"
		"read, a scan that did not read one snapshot), 2 bad option or a store\n"
		"that cannot be opened, 130/143 stopped by SIGINT/SIGTERM (what ran is\n"
		"reported, the store closed and removed).\n");
}
