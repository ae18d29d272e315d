/*
 * readahead.c — the read-ahead of range scans (bt_scan_ahead), below the
 * scans of btree.c that call it.
 *
 * Scan read-ahead: when a scan has latched a leaf, the parent it came
 * through names the next leaves in scan order; the pids of the next
 * `depth` of them (the scan's window, see ruma_btree_set_read_ahead) are
 * read optimistically, the parent validated, and the evicted ones are read
 * ahead with one submission (ruma_bm_prefetch); those already resident or
 * in flight are skipped.  The scan (btree.c) calls this again once it has
 * passed half of the window, so a long scan submits about depth/2 reads
 * at a time and keeps between depth/2 and depth in flight.  Where the window passes the
 * parent's last child, the scan (btree.c) finds the next parent by a
 * descent to level 1 with the parent's fence and reads the rest of the
 * window from its first children, so the read-ahead does not run dry at
 * every parent boundary; that next parent was read ahead itself, through
 * its own parent at level 2, when the scan came within two windows of the
 * boundary.  When the scan reaches a leaf still
 * being read it waits for one completion at a time (bm_wait), not for the
 * whole window.  The scan drains its read-ahead before it returns, so no
 * latch outlives the call.
 *
 * No system calls of its own: the reads are the buffer manager's
 * (ruma_bm_prefetch).
 */
#include "btree/btree_int.h"

#include <ruma/core.h>

unsigned bt_scan_ahead(ruma_btree *t, ruma_pid ppid, uint64_t pver, const node *parent,
		       int from, bool desc, unsigned depth)
{
	ruma_pid ahead[RUMA_BM_AIO_MAX];
	unsigned k = 0;

	depth = RUMA_MIN(depth, RUMA_BM_AIO_MAX);
	olc_enter();
	if (node_plausible(parent) && parent->level == 1) {
		for (int pos = from; k < depth && pos >= 0 && pos <= (int)parent->count;
		     pos += desc ? -1 : 1) {
			bool bad = false;
			ruma_pid c = node_child_at(parent, (unsigned)pos, &bad);
			if (bad)
				break;
			ahead[k++] = c;
		}
	}
	olc_leave();
	if (k && ruma_bm_validate(t->bm, ppid, pver) == 0)
		(void)ruma_bm_prefetch(t->bm, ahead, k);
	return k;
}
