/*
 * fixture.h — setup/teardown pairs for the stores tests run against, on top
 * of the temporary directories of test.h (header-only):
 *
 *   test_alloc_live          the bytes an allocator still has live
 *   test_store_fixture       for test_main_fixture: a temporary directory
 *                            test_dir per case, the store's path in it
 *                            test_store_path
 *   test_bm_config           a buffer manager's configuration for a small
 *                            test store (the fields most tests set)
 *   test_bm_reopen           close a buffer manager and open its store
 *                            again (fresh = false)
 *   test_db_open             a db.h store with a given pool, and
 *   test_db_tables           tables created in it in one transaction
 *   test_tree_setup/_reopen/_teardown
 *                            a fresh store in its own temporary directory
 *                            with one B-tree in it; reopen closes and opens
 *                            both again (fresh = false); teardown closes
 *                            and removes everything
 *
 *     test_tree f;
 *     CHECK_OK(test_tree_setup(&f, "btree", "random", 1 << 16, 1 << 12));
 *     ... f.t, f.bm ...
 *     CHECK_OK(test_tree_teardown(&f));
 *
 * A failed CHECK between test_tree_setup and _teardown leaves the directory
 * behind (the case's verdict matters more than the clean-up); the per-case
 * test_store_fixture removes its directory whatever the verdict.  Each part
 * is there when the test's layer sees its module's header (a test of the
 * buffer manager gets no B-tree fixture: the build's include roots keep the
 * layers).
 */
#ifndef RUMA_TEST_FIXTURE_H
#define RUMA_TEST_FIXTURE_H

#include "test.h"

/* ---- a temporary store per case ---------------------------------------- */

static char test_dir[64];	   /* the case's temporary directory */
static char test_store_path[128]; /* "<test_dir>/store" */

/* Setup: a fresh test_dir named after the module, test_store_path in it. */
static inline int test_store_setup(void)
{
	return test_dir_make(test_dir, sizeof(test_dir), test_module ? test_module : "store",
			     TEST_PATH(test_store_path, "store"), NULL);
}

/* Teardown: test_dir and everything in it removed. */
static inline void test_store_teardown(void)
{
	test_dir_remove(test_dir);
}

static const struct test_fixture test_store_fixture = { test_store_setup, test_store_teardown };

/* ---- allocators -------------------------------------------------------------- */

#if __has_include(<ruma/alloc.h>)
#include <ruma/alloc.h>

/* test_alloc_live — the bytes a still has live (its statistics). */
static inline uint64_t test_alloc_live(ruma_alloc *a)
{
	ruma_alloc_stats st;
	ruma_alloc_get_stats(a, &st);
	return st.bytes_live;
}
#endif /* ruma/alloc.h */

/* ---- buffer managers -------------------------------------------------------- */

#if __has_include(<ruma/bm.h>)
#include <ruma/bm.h>

/*
 * test_bm_config — c = the defaults, with the store at path, virt_pages of
 * address space, phys_pages of pool (pages of RUMA_BM_PAGE_SIZE), an
 * eviction batch of 8, 8 threads at most, fresh.  Tests change what they
 * test after it.
 */
static inline void test_bm_config(ruma_bm_config *c, const char *path, uint64_t virt_pages,
				  uint64_t phys_pages)
{
	ruma_bm_config_default(c);
	c->path = path;
	c->virt_bytes = virt_pages * RUMA_BM_PAGE_SIZE;
	c->phys_bytes = phys_pages * RUMA_BM_PAGE_SIZE;
	c->batch = 8;
	c->max_threads = 8;
	c->fresh = true;
}

/*
 * test_bm_reopen — close *bm, then open c's store again with c->fresh set
 * to false: 0 or the first error (with a message).
 */
static inline int test_bm_reopen(ruma_bm_config *c, ruma_bm **bm)
{
	int rc = ruma_bm_close(*bm);
	if (rc != 0) {
		fprintf(stderr, "  test_bm_reopen: close: %s\n", ruma_strerror(rc));
		return rc;
	}
	c->fresh = false;
	if ((rc = ruma_bm_open(c, bm)) != 0)
		fprintf(stderr, "  test_bm_reopen: open: %s\n", ruma_strerror(rc));
	return rc;
}

#endif /* ruma/bm.h */

/* ---- a store with one B-tree ------------------------------------------------ */

#if __has_include(<ruma/btree.h>)
#include <ruma/btree.h>

/* A store in a temporary directory, its buffer manager and one tree in it. */
typedef struct test_tree {
	char dir[64];
	char path[128];
	const char *name; /* the tree's name in the catalog, or NULL: none */
	ruma_bm_config cfg;
	ruma_bm *bm;
	ruma_btree *t;
} test_tree;

/*
 * test_tree_setup — a fresh store "<dir>/store" (dir from test_dir_make with
 * tag) configured by test_bm_config with virt_pages and phys_pages, and the
 * tree `name` created in it (none when name is NULL).  Returns 0 or the failing call's error (the
 * directory is removed then).  f->cfg may be changed before test_tree_reopen.
 */
static inline int test_tree_setup(test_tree *f, const char *tag, const char *name,
				  uint64_t virt_pages, uint64_t phys_pages)
{
	memset(f, 0, sizeof(*f));
	f->name = name;
	if (test_dir_make(f->dir, sizeof(f->dir), tag, f->path, sizeof(f->path), "store", NULL))
		return -EIO;
	test_bm_config(&f->cfg, f->path, virt_pages, phys_pages);
	int rc = ruma_bm_open(&f->cfg, &f->bm);
	if (rc == 0 && name && (rc = ruma_btree_create(f->bm, name, &f->t)) != 0)
		ruma_bm_close(f->bm);
	if (rc != 0) {
		fprintf(stderr, "  test_tree_setup %s: %s\n", tag, ruma_strerror(rc));
		test_dir_remove(f->dir);
	}
	return rc;
}

/* test_tree_close — release the tree and close the store: the close's result. */
static inline int test_tree_close(test_tree *f)
{
	if (f->t)
		ruma_btree_release(f->t);
	f->t = NULL;
	int rc = f->bm ? ruma_bm_close(f->bm) : 0;
	f->bm = NULL;
	return rc;
}

/*
 * test_tree_reopen — close the store (test_tree_close), open it again with
 * f->cfg and fresh = false, and open the tree by its name (if it has one).  Returns the
 * first error.
 */
static inline int test_tree_reopen(test_tree *f)
{
	int rc = test_tree_close(f);
	if (rc != 0)
		return rc;
	f->cfg.fresh = false;
	if ((rc = ruma_bm_open(&f->cfg, &f->bm)) != 0)
		return rc;
	return f->name ? ruma_btree_open(f->bm, f->name, &f->t) : 0;
}

/* test_tree_teardown — test_tree_close, then remove the directory; the close's result. */
static inline int test_tree_teardown(test_tree *f)
{
	int rc = test_tree_close(f);
	test_dir_remove(f->dir);
	return rc;
}

#endif /* ruma/btree.h */

/* ---- db.h stores ------------------------------------------------------------- */

#if __has_include(<ruma/db.h>)
#include <ruma/db.h>

/* test_db_open — open (creating) the store at path with the default options
 * but a pool of pool_bytes: 0 or the error of ruma_db_open. */
static inline int test_db_open(const char *path, size_t pool_bytes, ruma_db **db)
{
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = pool_bytes;
	return ruma_db_open(path, &o, db);
}

/*
 * test_db_tables — in one transaction of db, create the tables named by the
 * NULL-terminated list of (const char *name, ruma_db_table **handle) pairs
 * and commit.  Returns 0 or the first error (the transaction is aborted).
 */
static inline int test_db_tables(ruma_db *db, ...)
{
	ruma_db_txn *x;
	va_list ap;
	int rc = ruma_db_begin(db, 0, &x);

	if (rc != 0)
		return rc;
	va_start(ap, db);
	for (const char *name; rc == 0 && (name = va_arg(ap, const char *));) {
		ruma_db_table **t = va_arg(ap, ruma_db_table **);
		rc = ruma_db_table_open(x, name, RUMA_DB_CREATE, t);
	}
	va_end(ap);
	if (rc != 0) {
		ruma_db_abort(x);
		return rc;
	}
	return ruma_db_commit(x);
}

#endif /* ruma/db.h */

#endif
