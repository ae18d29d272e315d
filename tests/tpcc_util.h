/*
 * tpcc_util.h — the store fixture of the TPC-C tests (test_vmcache_tpcc.c,
 * test_vmcache_tpcc_mt.c), header-only: a store file named after the
 * process, its buffer manager, and a TPC-C database created and loaded in
 * it by several threads at once (the driver's way).
 *
 *     fixture f = { 0 };
 *     CHECK_OK(fx_setup_durable(&f, warehouses, scale, threads, pool, d));
 *     ... f.db, f.bm ...
 *     fx_close(&f, true);
 */
#ifndef RUMA_TEST_TPCC_UTIL_H
#define RUMA_TEST_TPCC_UTIL_H

#include "test.h"

#include "bench/vmcache/tpcc/tpcc.h"

#include <pthread.h>

typedef struct fixture {
	char path[64];
	ruma_bm *bm;
	tpcc_db *db;
	tpcc_worker wk; /* for the single-threaded cases */
	unsigned max_threads; /* the store's threads at most (0: 8) */
} fixture;

/* Open f->path (2 GiB of address space, phys bytes of pool, f->max_threads
 * threads or 8) with durability d: fresh, or the store that is there. */
static inline int fx_open_bm_durable(fixture *f, uint64_t phys, bool fresh, ruma_bm_durability d)
{
	ruma_bm_config c;
	ruma_bm_config_default(&c);
	c.durability = d;
	c.path = f->path;
	c.virt_bytes = 2ull << 30;
	c.phys_bytes = phys;
	c.max_threads = f->max_threads ? f->max_threads : 8;
	c.fresh = fresh;
	return ruma_bm_open(&c, &f->bm);
}

static inline int fx_open_bm(fixture *f, uint64_t phys, bool fresh)
{
	return fx_open_bm_durable(f, phys, fresh, RUMA_BM_DURABLE_OFF);
}

/* Close the database and the store (errors ignored: the cases check their
 * data before); remove the file when unlink_file. */
static inline void fx_close(fixture *f, bool unlink_file)
{
	tpcc_db_close(f->db);
	f->db = NULL;
	if (f->bm)
		ruma_bm_close(f->bm);
	f->bm = NULL;
	if (unlink_file)
		unlink(f->path);
}

/* One loading thread: share tid of n of the warehouses. */
struct fx_load {
	tpcc_db *db;
	unsigned tid, n;
	int rc;
	pthread_t th;
};

static inline void *fx_load_thread(void *p)
{
	struct fx_load *a = p;
	a->rc = tpcc_load_share(a->db, a->tid, a->n, test_seed);
	return NULL;
}

/* Load db with `threads` (at most 8) threads at once: the first error. */
static inline int fx_load_parallel(tpcc_db *db, unsigned threads)
{
	struct fx_load a[8];
	unsigned started = 0;
	int rc = threads > 8 ? -E2BIG : 0;
	while (rc == 0 && started < threads) {
		a[started] = (struct fx_load){ .db = db, .tid = started, .n = threads };
		if (pthread_create(&a[started].th, NULL, fx_load_thread, &a[started]))
			rc = -EAGAIN;
		else
			started++;
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(a[i].th, NULL);
		if (a[i].rc && !rc)
			rc = a[i].rc;
	}
	return rc;
}

/*
 * fx_setup_durable — a fresh store at /tmp/ruma-test-tpcc-<pid> with phys
 * bytes of pool and durability d, a database of `warehouses` at `scale`
 * created in it, loaded by `threads` threads, marked loaded and begun.
 * 0 or the first error.
 */
static inline int fx_setup_durable(fixture *f, uint32_t warehouses, uint32_t scale,
				   unsigned threads, uint64_t phys, ruma_bm_durability d)
{
	tpcc_sizes sz;
	snprintf(f->path, sizeof(f->path), "/tmp/ruma-test-tpcc-%d", (int)getpid());
	int rc = fx_open_bm_durable(f, phys, true, d);
	if (!rc)
		rc = tpcc_sizes_init(&sz, warehouses, scale);
	if (!rc)
		rc = tpcc_db_create(f->bm, &sz, &test_rng, &f->db);
	if (!rc)
		rc = fx_load_parallel(f->db, threads);
	if (!rc)
		rc = tpcc_db_mark_loaded(f->db);
	if (!rc)
		rc = tpcc_db_begin_run(f->db, &test_rng);
	return rc;
}

#endif
