/*
 * alloc.h — pluggable allocators.  An allocator is a small vtable with a
 * context pointer, passed per data-structure instance (never a global hook).
 * Frees are sized: the caller passes the size it allocated, so backends
 * need no per-object header.
 *
 * Backends: libc (malloc/free), pool (size-class free lists), mempool (bump
 * allocation in chunks + per-size free lists), huge (slabs per size class in
 * 2 MiB pages from explicit huge pages, else THP, else 4 KiB pages).
 *
 * Contract shared by every backend (docs/alloc.md has the details):
 *   - align is 0 (no requirement beyond 16 bytes for libc, the size class's
 *     natural alignment otherwise) or a power of two up to
 *     RUMA_ALLOC_MAX_ALIGN; any other align makes alloc return NULL.
 *   - size 0 returns a unique non-NULL pointer (served as a 1-byte object);
 *     free it with size 0.
 *   - free(NULL, any size) does nothing; free of a non-NULL pointer must pass
 *     the size given to alloc (the align need not be repeated).
 *   - alloc returns NULL when the OS refuses memory; the instance stays
 *     usable and later allocations succeed once memory is available again.
 *   - An instance is single-threaded: callers serialise all calls on it.
 *     Distinct instances may be used from distinct threads.
 */
#ifndef RUMA_ALLOC_H
#define RUMA_ALLOC_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest alignment every backend honours (bytes). */
#define RUMA_ALLOC_MAX_ALIGN 4096

/* Names accepted by ruma_alloc_create_by_name, for usage messages. */
#define RUMA_ALLOC_NAMES "libc, pool, mempool, huge, huge-thp, huge-4k"

/* Memory statistics of one allocator instance. */
typedef struct ruma_alloc_stats {
	uint64_t bytes_live;   /* requested bytes currently allocated */
	uint64_t bytes_mapped; /* bytes obtained from the OS / libc and not returned */
	uint64_t pages_4k;     /* 4 KiB pages mapped */
	uint64_t pages_thp;    /* 2 MiB regions mapped with MADV_HUGEPAGE */
	uint64_t pages_2m;     /* explicit 2 MiB huge pages (MAP_HUGETLB) mapped */
	uint64_t allocs, frees;
} ruma_alloc_stats;

typedef struct ruma_alloc ruma_alloc;

/* The vtable.  alloc returns NULL on failure; free accepts NULL. */
struct ruma_alloc {
	void *(*alloc)(void *ctx, size_t size, size_t align);
	void (*free)(void *ctx, void *p, size_t size);
	void (*stats)(void *ctx, ruma_alloc_stats *out);
	void (*destroy)(void *ctx); /* releases everything the backend holds */
	void *ctx;
	const char *name;           /* "libc", "pool", "mempool", "huge" (or "huge-thp", "huge-4k") */
};

static inline void *ruma_alloc_alloc(const ruma_alloc *a, size_t size, size_t align)
{
	return a->alloc(a->ctx, size, align);
}

static inline void ruma_alloc_free(const ruma_alloc *a, void *p, size_t size)
{
	a->free(a->ctx, p, size);
}

/* Kinds of backend, for ruma_alloc_create. */
typedef enum ruma_alloc_kind {
	RUMA_ALLOC_LIBC,
	RUMA_ALLOC_POOL,
	RUMA_ALLOC_MEMPOOL,
	RUMA_ALLOC_HUGE,
} ruma_alloc_kind;

/*
 * ruma_alloc_create — make a new allocator instance of the given kind into
 * *out (the struct is filled in; the backend context is heap-allocated).
 * Returns 0 or -ENOMEM.  Release with ruma_alloc_destroy.
 */
RUMA_API int ruma_alloc_create(ruma_alloc_kind kind, ruma_alloc *out);


/* ruma_alloc_destroy — release everything the instance holds (NULL, or a
 * zeroed ruma_alloc that was never created, is accepted). */
RUMA_API void ruma_alloc_destroy(ruma_alloc *a);

/* ruma_alloc_get_stats — fill *out with the instance's statistics. */
RUMA_API void ruma_alloc_get_stats(const ruma_alloc *a, ruma_alloc_stats *out);

/* ruma_alloc_kind_name — "libc", "pool", "mempool", "huge"; "?" if unknown. */
RUMA_API const char *ruma_alloc_kind_name(ruma_alloc_kind kind);

/*
 * ruma_alloc_kind_by_name — the kind for "libc", "pool", "mempool" or "huge"
 * (also "huge-thp" and "huge-4k", which are of kind RUMA_ALLOC_HUGE).
 * Returns 0 or RUMA_EPARSE.
 */
RUMA_API int ruma_alloc_kind_by_name(const char *name, ruma_alloc_kind *out);

/* ---- the huge backend's page source ------------------------------------------- */

/* Where the huge backend got its 2 MiB pages from. */
typedef enum ruma_huge_source {
	RUMA_HUGE_SRC_NONE,    /* no page mapped yet, or not a huge instance */
	RUMA_HUGE_SRC_HUGETLB, /* explicit 2 MiB pages: mmap(MAP_HUGETLB|MAP_HUGE_2MB) */
	RUMA_HUGE_SRC_THP,     /* 2 MiB-aligned anonymous memory + madvise(MADV_HUGEPAGE) */
	RUMA_HUGE_SRC_4K,      /* 2 MiB-aligned anonymous memory in 4 KiB pages */
} ruma_huge_source;

/*
 * ruma_alloc_huge_source — the source of the most recent mapping the huge
 * instance got from its page source (a 2 MiB page, or an object of 2 MiB or
 * more); RUMA_HUGE_SRC_NONE before the first one, and for instances of other
 * kinds.  The stats break all mapped pages down by source.
 */
RUMA_API ruma_huge_source ruma_alloc_huge_source(const ruma_alloc *a);

/* ruma_alloc_huge_source_name — "none", "hugetlb", "thp", "4k". */
RUMA_API const char *ruma_alloc_huge_source_name(ruma_huge_source s);

/* Options of an instance (ruma_alloc_create_by_name, ruma_alloc_create_huge). */
typedef struct ruma_alloc_options {
	/*
	 * Diagnostics (huge kinds): the first time the instance gets pages from
	 * a source, one line naming it and, when it is not the source asked
	 * for, why ("huge allocator: pages from transparent huge pages (madvise
	 * MADV_HUGEPAGE) (no explicit huge pages: ...)").  NULL: silent.
	 */
	ruma_message_fn message;
	void *message_ctx;
} ruma_alloc_options;

/* ruma_alloc_options_default — the defaults: no message callback (silent). */
RUMA_API void ruma_alloc_options_default(ruma_alloc_options *o);

/*
 * ruma_alloc_create_by_name — as ruma_alloc_create, kind by name ("libc",
 * "pool", "mempool", "huge", and the huge kinds "huge-thp", "huge-4k" that
 * start at a later page source, see ruma_alloc_create_huge), with options
 * o (NULL: the defaults).  Returns 0, RUMA_EPARSE for an unknown name (or
 * NULL), -ENOMEM.  Before 1.0 this name took (name, out); a call in that
 * form does not compile (two arguments for three).
 */
RUMA_API int ruma_alloc_create_by_name(const char *name, const ruma_alloc_options *o,
				       ruma_alloc *out);

/*
 * ruma_alloc_create_huge — a huge-backend instance whose page source starts
 * at `first` (HUGETLB: the full chain hugetlb -> THP -> 4 KiB, as
 * ruma_alloc_create(RUMA_ALLOC_HUGE); THP: skip hugetlb; 4K: plain pages
 * only, for comparisons), with options o (NULL: the defaults).  By name:
 * "huge", "huge-thp", "huge-4k".  Returns 0, -EINVAL for a bad source,
 * -ENOMEM.  Before 1.0 this name took (first, out); a call in that form
 * does not compile (two arguments for three).
 */
RUMA_API int ruma_alloc_create_huge(ruma_huge_source first, const ruma_alloc_options *o,
				    ruma_alloc *out);

#ifdef __cplusplus
}
#endif
#endif
