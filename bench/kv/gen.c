/*
 * gen.c — YCSB's generators (gen.h), written from the algorithms of its
 * ZipfianGenerator, ScrambledZipfianGenerator and SkewedLatestGenerator:
 *
 *   zipfian (Gray et al. 1994): with zeta(n) = sum_{i=1..n} 1/i^theta,
 *   alpha = 1/(1-theta), eta = (1 - (2/n)^(1-theta)) / (1 - zeta(2)/zeta(n)),
 *   a uniform u in [0,1) gives 0 when u*zeta(n) < 1, 1 when it is below
 *   1 + 0.5^theta, else floor(n * (eta*u - eta + 1)^alpha);
 *   scrambled: that over 10^10 items (zeta precomputed by YCSB), then
 *   fnv(value) mod the key count;
 *   latest: newest - zipfian(key count), the zipfian's zeta extended as
 *   keys are inserted.
 */
#include "bench/kv/gen.h"

#include <math.h>
#include <string.h>

bool ruma_kv_dist_parse(const char *s, ruma_kv_dist *out)
{
	static const char *const names[] = { "zipfian", "uniform", "latest" };
	for (unsigned i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*out = (ruma_kv_dist)i;
			return true;
		}
	return false;
}

const char *ruma_kv_dist_name(ruma_kv_dist d)
{
	return d == RUMA_KV_ZIPFIAN ? "zipfian" : d == RUMA_KV_UNIFORM ? "uniform" : "latest";
}

double ruma_kv_zeta(uint64_t from, uint64_t to, double theta, double start)
{
	double sum = start;
	for (uint64_t i = from; i < to; i++)
		sum += 1.0 / pow((double)(i + 1), theta);
	return sum;
}

static void zipf_eta(ruma_kv_zipf *z)
{
	z->eta = (1.0 - pow(2.0 / (double)z->items, 1.0 - z->theta)) / (1.0 - z->zeta2 / z->zetan);
}

void ruma_kv_zipf_init(ruma_kv_zipf *z, uint64_t items, double theta, double zetan)
{
	z->theta = theta;
	z->alpha = 1.0 / (1.0 - theta);
	z->zeta2 = ruma_kv_zeta(0, 2, theta, 0);
	z->half_pow_theta = pow(0.5, theta);
	z->items = items ? items : 1;
	z->zetan = zetan > 0 ? zetan : ruma_kv_zeta(0, z->items, theta, 0);
	zipf_eta(z);
}

uint64_t ruma_kv_zipf_next(ruma_kv_zipf *z, ruma_rng *r, uint64_t items)
{
	if (items > z->items) {
		z->zetan = ruma_kv_zeta(z->items, items, z->theta, z->zetan);
		z->items = items;
		zipf_eta(z);
	}
	double u = ruma_rng_double(r);
	double uz = u * z->zetan;
	uint64_t v;
	if (uz < 1.0)
		v = 0;
	else if (uz < 1.0 + z->half_pow_theta)
		v = 1;
	else
		v = (uint64_t)((double)z->items * pow(z->eta * u - z->eta + 1.0, z->alpha));
	if (v >= z->items)
		v = z->items - 1;
	return items < z->items ? v % items : v;
}

uint64_t ruma_kv_fnv(uint64_t v)
{
	uint64_t h = 0xCBF29CE484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		h *= 1099511628211ull;
		v >>= 8;
	}
	/* Java's Math.abs of a long (Long.MIN_VALUE stays negative there;
	 * clearing the sign bit keeps it in range here). */
	int64_t s = (int64_t)h;
	return s < 0 ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
}

void ruma_kv_chooser_init(ruma_kv_chooser *c, ruma_kv_dist dist, uint64_t items, double zetan)
{
	c->dist = dist;
	if (dist == RUMA_KV_ZIPFIAN)
		ruma_kv_zipf_init(&c->zipf, RUMA_KV_SCRAMBLED_ITEMS, RUMA_KV_ZIPF_THETA,
				  RUMA_KV_SCRAMBLED_ZETAN);
	else if (dist == RUMA_KV_LATEST)
		ruma_kv_zipf_init(&c->zipf, items, RUMA_KV_ZIPF_THETA, zetan);
}

uint64_t ruma_kv_chooser_next(ruma_kv_chooser *c, ruma_rng *r, uint64_t limit)
{
	switch (c->dist) {
	case RUMA_KV_ZIPFIAN:
		return ruma_kv_fnv(ruma_kv_zipf_next(&c->zipf, r, RUMA_KV_SCRAMBLED_ITEMS)) % limit;
	case RUMA_KV_LATEST:
		return limit - 1 - ruma_kv_zipf_next(&c->zipf, r, limit);
	default:
		return ruma_rng_below(r, limit);
	}
}
