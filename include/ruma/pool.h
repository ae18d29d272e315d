/*
 * pool.h — page allocation pools for the RUMA allocation comparison
 * (micro-benchmark methods 40, 41, 42).
 *
 *   REWIRED   (40) pages are allocated from a physical page pool (phys.h: a
 *             memfd of 4 KiB or 2 MiB pages) and wired into a reserved
 *             virtual area (area.h).  Sequential placement: virtual page i
 *             maps physical page i, one mapping for all.  Random placement
 *             (random = true): virtual page i maps a shuffled physical page
 *             — the extreme case of fragmentation.  Two ways (opts.path,
 *             ruma_pool_path says which ran):
 *               RUMA_REWIRE_UFFD  (default when the kernel offers
 *                 UFFDIO_MOVE, 4 KiB pages) the pages are allocated in
 *                 order in an anonymous staging area (MADV_POPULATE_WRITE),
 *                 then page perm[i] is moved to virtual page i with
 *                 UFFDIO_MOVE: one ioctl per page, ONE kernel mapping for
 *                 the pool, no vm.max_map_count limit.  The pages always
 *                 have memory (populate is implied).
 *               RUMA_REWIRE_MMAP  (the original's way, the fallback, and
 *                 always for 2 MiB pages) one mmap and one kernel mapping
 *                 (VMA) per page.  The number of mappings is limited by
 *                 map_budget; exceeding it gives RUMA_EMAPLIMIT before any
 *                 mapping is made.
 *               RUMA_REWIRE_MREMAP  (only when asked) moves as UFFD with
 *                 mremap(MREMAP_DONTUNMAP): two mappings per page, budgeted
 *                 like MMAP.
 *   INDIRECT  (41) software indirection: one 2 MiB-aligned posix_memalign
 *             chunk plus a directory of page pointers (random: the directory
 *             points at the pages in shuffled order).  No contiguous base;
 *             without random, page i is at ruma_pool_page(p, 0) + i * page_size
 *             (a caller may build its own directory from that).
 *   MMAP      (42) one mmap(MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE), with
 *             MAP_HUGETLB when huge (RUMA_ENOHUGE when the kernel has no free
 *             huge pages).  random is ignored: anonymous memory has no
 *             physical placement to choose.
 *
 * Every pool exposes its pages by index (ruma_pool_page) and, when it has
 * one, a contiguous base (ruma_pool_base; page i == base + i * page_size).
 * populate: touch / prefault every page at creation so no later access faults.
 * Not thread-safe for creation/destruction; the memory may be used by any thread.
 */
#ifndef RUMA_POOL_H
#define RUMA_POOL_H

#include <ruma/ruma.h>
#include <ruma/area.h>
#include <ruma/anon.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ruma_pool_kind {
	RUMA_POOL_REWIRED = 0,
	RUMA_POOL_INDIRECT,
	RUMA_POOL_MMAP,
	RUMA_POOL_KIND_COUNT_
} ruma_pool_kind;

typedef struct ruma_pool_options {
	ruma_pool_kind kind;
	bool huge;          /* 2 MiB pages */
	bool random;        /* REWIRED/INDIRECT: shuffled physical placement */
	bool populate;      /* prefault every page at creation */
	uint64_t map_budget;/* REWIRED: max mappings this pool may create;
			       0 = vm.max_map_count minus the mappings the process already has, minus 1000 */
	uint64_t seed;      /* placement permutation (random) */
	ruma_rewire_path path; /* REWIRED random: how pages are placed (default AUTO, see above) */
} ruma_pool_options;

typedef struct ruma_pool ruma_pool;

/*
 * ruma_pool_options_default — REWIRED, 4 KiB, sequential, no populate,
 * budget 0 (automatic), seed 1.
 */
RUMA_API void ruma_pool_options_default(ruma_pool_options *o);

/*
 * ruma_pool_create — allocate `bytes` bytes (rounded up to whole pages) as o
 * describes; the caller owns *out.  Returns 0, -EINVAL (bytes 0, bad kind),
 * -ENOMEM, RUMA_ENOHUGE (huge pages requested, none free: raise
 * vm.nr_hugepages), RUMA_EMAPLIMIT (random placement needs one mapping per
 * page, more than map_budget / vm.max_map_count allows: raise
 * vm.max_map_count or use huge pages), or the negative errno of the
 * failing call.  Nothing is leaked on error.
 */
RUMA_API int ruma_pool_create(const ruma_pool_options *o, size_t bytes, ruma_pool **out);

/* ruma_pool_destroy — unmap / free everything (NULL ignored). */
RUMA_API void ruma_pool_destroy(ruma_pool *p);

/* ruma_pool_pages — number of pages; ruma_pool_page_size — 4 KiB or 2 MiB. */
RUMA_API size_t ruma_pool_pages(const ruma_pool *p);
RUMA_API size_t ruma_pool_page_size(const ruma_pool *p);
/* ruma_pool_bytes — pages * page_size. */
RUMA_API size_t ruma_pool_bytes(const ruma_pool *p);

/* ruma_pool_page — address of page i (i < pages), NULL otherwise. */
RUMA_API void *ruma_pool_page(const ruma_pool *p, size_t i);

/* ruma_pool_base — contiguous base address (REWIRED, MMAP) or NULL (INDIRECT). */
RUMA_API void *ruma_pool_base(const ruma_pool *p);

/*
 * ruma_pool_directory — the page-pointer directory (INDIRECT: owned by the
 * pool, `pages` entries), or NULL for the other kinds.
 */
RUMA_API void *const *ruma_pool_directory(const ruma_pool *p);

/* ruma_pool_mappings — kernel mappings (mmap calls that created VMAs) the pool made. */
RUMA_API uint64_t ruma_pool_mappings(const ruma_pool *p);

/*
 * ruma_pool_path — how a REWIRED pool placed its pages: RUMA_REWIRE_MMAP
 * (memfd rewiring), RUMA_REWIRE_UFFD or RUMA_REWIRE_MREMAP (anonymous pages
 * moved); RUMA_REWIRE_AUTO for the other kinds.
 */
RUMA_API ruma_rewire_path ruma_pool_path(const ruma_pool *p);

/* ruma_pool_kind_name — "rewired", "indirect", "mmap". */
RUMA_API const char *ruma_pool_kind_name(ruma_pool_kind k);
/* ruma_pool_kind_parse — inverse of ruma_pool_kind_name.  0 or RUMA_EPARSE. */
RUMA_API int ruma_pool_kind_parse(const char *s, ruma_pool_kind *out);

#ifdef __cplusplus
}
#endif
#endif
