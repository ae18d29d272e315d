/*
 * micro_methods.c — the method table of `ruma micro`: numbers, names (as the
 * original prints them), data kinds, parameters with their defaults and
 * checks, and how many 2 MiB pages a method needs.
 *
 * Parameter defaults (used when the method is given without parentheses):
 *   6-9, 15, 16   (pagesPerChunk)                      (1)
 *   10, 11        (pagesPerChunk, initDst)             (1, 0)
 *   12            (numPartitions, pagesPerBlock, prefaultDst)  (64, 1, 0)
 *   13, 14, 17, 18, 19, 44  (numPartitions, pagesPerBlock)     (64, 1)
 *   21            (numPartitions[, contiguous])        (64, 0)
 *   32            (huge, file, shared, populate, byOption, initFile, shuffle)
 *                                                      (0, 1, 1, 1, 1, 1, 0)
 *   40, 41        (huge, random)                       (0, 0)
 *   42            (huge)                               (0)
 * No syscalls.
 */
#include "bench/micro/micro.h"

#include <ruma/partition.h>

#include <math.h>
#include <string.h>

static const micro_method methods[] = {
	{ 1, "Traditional memcpy", MICRO_CONTIG, 0, "", micro_build_memcpy },
	{ 2, "COW memcpy", MICRO_CONTIG, 0, "", micro_build_cow },
	{ 3, "COW memcpy (populated)", MICRO_CONTIG, 0, "", micro_build_cow },
	{ 4, "COW memcpy (huge_pages)", MICRO_CONTIG, 0, "", micro_build_cow },
	{ 5, "COW memcpy (huge_pages, populated)", MICRO_CONTIG, 0, "", micro_build_cow },
	{ 6, "COW memcpy shuffled", MICRO_CONTIG, 1, "(pagesPerChunk)", micro_build_cow_shuffle },
	{ 7, "COW memcpy shuffled (populated)", MICRO_CONTIG, 1, "(pagesPerChunk)",
	  micro_build_cow_shuffle },
	{ 8, "COW memcpy shuffled (huge_pages)", MICRO_CONTIG, 1, "(pagesPerChunk)",
	  micro_build_cow_shuffle },
	{ 9, "COW memcpy shuffled (huge_pages, populated)", MICRO_CONTIG, 1, "(pagesPerChunk)",
	  micro_build_cow_shuffle },
	{ 10, "Traditional memcpy shuffled", MICRO_CONTIG, 2, "(pagesPerChunk, initDst)",
	  micro_build_memcpy_shuffle },
	{ 11, "Traditional memcpy shuffled (huge_pages)", MICRO_CONTIG, 2,
	  "(pagesPerChunk, initDst)", micro_build_memcpy_shuffle },
	{ 12, "Traditional partitioning with histogram", MICRO_PARTITIONED, 3,
	  "(numPartitions, pagesPerBlock, prefaultDst)", micro_build_part_histo },
	{ 13, "Mapped partitioning without histogram", MICRO_PARTITIONED, 2,
	  "(numPartitions, pagesPerBlock)", micro_build_part_mapped },
	{ 14, "Mapped partitioning without histogram (huge_pages)", MICRO_PARTITIONED, 2,
	  "(numPartitions, pagesPerBlock)", micro_build_part_mapped },
	{ 15, "COW memcpy shuffled (remap file pages)", MICRO_CONTIG, 1, "(pagesPerChunk)",
	  micro_build_cow_shuffle_rfp },
	{ 16, "COW memcpy shuffled (remap file pages, hugepages)", MICRO_CONTIG, 1,
	  "(pagesPerChunk)", micro_build_cow_shuffle_rfp },
	{ 17, "Traditional partitioning with block-chains", MICRO_PARTITIONED, 2,
	  "(numPartitions, pagesPerBlock)", micro_build_part_chains },
	{ 18, "Mapped partitioning with block-chains", MICRO_PARTITIONED, 2,
	  "(numPartitions, pagesPerBlock)", micro_build_part_mapped_chains },
	{ 19, "Mapped partitioning with block-chains (hugepages)", MICRO_PARTITIONED, 2,
	  "(numPartitions, pagesPerBlock)", micro_build_part_mapped_chains },
	{ 20, "Mix huge and small pages", MICRO_CONTIG, 0, "", micro_build_mix },
	{ 21, "Mapped partitioning with block-chains (adaptive block sizes)", MICRO_PARTITIONED, 1,
	  "(numPartitions)", micro_build_part_adaptive },
	{ 22, "Rewired vector", MICRO_VECTOR, 0, "", micro_build_vec_rewired },
	{ 23, "Rewired vector (hugepages)", MICRO_VECTOR, 0, "", micro_build_vec_rewired },
	{ 24, "STL Vector", MICRO_VECTOR, 0, "", micro_build_vec_copying },
	{ 30, "Rewired vector (prepopulate)", MICRO_VECTOR, 0, "", micro_build_vec_rewired },
	{ 31, "Rewired vector (hugepages, prepopulate)", MICRO_VECTOR, 0, "",
	  micro_build_vec_rewired },
	{ 32, "Map and Populate", MICRO_CONTIG, 7,
	  "(huge, file, shared, populate, byOption, initFile, shuffle)", micro_build_map_populate },
	{ 36, "Mremaped vector", MICRO_VECTOR, 0, "", micro_build_vec_mremap },
	{ 37, "Mremaped vector (huge pages)", MICRO_VECTOR, 0, "", micro_build_vec_mremap },
	{ 40, "Allocation Rewiring (Pool)", MICRO_CONTIG, 2, "(huge, random)",
	  micro_build_alloc_rewired },
	{ 41, "Allocation Software Indirection (Pool)", MICRO_INDIRECT, 2, "(huge, random)",
	  micro_build_alloc_indirect },
	{ 42, "Allocation Mmap", MICRO_CONTIG, 1, "(huge)", micro_build_alloc_mmap },
	{ 43, "Software Indirection Vector (hugepages)", MICRO_VECTOR, 0, "",
	  micro_build_vec_indirect },
	{ 44, "Mremaped partitioning (hugepages)", MICRO_PARTITIONED, 2,
	  "(numPartitions, pagesPerBlock)", micro_build_part_mremap },
};

const micro_method *micro_method_find(int id)
{
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(methods); i++)
		if (methods[i].id == id)
			return &methods[i];
	return NULL;
}

void micro_method_defaults(const micro_method *m, micro_params *p)
{
	p->pages_per_chunk = 1;
	p->init_dst = false;
	p->num_partitions = 64;
	p->pages_per_block = 1;
	p->prefault_dst = false;
	p->huge = false;
	p->file = true;
	p->shared = true;
	p->populate = true;
	p->by_option = true;
	p->init_file = true;
	p->shuffle = false;
	p->random = false;
	p->vec_prepopulate = m->id == 30 || m->id == 31;
	p->contiguous = false;
	p->populate_cow = m->id == 3 || m->id == 5 || m->id == 7 || m->id == 9;
}

static bool integral(double v)
{
	return isfinite(v) && v >= 0 && v == floor(v) && v < 9.0e15;
}

static int need_flag(const char *name, double v, bool *out, char *why, size_t len)
{
	if (v != 0.0 && v != 1.0) {
		snprintf(why, len, "parameter %s must be 0 or 1, got %g", name, v);
		return RUMA_EPARSE;
	}
	*out = v == 1.0;
	return 0;
}

static int need_count(const char *name, double v, uint64_t lo, uint64_t hi, uint64_t *out,
		      char *why, size_t len)
{
	if (!integral(v) || v < (double)lo || v > (double)hi) {
		snprintf(why, len, "parameter %s must be an integer in [%llu, %llu], got %g", name,
			 (unsigned long long)lo, (unsigned long long)hi, v);
		return RUMA_EPARSE;
	}
	*out = (uint64_t)v;
	return 0;
}

static int need_partitions(double v, uint64_t *out, char *why, size_t len)
{
	int rc = need_count("numPartitions", v, 1, RUMA_PART_MAX_PARTITIONS, out, why, len);

	if (rc == 0 && (*out & (*out - 1))) {
		snprintf(why, len, "parameter numPartitions must be a power of two, got %g", v);
		return RUMA_EPARSE;
	}
	return rc;
}

int micro_method_set_params(const micro_method *m, const double *v, unsigned k, micro_params *p,
			    char *why, size_t len)
{
	int rc = 0;

	micro_method_defaults(m, p);
	if (k == 0)
		return 0;
	if (k != m->nparams && !(m->id == 21 && k == 2)) {
		if (m->nparams == 0)
			snprintf(why, len, "method %d takes no parameters", m->id);
		else
			snprintf(why, len, "method %d expects %u parameter%s %s, got %u", m->id,
				 m->nparams, m->nparams > 1 ? "s" : "", m->param_doc, k);
		return RUMA_EPARSE;
	}
	switch (m->id) {
	case 6: case 7: case 8: case 9: case 15: case 16:
		rc = need_count("pagesPerChunk", v[0], 1, 1u << 30, &p->pages_per_chunk, why, len);
		break;
	case 10: case 11:
		rc = need_count("pagesPerChunk", v[0], 1, 1u << 30, &p->pages_per_chunk, why, len);
		if (!rc)
			rc = need_flag("initDst", v[1], &p->init_dst, why, len);
		break;
	case 12:
		rc = need_partitions(v[0], &p->num_partitions, why, len);
		if (!rc)
			rc = need_count("pagesPerBlock", v[1], 1, 1u << 20, &p->pages_per_block, why, len);
		if (!rc)
			rc = need_flag("prefaultDst", v[2], &p->prefault_dst, why, len);
		break;
	case 13: case 14: case 17: case 18: case 19: case 44:
		rc = need_partitions(v[0], &p->num_partitions, why, len);
		if (!rc)
			rc = need_count("pagesPerBlock", v[1], 1, 1u << 20, &p->pages_per_block, why, len);
		break;
	case 21:
		rc = need_partitions(v[0], &p->num_partitions, why, len);
		if (!rc && k == 2)
			rc = need_flag("contiguous", v[1], &p->contiguous, why, len);
		break;
	case 32: {
		static const char *const names[7] = { "huge", "file", "shared", "populate",
						      "byOption", "initFile", "shuffle" };
		bool *dst[7] = { &p->huge, &p->file, &p->shared, &p->populate,
				 &p->by_option, &p->init_file, &p->shuffle };
		for (int i = 0; i < 7 && !rc; i++)
			rc = need_flag(names[i], v[i], dst[i], why, len);
		break;
	}
	case 40: case 41:
		rc = need_flag("huge", v[0], &p->huge, why, len);
		if (!rc)
			rc = need_flag("random", v[1], &p->random, why, len);
		break;
	case 42:
		rc = need_flag("huge", v[0], &p->huge, why, len);
		break;
	default:
		break;
	}
	return rc;
}

bool micro_method_wants_huge(const micro_method *m, const micro_params *p)
{
	switch (m->id) {
	case 4: case 5: case 8: case 9: case 14: case 16: case 19: case 20:
	case 23: case 31: case 43:
		return true;
	case 11: case 37: /* the original's "huge pages" here are 2 MiB units of malloc/mmap memory */
		return p->hugetlb;
	case 32: case 40: case 41: case 42:
		return p->huge;
	case 21:
		return !p->contiguous;
	default:
		return false;
	}
}

/* Pages of the per-partition blocks: every non-empty partition holds whole blocks. */
static uint64_t partition_block_pages(const micro_params *p, size_t n)
{
	uint64_t parts = RUMA_MIN((uint64_t)n, p->num_partitions);

	if (parts == 0)
		return 0;
	uint64_t per_part = (n + parts - 1) / parts;                      /* entries */
	uint64_t per_block = p->pages_per_block * (MICRO_HUGE_PAGE / 8); /* entries */

	return parts * ((per_part + per_block - 1) / per_block) * p->pages_per_block;
}

uint64_t micro_method_huge_pages(const micro_method *m, const micro_params *p, size_t n)
{
	uint64_t pages = (n * 8 + MICRO_HUGE_PAGE - 1) / MICRO_HUGE_PAGE;

	if (pages == 0)
		pages = 1;
	switch (m->id) {
	case 4: case 5: case 8: case 9:
		return 2 * pages; /* the source, and private copies when a test writes dst */
	case 14: case 19:
		return partition_block_pages(p, n);
	case 20:
		return n * 8 / MICRO_HUGE_PAGE; /* whole 2 MiB pages only; 0: all 4 KiB */
	case 21:
		return pages + p->num_partitions; /* the 2 MiB blocks, one partly filled each */
	case 23: case 31: case 37: case 43:
		return 2 * pages; /* doubling growth: at most twice the data */
	default:
		return pages;
	}
}
