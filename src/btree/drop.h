/*
 * drop.h — dropping a whole tree of a store, for the store layer above
 * (src/db: ruma_db_table_drop).  Not in include/ruma/btree.h: a tree's
 * handles must all be gone first, which only a layer that owns every
 * handle (the db layer's table list) can promise.
 */
#ifndef RUMA_BTREE_DROP_H
#define RUMA_BTREE_DROP_H

#include <ruma/btree.h>

/*
 * bt_drop_tree — free every page of the tree `name` of bm and remove it from
 * the catalog.  No handle of the tree may be in use, now or later.  The pages
 * go bottom-up, one at a time, each unlinked from its parent in the same
 * logged step as it is freed (an inner node whose last child goes becomes an
 * empty leaf), so a crash at any point leaves a valid, smaller tree under the
 * same name: dropping it again finishes the work.  Last, the catalog entry is
 * removed and the root freed in one logged step.  No other thread may change
 * the catalog meanwhile (it is descended with exclusive latches).  Waits for
 * the log as any modifying operation (ruma_bm_op_end).  RUMA_ENOTFOUND when
 * there is no such tree, RUMA_ECORRUPT for a damaged tree (nothing more is
 * freed), bm errors.
 */
int bt_drop_tree(ruma_bm *bm, const char *name);

#endif
