/*
 * test_btree_store_check.c — ruma_btree_check_store: the catalog and every
 * tree it names are walked and the pages reached are compared with the
 * allocator's state.  A clean store of several trees (after removals that
 * free pages) passes.  Refused: a linked page freed in memory, a linked
 * page marked free in page 0's bitmap (page 0 crafted with its checksum
 * recomputed, which the open-time checks of page 0 accept), a page
 * allocated but linked nowhere, and two catalog entries naming the same
 * root.  In the first, third and fourth every tree on its own still passes
 * ruma_btree_check_msg: only the store check sees the damage; in the
 * second the page reads back zeroed, and only the store check names why.
 */
#include "fixture.h"

#include <ruma/btree.h>

#include "btree/btree_int.h"
#include "page0_util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>

#define NTREES 3u
#define NKEYS 3000u

static const char *const tree_names[NTREES] = { "alpha", "beta", "gamma" };

typedef struct store {
	char dir[64], path[96];
	ruma_bm *bm;
	char last[512];
	unsigned lines;
} store;

static void collect(void *ctx, const char *line)
{
	store *s = ctx;
	snprintf(s->last, sizeof s->last, "%s", line);
	s->lines++;
	if (getenv("RUMA_TEST_VERBOSE"))
		fprintf(stderr, "  check: %s\n", line);
}

struct find {
	bool *found;
	const char *want;
};

/* Message callback: note whether a line contains want. */
static void find_line(void *ctx, const char *line)
{
	struct find *f = ctx;
	if (strstr(line, f->want))
		*f->found = true;
	if (getenv("RUMA_TEST_VERBOSE"))
		fprintf(stderr, "  check: %s\n", line);
}

static int store_open(store *s, bool fresh)
{
	ruma_bm_config c;
	test_bm_config(&c, s->path, 4096, 2048);
	c.max_threads = 4;
	c.fresh = fresh;
	c.message = collect;
	c.message_ctx = s;
	return ruma_bm_open(&c, &s->bm);
}

static size_t make_key(unsigned i, uint8_t *k)
{
	return (size_t)snprintf((char *)k, 16, "key-%06u", i);
}

/* Three trees, each filled then two thirds removed (merges free pages). */
static int store_build(store *s)
{
	memset(s, 0, sizeof *s);
	strcpy(s->dir, "/tmp/ruma-storecheck-XXXXXX");
	CHECK(mkdtemp(s->dir));
	snprintf(s->path, sizeof s->path, "%s/store", s->dir);
	CHECK_OK(store_open(s, true));
	uint8_t k[16], v[200];
	memset(v, 'v', sizeof v);
	for (unsigned t = 0; t < NTREES; t++) {
		ruma_btree *bt;
		CHECK_OK(ruma_btree_create(s->bm, tree_names[t], &bt));
		for (unsigned i = 0; i < NKEYS; i++)
			CHECK_OK(ruma_btree_insert(bt, k, make_key(i, k), v, sizeof v));
		for (unsigned i = 0; i < NKEYS; i++)
			if (i % 3 != 0)
				CHECK_OK(ruma_btree_remove(bt, k, make_key(i, k)));
		ruma_btree_release(bt);
	}
	return TEST_PASS;
}

static void store_remove(store *s)
{
	unlink(s->path);
	rmdir(s->dir);
}

/* Every tree on its own passes the per-tree check. */
static int trees_pass_alone(store *s)
{
	for (unsigned t = 0; t < NTREES; t++) {
		ruma_btree *bt;
		CHECK_OK(ruma_btree_open(s->bm, tree_names[t], &bt));
		int rc = ruma_btree_check_msg(bt, collect, s);
		ruma_btree_release(bt);
		CHECK_OK(rc);
	}
	return TEST_PASS;
}

static int t_clean(void)
{
	store s;
	ruma_btree_store_check c;
	if (store_build(&s) != TEST_PASS)
		return TEST_FAIL;
	CHECK_OK(ruma_btree_check_store(s.bm, collect, &s, &c));
	CHECK_EQ(c.trees, NTREES);
	CHECK_EQ(c.pages_leaked, 0);
	CHECK_EQ(c.reached_unallocated, 0);
	CHECK(c.pages_free > 0); /* the removals freed pages */
	ruma_bm_stats st;
	ruma_bm_get_stats(s.bm, &st);
	CHECK_EQ(c.pages_free, st.pages_free);
	CHECK_OK(ruma_bm_close(s.bm));
	/* and the same after a reopen */
	CHECK_OK(store_open(&s, false));
	CHECK_OK(ruma_btree_check_store(s.bm, collect, &s, &c));
	CHECK_EQ(c.trees, NTREES);
	CHECK_OK(ruma_bm_close(s.bm));
	store_remove(&s);
	return TEST_PASS;
}

/* The root of tree alpha (a low page id: created right after the catalog). */
static int alpha_root(store *s, ruma_pid *root)
{
	ruma_btree *bt;
	CHECK_OK(ruma_btree_open(s->bm, tree_names[0], &bt));
	*root = ruma_btree_root(bt);
	ruma_btree_release(bt);
	return TEST_PASS;
}

/* A linked page freed in memory: its contents stay resident, so every tree
 * passes on its own, but the allocator would hand the page out again. */
static int t_reachable_freed(void)
{
	store s;
	ruma_pid root;
	void *page;
	if (store_build(&s) != TEST_PASS || alpha_root(&s, &root) != TEST_PASS)
		return TEST_FAIL;
	CHECK_OK(ruma_bm_fix_x(s.bm, root, &page));
	CHECK_OK(ruma_bm_free(s.bm, root));
	CHECK_OK(trees_pass_alone(&s));
	ruma_btree_store_check c;
	CHECK_EQ(ruma_btree_check_store(s.bm, collect, &s, &c), RUMA_ECORRUPT);
	CHECK_EQ(c.reached_unallocated, 1);
	CHECK_EQ(c.pages_leaked, 0);
	CHECK(strstr(s.last, "1 problem(s)"));
	CHECK_OK(ruma_bm_close(s.bm));
	store_remove(&s);
	return TEST_PASS;
}

/* Page 0 crafted (checksum recomputed) to mark a linked page free: it opens
 * (page 0 is consistent in itself), and the check names the page. */
static int t_reachable_free_page0(void)
{
	store s;
	ruma_pid root;
	if (store_build(&s) != TEST_PASS || alpha_root(&s, &root) != TEST_PASS)
		return TEST_FAIL;
	CHECK_OK(ruma_bm_close(s.bm));
	struct bm_meta_hdr h;
	uint64_t w0;
	CHECK_OK(page0_read(s.path, &h, &w0));
	CHECK(root < 64 && root >= h.meta_pages && !(w0 & (1ull << root)));
	h.free_count++;
	CHECK_OK(page0_craft(s.path, h, w0 | (1ull << root)));
	CHECK_OK(store_open(&s, false));
	ruma_btree_store_check c;
	char want[96];
	snprintf(want, sizeof want, "page %" PRIu64 ": reachable but marked free", (uint64_t)root);
	bool named = false;
	CHECK_EQ(ruma_btree_check_store(s.bm, find_line, &(struct find){ &named, want }, &c),
		 RUMA_ECORRUPT);
	CHECK(named);
	CHECK_EQ(c.reached_unallocated, 1);
	CHECK_OK(ruma_bm_close(s.bm));
	store_remove(&s);
	return TEST_PASS;
}

static int t_leak(void)
{
	store s;
	ruma_pid pid;
	void *page;
	if (store_build(&s) != TEST_PASS)
		return TEST_FAIL;
	CHECK_OK(ruma_bm_alloc(s.bm, &pid, &page));
	ruma_bm_unfix_x(s.bm, pid); /* linked nowhere */
	CHECK_OK(ruma_bm_close(s.bm));
	CHECK_OK(store_open(&s, false));
	CHECK_OK(trees_pass_alone(&s));
	ruma_btree_store_check c;
	s.lines = 0;
	CHECK_EQ(ruma_btree_check_store(s.bm, collect, &s, &c), RUMA_ECORRUPT);
	CHECK_EQ(c.pages_leaked, 1);
	CHECK_EQ(c.reached_unallocated, 0);
	CHECK_EQ(s.lines, 2); /* "1 pages leaked ...", "1 problem(s)" */
	CHECK_OK(ruma_bm_close(s.bm));
	store_remove(&s);
	return TEST_PASS;
}

/* The catalog entry of tree beta pointed at alpha's root: each tree passes
 * on its own, the store check finds alpha's pages reached twice. */
static int t_shared_tree(void)
{
	store s;
	ruma_pid root;
	uint64_t v;
	if (store_build(&s) != TEST_PASS || alpha_root(&s, &root) != TEST_PASS)
		return TEST_FAIL;
	CHECK_OK(ruma_bm_meta_get(s.bm, RUMA_BTREE_META_SLOT, &v));
	CHECK(v != 0);
	ruma_btree cat = { .bm = s.bm, .root = v - 1 };
	CHECK_OK(ruma_btree_upsert(&cat, tree_names[1], strlen(tree_names[1]), &root, sizeof root,
				   NULL));
	CHECK_OK(trees_pass_alone(&s));
	bool named = false;
	CHECK_EQ(ruma_btree_check_store(s.bm, find_line,
					&(struct find){ &named, "reached a second time" }, NULL),
		 RUMA_ECORRUPT);
	CHECK(named);
	CHECK_OK(ruma_bm_close(s.bm));
	store_remove(&s);
	return TEST_PASS;
}

static int t_bad_args(void)
{
	CHECK_EQ(ruma_btree_check_store(NULL, NULL, NULL, NULL), -EINVAL);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "clean", t_clean },
	{ "reachable_freed", t_reachable_freed },
	{ "reachable_free_page0", t_reachable_free_page0 },
	{ "leak", t_leak },
	{ "shared_tree", t_shared_tree },
	{ "bad_args", t_bad_args },
};

int main(int argc, char **argv)
{
	return test_main("btree_store_check", cases, TEST_N(cases), argc, argv);
}
