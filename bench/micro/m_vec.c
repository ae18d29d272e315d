/*
 * m_vec.c — the vector methods of `ruma micro`, all built on vector.h:
 *   22, 23  rewired vector (pool pages wired behind the end; 23: 2 MiB pages)
 *   30, 31  the same with prepopulation (page tables filled when pages are
 *           wired — the original accepted the flag but never passed it down)
 *   24      copying vector (std::vector growth: double, malloc, memcpy)
 *   36, 37  mremap vector (anonymous mapping grown with mremap; 37: MAP_HUGETLB)
 *   43      software-indirection vector with 2 MiB pages (directory of pages)
 * The method only creates the empty vector (timed); test 15 pushes the
 * entries.  Initial capacity is one page (4 KiB or 2 MiB) as in the original;
 * the copying vector starts with 2 MiB worth of entries, like the original's
 * STL vector.
 * Syscalls: none here (vector.h maps and grows).
 */
#include "micro/micro.h"

#include <ruma/vector.h>

#include <stdlib.h>

static int vpush(void *v, uint64_t x)
{
	return ruma_vec_push_u64(v, x);
}

static uint64_t vget(void *v, size_t i)
{
	return ruma_vec_get_u64(v, i);
}

static size_t vlen(void *v)
{
	return ruma_vec_size(v);
}

static void vset(void *v, size_t i, uint64_t x)
{
	ruma_vec_set_u64(v, i, x);
}

static const micro_vec_ops vec_ops = { vpush, vget, vlen, vset };

static void vec_cleanup(micro_data *d)
{
	ruma_vec_destroy(d->vec);
	printf("Freeing %s\n", micro_field_name((micro_field)(uintptr_t)d->priv));
}

static int vec_build(micro_ctx *c, size_t n, micro_data *d, ruma_vec_kind kind, bool huge,
		     bool prepopulate, micro_field f)
{
	ruma_vec_opts o;
	ruma_vec *v = NULL;
	int rc;

	ruma_vec_opts_default(&o);
	o.kind = kind;
	o.huge = huge;
	o.prepopulate = prepopulate;
	o.initial_capacity = (huge || kind == RUMA_VEC_COPY ? (2u << 20) : 4096u) / sizeof(uint64_t);
	d->kind = MICRO_VECTOR;
	d->n = n;
	micro_phase_begin(c);
	rc = ruma_vec_create(&v, &o);
	micro_phase_end(c, f);
	if (rc)
		return micro_fail("creating the vector", rc);
	d->vec = v;
	d->vops = &vec_ops;
	d->priv = (void *)(uintptr_t)f;
	d->cleanup = vec_cleanup;
	return 0;
}

int micro_build_vec_rewired(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return vec_build(c, n, d, RUMA_VEC_REWIRED, p->use_huge, p->vec_prepopulate,
			 p->use_huge ? MF_SHM_DST_HUGE : MF_SHM_DST);
}

int micro_build_vec_copying(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	(void)p;
	return vec_build(c, n, d, RUMA_VEC_COPY, false, false, MF_MALLOC_DST);
}

int micro_build_vec_mremap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return vec_build(c, n, d, RUMA_VEC_MREMAP, p->use_huge, false, MF_MMAP_DST);
}

int micro_build_vec_indirect(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return vec_build(c, n, d, RUMA_VEC_INDIRECT, p->use_huge, false, MF_MALLOC_DST);
}
