/*
 * run.h — what the parts of one `ruma blob` run share (driver.c, churn.c,
 * crash.c): the run's outputs and store directories, the threads that run
 * one phase over a set of objects, and the report of a phase (a CSV row on
 * stdout, result rows, a line on stderr).
 */
#ifndef RUMA_BENCH_BLOB_RUN_H
#define RUMA_BENCH_BLOB_RUN_H

#include "bench/blob/blob.h"
#include "bench/common/result.h"
#include "bench/kv/cgroup.h"
#include "bench/kv/hist.h"

#include <ruma/core.h>

#include <pthread.h>

typedef struct ruma_blob_ctx {
	const ruma_blob_opts *o;
	ruma_outputs out;
	ruma_result *res;
	char base[4096];        /* <dir>/kv-blob-<system>: every store of the run under it */
	bool made_parent;       /* --dir did not exist: removed at the end too */
	bool keep;              /* leave base in place (a failed crash round's evidence) */
	char dev_stat[128];     /* the device's stat file ("" when none) */
	bool csv_header;        /* the CSV header is out */
	ruma_kv_cgroup cg;
} ruma_blob_ctx;

/* One thread of a phase. */
typedef struct ruma_blob_worker {
	ruma_blob_ctx *ctx;
	const ruma_blob_system *sys;
	void *store;
	ruma_blob_thread *th;
	unsigned tid, nthreads;
	ruma_rng rng;
	unsigned char *buf;     /* an object's bytes before a put */
	size_t cap;
	ruma_kv_hist *lat;      /* latency of each operation, ns */
	uint64_t done, bytes;   /* operations, payload bytes */
	int err;
	char errmsg[320];
	pthread_t pt;
	/* the phase's work: fn(w, item) for item = tid, tid + nthreads, ... < items */
	int (*fn)(struct ruma_blob_worker *w, uint64_t item);
	uint64_t items;
	void *arg;              /* the phase's own state */
} ruma_blob_worker;

/* What one phase measured. */
typedef struct ruma_blob_phase {
	const char *op;         /* put, get, overwrite, delete, churn, probe-churned, probe-fresh */
	uint64_t size;          /* object size (0: mixed sizes) */
	uint64_t objects, payload;
	double secs;
	ruma_kv_hist *lat;
	ruma_blob_io before, after;
	bool writes;            /* bytes written per payload byte is a figure of it */
	uint64_t store_bytes, live_bytes;
} ruma_blob_phase;

/*
 * ruma_blob_store_fresh — an empty directory <base>/<name> and the system's
 * store opened in it (sync, pool and mode from the options); its path into
 * path.  0 or 2 (cannot be used) with the reason on stderr.
 */
int ruma_blob_store_fresh(ruma_blob_ctx *ctx, const char *name, void **store, char *path,
			  size_t len);

/* ruma_blob_store_close — close the store; 0 or 1 with the reason on stderr. */
int ruma_blob_store_close(ruma_blob_ctx *ctx, void *store);

/* ruma_blob_worker_buf — w->buf of at least len bytes; 0 or -ENOMEM (message set). */
int ruma_blob_worker_buf(ruma_blob_worker *w, size_t len);

/* ruma_blob_worker_fail — record the worker's failure; returns code. */
int ruma_blob_worker_fail(ruma_blob_worker *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * ruma_blob_phase_run — run fn over items on nthreads threads of store
 * (each with its own thread handle), timed from the first start to the
 * last end; the latency histograms merged into p->lat, operations and
 * bytes into p.  0, or 1 with the first failure on stderr.
 */
int ruma_blob_phase_run(ruma_blob_ctx *ctx, void *store, unsigned nthreads, uint64_t items,
			int (*fn)(ruma_blob_worker *w, uint64_t item), void *arg,
			uint64_t seed, ruma_blob_phase *p);

/* ruma_blob_phase_begin — p zeroed for op and size, its histogram made and
 * the device counters read; 0 or 1 with the reason on stderr. */
int ruma_blob_phase_begin(ruma_blob_ctx *ctx, ruma_blob_phase *p, const char *op, uint64_t size);

/* ruma_blob_phase_end — settle the store (cold or not), read the device
 * counters and the store's size; 0 or 1 with the reason on stderr. */
int ruma_blob_phase_end(ruma_blob_ctx *ctx, void *store, const char *path, bool cold,
			ruma_blob_phase *p);

/* ruma_blob_report — the phase's CSV row, result rows and stderr line; frees p->lat. */
void ruma_blob_report(ruma_blob_ctx *ctx, ruma_blob_phase *p);

/* ruma_blob_churn — the churn mode (churn.c); the exit status. */
int ruma_blob_churn(ruma_blob_ctx *ctx);

/* ruma_blob_crash — the crash mode (crash.c); the exit status. */
int ruma_blob_crash(ruma_blob_ctx *ctx);

#endif
