/*
 * ahead.c — frames made ready ahead of allocation, by a thread of the
 * manager's own, so that a thread which allocates a page does not stop at
 * its first store.
 *
 * A new page id comes from the high-water mark (alloc_hw) and its frame is
 * anonymous memory nobody touched yet: the first store into it is a page
 * fault, and on virtual machines that shadow the guest's page tables a
 * further exit even when the frame was populated beforehand
 * (docs/bench/machine.md: about 11-13 us a page when the store faults, 0.8
 * to populate plus 5-6 at the first store, 0.03 once another thread of the
 * process populated it and stored into it).  A B-tree split stores into a
 * new page in the middle of an insert, so these costs were the tail of
 * every insert.  This thread keeps the frames of the ids just above alloc_hw
 * populated (MADV_POPULATE_WRITE, in runs) and written once (each page's
 * first word read and written back unchanged), AHEAD_HIGH of them at most,
 * looking again every 10 ms while ids are being allocated.
 *
 * Ownership (all under alloc_mu): ids in [alloc_hw, ready_hw) are ready;
 * the thread claims AHEAD_RUN ids at ready_hw as [busy_lo, busy_hi), works
 * on them with the lock released, then moves ready_hw past them.  An
 * allocation that would take a claimed id waits on ahead_done until the
 * run is finished (bm_ahead_take; an extent, which may take many ids at
 * once, waits until no run is being worked on: bm_ahead_idle), so the
 * thread's stores never meet the allocating thread's: the claim is made
 * before alloc_hw reaches the id and released before any allocation
 * returns it.
 *
 * Memory: a ready frame is resident, and counted in phys_used from its
 * claim on (an allocation that takes it adds nothing more; ahead_held
 * counts them, for the statistics' resident pages), so eviction
 * keeps the pool within its size with the ready frames in it; the thread
 * claims a run only while phys_used stays below the soft limit, where
 * eviction starts, so it never makes a thread evict.  Ready ids that an
 * extent takes become pages that are not resident: their count leaves
 * phys_used (their frames are refilled when the pages are read).
 *
 * Without the thread (it could not be started) allocations work as before:
 * bm.c populates frames itself.  Syscalls (through src/os): madvise; the
 * thread with pthread_create / cond_wait.
 */
#include "bm/bm_int.h"

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* Ready ids kept above alloc_hw (at most an eighth of the pool, so that
 * the frames held for them never crowd out the pages in use), made
 * AHEAD_RUN at a time (the longest an allocation waits for the thread: one
 * run, about 50 us).  The thread is never woken by an allocation: on this
 * kind of virtual machine a wake-up cost the allocating thread 35-50 us,
 * more than the fault it saves.  It looks again after AHEAD_POLL_US, and
 * after twice as long each time nothing was allocated meanwhile, up to
 * AHEAD_IDLE_MAX_US.  Few looks, each making many frames, rather than many
 * small ones: where the threads using the store keep both cores busy,
 * each look takes a core from one of them, and the operation it was in
 * waits (YCSB E with two threads: the p99 of a scan 86-99 us looking
 * every millisecond, 77-80 every 10 ms, 68-75 without the thread).
 * AHEAD_HIGH ids last an allocation rate of 51 pages a millisecond (200
 * MB/s) between two looks; beyond, allocations populate their own frame
 * (bm.c). */
#define AHEAD_HIGH 512u
#define AHEAD_RUN 8u
#define AHEAD_POLL_US 10000u
#define AHEAD_IDLE_MAX_US 100000u

struct bm_ahead {
	pthread_t th;
	pthread_cond_t stop_cv; /* with alloc_mu */
	bool stop;
};

/* Ids ready above the high-water mark (alloc_mu held). */
static uint64_t ready_count(const ruma_bm *bm)
{
	uint64_t hw = atomic_load_explicit(&bm->alloc_hw, memory_order_relaxed);
	uint64_t ready = atomic_load_explicit(&bm->ready_hw, memory_order_relaxed);
	return ready > hw ? ready - hw : 0;
}

/* The next run to make ready, or 0 when there is enough, no room in the
 * pool or no id left (alloc_mu held). */
static uint64_t next_run(const ruma_bm *bm, uint64_t *lo)
{
	uint64_t hw = atomic_load_explicit(&bm->alloc_hw, memory_order_relaxed);
	uint64_t ready = ready_count(bm);
	uint64_t used = atomic_load_explicit(&bm->phys_used, memory_order_relaxed);
	uint64_t most = RUMA_MIN((uint64_t)AHEAD_HIGH, bm->soft_limit / 8);
	*lo = hw + ready;
	if (ready >= most || *lo >= bm->virt_pages)
		return 0;
	uint64_t n = RUMA_MIN(RUMA_MIN((uint64_t)AHEAD_RUN, most - ready), bm->virt_pages - *lo);
	return used + n < bm->soft_limit ? n : 0;
}

void bm_populate(ruma_bm *bm, ruma_pid pid, uint64_t n)
{
	if (atomic_load_explicit(&bm->no_populate, memory_order_relaxed))
		return;
	if (ruma_os_populate_write(bm_page(bm, pid), n * RUMA_BM_PAGE_SIZE) == -EINVAL)
		atomic_store_explicit(&bm->no_populate, true, memory_order_relaxed);
}

/* Populate the frames of [lo, lo + n) and store into each once, keeping
 * what it holds (no other thread can reach these ids: claimed). */
static void make_ready(ruma_bm *bm, uint64_t lo, uint64_t n)
{
	bm_populate(bm, lo, n);
	for (uint64_t i = 0; i < n; i++) {
		volatile uint64_t *w = (volatile uint64_t *)(void *)bm_page(bm, lo + i);
		*w = *w;
	}
}

/* Sleep (alloc_mu held, released meanwhile) for *wait_us; the next wait
 * is AHEAD_POLL_US if ids were allocated meanwhile, else twice as long. */
static void idle(ruma_bm *bm, struct bm_ahead *a, unsigned *wait_us)
{
	uint64_t hw = atomic_load_explicit(&bm->alloc_hw, memory_order_relaxed);
	struct timespec at;
	clock_gettime(CLOCK_MONOTONIC, &at);
	uint64_t ns = (uint64_t)at.tv_nsec + *wait_us * 1000ull;
	at.tv_sec += (time_t)(ns / 1000000000u);
	at.tv_nsec = (long)(ns % 1000000000u);
	(void)pthread_cond_timedwait(&a->stop_cv, &bm->alloc_mu, &at);
	bool used = atomic_load_explicit(&bm->alloc_hw, memory_order_relaxed) != hw;
	*wait_us = used ? AHEAD_POLL_US : RUMA_MIN(*wait_us * 2, AHEAD_IDLE_MAX_US);
}

static void *ahead_main(void *arg)
{
	ruma_bm *bm = arg;
	struct bm_ahead *a = bm->ahead;
	unsigned wait_us = AHEAD_POLL_US;
	pthread_mutex_lock(&bm->alloc_mu);
	while (!a->stop) {
		uint64_t lo, n = next_run(bm, &lo);
		if (!n) {
			idle(bm, a, &wait_us);
			continue;
		}
		bm->busy_lo = lo;
		bm->busy_hi = lo + n;
		atomic_fetch_add(&bm->phys_used, n);
		atomic_fetch_add(&bm->ahead_held, n);
		pthread_mutex_unlock(&bm->alloc_mu);
		make_ready(bm, lo, n);
		pthread_mutex_lock(&bm->alloc_mu);
		atomic_store(&bm->ready_hw, lo + n);
		bm->busy_lo = bm->busy_hi = 0;
		atomic_fetch_add_explicit(&bm->ahead_made, n, memory_order_relaxed);
		pthread_cond_broadcast(&bm->ahead_done);
	}
	pthread_mutex_unlock(&bm->alloc_mu);
	return NULL;
}

int bm_ahead_start(ruma_bm *bm)
{
	struct bm_ahead *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->stop_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_lock(&bm->alloc_mu);
	bm->ahead = a;
	bm->ready_hw = atomic_load(&bm->alloc_hw);
	int r = -pthread_create(&a->th, NULL, ahead_main, bm);
	if (r)
		bm->ahead = NULL;
	pthread_mutex_unlock(&bm->alloc_mu);
	if (r) {
		pthread_cond_destroy(&a->stop_cv);
		free(a);
	}
	return r;
}

void bm_ahead_stop(ruma_bm *bm)
{
	pthread_mutex_lock(&bm->alloc_mu);
	struct bm_ahead *a = bm->ahead;
	if (a) {
		a->stop = true;
		pthread_cond_signal(&a->stop_cv);
	}
	pthread_mutex_unlock(&bm->alloc_mu);
	if (!a)
		return;
	pthread_join(a->th, NULL);
	pthread_mutex_lock(&bm->alloc_mu);
	bm->ahead = NULL;
	pthread_mutex_unlock(&bm->alloc_mu);
	pthread_cond_destroy(&a->stop_cv);
	free(a);
}

uint64_t bm_ahead_ready(const ruma_bm *bm)
{
	return ready_count(bm);
}

void bm_ahead_idle(ruma_bm *bm)
{
	while (bm->busy_hi)
		pthread_cond_wait(&bm->ahead_done, &bm->alloc_mu);
}

uint64_t bm_ahead_take(ruma_bm *bm, uint64_t n, bool *ready)
{
	uint64_t first;
	for (;;) { /* the wait lets other allocations in: read the mark after it */
		first = atomic_load_explicit(&bm->alloc_hw, memory_order_relaxed);
		if (!bm->busy_hi || first >= bm->busy_hi || first + n <= bm->busy_lo)
			break;
		pthread_cond_wait(&bm->ahead_done, &bm->alloc_mu);
	}
	*ready = first + n <= atomic_load_explicit(&bm->ready_hw, memory_order_relaxed);
	return first;
}
