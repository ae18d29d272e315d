/*
 * catalog.c — the trees of a store: the catalog tree (its root in the
 * buffer manager's meta slot RUMA_BTREE_META_SLOT, created on first use)
 * maps each tree's name to its root page; ruma_btree_create adds a tree,
 * ruma_btree_open finds one, ruma_btree_list scans the names, and each of
 * them first installs the tree's check of every page read from the store
 * and undoes the transactions a crash cut off (txn.c), once per store.
 * Handles are small heap objects; the catalog itself is an ordinary tree
 * of btree.c.
 *
 * Above the tree operations and the transactions (btree.c, txn.c), so that
 * recovery at open never calls back into a file below it.  No system calls
 * of its own.
 */
#include "btree/btree_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* node_check as the buffer manager's check of every page read from the
 * store (ruma_bm_set_page_check): every data page of a store the tree uses
 * is a node. */
static const char *page_check(const void *page, ruma_pid pid_lo, ruma_pid pid_hi)
{
	return node_check(page, pid_lo, pid_hi);
}

/* Serialises creating the catalog (the only step that is not a tree operation). */
static pthread_mutex_t catalog_lock = PTHREAD_MUTEX_INITIALIZER;

/* A new empty leaf page, unlatched; its pid in *pid. */
static int new_root(ruma_bm *bm, ruma_pid *pid)
{
	void *page;
	int rc = ruma_bm_alloc(bm, pid, &page);
	if (rc)
		return rc;
	node_init(page, 0, NULL, 0, NULL, 0);
	ruma_bm_unfix_x(bm, *pid);
	return 0;
}

static int catalog_root(ruma_bm *bm, bool create, ruma_pid *root)
{
	uint64_t v = 0;
	int rc = ruma_bm_meta_get(bm, RUMA_BTREE_META_SLOT, &v);
	if (rc || v) {
		*root = v - 1;
		return rc;
	}
	if (!create)
		return RUMA_ENOTFOUND;
	pthread_mutex_lock(&catalog_lock);
	rc = ruma_bm_meta_get(bm, RUMA_BTREE_META_SLOT, &v);
	if (rc == 0 && v == 0) {
		ruma_pid pid;
		rc = new_root(bm, &pid);
		if (rc == 0)
			rc = ruma_bm_meta_set(bm, RUMA_BTREE_META_SLOT, pid + 1);
		v = pid + 1;
	}
	pthread_mutex_unlock(&catalog_lock);
	*root = v - 1;
	return rc;
}

static int new_handle(ruma_bm *bm, ruma_pid root, bool pages_checked, ruma_btree **out)
{
	ruma_btree *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->bm = bm;
	t->root = root;
	t->pages_checked = pages_checked;
	atomic_init(&t->read_ahead, RUMA_BTREE_READ_AHEAD);
	*out = t;
	return 0;
}

int ruma_btree_set_read_ahead(ruma_btree *t, unsigned leaves)
{
	if (!t || leaves > RUMA_BM_AIO_MAX)
		return -EINVAL;
	atomic_store_explicit(&t->read_ahead, leaves, memory_order_relaxed);
	return 0;
}

static int check_name(const char *name)
{
	if (!name)
		return -EINVAL;
	size_t len = strlen(name);
	return len == 0 || len > RUMA_BTREE_MAX_NAME ? -EINVAL : 0;
}

int ruma_btree_create(ruma_bm *bm, const char *name, ruma_btree **out)
{
	int rc = check_name(name);
	if (rc)
		return rc;
	bool checked = ruma_bm_set_page_check(bm, page_check);
	if ((rc = bt_txn_recover(bm)))
		return rc;
	ruma_btree cat = { .bm = bm, .pages_checked = checked }, *t;
	if ((rc = catalog_root(bm, true, &cat.root)))
		return rc;
	if ((rc = new_handle(bm, 0, checked, &t)))
		return rc;
	if ((rc = new_root(bm, &t->root))) {
		free(t);
		return rc;
	}
	rc = ruma_btree_insert(&cat, name, strlen(name), &t->root, sizeof t->root);
	if (rc) {
		void *page;
		if (ruma_bm_fix_x(bm, t->root, &page) == 0) {
			int rc2 = ruma_bm_free(bm, t->root);
			(void)rc2;
		}
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int ruma_btree_open(ruma_bm *bm, const char *name, ruma_btree **out)
{
	int rc = check_name(name);
	if (rc)
		return rc;
	bool checked = ruma_bm_set_page_check(bm, page_check);
	if ((rc = bt_txn_recover(bm)))
		return rc;
	ruma_btree cat = { .bm = bm, .pages_checked = checked };
	if ((rc = catalog_root(bm, false, &cat.root)))
		return rc;
	ruma_pid pid;
	size_t len = 0;
	rc = ruma_btree_lookup(&cat, name, strlen(name), &pid, sizeof pid, &len);
	if (rc == -ENOBUFS || (rc == 0 && len != sizeof pid))
		return bt_corrupt(&cat, cat.root, BT_DMG_NODE);
	if (rc)
		return rc;
	return new_handle(bm, pid, checked, out);
}

int ruma_btree_list(ruma_bm *bm, ruma_btree_scan_fn fn, void *ctx)
{
	int rc = bm && fn ? bt_txn_recover(bm) : -EINVAL;
	if (rc)
		return rc;
	ruma_btree cat = { .bm = bm };
	rc = catalog_root(bm, false, &cat.root);
	if (rc == RUMA_ENOTFOUND)
		return 0; /* no catalog: no trees */
	return rc ? rc : ruma_btree_scan_asc(&cat, NULL, 0, fn, ctx);
}

void ruma_btree_release(ruma_btree *t)
{
	free(t);
}
