/*
 * test_btree.c — single-threaded tests of the B-tree: node operations on a
 * plain page, a node's free gap never read (node_hole), long random
 * operation sequences against a sorted-array model
 * (inserts, upserts, updates, lookups, removes, scans both ways, the
 * invariant checker every few hundred operations), leaf and inner merges
 * and root collapse, size limits, many trees through the catalog, reopen,
 * and injected I/O failures with a pool much smaller than the data.
 */
#include "fixture.h"

#include <ruma/btree.h>

#include "btree/node.h"
#include "os/os.h"

#include <dirent.h>
#include <sys/stat.h>

#define PS RUMA_BM_PAGE_SIZE


/* ---- the model: a sorted array of key/value pairs ---------------------------------------- */

typedef struct kv {
	uint16_t klen, vlen;
	uint8_t key[RUMA_BTREE_MAX_KEY];
	uint8_t val[RUMA_BTREE_MAX_VALUE];
} kv;

typedef struct model {
	kv **e;
	size_t n, cap;
} model;

static int kcmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	size_t m = al < bl ? al : bl;
	int c = m ? memcmp(a, b, m) : 0;
	return c ? c : (al > bl) - (al < bl);
}

/* first index with key >= k */
static size_t model_lb(const model *m, const uint8_t *k, size_t kl)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (kcmp(m->e[mid]->key, m->e[mid]->klen, k, kl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static kv *model_find(const model *m, const uint8_t *k, size_t kl)
{
	size_t i = model_lb(m, k, kl);
	if (i < m->n && kcmp(m->e[i]->key, m->e[i]->klen, k, kl) == 0)
		return m->e[i];
	return NULL;
}

static void model_put(model *m, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	size_t i = model_lb(m, k, kl);
	kv *e;
	if (i < m->n && kcmp(m->e[i]->key, m->e[i]->klen, k, kl) == 0) {
		e = m->e[i];
	} else {
		if (m->n == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 1024;
			m->e = realloc(m->e, m->cap * sizeof *m->e);
		}
		memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof *m->e);
		e = malloc(sizeof *e);
		m->e[i] = e;
		m->n++;
		memcpy(e->key, k, kl);
		e->klen = (uint16_t)kl;
	}
	memcpy(e->val, v, vl);
	e->vlen = (uint16_t)vl;
}

static bool model_del(model *m, const uint8_t *k, size_t kl)
{
	size_t i = model_lb(m, k, kl);
	if (i >= m->n || kcmp(m->e[i]->key, m->e[i]->klen, k, kl) != 0)
		return false;
	free(m->e[i]);
	memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof *m->e);
	m->n--;
	return true;
}

static void model_free(model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i]);
	free(m->e);
	memset(m, 0, sizeof *m);
}

/* ---- random keys with shared prefixes ------------------------------------------------------ */

static const char *const prefixes[] = {
	"", "a", "user/", "user/profile/", "order/2024/11/", "order/2024/12/",
	"\x00\x00\x00", "\xff\xff", "stock/warehouse/0001/item/", "zz",
};

static size_t rand_key(uint8_t *k, size_t maxlen)
{
	const char *p = prefixes[ruma_rng_below(&test_rng, TEST_N(prefixes))];
	size_t pl = p[0] ? strlen(p) : (ruma_rng_below(&test_rng, 4) == 0 ? 3 : 0);
	if (pl == 3 && p[0] == 0)
		p = "\x00\x00\x00";
	size_t len = pl + 1 + ruma_rng_below(&test_rng, 12);
	if (ruma_rng_below(&test_rng, 8) == 0)
		len = 1 + ruma_rng_below(&test_rng, maxlen);
	if (len > maxlen)
		len = maxlen;
	memcpy(k, p, pl < len ? pl : len);
	for (size_t i = pl; i < len; i++)
		k[i] = ruma_rng_below(&test_rng, 4) ? (uint8_t)('0' + ruma_rng_below(&test_rng, 10))
						    : (uint8_t)ruma_rng_below(&test_rng, 256);
	return len;
}

static size_t rand_val(uint8_t *v, size_t maxlen)
{
	size_t len = ruma_rng_below(&test_rng, maxlen + 1);
	for (size_t i = 0; i < len; i++)
		v[i] = (uint8_t)ruma_rng_next(&test_rng);
	return len;
}

/* ---- scans compared with the model ------------------------------------------------------------ */

typedef struct scan_cmp {
	const model *m;
	size_t next;    /* model index expected next */
	bool desc;
	size_t limit;   /* stop after this many */
	size_t seen;
	bool mismatch;
} scan_cmp;

static bool scan_cb(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	scan_cmp *s = ctx;
	if (s->desc ? s->next == 0 : s->next >= s->m->n) {
		s->mismatch = true;
		return false;
	}
	const kv *e = s->m->e[s->desc ? s->next - 1 : s->next];
	if (e->klen != klen || memcmp(e->key, key, klen) || e->vlen != vlen ||
	    (vlen && memcmp(e->val, val, vlen))) {
		s->mismatch = true;
		return false;
	}
	if (s->desc)
		s->next--;
	else
		s->next++;
	return ++s->seen < s->limit;
}

static int check_scan(ruma_btree *t, const model *m, const uint8_t *start, size_t sl, bool desc,
		      size_t limit)
{
	scan_cmp s = { .m = m, .desc = desc, .limit = limit };
	size_t i = sl ? model_lb(m, start, sl) : (desc ? m->n : 0);
	if (desc && sl && i < m->n && kcmp(m->e[i]->key, m->e[i]->klen, start, sl) == 0)
		i++;
	s.next = i;
	int rc = desc ? ruma_btree_scan_desc(t, start, sl, scan_cb, &s)
		      : ruma_btree_scan_asc(t, start, sl, scan_cb, &s);
	if (rc)
		return rc;
	size_t avail = desc ? i : m->n - i;
	size_t want = avail < limit ? avail : limit;
	if (s.mismatch || s.seen != want) {
		fprintf(stderr, "  scan %s mismatch: seen %zu want %zu mismatch %d\n",
			desc ? "desc" : "asc", s.seen, want, s.mismatch);
		return RUMA_ECORRUPT;
	}
	return 0;
}

/* Every model entry is in the tree and a full scan finds nothing else. */
static int check_all(ruma_btree *t, const model *m)
{
	uint8_t buf[RUMA_BTREE_MAX_VALUE];
	for (size_t i = 0; i < m->n; i++) {
		size_t vl = 0;
		int rc = ruma_btree_lookup(t, m->e[i]->key, m->e[i]->klen, buf, sizeof buf, &vl);
		if (rc)
			return rc;
		if (vl != m->e[i]->vlen || (vl && memcmp(buf, m->e[i]->val, vl)))
			return RUMA_ECORRUPT;
	}
	return check_scan(t, m, NULL, 0, false, SIZE_MAX);
}

/* The tree passes its invariant checker (report on stderr), then check_all. */
static int check_tree_model(ruma_btree *t, const model *m)
{
	int rc = ruma_btree_check(t, stderr);
	return rc ? rc : check_all(t, m);
}

/* ---- node level ---------------------------------------------------------------------------------- */

static int t_node(void)
{
	_Alignas(8) uint8_t page[PS], l[PS], r[PS], mg[PS];
	node *n = (node *)page;
	const uint8_t lo[] = "key/0", hi[] = "key/9";
	node_init(n, 0, lo, 5, hi, 5);
	CHECK_EQ(n->prefix_len, 4);
	uint8_t k[32], keys[400][8];
	unsigned nk = 0;
	for (unsigned i = 0; i < 400; i++) {
		int len = snprintf((char *)k, sizeof k, "key/%u", 1000 + (unsigned)ruma_rng_below(&test_rng, 8000));
		bool found, bad = false;
		unsigned pos = node_lower_bound(n, k, (size_t)len, &found, &bad);
		CHECK(!bad);
		if (found)
			continue;
		if (node_free_total(n) < node_entry_size(n, (size_t)len, 8))
			break;
		node_insert_at(n, pos, k, (size_t)len, &i, sizeof i);
		memcpy(keys[nk++], k, 8);
	}
	CHECK(nk > 20);
	CHECK_EQ(n->count, nk);
	/* order and lookups */
	uint8_t a[NODE_KEYBUF], b[NODE_KEYBUF];
	bool bad = false;
	for (unsigned i = 1; i < n->count; i++) {
		unsigned al = node_full_key(n, i - 1, a, &bad), bl = node_full_key(n, i, b, &bad);
		CHECK(node_keycmp(a, al, b, bl) < 0);
	}
	for (unsigned i = 0; i < nk; i++) {
		bool found;
		unsigned pos = node_lower_bound(n, keys[i], 8, &found, &bad);
		CHECK(found);
		CHECK(pos < n->count);
	}
	/* a key below the prefix and one above */
	bool found;
	CHECK_EQ(node_lower_bound(n, (const uint8_t *)"kex", 3, &found, &bad), 0);
	CHECK_EQ(node_lower_bound(n, (const uint8_t *)"kez", 3, &found, &bad), n->count);
	/* split, check halves, merge back */
	uint8_t sep[NODE_KEYBUF];
	unsigned lc, sl = node_find_split(n, NODE_POS_NONE, &lc, sep);
	CHECK(lc > 0 && lc < n->count);
	node_split_into(n, lc, sep, sl, (node *)l, (node *)r);
	CHECK_EQ(((node *)l)->count + ((node *)r)->count, n->count);
	unsigned ll = node_full_key((node *)l, lc - 1, a, &bad);
	unsigned rl = node_full_key((node *)r, 0, b, &bad);
	CHECK(node_keycmp(a, ll, sep, sl) <= 0);
	CHECK(node_keycmp(sep, sl, b, rl) < 0);
	CHECK(sl <= rl);
	CHECK(node_merge_into((node *)l, (node *)r, sep, sl, (node *)mg));
	CHECK_EQ(((node *)mg)->count, n->count);
	CHECK_EQ(((node *)mg)->prefix_len, 4);
	for (unsigned i = 0; i < n->count; i++) {
		unsigned x = node_full_key(n, i, a, &bad), y = node_full_key((node *)mg, i, b, &bad);
		CHECK(x == y && memcmp(a, b, x) == 0);
	}
	/* a nearly full leaf whose last two keys are a 256-byte key and a 1-byte
	 * key: the full left key as separator would overflow the left half */
	{
		_Alignas(8) uint8_t p2[PS];
		node *m = (node *)p2;
		node_init(m, 0, NULL, 0, NULL, 0);
		uint8_t big[RUMA_BTREE_MAX_KEY], val[400] = { 0 };
		memset(big, 'z', sizeof big);
		big[0] = 'a';
		unsigned need_tail = node_entry_size(m, sizeof big, 0) + node_entry_size(m, 1, 0);
		for (unsigned i = 0; node_free_total(m) >= need_tail + node_entry_size(m, 3, 1); i++) {
			uint8_t key[3] = { 'a', (uint8_t)('0' + i / 10), (uint8_t)('0' + i % 10) };
			size_t vl = node_free_total(m) - need_tail - node_entry_size(m, 3, 0);
			vl = vl > sizeof val ? sizeof val : vl;
			node_insert_at(m, m->count, key, 3, val, vl);
		}
		node_insert_at(m, m->count, big, sizeof big, NULL, 0);
		node_insert_at(m, m->count, (const uint8_t *)"b", 1, NULL, 0);
		CHECK(node_free_total(m) < 64);
		for (int append = 0; append < 2; append++) {
			unsigned c2, s2 = node_find_split(m, append ? m->count : NODE_POS_NONE, &c2, sep);
			node_split_into(m, c2, sep, s2, (node *)l, (node *)r);
			CHECK_EQ(((node *)l)->count + ((node *)r)->count, m->count);
			CHECK(node_valid((node *)l) && node_valid((node *)r));
		}
	}
	/* remove everything, compaction keeps the fences */
	while (n->count)
		node_remove_at(n, (unsigned)ruma_rng_below(&test_rng, n->count));
	node_compact(n);
	CHECK_EQ(n->space_used, 10);
	CHECK(!bad);
	return TEST_PASS;
}

/* ---- random operations against the model ------------------------------------------------------------ */

static void bump_first(void *val, size_t vlen, void *ctx)
{
	unsigned *calls = ctx;
	(*calls)++;
	if (vlen)
		((uint8_t *)val)[0]++;
}

typedef struct val_cap {
	uint8_t buf[RUMA_BTREE_MAX_VALUE];
	size_t len;
	unsigned calls;
} val_cap;

static void capture(const void *val, size_t vlen, void *ctx)
{
	val_cap *c = ctx;
	memcpy(c->buf, val, vlen);
	c->len = vlen;
	c->calls++;
}

static int random_ops(ruma_btree *t, model *m, unsigned ops, unsigned insert_pct, size_t maxval,
		      size_t maxkey)
{
	uint8_t k[RUMA_BTREE_MAX_KEY], v[RUMA_BTREE_MAX_VALUE], buf[RUMA_BTREE_MAX_VALUE];
	for (unsigned op = 0; op < ops; op++) {
		unsigned r = (unsigned)ruma_rng_below(&test_rng, 100);
		size_t kl;
		/* half the non-inserts hit existing keys */
		if (m->n && r >= insert_pct && ruma_rng_below(&test_rng, 2)) {
			kv *e = m->e[ruma_rng_below(&test_rng, m->n)];
			kl = e->klen;
			memcpy(k, e->key, kl);
		} else {
			kl = rand_key(k, maxkey);
		}
		kv *e = model_find(m, k, kl);
		if (r < insert_pct) {
			size_t room = RUMA_BTREE_MAX_ENTRY - kl;
			size_t vl = rand_val(v, maxval < room ? maxval : room);
			if (r % 3 == 0 && e && ruma_rng_below(&test_rng, 2)) {
				/* the same length: overwritten in place */
				vl = e->vlen;
				for (size_t i = 0; i < vl; i++)
					v[i] = (uint8_t)ruma_rng_next(&test_rng);
			}
			if (r % 3 == 0) {
				bool replaced;
				CHECK_OK(ruma_btree_upsert(t, k, kl, v, vl, &replaced));
				CHECK_EQ(replaced, e != NULL);
				model_put(m, k, kl, v, vl);
			} else {
				int rc = ruma_btree_insert(t, k, kl, v, vl);
				CHECK_EQ(rc, e ? RUMA_EEXISTS : 0);
				if (!e)
					model_put(m, k, kl, v, vl);
			}
		} else if (r < insert_pct + (100 - insert_pct) / 2) {
			int rc = ruma_btree_remove(t, k, kl);
			CHECK_EQ(rc, e ? 0 : RUMA_ENOTFOUND);
			if (e)
				model_del(m, k, kl);
		} else if (r % 4 == 0) {
			unsigned calls = 0;
			int rc = ruma_btree_update(t, k, kl, bump_first, &calls);
			CHECK_EQ(rc, e ? 0 : RUMA_ENOTFOUND);
			CHECK_EQ(calls, e ? 1 : 0);
			if (e && e->vlen)
				e->val[0]++;
		} else if (r % 4 == 1) {
			val_cap c = { .calls = 0 };
			int rc = ruma_btree_lookup_fn(t, k, kl, capture, &c);
			CHECK_EQ(rc, e ? 0 : RUMA_ENOTFOUND);
			CHECK_EQ(c.calls, e ? 1 : 0);
			if (e)
				CHECK(c.len == e->vlen && memcmp(c.buf, e->val, c.len) == 0);
		} else {
			size_t vl = 0;
			int rc = ruma_btree_lookup(t, k, kl, buf, sizeof buf, &vl);
			CHECK_EQ(rc, e ? 0 : RUMA_ENOTFOUND);
			if (e)
				CHECK(vl == e->vlen && memcmp(buf, e->val, vl) == 0);
		}
		if (op % 97 == 0) {
			size_t sl = ruma_rng_below(&test_rng, 4) ? rand_key(k, maxkey) : 0;
			CHECK_OK(check_scan(t, m, k, sl, false, 1 + ruma_rng_below(&test_rng, 300)));
			CHECK_OK(check_scan(t, m, k, sl, true, 1 + ruma_rng_below(&test_rng, 300)));
		}
		if (op % 500 == 499)
			CHECK_OK(ruma_btree_check(t, stderr));
	}
	return TEST_PASS;
}

/* A model case's end: the tree torn down, the model freed. */
static int model_end(test_tree *f, model *m)
{
	CHECK_OK(test_tree_teardown(f));
	model_free(m);
	return TEST_PASS;
}

/* A tree (test_tree_setup, named name) grown and churned against the
 * model: ops random operations at 70 % inserts, then ops at 40 %, with
 * values up to maxval bytes and keys up to maxkey. */
static int random_grow(test_tree *f, model *m, const char *name, unsigned ops, size_t maxval,
		       size_t maxkey)
{
	CHECK_OK(test_tree_setup(f, "btree", name, 1 << 16, 1 << 12));
	CHECK(random_ops(f->t, m, ops, 70, maxval, maxkey) == TEST_PASS);
	CHECK(random_ops(f->t, m, ops, 40, maxval, maxkey) == TEST_PASS);
	return TEST_PASS;
}

static int t_random_model(void)
{
	test_tree f;
	model m = { 0 };
	unsigned ops = test_sanitized() ? 6000 : 40000;
	/* grow, churn, shrink */
	CHECK(random_grow(&f, &m, "random", ops, 200, 100) == TEST_PASS);
	ruma_btree *t = f.t;
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	fprintf(stderr, "  %zu keys, height %u, %" PRIu64 " leaves, %" PRIu64
		" inner, splits %" PRIu64 "/%" PRIu64 ", merges %" PRIu64 "/%" PRIu64 "\n",
		m.n, st.height, st.leaf_nodes, st.inner_nodes, st.leaf_splits, st.inner_splits,
		st.leaf_merges, st.inner_merges);
	CHECK_EQ(st.entries, m.n);
	CHECK(st.height >= 2);
	CHECK(random_ops(t, &m, ops * 2, 10, 200, 100) == TEST_PASS);
	CHECK_OK(check_tree_model(t, &m));
	CHECK_OK(ruma_btree_get_stats(t, &st));
	CHECK(st.leaf_merges > 0);
	CHECK_EQ(st.entries, m.n);
	return model_end(&f, &m);
}

/* Keys up to the maximum, values up to the entry limit: few entries per
 * node, long separators, many splits and merges of nearly full nodes. */
static int t_random_large(void)
{
	test_tree f;
	model m = { 0 };
	unsigned ops = test_sanitized() ? 3000 : 12000;
	CHECK(random_grow(&f, &m, "large", ops, RUMA_BTREE_MAX_VALUE, RUMA_BTREE_MAX_KEY) ==
	      TEST_PASS);
	ruma_btree *t = f.t;
	CHECK(random_ops(t, &m, ops * 2, 5, RUMA_BTREE_MAX_VALUE, RUMA_BTREE_MAX_KEY) == TEST_PASS);
	CHECK_OK(check_tree_model(t, &m));
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	fprintf(stderr, "  %zu keys left; splits %" PRIu64 "/%" PRIu64 ", merges %" PRIu64 "/%" PRIu64 "\n",
		m.n, st.leaf_splits, st.inner_splits, st.leaf_merges, st.inner_merges);
	CHECK(st.leaf_merges > 0);
	return model_end(&f, &m);
}

/* Grow a tree of height >= 3 and delete almost everything: leaf merges,
 * inner merges and root collapses must all happen, freed pages get reused. */
static int t_merges(void)
{
	test_tree f;
	model m = { 0 };
	CHECK_OK(test_tree_setup(&f, "btree", "merge", 1 << 16, 1 << 13));
	ruma_bm *bm = f.bm;
	ruma_btree *t = f.t;
	unsigned n = test_sanitized() ? 12000 : 40000;
	uint8_t k[64], v[64];
	for (unsigned i = 0; i < n; i++) {
		/* long, distinct keys so inner nodes hold few separators */
		uint64_t x = ruma_rng_next(&test_rng);
		int kl = snprintf((char *)k, sizeof k, "%016llx/%08u/padding-to-make-separators-long",
				  (unsigned long long)x, i);
		size_t vl = rand_val(v, 40);
		CHECK_OK(ruma_btree_insert(t, k, (size_t)kl, v, vl));
		model_put(&m, k, (size_t)kl, v, vl);
	}
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	fprintf(stderr, "  loaded %u keys: height %u, %" PRIu64 " leaves, %" PRIu64 " inner\n", n,
		st.height, st.leaf_nodes, st.inner_nodes);
	CHECK(st.height >= 3);
	CHECK_OK(ruma_btree_check(t, stderr));
	/* delete in random order down to a handful */
	while (m.n > 5) {
		kv *e = m.e[ruma_rng_below(&test_rng, m.n)];
		CHECK_OK(ruma_btree_remove(t, e->key, e->klen));
		model_del(&m, e->key, e->klen);
		if (m.n % 4000 == 0)
			CHECK_OK(ruma_btree_check(t, stderr));
	}
	CHECK_OK(check_tree_model(t, &m));
	CHECK_OK(ruma_btree_get_stats(t, &st));
	fprintf(stderr, "  after deletes: height %u, %" PRIu64 " leaves, %" PRIu64
		" inner; merges leaf %" PRIu64 " inner %" PRIu64 ", root collapses %" PRIu64
		", pages freed %" PRIu64 "\n",
		st.height, st.leaf_nodes, st.inner_nodes, st.leaf_merges, st.inner_merges,
		st.root_collapses, st.pages_freed);
	CHECK(st.leaf_merges > 0);
	CHECK(st.inner_merges > 0);
	CHECK(st.root_collapses > 0);
	ruma_btree_stats ct;
	ruma_btree_get_counters(t, &ct);
	CHECK_EQ(ct.inner_merges, st.inner_merges);
	CHECK_EQ(ct.height, 0);
	CHECK_EQ(st.height, 1);
	ruma_bm_stats bs1;
	ruma_bm_get_stats(bm, &bs1);
	CHECK(bs1.pages_free >= st.pages_freed / 2);
	/* regrow: freed ids are reused, the file does not grow */
	uint64_t before = bs1.pages_allocated + bs1.pages_free; /* high-water mark */
	for (unsigned i = 0; i < n / 4; i++) {
		int kl = snprintf((char *)k, sizeof k, "again/%08u", i);
		CHECK_OK(ruma_btree_insert(t, k, (size_t)kl, "v", 1));
	}
	ruma_bm_get_stats(bm, &bs1);
	CHECK_EQ(bs1.pages_allocated + bs1.pages_free, before);
	CHECK_OK(ruma_btree_check(t, stderr));
	return model_end(&f, &m);
}

static int t_limits(void)
{
	test_tree f;
	CHECK_OK(test_tree_setup(&f, "btree", "limits", 1 << 14, 1 << 10));
	ruma_btree *t = f.t;
	static uint8_t k[RUMA_BTREE_MAX_KEY + 2], v[RUMA_BTREE_MAX_VALUE + 2],
		buf[RUMA_BTREE_MAX_VALUE + 2];
	size_t maxv = RUMA_BTREE_MAX_ENTRY - RUMA_BTREE_MAX_KEY;
	CHECK_EQ(ruma_btree_insert(t, k, 0, v, 1), -EINVAL);
	CHECK_EQ(ruma_btree_insert(t, k, RUMA_BTREE_MAX_KEY + 1, v, 1), RUMA_ETOOBIG);
	CHECK_EQ(ruma_btree_insert(t, k, 4, v, RUMA_BTREE_MAX_VALUE + 1), RUMA_ETOOBIG);
	CHECK_EQ(ruma_btree_insert(t, k, RUMA_BTREE_MAX_KEY, v, maxv + 1), RUMA_ETOOBIG);
	CHECK_EQ(ruma_btree_lookup(t, k, RUMA_BTREE_MAX_KEY + 1, buf, sizeof buf, NULL), RUMA_ETOOBIG);
	CHECK_EQ(ruma_btree_scan_asc(t, k, RUMA_BTREE_MAX_KEY + 1, NULL, NULL), RUMA_ETOOBIG);
	/* many maximal entries: keys of MAX_KEY bytes differing only at the
	 * end (long separators), and entries with the largest values */
	model m = { 0 };
	unsigned n = test_sanitized() ? 300 : 1500;
	for (unsigned i = 0; i < n; i++) {
		size_t kl, vl;
		if (i % 2) {
			kl = RUMA_BTREE_MAX_KEY;
			memset(k, 'k', kl);
			snprintf((char *)k + kl - 8, 9, "%08u", (unsigned)ruma_rng_below(&test_rng, 1u << 30));
			vl = maxv;
		} else {
			kl = (size_t)snprintf((char *)k, 16, "v%08u", (unsigned)ruma_rng_below(&test_rng, 1u << 30));
			vl = RUMA_BTREE_MAX_ENTRY - kl;
		}
		rand_val(v, 0);
		for (size_t j = 0; j < vl; j++)
			v[j] = (uint8_t)(i + j);
		int rc = ruma_btree_insert(t, k, kl, v, vl);
		CHECK(rc == 0 || rc == RUMA_EEXISTS);
		if (rc == 0)
			model_put(&m, k, kl, v, vl);
	}
	CHECK_OK(check_tree_model(t, &m));
	/* buffer too small */
	size_t vl = 0;
	CHECK_EQ(ruma_btree_lookup(t, m.e[0]->key, m.e[0]->klen, buf, 3, &vl), -ENOBUFS);
	CHECK_EQ(vl, m.e[0]->vlen);
	CHECK_EQ(ruma_btree_lookup(t, m.e[0]->key, m.e[0]->klen, NULL, 0, NULL), -ENOBUFS);
	/* remove all: merges with big entries */
	while (m.n) {
		kv *e = m.e[ruma_rng_below(&test_rng, m.n)];
		CHECK_OK(ruma_btree_remove(t, e->key, e->klen));
		model_del(&m, e->key, e->klen);
	}
	CHECK_OK(ruma_btree_check(t, stderr));
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	CHECK_EQ(st.entries, 0);
	CHECK_EQ(st.height, 1);
	return model_end(&f, &m);
}

/* The limits case with fixed seeds (the run's own seed varies): with seed 6
 * a merge that did not fit (long keys, a shorter prefix) left an empty leaf
 * beside one emptied later, and the tree kept two empty leaves under its
 * root instead of going back to height 1. */
static int t_limits_seeds(void)
{
	ruma_rng saved = test_rng;
	int rc = TEST_PASS;
	for (uint64_t s = 1; s <= 8 && rc == TEST_PASS; s++) {
		ruma_rng_seed(&test_rng, s);
		rc = t_limits();
	}
	test_rng = saved;
	return rc;
}

static int t_catalog_reopen(void)
{
	test_tree f;
	enum { TREES = 24 };
	model m[TREES];
	memset(m, 0, sizeof m);
	CHECK_OK(test_tree_setup(&f, "btree", NULL, 1 << 15, 1 << 11));
	ruma_bm *bm = f.bm;
	ruma_btree *t;
	CHECK_EQ(ruma_btree_open(bm, "nothing", &t), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_btree_create(bm, "", &t), -EINVAL);
	char name[32];
	for (unsigned i = 0; i < TREES; i++) {
		snprintf(name, sizeof name, "tree-%02u", i);
		CHECK_OK(ruma_btree_create(bm, name, &t));
		unsigned n = 50 + 200 * i;
		uint8_t k[128], v[128];
		for (unsigned j = 0; j < n; j++) {
			size_t kl = rand_key(k, 60), vl = rand_val(v, 100);
			if (ruma_btree_insert(t, k, kl, v, vl) == 0)
				model_put(&m[i], k, kl, v, vl);
		}
		ruma_btree_release(t);
	}
	CHECK_EQ(ruma_btree_create(bm, "tree-03", &t), RUMA_EEXISTS);
	/* reopen the same file */
	CHECK_OK(test_tree_reopen(&f));
	bm = f.bm;
	CHECK_EQ(ruma_btree_open(bm, "tree-99", &t), RUMA_ENOTFOUND);
	for (unsigned i = 0; i < TREES; i++) {
		snprintf(name, sizeof name, "tree-%02u", i);
		CHECK_OK(ruma_btree_open(bm, name, &t));
		CHECK_OK(check_tree_model(t, &m[i]));
		ruma_btree_release(t);
		model_free(&m[i]);
	}
	CHECK_OK(test_tree_teardown(&f));
	return TEST_PASS;
}

/* Injected pread/pwrite failures with a pool far smaller than the data:
 * the errors come back from the tree operations, and what was acknowledged
 * before the last successful flush survives a reopen. */
static int t_io_errors(void)
{
	test_tree f;
	model m = { 0 };
	const uint64_t phys = 48;
	CHECK_OK(test_tree_setup(&f, "btree", "io", 1 << 14, phys));
	ruma_bm *bm = f.bm;
	ruma_btree *t = f.t;
	uint8_t k[64], v[200], buf[RUMA_BTREE_MAX_VALUE];
	unsigned n = 8000;
	for (unsigned i = 0; i < n; i++) {
		size_t kl = rand_key(k, 40), vl = rand_val(v, 150);
		if (ruma_btree_insert(t, k, kl, v, vl) == 0)
			model_put(&m, k, kl, v, vl);
	}
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	CHECK(st.leaf_nodes + st.inner_nodes > 4 * phys);
	CHECK_OK(ruma_bm_flush(bm));

	/* reads fail: lookups report the error (pages are evicted, so a
	 * random lookup soon needs a read) */
	ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, true);
	int errors = 0;
	for (unsigned i = 0; i < 400; i++) {
		kv *e = m.e[ruma_rng_below(&test_rng, m.n)];
		size_t vl;
		int rc = ruma_btree_lookup(t, e->key, e->klen, buf, sizeof buf, &vl);
		CHECK(rc == 0 || rc == -EIO);
		if (rc == 0)
			CHECK(vl == e->vlen && memcmp(buf, e->val, vl) == 0);
		errors += rc == -EIO;
	}
	ruma_os_inject_clear();
	CHECK(errors > 0);

	/* writes fail: inserts that need eviction of dirty pages fail (every
	 * write path: io_uring, pwritev runs, pwrite) */
	ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, true);
	ruma_os_inject(RUMA_SYS_PWRITEV, 1, EIO, true);
	ruma_os_inject(RUMA_SYS_IO_URING_ENTER, 1, EIO, true);
	errors = 0;
	model pending = { 0 };
	for (unsigned i = 0; i < 3000; i++) {
		size_t kl = rand_key(k, 40), vl = rand_val(v, 150);
		int rc = ruma_btree_insert(t, k, kl, v, vl);
		CHECK(rc == 0 || rc == RUMA_EEXISTS || rc == -EIO);
		errors += rc == -EIO;
		if (rc == 0)
			model_put(&pending, k, kl, v, vl);
	}
	CHECK(errors > 0);
	CHECK(ruma_bm_flush(bm) != 0);
	ruma_os_inject_clear();
	/* the tree is intact; acknowledged inserts are visible */
	CHECK_OK(ruma_btree_check(t, stderr));
	for (size_t i = 0; i < pending.n; i++)
		model_put(&m, pending.e[i]->key, pending.e[i]->klen, pending.e[i]->val,
			  pending.e[i]->vlen);
	model_free(&pending);
	CHECK_OK(check_all(t, &m));
	CHECK_OK(ruma_bm_flush(bm));

	CHECK_OK(test_tree_reopen(&f));
	CHECK_OK(check_tree_model(f.t, &m));
	return model_end(&f, &m);
}

/* A store that runs out of page ids: inserts fail with RUMA_EVIRTFULL, the
 * tree stays valid with every acknowledged key, and removing keys frees
 * pages for new inserts. */
static int t_virt_full(void)
{
	test_tree f;
	model m = { 0 };
	CHECK_OK(test_tree_setup(&f, "btree", "full", 96, 48));
	ruma_btree *t = f.t;
	uint8_t k[32], v[300];
	int rc = 0;
	unsigned i;
	for (i = 0; i < 100000 && rc == 0; i++) {
		int kl = snprintf((char *)k, sizeof k, "%08x", (unsigned)(i * 2654435761u));
		size_t vl = rand_val(v, sizeof v);
		rc = ruma_btree_insert(t, k, (size_t)kl, v, vl);
		if (rc == 0)
			model_put(&m, k, (size_t)kl, v, vl);
	}
	CHECK_EQ(rc, RUMA_EVIRTFULL);
	CHECK_OK(check_tree_model(t, &m));
	/* free most of the tree, then grow again */
	while (m.n > 100) {
		kv *e = m.e[ruma_rng_below(&test_rng, m.n)];
		CHECK_OK(ruma_btree_remove(t, e->key, e->klen));
		model_del(&m, e->key, e->klen);
	}
	for (unsigned j = 0; j < 1000; j++) {
		int kl = snprintf((char *)k, sizeof k, "again-%05u", j);
		CHECK_OK(ruma_btree_insert(t, k, (size_t)kl, v, 100));
		model_put(&m, k, (size_t)kl, v, 100);
	}
	CHECK_OK(check_tree_model(t, &m));
	return model_end(&f, &m);
}

static bool count_cb(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	(*(size_t *)ctx)++;
	return true;
}

/* Overwrite page pid of the store file with `page`. */
static int write_page(const char *path, uint64_t pid, const uint8_t *page)
{
	FILE *f = fopen(path, "r+b");
	if (!f)
		return -errno;
	int rc = fseeko(f, (off_t)(pid * PS), SEEK_SET) == 0 && fwrite(page, PS, 1, f) == 1 ? 0 : -EIO;
	if (fflush(f) || fsync(fileno(f)))
		rc = -EIO;
	fclose(f);
	return rc;
}

static int read_page(const char *path, uint64_t pid, uint8_t *page)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	int rc = fseeko(f, (off_t)(pid * PS), SEEK_SET) == 0 && fread(page, PS, 1, f) == 1 ? 0 : -EIO;
	fclose(f);
	return rc;
}

/* Corrupt pages on disk (random bytes, zeros, a real header over scrambled
 * slots, an impossible count): every operation returns (an error or a
 * result), nothing crashes or hangs, and the checker reports RUMA_ECORRUPT. */
static int t_corrupt_pages(void)
{
	test_tree f;
	CHECK_OK(test_tree_setup(&f, "btree", "victim", 1 << 14, 1 << 10));
	ruma_bm *bm = f.bm;
	ruma_btree *t = f.t;
	uint8_t k[64], v[128];
	for (unsigned i = 0; i < 3000; i++) {
		int kl = snprintf((char *)k, sizeof k, "key-%06u", i * 7919 % 100000);
		CHECK_OK(ruma_btree_insert(t, k, (size_t)kl, v, rand_val(v, 100)));
	}
	ruma_pid root = ruma_btree_root(t);
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	CHECK(st.height >= 2);
	CHECK_OK(test_tree_close(&f));
	f.cfg.fresh = false;
	/* the root and a page allocated after it (a node of this tree) */
	const ruma_pid victims[2] = { root, root + 2 };
	static uint8_t orig[PS], bad[PS];
	for (unsigned vi = 0; vi < 2; vi++) {
		CHECK_OK(read_page(f.path, victims[vi], orig));
		for (unsigned variant = 0; variant < 4; variant++) {
			memcpy(bad, orig, PS);
			if (variant == 0)
				for (unsigned i = 0; i < PS; i++)
					bad[i] = (uint8_t)ruma_rng_next(&test_rng);
			else if (variant == 1)
				memset(bad, 0, PS);
			else if (variant == 2)
				for (unsigned i = NODE_HDR; i < PS; i++)
					bad[i] = (uint8_t)ruma_rng_next(&test_rng);
			else
				((node *)bad)->count = (uint16_t)NODE_MAX_COUNT;
			CHECK_OK(write_page(f.path, victims[vi], bad));
			CHECK_OK(ruma_bm_open(&f.cfg, &bm));
			CHECK_OK(ruma_btree_open(bm, "victim", &t));
			size_t vl, seen = 0;
			for (unsigned i = 0; i < 300; i++) {
				int kl = snprintf((char *)k, sizeof k, "key-%06u", i * 331 % 100000);
				int rc = ruma_btree_lookup(t, k, (size_t)kl, v, sizeof v, &vl);
				CHECK(rc == 0 || rc == RUMA_ENOTFOUND || rc == RUMA_ECORRUPT || rc == -ENOBUFS);
				rc = i % 2 ? ruma_btree_insert(t, k, (size_t)kl, "x", 1)
					   : ruma_btree_remove(t, k, (size_t)kl);
				CHECK(rc == 0 || rc == RUMA_ENOTFOUND || rc == RUMA_EEXISTS ||
				      rc == RUMA_ECORRUPT);
			}
			int rc = ruma_btree_scan_asc(t, NULL, 0, count_cb, &seen);
			CHECK(rc == 0 || rc == RUMA_ECORRUPT);
			rc = ruma_btree_scan_desc(t, NULL, 0, count_cb, &seen);
			CHECK(rc == 0 || rc == RUMA_ECORRUPT);
			CHECK_EQ(ruma_btree_check(t, NULL), RUMA_ECORRUPT);
			ruma_btree_release(t);
			ruma_bm_close(bm);
			CHECK_OK(write_page(f.path, victims[vi], orig));
		}
	}
	/* restored: intact again */
	CHECK_OK(test_tree_reopen(&f));
	CHECK_OK(ruma_btree_check(f.t, stderr));
	CHECK_OK(test_tree_teardown(&f));
	return TEST_PASS;
}

struct seq_scan {
	unsigned next, seen;
	bool ok;
};

static bool desc_seq_cb(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct seq_scan *c = ctx;
	unsigned x;
	const uint8_t *k = key;
	if (klen != 8 || vlen != sizeof x) {
		c->ok = false;
		return false;
	}
	memcpy(&x, val, sizeof x);
	c->ok &= x == c->next && k[7] == (uint8_t)x;
	c->next--;
	c->seen++;
	return c->ok;
}

/* Sequential keys (the benchmark loader's pattern) and both scan ends. */
static int t_sequential(void)
{
	test_tree f;
	CHECK_OK(test_tree_setup(&f, "btree", "seq", 1 << 15, 1 << 12));
	ruma_btree *t = f.t;
	unsigned n = test_sanitized() ? 20000 : 100000;
	for (unsigned i = 0; i < n; i++) {
		uint8_t k[8];
		uint64_t x = i;
		for (int j = 7; j >= 0; j--, x >>= 8)
			k[j] = (uint8_t)x;
		CHECK_OK(ruma_btree_insert(t, k, 8, &i, sizeof i));
	}
	CHECK_OK(ruma_btree_check(t, stderr));
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	CHECK_EQ(st.entries, n);
	/* ascending inserts fill leaves (12 + 8-byte keys + 4-byte values:
	 * ~165 per leaf when full) */
	CHECK(st.entries / st.leaf_nodes > 120);
	/* descending from the end sees n-1, n-2, ... */
	struct seq_scan c = { n - 1, 0, true };
	CHECK_OK(ruma_btree_scan_desc(t, NULL, 0, desc_seq_cb, &c));
	CHECK(c.ok);
	CHECK_EQ(c.seen, n);
	CHECK_OK(test_tree_teardown(&f));
	return TEST_PASS;
}

/* ---- tree size after loads (the benchmark loaders' patterns) ------------------------------ */

enum load_order { LOAD_ASCENDING, LOAD_ALTERNATE, LOAD_SHUFFLED_RANGES, LOAD_RANDOM };

/* The next key of range *r (the next range with keys left from *r on),
 * then the range to take next. */
static uint64_t next_in_ranges(enum load_order order, unsigned ranges, unsigned n, uint32_t *next,
			       unsigned *r)
{
	if (order == LOAD_SHUFFLED_RANGES)
		*r = (unsigned)ruma_rng_below(&test_rng, ranges);
	while (next[*r] == (uint64_t)n * (*r + 1) / ranges)
		*r = (*r + 1) % ranges;
	uint64_t x = next[*r]++;
	if (order == LOAD_ALTERNATE)
		*r = (*r + 1) % ranges;
	return x;
}

/*
 * Load keys 0..n-1 (8-byte big-endian, 120-byte values as in vmcache's
 * random-read workload) in one thread, in the order a parallel load of
 * `ranges` disjoint ascending ranges produces: LOAD_ALTERNATE takes one
 * insert of each range in turn, LOAD_SHUFFLED_RANGES the next insert of a
 * range picked at random (threads running at different speeds),
 * LOAD_RANDOM a random permutation.  The tree's shape goes to *st.
 */
static int load_pages(enum load_order order, unsigned ranges, unsigned n, ruma_btree_stats *st)
{
	test_tree f;
	CHECK_OK(test_tree_setup(&f, "btree", "load", 1 << 15, 1 << 14));
	ruma_btree *t = f.t;
	uint32_t *next = calloc(ranges, sizeof *next), *perm = NULL;
	CHECK(next);
	for (unsigned r = 0; r < ranges; r++)
		next[r] = (uint32_t)((uint64_t)n * r / ranges);
	if (order == LOAD_RANDOM) {
		perm = malloc(n * sizeof *perm);
		CHECK(perm);
		for (unsigned i = 0; i < n; i++)
			perm[i] = i;
		for (unsigned i = n; i > 1; i--) {
			unsigned j = (unsigned)ruma_rng_below(&test_rng, i);
			uint32_t x = perm[i - 1];
			perm[i - 1] = perm[j];
			perm[j] = x;
		}
	}
	uint8_t v[120];
	memset(v, 0x5a, sizeof v);
	for (unsigned i = 0, r = 0; i < n; i++) {
		uint64_t x = order == LOAD_RANDOM ? perm[i] : next_in_ranges(order, ranges, n, next, &r);
		uint8_t k[8];
		for (int j = 7; j >= 0; j--, x >>= 8)
			k[j] = (uint8_t)x;
		CHECK_OK(ruma_btree_insert(t, k, 8, v, sizeof v));
	}
	CHECK_OK(ruma_btree_check(t, stderr));
	CHECK_OK(ruma_btree_get_stats(t, st));
	CHECK_EQ(st->entries, n);
	free(next);
	free(perm);
	CHECK_OK(test_tree_teardown(&f));
	return TEST_PASS;
}

static double leaf_fill(const ruma_btree_stats *st)
{
	/* 8-byte keys and 120-byte values: the leaf bytes are the entries' */
	return (double)st->entries * (NODE_SLOT + 8 + 120) / ((double)st->leaf_nodes * NODE_PAGE);
}

/* A load on N threads (interleaved ascending ranges) gives a tree within 2 %
 * of the single-thread tree; random inserts still fill leaves to ~69 %. */
static int t_load_size(void)
{
	unsigned n = test_sanitized() ? 50000 : 200000;
	ruma_btree_stats one, st;
	CHECK(load_pages(LOAD_ASCENDING, 1, n, &one) == TEST_PASS);
	uint64_t base = one.leaf_nodes + one.inner_nodes;
	printf("  ascending: %" PRIu64 " pages, leaves %.1f %% full\n", base, 100 * leaf_fill(&one));
	CHECK(leaf_fill(&one) > 0.90);
	static const struct { enum load_order order; unsigned ranges; const char *name; } loads[] = {
		{ LOAD_ALTERNATE, 2, "2 ranges alternating" },
		{ LOAD_ALTERNATE, 4, "4 ranges alternating" },
		{ LOAD_SHUFFLED_RANGES, 2, "2 ranges shuffled" },
		{ LOAD_SHUFFLED_RANGES, 8, "8 ranges shuffled" },
	};
	bool small = true; /* every load measured before failing: the numbers tell why */
	for (unsigned i = 0; i < TEST_N(loads); i++) {
		CHECK(load_pages(loads[i].order, loads[i].ranges, n, &st) == TEST_PASS);
		uint64_t pages = st.leaf_nodes + st.inner_nodes;
		printf("  %s: %" PRIu64 " pages (%+.1f %%), leaves %.1f %% full\n", loads[i].name,
		       pages, 100.0 * ((double)pages - (double)base) / (double)base,
		       100 * leaf_fill(&st));
		small &= pages * 100 <= base * 102;
	}
	CHECK(small);
	CHECK(load_pages(LOAD_RANDOM, 1, n, &st) == TEST_PASS);
	printf("  random: %" PRIu64 " pages, leaves %.1f %% full\n", st.leaf_nodes + st.inner_nodes,
	       100 * leaf_fill(&st));
	CHECK(leaf_fill(&st) > 0.64 && leaf_fill(&st) < 0.75);
	return TEST_PASS;
}

/* ---- the free gap holds nothing (node_hole) ---------------------------------------------- */

/* Fill n's free gap (node_hole) with byte v. */
static void gap_fill(node *n, uint8_t v)
{
	unsigned off, len;
	if (node_hole(n, &off, &len))
		memset(node_wbytes(n) + off, v, len);
}

/* a and b are equal outside a's free gap, and b's gap is the same. */
static bool same_outside_gap(const node *a, const node *b)
{
	unsigned off, len, boff, blen;
	if (!node_hole(a, &off, &len) || !node_hole(b, &boff, &blen) || off != boff || len != blen)
		return false;
	return !memcmp(a, b, off) &&
	       !memcmp(node_bytes(a) + off + len, node_bytes(b) + off + len, NODE_PAGE - off - len);
}

/* One random change of n (both twins get the same): an insert, a removal or
 * a compaction. */
static void twin_change(node *n, uint32_t what, uint32_t knum)
{
	uint8_t k[NODE_KEYBUF + 8];
	bool found, bad = false;
	if (what % 8 == 0) {
		node_compact(n);
		return;
	}
	if (what % 5 == 0 && n->count) {
		node_remove_at(n, knum % n->count);
		return;
	}
	/* a new key: an entry's key with digits appended (mostly inside the
	 * fences after splits), or a fresh one in an empty node */
	int len = 0;
	if (n->count) {
		len = (int)node_full_key(n, knum % n->count, k, &bad);
		len += snprintf((char *)k + len, 8, "%u", knum % 1000);
	} else {
		len = snprintf((char *)k, sizeof k, "gap/%u", knum);
	}
	if (len > (int)RUMA_BTREE_MAX_KEY || !node_covers(n, k, (size_t)len))
		return; /* outside the half a split kept */
	unsigned pos = node_lower_bound(n, k, (size_t)len, &found, &bad);
	unsigned vlen = 8 + what % 200;
	uint8_t val[256];
	memset(val, (int)what, vlen);
	if (!found && node_free_total(n) >= node_entry_size(n, (size_t)len, vlen))
		node_insert_at(n, pos, k, (size_t)len, val, vlen);
}

/*
 * What a node's free gap holds never matters: two copies of a node, one
 * with zeros in the gap (as recovery leaves a page redone from an image
 * without it) and one with garbage, stay equal outside the gap through
 * inserts, removals, compactions and splits.  The log's images leave the
 * gap out on that promise (src/bm/mtr.c).
 */
static int t_node_gap_unread(void)
{
	_Alignas(8) uint8_t pa[PS], pb[PS], la[PS], lb[PS], ra[PS], rb[PS];
	node *a = (node *)pa, *b = (node *)pb;
	unsigned splits = 0, most = 0;
	node_init(a, 0, NULL, 0, NULL, 0);
	memcpy(b, a, NODE_PAGE);
	for (unsigned i = 0; i < 4000; i++) {
		uint32_t what = (uint32_t)ruma_rng_next(&test_rng);
		uint32_t knum = (uint32_t)ruma_rng_below(&test_rng, 100000);
		gap_fill(a, 0);
		gap_fill(b, (uint8_t)(0x80 | what));
		if (node_free_total(a) < 400 && a->count >= 2) {
			uint8_t sep[NODE_KEYBUF];
			unsigned lc, sl = node_find_split(a, NODE_POS_NONE, &lc, sep);
			memset(la, 0, PS);
			memset(ra, 0, PS);
			memset(lb, 0xee, PS);
			memset(rb, 0xdd, PS);
			node_split_into(a, lc, sep, sl, (node *)la, (node *)ra);
			node_split_into(b, lc, sep, sl, (node *)lb, (node *)rb);
			CHECK(same_outside_gap((node *)ra, (node *)rb));
			splits++;
			memcpy(a, (what & 1) ? la : ra, NODE_PAGE);
			memcpy(b, (what & 1) ? lb : rb, NODE_PAGE);
		}
		twin_change(a, what, knum);
		twin_change(b, what, knum);
		CHECK(same_outside_gap(a, b));
		const char *why = node_check(a, 1, UINT64_MAX);
		if (why)
			printf("  step %u: %s\n", i, why);
		CHECK(why == NULL);
		most = a->count > most ? a->count : most;
	}
	printf("  %u splits, up to %u entries\n", splits, most);
	CHECK(splits > 10);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "node", t_node },
	{ "node_gap_unread", t_node_gap_unread },
	{ "random_model", t_random_model },
	{ "random_large", t_random_large },
	{ "merges", t_merges },
	{ "limits", t_limits },
	{ "limits_seeds", t_limits_seeds },
	{ "catalog_reopen", t_catalog_reopen },
	{ "io_errors", t_io_errors },
	{ "sequential", t_sequential },
	{ "corrupt_pages", t_corrupt_pages },
	{ "virt_full", t_virt_full },
	{ "load_size", t_load_size },
};

int main(int argc, char **argv)
{
	return test_main("btree", cases, TEST_N(cases), argc, argv);
}
