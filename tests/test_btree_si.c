/*
 * test_btree_si.c — snapshot isolation of read-only transactions (txn.h,
 * docs/isolation.md), on one thread with transactions interleaved:
 *
 *   uncommitted       a snapshot does not see a running writer's insert,
 *                     update, in-place update or remove, by point read or
 *                     scan, and never conflicts with it
 *   later_commit      nor the writer's changes once it commits after the
 *                     snapshot began; a snapshot begun after the commit
 *                     sees them; the versions are freed when the old
 *                     snapshot ends
 *   abort             a writer's aborted changes are never seen
 *   model             random interleavings of up to 3 writers (upserts,
 *                     in-place updates, removes; commits and aborts) and up
 *                     to 3 snapshots over 6000 keys in a 64-page pool
 *                     (splits, merges, eviction): every point read and every
 *                     scan, ascending and descending from random keys,
 *                     equals the committed state copied when the snapshot
 *                     began; the version store is empty once all end
 *   too_old           under a small bound the oldest snapshot gets
 *                     RUMA_ESNAPTOOOLD (point read and scan) instead of a
 *                     wrong answer; a new snapshot reads again
 *   split_keeps_mark  a leaf that a running writer changed keeps its mark
 *                     when a split moves the changed row to a new page, so
 *                     a later snapshot's scan still checks the row
 *   rdonly_writes     writes in a read-only transaction are -EACCES
 *   link_enomem       versions linked by the first reader that needs them:
 *                     a link that runs out of memory makes that snapshot
 *                     too old, later snapshots read right, and blocks of
 *                     several commits are linked in commit order
 *   two_stores        a snapshot of one store keeps no versions of another's
 *   hermitage_2pl / hermitage_si  the anomalies of Hermitage (G0, G1a,
 *                     G1b, G1c, OTV, PMP, P4, G-single, G2-item, G2) and
 *                     a transaction's own writes, interleaved step by step,
 *                     with read-write transactions under two-phase locking
 *                     and under snapshot isolation: each outcome as the
 *                     table of docs/isolation.md states
 *
 * One thread steps the transactions, but the store's own threads (the log's
 * writer, the page cleaner) run beside it, so ThreadSanitizer runs it too
 * (ruma-test: concurrent).
 */
#include "wal_util.h"

#include "btree/mvcc.h"

#include <ruma/txn.h>

#define NK 6000u
#define VMAX 200u

struct row {
	bool present;
	uint8_t len;
	uint8_t v[VMAX];
};

static void key_at(uint32_t k, uint8_t out[4])
{
	key_of(k * 7u, out); /* gaps between keys: scans start between rows */
}

static int fresh_tree(ruma_bm **bm, ruma_btree **t)
{
	unlink(logpath);
	int r = open_store(true, RUMA_BM_DURABLE_OFF, bm);
	return r ? r : ruma_btree_create(*bm, "t", t);
}

static int put(ruma_txn *x, ruma_btree *t, uint32_t k, const char *v)
{
	uint8_t key[4];
	key_at(k, key);
	return ruma_txn_upsert(x, t, key, 4, v, strlen(v));
}

/* 0 and the value as a string in out, or the lookup's error. */
static int get(ruma_txn *x, ruma_btree *t, uint32_t k, char *out)
{
	uint8_t key[4];
	size_t n = 0;
	key_at(k, key);
	int r = ruma_txn_lookup(x, t, key, 4, out, 63, &n);
	out[r ? 0 : n] = '\0';
	return r;
}

/* Whether row k reads v in x (or, v NULL, the error `err`). */
static bool reads(ruma_txn *x, ruma_btree *t, uint32_t k, const char *v, int err)
{
	char got[64];
	int r = get(x, t, k, got);
	return v ? r == 0 && !strcmp(got, v) : r == err;
}

struct collect {
	uint32_t n;
	char all[512];
};

static bool collect_fn(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct collect *c = ctx;
	(void)key;
	(void)klen;
	size_t at = strlen(c->all);
	snprintf(c->all + at, sizeof(c->all) - at, "%.*s,", (int)vlen, (const char *)val);
	c->n++;
	return true;
}

/* The values a snapshot scan gives, joined with commas. */
static int scan_all(ruma_txn *x, ruma_btree *t, bool desc, struct collect *c)
{
	memset(c, 0, sizeof(*c));
	return desc ? ruma_txn_scan_desc(x, t, NULL, 0, collect_fn, c)
		    : ruma_txn_scan_asc(x, t, NULL, 0, collect_fn, c);
}

/* A full scan of x (descending when desc) finds the values want, each
 * followed by a comma. */
static bool scans(ruma_txn *x, ruma_btree *t, bool desc, const char *want)
{
	struct collect c;
	return scan_all(x, t, desc, &c) == 0 && !strcmp(c.all, want);
}

static void bump(void *val, size_t vlen, void *ctx)
{
	(void)ctx;
	if (vlen)
		((uint8_t *)val)[0] = 'Z';
}

static int t_uncommitted(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *w, *s;
	CHECK_OK(fresh_tree(&bm, &t));
	CHECK_OK(put(NULL, t, 1, "a1"));
	CHECK_OK(put(NULL, t, 2, "b1"));
	CHECK_OK(put(NULL, t, 3, "c1"));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w));
	CHECK_OK(put(w, t, 1, "a2"));
	uint8_t key[4];
	key_at(2, key);
	CHECK_OK(ruma_txn_remove(w, t, key, 4));
	CHECK_OK(put(w, t, 4, "d2"));
	key_at(3, key);
	CHECK_OK(ruma_txn_update(w, t, key, 4, bump, NULL));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK(reads(s, t, 1, "a1", 0));
	CHECK(reads(s, t, 2, "b1", 0));
	CHECK(reads(s, t, 3, "c1", 0));
	CHECK(reads(s, t, 4, NULL, RUMA_ENOTFOUND));
	CHECK(scans(s, t, false, "a1,b1,c1,"));
	CHECK(scans(s, t, true, "c1,b1,a1,"));
	CHECK_OK(ruma_txn_commit(s));
	/* a read-write transaction without a mode flag reads a snapshot too */
	CHECK_OK(ruma_txn_begin(bm, 0, &s));
	CHECK(reads(s, t, 1, "a1", 0));
	CHECK(reads(s, t, 4, NULL, RUMA_ENOTFOUND));
	CHECK(scans(s, t, false, "a1,b1,c1,"));
	CHECK_OK(ruma_txn_abort(s));
	CHECK_EQ(ruma_txn_begin(bm, RUMA_TXN_LOCKING | RUMA_TXN_SNAPSHOT, &s), -EINVAL);
	CHECK_EQ(ruma_txn_begin(bm, RUMA_TXN_LOCKING | RUMA_TXN_RDONLY, &s), -EINVAL);
	CHECK_OK(ruma_txn_abort(w));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* Keep the first entry's value as a string (a scan callback). */
static bool first_fn(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	(void)key;
	(void)klen;
	snprintf(ctx, 64, "%.*s", (int)RUMA_MIN(vlen, 63u), (const char *)val);
	return false;
}

static int t_split_keeps_mark(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *x, *w, *w2, *s;
	char first[64], big[VMAX];
	CHECK_OK(fresh_tree(&bm, &t));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x));
	for (uint32_t k = 0; k < 20; k++)
		CHECK_OK(put(x, t, k * 1000, "old"));
	CHECK_OK(ruma_txn_commit(x)); /* the floor rises past it */
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w));
	CHECK_OK(put(w, t, 0, "new")); /* not committed: the leaf has w's mark */
	/* ascending inserts right after row 0 split its leaf at the insert
	 * point: row 0 goes to a new left page that no later insert changes */
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w2));
	for (uint32_t k = 1; k < 80; k++)
		CHECK_OK(put(w2, t, k, big));
	CHECK_OK(ruma_txn_commit(w2));
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	CHECK(st.leaf_splits + st.root_splits > 0);
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK_OK(ruma_txn_scan_asc(s, t, NULL, 0, first_fn, first));
	CHECK(!strcmp(first, "old"));
	CHECK(reads(s, t, 0, "old", 0));
	CHECK_OK(ruma_txn_commit(s));
	CHECK_OK(ruma_txn_abort(w));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

static int t_later_commit(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *w, *s, *s2;
	CHECK_OK(fresh_tree(&bm, &t));
	CHECK_OK(put(NULL, t, 1, "a1"));
	CHECK_OK(put(NULL, t, 2, "b1"));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w));
	CHECK_OK(put(w, t, 1, "a2"));
	uint8_t key[4];
	key_at(2, key);
	CHECK_OK(ruma_txn_remove(w, t, key, 4));
	CHECK_OK(put(w, t, 3, "c2"));
	CHECK_OK(ruma_txn_commit(w));
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 3u);
	CHECK_EQ(st.snapshots, 1u);
	CHECK(reads(s, t, 1, "a1", 0));
	CHECK(reads(s, t, 2, "b1", 0));
	CHECK(reads(s, t, 3, NULL, RUMA_ENOTFOUND));
	CHECK(scans(s, t, false, "a1,b1,"));
	CHECK(scans(s, t, true, "b1,a1,"));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s2));
	CHECK(scans(s2, t, false, "a2,c2,"));
	CHECK_OK(ruma_txn_commit(s));
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u); /* s2 began after the commit: it needs none */
	CHECK_EQ(st.version_bytes, 0u);
	CHECK_OK(ruma_txn_commit(s2));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

static int t_abort(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *w, *s;
	CHECK_OK(fresh_tree(&bm, &t));
	CHECK_OK(put(NULL, t, 1, "a1"));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w));
	CHECK_OK(put(w, t, 1, "a2"));
	CHECK_OK(put(w, t, 2, "b2"));
	CHECK_OK(ruma_txn_abort(w));
	CHECK(reads(s, t, 1, "a1", 0));
	CHECK(scans(s, t, false, "a1,"));
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u);
	CHECK_OK(ruma_txn_commit(s));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* A snapshot of one store keeps no versions of another store's commits. */
static int t_two_stores(void)
{
	ruma_bm *bm, *bm2;
	ruma_btree *t, *t2;
	ruma_txn *s, *w;
	ruma_bm_config c;
	CHECK_OK(fresh_tree(&bm, &t));
	store_config(&c, side);
	c.fresh = true;
	c.message = quiet;
	CHECK_OK(ruma_bm_open(&c, &bm2));
	CHECK_OK(ruma_btree_create(bm2, "t", &t2));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK_OK(ruma_txn_begin(bm2, RUMA_TXN_LOCKING, &w));
	CHECK_OK(put(w, t2, 1, "x"));
	CHECK_OK(ruma_txn_commit(w));
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u);
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w)); /* the same store: kept */
	CHECK_OK(put(w, t, 1, "x"));
	CHECK_OK(ruma_txn_commit(w));
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 1u);
	CHECK_OK(ruma_txn_commit(s));
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u);
	ruma_btree_release(t2);
	CHECK_OK(ruma_bm_close(bm2));
	unlink(side);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

static int t_rdonly_writes(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *s;
	CHECK_OK(fresh_tree(&bm, &t));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK_EQ(put(s, t, 1, "x"), -EACCES);
	uint8_t key[4];
	key_at(1, key);
	CHECK_EQ(ruma_txn_remove(s, t, key, 4), -EACCES);
	CHECK_EQ(ruma_txn_update(s, t, key, 4, bump, NULL), -EACCES);
	CHECK_OK(ruma_txn_commit(s));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* ---- the randomized model ---------------------------------------------------- */

#define NW 3
#define NS 3

struct writer {
	ruma_txn *x;
	struct row *mine;  /* the rows it changed, as it left them */
	uint8_t *touched;  /* keys it changed */
};

struct model {
	ruma_bm *bm;
	ruma_btree *t;
	struct row *committed;
	struct writer w[NW];
	ruma_txn *s[NS];
	struct row *seen[NS]; /* the committed state at each snapshot's begin */
	uint64_t reads, scans;
};

static void rand_value(struct row *r)
{
	r->present = true;
	r->len = (uint8_t)(1 + ruma_rng_next(&test_rng) % (VMAX - 1));
	for (unsigned i = 0; i < r->len; i++)
		r->v[i] = (uint8_t)ruma_rng_next(&test_rng);
}

static void flip(void *val, size_t vlen, void *ctx)
{
	const uint32_t *at = ctx;
	((uint8_t *)val)[*at % vlen] ^= 0x5a;
}

/* One change by writer i to a random key, in the tree and in its changes. */
static int writer_change(struct model *m, int i)
{
	struct writer *w = &m->w[i];
	uint32_t k = (uint32_t)(ruma_rng_next(&test_rng) % NK), at = (uint32_t)ruma_rng_next(&test_rng);
	uint8_t key[4];
	key_at(k, key);
	/* a read-write transaction sees the latest committed row (2PL) */
	const struct row *cur = w->touched[k] ? &w->mine[k] : &m->committed[k];
	struct row nr = *cur;
	unsigned op = (unsigned)(ruma_rng_next(&test_rng) % 4);
	int r;
	if (op == 0) {
		r = ruma_txn_remove(w->x, m->t, key, 4);
		nr.present = false;
	} else if (op == 1 && nr.present) {
		r = ruma_txn_update(w->x, m->t, key, 4, flip, &at);
		nr.v[at % nr.len] ^= 0x5a;
	} else {
		rand_value(&nr);
		r = ruma_txn_upsert(w->x, m->t, key, 4, nr.v, nr.len);
	}
	if (r == RUMA_ECONFLICT || (r == RUMA_ENOTFOUND && !cur->present))
		return 0;
	CHECK_OK(r);
	w->mine[k] = nr;
	w->touched[k] = 1;
	return 0;
}

static int writer_end(struct model *m, int i, bool commit)
{
	struct writer *w = &m->w[i];
	CHECK_OK(commit ? ruma_txn_commit(w->x) : ruma_txn_abort(w->x));
	for (uint32_t k = 0; k < NK && commit; k++)
		if (w->touched[k])
			m->committed[k] = w->mine[k];
	w->x = NULL;
	return 0;
}

static int writer_begin(struct model *m, int i)
{
	struct writer *w = &m->w[i];
	CHECK_OK(ruma_txn_begin(m->bm, RUMA_TXN_LOCKING, &w->x));
	memset(w->touched, 0, NK);
	return 0;
}

static int snap_read(struct model *m, int i)
{
	uint32_t k = (uint32_t)(ruma_rng_next(&test_rng) % NK);
	uint8_t key[4], v[VMAX];
	size_t n = 0;
	key_at(k, key);
	int r = ruma_txn_lookup(m->s[i], m->t, key, 4, v, sizeof(v), &n);
	const struct row *want = &m->seen[i][k];
	if (!want->present) {
		CHECK_EQ(r, RUMA_ENOTFOUND);
	} else {
		CHECK_OK(r);
		CHECK_EQ(n, want->len);
		CHECK(!memcmp(v, want->v, n));
	}
	m->reads++;
	return 0;
}

struct scan_check {
	const struct row *want;
	int64_t next; /* the next key expected (index), -1 past the end */
	int step;
	bool bad;
	unsigned left;
};

/* Advance next to the next present row of the expected state. */
static void expect_next(struct scan_check *c)
{
	while (c->next >= 0 && c->next < (int64_t)NK && !c->want[c->next].present)
		c->next += c->step;
	if (c->next >= (int64_t)NK)
		c->next = -1;
}

static bool check_fn(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct scan_check *c = ctx;
	uint8_t want_key[4];
	if (c->next < 0) {
		printf("  scan: a row past the expected end\n");
		c->bad = true;
		return false;
	}
	const struct row *w = &c->want[c->next];
	key_at((uint32_t)c->next, want_key);
	if (klen != 4 || memcmp(key, want_key, 4) || vlen != w->len || memcmp(val, w->v, vlen)) {
		const uint8_t *g = key;
		printf("  scan: expected row %" PRId64 " (%u bytes), got key %u (%zu bytes)\n",
		       c->next, w->len, (unsigned)(g[0] << 24 | g[1] << 16 | g[2] << 8 | g[3]) / 7u,
		       vlen);
		c->bad = true;
		return false;
	}
	c->next += c->step;
	expect_next(c);
	return --c->left > 0;
}

/* A scan of snapshot i from between two random rows, up to 400 rows. */
static int snap_scan_check(struct model *m, int i)
{
	bool desc = ruma_rng_next(&test_rng) % 2;
	uint32_t k = (uint32_t)(ruma_rng_next(&test_rng) % NK);
	uint8_t start[4];
	key_of(k * 7u + (desc ? 3u : 4u), start); /* strictly between rows k and k+1 */
	struct scan_check c = { m->seen[i], desc ? (int64_t)k : (int64_t)k + 1, desc ? -1 : 1,
				false, 400 };
	expect_next(&c);
	int r = desc ? ruma_txn_scan_desc(m->s[i], m->t, start, 4, check_fn, &c)
		     : ruma_txn_scan_asc(m->s[i], m->t, start, 4, check_fn, &c);
	CHECK_OK(r);
	CHECK(!c.bad);
	CHECK(c.left == 0 || c.next < 0); /* stopped early only at the end */
	m->scans++;
	return 0;
}

static int model_step(struct model *m)
{
	int i = (int)(ruma_rng_next(&test_rng) % NW), j = (int)(ruma_rng_next(&test_rng) % NS);
	unsigned op = (unsigned)(ruma_rng_next(&test_rng) % 100);
	if (op < 40) {
		if (!m->w[i].x)
			return writer_begin(m, i);
		return writer_change(m, i);
	}
	if (op < 46)
		return m->w[i].x ? writer_end(m, i, op < 44) : 0;
	if (!m->s[j]) {
		CHECK_OK(ruma_txn_begin(m->bm, RUMA_TXN_RDONLY, &m->s[j]));
		memcpy(m->seen[j], m->committed, NK * sizeof(struct row));
		return 0;
	}
	if (op < 48) {
		CHECK_OK(ruma_txn_commit(m->s[j]));
		m->s[j] = NULL;
		return 0;
	}
	return op < 95 ? snap_read(m, j) : snap_scan_check(m, j);
}

static int model_run(struct model *m)
{
	for (uint32_t k = 0; k < NK; k++)
		if (ruma_rng_next(&test_rng) % 2) {
			rand_value(&m->committed[k]);
			uint8_t key[4];
			key_at(k, key);
			CHECK_OK(ruma_btree_upsert(m->t, key, 4, m->committed[k].v,
						   m->committed[k].len, NULL));
		}
	for (unsigned step = 0; step < 60000; step++)
		CHECK_OK(model_step(m));
	for (int i = 0; i < NW; i++)
		if (m->w[i].x)
			CHECK_OK(writer_end(m, i, true));
	for (int j = 0; j < NS; j++)
		if (m->s[j]) {
			CHECK_OK(ruma_txn_commit(m->s[j]));
			m->s[j] = NULL;
		}
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u);
	CHECK_EQ(st.version_bytes, 0u);
	CHECK_EQ(st.snapshots, 0u);
	CHECK_OK(ruma_btree_check_msg(m->t, NULL, NULL));
	ruma_bm_stats bs;
	ruma_bm_get_stats(m->bm, &bs);
	printf("  %" PRIu64 " snapshot reads, %" PRIu64 " scans checked, %" PRIu64
	       " pages evicted\n", m->reads, m->scans, bs.evictions);
	CHECK(bs.evictions > 0); /* the data is larger than the pool */
	return 0;
}

static int t_model(void)
{
	struct model m = { 0 };
	CHECK_OK(fresh_tree(&m.bm, &m.t));
	m.committed = calloc(NK, sizeof(struct row));
	CHECK(m.committed != NULL);
	for (int i = 0; i < NW; i++) {
		m.w[i].mine = calloc(NK, sizeof(struct row));
		m.w[i].touched = calloc(NK, 1);
		CHECK(m.w[i].mine && m.w[i].touched);
	}
	for (int j = 0; j < NS; j++) {
		m.seen[j] = calloc(NK, sizeof(struct row));
		CHECK(m.seen[j] != NULL);
	}
	int r = model_run(&m);
	for (int i = 0; i < NW; i++) {
		free(m.w[i].mine);
		free(m.w[i].touched);
	}
	for (int j = 0; j < NS; j++)
		free(m.seen[j]);
	free(m.committed);
	ruma_btree_release(m.t);
	CHECK_OK(ruma_bm_close(m.bm));
	return r;
}

static int t_too_old(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *w, *s;
	struct collect c;
	CHECK_OK(fresh_tree(&bm, &t));
	CHECK_OK(put(NULL, t, 1, "a1"));
	ruma_txn_set_version_limit(4096);
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	for (uint32_t i = 0; i < 100; i++) {
		CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w));
		CHECK_OK(put(w, t, 1 + i % 5, "a value of a few bytes"));
		CHECK_OK(ruma_txn_commit(w));
	}
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK(st.version_bytes <= 4096);
	CHECK(st.dropped > 0);
	CHECK(reads(s, t, 1, NULL, RUMA_ESNAPTOOOLD));
	CHECK(reads(s, t, 99, NULL, RUMA_ESNAPTOOOLD)); /* even a row it kept */
	CHECK_EQ(scan_all(s, t, false, &c), RUMA_ESNAPTOOOLD);
	CHECK_OK(ruma_txn_commit(s));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK(reads(s, t, 1, "a value of a few bytes", 0));
	CHECK_OK(ruma_txn_commit(s));
	ruma_txn_set_version_limit(0);
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.version_limit, RUMA_TXN_VERSION_LIMIT);
	CHECK_EQ(st.versions, 0u);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* Versions are linked into their rows by the first reader that needs them:
 * a link that runs out of memory makes the snapshots that needed the
 * block too old (never a wrong answer), and the block is freed as usual. */
static int t_link_enomem(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *w, *s, *s2;
	struct collect c;
	CHECK_OK(fresh_tree(&bm, &t));
	CHECK_OK(put(NULL, t, 1, "a1"));
	CHECK_OK(put(NULL, t, 2, "b1"));
	CHECK_OK(put(NULL, t, 3, "c1"));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w));
	CHECK_OK(put(w, t, 1, "a2"));
	CHECK_OK(put(w, t, 2, "b2"));
	CHECK_OK(put(w, t, 3, "c2"));
	CHECK_OK(ruma_txn_commit(w));
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 3u);
	mv_fail_row_alloc(2); /* the second row of the block */
	CHECK(reads(s, t, 3, NULL, RUMA_ESNAPTOOOLD));
	mv_fail_row_alloc(0);
	CHECK(reads(s, t, 1, NULL, RUMA_ESNAPTOOOLD));
	CHECK_EQ(scan_all(s, t, false, &c), RUMA_ESNAPTOOOLD);
	ruma_txn_mvcc_stat(&st);
	CHECK(st.dropped > 0);
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s2));
	CHECK(reads(s2, t, 2, "b2", 0));
	CHECK(scans(s2, t, false, "a2,b2,c2,"));
	CHECK_OK(ruma_txn_commit(s));
	/* linked in hand-off order: s2 sees its own start through two blocks */
	for (unsigned i = 0; i < 2; i++) {
		CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &w));
		CHECK_OK(put(w, t, 2, i ? "b4" : "b3"));
		CHECK_OK(ruma_txn_commit(w));
	}
	CHECK(reads(s2, t, 2, "b2", 0));
	CHECK(scans(s2, t, true, "c2,b2,a2,"));
	CHECK_OK(ruma_txn_commit(s2));
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* ---- Hermitage: the anomaly tests of github.com/ept/hermitage ------------------
 *
 * Each case runs its interleaving twice: read-write transactions under
 * strict two-phase locking (the default, flags 0) and under snapshot
 * isolation (RUMA_TXN_SNAPSHOT), and checks the outcome documented for each
 * (docs/isolation.md, the table).  Rows 1 = "10", 2 = "20" at the start. */

/* The two rows, and T1 = *a, T2 = *b begun in mode. */
static int h_setup(unsigned mode, ruma_bm **bm, ruma_btree **t, ruma_txn **a, ruma_txn **b)
{
	CHECK_OK(fresh_tree(bm, t));
	CHECK_OK(put(NULL, *t, 1, "10"));
	CHECK_OK(put(NULL, *t, 2, "20"));
	CHECK_OK(ruma_txn_begin(*bm, mode, a));
	CHECK_OK(ruma_txn_begin(*bm, mode, b));
	return 0;
}

static int h_done(ruma_bm *bm, ruma_btree *t)
{
	CHECK_OK(close_tree(bm, t));
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u);
	return 0;
}

/* G0, write cycles: two writers of one row; the second conflicts. */
static int h_g0(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)si;
	ruma_txn *c;
	CHECK_OK(put(a, t, 1, "11"));
	CHECK_EQ(put(b, t, 1, "12"), RUMA_ECONFLICT);
	CHECK_OK(put(a, t, 2, "21"));
	CHECK_OK(ruma_txn_commit(a));
	CHECK_OK(ruma_txn_abort(b));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &c));
	CHECK(reads(c, t, 1, "11", 0) && reads(c, t, 2, "21", 0));
	CHECK_OK(ruma_txn_commit(c));
	return 0;
}

/* G1a, aborted reads: a reader never sees an aborted write. */
static int h_g1a(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	CHECK_OK(put(a, t, 1, "101"));
	CHECK(si ? reads(b, t, 1, "10", 0) : reads(b, t, 1, NULL, RUMA_ECONFLICT));
	CHECK_OK(ruma_txn_abort(a));
	CHECK(reads(b, t, 1, "10", 0));
	CHECK_OK(ruma_txn_commit(b));
	return 0;
}

/* G1b, intermediate reads: a reader never sees a value later overwritten
 * by the same transaction. */
static int h_g1b(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	CHECK_OK(put(a, t, 1, "101"));
	CHECK(si ? reads(b, t, 1, "10", 0) : reads(b, t, 1, NULL, RUMA_ECONFLICT));
	CHECK_OK(put(a, t, 1, "11"));
	CHECK_OK(ruma_txn_commit(a));
	CHECK(reads(b, t, 1, si ? "10" : "11", 0)); /* 2PL: read after the commit */
	CHECK_OK(ruma_txn_commit(b));
	return 0;
}

/* G1c, circular information flow: neither sees the other's write. */
static int h_g1c(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	CHECK_OK(put(a, t, 1, "11"));
	CHECK_OK(put(b, t, 2, "22"));
	CHECK(si ? reads(a, t, 2, "20", 0) : reads(a, t, 2, NULL, RUMA_ECONFLICT));
	CHECK(si ? reads(b, t, 1, "10", 0) : reads(b, t, 1, NULL, RUMA_ECONFLICT));
	CHECK_OK(ruma_txn_commit(a));
	CHECK_OK(ruma_txn_commit(b));
	return 0;
}

/* OTV, observed transaction vanishes: a third transaction reads both rows
 * of the committed writer, never a mix with the conflicting one. */
static int h_otv(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	ruma_txn *c;
	CHECK_OK(ruma_txn_begin(bm, si ? RUMA_TXN_SNAPSHOT : RUMA_TXN_LOCKING, &c));
	CHECK_OK(put(a, t, 1, "11"));
	CHECK_OK(put(a, t, 2, "19"));
	CHECK_EQ(put(b, t, 1, "12"), RUMA_ECONFLICT);
	CHECK_OK(ruma_txn_commit(a));
	CHECK_OK(ruma_txn_abort(b));
	/* SI: c's snapshot is older than a's commit; 2PL: c reads after it */
	CHECK(reads(c, t, 1, si ? "10" : "11", 0) && reads(c, t, 2, si ? "20" : "19", 0));
	CHECK_OK(ruma_txn_commit(c));
	return 0;
}

static bool count_30(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	(void)key;
	(void)klen;
	if (vlen == 2 && !memcmp(val, "30", 2))
		++*(unsigned *)ctx;
	return true;
}

/* PMP, predicate-many-preceders: a predicate read repeated after another
 * transaction inserted a matching row.  2PL scans take no locks: the
 * phantom is seen (allowed, documented); SI: never. */
static int h_pmp(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	unsigned n = 0;
	CHECK_OK(ruma_txn_scan_asc(a, t, NULL, 0, count_30, &n));
	CHECK_EQ(n, 0u);
	CHECK_OK(put(b, t, 3, "30"));
	CHECK_OK(ruma_txn_commit(b));
	n = 0;
	CHECK_OK(ruma_txn_scan_asc(a, t, NULL, 0, count_30, &n));
	CHECK_EQ(n, si ? 0u : 1u);
	CHECK_OK(ruma_txn_commit(a));
	return 0;
}

/* P4, lost update: two read-modify-writes of one row; one must fail. */
static int h_p4(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	CHECK(reads(a, t, 1, "10", 0));
	CHECK(si ? reads(b, t, 1, "10", 0) : reads(b, t, 1, NULL, RUMA_ECONFLICT));
	CHECK_OK(put(a, t, 1, "11"));
	CHECK_EQ(put(b, t, 1, "11"), RUMA_ECONFLICT);
	CHECK_OK(ruma_txn_commit(a));
	/* after the first commit: SI's first writer wins, 2PL now may */
	CHECK_EQ(put(b, t, 1, "11"), si ? RUMA_ECONFLICT : 0);
	CHECK_OK(ruma_txn_abort(b));
	return 0;
}

/* G-single, read skew: a reader sees both rows of a transfer or neither. */
static int h_gsingle(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	CHECK(reads(a, t, 1, "10", 0));
	if (si) {
		CHECK(reads(b, t, 1, "10", 0) && reads(b, t, 2, "20", 0));
		CHECK_OK(put(b, t, 1, "12"));
		CHECK_OK(put(b, t, 2, "18"));
		CHECK_OK(ruma_txn_commit(b));
	} else {
		CHECK(reads(b, t, 1, NULL, RUMA_ECONFLICT)); /* a holds row 1 */
		CHECK_OK(ruma_txn_abort(b));
	}
	CHECK(reads(a, t, 2, "20", 0));
	CHECK_OK(ruma_txn_commit(a));
	return 0;
}

/* G2-item, write skew: each reads both rows and writes the other one.
 * 2PL: the second reader conflicts.  SI: both commit — write skew is
 * allowed under snapshot isolation (documented). */
static int h_g2item(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	CHECK(reads(a, t, 1, "10", 0) && reads(a, t, 2, "20", 0));
	if (!si) {
		CHECK(reads(b, t, 1, NULL, RUMA_ECONFLICT));
		CHECK_OK(ruma_txn_abort(b));
		CHECK_OK(ruma_txn_commit(a));
		return 0;
	}
	CHECK(reads(b, t, 1, "10", 0) && reads(b, t, 2, "20", 0));
	CHECK_OK(put(a, t, 1, "11"));
	CHECK_OK(put(b, t, 2, "21"));
	CHECK_OK(ruma_txn_commit(a));
	CHECK_OK(ruma_txn_commit(b));
	return 0;
}

static bool count_div3(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	(void)key;
	(void)klen;
	unsigned v = 0;
	for (size_t i = 0; i < vlen; i++)
		v = v * 10 + (unsigned)(((const char *)val)[i] - '0');
	*(unsigned *)ctx += v % 3 == 0;
	return true;
}

/* G2, anti-dependency cycles over a predicate: each scans for values that
 * divide by 3, finds none, and inserts one.  Both modes let both commit:
 * 2PL's scans take no predicate locks and SI sees no write-write conflict
 * (documented: neither mode is serializable for predicates). */
static int h_g2(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)si;
	unsigned na = 0, nb = 0, n = 0;
	ruma_txn *c;
	CHECK_OK(ruma_txn_scan_asc(a, t, NULL, 0, count_div3, &na));
	CHECK_OK(ruma_txn_scan_asc(b, t, NULL, 0, count_div3, &nb));
	CHECK(na == 0 && nb == 0);
	CHECK_OK(put(a, t, 3, "30"));
	CHECK_OK(put(b, t, 4, "42"));
	CHECK_OK(ruma_txn_commit(a));
	CHECK_OK(ruma_txn_commit(b));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &c));
	CHECK_OK(ruma_txn_scan_asc(c, t, NULL, 0, count_div3, &n));
	CHECK_EQ(n, 2u); /* no serial order of the two gives this */
	CHECK_OK(ruma_txn_commit(c));
	return 0;
}

/* A read-write snapshot transaction sees its own writes, by point read and
 * scan, and others' committed writes only from before it began. */
static int h_own_writes(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si)
{
	(void)bm;
	struct collect c;
	CHECK_OK(put(b, t, 4, "40"));
	CHECK_OK(ruma_txn_commit(b));
	CHECK_OK(put(a, t, 1, "11"));
	uint8_t key[4];
	key_at(2, key);
	CHECK_OK(ruma_txn_remove(a, t, key, 4));
	CHECK_OK(put(a, t, 3, "33"));
	CHECK(reads(a, t, 1, "11", 0) && reads(a, t, 2, NULL, RUMA_ENOTFOUND));
	CHECK_OK(scan_all(a, t, false, &c));
	CHECK(!strcmp(c.all, si ? "11,33," : "11,33,40,"));
	CHECK_OK(scan_all(a, t, true, &c));
	CHECK(!strcmp(c.all, si ? "33,11," : "40,33,11,"));
	CHECK_OK(ruma_txn_commit(a));
	return 0;
}

typedef int (*h_case)(ruma_bm *bm, ruma_btree *t, ruma_txn *a, ruma_txn *b, bool si);

static const h_case hermitage[] = {
	h_g0, h_g1a, h_g1b, h_g1c, h_otv, h_pmp, h_p4, h_gsingle, h_g2item, h_g2,
	h_own_writes,
};

/* Every case in mode, each on a fresh tree. */
static int hermitage_all(unsigned mode)
{
	for (size_t i = 0; i < TEST_N(hermitage); i++) {
		ruma_bm *bm;
		ruma_btree *t;
		ruma_txn *a, *b;
		CHECK_OK(h_setup(mode, &bm, &t, &a, &b));
		CHECK_EQ(hermitage[i](bm, t, a, b, mode & RUMA_TXN_SNAPSHOT), 0);
		CHECK_OK(h_done(bm, t));
	}
	return TEST_PASS;
}

TEST_BIND(t_hermitage_2pl, hermitage_all, RUMA_TXN_LOCKING)
TEST_BIND(t_hermitage_si, hermitage_all, RUMA_TXN_SNAPSHOT)

static const struct test_case cases[] = {
	{ "uncommitted", t_uncommitted },
	{ "later_commit", t_later_commit },
	{ "abort", t_abort },
	{ "split_keeps_mark", t_split_keeps_mark },
	{ "rdonly_writes", t_rdonly_writes },
	{ "two_stores", t_two_stores },
	{ "model", t_model },
	{ "too_old", t_too_old },
	{ "link_enomem", t_link_enomem },
	{ "hermitage_2pl", t_hermitage_2pl },
	{ "hermitage_si", t_hermitage_si },
};

int main(int argc, char **argv)
{
	return test_main_fixture("btree", cases, TEST_N(cases), argc, argv, &wal_fixture);
}
