/*
 * m_alloc.c — the allocation comparison of `ruma micro`, built on pool.h:
 *   40  rewiring pool: memfd pages wired into a reserved area; random = one
 *       mapping per page at a shuffled physical page; populated at creation
 *       (as in the original)
 *   41  software-indirection pool: 2 MiB-aligned chunks + a page directory;
 *       random = the directory points at the pages in shuffled order
 *   42  plain anonymous mmap (MAP_HUGETLB with huge)
 * Timed phases: the pool creation (mmap-dst), then writing dst[i] = i element
 * by element through the pool's addressing (write-seq-dst-per-elem), so the
 * tests read defined values.  Exactly n * 8 bytes rounded up to whole pages
 * are allocated (the original added one page too many when the size was
 * already page aligned).
 * Syscalls: none here (pool.h maps).
 */
#include "micro/micro.h"

#include <ruma/pool.h>

#include <stdlib.h>

static void alloc_cleanup(micro_data *d)
{
	ruma_pool_destroy(d->priv);
	printf("Freeing %s\n", micro_field_name(MF_MMAP_DST));
}

static unsigned log2_exact(size_t x)
{
	unsigned s = 0;

	while ((1ul << s) < x)
		s++;
	return s;
}

static int alloc_build(micro_ctx *c, const micro_params *p, size_t n, micro_data *d,
		       ruma_pool_kind kind, bool populate)
{
	ruma_pool_opts o;
	ruma_pool *pool = NULL;
	int rc;

	ruma_pool_opts_default(&o);
	o.kind = kind;
	o.huge = p->use_huge;
	o.random = kind == RUMA_POOL_MMAP ? false : p->random;
	o.populate = populate;
	o.seed = c->seed;
	d->n = n;
	micro_phase_begin(c);
	rc = ruma_pool_create(&pool, n * sizeof(uint64_t), &o);
	micro_phase_end(c, MF_MMAP_DST);
	if (rc)
		return micro_fail("creating the allocation pool", rc);
	if (kind == RUMA_POOL_INDIRECT) {
		d->kind = MICRO_INDIRECT;
		d->dir = (uint64_t **)ruma_pool_directory(pool);
		d->page_shift = log2_exact(ruma_pool_page_size(pool) / sizeof(uint64_t));
		uint64_t mask = (1ull << d->page_shift) - 1;
		micro_phase_begin(c);
		for (size_t i = 0; i < n; i++)
			d->dir[i >> d->page_shift][i & mask] = i;
		micro_phase_end(c, MF_WRITE_SEQ_DST_PER_ELEM);
	} else {
		d->kind = MICRO_CONTIG;
		d->dst = ruma_pool_base(pool);
		micro_phase_begin(c);
		for (size_t i = 0; i < n; i++)
			d->dst[i] = i;
		micro_phase_end(c, MF_WRITE_SEQ_DST_PER_ELEM);
	}
	d->priv = pool;
	d->cleanup = alloc_cleanup;
	return 0;
}

int micro_build_alloc_rewired(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return alloc_build(c, p, n, d, RUMA_POOL_REWIRED, true);
}

int micro_build_alloc_indirect(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return alloc_build(c, p, n, d, RUMA_POOL_INDIRECT, false);
}

int micro_build_alloc_mmap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return alloc_build(c, p, n, d, RUMA_POOL_MMAP, false);
}
