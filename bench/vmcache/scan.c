/*
 * scan.c — the range-scan workloads of `ruma vmcache`: "scan" (ascending)
 * and "scandesc" (descending) over the data set of rndread (rndread.h:
 * same tree, same loader, same --check, so a store kept by one is used by
 * the other).  Each operation scans SCAN_TUPLES consecutive tuples from a
 * uniformly random start key (fewer where the table ends) and verifies
 * every key (consecutive), the first and last word of every value, and
 * every SCAN_FULL_EVERY-th value whole (generating a whole value costs more
 * than reading its share of a page; --check compares every value).  The
 * operation count is the number of tuples visited, and the driver's rmb
 * column (MiB read per second) is the scan bandwidth.  With a table larger
 * than PHYSGB nearly every leaf is read from the store, through the
 * B-tree's scan read-ahead: INFLIGHT > 1
 * sets its depth (the most leaves read ahead, ruma_btree_set_read_ahead),
 * INFLIGHT 1 keeps the library default (RUMA_BTREE_READ_AHEAD).
 *
 * No system calls of its own.
 */
#include "bench/vmcache/rndread.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Tuples per scan operation (about 2,000 leaves). */
#define SCAN_TUPLES 65536u
#define SCAN_MAX_REPORTED 10u
/* Values compared whole: one in this many (the others: first and last word). */
#define SCAN_FULL_EVERY 16u

struct scan_thread {
	ruma_rng rng;
	ruma_vmcache_ctx *ctx;
	bool desc;
};

/* What one scan expects and has seen. */
struct scan_run {
	struct scan_thread *t;
	uint64_t next;  /* the key the next tuple must have */
	uint64_t seen;  /* tuples visited */
	uint64_t limit; /* tuples to visit */
	bool wrong;
};

static _Atomic unsigned scan_reported;

static void scan_report(ruma_vmcache_ctx *ctx, uint64_t key, const char *what)
{
	atomic_fetch_add(&ctx->failures, 1);
	if (atomic_fetch_add(&scan_reported, 1) < SCAN_MAX_REPORTED)
		fprintf(stderr, "scan: at key %" PRIu64 ": %s\n", key, what);
}

static bool scan_visit(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct scan_run *r = arg;
	unsigned char want[RND_PAYLOAD];

	if (klen != 8)
		return false; /* the marker sorts after every tuple: the table ended */
	uint64_t k = ruma_vmcache_rnd_key_decode(key);
	if (k != r->next) {
		scan_report(r->t->ctx, r->next, "a tuple is missing or out of order");
		r->wrong = true;
		return false;
	}
	/* every value's first and last word; every SCAN_FULL_EVERY-th value whole */
	uint64_t w0, w14;
	bool ok = vlen == RND_PAYLOAD;
	if (ok && k % SCAN_FULL_EVERY == 0) {
		ruma_vmcache_rnd_payload(k, want);
		ok = memcmp(val, want, RND_PAYLOAD) == 0;
	} else if (ok) {
		memcpy(&w0, val, 8);
		memcpy(&w14, (const unsigned char *)val + RND_PAYLOAD - 8, 8);
		ok = w0 == ruma_vmcache_rnd_payload_word(k, 0) &&
		     w14 == ruma_vmcache_rnd_payload_word(k, RND_PAYLOAD / 8 - 1);
	}
	if (!ok)
		scan_report(r->t->ctx, k, "wrong value");
	r->seen++;
	if (r->seen == r->limit || (r->t->desc && k == 0))
		return false;
	r->next = r->t->desc ? k - 1 : k + 1;
	return true;
}

static int scan_setup(ruma_vmcache_ctx *ctx)
{
	int r = ruma_vmcache_rnd_setup(ctx);
	if (r)
		return r;
	unsigned depth = ctx->inflight > 1 ? ctx->inflight : RUMA_BTREE_READ_AHEAD;
	return ruma_btree_set_read_ahead(ruma_vmcache_rnd_tree(ctx), depth);
}

static int scan_thread_init_dir(ruma_vmcache_ctx *ctx, unsigned tid, void **ts, bool desc)
{
	struct scan_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ruma_rng_seed(&t->rng, ctx->seed * 0x100000001b3ull + tid + 1);
	t->ctx = ctx;
	t->desc = desc;
	*ts = t;
	return 0;
}

static int scan_thread_init(ruma_vmcache_ctx *ctx, unsigned tid, void **ts)
{
	return scan_thread_init_dir(ctx, tid, ts, false);
}

static int scandesc_thread_init(ruma_vmcache_ctx *ctx, unsigned tid, void **ts)
{
	return scan_thread_init_dir(ctx, tid, ts, true);
}

static int scan_thread_fini(ruma_vmcache_ctx *ctx, void *ts)
{
	(void)ctx;
	free(ts);
	return 0;
}

/* One scan of up to SCAN_TUPLES tuples from a random key. */
static int64_t scan_run_one(ruma_vmcache_ctx *ctx, void *ts)
{
	struct scan_thread *t = ts;
	uint64_t n = ctx->datasize, k0 = ruma_rng_below(&t->rng, n);
	uint64_t avail = t->desc ? k0 + 1 : n - k0;
	struct scan_run r = { .t = t, .next = k0, .limit = RUMA_MIN(avail, SCAN_TUPLES) };
	unsigned char key[8];

	ruma_vmcache_rnd_key(k0, key);
	ruma_btree *tree = ruma_vmcache_rnd_tree(ctx);
	int rc = t->desc ? ruma_btree_scan_desc(tree, key, sizeof(key), scan_visit, &r)
			 : ruma_btree_scan_asc(tree, key, sizeof(key), scan_visit, &r);
	if (rc)
		return rc;
	if (!r.wrong && r.seen < r.limit)
		scan_report(ctx, r.next, "the scan ended early");
	return (int64_t)r.seen;
}

#define SCAN_WORKLOAD(wname, wsummary, init)                                  \
	{                                                                     \
		.name = wname, .summary = wsummary,                           \
		.space_estimate = ruma_vmcache_rnd_space,                     \
		.check_datasize = ruma_vmcache_rnd_check_datasize,            \
		.owns_tree = ruma_vmcache_rnd_owns_tree,                      \
		.setup = scan_setup, .load = ruma_vmcache_rnd_load,           \
		.load_done = ruma_vmcache_rnd_load_done, .thread_init = init, \
		.run_one = scan_run_one, .thread_fini = scan_thread_fini,     \
		.check = ruma_vmcache_rnd_check,                              \
		.teardown = ruma_vmcache_rnd_teardown,                        \
	}

const ruma_vmcache_workload ruma_vmcache_scan_workload =
	SCAN_WORKLOAD("scan", "ascending range scans of 65536 tuples over the rndread data set",
		      scan_thread_init);
const ruma_vmcache_workload ruma_vmcache_scandesc_workload =
	SCAN_WORKLOAD("scandesc", "descending range scans of 65536 tuples over the rndread data set",
		      scandesc_thread_init);
