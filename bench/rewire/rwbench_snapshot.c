/*
 * rwbench_snapshot.c — `ruma rwbench snapshot`: snapshots of an n-byte
 * memfd array (snapshot.h).  Variants: memcpy (the baseline), cow (kernel
 * copy-on-write through a MAP_PRIVATE view), rewired-cow (each page made
 * writable before its write, page by page, with the default
 * rewire_min_pages: single pages are left to the kernel's COW),
 * rewired-cow-each (the same with rewire_min_pages 1: every page copied
 * into a fresh pool page and rewired), rewired-cow-run (each run of
 * --run-pages pages, 64 by default, made writable with one
 * ruma_snap_make_writable call before it is written, rewire_min_pages the
 * same: copied into pool pages and rewired per run), shuffle (16-page
 * chunks in random order, shared view: the writes reach the source, as in
 * the RUMA code base), shuffle-private (the same chunks MAP_PRIVATE: kernel
 * COW), memcpy-shuffle, and with --huge memcpy-2m, cow-2m, rewired-cow-2m.
 * Phases, timed separately:
 *   create  ruma_snap_create (the memcpy variants copy everything here)
 *   write   one 8-byte write into every page of the snapshot (the COW
 *           variants copy each page here: kernel COW fault, resp.
 *           ruma_snap_page_writable / ruma_snap_make_writable)
 *   read    read every word of the snapshot
 *   destroy ruma_snap_destroy
 * The source is created and filled once per variant and repetition,
 * untimed, and checked after the writes: unchanged, except for the shared
 * shuffled view, whose writes must show at the permuted source pages.
 *
 * Syscalls: none directly.
 */
#include "bench/rewire/rwbench.h"

#include <ruma/snapshot.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct snap_variant {
	const char *name;
	ruma_snap_method method;
	size_t ppc;
	bool huge;
	bool private_view; /* shuffle: MAP_PRIVATE chunks */
	size_t run;        /* rewired: pages made writable per call (0: page by page; SIZE_MAX: --run-pages) */
	size_t min_run;    /* rewired: ruma_snap_options.rewire_min_pages */
} snap_variant;

static const snap_variant variants[] = {
	{ "memcpy", RUMA_SNAP_MEMCPY, 1, false, false, 0, 0 },
	{ "cow", RUMA_SNAP_COW, 1, false, false, 0, 0 },
	{ "rewired-cow", RUMA_SNAP_REWIRED_COW, 1, false, false, 0, 0 },
	{ "rewired-cow-each", RUMA_SNAP_REWIRED_COW, 1, false, false, 0, 1 },
	{ "rewired-cow-run", RUMA_SNAP_REWIRED_COW, 1, false, false, SIZE_MAX, SIZE_MAX },
	{ "shuffle", RUMA_SNAP_SHUFFLE, 16, false, false, 0, 0 },
	{ "shuffle-private", RUMA_SNAP_SHUFFLE, 16, false, true, 0, 0 },
	{ "memcpy-shuffle", RUMA_SNAP_MEMCPY_SHUFFLE, 16, false, false, 0, 0 },
	{ "memcpy-2m", RUMA_SNAP_MEMCPY, 1, true, false, 0, 0 },
	{ "cow-2m", RUMA_SNAP_COW, 1, true, false, 0, 0 },
	{ "rewired-cow-2m", RUMA_SNAP_REWIRED_COW, 1, true, false, 0, 0 },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

static const char *const phases[] = { "create", "write", "read", "destroy" };
#define NPHASE 4

static volatile uint64_t sink;

/* --run-pages of the current run (the phased driver passes no options to a variant). */
static size_t run_pages = 64;

static int run_one(const snap_variant *v, uint64_t bytes, uint64_t seed, double *sec,
		   uint64_t *pages_out)
{
	ruma_snap_src *src = NULL;
	ruma_snap *s = NULL;
	ruma_snap_options so;
	double t0;
	int rc;

	ruma_snap_src_options src_o = {
		.bytes = bytes,
		.flags = RUMA_SNAP_SRC_POPULATE | (v->huge ? RUMA_SNAP_SRC_HUGE : 0),
	};
	rc = ruma_snap_src_create(&src_o, &src);
	if (rc)
		return rc;
	uint64_t *sd = ruma_snap_src_data(src), words = bytes / 8;
	for (uint64_t i = 0; i < words; i++)
		sd[i] = i;
	ruma_snap_options_default(&so);
	so.method = v->method;
	so.pages_per_chunk = v->ppc;
	so.seed = seed;
	so.private_view = v->private_view;
	size_t run = v->run == SIZE_MAX ? run_pages : v->run;
	so.rewire_min_pages = v->min_run == SIZE_MAX ? run_pages : v->min_run;
	t0 = ruma_now_sec();
	rc = ruma_snap_create(&so, src, &s);
	sec[0] = ruma_now_sec() - t0;
	if (rc) {
		ruma_snap_src_destroy(src);
		return rc;
	}
	size_t page = ruma_snap_src_page_size(src), pages = (bytes + page - 1) / page;
	*pages_out = pages;
	t0 = ruma_now_sec();
	for (size_t p = 0; p < pages && !rc; p++) {
		void *a;
		if (run && p % run == 0)
			rc = ruma_snap_make_writable(s, p, RUMA_MIN(run, pages - p));
		if (!rc)
			rc = ruma_snap_page_writable(s, p, &a);
		if (!rc)
			*(volatile uint64_t *)a = ~(uint64_t)p;
	}
	sec[1] = ruma_now_sec() - t0;
	/* where every snapshot page's write must show in the source (shared view), or nowhere */
	size_t nchunks, cbytes;
	const uint64_t *order = ruma_snap_chunk_order(s, &nchunks, &cbytes);
	bool shared = v->method == RUMA_SNAP_SHUFFLE && !v->private_view;
	uint64_t *src_page = shared ? malloc(pages * sizeof(*src_page)) : NULL;
	if (shared && !src_page)
		rc = -ENOMEM;
	for (size_t p = 0; src_page && p < pages; p++) {
		size_t ppc = cbytes / page;
		src_page[p] = order[p / ppc] * ppc + p % ppc;
	}
	uint64_t sum = 0;
	const uint64_t *d = ruma_snap_data(s);
	t0 = ruma_now_sec();
	for (uint64_t i = 0; i < words; i++)
		sum += d[i];
	sec[2] = ruma_now_sec() - t0;
	sink += sum;
	t0 = ruma_now_sec();
	ruma_snap_destroy(s);
	sec[3] = ruma_now_sec() - t0;
	/* the source must not have seen the snapshot's writes (shared view: must have) */
	for (uint64_t i = 0; i < words && !rc; i += page / 8)
		if (!shared && sd[i] != i)
			rc = RUMA_ECORRUPT;
	for (size_t p = 0; shared && p < pages && !rc; p++)
		if (sd[src_page[p] * (page / 8)] != ~(uint64_t)p)
			rc = RUMA_ECORRUPT;
	free(src_page);
	ruma_snap_src_destroy(src);
	return rc;
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

int ruma_rwbench_snapshot(const ruma_rwbench_opts *o)
{
	static const ruma_rwb_phased bench = {
		.bench = "snapshot",
		.title = "snapshots (ns/op = per 4 KiB; ratio to memcpy)",
		.variant = variant_name,
		.nvariants = NVAR,
		.phases = phases,
		.nphases = NPHASE,
		.count_name = "pages",
		.per_count_column = "us_per_page",
		.run = run_variant,
	};
	run_pages = o->run_pages;
	int rc = ruma_rwb_run_phased(o, &bench);

	fprintf(stderr, "(checksum %llu)\n", (unsigned long long)sink);
	return rc;
}
