/*
 * blobref.h — what the store layer above (src/db: large values, BLOBs,
 * docs/blob.md) needs of the B-tree beyond btree.h and txn.h: the value a
 * transaction's change replaced (so the old value's extents can be freed
 * once it commits), and the store check with leaf values that name page
 * runs of their own (extents), which reports the runs no tree reaches.
 * Not installed.
 */
#ifndef RUMA_BTREE_BLOBREF_H
#define RUMA_BTREE_BLOBREF_H

#include <ruma/btree.h>
#include <ruma/txn.h>

/* bt_txn_changes — how many changes x has made so far (its undo entries). */
size_t bt_txn_changes(const ruma_txn *x);

/* bt_txn_start_ts — the start timestamp of x's snapshot (src/btree/mvcc.h);
 * UINT64_MAX for a transaction that reads none (RUMA_TXN_LOCKING). */
uint64_t bt_txn_start_ts(const ruma_txn *x);

/*
 * bt_txn_replaced — after a change of x made when bt_txn_changes was
 * `since`: 1 with the value it replaced or removed in *old (*len bytes,
 * valid until x's next change or its end), 0 when it changed nothing or the
 * row was absent (or an in-place update, which keeps no whole old value).
 */
int bt_txn_replaced(const ruma_txn *x, size_t since, const void **old, size_t *len);

/*
 * A leaf value's page runs: call add(actx, first, n) for each run the value
 * names (add's nonzero result is returned at once); 0, or nonzero for a
 * value that names runs but is malformed.  Values that name none return 0
 * without calling add.
 */
typedef int (*bt_value_runs_fn)(const void *val, size_t vlen, void *ctx,
				int (*add)(void *actx, ruma_pid first, uint64_t n), void *actx);

/*
 * bt_check_store_runs — ruma_btree_check_store where the values of the
 * trees the catalog names (not the catalog's own) may name page runs
 * (runs, NULL: none): their pages count as reached, a page reached twice is
 * damage (an extent shared), one that is free or beyond the high-water mark
 * too.  leak (NULL: none) gets every maximal run of leaked pages (allocated,
 * reached by nothing), when every tree passed.  Same results as
 * ruma_btree_check_store.
 */
int bt_check_store_runs(ruma_bm *bm, ruma_message_fn message, void *message_ctx,
			ruma_btree_store_check *out, bt_value_runs_fn runs, void *runs_ctx,
			void (*leak)(void *ctx, ruma_pid first, uint64_t n), void *leak_ctx);

#endif
