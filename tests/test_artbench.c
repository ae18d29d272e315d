/*
 * test_artbench.c — the `ruma art` driver: key generation per mode (sorted,
 * a seeded permutation, distinct sparse keys), the output lines, and that a
 * wrong lookup result or a non-empty index after erase makes the run fail;
 * the command line (artbench_parse: values, ranges, the messages) and the
 * --result rows (one per operation and repetition).
 */
#include "bench/art/artbench.h"

#include "test.h"

#include <stdarg.h>

static int t_keys(void)
{
	artbench_keys k, again;
	size_t n = 5000;

	CHECK_OK(artbench_make_keys(ARTBENCH_DENSE_SORTED, n, 1, &k));
	for (size_t i = 0; i < n; i++)
		CHECK(k.keys[i] == i + 1 && artbench_tid(&k, i) == i + 1);
	artbench_free_keys(&k);

	CHECK_OK(artbench_make_keys(ARTBENCH_DENSE_SHUFFLED, n, 7, &k));
	CHECK_OK(artbench_make_keys(ARTBENCH_DENSE_SHUFFLED, n, 7, &again));
	CHECK(memcmp(k.keys, again.keys, n * sizeof(uint64_t)) == 0); /* seeded */
	size_t moved = 0;
	for (size_t i = 0; i < n; i++)
		moved += k.keys[i] != i + 1;
	CHECK(moved > n / 2);
	qsort(k.keys, n, sizeof(uint64_t), test_cmp_u64);
	for (size_t i = 0; i < n; i++)
		CHECK(k.keys[i] == i + 1); /* a permutation of 1..n */
	artbench_free_keys(&k);
	artbench_free_keys(&again);

	/* mode 2: Leis's keys, (rand() << 32) | rand() after srand(seed), key = TID */
	CHECK_OK(artbench_make_keys(ARTBENCH_SPARSE, n, 1, &k));
	CHECK(!k.tid_is_row);
	srand(1);
	for (size_t i = 0; i < n; i++) {
		uint64_t hi = (uint64_t)rand();
		uint64_t want = hi << 32 | (uint64_t)rand();
		CHECK(k.keys[i] == want && artbench_tid(&k, i) == want);
	}
	CHECK_EQ(k.keys[0], UINT64_C(0x6b8b4567327b23c6)); /* glibc's first two rand() values */
	CHECK_EQ(k.duplicates_replaced, 0);
	artbench_free_keys(&k);
	CHECK_OK(artbench_make_keys(ARTBENCH_SPARSE, n, 9, &k));
	srand(9);
	CHECK_EQ(k.keys[0], artbench_leis_key());
	artbench_free_keys(&k);

	/* mode 3: distinct keys using all 64 bits, TID = row */
	CHECK_OK(artbench_make_keys(ARTBENCH_SPARSE64, n, 3, &k));
	CHECK(k.tid_is_row);
	CHECK_EQ(artbench_tid(&k, 17), 17);
	uint64_t top = 0;
	for (size_t i = 0; i < n; i++)
		top |= k.keys[i];
	CHECK(top >> 63); /* all 64 bits are used */
	qsort(k.keys, n, sizeof(uint64_t), test_cmp_u64);
	for (size_t i = 1; i < n; i++)
		CHECK(k.keys[i] != k.keys[i - 1]);
	artbench_free_keys(&k);
	CHECK_EQ(artbench_make_keys(4, n, 3, &k), -EINVAL);
	return TEST_PASS;
}

/* Mode 1 is libstdc++'s std::random_shuffle with rand(): for 10 keys after
 * srand(1) the permutation g++ gives (checked against std::random_shuffle). */
static int t_leis_shuffle(void)
{
	static const uint64_t want[10] = { 5, 4, 8, 9, 1, 6, 3, 2, 7, 10 };
	artbench_keys k;

	CHECK_OK(artbench_make_keys(ARTBENCH_DENSE_SHUFFLED, 10, 1, &k));
	for (size_t i = 0; i < 10; i++)
		CHECK_EQ(k.keys[i], want[i]);
	artbench_free_keys(&k);
	return TEST_PASS;
}

/* The ART index with a lookup that lies about one key. */
static int lying_lookup(void *self, uint64_t key, uint64_t *tid)
{
	int rc = artbench_art_index.lookup(self, key, tid);
	if (rc == 0 && key == 3)
		(*tid)++;
	return rc;
}

/* The ART index whose erase forgets one key. */
static int forgetful_erase(void *self, uint64_t key)
{
	return key == 5 ? 0 : artbench_art_index.erase(self, key);
}

/* The ART index's whole-phase loops, one of them miscounting: each phase
 * must catch a wrong answer on the direct-call path too. */
static uint64_t lookup_keys_missing_one(void *self, const uint64_t *keys, size_t n)
{
	return artbench_art_index.lookup_keys(self, keys, n) + 1;
}

static uint64_t erase_keys_keeping_last(void *self, const uint64_t *keys, size_t n)
{
	return artbench_art_index.erase_keys(self, keys, n - 1);
}

static char *run_to_string(const artbench_config *cfg, const artbench_index *idx, int *rc)
{
	FILE *out = tmpfile(), *err = fopen("/dev/null", "w");
	char *buf = NULL;
	if (!out || !err)
		return NULL;
	*rc = artbench_measure(cfg, idx, out, err, NULL);
	long len = ftell(out);
	rewind(out);
	buf = calloc(1, (size_t)len + 1);
	if (buf && fread(buf, 1, (size_t)len, out) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	fclose(out);
	fclose(err);
	return buf;
}

static int t_run(void)
{
	artbench_config cfg = { 1000, ARTBENCH_DENSE_SHUFFLED, "libc", 3, 5, 5000, 0 };
	int rc;
	char *out = run_to_string(&cfg, &artbench_art_index, &rc);

	CHECK(out);
	CHECK_EQ(rc, 0);
	CHECK_HAS(out, "insert,1000,", "lookup,1000,", "erase,1000,", "faults,insert,minor=",
		  "memory,erase,rss=", "summary,lookup,1000,reps=2,median=");
	free(out);

	/* every mode (mode 3 switches to the TID-mode index) */
	for (int mode = 0; mode < ARTBENCH_NMODES; mode++) {
		artbench_config c = { 3000, mode, "libc", 1, 1, 6000, 0 };
		out = run_to_string(&c, &artbench_art_index, &rc);
		CHECK(out);
		CHECK_EQ(rc, 0);
		CHECK(strstr(out, "erase,3000,"));
		free(out);
	}

	/* the per-key path (the whole-phase loops off) */
	artbench_index bad = artbench_art_index;
	bad.insert_keys = NULL;
	bad.lookup_keys = NULL;
	bad.erase_keys = NULL;
	bad.lookup = lying_lookup;
	cfg.reps = 1;
	out = run_to_string(&cfg, &bad, &rc);
	CHECK_EQ(rc, 1);
	free(out);

	bad.lookup = artbench_art_index.lookup;
	bad.erase = forgetful_erase;
	out = run_to_string(&cfg, &bad, &rc);
	CHECK_EQ(rc, 1);
	free(out);

	/* the per-key path gives the same results as the loops */
	bad.erase = artbench_art_index.erase;
	out = run_to_string(&cfg, &bad, &rc);
	CHECK_EQ(rc, 0);
	free(out);

	/* the whole-phase loops */
	bad = artbench_art_index;
	bad.lookup_keys = lookup_keys_missing_one;
	out = run_to_string(&cfg, &bad, &rc);
	CHECK_EQ(rc, 1);
	free(out);

	bad = artbench_art_index;
	bad.erase_keys = erase_keys_keeping_last;
	out = run_to_string(&cfg, &bad, &rc);
	CHECK_EQ(rc, 1);
	free(out);
	return TEST_PASS;
}

/* artbench_parse of the NULL-terminated arguments after "art"; err gets the message. */
static int art_parse(artbench_opts *o, char *err, size_t len, ...)
{
	TEST_VA_ARGV(argv, argc, "art", len);
	return artbench_parse(argc, argv, NULL, o, err, len);
}

static int t_parse(void)
{
	artbench_opts o;
	char err[512];

	CHECK_OK(art_parse(&o, err, sizeof(err), "1e3", "2", "--alloc", "pool", "--reps", "3",
			   "--seed=9", "--lookups", "500", "--batch", "8", "--result", "r.csv", NULL));
	CHECK(o.cfg.n == 1000 && o.cfg.mode == 2 && !strcmp(o.cfg.alloc_name, "pool"));
	CHECK(o.cfg.reps == 3 && o.cfg.seed == 9 && o.cfg.lookups == 500 && o.cfg.batch == 8);
	CHECK(!strcmp(o.result, "r.csv") && !o.help);
	CHECK_OK(art_parse(&o, err, sizeof(err), "10", "1", NULL)); /* the defaults */
	CHECK(!strcmp(o.cfg.alloc_name, "libc") && o.cfg.reps == 1 && o.cfg.seed == 1);
	CHECK(o.cfg.lookups == 10000000 && o.cfg.batch == 0 && o.result == NULL);
	CHECK_OK(art_parse(&o, err, sizeof(err), "--help", "--bogus", NULL));
	CHECK(o.help);
	static const struct {
		const char *a[4], *msg;
	} bad[] = {
		{ { "10", NULL }, "ruma art: need <n> and <mode>\n" },
		{ { "10", "1", "--reps", NULL }, "ruma art: missing value for option: '--reps'\n" },
		{ { "10", "1", "--reps", "0" }, "ruma art: --reps must be 1..1000: '0'\n" },
		{ { "10", "1", "--batch", "33" }, "ruma art: --batch must be 0..32: '33'\n" },
		{ { "10", "1", "--lookups", "0" }, "ruma art: --lookups must be > 0: '0'\n" },
		{ { "10", "1", "--seed", "x" }, "ruma art: not a non-negative integer: 'x'\n" },
		{ { "10", "1", "--seed", "1e30" }, "ruma art: number larger than 2^64 - 1: '1e30'\n" },
		{ { "10", "1", "--bogus", NULL }, "ruma art: unknown option: '--bogus'\n" },
		{ { "10", "1", "2", NULL }, "ruma art: too many arguments: '2'\n" },
		{ { "0", "1", NULL }, "ruma art: n must be a positive integer: '0'\n" },
		{ { "10", "4", NULL }, "ruma art: mode must be 0, 1, 2 or 3: '4'\n" },
		{ { "10", "1", "--result", "" }, "ruma art: a file name: ''\n" },
	};
	for (size_t i = 0; i < TEST_N(bad); i++) {
		int rc = art_parse(&o, err, sizeof(err), bad[i].a[0], bad[i].a[1], bad[i].a[2],
				   bad[i].a[3], NULL);
		if (rc != RUMA_EPARSE || strcmp(err, bad[i].msg) || !o.usage_after) {
			fprintf(stderr, "  case %zu: rc %d, message '%s'\n", i, rc, err);
			return TEST_FAIL;
		}
	}
	CHECK(art_parse(&o, err, sizeof(err), "10", "1", "--alloc", "nope", NULL) == RUMA_EPARSE);
	CHECK(!strncmp(err, "ruma art: unknown allocator (libc", 33));
	return TEST_PASS;
}

/* artbench_measure of cfg over the ART with --result rows, read back into *rows */
static int measure_rows(const artbench_config *cfg, ruma_result_row **rows, size_t *n)
{
	char path[] = "/tmp/test_artbench_XXXXXX";
	int fd = mkstemp(path);
	FILE *out = fopen("/dev/null", "w");
	ruma_result res;

	CHECK(fd >= 0 && out);
	close(fd);
	CHECK_OK(ruma_result_open(&res, path));
	CHECK_OK(artbench_measure(cfg, &artbench_art_index, out, out, &res));
	CHECK_OK(ruma_result_close(&res));
	fclose(out);
	CHECK_OK(ruma_result_read(path, rows, n));
	unlink(path);
	return TEST_PASS;
}

static int t_result_rows(void)
{
	artbench_config cfg = { 500, ARTBENCH_DENSE_SORTED, "libc", 2, 1, 1000, 0 };
	char rep[8];
	int insert = 0, lookup = 0, erase = 0;
	ruma_result_row *rows;
	size_t n;

	CHECK_EQ(measure_rows(&cfg, &rows, &n), TEST_PASS);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].unit, "Mops"))
			continue;
		CHECK(rows[i].value > 0);
		CHECK(ruma_result_param(&rows[i], "rep", rep, sizeof(rep)));
		insert += !strcmp(rows[i].metric, "insert");
		lookup += !strcmp(rows[i].metric, "lookup");
		erase += !strcmp(rows[i].metric, "erase");
	}
	free(rows);
	CHECK(insert == 2 && lookup == 2 && erase == 2); /* one per repetition */
	return TEST_PASS;
}

/* Where the huge-page allocator got its pages is a note row of the result
 * file (what `ruma sweep` keeps as the note), once per source. */
static int t_alloc_note_row(void)
{
	artbench_config cfg = { 500, ARTBENCH_DENSE_SORTED, "huge", 3, 1, 1000, 0 };
	char note[512];
	int notes = 0;
	ruma_result_row *rows;
	size_t n;

	CHECK_EQ(measure_rows(&cfg, &rows, &n), TEST_PASS);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].unit, "note"))
			continue;
		CHECK(!strcmp(rows[i].metric, "alloc_source"));
		CHECK(ruma_result_param(&rows[i], "note", note, sizeof(note)));
		CHECK(!strncmp(note, "huge allocator: pages from ", 27));
		notes++;
	}
	free(rows);
	CHECK(notes >= 1 && notes <= 3); /* one per source, not one per repetition */
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "keys", t_keys },
	{ "leis_shuffle", t_leis_shuffle },
	{ "run", t_run },
	{ "parse", t_parse },
	{ "result_rows", t_result_rows },
	{ "alloc_note_row", t_alloc_note_row },
};

int main(int argc, char **argv)
{
	return test_main("artbench", cases, TEST_N(cases), argc, argv);
}
