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
 * docs/tpcc.md).
 *
 * On a store with a log (`--durable`) every transaction is one ruma_txn
 * (txn.c); the load runs without waiting for the log per row (the driver
 * defers it) and becomes durable at once with the "loaded" mark.  With --commit-log, each
 * committed New-Order is appended to the driver's commit log after its
 * commit returned (one pwrite of a fixed-size text record "w d o_id"), and
 * --check verifies every recorded order (tpcc_check_orders).  TPCC_SCALE=n
 * (tests only, not TPC-C) divides the per-warehouse cardinalities by n.
 *
 * Syscalls: pwrite/pread of the commit log through src/os.
 */
#include "bench/vmcache/tpcc/tpcc.h"
#include "bench/vmcache/workload.h"

#include "os/os.h"

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
	_Atomic uint64_t retries, gave_up;
	uint32_t scale; /* TPCC_SCALE */
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
	if (s->db->sz.warehouses != ctx->datasize || s->db->sz.scale != s->scale) {
		fprintf(stderr,
			"tpcc: the kept store holds %" PRIu32 " warehouses at TPCC_SCALE=%" PRIu32
			", not DATASIZE=%" PRIu64 " at TPCC_SCALE=%" PRIu32
			"; use those or drop --keep\n",
			s->db->sz.warehouses, s->db->sz.scale, ctx->datasize, s->scale);
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
	s->scale = 1;
	const char *scale = getenv("TPCC_SCALE");
	if (scale && *scale) {
		uint64_t v;
		if (ruma_parse_u64(scale, &v) || v < 1 || v > 100) {
			fprintf(stderr, "tpcc: TPCC_SCALE=%s: expected 1 .. 100\n", scale);
			return RUMA_EBADCOMBO;
		}
		s->scale = (uint32_t)v;
	}
	if (ctx->keep && (r = tw_open_kept(ctx, s)) < 0)
		return r;
	if (r == 1) {
		tpcc_sizes sz;
		if ((r = tpcc_sizes_init(&sz, (uint32_t)ctx->datasize, s->scale)))
			return r;
		r = tpcc_db_create(ctx->bm, &sz, &rng, &s->db);
		if (r == RUMA_EEXISTS)
			fprintf(stderr, "tpcc: the store holds a partial TPC-C database; "
					"run without --keep\n");
		if (r)
			return r == RUMA_EEXISTS ? RUMA_EBADCOMBO : r;
	}
	s->db->home_per_thread = per_thread;
	s->db->txn = ruma_bm_logging(ctx->bm);
	return tpcc_db_begin_run(s->db, &rng);
}

static int tw_load(ruma_vmcache_ctx *ctx, unsigned tid, unsigned nthreads)
{
	struct tpcc_wl *s = ctx->wl;
	return tpcc_load_share(s->db, tid, nthreads, ctx->seed);
}

/* Append the committed new-order of wk to the commit log.  After a
 * simulated power loss nothing is recorded: a commit that returned after it
 * was not durable on the simulated machine. */
static int record_commit(ruma_vmcache_ctx *ctx, const tpcc_worker *wk)
{
	char rec[RUMA_VMCACHE_COMMIT_REC + 1];
	if (ruma_os_powerloss_dead())
		return 0;
	snprintf(rec, sizeof(rec), "%10" PRIu32 " %3" PRIu32 " %10" PRIu32 "\n", wk->no_w, wk->no_d,
		 wk->no_o_id);
	uint64_t off = atomic_fetch_add(&ctx->commit_off, RUMA_VMCACHE_COMMIT_REC);
	return ruma_os_pwrite_full(ctx->commit_fd, rec, RUMA_VMCACHE_COMMIT_REC, (off_t)off);
}

/* Every load share succeeded: mark the population complete (with a log,
 * in SYNC mode this operation's wait makes the whole load durable). */
static int tw_load_done(ruma_vmcache_ctx *ctx)
{
	struct tpcc_wl *s = ctx->wl;
	return tpcc_db_mark_loaded(s->db);
}

static int tw_thread_init(ruma_vmcache_ctx *ctx, unsigned tid, void **ts)
{
	struct tpcc_wl *s = ctx->wl;
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
	uint64_t gave_up = wk->gave_up;
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
	if (rolled_back || wk->gave_up != gave_up)
		return 0;
	if (kind == TPCC_TX_NEW_ORDER && ctx->commit_fd >= 0 && (r = record_commit(ctx, wk)))
		return r;
	return 1;
}

static void tw_thread_fini(ruma_vmcache_ctx *ctx, void *ts)
{
	struct tpcc_wl *s = ctx->wl;
	tpcc_worker *wk = ts;
	for (int i = 0; i < 5; i++)
		atomic_fetch_add(&s->committed[i], wk->committed[i]);
	atomic_fetch_add(&s->rolled_back, wk->rolled_back);
	atomic_fetch_add(&s->skipped, wk->skipped_districts);
	atomic_fetch_add(&s->retries, wk->retries);
	atomic_fetch_add(&s->gave_up, wk->gave_up);
	free(wk);
}

/* Read the commit log's records ("w d o_id" lines; zero-byte holes
 * skipped) into *out (*n of them). */
static int read_commit_log(ruma_vmcache_ctx *ctx, tpcc_order_ref **out, size_t *n)
{
	uint64_t end = atomic_load(&ctx->commit_off);
	size_t cap = end / RUMA_VMCACHE_COMMIT_REC + 1;
	tpcc_order_ref *v = malloc(cap * sizeof(*v));
	char rec[RUMA_VMCACHE_COMMIT_REC + 1];
	int r = 0;

	*n = 0;
	if (!v)
		return -ENOMEM;
	for (uint64_t off = 0; off + RUMA_VMCACHE_COMMIT_REC <= end && !r;
	     off += RUMA_VMCACHE_COMMIT_REC) {
		r = ruma_os_pread_full(ctx->commit_fd, rec, RUMA_VMCACHE_COMMIT_REC, (off_t)off);
		if (r)
			break;
		rec[RUMA_VMCACHE_COMMIT_REC] = '\0';
		if (rec[0] == '\0')
			continue; /* hole: the writer was killed between offset and write */
		tpcc_order_ref o;
		if (sscanf(rec, "%" SCNu32 " %" SCNu32 " %" SCNu32, &o.w, &o.d, &o.o_id) != 3 ||
		    rec[RUMA_VMCACHE_COMMIT_REC - 1] != '\n') {
			fprintf(stderr, "tpcc check: commit log: bad record at byte %" PRIu64 "\n",
				off);
			r = RUMA_ECORRUPT;
			break;
		}
		v[(*n)++] = o;
	}
	if (r) {
		free(v);
		return r;
	}
	*out = v;
	return 0;
}

static int tw_check(ruma_vmcache_ctx *ctx)
{
	struct tpcc_wl *s = ctx->wl;
	int r = tpcc_check(s->db, true, stderr);
	if (r == 0)
		fprintf(stderr, "tpcc check: consistency conditions 1-4, row counts and all "
				"%d B-trees ok (%" PRIu32 " warehouses)\n",
			TPCC_NTABLES, s->db->sz.warehouses);
	if (r || ctx->commit_fd < 0)
		return r;
	tpcc_order_ref *orders;
	size_t n;
	if ((r = read_commit_log(ctx, &orders, &n)))
		return r;
	r = tpcc_check_orders(s->db, orders, n, stderr);
	free(orders);
	if (r == 0)
		fprintf(stderr, "tpcc check: all %zu committed new-orders of the commit log are "
				"present\n", n);
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
			"; conflict retries %" PRIu64 ", given up %" PRIu64 "\n",
			atomic_load(&s->committed[0]), atomic_load(&s->committed[1]),
			atomic_load(&s->committed[2]), atomic_load(&s->committed[3]),
			atomic_load(&s->committed[4]), atomic_load(&s->rolled_back),
			atomic_load(&s->skipped), atomic_load(&s->retries),
			atomic_load(&s->gave_up));
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
	.load_done = tw_load_done,
	.thread_init = tw_thread_init,
	.run_one = tw_run_one,
	.thread_fini = tw_thread_fini,
	.check = tw_check,
	.teardown = tw_teardown,
};
