/*
 * gen.h — YCSB's request generators (Cooper et al., "Benchmarking Cloud
 * Serving Systems with YCSB", SoCC 2010; brianfrankcooper/YCSB,
 * core/src/main/java/site/ycsb/generator/): zipfian by Gray et al.'s
 * method ("Quickly Generating Billion-Record Synthetic Databases",
 * SIGMOD 1994), scrambled zipfian (zipfian over a fixed, large item count,
 * FNV-hashed onto the keys, so that the popular keys are spread over the
 * key space), skewed latest (zipfian counted back from the newest key),
 * uniform; and YCSB's key hash (64-bit FNV-1a over the 8 bytes of a key
 * number, low byte first, made non-negative).
 *
 * A generator belongs to one thread (it holds no lock); it draws from the
 * thread's own ruma_rng.
 */
#ifndef RUMA_BENCH_KV_GEN_H
#define RUMA_BENCH_KV_GEN_H

#include <ruma/core.h>

#include <stdbool.h>
#include <stdint.h>

/* YCSB's constant and the item count and zeta of its scrambled generator. */
#define RUMA_KV_ZIPF_THETA 0.99
#define RUMA_KV_SCRAMBLED_ITEMS 10000000000ull
#define RUMA_KV_SCRAMBLED_ZETAN 26.46902820178302

/* How the keys of reads, updates and scans are chosen. */
typedef enum ruma_kv_dist {
	RUMA_KV_ZIPFIAN,   /* scrambled zipfian, constant 0.99 (YCSB's "zipfian") */
	RUMA_KV_UNIFORM,
	RUMA_KV_LATEST,    /* skewed towards the newest keys */
} ruma_kv_dist;

/* ruma_kv_dist_parse — "zipfian", "uniform" or "latest"; false otherwise. */
bool ruma_kv_dist_parse(const char *s, ruma_kv_dist *out);
/* ruma_kv_dist_name — the name ruma_kv_dist_parse takes. */
const char *ruma_kv_dist_name(ruma_kv_dist d);

/* A zipfian generator over [0, items) whose item count may grow. */
typedef struct ruma_kv_zipf {
	double theta, alpha, zeta2, zetan, eta;
	double half_pow_theta; /* 0.5^theta, the bound of item 1 */
	uint64_t items; /* the count zetan is for */
} ruma_kv_zipf;

/* ruma_kv_zeta — sum of 1/i^theta for i in (from, to], added to start:
 * the zeta of `to` items from that of `from` items. */
double ruma_kv_zeta(uint64_t from, uint64_t to, double theta, double start);

/* ruma_kv_zipf_init — over items (> 0) items; zetan 0: computed (O(items)),
 * else the given value (a known constant). */
void ruma_kv_zipf_init(ruma_kv_zipf *z, uint64_t items, double theta, double zetan);

/* ruma_kv_zipf_next — a value in [0, items): 0 the most popular.  A larger
 * items than the generator's extends its zeta incrementally (a smaller one
 * keeps the generator's and the value is taken modulo items). */
uint64_t ruma_kv_zipf_next(ruma_kv_zipf *z, ruma_rng *r, uint64_t items);

/* ruma_kv_fnv — YCSB's Utils.fnvhash64: FNV-1a of the 8 bytes of v, low
 * byte first, as a non-negative 63-bit number. */
uint64_t ruma_kv_fnv(uint64_t v);

/* The key chooser of one thread: dist over the key numbers [0, limit). */
typedef struct ruma_kv_chooser {
	ruma_kv_dist dist;
	ruma_kv_zipf zipf; /* zipfian: the scrambled generator; latest: over the keys */
} ruma_kv_chooser;

/* ruma_kv_chooser_init — for dist with items key numbers at the start;
 * latest needs the zeta of items (zetan; 0: computed here, O(items)), which
 * threads starting from the same count compute once and share. */
void ruma_kv_chooser_init(ruma_kv_chooser *c, ruma_kv_dist dist, uint64_t items, double zetan);

/* ruma_kv_chooser_next — a key number in [0, limit) (limit > 0): the keys
 * inserted so far. */
uint64_t ruma_kv_chooser_next(ruma_kv_chooser *c, ruma_rng *r, uint64_t limit);

#endif
