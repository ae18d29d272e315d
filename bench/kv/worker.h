/*
 * worker.h — the state the `ruma kv` driver shares with its threads and
 * the operations one thread runs (worker.c): key choice, the
 * transaction of each operation with its retries, value checks, latency.
 */
#ifndef RUMA_BENCH_KV_WORKER_H
#define RUMA_BENCH_KV_WORKER_H

#include "bench/kv/hist.h"
#include "bench/kv/kv.h"
#include "bench/kv/snapcheck.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

/* A counter on its own cache line. */
struct ruma_kv_slot {
	_Atomic uint64_t v;
	char pad[64 - sizeof(uint64_t)];
};

/* What every thread of a run shares. */
typedef struct ruma_kv_shared {
	const ruma_kv_opts *o;
	void *store;
	bool sync;                    /* the durability commits get */
	_Atomic uint64_t next_insert; /* the next key number an insert takes */
	/* per thread: the key number it is inserting (UINT64_MAX: none), so
	 * that reads choose only keys whose insert has finished */
	struct ruma_kv_slot *inserting;
	struct ruma_kv_slot *ops;     /* per thread: operations done (counted ones) */
	_Atomic bool stop;
	_Atomic int err;              /* the first failure (0: none) */
	char errmsg[320];
	_Atomic unsigned running;     /* threads still running */
	double latest_zetan;          /* latest: zeta of the loaded keys (0: none) */
	_Atomic uint64_t stamp;       /* stamped workloads: the writer's last commit's stamp */
} ruma_kv_shared;

/* One thread. */
typedef struct ruma_kv_worker {
	ruma_kv_shared *sh;
	unsigned tid;
	bool writer;                  /* readwhilewriting's extra writer */
	ruma_kv_thread *th;
	ruma_rng rng;
	ruma_kv_chooser chooser;
	unsigned char *val, *rand, *readbuf;
	uint64_t seq;                 /* readseq/readreverse: where the next scan starts */
	uint64_t retries, touched;
	uint64_t scanned;             /* entries visited by scans */
	uint64_t end_ns;              /* when the thread's last operation ended */
	ruma_kv_snapcheck chk;        /* stamped workloads: the scan's check */
	ruma_kv_hist *hist;           /* RUMA_KV_NOPS histograms */
	pthread_t pt;
} ruma_kv_worker;

/* ruma_kv_catch_signals — until ruma_kv_restore_signals, SIGINT and SIGTERM
 * (one-shot) only record their number; old keeps what was there. */
void ruma_kv_catch_signals(struct sigaction old[2]);
void ruma_kv_restore_signals(const struct sigaction old[2]);

/* ruma_kv_stop_signal — the signal caught (0: none). */
int ruma_kv_stop_signal(void);

/* ruma_kv_stopping — the threads of a run are to stop: a failure, the end
 * of the run, or a signal. */
bool ruma_kv_stopping(const ruma_kv_shared *sh);

/* ruma_kv_worker_init — buffers, generator and the system's thread handle;
 * 0 or an error with the message in sh->errmsg. */
int ruma_kv_worker_init(ruma_kv_worker *w, ruma_kv_shared *sh, unsigned tid, uint64_t seed);

/* ruma_kv_worker_fini — free what init made. */
void ruma_kv_worker_fini(ruma_kv_worker *w);

/* ruma_kv_worker_fail — record the first failure (message formatted) and stop every thread. */
void ruma_kv_worker_fail(ruma_kv_shared *sh, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ruma_kv_load_main — thread body of the load: key numbers tid, tid +
 * threads, ... below records, --load-batch inserts a transaction; for a
 * stamped workload (snapcheck.h) values of stamp 0, and thread 0 also
 * writes the meta row. */
void *ruma_kv_load_main(void *arg);

/* ruma_kv_run_main — thread body of the run: operations until stop (or
 * --ops of them). */
void *ruma_kv_run_main(void *arg);

/*
 * ruma_kv_verify — after the run, on thread w: every key number below
 * next_insert read back with its value checked (workloads whose keys are
 * those numbers: the loaded ones and fillseq), then a scan of the whole
 * table: keys strictly ascending, every value of --value-size bytes, as
 * many entries as keys were read back (a stamped workload: the scan
 * checked as one snapshot, snapcheck.h, its meta row holding the writer's
 * last stamp).  *entries gets the scan's count.
 * 0, or an error with the message in w->th->err.
 */
int ruma_kv_verify(ruma_kv_worker *w, uint64_t *entries);

#endif
