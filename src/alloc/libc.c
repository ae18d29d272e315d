/*
 * libc.c — the "libc" backend: every object comes from the process's malloc
 * (glibc by default; jemalloc or mimalloc when preloaded with LD_PRELOAD).
 *
 * align <= 16 uses malloc (glibc and the preloadable allocators return
 * 16-byte aligned blocks on 64-bit Linux); a larger align uses
 * posix_memalign.  Size 0 is served as 1 byte, so every call returns a
 * unique pointer.  Statistics count only what passes through this instance:
 * bytes_mapped equals bytes_live (malloc's own overhead and its mappings are
 * invisible here), and the page counters stay 0.
 *
 * Syscalls: none directly (malloc makes its own).
 */
#include "alloc/alloc_internal.h"

#include <errno.h>
#include <stdlib.h>

typedef struct libc_ctx {
	uint64_t live, allocs, frees;
} libc_ctx;

static void *libc_alloc(void *ctx, size_t size, size_t align)
{
	libc_ctx *c = ctx;
	void *p;

	if (!ruma_align_ok(align))
		return NULL;
	if (align <= 16) {
		p = malloc(ruma_eff_size(size));
	} else if (posix_memalign(&p, align, ruma_eff_size(size)) != 0) {
		p = NULL;
	}
	if (p) {
		c->live += size;
		c->allocs++;
	}
	return p;
}

static void libc_free(void *ctx, void *p, size_t size)
{
	libc_ctx *c = ctx;

	if (!p)
		return;
	free(p);
	c->live -= size;
	c->frees++;
}

static void libc_stats(void *ctx, ruma_alloc_stats *out)
{
	const libc_ctx *c = ctx;

	out->bytes_live = c->live;
	out->bytes_mapped = c->live;
	out->allocs = c->allocs;
	out->frees = c->frees;
}

static void libc_destroy(void *ctx)
{
	free(ctx);
}

int ruma_alloc_libc_create(ruma_alloc *out)
{
	libc_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	*out = (ruma_alloc){ .alloc = libc_alloc, .free = libc_free, .stats = libc_stats,
			     .destroy = libc_destroy, .ctx = c, .name = "libc" };
	return 0;
}
