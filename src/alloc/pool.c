/*
 * pool.c — the "pool" backend: segregated free lists per size class.
 *
 * Classes are 16-byte steps up to 256 B, then eight per power of two up to
 * 16 KiB (alloc_internal.h).  Each class carves objects out of 64 KiB chunks
 * that are 64 KiB aligned; a chunk starts with a small header naming its
 * class, so free finds the class from the pointer alone (the caller's size
 * does not tell which class an over-aligned request used).  A freed object
 * goes on its class's free list (the link lives in the object) and is the
 * next one handed out for that class.  Chunks stay with the instance until
 * destroy.  Requests above 16 KiB get their own mapping, tracked in a table
 * so that free and destroy can unmap them.
 *
 * Invariants: an object of class c lies at first_offset(c) + i * size(c) in a
 * chunk whose header says c; first_offset(c) is a multiple of the natural
 * alignment of size(c), hence every object of c is aligned to every align
 * that maps to c.  Single-threaded.
 *
 * Syscalls (via src/os): mmap/munmap for 64 KiB-aligned chunks (one mmap and
 * up to two trimming munmaps each) and for large objects; munmap at destroy.
 */
#include "alloc/alloc_internal.h"
#include "alloc/alloc_fast.h"

#include <errno.h>
#include <stdlib.h>

#define POOL_CHUNK ((size_t)64 << 10)
#define POOL_MAX ((size_t)16 << 10)
#define POOL_MAGIC 0x706f6f6c63686b31ull /* "poolchk1" */

typedef struct pool_chunk {
	ruma_chunk link; /* all chunks of the instance */
	uint64_t magic;
	unsigned cls;
} pool_chunk;

typedef struct pool_class {
	void *free;       /* freed objects, linked through their first word */
	char *bump, *end; /* never-used space in the newest chunk of the class */
} pool_class;

typedef struct pool_ctx {
	pool_class cls[RUMA_CLASS_COUNT];
	ruma_chunk *chunks;
	ruma_bigmap large;
	ruma_counts n;
} pool_ctx;

static size_t first_offset(unsigned cls)
{
	return ruma_round_up(sizeof(pool_chunk), ruma_natural_align(ruma_class_size(cls)));
}

static int pool_new_chunk(pool_ctx *c, unsigned cls)
{
	void *mem;
	int rc = ruma_chunk_map(&c->chunks, POOL_CHUNK, POOL_CHUNK, &mem);

	if (rc)
		return rc;
	pool_chunk *ch = mem;
	ch->magic = POOL_MAGIC;
	ch->cls = cls;
	c->cls[cls].bump = (char *)mem + first_offset(cls);
	c->cls[cls].end = (char *)mem + POOL_CHUNK;
	c->n.mapped += POOL_CHUNK;
	return 0;
}

static void *pool_alloc_small(pool_ctx *c, size_t s, size_t align)
{
	unsigned cls = ruma_class_of(align > 1 ? ruma_round_up(s, align) : s);
	size_t csize = ruma_class_size(cls);
	pool_class *pc = &c->cls[cls];
	void *p = pc->free;

	if (p) {
		RUMA_UNPOISON(p, csize);
		pc->free = *(void **)p;
		return p;
	}
	if ((size_t)(pc->end - pc->bump) < csize && pool_new_chunk(c, cls))
		return NULL;
	p = pc->bump;
	pc->bump += csize;
	return p;
}

void *ruma_alloc_pool_alloc(void *ctx, size_t size, size_t align)
{
	pool_ctx *c = ctx;
	size_t s = ruma_eff_size(size);

	if (!ruma_align_ok(align))
		return NULL;
	void *p = s > POOL_MAX ? ruma_large_map_plain(&c->large, s, &c->n) :
				 pool_alloc_small(c, s, align);
	return ruma_counts_alloc(&c->n, p, size);
}

void ruma_alloc_pool_free(void *ctx, void *p, size_t size)
{
	pool_ctx *c = ctx;

	if (!p)
		return;
	if (ruma_eff_size(size) > POOL_MAX) {
		if (ruma_large_free_plain(&c->large, p, &c->n))
			return;
	} else {
		pool_chunk *ch = (pool_chunk *)((uintptr_t)p & ~(POOL_CHUNK - 1));
		RUMA_ASSERT(ch->magic == POOL_MAGIC);
		pool_class *pc = &c->cls[ch->cls];
		*(void **)p = pc->free;
		pc->free = p;
		RUMA_POISON(p, ruma_class_size(ch->cls));
	}
	ruma_counts_free(&c->n, size);
}

static void pool_stats(void *ctx, ruma_alloc_stats *out)
{
	ruma_counts_fill(&((const pool_ctx *)ctx)->n, out);
}

static void pool_destroy(void *ctx)
{
	pool_ctx *c = ctx;

	ruma_chunks_release(&c->chunks);
	ruma_bigmap_release(&c->large);
	free(c);
}

int ruma_alloc_pool_create(ruma_alloc *out)
{
	pool_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	*out = (ruma_alloc){ .alloc = ruma_alloc_pool_alloc, .free = ruma_alloc_pool_free,
			     .stats = pool_stats,
			     .destroy = pool_destroy, .ctx = c, .name = "pool" };
	return 0;
}
