/*
 * bm.h — the virtual-memory assisted buffer manager (vmcache design).
 *
 * The whole store is one virtual reservation of `virt_bytes` (MAP_NORESERVE,
 * plus a guard so optimistic reads past the end are harmless); page `pid`
 * lives at base + pid * RUMA_BM_PAGE_SIZE.  At most `phys_bytes` of it is
 * resident; the rest is evicted with madvise(MADV_DONTNEED) and read back
 * from the file on the next access.  Each page has one 64-bit state word
 * (8-bit state: unlocked / shared count / exclusive / marked / evicted, and a
 * 56-bit version), which gives three kinds of latch:
 *
 *   optimistic  ruma_bm_optimistic → read the page → ruma_bm_validate;
 *               a concurrent writer or eviction makes validate return
 *               RUMA_RESTART, and the caller restarts its operation.  Data
 *               read optimistically may be garbage until validated: callers
 *               bounds-check everything they read before using it.
 *   shared      ruma_bm_fix_s / ruma_bm_unfix_s (or upgrade from optimistic)
 *   exclusive   ruma_bm_fix_x / ruma_bm_unfix_x (or upgrade from optimistic);
 *               an exclusively latched page is considered dirty.
 *
 * Restarts are return values (RUMA_RESTART), never exceptions or longjmp.
 * Every function returning int gives 0, RUMA_RESTART (only where stated), or
 * a negative errno / RUMA_E* code: an I/O error or short file is reported to
 * the caller, never turned into a zero page or a hang.
 *
 * Threads: any thread may call in; the buffer manager keeps per-thread I/O
 * state internally (at most `max_threads` threads at once; a thread beyond
 * that gets -EUSERS, and the message is given once per manager).
 */
#ifndef RUMA_BM_H
#define RUMA_BM_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Page format.  A page is RUMA_BM_PAGE_SIZE bytes in memory and on disk;
 * the caller owns bytes [0, RUMA_BM_PAGE_DATA) only.  The last
 * RUMA_BM_PAGE_TRAILER bytes are the buffer manager's: the page id, a
 * log sequence number reserved for a write-ahead log, a format tag and a
 * CRC-32C of the rest of the page, filled in whenever the page is written
 * and checked whenever it is read back from the store.  A page that fails
 * the check is never handed out: the call that needed it returns
 * RUMA_ECORRUPT (and the message callback names the file, page id and the
 * checksums).  Callers must not write the trailer and must not rely on its
 * contents.
 */
#define RUMA_BM_PAGE_SIZE 4096u
#define RUMA_BM_PAGE_TRAILER 32u
#define RUMA_BM_PAGE_DATA (RUMA_BM_PAGE_SIZE - RUMA_BM_PAGE_TRAILER)

typedef uint64_t ruma_pid;
typedef struct ruma_bm ruma_bm;

/* How a thread waits for a page latched by another thread. */
typedef enum ruma_bm_wait {
	RUMA_BM_WAIT_SPIN,  /* pause-loop (the original vmcache) */
	RUMA_BM_WAIT_YIELD, /* spin, then sched_yield, then short sleeps (the fork's yopt) */
	RUMA_BM_WAIT_FUTEX, /* futex wait on the state word itself (state stays 8 bytes) */
	RUMA_BM_WAIT_MUTEX, /* per-page mutex + condition variable (the fork's mutex variant) */
} ruma_bm_wait;

/* How evicted pages are given back to the kernel. */
typedef enum ruma_bm_evict {
	RUMA_BM_EVICT_MADVISE,         /* one madvise(MADV_DONTNEED) per page (the original) */
	RUMA_BM_EVICT_PROCESS_MADVISE, /* one process_madvise over the whole batch */
} ruma_bm_evict;

/* How dirty pages are written back. */
typedef enum ruma_bm_write {
	RUMA_BM_WRITE_PWRITE, /* one pwrite per page */
	RUMA_BM_WRITE_URING,  /* io_uring batches */
} ruma_bm_write;

/*
 * Durability (docs/wal.md).  OFF: no log; pages reach the store only when
 * evicted, flushed or closed, and a store not closed cleanly is refused
 * (RUMA_EUNCLEAN).  SYNC / ASYNC: every change of a page made under an
 * exclusive latch is logged (physical redo) in the write-ahead log
 * <path>.wal; a store not closed cleanly is recovered from its log when it
 * is opened.  SYNC: ruma_bm_op_end (called by every modifying B-tree
 * operation) returns only when the operation's log records are durable.
 * ASYNC: it returns at once; a background flusher makes the log durable
 * every wal_flush_ms, so a crash may lose the last few milliseconds of
 * operations, never the consistency of the store.
 */
typedef enum ruma_bm_durability {
	RUMA_BM_DURABLE_OFF,
	RUMA_BM_DURABLE_SYNC,
	RUMA_BM_DURABLE_ASYNC,
} ruma_bm_durability;

typedef struct ruma_bm_config {
	const char *path;       /* file (created if missing) or block device */
	uint64_t virt_bytes;    /* VIRTGB: size of the virtual reservation */
	uint64_t phys_bytes;    /* PHYSGB: buffer pool size (resident pages) */
	unsigned batch;         /* BATCH: pages per eviction round */
	unsigned max_threads;   /* threads that may use the manager at once */
	ruma_bm_wait wait;
	ruma_bm_evict evict;
	ruma_bm_write write;
	bool reuse_pages;       /* free-space bitmap: reuse freed page ids */
	bool fresh;             /* discard existing contents and start empty (a
				   regular file that has contents but is not a
				   ruma store is refused: RUMA_ENOTSTORE) */
	bool force;             /* with fresh: overwrite such a file anyway */
	bool direct_io;         /* O_DIRECT (default true; falls back with a note
				   only if the file system refuses it) */
	/* Where the manager reports what the caller should know (a refused
	 * configuration and why, a fallback, a limit and its fix): one line of
	 * text without newline per call.  NULL (the default) = stderr, prefixed
	 * "ruma bm: ".  May be called from any thread using the manager. */
	void (*message)(void *ctx, const char *line);
	void *message_ctx;
	bool cleaner;           /* page cleaner: a background thread writes the
				   dirty pages the clock evicts next, so that
				   evicting threads rarely wait for write-back
				   (default true; CLEANER=0 in ruma vmcache) */
	ruma_bm_durability durability; /* default OFF */
	unsigned wal_flush_ms;  /* ASYNC: background log flush period (0 = 5 ms) */
	bool salvage_log;       /* recovery: a log damaged in the middle (a bad record
				   followed by valid ones) is replayed up to the damage
				   and the rest discarded, with a message saying how
				   many records and bytes (default false: such a log is
				   RUMA_ECORRUPT; --salvage-log in ruma vmcache) */
} ruma_bm_config;

/* ruma_bm_config_default — defaults: /tmp/bm, 16 GiB virtual, 4 GiB physical,
 * batch 64, 128 threads, spin, process_madvise, uring, reuse on, fresh off,
 * O_DIRECT, page cleaner on.  The batched paths fall back at open, with one message, where
 * the kernel refuses them: uring → pwrite (pwritev per run of neighbouring
 * pages), process_madvise → madvise per page. */
RUMA_API void ruma_bm_config_default(ruma_bm_config *c);

/*
 * ruma_bm_open — open (or create) the store at c->path and map it.  An
 * existing store is found again with all its pages and metadata unless
 * c->fresh.
 *
 * The store file (or block device) is locked exclusively (flock) until
 * ruma_bm_close: a second opener, in another process or in this one, gets
 * RUMA_ELOCKED and a message naming the holder's pid where /proc/locks
 * shows it.  Before returning, open records durably in page 0 that the
 * store is open; only a successful ruma_bm_close clears that.  A store that
 * was not closed cleanly (its process was killed, crashed or lost power)
 * is refused with RUMA_EUNCLEAN: evicted pages may have been written after
 * its metadata, so its contents cannot be trusted; recreate it (c->fresh).
 * Exception: a store that was open with a log (durability SYNC or ASYNC) is
 * recovered from <path>.wal instead, whatever c->durability says now: the
 * logged changes are redone on the pages, the allocation state is rebuilt,
 * log is kept for this session when it goes on with one (c->durability SYNC
 * or ASYNC, or transactions still to be undone: the redone pages are
 * written later, by eviction and checkpoints), else everything is written
 * and synced and the log emptied; open goes on; the message callback
 * says what recovery did, and ruma_bm_get_recovery gives the numbers.  A
 * log that cannot be read or does not match the pages is RUMA_ECORRUPT, and
 * so is one that does not hold what page 0 says it must (docs/wal.md): a
 * missing, empty or too short log (ending before the LSN page 0 recorded,
 * or starting after its checkpoint), the log of another store (the log's
 * header and page 0 carry the store's random identity), or a log damaged in
 * the middle (unless c->salvage_log); the message names the log file
 * expected and the store's id.
 * A durable store (page 0 records that it was used with a log) is always
 * opened with its log: with c->durability OFF it runs with SYNC, and says so.
 *
 * Errors: -EINVAL (phys > virt, batch 0, ...), -EACCES/-ENOENT (path),
 * -ENOSPC (device smaller than the store), RUMA_ELOCKED (in use),
 * RUMA_EUNCLEAN (not closed cleanly), RUMA_ENOTSTORE (a file with contents
 * that is not a ruma store: refused without fresh, and with fresh unless
 * force; or a store of an older format), RUMA_ECORRUPT (a ruma store whose
 * metadata is damaged), -ENOMEM.  Messages name the fields of c (fresh,
 * force, virt_bytes, ...), not a program's options.  *out owns everything; release
 * with ruma_bm_close.
 */
RUMA_API int ruma_bm_open(const ruma_bm_config *c, ruma_bm **out);

/*
 * ruma_bm_close — write every dirty page and the metadata (allocation state,
 * free-space bitmap, meta slots), fsync, then mark the store closed cleanly
 * in page 0 (fdatasync), release the lock, unmap and free.  No thread may use
 * the manager any more.  Returns the first error met; on an error the store
 * stays marked as not closed cleanly (the next open gets RUMA_EUNCLEAN).
 * Resources are freed in any case, except for -EBUSY: with a transaction
 * (txn.h) still open nothing is done (its uncommitted changes must not
 * become durable): commit or abort it, then close again.
 */
RUMA_API int ruma_bm_close(ruma_bm *bm);

/* ruma_bm_txn_count — the transaction layer (txn.h) counts its open
 * transactions here: +1 at begin, -1 when one ends (ruma_bm_close refuses
 * to close under an open one). */
RUMA_API void ruma_bm_txn_count(ruma_bm *bm, int delta);

/* ruma_bm_flush — write all dirty pages and the metadata now (checkpoint),
 * then fsync.  The store stays marked open (only close marks it clean).  Other threads may keep working; the calling thread must hold
 * no latch (flush waits for exclusively latched dirty pages).  Returns the
 * first error met (the pages that failed stay dirty). */
RUMA_API int ruma_bm_flush(ruma_bm *bm);

/* ---- latches ------------------------------------------------------------- */

/*
 * ruma_bm_optimistic — begin an optimistic read of pid: waits while it is
 * exclusively latched, faults it in if evicted, and returns its version in
 * *version and its address in *page.  Returns 0 or an I/O error.
 */
RUMA_API int ruma_bm_optimistic(ruma_bm *bm, ruma_pid pid, uint64_t *version, void **page);

/* ruma_bm_validate — 0 if pid still has `version`, else RUMA_RESTART. */
RUMA_API int ruma_bm_validate(ruma_bm *bm, ruma_pid pid, uint64_t version);

/* ruma_bm_optimistic_child — ruma_bm_optimistic of `child`, a page id read
 * optimistically from page `parent` (at `pversion`): when child can be read
 * at once it is, without touching parent; before anything else (a wait, a
 * read of the child from the store, the answer -EINVAL for a child outside
 * the store) parent is validated first, so that an id read from a page that
 * changed meanwhile is never acted on (RUMA_RESTART then).  The caller
 * still validates parent afterwards, as with ruma_bm_optimistic. */
RUMA_API int ruma_bm_optimistic_child(ruma_bm *bm, ruma_pid parent, uint64_t pversion,
				      ruma_pid child, uint64_t *version, void **page);

/* ruma_bm_upgrade_x / _s — turn an optimistic read into an exclusive /
 * shared latch if the version is unchanged; RUMA_RESTART otherwise. */
RUMA_API int ruma_bm_upgrade_x(ruma_bm *bm, ruma_pid pid, uint64_t version);
RUMA_API int ruma_bm_upgrade_s(ruma_bm *bm, ruma_pid pid, uint64_t version);

/* ruma_bm_fix_x / _s — latch pid exclusively / shared, faulting it in;
 * *page gets its address.  Returns 0 or an I/O error; RUMA_ECORRUPT when
 * the image read from the store fails its checksum or names another page
 * (the page stays evicted; the same holds for ruma_bm_optimistic). */
RUMA_API int ruma_bm_fix_x(ruma_bm *bm, ruma_pid pid, void **page);
RUMA_API int ruma_bm_fix_s(ruma_bm *bm, ruma_pid pid, void **page);

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
RUMA_API bool ruma_bm_set_page_check(ruma_bm *bm, ruma_bm_page_check check);

/* ruma_bm_unfix_x — release an exclusive latch (bumps the version; the page
 * is dirty).  ruma_bm_unfix_s — release a shared latch. */
RUMA_API void ruma_bm_unfix_x(ruma_bm *bm, ruma_pid pid);
RUMA_API void ruma_bm_unfix_s(ruma_bm *bm, ruma_pid pid);

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

/* Largest number of reads one thread keeps queued or in flight. */
#define RUMA_BM_AIO_MAX 256u

/*
 * ruma_bm_optimistic_async — ruma_bm_optimistic without waiting: 0 with
 * *version and *page (resident), RUMA_BM_PENDING (a read for pid was
 * queued under tag), RUMA_BM_BUSY, or an error (-EINVAL for a pid outside
 * the store, an eviction error).
 */
RUMA_API int ruma_bm_optimistic_async(ruma_bm *bm, ruma_pid pid, uint64_t tag,
				      uint64_t *version, void **page);

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
RUMA_API int ruma_bm_aio_reap(ruma_bm *bm, bool wait, ruma_bm_aio_done *out, unsigned max,
			      unsigned *n);

/* ruma_bm_aio_inflight — reads this thread has queued or in flight whose
 * completion it has not collected yet. */
RUMA_API unsigned ruma_bm_aio_inflight(ruma_bm *bm);

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
RUMA_API unsigned ruma_bm_prefetch(ruma_bm *bm, const ruma_pid *pids, unsigned n);

/* ruma_bm_aio_drain — wait until none of this thread's untagged reads
 * (prefetches) is in flight. */
RUMA_API void ruma_bm_aio_drain(ruma_bm *bm);

/* What this machine's kernel offers the buffer manager, found by trying it
 * (ruma_bm_probe_io); a store opened with the defaults uses the batched
 * paths where they are available. */
typedef struct ruma_bm_io_support {
	int uring;           /* 0 or the error io_uring_setup gave */
	int process_madvise; /* 0 or the error process_madvise(MADV_DONTNEED) on self gave */
} ruma_bm_io_support;

/* ruma_bm_probe_io — try io_uring and process_madvise once (no store needed). */
RUMA_API void ruma_bm_probe_io(ruma_bm_io_support *out);

/* ---- allocation ---------------------------------------------------------- */

/*
 * ruma_bm_alloc — a new, zeroed page, returned exclusively latched.  Reuses a
 * freed page id when reuse_pages is on.  RUMA_EVIRTFULL when the reservation
 * is full (message: raise VIRTGB).
 */
RUMA_API int ruma_bm_alloc(ruma_bm *bm, ruma_pid *pid, void **page);

/*
 * ruma_bm_free — release pid, which the caller holds exclusively; the latch
 * is released too.  The id is reused by a later ruma_bm_alloc when
 * reuse_pages is on (tracked in a bitmap persisted in the file).  -EINVAL
 * when pid is not an allocated data page or not exclusively latched.
 */
RUMA_API int ruma_bm_free(ruma_bm *bm, ruma_pid pid);

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
RUMA_API ruma_bm_page_state ruma_bm_page_state_of(ruma_bm *bm, ruma_pid pid);

/* ruma_bm_high_water — the allocation high-water mark: page ids [0, it)
 * were handed out (metadata pages included), ids from it on never were. */
RUMA_API uint64_t ruma_bm_high_water(ruma_bm *bm);

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
RUMA_API int ruma_bm_op_end(ruma_bm *bm, int rc);

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
 * Errors: -EINVAL (no log, bad type or payload), the log's I/O error.
 */
#define RUMA_BM_LOG_UNDO 16u   /* u64 txn id, then the layer's undo payload */
#define RUMA_BM_LOG_COMMIT 17u /* u64 txn id */
#define RUMA_BM_LOG_END 18u    /* u64 txn id: rolled back completely */

RUMA_API bool ruma_bm_logging(ruma_bm *bm);
/* ruma_bm_durability_of — what this session does: OFF (no log), SYNC or
 * ASYNC (a session that must undo a crash's transactions keeps a SYNC log
 * even when opened OFF).  The transaction layer's commit waits for the log
 * only in SYNC. */
RUMA_API ruma_bm_durability ruma_bm_durability_of(ruma_bm *bm);
RUMA_API int ruma_bm_log(ruma_bm *bm, uint16_t type, const void *payload, size_t len,
			 uint64_t *lsn, uint64_t *end);
RUMA_API int ruma_bm_log_flush(ruma_bm *bm, uint64_t end);

/*
 * Flush pipelining.  ruma_bm_log_request asks for the log before `end` to
 * become durable without waiting (the log's background flusher writes it,
 * grouped with every other request meanwhile); ruma_bm_log_durable is the
 * LSN up to which the log is durable now (0 without a log); ruma_bm_log_end
 * the LSN just after the last record appended.  A caller that acknowledges
 * its work only once ruma_bm_log_durable() >= its end never acknowledges
 * anything a crash can lose.  ruma_bm_log_request returns 0, -EINVAL (no
 * log) or the log's error.
 */
RUMA_API int ruma_bm_log_request(ruma_bm *bm, uint64_t end);
RUMA_API uint64_t ruma_bm_log_durable(ruma_bm *bm);
RUMA_API uint64_t ruma_bm_log_end(ruma_bm *bm);

/*
 * ruma_bm_op_declare — the calling thread's operation declares its writes:
 * until its ruma_bm_op_end, every page it latches exclusively is logged from
 * the byte ranges passed to ruma_bm_wrote instead of a comparison with a
 * copy taken at the latch (which this skips).  The caller must then declare
 * every byte it writes into such a page before it releases the page's latch;
 * builds with RUMA_ASSERT on check that, still taking the copy.  Without a
 * log: nothing.  The B-tree uses it for all its modifying operations.
 */
RUMA_API void ruma_bm_op_declare(ruma_bm *bm);

/*
 * ruma_bm_wrote — [p, p + len) of a page the calling thread holds
 * exclusively in a declaring operation was (or is about to be) written.
 * Anywhere else (no declaring operation, a page latched before it, memory
 * that is not such a page) it does nothing, so functions that also write
 * private copies of pages may call it unconditionally.
 */
RUMA_API void ruma_bm_wrote(const void *p, size_t len);

/* ruma_bm_op_defer — on: the calling thread's ruma_bm_op_end no longer waits
 * for durability (a transaction waits once, at commit); off: back to normal. */
RUMA_API void ruma_bm_op_defer(ruma_bm *bm, bool on);

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
RUMA_API void ruma_bm_undo_take(ruma_bm *bm, ruma_bm_undo **list, size_t *n);
RUMA_API void ruma_bm_undo_free(ruma_bm_undo *list, size_t n);
/* ruma_bm_undo_done — the caller finished the list it took: the store may be
 * marked clean again at close. */
RUMA_API void ruma_bm_undo_done(ruma_bm *bm);

/* What recovery did at the last ruma_bm_open (all zero if none ran). */
typedef struct ruma_bm_recovery {
	bool ran;
	uint64_t records;      /* log records read */
	uint64_t log_bytes;    /* bytes of log read */
	uint64_t pages_redone; /* page changes applied (page LSN older than the record) */
	uint64_t pages_skipped; /* page changes already on the page */
	uint64_t full_images;  /* full page images installed */
	uint64_t allocs, frees;
	uint64_t losers;       /* transactions without commit: undone by the layer above */
	uint64_t discarded_records, discarded_bytes; /* salvage_log: dropped after a damaged record */
	uint64_t usec;         /* wall time of recovery (incl. the final checkpoint when the log is not kept) */
} ruma_bm_recovery;

RUMA_API void ruma_bm_get_recovery(ruma_bm *bm, ruma_bm_recovery *out);

/* ---- metadata ------------------------------------------------------------- */

#define RUMA_BM_META_SLOTS 64

/* Persistent 64-bit slots (e.g. the B-tree catalog root), saved at
 * flush/close and found again at open (with a log, ruma_bm_meta_set is
 * logged too, so recovery finds it).  slot < RUMA_BM_META_SLOTS. */
RUMA_API int ruma_bm_meta_get(ruma_bm *bm, unsigned slot, uint64_t *value);
RUMA_API int ruma_bm_meta_set(ruma_bm *bm, unsigned slot, uint64_t value);

/* ---- statistics ------------------------------------------------------------ */

typedef struct ruma_bm_stats {
	uint64_t reads, writes;       /* pages read / written since open */
	uint64_t cleaned;             /* of the writes, those of the page cleaner */
	uint64_t evictions;           /* pages evicted since open */
	uint64_t pages_allocated;     /* page ids in use incl. the metadata pages
					 (space used / page size) */
	uint64_t pages_free;          /* freed ids available for reuse */
	uint64_t pages_resident;
	uint64_t restarts;            /* RUMA_RESTART returned by validate/upgrade */
	uint64_t state_bytes;         /* memory of the per-page latch state */
	uint64_t aio_waits;           /* times a thread blocked for one of its
					 asynchronous reads (lookup batches,
					 read-ahead) */
	uint64_t aio_wait_depth;      /* sum over those waits of the thread's reads
					 in flight: aio_wait_depth / aio_waits is
					 the queue depth per thread while it waited */
} ruma_bm_stats;

/* ruma_bm_get_stats — counters (approximate while threads run: each is read
 * on its own, without a lock, so a call never waits for the manager). */
RUMA_API void ruma_bm_get_stats(const ruma_bm *bm, ruma_bm_stats *out);

/* ruma_bm_report — hand one line (no newline) to the manager's message
 * callback (stderr with a "ruma bm: " prefix when none is set), so that the
 * structures built on the manager report through the same channel. */
RUMA_API void ruma_bm_report(ruma_bm *bm, const char *line);

/* Names for the option enums, and parsing them ("spin", "futex", ...).
 * The parse functions return 0 or RUMA_EPARSE. */
RUMA_API const char *ruma_bm_wait_name(ruma_bm_wait w);
RUMA_API const char *ruma_bm_evict_name(ruma_bm_evict e);
RUMA_API const char *ruma_bm_write_name(ruma_bm_write w);
RUMA_API int ruma_bm_wait_parse(const char *s, ruma_bm_wait *out);
RUMA_API int ruma_bm_evict_parse(const char *s, ruma_bm_evict *out);
RUMA_API int ruma_bm_write_parse(const char *s, ruma_bm_write *out);

#ifdef __cplusplus
}
#endif
#endif
