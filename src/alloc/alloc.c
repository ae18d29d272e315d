/*
 * alloc.c — allocator instances by kind and by name, and the kind of an
 * instance for data structures that call backends directly: the top of the
 * module.  Files bottom-up (each calls only files before it; checked by
 * scripts/check_calls.py): common.c (size classes, mappings, large
 * objects, chunk lists), hugesrc.c (the huge backend's page source), then
 * the backends libc.c, pool.c, mempool.c, huge.c, then this file.
 *
 * Invariants: an instance's vtable, context and name come from one
 * backend's create function; destroy clears them.
 *
 * Syscalls: none of its own (the backends' through src/os).
 */
#include "alloc/alloc_internal.h"
#include "alloc/alloc_fast.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- instances ------------------------------------------------------------------- */

int ruma_alloc_create(ruma_alloc_kind kind, ruma_alloc *out)
{
	switch (kind) {
	case RUMA_ALLOC_LIBC:
		return ruma_alloc_libc_create(out);
	case RUMA_ALLOC_POOL:
		return ruma_alloc_pool_create(out);
	case RUMA_ALLOC_MEMPOOL:
		return ruma_alloc_mempool_create(out);
	case RUMA_ALLOC_HUGE:
		return ruma_alloc_huge_create_src(RUMA_HUGE_SRC_HUGETLB, NULL, out);
	}
	return -EINVAL;
}

int ruma_alloc_create_huge(ruma_huge_source first, const ruma_alloc_options *o, ruma_alloc *out)
{
	if (first != RUMA_HUGE_SRC_HUGETLB && first != RUMA_HUGE_SRC_THP &&
	    first != RUMA_HUGE_SRC_4K)
		return -EINVAL;
	return ruma_alloc_huge_create_src(first, o, out);
}

int ruma_alloc_fast_kind(const ruma_alloc *a)
{
	if (!a)
		return RUMA_ALLOC_FAST_VTABLE;
	if (a->alloc == ruma_alloc_libc_alloc && a->free == ruma_alloc_libc_free)
		return RUMA_ALLOC_FAST_LIBC;
	if (a->alloc == ruma_alloc_pool_alloc && a->free == ruma_alloc_pool_free)
		return RUMA_ALLOC_FAST_POOL;
	if (a->alloc == ruma_alloc_mempool_alloc && a->free == ruma_alloc_mempool_free)
		return RUMA_ALLOC_FAST_MEMPOOL;
	if (a->alloc == ruma_alloc_huge_alloc && a->free == ruma_alloc_huge_free)
		return RUMA_ALLOC_FAST_HUGE;
	return RUMA_ALLOC_FAST_VTABLE;
}

static const char *const kind_names[] = {
	[RUMA_ALLOC_LIBC] = "libc",
	[RUMA_ALLOC_POOL] = "pool",
	[RUMA_ALLOC_MEMPOOL] = "mempool",
	[RUMA_ALLOC_HUGE] = "huge",
};

const char *ruma_alloc_kind_name(ruma_alloc_kind kind)
{
	if ((unsigned)kind < sizeof(kind_names) / sizeof(kind_names[0]))
		return kind_names[kind];
	return "?";
}

int ruma_alloc_kind_by_name(const char *name, ruma_alloc_kind *out)
{
	if (!name)
		return RUMA_EPARSE;
	for (unsigned k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++) {
		if (strcmp(name, kind_names[k]) == 0) {
			*out = (ruma_alloc_kind)k;
			return 0;
		}
	}
	if (strcmp(name, "huge-thp") == 0 || strcmp(name, "huge-4k") == 0) {
		*out = RUMA_ALLOC_HUGE;
		return 0;
	}
	return RUMA_EPARSE;
}

void ruma_alloc_options_default(ruma_alloc_options *o)
{
	*o = (ruma_alloc_options){ 0 };
}

int ruma_alloc_create_by_name(const char *name, const ruma_alloc_options *o, ruma_alloc *out)
{
	ruma_alloc_kind kind;
	int rc = ruma_alloc_kind_by_name(name, &kind);

	if (rc)
		return rc;
	if (strcmp(name, "huge-thp") == 0)
		return ruma_alloc_huge_create_src(RUMA_HUGE_SRC_THP, o, out);
	if (strcmp(name, "huge-4k") == 0)
		return ruma_alloc_huge_create_src(RUMA_HUGE_SRC_4K, o, out);
	if (kind == RUMA_ALLOC_HUGE)
		return ruma_alloc_huge_create_src(RUMA_HUGE_SRC_HUGETLB, o, out);
	return ruma_alloc_create(kind, out);
}

void ruma_alloc_destroy(ruma_alloc *a)
{
	if (!a || !a->destroy)
		return;
	a->destroy(a->ctx);
	a->ctx = NULL;
	a->destroy = NULL;
}

void ruma_alloc_get_stats(const ruma_alloc *a, ruma_alloc_stats *out)
{
	memset(out, 0, sizeof(*out));
	a->stats(a->ctx, out);
}

ruma_huge_source ruma_alloc_huge_source(const ruma_alloc *a)
{
	if (!a || !a->name || strncmp(a->name, "huge", 4) != 0)
		return RUMA_HUGE_SRC_NONE;
	return ruma_alloc_huge_last_source(a->ctx);
}

const char *ruma_alloc_huge_source_name(ruma_huge_source s)
{
	switch (s) {
	case RUMA_HUGE_SRC_NONE:
		return "none";
	case RUMA_HUGE_SRC_HUGETLB:
		return "hugetlb";
	case RUMA_HUGE_SRC_THP:
		return "thp";
	case RUMA_HUGE_SRC_4K:
		return "4k";
	}
	return "?";
}
