/*
 * fix.c — the latching API of the buffer manager: optimistic reads with
 * validation, shared and exclusive fixes (faulting an evicted page in),
 * upgrades, unfixes.
 *
 * Invariants: only the holder of the exclusive latch changes a Locked word;
 * every transition out of Locked or out of a shared count is a seq_cst store
 * or read-modify-write followed by bm_wake, so a sleeper (futex or condvar)
 * that registered before re-checking the word cannot miss it (the striped
 * waiter counter and the word form a Dekker pair).  A page that is evicted
 * is latched exclusively (Evicted -> Locked) by exactly one faulting thread;
 * when the fault fails the word goes back to Evicted with a new version, so
 * the page is never left half-read and readers restart.  With a log, every
 * exclusive latch enters the thread's mini-transaction (mtr.c).
 *
 * Calls latch.c (bm_wait), evict.c (bm_fault_in) and mtr.c.
 * Syscalls: none of its own (futex wake through the inline bm_wake).
 */
#include "bm/bm_int.h"

#include <errno.h>

static inline int check_pid(ruma_bm *bm, ruma_pid pid)
{
	return RUMA_LIKELY(pid >= bm->meta_pages && pid < bm->virt_pages) ? 0 : -EINVAL;
}

static inline int restart(ruma_bm *bm)
{
	atomic_fetch_add_explicit(&bm->restarts, 1, memory_order_relaxed);
	return RUMA_RESTART;
}

/* pid was seen Evicted (word w): when this thread wins the exclusive latch,
 * read the page in and release the latch.  0 (look again) or the read's
 * error (the page stays evicted). */
static int fault_and_release(ruma_bm *bm, ruma_pid pid, uint64_t w)
{
	if (!bm_try_lock_x(bm, pid, w))
		return 0;
	int r = bm_fault_in(bm, pid, true);
	if (!r)
		bm_unlock_x(bm, pid);
	return r;
}

/* ruma_bm_optimistic's loop for a page that is not readable at once
 * (latched exclusively, marked, evicted) or a pid to check: out of line, so
 * that the common case below saves and restores no registers. */
__attribute__((noinline)) static int optimistic_slow(ruma_bm *bm, ruma_pid pid,
						      uint64_t *version, void **page)
{
	unsigned n = 0;
	int r = check_pid(bm, pid);

	if (r)
		return r;
	for (;;) {
		uint64_t w = atomic_load_explicit(&bm->state[pid], memory_order_acquire);
		switch (bm_st(w)) {
		case BM_LOCKED:
			bm_wait(bm, pid, w, &n);
			continue;
		case BM_MARKED:
			atomic_compare_exchange_strong(&bm->state[pid], &w,
						       bm_word(BM_UNLOCKED, bm_ver(w), w & BM_DIRTY));
			continue;
		case BM_EVICTED:
			if ((r = fault_and_release(bm, pid, w)))
				return r;
			continue;
		default:
			*version = bm_ver(w);
			*page = bm_page(bm, pid);
			return 0;
		}
	}
}

/* The common case of an optimistic read: pid in the store and unlocked or
 * shared (no wait, no fault): its version and address. */
static inline bool readable_now(ruma_bm *bm, ruma_pid pid, uint64_t *version, void **page)
{
	if (RUMA_UNLIKELY(check_pid(bm, pid) != 0))
		return false;
	uint64_t w = atomic_load_explicit(&bm->state[pid], memory_order_acquire);
	if (RUMA_UNLIKELY(bm_st(w) > BM_MAX_SHARED))
		return false;
	*version = bm_ver(w);
	*page = bm_page(bm, pid);
	return true;
}

int ruma_bm_optimistic(ruma_bm *bm, ruma_pid pid, uint64_t *version, void **page)
{
	if (RUMA_LIKELY(readable_now(bm, pid, version, page)))
		return 0;
	return optimistic_slow(bm, pid, version, page);
}

int ruma_bm_validate(ruma_bm *bm, ruma_pid pid, uint64_t version)
{
	if (RUMA_UNLIKELY(pid >= bm->virt_pages))
		return -EINVAL;
	atomic_thread_fence(memory_order_acquire);
	uint64_t w = atomic_load_explicit(&bm->state[pid], memory_order_relaxed);
	unsigned s = bm_st(w);
	if (bm_ver(w) == version && (s <= BM_MAX_SHARED || s == BM_MARKED))
		return 0;
	return restart(bm);
}

/* ruma_bm_optimistic_child when child cannot be read at once: the parent
 * first (out of line, as optimistic_slow). */
__attribute__((noinline)) static int child_slow(ruma_bm *bm, ruma_pid parent, uint64_t pversion,
						 ruma_pid child, uint64_t *version, void **page)
{
	int r = ruma_bm_validate(bm, parent, pversion);
	return r ? r : optimistic_slow(bm, child, version, page);
}

int ruma_bm_optimistic_child(ruma_bm *bm, ruma_pid parent, uint64_t pversion, ruma_pid child,
			     uint64_t *version, void **page)
{
	if (RUMA_LIKELY(readable_now(bm, child, version, page)))
		return 0;
	return child_slow(bm, parent, pversion, child, version, page);
}

/* With a log: enter a newly taken exclusive latch into the thread's
 * mini-transaction (mtr.c); on failure the latch is given back. */
static int logged_x(ruma_bm *bm, ruma_pid pid)
{
	int r = bm_mtr_latched(bm, pid, false);
	if (r)
		bm_unlock_x(bm, pid);
	return r;
}

int ruma_bm_upgrade_x(ruma_bm *bm, ruma_pid pid, uint64_t version)
{
	if (RUMA_UNLIKELY(pid >= bm->virt_pages || bm->cfg.read_only))
		return pid >= bm->virt_pages ? -EINVAL : -EACCES;
	uint64_t w = atomic_load(&bm->state[pid]);
	while (bm_ver(w) == version && (bm_st(w) == BM_UNLOCKED || bm_st(w) == BM_MARKED)) {
		if (atomic_compare_exchange_weak(&bm->state[pid], &w,
						 bm_word(BM_LOCKED, version, true)))
			return RUMA_UNLIKELY(bm->wal != NULL) ? logged_x(bm, pid) : 0;
	}
	return restart(bm);
}

int ruma_bm_upgrade_s(ruma_bm *bm, ruma_pid pid, uint64_t version)
{
	if (RUMA_UNLIKELY(pid >= bm->virt_pages))
		return -EINVAL;
	uint64_t w = atomic_load(&bm->state[pid]);
	while (bm_ver(w) == version && bm_st(w) != BM_LOCKED && bm_st(w) != BM_EVICTED &&
	       bm_st(w) != BM_MAX_SHARED) {
		if (bm_try_lock_s(bm, pid, w))
			return 0;
		w = atomic_load(&bm->state[pid]);
	}
	return restart(bm);
}

int ruma_bm_fix_x(ruma_bm *bm, ruma_pid pid, void **page)
{
	unsigned n = 0;
	int r = bm->cfg.read_only ? -EACCES : check_pid(bm, pid);

	if (r)
		return r;
	for (;;) {
		uint64_t w = atomic_load(&bm->state[pid]);
		switch (bm_st(w)) {
		case BM_EVICTED:
			if (bm_try_lock_x(bm, pid, w)) {
				r = bm_fault_in(bm, pid, true);
				if (r)
					return r;
				atomic_fetch_or(&bm->state[pid], BM_DIRTY);
				*page = bm_page(bm, pid);
				return RUMA_UNLIKELY(bm->wal != NULL) ? logged_x(bm, pid) : 0;
			}
			continue;
		case BM_UNLOCKED:
		case BM_MARKED:
			if (atomic_compare_exchange_strong(&bm->state[pid], &w,
							   bm_word(BM_LOCKED, bm_ver(w), true))) {
				*page = bm_page(bm, pid);
				return RUMA_UNLIKELY(bm->wal != NULL) ? logged_x(bm, pid) : 0;
			}
			continue;
		default:
			bm_wait(bm, pid, w, &n);
		}
	}
}

int ruma_bm_fix_s(ruma_bm *bm, ruma_pid pid, void **page)
{
	unsigned n = 0;
	int r = check_pid(bm, pid);

	if (r)
		return r;
	for (;;) {
		uint64_t w = atomic_load(&bm->state[pid]);
		unsigned s = bm_st(w);
		if (s == BM_EVICTED) {
			if ((r = fault_and_release(bm, pid, w)))
				return r;
			continue;
		}
		if (s == BM_LOCKED || s == BM_MAX_SHARED) {
			bm_wait(bm, pid, w, &n);
			continue;
		}
		if (bm_try_lock_s(bm, pid, w)) {
			*page = bm_page(bm, pid);
			return 0;
		}
	}
}

void ruma_bm_unfix_x(ruma_bm *bm, ruma_pid pid)
{
	RUMA_ASSERT(pid < bm->virt_pages);
	if (RUMA_UNLIKELY(bm->wal != NULL))
		bm_mtr_release(bm, pid);
	bm_unlock_x(bm, pid);
}

void ruma_bm_unfix_s(ruma_bm *bm, ruma_pid pid)
{
	bm_unlock_s(bm, pid);
}
