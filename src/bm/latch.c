/*
 * latch.c — the per-page state word and the three latches (optimistic,
 * shared, exclusive) of the buffer manager, plus the four wait strategies.
 *
 * Invariants: only the holder of the exclusive latch changes a Locked word;
 * every transition out of Locked or out of a shared count is a seq_cst store
 * or read-modify-write followed by bm_wake, so a sleeper (futex or condvar)
 * that registered before re-checking the word cannot miss it (the striped
 * waiter counter and the word form a Dekker pair).  A page that is evicted
 * is latched exclusively (Evicted -> Locked) by exactly one faulting thread;
 * when the fault fails the word goes back to Evicted with a new version, so
 * the page is never left half-read and readers restart.
 *
 * Syscalls: futex wait/wake (FUTEX strategy, through src/os), sched_yield
 * and nanosleep (YIELD strategy); pthread mutex/condvar (MUTEX strategy).
 */
#include "bm/bm_int.h"

#include "os/os.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <time.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the futex waits on the upper half of the state word (little-endian)");

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

static inline uint32_t *upper_half(ruma_bm *bm, ruma_pid pid)
{
	return (uint32_t *)((char *)&bm->state[pid] + 4);
}

static inline _Atomic uint32_t *waiter_stripe(ruma_bm *bm, ruma_pid pid)
{
	return &bm->waiters[pid % BM_WAITER_STRIPES];
}

/* A word whose state a waiter can only leave by someone's release. */
static inline bool blocking_state(uint64_t w)
{
	unsigned s = bm_st(w);
	return s == BM_LOCKED || (s >= 1 && s <= BM_MAX_SHARED);
}

static void futex_sleep(ruma_bm *bm, ruma_pid pid, uint64_t seen)
{
	_Atomic uint32_t *stripe = waiter_stripe(bm, pid);

	atomic_fetch_add(stripe, 1);
	if (atomic_load(&bm->state[pid]) == seen)
		(void)ruma_os_futex_wait(upper_half(bm, pid), (uint32_t)(seen >> 32), NULL);
	atomic_fetch_sub(stripe, 1);
}

static void mutex_sleep(ruma_bm *bm, ruma_pid pid, uint64_t seen)
{
	struct bm_pagemutex *pm = &bm->pmx[pid];

	pthread_mutex_lock(&pm->m);
	if (atomic_load(&bm->state[pid]) == seen)
		pthread_cond_wait(&pm->c, &pm->m);
	pthread_mutex_unlock(&pm->m);
}

void bm_wait(ruma_bm *bm, ruma_pid pid, uint64_t seen, unsigned *n)
{
	/* never wait holding latches of unfinished own reads: finish one of
	 * them (the awaited page may be among them) and let the caller look again */
	if (bm_aio_step_self(bm))
		return;
	unsigned i = (*n)++;
	switch (bm->cfg.wait) {
	case RUMA_BM_WAIT_SPIN:
		cpu_relax();
		return;
	case RUMA_BM_WAIT_YIELD:
		if (i < 10) {
			cpu_relax();
		} else if (i < 100) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 1000 };
			nanosleep(&ts, NULL);
		}
		return;
	case RUMA_BM_WAIT_FUTEX:
		if (i < 16 || !blocking_state(seen))
			cpu_relax();
		else
			futex_sleep(bm, pid, seen);
		return;
	case RUMA_BM_WAIT_MUTEX:
		if (!blocking_state(seen))
			cpu_relax();
		else
			mutex_sleep(bm, pid, seen);
		return;
	}
}

void bm_wake(ruma_bm *bm, ruma_pid pid)
{
	if (bm->cfg.wait == RUMA_BM_WAIT_FUTEX) {
		if (atomic_load(waiter_stripe(bm, pid)))
			(void)ruma_os_futex_wake(upper_half(bm, pid), INT_MAX, NULL);
	} else if (bm->cfg.wait == RUMA_BM_WAIT_MUTEX) {
		struct bm_pagemutex *pm = &bm->pmx[pid];
		pthread_mutex_lock(&pm->m);
		pthread_cond_broadcast(&pm->c);
		pthread_mutex_unlock(&pm->m);
	}
}

bool bm_try_lock_x(ruma_bm *bm, ruma_pid pid, uint64_t w)
{
	return atomic_compare_exchange_strong(&bm->state[pid], &w,
					      bm_word(BM_LOCKED, bm_ver(w), w & BM_DIRTY));
}

bool bm_try_lock_s(ruma_bm *bm, ruma_pid pid, uint64_t w)
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

void bm_unlock_x_evicted(ruma_bm *bm, ruma_pid pid)
{
	uint64_t w = atomic_load(&bm->state[pid]);

	RUMA_ASSERT(bm_st(w) == BM_LOCKED);
	atomic_store(&bm->state[pid], bm_word(BM_EVICTED, bm_ver(w) + 1, false));
	bm_wake(bm, pid);
}

/* Release an exclusive latch, keeping the dirty bit as it is. */
void bm_unlock_x(ruma_bm *bm, ruma_pid pid)
{
	uint64_t w = atomic_load(&bm->state[pid]);

	RUMA_ASSERT(bm_st(w) == BM_LOCKED);
	atomic_store(&bm->state[pid], bm_word(BM_UNLOCKED, bm_ver(w) + 1, w & BM_DIRTY));
	bm_wake(bm, pid);
}

static inline int check_pid(ruma_bm *bm, ruma_pid pid)
{
	return RUMA_LIKELY(pid >= bm->meta_pages && pid < bm->virt_pages) ? 0 : -EINVAL;
}

static inline int restart(ruma_bm *bm)
{
	atomic_fetch_add_explicit(&bm->restarts, 1, memory_order_relaxed);
	return RUMA_RESTART;
}

int ruma_bm_optimistic(ruma_bm *bm, ruma_pid pid, uint64_t *version, void **page)
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
			if (bm_try_lock_x(bm, pid, w)) {
				r = bm_fault_in(bm, pid, true);
				if (r)
					return r;
				bm_unlock_x(bm, pid);
			}
			continue;
		default:
			*version = bm_ver(w);
			*page = bm_page(bm, pid);
			return 0;
		}
	}
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
	if (RUMA_UNLIKELY(pid >= bm->virt_pages))
		return -EINVAL;
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
	int r = check_pid(bm, pid);

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
			if (bm_try_lock_x(bm, pid, w)) {
				r = bm_fault_in(bm, pid, true);
				if (r)
					return r;
				bm_unlock_x(bm, pid);
			}
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
	RUMA_ASSERT(pid < bm->virt_pages);
	uint64_t prev = atomic_fetch_sub(&bm->state[pid], 1ull << 56);
	RUMA_ASSERT(bm_st(prev) >= 1 && bm_st(prev) <= BM_MAX_SHARED);
	(void)prev;
	bm_wake(bm, pid);
}
