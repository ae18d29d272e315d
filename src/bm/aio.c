/*
 * aio.c — asynchronous page reads: a thread keeps up to RUMA_BM_AIO_MAX
 * reads queued or in flight on its own io_uring instead of waiting for each.
 *
 * A read is claimed exactly like a synchronous fault (fix.c): the caller
 * wins the CAS Evicted -> Locked, makes room without blocking
 * (bm_ensure_free_try), counts the page resident (phys_used), and queues
 * an io_uring read of the page image into the page's place in the
 * reservation.  The page stays exclusively latched until the thread that
 * queued the read finishes it: on success the image passes bm_page_verify,
 * the pid enters the resident set and the latch is released (new version:
 * optimistic readers of the evicted page restart); on failure (an errno, a
 * short read, a rejected image) the memory is dropped again, the page goes
 * back to Evicted with a new version, and the error is reported under the
 * read's tag.
 *
 * Invariants: only the owning thread touches its struct bm_aio (no lock);
 * a slot is FREE, QUEUED (prepared, not submitted), INFLIGHT or DONE
 * (finished, tagged, not yet collected); every QUEUED or INFLIGHT slot
 * holds its page's exclusive latch.  A thread never waits for a latch
 * without finishing its own reads: while it has reads queued or in flight,
 * bm_wait submits them and waits for the device — for one completion
 * (bm_aio_step_self), so that the rest stay in flight while the awaited
 * page arrives — and returns for the caller to look again; only when none
 * is left may it spin or sleep as its strategy says.  The eviction wait
 * loop polls them.  So no thread waits for itself, and none sleeps (futex,
 * condvar) holding a latch that only its own unfinished read would release.
 *
 * Depth statistics: each time a thread blocks for a completion it adds the
 * number of its reads then in flight to aio_wait_depth (and 1 to
 * aio_waits); their ratio is the queue depth the device saw from the
 * thread while it waited (ruma_bm_stats).
 *
 * Submission: reads are queued without a syscall and submitted together —
 * when the thread is about to wait, or (without waiting) once SUBMIT_BATCH
 * are queued or fewer than SUBMIT_BATCH are in flight — so one
 * io_uring_enter carries several reads, and the one that waits also
 * submits.
 *
 * Syscalls (through src/os): io_uring_setup (first use per thread),
 * io_uring_enter (submit, wait); madvise (bm_fault_abort drops a failed
 * read's memory).
 */
#include "bm/bm_int.h"

#include "os/os.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

enum { SLOT_FREE, SLOT_QUEUED, SLOT_INFLIGHT, SLOT_DONE };

#define NO_TAG UINT64_MAX
#define SUBMIT_BATCH 8u
#define NONE UINT32_MAX

struct aio_slot {
	ruma_pid pid;
	uint64_t tag; /* NO_TAG: a prefetch */
	int result;
	uint8_t state;
	uint32_t next; /* free list / done list */
};

struct bm_aio {
	struct io_uring *ring;
	unsigned queued, inflight, prefetches, done;
	uint32_t free_head, done_head, done_tail;
	struct aio_slot slot[RUMA_BM_AIO_MAX];
};

void bm_aio_free(struct bm_thread *t)
{
	if (!t->aio)
		return;
	ruma_os_uring_free(t->aio->ring);
	free(t->aio);
	t->aio = NULL;
}

/* This thread's aio state, created on first use; NULL without io_uring. */
static struct bm_aio *aio_get(ruma_bm *bm, struct bm_thread *t)
{
	if (RUMA_LIKELY(t->aio != NULL))
		return t->aio;
	if (atomic_load_explicit(&bm->uring_refused, memory_order_relaxed))
		return NULL;
	struct bm_aio *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	int r = ruma_os_uring_new(RUMA_BM_AIO_MAX, &a->ring);
	if (r) {
		free(a);
		bm_io_uring_refused(bm, r);
		return NULL;
	}
	for (uint32_t i = 0; i < RUMA_BM_AIO_MAX; i++)
		a->slot[i].next = i + 1 < RUMA_BM_AIO_MAX ? i + 1 : NONE;
	a->free_head = 0;
	a->done_head = a->done_tail = NONE;
	t->aio = a;
	return a;
}

static void slot_release(struct bm_aio *a, uint32_t i)
{
	a->slot[i].state = SLOT_FREE;
	a->slot[i].next = a->free_head;
	a->free_head = i;
}

/* The read of slot i ended with res (bytes or negative errno). */
static void finish(ruma_bm *bm, struct bm_thread *t, struct bm_aio *a, uint32_t i, int res)
{
	struct aio_slot *s = &a->slot[i];
	ruma_pid pid = s->pid;
	int r = res == (int)RUMA_BM_PAGE_SIZE ? 0 : res < 0 ? res : RUMA_ESHORTIO;

	if (s->state == SLOT_QUEUED)
		a->queued--;
	else
		a->inflight--;
	if (!r)
		r = bm_page_verify(bm, pid, bm_page(bm, pid));
	if (r) {
		bm_fault_abort(bm, pid);
	} else {
		atomic_fetch_add_explicit(&t->reads, 1, memory_order_relaxed);
		bm_rs_insert(bm, pid);
		bm_unlock_x(bm, pid);
	}
	if (s->tag == NO_TAG) {
		a->prefetches--;
		slot_release(a, i);
		return;
	}
	s->result = r;
	s->state = SLOT_DONE;
	s->next = NONE;
	if (a->done_tail == NONE)
		a->done_head = i;
	else
		a->slot[a->done_tail].next = i;
	a->done_tail = i;
	a->done++;
}

/* A submission failed: every queued and in-flight read fails with err (the
 * ring is rebuilt; the kernel finishes or cancels what it had). */
static void fail_all(ruma_bm *bm, struct bm_thread *t, struct bm_aio *a, int err)
{
	ruma_os_uring_free(a->ring);
	a->ring = NULL;
	for (uint32_t i = 0; i < RUMA_BM_AIO_MAX; i++)
		if (a->slot[i].state == SLOT_QUEUED || a->slot[i].state == SLOT_INFLIGHT)
			finish(bm, t, a, i, err);
	int r = ruma_os_uring_new(RUMA_BM_AIO_MAX, &a->ring);
	if (r) {
		a->ring = NULL;
		bm_io_uring_refused(bm, r);
	}
}

/* Submit the queued reads — without wait, only when fewer than
 * SUBMIT_BATCH are in flight or SUBMIT_BATCH are queued, so that a busy
 * device gets batches (one io_uring_enter each) rather than one read per
 * call; with wait, always, and block for one completion when none is
 * posted.  Then finish every posted completion. */
static int progress(ruma_bm *bm, struct bm_thread *t, struct bm_aio *a, bool wait)
{
	int err = 0;

	if (!a->ring)
		return 0;
	/* while the device has SUBMIT_BATCH reads, submit only full batches */
	bool defer = !wait && a->queued < SUBMIT_BATCH && a->inflight >= SUBMIT_BATCH;
	if ((a->queued && !defer) || (wait && a->inflight)) {
		bool must_wait = wait && a->queued + a->inflight > 0;
		if (must_wait) {
			atomic_fetch_add_explicit(&t->aio_waits, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&t->aio_wait_depth, a->queued + a->inflight,
						  memory_order_relaxed);
		}
		err = ruma_os_uring_submit_and_wait(a->ring, must_wait ? 1 : 0);
		if (err) {
			fail_all(bm, t, a, err);
			return err;
		}
		for (uint32_t i = 0, left = a->queued; left && i < RUMA_BM_AIO_MAX; i++)
			if (a->slot[i].state == SLOT_QUEUED) {
				a->slot[i].state = SLOT_INFLIGHT;
				left--;
			}
		a->inflight += a->queued;
		a->queued = 0;
	}
	uint64_t tag[64];
	int res[64];
	unsigned k;
	while ((k = ruma_os_uring_reap(a->ring, tag, res, 64)) > 0)
		for (unsigned j = 0; j < k; j++)
			if (tag[j] < RUMA_BM_AIO_MAX && a->slot[tag[j]].state == SLOT_INFLIGHT)
				finish(bm, t, a, (uint32_t)tag[j], res[j]);
	return 0;
}

void bm_aio_poll(ruma_bm *bm, struct bm_thread *t)
{
	struct bm_aio *a = t->aio;
	if (a && (a->queued || a->inflight))
		(void)progress(bm, t, a, false);
}

void bm_aio_settle(ruma_bm *bm, struct bm_thread *t)
{
	struct bm_aio *a = t->aio;

	while (a && a->ring && (a->queued || a->inflight))
		(void)progress(bm, t, a, true);
}

bool bm_aio_step_self(ruma_bm *bm)
{
	struct bm_thread *t = pthread_getspecific(bm->key);
	struct bm_aio *a = t ? t->aio : NULL;

	if (!a || !a->ring || (a->queued == 0 && a->inflight == 0))
		return false;
	(void)progress(bm, t, a, true);
	return true;
}

/* Queue the read of the exclusively latched, evicted pid (room already
 * made).  0 (queued), or 1 when the page has no image and is now resident
 * and unlatched (a new page: zeros, as a synchronous fault gives). */
static int queue_read(ruma_bm *bm, struct bm_thread *t, struct bm_aio *a, ruma_pid pid,
		      uint64_t tag)
{
	atomic_fetch_add(&bm->phys_used, 1);
	if (!bm_written_test(bm, pid)) {
		bm_rs_insert(bm, pid);
		bm_unlock_x(bm, pid);
		return 1;
	}
	uint32_t i = a->free_head;
	RUMA_ASSERT(i != NONE);
	int r = ruma_os_uring_prep_read(a->ring, bm->fd, bm_page(bm, pid), RUMA_BM_PAGE_SIZE,
					pid * (uint64_t)RUMA_BM_PAGE_SIZE, i);
	if (r == -EBUSY) { /* submission queue full: send it, then queue again */
		(void)progress(bm, t, a, false);
		if (a->ring)
			r = ruma_os_uring_prep_read(a->ring, bm->fd, bm_page(bm, pid),
						    RUMA_BM_PAGE_SIZE,
						    pid * (uint64_t)RUMA_BM_PAGE_SIZE, i);
	}
	a->free_head = a->slot[i].next;
	a->slot[i] = (struct aio_slot){ .pid = pid, .tag = tag, .state = SLOT_QUEUED, .next = NONE };
	a->queued++;
	if (tag == NO_TAG)
		a->prefetches++;
	if (r)
		finish(bm, t, a, i, r);
	return 0;
}

static int fault_sync(ruma_bm *bm, ruma_pid pid, uint64_t *version, void **page)
{
	return ruma_bm_optimistic(bm, pid, version, page);
}

/* Try to claim evicted pid for a read: 0 (claimed, room made), RUMA_BM_BUSY,
 * RUMA_RESTART (the word changed: look again), or an eviction error. */
static int claim(ruma_bm *bm, struct bm_thread *t, struct bm_aio *a, ruma_pid pid, uint64_t w)
{
	if (a->queued + a->inflight + a->done >= RUMA_BM_AIO_MAX || !a->ring)
		return RUMA_BM_BUSY;
	if (!bm_try_lock_x(bm, pid, w))
		return RUMA_RESTART;
	int r = bm_ensure_free_try(bm, t);
	if (r) {
		bm_unlock_x_evicted(bm, pid);
		return r;
	}
	return 0;
}

int ruma_bm_optimistic_async(ruma_bm *bm, ruma_pid pid, uint64_t tag, uint64_t *version,
			     void **page)
{
	struct bm_thread *t;
	int r;

	if (RUMA_UNLIKELY(pid < bm->meta_pages || pid >= bm->virt_pages || tag == NO_TAG))
		return -EINVAL;
	/* resident and not latched exclusively: as ruma_bm_optimistic, without
	 * looking up the thread's read state (the common case in memory) */
	uint64_t w0 = atomic_load_explicit(&bm->state[pid], memory_order_acquire);
	if (RUMA_LIKELY(bm_st(w0) <= BM_MAX_SHARED)) {
		*version = bm_ver(w0);
		*page = bm_page(bm, pid);
		return 0;
	}
	if ((r = bm_thread_get(bm, &t)))
		return r;
	struct bm_aio *a = aio_get(bm, t);
	if (!a)
		return fault_sync(bm, pid, version, page);
	for (;;) {
		uint64_t w = atomic_load_explicit(&bm->state[pid], memory_order_acquire);
		switch (bm_st(w)) {
		case BM_LOCKED:
			return RUMA_BM_BUSY;
		case BM_MARKED:
			atomic_compare_exchange_strong(&bm->state[pid], &w,
						       bm_word(BM_UNLOCKED, bm_ver(w), w & BM_DIRTY));
			continue;
		case BM_EVICTED:
			r = claim(bm, t, a, pid, w);
			if (r == RUMA_RESTART)
				continue;
			if (r)
				return r;
			if (queue_read(bm, t, a, pid, tag) == 0)
				return RUMA_BM_PENDING;
			continue; /* a new page, resident now */
		default:
			*version = bm_ver(w);
			*page = bm_page(bm, pid);
			return 0;
		}
	}
}

int ruma_bm_aio_reap(ruma_bm *bm, bool wait, ruma_bm_aio_done *out, unsigned max, unsigned *n)
{
	struct bm_thread *t = pthread_getspecific(bm->key);
	struct bm_aio *a = t ? t->aio : NULL;
	int err = 0;

	*n = 0;
	if (!a || max == 0)
		return 0;
	if (a->queued || a->inflight)
		err = progress(bm, t, a, wait && a->done == 0);
	/* with wait: until one is collected, while reads of any kind fly */
	while (!err && wait && a->done == 0 && a->queued + a->inflight > a->prefetches &&
	       a->ring)
		err = progress(bm, t, a, true);
	while (*n < max && a->done_head != NONE) {
		uint32_t i = a->done_head;
		out[*n].tag = a->slot[i].tag;
		out[*n].result = a->slot[i].result;
		(*n)++;
		a->done_head = a->slot[i].next;
		if (a->done_head == NONE)
			a->done_tail = NONE;
		a->done--;
		slot_release(a, i);
	}
	return err;
}

unsigned ruma_bm_aio_inflight(ruma_bm *bm)
{
	struct bm_thread *t = pthread_getspecific(bm->key);
	struct bm_aio *a = t ? t->aio : NULL;
	return a ? a->queued + a->inflight + a->done - a->prefetches : 0;
}

bool ruma_bm_all_resident(ruma_bm *bm)
{
	uint64_t hw = atomic_load_explicit(&bm->alloc_hw, memory_order_relaxed);
	uint64_t held = atomic_load_explicit(&bm->phys_used, memory_order_relaxed) +
			atomic_load_explicit(&bm->free_count, memory_order_relaxed) + bm->meta_pages;
	return held >= hw;
}

void ruma_bm_get_hints(ruma_bm *bm, ruma_bm_hints *out)
{
	_Static_assert(sizeof(*bm->state) == sizeof(*out->state), "latch words are 64 bits");
	out->state = (const uint64_t *)bm->state;
	out->pool = bm->base;
	out->pages = bm->virt_pages;
}

unsigned ruma_bm_prefetch(ruma_bm *bm, const ruma_pid *pids, unsigned n)
{
	struct bm_thread *t;
	unsigned started = 0;

	if (bm_thread_get(bm, &t))
		return 0;
	struct bm_aio *a = aio_get(bm, t);
	if (!a)
		return 0;
	/* at most an eighth of the pool ahead: more evicts read-ahead unused */
	n = (unsigned)RUMA_MIN((uint64_t)n, RUMA_MAX(1, bm->phys_pages / 8));
	for (unsigned k = 0; k < n; k++) {
		ruma_pid pid = pids[k];
		if (pid < bm->meta_pages || pid >= bm->virt_pages)
			continue;
		uint64_t w = atomic_load(&bm->state[pid]);
		if (bm_st(w) != BM_EVICTED || claim(bm, t, a, pid, w) != 0)
			continue;
		if (queue_read(bm, t, a, pid, NO_TAG) == 0)
			started++;
	}
	if (started)
		(void)progress(bm, t, a, false);
	return started;
}

void ruma_bm_aio_drain(ruma_bm *bm)
{
	struct bm_thread *t = pthread_getspecific(bm->key);
	struct bm_aio *a = t ? t->aio : NULL;

	while (a && a->ring && a->prefetches > 0)
		(void)progress(bm, t, a, true);
}
