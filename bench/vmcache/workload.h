/*
 * workload.h — the plug-in interface of `ruma vmcache` workloads.
 *
 * The driver (driver.c) opens the buffer manager, calls setup once, load
 * on `threads` threads in parallel (each with its share), load_done once
 * when every share succeeded, then, on every
 * thread, thread_init and run_one in a loop for RUNFOR seconds, then
 * thread_fini, check (with --check) and teardown.  The driver prints the
 * per-second rows; a workload only counts what it did.
 *
 * Adding a workload: define a `const ruma_vmcache_workload` and list its
 * address in the table of bench/vmcache/workloads.c.  The TPC-C workload
 * (bench/vmcache/tpcc/) defines exactly
 *
 *     const ruma_vmcache_workload ruma_vmcache_tpcc_workload = { .name = "tpcc", ... };
 *
 * and is added to the table there (see workloads.c).
 */
#ifndef RUMA_BENCH_VMCACHE_WORKLOAD_H
#define RUMA_BENCH_VMCACHE_WORKLOAD_H

#include <ruma/bm.h>
#include "bm/bm_ext.h"
#include <ruma/core.h>

#include <stdatomic.h>
#include <stdio.h>

typedef struct ruma_vmcache_ctx {
	ruma_bm *bm;
	uint64_t datasize;  /* DATASIZE: tuples (rndread) or warehouses (tpcc) */
	unsigned threads;   /* THREADS */
	unsigned inflight;  /* INFLIGHT: lookups in flight per thread (1 = synchronous);
			       scan, scandesc: read-ahead depth in leaves */
	uint64_t seed;      /* base seed of the run (printed on stderr) */
	bool keep;          /* --keep: the store was opened with its contents */
	unsigned commit_pipeline; /* --durable=pipeline: a thread's commits in flight
				     (a workload acknowledges each once durable) */
	uint32_t tpcc_scale; /* tpcc: TPCC_SCALE (tests): rows per warehouse divided by this */
	bool tpcc_home_thread; /* tpcc: TPCC_HOME=thread, a fixed home warehouse per thread */
	bool tpcc_txn; /* tpcc: --txn, transactions also without a log */
	bool loaded;        /* set by setup when the data is already there (--keep) */
	void *wl;           /* the workload's private state (set by setup) */
	_Atomic uint64_t failures; /* wrong or missing results seen by run_one */
	/* --commit-log: descriptor of the file (-1 = none; opened by the driver,
	 * not tracked by the power-loss simulation) and the end of its records.
	 * A workload appends one RUMA_VMCACHE_COMMIT_REC-byte text record per
	 * committed transaction it wants verified after a crash, once the commit
	 * returned, at an offset taken with fetch_add from commit_off (a
	 * record of zero bytes is a hole left by a kill in between: skipped). */
	int commit_fd;
	_Atomic uint64_t commit_off;
} ruma_vmcache_ctx;

#define RUMA_VMCACHE_COMMIT_REC 26u

typedef struct ruma_vmcache_workload {
	const char *name;
	/* One line for --help. */
	const char *summary;
	/* Bytes of storage the loaded data set will need (space check at start);
	 * datasize is DATASIZE. */
	uint64_t (*space_estimate)(uint64_t datasize);
	/* Reject a DATASIZE the workload cannot use (0 or a bad value): return
	 * a message, or NULL when fine. */
	const char *(*check_datasize)(uint64_t datasize);
	/* Whether the tree called name (len bytes) is one of this workload's.
	 * With --keep the driver refuses a store holding any other tree (a
	 * user's data is not written into).  NULL: every tree is accepted. */
	bool (*owns_tree)(const char *name, size_t len);
	/* Once, before loading, single-threaded: create or open trees, set
	 * ctx->wl; with ctx->keep it may find the data already loaded and set
	 * ctx->loaded (then load is skipped).  0 or a negative error;
	 * RUMA_EBADCOMBO (the kept store or the settings cannot be used) only
	 * after printing why on stderr: the driver adds nothing to it. */
	int (*setup)(ruma_vmcache_ctx *ctx);
	/* Load share tid of nthreads (called on nthreads threads at once).  On a
	 * store with a log the load threads run with ruma_bm_op_defer on: their
	 * operations do not wait for the log; load_done's do. */
	int (*load)(ruma_vmcache_ctx *ctx, unsigned tid, unsigned nthreads);
	/* Once, single-threaded, after every load share returned 0 (never after
	 * a failed or interrupted load): record that the data set is complete,
	 * e.g. a marker that a later setup with --keep finds.  May be NULL. */
	int (*load_done)(ruma_vmcache_ctx *ctx);
	/* Per-thread state of the measured phase (*ts may stay NULL). */
	int (*thread_init)(ruma_vmcache_ctx *ctx, unsigned tid, void **ts);
	/* Do a small unit of work: returns the number of transactions (or
	 * lookups) completed, >= 0, or a negative error that stops the run.
	 * Wrong results are counted in ctx->failures and reported on stderr. */
	int64_t (*run_one)(ruma_vmcache_ctx *ctx, void *ts);
	/* End of the measured phase: finish what is in flight (e.g. wait for
	 * pipelined commits) and free ts.  0 or a negative error.  May be NULL. */
	int (*thread_fini)(ruma_vmcache_ctx *ctx, void *ts);
	/* --check: verify the whole data set after the run; describe problems
	 * on stderr; 0, RUMA_ECORRUPT or another error.  May be NULL. */
	int (*check)(ruma_vmcache_ctx *ctx);
	/* Free ctx->wl (the buffer manager is still open). */
	void (*teardown)(ruma_vmcache_ctx *ctx);
} ruma_vmcache_workload;

/*
 * ruma_vmcache_interrupted — true once SIGINT or SIGTERM reached the driver
 * (which then stops the workers, closes the store cleanly and exits 130 /
 * 143).  A load function polls it now and then and returns -EINTR, so that
 * a stop during the load does not wait for the whole data set.
 */
bool ruma_vmcache_interrupted(void);

/* The workloads built into this binary, NULL-terminated (workloads.c). */
extern const ruma_vmcache_workload *const ruma_vmcache_workloads[];

/* ruma_vmcache_find_workload — the workload called name, or NULL. */
const ruma_vmcache_workload *ruma_vmcache_find_workload(const char *name);

/* The random-read workload (rndread.c). */
extern const ruma_vmcache_workload ruma_vmcache_rndread_workload;
/* The range-scan workloads over the rndread data set (scan.c). */
extern const ruma_vmcache_workload ruma_vmcache_scan_workload;
extern const ruma_vmcache_workload ruma_vmcache_scandesc_workload;
/* The TPC-C workload (bench/vmcache/tpcc/, written separately). */
extern const ruma_vmcache_workload ruma_vmcache_tpcc_workload;

#endif
