/*
 * rwbench_partition.c — `ruma rwbench partition`: the partitioning methods
 * of partition.h over n random 64-bit keys for each partition count P.
 * Variants: traditional (the baseline), traditional-swwc, traditional-chains,
 * mapped (pages moved into place when the kernel has UFFDIO_MOVE; the path
 * taken is printed to stderr, as for mapped-chains), mapped-mmap (always the memfd rewiring), mapped-chains, mapped-chains-swwc, mapped-adaptive, mremap, the
 * -ext variants (blocks carved from per-partition extents of extent_pages
 * pool pages), and with --huge mapped-chains-2m and mremap-2m.  The timed region is one
 * ruma_part_run (including building the contiguous output where the method
 * has one); freeing the result is not timed.  Every result is checked
 * (partition sizes against the histogram) before its time is recorded.
 *
 * Syscalls: none directly.
 */
#include "bench/rewire/rwbench.h"

#include <ruma/partition.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct part_variant {
	const char *name;
	ruma_part_method method;
	bool swwc, huge, extents;
	ruma_rewire_path path; /* MAPPED: AUTO (moves pages when the kernel can) or forced */
} part_variant;

static const part_variant variants[] = {
	{ "traditional", RUMA_PART_TRADITIONAL, false, false, false, RUMA_REWIRE_AUTO },
	{ "traditional-swwc", RUMA_PART_TRADITIONAL, true, false, false, RUMA_REWIRE_AUTO },
	{ "traditional-chains", RUMA_PART_TRADITIONAL_CHAINS, false, false, false, RUMA_REWIRE_AUTO },
	{ "mapped", RUMA_PART_MAPPED, false, false, false, RUMA_REWIRE_AUTO },
	{ "mapped-mmap", RUMA_PART_MAPPED, false, false, false, RUMA_REWIRE_MMAP },
	{ "mapped-chains", RUMA_PART_MAPPED_CHAINS, false, false, false, RUMA_REWIRE_AUTO },
	{ "mapped-chains-swwc", RUMA_PART_MAPPED_CHAINS, true, false, false, RUMA_REWIRE_AUTO },
	{ "mapped-adaptive", RUMA_PART_MAPPED_ADAPTIVE, false, false, false, RUMA_REWIRE_AUTO },
	{ "mapped-ext", RUMA_PART_MAPPED, false, false, true, RUMA_REWIRE_AUTO },
	{ "mapped-chains-ext", RUMA_PART_MAPPED_CHAINS, false, false, true, RUMA_REWIRE_AUTO },
	{ "mapped-chains-ext-swwc", RUMA_PART_MAPPED_CHAINS, true, false, true, RUMA_REWIRE_AUTO },
	{ "mremap", RUMA_PART_MREMAP, false, false, false, RUMA_REWIRE_AUTO },
	{ "mapped-chains-2m", RUMA_PART_MAPPED_CHAINS, false, true, false, RUMA_REWIRE_AUTO },
	{ "mremap-2m", RUMA_PART_MREMAP, false, true, false, RUMA_REWIRE_AUTO },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

static bool sizes_match(const ruma_part_result *r, const size_t *hist, uint32_t P)
{
	for (uint32_t p = 0; p < P; p++)
		if (r->start[p + 1] - r->start[p] != hist[p])
			return false;
	return true;
}

/* the state of one partition bench run, for its turns */
struct part_run {
	const ruma_rwbench_opts *o;
	const size_t *sel;
	size_t nsel;
	const uint64_t *keys;
	size_t *hist, hist_group; /* the histogram of partition count group hist_group */
	ruma_rwb_table *t;
	int rc;
};

static void part_record(struct part_run *p, const ruma_rep_turn *turn, const part_variant *v,
			double sec, const ruma_part_result *res)
{
	const ruma_rwbench_opts *o = p->o;
	uint32_t P = o->parts[turn->group];
	uint64_t n = o->n;
	unsigned r = turn->rep + 1;

	ruma_rep_put(&p->t->s, turn->group * p->nsel + turn->variant, turn->rep, sec);
	fprintf(o->csv, "partition,%s,%u,%zu,%llu,%u,%.9f,%.3f,%llu,%llu,%d\n", v->name, P,
		o->pages_per_block, (unsigned long long)n, r, sec, n / sec / 1e6,
		(unsigned long long)res->rewires, (unsigned long long)res->bytes_copied,
		res->data != NULL);
	(void)ruma_result_setu(o->res, "partitions", P);
	(void)ruma_result_setu(o->res, "pages_per_block", o->pages_per_block);
	(void)ruma_result_setu(o->res, "n", n);
	(void)ruma_result_setu(o->res, "rep", r);
	ruma_result_add(o->res, v->name, "s", sec);
	fflush(o->csv);
}

/* one turn: variant sel[variant] partitions the keys into parts[group] partitions */
static int part_turn(void *ctx, const ruma_rep_turn *turn)
{
	struct part_run *p = ctx;
	const ruma_rwbench_opts *o = p->o;
	const part_variant *v = &variants[p->sel[turn->variant]];
	uint32_t P = o->parts[turn->group];
	ruma_part_options po;
	ruma_part_result *res;

	if (p->hist_group != turn->group) { /* once per (round, P), as the check needs it */
		ruma_part_histogram(p->keys, o->n, 0, P, p->hist);
		p->hist_group = turn->group;
	}
	ruma_part_options_default(&po);
	po.method = v->method;
	po.partitions = P;
	po.swwc = v->swwc;
	po.huge = v->huge;
	po.pages_per_block = o->pages_per_block;
	po.extent_pages = v->extents ? o->extent_pages : 0;
	po.path = v->path;
	double t0 = ruma_now_sec();
	int prc = ruma_part_run(p->keys, o->n, &po, &res);
	double sec = ruma_now_sec() - t0;
	if (prc) {
		if (turn->round == 0)
			fprintf(stderr, "rwbench partition: %s P=%u: %s\n", v->name, P,
				ruma_strerror(prc));
		p->rc = p->rc ? p->rc : prc;
		return 0;
	}
	if (!sizes_match(res, p->hist, P)) {
		fprintf(stderr, "rwbench partition: %s P=%u: wrong partition sizes\n", v->name, P);
		ruma_part_result_free(res);
		p->rc = RUMA_ECORRUPT;
		return 0;
	}
	if (turn->round == 0 &&
	    (v->method == RUMA_PART_MAPPED || v->method == RUMA_PART_MAPPED_CHAINS))
		fprintf(stderr, "rwbench partition: %s P=%u: rewire path %s\n", v->name, P,
			ruma_rewire_path_name(res->path));
	if (!turn->warmup)
		part_record(p, turn, v, sec, res);
	ruma_part_result_free(res);
	return 0;
}

int ruma_rwbench_partition(const ruma_rwbench_opts *o)
{
	size_t sel[NVAR], nsel = 0, np = o->nparts;
	uint64_t n = o->n, *keys;
	ruma_rwb_table t;
	size_t *hist;
	double *ops;
	ruma_rng rng;
	int rc = 0;

	for (size_t k = 0; k < NVAR; k++)
		if (ruma_rwb_selected(o, variants[k].name) && (!variants[k].huge || o->huge))
			sel[nsel++] = k;
	if (!nsel || !np) {
		fprintf(stderr, "rwbench partition: no variant or partition count selected\n");
		return -EINVAL;
	}
	keys = malloc(n * sizeof(*keys));
	hist = malloc(RUMA_PART_MAX_PARTITIONS * sizeof(*hist));
	ops = calloc(nsel * np, sizeof(*ops));
	if (!keys || !hist || !ops || ruma_rwb_table_init(&t, nsel * np, o->reps)) {
		free(keys);
		free(hist);
		free(ops);
		return -ENOMEM;
	}
	ruma_rng_seed(&rng, o->seed);
	for (uint64_t i = 0; i < n; i++)
		keys[i] = ruma_rng_next(&rng);
	for (size_t pi = 0; pi < np; pi++)
		for (size_t j = 0; j < nsel; j++) {
			size_t c = pi * nsel + j;
			snprintf(t.label[c], sizeof(t.label[c]), "P=%u %s", o->parts[pi],
				 variants[sel[j]].name);
			t.baseline[c] = (int)(pi * nsel);
			ops[c] = (double)n;
		}
	fprintf(o->csv, "bench,variant,partitions,pages_per_block,n,rep,seconds,mkeys_per_s,"
			"rewires,bytes_copied,contiguous\n");
	struct part_run pr = { .o = o, .sel = sel, .nsel = nsel, .keys = keys, .hist = hist,
			       .hist_group = SIZE_MAX, .t = &t };
	ruma_rep rep;
	ruma_rwb_rep_init(&rep, o, nsel, np);
	(void)ruma_rep_run(&rep, part_turn, &pr);
	rc = pr.rc;
	ruma_rwb_table_print(&t, "partitioning (ns/op = per key; ratio to traditional)", ops);
	free(keys);
	free(hist);
	free(ops);
	ruma_rwb_table_free(&t);
	return rc;
}
