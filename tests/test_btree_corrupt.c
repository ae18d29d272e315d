/*
 * test_btree_corrupt.c — B-tree operations on a tree whose pages are
 * consistent each on its own but wrong in their place, as a misdirected
 * write leaves them: a leaf copied over its right or left neighbour, a
 * child pointer pointing back up (a cycle), a wrong level, children shared
 * by two parent slots.  Scans in both directions from several start keys,
 * lookups, inserts, removes (with the merge they cause) and the checker
 * must return RUMA_ECORRUPT (or a correct result where the damage is not on
 * their path) and must never hang or silently skip entries.
 *
 * The tree lives in a buffer manager whose pool holds every page, so the
 * damage is done in memory through the page pointer under an exclusive
 * latch, exactly as the pages would look when read back from disk.  Each
 * scenario runs in a forked child with alarm(): a hang fails the test
 * instead of hanging the suite, and the parent's tree stays intact for the
 * next scenario.
 */
#include "fixture.h"

#include <ruma/btree.h>

#include "btree/node.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define PS RUMA_BM_PAGE_SIZE
#define NKEYS 20000u
#define VLEN 100u
#define HANG_SECONDS 20u
#define MAX_NODES 2048u

typedef struct fixture {
	char dir[64], path[96];
	ruma_bm *bm;
	ruma_btree *t;
	ruma_pid leaf[MAX_NODES], inner1[MAX_NODES]; /* leaves and level-1 nodes in key order */
	unsigned nleaf, ninner1, height;
} fixture;

static fixture fx;

static size_t make_key(unsigned i, uint8_t *k)
{
	return (size_t)snprintf((char *)k, 16, "key-%06u", i * 10u);
}

/* Walk the intact tree (shared latches) and list the nodes of levels 0 and 1. */
static int collect(ruma_pid pid)
{
	void *page;
	int rc = ruma_bm_fix_s(fx.bm, pid, &page);
	if (rc)
		return rc;
	static _Alignas(8) uint8_t copies[8][PS];
	const node *live = page;
	unsigned level = live->level;
	if (level >= 8) {
		ruma_bm_unfix_s(fx.bm, pid);
		return RUMA_ECORRUPT;
	}
	node *n = (node *)copies[level];
	memcpy(n, page, PS);
	ruma_bm_unfix_s(fx.bm, pid);
	if (level == 0) {
		if (fx.nleaf == MAX_NODES)
			return -ENOSPC;
		fx.leaf[fx.nleaf++] = pid;
		return 0;
	}
	if (level == 1) {
		if (fx.ninner1 == MAX_NODES)
			return -ENOSPC;
		fx.inner1[fx.ninner1++] = pid;
	}
	for (unsigned i = 0; i <= n->count && rc == 0; i++) {
		bool bad = false;
		ruma_pid child = node_child_at(n, i, &bad);
		if (bad)
			return RUMA_ECORRUPT;
		rc = collect(child); /* uses the copies of the levels below only */
	}
	return rc;
}

static int fixture_build(void)
{
	memset(&fx, 0, sizeof fx);
	strcpy(fx.dir, "/tmp/ruma-btcorrupt-XXXXXX");
	if (!mkdtemp(fx.dir))
		return -errno;
	snprintf(fx.path, sizeof fx.path, "%s/store", fx.dir);
	ruma_bm_config c;
	test_bm_config(&c, fx.path, 1u << 14, 1u << 13); /* every page stays resident */
	c.max_threads = 4;
	int rc = ruma_bm_open(&c, &fx.bm);
	if (rc)
		return rc;
	if ((rc = ruma_btree_create(fx.bm, "victim", &fx.t)))
		return rc;
	uint8_t k[16], v[VLEN];
	memset(v, 'v', sizeof v);
	for (unsigned i = 0; i < NKEYS && rc == 0; i++)
		rc = ruma_btree_insert(fx.t, k, make_key(i, k), v, sizeof v);
	if (rc)
		return rc;
	ruma_btree_stats st;
	if ((rc = ruma_btree_get_stats(fx.t, &st)))
		return rc;
	fx.height = st.height;
	return collect(ruma_btree_root(fx.t));
}

static void fixture_free(void)
{
	ruma_btree_release(fx.t);
	ruma_bm_close(fx.bm);
	unlink(fx.path);
	rmdir(fx.dir);
}

/* Run fn in a forked child with an alarm: a hang is a failure. */
static int in_child(int (*fn)(void))
{
	return test_in_child(fn, HANG_SECONDS);
}

/* ---- damage, done through the page pointer under an exclusive latch ------------------------- */

static int copy_page(ruma_pid from, ruma_pid to)
{
	static uint8_t buf[PS];
	void *page;
	int rc = ruma_bm_fix_s(fx.bm, from, &page);
	if (rc)
		return rc;
	memcpy(buf, page, PS);
	ruma_bm_unfix_s(fx.bm, from);
	if ((rc = ruma_bm_fix_x(fx.bm, to, &page)))
		return rc;
	memcpy(page, buf, PS);
	ruma_bm_unfix_x(fx.bm, to);
	return 0;
}

/* Set child slot pos (count: `upper`) of inner node pid to child. */
static int set_child(ruma_pid pid, unsigned pos, ruma_pid child)
{
	void *page;
	int rc = ruma_bm_fix_x(fx.bm, pid, &page);
	if (rc)
		return rc;
	node *n = page;
	if (pos >= n->count)
		n->upper = child;
	else
		node_set_child(n, pos, child);
	ruma_bm_unfix_x(fx.bm, pid);
	return 0;
}

static int set_level(ruma_pid pid, uint8_t level)
{
	void *page;
	int rc = ruma_bm_fix_x(fx.bm, pid, &page);
	if (rc)
		return rc;
	((node *)page)->level = level;
	ruma_bm_unfix_x(fx.bm, pid);
	return 0;
}

/* First / last key of a leaf (read before the damage). */
static size_t leaf_key(ruma_pid pid, bool last, uint8_t *k)
{
	void *page;
	if (ruma_bm_fix_s(fx.bm, pid, &page))
		return 0;
	const node *n = page;
	bool bad = false;
	size_t len = n->count ? node_full_key(n, last ? n->count - 1u : 0u, k, &bad) : 0;
	ruma_bm_unfix_s(fx.bm, pid);
	return bad ? 0 : len;
}

/* ---- probes ------------------------------------------------------------------------------ */

typedef struct order {
	uint8_t prev[NODE_KEYBUF];
	size_t plen, seen;
	bool desc, any, ok;
} order;

static bool order_cb(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	order *o = ctx;
	(void)val;
	(void)vlen;
	if (o->any) {
		int c = node_keycmp(o->prev, o->plen, key, klen);
		o->ok &= o->desc ? c > 0 : c < 0;
	}
	memcpy(o->prev, key, klen);
	o->plen = klen;
	o->any = true;
	o->seen++;
	return o->seen <= 2 * NKEYS; /* more entries than stored: a repeating scan */
}

/* A scan from start (NULL: from the end) must report RUMA_ECORRUPT and
 * must have returned strictly monotonic keys until then. */
static int scan_is_corrupt(bool desc, const uint8_t *start, size_t slen)
{
	order o = { .desc = desc, .ok = true };
	int rc = desc ? ruma_btree_scan_desc(fx.t, start, slen, order_cb, &o)
		      : ruma_btree_scan_asc(fx.t, start, slen, order_cb, &o);
	if (rc != RUMA_ECORRUPT)
		fprintf(stderr, "  %s scan from '%.*s': %s after %zu entries\n", desc ? "desc" : "asc",
			(int)slen, start ? (const char *)start : "", ruma_strerror(rc), o.seen);
	CHECK_EQ(rc, RUMA_ECORRUPT);
	CHECK(o.ok);
	return TEST_PASS;
}

/* Insert a key just above k (in k's leaf). */
static int insert_after(const uint8_t *k, size_t klen)
{
	uint8_t x[NODE_KEYBUF];
	memcpy(x, k, klen);
	x[klen] = 'x';
	return ruma_btree_insert(fx.t, x, klen + 1, "x", 1);
}

static int lookup_rc(const uint8_t *k, size_t klen)
{
	uint8_t v[VLEN];
	size_t vl;
	return ruma_btree_lookup(fx.t, k, klen, v, sizeof v, &vl);
}

/* The handle names the damaged page. */
static int reported(ruma_pid want)
{
	ruma_pid pid = 0;
	const char *why = ruma_btree_last_corruption(fx.t, &pid);
	CHECK(why != NULL);
	CHECK_EQ(pid, want);
	return TEST_PASS;
}

typedef struct start {
	const uint8_t *key; /* NULL: from the end */
	size_t len;
} start;

/* Scans in one direction from each start fail, naming page pid. */
static int scans_corrupt(bool desc, const start *from, unsigned n, ruma_pid pid)
{
	for (unsigned i = 0; i < n; i++)
		CHECK(scan_is_corrupt(desc, from[i].key, from[i].len) == TEST_PASS);
	return reported(pid);
}

/* ---- scenarios (each run in a child) -------------------------------------------------------- */

static unsigned victim; /* index of the damaged leaf's left neighbour */

/* Leaf A copied over its right neighbour B: B's page claims A's range. */
static int probe_copy_right(void)
{
	ruma_pid a = fx.leaf[victim], b = fx.leaf[victim + 1], c = fx.leaf[victim + 2];
	uint8_t a0[NODE_KEYBUF], b0[NODE_KEYBUF], bl[NODE_KEYBUF], cl[NODE_KEYBUF],
		before[NODE_KEYBUF];
	size_t a0n = leaf_key(a, false, a0), b0n = leaf_key(b, false, b0), bln = leaf_key(b, true, bl);
	size_t cln = leaf_key(c, true, cl), beforen = leaf_key(fx.leaf[victim - 1], false, before);
	CHECK(a0n && b0n && bln && cln && beforen);
	CHECK_OK(copy_page(a, b));
	const start asc[] = { { NULL, 0 }, { before, beforen }, { a0, a0n }, { b0, b0n } };
	const start desc[] = { { NULL, 0 }, { cl, cln }, { bl, bln } };
	CHECK(scans_corrupt(false, asc, TEST_N(asc), b) == TEST_PASS);
	CHECK(scans_corrupt(true, desc, TEST_N(desc), b) == TEST_PASS);
	CHECK_EQ(lookup_rc(b0, b0n), RUMA_ECORRUPT);
	CHECK_EQ(lookup_rc(bl, bln), RUMA_ECORRUPT);
	CHECK_OK(lookup_rc(a0, a0n)); /* A itself is intact */
	CHECK_EQ(insert_after(b0, b0n), RUMA_ECORRUPT);
	CHECK_EQ(ruma_btree_remove(fx.t, bl, bln), RUMA_ECORRUPT);
	CHECK_EQ(ruma_btree_check(fx.t, NULL), RUMA_ECORRUPT);
	return TEST_PASS;
}

/* The checker's lines, through its message callback. */
struct lines {
	char first[256], last[256];
	int n;
};

static void keep_line(void *ctx, const char *line)
{
	struct lines *l = ctx;
	snprintf(l->n++ ? l->last : l->first, sizeof(l->first), "%s", line);
	if (l->n == 1)
		snprintf(l->last, sizeof(l->last), "%s", line);
}

/* Leaf B copied over its left neighbour A: A's page claims B's range. */
static int probe_copy_left(void)
{
	ruma_pid a = fx.leaf[victim], b = fx.leaf[victim + 1];
	uint8_t a0[NODE_KEYBUF], al[NODE_KEYBUF], bl[NODE_KEYBUF];
	size_t a0n = leaf_key(a, false, a0), aln = leaf_key(a, true, al), bln = leaf_key(b, true, bl);
	CHECK(a0n && aln && bln);
	CHECK_OK(copy_page(b, a));
	const start asc[] = { { NULL, 0 }, { a0, a0n } };
	const start desc[] = { { NULL, 0 }, { bl, bln }, { al, aln } };
	CHECK(scans_corrupt(false, asc, TEST_N(asc), a) == TEST_PASS);
	CHECK(scans_corrupt(true, desc, TEST_N(desc), a) == TEST_PASS);
	CHECK_EQ(lookup_rc(a0, a0n), RUMA_ECORRUPT);
	CHECK_EQ(lookup_rc(al, aln), RUMA_ECORRUPT);
	CHECK_OK(lookup_rc(bl, bln));
	CHECK_EQ(ruma_btree_check(fx.t, NULL), RUMA_ECORRUPT);
	struct lines got = { .n = 0 };
	CHECK_EQ(ruma_btree_check_msg(fx.t, keep_line, &got), RUMA_ECORRUPT);
	CHECK(got.n >= 2);
	CHECK(strncmp(got.first, "page ", 5) == 0);
	CHECK(strstr(got.last, " problem(s)") != NULL);
	return TEST_PASS;
}

/* Every operation through the damaged subtree fails; the checker too. */
static int all_corrupt(const uint8_t *k, size_t klen)
{
	CHECK(scan_is_corrupt(false, NULL, 0) == TEST_PASS);
	CHECK(scan_is_corrupt(false, k, klen) == TEST_PASS);
	CHECK(scan_is_corrupt(true, NULL, 0) == TEST_PASS);
	CHECK(scan_is_corrupt(true, k, klen) == TEST_PASS);
	CHECK_EQ(lookup_rc(k, klen), RUMA_ECORRUPT);
	CHECK_EQ(insert_after(k, klen), RUMA_ECORRUPT);
	CHECK_EQ(ruma_btree_check(fx.t, NULL), RUMA_ECORRUPT);
	return TEST_PASS;
}

/* A level-1 node's child pointer leads back up to the root. */
static int probe_cycle_root(void)
{
	ruma_pid p = fx.inner1[1];
	uint8_t k[NODE_KEYBUF];
	void *page;
	CHECK_OK(ruma_bm_fix_s(fx.bm, p, &page));
	unsigned pos = ((node *)page)->count / 2;
	bool bad = false;
	ruma_pid child = node_child_at(page, pos, &bad);
	ruma_bm_unfix_s(fx.bm, p);
	CHECK(!bad);
	unsigned li = 0;
	while (li < fx.nleaf && fx.leaf[li] != child)
		li++;
	CHECK(li < fx.nleaf);
	size_t kn = leaf_key(fx.leaf[li], false, k);
	CHECK(kn);
	CHECK_OK(set_child(p, pos, ruma_btree_root(fx.t)));
	return all_corrupt(k, kn);
}

/* A level-1 node's child pointer leads to itself. */
static int probe_cycle_self(void)
{
	ruma_pid p = fx.inner1[0];
	uint8_t k[NODE_KEYBUF];
	size_t kn = leaf_key(fx.leaf[0], false, k);
	CHECK(kn);
	CHECK_OK(set_child(p, 0, p));
	return all_corrupt(k, kn);
}

/* A leaf that claims to be an inner node. */
static int probe_wrong_level(void)
{
	uint8_t k[NODE_KEYBUF];
	size_t kn = leaf_key(fx.leaf[victim], false, k);
	CHECK(kn);
	CHECK_OK(set_level(fx.leaf[victim], 1));
	CHECK(all_corrupt(k, kn) == TEST_PASS);
	return reported(fx.leaf[victim]);
}

/* Two slots of a parent point to the same leaf (the leaf right of it is
 * unreachable): scans and lookups of the lost range, the checker, and a
 * remove whose merge would pair the leaf with itself. */
static int probe_shared_child(void)
{
	ruma_pid p = fx.inner1[0];
	uint8_t k1[NODE_KEYBUF], k0[NODE_KEYBUF];
	size_t k1n = leaf_key(fx.leaf[1], false, k1), k0n = leaf_key(fx.leaf[0], false, k0);
	CHECK(k1n && k0n);
	CHECK_OK(set_child(p, 1, fx.leaf[0]));
	CHECK(all_corrupt(k1, k1n) == TEST_PASS);
	/* empty leaf 0 (its keys are routed correctly); the merge then finds
	 * the right sibling to be the leaf itself */
	int rc = 0;
	for (unsigned i = 0; rc == 0; i++) {
		uint8_t k[16];
		size_t kl = make_key(i, k);
		if (node_keycmp(k, kl, k1, k1n) >= 0)
			break;
		rc = ruma_btree_remove(fx.t, k, kl);
	}
	CHECK_EQ(rc, RUMA_ECORRUPT);
	return reported(p);
}

/* The same subtree reachable from two slots of the root: the checker says
 * so and returns (its walk visits each page once). */
static int probe_shared_subtree(void)
{
	ruma_pid root = ruma_btree_root(fx.t);
	void *page;
	CHECK_OK(ruma_bm_fix_s(fx.bm, root, &page));
	unsigned count = ((node *)page)->count;
	ruma_bm_unfix_s(fx.bm, root);
	CHECK(count >= 1);
	for (unsigned i = 1; i <= count; i++)
		CHECK_OK(set_child(root, i, fx.inner1[0]));
	CHECK_EQ(ruma_btree_check(fx.t, NULL), RUMA_ECORRUPT);
	uint8_t k[NODE_KEYBUF];
	size_t kn = leaf_key(fx.leaf[fx.nleaf - 1], false, k);
	CHECK(kn);
	CHECK_EQ(lookup_rc(k, kn), RUMA_ECORRUPT);
	CHECK(scan_is_corrupt(false, NULL, 0) == TEST_PASS);
	CHECK(scan_is_corrupt(true, NULL, 0) == TEST_PASS);
	return TEST_PASS;
}

/* ---- cases ------------------------------------------------------------------------------- */

static int run(int (*fn)(void))
{
	int rc = fixture_build();
	if (rc) {
		fprintf(stderr, "fixture: %s\n", ruma_strerror(rc));
		return TEST_FAIL;
	}
	CHECK(fx.height >= 3);
	CHECK(fx.nleaf > 10 && fx.ninner1 >= 2);
	victim = fx.nleaf / 2;
	CHECK_OK(ruma_btree_check(fx.t, stderr));
	rc = in_child(fn);
	CHECK_OK(ruma_btree_check(fx.t, stderr)); /* the parent's tree was not touched */
	fixture_free();
	return rc;
}

static int t_copy_right(void) { return run(probe_copy_right); }
static int t_copy_left(void) { return run(probe_copy_left); }
static int t_cycle_root(void) { return run(probe_cycle_root); }
static int t_cycle_self(void) { return run(probe_cycle_self); }
static int t_wrong_level(void) { return run(probe_wrong_level); }
static int t_shared_child(void) { return run(probe_shared_child); }
static int t_shared_subtree(void) { return run(probe_shared_subtree); }

static const struct test_case cases[] = {
	{ "copy_right", t_copy_right },
	{ "copy_left", t_copy_left },
	{ "cycle_root", t_cycle_root },
	{ "cycle_self", t_cycle_self },
	{ "wrong_level", t_wrong_level },
	{ "shared_child", t_shared_child },
	{ "shared_subtree", t_shared_subtree },
};

int main(int argc, char **argv)
{
	return test_main("btree_corrupt", cases, TEST_N(cases), argc, argv);
}
