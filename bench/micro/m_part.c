/*
 * m_part.c — the partitioning methods of `ruma micro`, all built on
 * partition.h (ruma_part_run):
 *   12      traditional: histogram pass + scatter into a contiguous output
 *   13, 14  mapped, without histogram: per-partition areas grown by blocks of
 *           pool pages, rewired into one contiguous output (14: 2 MiB pages)
 *   17      traditional with block-chains (chunks, no contiguous output)
 *   18, 19  mapped with block-chains (window per partition), contiguous output
 *   21      mapped with adaptive block sizes (2 MiB down to 4 KiB): 2 MiB
 *           blocks from huge pages and chains as the original; 21(P,1): all
 *           from 4 KiB pages and one contiguous output
 *   44      mremap partitioning in 2 MiB steps of ordinary memory (chunks per
 *           partition), as the original
 * Input and phases as in the original (BigDataAnalyticsGroup/rewiring,
 * methods/traditional_partitioning.c, blocked_partitioning.c,
 * mapped_blocked_partitioning_adaptive.c, mremaped_partitioning.c): n random
 * 64-bit keys (micro_urand64_fill, seeded with the run seed: 42 for the
 * first run, the original's srand48(42)), partitioned by their top log2(P)
 * bits (the original's GET_BUCKET: key >> (64 - log2 P)).  Timed phases:
 *   malloc-src        the key array
 *   init-malloc-src   drawing the keys
 *   build-histogram   12: the histogram pass and prefix sums
 *   malloc-dst        12: the output allocation; 17: the per-partition
 *                     state (blocks are allocated during the pass); 44: the
 *                     first region of every partition (grown in the pass)
 *   memcpy            the partitioning pass (12, 17, 21, 44: through software
 *                     write-combining lines, as the original; the mapped
 *                     methods 13, 14, 18, 19, 21 book the setup of their
 *                     work areas under malloc-dst, as the original's 21; the
 *                     creation of their memfd pools, where the original opens
 *                     its pool files, is untimed as there)
 *   squeeze-area-mmap the contiguous layout after the pass, for a method
 *                     that reports RUMA_PART_PHASE_PASS and returns one
 *                     contiguous output (13, 14, 18, 19, 21(P,1))
 * 12's prefault of the output (prefaultDst) and 17's block pool (allocated
 * and touched before the pass) are untimed, as in the original.  So is 21's
 * wiring of its chains into readable chunks after the pass: the original
 * maps its blocks after the timed pass too (for its sanity sum) and times
 * nothing after the pass.
 * 12, 17 and 44 keep the input order inside a partition; the mapped methods
 * do not (their squeeze fills a partition's last page with keys from the end
 * of the next one).
 * Syscalls: none here (malloc for the keys; partition.h does the mapping).
 */
#include "bench/micro/micro.h"

#include <ruma/partition.h>
#include "rwstruct/rwstruct_ext.h"

#include <errno.h>
#include <stdlib.h>

typedef struct part_priv {
	ruma_part_result *res;
	micro_ctx *c;    /* for the phase hook */
	bool after_pass; /* the method reported RUMA_PART_PHASE_PASS */
	bool time_layout; /* book what follows the pass (squeeze-area-mmap) */
} part_priv;

static void part_cleanup(micro_data *d)
{
	part_priv *pp = d->priv;
	bool contiguous = pp->res->data != NULL;

	ruma_part_result_free(pp->res);
	printf("Freeing %s\n", micro_field_name(contiguous ? MF_MMAP_DST : MF_SHM_DST));
	free(d->src);
	printf("Freeing %s\n", micro_field_name(MF_MALLOC_SRC));
	free(pp);
}

/* Describe the library's result as micro_data partitions/segments. */
static int describe(ruma_part_result *res, micro_data *d)
{
	size_t P = res->partitions;

	d->nparts = P;
	d->hist = calloc(P, sizeof(size_t));
	d->nseg = res->nchunks;
	d->seg_ptr = calloc(res->nchunks ? res->nchunks : 1, sizeof(uint64_t *));
	d->seg_len = calloc(res->nchunks ? res->nchunks : 1, sizeof(size_t));
	d->seg_part = calloc(res->nchunks ? res->nchunks : 1, sizeof(uint32_t));
	if (!d->hist || !d->seg_ptr || !d->seg_len || !d->seg_part) {
		micro_free_data_arrays(d);
		return -ENOMEM;
	}
	for (size_t p = 0; p < P; p++)
		d->hist[p] = res->start[p + 1] - res->start[p];
	for (size_t k = 0; k < res->nchunks; k++) {
		d->seg_ptr[k] = res->chunks[k].keys;
		d->seg_len[k] = res->chunks[k].n;
		d->seg_part[k] = res->chunks[k].part;
	}
	d->dst = res->data;
	return 0;
}

/*
 * The partition hook: book the phase that ended and start the next
 * (PREFAULT: untimed).  What follows PASS — the layout of the mapped
 * methods — is booked as squeeze-area-mmap when it builds one contiguous
 * output (part_priv.time_layout), else left untimed.
 */
static void part_phase(void *ctx, ruma_part_phase ended)
{
	part_priv *pp = ctx;
	micro_ctx *c = pp->c;

	if (ended == RUMA_PART_PHASE_OPEN)
		; /* the pools' memfds: untimed, as the original opens its files before its clock */
	else if (ended == RUMA_PART_PHASE_HISTOGRAM)
		micro_phase_end(c, MF_BUILD_HISTOGRAM);
	else if (ended == RUMA_PART_PHASE_ALLOC)
		micro_phase_end(c, MF_MALLOC_DST);
	else if (ended == RUMA_PART_PHASE_PASS) {
		micro_phase_end(c, MF_MEMCPY);
		pp->after_pass = true;
	}
	micro_phase_begin(c);
}

/* The original's shift: the top log2(P) bits name the partition. */
static unsigned top_bits_shift(uint64_t P)
{
	unsigned bits = 0;

	while ((1ull << bits) < P)
		bits++;
	return bits ? 64 - bits : 0;
}

static int part_build(micro_ctx *c, const micro_params *p, size_t n, micro_data *d,
		      ruma_part_method method, bool huge)
{
	part_priv *pp = calloc(1, sizeof(*pp));
	ruma_part_options o;
	int rc;

	if (!pp)
		return micro_fail("allocating", -ENOMEM);
	d->kind = MICRO_PARTITIONED;
	d->n = n;
	micro_phase_begin(c);
	d->src = malloc(n * sizeof(uint64_t));
	micro_phase_end(c, MF_MALLOC_SRC);
	if (!d->src) {
		free(pp);
		return micro_fail("malloc src", -ENOMEM);
	}
	micro_phase_begin(c);
	micro_urand64_fill(d->src, n, c->seed);
	micro_phase_end(c, MF_INIT_MALLOC_SRC);
	d->random_keys = true;
	d->key_seed = c->seed;
	d->part_shift = top_bits_shift(p->num_partitions);

	ruma_part_options_default(&o);
	o.method = method;
	o.partitions = (uint32_t)p->num_partitions;
	o.shift = d->part_shift;
	/* 12, 17, 21 and 44 scatter through write-combining lines, as the original;
	 * 17's blocks come from a pool touched before the pass (the original
	 * prefaults it) */
	o.swwc = method == RUMA_PART_TRADITIONAL || method == RUMA_PART_TRADITIONAL_CHAINS ||
		 method == RUMA_PART_MREMAP || method == RUMA_PART_MAPPED_ADAPTIVE;
	o.prefault_dst = p->prefault_dst || method == RUMA_PART_TRADITIONAL_CHAINS;
	pp->c = c;
	o.pages_per_block = p->pages_per_block;
	o.huge = huge;
	if (method == RUMA_PART_MAPPED_ADAPTIVE)
		o.contiguous = p->contiguous;
	pp->time_layout = o.contiguous;
	micro_phase_begin(c);
	rc = ruma_part_run_phased(d->src, n, &o, part_phase, pp, &pp->res);
	if (!pp->after_pass)
		micro_phase_end(c, MF_MEMCPY);
	else if (pp->time_layout)
		micro_phase_end(c, MF_SQUEEZE_AREA_MMAP);
	if (rc) {
		free(d->src);
		d->src = NULL;
		free(pp);
		return micro_fail("partitioning", rc);
	}
	rc = describe(pp->res, d);
	if (rc) {
		ruma_part_result_free(pp->res);
		free(d->src);
		d->src = NULL;
		free(pp);
		return micro_fail("describing the partitions", rc);
	}
	/* the mapped methods complete each partition's last page with keys from the
	 * next partition's end (the squeeze): order inside a partition is not kept */
	d->part_unordered = method == RUMA_PART_MAPPED || method == RUMA_PART_MAPPED_CHAINS ||
			    method == RUMA_PART_MAPPED_ADAPTIVE;
	d->priv = pp;
	d->cleanup = part_cleanup;
	return 0;
}

int micro_build_part_histo(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return part_build(c, p, n, d, RUMA_PART_TRADITIONAL, false);
}

int micro_build_part_mapped(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return part_build(c, p, n, d, RUMA_PART_MAPPED, p->use_huge);
}

int micro_build_part_chains(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return part_build(c, p, n, d, RUMA_PART_TRADITIONAL_CHAINS, false);
}

int micro_build_part_mapped_chains(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return part_build(c, p, n, d, RUMA_PART_MAPPED_CHAINS, p->use_huge);
}

int micro_build_part_adaptive(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	/* As the original: 2 MiB blocks from huge pages (4 KiB pages after
	 * --fallback), the smaller ones from a 4 KiB pool, partitions left as
	 * chains.  21(P,1): every block from 4 KiB pool pages, so the output can be
	 * one contiguous range (block sizes still go from 2 MiB down to a page). */
	return part_build(c, p, n, d, RUMA_PART_MAPPED_ADAPTIVE, p->use_huge && !p->contiguous);
}

int micro_build_part_mremap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	/* the original's "huge pages": regions of ordinary memory grown by 2 MiB
	 * (partition.h: hugetlb mappings cannot grow with mremap) */
	return part_build(c, p, n, d, RUMA_PART_MREMAP, true);
}
