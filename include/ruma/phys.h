/*
 * phys.h — a pool of "physical" pages for rewiring.
 *
 * A ruma_phys is a main-memory file (memfd) whose pages play the role of
 * physical pages: a page number p names the file range
 * [p * page_size, (p + 1) * page_size).  Virtual areas (area.h) map runs of
 * these pages with mmap(MAP_SHARED|MAP_FIXED) at the matching file offset;
 * two virtual pages wired to the same physical page alias each other.
 *
 * Page size is 4 KiB (plain memfd) or 2 MiB (memfd with MFD_HUGETLB |
 * MFD_HUGE_2MB, backed by the reserved huge pages of vm.nr_hugepages),
 * fixed at creation.
 *
 * Page numbers are handed out by a free-extent list: freed pages are reused
 * (lowest page numbers first), the file grows on demand with ftruncate (the
 * file size is the high-water mark and never shrinks), and freeing punches a
 * hole (fallocate PUNCH_HOLE|KEEP_SIZE) so the memory goes back to the kernel
 * at once.  Freed pages therefore read as zero when they are handed out again.
 *
 * Thread safety: a pool is not internally locked; callers serialise calls on
 * one pool.  The memory itself may be accessed from any thread.
 */
#ifndef RUMA_PHYS_H
#define RUMA_PHYS_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUMA_PAGE_4K ((size_t)4096)
#define RUMA_PAGE_2M ((size_t)2 << 20)

typedef struct ruma_phys ruma_phys;

/* Creation flags (ruma_phys_options.flags). */
enum {
	/*
	 * Every allocation is backed at once: fallocate on the allocated range.
	 * For 2 MiB pages this takes the huge pages now and fails early
	 * (RUMA_ENOHUGE) instead of at mmap or fault time.
	 */
	RUMA_PHYS_PREPOPULATE = 1u << 0,
	/*
	 * Do not punch holes when pages are freed (the memory stays with the
	 * file and is reused as is; freed pages keep their old contents).
	 */
	RUMA_PHYS_NO_PUNCH = 1u << 1,
	/*
	 * 2 MiB pools: skip the check at creation that a huge page is free
	 * (backing one page and punching it again).  A shortage is then found
	 * by the first mapping that reserves huge pages (a MAP_SHARED mapping
	 * without MAP_NORESERVE fails with ENOMEM) or by a backing fallocate.
	 */
	RUMA_PHYS_NO_PROBE = 1u << 2,
};

/* Options for ruma_phys_create; zero-initialise and set what you need. */
typedef struct ruma_phys_options {
	size_t page_size;   /* RUMA_PAGE_4K (default when 0) or RUMA_PAGE_2M */
	unsigned flags;     /* RUMA_PHYS_* */
	uint64_t max_pages; /* refuse to grow beyond this many pages; 0 = no limit */
	const char *name;   /* memfd name (shown in /proc/self/maps); NULL = "ruma-phys" */
} ruma_phys_options;

/* A run of contiguous physical pages [first, first + n). */
typedef struct ruma_phys_run {
	uint64_t first;
	uint64_t n;
} ruma_phys_run;

/* Pool statistics (ruma_phys_get_stats). */
typedef struct ruma_phys_stats {
	size_t page_size;
	uint64_t pages_in_use;     /* allocated and not freed */
	uint64_t pages_allocated;  /* pages handed out since creation (cumulative) */
	uint64_t pages_freed;      /* pages given back since creation (cumulative) */
	uint64_t high_water;       /* highest page number ever handed out + 1 */
	uint64_t file_size;        /* current memfd size in bytes */
	uint64_t bytes_resident;   /* bytes the file really holds (fstat st_blocks * 512) */
	uint64_t free_extents;     /* entries in the free-extent list */
	uint64_t punches;          /* fallocate(PUNCH_HOLE) calls made */
} ruma_phys_stats;

/*
 * ruma_phys_create — a pool with the options o (NULL: 4 KiB pages, no
 * flags, no limit, memfd name "ruma-phys"); *out receives it (owned by the
 * caller, release with ruma_phys_destroy).  For 2 MiB pages, creation probes
 * (unless RUMA_PHYS_NO_PROBE) the huge-page supply by reserving one page with
 * a shared mapping (no page is taken or zeroed) and dropping the reservation
 * again (the pool holds no huge page until pages are allocated and mapped).
 * Returns 0, -EINVAL (page size other than 0, RUMA_PAGE_4K and RUMA_PAGE_2M,
 * unknown flags), -ENOMEM, RUMA_ENOHUGE (no free 2 MiB huge page: raise
 * vm.nr_hugepages), RUMA_EUNSUPP (kernel without hugetlb memfd), or the
 * negative errno of memfd_create/ftruncate/mmap/munmap/fallocate.  Before
 * 1.0 this name took (page_size, flags, out); a call in that form does not
 * compile (three arguments for two): pass
 * &(ruma_phys_options){ .page_size = ps, .flags = f }.
 */
RUMA_API int ruma_phys_create(const ruma_phys_options *o, ruma_phys **out);

/*
 * ruma_phys_destroy — close the memfd and free the pool (NULL is allowed).
 * Existing mappings of the file stay valid (the kernel keeps the file alive
 * while it is mapped); its pages can no longer be allocated or freed.
 */
RUMA_API void ruma_phys_destroy(ruma_phys *p);

/* ruma_phys_fd — the memfd (owned by the pool; map it, do not close it). */
RUMA_API int ruma_phys_fd(const ruma_phys *p);

/* ruma_phys_page_size — 4096 or 2 MiB. */
RUMA_API size_t ruma_phys_page_size(const ruma_phys *p);

/* ruma_phys_is_huge — true for a 2 MiB hugetlb pool. */
RUMA_API bool ruma_phys_is_huge(const ruma_phys *p);

/* ruma_phys_offset — file offset of page number page. */
RUMA_API uint64_t ruma_phys_offset(const ruma_phys *p, uint64_t page);

/*
 * ruma_phys_alloc — allocate n >= 1 contiguous pages; *first receives the
 * first page number.  Takes the lowest free extent that is large enough,
 * otherwise grows the file.  With RUMA_PHYS_PREPOPULATE the range is backed
 * (fallocate) before returning.  On failure nothing is allocated.
 * Returns 0, -EINVAL (n == 0), -ENOSPC (max_pages reached), -ENOMEM,
 * RUMA_ENOHUGE (prepopulate found no free huge pages), or an errno of
 * ftruncate/fallocate.
 */
RUMA_API int ruma_phys_alloc(ruma_phys *p, uint64_t n, uint64_t *first);

/*
 * ruma_phys_alloc_runs — allocate n >= 1 pages that need not be contiguous.
 * Uses one free extent that fits when there is one; otherwise fills free
 * extents lowest first and takes the rest contiguously from the end of the
 * file.  At most max_runs runs are produced (runs[] has room for max_runs,
 * max_runs >= 1): the last run always comes from the end of the file, so
 * this never fails for lack of runs.  *nruns receives the number written.
 * Runs are in increasing page order.  On failure nothing is allocated.
 * Returns as ruma_phys_alloc, and -EINVAL for n == 0 or max_runs == 0.
 */
RUMA_API int ruma_phys_alloc_runs(ruma_phys *p, uint64_t n, ruma_phys_run *runs,
				  size_t max_runs, size_t *nruns);

/*
 * ruma_phys_free — give back pages [first, first + n).  Every page must be
 * allocated (a double or out-of-range free returns -EINVAL and changes
 * nothing).  Punches a hole over the range (unless RUMA_PHYS_NO_PUNCH) so the
 * memory returns to the kernel once no mapping holds it; mapped pages stay
 * readable as zero pages of the file.  Returns 0, -EINVAL, -ENOMEM, or the
 * negative errno of fallocate (the pages are then still marked free).
 */
RUMA_API int ruma_phys_free(ruma_phys *p, uint64_t first, uint64_t n);

/*
 * ruma_phys_prepopulate — back allocated pages [first, first + n) now
 * (fallocate mode 0).  For 2 MiB pages this reserves the huge pages.
 * Returns 0, -EINVAL (pages not allocated), RUMA_ENOHUGE, or an errno.
 */
RUMA_API int ruma_phys_prepopulate(ruma_phys *p, uint64_t first, uint64_t n);

/*
 * ruma_phys_file_pages — the memfd size in pages (pages that may be mapped
 * without SIGBUS); grows on demand, never shrinks.
 */
RUMA_API uint64_t ruma_phys_file_pages(const ruma_phys *p);

/* ruma_phys_is_allocated — true when page is currently allocated. */
RUMA_API bool ruma_phys_is_allocated(const ruma_phys *p, uint64_t page);

/*
 * ruma_phys_get_stats — fill *out.  Calls fstat for file_size / bytes_resident.
 * Returns 0 or the negative errno of fstat.
 */
RUMA_API int ruma_phys_get_stats(const ruma_phys *p, ruma_phys_stats *out);

#ifdef __cplusplus
}
#endif
#endif
