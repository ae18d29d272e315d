/*
 * mtr.h — the log record format of the buffer manager's mini-transactions,
 * shared by the writer (mtr.c) and recovery (recover.c).  See mtr.c.
 */
#ifndef RUMA_BM_MTR_H
#define RUMA_BM_MTR_H

#include "bm/bm_ext.h"

/* Log record types. */
#define BM_WAL_MTR 1u  /* one mini-transaction: a sequence of entries */
#define BM_WAL_META 2u /* ruma_bm_meta_set: u32 slot, u32 0, u64 value */
#define BM_WAL_START 3u /* a session's first record: u64 store id[2], u64 its start LSN */
#define BM_WAL_EXTENT 4u /* an extent allocated or freed (extent.c): struct bm_wal_extent */

/* BM_WAL_EXTENT's payload: op BM_EXTENT_ALLOC or BM_EXTENT_FREE, pages
 * [first, first + n). */
#define BM_EXTENT_ALLOC 1u
#define BM_EXTENT_FREE 2u
struct bm_wal_extent {
	uint32_t op;
	uint32_t rsv;
	uint64_t first;
	uint64_t n;
};

/* Entry kinds inside a BM_WAL_MTR record (u8 kind, u64 pid, body). */
#define BM_MTR_ALLOC 1u /* the page was allocated: it starts as zeros */
#define BM_MTR_FREE 2u  /* the page was freed */
#define BM_MTR_FPI 3u   /* full image: RUMA_BM_PAGE_DATA bytes */
#define BM_MTR_DIFF 4u  /* u16 n, n x { u16 off, u16 len, bytes } */
/* full image without its hole: u16 off, u16 len, then the RUMA_BM_PAGE_DATA
 * - len bytes outside [off, off + len); redo writes zeros in the hole */
#define BM_MTR_FPI_HOLE 5u
/* Header bytes of a BM_MTR_FPI_HOLE body before the image's bytes. */
#define BM_MTR_HOLE_HDR 4u
/* DIFF after a move inside the page: u16 dst, u16 src, u16 len, then a
 * DIFF body; redo moves [src, src + len) to dst (memmove) first */
#define BM_MTR_DIFF_MOVE 7u
#define BM_MTR_MOVE_HDR 6u
/* A transaction's UNDO record carried in the record of the page change it
 * precedes (ruma_bm_log): only as the record's first entry, and without a
 * pid: u8 kind, u32 len, then len bytes of a RUMA_BM_LOG_UNDO payload (u64
 * transaction id, the layer's undo). */
#define BM_MTR_UNDO 6u
#define BM_MTR_UNDO_HDR 5u
/* The largest UNDO payload carried; a longer one is a record of its own. */
#define BM_MTR_UNDO_MAX 4096u

/* Pages one mini-transaction may hold exclusively, and the largest record. */
#define BM_MTR_MAX 32u
#define BM_MTR_REC_MAX                                                              \
	(BM_MTR_UNDO_HDR + BM_MTR_UNDO_MAX +                                        \
	 (size_t)BM_MTR_MAX * (2u * (1u + 8u) + RUMA_BM_PAGE_DATA))

#endif
