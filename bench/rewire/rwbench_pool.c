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
#include "rewire/rwbench.h"

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
	ruma_pool_opts po;
	ruma_pool *p;
	double t0;
	int rc;

	ruma_pool_opts_default(&po);
	po.kind = v->kind;
	po.huge = v->huge;
	po.random = v->random;
	po.seed = seed;
	t0 = ruma_now_sec();
	rc = ruma_pool_create(&p, bytes, &po);
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

int ruma_rwbench_pool(const ruma_rwbench_opts *o)
{
	size_t sel[NVAR], nsel = 0;
	ruma_rwb_table t;
	double *ops;
	int rc = 0;

	for (size_t k = 0; k < NVAR; k++)
		if (ruma_rwb_selected(o, variants[k].name) && (!variants[k].huge || o->huge))
			sel[nsel++] = k;
	if (!nsel || o->n < 4096) {
		fprintf(stderr, "rwbench pool: no variant selected or n < 4096 bytes\n");
		return -EINVAL;
	}
	if (ruma_rwb_table_init(&t, nsel * NPHASE, o->reps))
		return -ENOMEM;
	ops = calloc(nsel * NPHASE, sizeof(*ops));
	for (size_t ph = 0; ph < NPHASE; ph++)
		for (size_t j = 0; j < nsel; j++) {
			size_t c = ph * nsel + j;
			snprintf(t.label[c], sizeof(t.label[c]), "%s %s", phases[ph], variants[sel[j]].name);
			t.baseline[c] = (int)(ph * nsel);
			if (ops)
				ops[c] = (double)((o->n + 4095) / 4096); /* per 4 KiB */
		}
	fprintf(o->csv, "bench,variant,bytes,rep,phase,seconds,mappings\n");
	for (unsigned r = 0; r <= o->reps; r++)
		for (size_t jj = 0; jj < nsel; jj++) {
			size_t j = ruma_rwb_rotate(jj, r, nsel);
			const pool_variant *v = &variants[sel[j]];
			double sec[NPHASE];
			uint64_t maps = 0;
			int prc = run_one(v, o->n, o->seed + r, sec, &maps);
			if (prc) {
				if (r == 0)
					fprintf(stderr, "rwbench pool: %s: %s\n", v->name, ruma_strerror(prc));
				rc = rc ? rc : prc;
				continue;
			}
			if (r == 0)
				continue;
			for (size_t ph = 0; ph < NPHASE; ph++) {
				t.sec[(ph * nsel + j) * o->reps + (r - 1)] = sec[ph];
				fprintf(o->csv, "pool,%s,%llu,%u,%s,%.9f,%llu\n", v->name,
					(unsigned long long)o->n, r, phases[ph], sec[ph],
					(unsigned long long)maps);
			}
			fflush(o->csv);
		}
	ruma_rwb_table_print(&t, "allocation pools (ns/op = per 4 KiB; ratio to mmap)", ops);
	fprintf(stderr, "(checksum %llu)\n", (unsigned long long)sink);
	free(ops);
	ruma_rwb_table_free(&t);
	return rc;
}
