/*
 * rwbench_snapshot.c — `ruma rwbench snapshot`: snapshots of an n-byte
 * memfd array (snapshot.h).  Variants: memcpy (the baseline), cow (kernel
 * copy-on-write through a MAP_PRIVATE view), rewired-cow (a page is copied
 * into a fresh pool page and rewired on its first write), shuffle and
 * memcpy-shuffle (16-page chunks in random order), and with --huge
 * memcpy-2m, cow-2m, rewired-cow-2m.  Phases, timed separately:
 *   create  ruma_snap_create (the memcpy variants copy everything here)
 *   write   one 8-byte write into every page of the snapshot (the COW
 *           variants copy each page here: kernel COW fault, resp.
 *           ruma_snap_page_writable)
 *   read    read every word of the snapshot
 *   destroy ruma_snap_destroy
 * The source is created and filled once per variant and repetition,
 * untimed, and checked to be unchanged after the writes.
 *
 * Syscalls: none directly.
 */
#include "rewire/rwbench.h"

#include <ruma/snapshot.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct snap_variant {
	const char *name;
	ruma_snap_method method;
	size_t ppc;
	bool huge;
} snap_variant;

static const snap_variant variants[] = {
	{ "memcpy", RUMA_SNAP_MEMCPY, 1, false },
	{ "cow", RUMA_SNAP_COW, 1, false },
	{ "rewired-cow", RUMA_SNAP_REWIRED_COW, 1, false },
	{ "shuffle", RUMA_SNAP_SHUFFLE, 16, false },
	{ "memcpy-shuffle", RUMA_SNAP_MEMCPY_SHUFFLE, 16, false },
	{ "memcpy-2m", RUMA_SNAP_MEMCPY, 1, true },
	{ "cow-2m", RUMA_SNAP_COW, 1, true },
	{ "rewired-cow-2m", RUMA_SNAP_REWIRED_COW, 1, true },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

static const char *const phases[] = { "create", "write", "read", "destroy" };
#define NPHASE 4

static volatile uint64_t sink;

static int run_one(const snap_variant *v, uint64_t bytes, uint64_t seed, double *sec,
		   uint64_t *pages_out)
{
	ruma_snap_src *src = NULL;
	ruma_snap *s = NULL;
	ruma_snap_opts so;
	double t0;
	int rc;

	rc = ruma_snap_src_create(&src, bytes, v->huge, true);
	if (rc)
		return rc;
	uint64_t *sd = ruma_snap_src_data(src), words = bytes / 8;
	for (uint64_t i = 0; i < words; i++)
		sd[i] = i;
	ruma_snap_opts_default(&so);
	so.method = v->method;
	so.pages_per_chunk = v->ppc;
	so.seed = seed;
	t0 = ruma_now_sec();
	rc = ruma_snap_create(&s, src, &so);
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
		rc = ruma_snap_page_writable(s, p, &a);
		if (!rc)
			*(volatile uint64_t *)a = ~(uint64_t)p;
	}
	sec[1] = ruma_now_sec() - t0;
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
	/* the source must not have seen the snapshot's writes */
	for (uint64_t i = 0; i < words && !rc; i += page / 8)
		if (sd[i] != i)
			rc = RUMA_ECORRUPT;
	ruma_snap_src_destroy(src);
	return rc;
}

int ruma_rwbench_snapshot(const ruma_rwbench_opts *o)
{
	size_t sel[NVAR], nsel = 0;
	ruma_rwb_table t;
	double *ops;
	int rc = 0;

	for (size_t k = 0; k < NVAR; k++)
		if (ruma_rwb_selected(o, variants[k].name) && (!variants[k].huge || o->huge))
			sel[nsel++] = k;
	if (!nsel || o->n < 4096) {
		fprintf(stderr, "rwbench snapshot: no variant selected or n < 4096 bytes\n");
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
	fprintf(o->csv, "bench,variant,bytes,rep,phase,seconds,pages,us_per_page\n");
	for (unsigned r = 0; r <= o->reps; r++)
		for (size_t jj = 0; jj < nsel; jj++) {
			size_t j = ruma_rwb_rotate(jj, r, nsel);
			const snap_variant *v = &variants[sel[j]];
			double sec[NPHASE];
			uint64_t pages = 0;
			int prc = run_one(v, o->n, o->seed + r, sec, &pages);
			if (prc) {
				if (r == 0)
					fprintf(stderr, "rwbench snapshot: %s: %s\n", v->name, ruma_strerror(prc));
				rc = rc ? rc : prc;
				continue;
			}
			if (r == 0)
				continue;
			for (size_t ph = 0; ph < NPHASE; ph++) {
				t.sec[(ph * nsel + j) * o->reps + (r - 1)] = sec[ph];
				fprintf(o->csv, "snapshot,%s,%llu,%u,%s,%.9f,%llu,%.3f\n", v->name,
					(unsigned long long)o->n, r, phases[ph], sec[ph],
					(unsigned long long)pages, sec[ph] * 1e6 / (double)pages);
			}
			fflush(o->csv);
		}
	ruma_rwb_table_print(&t, "snapshots (ns/op = per 4 KiB; ratio to memcpy)", ops);
	fprintf(stderr, "(checksum %llu)\n", (unsigned long long)sink);
	free(ops);
	ruma_rwb_table_free(&t);
	return rc;
}
