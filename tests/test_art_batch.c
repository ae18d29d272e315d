/*
 * test_art_batch.c — ruma_art_u64_lookup_batch against the single lookup
 * ruma_art_u64_lookup: for random, dense, sorted random, clustered (long
 * shared prefixes) and Node48-heavy key sets of n = 0, 1, 2, 1000 and 100000
 * keys, queried with the inserted keys and absent keys mixed in (neighbours,
 * random keys, keys above RUMA_ART_MAX_TID), at every width 1..32 and the
 * out-of-range widths 0 and 33+, every found[] entry and the count must be
 * what the single lookups say; the empty tree and a tree of one leaf; every
 * node type appears; and `ruma art --batch W` (results checked, bad values
 * exit 2) and `ruma sweep art --var batch=...`.
 */
#include <ruma/art.h>

#include "test.h"

enum { D_RANDOM, D_DENSE, D_SORTED, D_CLUSTER, D_N48, D_COUNT };
static const char *const dist_names[D_COUNT] = { "random", "dense", "sorted", "cluster", "n48" };

/* The libc backend, made by main for all cases. */
static ruma_alloc libc_backend;

static const ruma_alloc *libc_alloc(void)
{
	return &libc_backend;
}

static void make_keys(int dist, uint64_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t r = ruma_rng_next(&test_rng);
		switch (dist) {
		case D_RANDOM:
		case D_SORTED:
			keys[i] = r >> 1;
			break;
		case D_DENSE:
			keys[i] = i + 1;
			break;
		case D_CLUSTER: /* six shared bytes, then a few values: prefixes and Node16s */
			keys[i] = UINT64_C(0x0102030405060000) | (r & 0x0f0f);
			break;
		default: /* 40 children per node at the bottom */
			keys[i] = (uint64_t)(i / 40) << 8 | (i % 40) * 6;
			break;
		}
	}
	if (dist == D_SORTED)
		qsort(keys, n, sizeof(uint64_t), test_cmp_u64);
}

/* The inserted keys with absent ones mixed in: 3 queries per key. */
static size_t make_queries(const uint64_t *keys, size_t n, uint64_t *q)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = ruma_rng_next(&test_rng);
		q[m++] = keys[i];
		q[m++] = (r & 3) == 0 ? r : (r & 3) == 1 ? keys[i] ^ 1 : keys[i] + (r >> 62) + 1;
		q[m++] = (r & 4) ? (r >> 1) : r | UINT64_C(1) << 63;
	}
	return m;
}

/* Every width's answers equal the single lookups' (expect[], hits). */
static int check_widths(const ruma_art *t, const uint64_t *q, size_t m, const uint8_t *expect,
			size_t hits, uint8_t *found)
{
	static const unsigned extra[] = { 0, 33, 64, 1000 };
	for (unsigned w = 1; w < 32 + 1 + TEST_N(extra); w++) {
		unsigned width = w <= 32 ? w : extra[w - 33];
		memset(found, 0xaa, m ? m : 1);
		size_t got = ruma_art_u64_lookup_batch(t, q, m, width, found);
		if (got != hits || (m && memcmp(found, expect, m) != 0)) {
			fprintf(stderr, "  width %u: %zu found, single lookups %zu\n", width, got, hits);
			return TEST_FAIL;
		}
		CHECK_EQ(ruma_art_u64_lookup_batch(t, q, m, width, NULL), hits);
	}
	return TEST_PASS;
}

static int run_dist(int dist, size_t n, ruma_art_stats *st)
{
	ruma_art_options o = { RUMA_ART_U64, libc_alloc(), NULL, NULL };
	uint64_t *keys = malloc((n ? n : 1) * sizeof(uint64_t));
	uint64_t *q = malloc((3 * n + 1) * sizeof(uint64_t));
	uint8_t *expect = malloc(3 * n + 1), *found = malloc(3 * n + 1);
	ruma_art *t;
	int r = TEST_FAIL;

	if (!keys || !q || !expect || !found)
		goto out;
	make_keys(dist, keys, n);
	if (ruma_art_create(&o, &t) != 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (ruma_art_u64_insert(t, keys[i]) < 0)
			goto out_tree;
	size_t m = make_queries(keys, n, q), hits = 0;
	for (size_t i = 0; i < m; i++) {
		expect[i] = ruma_art_u64_lookup(t, q[i]) == 0;
		hits += expect[i];
	}
	ruma_art_get_stats(t, st);
	r = check_widths(t, q, m, expect, hits, found);
	if (r == TEST_PASS && n)
		r = hits >= n ? TEST_PASS : TEST_FAIL; /* every inserted key was found */
	if (r != TEST_PASS)
		fprintf(stderr, "  %s keys, n = %zu\n", dist_names[dist], n);
out_tree:
	ruma_art_destroy(t);
out:
	free(keys);
	free(q);
	free(expect);
	free(found);
	return r;
}

static int t_batch_equals_single(void)
{
	static const size_t sizes[] = { 0, 1, 2, 1000, 100000 };
	uint64_t types[4] = { 0 };

	for (int d = 0; d < D_COUNT; d++)
		for (size_t s = 0; s < TEST_N(sizes); s++) {
			ruma_art_stats st;
			CHECK_EQ(run_dist(d, sizes[s], &st), TEST_PASS);
			types[0] += st.node4;
			types[1] += st.node16;
			types[2] += st.node48;
			types[3] += st.node256;
		}
	for (int i = 0; i < 4; i++)
		CHECK(types[i] > 0); /* every node type was walked */
	return TEST_PASS;
}

static int t_empty_and_one_leaf(void)
{
	ruma_art_options o = { RUMA_ART_U64, libc_alloc(), NULL, NULL };
	uint64_t q[3] = { 42, 43, 0 };
	uint8_t found[3];
	ruma_art *t;

	CHECK_OK(ruma_art_create(&o, &t));
	for (unsigned w = 0; w <= 33; w++) {
		memset(found, 0xaa, sizeof(found));
		CHECK_EQ(ruma_art_u64_lookup_batch(t, q, 3, w, found), 0);
		CHECK(found[0] == 0 && found[1] == 0 && found[2] == 0);
		CHECK_EQ(ruma_art_u64_lookup_batch(t, NULL, 0, w, NULL), 0);
	}
	CHECK_EQ(ruma_art_u64_insert(t, 42), 0); /* the root is a leaf */
	for (unsigned w = 0; w <= 33; w++) {
		memset(found, 0xaa, sizeof(found));
		CHECK_EQ(ruma_art_u64_lookup_batch(t, q, 3, w, found), 1);
		CHECK(found[0] == 1 && found[1] == 0 && found[2] == 0);
	}
	CHECK_EQ(ruma_art_u64_insert(t, 0), 0); /* a Node4 with a 7-byte prefix */
	for (unsigned w = 0; w <= 33; w++) {
		memset(found, 0xaa, sizeof(found));
		CHECK_EQ(ruma_art_u64_lookup_batch(t, q, 3, w, found), 2);
		CHECK(found[0] == 1 && found[1] == 0 && found[2] == 1);
	}
	ruma_art_destroy(t);
	return TEST_PASS;
}

static int t_cli_batch(void)
{
	char *out = NULL, *err = NULL;
	for (int mode = 0; mode < 4; mode++) {
		char ms[2] = { (char)('0' + mode), '\0' };
		char *argv[] = { "ruma", "art", "5000", ms, "--lookups", "20000", "--batch", "16", NULL };
		int st = test_run_cli(argv, &out, &err);
		if (st != 0)
			fprintf(stderr, "  stderr: %s\n", err ? err : "");
		CHECK_EQ(st, 0);
		CHECK(out && strstr(out, "lookup,5000,"));
		CHECK(err && strstr(err, mode == 3 ? "not batched" : "batched, width 16"));
		free(out);
		free(err);
	}
	char *plain[] = { "ruma", "art", "1000", "2", "--lookups", "2000", NULL };
	CHECK_EQ(test_run_cli(plain, &out, &err), 0);
	CHECK(err && !strstr(err, "batched"));
	free(out);
	free(err);
	static const char *const bad[] = { "x", "-1", "33", "1000", "" };
	for (size_t i = 0; i < TEST_N(bad); i++) {
		char *argv[] = { "ruma", "art", "100", "2", "--batch", (char *)bad[i], NULL };
		CHECK_EQ(test_run_cli(argv, &out, &err), 2);
		CHECK(err && strstr(err, "--batch"));
		free(out);
		free(err);
	}
	char *missing[] = { "ruma", "art", "100", "2", "--batch", NULL };
	CHECK_EQ(test_run_cli(missing, &out, &err), 2);
	free(out);
	free(err);
	return TEST_PASS;
}

/* `ruma sweep art --var batch=...` passes the width on: an out-of-range
 * width is refused before the first run (exit 2, nothing measured), a valid
 * one measures. */
static int t_sweep_batch(void)
{
	char csv[] = "/tmp/ruma-test-artbatch-XXXXXX";
	int fd = mkstemp(csv);
	char *text;

	CHECK(fd >= 0);
	close(fd);
	char *bad[] = { "ruma", "sweep", "art", "--var", "batch=8,99", "--size", "n=2000",
			"--set", "mode=2", "--set", "lookups=4000", "--reps", "1", "--warmup",
			"0", "--quiet", "--force", "--out", csv, NULL };
	CHECK_EQ(test_run_cli(bad, NULL, NULL), 2); /* batch=99 refused up front */
	text = test_slurp(csv);
	CHECK(text != NULL);
	CHECK(strstr(text, "art,batch=8,") == NULL); /* nothing ran */
	free(text);
	char *good[] = { "ruma", "sweep", "art", "--var", "batch=8", "--size", "n=2000",
			 "--set", "mode=2", "--set", "lookups=4000", "--reps", "1", "--warmup",
			 "0", "--quiet", "--force", "--out", csv, NULL };
	CHECK_EQ(test_run_cli(good, NULL, NULL), 0);
	text = test_slurp(csv);
	unlink(csv);
	CHECK(text != NULL);
	bool ok8 = false;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, "art,batch=8,", 12) && strstr(line, ",lookup,Mops,") &&
		    strstr(line, ",ok,"))
			ok8 = true;
	free(text);
	CHECK(ok8);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "batch_equals_single", t_batch_equals_single },
	{ "empty_and_one_leaf", t_empty_and_one_leaf },
	{ "cli_batch", t_cli_batch },
	{ "sweep_batch", t_sweep_batch },
};

int main(int argc, char **argv)
{
	if (ruma_alloc_create_by_name("libc", NULL, &libc_backend) != 0)
		return 1;
	int rc = test_main("art_batch", cases, TEST_N(cases), argc, argv);
	ruma_alloc_destroy(&libc_backend);
	return rc;
}
