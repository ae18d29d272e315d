/*
 * area.h — virtual areas: reserved address ranges whose pages are wired
 * ("rewired") onto physical pages of ruma_phys pools.
 *
 * An area reserves `pages` virtual pages of one page size (4 KiB or 2 MiB;
 * it must equal the page size of every pool mapped into it) as PROT_NONE,
 * MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, aligned to the page size.  Virtual
 * page v lives at ruma_area_base(a) + v * page_size.  Mapping a run puts one
 * mmap(MAP_SHARED|MAP_FIXED, memfd, ppage * page_size) over it; unmapping puts
 * the PROT_NONE reservation back, so the range stays reserved.
 *
 * The area keeps a translation table vpage -> (pool, ppage) or "none", and an
 * estimate of the kernel mappings (VMAs) it has created: one per maximal run
 * of virtual pages whose physical pages are contiguous in the same pool with
 * the same mode, plus one per maximal unmapped gap.  Before every mmap that
 * would create mappings, the estimate is checked against the mapping budget
 * and the call fails with RUMA_EMAPLIMIT instead of reaching
 * vm.max_map_count.  The default budget is process-wide: the sum of the
 * estimates of all live areas may not exceed vm.max_map_count (read from
 * /proc/sys/vm/max_map_count once per area, at the first call that would add
 * mappings: creating an area and wiring it with one run read nothing) minus
 * RUMA_AREA_MAP_MARGIN (room for the rest of the process).  A per-area budget can be set lower
 * (ruma_area_set_map_budget).  An mmap that fails with ENOMEM while the
 * process is at the kernel limit is also reported as RUMA_EMAPLIMIT; one that
 * fails with ENOMEM on a hugetlb pool otherwise is reported as RUMA_ENOHUGE.
 *
 * Failure mid-way: operations that issue several mmaps (batch rewire, alias,
 * move, unmap of mixed ranges) do NOT roll back.  They record exactly what
 * was done: runs completed before the failure are mapped and in the table;
 * the run whose call failed is put back to the reserved (unmapped) state and
 * its pages read "none" in the table; runs after it are unchanged.  The error
 * is returned.  ruma_area_check compares the table with /proc/self/maps.
 *
 * Thread safety: an area is not internally locked; one thread at a time may
 * change it.  Memory in the area may be read and written from any thread.
 * Pools must outlive the areas that map them (or their pages must be
 * unmapped first), since the table refers to them.
 *
 * For layouts with a discontinuity at every page, anon.h moves the pages of
 * private anonymous memory instead (one kernel mapping whatever the layout).
 */
#ifndef RUMA_AREA_H
#define RUMA_AREA_H

#include <ruma/phys.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ruma_area ruma_area;

/* Value of ruma_area_translate's *ppage for an unmapped page. */
#define RUMA_AREA_NONE UINT64_MAX

/* Mappings left to the rest of the process under the default budget. */
#define RUMA_AREA_MAP_MARGIN 1000u

/* Most pools that one area can map (distinct ruma_phys objects). */
#define RUMA_AREA_MAX_POOLS 255u

/* Flags for mapping calls. */
enum {
	/* Prefault after mapping (see ruma_area_populate). */
	RUMA_AREA_POPULATE = 1u << 0,
	/*
	 * MAP_PRIVATE mapping of the memfd: reads see the physical page, the
	 * first write to a page copies it (kernel copy-on-write) and the copy is
	 * private to this virtual page.  Populate uses MADV_POPULATE_READ so it
	 * does not copy.
	 */
	RUMA_AREA_PRIVATE = 1u << 1,
	/* Map read-only (PROT_READ). */
	RUMA_AREA_RDONLY = 1u << 2,
	/* Populate by touching each page, never by madvise (benchmarks, tests). */
	RUMA_AREA_POP_TOUCH = 1u << 3,
	/*
	 * ruma_area_map_run: fill the page tables in the mmap call itself
	 * (MAP_POPULATE; best effort, errors not reported — for pages that
	 * already have memory in the pool, where it saves a madvise call).
	 */
	RUMA_AREA_MAP_POPULATE = 1u << 4,
};

/* How pages were prefaulted. */
typedef enum ruma_populate_method {
	RUMA_POPULATE_NONE = 0,     /* nothing to populate */
	RUMA_POPULATE_MADVISE = 1,  /* madvise(MADV_POPULATE_WRITE / _READ), Linux >= 5.14 */
	RUMA_POPULATE_TOUCH = 2,    /* one access per page (kernel lacks MADV_POPULATE_*) */
	/* process_madvise(MADV_POPULATE_*) over up to 1024 ranges per call, Linux >= 6.13 */
	RUMA_POPULATE_PROCESS_MADVISE = 3,
} ruma_populate_method;

/* One (virtual page, physical page) pair of a batch rewire. */
typedef struct ruma_rewire_pair {
	uint64_t vpage;
	uint64_t ppage;
} ruma_rewire_pair;

/* What a multi-mmap call did (all fields valid on success and on failure). */
typedef struct ruma_area_result {
	size_t runs;              /* mmap/mremap calls that succeeded */
	size_t pages_done;        /* pages now wired as requested */
	ruma_populate_method populate; /* how populate ran, when asked */
} ruma_area_result;

/* Area statistics (ruma_area_get_stats). */
typedef struct ruma_area_stats {
	uint64_t pages;          /* virtual pages reserved */
	uint64_t pages_mapped;   /* pages with a physical page */
	uint64_t map_estimate;   /* estimated kernel mappings (VMAs) of the area */
	uint64_t map_budget;     /* per-area budget (UINT64_MAX = only the process-wide one) */
	uint64_t max_map_count;  /* vm.max_map_count the area's budget checks use */
	uint64_t mmaps, mremaps; /* calls issued by this area */
	uint64_t populated_pages;
} ruma_area_stats;

/*
 * ruma_area_create — reserve pages virtual pages of page_size (RUMA_PAGE_4K
 * or RUMA_PAGE_2M) aligned to page_size; *out receives the area (owned by the
 * caller, release with ruma_area_destroy).  The table, 8 bytes per virtual
 * page, gets memory from the OS as it is written (calloc, or its own
 * anonymous mapping from 16384 pages on).
 * Returns 0, -EINVAL (bad page size, pages == 0 or too large), -ENOMEM
 * (address space or memory), or an mmap errno.
 */
RUMA_API int ruma_area_create(size_t page_size, uint64_t pages, ruma_area **out);

/*
 * ruma_area_create_mapped — an area of `pages` pages of phys's page size,
 * wired at once to pool pages [ppage, ppage + pages): the same area as
 * ruma_area_create followed by ruma_area_map_run(area, 0, phys, ppage,
 * pages, flags, how), made with one mmap of the pool file where the kernel
 * picks the address (no reservation first), and a table left unwritten
 * until the first change.  flags and *how as ruma_area_map_run.  Returns as
 * ruma_area_create and ruma_area_map_run; on error *out is NULL and nothing
 * is left mapped.
 */
RUMA_API int ruma_area_create_mapped(ruma_phys *phys, uint64_t ppage, uint64_t pages,
				     unsigned flags, ruma_area **out, ruma_populate_method *how);

/* ruma_area_destroy — unmap the whole range and free the area (NULL allowed). */
RUMA_API void ruma_area_destroy(ruma_area *a);

/* ruma_area_base — address of virtual page 0. */
RUMA_API void *ruma_area_base(const ruma_area *a);

/* ruma_area_addr — address of virtual page vpage (no range check). */
RUMA_API void *ruma_area_addr(const ruma_area *a, uint64_t vpage);

/* ruma_area_page_size — the page size of the area. */
RUMA_API size_t ruma_area_page_size(const ruma_area *a);

/* ruma_area_pages — the number of virtual pages reserved. */
RUMA_API uint64_t ruma_area_pages(const ruma_area *a);

/*
 * ruma_area_map_run — wire virtual pages [vpage, vpage + n) onto physical
 * pages [ppage, ppage + n) of pool phys with ONE mmap (MAP_SHARED, or
 * MAP_PRIVATE with RUMA_AREA_PRIVATE), replacing whatever was mapped there.
 * The physical pages should be allocated in phys (not checked: mapping a
 * free page maps a hole of the file).  flags: RUMA_AREA_*.  With
 * RUMA_AREA_POPULATE the run is prefaulted afterwards; *how (may be NULL)
 * says how.  Returns 0, -EINVAL (range outside the area or the file size,
 * page-size mismatch, n == 0), RUMA_EMAPLIMIT, RUMA_ENOHUGE, -ENOSPC (more
 * than RUMA_AREA_MAX_POOLS pools), or an mmap/madvise errno.  When the mmap
 * fails the range is reset to unmapped (table: none); when only the populate
 * fails the run stays mapped (and in the table).
 */
RUMA_API int ruma_area_map_run(ruma_area *a, uint64_t vpage, ruma_phys *phys, uint64_t ppage,
			       uint64_t n, unsigned flags, ruma_populate_method *how);

/*
 * ruma_area_rewire_batch — wire each pairs[i].vpage onto pairs[i].ppage of
 * phys.  The input need NOT be sorted: the function sorts pairs[] in place by
 * vpage (the caller's array is reordered), then issues exactly one mmap per
 * maximal run where both vpage and ppage increase by one.  Duplicate vpages
 * give -EINVAL before anything is mapped.  flags: RUMA_AREA_*; with
 * RUMA_AREA_POPULATE all mapped runs are prefaulted after the batch.
 * *res (may be NULL) reports runs, pages done and the populate method.
 * On a failing mmap the batch stops: earlier runs stay mapped (in the table),
 * the failing run is reset to unmapped, later runs are not touched (see the
 * file comment); the error is returned.  Returns as ruma_area_map_run.
 */
RUMA_API int ruma_area_rewire_batch(ruma_area *a, ruma_phys *phys, ruma_rewire_pair *pairs,
				    size_t n, unsigned flags, ruma_area_result *res);

/*
 * ruma_area_populate — prefault the mapped pages in [vpage, vpage + n)
 * (unmapped pages are skipped) with madvise(MADV_POPULATE_WRITE) — or
 * MADV_POPULATE_READ for private/read-only runs — one call per maximal mapped
 * virtual range.  Several ranges go to one process_madvise call (up to 1024
 * ranges each) when the kernel accepts it for the own process (6.13+);
 * otherwise one madvise per range.  When the kernel lacks MADV_POPULATE_*
 * (EINVAL), or with
 * RUMA_AREA_POP_TOUCH in flags, it touches every page instead (a write
 * access that keeps the value, or a read for private/read-only runs).
 * *how (may be NULL) reports the method used.  Returns 0, -EINVAL (range),
 * RUMA_ENOHUGE (hugetlb pool out of huge pages), or a madvise errno.
 */
RUMA_API int ruma_area_populate(ruma_area *a, uint64_t vpage, uint64_t n, unsigned flags,
				ruma_populate_method *how);

/*
 * ruma_area_unmap — put [vpage, vpage + n) back to the PROT_NONE reservation
 * with one mmap (anonymous, MAP_FIXED|MAP_NORESERVE); table entries become
 * none.  Pool pages are not freed.  Returns 0, -EINVAL, RUMA_EMAPLIMIT, or an
 * mmap errno (the table then still describes what is mapped).
 */
RUMA_API int ruma_area_unmap(ruma_area *a, uint64_t vpage, uint64_t n);

/*
 * ruma_area_move — move the mapped pages [src, src + n) to [dst, dst + n)
 * with mremap(MREMAP_MAYMOVE|MREMAP_FIXED): page-table entries move with the
 * mapping, so populated pages are not faulted again.  Every source page must
 * be mapped.  One mremap per maximal physical run (page by page if the kernel
 * split the run into several VMAs); overlapping ranges are moved in
 * non-overlapping pieces in memmove order.  The source becomes reserved
 * (none), the destination's previous mapping is replaced, the table follows.
 * *res (may be NULL) reports calls and pages moved.  Returns 0, -EINVAL
 * (range, or a source page unmapped), RUMA_EMAPLIMIT, or an mremap/mmap
 * errno (pages moved so far are recorded).
 */
RUMA_API int ruma_area_move(ruma_area *a, uint64_t src, uint64_t dst, uint64_t n,
			    ruma_area_result *res);

/*
 * ruma_area_alias — wire [dst, dst + n) onto the same physical pages as the
 * mapped pages [src, src + n); where a source page is unmapped the
 * destination page is unmapped too.  One mmap per run (src and dst may
 * overlap: the source translation is copied first).  Writes through either range are seen by
 * the other (with RUMA_AREA_PRIVATE the destination is a copy-on-write
 * view instead).  flags: RUMA_AREA_*.  Returns as ruma_area_rewire_batch.
 */
RUMA_API int ruma_area_alias(ruma_area *a, uint64_t dst, uint64_t src, uint64_t n,
			     unsigned flags, ruma_area_result *res);

/*
 * ruma_area_translate — the physical page behind vpage: *ppage receives it
 * or RUMA_AREA_NONE; *phys (may be NULL) the pool (NULL when none);
 * *flags (may be NULL) RUMA_AREA_PRIVATE / RUMA_AREA_RDONLY of the mapping.
 * Returns 0 or -EINVAL (vpage outside the area).
 */
RUMA_API int ruma_area_translate(const ruma_area *a, uint64_t vpage, ruma_phys **phys,
				 uint64_t *ppage, unsigned *flags);

/*
 * ruma_area_set_map_budget — limit the mappings (VMAs) this area may create
 * to budget (UINT64_MAX = only the process-wide limit).  A budget below the
 * current estimate refuses further splitting calls with RUMA_EMAPLIMIT.
 */
RUMA_API void ruma_area_set_map_budget(ruma_area *a, uint64_t budget);

/* ruma_area_map_estimate — current VMA estimate of the area. */
RUMA_API uint64_t ruma_area_map_estimate(const ruma_area *a);

/* ruma_area_get_stats — fill *out. */
RUMA_API void ruma_area_get_stats(const ruma_area *a, ruma_area_stats *out);

/*
 * ruma_area_check — compare the translation table with the kernel's view in
 * /proc/self/maps: every mapped page must lie in a mapping of its pool's
 * memfd at the right offset and mode, every unmapped page in a PROT_NONE
 * anonymous mapping.  Costs a read of /proc/self/maps (tests, debugging).
 * Returns 0, RUMA_ECORRUPT on a mismatch, or a negative errno reading the
 * file.  With a message callback (ruma_message_fn) the first mismatch is
 * described in one line ("virtual page 12: wrong file offset (physical
 * page)") and every page is examined; with NULL the check stops silently
 * at the first mismatch.
 */
RUMA_API int ruma_area_check(const ruma_area *a, ruma_message_fn message, void *message_ctx);

/*
 * ruma_area_kernel_maps — the number of kernel mappings (lines of
 * /proc/self/maps) that overlap the area, to compare with
 * ruma_area_map_estimate.  Returns 0 or a negative errno.
 */
RUMA_API int ruma_area_kernel_maps(const ruma_area *a, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
