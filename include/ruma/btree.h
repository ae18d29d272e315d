/*
 * btree.h — a B+-tree on the vmcache buffer manager (bm.h).
 *
 * Every node is one buffer-manager page (RUMA_BM_PAGE_SIZE = 4 KiB): a
 * slotted page with fence keys, prefix truncation and 16 hint heads (layout
 * and algorithms in docs/btree.md).  Keys and values are byte strings of
 * variable length, ordered by memcmp (a shorter key that is a prefix of a
 * longer one sorts first).
 *
 * Many trees live in one store: a catalog tree (its root page recorded in the
 * store's metadata) maps tree names to root pages.  A tree's root page id never
 * changes: a root split moves the root's contents into two new children.
 *
 * Concurrency: any number of threads may use the same ruma_btree handle (or
 * different handles of the same tree) at once.  Readers use optimistic lock
 * coupling; writers latch exclusively only the nodes they modify; scans hold
 * a shared latch on one leaf at a time.  Restarts (RUMA_RESTART) are retried
 * inside every operation and never reach the caller.  Every error from the
 * buffer manager (I/O errors, RUMA_EVIRTFULL, ...) is returned to the caller;
 * an operation that failed with such an error made no change (a split or
 * merge it needed is either complete or not begun; ruma_btree_remove is the
 * one exception, see there), and the tree stays valid.
 *
 * Isolation: these calls are outside transactions.  They read the newest
 * version in place — read-uncommitted, including rows a running
 * transaction (txn.h) changed and may still undo — and take no row locks,
 * so a plain write to a row a transaction changed is lost if it aborts.
 * Use them for loads and single-threaded work; for isolation use txn.h
 * transactions or db.h, whose reads see committed data only.
 *
 * Durability is the buffer manager's: what was acknowledged before a
 * successful ruma_bm_flush / ruma_bm_close is found again by ruma_btree_open
 * after ruma_bm_open of the same file.  With a log (ruma_bm_config
 * durability SYNC / ASYNC, docs/wal.md) every insert, upsert, update and
 * remove is an atomic, crash-consistent operation: its page changes (a
 * split or merge included) are logged as one unit, and in SYNC mode the
 * call returns only once they are durable; a crash at any instant recovers
 * to a valid tree holding every operation acknowledged (SYNC) or all but
 * the last few milliseconds of them (ASYNC), each either whole or absent.
 */
#ifndef RUMA_BTREE_H
#define RUMA_BTREE_H

#include <ruma/ruma.h>
#include <ruma/bm.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits.  A key has 1..RUMA_BTREE_MAX_KEY bytes, a value
 * 0..RUMA_BTREE_MAX_VALUE bytes, and key + value together at most
 * RUMA_BTREE_MAX_ENTRY bytes (so that at least three entries fit in a node
 * together with its fence keys).  Larger → RUMA_ETOOBIG; an empty key →
 * -EINVAL. */
#define RUMA_BTREE_MAX_KEY 256u
#define RUMA_BTREE_MAX_VALUE 1024u
#define RUMA_BTREE_MAX_ENTRY 1024u

/* Longest tree name accepted by create/open (bytes, without the NUL). */
#define RUMA_BTREE_MAX_NAME 200u

typedef struct ruma_btree ruma_btree;

/*
 * Pages read from the store: ruma_btree_create and ruma_btree_open install
 * the tree's structural check of every page the store reads from its file
 * (the buffer manager's page check; every data page of a store the tree
 * uses is a node), so a page crafted with a valid checksum is RUMA_ECORRUPT when read,
 * naming the page and what failed.  Pages that were made resident before
 * (recovery at ruma_bm_open) are validated before a split, merge or
 * compaction rewrites them.  docs/btree.md, "Validation".
 *
 * ruma_btree_create — create an empty tree called `name` (1..MAX_NAME bytes)
 * in the store and return a handle to it in *out.  Creates the catalog on
 * first use.  Errors: RUMA_EEXISTS (a tree of that name exists), -EINVAL
 * (bad name), -ENOMEM, and any buffer-manager error.  The handle is freed
 * with ruma_btree_release; it must not outlive bm.
 */
RUMA_API int ruma_btree_create(ruma_bm *bm, const char *name, ruma_btree **out);

/*
 * ruma_btree_open — a handle to the existing tree `name`.  RUMA_ENOTFOUND if
 * there is no such tree (or no catalog yet), -EINVAL, -ENOMEM, bm errors.
 */
RUMA_API int ruma_btree_open(ruma_bm *bm, const char *name, ruma_btree **out);

/* ruma_btree_release — free the handle only (the tree stays in the store).
 * NULL is accepted.  No thread may be using the handle any more. */
RUMA_API void ruma_btree_release(ruma_btree *t);

/* ruma_btree_root — the tree's root page id (constant for the tree's life). */
RUMA_API ruma_pid ruma_btree_root(const ruma_btree *t);

/* ---- point operations ------------------------------------------------------ */

/*
 * ruma_btree_insert — add key → val.  RUMA_EEXISTS if the key is present
 * (nothing changed), RUMA_ETOOBIG / -EINVAL for sizes outside the limits,
 * bm errors (e.g. RUMA_EVIRTFULL when a split needs a page).
 */
RUMA_API int ruma_btree_insert(ruma_btree *t, const void *key, size_t klen, const void *val,
			       size_t vlen);

/*
 * ruma_btree_upsert — insert key → val, or replace the value if the key is
 * present (the value may change length).  *replaced (may be NULL) tells
 * which happened.  Errors as ruma_btree_insert, without RUMA_EEXISTS.
 */
RUMA_API int ruma_btree_upsert(ruma_btree *t, const void *key, size_t klen, const void *val,
			       size_t vlen, bool *replaced);

/*
 * ruma_btree_lookup — copy the value of key into buf (capacity cap) and its
 * length into *vlen (vlen may be NULL).  The copy is validated: it is one
 * consistent version of the value.  RUMA_ENOTFOUND if absent; -ENOBUFS if
 * cap is smaller than the value (then *vlen holds the length needed and buf
 * is unspecified).  buf may be NULL when cap is 0 (existence test).
 */
RUMA_API int ruma_btree_lookup(ruma_btree *t, const void *key, size_t klen, void *buf,
			       size_t cap, size_t *vlen);

/* Callback for ruma_btree_lookup_fn: val is a private, validated copy. */
typedef void (*ruma_btree_value_fn)(const void *val, size_t vlen, void *ctx);

/*
 * ruma_btree_lookup_fn — call fn(value, vlen, ctx) exactly once with a
 * validated copy of key's value (a stack copy, valid only during the call;
 * no latch is held, so fn may call into the tree).  Reading is optimistic
 * and may be repeated internally after a restart, but fn itself is called
 * once, after validation.  RUMA_ENOTFOUND if absent (fn not called).
 */
RUMA_API int ruma_btree_lookup_fn(ruma_btree *t, const void *key, size_t klen,
				  ruma_btree_value_fn fn, void *ctx);

/* Callback of ruma_btree_lookup_batch: lookup i found val (a validated
 * copy, valid only during the call; no latch is held). */
typedef void (*ruma_btree_batch_fn)(size_t i, const void *val, size_t vlen, void *ctx);

/*
 * ruma_btree_lookup_batch — look up keys[0, n) (lengths klens[]) with up to
 * `inflight` of them active at once on the calling thread: a lookup that
 * needs a page that is not in memory starts its read (io_uring) and waits
 * parked while the others go on, so up to `inflight` page reads are in
 * flight (at most RUMA_BM_AIO_MAX).  inflight <= 1 runs the lookups one
 * after the other, exactly as ruma_btree_lookup.  For each i, results[i]
 * is 0 (found: fn(i, value, vlen, ctx) was called exactly once, if fn is
 * not NULL), RUMA_ENOTFOUND, -EINVAL / RUMA_ETOOBIG for a bad key, or the
 * error of a page read this lookup needed (-EIO, RUMA_ESHORTIO, ...; the
 * others are not affected).  fn is called in completion order, not in
 * index order.  The results are those ruma_btree_lookup gives for the same
 * keys at the same moment.  Returns 0 when every lookup has its result,
 * -EINVAL for missing arrays, -ENOMEM.
 */
RUMA_API int ruma_btree_lookup_batch(ruma_btree *t, size_t n, const void *const keys[],
				     const size_t klens[], unsigned inflight,
				     ruma_btree_batch_fn fn, void *ctx, int results[]);

/*
 * ruma_btree_update — call fn(val, vlen, ctx) exactly once on the stored
 * value of key, in place, while the leaf is latched exclusively: the
 * read-modify-write is atomic with respect to every other operation.  fn may
 * change the bytes but not the length, and must not call into this tree.
 * RUMA_ENOTFOUND if absent (fn not called).
 */
RUMA_API int ruma_btree_update(ruma_btree *t, const void *key, size_t klen,
			       void (*fn)(void *val, size_t vlen, void *ctx), void *ctx);

/*
 * ruma_btree_remove — delete key.  RUMA_ENOTFOUND if absent.  A leaf left
 * under-full is merged with its right sibling under the same parent when the
 * result fits, and an inner node left under-full by that is merged the same
 * way (separator pulled down from the parent); freed pages go back to the
 * buffer manager (ruma_bm_free); the tree height shrinks when the root is
 * left with a single child.  Returns 0, RUMA_ENOTFOUND, or a bm error.  A bm
 * error met by the merge step after the key was removed is returned too:
 * the key is gone then, and the tree is valid (only less compact).
 */
RUMA_API int ruma_btree_remove(ruma_btree *t, const void *key, size_t klen);

/* ---- scans --------------------------------------------------------------------- */

/*
 * Scan callback: one entry (key and value point into the latched leaf or a
 * per-scan buffer, valid only during the call).  Return true to continue,
 * false to stop the scan.  It runs while the scan holds a SHARED latch on
 * the current leaf, so it must not call into the same tree (a writer waiting
 * for that leaf would deadlock with it) and should be short.
 */
typedef bool (*ruma_btree_scan_fn)(const void *key, size_t klen, const void *val, size_t vlen,
				   void *ctx);

/*
 * ruma_btree_scan_asc — visit entries with key >= start in ascending order
 * (slen 0: from the smallest key) until fn returns false or the tree ends.
 * ruma_btree_scan_desc — entries with key <= start in descending order
 * (slen 0: from the largest key).  Each leaf is latched shared while its
 * entries are visited; the next leaf is found by descending again from the
 * root with the current leaf's fence key, so a scan sees every key that was
 * present for its whole duration exactly once, in order, and is not a
 * snapshot.  Each step must move strictly forward (backward): the leaf
 * found for the next search key must hold it in its fences, and every key
 * passed to fn must be strictly beyond the previous one.  A damaged store
 * (e.g. one leaf written over its neighbour) therefore gives RUMA_ECORRUPT,
 * never an endless scan or a silent gap; a concurrent split or merge only
 * repeats the descent.  Returns 0 (also when stopped by fn), RUMA_ETOOBIG
 * for an oversized start key, -EINVAL if fn is NULL, RUMA_ECORRUPT, or a bm
 * error.
 */
RUMA_API int ruma_btree_scan_asc(ruma_btree *t, const void *start, size_t slen,
				 ruma_btree_scan_fn fn, void *ctx);
RUMA_API int ruma_btree_scan_desc(ruma_btree *t, const void *start, size_t slen,
				  ruma_btree_scan_fn fn, void *ctx);

/*
 * ruma_btree_list — every tree of the store, in name order: fn gets the name
 * (key, klen bytes, not NUL-terminated) and its root page id (val) until it
 * returns false.  A store without trees calls fn never.  Returns 0, -EINVAL
 * (bm or fn NULL) or the errors of ruma_btree_scan_asc.
 */
RUMA_API int ruma_btree_list(ruma_bm *bm, ruma_btree_scan_fn fn, void *ctx);

/*
 * ruma_btree_set_read_ahead — the most leaves a scan of this handle reads
 * ahead of the leaf it is on (RUMA_BTREE_READ_AHEAD by default; 0: none,
 * every leaf is read when reached).  A scan starts with a window of
 * RUMA_BTREE_READ_AHEAD_START leaves (or fewer when the limit is lower) and
 * doubles it with every leaf it reaches, up to the limit, so a short scan
 * reads little ahead and a long one keeps `leaves` reads in flight.  The
 * leaves ahead are those the current leaf's parent names next (the window
 * does not reach past the parent's last child).  Returns 0, or -EINVAL
 * when leaves exceeds RUMA_BM_AIO_MAX.  Set it before scans start; it is
 * read by every scan of the handle.
 */
#define RUMA_BTREE_READ_AHEAD 32u
#define RUMA_BTREE_READ_AHEAD_START 4u
RUMA_API int ruma_btree_set_read_ahead(ruma_btree *t, unsigned leaves);

/* ---- checking and statistics -------------------------------------------------- */

/*
 * ruma_btree_last_corruption — why the last RUMA_ECORRUPT returned through
 * this handle (by any operation, from any thread, including
 * ruma_btree_check) was given, and the id of the page found damaged in *pid
 * (may be NULL).  NULL if there was none.  The first one is also reported
 * through the buffer manager's message callback (ruma_bm_config.message;
 * stderr by default) as "btree: page <pid>: <reason>".  A static string.
 */
RUMA_API const char *ruma_btree_last_corruption(const ruma_btree *t, ruma_pid *pid);

/*
 * ruma_btree_check — verify the tree's invariants: within each node the keys
 * are strictly ascending and inside the node's fences, header fields and
 * slots are in bounds, the prefix equals the fences' common prefix, hints
 * match the keys, each child's fences equal the parent's separators around
 * it, every leaf is at level 0 and reachable at the same depth, and the
 * leaves' fence intervals tile the key space.  Takes shared latches; run it while
 * no writer is active for a meaningful answer.  Returns RUMA_ECORRUPT if
 * any invariant is broken, else 0, or a bm error.  Problems are described
 * through message(message_ctx, line) (ruma_message_fn; NULL: silent): one
 * line per problem, "page <pid>: <what>", at most 50, then
 * "<n> problem(s)".
 */
RUMA_API int ruma_btree_check_msg(ruma_btree *t, ruma_message_fn message, void *message_ctx);

/* What ruma_btree_check_store found (counts of pages). */
typedef struct ruma_btree_store_check {
	uint64_t trees;               /* trees the catalog names */
	uint64_t pages_reached;       /* pages reached from the catalog, its own included */
	uint64_t pages_free;          /* pages the free-space bitmap marks free */
	uint64_t pages_leaked;        /* allocated data pages no tree reaches */
	uint64_t reached_unallocated; /* reached pages that are free, metadata or
					 beyond the high-water mark */
} ruma_btree_store_check;

/*
 * ruma_btree_check_store — check the whole store: walk the catalog tree and
 * every tree it names with the checks of ruma_btree_check_msg, all into one
 * set of the pages reached, then compare that set with the allocator's
 * state (used, free, metadata).  RUMA_ECORRUPT when any tree is damaged (a
 * damaged catalog is not followed further), when a page is reached twice
 * (shared by two trees or twice within one), when a reached page is marked
 * free, is a metadata page or lies beyond the high-water mark, or when
 * allocated pages are reached by no tree: a leak is damage to the
 * free-space accounting ("<n> pages leaked ..."; the bitmap is compared only
 * when every tree passed).  Lines go through message(message_ctx, line)
 * (NULL: silent): a tree's problems as "tree <name>: page <pid>: <what>",
 * the store's as "page <pid>: reachable but <state>", then "<n>
 * problem(s)".  out (may be NULL) gets the counts.  A store without a
 * catalog has no trees: every allocated page is leaked.  Run it while no
 * writer is active.  Returns 0, RUMA_ECORRUPT, -EINVAL (bm NULL), -ENOMEM or
 * a bm error.
 */
RUMA_API int ruma_btree_check_store(ruma_bm *bm, ruma_message_fn message, void *message_ctx,
				    ruma_btree_store_check *out);

/* The callback of ruma_btree_check: "btree check: <line>\n" on the FILE ctx. */
static inline void ruma_btree_check_to_file(void *ctx, const char *line)
{
	fprintf((FILE *)ctx, "btree check: %s\n", line);
}

/*
 * ruma_btree_check — ruma_btree_check_msg writing each line as
 * "btree check: <line>\n" to report (may be NULL: silent).  Inline: the
 * library itself never writes to a stream.
 */
static inline int ruma_btree_check(ruma_btree *t, FILE *report)
{
	return ruma_btree_check_msg(t, report ? ruma_btree_check_to_file : NULL, report);
}

typedef struct ruma_btree_stats {
	/* shape, from a walk over the tree (ruma_btree_get_stats) */
	unsigned height;        /* levels, 1 = the root is a leaf */
	uint64_t inner_nodes;
	uint64_t leaf_nodes;
	uint64_t entries;       /* key/value pairs */
	uint64_t bytes_used;    /* occupied bytes in all nodes */
	/* event counters of this handle (all threads), since create/open */
	uint64_t leaf_splits;
	uint64_t inner_splits;
	uint64_t root_splits;   /* also counted in leaf_ or inner_splits */
	uint64_t leaf_merges;
	uint64_t inner_merges;
	uint64_t root_collapses; /* root with a single child absorbed it */
	uint64_t pages_freed;
	uint64_t restarts;      /* operation attempts retried after RUMA_RESTART */
} ruma_btree_stats;

/*
 * ruma_btree_get_stats — walk the tree (shared latches) for the shape
 * fields and copy the handle's counters.  Returns 0 or a bm error.
 */
RUMA_API int ruma_btree_get_stats(ruma_btree *t, ruma_btree_stats *out);

/* ruma_btree_get_counters — only the handle's event counters (cheap, no
 * walk; the shape fields are 0).  Safe while other threads run. */
RUMA_API void ruma_btree_get_counters(const ruma_btree *t, ruma_btree_stats *out);

#ifdef __cplusplus
}
#endif
#endif
