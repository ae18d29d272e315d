/*
 * m_alloc.c — the allocation comparison of `ruma micro`:
 *   40  rewiring pool: memfd pages (phys.h) wired into a reserved area
 *       (area.h); random = one mapping per page at a shuffled physical page,
 *       or, with 4 KiB pages where the kernel moves pages (UFFDIO_MOVE,
 *       area.h ruma_anon), the pages of an anonymous pool moved to shuffled
 *       places: one ioctl per page instead of one mmap, one kernel mapping,
 *       no vm.max_map_count limit (the original needs it raised)
 *   41  software-indirection pool (pool.h): 2 MiB-aligned chunks + a page
 *       directory; random = the directory lists the pages in shuffled order
 *   42  plain anonymous mmap (pool.h; MAP_HUGETLB with huge)
 * Timed phases, as the original (BigDataAnalyticsGroup/rewiring,
 * methods/allocation_rewiring.c, allocation_softwaredir.c,
 * allocation_mmap.c) books them — only mmap-dst:
 *   40  the area reservation and the wiring (one mmap of the pool where
 *       the kernel picks the address, as the original; random: the
 *       reservation and one mmap or one move per page); untimed before it: the pool's pages
 *       allocated and zeroed (through a temporary mapping, or populating
 *       the anonymous pool; the original memsets its pool file) and the
 *       shuffle; untimed after it: the prefault of the wired pages (the
 *       original touches one byte per page; moved pages are present)
 *   41  filling the directory of page pointers, each computed from the
 *       chunk's start as the original does; untimed before it: the pages
 *       allocated and zeroed, the shuffle, the directory's allocation
 *   42  the mmap (pages fault in during the test, as in the original)
 * The memory holds zeros, as the original's (dst_zero).  Exactly n * 8
 * bytes rounded up to whole pages are allocated (the original added one
 * page too many when the size was already page aligned).
 * Syscalls: none here (phys.h, area.h and pool.h map).
 */
#include "bench/micro/micro.h"

#include <ruma/area.h>
#include <ruma/anon.h>
#include <ruma/phys.h>
#include <ruma/pool.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct alloc_priv {
	ruma_pool *pool;    /* 41, 42 */
	ruma_phys *phys;    /* 40 */
	ruma_area *area;    /* 40 */
	ruma_anon *anon;    /* 40 random with moves */
	uint64_t **dir;     /* 41: the directory built by the method */
} alloc_priv;

static void alloc_cleanup(micro_data *d)
{
	alloc_priv *ap = d->priv;

	ruma_pool_destroy(ap->pool);
	ruma_anon_destroy(ap->anon);
	ruma_area_destroy(ap->area);
	ruma_phys_destroy(ap->phys);
	free(ap->dir);
	free(ap);
	printf("Freeing %s\n", micro_field_name(MF_MMAP_DST));
}

static unsigned log2_exact(size_t x)
{
	unsigned s = 0;

	while ((1ul << s) < x)
		s++;
	return s;
}

static size_t page_of(const micro_params *p)
{
	return p->use_huge ? MICRO_HUGE_PAGE : MICRO_SMALL_PAGE;
}

/* 40's pool: npages memfd pages, allocated and zeroed through a temporary mapping. */
static int fill_pool(ruma_phys *phys, uint64_t npages, uint64_t *first)
{
	ruma_area *tmp = NULL;
	int rc = ruma_phys_alloc(phys, npages, first);

	if (!rc)
		rc = ruma_area_create_mapped(phys, *first, npages, RUMA_AREA_POPULATE, &tmp, NULL);
	ruma_area_destroy(tmp);
	return rc;
}

/*
 * 40 random with 4 KiB pages where the kernel moves pages (UFFDIO_MOVE):
 * the pool is an anonymous staging area given zeroed memory untimed; the
 * timed part reserves the area and moves staging page ids[i] to page i —
 * one ioctl per page instead of one mmap, and one kernel mapping in all.
 */
static int build_moved(micro_ctx *c, uint64_t npages, alloc_priv *ap, micro_data *d)
{
	ruma_anon *stage = NULL;
	uint64_t *ids = micro_permutation(npages, npages, c->seed);
	ruma_move_pair *pairs = malloc(npages * sizeof(*pairs));
	int rc = ids && pairs ? 0 : -ENOMEM;

	if (!rc)
		rc = ruma_anon_create(npages, RUMA_REWIRE_UFFD, &stage);
	if (!rc)
		rc = ruma_anon_populate(stage, 0, npages);
	for (uint64_t i = 0; !rc && i < npages; i++)
		pairs[i] = (ruma_move_pair){ i, ids[i] };
	if (!rc) {
		micro_phase_begin(c);
		rc = ruma_anon_create(npages, RUMA_REWIRE_UFFD, &ap->anon);
		if (!rc)
			rc = ruma_anon_move_batch(ap->anon, stage, pairs, npages, NULL);
		micro_phase_end(c, MF_MMAP_DST);
	}
	ruma_anon_destroy(stage);
	free(ids);
	free(pairs);
	if (!rc)
		d->dst = ruma_anon_base(ap->anon);
	return rc;
}

/* Whether 40 random places its pages by moving them (see build_moved). */
static bool moves_pages(const micro_params *p)
{
	ruma_rewire_path path;

	if (!p->random || p->use_huge)
		return false;
	ruma_move_probe(&path, NULL);
	return path == RUMA_REWIRE_UFFD;
}

/* 40 with a memfd pool: wired with one mmap, or one per page (random). */
static int build_wired(micro_ctx *c, const micro_params *p, size_t page, uint64_t npages,
		       alloc_priv *ap, micro_data *d)
{
	ruma_rewire_pair *pairs = NULL;
	uint64_t *ids = NULL, first = 0;
	ruma_phys_options po = { .page_size = page,
				 .flags = p->use_huge ? RUMA_PHYS_PREPOPULATE : 0 };
	int rc;

	rc = ruma_phys_create(&po, &ap->phys);
	if (!rc)
		rc = fill_pool(ap->phys, npages, &first);
	if (!rc && p->random) {
		ids = micro_permutation(npages, npages, c->seed);
		pairs = malloc(npages * sizeof(*pairs));
		if (!ids || !pairs)
			rc = -ENOMEM;
		for (uint64_t i = 0; !rc && i < npages; i++)
			pairs[i] = (ruma_rewire_pair){ i, first + ids[i] };
	}
	if (!rc) {
		micro_phase_begin(c);
		if (p->random) {
			rc = ruma_area_create(page, npages, &ap->area);
			if (!rc)
				rc = ruma_area_rewire_batch(ap->area, ap->phys, pairs, npages, 0, NULL);
		} else {
			rc = ruma_area_create_mapped(ap->phys, first, npages, 0, &ap->area, NULL);
		}
		micro_phase_end(c, MF_MMAP_DST);
	}
	free(ids);
	free(pairs);
	if (!rc)
		rc = ruma_area_populate(ap->area, 0, npages, 0, NULL);
	if (!rc)
		d->dst = ruma_area_base(ap->area);
	return rc;
}

/* 40: the original's allocationRewiring. */
static int build_rewired(micro_ctx *c, const micro_params *p, size_t n, alloc_priv *ap,
			 micro_data *d)
{
	size_t page = page_of(p);
	uint64_t npages = micro_round_up(n * sizeof(uint64_t), page) / page;

	if (moves_pages(p))
		return build_moved(c, npages, ap, d);
	return build_wired(c, p, page, npages, ap, d);
}

/* 41: the original's allocationSoftwareIndirection. */
static int build_indirect(micro_ctx *c, const micro_params *p, size_t n, alloc_priv *ap,
			  micro_data *d)
{
	ruma_pool_options o;
	uint64_t *ids;
	size_t npages;
	int rc;

	ruma_pool_options_default(&o);
	o.kind = RUMA_POOL_INDIRECT;
	o.huge = p->use_huge;
	rc = ruma_pool_create(&o, n * sizeof(uint64_t), &ap->pool);
	if (rc)
		return rc;
	npages = ruma_pool_pages(ap->pool);
	for (size_t i = 0; i < npages; i++) /* the original memsets its pool */
		memset(ruma_pool_page(ap->pool, i), 0, ruma_pool_page_size(ap->pool));
	ids = micro_permutation(npages, p->random ? npages : 0, c->seed);
	/* the directory is allocated untimed, as the original's; the timed part fills it */
	ap->dir = malloc((npages ? npages : 1) * sizeof(*ap->dir));
	if (!ids || !ap->dir) {
		free(ids);
		free(ap->dir);
		ap->dir = NULL;
		return -ENOMEM;
	}
	/* a sequential INDIRECT pool is one chunk of pages in order (pool.h) */
	uint8_t *mem = ruma_pool_page(ap->pool, 0);
	size_t page = ruma_pool_page_size(ap->pool);
	micro_phase_begin(c);
	if (p->random)
		for (size_t i = 0; i < npages; i++)
			ap->dir[i] = (uint64_t *)(mem + ids[i] * page);
	else
		for (size_t i = 0; i < npages; i++)
			ap->dir[i] = (uint64_t *)(mem + i * page);
	micro_phase_end(c, MF_MMAP_DST);
	free(ids);
	d->kind = MICRO_INDIRECT;
	d->dir = ap->dir;
	d->page_shift = log2_exact(ruma_pool_page_size(ap->pool) / sizeof(uint64_t));
	return 0;
}

/* 42: the original's allocationMmap. */
static int build_mmap(micro_ctx *c, const micro_params *p, size_t n, alloc_priv *ap,
		      micro_data *d)
{
	ruma_pool_options o;
	int rc;

	ruma_pool_options_default(&o);
	o.kind = RUMA_POOL_MMAP;
	o.huge = p->use_huge;
	micro_phase_begin(c);
	rc = ruma_pool_create(&o, n * sizeof(uint64_t), &ap->pool);
	micro_phase_end(c, MF_MMAP_DST);
	if (!rc)
		d->dst = ruma_pool_base(ap->pool);
	return rc;
}

typedef int (*alloc_build_fn)(micro_ctx *c, const micro_params *p, size_t n, alloc_priv *ap,
			      micro_data *d);

static int alloc_build(micro_ctx *c, const micro_params *p, size_t n, micro_data *d,
		       alloc_build_fn build)
{
	alloc_priv *ap = calloc(1, sizeof(*ap));
	int rc;

	if (!ap)
		return micro_fail("allocating", -ENOMEM);
	d->n = n;
	d->kind = MICRO_CONTIG;
	d->dst_zero = true;
	d->priv = ap;
	rc = build(c, p, n, ap, d);
	if (rc) {
		ruma_pool_destroy(ap->pool);
		ruma_anon_destroy(ap->anon);
		ruma_area_destroy(ap->area);
		ruma_phys_destroy(ap->phys);
		free(ap->dir);
		free(ap);
		d->priv = NULL;
		d->dst = NULL;
		d->dir = NULL;
		return micro_fail("creating the allocation pool", rc);
	}
	d->cleanup = alloc_cleanup;
	return 0;
}

int micro_build_alloc_rewired(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return alloc_build(c, p, n, d, build_rewired);
}

int micro_build_alloc_indirect(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return alloc_build(c, p, n, d, build_indirect);
}

int micro_build_alloc_mmap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return alloc_build(c, p, n, d, build_mmap);
}
