/*
 * m_vec.c — the vector methods of `ruma micro`, all built on vector.h:
 *   22, 23  rewired vector (pool pages wired behind the end; 23: 2 MiB pages)
 *   30, 31  the same with prepopulation (page tables filled when pages are
 *           wired — the original accepted the flag but never passed it down)
 *   24      copying vector (std::vector growth: double, malloc, memcpy)
 *   36, 37  mremap vector (anonymous mapping grown with mremap; 37: a first
 *           mapping of 2 MiB, as the original; MAP_HUGETLB with --hugetlb)
 *   43      software-indirection vector with 2 MiB pages (directory of pages)
 * The method creates the vector with the original's timed phases; test 15
 * pushes the entries.
 *
 * Timed phases, as the original (BigDataAnalyticsGroup/rewiring,
 * methods/rewired_vector.c, mremaped_vector.c, softwareind_vector.c,
 * cpp/stl_vector.cpp) books them:
 *   rewired   shm-src   the pool: n entries of memfd pages allocated, zeroed
 *                       and faulted once through a temporary mapping
 *             mmap-src  the initial capacity (one page) wired
 *   mremap    mmap-src  the initial mapping (one page; 37: 2 MiB); the vector
 *                       itself is created untimed, as the original allocates
 *                       its struct before the clock starts
 *   indirect  shm-src   the pool of 2 MiB pages for n entries (one mapping
 *                       of the hugetlb pool: the kernel reserves the pages)
 *                       and its directory.  The original touches one byte
 *                       per 2 MiB page of its posix_memalign'ed pool; unless
 *                       THP backs that pool (THP "always"), each touch
 *                       faults in one 4 KiB page and the pool's memory is
 *                       paid in vector-insert, as here, where the first
 *                       store into a 2 MiB page faults it in whole.
 *   copying   —         not timed (the original reserves 2 MiB of entries
 *                       in an untimed constructor)
 * As in the original, no blank line follows the phases and cleanup prints
 * no "Freeing" line.
 * Syscalls: none here (vector.h maps and grows).
 */
#include "bench/micro/micro.h"

#include <ruma/vector.h>

#include <stdlib.h>

/* The original's vector cleanup prints no "Freeing" line. */
static void vec_cleanup(micro_data *d)
{
	ruma_vec_destroy(d->vec);
}

static int vec_fail(ruma_vec *v, int rc)
{
	ruma_vec_destroy(v);
	return micro_fail("creating the vector", rc);
}

/*
 * Create the vector (opts o) under phase `create` (MF_COUNT_: untimed), then
 * reserve `initial` entries under phase `reserve` (MF_COUNT_: inside create).
 */
static int vec_build(micro_ctx *c, size_t n, micro_data *d, const ruma_vec_options *o,
		     micro_field create, size_t initial, micro_field reserve)
{
	ruma_vec_options co = *o;
	ruma_vec *v = NULL;
	int rc;

	d->kind = MICRO_VECTOR;
	d->n = n;
	if (reserve == MF_COUNT_)
		co.initial_capacity = initial;
	if (create != MF_COUNT_)
		micro_phase_begin(c);
	rc = ruma_vec_create(&co, &v);
	if (create != MF_COUNT_)
		micro_phase_end(c, create);
	if (rc)
		return vec_fail(NULL, rc);
	if (reserve != MF_COUNT_) {
		micro_phase_begin(c);
		rc = ruma_vec_reserve(v, initial);
		micro_phase_end(c, reserve);
		if (rc)
			return vec_fail(v, rc);
	}
	d->vec = v;
	d->no_blank_line = true;
	d->cleanup = vec_cleanup;
	return 0;
}

static void opts_for(ruma_vec_options *o, ruma_vec_kind kind, bool huge, bool prepopulate)
{
	ruma_vec_options_default(o);
	o->kind = kind;
	o->huge = huge;
	o->prepopulate = prepopulate;
}

int micro_build_vec_rewired(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	size_t page = p->use_huge ? MICRO_HUGE_PAGE : MICRO_SMALL_PAGE;
	ruma_vec_options o;

	opts_for(&o, RUMA_VEC_REWIRED, p->use_huge, p->vec_prepopulate);
	o.pool_bytes = micro_round_up(n * sizeof(uint64_t), page);
	/* room beyond the pool: with an area exactly the pool's size, the pool
	 * fill replaces the whole reservation, and the first wiring after it
	 * (mmap-src) measured 40 µs instead of 18 µs on Linux 6.18 */
	o.max_bytes = 2 * RUMA_MAX(o.pool_bytes, page);
	return vec_build(c, n, d, &o, MF_SHM_SRC, page / sizeof(uint64_t), MF_MMAP_SRC);
}

int micro_build_vec_copying(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	ruma_vec_options o;

	(void)p;
	opts_for(&o, RUMA_VEC_COPY, false, false);
	return vec_build(c, n, d, &o, MF_COUNT_, MICRO_HUGE_PAGE / sizeof(uint64_t), MF_COUNT_);
}

int micro_build_vec_mremap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	/* 37 in ordinary memory: 2 MiB first, then doubling, as the original */
	size_t page = p->use_huge || p->huge_units ? MICRO_HUGE_PAGE : MICRO_SMALL_PAGE;
	ruma_vec_options o;

	opts_for(&o, RUMA_VEC_MREMAP, p->use_huge, false);
	/* the original times only the mmap, not the allocation of its vector struct */
	return vec_build(c, n, d, &o, MF_COUNT_, page / sizeof(uint64_t), MF_MMAP_SRC);
}

int micro_build_vec_indirect(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	ruma_vec_options o;

	opts_for(&o, RUMA_VEC_INDIRECT, p->use_huge, false);
	return vec_build(c, n, d, &o, MF_SHM_SRC, RUMA_MAX(n, (size_t)1), MF_COUNT_);
}
