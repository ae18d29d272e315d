/*
 * latch.c — waiting for a latch: the four wait strategies (spin, yield,
 * futex, mutex).  The latch word's transitions are inline in bm_int.h; the
 * latching API built on them is fix.c.  The bottom of src/bm's latching:
 * it calls no other file of the module (the thread's own reads are
 * finished through bm->ops.aio_step_self).
 *
 * Invariants: a futex sleeper counts itself in the page's waiter stripe
 * before it re-checks the word, and sleeps only while the word is still
 * the one it saw; a condvar sleeper re-checks under the page mutex.  So
 * the bm_wake that follows every release cannot miss it.  A thread never
 * sleeps while its own reads are unfinished (they may hold the latch).
 *
 * Syscalls: futex wait/wake (FUTEX strategy, through src/os), sched_yield
 * and nanosleep (YIELD strategy); pthread mutex/condvar (MUTEX strategy).
 */
#include "bm/bm_int.h"
#include "core/spin.h"

#include "os/os.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <time.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the futex waits on the upper half of the state word (little-endian)");


/* A word whose state a waiter can only leave by someone's release. */
static inline bool blocking_state(uint64_t w)
{
	unsigned s = bm_st(w);
	return s == BM_LOCKED || (s >= 1 && s <= BM_MAX_SHARED);
}

static void futex_sleep(ruma_bm *bm, ruma_pid pid, uint64_t seen)
{
	_Atomic uint32_t *stripe = bm_waiter_stripe(bm, pid);

	atomic_fetch_add(stripe, 1);
	if (atomic_load(&bm->state[pid]) == seen)
		(void)ruma_os_futex_wait(bm_upper_half(bm, pid), (uint32_t)(seen >> 32), NULL);
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
	if (bm->ops.aio_step_self(bm))
		return;
	unsigned i = (*n)++;
	switch (bm->cfg.wait) {
	case RUMA_BM_WAIT_SPIN:
		ruma_cpu_relax();
		return;
	case RUMA_BM_WAIT_YIELD:
		if (i < 10) {
			ruma_cpu_relax();
		} else if (i < 100) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 1000 };
			nanosleep(&ts, NULL);
		}
		return;
	case RUMA_BM_WAIT_FUTEX:
		if (i < 16 || !blocking_state(seen))
			ruma_cpu_relax();
		else
			futex_sleep(bm, pid, seen);
		return;
	case RUMA_BM_WAIT_MUTEX:
		if (!blocking_state(seen))
			ruma_cpu_relax();
		else
			mutex_sleep(bm, pid, seen);
		return;
	}
}
