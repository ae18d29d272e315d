/*
 * alloc_fast.h — allocation without an indirect call, for data structures
 * that fix their allocator at creation.  A structure asks
 * ruma_alloc_fast_kind() once and then calls ruma_alloc_fast_alloc / _free
 * with that kind: the libc backend's functions inline, the other backends'
 * vtable functions by direct call, a user allocator through its vtable —
 * with exactly the vtable's behaviour and statistics in every case (the
 * backends' vtables point at these same functions).
 */
#ifndef RUMA_ALLOC_FAST_H
#define RUMA_ALLOC_FAST_H

#include <ruma/alloc.h>

#include <stdlib.h>

/* The libc backend's context: what passes through this instance. */
typedef struct ruma_libc_ctx {
	uint64_t live, allocs, frees;
} ruma_libc_ctx;

/* Which backend an instance is, recognised by its vtable's functions. */
enum ruma_alloc_fast_kind {
	RUMA_ALLOC_FAST_VTABLE = 0, /* a user allocator (or unknown): call the vtable */
	RUMA_ALLOC_FAST_LIBC,
	RUMA_ALLOC_FAST_POOL,
	RUMA_ALLOC_FAST_MEMPOOL,
	RUMA_ALLOC_FAST_HUGE,
};

/* ruma_alloc_fast_kind — the kind of a (RUMA_ALLOC_FAST_VTABLE for NULL). */
int ruma_alloc_fast_kind(const ruma_alloc *a);

/* The backends' vtable functions (ctx = the instance's ctx). */
void *ruma_alloc_libc_alloc(void *ctx, size_t size, size_t align);
void ruma_alloc_libc_free(void *ctx, void *p, size_t size);
void *ruma_alloc_pool_alloc(void *ctx, size_t size, size_t align);
void ruma_alloc_pool_free(void *ctx, void *p, size_t size);
void *ruma_alloc_mempool_alloc(void *ctx, size_t size, size_t align);
void ruma_alloc_mempool_free(void *ctx, void *p, size_t size);
void *ruma_alloc_huge_alloc(void *ctx, size_t size, size_t align);
void ruma_alloc_huge_free(void *ctx, void *p, size_t size);

/* malloc for align <= 16 (glibc, jemalloc and mimalloc return 16-byte
 * aligned blocks on 64-bit Linux), posix_memalign above; size 0 as 1 byte. */
static inline void *ruma_alloc_libc_alloc_inline(void *ctx, size_t size, size_t align)
{
	ruma_libc_ctx *c = ctx;
	void *p;

	if (align > RUMA_ALLOC_MAX_ALIGN || (align & (align - 1)) != 0)
		return NULL;
	if (align <= 16)
		p = malloc(size ? size : 1);
	else if (posix_memalign(&p, align, size ? size : 1) != 0)
		p = NULL;
	if (p) {
		c->live += size;
		c->allocs++;
	}
	return p;
}

static inline void ruma_alloc_libc_free_inline(void *ctx, void *p, size_t size)
{
	ruma_libc_ctx *c = ctx;

	if (!p)
		return;
	free(p);
	c->live -= size;
	c->frees++;
}

static inline void *ruma_alloc_fast_alloc(int kind, const ruma_alloc *a, size_t size,
					  size_t align)
{
	switch (kind) {
	case RUMA_ALLOC_FAST_LIBC:
		return ruma_alloc_libc_alloc_inline(a->ctx, size, align);
	case RUMA_ALLOC_FAST_POOL:
		return ruma_alloc_pool_alloc(a->ctx, size, align);
	case RUMA_ALLOC_FAST_MEMPOOL:
		return ruma_alloc_mempool_alloc(a->ctx, size, align);
	case RUMA_ALLOC_FAST_HUGE:
		return ruma_alloc_huge_alloc(a->ctx, size, align);
	default:
		return a->alloc(a->ctx, size, align);
	}
}

static inline void ruma_alloc_fast_free(int kind, const ruma_alloc *a, void *p, size_t size)
{
	switch (kind) {
	case RUMA_ALLOC_FAST_LIBC:
		ruma_alloc_libc_free_inline(a->ctx, p, size);
		break;
	case RUMA_ALLOC_FAST_POOL:
		ruma_alloc_pool_free(a->ctx, p, size);
		break;
	case RUMA_ALLOC_FAST_MEMPOOL:
		ruma_alloc_mempool_free(a->ctx, p, size);
		break;
	case RUMA_ALLOC_FAST_HUGE:
		ruma_alloc_huge_free(a->ctx, p, size);
		break;
	default:
		a->free(a->ctx, p, size);
		break;
	}
}

#endif
