/*
 * bm_int.h — internal layout of the buffer manager (src/bm only).
 *
 * State word of a page (64 bits):
 *   bits 63..56  state: 0 unlocked, 1..252 shared count, 253 locked (X),
 *                254 marked (clock second chance), 255 evicted
 *   bit  55      dirty (set on every exclusive latch, cleared by the writer
 *                while it holds the page shared)
 *   bits 54..0   version (bumped when an exclusive latch is released and on
 *                eviction)
 * The futex wait strategy sleeps on the upper 32-bit half of the word (the
 * half holding the state byte); every release that can end a wait wakes the
 * sleepers on it when the striped waiter counter says someone sleeps.
 */
#ifndef RUMA_BM_INT_H
#define RUMA_BM_INT_H

#include "bm/bm_ext.h"
#include <ruma/core.h>
#include "core/core_ext.h"
#include "core/counter.h"
#include "core/sanitizer.h"
#include <ruma/wal.h>

#include "os/os.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>

#define BM_UNLOCKED 0u
#define BM_MAX_SHARED 252u
#define BM_LOCKED 253u
#define BM_MARKED 254u
#define BM_EVICTED 255u

#define BM_DIRTY (1ull << 55)
#define BM_VMASK ((1ull << 55) - 1)

#define BM_GUARD_BYTES (64u * 1024u)
#define BM_WAITER_STRIPES 64u
#define BM_MAX_THREADS_LIMIT 4096u
#define BM_MIN_PHYS_PAGES 16u
#define BM_MAX_BATCH 1024u
#define BM_PAGE_TAG 0x31475052u /* "RPG1": data page trailer format 1 */
_Static_assert(RUMA_BM_PAGE_DATA + RUMA_BM_PAGE_TRAILER == RUMA_BM_PAGE_SIZE, "page = data + trailer");

static inline unsigned bm_st(uint64_t w)
{
	return (unsigned)(w >> 56);
}

static inline uint64_t bm_ver(uint64_t w)
{
	return w & BM_VMASK;
}

static inline uint64_t bm_word(unsigned st, uint64_t ver, bool dirty)
{
	return ((uint64_t)st << 56) | (dirty ? BM_DIRTY : 0) | (ver & BM_VMASK);
}

/* Per-page mutex + condition variable of the MUTEX wait strategy. */
struct bm_pagemutex {
	pthread_mutex_t m;
	pthread_cond_t c;
};

struct io_uring;
struct bm_aio;
struct bm_thread;
struct bm_cleaner;
struct bm_ahead;

/*
 * The files of src/bm, bottom-up (a file calls only files before it;
 * scripts/check_calls.py checks it):
 *   page.c    page trailers (CRC-32C)
 *   io.c      probing io_uring / process_madvise
 *   latch.c   waiting for a latch (the latch word itself: inline below)
 *   evict.c   resident set, per-thread state, write-back, eviction, faults
 *   clean.c   the page cleaner (write-back ahead of the clock hand)
 *   ahead.c   frames made ready ahead of allocation
 *   store.c   metadata pages, capacity, checkpoints
 *   mtr.c     mini-transactions (the write-ahead log's hooks)
 *   fix.c     the latching API (fix, unfix, optimistic, upgrade)
 *   extent.c  extents: free runs, large writes, pinned reads (BLOBs)
 *   aio.c     asynchronous reads
 *   recover.c redo / undo of a store not closed cleanly
 *   bm.c      open, close, allocation, statistics
 * Where a lower file must reach an upper one (a wait finishing the
 * thread's own reads, eviction polling them, write-back applying the WAL
 * rule) it calls through bm->ops, which bm.c fills at open.
 */
struct bm_ops {
	bool (*aio_step_self)(ruma_bm *bm);                  /* bm_wait -> aio.c */
	void (*aio_poll)(ruma_bm *bm, struct bm_thread *t);   /* eviction -> aio.c */
	void (*aio_settle)(ruma_bm *bm, struct bm_thread *t); /* thread exit -> aio.c */
	void (*aio_free)(struct bm_thread *t);                /* thread free -> aio.c */
	int (*before_write)(ruma_bm *bm, uint64_t lsn); /* -> mtr.c */
	int (*before_log_write)(void *bm); /* the log's hook (mtr.c) -> extent.c */
};

/* Per-thread state: eviction scratch lists, the lazy write ring, the lazy
 * asynchronous-read state (aio.c) and counters. */
struct bm_thread {
	ruma_bm *bm;
	unsigned idx;
	bool in_use;
	struct io_uring *ring; /* write-back ring, created on first use */
	struct bm_aio *aio;    /* asynchronous reads, created on first use */
	ruma_pid *clean, *dirty;
	struct iovec *iov;
	int *res;
	char *bounce; /* extent writes of unaligned bytes (extent.c), made on first use */
	_Atomic uint64_t reads, writes, evictions;
	_Atomic uint64_t aio_waits, aio_wait_depth; /* see aio.c: depth statistics */
};

struct ruma_bm {
	ruma_bm_config cfg;
	char path[4096];
	int fd;
	bool is_blockdev;
	uint64_t dev_bytes;      /* block device size */
	uint64_t file_reserved;  /* bytes the regular file is known to hold */
	uint64_t st_dev, st_ino; /* identity of the store file (lock holder lookup) */
	bool marked_open;        /* page 0 says "open": a clean close must clear it */

	char *base;              /* page memory (virt_pages pages + guard) */
	size_t map_len;
	uint64_t virt_pages;     /* pids below this are addressable */
	uint64_t phys_pages;
	uint64_t soft_limit;     /* evict when resident >= this (95 %) */
	uint64_t hard_limit;     /* never exceed: resident set capacity bound */
	uint64_t meta_pages;     /* pids [0, meta_pages) hold the metadata */

	_Atomic uint64_t *state; /* virt_pages words (NORESERVE) */
	size_t state_len;
	_Atomic uint64_t *written; /* bit per pid: has an image on disk */
	size_t written_len;
	/* bit per pid: a flush is writing a copy of it (evict.c): no other
	 * write of the page may start and the page may not be dropped until
	 * that write ended (same length as written) */
	_Atomic uint64_t *wip;
	struct bm_pagemutex *pmx;  /* MUTEX strategy side array or NULL */
	size_t pmx_len;
	_Atomic uint32_t waiters[BM_WAITER_STRIPES];

	/* resident set: open addressing, linear probing, tombstones */
	_Atomic uint64_t *rs;
	uint64_t rs_mask;
	size_t rs_len;
	_Atomic uint64_t clock_pos;
	_Atomic uint64_t phys_used;

	/* allocation (alloc_mu protects free_bits, alloc_hw writes, file growth) */
	pthread_mutex_t alloc_mu;
	_Atomic uint64_t alloc_hw;
	uint64_t *free_bits;     /* bit per pid: freed, reusable */
	uint64_t free_words;
	_Atomic uint64_t free_count; /* changed under alloc_mu, read without it (stats) */
	uint64_t free_hint;      /* word index to start the next search */
	_Atomic uint64_t meta_slots[RUMA_BM_META_SLOTS];
	struct bm_extents *ext;  /* free runs for extents (extent.c), built at first use */
	uint64_t *ext_bits;      /* bit per pid: free in the extent space (extent.c) */
	_Atomic bool ext_used;   /* an extent was ever allocated (page 0: BM_META_EXTENTS) */
	_Atomic uint64_t ext_free_count; /* its bits set (alloc_mu) */
	uint64_t ext_kept;       /* free extent pages that may hold disk space (alloc_mu) */
	bool punch_off;          /* the file system refused a punch (alloc_mu) */
	/* frames made ready above alloc_hw (ahead.c; alloc_mu): ids below
	 * ready_hw are ready, [busy_lo, busy_hi) being made ready */
	struct bm_ahead *ahead;  /* its thread, NULL when not running */
	_Atomic uint64_t ready_hw; /* written under alloc_mu, read by statistics */
	uint64_t busy_lo, busy_hi;
	pthread_cond_t ahead_done; /* a run was made ready (with alloc_mu) */
	_Atomic uint64_t ahead_made; /* frames the thread made ready since open */
	_Atomic uint64_t ahead_held; /* of phys_used, frames claimed or ready for
					ids not allocated yet */

	/* group sync of extent writes (ruma_bm_extent_sync) */
	pthread_mutex_t ext_sync_mu;
	pthread_cond_t ext_sync_cv;
	_Atomic uint64_t ext_sync_req;
	_Atomic uint64_t ext_written; /* extent writes completed */
	_Atomic uint64_t ext_synced;  /* of them, made durable by a sync */
	uint64_t ext_sync_done;
	bool ext_syncing;
	int ext_sync_err;

	/* threads */
	pthread_key_t key;
	uint64_t instance;        /* unique per store opened in this process (mtr.c's cache) */
	pthread_mutex_t thr_mu;
	/* max_threads entries, each set once under thr_mu and read without it */
	_Atomic(struct bm_thread *) *threads;

	_Atomic uint64_t restarts;
	_Atomic bool pmadv_refused;
	_Atomic bool uring_refused;
	_Atomic bool thread_limit_said;
	_Atomic bool no_populate; /* the kernel refused MADV_POPULATE_WRITE */
	pthread_mutex_t flush_mu;  /* one flush or checkpoint at a time; the cleaner
				      skips its batches while it is held */
	/* Shared by a thread from claiming dirty pages for write-back
	 * (bm_claim_dirty) until their writes completed; a flush takes it
	 * exclusively once at its end, so that the sync after it covers the
	 * pages other threads were writing when it found them clean.
	 * Writer-preferring. */
	pthread_rwlock_t writeback_lock;
	_Atomic uint64_t write_failures; /* page writes that failed, by any writer */
	struct bm_cleaner *cleaner;     /* clean.c, NULL when off or stopped */

	struct bm_ops ops;         /* calls up the file order, set at open (bm.c) */
	_Atomic(ruma_bm_page_check) page_check; /* the owner's check of each page read (page.c) */
	_Atomic uint64_t unchecked_in; /* pages made resident while page_check was NULL */

	/* write-ahead log (mtr.c, recover.c); wal == NULL: no log, no hooks */
	struct ruma_wal *wal;
	_Atomic(ruma_bm_page_hole) page_hole; /* the owner's free gap of a page (mtr.c) */
	struct bm_mtr **mtrs;      /* per thread slot (bm_thread.idx), lazily made */
	_Atomic uint64_t wal_epoch; /* redo start: LSN of the session start or the last
				     checkpoint; a page older than it gets a full image */
	_Atomic bool ckpt_moving;  /* a checkpoint moves wal_epoch: loggers wait (mtr.c) */
	uint64_t ckpt_redo;        /* page 0: redo starts here (the last completed checkpoint) */
	uint64_t ckpt_undo;        /* page 0: unfinished transactions start at or after this */
	uint64_t meta_redo_lsn, meta_undo_lsn; /* page 0 as read at open */
	/* transactions with log records and no COMMIT/END yet: changed by
	 * every begin and commit, so in a cache line of their own, apart from
	 * the fields every log record reads */
	_Alignas(64) pthread_mutex_t active_mu;
	struct bm_active { uint64_t id, first; } *active;
	size_t nactive, capactive;
	_Alignas(64) _Atomic int wal_err; /* first log error: no page may be written any more */
	bool meta_wal;             /* page 0: the last session had a log */
	uint64_t meta_next_lsn;    /* page 0: LSNs below this were used */
	bool needs_recovery;
	ruma_bm_recovery recovery;
	ruma_bm_undo *pending;     /* losers' undo records, newest first (recover.c) */
	size_t npending;
	_Atomic bool undo_outstanding; /* losers not yet undone by the layer above */
	/* transactions begun and not ended (ruma_bm_txn_count): changed by every
	 * begin and end, so in per-thread lanes (core/counter.h) */
	ruma_counter txns_open;
	uint64_t store_id[2];      /* page 0: the store's identity (its log carries it too) */
};

/* page.c — the page trailer (pid, lsn, format tag, CRC-32C; see page.c).
 *
 * bm_page_seal — fill the trailer of page (the memory of pid) for writing.
 *   Call it on every write path just before the page image leaves memory,
 *   with the page latched (shared or exclusive) so its data cannot change.
 * bm_page_verify — check a page image just read from the file for pid:
 *   0, or RUMA_ECORRUPT after a message through the bm message callback
 *   (file, pid, offset, stored vs computed CRC, or the pid found; then the
 *   page owner's check, ruma_bm_set_page_check, and its reason).  Every
 *   read path calls it after each completed read of a data page (the
 *   synchronous pread in bm_fault_in; an asynchronous read path calls it on
 *   each completion) and treats a failure like a read error: the page stays
 *   evicted and the caller gets RUMA_ECORRUPT. */
void bm_page_seal(ruma_bm *bm, ruma_pid pid, void *page);
int bm_page_verify(ruma_bm *bm, ruma_pid pid, const void *page);

/* page.c — count a page made resident while no page check is installed
 * (ruma_bm_set_page_check reports whether any was); called by
 * bm_page_verify and bm_rs_insert. */
void bm_page_unchecked(ruma_bm *bm);

/* page.c — the page LSN in the trailer (the LSN just after the last log
 * record that changed the page; 0 = never logged).  Set only under an
 * exclusive latch; read under any latch. */
uint64_t bm_page_lsn(const void *page);
void bm_page_set_lsn(void *page, uint64_t lsn);

/* mtr.c — mini-transactions: the redo logging hooks (called only when
 * bm->wal is set).  bm_mtr_latched after an exclusive latch was taken
 * (fresh: a newly allocated page); bm_mtr_release before an exclusive latch
 * is released (logs the changes of every page the thread holds as one
 * record, sets their page LSN); bm_mtr_free before ruma_bm_free releases
 * pid; bm_mtr_before_write is the WAL rule on the write path (the log is
 * made durable up to the largest LSN of the images first; error: do not
 * write).
 * bm_wal_start / bm_wal_stop open and close the log around a session. */
int bm_mtr_latched(ruma_bm *bm, ruma_pid pid, bool fresh);
void bm_mtr_release(ruma_bm *bm, ruma_pid pid);
void bm_mtr_free(ruma_bm *bm, ruma_pid pid);
int bm_mtr_before_write(ruma_bm *bm, uint64_t lsn);
int bm_mtr_meta(ruma_bm *bm, unsigned slot, uint64_t value);
void bm_mtr_release_all(ruma_bm *bm);
int bm_wal_open(ruma_bm *bm, struct ruma_wal **out);
int bm_undo_relog(ruma_bm *bm);
int bm_wal_continue(ruma_bm *bm, struct ruma_wal *w);
int bm_wal_checkpoint(ruma_bm *bm);

/* extent.c — redo of a BM_WAL_EXTENT record (op, pages [first, first + n));
 * the free-run index's release at close. */
int bm_recover_extent(ruma_bm *bm, unsigned op, ruma_pid first, uint64_t n);
void bm_extent_index_free(ruma_bm *bm);
/* extent.c — the log's before_write hook (ctx: the manager): extent
 * writes completed and not yet synced are synced before log records, which
 * may name them, reach the file. */
int bm_extent_before_log_write(void *ctx);

/* recover.c — redo the log of a store not closed cleanly (see bm.h). */
int bm_recover(ruma_bm *bm);

/* The store's page 0 (store.c writes and reads it, bm.c decides on it). */
#define BM_MAGIC 0x31304d4241534d55ull /* "UMSABM01" little-endian bytes */
#define BM_FORMAT 3u   /* 2: data page trailer (CRC-32C) + clean-shutdown state; 3: store id */
#define BM_STATE_CLEAN 0x4e454c43u /* "CLEN": closed cleanly, metadata matches pages */
#define BM_STATE_OPEN 0x4e45504fu  /* "OPEN": in use, or the last user did not close */
#define BM_META_EXTENTS 1u /* bm_meta_hdr.flags: an extent was ever allocated (extent.c) */
#define BM_GROW_MIN (1ull << 20)
#define BM_GROW_MAX (64ull << 20)

struct bm_meta_hdr {
	uint64_t magic;
	uint32_t format;
	uint32_t page_size;
	uint64_t meta_pages;
	uint64_t capacity;
	uint64_t alloc_hw;
	uint64_t free_count;
	uint64_t checksum;
	uint64_t slots[RUMA_BM_META_SLOTS];
	uint32_t state;      /* BM_STATE_CLEAN or BM_STATE_OPEN */
	uint32_t page_data;  /* RUMA_BM_PAGE_DATA: bytes of a page the caller owns */
	uint32_t wal;        /* 1: a durable store: opened with a log (<path>.wal recovers it) */
	uint32_t flags;      /* BM_META_EXTENTS (0 in stores made before it existed) */
	uint64_t id[2];      /* random identity made at creation; the log's header names it */
	uint64_t next_lsn;   /* every LSN used so far is below this */
	uint64_t redo_lsn;   /* with a log: recovery redoes page changes from here */
	uint64_t undo_lsn;   /* with a log: unfinished transactions' records start here */
};
_Static_assert(sizeof(struct bm_meta_hdr) <= RUMA_BM_PAGE_SIZE, "header fits page 0");

/* store.c — the metadata pages, the store's capacity, checkpoints, and
 * the allocation state changes replayed by recovery (alloc_mu taken). */
int bm_meta_write(ruma_bm *bm, uint32_t state, bool sync); /* header + bitmap; sync: fdatasync */
int bm_meta_read(ruma_bm *bm, bool *found); /* read + verify page 0 and the bitmap */
int bm_ensure_capacity(ruma_bm *bm, uint64_t pages); /* store holds [0, pages); alloc_mu held */
int bm_recover_alloc(ruma_bm *bm, ruma_pid pid);
void bm_recover_free(ruma_bm *bm, ruma_pid pid);
int bm_checkpoint(ruma_bm *bm);
int bm_flush_and_sync(ruma_bm *bm);
int bm_checkpoint_meta(ruma_bm *bm);

/* latch.c — wait for a change of pid's word from seen, by the configured
 * strategy (first finishing one of the calling thread's own reads, if any,
 * through bm->ops.aio_step_self); *n counts the caller's waits. */
void bm_wait(ruma_bm *bm, ruma_pid pid, uint64_t seen, unsigned *n);

/* ---- the latch word (inline: every latching path uses these) ---- */

static inline uint32_t *bm_upper_half(ruma_bm *bm, ruma_pid pid)
{
	return (uint32_t *)((char *)&bm->state[pid] + 4);
}

static inline _Atomic uint32_t *bm_waiter_stripe(ruma_bm *bm, ruma_pid pid)
{
	return &bm->waiters[pid % BM_WAITER_STRIPES];
}

/* Wake the waiters of pid after a release (futex or condvar strategy). */
static inline void bm_wake(ruma_bm *bm, ruma_pid pid)
{
	if (bm->cfg.wait == RUMA_BM_WAIT_FUTEX) {
		if (atomic_load(bm_waiter_stripe(bm, pid)))
			(void)ruma_os_futex_wake(bm_upper_half(bm, pid), INT_MAX, NULL);
	} else if (bm->cfg.wait == RUMA_BM_WAIT_MUTEX) {
		struct bm_pagemutex *pm = &bm->pmx[pid];
		pthread_mutex_lock(&pm->m);
		pthread_cond_broadcast(&pm->c);
		pthread_mutex_unlock(&pm->m);
	}
}

static inline bool bm_try_lock_x(ruma_bm *bm, ruma_pid pid, uint64_t w)
{
	return atomic_compare_exchange_strong(&bm->state[pid], &w,
					      bm_word(BM_LOCKED, bm_ver(w), w & BM_DIRTY));
}

static inline bool bm_try_lock_s(ruma_bm *bm, ruma_pid pid, uint64_t w)
{
	unsigned s = bm_st(w);
	unsigned ns;

	if (s == BM_UNLOCKED || s == BM_MARKED)
		ns = 1;
	else if (s < BM_MAX_SHARED)
		ns = s + 1;
	else
		return false;
	return atomic_compare_exchange_strong(&bm->state[pid], &w,
					      bm_word(ns, bm_ver(w), w & BM_DIRTY));
}

/* Release an exclusive latch as Evicted (new version, clean). */
static inline void bm_unlock_x_evicted(ruma_bm *bm, ruma_pid pid)
{
	uint64_t w = atomic_load(&bm->state[pid]);

	RUMA_ASSERT(bm_st(w) == BM_LOCKED);
	atomic_store(&bm->state[pid], bm_word(BM_EVICTED, bm_ver(w) + 1, false));
	bm_wake(bm, pid);
}

/* Release an exclusive latch, keeping the dirty bit as it is. */
static inline void bm_unlock_x(ruma_bm *bm, ruma_pid pid)
{
	uint64_t w = atomic_load(&bm->state[pid]);

	RUMA_ASSERT(bm_st(w) == BM_LOCKED);
	atomic_store(&bm->state[pid], bm_word(BM_UNLOCKED, bm_ver(w) + 1, w & BM_DIRTY));
	bm_wake(bm, pid);
}

/* Release a shared latch. */
static inline void bm_unlock_s(ruma_bm *bm, ruma_pid pid)
{
	RUMA_ASSERT(pid < bm->virt_pages);
	uint64_t prev = atomic_fetch_sub(&bm->state[pid], 1ull << 56);
	RUMA_ASSERT(bm_st(prev) >= 1 && bm_st(prev) <= BM_MAX_SHARED);
	(void)prev;
	bm_wake(bm, pid);
}

/* Bit pid of a page bitmap (written, wip). */
static inline bool bm_bit_test(_Atomic uint64_t *map, ruma_pid pid)
{
	return (atomic_load(&map[pid >> 6]) >> (pid & 63)) & 1;
}

static inline void bm_bit_set(_Atomic uint64_t *map, ruma_pid pid, bool on)
{
	uint64_t bit = 1ull << (pid & 63);
	if (on)
		atomic_fetch_or(&map[pid >> 6], bit);
	else
		atomic_fetch_and(&map[pid >> 6], ~bit);
}

static inline bool bm_wip_test(ruma_bm *bm, ruma_pid pid)
{
	return bm_bit_test(bm->wip, pid);
}

static inline void bm_wip_set(ruma_bm *bm, ruma_pid pid, bool on)
{
	bm_bit_set(bm->wip, pid, on);
}

/* Claim the shared-latched pid for writing: clear its dirty bit.  Another
 * writer that cleared it first writes that image, so this one releases the
 * latch and answers false: one thread at a time writes a page.  While a
 * flush writes an earlier copy of the page (wip), the page stays dirty and
 * unclaimed: two writes of one page in flight could land in either order. */
static inline bool bm_claim_latched(ruma_bm *bm, ruma_pid pid)
{
	if (atomic_fetch_and(&bm->state[pid], ~BM_DIRTY) & BM_DIRTY) {
		if (RUMA_LIKELY(!bm_wip_test(bm, pid)))
			return true;
		atomic_fetch_or(&bm->state[pid], BM_DIRTY); /* latched: no writer stores over it */
	}
	bm_unlock_s(bm, pid);
	return false;
}

/* Wait until no flush writes a copy of pid (evict.c). */
void bm_wip_wait(ruma_bm *bm, ruma_pid pid);

/* evict.c */
void bm_rs_insert(ruma_bm *bm, ruma_pid pid);
bool bm_rs_remove(ruma_bm *bm, ruma_pid pid);
int bm_ensure_free(ruma_bm *bm, struct bm_thread *t);
int bm_fault_in(ruma_bm *bm, ruma_pid pid, bool read);
/* A claimed page's read failed: drop its memory, uncount it, unlatch it as
 * Evicted (new version). */
void bm_fault_abort(ruma_bm *bm, ruma_pid pid);
/* Drop a resident page without writing it, its dirty bit with it (recovery
 * redoing a page free or an extent allocation). */
void bm_discard_resident(ruma_bm *bm, ruma_pid pid);
int bm_write_pages(ruma_bm *bm, struct bm_thread *t, const ruma_pid *pids, size_t n, int *res);
size_t bm_claim_dirty(ruma_bm *bm, ruma_pid *pids, size_t n);
int bm_flush_pages(ruma_bm *bm);
void bm_sort_pids(ruma_pid *pids, size_t n);
int bm_thread_get(ruma_bm *bm, struct bm_thread **out);
/* The thread's io_uring (t->ring, made on first use; idle between calls:
 * each user reaps all it submitted): 0, or RUMA_EUNSUPP where io_uring is
 * refused (said once).  bm_thread_ring_broken drops it after a failed
 * submit (the kernel finishes or cancels what was in flight). */
int bm_thread_ring(ruma_bm *bm, struct bm_thread *t);
void bm_thread_ring_broken(struct bm_thread *t);
/* Per-thread state for a thread of the manager's own (not in the table,
 * never bound to the calling thread); free with bm_thread_free. */
struct bm_thread *bm_thread_new_private(ruma_bm *bm);

/* clean.c — the page cleaner.  bm_cleaner_start at the end of open (the
 * pool is in use from then on); bm_cleaner_stop before the final flush of
 * close (NULL-safe, idempotent); bm_cleaner_writes = pages the running
 * cleaner wrote (0 once stopped). */
int bm_cleaner_start(ruma_bm *bm);
void bm_cleaner_stop(ruma_bm *bm);
uint64_t bm_cleaner_writes(const ruma_bm *bm);

/* ahead.c — frames made ready above alloc_hw by a thread of its own.
 * bm_ahead_start at the end of open; bm_ahead_stop before the memory goes
 * (NULL-safe, idempotent).  bm_ahead_take (alloc_mu held), before an
 * allocation of n ids at alloc_hw: waits while the thread works on any of
 * them (alloc_mu released meanwhile), says whether all n were made ready,
 * and returns alloc_hw: the first of them (valid until alloc_mu is
 * released). */
int bm_ahead_start(ruma_bm *bm);
void bm_ahead_stop(ruma_bm *bm);
uint64_t bm_ahead_take(ruma_bm *bm, uint64_t n, bool *ready);
/* bm_populate: MADV_POPULATE_WRITE over the frames of [pid, pid + n),
 * best effort; after -EINVAL (a kernel without it) never asked again. */
void bm_populate(ruma_bm *bm, ruma_pid pid, uint64_t n);
/* bm_ahead_ready: ids ready above alloc_hw (alloc_mu held). */
uint64_t bm_ahead_ready(const ruma_bm *bm);
/* bm_ahead_idle (alloc_mu held): waits until the thread works on no id;
 * none is worked on then until alloc_mu is released. */
void bm_ahead_idle(ruma_bm *bm);
void bm_thread_free(struct bm_thread *t);
void bm_thread_exit(void *t); /* pthread key destructor: frees the slot */

/*
 * Under ThreadSanitizer: a page is filled (pread, or zeroed on reuse) while
 * it is latched exclusively, but optimistic readers may still be reading
 * its old contents — the race the version check makes harmless.  The
 * filling thread tells TSan to ignore these writes.
 */
#if RUMA_TSAN
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define BM_IGNORE_WRITES_BEGIN() AnnotateIgnoreWritesBegin(__FILE__, __LINE__)
#define BM_IGNORE_WRITES_END() AnnotateIgnoreWritesEnd(__FILE__, __LINE__)
#else
#define BM_IGNORE_WRITES_BEGIN() ((void)0)
#define BM_IGNORE_WRITES_END() ((void)0)
#endif

static inline bool bm_written_test(ruma_bm *bm, ruma_pid pid)
{
	return bm_bit_test(bm->written, pid);
}

static inline void bm_written_set(ruma_bm *bm, ruma_pid pid, bool on)
{
	bm_bit_set(bm->written, pid, on);
}

static inline char *bm_page(ruma_bm *bm, ruma_pid pid)
{
	return bm->base + pid * (uint64_t)RUMA_BM_PAGE_SIZE;
}

/* io.c: I/O path selection. */
void bm_io_open(ruma_bm *bm);        /* probe io_uring / process_madvise once */
void bm_io_uring_refused(ruma_bm *bm, int err); /* say once, fall back */

/* aio.c: this thread's asynchronous reads. */
void bm_aio_free(struct bm_thread *t);
/* Submit what is queued and finish the reads that completed (no wait);
 * called wherever a thread waits, so it never waits for its own read. */
void bm_aio_poll(ruma_bm *bm, struct bm_thread *t);
/* When the calling thread has reads queued or in flight: submit them, wait
 * for one completion (the device only), finish what completed, return
 * true; false when it has none.  bm_wait calls it before any latch wait
 * and waits by its strategy only on false. */
bool bm_aio_step_self(ruma_bm *bm);
void bm_aio_settle(ruma_bm *bm, struct bm_thread *t);
/* Room for one more resident page without blocking: 0, RUMA_BM_BUSY, or
 * an eviction error. */
int bm_ensure_free_try(ruma_bm *bm, struct bm_thread *t);

/* bm_say — report one line through c->message (or stderr); see bm.h. */
#define bm_say(c, ...) ruma_say((c)->message, (c)->message_ctx, "ruma bm", __VA_ARGS__)

#endif
