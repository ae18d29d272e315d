/*
 * btree.c — B-tree operations on the buffer manager: optimistic descent,
 * insert/upsert/lookup/update/remove, splits (root split in place), merges
 * of leaves and of inner nodes, root collapse, and ascending/descending
 * scans.
 *
 * Concurrency (optimistic lock coupling): a descent reads each node under an
 * optimistic version, reads the child pid, validates the parent (so the pid
 * is not garbage), takes the child's version and validates the parent again
 * (so the child was the parent's child when its version was taken).  Every
 * value read optimistically is bounds-checked first (node_plausible, slot
 * checks); a check that fails on a page that then validates means the page
 * really is corrupt (RUMA_ECORRUPT), otherwise the attempt restarts.
 *
 * Every loop that follows a page id read from a page ends on any page
 * contents: a descent goes down exactly one level per step and must reach a
 * node whose fences hold its key; a scan moves strictly forward (each next
 * leaf holds the key after the previous one, each key returned is beyond
 * the previous one); a merge never latches a page it already holds.  A
 * failed check on a stable page is RUMA_ECORRUPT, recorded in the handle
 * with the page id (ruma_btree_last_corruption).
 * Writers upgrade only the nodes they modify to exclusive latches, always
 * top-down and left to right (parent, left, right); a failed upgrade
 * releases everything and restarts from the root.  Restarts never leave
 * this file; every other buffer-manager error is returned.
 *
 * Root: the root pid never changes.  A root split moves the root's entries
 * into two new pages and makes the root an inner node one level higher; a
 * root left with a single child absorbs that child (height shrinks).
 *
 * No system calls of its own (sched_yield after repeated restarts); pages
 * come from ruma_bm_alloc and go back with ruma_bm_free.
 *
 * The files of src/btree, bottom-up (each calls only files before it,
 * scripts/check_calls.py): node.c (the page format), readahead.c (a scan's
 * read-ahead), this file (the tree operations and scans), batch.c (batched
 * lookups), txn.c (transactions and their recovery), catalog.c (the
 * catalog: create, open, list; recovery runs there) and check.c (the
 * checkers and the shape statistics).
 */
#include "btree/btree_int.h"
#include "btree/spot.h"

#include <ruma/core.h>

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>

/* initial-exec, as bm_declaring_mtr (mtr.c): a plain %fs load in the
 * shared library too */
__thread __attribute__((tls_model("initial-exec"))) uint64_t bt_write_mark;

/* Stamp the exclusively latched leaf n with this thread's write mark (not
 * logged: a mark means nothing to the process that recovers the store). */
static inline void leaf_mark(node *n)
{
	uint64_t m = bt_write_mark;
	if (RUMA_UNLIKELY(m > n->upper)) {
		n->upper = m;
		ruma_bm_wrote_unlogged(&n->upper, sizeof(n->upper));
	}
}

/* descend(): no node at the requested level on the key's path */
#define NO_LEVEL 1
/* put_attempt(): a split was made, try again (not a restart) */
#define SPLIT_DONE 2

typedef struct path {
	ruma_pid pid;
	uint64_t ver;
	node *n;
	bool has_parent;
	ruma_pid ppid;
	uint64_t pver;
	node *p;
	unsigned ppos; /* n is p's child at this position */
} path;

/* Back off after a restart: retry at once the first times, then give the
 * core away (the latch holder may be waiting for I/O or be preempted; with
 * more threads than cores, spinning only delays it). */
static void restart_pause(ruma_btree *t, unsigned *tries)
{
	bt_count(&t->restarts);
	if (++*tries > 2)
		sched_yield();
}

static const char *const damage_names[] = {
	[BT_DMG_NODE] = "node header, slot or heap out of bounds",
	[BT_DMG_CHILD] = "child page id outside the store",
	[BT_DMG_LEVEL] = "node level is not one below its parent's",
	[BT_DMG_FENCES] = "fence keys do not hold the key its parent routes to it "
			  "(the page is not where its parent says)",
	[BT_DMG_ORDER] = "keys do not move strictly forward (a scan would repeat or skip)",
	[BT_DMG_SIBLING] = "merge partners are not distinct pages",
	[BT_DMG_ROOT] = "the tree's root page id (from the catalog) is outside the store",
	[BT_DMG_CHECK] = "the invariant checker found problems",
	[BT_DMG_READ] = "page refused when read from the store (checksum, page id or node "
			"structure; the store's message says which)",
};

#define DAMAGE_SHIFT 56

int bt_corrupt(ruma_btree *t, ruma_pid pid, enum bt_damage why)
{
	uint64_t word = (uint64_t)why << DAMAGE_SHIFT | (pid & ((1ull << DAMAGE_SHIFT) - 1));
	atomic_store_explicit(&t->damage, word, memory_order_relaxed);
	if (!atomic_flag_test_and_set(&t->damage_said)) {
		char line[256];
		snprintf(line, sizeof(line), "btree: page %" PRIu64 ": %s", (uint64_t)pid,
			 damage_names[why]);
		ruma_bm_report(t->bm, line);
	}
	return RUMA_ECORRUPT;
}

const char *ruma_btree_last_corruption(const ruma_btree *t, ruma_pid *pid)
{
	uint64_t word = atomic_load_explicit(&t->damage, memory_order_relaxed);
	unsigned why = (unsigned)(word >> DAMAGE_SHIFT);
	if (why == 0 || why >= sizeof damage_names / sizeof damage_names[0])
		return NULL;
	if (pid)
		*pid = word & ((1ull << DAMAGE_SHIFT) - 1);
	return damage_names[why];
}

static const char *const page_state_name[] = {
	[RUMA_BM_PAGE_META] = "a metadata page",
	[RUMA_BM_PAGE_USED] = "allocated",
	[RUMA_BM_PAGE_FREE] = "marked free in the free-space bitmap",
	[RUMA_BM_PAGE_BEYOND] = "beyond the high-water mark",
};

const char *bt_page_state_name(ruma_bm_page_state st)
{
	return page_state_name[st];
}

int bt_read_failed(ruma_btree *t, ruma_pid pid, int rc)
{
	return rc == RUMA_ECORRUPT ? bt_corrupt(t, pid, BT_DMG_READ) : rc;
}

/* After a failed check on an optimistic page: restart unless the page is
 * stable, in which case the data itself is bad. */
static int olc_fail(ruma_btree *t, ruma_pid pid, uint64_t ver, enum bt_damage why)
{
	int rc = ruma_bm_validate(t->bm, pid, ver);
	return rc ? rc : bt_corrupt(t, pid, why);
}

static int check_key(size_t klen)
{
	if (klen == 0)
		return -EINVAL;
	if (klen > RUMA_BTREE_MAX_KEY)
		return RUMA_ETOOBIG;
	return 0;
}

static int check_entry(size_t klen, size_t vlen)
{
	int rc = check_key(klen);
	if (rc)
		return rc;
	if (vlen > RUMA_BTREE_MAX_VALUE || klen + vlen > RUMA_BTREE_MAX_ENTRY)
		return RUMA_ETOOBIG;
	return 0;
}

/* Bytes of a descent's child loaded ahead: header, search hints and the
 * first slots (more lines measured no better). */
#define DESCENT_HINT_BYTES 192u

/*
 * descend_path — optimistic descent from the root to the node at `level` on the
 * path of key (or, with `last`, the right-most path).  Call between
 * olc_enter and olc_leave.  Returns 0 with *out filled (nothing latched;
 * out->ver is the node's version), NO_LEVEL if the tree is lower than
 * `level`, RUMA_RESTART, RUMA_ECORRUPT or a bm error.
 *
 * Termination on any page contents: each step must go down exactly one
 * level, so a descent takes at most 255 steps and a child pointer leading
 * back up (a cycle) fails the level check.  descend adds the check that the
 * node reached holds the key in its fences (the right-most path: end at +infinity): the parent was
 * validated after the node's version was taken, so parent and node were a
 * consistent pair, and if the node is still at that version a key outside
 * its fences means the page is not where its parent says (one page written
 * over another) — RUMA_ECORRUPT, while a changed node is a restart.
 */
static int descend_path(ruma_btree *t, const uint8_t *key, size_t klen, bool last, unsigned level,
			path *out)
{
	ruma_bm *bm = t->bm;
	ruma_pid pid = t->root;
	uint64_t ver;
	void *page;
	int rc = ruma_bm_optimistic(bm, pid, &ver, &page);
	if (rc)
		return rc == -EINVAL ? bt_corrupt(t, pid, BT_DMG_ROOT) : bt_read_failed(t, pid, rc);
	node *n = page;
	unsigned plevel = 0; /* the parent's level, read before it was validated */
	out->has_parent = false;
	for (;;) {
		if (!node_plausible(n))
			return olc_fail(t, pid, ver, BT_DMG_NODE);
		if (out->has_parent && n->level + 1u != plevel)
			return olc_fail(t, pid, ver, BT_DMG_LEVEL);
		if (n->level <= level) {
			out->pid = pid;
			out->ver = ver;
			out->n = n;
			if (n->level < level) {
				rc = ruma_bm_validate(bm, pid, ver);
				return rc ? rc : NO_LEVEL;
			}
			return 0;
		}
		bool found, bad = false;
		unsigned pos = last ? n->count : node_lower_bound(n, key, klen, &found, &bad);
		ruma_pid child = node_child_at(n, pos, &bad);
		plevel = n->level;
		if (bad)
			return olc_fail(t, pid, ver, BT_DMG_NODE);
		/* The child's latch word and head do not depend on each other:
		 * start loading both before either is read, so that their misses
		 * overlap (a tree larger than the CPU cache: one thread's random
		 * lookups 1.00-1.22x in four runs, docs/bench/vmcache.md) */
		ruma_bm_hint_head(&t->hints, child, DESCENT_HINT_BYTES);
		uint64_t cver;
		void *cpage;
		/* validates the parent before it acts on child (waits, reads) */
		if ((rc = ruma_bm_optimistic_child(bm, pid, ver, child, &cver, &cpage)))
			/* -EINVAL: a stable pid outside the store */
			return rc == -EINVAL ? bt_corrupt(t, pid, BT_DMG_CHILD) : bt_read_failed(t, child, rc);
		if ((rc = ruma_bm_validate(bm, pid, ver)))
			return rc;
		out->has_parent = true;
		out->ppid = pid;
		out->pver = ver;
		out->p = n;
		out->ppos = pos;
		pid = child;
		ver = cver;
		n = cpage;
	}
}

/* The node reached must hold the key in its fences (see above). */
static int check_fences(ruma_btree *t, const uint8_t *key, size_t klen, bool last, const path *p)
{
	if (last ? !node_upper_inf(p->n) : !node_covers(p->n, key, klen))
		return olc_fail(t, p->pid, p->ver, BT_DMG_FENCES);
	return 0;
}

/* descend_path, then the fence check of the node reached. */
static int descend(ruma_btree *t, const uint8_t *key, size_t klen, bool last, unsigned level,
		   path *out)
{
	int rc = descend_path(t, key, klen, last, level, out);
	return rc ? rc : check_fences(t, key, klen, last, out);
}

/* descend + olc bracket, retrying restarts. */
static int descend_retry(ruma_btree *t, const uint8_t *key, size_t klen, bool last,
			 unsigned level, path *out)
{
	unsigned tries = 0;
	for (;;) {
		olc_enter();
		int rc = descend(t, key, klen, last, level, out);
		olc_leave();
		if (rc != RUMA_RESTART)
			return rc;
		restart_pause(t, &tries);
	}
}

/* ---- splits ------------------------------------------------------------------------------ */

static int split_level(ruma_btree *t, const uint8_t *key, size_t klen, unsigned level);

/* Where key would be inserted into the (latched) node n, for the split
 * policy (node_find_split); NODE_POS_NONE for inner nodes. */
static unsigned insert_pos(const node *n, const uint8_t *key, size_t klen)
{
	bool found, bad = false;
	return node_is_leaf(n) ? node_lower_bound(n, key, klen, &found, &bad) : NODE_POS_NONE;
}

/* Root split: the root's entries move into two new pages; the root becomes
 * their parent one level up.  The root is latched exclusively. */
static int split_root(ruma_btree *t, node *root, unsigned ipos)
{
	ruma_pid lpid, rpid;
	void *lpage, *rpage;
	int rc = ruma_bm_alloc(t->bm, &lpid, &lpage);
	if (rc)
		return rc;
	if ((rc = ruma_bm_alloc(t->bm, &rpid, &rpage))) {
		int rc2 = ruma_bm_free(t->bm, lpid);
		(void)rc2;
		return rc;
	}
	uint8_t sep[NODE_KEYBUF];
	unsigned left_count;
	unsigned slen = node_find_split(root, ipos, &left_count, sep);
	node_split_into(root, left_count, sep, slen, lpage, rpage);
	unsigned level = root->level + 1u;
	bool leaf = node_is_leaf(root);
	node_init(root, level, NULL, 0, NULL, 0);
	node_insert_at(root, 0, sep, slen, &lpid, sizeof lpid);
	root->upper = rpid;
	ruma_bm_wrote(root, NODE_PAGE);
	ruma_bm_unfix_x(t->bm, lpid);
	ruma_bm_unfix_x(t->bm, rpid);
	bt_count(&t->root_splits);
	bt_count(leaf ? &t->leaf_splits : &t->inner_splits);
	return 0;
}

/* Does a new separator sep (from splitting the child at position ppos of the
 * validated parent) go exactly at ppos, strictly between the parent's
 * separators around that child and inside its fences?  *pos: where. */
static bool separator_fits(const node *parent, unsigned ppos, const uint8_t *sep, unsigned slen,
			   unsigned *pos)
{
	bool found, bad = false;
	if (!node_covers(parent, sep, slen))
		return false;
	*pos = node_lower_bound(parent, sep, slen, &found, &bad);
	return !found && !bad && *pos == ppos;
}

/*
 * split_node — split p->n (found by an optimistic descent, nothing latched).
 * The node keeps its pid and becomes the right half (its upper fence, and so
 * the parent's entry for it, is unchanged); a new page takes the left half
 * and the separator → new page goes into the parent.  If the parent lacks
 * room, the parent is split first and 0 is returned: the caller retries.
 */
static int split_node(ruma_btree *t, path *p, const uint8_t *key, size_t klen)
{
	ruma_bm *bm = t->bm;
	int rc;
	if (!p->has_parent) {
		if ((rc = ruma_bm_upgrade_x(bm, p->pid, p->ver)))
			return rc;
		rc = p->n->count >= 2 && bt_node_trusted(t, p->n)
			     ? split_root(t, p->n, insert_pos(p->n, key, klen))
			     : bt_corrupt(t, p->pid, BT_DMG_NODE);
		ruma_bm_unfix_x(bm, p->pid);
		return rc;
	}
	if ((rc = ruma_bm_upgrade_x(bm, p->ppid, p->pver)))
		return rc;
	if ((rc = ruma_bm_upgrade_x(bm, p->pid, p->ver))) {
		ruma_bm_unfix_x(bm, p->ppid);
		return rc;
	}
	node *n = p->n, *parent = p->p;
	bool parent_ok = bt_node_trusted(t, parent);
	if (n->count < 2 || !parent_ok || !bt_node_trusted(t, n)) {
		ruma_bm_unfix_x(bm, p->pid);
		ruma_bm_unfix_x(bm, p->ppid);
		return bt_corrupt(t, parent_ok ? p->pid : p->ppid, BT_DMG_NODE);
	}
	uint8_t sep[NODE_KEYBUF];
	unsigned left_count;
	unsigned slen = node_find_split(n, insert_pos(n, key, klen), &left_count, sep);
	unsigned pos;
	if (!separator_fits(parent, p->ppos, sep, slen, &pos)) {
		/* the node's keys are not where the parent routes it */
		ruma_bm_unfix_x(bm, p->pid);
		ruma_bm_unfix_x(bm, p->ppid);
		return bt_corrupt(t, p->pid, BT_DMG_FENCES);
	}
	if (node_free_total(parent) < node_entry_size(parent, slen, sizeof(uint64_t))) {
		unsigned plevel = parent->level;
		ruma_bm_unfix_x(bm, p->pid);
		ruma_bm_unfix_x(bm, p->ppid);
		return split_level(t, key, klen, plevel);
	}
	ruma_pid lpid;
	void *lpage;
	if ((rc = ruma_bm_alloc(bm, &lpid, &lpage))) {
		ruma_bm_unfix_x(bm, p->pid);
		ruma_bm_unfix_x(bm, p->ppid);
		return rc;
	}
	_Alignas(8) uint8_t right[NODE_PAGE];
	node_split_into(n, left_count, sep, slen, lpage, (node *)right);
	bool leaf = node_is_leaf(n);
	memcpy(n, right, NODE_PAGE);
	ruma_bm_wrote(n, NODE_PAGE);
	node_insert_at(parent, pos, sep, slen, &lpid, sizeof lpid);
	ruma_bm_unfix_x(bm, lpid);
	ruma_bm_unfix_x(bm, p->pid);
	ruma_bm_unfix_x(bm, p->ppid);
	bt_count(leaf ? &t->leaf_splits : &t->inner_splits);
	return 0;
}

/* Make sure the node at `level` on key's path has room for one more
 * separator (splitting it if not).  0 when done or nothing to do. */
static int split_level(ruma_btree *t, const uint8_t *key, size_t klen, unsigned level)
{
	unsigned tries = 0;
	for (;;) {
		path p;
		olc_enter();
		int rc = descend(t, key, klen, false, level, &p);
		bool roomy = rc == 0 &&
			     node_free_total(p.n) >= NODE_SLOT + RUMA_BTREE_MAX_KEY + sizeof(uint64_t);
		olc_leave();
		if (rc == NO_LEVEL)
			return 0;
		if (rc && rc != RUMA_RESTART)
			return rc;
		if (rc == RUMA_RESTART) {
			/* retry below */
		} else if (roomy) {
			rc = ruma_bm_validate(t->bm, p.pid, p.ver);
			if (rc == 0)
				return 0;
		} else {
			rc = split_node(t, &p, key, klen);
			if (rc != RUMA_RESTART)
				return rc;
		}
		restart_pause(t, &tries);
	}
}

/* ---- merges ------------------------------------------------------------------------------- */

/* The root has a single child (no separators): take over the child's
 * contents and free the child page.  Both are latched exclusively; the
 * child's latch is gone afterwards. */
static int collapse_root(ruma_btree *t, node *root, ruma_pid cpid, node *child)
{
	memcpy(root, child, NODE_PAGE);
	ruma_bm_wrote(root, NODE_PAGE);
	bt_count(&t->root_collapses);
	bt_count(&t->pages_freed);
	return ruma_bm_free(t->bm, cpid);
}

static void unfix3(ruma_bm *bm, ruma_pid a, ruma_pid b, ruma_pid c)
{
	ruma_bm_unfix_x(bm, c);
	ruma_bm_unfix_x(bm, b);
	ruma_bm_unfix_x(bm, a);
}

/* Latch a sibling found through the exclusively latched parent. */
static int latch_sibling(ruma_btree *t, ruma_pid pid, node **n)
{
	uint64_t ver;
	void *page;
	int rc = ruma_bm_optimistic(t->bm, pid, &ver, &page);
	if (rc)
		return rc;
	if ((rc = ruma_bm_upgrade_x(t->bm, pid, ver)))
		return rc;
	*n = page;
	return 0;
}

/* Do the validated siblings meet at the parent's separator between them
 * (left's upper fence and right's lower fence both equal to it)?  Then the
 * merged node's keys are ordered and share the prefix of its fences. */
static bool siblings_meet(const node *left, const node *right, const uint8_t *sep,
			  unsigned slen)
{
	return !node_upper_inf(left) && left->upper_len == slen && right->lower_len == slen &&
	       memcmp(node_upper_key(left), sep, slen) == 0 &&
	       memcmp(node_lower(right), sep, slen) == 0;
}

#define MERGE_SAME 1u
#define MERGE_UP 2u

/* The merge is built in `merged`: write it into the right page rpid
 * (latched with the parent and the left page lpid, the parent's children
 * lpos and lpos + 1), drop the parent's entry for the left page and free
 * it, collapse a root left with one child; *next as merge_once says.
 * Every latch is released. */
static int merge_finish(ruma_btree *t, const path *p, unsigned lpos, ruma_pid lpid,
			ruma_pid rpid, const uint8_t *merged, node *right, unsigned *next)
{
	ruma_bm *bm = t->bm;
	node *parent = p->p;
	memcpy(right, merged, NODE_PAGE);
	ruma_bm_wrote(right, NODE_PAGE);
	node_remove_at(parent, lpos);
	bt_count(right->level == 0 ? &t->leaf_merges : &t->inner_merges);
	bt_count(&t->pages_freed);
	int rc = ruma_bm_free(bm, lpid);
	if (p->ppid == t->root && parent->count == 0) {
		int rc2 = collapse_root(t, parent, rpid, right);
		ruma_bm_unfix_x(bm, p->ppid);
		return rc ? rc : rc2;
	}
	if (p->ppid != t->root && node_underfull(parent))
		*next |= MERGE_UP;
	if (node_underfull(right) && parent->count > 0)
		*next |= MERGE_SAME;
	ruma_bm_unfix_x(bm, rpid);
	ruma_bm_unfix_x(bm, p->ppid);
	return rc;
}

/*
 * merge_once — the node at `level` on key's path is under-full: merge it
 * with its right sibling under the same parent (with its left sibling if it
 * is the parent's right-most child).  The result goes into the right page,
 * whose parent entry (keyed by its upper fence) stays valid; the parent's
 * entry for the left page is removed and the left page freed.  For inner
 * nodes the parent's separator comes down between the two halves.
 * *next gets MERGE_SAME when the merged node is still under-full and has a
 * sibling (merge it again: an empty node left beside it by a merge that did
 * not fit is taken in), MERGE_UP when the parent is left under-full (merge
 * one level up).
 */
static int merge_once(ruma_btree *t, const uint8_t *key, size_t klen, unsigned level,
		      unsigned *next)
{
	ruma_bm *bm = t->bm;
	path p;
	int rc;
	*next = 0;
	olc_enter();
	rc = descend(t, key, klen, false, level, &p);
	if (rc) {
		olc_leave();
		return rc == NO_LEVEL ? 0 : rc;
	}
	if (!p.has_parent || !node_underfull(p.n)) {
		olc_leave();
		return ruma_bm_validate(bm, p.pid, p.ver);
	}
	node *parent = p.p;
	unsigned lpos = p.ppos;
	bool node_is_left = lpos < parent->count;
	if (!node_is_left) {
		if (parent->count == 0) {
			olc_leave();
			return ruma_bm_validate(bm, p.ppid, p.pver);
		}
		lpos--;
	}
	olc_leave();
	if ((rc = ruma_bm_upgrade_x(bm, p.ppid, p.pver)))
		return rc;
	bool bad = false;
	ruma_pid lpid = node_child_at(parent, lpos, &bad);
	ruma_pid rpid = node_child_at(parent, lpos + 1, &bad);
	/* the sibling is latched next: if it were a page held already (a slot
	 * pointing at the node again or at the parent), that would wait forever */
	ruma_pid sibling = node_is_left ? rpid : lpid;
	if (bad || sibling == p.pid || sibling == p.ppid) {
		ruma_bm_unfix_x(bm, p.ppid);
		return bt_corrupt(t, p.ppid, bad ? BT_DMG_NODE : BT_DMG_SIBLING);
	}
	node *left, *right;
	if (node_is_left) {
		if ((rc = ruma_bm_upgrade_x(bm, p.pid, p.ver))) {
			ruma_bm_unfix_x(bm, p.ppid);
			return rc;
		}
		left = p.n;
		if ((rc = latch_sibling(t, rpid, &right))) {
			ruma_bm_unfix_x(bm, p.pid);
			ruma_bm_unfix_x(bm, p.ppid);
			return rc;
		}
	} else {
		if ((rc = latch_sibling(t, lpid, &left))) {
			ruma_bm_unfix_x(bm, p.ppid);
			return rc;
		}
		if ((rc = ruma_bm_upgrade_x(bm, p.pid, p.ver))) {
			ruma_bm_unfix_x(bm, lpid);
			ruma_bm_unfix_x(bm, p.ppid);
			return rc;
		}
		right = p.n;
	}
	if (left->level != level || right->level != level) {
		unfix3(bm, p.ppid, lpid, rpid);
		return bt_corrupt(t, left->level != level ? lpid : rpid, BT_DMG_LEVEL);
	}
	if (!bt_node_trusted(t, parent) || !bt_node_trusted(t, left) ||
	    !bt_node_trusted(t, right)) {
		unfix3(bm, p.ppid, lpid, rpid);
		return bt_corrupt(t, !node_valid(parent) ? p.ppid : !node_valid(left) ? lpid : rpid,
				  BT_DMG_NODE);
	}
	uint8_t sep[NODE_KEYBUF];
	unsigned slen = node_full_key(parent, lpos, sep, &bad);
	if (!bad && !siblings_meet(left, right, sep, slen)) {
		unfix3(bm, p.ppid, lpid, rpid);
		return bt_corrupt(t, lpid, BT_DMG_FENCES);
	}
	_Alignas(8) uint8_t merged[NODE_PAGE];
	if (bad || !node_merge_into(left, right, sep, slen, (node *)merged)) {
		unfix3(bm, p.ppid, lpid, rpid);
		return bad ? bt_corrupt(t, p.ppid, BT_DMG_NODE) : 0;
	}
	return merge_finish(t, &p, lpos, lpid, rpid, merged, right, next);
}

/* Merge the under-full node at `level` on key's path (again while the
 * result is under-full: each merge frees a page, so this ends), then its
 * parent if that became under-full, and so on up. */
static int merge_up(ruma_btree *t, const uint8_t *key, size_t klen, unsigned level)
{
	unsigned tries = 0, up = 0;
	for (;;) {
		unsigned next;
		int rc = merge_once(t, key, klen, level, &next);
		if (rc == RUMA_RESTART) {
			restart_pause(t, &tries);
			continue;
		}
		if (rc)
			return rc;
		up |= next & MERGE_UP;
		if (next & MERGE_SAME)
			continue;
		if (!up)
			return 0;
		up = 0;
		level++;
	}
}

/* ---- point operations ----------------------------------------------------------------------- */

enum put_mode { PUT_INSERT, PUT_UPSERT };

struct put_hook {
	bt_before_put fn; /* NULL: none */
	void *ctx;
};

static int put_attempt(ruma_btree *t, const uint8_t *key, size_t klen, const void *val,
		       size_t vlen, enum put_mode mode, bool *replaced, const struct put_hook *h)
{
	path p;
	olc_enter();
	int rc = descend(t, key, klen, false, 0, &p);
	if (rc) {
		olc_leave();
		return rc;
	}
	node *n = p.n;
	bool found, bad = false;
	unsigned pos = node_lower_bound(n, key, klen, &found, &bad);
	unsigned have = node_free_total(n);
	if (found) {
		unsigned vl;
		node_value(n, pos, &vl, &bad);
		have += NODE_SLOT + n->slot[pos].klen + vl;
	}
	bool fits = klen >= n->prefix_len && have >= node_entry_size(n, klen, vlen);
	olc_leave();
	if (bad)
		return olc_fail(t, p.pid, p.ver, BT_DMG_NODE);
	if (found && mode == PUT_INSERT) {
		rc = ruma_bm_validate(t->bm, p.pid, p.ver);
		return rc ? rc : RUMA_EEXISTS;
	}
	if (!fits) {
		rc = split_node(t, &p, key, klen);
		return rc ? rc : SPLIT_DONE;
	}
	if ((rc = ruma_bm_upgrade_x(t->bm, p.pid, p.ver)))
		return rc;
	bool in_place = found && n->slot[pos].vlen == vlen; /* an overwrite of the same length */
	if (!node_heap_ok(n) || (!in_place && node_free_contig(n) < node_entry_size(n, klen, vlen) &&
				 !bt_node_trusted(t, n))) {
		/* the insert would overwrite the fences, or compact a page that
		 * is not what it claims */
		ruma_bm_unfix_x(t->bm, p.pid);
		return bt_corrupt(t, p.pid, BT_DMG_NODE);
	}
	if (h->fn) {
		unsigned vl = 0;
		const void *old = found ? node_value(n, pos, &vl, &bad) : NULL;
		rc = bad ? bt_corrupt(t, p.pid, BT_DMG_NODE) : h->fn(h->ctx, found, old, vl);
		if (rc) {
			ruma_bm_unfix_x(t->bm, p.pid);
			return rc;
		}
	}
	leaf_mark(n);
	if (in_place) {
		node_set_value(n, pos, val, vlen);
	} else {
		if (found)
			node_remove_at(n, pos);
		node_insert_at(n, pos, key, klen, val, vlen);
	}
	ruma_bm_unfix_x(t->bm, p.pid);
	if (replaced)
		*replaced = found;
	return 0;
}

static int put(ruma_btree *t, const void *key, size_t klen, const void *val, size_t vlen,
	       enum put_mode mode, bool *replaced, const struct put_hook *h)
{
	int rc = check_entry(klen, vlen);
	if (rc)
		return rc;
	if (vlen && !val)
		return -EINVAL;
	unsigned tries = 0;
	ruma_bm_op_declare(t->bm);
	for (;;) {
		rc = put_attempt(t, key, klen, val, vlen, mode, replaced, h);
		if (rc == SPLIT_DONE)
			continue;
		if (rc != RUMA_RESTART)
			return rc;
		restart_pause(t, &tries);
	}
}

static const struct put_hook no_hook = { NULL, NULL };

int ruma_btree_insert(ruma_btree *t, const void *key, size_t klen, const void *val, size_t vlen)
{
	return ruma_bm_op_end(t->bm, put(t, key, klen, val, vlen, PUT_INSERT, NULL, &no_hook));
}

int ruma_btree_upsert(ruma_btree *t, const void *key, size_t klen, const void *val, size_t vlen,
		      bool *replaced)
{
	return ruma_bm_op_end(t->bm, put(t, key, klen, val, vlen, PUT_UPSERT, replaced, &no_hook));
}

int bt_put(ruma_btree *t, const void *key, size_t klen, const void *val, size_t vlen,
	   bool insert_only, bt_before_put hook, void *ctx)
{
	struct put_hook h = { hook, ctx };
	return ruma_bm_op_end(t->bm, put(t, key, klen, val, vlen,
					 insert_only ? PUT_INSERT : PUT_UPSERT, NULL, &h));
}

/* Optimistic point read: copy the value of key into buf (if it fits cap). */
static int read_attempt(ruma_btree *t, const uint8_t *key, size_t klen, void *buf, size_t cap,
			size_t *vlen, uint64_t *mark)
{
	path p;
	olc_enter();
	int rc = descend_path(t, key, klen, false, 0, &p);
	if (rc) {
		olc_leave();
		return rc;
	}
	bool found, bad = false;
	unsigned pos = node_lower_bound(p.n, key, klen, &found, &bad);
	unsigned vl = 0;
	/* A key found in the leaf lies in its fences (lower < k <= upper holds
	 * for every key of a node), so only a miss needs the fence check. */
	if (!found && !bad && (rc = check_fences(t, key, klen, false, &p))) {
		olc_leave();
		return rc;
	}
	if (found && !bad) {
		const uint8_t *v = node_value(p.n, pos, &vl, &bad);
		if (vl <= cap && vl)
			memcpy(buf, v, vl);
	}
	if (mark)
		*mark = p.n->upper;
	olc_leave();
	if ((rc = ruma_bm_validate(t->bm, p.pid, p.ver)))
		return rc;
	if (bad)
		return bt_corrupt(t, p.pid, BT_DMG_NODE);
	if (!found)
		return RUMA_ENOTFOUND;
	*vlen = vl;
	return vl > cap ? -ENOBUFS : 0;
}

/* Inlined into each caller, so that a NULL mark costs nothing. */
__attribute__((always_inline)) static inline int read_value(ruma_btree *t, const void *key,
							    size_t klen, void *buf, size_t cap,
							    size_t *vlen, uint64_t *mark)
{
	int rc = check_key(klen);
	if (rc)
		return rc;
	unsigned tries = 0;
	for (;;) {
		rc = read_attempt(t, key, klen, buf, cap, vlen, mark);
		if (rc != RUMA_RESTART)
			return rc;
		restart_pause(t, &tries);
	}
}

/* ruma_btree_lookup and bt_lookup_mark, inlined into each. */
__attribute__((always_inline)) static inline int lookup(ruma_btree *t, const void *key,
							size_t klen, void *buf, size_t cap,
							size_t *vlen, uint64_t *mark)
{
	size_t len = 0;
	if (!buf)
		cap = 0;
	int rc = read_value(t, key, klen, buf, cap, &len, mark);
	if (vlen && (rc == 0 || rc == -ENOBUFS))
		*vlen = len;
	return rc;
}

int bt_lookup_mark(ruma_btree *t, const void *key, size_t klen, void *buf, size_t cap,
		   size_t *vlen, uint64_t *mark)
{
	return lookup(t, key, klen, buf, cap, vlen, mark);
}

int ruma_btree_lookup(ruma_btree *t, const void *key, size_t klen, void *buf, size_t cap,
		      size_t *vlen)
{
	return lookup(t, key, klen, buf, cap, vlen, NULL);
}

int ruma_btree_lookup_fn(ruma_btree *t, const void *key, size_t klen, ruma_btree_value_fn fn,
			 void *ctx)
{
	uint8_t copy[RUMA_BTREE_MAX_VALUE];
	size_t len = 0;
	if (!fn)
		return -EINVAL;
	int rc = read_value(t, key, klen, copy, sizeof copy, &len, NULL);
	if (rc == -ENOBUFS)
		rc = RUMA_ECORRUPT; /* a stored value is never above the maximum */
	if (rc == 0)
		fn(copy, len, ctx);
	return rc;
}

/*
 * leaf_entry_x — descend to key's leaf and latch it exclusively if key is
 * there: 0 with *pos (the caller unfixes p->pid), RUMA_ENOTFOUND,
 * RUMA_RESTART, or an error.
 */
static int leaf_entry_x(ruma_btree *t, const uint8_t *key, size_t klen, path *p, unsigned *pos)
{
	olc_enter();
	int rc = descend_path(t, key, klen, false, 0, p);
	if (rc) {
		olc_leave();
		return rc;
	}
	bool found, bad = false;
	*pos = node_lower_bound(p->n, key, klen, &found, &bad);
	if (!found && !bad) /* as in read_attempt: a key found lies in the fences */
		rc = check_fences(t, key, klen, false, p);
	olc_leave();
	if (rc)
		return rc;
	if (bad)
		return olc_fail(t, p->pid, p->ver, BT_DMG_NODE);
	if (!found) {
		rc = ruma_bm_validate(t->bm, p->pid, p->ver);
		return rc ? rc : RUMA_ENOTFOUND;
	}
	return ruma_bm_upgrade_x(t->bm, p->pid, p->ver);
}

/* fn's change of the value v (vl bytes) in a logged store, named for the
 * log as the one range from its first to its last changed 8-byte word. */
static void update_declared(uint8_t *v, unsigned vl, void (*fn)(void *val, size_t vlen, void *ctx),
			    void *ctx)
{
	uint8_t old[RUMA_BTREE_MAX_VALUE];
	unsigned lo = 0, hi = vl;
	uint64_t a, b;

	memcpy(old, v, vl);
	fn(v, vl, ctx);
	for (; lo + 8 <= vl; lo += 8) {
		memcpy(&a, old + lo, 8);
		memcpy(&b, v + lo, 8);
		if (a != b)
			break;
	}
	for (; hi >= lo + 8; hi -= 8) {
		memcpy(&a, old + hi - 8, 8);
		memcpy(&b, v + hi - 8, 8);
		if (a != b)
			break;
	}
	if (hi > lo && memcmp(old + lo, v + lo, hi - lo))
		ruma_bm_wrote(v + lo, hi - lo);
}

static int update_attempt(ruma_btree *t, const uint8_t *key, size_t klen,
			  void (*fn)(void *val, size_t vlen, void *ctx), void *ctx, bool fn_names)
{
	path p;
	unsigned pos, vl;
	int rc = leaf_entry_x(t, key, klen, &p, &pos);
	if (rc)
		return rc;
	bool bad = false;
	uint8_t *v = (uint8_t *)node_value(p.n, pos, &vl, &bad);
	if (!bad)
		leaf_mark(p.n);
	if (!bad && !fn_names && vl <= RUMA_BTREE_MAX_VALUE && ruma_bm_logging(t->bm))
		update_declared(v, vl, fn, ctx);
	else if (!bad)
		fn(v, vl, ctx);
	ruma_bm_unfix_x(t->bm, p.pid);
	return bad ? bt_corrupt(t, p.pid, BT_DMG_NODE) : 0;
}

int ruma_btree_update(ruma_btree *t, const void *key, size_t klen,
		      void (*fn)(void *val, size_t vlen, void *ctx), void *ctx)
{
	return bt_update(t, key, klen, fn, ctx, false);
}

int bt_update(ruma_btree *t, const void *key, size_t klen,
	      void (*fn)(void *val, size_t vlen, void *ctx), void *ctx, bool fn_names)
{
	int rc = check_key(klen);
	if (rc)
		return rc;
	if (!fn)
		return -EINVAL;
	unsigned tries = 0;
	ruma_bm_op_declare(t->bm);
	for (;;) {
		rc = update_attempt(t, key, klen, fn, ctx, fn_names);
		if (rc != RUMA_RESTART)
			return ruma_bm_op_end(t->bm, rc);
		restart_pause(t, &tries);
	}
}

static int remove_attempt(ruma_btree *t, const uint8_t *key, size_t klen, bool *underfull)
{
	path p;
	unsigned pos;
	int rc = leaf_entry_x(t, key, klen, &p, &pos);
	if (rc)
		return rc;
	leaf_mark(p.n);
	node_remove_at(p.n, pos);
	*underfull = p.has_parent && node_underfull(p.n);
	ruma_bm_unfix_x(t->bm, p.pid);
	return 0;
}

int ruma_btree_remove(ruma_btree *t, const void *key, size_t klen)
{
	int rc = check_key(klen);
	if (rc)
		return rc;
	unsigned tries = 0;
	bool underfull = false;
	ruma_bm_op_declare(t->bm);
	for (;;) {
		rc = remove_attempt(t, key, klen, &underfull);
		if (rc != RUMA_RESTART)
			break;
		restart_pause(t, &tries);
	}
	if (rc == 0 && underfull)
		rc = merge_up(t, key, klen, 0);
	return ruma_bm_op_end(t->bm, rc);
}

/* ---- scans ------------------------------------------------------------------------------------- */

/*
 * A scan latches one leaf at a time (shared) and finds the next one by
 * descending again from the root: ascending with the smallest key above the
 * leaf's upper fence (fence + 0x00), descending with its lower fence.  It
 * stops on any page contents, concurrent changes or not:
 *   - descend() only returns a leaf whose fences hold the search key, so
 *     ascending each leaf's upper fence is strictly above the previous one's
 *     and descending each lower fence strictly below: a leaf is never
 *     visited twice and a step that does not move is RUMA_ECORRUPT (a
 *     concurrent split or merge only restarts the descent);
 *   - every key passed to fn is strictly beyond the previous one (the first
 *     one not before the start key), checked as it is built.  Under the
 *     shared latch a leaf is stable, and consistent leaves always pass
 *     (ascending the next leaf's keys are > the previous upper fence >= the
 *     keys returned; descending < the previous lower fence < the keys
 *     returned), so the check fails only on damaged pages.
 */
typedef struct scan_state {
	ruma_btree *t;
	ruma_btree_scan_fn fn;
	void *ctx;
	bool desc;
	bool bounded;   /* key[last] bounds the next key ... */
	bool inclusive; /* ... which may equal it (the start key) */
	unsigned last;
	unsigned klen[2];
	uint8_t key[2][NODE_KEYBUF]; /* the key returned last and the next one */
	uint8_t cur[NODE_KEYBUF];    /* search key of the next leaf */
	size_t clen;
	bt_spot *spot;               /* where fn stopped goes here (NULL: nowhere) */
	uint64_t *mark;              /* the current leaf's mark goes here (NULL: nowhere) */
} scan_state;

/* Latch (shared) the leaf for key, or the right-most leaf with `last`. */
static int leaf_shared(ruma_btree *t, const uint8_t *key, size_t klen, bool last, path *p)
{
	unsigned tries = 0;
	for (;;) {
		int rc = descend_retry(t, key, klen, last, 0, p);
		if (rc)
			return rc;
		rc = ruma_bm_upgrade_s(t->bm, p->pid, p->ver);
		if (rc != RUMA_RESTART)
			return rc;
		restart_pause(t, &tries);
	}
}

/* The child of p's parent after (desc: before) p, read optimistically
 * (*pos: its position); 0 where there is none, p is at its parent's edge
 * or the read was torn.  The caller validates the parent. */
static ruma_pid sibling_child(const path *p, bool desc, unsigned *pos)
{
	if (!p->has_parent || (desc && p->ppos == 0))
		return 0;
	bool bad = false;
	ruma_pid c = 0;
	*pos = desc ? p->ppos - 1 : p->ppos + 1;
	olc_enter();
	if (*pos <= p->p->count)
		c = node_child_at(p->p, *pos, &bad);
	olc_leave();
	return bad ? 0 : c;
}

/*
 * The leaf after (desc: before) prev's in scan order, latched shared and
 * reached through prev's parent: one step instead of a descent from the
 * root.  The parent's version, read by the descent that found prev, is
 * validated after the sibling's id is read and again once the sibling is
 * latched: a split or merge of either leaf changes the parent, so an
 * unchanged parent means the sibling still holds the keys after prev's.
 * RUMA_RESTART when that cannot be done (no parent, prev at its edge, the
 * parent changed): the caller descends with the search key instead.  The
 * sibling gets a descent's checks (a leaf whose fences hold the scan's
 * next search key), so a page written over another is RUMA_ECORRUPT here
 * too.
 */
static int sibling_shared(ruma_btree *t, const path *prev, bool desc, const uint8_t *key,
			  size_t klen, path *p)
{
	unsigned pos;
	ruma_pid c = sibling_child(prev, desc, &pos);
	if (!c || ruma_bm_validate(t->bm, prev->ppid, prev->pver))
		return RUMA_RESTART;
	uint64_t ver;
	void *page;
	int rc = ruma_bm_optimistic_child(t->bm, prev->ppid, prev->pver, c, &ver, &page);
	if (rc == -EINVAL) /* a stable pid outside the store, as in a descent */
		return bt_corrupt(t, prev->ppid, BT_DMG_CHILD);
	if (rc)
		return rc == RUMA_RESTART ? rc : bt_read_failed(t, c, rc);
	if ((rc = ruma_bm_upgrade_s(t->bm, c, ver)))
		return rc;
	if (ruma_bm_validate(t->bm, prev->ppid, prev->pver)) {
		ruma_bm_unfix_s(t->bm, c);
		return RUMA_RESTART;
	}
	const node *n = page;
	enum bt_damage why = !node_plausible(n) ? BT_DMG_NODE
			     : n->level != 0 ? BT_DMG_LEVEL
			     : !node_covers(n, key, klen) ? BT_DMG_FENCES : 0;
	if (why) {
		ruma_bm_unfix_s(t->bm, c);
		return bt_corrupt(t, c, why);
	}
	*p = *prev;
	p->pid = c;
	p->ver = ver;
	p->n = page;
	p->ppos = pos;
	return 0;
}

/* Visit entry pos of the shared-latched leaf (pid, n); *stop when fn says so. */
static int visit(scan_state *s, ruma_pid pid, const node *n, unsigned pos, bool *stop)
{
	unsigned next = s->last ^ 1u, vlen;
	bool bad = false;
	unsigned klen = node_full_key(n, pos, s->key[next], &bad);
	const uint8_t *v = node_value(n, pos, &vlen, &bad);
	if (bad)
		return bt_corrupt(s->t, pid, BT_DMG_NODE);
	if (s->bounded) {
		int c = node_keycmp(s->key[next], klen, s->key[s->last], s->klen[s->last]);
		if (s->desc ? c > 0 || (c == 0 && !s->inclusive) : c < 0 || (c == 0 && !s->inclusive))
			return bt_corrupt(s->t, pid, BT_DMG_ORDER);
	}
	s->last = next;
	s->klen[next] = klen;
	s->bounded = true;
	s->inclusive = false;
	*stop = !s->fn(s->key[next], klen, v, vlen, s->ctx);
	return 0;
}

/* Start loading the whole heap of a leaf into the CPU cache before its
 * entries are visited: its entries lie in no order the hardware
 * prefetcher follows, and each visit would otherwise wait for its own
 * lines (measured: YCSB E, 1 KB values, 1.3x the scans per second). */
static void heap_hint(const node *n)
{
	/* two lines a step (from the 128-byte boundary at or below the heap):
	 * half the loop's instructions for the same lines */
	for (unsigned o = n->data_offset & ~127u; o < NODE_PAGE; o += 128) {
		__builtin_prefetch((const char *)n + o);
		__builtin_prefetch((const char *)n + o + 64);
	}
}

/* Where fn stopped: entry idx of p's leaf. */
static void spot_keep(bt_spot *sp, bool desc, const path *p, unsigned idx)
{
	*sp = (bt_spot){ .valid = true, .desc = desc, .idx = idx, .pid = p->pid, .ver = p->ver,
			 .leaf = p->n, .has_parent = p->has_parent, .ppid = p->ppid,
			 .pver = p->pver, .parent = p->p, .ppos = p->ppos };
}

/*
 * Latch the leaf of sp shared again, if its version is the one the scan
 * that kept sp saw (so its contents are too) and the entry fn stopped at
 * holds key; *p gets the scan's path back and *pos the position scan_leaf
 * goes on from (the entry after the stopping one in the scan direction).
 * RUMA_RESTART otherwise: the caller descends with the key.
 */
static int spot_resume(ruma_btree *t, const bt_spot *sp, bool desc, const uint8_t *key,
		       size_t klen, path *p, unsigned *pos)
{
	if (!sp->valid || sp->desc != desc || ruma_bm_upgrade_s(t->bm, sp->pid, sp->ver))
		return RUMA_RESTART;
	const node *n = sp->leaf;
	uint8_t k[NODE_KEYBUF];
	bool bad = false;
	unsigned kl = sp->idx < n->count ? node_full_key(n, sp->idx, k, &bad) : 0;
	if (bad || kl != klen || memcmp(k, key, klen)) {
		ruma_bm_unfix_s(t->bm, sp->pid);
		return RUMA_RESTART;
	}
	*p = (path){ .pid = sp->pid, .ver = sp->ver, .n = (node *)n, .has_parent = sp->has_parent,
		     .ppid = sp->ppid, .pver = sp->pver, .p = (node *)sp->parent,
		     .ppos = sp->ppos };
	*pos = desc ? sp->idx : sp->idx + 1;
	return 0;
}

/* The position a scan of leaf n starts at (scan_leaf visits [pos, count)
 * ascending, [0, pos) descending): its end (from_end), else the search key
 * s->cur's, descending past the key itself when the leaf holds it. */
static unsigned leaf_start(const scan_state *s, const node *n, bool from_end, bool *bad)
{
	if (from_end)
		return s->desc ? n->count : 0u;
	bool found = false;
	unsigned pos = node_lower_bound(n, s->cur, s->clen, &found, bad);
	return s->desc && found ? pos + 1 : pos;
}

/*
 * Visit the entries of p's shared-latched leaf from position `at`
 * (NODE_POS_NONE: leaf_start's) and set s->cur up for the next leaf:
 * ascending, the smallest key above the upper fence (the next leaf holds
 * the keys > the fence); descending, the lower fence (the previous leaf
 * holds the keys <= it).  *end when the scan is over (stopped by fn or no
 * more leaves); where fn stopped goes to s->spot.
 */
static int scan_leaf(scan_state *s, const path *p, bool from_end, unsigned at, bool *end)
{
	const node *n = p->n;
	bool bad = false, stop = false;
	int rc = 0;
	if (at == NODE_POS_NONE) /* a leaf the last scan stopped in is in the cache */
		heap_hint(n);
	if (s->mark)
		*s->mark = n->upper;
	unsigned i = at != NODE_POS_NONE ? at : leaf_start(s, n, from_end, &bad), last = 0;
	if (s->desc) {
		while (!bad && !stop && !rc && i > 0)
			rc = visit(s, p->pid, n, last = --i, &stop);
	} else {
		while (!bad && !stop && !rc && i < n->count)
			rc = visit(s, p->pid, n, last = i++, &stop);
	}
	if (bad)
		return bt_corrupt(s->t, p->pid, BT_DMG_NODE);
	if (stop && !rc && s->spot)
		spot_keep(s->spot, s->desc, p, last);
	*end = stop || rc || (s->desc ? n->lower_len == 0 : node_upper_inf(n));
	if (!*end && s->desc) {
		s->clen = n->lower_len;
		memcpy(s->cur, node_lower(n), s->clen);
	} else if (!*end) {
		s->clen = n->upper_len;
		memcpy(s->cur, node_upper_key(n), s->clen);
		s->cur[s->clen++] = 0;
	}
	return rc;
}

/* The search key of the level-1 node after (desc: before) p's parent: its
 * upper fence and a zero byte (desc: its lower fence), copied from the
 * optimistically read parent and validated.  False when there is none or
 * the parent changed. */
static bool next_parent_key(ruma_btree *t, const path *p, bool desc, uint8_t *key, size_t *klen)
{
	bool ok;

	olc_enter();
	const node *n = p->p;
	ok = node_plausible(n);
	if (ok && desc) {
		*klen = n->lower_len;
		ok = *klen > 0 && *klen <= RUMA_BTREE_MAX_KEY;
		if (ok)
			memcpy(key, node_lower(n), *klen);
	} else if (ok) {
		*klen = n->upper_len;
		ok = !node_upper_inf(n) && *klen < NODE_KEYBUF;
		if (ok) {
			memcpy(key, node_upper_key(n), *klen);
			key[(*klen)++] = 0; /* the next parent holds the keys above the fence */
		}
	}
	olc_leave();
	return ok && ruma_bm_validate(t->bm, p->ppid, p->pver) == 0;
}

/*
 * The parent after (desc: before) p's parent, found by a descent with its
 * search key (next_parent_key).  level 1: read ahead its first (desc:
 * last) `depth` leaves.  level 2: start reading that parent itself, found
 * in its own parent, so that it is resident when the read-ahead window
 * reaches it (a synchronous read there would stop the window for a whole
 * device latency).  Best effort: a restart, a damaged page or an error only
 * means nothing is read ahead.
 */
static void scan_next_parent(ruma_btree *t, const path *p, bool desc, unsigned level,
			     unsigned depth)
{
	uint8_t key[NODE_KEYBUF];
	size_t klen = 0;
	if (!next_parent_key(t, p, desc, key, &klen))
		return;
	path q;
	ruma_pid next = 0;
	int from = 0;
	bool bad = false;
	olc_enter();
	int rc = descend(t, key, klen, false, level, &q);
	if (rc == 0 && level == 1) {
		from = desc ? (int)q.n->count : 0;
	} else if (rc == 0) {
		bool found;
		unsigned pos = node_lower_bound(q.n, key, klen, &found, &bad);
		if (!bad)
			next = node_child_at(q.n, pos, &bad);
	}
	olc_leave();
	if (rc || bad)
		return;
	if (level == 1)
		(void)bt_scan_ahead(t, q.pid, q.ver, q.n, from, desc, depth);
	else if (ruma_bm_validate(t->bm, q.pid, q.ver) == 0)
		(void)ruma_bm_prefetch(t->bm, &next, 1);
}

/* Bytes of the next leaf loaded ahead: its header and first slots. */
#define NEXT_LEAF_HINT_BYTES 256u

/* Start loading the latch word and the head of the leaf after (desc:
 * before) p's into the CPU cache while p's entries are visited: reaching
 * it is a chain of dependent loads (measured: YCSB E, 1 KB values, 1.2x
 * the scans per second; the whole page ahead gave nothing).  The parent
 * is not validated: only a hint. */
static void next_leaf_hint(ruma_btree *t, const path *p, bool desc)
{
	unsigned pos;
	ruma_pid c = sibling_child(p, desc, &pos);
	if (c)
		ruma_bm_hint_head(&t->hints, c, NEXT_LEAF_HINT_BYTES);
}

/* Children of p's parent left after p's position in scan order (read
 * optimistically: only a hint). */
static unsigned children_left(const path *p, bool desc)
{
	olc_enter();
	unsigned count = p->p->count;
	olc_leave();
	return desc ? p->ppos : count >= p->ppos ? count - p->ppos : 0;
}

static int scan(ruma_btree *t, const void *start, size_t slen, bool desc, bt_spot *spot,
		uint64_t *mark, ruma_btree_scan_fn fn, void *ctx)
{
	bt_spot was = { .valid = false };
	if (spot) { /* this scan's stop replaces it */
		was = *spot;
		spot->valid = false;
	}
	if (slen > RUMA_BTREE_MAX_KEY)
		return RUMA_ETOOBIG;
	if (!fn)
		return -EINVAL;
	scan_state s; /* field by field: its three key buffers need no zeroing */
	s.t = t;
	s.fn = fn;
	s.ctx = ctx;
	s.desc = desc;
	s.bounded = s.inclusive = false;
	s.last = 0;
	s.klen[0] = s.klen[1] = 0;
	s.clen = slen;
	s.spot = spot;
	s.mark = mark;
	bool from_end = slen == 0;
	/* read-ahead window: starts small, doubles per leaf up to the limit;
	 * none while no page is evicted (a pool that holds the whole store) */
	unsigned ra_max = ruma_bm_all_resident(t->bm)
				  ? 0 : atomic_load_explicit(&t->read_ahead, memory_order_relaxed);
	unsigned ra = RUMA_MIN(ra_max, RUMA_BTREE_READ_AHEAD_START);
	/* leaves past this one that the last read-ahead covered, and its
	 * window: the window is topped up once half of it is used, so that a
	 * long scan submits its reads a half window at a time (one system call
	 * and one device notification for many pages), not one per leaf */
	unsigned lead = 0, last_ra = 0;
	ruma_pid next_asked = 0; /* the parent whose successor is being read */
	if (slen) {
		memcpy(s.cur, start, slen);
		memcpy(s.key[0], start, slen);
		s.klen[0] = (unsigned)slen;
		s.bounded = s.inclusive = true;
	}
	path p = { 0 }; /* leaf_shared fills it; zeroed for the compiler's flow analysis */
	for (bool first = true;; first = false) {
		/* first, where the last scan stopped if nothing changed there;
		 * after the first leaf, its sibling through the parent when the
		 * parent is unchanged; else a descent, from the end along the
		 * right-most path */
		unsigned at = NODE_POS_NONE;
		int rc = !first ? sibling_shared(t, &p, desc, s.cur, s.clen, &p)
			 : slen ? spot_resume(t, &was, desc, start, slen, &p, &at) : RUMA_RESTART;
		if (rc == 0 && !first)
			from_end = true; /* every key of the sibling lies beyond s.cur */
		if (rc == RUMA_RESTART)
			rc = leaf_shared(t, s.cur, s.clen, desc && from_end, &p);
		if (rc)
			return rc;
		unsigned rest = 0; /* of the window, past the parent's last child */
		if (p.has_parent && ra && lead <= last_ra / 2) {
			int from = desc ? (int)p.ppos - 1 : (int)p.ppos + 1;
			rest = ra - bt_scan_ahead(t, p.ppid, p.pver, p.p, from, desc, ra);
			lead = last_ra = ra;
			ra = RUMA_MIN(2 * ra, ra_max);
		} else if (lead) {
			lead--;
		}
		bool end = true;
		next_leaf_hint(t, &p, desc);
		rc = scan_leaf(&s, &p, from_end, at, &end);
		ruma_bm_unfix_s(t->bm, p.pid);
		if (rest && !rc && !end)
			scan_next_parent(t, &p, desc, 1, rest); /* no latch held: it may wait */
		if (ra && p.has_parent && !rc && !end && p.ppid != next_asked &&
		    children_left(&p, desc) <= 2 * ra_max) {
			next_asked = p.ppid; /* once per parent */
			scan_next_parent(t, &p, desc, 2, 0);
		}
		if (rc || end)
			return rc;
		from_end = false;
	}
}

int bt_scan_from(ruma_btree *t, bool desc, const void *start, size_t slen, bt_spot *spot,
		 uint64_t *mark, ruma_btree_scan_fn fn, void *ctx)
{
	int rc = scan(t, start, slen, desc, spot, mark, fn, ctx);
	ruma_bm_aio_drain(t->bm); /* the read-ahead holds latches until finished */
	return rc;
}

int ruma_btree_scan_asc(ruma_btree *t, const void *start, size_t slen, ruma_btree_scan_fn fn,
			void *ctx)
{
	return bt_scan_from(t, false, start, slen, NULL, NULL, fn, ctx);
}

int ruma_btree_scan_desc(ruma_btree *t, const void *start, size_t slen, ruma_btree_scan_fn fn,
			 void *ctx)
{
	return bt_scan_from(t, true, start, slen, NULL, NULL, fn, ctx);
}

/* ---- catalog and handles --------------------------------------------------------------------- */

ruma_pid ruma_btree_root(const ruma_btree *t)
{
	return t->root;
}

void ruma_btree_get_counters(const ruma_btree *t, ruma_btree_stats *out)
{
	memset(out, 0, sizeof *out);
	out->leaf_splits = atomic_load_explicit(&t->leaf_splits, memory_order_relaxed);
	out->inner_splits = atomic_load_explicit(&t->inner_splits, memory_order_relaxed);
	out->root_splits = atomic_load_explicit(&t->root_splits, memory_order_relaxed);
	out->leaf_merges = atomic_load_explicit(&t->leaf_merges, memory_order_relaxed);
	out->inner_merges = atomic_load_explicit(&t->inner_merges, memory_order_relaxed);
	out->root_collapses = atomic_load_explicit(&t->root_collapses, memory_order_relaxed);
	out->pages_freed = atomic_load_explicit(&t->pages_freed, memory_order_relaxed);
	out->restarts = atomic_load_explicit(&t->restarts, memory_order_relaxed);
}
