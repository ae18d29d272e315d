/*
 * alloc_internal.h — shared pieces of the allocator backends: the size-class
 * table, alignment helpers, aligned anonymous mappings, the table of large
 * objects (address -> mapping length and page source) and the constructors
 * of the backends.  Internal to src/alloc.
 */
#ifndef RUMA_ALLOC_INTERNAL_H
#define RUMA_ALLOC_INTERNAL_H

#include <ruma/alloc.h>

#include <stdint.h>

#define RUMA_KIB ((size_t)1 << 10)
#define RUMA_MIB ((size_t)1 << 20)
#define RUMA_PAGE_4K ((size_t)4096)
#define RUMA_PAGE_2M ((size_t)2 << 20)

/* ---- size classes ------------------------------------------------------------
 * 16-byte steps up to 256 B (16 classes), then eight classes per power of
 * two (288, 320, ..., 512; ...; 2304, 2560, ..., 4096; ...) up to 32 KiB:
 * 72 classes, so rounding wastes at most 1/8 above 256 B (the ART's 2064-byte
 * Node256 lands in 2304, its 656-byte Node48 in 704).  Every class size that
 * round_up(size, align) maps to is a multiple of align (for align <= 4096),
 * so objects placed at multiples of the class size from a suitably aligned
 * start are aligned.
 */
#define RUMA_CLASS_COUNT 72
#define RUMA_CLASS_MAX ((size_t)32 << 10)

/* Index of the smallest class >= size (1 <= size <= RUMA_CLASS_MAX). */
unsigned ruma_class_of(size_t size);
/* Byte size of class idx. */
size_t ruma_class_size(unsigned idx);

/* Largest power of two dividing n, capped at RUMA_ALLOC_MAX_ALIGN. */
static inline size_t ruma_natural_align(size_t n)
{
	size_t a = n & (~n + 1);
	return a > RUMA_ALLOC_MAX_ALIGN ? RUMA_ALLOC_MAX_ALIGN : a;
}

/*
 * Largest object size the backends try to map: far beyond any address space,
 * and small enough that rounding it up to 2 MiB cannot wrap around.
 */
#define RUMA_LARGE_MAX (SIZE_MAX / 2)

static inline size_t ruma_round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

/* align is 0 (no requirement) or a power of two up to RUMA_ALLOC_MAX_ALIGN. */
static inline bool ruma_align_ok(size_t align)
{
	return align <= RUMA_ALLOC_MAX_ALIGN && (align & (align - 1)) == 0;
}

/* The size an allocation really occupies: size 0 is served as 1 byte. */
static inline size_t ruma_eff_size(size_t size)
{
	return size ? size : 1;
}

/* ---- AddressSanitizer -------------------------------------------------------------
 * Under ASan, objects on a free list are poisoned (the pools' memory comes
 * from mmap, which ASan otherwise treats as always addressable), so a use
 * after free through a pool is reported.  Regions are unpoisoned before they
 * are handed out, reused for another class, or unmapped.
 */
#include "core/sanitizer.h"
#if RUMA_ASAN
#include <sanitizer/asan_interface.h>
#define RUMA_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define RUMA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RUMA_POISON(p, n) ((void)(p), (void)(n))
#define RUMA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- mappings ---------------------------------------------------------------- */

/* Plain private anonymous read/write mapping of len bytes. */
int ruma_map_plain(size_t len, void **out);

/* ---- page sources (hugesrc.c) ---------------------------------------------------- */

typedef struct ruma_hugesrc {
	ruma_huge_source first; /* best source to try: HUGETLB, THP or 4K */
	ruma_huge_source last;  /* source of the most recent mapping, NONE before */
	unsigned hugetlb_skip;  /* hugetlb attempts still to skip after a failure */
	int hugetlb_err;        /* errno of the last failed hugetlb mmap (0: none) */
	unsigned announced;     /* bit per ruma_huge_source already announced */
	ruma_message_fn message; /* diagnostics channel (NULL: silent) */
	void *message_ctx;
} ruma_hugesrc;

/* Start a page source at `first`; message/ctx get the one line per source
 * used (see ruma_alloc_options). */
void ruma_hugesrc_init(ruma_hugesrc *hs, ruma_huge_source first, ruma_message_fn message,
		       void *message_ctx);

/*
 * Map len bytes (a multiple of 2 MiB), 2 MiB aligned, from the best source
 * available: MAP_HUGETLB|MAP_HUGE_2MB, else an aligned anonymous mapping with
 * MADV_HUGEPAGE, else the same without the advice (4 KiB pages).  *src gets
 * the source used.  Returns 0, or the negative errno of the last (4 KiB)
 * attempt when every source failed.
 */
int ruma_hugesrc_map(ruma_hugesrc *hs, size_t len, void **out, ruma_huge_source *src);

/* ---- counters every backend keeps --------------------------------------------------- */

typedef struct ruma_counts {
	uint64_t live, mapped, allocs, frees;
} ruma_counts;

/* Count an alloc of size bytes that returned p (nothing when p is NULL); returns p. */
static inline void *ruma_counts_alloc(ruma_counts *c, void *p, size_t size)
{
	if (p) {
		c->live += size;
		c->allocs++;
	}
	return p;
}

static inline void ruma_counts_free(ruma_counts *c, size_t size)
{
	c->live -= size;
	c->frees++;
}

/* Fill the stats of a backend whose mappings are all 4 KiB pages. */
static inline void ruma_counts_fill(const ruma_counts *c, ruma_alloc_stats *out)
{
	out->bytes_live = c->live;
	out->bytes_mapped = c->mapped;
	out->pages_4k = c->mapped / RUMA_PAGE_4K;
	out->allocs = c->allocs;
	out->frees = c->frees;
}

/* ---- chunk lists (pool, mempool) ------------------------------------------------------ */

/* The first bytes of every chunk: the instance's list of its chunks. */
typedef struct ruma_chunk {
	struct ruma_chunk *next;
	size_t len;
} ruma_chunk;

/* Map a chunk of len bytes aligned to alignment (4 KiB: plain) and link it. */
int ruma_chunk_map(ruma_chunk **list, size_t len, size_t alignment, void **out);
/* Unmap every chunk of the list. */
void ruma_chunks_release(ruma_chunk **list);

/* ---- large objects -------------------------------------------------------------- */

/*
 * Open-addressing table address -> (mapping length | source), for objects
 * that got their own mapping.  Lengths are multiples of 4 KiB, so the source
 * lives in the low bits of the value.  Memory for the table comes from libc.
 */
typedef struct ruma_bigmap {
	uintptr_t *keys;
	uintptr_t *vals;
	size_t cap, n;
} ruma_bigmap;

int ruma_bigmap_put(ruma_bigmap *m, uintptr_t key, uintptr_t val);
/* Remove key; its value goes to *val.  -ENOENT when absent. */
int ruma_bigmap_take(ruma_bigmap *m, uintptr_t key, uintptr_t *val);
/* Unmap every remaining mapping and free the table. */
void ruma_bigmap_release(ruma_bigmap *m);

/*
 * Record the mapping [p, p + len) of source src in m; on failure (no memory
 * for the table) unmap it and return -ENOMEM.
 */
int ruma_large_record(ruma_bigmap *m, void *p, size_t len, ruma_huge_source src);
/* Map a large object of size bytes in plain 4 KiB pages and record it; NULL on failure. */
void *ruma_large_map_plain(ruma_bigmap *m, size_t size, ruma_counts *c);
/*
 * Unmap the large object p recorded in m and drop it from the table; *len
 * and *src get its mapping.  Returns 0, -ENOENT for an unknown pointer (and
 * RUMA_ASSERT fires), or munmap's error (the object is then forgotten but
 * stays mapped).
 */
int ruma_large_release(ruma_bigmap *m, void *p, size_t *len, ruma_huge_source *src);
/*
 * Free a large object of ruma_large_map_plain: release it and take its
 * length off c->mapped.  Returns 0, or -ENOENT for an unknown pointer (the
 * caller then leaves its counters alone).
 */
int ruma_large_free_plain(ruma_bigmap *m, void *p, ruma_counts *c);

/* ---- backends ------------------------------------------------------------------ */

int ruma_alloc_libc_create(ruma_alloc *out);
int ruma_alloc_pool_create(ruma_alloc *out);
int ruma_alloc_mempool_create(ruma_alloc *out);
int ruma_alloc_huge_create_src(ruma_huge_source first, const ruma_alloc_options *opts,
			       ruma_alloc *out);
ruma_huge_source ruma_alloc_huge_last_source(void *ctx);

#endif
