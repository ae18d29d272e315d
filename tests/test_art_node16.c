/*
 * test_art_node16.c — the Node16 search of the ART: the SSE2 and the
 * portable versions agree on every count of equal and smaller bytes, and
 * the node search compiled with the portable fallback (RUMA_ART_NO_SIMD, as
 * on a machine without SSE2) finds every key of trees built by the library
 * (and reports absent keys absent) for dense and sparse keys.
 */
#define RUMA_ART_NO_SIMD 1 /* the inline searches of node.h in this file: portable */
#include "art/node.h"

#include "test.h"

/* ---- Node16 search: SSE2 against the portable loop -------------------------------- */

static int t_n16_search(void)
{
#ifdef __SSE2__
	uint8_t keys[16];
	for (int round = 0; round < 20000; round++) {
		unsigned distinct = (unsigned)ruma_rng_below(&test_rng, 4) == 0 ? 3 : 256;
		for (int i = 0; i < 16; i++)
			keys[i] = (uint8_t)(ruma_rng_below(&test_rng, distinct) * (256 / distinct));
		uint8_t fb = round < 256 ? (uint8_t)round : keys[ruma_rng_below(&test_rng, 16)];
		if (round >= 256 && ruma_rng_below(&test_rng, 2))
			fb = (uint8_t)ruma_rng_next(&test_rng);
		CHECK_EQ(art_n16_eq_sse2(keys, fb), art_n16_eq_portable(keys, fb));
		CHECK_EQ(art_n16_lt_sse2(keys, fb), art_n16_lt_portable(keys, fb));
	}
	return TEST_PASS;
#else
	return TEST_SKIP;
#endif
}

/* Walks down a tree built by the library with this file's (portable) search. */
static art_ref portable_find(const ruma_art *t, uint64_t key)
{
	art_ref r = t->root;
	unsigned depth = 0;
	while (r && !art_is_leaf(r)) {
		const art_node *n = art_as_node(r);
		depth += n->prefix_len;
		r = art_node_child(n, (uint8_t)(key >> (56 - 8 * depth)));
		depth++;
	}
	return r;
}

static int t_portable_search(void)
{
	ruma_alloc a;
	ruma_art_options o = { RUMA_ART_U64, &a, NULL, NULL };
	ruma_art *t;
	size_t n = test_sanitized() ? 3000 : 20000;
	uint64_t *keys = malloc(n * sizeof(uint64_t));
	int r = TEST_PASS;

	CHECK(keys);
	CHECK_OK(ruma_alloc_create_by_name("libc", NULL, &a));
	static const char *const dist_names[] = { "dense", "sparse", "16 x 16" };
	for (int d = 0; d < 3 && r == TEST_PASS; d++) {
		size_t in = 0;
		for (size_t i = 0; i < n; i++)
			keys[i] = d == 0 ? i + 1 : d == 1 ? ruma_rng_next(&test_rng) >> 1 : ruma_rng_next(&test_rng) & 0x0f0f;
		CHECK_OK(ruma_art_create(&o, &t));
		/* grow to each size (a Node16 appears when a node has 5..16 children) */
		for (size_t i = 0; i < n; i++)
			in += ruma_art_u64_insert(t, keys[i]) == 0;
		ruma_art_stats st;
		ruma_art_get_stats(t, &st);
		for (size_t i = 0; i < n && r == TEST_PASS; i++)
			if (portable_find(t, keys[i]) != (keys[i] << 1 | 1))
				r = TEST_FAIL;
		for (size_t i = 0; i < n && r == TEST_PASS; i++) {
			uint64_t k = keys[i] ^ 0x10; /* present or absent */
			bool portable = portable_find(t, k) == (k << 1 | 1);
			if (portable != (ruma_art_u64_lookup(t, k) == 0))
				r = TEST_FAIL;
		}
		ruma_art_destroy(t);
		if (r != TEST_PASS)
			fprintf(stderr, "  portable search missed a key (%s)\n", dist_names[d]);
		else if (d == 2)
			CHECK(st.node16 > 0);
		CHECK(in > 0);
	}
	ruma_alloc_destroy(&a);
	free(keys);
	return r;
}

static const struct test_case cases[] = {
	{ "n16_search", t_n16_search },
	{ "portable_search", t_portable_search },
};

int main(int argc, char **argv)
{
	return test_main("art_node16", cases, TEST_N(cases), argc, argv);
}
