/*
 * common.c — the pieces every backend shares: the size-class table,
 * aligned anonymous mappings, the large-object table and chunk lists.  The
 * bottom of src/alloc: it calls no other file of the module.
 *
 * Invariants: a class size that round_up(size, align) maps to is a multiple
 * of align (align a power of two <= 4096), see ruma_class_of.  The large-object
 * table holds exactly the objects that own a mapping; its keys are never 0.
 *
 * Syscalls (through src/os only): mmap for aligned and plain mappings, munmap
 * to trim an over-sized mapping to its aligned part and to release large
 * objects.
 */
#include "alloc/alloc_internal.h"

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- size classes ------------------------------------------------------------------ */

unsigned ruma_class_of(size_t size)
{
	if (size <= 256)
		return (unsigned)((size + 15) / 16) - 1;
	/* 2^k < size <= 2^(k+1); eight classes of step 2^(k-3) above 2^k */
	unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
	size_t step = (size_t)1 << (k - 3);
	size_t j = (size - ((size_t)1 << k) + step - 1) / step; /* 1..8 */
	return 16u + (k - 8u) * 8u + (unsigned)(j - 1);
}

size_t ruma_class_size(unsigned idx)
{
	if (idx < 16)
		return (size_t)(idx + 1) * 16;
	unsigned k = 8 + (idx - 16) / 8, j = (idx - 16) % 8 + 1;
	return ((size_t)1 << k) + j * ((size_t)1 << (k - 3));
}

/* ---- mappings ---------------------------------------------------------------------- */

int ruma_map_plain(size_t len, void **out)
{
	return ruma_os_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			    out);
}

/* ---- large objects ------------------------------------------------------------------ */

static size_t slot_of(const ruma_bigmap *m, uintptr_t key)
{
	uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & (m->cap - 1);
}

static void bigmap_insert_raw(ruma_bigmap *m, uintptr_t key, uintptr_t val)
{
	size_t i = slot_of(m, key);

	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
}

static int bigmap_grow(ruma_bigmap *m)
{
	ruma_bigmap g = { .cap = m->cap ? m->cap * 2 : 16 };

	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.vals = calloc(g.cap, sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			bigmap_insert_raw(&g, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	*m = g;
	return 0;
}

int ruma_bigmap_put(ruma_bigmap *m, uintptr_t key, uintptr_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		int rc = bigmap_grow(m);
		if (rc)
			return rc;
	}
	bigmap_insert_raw(m, key, val);
	return 0;
}

int ruma_bigmap_take(ruma_bigmap *m, uintptr_t key, uintptr_t *val)
{
	if (!m->cap)
		return -ENOENT;
	size_t i = slot_of(m, key);

	while (m->keys[i] != key) {
		if (!m->keys[i])
			return -ENOENT;
		i = (i + 1) & (m->cap - 1);
	}
	*val = m->vals[i];
	m->keys[i] = 0;
	m->n--;
	/* backward-shift deletion keeps every probe chain unbroken */
	for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = slot_of(m, m->keys[j]);
		bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
		if (movable) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			m->keys[j] = 0;
			i = j;
		}
	}
	return 0;
}

void ruma_bigmap_release(ruma_bigmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			ruma_os_munmap((void *)m->keys[i], m->vals[i] & ~(RUMA_PAGE_4K - 1));
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

int ruma_large_record(ruma_bigmap *m, void *p, size_t len, ruma_huge_source src)
{
	int rc = ruma_bigmap_put(m, (uintptr_t)p, len | (uintptr_t)src);

	if (rc)
		ruma_os_munmap(p, len);
	return rc;
}

void *ruma_large_map_plain(ruma_bigmap *m, size_t size, ruma_counts *c)
{
	size_t len = ruma_round_up(size, RUMA_PAGE_4K);
	void *p;

	if (size > RUMA_LARGE_MAX || ruma_map_plain(len, &p) || ruma_large_record(m, p, len, RUMA_HUGE_SRC_4K))
		return NULL;
	c->mapped += len;
	return p;
}

int ruma_large_release(ruma_bigmap *m, void *p, size_t *len, ruma_huge_source *src)
{
	uintptr_t v;
	int rc = ruma_bigmap_take(m, (uintptr_t)p, &v);

	RUMA_ASSERT(rc == 0);
	if (rc)
		return rc;
	*len = v & ~(RUMA_PAGE_4K - 1);
	*src = (ruma_huge_source)(v & (RUMA_PAGE_4K - 1));
	return ruma_os_munmap(p, *len);
}

int ruma_large_free_plain(ruma_bigmap *m, void *p, ruma_counts *c)
{
	size_t len;
	ruma_huge_source src;
	int rc = ruma_large_release(m, p, &len, &src);

	if (rc == 0)
		c->mapped -= len;
	return rc == -ENOENT ? rc : 0;
}

/* ---- chunk lists ------------------------------------------------------------------ */

int ruma_chunk_map(ruma_chunk **list, size_t len, size_t alignment, void **out)
{
	int rc = alignment > RUMA_PAGE_4K
			 ? ruma_os_mmap_aligned(len, alignment, PROT_READ | PROT_WRITE, 0, out)
			 : ruma_map_plain(len, out);
	if (rc)
		return rc;
	ruma_chunk *ch = *out;
	ch->len = len;
	ch->next = *list;
	*list = ch;
	return 0;
}

void ruma_chunks_release(ruma_chunk **list)
{
	while (*list) {
		ruma_chunk *ch = *list;
		size_t len = ch->len;
		*list = ch->next;
		RUMA_UNPOISON(ch, len);
		ruma_os_munmap(ch, len);
	}
}
