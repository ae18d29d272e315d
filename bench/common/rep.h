/*
 * rep.h — the repetition engine of the in-process benchmarks: K variants
 * run in rounds, the first `warmup` rounds discarded, then `rounds`
 * measured ones; within a round every variant runs once, in an order drawn
 * per round (a seeded Fisher-Yates shuffle, or a rotation by the round
 * number), so that a change of machine load hits all variants alike and no
 * variant always follows the same one.  Samples are kept per cell (a
 * variant, or a variant x parameter) and measured round, and summarised as
 * median, min and max (ruma_summarize), a cell against a baseline cell as
 * the summary of the per-round ratios.  `ruma sweep` draws its run order
 * from the same sequence (tools/exp/grid.c).  A tooling API, not part of
 * libruma.
 */
#ifndef RUMA_BENCH_REP_H
#define RUMA_BENCH_REP_H

#include <ruma/core.h>
#include "core/core_ext.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ruma_rep_order {
	RUMA_REP_SHUFFLE, /* a seeded shuffle per round */
	RUMA_REP_ROTATE   /* round r runs variant (j + r) mod K at position j */
} ruma_rep_order;

/* The plan of a run and the state of its order generator. */
typedef struct ruma_rep {
	size_t variants;    /* K >= 1 */
	size_t groups;      /* per round the variants run once per group (a parameter value) */
	unsigned warmup;    /* discarded rounds, run first */
	unsigned rounds;    /* measured rounds */
	ruma_rep_order order;
	ruma_rng rng;       /* the shuffle's generator, seeded by ruma_rep_init */
} ruma_rep;

/*
 * ruma_rep_init — a plan of (warmup + rounds) rounds of groups x variants
 * turns (groups 0 counts as 1); seed seeds the shuffle.
 */
void ruma_rep_init(ruma_rep *r, size_t variants, size_t groups, unsigned warmup, unsigned rounds,
		   ruma_rep_order order, uint64_t seed);

/*
 * ruma_rep_next_order — the next order of the r->variants variants into
 * order[]: rotated by shift (RUMA_REP_ROTATE), or the identity shuffled by the
 * next draws of r->rng (RUMA_REP_SHUFFLE; shift unused).  The same seed gives
 * the same sequence of orders.
 */
void ruma_rep_next_order(ruma_rep *r, size_t shift, uint64_t *order);

/* One turn of a run as the measured function sees it. */
typedef struct ruma_rep_turn {
	size_t variant;  /* which variant to run */
	size_t group;    /* in which group (parameter value) */
	unsigned round;  /* 0 .. warmup + rounds - 1 */
	bool warmup;     /* the result is to be discarded */
	unsigned rep;    /* measured round index 0 .. rounds - 1 (meaningless in warm-up) */
} ruma_rep_turn;

/* Runs one variant once; nonzero stops the run and is returned by ruma_rep_run. */
typedef int (*ruma_rep_fn)(void *ctx, const ruma_rep_turn *turn);

/*
 * ruma_rep_run — every round (warm-ups first), in it every group in turn,
 * in each group every variant once, in the order ruma_rep_next_order gives
 * (shift = round: a rotation is the same for all groups of a round, a
 * shuffle is drawn anew for each group).  Returns 0, the first nonzero
 * result of fn, or -ENOMEM.
 */
int ruma_rep_run(ruma_rep *r, ruma_rep_fn fn, void *ctx);

/* ---- samples -------------------------------------------------------------- */

/* cells x measured rounds values; NAN = not measured */
typedef struct ruma_rep_samples {
	size_t cells, rounds;
	double *v; /* [cell * rounds + rep] */
} ruma_rep_samples;

/* ruma_rep_samples_init — all NAN.  Returns 0 or -ENOMEM (s is then empty). */
int ruma_rep_samples_init(ruma_rep_samples *s, size_t cells, size_t rounds);
void ruma_rep_samples_free(ruma_rep_samples *s);

/* ruma_rep_put / ruma_rep_get — the value of cell in measured round rep
 * (out-of-range puts are ignored, gets give NAN). */
void ruma_rep_put(ruma_rep_samples *s, size_t cell, size_t rep, double value);
double ruma_rep_get(const ruma_rep_samples *s, size_t cell, size_t rep);

/*
 * ruma_rep_summary — median, min, max (ruma_summarize) of the measured values
 * of cell.  Returns 0, or -ENOENT when the cell has none.
 */
int ruma_rep_summary(const ruma_rep_samples *s, size_t cell, ruma_summary *out);

/*
 * ruma_rep_ratio_summary — the summary of cell / base over the rounds in
 * which both were measured (base > 0).  Returns 0 or -ENOENT when no round has both.
 */
int ruma_rep_ratio_summary(const ruma_rep_samples *s, size_t cell, size_t base,
			   ruma_summary *out);

#endif
