/*
 * spot.h — where a scan stopped, kept so that the next scan from the same
 * key continues there without a descent, for the store layer's cursors
 * (src/db/cursor.c).  Not in include/ruma/btree.h: a spot holds page ids
 * and addresses of one tree, which a cursor owns with its table.
 *
 * A cursor walks a tree in batches, one scan per batch, each starting
 * from the last key of the batch before.  Without a spot each batch
 * descends from the root and searches the leaf again.  With one, the next
 * scan latches the leaf the last one stopped in, if its version is still
 * the one the last scan saw (no writer, eviction or free touched it since),
 * checks that the entry it stopped at holds the start key, and goes on
 * with the entry after it; past the leaf's end it steps to the sibling
 * through the parent, as a scan does between leaves.  Anything else (a
 * changed leaf, another key, the other direction) is an ordinary scan from
 * the start key, so a spot changes what a scan costs, never what it sees.
 */
#ifndef RUMA_BTREE_SPOT_H
#define RUMA_BTREE_SPOT_H

#include <ruma/btree.h>
#include <ruma/txn.h>

#include <stdbool.h>
#include <stdint.h>

/* A scan's stopping place: the leaf, the version it had, the entry fn
 * stopped at, and the leaf's parent as the scan's descent found it. */
typedef struct bt_spot {
	bool valid;
	bool desc;
	unsigned idx;
	ruma_pid pid;
	uint64_t ver;
	const void *leaf;
	bool has_parent;
	ruma_pid ppid;
	uint64_t pver;
	const void *parent;
	unsigned ppos;
} bt_spot;

/*
 * bt_scan_from — ruma_btree_scan_asc (desc: _desc) from start that first
 * tries to continue at *spot (set by an earlier scan of t whose fn stopped
 * at the entry with key start: then the scan visits the entries beyond
 * start, not start itself).  Whatever happens, *spot afterwards says where
 * this scan's fn stopped (valid) or that it did not stop (not valid).
 * Before the entries of each leaf, *mark (when not NULL) gets the leaf's
 * mark (src/btree/mvcc.h, "Leaf marks").  spot and mark NULL: the plain
 * scan.
 */
int bt_scan_from(ruma_btree *t, bool desc, const void *start, size_t slen, bt_spot *spot,
		 uint64_t *mark, ruma_btree_scan_fn fn, void *ctx);

/*
 * txn_scan_from — ruma_txn_scan_asc / _desc with a spot (bt_scan_from).  A
 * snapshot scan keeps the spot only where its fn stopped on a row read in
 * place (the streaming path of txn.c); everywhere else it leaves it not
 * valid.
 */
int txn_scan_from(ruma_txn *x, ruma_btree *t, bool desc, const void *start, size_t slen,
		  bt_spot *spot, ruma_btree_scan_fn fn, void *ctx);

#endif
