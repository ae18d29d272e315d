/*
 * test_alloc_mt.c — instances are single-threaded, but distinct instances
 * may be used from distinct threads at the same time: the shared state (the
 * huge backend's one-time notes and THP probe, the OS layer's counters) must
 * be race-free.  Each thread runs its own instance of every backend through
 * a random alloc/free sequence and checks contents and stats (TSan job).
 */
#include "test.h"

#include <ruma/alloc.h>

#include <pthread.h>

enum { THREADS = 4, SLOTS = 512 };

static const char *const names[] = { "libc", "pool", "mempool", "huge", "huge-thp", "huge-4k" };

typedef struct worker {
	uint64_t seed;
	size_t ops;
	int failed;
} worker;

static int run_one(const char *name, ruma_rng *rng, size_t ops)
{
	ruma_alloc a;
	unsigned char *p[SLOTS] = { 0 };
	size_t sz[SLOTS] = { 0 };

	if (ruma_alloc_create_by_name(name, NULL, &a))
		return 1;
	for (size_t op = 0; op < ops; op++) {
		size_t i = (size_t)ruma_rng_below(rng, SLOTS);
		if (p[i]) {
			for (size_t k = 0; k < sz[i]; k += 97)
				if (p[i][k] != (unsigned char)(i + k))
					return 1;
			ruma_alloc_free(&a, p[i], sz[i]);
			p[i] = NULL;
			continue;
		}
		sz[i] = (size_t)ruma_rng_below(rng, ruma_rng_below(rng, 8) ? 3000 : 100000) + 1;
		p[i] = ruma_alloc_alloc(&a, sz[i], (size_t)8 << ruma_rng_below(rng, 4));
		if (!p[i])
			return 1;
		for (size_t k = 0; k < sz[i]; k += 97)
			p[i][k] = (unsigned char)(i + k);
	}
	for (size_t i = 0; i < SLOTS; i++)
		ruma_alloc_free(&a, p[i], sz[i]);
	ruma_alloc_stats st;
	ruma_alloc_get_stats(&a, &st);
	ruma_alloc_destroy(&a);
	return st.bytes_live != 0 || st.allocs != st.frees;
}

static void *work(void *arg)
{
	worker *w = arg;
	ruma_rng rng;

	ruma_rng_seed(&rng, w->seed);
	for (size_t n = 0; n < TEST_N(names); n++)
		if (run_one(names[n], &rng, w->ops)) {
			fprintf(stderr, "  thread seed %llu: backend %s failed\n",
				(unsigned long long)w->seed, names[n]);
			w->failed = 1;
		}
	return NULL;
}

static int t_instances_per_thread(void)
{
	size_t ops = test_sanitized() ? 5000 : 40000;
	pthread_t th[THREADS];
	worker w[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker){ .seed = ruma_rng_next(&test_rng), .ops = ops };
		CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(!w[i].failed);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "instances_per_thread", t_instances_per_thread },
};

int main(int argc, char **argv)
{
	return test_main("alloc_mt", cases, TEST_N(cases), argc, argv);
}
