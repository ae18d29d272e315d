/*
 * driver.h — the `ruma vmcache` benchmark driver: configuration checks,
 * buffer-manager setup, parallel load, the timed run with one CSV row per
 * second, and the final check.
 */
#ifndef RUMA_BENCH_VMCACHE_DRIVER_H
#define RUMA_BENCH_VMCACHE_DRIVER_H

#include "vmcache/workload.h"

#define RUMA_VMCACHE_MAX_THREADS 128u

typedef struct ruma_vmcache_opts {
	const char *block;   /* BLOCK */
	double virtgb;       /* VIRTGB (GiB, fractional allowed) */
	double physgb;       /* PHYSGB */
	unsigned batch;      /* BATCH */
	uint64_t runfor;     /* RUNFOR seconds */
	unsigned threads;    /* THREADS */
	unsigned inflight;   /* INFLIGHT: lookups in flight per thread (rndread) */
	uint64_t datasize;   /* DATASIZE */
	const ruma_vmcache_workload *wl;
	ruma_bm_wait wait;
	ruma_bm_evict evict;
	ruma_bm_write write;
	bool reuse;          /* reuse freed page ids (default on) */
	bool keep;           /* open the store with its contents */
	bool check;          /* verify the data set after the run */
	uint64_t seed;
} ruma_vmcache_opts;

/*
 * ruma_vmcache_run — run the benchmark.  Returns the exit status: 0 ok,
 * 1 failure (I/O error, wrong lookups, failed check), 2 bad configuration
 * (refused before anything ran, with a message on stderr).
 */
int ruma_vmcache_run(const ruma_vmcache_opts *o);

#endif
