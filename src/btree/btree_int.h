/*
 * btree_int.h — internals shared by the B-tree's source files: the handle,
 * its counters, the optimistic-read bracket for ThreadSanitizer.
 */
#ifndef RUMA_BTREE_INT_H
#define RUMA_BTREE_INT_H

#include "btree/node.h"
#include "bm/bm_ext.h"

#include <stdatomic.h>

/* The buffer manager's meta slot holding the catalog root (value = root pid
 * + 1; 0 = no catalog; catalog.c). */
#define RUMA_BTREE_META_SLOT 0u

struct ruma_btree {
	ruma_bm *bm;
	ruma_pid root;
	_Atomic uint64_t leaf_splits, inner_splits, root_splits;
	_Atomic uint64_t leaf_merges, inner_merges, root_collapses;
	_Atomic uint64_t pages_freed, restarts;
	_Atomic unsigned read_ahead; /* scan read-ahead limit in leaves (0: none) */
	/* the last RUMA_ECORRUPT: reason << 56 | page id (0: none yet) */
	_Atomic uint64_t damage;
	atomic_flag damage_said; /* the first one was reported (ruma_bm_report) */
	/* every page in memory passed node_check when read or was built by the
	 * tree (ruma_bm_set_page_check said so when the handle was opened): a
	 * rewrite needs no second validation (bt_node_trusted) */
	bool pages_checked;
	ruma_bm_hints hints; /* the pool's layout, for cache hints in descents */
};

/* May node n (latched exclusively) be rewritten from its own contents
 * (compaction, split, merge)?  Validated already or validated now. */
static inline bool bt_node_trusted(const ruma_btree *t, const node *n)
{
	return t->pages_checked || node_valid(n);
}

/* Why a page was found corrupt (ruma_btree_last_corruption names it). */
enum bt_damage {
	BT_DMG_NODE = 1,  /* header, slot or heap bounds */
	BT_DMG_CHILD,     /* child pid outside the store */
	BT_DMG_LEVEL,     /* level not one below the parent's */
	BT_DMG_FENCES,    /* fences do not hold the key routed to the node */
	BT_DMG_ORDER,     /* a scan's keys stopped moving strictly forward */
	BT_DMG_SIBLING,   /* merge partners are not distinct pages */
	BT_DMG_ROOT,      /* the root pid (from the catalog) outside the store */
	BT_DMG_CHECK,     /* the checker found problems */
	BT_DMG_READ,      /* refused when read from the store (trailer or node_check) */
};

/* Record that page pid is corrupt (the first of a handle is also reported
 * through the manager's message channel, ruma_bm_report); returns
 * RUMA_ECORRUPT. */
int bt_corrupt(ruma_btree *t, ruma_pid pid, enum bt_damage why);

/* A page read for the tree failed with rc: RUMA_ECORRUPT (its trailer or
 * node_check refused the image) is recorded as damage of that page. */
int bt_read_failed(ruma_btree *t, ruma_pid pid, int rc);
/* What an allocation state is, in words ("marked free in the free-space
 * bitmap"): for messages of the checkers (btree.c). */
const char *bt_page_state_name(ruma_bm_page_state st);

static inline void bt_count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/*
 * Optimistic reads race with writers by design (the version check discards
 * what was read).  Under ThreadSanitizer the reading thread's accesses are
 * ignored between olc_enter and olc_leave, so those benign races are not
 * reported while everything done under shared/exclusive latches is still
 * checked.
 */
#include "core/sanitizer.h"
#if RUMA_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#define olc_enter() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define olc_leave() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define olc_enter() ((void)0)
#define olc_leave() ((void)0)
#endif

/* readahead.c: read up to `depth` leaves of a scan ahead — the children of
 * the optimistically read parent from position `from` on in scan order
 * (descending with desc).  Returns how many children were in range. */
unsigned bt_scan_ahead(ruma_btree *t, ruma_pid ppid, uint64_t pver, const node *parent,
		       int from, bool desc, unsigned depth);

/* A hook of bt_put: called once, with the leaf latched exclusively, right
 * before the entry is written — found: the key is there (an upsert
 * replaces old, old_len bytes).  A non-zero return cancels the put (nothing
 * changed) and is returned. */
typedef int (*bt_before_put)(void *ctx, bool found, const void *old, size_t old_len);

/* btree.c: ruma_btree_insert (insert_only) or ruma_btree_upsert with a hook
 * (the transactions' undo, taken from the leaf without a second lookup). */
int bt_put(ruma_btree *t, const void *key, size_t klen, const void *val, size_t vlen,
	   bool insert_only, bt_before_put hook, void *ctx);

/* btree.c: the mark this thread's leaf changes leave (node.h: a leaf's
 * `upper` keeps the largest), set by txn.c to its writer's mark before
 * each write (mvcc.h, "Leaf marks"); 0 until then.  Plain B-tree writes
 * after a transaction's stamp that transaction's mark too, which only makes
 * a leaf look more recently changed than it is. */
extern __thread __attribute__((tls_model("initial-exec"))) uint64_t bt_write_mark;

/* btree.c: ruma_btree_lookup that also gives the mark of the leaf read
 * (*mark: read with the value under the same validated version; set
 * whenever the leaf was reached, the key found or not). */
int bt_lookup_mark(ruma_btree *t, const void *key, size_t klen, void *buf, size_t cap,
		   size_t *vlen, uint64_t *mark);

/* btree.c: ruma_btree_update; fn_names: fn names the bytes it changes with
 * ruma_bm_wrote itself (else, in a logged store, the change is found by
 * comparing the value with a copy). */
int bt_update(ruma_btree *t, const void *key, size_t klen,
	      void (*fn)(void *val, size_t vlen, void *ctx), void *ctx, bool fn_names);

/* txn.c: undo the transactions a crash cut off, once per store (the first
 * ruma_btree_open / ruma_btree_create calls it; cheap when none). */
int bt_txn_recover(ruma_bm *bm);

/* Tree walks (check.c): shape statistics. */
int bt_walk_stats(ruma_btree *t, ruma_btree_stats *out);

#endif
