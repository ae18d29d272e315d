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
	ruma_counts n; /* n.mapped stays 0: bytes_mapped reports n.live */
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
	return ruma_counts_alloc(&c->n, p, size);
}

static void libc_free(void *ctx, void *p, size_t size)
{
	libc_ctx *c = ctx;

	if (!p)
		return;
	free(p);
	ruma_counts_free(&c->n, size);
}

static void libc_stats(void *ctx, ruma_alloc_stats *out)
{
	const libc_ctx *c = ctx;

	ruma_counts_fill(&c->n, out);
	out->bytes_mapped = c->n.live;
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
