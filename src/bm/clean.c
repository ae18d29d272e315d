/*
 * clean.c — the page cleaner: a background thread that writes dirty pages
 * just ahead of the clock hand, so that the threads which evict find clean
 * victims and do not wait for write-back before their own read.
 *
 * vmcache (Leis et al., SIGMOD 2023) evicts in the faulting thread: a batch
 * holding dirty pages is written, and the thread waits for those writes
 * before its read can start.  Out of memory under writes (a load, TPC-C,
 * the first pass over pages a load left dirty) that wait is a large part of
 * every fault.  LeanStore's page provider threads (Leis et al., ICDE 2018)
 * take eviction off the worker threads altogether; the cleaner takes only
 * the write-back, and eviction stays with the faulting thread as in vmcache,
 * so the pool's size bound and the error paths of eviction are unchanged.
 *
 * What is cleaned: the pages the clock evicts soon — those in the resident
 * set's slots [hand + lead, hand + 2 lead) that are Marked (not used since
 * the hand last passed) and dirty — each with the dirty resident pages that
 * follow it in the file, up to CLEAN_RUN pages in all, so that the file is
 * written in runs (one vectored write each) rather than page by page:
 * pages a loader filled one after the other sit next to each other, and a
 * device that is bound by operations per second writes a 64 KiB run for
 * little more than a 4 KiB page.  Each page is latched shared (try only:
 * the cleaner never waits for a latch) and its dirty bit cleared as the
 * claim (evicting threads claim the same way, so two of them never write
 * one page at once), written through the eviction write path (the WAL
 * rule, the trailer seal, one io_uring submission per batch or pwritev per
 * run), and released: a Marked page back to Marked if no other thread
 * shares it, so that the hand evicts it on arrival.  A page used in between
 * is unmarked by its user and stays resident, clean.  A failed write
 * restores the dirty bit: the evicting thread then writes the page itself
 * and gets the error.
 *
 * When: only while the pool is within 2 lead pages of its eviction limit;
 * otherwise, and when it has caught up with the lead, the thread sleeps
 * (timed wait: 1 ms near the limit, up to 100 ms when the pool is far from
 * it, as long as the pool takes to fill that far at 4 pages per µs).  Batches are skipped while a flush or checkpoint runs (it
 * writes every dirty page itself).  ruma_bm_close stops the thread before
 * the final flush.
 *
 * Calls evict.c (bm_write_pages, bm_thread_new_private) and the inline latch
 * words of bm_int.h.  Syscalls: none of its own (the writes are evict.c's,
 * through src/os); pthread_create / cond_timedwait for the thread.
 */
#include "bm/bm_int.h"

#include <ruma/core.h>
#include "core/core_ext.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Pages written per batch; pages written with a Marked one as one run at
 * most; the sleep when there is nothing to do. */
#define CLEAN_BATCH 256u
#define CLEAN_RUN 16u
#define CLEAN_IDLE_US 1000u
/* Far from the limit the sleep grows with the room left, counted at a
 * fill rate of 4 pages per microsecond (16 GB/s: more than faults and
 * allocations reach here), up to CLEAN_IDLE_MAX_US. */
#define CLEAN_FILL_NS_PER_PAGE 250u
#define CLEAN_IDLE_MAX_US 100000u

struct clean_page {
	ruma_pid pid;
	bool marked; /* it was Marked: released back to Marked */
};

struct bm_cleaner {
	ruma_bm *bm;
	struct bm_thread *t; /* the cleaner's own write ring and scratch */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t kick;
	bool stop;
	uint64_t pos;  /* next clock position to look at (absolute, like clock_pos) */
	uint64_t lead; /* slots ahead of the hand */
	struct clean_page pages[CLEAN_BATCH];
	ruma_pid pids[CLEAN_BATCH];
	int res[CLEAN_BATCH];
};

/* The cleaner works on the slots [hand + lead, hand + 2 lead): a page it
 * writes must still be ahead of the hand when its write completes (a page
 * the hand finds latched is passed over for a whole revolution), and not
 * so far ahead that it is likely used and dirtied again first.  lead is
 * many eviction rounds of every thread, at most an eighth of the clock. */
static uint64_t clean_lead(const ruma_bm *bm)
{
	uint64_t lead = 64ull * bm->cfg.batch;
	uint64_t eighth = (bm->rs_mask + 1) / 8;
	return RUMA_MAX(1u, RUMA_MIN(lead, eighth));
}

static bool pool_near_full(const ruma_bm *bm, uint64_t lead)
{
	uint64_t used = atomic_load_explicit(&bm->phys_used, memory_order_relaxed);
	return used + 2 * lead >= bm->soft_limit;
}

/* Latch pid shared and claim its dirty bit if it is dirty and Marked (or,
 * with any_use, also unlatched); *marked = it was Marked. */
static bool claim(ruma_bm *bm, ruma_pid pid, bool any_use, bool *marked)
{
	uint64_t w = atomic_load(&bm->state[pid]);
	unsigned s = bm_st(w);
	if (!(w & BM_DIRTY) || !(s == BM_MARKED || (any_use && s == BM_UNLOCKED)) ||
	    !bm_try_lock_s(bm, pid, w) || !bm_claim_latched(bm, pid))
		return false;
	*marked = s == BM_MARKED;
	return true;
}

/* Release a written page: back to Marked (the hand evicts it on arrival)
 * if this is the only latch on it and nobody dirtied it, else as usual. */
static void release_marked(ruma_bm *bm, ruma_pid pid)
{
	uint64_t w = atomic_load(&bm->state[pid]);
	if (bm_st(w) == 1 && !(w & BM_DIRTY) &&
	    atomic_compare_exchange_strong(&bm->state[pid], &w,
					   bm_word(BM_MARKED, bm_ver(w), false))) {
		bm_wake(bm, pid);
		return;
	}
	bm_unlock_s(bm, pid);
}

static int cmp_page(const void *a, const void *b)
{
	ruma_pid x = ((const struct clean_page *)a)->pid, y = ((const struct clean_page *)b)->pid;
	return x < y ? -1 : x > y;
}

/* Claim the Marked dirty pages of the slots [c->pos, end), each with the
 * dirty resident pages that follow it in the file (up to CLEAN_RUN in all),
 * so that they go out as one write: the file is written in runs, not page
 * by page.  The claimed pages, sorted, end up in c->pages and c->pids. */
static size_t collect(struct bm_cleaner *c, uint64_t end)
{
	ruma_bm *bm = c->bm;
	size_t n = 0;

	for (; c->pos < end && n + CLEAN_RUN <= CLEAN_BATCH; c->pos++) {
		uint64_t slot = atomic_load_explicit(&bm->rs[c->pos & bm->rs_mask],
						     memory_order_relaxed);
		bool marked;
		if (slot == 0 || slot == UINT64_MAX)
			continue;
		ruma_pid pid = slot - 1;
		if (!claim(bm, pid, false, &marked))
			continue;
		c->pages[n++] = (struct clean_page){ pid, true };
		for (ruma_pid q = pid + 1; q < pid + CLEAN_RUN && q < bm->virt_pages; q++) {
			if (!claim(bm, q, true, &marked))
				break;
			c->pages[n++] = (struct clean_page){ q, marked };
		}
	}
	qsort(c->pages, n, sizeof(c->pages[0]), cmp_page);
	for (size_t i = 0; i < n; i++)
		c->pids[i] = c->pages[i].pid;
	return n;
}

static void write_batch(struct bm_cleaner *c, size_t n)
{
	ruma_bm *bm = c->bm;

	(void)bm_write_pages(bm, c->t, c->pids, n, c->res);
	for (size_t i = 0; i < n; i++) {
		ruma_pid pid = c->pids[i];
		if (c->res[i]) {
			atomic_fetch_or(&bm->state[pid], BM_DIRTY);
			bm_unlock_s(bm, pid);
		} else if (c->pages[i].marked) {
			release_marked(bm, pid);
		} else {
			bm_unlock_s(bm, pid);
		}
	}
}

/* One step: clean up to CLEAN_BATCH pages ahead of the hand.  Returns
 * false when there is nothing to do now (the caller sleeps). */
static bool clean_step(struct bm_cleaner *c)
{
	ruma_bm *bm = c->bm;

	if (!pool_near_full(bm, c->lead) || atomic_load(&bm->wal_err))
		return false;
	uint64_t hand = atomic_load_explicit(&bm->clock_pos, memory_order_relaxed);
	if (c->pos < hand + c->lead)
		c->pos = hand + c->lead;
	uint64_t end = hand + 2 * c->lead;
	if (c->pos >= end)
		return false;
	if (pthread_mutex_trylock(&bm->flush_mu))
		return false; /* a flush writes every dirty page itself */
	pthread_rwlock_rdlock(&bm->writeback_lock);
	size_t n = collect(c, end);
	if (n)
		write_batch(c, n);
	pthread_rwlock_unlock(&bm->writeback_lock);
	pthread_mutex_unlock(&bm->flush_mu);
	return true;
}

/* How long to sleep with nothing to do: CLEAN_IDLE_US near the limit;
 * farther away, as long as the pool takes to fill to where the cleaner
 * starts at the fastest rate assumed (a pool in memory is looked at a few
 * times a second, not a thousand). */
static uint64_t idle_ns(const struct bm_cleaner *c)
{
	const ruma_bm *bm = c->bm;
	uint64_t used = atomic_load_explicit(&bm->phys_used, memory_order_relaxed);
	uint64_t start = bm->soft_limit > 2 * c->lead ? bm->soft_limit - 2 * c->lead : 0;
	uint64_t room = start > used ? start - used : 0;
	uint64_t ns = room * CLEAN_FILL_NS_PER_PAGE;
	return RUMA_MIN(RUMA_MAX(ns, CLEAN_IDLE_US * 1000ull), CLEAN_IDLE_MAX_US * 1000ull);
}

static void idle(struct bm_cleaner *c)
{
	struct timespec ts;
	ruma_deadline_after_ns(idle_ns(c), &ts);
	pthread_mutex_lock(&c->mu);
	if (!c->stop)
		(void)pthread_cond_timedwait(&c->kick, &c->mu, &ts);
	pthread_mutex_unlock(&c->mu);
}

static bool stopping(struct bm_cleaner *c)
{
	pthread_mutex_lock(&c->mu);
	bool s = c->stop;
	pthread_mutex_unlock(&c->mu);
	return s;
}

static void *cleaner_main(void *arg)
{
	struct bm_cleaner *c = arg;

	while (!stopping(c))
		if (!clean_step(c))
			idle(c);
	return NULL;
}

static void cleaner_free(struct bm_cleaner *c)
{
	bm_thread_free(c->t);
	pthread_cond_destroy(&c->kick);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int bm_cleaner_start(ruma_bm *bm)
{
	struct bm_cleaner *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->bm = bm;
	c->lead = clean_lead(bm);
	c->t = bm_thread_new_private(bm);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->kick, NULL);
	int r = c->t ? -pthread_create(&c->th, NULL, cleaner_main, c) : -ENOMEM;
	if (r) {
		cleaner_free(c);
		return r;
	}
	bm->cleaner = c;
	return 0;
}

void bm_cleaner_stop(ruma_bm *bm)
{
	struct bm_cleaner *c = bm->cleaner;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->kick);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->th, NULL);
	cleaner_free(c);
	bm->cleaner = NULL;
}

uint64_t bm_cleaner_writes(const ruma_bm *bm)
{
	return bm->cleaner ? atomic_load(&bm->cleaner->t->writes) : 0;
}
