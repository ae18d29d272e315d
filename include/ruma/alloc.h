/*
 * alloc.h — pluggable allocators.  An allocator is a small vtable with a
 * context pointer, passed per data-structure instance (never a global hook).
 * Frees are sized: the caller passes the size it allocated, so backends
 * need no per-object header.
 *
 * Backends: libc (malloc/free), pool (size-class free lists), mempool (bump
 * allocation in chunks + per-size free lists), huge (slabs per size class in
 * 2 MiB pages from explicit huge pages, else THP, else 4 KiB pages).
 */
#ifndef RUMA_ALLOC_H
#define RUMA_ALLOC_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

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
	const char *name;           /* "libc", "pool", "mempool", "huge" */
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

/*
 * ruma_alloc_create_by_name — as ruma_alloc_create, kind by name ("libc",
 * "pool", "mempool", "huge").  Returns RUMA_EPARSE for an unknown name.
 */
RUMA_API int ruma_alloc_create_by_name(const char *name, ruma_alloc *out);

/* ruma_alloc_destroy — release everything the instance holds. */
RUMA_API void ruma_alloc_destroy(ruma_alloc *a);

/* ruma_alloc_get_stats — fill *out with the instance's statistics. */
RUMA_API void ruma_alloc_get_stats(const ruma_alloc *a, ruma_alloc_stats *out);

#ifdef __cplusplus
}
#endif
#endif
