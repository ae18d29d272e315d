/*
 * io.c — which I/O paths the buffer manager uses.
 *
 * Path selection: at open the batched paths are tried once — an io_uring
 * (write-back of each eviction batch and each flush chunk in one
 * submission, and the asynchronous reads of aio.c) and process_madvise on
 * this process (one call drops a whole eviction batch).  Where the kernel
 * refuses one, the store falls back (pwrite / pwritev per run of
 * neighbouring pages; madvise per page; synchronous reads) and says so
 * once through the message callback.  A refusal met later (e.g. a ring
 * that cannot be created for a new thread) falls back the same way.
 *
 * Syscalls (through src/os): io_uring_setup (probe, freed at once),
 * process_madvise(MADV_DONTNEED) on one page of the reservation that
 * never holds data (the metadata page 0 is never mapped into the pool).
 */
#include "bm/bm_int.h"

#include "os/os.h"

#include <errno.h>
#include <sys/mman.h>

static int probe_uring(void)
{
	struct io_uring *ring;
	int r = ruma_os_uring_new(2, &ring);
	if (!r)
		ruma_os_uring_free(ring);
	return r;
}

static int probe_pmadv(void *page)
{
	struct iovec iov = { page, RUMA_BM_PAGE_SIZE };
	size_t done = 0;
	return ruma_os_process_madvise(&iov, 1, MADV_DONTNEED, &done);
}

void ruma_bm_probe_io(ruma_bm_io_support *out)
{
	void *p;
	out->uring = probe_uring();
	int r = ruma_os_mmap(NULL, RUMA_BM_PAGE_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &p);
	out->process_madvise = r ? r : probe_pmadv(p);
	if (!r)
		(void)ruma_os_munmap(p, RUMA_BM_PAGE_SIZE);
}

void bm_io_uring_refused(ruma_bm *bm, int err)
{
	if (atomic_exchange(&bm->uring_refused, true))
		return;
	bm_say(&bm->cfg,
		"note: io_uring unavailable here (%s); %sreading synchronously",
		ruma_strerror(err),
		bm->cfg.write == RUMA_BM_WRITE_URING
			? "writing back with pwrite/pwritev per run of pages, "
			: "");
}

void bm_io_open(ruma_bm *bm)
{
	int r = probe_uring();
	if (r)
		bm_io_uring_refused(bm, r);
	if (bm->cfg.evict != RUMA_BM_EVICT_PROCESS_MADVISE)
		return;
	r = probe_pmadv(bm->base); /* pid 0: metadata, never a pool page */
	if (r && !atomic_exchange(&bm->pmadv_refused, true))
		bm_say(&bm->cfg,
			"note: process_madvise(MADV_DONTNEED) on self refused by this kernel "
			"(%s; needs Linux >= 6.13); evicting with madvise per page",
			ruma_strerror(r));
}
