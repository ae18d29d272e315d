/*
 * rng.c — xoshiro256** seeded through splitmix64; Lemire's nearly-divisionless
 * bounded integers.  Deterministic for a given seed, so every benchmark and
 * test can print its seed and be replayed with RUMA_SEED=<seed>.
 * Syscalls: getpid (mixed into the default seed); the generator makes none.
 */
#include <ruma/core.h>

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void ruma_rng_seed(ruma_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t ruma_rng_next(ruma_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t ruma_rng_below(ruma_rng *r, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)ruma_rng_next(r) * n;
	uint64_t low = (uint64_t)m;

	if (low < n) {
		uint64_t threshold = -n % n;
		while (low < threshold) {
			m = (unsigned __int128)ruma_rng_next(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double ruma_rng_double(ruma_rng *r)
{
	return (double)(ruma_rng_next(r) >> 11) * 0x1.0p-53;
}

void ruma_rng_shuffle_u64(ruma_rng *r, uint64_t *v, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)ruma_rng_below(r, i);
		uint64_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

uint64_t ruma_seed_default(void)
{
	uint64_t seed = ruma_now_ns() ^ ((uint64_t)getpid() << 32);
	return splitmix64(&seed);
}
