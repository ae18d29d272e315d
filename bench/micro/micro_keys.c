/*
 * micro_keys.c — the random 64-bit keys of `ruma micro`, drawn exactly as
 * the original Rewiring_Microbench draws them (BigDataAnalyticsGroup/rewiring,
 * useful_functions.c: urand64 built from three lrand48 values, seeded with
 * srand48(42) before the partitioning inputs are filled).  The generator is
 * the 48-bit linear congruential generator POSIX specifies for the drand48
 * family, written out here so that the keys do not depend on the C library
 * and do not disturb its generator state.  The vector test (15) and the
 * partitioning methods (12-21, 44) use these keys.  Also the permutations
 * of the shuffling methods (placements of chunks and pages).
 *
 * Syscalls: none.
 */
#include "bench/micro/micro.h"

#include <stdlib.h>

/* POSIX drand48 family: X' = (0x5DEECE66D * X + 0xB) mod 2^48; lrand48 = X >> 17. */
static uint32_t lrand48_step(uint64_t *x)
{
	*x = (0x5DEECE66Dull * *x + 0xB) & ((1ull << 48) - 1);
	return (uint32_t)(*x >> 17);
}

void micro_urand64_fill(uint64_t *keys, size_t n, uint64_t seed)
{
	uint64_t x = ((seed & 0xffffffffu) << 16) | 0x330E; /* srand48(seed) */

	for (size_t i = 0; i < n; i++) {
		uint64_t hi = lrand48_step(&x), md = lrand48_step(&x), lo = lrand48_step(&x);
		keys[i] = (hi << 42) + (md << 21) + lo;
	}
}

uint64_t *micro_permutation(size_t n, size_t shuffled, uint64_t seed)
{
	uint64_t *perm = malloc((n ? n : 1) * sizeof(*perm));
	ruma_rng r;

	if (!perm)
		return NULL;
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	ruma_rng_seed(&r, seed);
	ruma_rng_shuffle_u64(&r, perm, shuffled);
	return perm;
}
