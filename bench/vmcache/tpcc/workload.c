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
 * --check verifies every recorded order (tpcc_check_orders).
 *
 * --durable=pipeline (ctx->commit_pipeline = depth): a thread commits with
 * ruma_txn_commit_nowait and goes on with its next transaction; each commit
 * waits in the thread's ring of pending commits until the log is durable up
 * to its LSN, and only then is it counted in tx and recorded in the commit
 * log.  A full ring waits for its oldest entry; the end of the run waits for
 * all of them.  So tx and the commit log count exactly what --durable (each
 * commit waiting) would, while one fdatasync carries every commit of every
 * thread made meanwhile.  TPCC_SCALE=n
 * (tests only, not TPC-C) divides the per-warehouse cardinalities by n.
 *
 * Syscalls: pwrite/pread of the commit log through core_ext.h's file calls (src/os).
 */
#include "bench/vmcache/tpcc/tpcc.h"
#include "bench/vmcache/workload.h"

#include "core/core_ext.h"

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
	/* with a log: its end LSN when the measured phase began (first thread) */
	_Atomic uint64_t log_at_run;
	_Atomic bool run_started;
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
	s->scale = ctx->tpcc_scale ? ctx->tpcc_scale : 1;
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
	s->db->home_per_thread = ctx->tpcc_home_thread;
	s->db->txn = ruma_bm_logging(ctx->bm) || ctx->tpcc_txn;
	return tpcc_db_begin_run(s->db, &rng);
}

static int tw_load(ruma_vmcache_ctx *ctx, unsigned tid, unsigned nthreads)
{
	struct tpcc_wl *s = ctx->wl;
	return tpcc_load_share(s->db, tid, nthreads, ctx->seed);
}

/* A committed transaction waiting for the log (--durable=pipeline). */
struct pending {
	uint64_t at;           /* durable once the log is durable up to here */
	bool new_order;        /* record w d o_id in the commit log */
	uint32_t w, d, o_id;
};

/* A measured-phase thread: the terminal and its pending commits (a ring). */
struct tw_thread {
	tpcc_worker wk;
	struct pending *q;
	unsigned head, n, cap;
};

/* Append a committed new-order to the commit log.  After a simulated power
 * loss nothing is recorded: a commit that returned after it was not durable
 * on the simulated machine. */
static int record_commit(ruma_vmcache_ctx *ctx, uint32_t w, uint32_t d, uint32_t o_id)
{
	char rec[RUMA_VMCACHE_COMMIT_REC + 1];
	if (ruma_powerloss_dead())
		return 0;
	snprintf(rec, sizeof(rec), "%10" PRIu32 " %3" PRIu32 " %10" PRIu32 "\n", w, d, o_id);
	uint64_t off = atomic_fetch_add(&ctx->commit_off, RUMA_VMCACHE_COMMIT_REC);
	return ruma_file_pwrite_full(ctx->commit_fd, rec, RUMA_VMCACHE_COMMIT_REC, off);
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
	struct tw_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	tpcc_worker_init(&t->wk, s->db, tid, ctx->seed + 0x51ed27ull * (tid + 1) + s->db->run);
	if (!atomic_exchange(&s->run_started, true))
		atomic_store(&s->log_at_run, ruma_bm_log_end(ctx->bm));
	if (ctx->commit_pipeline && s->db->txn) {
		t->cap = ctx->commit_pipeline;
		t->q = calloc(t->cap, sizeof(*t->q));
		if (!t->q) {
			free(t);
			return -ENOMEM;
		}
		t->wk.pipelined = true;
	}
	*ts = t;
	return 0;
}

/* Acknowledge the pending commits the log has made durable, oldest first;
 * with `wait`, first wait for the oldest one.  Returns how many were
 * acknowledged, or a negative error. */
static int64_t ack_durable(ruma_vmcache_ctx *ctx, struct tw_thread *t, bool wait)
{
	if (!t->n)
		return 0;
	if (wait) {
		int r = ruma_bm_log_flush(ctx->bm, t->q[t->head].at);
		if (r)
			return r;
	}
	uint64_t durable = ruma_bm_log_durable(ctx->bm);
	int64_t acked = 0;
	while (t->n && t->q[t->head].at <= durable) {
		const struct pending *p = &t->q[t->head];
		int r = p->new_order && ctx->commit_fd >= 0 ? record_commit(ctx, p->w, p->d, p->o_id)
							    : 0;
		if (r)
			return r;
		t->head = (t->head + 1) % t->cap;
		t->n--;
		acked++;
	}
	return acked;
}

/* A pipelined commit just returned: queue it (waiting for room), then
 * acknowledge what is durable. */
static int64_t pipeline_commit(ruma_vmcache_ctx *ctx, struct tw_thread *t, bool new_order)
{
	int64_t acked = 0;
	if (t->n == t->cap && (acked = ack_durable(ctx, t, true)) < 0)
		return acked;
	t->q[(t->head + t->n) % t->cap] = (struct pending){
		.at = t->wk.commit_at, .new_order = new_order,
		.w = t->wk.no_w, .d = t->wk.no_d, .o_id = t->wk.no_o_id };
	t->n++;
	int64_t more = ack_durable(ctx, t, false);
	return more < 0 ? more : acked + more;
}

static int64_t tw_run_one(ruma_vmcache_ctx *ctx, void *ts)
{
	struct tpcc_wl *s = ctx->wl;
	struct tw_thread *t = ts;
	tpcc_worker *wk = &t->wk;
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
		return t->q ? ack_durable(ctx, t, false) : 0;
	if (t->q)
		return pipeline_commit(ctx, t, kind == TPCC_TX_NEW_ORDER);
	if (kind == TPCC_TX_NEW_ORDER && ctx->commit_fd >= 0 &&
	    (r = record_commit(ctx, wk->no_w, wk->no_d, wk->no_o_id)))
		return r;
	return 1;
}

static int tw_thread_fini(ruma_vmcache_ctx *ctx, void *ts)
{
	struct tpcc_wl *s = ctx->wl;
	struct tw_thread *t = ts;
	tpcc_worker *wk = &t->wk;
	int64_t r = 0;
	while (t->n && (r = ack_durable(ctx, t, true)) >= 0)
		;
	for (int i = 0; i < 5; i++)
		atomic_fetch_add(&s->committed[i], wk->committed[i]);
	atomic_fetch_add(&s->rolled_back, wk->rolled_back);
	atomic_fetch_add(&s->skipped, wk->skipped_districts);
	atomic_fetch_add(&s->retries, wk->retries);
	atomic_fetch_add(&s->gave_up, wk->gave_up);
	free(t->q);
	free(t);
	return r < 0 ? (int)r : 0;
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
		r = ruma_file_pread_full(ctx->commit_fd, rec, RUMA_VMCACHE_COMMIT_REC, off);
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

/* The log bytes the measured phase appended (records, their headers and
 * padding, checkpoints' records), in all and per committed transaction. */
static void report_log_bytes(ruma_vmcache_ctx *ctx, struct tpcc_wl *s)
{
	uint64_t bytes = ruma_bm_log_end(ctx->bm) - atomic_load(&s->log_at_run), tx = 0;
	for (unsigned i = 0; i < 5; i++)
		tx += atomic_load(&s->committed[i]);
	fprintf(stderr, "tpcc: log %" PRIu64 " bytes appended in the run, %.0f per committed transaction\n",
		bytes, tx ? (double)bytes / (double)tx : 0.0);
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
	if (s->db && atomic_load(&s->run_started) && ruma_bm_logging(ctx->bm))
		report_log_bytes(ctx, s);
	tpcc_db_close(s->db);
	free(s);
	ctx->wl = NULL;
}

/* The TPC-C tables are the workload's trees. */
static bool tw_owns_tree(const char *name, size_t len)
{
	for (int i = 0; i < TPCC_NTABLES; i++)
		if (strlen(tpcc_table_names[i]) == len && !memcmp(tpcc_table_names[i], name, len))
			return true;
	return false;
}

const ruma_vmcache_workload ruma_vmcache_tpcc_workload = {
	.name = "tpcc",
	.owns_tree = tw_owns_tree,
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
