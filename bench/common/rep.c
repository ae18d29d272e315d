/*
 * rep.c — the repetition engine (rep.h): the order of the variants in each
 * round, the loop over warm-up and measured rounds, and the per-cell
 * samples with their median/min/max summaries.
 *
 * Invariants: every round runs each variant exactly once (the order is a
 * permutation); warm-up turns are flagged, so a caller that stores only
 * measured turns never sees a warm-up value; the orders depend on the seed
 * and the round only, never on the clock.
 * Syscalls: none.
 */
#include "bench/common/rep.h"
#include "core/core_ext.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ruma_rep_init(ruma_rep *r, size_t variants, size_t groups, unsigned warmup, unsigned rounds,
		   ruma_rep_order order, uint64_t seed)
{
	memset(r, 0, sizeof(*r));
	r->variants = variants;
	r->groups = groups ? groups : 1;
	r->warmup = warmup;
	r->rounds = rounds;
	r->order = order;
	ruma_rng_seed(&r->rng, seed);
}

void ruma_rep_next_order(ruma_rep *r, size_t shift, uint64_t *order)
{
	size_t n = r->variants;

	for (size_t j = 0; j < n; j++)
		order[j] = r->order == RUMA_REP_ROTATE ? (j + shift) % n : j;
	if (r->order == RUMA_REP_SHUFFLE)
		ruma_rng_shuffle_u64(&r->rng, order, n);
}

int ruma_rep_run(ruma_rep *r, ruma_rep_fn fn, void *ctx)
{
	uint64_t *order = malloc((r->variants ? r->variants : 1) * sizeof(*order));
	unsigned total = r->warmup + r->rounds;
	int rc = 0;

	if (!order)
		return -ENOMEM;
	for (unsigned round = 0; round < total && !rc; round++) {
		ruma_rep_turn t = { .round = round, .warmup = round < r->warmup,
				    .rep = round < r->warmup ? 0 : round - r->warmup };

		for (t.group = 0; t.group < r->groups && !rc; t.group++) {
			ruma_rep_next_order(r, round, order);
			for (size_t j = 0; j < r->variants && !rc; j++) {
				t.variant = (size_t)order[j];
				rc = fn(ctx, &t);
			}
		}
	}
	free(order);
	return rc;
}

/* ---- samples -------------------------------------------------------------- */

int ruma_rep_samples_init(ruma_rep_samples *s, size_t cells, size_t rounds)
{
	size_t n = cells * rounds;

	memset(s, 0, sizeof(*s));
	s->v = malloc((n ? n : 1) * sizeof(*s->v));
	if (!s->v)
		return -ENOMEM;
	s->cells = cells;
	s->rounds = rounds;
	for (size_t i = 0; i < n; i++)
		s->v[i] = NAN;
	return 0;
}

void ruma_rep_samples_free(ruma_rep_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void ruma_rep_put(ruma_rep_samples *s, size_t cell, size_t rep, double value)
{
	if (cell < s->cells && rep < s->rounds)
		s->v[cell * s->rounds + rep] = value;
}

double ruma_rep_get(const ruma_rep_samples *s, size_t cell, size_t rep)
{
	return cell < s->cells && rep < s->rounds ? s->v[cell * s->rounds + rep] : NAN;
}

/* summary of the k values in v (freed here), -ENOENT for none */
static int summarize_owned(double *v, size_t k, ruma_summary *out)
{
	int rc = k ? ruma_summarize(v, k, out) : -ENOENT;

	free(v);
	return rc;
}

int ruma_rep_summary(const ruma_rep_samples *s, size_t cell, ruma_summary *out)
{
	double *v = malloc((s->rounds ? s->rounds : 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t r = 0; r < s->rounds; r++) {
		double x = ruma_rep_get(s, cell, r);
		if (!isnan(x))
			v[k++] = x;
	}
	return summarize_owned(v, k, out);
}

int ruma_rep_ratio_summary(const ruma_rep_samples *s, size_t cell, size_t base,
			   ruma_summary *out)
{
	double *v = malloc((s->rounds ? s->rounds : 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t r = 0; r < s->rounds; r++) {
		double x = ruma_rep_get(s, cell, r), y = ruma_rep_get(s, base, r);
		if (!isnan(x) && !isnan(y) && y > 0)
			v[k++] = x / y;
	}
	return summarize_owned(v, k, out);
}
