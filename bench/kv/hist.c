/*
 * hist.c — the log-bucket histogram (hist.h).  Bucket of v: for
 * v < 2^SUB, v itself; else, with m = floor(log2 v) and e = m - SUB + 1,
 * (e << SUB) | the SUB bits after v's leading one.  Bucket e << SUB | s
 * so holds the values [(2^SUB + s) << (e - 1), (2^SUB + s + 1) << (e - 1)):
 * for e = 1 that is the value itself, and the buckets continue those of
 * the small values without a gap.
 */
#include "bench/kv/hist.h"

#include <math.h>
#include <string.h>

void ruma_kv_hist_reset(ruma_kv_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned ruma_kv_hist_bucket(uint64_t v)
{
	const uint64_t sub = 1ull << RUMA_KV_HIST_SUB;
	if (v < sub)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v) - RUMA_KV_HIST_SUB + 1u;
	return (e << RUMA_KV_HIST_SUB) | (unsigned)((v >> (e - 1u)) & (sub - 1u));
}

uint64_t ruma_kv_hist_upper(unsigned b)
{
	const uint64_t sub = 1ull << RUMA_KV_HIST_SUB;
	if (b < sub)
		return b;
	unsigned e = b >> RUMA_KV_HIST_SUB;
	uint64_t lo = (sub | (b & (sub - 1u))) << (e - 1u);
	return lo + ((1ull << (e - 1u)) - 1u);
}

void ruma_kv_hist_merge(ruma_kv_hist *dst, const ruma_kv_hist *src)
{
	if (!src->count)
		return;
	for (unsigned b = 0; b < RUMA_KV_HIST_BUCKETS; b++)
		dst->bucket[b] += src->bucket[b];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t ruma_kv_hist_quantile(const ruma_kv_hist *h, double q)
{
	if (!h->count)
		return 0;
	double want = ceil(q * (double)h->count);
	uint64_t rank = want < 1 ? 1 : (uint64_t)want, seen = 0;
	for (unsigned b = 0; b < RUMA_KV_HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank) {
			uint64_t up = ruma_kv_hist_upper(b);
			return up < h->max ? up : h->max;
		}
	}
	return h->max;
}
