/*
 * workload.c — TPC-C as a `ruma vmcache` workload (RNDREAD=0 or
 * --workload tpcc): DATASIZE is the number of warehouses, tx counts
 * committed transactions of the standard mix (a New-Order rolled back for
 * its unused item is not counted), --check verifies consistency conditions
 * 1-4 and the trees after the run, --keep reopens a loaded database.
 *
 * The home warehouse of each transaction is drawn uniformly, as in the
 * original vmcache driver; TPCC_HOME=thread fixes it per thread instead
 * (thread t uses warehouse t mod W + 1, like a TPC-C terminal; see
 * docs/tpcc.md).  No syscalls of its own.
 */
#include "vmcache/tpcc/tpcc.h"
#include "vmcache/workload.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct tpcc_wl {
	tpcc_db *db;
	_Atomic uint64_t committed[5];
	_Atomic uint64_t rolled_back;
	_Atomic uint64_t skipped;
	_Atomic bool reported;
};

static uint64_t tw_space(uint64_t datasize)
{
	return datasize * tpcc_bytes_per_warehouse() + (64ull << 20);
}

static const char *tw_check_datasize(uint64_t datasize)
{
	if (datasize < 1 || datasize > 100000)
		return "DATASIZE is the number of TPC-C warehouses: 1 .. 100000";
	return NULL;
}

static int tw_open_kept(ruma_vmcache_ctx *ctx, struct tpcc_wl *s)
{
	int r = tpcc_db_open(ctx->bm, &s->db);
	if (r == RUMA_ENOTFOUND)
		return 1; /* nothing kept: load */
	if (r == RUMA_EBADCOMBO)
		fprintf(stderr, "tpcc: the kept store holds a TPC-C database whose load did not "
				"complete; run without --keep\n");
	if (r == RUMA_EUNSUPP) {
		fprintf(stderr, "tpcc: the kept store was written by another version of the "
				"TPC-C workload; run without --keep\n");
		r = RUMA_EBADCOMBO;
	}
	if (r)
		return r;
	if (s->db->sz.warehouses != ctx->datasize || s->db->sz.scale != 1) {
		fprintf(stderr,
			"tpcc: the kept store holds %" PRIu32 " warehouses (scale 1/%" PRIu32
			"), not DATASIZE=%" PRIu64 "; use that DATASIZE or drop --keep\n",
			s->db->sz.warehouses, s->db->sz.scale, ctx->datasize);
		return RUMA_EBADCOMBO;
	}
	ctx->loaded = true;
	return 0;
}

static int tw_setup(ruma_vmcache_ctx *ctx)
{
	struct tpcc_wl *s = calloc(1, sizeof(*s));
	ruma_rng rng;
	int r = 1;

	if (!s)
		return -ENOMEM;
	ctx->wl = s;
	ruma_rng_seed(&rng, ctx->seed);
	const char *home = getenv("TPCC_HOME");
	bool per_thread = home && !strcmp(home, "thread");
	if (home && !per_thread && strcmp(home, "random")) {
		fprintf(stderr, "tpcc: TPCC_HOME=%s: expected random or thread\n", home);
		return RUMA_EBADCOMBO;
	}
	if (ctx->keep && (r = tw_open_kept(ctx, s)) < 0)
		return r;
	if (r == 1) {
		tpcc_sizes sz;
		if ((r = tpcc_sizes_init(&sz, (uint32_t)ctx->datasize, 1)))
			return r;
		r = tpcc_db_create(ctx->bm, &sz, &rng, &s->db);
		if (r == RUMA_EEXISTS)
			fprintf(stderr, "tpcc: the store holds a partial TPC-C database; "
					"run without --keep\n");
		if (r)
			return r == RUMA_EEXISTS ? RUMA_EBADCOMBO : r;
	}
	s->db->home_per_thread = per_thread;
	return tpcc_db_begin_run(s->db, &rng);
}

static int tw_load(ruma_vmcache_ctx *ctx, unsigned tid, unsigned nthreads)
{
	struct tpcc_wl *s = ctx->wl;
	return tpcc_load_share(s->db, tid, nthreads, ctx->seed);
}

static int tw_thread_init(ruma_vmcache_ctx *ctx, unsigned tid, void **ts)
{
	struct tpcc_wl *s = ctx->wl;
	/* All load threads have finished when the run's threads start. */
	if (tid == 0 && !ctx->loaded) {
		int r = tpcc_db_mark_loaded(s->db);
		if (r)
			return r;
	}
	tpcc_worker *wk = malloc(sizeof(*wk));
	if (!wk)
		return -ENOMEM;
	tpcc_worker_init(wk, s->db, tid, ctx->seed + 0x51ed27ull * (tid + 1) + s->db->run);
	*ts = wk;
	return 0;
}

static int64_t tw_run_one(ruma_vmcache_ctx *ctx, void *ts)
{
	struct tpcc_wl *s = ctx->wl;
	tpcc_worker *wk = ts;
	enum tpcc_tx kind;
	bool rolled_back;
	int r = tpcc_run_one(wk, &kind, &rolled_back);

	if (r == RUMA_ENOTFOUND) {
		/* A row the transaction must find was missing: wrong data. */
		atomic_fetch_add(&ctx->failures, 1);
		if (!atomic_exchange(&s->reported, true))
			fprintf(stderr, "tpcc: transaction type %d did not find a row it needs\n",
				(int)kind);
		return 0;
	}
	if (r)
		return r;
	return rolled_back ? 0 : 1;
}

static void tw_thread_fini(ruma_vmcache_ctx *ctx, void *ts)
{
	struct tpcc_wl *s = ctx->wl;
	tpcc_worker *wk = ts;
	for (int i = 0; i < 5; i++)
		atomic_fetch_add(&s->committed[i], wk->committed[i]);
	atomic_fetch_add(&s->rolled_back, wk->rolled_back);
	atomic_fetch_add(&s->skipped, wk->skipped_districts);
	free(wk);
}

static int tw_check(ruma_vmcache_ctx *ctx)
{
	struct tpcc_wl *s = ctx->wl;
	int r = tpcc_check(s->db, true, stderr);
	if (r == 0)
		fprintf(stderr, "tpcc check: consistency conditions 1-4, row counts and all "
				"%d B-trees ok (%" PRIu32 " warehouses)\n",
			TPCC_NTABLES, s->db->sz.warehouses);
	return r;
}

static void tw_teardown(ruma_vmcache_ctx *ctx)
{
	struct tpcc_wl *s = ctx->wl;
	if (!s)
		return;
	if (s->db)
		fprintf(stderr,
			"tpcc: committed new-order %" PRIu64 ", payment %" PRIu64
			", order-status %" PRIu64 ", delivery %" PRIu64 ", stock-level %" PRIu64
			"; rolled back new-order %" PRIu64 "; delivery districts skipped %" PRIu64
			"\n",
			atomic_load(&s->committed[0]), atomic_load(&s->committed[1]),
			atomic_load(&s->committed[2]), atomic_load(&s->committed[3]),
			atomic_load(&s->committed[4]), atomic_load(&s->rolled_back),
			atomic_load(&s->skipped));
	tpcc_db_close(s->db);
	free(s);
	ctx->wl = NULL;
}

const ruma_vmcache_workload ruma_vmcache_tpcc_workload = {
	.name = "tpcc",
	.summary = "TPC-C (DATASIZE warehouses): the five transactions in the standard mix",
	.space_estimate = tw_space,
	.check_datasize = tw_check_datasize,
	.setup = tw_setup,
	.load = tw_load,
	.thread_init = tw_thread_init,
	.run_one = tw_run_one,
	.thread_fini = tw_thread_fini,
	.check = tw_check,
	.teardown = tw_teardown,
};
