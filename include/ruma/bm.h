/*
 * bm.h — the virtual-memory assisted buffer manager (vmcache design).
 *
 * The whole store is one virtual reservation of `virt_bytes` (MAP_NORESERVE,
 * plus a guard so optimistic reads past the end are harmless); page `pid`
 * lives at base + pid * RUMA_BM_PAGE_SIZE.  At most `phys_bytes` of it is
 * resident; the rest is evicted with madvise(MADV_DONTNEED) and read back
 * from the file on the next access.  Each page has one 64-bit state word
 * (8-bit state: unlocked / shared count / exclusive / marked / evicted, a
 * dirty bit and a 55-bit version), which gives three kinds of latch:
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
 * is opened.  SYNC: every modifying B-tree operation (btree.h) returns
 * only when its log records are durable.  ASYNC: it returns as soon as
 * they are logged; a background flusher makes the log durable
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
	uint64_t virt_bytes;    /* size of the virtual reservation */
	uint64_t phys_bytes;    /* buffer pool size (resident pages) */
	unsigned batch;         /* pages per eviction round */
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
				   (default true) */
	bool ready_ahead;       /* a background thread makes the memory of the
				   next page ids ready (populated and written once)
				   before they are allocated, while the pool has
				   room, so that allocating threads do not fault
				   (default true) */
	ruma_bm_durability durability; /* default OFF */
	unsigned wal_flush_ms;  /* ASYNC: background log flush period (0 = 5 ms) */
	bool salvage_log;       /* recovery: a log damaged in the middle (a bad record
				   followed by valid ones) is replayed up to the damage
				   and the rest discarded, with a message saying how
				   many records and bytes (default false: such a log is
				   RUMA_ECORRUPT) */
	bool read_only;         /* open an existing store for reading: the file is
				   opened read-only, nothing is written to it or to
				   its log, and a killed reader leaves the store as
				   clean as it found it; a store not closed cleanly
				   is refused (RUMA_EUNCLEAN: recovery writes), as is
				   a file without a store (RUMA_ENOTSTORE); alloc,
				   free, exclusive fixes and meta_set give -EACCES
				   (default false) */
} ruma_bm_config;

/* ruma_bm_config_default — defaults: no path (the caller names the store;
 * ruma_bm_open refuses a config without one), 16 GiB virtual, 4 GiB physical,
 * batch 64, 128 threads, spin, process_madvise, uring, reuse on, fresh off,
 * O_DIRECT, page cleaner and frames ready ahead on.  The batched paths fall back at open, with one message, where
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

/* ruma_bm_unfix_x — release an exclusive latch (bumps the version; the page
 * is dirty).  ruma_bm_unfix_s — release a shared latch. */
RUMA_API void ruma_bm_unfix_x(ruma_bm *bm, ruma_pid pid);
RUMA_API void ruma_bm_unfix_s(ruma_bm *bm, ruma_pid pid);

/* Largest number of reads one thread keeps queued or in flight (the
 * B-tree's batched lookups and read-ahead, btree.h). */
#define RUMA_BM_AIO_MAX 256u

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
 * is full (ruma_bm_config.virt_bytes sets its size).
 */
RUMA_API int ruma_bm_alloc(ruma_bm *bm, ruma_pid *pid, void **page);

/*
 * ruma_bm_free — release pid, which the caller holds exclusively; the latch
 * is released too.  The id is reused by a later ruma_bm_alloc when
 * reuse_pages is on (tracked in a bitmap persisted in the file).  -EINVAL
 * when pid is not an allocated data page or not exclusively latched.
 */
RUMA_API int ruma_bm_free(ruma_bm *bm, ruma_pid pid);

/*
 * The log's durable point (durability SYNC or ASYNC; docs/wal.md).
 * ruma_bm_log_durable — the LSN up to which the log is durable now (0
 * without a log).  A caller that acknowledges its work (a transaction whose
 * commit gave it durable_at, txn.h) only once ruma_bm_log_durable() >= that
 * LSN never acknowledges anything a crash can lose.
 * ruma_bm_log_flush — wait until the log before `end` is durable (one
 * fdatasync covers every thread waiting at that moment).  Returns 0,
 * -EINVAL (no log) or the log's I/O error.
 */
RUMA_API uint64_t ruma_bm_log_durable(ruma_bm *bm);
RUMA_API int ruma_bm_log_flush(ruma_bm *bm, uint64_t end);

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

/* ruma_bm_get_recovery — what recovery did at the last ruma_bm_open, into *out. */
RUMA_API void ruma_bm_get_recovery(ruma_bm *bm, ruma_bm_recovery *out);

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
