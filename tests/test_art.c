/*
 * test_art.c — the Adaptive Radix Tree against reference models (sorted
 * arrays with binary search): long random sequences of inserts, lookups,
 * deletes and lower-bound scans in both key modes, in the dense-sorted,
 * dense-shuffled and sparse key distributions, with byte keys of 0..40 bytes
 * over small alphabets (keys that are prefixes of each other, shared prefixes
 * longer than the 9 stored bytes, 0x00 bytes), for every allocator backend
 * plus a local libc vtable and a failing allocator; node type transitions
 * both ways; memory statistics back to zero; the `ruma art` command line.
 * u64 mode: a tree driven by the fast path (ruma_art_u64_*) and a TID-mode
 * tree driven by the general API get the same operations and must agree
 * with each other and the model — results, iteration order, node counts by
 * type (the same shape) — for dense, shuffled, sparse and clustered keys
 * (long shared prefixes: splits and merges), deleting everything at the end
 * so every node shrinks.
 */
#include <ruma/art.h>

#include "test.h"
#include "core/sanitizer.h"

/* ---- allocators ---------------------------------------------------------- */

static void *local_alloc(void *ctx, size_t size, size_t align)
{
	(void)ctx;
	(void)align;
	return malloc(size);
}

static void local_free(void *ctx, void *p, size_t size)
{
	(void)ctx;
	(void)size;
	free(p);
}

static ruma_alloc local_libc = { local_alloc, local_free, NULL, NULL, NULL, "local-libc" };

/* Fails every allocation once fail_countdown reaches 0 (negative = never). */
struct failing {
	long countdown;
	long live;
};

static void *failing_alloc(void *ctx, size_t size, size_t align)
{
	struct failing *f = ctx;
	(void)align;
	if (f->countdown == 0)
		return NULL;
	if (f->countdown > 0)
		f->countdown--;
	f->live++;
	return malloc(size);
}

static void failing_free(void *ctx, void *p, size_t size)
{
	struct failing *f = ctx;
	(void)size;
	if (p)
		f->live--;
	free(p);
}

static const char *const backend_names[] = { "libc", "pool", "mempool", "huge" };

/* Smaller sizes under sanitizers (env set by the sanitizer jobs, or compiled in). */
static bool sanitized(void)
{
	return RUMA_ASAN || RUMA_TSAN || test_sanitized();
}

/* ---- bytes-mode model ------------------------------------------------------ */

#define MKEY 40

struct mkey {
	uint8_t k[MKEY];
	size_t len;
	uint64_t val;
};

struct bmodel {
	struct mkey *v;
	size_t n, cap;
};

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t m = alen < blen ? alen : blen;
	int c = m ? memcmp(a, b, m) : 0;
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* First index with key >= k. */
static size_t bmodel_lower(const struct bmodel *m, const uint8_t *k, size_t len)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (key_cmp(m->v[mid].k, m->v[mid].len, k, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool bmodel_find(const struct bmodel *m, const uint8_t *k, size_t len, size_t *pos)
{
	*pos = bmodel_lower(m, k, len);
	return *pos < m->n && key_cmp(m->v[*pos].k, m->v[*pos].len, k, len) == 0;
}

/* Returns true when the key was new. */
static bool bmodel_insert(struct bmodel *m, const uint8_t *k, size_t len, uint64_t val)
{
	size_t pos;
	if (bmodel_find(m, k, len, &pos)) {
		m->v[pos].val = val;
		return false;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 256;
		m->v = realloc(m->v, m->cap * sizeof(*m->v));
	}
	memmove(m->v + pos + 1, m->v + pos, (m->n - pos) * sizeof(*m->v));
	memcpy(m->v[pos].k, k, len);
	m->v[pos].len = len;
	m->v[pos].val = val;
	m->n++;
	return true;
}

static bool bmodel_delete(struct bmodel *m, const uint8_t *k, size_t len)
{
	size_t pos;
	if (!bmodel_find(m, k, len, &pos))
		return false;
	memmove(m->v + pos, m->v + pos + 1, (m->n - pos - 1) * sizeof(*m->v));
	m->n--;
	return true;
}

/* Collects visited keys and compares them with the model from index start. */
struct cmp_walk {
	const struct bmodel *m;
	size_t next, limit;
	bool bad;
};

static int cmp_visit(const uint8_t *key, size_t len, uint64_t value, void *ctx)
{
	struct cmp_walk *w = ctx;
	if (w->next >= w->m->n) {
		w->bad = true;
		return 1;
	}
	const struct mkey *e = &w->m->v[w->next];
	if (key_cmp(key, len, e->k, e->len) != 0 || value != e->val) {
		w->bad = true;
		return 1;
	}
	w->next++;
	return w->next >= w->limit ? 2 : 0;
}

static int check_bytes_tree(const ruma_art *t, const struct bmodel *m)
{
	struct cmp_walk w = { m, 0, SIZE_MAX, false };
	ruma_art_stats st;
	uint64_t leaf_bytes = 0;

	CHECK_EQ(ruma_art_size(t), m->n);
	CHECK_EQ(ruma_art_iterate(t, cmp_visit, &w), 0);
	CHECK(!w.bad);
	CHECK_EQ(w.next, m->n);
	ruma_art_get_stats(t, &st);
	for (size_t i = 0; i < m->n; i++)
		leaf_bytes += 12 + m->v[i].len;
	CHECK_EQ(st.leaf_bytes, leaf_bytes);
	CHECK_EQ(st.keys, m->n);
	CHECK_EQ(st.node_bytes, st.node4 * 56 + st.node16 * 160 + st.node48 * 656 + st.node256 * 2064);
	return TEST_PASS;
}

/* A byte from the first `alphabet` letters (0x00, 'a', 0x01, 'b', 0xff, 'c'), or any byte. */
static uint8_t random_letter(unsigned alphabet)
{
	static const uint8_t letters[] = { 0, 'a', 1, 'b', 0xff, 'c' };
	if (alphabet > TEST_N(letters))
		return (uint8_t)ruma_rng_next(&test_rng);
	return letters[ruma_rng_below(&test_rng, alphabet)];
}

static size_t random_key(struct bmodel *m, uint8_t *k, unsigned alphabet)
{
	size_t len = ruma_rng_below(&test_rng, MKEY + 1), keep = 0;

	if (m->n && ruma_rng_below(&test_rng, 3) == 0) {
		/* Derive from an existing key: a prefix of it or an extension. */
		const struct mkey *e = &m->v[ruma_rng_below(&test_rng, m->n)];
		keep = e->len < len ? e->len : len;
		memcpy(k, e->k, keep);
	}
	for (size_t i = keep; i < len; i++)
		k[i] = random_letter(alphabet);
	return len;
}

static int scan_check_bytes(const ruma_art *t, const struct bmodel *m, const uint8_t *k, size_t len)
{
	size_t start = bmodel_lower(m, k, len);
	struct cmp_walk w = { m, start, start + 25, false };
	int rc = ruma_art_scan(t, k, len, cmp_visit, &w);

	CHECK(!w.bad);
	if (start + 25 <= m->n)
		CHECK_EQ(rc, 2);
	else {
		CHECK_EQ(rc, 0);
		CHECK_EQ(w.next, m->n);
	}
	return TEST_PASS;
}

static int run_bytes_sequence(const ruma_alloc *a, unsigned alphabet, size_t ops)
{
	ruma_art_options opt = { RUMA_ART_BYTES, a, NULL, NULL };
	struct bmodel m = { 0 };
	ruma_art *t;
	uint8_t k[MKEY];
	int r = TEST_PASS;

	CHECK_OK(ruma_art_create(&opt, &t));
	for (size_t i = 0; i < ops && r == TEST_PASS; i++) {
		size_t len = random_key(&m, k, alphabet), pos;
		unsigned op = (unsigned)ruma_rng_below(&test_rng, 20);
		uint64_t v = ruma_rng_next(&test_rng), got;
		bool replaced;

		if (op < 10) {
			bool fresh = bmodel_insert(&m, k, len, v);
			CHECK_OK(ruma_art_insert(t, k, len, v, &replaced));
			CHECK_EQ(replaced, !fresh);
		} else if (op < 15) {
			bool had = bmodel_find(&m, k, len, &pos);
			uint64_t want = had ? m.v[pos].val : 0;
			int rc = ruma_art_delete(t, k, len, &got);
			bmodel_delete(&m, k, len);
			CHECK_EQ(rc, had ? 0 : RUMA_ENOTFOUND);
			if (had)
				CHECK(got == want);
		} else if (op < 18) {
			bool had = bmodel_find(&m, k, len, &pos);
			int rc = ruma_art_lookup(t, k, len, &got);
			CHECK_EQ(rc, had ? 0 : RUMA_ENOTFOUND);
			if (had)
				CHECK(got == m.v[pos].val);
		} else {
			r = scan_check_bytes(t, &m, k, len);
		}
		if (i % 997 == 0 && r == TEST_PASS)
			r = check_bytes_tree(t, &m);
	}
	if (r == TEST_PASS)
		r = check_bytes_tree(t, &m);
	/* Delete everything in random order: stats must go back to zero. */
	while (m.n && r == TEST_PASS) {
		size_t i = ruma_rng_below(&test_rng, m.n);
		struct mkey e = m.v[i];
		CHECK_OK(ruma_art_delete(t, e.k, e.len, NULL));
		bmodel_delete(&m, e.k, e.len);
		CHECK_EQ(ruma_art_lookup(t, e.k, e.len, NULL), RUMA_ENOTFOUND);
	}
	ruma_art_stats st;
	ruma_art_get_stats(t, &st);
	CHECK_EQ(st.keys + st.node4 + st.node16 + st.node48 + st.node256, 0);
	CHECK_EQ(st.node_bytes + st.leaf_bytes, 0);
	ruma_art_destroy(t);
	free(m.v);
	return r;
}

/* ---- TID-mode model --------------------------------------------------------- */

struct tmodel {
	uint64_t *v; /* sorted keys as numbers (big-endian key order) */
	uint64_t *tid;
	size_t n, cap;
};

static size_t tmodel_lower(const struct tmodel *m, uint64_t k)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->v[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool tmodel_insert(struct tmodel *m, uint64_t k, uint64_t tid)
{
	size_t pos = tmodel_lower(m, k);
	if (pos < m->n && m->v[pos] == k) {
		m->tid[pos] = tid;
		return false;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 256;
		m->v = realloc(m->v, m->cap * sizeof(uint64_t));
		m->tid = realloc(m->tid, m->cap * sizeof(uint64_t));
	}
	memmove(m->v + pos + 1, m->v + pos, (m->n - pos) * sizeof(uint64_t));
	memmove(m->tid + pos + 1, m->tid + pos, (m->n - pos) * sizeof(uint64_t));
	m->v[pos] = k;
	m->tid[pos] = tid;
	m->n++;
	return true;
}

static bool tmodel_delete(struct tmodel *m, uint64_t k)
{
	size_t pos = tmodel_lower(m, k);
	if (pos >= m->n || m->v[pos] != k)
		return false;
	memmove(m->v + pos, m->v + pos + 1, (m->n - pos - 1) * sizeof(uint64_t));
	memmove(m->tid + pos, m->tid + pos + 1, (m->n - pos - 1) * sizeof(uint64_t));
	m->n--;
	return true;
}

static void be_key(uint64_t k, uint8_t out[8])
{
	uint64_t be = __builtin_bswap64(k);
	memcpy(out, &be, 8);
}

struct tcmp {
	const struct tmodel *m;
	size_t next, limit;
	bool bad;
};

static int tcmp_visit(const uint8_t *key, size_t len, uint64_t value, void *ctx)
{
	struct tcmp *w = ctx;
	uint8_t want[8];
	if (len != 8 || w->next >= w->m->n) {
		w->bad = true;
		return 1;
	}
	be_key(w->m->v[w->next], want);
	if (memcmp(key, want, 8) != 0 || value != w->m->tid[w->next]) {
		w->bad = true;
		return 1;
	}
	w->next++;
	return w->next >= w->limit ? 2 : 0;
}

/* A custom load_key: the TID indexes a table of keys (as a database would). */
static void table_load_key(uint64_t tid, uint8_t key[8], void *ctx)
{
	const uint64_t *table = ctx;
	be_key(table[tid], key);
}

enum dist { DENSE_SORTED, DENSE_SHUFFLED, SPARSE, CLUSTERED, NDISTS };

static int check_tid_tree(const ruma_art *t, const struct tmodel *m)
{
	struct tcmp w = { m, 0, SIZE_MAX, false };
	CHECK_EQ(ruma_art_size(t), m->n);
	CHECK_EQ(ruma_art_iterate(t, tcmp_visit, &w), 0);
	CHECK(!w.bad);
	CHECK_EQ(w.next, m->n);
	ruma_art_stats st;
	ruma_art_get_stats(t, &st);
	CHECK_EQ(st.leaf_bytes, 0);
	CHECK_EQ(st.node_bytes, st.node4 * 56 + st.node16 * 160 + st.node48 * 656 + st.node256 * 2064);
	return TEST_PASS;
}

/*
 * Fill with n keys of the distribution, then a random mix of operations, then
 * delete everything.  With table != NULL the TIDs are indexes into table
 * (custom load_key); otherwise the TID is the key.
 */
static int run_tid_sequence(const ruma_alloc *a, enum dist d, size_t n, bool use_table)
{
	uint64_t *keys = malloc(n * sizeof(uint64_t));
	ruma_art_options opt = { RUMA_ART_TID, a, NULL, NULL };
	struct tmodel m = { 0 };
	ruma_art *t;
	uint8_t kb[8];
	int r = TEST_PASS;

	for (size_t i = 0; i < n; i++)
		keys[i] = d == SPARSE ? ruma_rng_next(&test_rng) >> (use_table ? 0 : 1) : i + 1;
	if (d == DENSE_SHUFFLED)
		ruma_rng_shuffle_u64(&test_rng, keys, n);
	if (use_table) {
		opt.load_key = table_load_key;
		opt.load_key_ctx = keys;
	}
	CHECK_OK(ruma_art_create(&opt, &t));
	for (size_t i = 0; i < n; i++) {
		bool replaced, fresh = tmodel_insert(&m, keys[i], use_table ? i : keys[i]);
		CHECK_OK(ruma_art_insert_tid(t, use_table ? i : keys[i], &replaced));
		CHECK_EQ(replaced, !fresh);
	}
	r = check_tid_tree(t, &m);
	for (size_t i = 0; i < n && r == TEST_PASS; i++) {
		uint64_t got;
		be_key(keys[i], kb);
		CHECK_OK(ruma_art_lookup(t, kb, 8, &got));
		CHECK(got == (use_table ? i : keys[i]));
	}
	/* Random mix: delete, re-insert, look up present and absent keys, scan. */
	size_t ops = n * 2;
	for (size_t o = 0; o < ops && r == TEST_PASS; o++) {
		size_t i = ruma_rng_below(&test_rng, n);
		unsigned op = (unsigned)ruma_rng_below(&test_rng, 10);
		uint64_t k = keys[i], tid = use_table ? i : keys[i], got;
		if (op == 9 && !use_table) { /* a key that was maybe never inserted */
			k = d == SPARSE ? ruma_rng_next(&test_rng) >> 1 : ruma_rng_below(&test_rng, n + 10);
			tid = k;
		}
		be_key(k, kb);
		if (op < 3) {
			bool had = tmodel_delete(&m, k);
			CHECK_EQ(ruma_art_delete(t, kb, 8, &got), had ? 0 : RUMA_ENOTFOUND);
			if (had)
				CHECK(got == tid);
		} else if (op < 5) {
			bool replaced, fresh = tmodel_insert(&m, k, tid);
			CHECK_OK(ruma_art_insert_tid(t, tid, &replaced));
			CHECK_EQ(replaced, !fresh);
		} else if (op < 8) {
			size_t pos = tmodel_lower(&m, k);
			bool had = pos < m.n && m.v[pos] == k;
			CHECK_EQ(ruma_art_lookup(t, kb, 8, &got), had ? 0 : RUMA_ENOTFOUND);
			if (had)
				CHECK(got == m.tid[pos]);
		} else {
			/* Scan from the key, or from a shorter/longer bound. */
			size_t blen = ruma_rng_below(&test_rng, 4) == 0 ? ruma_rng_below(&test_rng, 10) : 8;
			uint8_t bound[10] = { 0 };
			memcpy(bound, kb, blen < 8 ? blen : 8);
			uint64_t num = 0;
			for (size_t b = 0; b < 8; b++)
				num = num << 8 | (b < blen ? bound[b] : 0);
			size_t start = tmodel_lower(&m, num);
			/* A bound longer than 8 bytes (zeros appended) is above its 8-byte prefix. */
			if (blen > 8 && start < m.n && m.v[start] == num)
				start++;
			struct tcmp w = { &m, start, start + 20, false };
			int rc = ruma_art_scan(t, bound, blen, tcmp_visit, &w);
			CHECK(!w.bad);
			CHECK_EQ(rc, start + 20 <= m.n ? 2 : 0);
		}
		if (o % 4999 == 0 && r == TEST_PASS)
			r = check_tid_tree(t, &m);
	}
	if (r == TEST_PASS)
		r = check_tid_tree(t, &m);
	while (m.n && r == TEST_PASS) {
		size_t i = ruma_rng_below(&test_rng, m.n);
		uint64_t k = m.v[i];
		be_key(k, kb);
		CHECK_OK(ruma_art_delete(t, kb, 8, NULL));
		tmodel_delete(&m, k);
	}
	ruma_art_stats st;
	ruma_art_get_stats(t, &st);
	CHECK_EQ(st.keys + st.node4 + st.node16 + st.node48 + st.node256 + st.node_bytes, 0);
	ruma_art_destroy(t);
	free(m.v);
	free(m.tid);
	free(keys);
	return r;
}

/* ---- u64 mode: the fast path against the general path ------------------------- */

static const char *const dist_names[] = { "dense-sorted", "dense-shuffled", "sparse", "clustered" };

/* n keys of distribution d (all <= RUMA_ART_MAX_TID; duplicates possible). */
static void make_u64_keys(enum dist d, uint64_t *keys, size_t n)
{
	/* clustered: a random base with 4-bit variation in a few byte positions */
	uint64_t base = ruma_rng_next(&test_rng) >> 1, vary = 0;
	for (int i = 0; i < 4; i++)
		vary |= UINT64_C(0x0f) << (8 * ruma_rng_below(&test_rng, 8));
	for (size_t i = 0; i < n; i++) {
		switch (d) {
		case SPARSE:
			keys[i] = ruma_rng_next(&test_rng) >> 1;
			break;
		case CLUSTERED:
			keys[i] = ((base & ~vary) | (ruma_rng_next(&test_rng) & vary)) & RUMA_ART_MAX_TID;
			break;
		default:
			keys[i] = i + 1;
			break;
		}
	}
	if (d == DENSE_SHUFFLED)
		ruma_rng_shuffle_u64(&test_rng, keys, n);
}

/* ---- the two trees ------------------------------------------------------------------ */

struct pair {
	ruma_art *fast; /* RUMA_ART_U64, ruma_art_u64_* only */
	ruma_art *gen;  /* RUMA_ART_TID, general API only */
};

static int pair_insert(struct pair *p, struct tmodel *m, uint64_t k)
{
	bool fresh = tmodel_insert(m, k, k), replaced = false;
	CHECK_EQ(ruma_art_u64_insert(p->fast, k), fresh ? 0 : 1);
	CHECK_OK(ruma_art_insert_tid(p->gen, k, &replaced));
	CHECK_EQ(replaced, !fresh);
	return TEST_PASS;
}

static int pair_lookup(struct pair *p, const struct tmodel *m, uint64_t k)
{
	uint8_t kb[8];
	uint64_t v = 0;
	size_t pos = tmodel_lower(m, k);
	int want = pos < m->n && m->v[pos] == k ? 0 : RUMA_ENOTFOUND;

	be_key(k, kb);
	CHECK_EQ(ruma_art_u64_lookup(p->fast, k), want);
	CHECK_EQ(ruma_art_lookup(p->gen, kb, 8, &v), want);
	if (want == 0)
		CHECK(v == k);
	return TEST_PASS;
}

static int pair_delete(struct pair *p, struct tmodel *m, uint64_t k)
{
	uint8_t kb[8];
	int want = tmodel_delete(m, k) ? 0 : RUMA_ENOTFOUND;

	be_key(k, kb);
	CHECK_EQ(ruma_art_u64_delete(p->fast, k), want);
	CHECK_EQ(ruma_art_delete(p->gen, kb, 8, NULL), want);
	return TEST_PASS;
}

/* Both trees hold the model's keys in its order, with the same shape. */
static int pair_check(const struct pair *p, const struct tmodel *m)
{
	ruma_art_stats sa, sb;

	if (check_tid_tree(p->fast, m) != TEST_PASS || check_tid_tree(p->gen, m) != TEST_PASS)
		return TEST_FAIL;
	ruma_art_get_stats(p->fast, &sa);
	ruma_art_get_stats(p->gen, &sb);
	CHECK(memcmp(&sa, &sb, sizeof(sa)) == 0);
	return TEST_PASS;
}

static int run_pair(const ruma_alloc *a, enum dist d, size_t n)
{
	ruma_art_options of = { RUMA_ART_U64, a, NULL, NULL }, og = { RUMA_ART_TID, a, NULL, NULL };
	uint64_t *keys = malloc(n * sizeof(uint64_t));
	struct tmodel m = { 0 };
	struct pair p;
	int r = TEST_PASS;

	CHECK(keys);
	make_u64_keys(d, keys, n);
	CHECK_OK(ruma_art_create(&of, &p.fast));
	CHECK_OK(ruma_art_create(&og, &p.gen));
	for (size_t i = 0; i < n && r == TEST_PASS; i++)
		r = pair_insert(&p, &m, keys[i]);
	if (r == TEST_PASS)
		r = pair_check(&p, &m);
	/* a random mix: delete, re-insert, look up present and absent keys */
	for (size_t o = 0; o < 2 * n && r == TEST_PASS; o++) {
		uint64_t k = keys[ruma_rng_below(&test_rng, n)];
		unsigned op = (unsigned)ruma_rng_below(&test_rng, 10);
		if (op == 9) /* a neighbour, often absent, sometimes above 2^63 */
			k = ruma_rng_below(&test_rng, 8) == 0 ? k | (UINT64_C(1) << 63) : k ^ 1;
		if (op < 3)
			r = pair_delete(&p, &m, k);
		else if (op < 5 && k <= RUMA_ART_MAX_TID)
			r = pair_insert(&p, &m, k);
		else
			r = pair_lookup(&p, &m, k);
		if (r == TEST_PASS && o % 1999 == 0)
			r = pair_check(&p, &m);
	}
	if (r == TEST_PASS)
		r = pair_check(&p, &m);
	/* delete everything in random order: every node shrinks and collapses */
	ruma_rng_shuffle_u64(&test_rng, keys, n);
	for (size_t i = 0; i < n && r == TEST_PASS; i++) {
		r = pair_delete(&p, &m, keys[i]);
		if (r == TEST_PASS && i % 997 == 0)
			r = pair_check(&p, &m);
	}
	if (r == TEST_PASS) {
		ruma_art_stats st;
		ruma_art_get_stats(p.fast, &st);
		CHECK_EQ(st.keys + st.node4 + st.node16 + st.node48 + st.node256 + st.node_bytes, 0);
		CHECK_EQ(ruma_art_u64_lookup(p.fast, keys[0]), RUMA_ENOTFOUND);
	}
	ruma_art_destroy(p.fast);
	ruma_art_destroy(p.gen);
	free(keys);
	free(m.v);
	free(m.tid);
	if (r != TEST_PASS)
		fprintf(stderr, "  distribution %s, %zu keys, allocator %s\n", dist_names[d], n, a->name);
	return r;
}

static int pair_all_dists(const ruma_alloc *a)
{
	size_t n = sanitized() ? 3000 : 12000;
	for (int d = 0; d < NDISTS; d++) {
		int r = run_pair(a, (enum dist)d, n);
		if (r != TEST_PASS)
			return r;
	}
	return TEST_PASS;
}

/* ---- cases -------------------------------------------------------------------------- */

static int t_node_sizes(void)
{
	CHECK_EQ(RUMA_ART_NODE4_SIZE, 56);
	CHECK_EQ(RUMA_ART_NODE16_SIZE, 160);
	CHECK_EQ(RUMA_ART_NODE48_SIZE, 656);
	CHECK_EQ(RUMA_ART_NODE256_SIZE, 2064);
	return TEST_PASS;
}

typedef int (*backend_fn)(const ruma_alloc *a);

/* Runs fn over the local libc vtable and every backend ruma_alloc_create_by_name knows. */
static int for_each_backend(backend_fn fn)
{
	int r = fn(&local_libc);
	if (r != TEST_PASS) {
		fprintf(stderr, "  backend local-libc failed\n");
		return r;
	}
	for (size_t i = 0; i < TEST_N(backend_names); i++) {
		ruma_alloc a;
		int rc = ruma_alloc_create_by_name(backend_names[i], NULL, &a);
		if (rc != 0) {
			fprintf(stderr, "  backend %s unavailable: %s\n", backend_names[i], ruma_strerror(rc));
			continue;
		}
		r = fn(&a);
		ruma_alloc_destroy(&a);
		if (r != TEST_PASS) {
			fprintf(stderr, "  backend %s failed\n", backend_names[i]);
			return r;
		}
	}
	return TEST_PASS;
}

static int bytes_all_alphabets(const ruma_alloc *a)
{
	static const unsigned alphabets[] = { 2, 3, 6, 256 };
	size_t ops = sanitized() ? 6000 : 20000;
	for (size_t i = 0; i < TEST_N(alphabets); i++) {
		int r = run_bytes_sequence(a, alphabets[i], ops);
		if (r != TEST_PASS)
			return r;
	}
	return TEST_PASS;
}

TEST_BIND(t_bytes_model, for_each_backend, bytes_all_alphabets)

static int tid_all_dists(const ruma_alloc *a)
{
	size_t n = sanitized() ? 3000 : 12000;
	for (int d = DENSE_SORTED; d <= SPARSE; d++)
		for (int table = 0; table < 2; table++) {
			int r = run_tid_sequence(a, (enum dist)d, n, table);
			if (r != TEST_PASS)
				return r;
		}
	return TEST_PASS;
}

TEST_BIND(t_tid_model, for_each_backend, tid_all_dists)

/* Bytes keys in the three distributions too: 8-byte big-endian numbers. */
static int bytes_dists(const ruma_alloc *a)
{
	size_t n = sanitized() ? 3000 : 12000;
	for (int d = DENSE_SORTED; d <= SPARSE; d++) {
		ruma_art_options opt = { RUMA_ART_BYTES, a, NULL, NULL };
		struct bmodel m = { 0 };
		uint64_t *keys = malloc(n * sizeof(uint64_t));
		ruma_art *t;
		uint8_t kb[8];
		int r;
		for (size_t i = 0; i < n; i++)
			keys[i] = d == SPARSE ? ruma_rng_next(&test_rng) : i + 1;
		if (d == DENSE_SHUFFLED)
			ruma_rng_shuffle_u64(&test_rng, keys, n);
		CHECK_OK(ruma_art_create(&opt, &t));
		for (size_t i = 0; i < n; i++) {
			bool rep;
			be_key(keys[i], kb);
			bmodel_insert(&m, kb, 8, i);
			CHECK_OK(ruma_art_insert(t, kb, 8, i, &rep));
		}
		r = check_bytes_tree(t, &m);
		for (size_t i = 0; i < 200 && r == TEST_PASS; i++) {
			be_key(keys[ruma_rng_below(&test_rng, n)] + ruma_rng_below(&test_rng, 3), kb);
			r = scan_check_bytes(t, &m, kb, ruma_rng_below(&test_rng, 9));
		}
		for (size_t i = 0; i < n && r == TEST_PASS; i++) {
			be_key(keys[i], kb);
			CHECK_OK(ruma_art_delete(t, kb, 8, NULL));
		}
		ruma_art_stats st;
		ruma_art_get_stats(t, &st);
		CHECK_EQ(st.keys + st.node_bytes + st.leaf_bytes, 0);
		ruma_art_destroy(t);
		free(keys);
		free(m.v);
		if (r != TEST_PASS)
			return r;
	}
	return TEST_PASS;
}

TEST_BIND(t_bytes_distributions, for_each_backend, bytes_dists)

static int node_type(const ruma_art *t)
{
	ruma_art_stats st;
	ruma_art_get_stats(t, &st);
	if (st.node4 + st.node16 + st.node48 + st.node256 != 1)
		return -1;
	return st.node4 ? 4 : st.node16 ? 16 : st.node48 ? 48 : 256;
}

/* One inner node with k children: its type on the way up and down. */
static int t_node_transitions(void)
{
	ruma_art_options opt = { RUMA_ART_TID, &local_libc, NULL, NULL };
	ruma_art *t;
	CHECK_OK(ruma_art_create(&opt, &t));
	for (unsigned k = 1; k <= 256; k++) {
		CHECK_OK(ruma_art_insert_tid(t, 0x1234500 + k - 1, NULL));
		int want = k == 1 ? 0 : k <= 4 ? 4 : k <= 16 ? 16 : k <= 48 ? 48 : 256;
		ruma_art_stats st;
		ruma_art_get_stats(t, &st);
		if (k == 1)
			CHECK_EQ(st.node4 + st.node16 + st.node48 + st.node256, 0);
		else
			CHECK_EQ(node_type(t), want);
	}
	for (unsigned k = 256; k > 1; k--) {
		uint8_t kb[8];
		be_key(0x1234500 + k - 1, kb);
		CHECK_OK(ruma_art_delete(t, kb, 8, NULL));
		unsigned left = k - 1;
		int want = left >= 38 ? 256 : left >= 13 ? 48 : left >= 4 ? 16 : left >= 2 ? 4 : 0;
		if (left == 1) {
			ruma_art_stats st;
			ruma_art_get_stats(t, &st);
			CHECK_EQ(st.node_bytes, 0); /* collapsed into the leaf */
		} else {
			CHECK_EQ(node_type(t), want);
		}
	}
	uint64_t got;
	uint8_t kb[8];
	be_key(0x1234500, kb);
	CHECK_OK(ruma_art_lookup(t, kb, 8, &got));
	CHECK_EQ(got, 0x1234500);
	ruma_art_destroy(t);
	return TEST_PASS;
}

/* Prefix merging on collapse: a Node4 over a node with a long prefix. */
static int t_collapse_long_prefix(void)
{
	ruma_art_options opt = { RUMA_ART_BYTES, &local_libc, NULL, NULL };
	ruma_art *t;
	const char *keys[] = { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaX1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaX2",
			       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaX3", "ab", "a",
			       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
	CHECK_OK(ruma_art_create(&opt, &t));
	for (size_t i = 0; i < TEST_N(keys); i++)
		CHECK_OK(ruma_art_insert(t, keys[i], strlen(keys[i]), i, NULL));
	CHECK_OK(ruma_art_delete(t, "ab", 2, NULL));
	CHECK_OK(ruma_art_delete(t, "a", 1, NULL));
	CHECK_OK(ruma_art_delete(t, keys[5], strlen(keys[5]), NULL));
	for (size_t i = 0; i < 3; i++) {
		uint64_t v;
		CHECK_OK(ruma_art_lookup(t, keys[i], strlen(keys[i]), &v));
		CHECK_EQ(v, i);
	}
	CHECK_EQ(ruma_art_lookup(t, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaX", 33, NULL), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_lookup(t, "aaaaaaaaaaaaaaaaaaaaaaaaaabaaaaaX1", 34, NULL), RUMA_ENOTFOUND);
	/* The empty key and keys with 0x00 bytes. */
	CHECK_OK(ruma_art_insert(t, "", 0, 100, NULL));
	CHECK_OK(ruma_art_insert(t, "\0", 1, 101, NULL));
	CHECK_OK(ruma_art_insert(t, "\0\0", 2, 102, NULL));
	CHECK_OK(ruma_art_insert(t, "\0\1", 2, 103, NULL));
	uint64_t v;
	CHECK_OK(ruma_art_lookup(t, "", 0, &v));
	CHECK_EQ(v, 100);
	CHECK_OK(ruma_art_lookup(t, "\0\0", 2, &v));
	CHECK_EQ(v, 102);
	CHECK_OK(ruma_art_lookup(t, "\0\1", 2, &v));
	CHECK_EQ(v, 103);
	CHECK_EQ(ruma_art_size(t), 7);
	ruma_art_destroy(t);
	return TEST_PASS;
}

static int t_bad_arguments(void)
{
	ruma_art_options opt = { RUMA_ART_TID, &local_libc, NULL, NULL };
	ruma_art *t;
	uint8_t big[RUMA_ART_MAX_KEY + 1] = { 0 }, kb[8];
	bool rep;

	CHECK_EQ(ruma_art_create(NULL, &t), -EINVAL);
	opt.alloc = NULL;
	CHECK_EQ(ruma_art_create(&opt, &t), -EINVAL);
	opt.alloc = &local_libc;
	CHECK_OK(ruma_art_create(&opt, &t));
	CHECK_EQ(ruma_art_insert_tid(t, UINT64_MAX, &rep), RUMA_ETOOBIG);
	be_key(5, kb);
	CHECK_EQ(ruma_art_insert(t, kb, 7, 5, &rep), -EINVAL);
	CHECK_EQ(ruma_art_insert(t, kb, 8, 6, &rep), -EINVAL); /* key != load_key(6) */
	CHECK_OK(ruma_art_insert(t, kb, 8, 5, &rep));
	CHECK(!rep);
	CHECK_OK(ruma_art_insert(t, kb, 8, 5, &rep));
	CHECK(rep);
	CHECK_EQ(ruma_art_lookup(t, kb, 7, NULL), RUMA_ENOTFOUND);
	ruma_art_destroy(t);
	opt.keys = RUMA_ART_BYTES;
	CHECK_OK(ruma_art_create(&opt, &t));
	CHECK_EQ(ruma_art_insert(t, big, sizeof(big), 1, &rep), RUMA_ETOOBIG);
	CHECK_OK(ruma_art_insert(t, big, RUMA_ART_MAX_KEY, 1, &rep));
	CHECK_OK(ruma_art_insert(t, big, RUMA_ART_MAX_KEY - 1, 2, &rep));
	CHECK_EQ(ruma_art_insert_tid(t, 1, &rep), -EINVAL);
	uint64_t v;
	CHECK_OK(ruma_art_lookup(t, big, RUMA_ART_MAX_KEY, &v));
	CHECK_EQ(v, 1);
	ruma_art_destroy(t);
	return TEST_PASS;
}

/* Allocation failures at every point: -ENOMEM, the tree unchanged and intact. */
static int t_alloc_failure(void)
{
	struct failing f = { -1, 0 };
	ruma_alloc fa = { failing_alloc, failing_free, NULL, NULL, &f, "failing" };
	ruma_art_options opt = { RUMA_ART_BYTES, &fa, NULL, NULL };
	struct bmodel m = { 0 };
	ruma_art *t;
	uint8_t k[MKEY];
	size_t failures = 0;

	CHECK_OK(ruma_art_create(&opt, &t));
	for (size_t i = 0; i < 3000; i++) {
		size_t len = random_key(&m, k, 3);
		f.countdown = (long)ruma_rng_below(&test_rng, 3);
		int rc = ruma_art_insert(t, k, len, i, NULL);
		f.countdown = -1;
		if (rc == -ENOMEM) {
			failures++;
			continue;
		}
		CHECK_OK(rc);
		bmodel_insert(&m, k, len, i);
		if (ruma_rng_below(&test_rng, 4) == 0) {
			len = random_key(&m, k, 3);
			f.countdown = 0; /* deletes must work without memory */
			ruma_art_delete(t, k, len, NULL);
			f.countdown = -1;
			bmodel_delete(&m, k, len);
		}
	}
	CHECK(failures > 0);
	int r = check_bytes_tree(t, &m);
	ruma_art_destroy(t);
	CHECK_EQ(f.live, 0);
	free(m.v);
	return r;
}

/* ---- command line ------------------------------------------------------------------ */

static int t_cli(void)
{
	char *out = NULL, *err = NULL;
	for (int mode = 0; mode < 4; mode++) {
		char ms[2] = { (char)('0' + mode), '\0' };
		char *argv[] = { "ruma", "art", "2000", ms, "--seed", "7", "--lookups", "20000", NULL };
		int st = test_run_cli(argv, &out, &err);
		if (st != 0)
			fprintf(stderr, "  stderr: %s\n", err ? err : "");
		CHECK_EQ(st, 0);
		CHECK_HAS(out, "Node4 Size: 56", "Node256 Size: 2064", "insert,2000,",
			  "lookup,2000,", "erase,2000,", "task-clock", ",bytes_per_key=");
		free(out);
		free(err);
	}
	char *argv2[] = { "ruma", "art", "3000", "1", "--alloc", "pool", "--reps", "3", "--seed", "1",
			  "--lookups", "1e5", NULL };
	CHECK_EQ(test_run_cli(argv2, &out, &err), 0);
	CHECK(out && strstr(out, "median"));
	free(out);
	free(err);
	char *bad[][6] = {
		{ "ruma", "art", "abc", "0", NULL },
		{ "ruma", "art", "0", "0", NULL },
		{ "ruma", "art", "100", "4", NULL },
		{ "ruma", "art", "100", "0", "--alloc", "nosuch" },
		{ "ruma", "art", "100", NULL },
		{ "ruma", "art", "100", "1", "--reps", "x" },
		{ "ruma", "art", "100", "1", "--lookups", "0" },
	};
	for (size_t i = 0; i < TEST_N(bad); i++) {
		char *argv[8] = { 0 };
		for (size_t j = 0; j < 6 && bad[i][j]; j++)
			argv[j] = bad[i][j];
		CHECK_EQ(test_run_cli(argv, &out, &err), 2);
		CHECK(err && strlen(err) > 0);
		free(out);
		free(err);
	}
	/* keys and tree that cannot fit: refused with a message, not an OOM kill */
	char *huge[] = { "ruma", "art", "4294967296", "3", NULL };
	CHECK_EQ(test_run_cli(huge, &out, &err), 2);
	CHECK(err && strstr(err, "available") && strstr(err, "use fewer keys"));
	free(out);
	free(err);
	return TEST_PASS;
}

TEST_BIND(t_fast_vs_general, for_each_backend, pair_all_dists)

/* Small trees: root leaf, one split, keys equal but for the last byte. */
static int t_u64_small(void)
{
	ruma_alloc a;
	ruma_art_options o = { RUMA_ART_U64, &a, NULL, NULL };
	ruma_art *t;

	CHECK_OK(ruma_alloc_create_by_name("libc", NULL, &a));
	CHECK_OK(ruma_art_create(&o, &t));
	CHECK_EQ(ruma_art_u64_lookup(t, 0), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_u64_delete(t, 0), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_u64_insert(t, RUMA_ART_MAX_TID + 1), RUMA_ETOOBIG);
	CHECK_EQ(ruma_art_u64_insert(t, 0), 0);
	CHECK_EQ(ruma_art_u64_insert(t, 0), 1);
	CHECK_EQ(ruma_art_u64_lookup(t, 0), 0);
	CHECK_EQ(ruma_art_u64_lookup(t, 1), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_u64_lookup(t, UINT64_C(1) << 63), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_u64_insert(t, RUMA_ART_MAX_TID), 0);
	CHECK_EQ(ruma_art_u64_insert(t, RUMA_ART_MAX_TID - 1), 0); /* 7-byte prefix */
	CHECK_EQ(ruma_art_u64_lookup(t, RUMA_ART_MAX_TID - 1), 0);
	CHECK_EQ(ruma_art_u64_lookup(t, RUMA_ART_MAX_TID - 2), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_u64_lookup(t, ~UINT64_C(0)), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_size(t), 3);
	/* the general API works on a u64 tree */
	uint8_t kb[8];
	uint64_t v = 0;
	be_key(RUMA_ART_MAX_TID, kb);
	CHECK_OK(ruma_art_lookup(t, kb, 8, &v));
	CHECK(v == RUMA_ART_MAX_TID);
	be_key(77, kb);
	CHECK_EQ(ruma_art_insert(t, kb, 8, 78, NULL), -EINVAL); /* value must be the key */
	CHECK_OK(ruma_art_insert(t, kb, 8, 77, NULL));
	CHECK_EQ(ruma_art_u64_lookup(t, 77), 0);
	CHECK_EQ(ruma_art_u64_delete(t, RUMA_ART_MAX_TID), 0);
	CHECK_EQ(ruma_art_u64_delete(t, RUMA_ART_MAX_TID), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_art_u64_delete(t, 0), 0);
	CHECK_EQ(ruma_art_u64_delete(t, 77), 0);
	CHECK_EQ(ruma_art_u64_delete(t, RUMA_ART_MAX_TID - 1), 0);
	CHECK_EQ(ruma_art_size(t), 0);
	ruma_art_destroy(t);
	/* load_key belongs to TID mode only */
	o.load_key = ruma_art_default_load_key;
	CHECK_EQ(ruma_art_create(&o, &t), -EINVAL);
	ruma_alloc_destroy(&a);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "node_sizes", t_node_sizes },
	{ "node_transitions", t_node_transitions },
	{ "collapse_long_prefix", t_collapse_long_prefix },
	{ "bad_arguments", t_bad_arguments },
	{ "alloc_failure", t_alloc_failure },
	{ "bytes_model", t_bytes_model },
	{ "bytes_distributions", t_bytes_distributions },
	{ "tid_model", t_tid_model },
	{ "u64_small", t_u64_small },
	{ "u64_fast_vs_general", t_fast_vs_general },
	{ "cli", t_cli },
};

int main(int argc, char **argv)
{
	return test_main("art", cases, TEST_N(cases), argc, argv);
}
