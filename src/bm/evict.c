/*
 * evict.c — the resident set, clock eviction, page I/O and per-thread state
 * of the buffer manager.
 *
 * Resident set: an open-addressing hash table (linear probing) of the pids
 * whose page is in memory, sized next_pow2(1.5 x phys pages) so it never
 * fills.  A slot holds pid + 1; 0 is empty, UINT64_MAX a tombstone (slots
 * never become empty again, so probe chains stay intact).  A pid is inserted
 * by the thread that faulted or allocated it (holding its exclusive latch)
 * and removed by the evicting thread before it publishes the page as Evicted.
 *
 * Eviction (any faulting thread, several at once): a clock pass over `batch`
 * slots at a time marks unlocked pages and collects marked ones — clean ones
 * to evict directly, dirty ones latched shared to be written first.  Dirty
 * pages are sorted, claimed (below) and written (one io_uring submission
 * for the batch, one write per run of neighbouring pids; or one pwritev per
 * run),
 * then upgraded to exclusive if this thread is the only sharer; clean
 * candidates are latched exclusively only if still marked.
 * The latched pages are dropped (madvise per page or one process_madvise),
 * removed from the resident set, and unlocked as Evicted with a new version.
 * A failed write restores the dirty bit and keeps the page; a failed
 * madvise keeps the page resident.  Errors reach the faulting caller.
 *
 * Claims: every writer (eviction, the page cleaner, a flush) latches a page
 * shared and clears its dirty bit before writing it; a page whose bit
 * another writer cleared first is left to that writer, so one thread at a
 * time writes a page.  Eviction and the cleaner hold writeback_lock shared
 * from the claim until their writes completed.
 *
 * Flush: the dirty resident pages are collected, sorted, latched shared,
 * claimed, copied and released FLUSH_CHUNK at a time; the copies are
 * written after the log is durable up to their LSNs, while writers go on
 * (a page with a copy in flight, wip, is neither evicted nor claimed by
 * another writer until the copy is written; ruma_bm_free and discarding
 * wait for it).  Then it waits (writeback_lock exclusively) for the writes
 * other threads had claimed, and fails if any page write failed meanwhile.  Every page image
 * is sealed (trailer with CRC-32C, page.c: bm_page_seal) just before it is
 * handed to the kernel, and every image read is verified (bm_page_verify).
 *
 * Calls page.c, io.c and latch.c only; the thread's asynchronous reads
 * (aio.c) and the WAL rule before a write (mtr.c) are reached through
 * bm->ops.
 *
 * Syscalls (through src/os): pread (fault), io_uring / pwritev / pwrite
 * (write-back), madvise / process_madvise (drop pages), sched_yield while
 * the pool is full of latched pages.
 */
#include "bm/bm_int.h"

#include "os/os.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RS_TOMB UINT64_MAX

static inline uint64_t rs_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

void bm_rs_insert(ruma_bm *bm, ruma_pid pid)
{
	uint64_t pos = rs_hash(pid) & bm->rs_mask;

	if (RUMA_UNLIKELY(!atomic_load_explicit(&bm->page_check, memory_order_relaxed)))
		bm_page_unchecked(bm);
	for (;;) {
		uint64_t cur = atomic_load(&bm->rs[pos]);
		RUMA_ASSERT(cur != pid + 1);
		if ((cur == 0 || cur == RS_TOMB) &&
		    atomic_compare_exchange_strong(&bm->rs[pos], &cur, pid + 1))
			return;
		pos = (pos + 1) & bm->rs_mask;
	}
}

bool bm_rs_remove(ruma_bm *bm, ruma_pid pid)
{
	uint64_t pos = rs_hash(pid) & bm->rs_mask;

	for (uint64_t probes = 0; probes <= bm->rs_mask; probes++) {
		uint64_t cur = atomic_load(&bm->rs[pos]);
		if (cur == 0)
			return false;
		if (cur == pid + 1 && atomic_compare_exchange_strong(&bm->rs[pos], &cur, RS_TOMB))
			return true;
		pos = (pos + 1) & bm->rs_mask;
	}
	return false;
}

/* ---- per-thread state ---------------------------------------------------- */

void bm_thread_exit(void *p)
{
	struct bm_thread *t = p;

	if (t->aio) /* no latch of an unfinished read outlives the thread */
		t->bm->ops.aio_settle(t->bm, t);
	pthread_mutex_lock(&t->bm->thr_mu);
	t->in_use = false;
	pthread_mutex_unlock(&t->bm->thr_mu);
}

void bm_thread_free(struct bm_thread *t)
{
	if (!t)
		return;
	if (t->aio)
		t->bm->ops.aio_free(t);
	ruma_os_uring_free(t->ring);
	free(t->clean);
	free(t->dirty);
	free(t->iov);
	free(t->res);
	free(t->bounce);
	free(t);
}

static struct bm_thread *thread_new(ruma_bm *bm, unsigned idx)
{
	struct bm_thread *t = calloc(1, sizeof(*t));
	size_t n = bm->cfg.batch;

	if (!t)
		return NULL;
	t->bm = bm;
	t->idx = idx;
	t->clean = calloc(n, sizeof(*t->clean));
	t->dirty = calloc(n, sizeof(*t->dirty));
	t->iov = calloc(RUMA_MAX(n, (size_t)IOV_MAX), sizeof(*t->iov));
	t->res = calloc(n, sizeof(*t->res));
	if (!t->clean || !t->dirty || !t->iov || !t->res) {
		bm_thread_free(t);
		return NULL;
	}
	return t;
}

struct bm_thread *bm_thread_new_private(ruma_bm *bm)
{
	return thread_new(bm, bm->cfg.max_threads);
}

int bm_thread_get(ruma_bm *bm, struct bm_thread **out)
{
	struct bm_thread *t = pthread_getspecific(bm->key);

	if (RUMA_LIKELY(t != NULL)) {
		*out = t;
		return 0;
	}
	pthread_mutex_lock(&bm->thr_mu);
	for (unsigned i = 0; i < bm->cfg.max_threads; i++) {
		if (bm->threads[i] && bm->threads[i]->in_use)
			continue;
		if (!bm->threads[i]) {
			bm->threads[i] = thread_new(bm, i);
			if (!bm->threads[i]) {
				pthread_mutex_unlock(&bm->thr_mu);
				return -ENOMEM;
			}
		}
		t = bm->threads[i];
		t->in_use = true;
		break;
	}
	pthread_mutex_unlock(&bm->thr_mu);
	if (!t) {
		if (!atomic_exchange(&bm->thread_limit_said, true))
			bm_say(&bm->cfg,
				"more than max_threads=%u threads use the buffer manager at "
				"once (raise max_threads); said once, every "
				"further call beyond the limit fails the same way",
				bm->cfg.max_threads);
		return -EUSERS;
	}
	int r = pthread_setspecific(bm->key, t);
	if (r) {
		bm_thread_exit(t);
		return -r;
	}
	*out = t;
	return 0;
}

/* ---- writing ------------------------------------------------------------- */

/* Slots of a thread's write ring: one flush chunk, or one eviction batch
 * of up to this many pages, per submission. */
#define WRITE_RING_MAX 256u

int bm_thread_ring(ruma_bm *bm, struct bm_thread *t)
{
	if (t->ring)
		return 0;
	if (atomic_load(&bm->uring_refused))
		return RUMA_EUNSUPP;
	int r = ruma_os_uring_new(WRITE_RING_MAX, &t->ring);
	if (r) {
		bm_io_uring_refused(bm, r);
		return RUMA_EUNSUPP;
	}
	return 0;
}

/* The image written for pids[i]: img[i] (a flush's copy) or the page itself. */
static char *image(ruma_bm *bm, char *const *img, const ruma_pid *pids, size_t i)
{
	return img ? img[i] : bm_page(bm, pids[i]);
}

static int write_one(ruma_bm *bm, ruma_pid pid, char *src)
{
	return ruma_os_pwrite_full(bm->fd, src, RUMA_BM_PAGE_SIZE, (off_t)(pid * RUMA_BM_PAGE_SIZE));
}

void bm_thread_ring_broken(struct bm_thread *t)
{
	ruma_os_uring_free(t->ring);
	t->ring = NULL;
}

/* The end of the run of consecutive pids that starts at pids[i]. */
static size_t run_end(const ruma_pid *pids, size_t n, size_t i)
{
	size_t j = i + 1;
	while (j < n && j - i < IOV_MAX && pids[j] == pids[j - 1] + 1)
		j++;
	return j;
}

/* Queue the run pids[i, j): one write, or one vectored write of its pages. */
static void queue_run(ruma_bm *bm, struct bm_thread *t, const ruma_pid *pids, char *const *img,
		      size_t i, size_t j)
{
	uint64_t off = (uint64_t)pids[i] * RUMA_BM_PAGE_SIZE;
	int r;
	if (j - i == 1) {
		r = ruma_os_uring_prep_write(t->ring, bm->fd, image(bm, img, pids, i),
					     RUMA_BM_PAGE_SIZE, off, i);
	} else {
		for (size_t k = i; k < j; k++) {
			t->iov[k].iov_base = image(bm, img, pids, k);
			t->iov[k].iov_len = RUMA_BM_PAGE_SIZE;
		}
		r = ruma_os_uring_prep_writev(t->ring, bm->fd, &t->iov[i], (unsigned)(j - i), off, i);
	}
	RUMA_ASSERT(r == 0);
	(void)r;
}

/* Write the sorted pids[0, n) (n <= the ring's free slots) with one
 * submission, one write per run of neighbouring pids; res[] per page. */
static int uring_chunk(ruma_bm *bm, struct bm_thread *t, const ruma_pid *pids, char *const *img,
		       size_t n, int *res)
{
	unsigned runs = 0;
	for (size_t i = 0, j; i < n; i = j, runs++) {
		j = run_end(pids, n, i);
		queue_run(bm, t, pids, img, i, j);
		for (size_t k = i; k < j; k++)
			res[k] = 1; /* pending */
	}
	int r = ruma_os_uring_submit_and_wait(t->ring, runs);
	unsigned got = 0;
	while (r == 0 && got < runs) {
		uint64_t tag[64];
		int cres[64];
		unsigned k = ruma_os_uring_reap(t->ring, tag, cres, 64);
		if (k == 0) {
			r = ruma_os_uring_submit_and_wait(t->ring, 1);
			continue;
		}
		for (unsigned c = 0; c < k; c++) {
			size_t i = (size_t)tag[c];
			if (i >= n || res[i] != 1)
				continue;
			size_t j = run_end(pids, n, i);
			int64_t want = (int64_t)(j - i) * RUMA_BM_PAGE_SIZE;
			int v = cres[c] == want ? 0 : cres[c] < 0 ? cres[c] : RUMA_ESHORTIO;
			for (size_t p = i; p < j; p++)
				res[p] = v;
			got++;
		}
	}
	if (r < 0) {
		bm_thread_ring_broken(t);
		for (size_t i = 0; i < n; i++)
			if (res[i] == 1)
				res[i] = r;
	}
	return r;
}

/* Without io_uring: one pwritev per run of consecutive pids (pwrite for a
 * run of one page); every page of a failed run gets its error. */
static void write_runs(ruma_bm *bm, struct bm_thread *t, const ruma_pid *pids, char *const *img,
		       size_t n, int *res)
{
	for (size_t i = 0; i < n;) {
		size_t j = run_end(pids, n, i);
		int r;
		if (j - i == 1) {
			r = write_one(bm, pids[i], image(bm, img, pids, i));
		} else {
			for (size_t k = i; k < j; k++) {
				t->iov[k - i].iov_base = image(bm, img, pids, k);
				t->iov[k - i].iov_len = RUMA_BM_PAGE_SIZE;
			}
			r = ruma_os_pwritev_full(bm->fd, t->iov, (int)(j - i),
						 (off_t)(pids[i] * RUMA_BM_PAGE_SIZE));
		}
		for (size_t k = i; k < j; k++)
			res[k] = r;
		i = j;
	}
}

/* The WAL rule for the images of pids[0, n) (img: copies; NULL: the
 * shared-latched pages): the log is durable up to their LSNs; on failure
 * every res[i] gets the error. */
static int log_first(ruma_bm *bm, char *const *img, const ruma_pid *pids, size_t n, int *res)
{
	if (RUMA_LIKELY(bm->wal == NULL))
		return 0;
	uint64_t lsn = 0;
	for (size_t i = 0; i < n; i++)
		lsn = RUMA_MAX(lsn, bm_page_lsn(image(bm, img, pids, i)));
	int first = bm->ops.before_write(bm, lsn);
	if (first) {
		for (size_t i = 0; i < n; i++)
			res[i] = first; /* WAL rule: log first (mtr.c) */
		atomic_fetch_add(&bm->write_failures, n);
	}
	return first;
}

/* Write the sealed images of pids[0, n) (img: copies; NULL: the pages);
 * res[i] per page; the first error. */
static int write_images(ruma_bm *bm, struct bm_thread *t, const ruma_pid *pids, char *const *img,
			size_t n, int *res)
{
	int first = 0;
	bool uring = bm->cfg.write == RUMA_BM_WRITE_URING && n > 0 && bm_thread_ring(bm, t) == 0;
	if (uring) {
		for (size_t off = 0; off < n;) {
			size_t chunk = RUMA_MIN(n - off, (size_t)WRITE_RING_MAX);
			if (t->ring)
				chunk = RUMA_MIN(chunk, (size_t)ruma_os_uring_space(t->ring));
			if (!t->ring || chunk == 0) {
				for (size_t i = off; i < n; i++)
					res[i] = -EIO;
				break;
			}
			uring_chunk(bm, t, pids + off, img ? img + off : NULL, chunk, res + off);
			off += chunk;
			if (off < n && !t->ring && bm_thread_ring(bm, t) != 0) {
				write_runs(bm, t, pids + off, img ? img + off : NULL, n - off, res + off);
				break;
			}
		}
		/* a file that refuses io_uring writes: fall back for good */
		for (size_t i = 0; i < n; i++)
			if (res[i] == -EOPNOTSUPP) {
				bm_io_uring_refused(bm, res[i]);
				res[i] = write_one(bm, pids[i], image(bm, img, pids, i));
			}
	} else {
		write_runs(bm, t, pids, img, n, res);
	}
	uint64_t ok = 0;
	for (size_t i = 0; i < n; i++) {
		if (res[i] == 0) {
			bm_written_set(bm, pids[i], true);
			ok++;
		} else if (!first) {
			first = res[i];
		}
	}
	atomic_fetch_add_explicit(&t->writes, ok, memory_order_relaxed);
	if (ok < n)
		atomic_fetch_add(&bm->write_failures, n - ok);
	return first;
}

int bm_write_pages(ruma_bm *bm, struct bm_thread *t, const ruma_pid *pids, size_t n, int *res)
{
	int first = log_first(bm, NULL, pids, n, res);
	if (first)
		return first;
	for (size_t i = 0; i < n; i++)
		bm_page_seal(bm, pids[i], bm_page(bm, pids[i]));
	return write_images(bm, t, pids, NULL, n, res);
}

/* bm_claim_latched for each of the shared-latched pids[0, n); returns the
 * pages kept (claimed), in order. */
size_t bm_claim_dirty(ruma_bm *bm, ruma_pid *pids, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (bm_claim_latched(bm, pids[i]))
			pids[kept++] = pids[i];
	return kept;
}

/* ---- dropping pages ------------------------------------------------------ */

/* Give pids' memory back; ok[i] tells which pages were dropped. */
static void drop_pages(ruma_bm *bm, struct bm_thread *t, const ruma_pid *pids, size_t n,
		       bool *ok)
{
	size_t done_pages = 0;

	if (bm->cfg.evict == RUMA_BM_EVICT_PROCESS_MADVISE && !atomic_load(&bm->pmadv_refused)) {
		while (done_pages < n) {
			size_t chunk = RUMA_MIN(n - done_pages, (size_t)IOV_MAX);
			for (size_t i = 0; i < chunk; i++) {
				t->iov[i].iov_base = bm_page(bm, pids[done_pages + i]);
				t->iov[i].iov_len = RUMA_BM_PAGE_SIZE;
			}
			size_t bytes = 0;
			int r = ruma_os_process_madvise(t->iov, chunk, MADV_DONTNEED, &bytes);
			if (r == -EINVAL || r == -ENOSYS || r == -EPERM) {
				if (!atomic_exchange(&bm->pmadv_refused, true))
					bm_say(&bm->cfg,
						"note: process_madvise(MADV_DONTNEED) on "
						"self refused by this kernel (%s; needs Linux >= "
						"6.13); evicting with madvise per page",
						ruma_strerror(r));
				break;
			}
			if (r)
				break; /* the rest falls back to madvise below */
			size_t pages = bytes / RUMA_BM_PAGE_SIZE;
			for (size_t i = 0; i < pages && i < chunk; i++)
				ok[done_pages + i] = true;
			done_pages += RUMA_MIN(pages, chunk);
			if (pages < chunk)
				break;
		}
	}
	for (size_t i = done_pages; i < n; i++)
		ok[i] = ruma_os_madvise(bm_page(bm, pids[i]), RUMA_BM_PAGE_SIZE, MADV_DONTNEED) == 0;
}

/* ---- clock eviction ------------------------------------------------------ */

/* One eviction round: up to `batch` pages.  *freed = pages evicted. */
static int evict_round(ruma_bm *bm, struct bm_thread *t, size_t *freed)
{
	const size_t batch = bm->cfg.batch;
	size_t nclean = 0, ndirty = 0;
	uint64_t scanned = 0, scan_limit = 2 * (bm->rs_mask + 1) + batch;
	int err = 0;

	*freed = 0;
	while (nclean + ndirty < batch && scanned < scan_limit) {
		uint64_t pos = atomic_fetch_add(&bm->clock_pos, batch);
		for (size_t i = 0; i < batch && nclean + ndirty < batch; i++) {
			uint64_t slot = atomic_load(&bm->rs[(pos + i) & bm->rs_mask]);
			if (slot == 0 || slot == RS_TOMB)
				continue;
			ruma_pid pid = slot - 1;
			uint64_t w = atomic_load(&bm->state[pid]);
			unsigned s = bm_st(w);
			if (s == BM_MARKED) {
				if (w & BM_DIRTY) {
					if (bm_try_lock_s(bm, pid, w))
						t->dirty[ndirty++] = pid;
				} else {
					t->clean[nclean++] = pid;
				}
			} else if (s == BM_UNLOCKED) {
				atomic_compare_exchange_strong(
					&bm->state[pid], &w,
					bm_word(BM_MARKED, bm_ver(w), w & BM_DIRTY));
			}
		}
		scanned += batch;
	}

	/* Write the dirty candidates (latched shared: nobody can modify them),
	 * sorted so that neighbouring pages form runs. */
	if (ndirty) {
		bm_sort_pids(t->dirty, ndirty);
		pthread_rwlock_rdlock(&bm->writeback_lock);
		ndirty = bm_claim_dirty(bm, t->dirty, ndirty);
		err = bm_write_pages(bm, t, t->dirty, ndirty, t->res);
		for (size_t i = 0; i < ndirty; i++)
			if (t->res[i])
				atomic_fetch_or(&bm->state[t->dirty[i]], BM_DIRTY);
		pthread_rwlock_unlock(&bm->writeback_lock);
	}

	/* Latch the victims exclusively: the clean ones still marked, the
	 * written ones where this thread is the only sharer. */
	ruma_pid *victims = t->clean;
	size_t nv = 0;
	for (size_t i = 0; i < nclean; i++) {
		ruma_pid pid = t->clean[i];
		uint64_t w = atomic_load(&bm->state[pid]);
		if (bm_st(w) != BM_MARKED || (w & BM_DIRTY) ||
		    !atomic_compare_exchange_strong(&bm->state[pid], &w,
						    bm_word(BM_LOCKED, bm_ver(w), false)))
			continue;
		if (bm_wip_test(bm, pid)) /* clean only because a flush writes its copy */
			bm_unlock_x(bm, pid);
		else
			victims[nv++] = pid;
	}
	for (size_t i = 0; i < ndirty; i++) {
		ruma_pid pid = t->dirty[i];
		uint64_t w = atomic_load(&bm->state[pid]);
		if (t->res[i] == 0 && bm_st(w) == 1 && !(w & BM_DIRTY) &&
		    atomic_compare_exchange_strong(&bm->state[pid], &w,
						   bm_word(BM_LOCKED, bm_ver(w), false))) {
			victims[nv++] = pid;
		} else {
			bm_unlock_s(bm, pid);
		}
	}
	if (!nv)
		return err;

	bool ok[BM_MAX_BATCH];
	memset(ok, 0, nv * sizeof(bool));
	drop_pages(bm, t, victims, nv, ok);
	size_t n = 0;
	for (size_t i = 0; i < nv; i++) {
		ruma_pid pid = victims[i];
		if (!ok[i]) {
			bm_unlock_x(bm, pid);
			continue;
		}
		bm_rs_remove(bm, pid);
		bm_unlock_x_evicted(bm, pid);
		n++;
	}
	atomic_fetch_sub(&bm->phys_used, n);
	atomic_fetch_add_explicit(&t->evictions, n, memory_order_relaxed);
	*freed = n;
	return err;
}

int bm_ensure_free(ruma_bm *bm, struct bm_thread *t)
{
	if (RUMA_LIKELY(atomic_load_explicit(&bm->phys_used, memory_order_relaxed) <
			bm->soft_limit))
		return 0;
	uint64_t idle_rounds = 0;
	for (;;) {
		size_t freed;
		int r = evict_round(bm, t, &freed);
		uint64_t used = atomic_load(&bm->phys_used);
		if (r && freed == 0)
			return r; /* write-back failing and nothing else to drop */
		if (used < bm->hard_limit)
			return 0;
		if (freed > 0) {
			idle_rounds = 0;
			continue;
		}
		if (++idle_rounds > 200000) {
			bm_say(&bm->cfg,
				"buffer pool exhausted: all %" PRIu64
				" resident pages stay latched (raise phys_bytes)",
				used);
			return -EAGAIN;
		}
		if (t->aio) /* this thread's own reads may hold the pool */
			bm->ops.aio_poll(bm, t);
		sched_yield();
	}
}

int bm_ensure_free_try(ruma_bm *bm, struct bm_thread *t)
{
	for (unsigned round = 0;
	     atomic_load_explicit(&bm->phys_used, memory_order_relaxed) >= bm->soft_limit; round++) {
		size_t freed;
		int r = evict_round(bm, t, &freed);
		if (atomic_load(&bm->phys_used) < bm->hard_limit)
			return 0;
		if (r && freed == 0)
			return r;
		if (freed == 0 && round >= 4)
			return RUMA_BM_BUSY; /* every candidate latched: retry later */
	}
	return 0;
}

/* ---- faulting in --------------------------------------------------------- */

int bm_fault_in(ruma_bm *bm, ruma_pid pid, bool read)
{
	struct bm_thread *t;
	int r = bm_thread_get(bm, &t);

	if (!r)
		r = bm_ensure_free(bm, t);
	if (r) {
		bm_unlock_x_evicted(bm, pid);
		return r;
	}
	atomic_fetch_add(&bm->phys_used, 1);
	if (read && bm_written_test(bm, pid)) {
		BM_IGNORE_WRITES_BEGIN();
		r = ruma_os_pread_full(bm->fd, bm_page(bm, pid), RUMA_BM_PAGE_SIZE,
				       (off_t)(pid * RUMA_BM_PAGE_SIZE));
		BM_IGNORE_WRITES_END();
		if (!r)
			r = bm_page_verify(bm, pid, bm_page(bm, pid));
		if (r) {
			bm_fault_abort(bm, pid);
			return r;
		}
		atomic_fetch_add_explicit(&t->reads, 1, memory_order_relaxed);
	}
	bm_rs_insert(bm, pid);
	return 0;
}

void bm_fault_abort(ruma_bm *bm, ruma_pid pid)
{
	/* drop whatever part arrived: the page stays evicted */
	(void)ruma_os_madvise(bm_page(bm, pid), RUMA_BM_PAGE_SIZE, MADV_DONTNEED);
	atomic_fetch_sub(&bm->phys_used, 1);
	bm_unlock_x_evicted(bm, pid);
}

/* Drop pid's resident copy, dirty or not, without writing it: its bytes
 * are no one's (a page freed by recovery's redo) or the file holds the ones
 * to trust (a page of an extent).  Waits for a latch held on it. */
void bm_discard_resident(ruma_bm *bm, ruma_pid pid)
{
	unsigned waits = 0;
	for (;;) {
		uint64_t w = atomic_load(&bm->state[pid]);
		unsigned s = bm_st(w);
		if (s == BM_EVICTED)
			return;
		if (s != BM_UNLOCKED && s != BM_MARKED) {
			bm_wait(bm, pid, w, &waits);
			continue;
		}
		if (!atomic_compare_exchange_strong(&bm->state[pid], &w,
						    bm_word(BM_LOCKED, bm_ver(w), false)))
			continue;
		bm_wip_wait(bm, pid); /* the file gets no older image after this */
		(void)bm_rs_remove(bm, pid);
		bm_fault_abort(bm, pid);
		return;
	}
}

void bm_wip_wait(ruma_bm *bm, ruma_pid pid)
{
	while (bm_wip_test(bm, pid))
		sched_yield(); /* one write: the flush needs no latch to end it */
}

/* ---- flushing ------------------------------------------------------------ */

/* Pages latched and written at once by a flush (bm_ext.h). */
#define FLUSH_CHUNK RUMA_BM_FLUSH_CHUNK

/* Latch pid shared if it is resident and dirty; false if nothing to write. */
static bool latch_dirty(ruma_bm *bm, ruma_pid pid)
{
	unsigned n = 0;

	for (;;) {
		uint64_t w = atomic_load(&bm->state[pid]);
		unsigned s = bm_st(w);
		if (s == BM_EVICTED)
			return false;
		if (s == BM_LOCKED || s == BM_MAX_SHARED) {
			bm_wait(bm, pid, w, &n);
			continue;
		}
		if (!(w & BM_DIRTY))
			return false;
		if (bm_try_lock_s(bm, pid, w))
			return true;
	}
}

static int cmp_pid(const void *a, const void *b)
{
	ruma_pid x = *(const ruma_pid *)a, y = *(const ruma_pid *)b;
	return x < y ? -1 : x > y;
}

void bm_sort_pids(ruma_pid *pids, size_t n)
{
	qsort(pids, n, sizeof(*pids), cmp_pid);
}

/* A failed write of an unlatched page's copy: latch it shared again (it
 * stays resident: wip) and set its dirty bit back, which no writer's
 * release can then store over. */
static void redirty(ruma_bm *bm, ruma_pid pid)
{
	unsigned n = 0;
	for (;;) {
		uint64_t w = atomic_load(&bm->state[pid]);
		unsigned s = bm_st(w);
		if (s != BM_LOCKED && s != BM_MAX_SHARED && bm_try_lock_s(bm, pid, w))
			break;
		bm_wait(bm, pid, w, &n);
	}
	atomic_fetch_or(&bm->state[pid], BM_DIRTY);
	bm_unlock_s(bm, pid);
}

/*
 * Write the shared-latched pids (sorted, so runs are contiguous): claim
 * them, copy each image into buf, mark the pages wip and release their
 * latches; then make the log durable up to the copies' LSNs (WAL rule),
 * seal and write the copies.  A writer that needs one of the pages gets it
 * at once, neither waiting for the log's sync nor for the write (the page
 * stays dirty for the next flush if it changes); eviction and other writes
 * leave it alone until its copy is written (wip).  A failed sync or write
 * sets the dirty bit back.
 */
static int flush_batch(ruma_bm *bm, struct bm_thread *t, ruma_pid *pids, int *res, size_t n,
		       char *buf)
{
	char *img[FLUSH_CHUNK] = { 0 };
	bm_sort_pids(pids, n);
	pthread_rwlock_rdlock(&bm->writeback_lock);
	for (size_t i = 0; i < n; i++)
		bm_wip_wait(bm, pids[i]); /* an earlier flush's copy: then ours */
	n = bm_claim_dirty(bm, pids, n); /* another thread's write: waited for at the end */
	for (size_t i = 0; i < n; i++) {
		img[i] = buf + i * RUMA_BM_PAGE_SIZE;
		memcpy(img[i], bm_page(bm, pids[i]), RUMA_BM_PAGE_SIZE);
		bm_wip_set(bm, pids[i], true);
		bm_unlock_s(bm, pids[i]);
	}
	int err = log_first(bm, img, pids, n, res); /* no latch held while the log syncs */
	for (size_t i = 0; i < n && !err; i++)
		bm_page_seal(bm, pids[i], img[i]);
	if (err) {
		for (size_t i = 0; i < n; i++) {
			redirty(bm, pids[i]);
			bm_wip_set(bm, pids[i], false);
		}
	} else {
		err = write_images(bm, t, pids, img, n, res);
		for (size_t i = 0; i < n; i++) {
			if (res[i])
				redirty(bm, pids[i]);
			bm_wip_set(bm, pids[i], false);
		}
	}
	pthread_rwlock_unlock(&bm->writeback_lock);
	return err;
}

/* The resident dirty pages in pid order (unlatched: each is checked again
 * when it is latched for writing).  *out is malloc'ed. */
static int dirty_candidates(ruma_bm *bm, ruma_pid **out, size_t *n_out)
{
	size_t cap = atomic_load(&bm->phys_used) + 64, n = 0;
	ruma_pid *v = malloc(cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (uint64_t i = 0; i <= bm->rs_mask; i++) {
		uint64_t slot = atomic_load(&bm->rs[i]);
		if (slot == 0 || slot == RS_TOMB)
			continue;
		uint64_t w = atomic_load(&bm->state[slot - 1]);
		if (bm_st(w) == BM_EVICTED || !(w & BM_DIRTY))
			continue;
		if (n == cap) {
			ruma_pid *g = realloc(v, 2 * cap * sizeof(*v));
			if (!g) {
				free(v);
				return -ENOMEM;
			}
			v = g;
			cap *= 2;
		}
		v[n++] = slot - 1;
	}
	bm_sort_pids(v, n);
	*out = v;
	*n_out = n;
	return 0;
}

/*
 * Write every dirty resident page: the candidates are collected and sorted
 * first, then latched shared and written FLUSH_CHUNK at a time, so that
 * neighbouring pages go out in one pwritev or one io_uring submission.  A
 * page dirtied after the collection is left for the next flush (as it
 * would be if it were dirtied just after this one).
 */
int bm_flush_pages(ruma_bm *bm)
{
	struct bm_thread *t;
	ruma_pid *cand = NULL;
	size_t ncand = 0, n = 0;
	int err = bm_thread_get(bm, &t);
	uint64_t failures = atomic_load(&bm->write_failures);

	if (!err)
		err = dirty_candidates(bm, &cand, &ncand);
	if (err)
		return err;
	char *buf = aligned_alloc(RUMA_BM_PAGE_SIZE, (size_t)FLUSH_CHUNK * RUMA_BM_PAGE_SIZE);
	if (!buf) {
		free(cand);
		return -ENOMEM;
	}
	ruma_pid pids[FLUSH_CHUNK];
	int res[FLUSH_CHUNK];
	for (size_t i = 0; i < ncand; i++) {
		if (!latch_dirty(bm, cand[i]))
			continue;
		pids[n++] = cand[i];
		if (n == FLUSH_CHUNK || i + 1 == ncand) {
			int r = flush_batch(bm, t, pids, res, n, buf);
			err = err ? err : r;
			n = 0;
		}
	}
	if (n) {
		int r = flush_batch(bm, t, pids, res, n, buf);
		err = err ? err : r;
	}
	free(buf);
	free(cand);
	/* pages found clean (or claimed) because another thread was writing
	 * them: wait until those writes completed; if any write failed
	 * meanwhile, a page may be missing on disk, so the flush fails */
	pthread_rwlock_wrlock(&bm->writeback_lock);
	pthread_rwlock_unlock(&bm->writeback_lock);
	if (!err && atomic_load(&bm->write_failures) != failures)
		err = -EIO;
	return err;
}
