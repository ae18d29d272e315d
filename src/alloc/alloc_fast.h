/*
 * alloc_fast.h — inline fast paths of allocator backends, for data
 * structures that fix their allocator at creation and want no indirect call
 * per object.  A structure asks ruma_alloc_is_libc() once; when true it may
 * call ruma_alloc_libc_alloc_inline / _free_inline with the instance's ctx
 * instead of the vtable, with exactly the vtable's behaviour and statistics
 * (libc.c's vtable functions are these same inline functions).
 */
#ifndef RUMA_ALLOC_FAST_H
#define RUMA_ALLOC_FAST_H

#include <ruma/alloc.h>

#include <stdlib.h>

/* The libc backend's context: what passes through this instance. */
typedef struct ruma_libc_ctx {
	uint64_t live, allocs, frees;
} ruma_libc_ctx;

/* ruma_alloc_is_libc — is a an instance of the libc backend (by its vtable)? */
bool ruma_alloc_is_libc(const ruma_alloc *a);

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

#endif
