/*
 * huge.c — the "huge" backend: slabs per size class carved from 2 MiB pages.
 *
 * Memory comes in 2 MiB pages, 2 MiB aligned, from the page source
 * (hugesrc.c: explicit huge pages, else THP, else 4 KiB pages).  A page is
 * cut into 32 slabs of 64 KiB; a slab serves one size class (the classes of
 * alloc_internal.h up to 32 KiB) from a bump pointer and a free list.  The
 * page header (first bytes of the page) holds the state of its 32 slabs, so
 * free finds page, slab and class from the pointer alone.  Like TCMalloc
 * Temeraire's filler, a new slab is taken from the fullest page that still
 * has a free slab, so partly used pages fill up and emptied pages can go.
 * A slab whose last object is freed returns to its page; a page whose last
 * slab returns is kept as the one cached empty page of the instance (so an
 * alloc/free pattern at a page boundary does not map and unmap each time),
 * or unmapped if a page is cached already.  Objects above 32 KiB get their
 * own mapping: from the page source in 2 MiB multiples when at least 2 MiB,
 * else plain 4 KiB pages.
 *
 * Invariants: a slab with cls < 0 is free; a slab is on its class's partial
 * list iff it is in use and can hand out one more object; page->used counts
 * its slabs in use; pages in use are on the page list, the cached page is
 * not.  Objects of class c lie at first_offset + k * size(c) inside the
 * slab, with first_offset a multiple of the natural alignment of size(c).
 * Single-threaded.
 *
 * Syscalls (via src/os): those of the page source, plain mmap for large
 * objects, munmap for pages and large objects and at destroy.
 */
#include "alloc/alloc_internal.h"
#include "alloc/alloc_fast.h"

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>

#define HP_SLAB ((size_t)64 << 10)
#define HP_SLABS 32
#define HP_MAGIC 0x6875676570616731ull /* "hugepag1" */

_Static_assert(HP_SLAB * HP_SLABS == RUMA_PAGE_2M, "slabs tile a 2 MiB page");

typedef struct hslab {
	void *free;       /* freed objects, linked through their first word */
	char *bump, *end; /* never-used space of the slab */
	struct hslab *next, *prev; /* the class's partial list */
	uint32_t live;
	int16_t cls;
	bool listed;
} hslab;

typedef struct hpage {
	uint64_t magic;
	struct hpage *next, *prev; /* pages in use */
	uint32_t used;             /* slabs in use */
	ruma_huge_source source;
	hslab slab[HP_SLABS];
} hpage;

_Static_assert(sizeof(hpage) < HP_SLAB / 2, "page header leaves room in slab 0");

typedef struct huge_ctx {
	hslab *partial[RUMA_CLASS_COUNT];
	hpage *pages;
	hpage *cached;
	ruma_hugesrc src;
	ruma_bigmap large;
	ruma_counts n;
	uint64_t n2m, nthp, n4k; /* pages mapped by source (n4k in 4 KiB pages) */
} huge_ctx;

/* ---- accounting ---------------------------------------------------------------- */

static void account(huge_ctx *c, ruma_huge_source src, size_t len, bool add)
{
	uint64_t *pages = src == RUMA_HUGE_SRC_HUGETLB ? &c->n2m :
			  src == RUMA_HUGE_SRC_THP     ? &c->nthp :
							 &c->n4k;
	uint64_t n = src == RUMA_HUGE_SRC_4K ? len / RUMA_PAGE_4K : len / RUMA_PAGE_2M;

	if (add) {
		*pages += n;
		c->n.mapped += len;
	} else {
		*pages -= n;
		c->n.mapped -= len;
	}
}

static void unmap_counted(huge_ctx *c, void *p, size_t len, ruma_huge_source src)
{
	if (ruma_os_munmap(p, len) == 0)
		account(c, src, len, false);
}

/* ---- pages and slabs ----------------------------------------------------------------- */

static void page_init(hpage *pg, ruma_huge_source src)
{
	pg->magic = HP_MAGIC;
	pg->used = 0;
	pg->source = src;
	for (int i = 0; i < HP_SLABS; i++)
		pg->slab[i].cls = -1;
}

static hpage *page_get(huge_ctx *c)
{
	hpage *pg = c->cached;
	ruma_huge_source src;

	if (pg) {
		c->cached = NULL;
		src = pg->source;
	} else {
		void *mem;
		if (ruma_hugesrc_map(&c->src, RUMA_PAGE_2M, &mem, &src))
			return NULL;
		account(c, src, RUMA_PAGE_2M, true);
		pg = mem;
	}
	page_init(pg, src);
	pg->prev = NULL;
	pg->next = c->pages;
	if (c->pages)
		c->pages->prev = pg;
	c->pages = pg;
	return pg;
}

static void page_put(huge_ctx *c, hpage *pg)
{
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		c->pages = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	if (!c->cached)
		c->cached = pg;
	else
		unmap_counted(c, pg, RUMA_PAGE_2M, pg->source);
}

static void slab_link(huge_ctx *c, hslab *sl)
{
	sl->prev = NULL;
	sl->next = c->partial[sl->cls];
	if (sl->next)
		sl->next->prev = sl;
	c->partial[sl->cls] = sl;
	sl->listed = true;
}

static void slab_unlink(huge_ctx *c, hslab *sl)
{
	if (sl->prev)
		sl->prev->next = sl->next;
	else
		c->partial[sl->cls] = sl->next;
	if (sl->next)
		sl->next->prev = sl->prev;
	sl->listed = false;
}

/* A fresh slab of class cls, from the fullest page with a free slab. */
static hslab *slab_get(huge_ctx *c, unsigned cls)
{
	hpage *best = NULL;

	for (hpage *pg = c->pages; pg; pg = pg->next)
		if (pg->used < HP_SLABS && (!best || pg->used > best->used))
			best = pg;
	if (!best && !(best = page_get(c)))
		return NULL;
	int i = 0;
	while (best->slab[i].cls >= 0)
		i++;
	hslab *sl = &best->slab[i];
	char *base = (char *)best + (size_t)i * HP_SLAB;
	size_t off = i ? 0 : ruma_round_up(sizeof(hpage), ruma_natural_align(ruma_class_size(cls)));
	sl->cls = (int16_t)cls;
	sl->free = NULL;
	sl->bump = base + off;
	sl->end = base + HP_SLAB;
	sl->live = 0;
	best->used++;
	slab_link(c, sl);
	return sl;
}

static bool slab_full(const hslab *sl)
{
	return !sl->free && (size_t)(sl->end - sl->bump) < ruma_class_size((unsigned)sl->cls);
}

/* ---- objects ------------------------------------------------------------------------ */

static void *huge_alloc_large(huge_ctx *c, size_t size)
{
	size_t len = ruma_round_up(size, RUMA_PAGE_4K);
	ruma_huge_source src = RUMA_HUGE_SRC_4K;
	void *p;
	int rc;

	if (size > RUMA_LARGE_MAX) /* the round-ups would wrap to a tiny length */
		return NULL;
	if (len >= RUMA_PAGE_2M) {
		len = ruma_round_up(len, RUMA_PAGE_2M);
		rc = ruma_hugesrc_map(&c->src, len, &p, &src);
	} else {
		rc = ruma_map_plain(len, &p);
	}
	if (rc || ruma_large_record(&c->large, p, len, src))
		return NULL;
	account(c, src, len, true);
	return p;
}

static void *huge_alloc_small(huge_ctx *c, size_t s, size_t align)
{
	unsigned cls = ruma_class_of(align > 1 ? ruma_round_up(s, align) : s);
	hslab *sl = c->partial[cls];
	void *p;

	if (!sl && !(sl = slab_get(c, cls)))
		return NULL;
	if (sl->free) {
		p = sl->free;
		RUMA_UNPOISON(p, ruma_class_size(cls));
		sl->free = *(void **)p;
	} else {
		p = sl->bump;
		sl->bump += ruma_class_size(cls);
	}
	sl->live++;
	if (slab_full(sl))
		slab_unlink(c, sl);
	return p;
}

void *ruma_alloc_huge_alloc(void *ctx, size_t size, size_t align)
{
	huge_ctx *c = ctx;
	size_t s = ruma_eff_size(size);

	if (!ruma_align_ok(align))
		return NULL;
	void *p = s > RUMA_CLASS_MAX ? huge_alloc_large(c, s) : huge_alloc_small(c, s, align);
	return ruma_counts_alloc(&c->n, p, size);
}

static void huge_free_small(huge_ctx *c, void *p)
{
	hpage *pg = (hpage *)((uintptr_t)p & ~(RUMA_PAGE_2M - 1));
	RUMA_ASSERT(pg->magic == HP_MAGIC);
	hslab *sl = &pg->slab[((uintptr_t)p - (uintptr_t)pg) / HP_SLAB];
	RUMA_ASSERT(sl->cls >= 0 && sl->live > 0);

	*(void **)p = sl->free;
	sl->free = p;
	RUMA_POISON(p, ruma_class_size((unsigned)sl->cls));
	if (--sl->live == 0) {
		if (sl->listed)
			slab_unlink(c, sl);
		sl->cls = -1;
		size_t slab = ((uintptr_t)p - (uintptr_t)pg) / HP_SLAB * HP_SLAB;
		RUMA_UNPOISON((char *)pg + slab, HP_SLAB);
		if (--pg->used == 0)
			page_put(c, pg);
	} else if (!sl->listed) {
		slab_link(c, sl);
	}
}

void ruma_alloc_huge_free(void *ctx, void *p, size_t size)
{
	huge_ctx *c = ctx;

	if (!p)
		return;
	if (ruma_eff_size(size) > RUMA_CLASS_MAX) {
		size_t len;
		ruma_huge_source src;
		int rc = ruma_large_release(&c->large, p, &len, &src);
		if (rc == -ENOENT)
			return;
		if (rc == 0)
			account(c, src, len, false);
	} else {
		huge_free_small(c, p);
	}
	ruma_counts_free(&c->n, size);
}

static void huge_stats(void *ctx, ruma_alloc_stats *out)
{
	const huge_ctx *c = ctx;

	ruma_counts_fill(&c->n, out);
	out->pages_2m = c->n2m;
	out->pages_thp = c->nthp;
	out->pages_4k = c->n4k;
}

static void huge_destroy(void *ctx)
{
	huge_ctx *c = ctx;

	while (c->pages) {
		hpage *next = c->pages->next;
		RUMA_UNPOISON(c->pages, RUMA_PAGE_2M);
		ruma_os_munmap(c->pages, RUMA_PAGE_2M);
		c->pages = next;
	}
	if (c->cached)
		ruma_os_munmap(c->cached, RUMA_PAGE_2M);
	ruma_bigmap_release(&c->large);
	free(c);
}

ruma_huge_source ruma_alloc_huge_last_source(void *ctx)
{
	const huge_ctx *c = ctx;

	return c ? c->src.last : RUMA_HUGE_SRC_NONE;
}

int ruma_alloc_huge_create_src(ruma_huge_source first, const ruma_alloc_options *opts,
			       ruma_alloc *out)
{
	huge_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	ruma_hugesrc_init(&c->src, first, opts ? opts->message : NULL,
			  opts ? opts->message_ctx : NULL);
	*out = (ruma_alloc){ .alloc = ruma_alloc_huge_alloc, .free = ruma_alloc_huge_free,
			     .stats = huge_stats,
			     .destroy = huge_destroy, .ctx = c,
			     .name = first == RUMA_HUGE_SRC_THP ? "huge-thp" :
				     first == RUMA_HUGE_SRC_4K  ? "huge-4k" :
								  "huge" };
	return 0;
}
