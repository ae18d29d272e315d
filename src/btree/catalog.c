/*
 * catalog.c — the trees of a store: the catalog tree (its root in the
 * buffer manager's meta slot RUMA_BTREE_META_SLOT, created on first use)
 * maps each tree's name to its root page; ruma_btree_create adds a tree,
 * ruma_btree_open finds one, ruma_btree_list scans the names, and each of
 * them first installs the tree's check of every page read from the store
 * and undoes the transactions a crash cut off (txn.c), once per store.
 * Handles are small heap objects; the catalog itself is an ordinary tree
 * of btree.c, checked before it is followed (catalog_check: an allocated
 * catalog node down to its leftmost leaf; no slot while data pages are in
 * use is damage too).  A tree is dropped bottom-up, one page per logged
 * step (bt_drop_tree, drop.h).
 *
 * Above the tree operations and the transactions (btree.c, txn.c), so that
 * recovery at open never calls back into a file below it.  No system calls
 * of its own.
 */
#include "btree/btree_int.h"
#include "btree/drop.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
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

static int __attribute__((format(printf, 2, 3))) catalog_damaged(ruma_bm *bm, const char *fmt, ...)
{
	char line[384];
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(line, sizeof(line), "btree: the catalog is damaged: ");
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	ruma_bm_report(bm, line);
	return RUMA_ECORRUPT;
}

/* Is the node a catalog: a tree node (node_check) whose entries, in a
 * leaf, are names of 1..RUMA_BTREE_MAX_NAME bytes with a page id each?
 * NULL, or what is wrong. */
static const char *catalog_node_problem(const node *n, ruma_pid pid_hi)
{
	const char *why = node_check(n, 1, pid_hi);
	for (unsigned i = 0; !why && node_is_leaf(n) && i < n->count; i++) {
		uint8_t key[NODE_KEYBUF];
		unsigned vlen = 0;
		bool bad = false;
		unsigned klen = node_full_key(n, i, key, &bad);
		(void)node_value(n, i, &vlen, &bad);
		if (bad || klen > RUMA_BTREE_MAX_NAME || vlen != sizeof(ruma_pid))
			why = "an entry is not a tree name with a page id";
	}
	return why;
}

/* The catalog root page 0 names, checked before anything follows it: an
 * allocated data page holding a catalog node, and so is every node on the
 * way down to its leftmost leaf (levels one apart). */
static int catalog_check(ruma_bm *bm, ruma_pid root)
{
	ruma_pid pid = root;
	for (int level = -1;;) {
		ruma_bm_page_state st = ruma_bm_page_state_of(bm, pid);
		if (st != RUMA_BM_PAGE_USED)
			return catalog_damaged(bm, "its root (page %" PRIu64 ", named by page 0) "
					       "leads to page %" PRIu64 ", which is %s",
					       (uint64_t)root, (uint64_t)pid, bt_page_state_name(st));
		void *page;
		int rc = ruma_bm_fix_s(bm, pid, &page);
		if (rc == RUMA_ECORRUPT)
			return catalog_damaged(bm, "page %" PRIu64 " was refused when read",
					       (uint64_t)pid);
		if (rc)
			return rc;
		const node *n = page;
		const char *why = catalog_node_problem(n, ruma_bm_high_water(bm));
		if (!why && level >= 0 && n->level + 1 != level)
			why = "a level is not one below its parent's";
		bool bad = false, leaf = !why && node_is_leaf(n);
		ruma_pid next = why || leaf ? 0 : node_child_at(n, 0, &bad);
		level = n->level;
		ruma_bm_unfix_s(bm, pid);
		if (why)
			return catalog_damaged(bm, "page %" PRIu64 " (from its root, page %" PRIu64
					       ") is no catalog node: %s",
					       (uint64_t)pid, (uint64_t)root, why);
		if (leaf)
			return 0;
		pid = next;
	}
}

/* Page 0 names no catalog: then no data page may be in use, but for one
 * empty node (a crash between the allocation of a new catalog's root and
 * page 0 naming it leaks that page).  A catalog made now on top of data
 * pages would leak them and let a caller load its data again.  Called with
 * catalog_lock held (a catalog being created has a page and no slot yet). */
static int catalog_absent_check(ruma_bm *bm)
{
	uint64_t hw = ruma_bm_high_water(bm), used = 0;
	ruma_pid first = 0;
	for (ruma_pid pid = 0; pid < hw && used < 2; pid++)
		if (ruma_bm_page_state_of(bm, pid) == RUMA_BM_PAGE_USED && used++ == 0)
			first = pid;
	if (used == 0)
		return 0;
	void *page;
	int rc = used == 1 ? ruma_bm_fix_s(bm, first, &page) : RUMA_ECORRUPT;
	if (rc == 0) {
		bool empty = ((const node *)page)->count == 0 && node_valid(page);
		ruma_bm_unfix_s(bm, first);
		rc = empty ? 0 : RUMA_ECORRUPT;
	}
	if (rc != RUMA_ECORRUPT)
		return rc;
	return catalog_damaged(bm, "page 0 names no catalog root, but data pages are in use "
			       "(the first: page %" PRIu64 "); no catalog is made on top of them",
			       (uint64_t)first);
}

/* The catalog's root, checked (catalog_check, catalog_absent_check); made
 * when there is none and create is set, else RUMA_ENOTFOUND. */
static int catalog_root(ruma_bm *bm, bool create, ruma_pid *root)
{
	uint64_t v = 0;
	int rc = ruma_bm_meta_get(bm, RUMA_BTREE_META_SLOT, &v);
	if (rc || v) {
		*root = v - 1;
		return rc ? rc : catalog_check(bm, v - 1);
	}
	pthread_mutex_lock(&catalog_lock);
	rc = ruma_bm_meta_get(bm, RUMA_BTREE_META_SLOT, &v);
	if (rc == 0 && v == 0)
		rc = catalog_absent_check(bm);
	if (rc == 0 && v == 0 && !create)
		rc = RUMA_ENOTFOUND;
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
	ruma_bm_get_hints(bm, &t->hints);
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

/* What create and open do first: check the name, install the page check,
 * undo what a crash cut off, and find (or, with create, make) the catalog. */
static int catalog_enter(ruma_bm *bm, const char *name, bool create, ruma_btree *cat)
{
	int rc = check_name(name);
	if (rc)
		return rc;
	memset(cat, 0, sizeof(*cat));
	cat->bm = bm;
	cat->pages_checked = ruma_bm_set_page_check(bm, page_check);
	ruma_bm_set_page_hole(bm, node_hole); /* full page images leave the gap out */
	if ((rc = bt_txn_recover(bm)))
		return rc;
	return catalog_root(bm, create, &cat->root);
}

int ruma_btree_create(ruma_bm *bm, const char *name, ruma_btree **out)
{
	ruma_btree cat, *t;
	int rc = catalog_enter(bm, name, true, &cat);
	if (rc)
		return rc;
	if ((rc = new_handle(bm, 0, cat.pages_checked, &t)))
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
	ruma_btree cat;
	int rc = catalog_enter(bm, name, false, &cat);
	if (rc)
		return rc;
	ruma_pid pid;
	size_t len = 0;
	rc = ruma_btree_lookup(&cat, name, strlen(name), &pid, sizeof pid, &len);
	if (rc == -ENOBUFS || (rc == 0 && len != sizeof pid))
		return bt_corrupt(&cat, cat.root, BT_DMG_NODE);
	if (rc)
		return rc;
	return new_handle(bm, pid, cat.pages_checked, out);
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

/* ---- dropping a tree (drop.h) ------------------------------------------------------------------ */

/* The steps of a drop between two ruma_bm_op_end: what one operation's
 * wait for the log covers. */
#define BT_DROP_STEPS_PER_OP 256u

/* Remove the first child of inner node p (latched exclusively): its first
 * slot, or, when only `upper` is left, turn p into an empty leaf with the
 * same fences. */
static void unlink_first(node *p)
{
	if (p->count) {
		node_remove_at(p, 0);
		return;
	}
	uint8_t lower[NODE_KEYBUF], upper[NODE_KEYBUF];
	size_t llen = p->lower_len, ulen = p->upper_len;
	bool inf = node_upper_inf(p);
	memcpy(lower, node_lower(p), llen);
	if (!inf)
		memcpy(upper, node_upper_key(p), ulen);
	node_init(p, 0, lower, llen, inf ? NULL : upper, ulen);
}

/* One step of a drop: from the root down the first children to the first
 * inner node whose first child is a leaf; that leaf is unlinked and freed
 * while both are latched exclusively, so the step is one log record.  *done
 * when the root is a leaf (the tree's last page).  A tree between steps is
 * one a drop can go on with (every page it reaches allocated, a node, levels
 * falling), not one to search: the separators no longer match the
 * children's fences. */
static int drop_step(ruma_btree *t, bool *done)
{
	ruma_bm *bm = t->bm;
	ruma_pid ppid = t->root, hw = ruma_bm_high_water(bm);
	void *pp, *cp;
	int rc = ruma_bm_fix_x(bm, ppid, &pp);
	if (rc)
		return bt_read_failed(t, ppid, rc);
	for (;;) {
		node *p = pp;
		bool bad = !node_valid(p);
		if (!bad && node_is_leaf(p)) {
			ruma_bm_unfix_x(bm, ppid);
			*done = true;
			return 0;
		}
		ruma_pid cpid = bad ? 0 : node_child_at(p, 0, &bad);
		if (bad || cpid >= hw) {
			ruma_bm_unfix_x(bm, ppid);
			return bt_corrupt(t, ppid, bad ? BT_DMG_NODE : BT_DMG_CHILD);
		}
		if ((rc = ruma_bm_fix_x(bm, cpid, &cp))) {
			ruma_bm_unfix_x(bm, ppid);
			return bt_read_failed(t, cpid, rc);
		}
		node *c = cp;
		/* an inner node emptied by an earlier step is an empty leaf */
		bool emptied = node_is_leaf(c) && c->count == 0 && c->level < p->level;
		if (!node_valid(c) || (c->level + 1 != p->level && !emptied)) {
			ruma_bm_unfix_x(bm, cpid);
			ruma_bm_unfix_x(bm, ppid);
			return bt_corrupt(t, cpid, node_valid(c) ? BT_DMG_LEVEL : BT_DMG_NODE);
		}
		if (node_is_leaf(c)) {
			unlink_first(p);
			bt_count(&t->pages_freed);
			rc = ruma_bm_free(bm, cpid);
			ruma_bm_unfix_x(bm, ppid);
			return rc;
		}
		ruma_bm_unfix_x(bm, ppid);
		ppid = cpid;
		pp = cp;
	}
}

/* The catalog leaf that holds name, latched exclusively (descending with
 * exclusive latches, parent before child), in *pid / *page, its position in
 * *pos; RUMA_ENOTFOUND (no latch held) when name is not there. */
static int catalog_leaf_x(ruma_btree *cat, const char *name, ruma_pid *pid, void **page,
			  unsigned *pos)
{
	ruma_bm *bm = cat->bm;
	size_t len = strlen(name);
	ruma_pid hw = ruma_bm_high_water(bm), at = cat->root;
	void *pg, *cp;
	int rc = ruma_bm_fix_x(bm, at, &pg);
	if (rc)
		return bt_read_failed(cat, at, rc);
	for (;;) {
		node *n = pg;
		bool found = false, bad = !node_valid(n);
		unsigned i = bad ? 0 : node_lower_bound(n, (const uint8_t *)name, len, &found, &bad);
		ruma_pid child = bad || node_is_leaf(n) ? 0 : node_child_at(n, i, &bad);
		if (!bad && node_is_leaf(n) && found) {
			*pid = at;
			*page = pg;
			*pos = i;
			return 0;
		}
		if (bad || child >= hw || node_is_leaf(n)) {
			ruma_bm_unfix_x(bm, at);
			return bad || child >= hw ? bt_corrupt(cat, at, BT_DMG_NODE) : RUMA_ENOTFOUND;
		}
		if ((rc = ruma_bm_fix_x(bm, child, &cp))) {
			ruma_bm_unfix_x(bm, at);
			return bt_read_failed(cat, child, rc);
		}
		ruma_bm_unfix_x(bm, at);
		at = child;
		pg = cp;
	}
}

/* Remove name's catalog entry and free its root in one logged step (both
 * latched exclusively when the root is freed): no crash leaves the entry
 * naming a freed page or the root leaked. */
static int catalog_unlink(ruma_btree *t, const char *name)
{
	ruma_btree cat = { .bm = t->bm, .pages_checked = t->pages_checked };
	ruma_pid leaf = 0, root;
	void *pg = NULL, *rp;
	unsigned pos = 0, vlen = 0;
	bool bad = false;
	int rc = catalog_root(t->bm, false, &cat.root);
	if (!rc)
		rc = catalog_leaf_x(&cat, name, &leaf, &pg, &pos);
	if (rc)
		return rc;
	const uint8_t *v = node_value(pg, pos, &vlen, &bad);
	if (bad || vlen != sizeof(root) || (memcpy(&root, v, sizeof(root)), root != t->root)) {
		ruma_bm_unfix_x(t->bm, leaf);
		return bt_corrupt(&cat, leaf, BT_DMG_NODE);
	}
	if ((rc = ruma_bm_fix_x(t->bm, root, &rp))) {
		ruma_bm_unfix_x(t->bm, leaf);
		return bt_read_failed(t, root, rc);
	}
	node_remove_at(pg, pos);
	bt_count(&t->pages_freed);
	rc = ruma_bm_free(t->bm, root);
	ruma_bm_unfix_x(t->bm, leaf);
	return rc;
}

int bt_drop_tree(ruma_bm *bm, const char *name)
{
	ruma_btree *t;
	int rc = ruma_btree_open(bm, name, &t);
	if (rc)
		return rc;
	bool done = false;
	for (unsigned n = 1; !rc && !done; n++) {
		rc = drop_step(t, &done);
		if (n % BT_DROP_STEPS_PER_OP == 0) /* (in SYNC mode: durable so far) */
			rc = ruma_bm_op_end(bm, rc);
	}
	if (!rc)
		rc = catalog_unlink(t, name);
	ruma_btree_release(t);
	return ruma_bm_op_end(bm, rc);
}
