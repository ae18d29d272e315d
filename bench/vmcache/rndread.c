/*
 * rndread.c — the random-read workload of vmcache: DATASIZE tuples with
 * 8-byte big-endian keys 0..n-1 and 120-byte payloads derived from the key,
 * loaded in parallel (disjoint ascending key ranges per thread), then
 * uniform random point lookups, each verified against one 8-byte word of the
 * payload its key must have (word k mod 15 for key k, so that every word is
 * checked across lookups and a value stored under another key fails at
 * once; --check compares every byte of every tuple).  A wrong or missing
 * value is counted as a failure.  With
 * INFLIGHT > 1 each thread hands RND_WINDOW x INFLIGHT keys at a time to
 * ruma_btree_lookup_batch with INFLIGHT lookups active: a finished lookup's
 * place is taken by the next key at once, so INFLIGHT lookups (and up to
 * that many page reads) stay in flight, and the queue drains only once per
 * RND_WINDOW x INFLIGHT keys (a batch of just INFLIGHT keys would let it
 * run dry at the end of every batch).  Every lookup counts as one
 * operation.
 *
 * With --keep, a marker entry (key "\xff#count", 9 bytes: sorts after every
 * data key) records how many tuples were loaded, so a later run on the same
 * store skips the load when DATASIZE matches.  The marker is written by
 * load_done, which the driver calls only after every loader thread finished
 * without error: a load that failed in any thread (full disk, I/O error,
 * interrupt) leaves no marker, and the next --keep run refuses the store.
 */
#include "bench/vmcache/rndread.h"

#include <ruma/btree.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RND_TREE "rndread"
#define RND_MAX_REPORTED 10u
/* Keys per lookup batch, in multiples of INFLIGHT. */
#define RND_WINDOW 16u

static const unsigned char marker_key[9] = { 0xff, '#', 'c', 'o', 'u', 'n', 't', 0, 0 };

struct rnd {
	ruma_btree *tree;
	_Atomic unsigned reported;
};

struct rnd_thread {
	ruma_rng rng;
	ruma_vmcache_ctx *ctx;
	unsigned n;             /* keys per batch (RND_WINDOW x INFLIGHT) */
	uint64_t *k;            /* the batch's key numbers */
	unsigned char (*key)[8];
	const void **kp;
	size_t *klen;
	int *res;
	bool *seen;
};

void ruma_vmcache_rnd_key(uint64_t k, unsigned char out[8])
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (unsigned char)k;
		k >>= 8;
	}
}

uint64_t ruma_vmcache_rnd_key_decode(const unsigned char in[8])
{
	uint64_t k = 0;
	for (int i = 0; i < 8; i++)
		k = k << 8 | in[i];
	return k;
}

uint64_t ruma_vmcache_rnd_payload_word(uint64_t k, unsigned i)
{
	uint64_t z = k * 0x9E3779B97F4A7C15ull + 0x1234567ull + (i + 1ull) * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The payload of key k: 15 words of splitmix64 seeded by k. */
void ruma_vmcache_rnd_payload(uint64_t k, unsigned char out[RND_PAYLOAD])
{
	for (unsigned i = 0; i < RND_PAYLOAD / 8; i++) {
		uint64_t z = ruma_vmcache_rnd_payload_word(k, i);
		memcpy(out + i * 8, &z, 8);
	}
}

/* A looked-up value against the word its key must hold at position k mod
 * 15: one splitmix64 step instead of the whole payload's 15, so that the
 * check costs the lookup loop little next to the lookup itself. */
static bool rnd_value_ok(uint64_t k, const void *val, size_t vlen)
{
	unsigned i = (unsigned)(k % (RND_PAYLOAD / 8));
	uint64_t have;

	if (vlen != RND_PAYLOAD)
		return false;
	memcpy(&have, (const unsigned char *)val + 8 * i, 8);
	return have == ruma_vmcache_rnd_payload_word(k, i);
}

static void report(ruma_vmcache_ctx *ctx, uint64_t key, const char *what)
{
	struct rnd *s = ctx->wl;
	atomic_fetch_add(&ctx->failures, 1);
	if (atomic_fetch_add(&s->reported, 1) < RND_MAX_REPORTED)
		fprintf(stderr, "rndread: key %" PRIu64 ": %s\n", key, what);
}

uint64_t ruma_vmcache_rnd_space(uint64_t n)
{
	/* 192 bytes per tuple (1.5 x 128) + 1 MiB; saturates instead of wrapping */
	if (n > (UINT64_MAX - (1u << 20)) / 192)
		return UINT64_MAX;
	return n * 192 + (1u << 20);
}

const char *ruma_vmcache_rnd_check_datasize(uint64_t n)
{
	return n == 0 ? "DATASIZE must be at least 1 tuple" : NULL;
}

int ruma_vmcache_rnd_setup(ruma_vmcache_ctx *ctx)
{
	struct rnd *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	ctx->wl = s;
	if (ctx->keep) {
		r = ruma_btree_open(ctx->bm, RND_TREE, &s->tree);
		if (r == 0) {
			uint64_t have = 0;
			size_t len = 0;
			r = ruma_btree_lookup(s->tree, marker_key, sizeof(marker_key), &have,
					      sizeof(have), &len);
			if (r == 0 && len == sizeof(have) && have == ctx->datasize) {
				ctx->loaded = true;
				return 0;
			}
			if (r == 0 && len == sizeof(have)) {
				fprintf(stderr,
					"rndread: the kept store holds %" PRIu64 " tuples, not "
					"DATASIZE=%" PRIu64 "; use that DATASIZE or drop --keep\n",
					have, ctx->datasize);
				return RUMA_EBADCOMBO;
			}
			if (r != RUMA_ENOTFOUND)
				return r;
			fprintf(stderr, "rndread: the kept store has an unfinished load; "
					"run without --keep\n");
			return RUMA_EBADCOMBO;
		}
		if (r != RUMA_ENOTFOUND)
			return r;
	}
	return ruma_btree_create(ctx->bm, RND_TREE, &s->tree);
}

int ruma_vmcache_rnd_load(ruma_vmcache_ctx *ctx, unsigned tid, unsigned nthreads)
{
	struct rnd *s = ctx->wl;
	uint64_t n = ctx->datasize;
	uint64_t lo = n * tid / nthreads, hi = n * (tid + 1) / nthreads;
	unsigned char key[8], val[RND_PAYLOAD];

	for (uint64_t k = lo; k < hi; k++) {
		if ((k & 1023) == 0 && ruma_vmcache_interrupted())
			return -EINTR;
		ruma_vmcache_rnd_key(k, key);
		ruma_vmcache_rnd_payload(k, val);
		int r = ruma_btree_insert(s->tree, key, sizeof(key), val, sizeof(val));
		if (r) {
			fprintf(stderr, "rndread: loading key %" PRIu64 " failed: %s\n", k,
				ruma_strerror(r));
			return r;
		}
	}
	return 0;
}

/* All loader threads succeeded: record how many tuples the store holds. */
int ruma_vmcache_rnd_load_done(ruma_vmcache_ctx *ctx)
{
	struct rnd *s = ctx->wl;
	uint64_t cnt = ctx->datasize;
	return ruma_btree_upsert(s->tree, marker_key, sizeof(marker_key), &cnt, sizeof(cnt), NULL);
}

static int rnd_thread_fini(ruma_vmcache_ctx *ctx, void *ts)
{
	struct rnd_thread *t = ts;
	(void)ctx;
	if (!t)
		return 0;
	free(t->k);
	free(t->key);
	free(t->kp);
	free(t->klen);
	free(t->res);
	free(t->seen);
	free(t);
	return 0;
}

static int rnd_thread_init(ruma_vmcache_ctx *ctx, unsigned tid, void **ts)
{
	struct rnd_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ruma_rng_seed(&t->rng, ctx->seed * 0x100000001b3ull + tid + 1);
	t->ctx = ctx;
	t->n = ctx->inflight > 1 ? ctx->inflight * RND_WINDOW : 1;
	if (t->n > 1) {
		t->k = calloc(t->n, sizeof(*t->k));
		t->key = calloc(t->n, sizeof(*t->key));
		t->kp = calloc(t->n, sizeof(*t->kp));
		t->klen = calloc(t->n, sizeof(*t->klen));
		t->res = calloc(t->n, sizeof(*t->res));
		t->seen = calloc(t->n, sizeof(*t->seen));
		if (!t->k || !t->key || !t->kp || !t->klen || !t->res || !t->seen) {
			(void)rnd_thread_fini(ctx, t);
			return -ENOMEM;
		}
	}
	*ts = t;
	return 0;
}

static void batch_value(size_t i, const void *val, size_t vlen, void *arg)
{
	struct rnd_thread *t = arg;

	t->seen[i] = true;
	if (!rnd_value_ok(t->k[i], val, vlen))
		report(t->ctx, t->k[i], "wrong value");
}

/* RND_WINDOW x INFLIGHT lookups, INFLIGHT at once; each one is an operation. */
static int64_t rnd_run_batch(ruma_vmcache_ctx *ctx, struct rnd_thread *t)
{
	struct rnd *s = ctx->wl;

	for (unsigned i = 0; i < t->n; i++) {
		t->k[i] = ruma_rng_below(&t->rng, ctx->datasize);
		ruma_vmcache_rnd_key(t->k[i], t->key[i]);
		t->kp[i] = t->key[i];
		t->klen[i] = 8;
		t->seen[i] = false;
	}
	int r = ruma_btree_lookup_batch(s->tree, t->n, t->kp, t->klen, ctx->inflight, batch_value,
					t, t->res);
	if (r)
		return r;
	for (unsigned i = 0; i < t->n; i++) {
		if (t->res[i] == RUMA_ENOTFOUND)
			report(ctx, t->k[i], "not found");
		else if (t->res[i])
			return t->res[i];
		else if (!t->seen[i])
			report(ctx, t->k[i], "found but no value delivered");
	}
	return t->n;
}

static int64_t rnd_run_one(ruma_vmcache_ctx *ctx, void *ts)
{
	struct rnd *s = ctx->wl;
	struct rnd_thread *t = ts;
	if (t->n > 1)
		return rnd_run_batch(ctx, t);
	uint64_t k = ruma_rng_below(&t->rng, ctx->datasize);
	unsigned char key[8], got[RND_PAYLOAD + 8];
	size_t len = 0;

	ruma_vmcache_rnd_key(k, key);
	int r = ruma_btree_lookup(s->tree, key, sizeof(key), got, sizeof(got), &len);
	if (r == RUMA_ENOTFOUND) {
		report(ctx, k, "not found");
		return 1;
	}
	if (r == -ENOBUFS) {
		report(ctx, k, "value too long");
		return 1;
	}
	if (r)
		return r;
	if (!rnd_value_ok(k, got, len))
		report(ctx, k, "wrong value");
	return 1;
}

struct scan_state {
	ruma_vmcache_ctx *ctx;
	uint64_t next;
	uint64_t bad;
};

static bool scan_cb(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct scan_state *st = arg;
	unsigned char want[RND_PAYLOAD];

	if (klen != 8)
		return true; /* the marker */
	uint64_t k = ruma_vmcache_rnd_key_decode(key);
	if (k != st->next) {
		if (st->bad++ < RND_MAX_REPORTED)
			fprintf(stderr, "rndread check: expected key %" PRIu64 ", found %" PRIu64 "\n",
				st->next, k);
	} else {
		ruma_vmcache_rnd_payload(k, want);
		if (vlen != RND_PAYLOAD || memcmp(val, want, RND_PAYLOAD)) {
			if (st->bad++ < RND_MAX_REPORTED)
				fprintf(stderr, "rndread check: key %" PRIu64 " has a wrong value\n", k);
		}
	}
	st->next = k + 1;
	return true;
}

int ruma_vmcache_rnd_check(ruma_vmcache_ctx *ctx)
{
	struct rnd *s = ctx->wl;
	struct scan_state st = { ctx, 0, 0 };

	int r = ruma_btree_scan_asc(s->tree, NULL, 0, scan_cb, &st);
	if (r)
		return r;
	if (st.next != ctx->datasize) {
		fprintf(stderr, "rndread check: scan ended at key %" PRIu64 ", expected %" PRIu64 "\n",
			st.next, ctx->datasize);
		st.bad++;
	}
	r = ruma_btree_check(s->tree, stderr);
	if (r)
		return r;
	if (st.bad) {
		fprintf(stderr, "rndread check: %" PRIu64 " problems\n", st.bad);
		return RUMA_ECORRUPT;
	}
	fprintf(stderr, "rndread check: %" PRIu64 " tuples in order with correct values; tree ok\n",
		ctx->datasize);
	return 0;
}

ruma_btree *ruma_vmcache_rnd_tree(ruma_vmcache_ctx *ctx)
{
	struct rnd *s = ctx->wl;
	return s->tree;
}

void ruma_vmcache_rnd_teardown(ruma_vmcache_ctx *ctx)
{
	struct rnd *s = ctx->wl;
	if (!s)
		return;
	ruma_bm_stats st;
	ruma_bm_get_stats(ctx->bm, &st);
	if (st.aio_waits)
		fprintf(stderr,
			"async reads: %" PRIu64 " waits for a completion, %.1f reads in flight "
			"per thread on average while waiting\n",
			st.aio_waits, (double)st.aio_wait_depth / (double)st.aio_waits);
	ruma_btree_release(s->tree);
	free(s);
	ctx->wl = NULL;
}

bool ruma_vmcache_rnd_owns_tree(const char *name, size_t len)
{
	return len == strlen(RND_TREE) && !memcmp(name, RND_TREE, len);
}

const ruma_vmcache_workload ruma_vmcache_rndread_workload = {
	.name = "rndread",
	.owns_tree = ruma_vmcache_rnd_owns_tree,
	.summary = "uniform random lookups of DATASIZE tuples (8-byte keys, 120-byte values)",
	.space_estimate = ruma_vmcache_rnd_space,
	.check_datasize = ruma_vmcache_rnd_check_datasize,
	.setup = ruma_vmcache_rnd_setup,
	.load = ruma_vmcache_rnd_load,
	.load_done = ruma_vmcache_rnd_load_done,
	.thread_init = rnd_thread_init,
	.run_one = rnd_run_one,
	.thread_fini = rnd_thread_fini,
	.check = ruma_vmcache_rnd_check,
	.teardown = ruma_vmcache_rnd_teardown,
};
