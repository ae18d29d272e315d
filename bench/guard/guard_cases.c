/*
 * guard_cases.c — the cases of the instruction-count guard (guard.h).
 *
 * btree_lookup, tpcc and tpcc_durable run the `ruma vmcache` workloads
 * themselves (bench/vmcache: rndread's lookup with its payload check, one
 * TPC-C transaction of the standard mix per operation) on a buffer manager
 * that holds the whole data set (no eviction, no reads), with the driver's
 * defaults otherwise; tpcc_durable's store keeps a log with
 * --durable=async's durability (the commit returns at once, a background
 * flusher writes the log), so the committing thread's own instructions are
 * the CPU cost of building and handing over its log records, and the
 * flusher's (a thread callgrind does not count) cannot make the figure vary.
 * db_get and db_scan are in guard_db.c.
 * art_* use the u64 fast path over the libc allocator; vec_push is the
 * inline push of a rewired vector, growth by rewiring included.
 *
 * Every case draws its data from a fixed seed and runs a fixed number of
 * operations: nothing depends on time.  Sizes are small so that the whole
 * guard runs in well under two minutes under callgrind.
 *
 * Syscalls: none directly (the buffer manager and the vector make theirs);
 * the stores and logs are removed with unlink.
 */
#include "bench/guard/guard.h"

#include "bench/vmcache/rndread.h"
#include "bench/vmcache/workload.h"

#include <ruma/alloc.h>
#include <ruma/art.h>
#include <ruma/bm.h>
#include "bm/bm_ext.h"
#include <ruma/core.h>
#include <ruma/vector.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUARD_SEED 20261204u
#define RND_TUPLES 100000u
#define TPCC_WAREHOUSES 1u
#define ART_KEYS 200000u

/* ---- vmcache workloads on an in-memory buffer manager -------------------- */

struct vm_case {
	const ruma_vmcache_workload *wl;
	ruma_vmcache_ctx ctx;
	void *ts;
	char path[512];
};

static void vm_free(struct vm_case *v)
{
	char wal[600];
	if (v->ts && v->wl->thread_fini)
		(void)v->wl->thread_fini(&v->ctx, v->ts);
	if (v->ctx.wl)
		v->wl->teardown(&v->ctx);
	if (v->ctx.bm)
		(void)ruma_bm_close(v->ctx.bm);
	unlink(v->path);
	snprintf(wal, sizeof(wal), "%s.wal", v->path);
	unlink(wal);
	free(v);
}

/* Open the store (fresh, every page resident), load the data set on this
 * thread and start the measured phase's thread state. */
static int vm_setup(const char *dir, const ruma_vmcache_workload *wl, uint64_t datasize,
		    ruma_bm_durability durability, void **state)
{
	struct vm_case *v = calloc(1, sizeof(*v));
	ruma_bm_config c;
	int r;

	if (!v)
		return -ENOMEM;
	v->wl = wl;
	snprintf(v->path, sizeof(v->path), "%s/ruma-guard-%d-%s.store", dir, (int)getpid(),
		 wl->name);
	ruma_bm_config_default(&c);
	c.path = v->path;
	c.virt_bytes = 2ull << 30;
	c.phys_bytes = 1ull << 30;
	c.max_threads = 4;
	c.fresh = true;
	c.durability = durability;
	v->ctx.datasize = datasize;
	v->ctx.threads = 1;
	v->ctx.inflight = 1;
	v->ctx.seed = GUARD_SEED;
	v->ctx.commit_fd = -1;
	r = ruma_bm_open(&c, &v->ctx.bm);
	if (!r)
		r = wl->setup(&v->ctx);
	if (!r) {
		ruma_bm_op_defer(v->ctx.bm, true);
		r = wl->load(&v->ctx, 0, 1);
		ruma_bm_op_defer(v->ctx.bm, false);
	}
	if (!r && wl->load_done)
		r = wl->load_done(&v->ctx);
	if (!r && wl->thread_init)
		r = wl->thread_init(&v->ctx, 0, &v->ts);
	if (r) {
		vm_free(v);
		return r;
	}
	*state = v;
	return 0;
}

static int vm_run(void *state, uint64_t ops)
{
	struct vm_case *v = state;
	for (uint64_t i = 0; i < ops; i++) {
		int64_t n = v->wl->run_one(&v->ctx, v->ts);
		if (n < 0)
			return (int)n;
	}
	return atomic_load(&v->ctx.failures) ? RUMA_ECORRUPT : 0;
}

static void vm_teardown(void *state)
{
	vm_free(state);
}

static int btree_setup(const char *dir, void **state)
{
	return vm_setup(dir, &ruma_vmcache_rndread_workload, RND_TUPLES, RUMA_BM_DURABLE_OFF,
			state);
}

static int tpcc_setup(const char *dir, void **state)
{
	return vm_setup(dir, &ruma_vmcache_tpcc_workload, TPCC_WAREHOUSES, RUMA_BM_DURABLE_OFF,
			state);
}

static int tpcc_durable_setup(const char *dir, void **state)
{
	return vm_setup(dir, &ruma_vmcache_tpcc_workload, TPCC_WAREHOUSES,
			RUMA_BM_DURABLE_ASYNC, state);
}

/* ---- ART, u64 keys, libc allocator -------------------------------------- */

struct art_case {
	ruma_alloc alloc;
	ruma_art *tree;
	uint64_t *keys; /* ART_KEYS distinct keys below RUMA_ART_MAX_TID */
	size_t next;    /* insert: the next key to insert; lookup: the next to look up */
	bool insert;
};

static void art_free(struct art_case *a)
{
	ruma_art_destroy(a->tree);
	ruma_alloc_destroy(&a->alloc);
	free(a->keys);
	free(a);
}

/* Keys from the fixed seed (duplicates are harmless: a present key is
 * found, or inserted as "present already" — the same work every run). */
static int art_setup(bool insert, void **state)
{
	struct art_case *a = calloc(1, sizeof(*a));
	ruma_art_options o = { .keys = RUMA_ART_U64 };
	ruma_rng rng;
	int r;

	if (!a)
		return -ENOMEM;
	a->insert = insert;
	a->keys = malloc(ART_KEYS * sizeof(*a->keys));
	if (!a->keys || (r = ruma_alloc_create(RUMA_ALLOC_LIBC, &a->alloc))) {
		free(a->keys);
		free(a);
		return -ENOMEM;
	}
	o.alloc = &a->alloc;
	ruma_rng_seed(&rng, GUARD_SEED);
	for (size_t i = 0; i < ART_KEYS; i++)
		a->keys[i] = ruma_rng_next(&rng) & RUMA_ART_MAX_TID;
	r = ruma_art_create(&o, &a->tree);
	for (size_t i = 0; !r && !insert && i < ART_KEYS; i++)
		r = ruma_art_u64_insert(a->tree, a->keys[i]) < 0 ? -ENOMEM : 0;
	if (r) {
		art_free(a);
		return r;
	}
	*state = a;
	return 0;
}

static int art_insert_setup(const char *dir, void **state)
{
	(void)dir;
	return art_setup(true, state);
}

static int art_lookup_setup(const char *dir, void **state)
{
	(void)dir;
	return art_setup(false, state);
}

static int art_run(void *state, uint64_t ops)
{
	struct art_case *a = state;
	for (uint64_t i = 0; i < ops; i++, a->next++) {
		uint64_t k = a->keys[a->next % ART_KEYS];
		int r = a->insert ? ruma_art_u64_insert(a->tree, k) : ruma_art_u64_lookup(a->tree, k);
		if (r < 0)
			return r;
	}
	return 0;
}

static void art_teardown(void *state)
{
	art_free(state);
}

/* ---- rewired vector push ------------------------------------------------- */

static int vec_setup(const char *dir, void **state)
{
	ruma_vec_options o;
	ruma_vec *v;
	(void)dir;
	ruma_vec_options_default(&o);
	o.max_bytes = 256u << 20; /* valgrind refuses the default 64 GiB reservation */
	int r = ruma_vec_create(&o, &v);
	if (!r)
		*state = v;
	return r;
}

static int vec_run(void *state, uint64_t ops)
{
	ruma_vec *v = state;
	for (uint64_t i = 0; i < ops; i++) {
		int r = ruma_vec_push_u64(v, i);
		if (r)
			return r;
	}
	return 0;
}

static void vec_teardown(void *state)
{
	ruma_vec_destroy(state);
}

static const ruma_guard_case cases[] = {
	{ "btree_lookup", "rndread lookup of 1 of 1e5 tuples through the buffer manager, in memory",
	  20000, 50000, btree_setup, vm_run, vm_teardown },
	{ "tpcc", "one TPC-C transaction (standard mix, 1 warehouse), in memory, no log", 500,
	  2000, tpcc_setup, vm_run, vm_teardown },
	{ "tpcc_durable", "as tpcc with a log (--durable=async): the committing thread's work",
	  500, 2000, tpcc_durable_setup, vm_run, vm_teardown },
	{ "db_get", "db.h point read of 1 of 2e4 entries of 1000 B in a read-only transaction",
	  5000, 20000, ruma_guard_db_setup, ruma_guard_db_get, ruma_guard_db_teardown },
	{ "db_scan", "db.h cursor seek and walk of 1..100 entries (uniform), read-only transaction",
	  500, 2000, ruma_guard_db_setup, ruma_guard_db_scan, ruma_guard_db_teardown },
	{ "db_update_si", "db.h overwrite of 1 of 2e4 values of 1000 B in a read-write transaction "
	  "beside an open snapshot (renewed every 64)",
	  2000, 10000, ruma_guard_db_setup, ruma_guard_db_update_si, ruma_guard_db_teardown },
	{ "art_u64_lookup", "ART u64 lookup of a present key, 2e5 keys, libc allocator", 50000,
	  200000, art_lookup_setup, art_run, art_teardown },
	{ "art_u64_insert", "ART u64 insert of a new key (tree of 5e4 to 2e5 keys)", 50000,
	  150000, art_insert_setup, art_run, art_teardown },
	{ "vec_push", "rewired vector push of a u64, growth included (1e6 to 5e6 elements)",
	  1000000, 4000000, vec_setup, vec_run, vec_teardown },
};

const ruma_guard_case *ruma_guard_cases(size_t *count)
{
	*count = RUMA_ARRAY_SIZE(cases);
	return cases;
}
