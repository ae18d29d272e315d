/*
 * anon.h — anonymous areas: private anonymous memory whose pages move
 * between places by moving their page-table entries (UFFDIO_MOVE, Linux >=
 * 6.8) or by mremap, instead of being wired onto a shared pool as area.h
 * does.  A moved page keeps its memory and contents and is not faulted
 * again at its destination; the source reads zero afterwards.
 *
 * ruma_move_probe says which path this process can use; ruma_anon_create
 * reserves an area on one path; ruma_anon_move / ruma_anon_move_batch move
 * pages within or between areas of the same path.  Mapping estimates share
 * the process-wide budget of ruma_area (area.h, RUMA_AREA_MAP_MARGIN).
 * Rewiring: Schuhknecht, Dittrich and Sharma, "RUMA has it: Rewired User-space
 * Memory Access is Possible!", PVLDB 9(10), 2016; UFFDIO_MOVE: the Linux
 * kernel's Documentation/admin-guide/mm/userfaultfd.rst.
 */
#ifndef RUMA_ANON_H
#define RUMA_ANON_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * How pages get to their place.  RUMA_REWIRE_MMAP is the memfd rewiring
 * of area.h: one mmap(MAP_SHARED|MAP_FIXED) per run, and one kernel mapping
 * (VMA) per discontinuity, so a layout with one discontinuity per page is
 * bounded by vm.max_map_count.  The two move paths work on private anonymous
 * memory (ruma_anon): RUMA_REWIRE_UFFD moves page-table entries with
 * ioctl(UFFDIO_MOVE) (Linux >= 6.8) and leaves one VMA per area whatever the
 * layout; RUMA_REWIRE_MREMAP moves runs with mremap(MREMAP_MAYMOVE |
 * MREMAP_FIXED | MREMAP_DONTUNMAP) (Linux >= 5.7) and adds up to two VMAs per
 * run moved into an area.
 */
typedef enum ruma_rewire_path {
	RUMA_REWIRE_AUTO = 0,   /* choose: UFFD when available, else the fallback of the caller */
	RUMA_REWIRE_MMAP = 1,
	RUMA_REWIRE_UFFD = 2,
	RUMA_REWIRE_MREMAP = 3,
} ruma_rewire_path;

/* ruma_rewire_path_name — "auto", "mmap", "uffd-move", "mremap". */
RUMA_API const char *ruma_rewire_path_name(ruma_rewire_path p);

/*
 * ruma_move_probe — can this process move pages with UFFDIO_MOVE?  Opens
 * (once per process, again after fork) a userfaultfd — the syscall, else
 * /dev/userfaultfd — and asks UFFDIO_API for UFFD_FEATURE_MOVE.  *path gets
 * RUMA_REWIRE_UFFD or RUMA_REWIRE_MREMAP; *why (may be NULL) a static
 * sentence saying why UFFD is not used ("" when it is).  The answer is
 * cached for the process.  Always returns 0.
 */
RUMA_API int ruma_move_probe(ruma_rewire_path *path, const char **why);

typedef struct ruma_anon ruma_anon;

/* One (destination page, source page) pair of ruma_anon_move_batch. */
typedef struct ruma_move_pair {
	uint64_t dst;
	uint64_t src;
} ruma_move_pair;

/*
 * ruma_anon_create — reserve `pages` 4 KiB pages of private anonymous memory
 * (PROT_READ|PROT_WRITE, MAP_NORESERVE, MADV_NOHUGEPAGE so moves never
 * split huge pages), readable and writable at once; untouched pages read
 * zero and get memory on first touch.  path: RUMA_REWIRE_UFFD,
 * RUMA_REWIRE_MREMAP, or RUMA_REWIRE_AUTO (the probe's answer).  The UFFD
 * path registers the area with the process's userfaultfd in write-protect
 * mode, which moves need on the destination; no page is ever
 * write-protected, so no access to the area waits for a fault handler.
 * Returns 0, -EINVAL (pages 0 or too large), RUMA_EUNSUPP (UFFD requested
 * but not available), -ENOMEM, or an mmap/ioctl errno.
 * Like ruma_area, an anonymous area is not locked: one thread at a time
 * moves pages; its memory may be read and written from any thread, except
 * pages while they move (such an access may see a zero page, and a write
 * to the destination may be discarded).
 */
RUMA_API int ruma_anon_create(uint64_t pages, ruma_rewire_path path, ruma_anon **out);

/* ruma_anon_destroy — unmap the area (NULL allowed). */
RUMA_API void ruma_anon_destroy(ruma_anon *a);

/* ruma_anon_base / ruma_anon_addr — address of page 0 / of page `page`. */
RUMA_API void *ruma_anon_base(const ruma_anon *a);
RUMA_API void *ruma_anon_addr(const ruma_anon *a, uint64_t page);
RUMA_API uint64_t ruma_anon_pages(const ruma_anon *a);
/* ruma_anon_path — RUMA_REWIRE_UFFD or RUMA_REWIRE_MREMAP. */
RUMA_API ruma_rewire_path ruma_anon_path(const ruma_anon *a);

/* What a move did (valid on success and on failure). */
typedef struct ruma_anon_result {
	size_t calls;       /* UFFDIO_MOVE ioctls or mremaps that moved something */
	size_t pages_done;  /* pages now at their destination */
	size_t pages_copied;/* of those, pages copied because the kernel refused to move them */
} ruma_anon_result;

/*
 * ruma_anon_move — move pages [spage, spage + n) of src to [dpage, dpage + n)
 * of dst (src may equal dst; overlapping ranges are moved in pieces in
 * memmove order).  Afterwards the destination holds the source's pages
 * (their page-table entries moved: no copy, no fault on the next access)
 * and the source pages read zero.  Whatever the destination held is
 * discarded.  A source page never touched stays a hole (the destination
 * page reads zero).  Both areas must use the same path.  UFFD: one ioctl per
 * run; a page the kernel refuses to move (-EBUSY: shared with a forked
 * child, or pinned) is copied instead and counted in pages_copied.  MREMAP:
 * one mremap per run, checked first against the mapping budget (two
 * mappings per run, RUMA_EMAPLIMIT before anything moves).
 * *res (may be NULL) reports calls and pages.
 * On failure the move stops: the first res->pages_done pages are at the
 * destination, the rest still at the source, and the error is returned.
 * Returns 0, -EINVAL (range, path mismatch, n == 0), RUMA_EMAPLIMIT, or the
 * errno of the ioctl / mremap / madvise.
 */
RUMA_API int ruma_anon_move(ruma_anon *dst, uint64_t dpage, ruma_anon *src, uint64_t spage,
			    uint64_t n, ruma_anon_result *res);

/*
 * ruma_anon_move_batch — move src page pairs[i].src to dst page pairs[i].dst
 * for all i, in the given order, with one call per maximal run where both
 * page numbers increase by one.  Duplicate destinations or sources are not
 * detected beyond the run scan (moving a page twice moves a hole the second
 * time).  MREMAP: the whole batch is checked against the budget first.
 * Failure: as ruma_anon_move; pairs before res->pages_done are done (in
 * order).  Returns as ruma_anon_move.
 */
RUMA_API int ruma_anon_move_batch(ruma_anon *dst, ruma_anon *src, const ruma_move_pair *pairs,
				  size_t n, ruma_anon_result *res);

/*
 * ruma_anon_discard — drop the pages [page, page + n) (MADV_DONTNEED): they
 * read zero again.  Returns 0, -EINVAL or the madvise errno.
 */
RUMA_API int ruma_anon_discard(ruma_anon *a, uint64_t page, uint64_t n);

/*
 * ruma_anon_populate — give pages [page, page + n) memory now
 * (madvise(MADV_POPULATE_WRITE), Linux >= 5.14; before that one write per
 * page that keeps its value).  Returns 0, -EINVAL, -ENOMEM or the madvise errno.
 */
RUMA_API int ruma_anon_populate(ruma_anon *a, uint64_t page, uint64_t n);

/*
 * ruma_anon_set_map_budget / ruma_anon_map_estimate — the mappings (VMAs)
 * this area may have, and its current estimate (1 for UFFD; 1 + 2 per run
 * moved in for MREMAP).  Budget UINT64_MAX (default) = only the process-wide
 * limit shared with ruma_area (vm.max_map_count minus RUMA_AREA_MAP_MARGIN).
 */
RUMA_API void ruma_anon_set_map_budget(ruma_anon *a, uint64_t budget);
RUMA_API uint64_t ruma_anon_map_estimate(const ruma_anon *a);

#ifdef __cplusplus
}
#endif
#endif
