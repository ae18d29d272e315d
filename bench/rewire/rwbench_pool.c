/*
 * rwbench_pool.c — `ruma rwbench pool`: the three allocation pools of
 * pool.h (RUMA methods 40-42) over n bytes.  Variants: mmap (the baseline),
 * rewired, rewired-random (one mapping per page), indirect, indirect-random,
 * and with --huge mmap-2m, rewired-2m, rewired-2m-random.  Phases, each
 * timed separately: alloc (ruma_pool_create, no populate), touch (write one
 * word per 4 KiB: the page faults), read (read every word, page by page
 * through ruma_pool_page), free (ruma_pool_destroy).
 *
 * Syscalls: none directly.
 */
#include "bench/rewire/rwbench.h"

#include <ruma/pool.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct pool_variant {
	const char *name;
	ruma_pool_kind kind;
	bool huge, random;
} pool_variant;

static const pool_variant variants[] = {
	{ "mmap", RUMA_POOL_MMAP, false, false },
	{ "rewired", RUMA_POOL_REWIRED, false, false },
	{ "rewired-random", RUMA_POOL_REWIRED, false, true },
	{ "indirect", RUMA_POOL_INDIRECT, false, false },
	{ "indirect-random", RUMA_POOL_INDIRECT, false, true },
	{ "mmap-2m", RUMA_POOL_MMAP, true, false },
	{ "rewired-2m", RUMA_POOL_REWIRED, true, false },
	{ "rewired-2m-random", RUMA_POOL_REWIRED, true, true },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

static const char *const phases[] = { "alloc", "touch", "read", "free" };
#define NPHASE 4

static volatile uint64_t sink;

/* Time the four phases of one variant; sec[NPHASE]. */
static int run_one(const pool_variant *v, uint64_t bytes, uint64_t seed, double *sec,
		   uint64_t *mappings)
{
	ruma_pool_options po;
	ruma_pool *p;
	double t0;
	int rc;

	ruma_pool_options_default(&po);
	po.kind = v->kind;
	po.huge = v->huge;
	po.random = v->random;
	po.seed = seed;
	t0 = ruma_now_sec();
	rc = ruma_pool_create(&po, bytes, &p);
	sec[0] = ruma_now_sec() - t0;
	if (rc)
		return rc;
	*mappings = ruma_pool_mappings(p);
	size_t pages = ruma_pool_pages(p), ps = ruma_pool_page_size(p);
	t0 = ruma_now_sec();
	for (size_t i = 0; i < pages; i++) {
		uint8_t *pg = ruma_pool_page(p, i);
		for (size_t off = 0; off < ps; off += 4096)
			*(volatile uint64_t *)(void *)(pg + off) = i + off;
	}
	sec[1] = ruma_now_sec() - t0;
	uint64_t sum = 0;
	t0 = ruma_now_sec();
	for (size_t i = 0; i < pages; i++) {
		const uint64_t *pg = ruma_pool_page(p, i);
		for (size_t w = 0; w < ps / 8; w++)
			sum += pg[w];
	}
	sec[2] = ruma_now_sec() - t0;
	sink += sum;
	t0 = ruma_now_sec();
	ruma_pool_destroy(p);
	sec[3] = ruma_now_sec() - t0;
	return 0;
}

static const char *variant_name(size_t k, bool *huge)
{
	*huge = variants[k].huge;
	return variants[k].name;
}

static int run_variant(size_t k, uint64_t bytes, uint64_t seed, double *sec, uint64_t *count)
{
	return run_one(&variants[k], bytes, seed, sec, count);
}

int ruma_rwbench_pool(const ruma_rwbench_opts *o)
{
	static const ruma_rwb_phased bench = {
		.bench = "pool",
		.title = "allocation pools (ns/op = per 4 KiB; ratio to mmap)",
		.variant = variant_name,
		.nvariants = NVAR,
		.phases = phases,
		.nphases = NPHASE,
		.count_name = "mappings",
		.run = run_variant,
	};
	int rc = ruma_rwb_run_phased(o, &bench);

	fprintf(stderr, "(checksum %llu)\n", (unsigned long long)sink);
	return rc;
}
