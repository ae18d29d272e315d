/*
 * libc.c — the "libc" backend: every object comes from the process's malloc
 * (glibc by default; jemalloc or mimalloc when preloaded with LD_PRELOAD).
 *
 * align <= 16 uses malloc (glibc and the preloadable allocators return
 * 16-byte aligned blocks on 64-bit Linux); a larger align uses
 * posix_memalign.  Size 0 is served as 1 byte, so every call returns a
 * unique pointer.  Statistics count only what passes through this instance:
 * bytes_mapped equals bytes_live (malloc's own overhead and its mappings are
 * invisible here), and the page counters stay 0.  The bodies of alloc and
 * free are the inline functions of alloc_fast.h, which data structures call
 * directly once ruma_alloc_fast_kind() said RUMA_ALLOC_FAST_LIBC.
 *
 * Syscalls: none directly (malloc makes its own).
 */
#include "alloc/alloc_internal.h"
#include "alloc/alloc_fast.h"

#include <errno.h>
#include <stdlib.h>

void *ruma_alloc_libc_alloc(void *ctx, size_t size, size_t align)
{
	return ruma_alloc_libc_alloc_inline(ctx, size, align);
}

void ruma_alloc_libc_free(void *ctx, void *p, size_t size)
{
	ruma_alloc_libc_free_inline(ctx, p, size);
}

static void libc_stats(void *ctx, ruma_alloc_stats *out)
{
	const ruma_libc_ctx *c = ctx;
	ruma_counts n = { .live = c->live, .allocs = c->allocs, .frees = c->frees };

	ruma_counts_fill(&n, out);
	out->bytes_mapped = c->live;
}

static void libc_destroy(void *ctx)
{
	free(ctx);
}

int ruma_alloc_libc_create(ruma_alloc *out)
{
	ruma_libc_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	*out = (ruma_alloc){ .alloc = ruma_alloc_libc_alloc, .free = ruma_alloc_libc_free,
			     .stats = libc_stats,
			     .destroy = libc_destroy, .ctx = c, .name = "libc" };
	return 0;
}
