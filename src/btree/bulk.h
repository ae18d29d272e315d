/*
 * bulk.h — building an empty tree bottom-up from entries in ascending key
 * order (src/btree/bulk.c), for the store layer's loader (src/db/load.c).
 * Not installed.
 */
#ifndef RUMA_BTREE_BULK_H
#define RUMA_BTREE_BULK_H

#include <ruma/btree.h>

#include <stdatomic.h>
#include <stdint.h>

typedef struct bt_bulk bt_bulk;

/* bt_bulk_begin — a load into t, which must be empty (one leaf without
 * entries): -ENOTEMPTY otherwise, -ENOMEM, a page read's error. */
int bt_bulk_begin(ruma_btree *t, bt_bulk **out);

/*
 * bt_bulk_add — the next entry: key must be above the last one added
 * (RUMA_EEXISTS otherwise: the entry is refused, the load goes on); the
 * entry limits of ruma_btree_insert (-EINVAL, RUMA_ETOOBIG).  Full pages
 * are written to the store as they fill (ruma_bm_pages_write); an error
 * there (the store full, I/O) sticks: every later call returns it, and
 * the load can only be aborted.
 */
int bt_bulk_add(bt_bulk *b, const void *key, size_t klen, const void *val, size_t vlen);

/* Entries added so far. */
uint64_t bt_bulk_entries(const bt_bulk *b);

/*
 * bt_bulk_finish — write the last pages and make them the tree: the top
 * node replaces the empty root in one logged page change (the log syncs
 * the written pages before that record; docs/db.md, "Loading").  Before
 * the change *visible is set to UINT64_MAX, after it to a fresh commit
 * timestamp (src/btree/mvcc.h): snapshots older than that must not read
 * the tree (the loaded entries have no versions).  -ENOTEMPTY when the tree
 * is no longer empty (another writer), or the load's sticky error; then
 * the load's pages are freed as by bt_bulk_abort.  Frees b either way; the
 * change is durable when the caller's next log flush returns.
 */
int bt_bulk_finish(bt_bulk *b, _Atomic uint64_t *visible);

/* bt_bulk_abort — give back every page the load allocated; frees b. */
void bt_bulk_abort(bt_bulk *b);

#endif
