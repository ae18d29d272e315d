/*
 * driver.h — the `ruma vmcache` benchmark driver: configuration checks,
 * buffer-manager setup, parallel load, the timed run with one CSV row per
 * second, and the final check.
 */
#ifndef RUMA_BENCH_VMCACHE_DRIVER_H
#define RUMA_BENCH_VMCACHE_DRIVER_H

#include "bench/vmcache/workload.h"

#define RUMA_VMCACHE_MAX_THREADS 128u

/* The store without BLOCK / --block (the library has no default path). */
#define RUMA_VMCACHE_DEFAULT_BLOCK "/tmp/bm"

/* --durable=pipeline: commits a thread keeps in flight before it waits. */
#define RUMA_VMCACHE_COMMIT_PIPELINE 64u

typedef struct ruma_vmcache_opts {
	/* The buffer manager's configuration the run opens the store with:
	 * parsing starts from ruma_bm_config_default and writes each option
	 * into its field: BLOCK → path, VIRTGB → virt_bytes, PHYSGB →
	 * phys_bytes, BATCH → batch, THREADS + 3 → max_threads (workers, main,
	 * checkpointer, spare), --wait, --evict, --write, --no-reuse →
	 * reuse_pages, --no-cleaner → cleaner, --keep → !fresh, --force / FORCE
	 * → force, --durable / DURABLE → durability, --salvage-log →
	 * salvage_log; message is ruma_vmcache_say. */
	ruma_bm_config bm;
	double virtgb;       /* VIRTGB as given (GiB; bm.virt_bytes is it in whole pages) */
	double physgb;       /* PHYSGB as given */
	uint64_t runfor;     /* RUNFOR seconds */
	unsigned threads;    /* THREADS */
	unsigned inflight;   /* INFLIGHT: lookups in flight per thread (rndread) */
	uint64_t datasize;   /* DATASIZE */
	const ruma_vmcache_workload *wl;
	bool check;          /* verify the data set after the run */
	uint64_t seed;
	unsigned commit_pipeline; /* --durable=pipeline (RUMA_VMCACHE_COMMIT_PIPELINE): commits in flight per thread
				     before one must be durable (0 = each commit waits) */
	double checkpoint_secs; /* with a log: seconds between fuzzy checkpoints
				   during load and run (0 = none) */
	const char *commit_log; /* --commit-log FILE: committed New-Orders */
	uint32_t tpcc_scale;    /* TPCC_SCALE (tests): divide the rows per warehouse
				   by this, 1 .. 100 (default 1) */
	bool tpcc_home_thread;  /* TPCC_HOME=thread: a fixed home warehouse per
				   thread (default random) */
	bool tpcc_txn;          /* --txn: TPC-C's transactions as ruma_txn also
				   without a log (with one they always are) */
	uint64_t powerloss_ms;  /* RUMA_POWER_LOSS_AFTER_MS (tests): simulate a
				   power loss that many ms after the store opened
				   and exit RUMA_VMCACHE_POWERLOSS_STATUS; 0 = off */
	bool powerloss_torn;    /* RUMA_POWER_LOSS_TORN=1: the power loss tears the
				   unsynced 4 KiB page writes (ruma_powerloss_now) */
	bool help;              /* --help / -h: print the usage, run nothing */
	const char *result;     /* --result FILE: the per-second rows as tidy rows
				   (metric tx, rmb, wmb; params system, workload,
				   threads, datasize, batch, ts); NULL = none */
} ruma_vmcache_opts;

/*
 * ruma_vmcache_parse — `ruma vmcache [options]` (argv[0] is the command)
 * and the environment envp (NULL-terminated "K=V" strings; NULL = none)
 * into *o: every value checked, nothing run.  Returns 0 (run it, or print
 * the usage when o->help), or RUMA_EPARSE with the message for stderr in err
 * ("ruma vmcache: ...\n"): exit status 2.  bench/vmcache/vmcache_cli.c.
 */
int ruma_vmcache_parse(int argc, char **argv, char *const *envp, ruma_vmcache_opts *o, char *err,
		       size_t errlen);

/*
 * ruma_vmcache_say — the buffer manager's message callback (ruma_message_fn)
 * of `ruma vmcache`: the line on stderr after "ruma bm: ", followed by what
 * the configuration fields it names (fresh, force, virt_bytes, ...) are on
 * this command line.  ctx is unused.  bench/vmcache/vmcache_cli.c.
 */
void ruma_vmcache_say(void *ctx, const char *line);

/*
 * ruma_vmcache_space — the bytes a run may count on in the file system of
 * its store (the pre-flight's check against `need`): what is free (fs_free),
 * plus the blocks the store and its log already hold (store_disk, log_disk:
 * a store rewritten or kept, and its log emptied or replayed, reuse their
 * space); a kept store (keep) whose size (store_size) already covers need
 * counts as enough, however full the file system is (a store reopened after
 * its disk filled up).  bench/vmcache/driver.c.
 */
uint64_t ruma_vmcache_space(uint64_t fs_free, uint64_t store_disk, uint64_t log_disk,
			    uint64_t store_size, bool keep, uint64_t need);

/* Exit status of a run ended by the simulated power loss. */
#define RUMA_VMCACHE_POWERLOSS_STATUS 86

/*
 * ruma_vmcache_run — run the benchmark.  Returns the exit status: 0 ok,
 * 1 failure (I/O error, corrupt page, wrong lookups, failed check, failed
 * close), 2 bad configuration or a store that cannot be used (refused before
 * anything ran, with a message on stderr: in use by another process, not
 * closed cleanly, not a ruma store, PHYSGB above the available memory),
 * 128 + signal (130 SIGINT, 143 SIGTERM) when stopped by a signal after the
 * store was closed cleanly, RUMA_VMCACHE_POWERLOSS_STATUS after a simulated
 * power loss (the process ends at once, see docs/tpcc.md "Durable runs").
 */
int ruma_vmcache_run(const ruma_vmcache_opts *o);

#endif
