/*
 * cmd_vmcache.c — `ruma vmcache`: the vmcache benchmark (random reads or
 * TPC-C on the B-tree over the buffer manager), configured like the
 * original by BLOCK, VIRTGB, PHYSGB, BATCH, RUNFOR, RNDREAD, THREADS,
 * DATASIZE and EXMAP, or by command-line flags (flags win).  Prints
 * ts,tx,rmb,wmb,system,threads,datasize,workload,batch and one row per
 * second on stdout; configuration and space on stderr.
 * --durable[=sync|pipeline|async] opens the store with a write-ahead log (docs/wal.md,
 * docs/tpcc.md "Durable runs").
 * Exit status: 0 ok, 1 failure, 2 bad configuration or unusable store,
 * 130/143 stopped by SIGINT/SIGTERM (store closed cleanly), 86 after a
 * simulated power loss (RUMA_POWER_LOSS_AFTER_MS, tests).
 */
#include "bench/vmcache/driver.h"

#include <ruma/core.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char ruma_cmd_vmcache_summary[] =
	"vmcache buffer manager + B-tree benchmark (rndread, tpcc), vmcache's env vars";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma vmcache [options]\n"
		"\n"
		"Runs the vmcache benchmark on the ruma buffer manager (src/bm) and B-tree.\n"
		"Environment (as in vmcache; flags override):\n"
		"  BLOCK=path     store: regular file (created) or block device   [/tmp/bm]\n"
		"  VIRTGB=g       virtual reservation in GiB, fractions allowed   [16]\n"
		"  PHYSGB=g       buffer pool in GiB (e.g. 0.5 = 512 MiB)         [4]\n"
		"  BATCH=n        pages per eviction round (1..1024)              [64]\n"
		"  RUNFOR=s       seconds to measure (0 = load/check only)        [30]\n"
		"  RNDREAD=0|1    1 = random-read workload, 0 = TPC-C             [0]\n"
		"  THREADS=n      worker threads (1..128)                         [1]\n"
		"  DATASIZE=n     tuples (rndread, 1e6 accepted) or warehouses    [10]\n"
		"  INFLIGHT=n     rndread lookups in flight per thread (1..256;   [1]\n"
		"                 1 = one synchronous read at a time); scan and\n"
		"                 scandesc: leaves read ahead (1 = default, 32)\n"
		"  EXMAP=0        exmap is not supported (1 is refused)\n"
		"  FORCE=0|1      as --force                                      [0]\n"
		"  DURABLE=0|1|sync|pipeline|async  as --durable (1 = sync)       [0]\n"
		"  CHECKPOINT=s   as --checkpoint                                 [10]\n"
		"  TPCC_SCALE=n   tests only (not TPC-C): divide items, customers and [1]\n"
		"                 orders per warehouse by n (1..100)\n"
		"  RUMA_POWER_LOSS_AFTER_MS=ms  tests only: ms after start, simulate a\n"
		"                 power loss (every write no fsync covered is undone; write-\n"
		"                 back uses pwrite) and exit 86 at once              [0]\n"
		"  RUMA_POWER_LOSS_TORN=1  tests only: that power loss also tears the\n"
		"                 unsynced page writes (first half of each 4 KiB reaches the file)\n"
		"Options:\n"
		"  --block PATH --virtgb G --physgb G --batch N --runfor S --threads N\n"
		"  --datasize N   as the variables above\n"
		"  --workload W   rndread, scan, scandesc or tpcc (overrides RNDREAD)\n"
		"  --wait W       spin | yield | futex | mutex      latch wait strategy [spin]\n"
		"  --inflight N   as INFLIGHT\n"
		"  --evict E      process_madvise | madvise         page drop [process_madvise]\n"
		"  --write W      uring | pwrite                    write-back [uring]\n"
		"  --no-reuse     never reuse freed page ids\n"
		"  --keep         open the store with its contents (default: start fresh)\n"
		"  --force        without --keep: overwrite BLOCK even if it is a file that is\n"
		"                 not a ruma store (refused otherwise)\n"
		"  --check        verify the whole data set after the load (or reopen) and\n"
		"                 after the run\n"
		"  --durable[=sync|pipeline|async]  keep a write-ahead log BLOCK.wal: every\n"
		"                 TPC-C transaction is one atomic transaction; sync (default):\n"
		"                 commit returns once durable (group commit); pipeline: as\n"
		"                 durable, but a thread goes on while up to 64 of its commits\n"
		"                 are written, each counted once durable; async: commit\n"
		"                 returns at once, a crash loses the last few ms of commits\n"
		"  --checkpoint S with a log: fuzzy checkpoint every S seconds, keeps the log\n"
		"                 short (0 = none; fractions allowed)                [10]\n"
		"  --commit-log F tpcc: append \"w d o_id\" of each New-Order after its commit\n"
		"                 returned (truncated unless --keep); --check verifies every\n"
		"                 recorded order is in the store (crash tests)\n"
		"  --seed N       random seed (default: $RUMA_SEED or clock)\n"
		"  --help\n"
		"Output: CSV ts,tx,rmb,wmb,system,threads,datasize,workload,batch on stdout,\n"
		"one row per second (tx = operations that second, rmb/wmb = MiB read/written);\n"
		"configuration and space used on stderr.\n"
		"Store: locked while in use (a second run on it is refused); marked open until\n"
		"closed cleanly.  A store whose run was killed is refused on --keep (recreate\n"
		"it: run without --keep) unless it ran --durable: then --keep recovers it\n"
		"from its log (stderr says what recovery did and how long it took).\n"
		"SIGINT/SIGTERM stop the run and close the store cleanly.\n"
		"Exit: 0 ok, 1 failure (I/O error, corrupt page, wrong data), 2 bad\n"
		"configuration or unusable store (in use, not closed cleanly, not a ruma\n"
		"store, PHYSGB above available memory), 130/143 stopped by SIGINT/SIGTERM.\n");
	ruma_bm_io_support io;
	ruma_bm_probe_io(&io);
	fprintf(f,
		"This machine: io_uring %s; process_madvise on self %s.\n"
		"Chosen by default: write-back %s, eviction %s, INFLIGHT>1 reads %s.\n",
		io.uring ? ruma_strerror(io.uring) : "works",
		io.process_madvise ? ruma_strerror(io.process_madvise) : "works",
		io.uring ? "pwrite/pwritev per run of pages (io_uring refused)"
			 : "one io_uring submission per batch",
		io.process_madvise ? "madvise per page (process_madvise refused)"
				   : "one process_madvise per batch",
		io.uring ? "synchronous (io_uring refused)" : "through io_uring");
}

static int bad(const char *what, const char *val, const char *why)
{
	fprintf(stderr, "ruma vmcache: %s=%s: %s\n", what, val ? val : "", why);
	return 2;
}

struct raw {
	const char *block, *virtgb, *physgb, *batch, *runfor, *rndread, *threads, *datasize,
		*exmap, *workload, *wait, *evict, *write, *seed, *inflight, *durable, *checkpoint,
		*commit_log;
	bool no_reuse, keep, check, force;
};

static int parse_args(int argc, char **argv, struct raw *w)
{
	static const struct {
		const char *flag;
		size_t off;
	} opts[] = {
		{ "--block", offsetof(struct raw, block) },
		{ "--virtgb", offsetof(struct raw, virtgb) },
		{ "--physgb", offsetof(struct raw, physgb) },
		{ "--batch", offsetof(struct raw, batch) },
		{ "--runfor", offsetof(struct raw, runfor) },
		{ "--threads", offsetof(struct raw, threads) },
		{ "--datasize", offsetof(struct raw, datasize) },
		{ "--workload", offsetof(struct raw, workload) },
		{ "--wait", offsetof(struct raw, wait) },
		{ "--evict", offsetof(struct raw, evict) },
		{ "--write", offsetof(struct raw, write) },
		{ "--seed", offsetof(struct raw, seed) },
		{ "--inflight", offsetof(struct raw, inflight) },
		{ "--checkpoint", offsetof(struct raw, checkpoint) },
		{ "--commit-log", offsetof(struct raw, commit_log) },
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return 1;
		if (!strcmp(a, "--no-reuse")) {
			w->no_reuse = true;
			continue;
		}
		if (!strcmp(a, "--keep")) {
			w->keep = true;
			continue;
		}
		if (!strcmp(a, "--force")) {
			w->force = true;
			continue;
		}
		if (!strcmp(a, "--check")) {
			w->check = true;
			continue;
		}
		if (!strcmp(a, "--durable")) {
			w->durable = "sync";
			continue;
		}
		if (!strncmp(a, "--durable=", 10)) {
			w->durable = a + 10;
			continue;
		}
		bool found = false;
		for (size_t k = 0; k < RUMA_ARRAY_SIZE(opts) && !found; k++) {
			size_t fl = strlen(opts[k].flag);
			const char **slot = (const char **)((char *)w + opts[k].off);
			if (!strcmp(a, opts[k].flag)) {
				if (i + 1 >= argc) {
					fprintf(stderr, "ruma vmcache: %s needs a value\n", a);
					return 2;
				}
				*slot = argv[++i];
				found = true;
			} else if (!strncmp(a, opts[k].flag, fl) && a[fl] == '=') {
				*slot = a + fl + 1;
				found = true;
			}
		}
		if (!found) {
			fprintf(stderr, "ruma vmcache: unknown argument '%s' (see --help)\n", a);
			return 2;
		}
	}
	return 0;
}

static const char *envor(const char *flag_val, const char *name, const char *def)
{
	if (flag_val)
		return flag_val;
	const char *e = getenv(name);
	return e && *e ? e : def;
}

static int parse_gb(const char *name, const char *s, double *out)
{
	if (ruma_parse_double(s, out) || !(*out > 0))
		return bad(name, s, "expected a positive number of GiB (fractions allowed)");
	if (*out > 1 << 20)
		return bad(name, s, "unreasonably large");
	return 0;
}

static int parse_count(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char why[96];
	if (ruma_parse_u64(s, out)) {
		snprintf(why, sizeof(why), "expected a whole number");
		return bad(name, s, why);
	}
	if (*out < lo || *out > hi) {
		snprintf(why, sizeof(why), "must be in %" PRIu64 "..%" PRIu64, lo, hi);
		return bad(name, s, why);
	}
	return 0;
}

/* --durable[=sync|async] / DURABLE, --checkpoint / CHECKPOINT, --commit-log,
 * RUMA_POWER_LOSS_AFTER_MS (tests). */
static int parse_durability(const struct raw *w, ruma_vmcache_opts *o)
{
	const char *d = envor(w->durable, "DURABLE", "0");
	bool b;
	if (!strcmp(d, "sync"))
		o->durability = RUMA_BM_DURABLE_SYNC;
	else if (!strcmp(d, "pipeline")) {
		o->durability = RUMA_BM_DURABLE_SYNC;
		o->commit_pipeline = RUMA_VMCACHE_COMMIT_PIPELINE;
	}
	else if (!strcmp(d, "async"))
		o->durability = RUMA_BM_DURABLE_ASYNC;
	else if (!ruma_parse_bool(d, &b))
		o->durability = b ? RUMA_BM_DURABLE_SYNC : RUMA_BM_DURABLE_OFF;
	else
		return bad(w->durable ? "--durable" : "DURABLE", d,
			   "expected sync, pipeline or async (DURABLE: 0, 1, sync, pipeline or async)");
	const char *ck = envor(w->checkpoint, "CHECKPOINT", "10");
	if (ruma_parse_double(ck, &o->checkpoint_secs) || !(o->checkpoint_secs >= 0) ||
	    o->checkpoint_secs > 86400)
		return bad("--checkpoint", ck, "expected seconds between checkpoints, 0 .. 86400 "
					       "(0 = none; fractions allowed)");
	if (o->checkpoint_secs > 0 && o->checkpoint_secs < 0.001)
		return bad("--checkpoint", ck, "at least 0.001 s (or 0 = none)");
	o->commit_log = w->commit_log;
	if (o->commit_log && !*o->commit_log)
		return bad("--commit-log", o->commit_log, "empty path");
	if (o->commit_log && strcmp(o->wl->name, "tpcc"))
		return bad("--commit-log", o->commit_log, "only the tpcc workload records commits");
	const char *pl = envor(NULL, "RUMA_POWER_LOSS_AFTER_MS", "0");
	if (ruma_parse_u64(pl, &o->powerloss_ms) || o->powerloss_ms > 86400000ull)
		return bad("RUMA_POWER_LOSS_AFTER_MS", pl, "expected milliseconds, 0 = off");
	const char *torn = envor(NULL, "RUMA_POWER_LOSS_TORN", "0");
	if (ruma_parse_bool(torn, &o->powerloss_torn))
		return bad("RUMA_POWER_LOSS_TORN", torn, "expected 0 or 1");
	return 0;
}

int ruma_cmd_vmcache(int argc, char **argv);
int ruma_cmd_vmcache(int argc, char **argv)
{
	struct raw w = { 0 };
	ruma_vmcache_opts o = { 0 };
	uint64_t v;
	bool b;
	int r = parse_args(argc, argv, &w);

	if (r == 1) {
		usage(stdout);
		return 0;
	}
	if (r)
		return r;

	const char *exmap = envor(NULL, "EXMAP", "0");
	if (ruma_parse_bool(exmap, &b))
		return bad("EXMAP", exmap, "expected 0 or 1");
	if (b) {
		fprintf(stderr,
			"ruma vmcache: EXMAP=1 is not supported: the exmap kernel module cannot be "
			"used here (it needs a kernel with module support and per-version fixes); "
			"ruma evicts with madvise or process_madvise (--evict) instead\n");
		return 2;
	}
	o.block = envor(w.block, "BLOCK", "/tmp/bm");
	if (!*o.block)
		return bad("BLOCK", o.block, "empty path");
	if ((r = parse_gb("VIRTGB", envor(w.virtgb, "VIRTGB", "16"), &o.virtgb)))
		return r;
	if ((r = parse_gb("PHYSGB", envor(w.physgb, "PHYSGB", "4"), &o.physgb)))
		return r;
	if (o.physgb > o.virtgb) {
		fprintf(stderr, "ruma vmcache: PHYSGB=%g exceeds VIRTGB=%g; the buffer pool must "
				"fit in the virtual reservation\n",
			o.physgb, o.virtgb);
		return 2;
	}
	if ((r = parse_count("BATCH", envor(w.batch, "BATCH", "64"), 1, 1024, &v)))
		return r;
	o.batch = (unsigned)v;
	if ((r = parse_count("RUNFOR", envor(w.runfor, "RUNFOR", "30"), 0, 1000000, &o.runfor)))
		return r;
	if ((r = parse_count("THREADS", envor(w.threads, "THREADS", "1"), 1,
			     RUMA_VMCACHE_MAX_THREADS, &v)))
		return r;
	o.threads = (unsigned)v;
	if ((r = parse_count("DATASIZE", envor(w.datasize, "DATASIZE", "10"), 0, UINT64_MAX / 256,
			     &o.datasize)))
		return r;

	const char *wname = w.workload;
	if (!wname) {
		const char *rr = envor(NULL, "RNDREAD", "0");
		if (ruma_parse_bool(rr, &b))
			return bad("RNDREAD", rr, "expected 0 or 1");
		wname = b ? "rndread" : "tpcc";
	}
	o.wl = ruma_vmcache_find_workload(wname);
	if (!o.wl) {
		fprintf(stderr, "ruma vmcache: unknown workload '%s' (known: rndread, tpcc)\n",
			wname);
		return 2;
	}
	const char *why = o.wl->check_datasize ? o.wl->check_datasize(o.datasize) : NULL;
	if (why)
		return bad("DATASIZE", envor(w.datasize, "DATASIZE", "10"), why);

	if ((r = parse_count("INFLIGHT", envor(w.inflight, "INFLIGHT", "1"), 1, RUMA_BM_AIO_MAX,
			     &v)))
		return r;
	o.inflight = (unsigned)v;
	if (o.inflight > 1 && strcmp(o.wl->name, "rndread") && strncmp(o.wl->name, "scan", 4))
		fprintf(stderr, "ruma vmcache: note: INFLIGHT applies to rndread lookups and scan "
				"read-ahead; %s runs "
				"its transactions with synchronous reads\n",
			o.wl->name);
	o.wait = RUMA_BM_WAIT_SPIN;
	o.evict = RUMA_BM_EVICT_PROCESS_MADVISE;
	o.write = RUMA_BM_WRITE_URING;
	if (w.wait && ruma_bm_wait_parse(w.wait, &o.wait))
		return bad("--wait", w.wait, "expected spin, yield, futex or mutex");
	if (w.evict && ruma_bm_evict_parse(w.evict, &o.evict))
		return bad("--evict", w.evict, "expected madvise or process_madvise");
	if (w.write && ruma_bm_write_parse(w.write, &o.write))
		return bad("--write", w.write, "expected pwrite or uring");
	o.reuse = !w.no_reuse;
	o.keep = w.keep;
	const char *force = envor(NULL, "FORCE", "0");
	if (ruma_parse_bool(force, &b))
		return bad("FORCE", force, "expected 0 or 1");
	o.force = w.force || b;
	o.check = w.check;
	if ((r = parse_durability(&w, &o)))
		return r;
	o.seed = ruma_seed_default();
	if (w.seed && ruma_parse_u64(w.seed, &o.seed))
		return bad("--seed", w.seed, "expected a whole number");
	return ruma_vmcache_run(&o);
}
