/*
 * mempool.c — the "mempool" backend: a memory pool (arena) with bump
 * allocation and per-size free lists.
 *
 * Objects are bump-allocated from chunks; chunk sizes grow geometrically
 * (64 KiB, 128 KiB, ... up to 4 MiB per chunk).  Every object occupies
 * round_up(size, 16) bytes (plus alignment padding in front, which is lost),
 * so a freed object goes on the free list of its 16-byte size bucket and the
 * next request of that bucket reuses it when the list head is aligned as
 * requested; the fork's PooledAllocator could reclaim only the last slot.
 * When a chunk cannot hold the next request, its tail goes on the free list
 * of the bucket that fits it.  destroy unmaps all chunks at once, whatever
 * is still allocated.  Requests above 64 KiB get their own mapping.
 *
 * Invariants: a block on bucket b's list is at least 16 * (b + 1) bytes and
 * lies inside a chunk; chunks are linked through a header at their start.
 * Single-threaded.
 *
 * Syscalls (via src/os): mmap for chunks and large objects, munmap for large
 * objects and at destroy.
 */
#include "alloc/alloc_internal.h"
#include "alloc/alloc_fast.h"

#include <errno.h>
#include <stdlib.h>

#define MP_FIRST_CHUNK ((size_t)64 << 10)
#define MP_CHUNK_CAP ((size_t)4 << 20)
#define MP_MAX ((size_t)64 << 10)
#define MP_BUCKETS (MP_MAX / 16)

typedef struct mp_ctx {
	char *bump, *end;
	size_t next_chunk;
	ruma_chunk *chunks;
	ruma_bigmap large;
	ruma_counts n;
	void *bucket[MP_BUCKETS]; /* bucket b holds blocks of 16 * (b + 1) bytes */
} mp_ctx;

static void mp_push(mp_ctx *c, void *p, size_t block)
{
	size_t b = block / 16 - 1;

	*(void **)p = c->bucket[b];
	c->bucket[b] = p;
	RUMA_POISON(p, block);
}

/* Keep the unused tail of the current chunk as a free block, if it is one. */
static void mp_retire_tail(mp_ctx *c)
{
	char *p = (char *)ruma_round_up((uintptr_t)c->bump, 16);

	if (p < c->end) {
		size_t block = (size_t)(c->end - p) & ~(size_t)15;
		if (block > MP_MAX)
			block = MP_MAX;
		if (block >= 16)
			mp_push(c, p, block);
	}
	c->bump = c->end = NULL;
}

static int mp_new_chunk(mp_ctx *c, size_t need)
{
	size_t len = c->next_chunk;
	void *mem;

	while (len < need + sizeof(ruma_chunk))
		len *= 2;
	int rc = ruma_chunk_map(&c->chunks, len, RUMA_PAGE_4K, &mem);
	if (rc)
		return rc;
	mp_retire_tail(c);
	c->bump = (char *)mem + sizeof(ruma_chunk);
	c->end = (char *)mem + len;
	c->n.mapped += len;
	if (c->next_chunk < MP_CHUNK_CAP)
		c->next_chunk *= 2;
	return 0;
}

static void *mp_alloc_small(mp_ctx *c, size_t block, size_t align)
{
	void **head = &c->bucket[block / 16 - 1];
	size_t a = align < 16 ? 16 : align;

	if (*head && ((uintptr_t)*head & (a - 1)) == 0) {
		void *p = *head;
		RUMA_UNPOISON(p, block);
		*head = *(void **)p;
		return p;
	}
	char *p = (char *)ruma_round_up((uintptr_t)c->bump, a);
	if (!c->bump || p > c->end || (size_t)(c->end - p) < block) {
		if (mp_new_chunk(c, block + a))
			return NULL;
		p = (char *)ruma_round_up((uintptr_t)c->bump, a);
	}
	c->bump = p + block;
	return p;
}

void *ruma_alloc_mempool_alloc(void *ctx, size_t size, size_t align)
{
	mp_ctx *c = ctx;
	size_t s = ruma_eff_size(size);

	if (!ruma_align_ok(align))
		return NULL;
	void *p = s > MP_MAX ? ruma_large_map_plain(&c->large, s, &c->n) :
			       mp_alloc_small(c, ruma_round_up(s, 16), align);
	return ruma_counts_alloc(&c->n, p, size);
}

void ruma_alloc_mempool_free(void *ctx, void *p, size_t size)
{
	mp_ctx *c = ctx;
	size_t s = ruma_eff_size(size);

	if (!p)
		return;
	if (s > MP_MAX) {
		if (ruma_large_free_plain(&c->large, p, &c->n))
			return;
	} else {
		mp_push(c, p, ruma_round_up(s, 16));
	}
	ruma_counts_free(&c->n, size);
}

static void mp_stats(void *ctx, ruma_alloc_stats *out)
{
	ruma_counts_fill(&((const mp_ctx *)ctx)->n, out);
}

static void mp_destroy(void *ctx)
{
	mp_ctx *c = ctx;

	ruma_chunks_release(&c->chunks);
	ruma_bigmap_release(&c->large);
	free(c);
}

int ruma_alloc_mempool_create(ruma_alloc *out)
{
	mp_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->next_chunk = MP_FIRST_CHUNK;
	*out = (ruma_alloc){ .alloc = ruma_alloc_mempool_alloc, .free = ruma_alloc_mempool_free,
			     .stats = mp_stats,
			     .destroy = mp_destroy, .ctx = c, .name = "mempool" };
	return 0;
}
