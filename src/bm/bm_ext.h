/*
 * bm_ext.h — the buffer manager's contract with the layers above it inside
 * the library and the repository's own programs (the B-tree, its
 * transactions, the store, the benchmark drivers, the tests).  Not
 * installed and not exported: libruma is built with hidden visibility and
 * none of these carries RUMA_API, so they stay out of libruma.so's symbol
 * table; the repository's programs reach them through the modules' static
 * libraries.  A program built against the installed headers uses bm.h only.
 *
 * What is here: the open-transaction count, the optimistic child read, the
 * page-image check, asynchronous reads, read-ahead and CPU cache hints, the
 * allocator's page states for checkers, logging (operation end, records of
 * the layers above, flush pipelining, declared writes, the holes of full
 * page images, the losers' undo hand-over), the persistent meta slots and
 * the message channel of the manager.
 */
#ifndef RUMA_BM_EXT_H
#define RUMA_BM_EXT_H

#include <ruma/bm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ruma_bm_txn_count — the transaction layer (txn.h) counts its open
 * transactions here: +1 at begin, -1 when one ends (ruma_bm_close refuses
 * to close under an open one). */
void ruma_bm_txn_count(ruma_bm *bm, int delta);

/* ruma_bm_optimistic_child — ruma_bm_optimistic of `child`, a page id read
 * optimistically from page `parent` (at `pversion`): when child can be read
 * at once it is, without touching parent; before anything else (a wait, a
 * read of the child from the store, the answer -EINVAL for a child outside
 * the store) parent is validated first, so that an id read from a page that
 * changed meanwhile is never acted on (RUMA_RESTART then).  The caller
 * still validates parent afterwards, as with ruma_bm_optimistic. */
int ruma_bm_optimistic_child(ruma_bm *bm, ruma_pid parent, uint64_t pversion, ruma_pid child,
			     uint64_t *version, void **page);

/*
 * ruma_bm_page_check — a check of the caller's bytes [0, RUMA_BM_PAGE_DATA)
 * of a page image just read from the store, after its trailer passed:
 * NULL if the image is acceptable, else what is wrong (a constant string).
 * [pid_lo, pid_hi) are the data-page ids of the store (a page id stored in
 * the image outside them points nowhere).  It must read nothing outside
 * the page and be safe to call from any thread.
 *
 * ruma_bm_set_page_check — install check for every later read of a page
 * from the file (synchronous faults and asynchronous reads; NULL: none,
 * the default).  A page that fails is RUMA_ECORRUPT exactly as one whose
 * checksum fails: a message naming the file, the page and the reason, and
 * the page stays evicted.  A structure that owns every data page of the
 * store installs it (the B-tree does, at ruma_btree_open / _create).
 * Returns true when no page has become resident while no check was
 * installed (so every page in memory was checked or built by the caller);
 * false when some were (recovery at open reads and changes pages before
 * any check can be installed): the caller validates those itself before
 * relying on them.  Call it before other threads use the manager.
 */
typedef const char *(*ruma_bm_page_check)(const void *page, ruma_pid pid_lo, ruma_pid pid_hi);
bool ruma_bm_set_page_check(ruma_bm *bm, ruma_bm_page_check check);

/* ---- asynchronous reads ----------------------------------------------------
 *
 * A thread may keep many page reads in flight (io_uring) instead of waiting
 * for each: ruma_bm_optimistic_async never blocks.  When the page is
 * evicted it latches the page exclusively for the read (as a synchronous
 * fault does: the page counts as resident from then on), queues the read
 * and returns RUMA_BM_PENDING; the caller parks the operation and later
 * learns from ruma_bm_aio_reap, under the tag it gave, that the read
 * completed (result 0: the page is resident and unlatched, restart the
 * operation) or failed (a negative errno, RUMA_ESHORTIO for a short read;
 * the page stays evicted).  While the page is latched by anyone — also by
 * this thread's own read — it returns RUMA_BM_BUSY: retry after reaping.
 * Every read a thread queued is finished by that thread, in ruma_bm_aio_reap
 * or whenever it waits for a latch, so it never waits for itself.  Where
 * io_uring is refused the call faults the page in synchronously instead.
 * A thread must reap every tagged read before it stops using the manager.
 */

#define RUMA_BM_PENDING 1 /* read queued; completion reported by ruma_bm_aio_reap */
#define RUMA_BM_BUSY 2    /* latched or no room right now: reap, then retry */

/*
 * ruma_bm_optimistic_async — ruma_bm_optimistic without waiting: 0 with
 * *version and *page (resident), RUMA_BM_PENDING (a read for pid was
 * queued under tag), RUMA_BM_BUSY, or an error (-EINVAL for a pid outside
 * the store, an eviction error).
 */
int ruma_bm_optimistic_async(ruma_bm *bm, ruma_pid pid, uint64_t tag, uint64_t *version,
			     void **page);

typedef struct ruma_bm_aio_done {
	uint64_t tag; /* as given to ruma_bm_optimistic_async */
	int result;   /* 0 (page resident) or the read's error */
} ruma_bm_aio_done;

/*
 * ruma_bm_aio_reap — submit this thread's queued reads and collect up to
 * max finished ones into out (*n of them).  With wait, blocks until at
 * least one is finished when none is and some are in flight.  Returns 0 or
 * the error of a failed submission (the reads it concerned are reported
 * failed with it).
 */
int ruma_bm_aio_reap(ruma_bm *bm, bool wait, ruma_bm_aio_done *out, unsigned max, unsigned *n);

/* ruma_bm_aio_inflight — reads this thread has queued or in flight whose
 * completion it has not collected yet. */
unsigned ruma_bm_aio_inflight(ruma_bm *bm);

/*
 * ruma_bm_prefetch — start reading those of pids[0, n) that are evicted
 * (one submission), without tags: their completion is handled internally
 * (a failed read leaves the page evicted; the next access reads it again
 * and reports its own error).  Pages that are resident or latched, and
 * pages for which there is no room without waiting, are skipped.  Only
 * the first phys_pages / 8 pids (at least 1) are looked at, so read-ahead
 * never holds more than an eighth of the pool (a larger window in a small
 * pool would evict its own pages before they are used).  Returns how many
 * reads were started.  ruma_bm_aio_drain waits for them.
 */
unsigned ruma_bm_prefetch(ruma_bm *bm, const ruma_pid *pids, unsigned n);

/*
 * ruma_bm_hints — what a layer above needs to give the CPU cache hints for
 * pages itself, inline (a call per hint costs more than the hint on a path
 * as short as one level of a descent): the latch words, the pool's first
 * byte and the number of page ids.  Fixed for the manager's life; filled
 * by ruma_bm_get_hints.
 */
typedef struct ruma_bm_hints {
	const uint64_t *state;
	const char *pool;
	uint64_t pages;
} ruma_bm_hints;

void ruma_bm_get_hints(ruma_bm *bm, ruma_bm_hints *out);

/* ruma_bm_hint_head — a CPU cache hint: start loading pid's latch word and
 * the first `bytes` (at most 256) of its page, so that a walk about to
 * latch and read it (a descent's child, a scan's next leaf) finds them
 * there.  Nothing is faulted, read from the device or latched; a pid
 * outside the pool or an evicted page only wastes the hint.  Always
 * inlined: GCC treats an out-of-line part of it as a call without effects
 * and deletes the call, prefetches and all. */
__attribute__((always_inline)) static inline void ruma_bm_hint_head(const ruma_bm_hints *h, ruma_pid pid, unsigned bytes)
{
	if (pid < h->pages) {
		const char *page = h->pool + pid * (uint64_t)RUMA_BM_PAGE_SIZE;
		__builtin_prefetch(&h->state[pid]);
		__builtin_prefetch(page);
		if (bytes > 64)
			__builtin_prefetch(page + 64);
		if (bytes > 128)
			__builtin_prefetch(page + 128);
		if (bytes > 192)
			__builtin_prefetch(page + 192);
	}
}

/* Pages a flush (checkpoint, close) copies and writes at once: one
 * io_uring submission or one pwritev per contiguous run of them.  Each is
 * latched shared only while it is copied (128 KiB of copies in all). */
#define RUMA_BM_FLUSH_CHUNK 32u

/* ruma_bm_all_resident — every allocated page is resident (none evicted):
 * read-ahead has nothing to do.  A hint, read without locks: the answer
 * may be stale as soon as a page is evicted or allocated. */
bool ruma_bm_all_resident(ruma_bm *bm);

/* ruma_bm_aio_drain — wait until none of this thread's untagged reads
 * (prefetches) is in flight. */
void ruma_bm_aio_drain(ruma_bm *bm);

/* What a page id is to the allocator (ruma_bm_page_state_of). */
typedef enum ruma_bm_page_state {
	RUMA_BM_PAGE_META,   /* one of the metadata pages (header, bitmap) */
	RUMA_BM_PAGE_USED,   /* a data page handed out and not freed */
	RUMA_BM_PAGE_FREE,   /* a data page freed (its bit set in the bitmap) */
	RUMA_BM_PAGE_BEYOND, /* at or above the high-water mark: never handed out */
} ruma_bm_page_state;

/*
 * ruma_bm_page_state_of — the allocation state of pid, read under the
 * allocator's lock (a checker's question: the answer may be stale as soon
 * as another thread allocates or frees).
 */
ruma_bm_page_state ruma_bm_page_state_of(ruma_bm *bm, ruma_pid pid);

/* ruma_bm_high_water — the allocation high-water mark: page ids [0, it)
 * were handed out (metadata pages included), ids from it on never were. */
uint64_t ruma_bm_high_water(ruma_bm *bm);

/* ---- logging ---------------------------------------------------------------- */

/*
 * ruma_bm_op_end — the calling thread finished one logical operation (an
 * insert, an update, a removal with its merges); rc is the operation's
 * result.  Without a log: returns rc (one branch).  With a log: returns the
 * first log error met while logging the operation's changes (the operation
 * is then not durable, the log is dead, and the store must be closed and
 * reopened, which recovers it to its last durable state); else, in SYNC
 * mode, waits until those changes are durable (group commit: one
 * fdatasync covers every thread waiting at that moment) and returns rc or
 * the sync's error.  The thread must hold no exclusive latch.
 */
int ruma_bm_op_end(ruma_bm *bm, int rc);

/*
 * Log records of the layers above (transactions, include/ruma/txn.h).  With
 * a log, ruma_bm_log appends one record of `type` whose payload starts with
 * a u64 transaction id (0 = "this record's own LSN": the first record of a
 * transaction, whose LSN becomes its id, returned in *lsn); *end gets the LSN
 * to pass to ruma_bm_log_flush.  Recovery keeps the UNDO records of every
 * transaction that has neither a COMMIT nor an END record: the losers.
 * Their undo records are carried into the next session's log and handed to
 * the layer above with ruma_bm_undo_take; until that layer has undone them
 * and logged an END for each, the store is never marked closed cleanly (so
 * a crash or a close in between recovers them again).
 * A later UNDO record of a transaction (id != 0) for which the caller asks
 * neither lsn nor end, made inside a declaring operation while the thread
 * holds a page exclusively, is carried in the record of the thread's next
 * page change (one append for both, mtr.c); it is in the log, before that
 * change and before any later record of the thread, by the time
 * ruma_bm_op_end returns.
 * Errors: -EINVAL (no log, bad type or payload), the log's I/O error.
 */
#define RUMA_BM_LOG_UNDO 16u   /* u64 txn id, then the layer's undo payload */
#define RUMA_BM_LOG_COMMIT 17u /* u64 txn id */
#define RUMA_BM_LOG_END 18u    /* u64 txn id: rolled back completely */

bool ruma_bm_logging(ruma_bm *bm);
/* ruma_bm_durability_of — what this session does: OFF (no log), SYNC or
 * ASYNC (a session that must undo a crash's transactions keeps a SYNC log
 * even when opened OFF).  The transaction layer's commit waits for the log
 * only in SYNC. */
ruma_bm_durability ruma_bm_durability_of(ruma_bm *bm);
int ruma_bm_log(ruma_bm *bm, uint16_t type, const void *payload, size_t len,
		uint64_t *lsn, uint64_t *end);

/*
 * Flush pipelining (with ruma_bm_log_durable and ruma_bm_log_flush of bm.h).
 * ruma_bm_log_request asks for the log before `end` to become durable
 * without waiting (the log's background flusher writes it, grouped with
 * every other request meanwhile); ruma_bm_log_end is the LSN just after the
 * last record appended.  ruma_bm_log_request returns 0, -EINVAL (no log) or
 * the log's error.
 */
int ruma_bm_log_request(ruma_bm *bm, uint64_t end);
uint64_t ruma_bm_log_end(ruma_bm *bm);

/*
 * ruma_bm_op_declare — the calling thread's operation declares its writes:
 * until its ruma_bm_op_end, every page it latches exclusively is logged from
 * the byte ranges passed to ruma_bm_wrote instead of a comparison with a
 * copy taken at the latch (which this skips).  The caller must then declare
 * every byte it writes into such a page before it releases the page's latch;
 * builds with RUMA_ASSERT on check that, still taking the copy.  Without a
 * log: nothing.  The B-tree uses it for all its modifying operations.
 */
void ruma_bm_op_declare(ruma_bm *bm);

/*
 * ruma_bm_wrote — [p, p + len) of a page the calling thread holds
 * exclusively in a declaring operation was (or is about to be) written.
 * Anywhere else (no declaring operation, a page latched before it, memory
 * that is not such a page) it does nothing, so functions that also write
 * private copies of pages may call it unconditionally.
 */
void ruma_bm_wrote(const void *p, size_t len);

/*
 * ruma_bm_wrote_unlogged — [p, p + len) of a page the calling thread holds
 * exclusively in a declaring operation was written (before this call) with
 * bytes that need no redo: the log leaves them out, and a page rebuilt by
 * recovery holds there what its last image or record held.  Only for bytes
 * nothing relies on after a restart and no declared move covers (a B-tree
 * leaf's mark, which matters only while the process that wrote it runs).
 * Costs nothing in builds without RUMA_ASSERT; with it, the copy the write
 * check compares with takes the new bytes.
 */
void ruma_bm_wrote_unlogged(const void *p, size_t len);

/*
 * ruma_bm_moved — the calling thread moved len bytes from src to dst
 * (memmove) inside a page it holds exclusively in a declaring operation.
 * When the move is the first write to the page since its last record, the
 * record names the move (six bytes) instead of the bytes it wrote; else it
 * is the same as ruma_bm_wrote(dst, len).  Anywhere else it does nothing.
 */
void ruma_bm_moved(const void *dst, const void *src, size_t len);

/*
 * ruma_bm_page_hole — where a page's owner keeps bytes that do not matter:
 * [*off, *off + *len) of the caller's part of the page (RUMA_BM_PAGE_DATA
 * bytes) is free space that nothing reads before it writes it (a B-tree
 * node's gap between its slot array and its heap).  true with the hole, or
 * false when the page has none (or is not a page the owner knows).  It is
 * called with the page latched exclusively by the calling thread, between
 * two of its writes to it, and must read nothing outside the page.
 *
 * ruma_bm_set_page_hole — install hole for every later full page image of
 * the log (NULL: none, the default): the image leaves the hole out, the
 * hole of the page in memory is zeroed as the image is logged, and
 * recovery writes the same zeros (docs/wal.md).  A hole outside the page
 * is ignored.  A structure that owns every data page of the store
 * installs it (the B-tree does, with its page check).
 */
typedef bool (*ruma_bm_page_hole)(const void *page, unsigned *off, unsigned *len);
void ruma_bm_set_page_hole(ruma_bm *bm, ruma_bm_page_hole hole);

/* ruma_bm_op_defer — on: the calling thread's ruma_bm_op_end no longer waits
 * for durability (a transaction waits once, at commit); off: back to normal. */
void ruma_bm_op_defer(ruma_bm *bm, bool on);

/* One loser's undo record handed over by ruma_bm_undo_take. */
typedef struct ruma_bm_undo {
	uint64_t txn;        /* transaction id */
	uint64_t lsn;        /* where it was logged (newest first in the list) */
	uint32_t len;        /* payload bytes after the id */
	const void *payload;
} ruma_bm_undo;

/* ruma_bm_undo_take — the losers' undo records, newest first (*n of them;
 * 0 and NULL when there are none); the list belongs to the caller, who frees
 * it with ruma_bm_undo_free after undoing them and logging an END for each
 * transaction.  Taken once: a second call gives none. */
void ruma_bm_undo_take(ruma_bm *bm, ruma_bm_undo **list, size_t *n);
void ruma_bm_undo_free(ruma_bm_undo *list, size_t n);
/* ruma_bm_undo_done — the caller finished the list it took: the store may be
 * marked clean again at close. */
void ruma_bm_undo_done(ruma_bm *bm);

/* ---- extents (large values: docs/blob.md, src/bm/extent.c) ---------------------
 *
 * An extent is n contiguous pages [first, first + n) whose bytes belong to
 * the caller whole (no trailer): contiguous in the file and at
 * ruma_bm_extent_pin's address.  The caller keeps a CRC-32C of the bytes it
 * wrote and passes it to every read, which checks it whenever pages come
 * from the file.  Extent pages are written once (ruma_bm_extent_write) and
 * never dirty in the pool.  The allocation and the free are logged (redone
 * by recovery, never undone: the caller finds what an unfinished
 * transaction allocated, e.g. with a store check after recovery).
 */

/* ruma_bm_extent_alloc — n pages in one run into *first, from the free-run
 * index (no bitmap scan) or the end of the store.  -EINVAL, RUMA_EVIRTFULL,
 * -ENOSPC (file), -ENOMEM, the log's error. */
int ruma_bm_extent_alloc(ruma_bm *bm, uint64_t n, ruma_pid *first);

/* ruma_bm_extent_free — free [first, first + n) (merged with free runs next
 * to it).  Pages still resident stay until evicted or reused; nobody may
 * hold a pin on them any more.  -EINVAL when a page is free already or out
 * of range (reported), the log's error. */
int ruma_bm_extent_free(ruma_bm *bm, ruma_pid first, uint64_t n);

/* ruma_bm_extent_write — write len bytes of data to pages from pid on
 * (pages of an extent allocated by the caller and not yet read by anyone;
 * the last page's rest is zero), around the pool: whole aligned pages
 * straight from data, one pwrite per 16 MiB, the rest through the calling
 * thread's 4 MiB bounce buffer.  The pages are not resident afterwards (a
 * pin reads them from the file).  I/O errors (reported), -ENOMEM. */
int ruma_bm_extent_write(ruma_bm *bm, ruma_pid pid, const void *data, size_t len);

/* ruma_bm_pages_write — write n (at most 4096) whole pages from pages
 * (page aligned, n * RUMA_BM_PAGE_SIZE bytes, the caller's data part of
 * each filled) to [first, first + n) of an extent the caller allocated and
 * nobody has read, as ordinary data pages: each is sealed in the buffer
 * (trailer with pid, LSN 0 and CRC; page.c) and the run goes out in one
 * write around the pool.  From then on the pages are the store's like any
 * other (a fix reads them from the file, a change logs a full image first,
 * ruma_bm_free frees one), and the next log write syncs the store before
 * it (as for ruma_bm_extent_write), so a record that names them is never
 * durable before they are.  A bulk loader's pages (src/btree/bulk.c).
 * -EINVAL, -EACCES (read-only), I/O errors (reported), -ENOMEM. */
int ruma_bm_pages_write(ruma_bm *bm, ruma_pid first, uint64_t n, void *pages);

/* ruma_bm_extent_sync — make every extent write completed before the call
 * durable (group sync: one fdatasync of the store serves every thread
 * waiting meanwhile).  A failed sync is reported and sticks (every later
 * call returns it). */
int ruma_bm_extent_sync(ruma_bm *bm);

/* ruma_bm_extent_pin — pin the n pages of an extent whose first `bytes`
 * bytes have CRC-32C crc: each is latched shared until
 * ruma_bm_extent_unpin; missing ones are read with one read per run of
 * them, and then the CRC is checked (RUMA_ECORRUPT, reported, nothing
 * pinned).  *addr gets the extent's first byte.  -ENOMEM when n exceeds
 * ruma_bm_extent_pin_max, I/O errors, eviction errors. */
int ruma_bm_extent_pin(ruma_bm *bm, ruma_pid first, uint64_t n, uint64_t bytes, uint32_t crc,
		       void **addr);
void ruma_bm_extent_unpin(ruma_bm *bm, ruma_pid first, uint64_t n);

/* ruma_bm_extent_addr — the address of page first (of an extent the
 * caller holds pinned). */
void *ruma_bm_extent_addr(ruma_bm *bm, ruma_pid first);

/* ruma_bm_extents_used — whether the store ever allocated an extent (kept
 * in page 0 and redone by recovery): a store without one needs no search
 * for extents a crash left unnamed. */
bool ruma_bm_extents_used(ruma_bm *bm);

/* ruma_bm_extent_resident — whether every page of [first, first + n) is in
 * the pool now (a hint: a page may come or go at once). */
bool ruma_bm_extent_resident(ruma_bm *bm, ruma_pid first, uint64_t n);

/* ruma_bm_extent_pin_max — the most pages one pin may hold (half the pool). */
uint64_t ruma_bm_extent_pin_max(const ruma_bm *bm);

/* ruma_bm_extent_read — copy [off, off + len) of the extent's bytes into
 * buf.  With fill, an extent that fits ruma_bm_extent_pin_max is pinned for
 * the copy (missing pages enter the pool); without it, an extent with a
 * page missing from the pool is read around it, as is one too large to pin:
 * whole from the file (to check its CRC), straight into buf where buf is
 * page aligned, else through the thread's 4 MiB bounce buffer.  -EINVAL for
 * a range outside the extent; else errors as ruma_bm_extent_pin. */
int ruma_bm_extent_read(ruma_bm *bm, ruma_pid first, uint64_t n, uint64_t bytes, uint32_t crc,
			uint64_t off, void *buf, size_t len, bool fill);

/* ---- metadata ------------------------------------------------------------- */

#define RUMA_BM_META_SLOTS 64

/* Persistent 64-bit slots (e.g. the B-tree catalog root), saved at
 * flush/close and found again at open (with a log, ruma_bm_meta_set is
 * logged too, so recovery finds it).  slot < RUMA_BM_META_SLOTS. */
int ruma_bm_meta_get(ruma_bm *bm, unsigned slot, uint64_t *value);
int ruma_bm_meta_set(ruma_bm *bm, unsigned slot, uint64_t value);

/* ruma_bm_report — hand one line (no newline) to the manager's message
 * callback (stderr with a "ruma bm: " prefix when none is set), so that the
 * structures built on the manager report through the same channel. */
void ruma_bm_report(ruma_bm *bm, const char *line);

#ifdef __cplusplus
}
#endif
#endif
