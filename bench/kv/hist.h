/*
 * hist.h — a latency histogram with logarithmic buckets, in the manner of
 * Gil Tene's HdrHistogram (github.com/HdrHistogram/HdrHistogram_c): values
 * below 2^RUMA_KV_HIST_SUB go to a bucket each; above, every power of two
 * is split into 2^RUMA_KV_HIST_SUB equal buckets, so a value is kept with
 * a relative error below 2^-RUMA_KV_HIST_SUB (under 1 % with 7 bits).
 * Recording is an index computation and an increment; percentiles walk the
 * buckets.  One histogram per thread and operation; merged at the end.
 */
#ifndef RUMA_BENCH_KV_HIST_H
#define RUMA_BENCH_KV_HIST_H

#include <stdint.h>

#define RUMA_KV_HIST_SUB 7u
/* Enough buckets for every 64-bit value. */
#define RUMA_KV_HIST_BUCKETS ((64u - RUMA_KV_HIST_SUB + 1u) << RUMA_KV_HIST_SUB)

typedef struct ruma_kv_hist {
	uint64_t count, sum, min, max;
	uint64_t bucket[RUMA_KV_HIST_BUCKETS];
} ruma_kv_hist;

/* ruma_kv_hist_reset — empty. */
void ruma_kv_hist_reset(ruma_kv_hist *h);

/* ruma_kv_hist_bucket — the bucket of value v. */
unsigned ruma_kv_hist_bucket(uint64_t v);

/* ruma_kv_hist_upper — the largest value of bucket b (what a percentile
 * reports, so that it is never below the true one by more than a bucket). */
uint64_t ruma_kv_hist_upper(unsigned b);

/* ruma_kv_hist_add — record one value. */
static inline void ruma_kv_hist_add(ruma_kv_hist *h, uint64_t v)
{
	h->bucket[ruma_kv_hist_bucket(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* ruma_kv_hist_merge — add every value of src to dst. */
void ruma_kv_hist_merge(ruma_kv_hist *dst, const ruma_kv_hist *src);

/* ruma_kv_hist_quantile — the value at quantile q (0..1): the upper end of
 * the bucket holding the ceil(q*count)-th value, at most max; 0 when empty. */
uint64_t ruma_kv_hist_quantile(const ruma_kv_hist *h, double q);

#endif
