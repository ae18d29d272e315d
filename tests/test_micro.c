/*
 * test_micro.c — `ruma micro` end to end through the CLI: the original README's example
 * output format, every method with every test type that fits it (with
 * --verify, and the printed //total= checksums against values computed here),
 * invalid combinations and bad input (exit 2 with a reason), huge-page
 * methods (run, refused with a message naming nr_hugepages, or --fallback),
 * `detailed` lines, the output file and the summary table.
 */
#include "test.h"
#include "os/os.h"
#include "bench/micro/micro.h"

#include <ruma/area.h>
#include <ruma/anon.h>
#include <ruma/sysinfo.h>

#include <ctype.h>
#include <stdarg.h>

#define SEED 42u /* the driver's default seed; run r uses SEED + r */


/* Run `ruma micro <args...>` (NULL-terminated); returns the exit status. */
static int micro(char **out, char **err, ...)
{
	char *argv[16];
	int n = 0;
	va_list ap;

	argv[n++] = NULL;
	argv[n++] = (char *)"micro";
	va_start(ap, err);
	for (char *a; n < 15 && (a = va_arg(ap, char *)) != NULL;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return test_run_cli(argv, out, err);
}

/* The //total= values of the output, in order; returns how many. */
static int totals(const char *out, uint64_t *t, int cap)
{
	int k = 0;

	for (const char *p = out; (p = strstr(p, "//total=")) != NULL && k < cap; p += 8)
		t[k++] = strtoull(p + 8, NULL, 10);
	return k;
}

static uint64_t free_huge(void)
{
	ruma_hugepage_pool pool;

	if (ruma_sysinfo_huge_pool(2048, &pool) != 0)
		return 0;
	return pool.all.free > pool.all.reserved ? pool.all.free - pool.all.reserved : 0;
}

static const char *const header =
	"malloc-src, init-malloc-src, malloc-dst, memcpy, shm-src, mmap-src, init-shm-src, "
	"mmap-dst, remap-dst, shm-src-huge, read-seq-src, read-seq-dst, read2-seq-dst, "
	"read-rand-src, read-rand-dst, write-seq-src, write-seq-dst, write-rand-src, "
	"write-rand-dst, write-seq-dst-per-elem, build-histogram, squeeze-area-copy, "
	"squeeze-area-mmap, shm-dst, shm-dst-huge, merge, radix-sort, indirection, "
	"vector-insert, crack-in-place, index-insert, index-access, write2-seq-dst";

/*
 * Parse the summary in text: the method name line, the header, runs rows and
 * the average, 33 numbers each.  rows gets (runs + 1) * 33 values.
 */
static bool parse_summary(const char *text, const char *name, int runs, double *rows)
{
	const char *h = strstr(text, header);

	if (!h)
		return false;
	/* the line before the header is the method name */
	size_t nl = strlen(name);
	if (h - text < (ptrdiff_t)(nl + 1) || strncmp(h - nl - 1, name, nl) != 0 || h[-1] != '\n')
		return false;
	const char *p = h + strlen(header);
	if (*p++ != '\n')
		return false;
	for (int r = 0; r <= runs; r++) {
		for (int f = 0; f < 33; f++) {
			char *end;
			if (!isdigit((unsigned char)*p))
				return false;
			rows[r * 33 + f] = strtod(p, &end);
			/* six decimals */
			const char *dot = strchr(p, '.');
			if (!dot || dot > end || end - dot != 7)
				return false;
			p = end;
			if (f < 32) {
				if (p[0] != ',' || p[1] != ' ')
					return false;
				p += 2;
			} else if (*p++ != '\n') {
				return false;
			}
		}
	}
	return true;
}

/* ---- expected totals ----------------------------------------------------------------------- */

/*
 * The original's urand64() keys, drawn from the C library's own lrand48
 * after srand48(seed) — an independent check of the driver's generator
 * (bench/micro/micro_keys.c): the vector test pushes them, the partitioning
 * methods partition them.
 */
static uint64_t *urand64_keys(size_t n, uint64_t seed)
{
	uint64_t *k = malloc((n ? n : 1) * sizeof(*k));

	srand48((long)seed);
	for (size_t i = 0; k && i < n; i++) {
		uint64_t hi = (uint64_t)lrand48(), md = (uint64_t)lrand48(), lo = (uint64_t)lrand48();
		k[i] = (hi << 42) + (md << 21) + lo;
	}
	return k;
}

static uint64_t urand64_sum(size_t n, uint64_t seed)
{
	uint64_t *k = urand64_keys(n, seed), s = 0;

	for (size_t i = 0; i < n; i++)
		s += k[i];
	free(k);
	return s;
}

static bool is_partition_method(int method)
{
	return (method >= 12 && method <= 21 && method != 15 && method != 16 && method != 20) ||
	       method == 44;
}

/*
 * The source a method reads: random keys for partitioning, zeros for 32 (its
 * mapping is the source: a fresh or zeroed file, or anonymous memory, as the
 * original's), NULL (= 0..n-1) otherwise.
 */
static uint64_t *source_of(int method, size_t n, uint64_t seed)
{
	if (method == 32)
		return calloc(n ? n : 1, sizeof(uint64_t));
	return is_partition_method(method) ? urand64_keys(n, seed) : NULL;
}

/*
 * dst layout of a method over source S (NULL: 0..n-1): value at each logical
 * position, or NULL when it is not fixed.
 */
static uint64_t *layout(int method, size_t n, uint32_t parts, const uint64_t *S)
{
	uint64_t *L = malloc(n * sizeof(*L));
	size_t k = 0;

	if (!L)
		return NULL;
	switch (method) {
	case 6: case 7: case 8: case 9: case 10: case 11: case 15: case 16:
		free(L);
		return NULL; /* shuffled: checked by --verify */
	case 13: case 14: case 18: case 19: case 21:
		free(L);
		return NULL; /* mapped: order inside a partition not promised; --verify checks */
	case 12: case 17: case 44: {
		/* stable partition order, partition(key) = the top log2(P) bits */
		unsigned bits = 0;
		while ((1u << bits) < parts)
			bits++;
		for (uint32_t p = 0; p < parts; p++)
			for (size_t i = 0; i < n; i++)
				if ((bits ? S[i] >> (64 - bits) : 0) == p)
					L[k++] = S[i];
		return L;
	}
	case 40: case 41: case 42:
		/* the allocation methods hand out zeroed memory, as the original */
		memset(L, 0, n * sizeof(*L));
		return L;
	default:
		for (size_t i = 0; i < n; i++)
			L[i] = i;
		return L;
	}
}

/* The sum of a[0..m). */
static uint64_t sum_first(const uint64_t *a, size_t m)
{
	uint64_t s = 0;

	while (m)
		s += a[--m];
	return s;
}

/* The cycle tests 21/22 build (same generator and seed mixing as the driver). */
static void make_cycle(uint64_t *a, size_t n, uint64_t seed)
{
	uint64_t *idx = malloc(n * sizeof(*idx));
	ruma_rng r;

	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	ruma_rng_seed(&r, seed ^ 0x5bd1e995u);
	ruma_rng_shuffle_u64(&r, idx, n);
	for (size_t i = 0; i + 1 < n; i++)
		a[idx[i]] = idx[i + 1];
	a[idx[n - 1]] = idx[0];
	free(idx);
}

/*
 * Expected totals of test `test` with percent pct on a dst whose values are
 * L (NULL: unknown order) and src = 0..n-1.  Returns the count, 0 when the
 * value depends on an order the test does not know.
 */
static int expect(int test, double pct, size_t n, const uint64_t *L, const uint64_t *S,
		  uint64_t seed, uint64_t *e)
{
	size_t m = (size_t)((double)n * (pct / 100.0));
	uint64_t all = S ? sum_first(S, n) : (uint64_t)n * (n - 1) / 2;
	uint64_t written = (uint64_t)n * (n - 1) / 2;
	ruma_rng r;

	if (m > n)
		m = n;
	ruma_rng_seed(&r, seed);
	switch (test) {
	case 1:
		e[0] = S ? sum_first(S, m) : (uint64_t)m * (m - 1) / 2;
		return 1;
	case 3:
		e[0] = 0;
		for (size_t i = 0; i < m; i++) {
			uint64_t j = ruma_rng_below(&r, n);
			e[0] += S ? S[j] : j;
		}
		return 1;
	case 5: case 6:
		e[0] = 0;
		for (size_t i = 0; i < m; i++)
			e[0] += n - 1 - i;
		return 1;
	case 7: case 8:
		e[0] = 0;
		for (size_t i = 0; i < m; i++)
			e[0] += n - 1 - ruma_rng_below(&r, n);
		return 1;
	case 2:
		if (L) {
			e[0] = sum_first(L, m);
			return 1;
		}
		if (pct == 100.0) {
			e[0] = all;
			return 1;
		}
		return 0;
	case 4: case 19:
		if (!L)
			return 0;
		e[0] = 0;
		for (size_t i = 0; i < m; i++)
			e[0] += L[ruma_rng_below(&r, n)];
		return 1;
	case 9:
		e[0] = e[1] = L ? sum_first(L, n) : all;
		return 2;
	case 20:
		e[0] = e[1] = written;
		return 2;
	case 10: case 11: case 12: case 13: case 14:
		e[0] = all;
		return 1;
	case 15:
		e[0] = urand64_sum(n, seed);
		return 1;
	case 18: {
		e[0] = 0;
		if (!L)
			return 0;
		for (size_t i = 0; i < n; i += 512)
			e[0] += L[i];
		return 1;
	}
	case 21: case 22: {
		uint64_t *a = malloc(n * sizeof(*a)), pos = 0;
		make_cycle(a, n, seed);
		e[0] = 0;
		if (test == 21) {
			for (size_t i = 0; i < m; i++)
				e[0] += (pos = a[pos]);
		} else {
			for (size_t i = 0; i < m; i++) {
				pos = ruma_rng_below(&r, n);
				for (int j = 0; j < 5; j++)
					e[0] += (pos = a[pos]);
			}
		}
		free(a);
		return 1;
	}
	case 23:
		e[0] = 0;
		for (size_t i = 0; i < m; i++)
			e[0] += (i + 1) % n;
		return 1;
	}
	return 0;
}

/* ---- the original program's example and output format ------------------------------------ */

static bool starts_with(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static int t_usage(void)
{
	char *out = NULL, *err = NULL;
	int st = micro(&out, &err, NULL);
	int lines = 0;

	CHECK_EQ(st, 2);
	CHECK(out != NULL);
	CHECK(starts_with(out, "Usage: ruma micro <method> <test_type>[(test_parameter)] "
			       "<number_of_entries> <number_of_repetitions> <detailed (true|false)> "
			       "[<output_file>]\nMethods\n1. Memcpy\n"));
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	CHECK_EQ(lines, 58); /* the original's 58 lines */
	CHECK(strstr(out, "\n44. Mremaped partitioning using huge pages\nTest Types\n") != NULL);
	CHECK(strstr(out, "\n23. Read sequential x% dst (x is test_parameter) with dependent "
			  "access.\n") != NULL);
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_seed_example(void)
{
	char *out = NULL, *err = NULL;
	double rows[4 * 33];
	uint64_t t[8];
	int st = micro(&out, &err, "1", "2(100)", "100000", "3", "false", NULL);

	CHECK_EQ(st, 0);
	CHECK(starts_with(out, "Parsing copy method.\nParsing test type.\nNumber of elements = 100000\n"
			       "Number of runs = 3\n\n=============== Run 1 ===============\n"
			       "Traditional memcpy:\n"));
	CHECK_EQ(totals(out, t, 8), 3);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(t[i], 4999950000ull);
	/* phase lines "%f,name", the blank line, tests, cleanup */
	const char *run1 = strstr(out, "Traditional memcpy:\n");
	const char *names[] = { "malloc-src", "init-malloc-src", "malloc-dst", "memcpy" };
	const char *p = run1 + strlen("Traditional memcpy:\n");
	for (int i = 0; i < 4; i++) {
		char *end;
		strtod(p, &end);
		CHECK(end > p && end[-7] == '.' && *end == ',');
		CHECK(strncmp(end + 1, names[i], strlen(names[i])) == 0);
		p = strchr(end, '\n') + 1;
	}
	CHECK(strncmp(p, "\nStarting tests:\n", 17) == 0);
	CHECK(strstr(p, ",read-seq-dst //total=4999950000\nCleanup:\nFreeing malloc-src\n"
			"Freeing malloc-dst\n\n=============== Run 2") != NULL);
	CHECK(strstr(out, "Freeing malloc-dst\n\nTraditional memcpy\nmalloc-src, ") != NULL);
	CHECK(parse_summary(out, "Traditional memcpy", 3, rows));
	for (int r = 0; r < 3; r++) {
		CHECK(rows[r * 33 + 3] > 0.0);   /* memcpy happened */
		CHECK(rows[r * 33 + 11] > 0.0);  /* read-seq-dst happened */
		CHECK(rows[r * 33 + 4] == 0.0);  /* shm-src did not */
	}
	for (int f = 0; f < 33; f++) {
		double avg = (rows[f] + rows[33 + f] + rows[66 + f]) / 3;
		CHECK(rows[99 + f] > avg - 2e-6 && rows[99 + f] < avg + 2e-6);
	}
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_output_file(void)
{
	char path[] = "/tmp/ruma-micro-outXXXXXX";
	int fd = mkstemp(path);
	char *out = NULL, *err = NULL;
	double rows[3 * 33];

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(micro(&out, &err, "2", "9", "8192", "2", "false", path, NULL), 0);
	CHECK(strstr(out, header) == NULL); /* the summary went to the file */
	CHECK(strstr(out, "//total=33550336") != NULL);
	char *file = test_slurp(path);
	CHECK(file != NULL);
	CHECK(parse_summary(file, "COW memcpy", 2, rows));
	CHECK(rows[7] > 0.0 && rows[33 + 7] > 0.0); /* mmap-dst of both runs */
	unlink(path);
	free(file);
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_detailed(void)
{
	char *out = NULL, *err = NULL;

	CHECK_EQ(micro(&out, &err, "1", "2(100)", "4096", "1", "true", NULL), 0);
	CHECK(strstr(out, ",memcpy\n# rusage minflt=") != NULL);
	CHECK(strstr(out, "\n# perf ") != NULL);
	CHECK(strstr(out, "page-faults=") != NULL);
	CHECK(strstr(out, ",read-seq-dst //total=8386560\n# rusage") != NULL);
	CHECK(strstr(out, "\n# memory rss=") != NULL);
	double rows[2 * 33];
	CHECK(parse_summary(out, "Traditional memcpy", 1, rows));
	free(out);
	free(err);
	return TEST_PASS;
}

/* ---- every method with every fitting test ----------------------------------------------------------- */

struct mspec {
	int id;
	const char *arg;   /* method argument */
	const char *name;
	bool huge;
	uint32_t parts;
	const char *tests;  /* fitting test types, comma separated */
};

static const struct mspec specs[] = {
	{ 1, "1", "Traditional memcpy", false, 0, "1,2,3,4,5,6,7,8,9,18,19,20,21,22,23" },
	{ 2, "2", "COW memcpy", false, 0, "1,2,3,4,5,6,7,8,9,18,19,20,21,22,23" },
	{ 3, "3", "COW memcpy (populated)", false, 0, "1,2,4,6,8,9,20" },
	{ 4, "4", "COW memcpy (huge_pages)", true, 0, "2,4,6,9" },
	{ 5, "5", "COW memcpy (huge_pages, populated)", true, 0, "2,6" },
	{ 6, "6(2)", "COW memcpy shuffled", false, 0, "1,2,3,4,5,6,7,8,9,18,19,20,21,22,23" },
	{ 7, "7(1)", "COW memcpy shuffled (populated)", false, 0, "2,4,6,8,9" },
	{ 8, "8(1)", "COW memcpy shuffled (huge_pages)", true, 0, "2,4,8" },
	{ 9, "9(1)", "COW memcpy shuffled (huge_pages, populated)", true, 0, "2,6" },
	{ 10, "10(4,1)", "Traditional memcpy shuffled", false, 0, "1,2,4,6,8,9,19,20,21" },
	{ 11, "11(1,0)", "Traditional memcpy shuffled (huge_pages)", false, 0, "2,4" },
	{ 12, "12(16,1,1)", "Traditional partitioning with histogram", false, 16,
	  "1,2,3,4,5,6,7,8,9,10,11,12,13,14,19,20" },
	{ 13, "13(8,2)", "Mapped partitioning without histogram", false, 8,
	  "1,2,4,6,9,10,11,12,13,14,19,20" },
	{ 14, "14(4,1)", "Mapped partitioning without histogram (huge_pages)", true, 4, "2,12,13" },
	{ 17, "17(16,1)", "Traditional partitioning with block-chains", false, 16,
	  "1,3,5,7,10,11,12,13,14,19" },
	{ 18, "18(32,1)", "Mapped partitioning with block-chains", false, 32,
	  "1,2,4,6,8,9,10,11,12,13,14,19,20" },
	{ 19, "19(4,1)", "Mapped partitioning with block-chains (hugepages)", true, 4, "2,13" },
	{ 20, "20", "Mix huge and small pages", false, 0, "2,4,6,8,9,18,19,20,21,22,23" },
	{ 21, "21(8)", "Mapped partitioning with block-chains (adaptive block sizes)", true, 8,
	  "1,10,11,12,13,14,19" },
	{ 21, "21(8,1)", "Mapped partitioning with block-chains (adaptive block sizes)", false, 8,
	  "1,2,4,9,10,11,12,13,14,19" },
	{ 22, "22", "Rewired vector", false, 0, "15" },
	{ 23, "23", "Rewired vector (hugepages)", true, 0, "15" },
	{ 24, "24", "STL Vector", false, 0, "15" },
	{ 30, "30", "Rewired vector (prepopulate)", false, 0, "15" },
	{ 31, "31", "Rewired vector (hugepages, prepopulate)", true, 0, "15" },
	{ 32, "32(0,1,1,1,1,1,0)", "Map and Populate", false, 0, "1,3,5,7" },
	{ 32, "32(0,1,0,1,0,1,1)", "Map and Populate", false, 0, "1,3,5,7" },
	{ 32, "32(0,0,1,0,0,0,1)", "Map and Populate", false, 0, "1,5" },
	{ 32, "32(0,0,0,1,1,0,0)", "Map and Populate", false, 0, "3,7" },
	{ 32, "32(0,1,1,1,0,0,0)", "Map and Populate", false, 0, "1,3,5,7" },
	{ 36, "36", "Mremaped vector", false, 0, "15" },
	{ 37, "37", "Mremaped vector (huge pages)", false, 0, "15" },
	{ 40, "40(0,0)", "Allocation Rewiring (Pool)", false, 0, "2,4,6,9,20,21" },
	{ 40, "40(0,1)", "Allocation Rewiring (Pool)", false, 0, "2,4,6,9,20,21" },
	{ 41, "41(0,0)", "Allocation Software Indirection (Pool)", false, 0, "2,4,20,21" },
	{ 41, "41(0,1)", "Allocation Software Indirection (Pool)", false, 0, "2,4,20,21" },
	{ 42, "42(0)", "Allocation Mmap", false, 0, "2,4,6,9,20,21" },
	{ 42, "42(1)", "Allocation Mmap", true, 0, "2,9" },
	{ 43, "43", "Software Indirection Vector (hugepages)", true, 0, "15" },
	{ 44, "44(4,1)", "Mremaped partitioning (hugepages)", true, 4, "1,10,11,12,13,14,19" },
};

static const char *test_arg(int t, char *buf, size_t len, double *pct)
{
	*pct = 100.0;
	switch (t) {
	case 1: case 3: case 5: case 7: case 19:
		*pct = 50.0;
		snprintf(buf, len, "%d(50)", t);
		break;
	case 2: case 4: case 6: case 8: case 21: case 23:
		*pct = 75.0;
		snprintf(buf, len, "%d(75)", t);
		break;
	case 22:
		*pct = 10.0;
		snprintf(buf, len, "22(10,5)");
		break;
	case 18:
		snprintf(buf, len, "18(0)");
		break;
	default:
		snprintf(buf, len, "%d", t);
	}
	return buf;
}

/* Run one method with all its tests; huge methods may be skipped or refused. */
static int run_spec(const struct mspec *s, size_t n, int *ran)
{
	char nbuf[32];
	uint64_t *S = source_of(s->id, n, SEED);
	uint64_t *L = layout(s->id, n, s->parts, S);

	snprintf(nbuf, sizeof(nbuf), "%zu", n);
	for (const char *tp = s->tests; *tp;) {
		int t = (int)strtol(tp, (char **)&tp, 10);
		char targ[32], *out = NULL, *err = NULL;
		double pct, rows[2 * 33];
		uint64_t got[4], want[4];

		if (*tp == ',')
			tp++;
		test_arg(t, targ, sizeof(targ), &pct);
		int st = micro(&out, &err, "--verify", (char *)s->arg, targ, nbuf, "1", "false", NULL);
		if (s->huge && st == 1 && err && strstr(err, "nr_hugepages")) {
			/* refused for lack of huge pages: retry with --fallback */
			free(out);
			free(err);
			st = micro(&out, &err, "--verify", "--fallback", (char *)s->arg, targ, nbuf, "1",
				   "false", NULL);
			if (st == 0 && !(err && strstr(err, "falling back"))) {
				fprintf(stderr, "  method %s: --fallback did not say it fell back\n", s->arg);
				st = -1;
			}
		}
		if (st != 0) {
			fprintf(stderr, "  method %s test %s n=%zu: exit %d\n%s\n", s->arg, targ, n, st,
				err ? err : "");
			free(out);
			free(err);
			free(L);
			free(S);
			return TEST_FAIL;
		}
		int ng = totals(out, got, 4);
		int ne = expect(t, pct, n, L, S, SEED, want);
		if (ne && (ng != ne || memcmp(got, want, (size_t)ne * sizeof(uint64_t)) != 0)) {
			fprintf(stderr, "  method %s test %s: total %llu, expected %llu (%d/%d totals)\n",
				s->arg, targ, (unsigned long long)got[0], (unsigned long long)want[0],
				ng, ne);
			free(out);
			free(err);
			free(L);
			free(S);
			return TEST_FAIL;
		}
		if (!parse_summary(out, s->name, 1, rows)) {
			fprintf(stderr, "  method %s test %s: summary does not parse\n", s->arg, targ);
			free(out);
			free(err);
			free(L);
			free(S);
			return TEST_FAIL;
		}
		(*ran)++;
		free(out);
		free(err);
	}
	free(L);
	free(S);
	return TEST_PASS;
}

static int run_specs(int lo, int hi)
{
	size_t n = test_sanitized() ? 8192 : 16384;
	int ran = 0;

	for (size_t i = 0; i < TEST_N(specs); i++) {
		if (specs[i].id < lo || specs[i].id > hi)
			continue;
		int rc = run_spec(&specs[i], n, &ran);
		if (rc != TEST_PASS)
			return rc;
	}
	printf("    %d method/test runs verified\n", ran);
	return TEST_PASS;
}

static int t_methods_copy(void) { return run_specs(1, 11); }
static int t_methods_partition(void) { return run_specs(12, 21); }
static int t_methods_vector_alloc(void) { return run_specs(22, 44); }

/*
 * Partitions that end inside a page: the mapped methods must squeeze them
 * into one contiguous output (--verify checks every key is present once, in
 * its partition, and the segments are back to back).
 */
static int t_partition_unaligned(void)
{
	const char *const ms[] = { "12(4,1,0)", "13(4,1)", "17(4,2)", "18(4,2)", "21(4)", "44(4,1)",
				   "13(16,3)", "18(64,1)", "21(32)", "21(4,1)", "21(32,1)" };
	const char *const ts[] = { "2(100)", "9", "10", "11", "12", "13", "14", "19(50)", "20" };
	const uint64_t all = urand64_sum(5000, SEED); /* the partitioned keys */

	for (size_t i = 0; i < TEST_N(ms); i++) {
		for (size_t j = 0; j < TEST_N(ts); j++) {
			char *out = NULL, *err = NULL;
			uint64_t t[4];
			int st = micro(&out, &err, "--verify", "--fallback", (char *)ms[i], (char *)ts[j],
				       "5000", "1", "false", NULL);
			if (st == 2 && err && strstr(err, "invalid combination")) {
				free(out);
				free(err);
				continue; /* chunked methods have no contiguous dst for 2, 9, 20 */
			}
			if (st != 0) {
				fprintf(stderr, "  %s %s: exit %d: %s\n", ms[i], ts[j], st, err ? err : "");
				free(out);
				free(err);
				return TEST_FAIL;
			}
			int k = totals(out, t, 4);
			CHECK(k >= 1);
			if (j != 7 && j != 8) /* order-independent sums */
				CHECK_EQ(t[0], all);
			free(out);
			free(err);
		}
	}
	return TEST_PASS;
}

/*
 * The partitioning methods the original times report the original's phases,
 * in its order, and nothing else: 21 books no squeeze-area-mmap (wiring its
 * chains into readable chunks after the pass is untimed, as the original
 * maps its blocks after the timed pass).  21(P,1), which the original does
 * not have, books its squeeze into one contiguous output.
 */
static int t_partition_phases(void)
{
	static const struct {
		const char *method, *phases;
	} cs[] = {
		{ "12(8,1,0)", "malloc-src,init-malloc-src,build-histogram,malloc-dst,memcpy," },
		{ "17(8,1)", "malloc-src,init-malloc-src,malloc-dst,memcpy," },
		{ "21(8)", "malloc-src,init-malloc-src,malloc-dst,memcpy," },
		{ "44(8,1)", "malloc-src,init-malloc-src,malloc-dst,memcpy," },
		{ "21(8,1)", "malloc-src,init-malloc-src,malloc-dst,memcpy,squeeze-area-mmap," },
	};

	for (size_t i = 0; i < TEST_N(cs); i++) {
		char *out = NULL, *err = NULL, got[256] = "";
		int st = micro(&out, &err, "--fallback", (char *)cs[i].method, "10", "100000", "1",
			       "false", NULL);
		CHECK_EQ(st, 0);
		/* the phase lines "%f,name" between the method's title and the tests */
		const char *p = strchr(out, ':');
		const char *end = strstr(out, "\nStarting tests:");
		CHECK(p && end);
		for (p = strchr(p, '\n') + 1; p < end; p = strchr(p, '\n') + 1) {
			const char *comma = strchr(p, ',');
			const char *nl = strchr(p, '\n');
			if (comma && comma < nl && strlen(got) + (size_t)(nl - comma) < sizeof(got))
				strncat(got, comma + 1, (size_t)(nl - comma - 1)), strcat(got, ",");
		}
		if (strcmp(got, cs[i].phases)) {
			fprintf(stderr, "  %s: phases %s, expected %s\n", cs[i].method, got, cs[i].phases);
			return TEST_FAIL;
		}
		free(out);
		free(err);
	}
	return TEST_PASS;
}

/*
 * Run `ruma micro method test n 1 false` in this process with stdout to
 * /dev/null, the os layer's counters reset first: TEST_PASS when it ran.
 */
static int micro_in_process(const char *method, const char *test, const char *n)
{
	char *argv[] = { (char *)"micro", (char *)method, (char *)test, (char *)n,
			 (char *)"1", (char *)"false", NULL };
	int saved, devnull, st;
	char err[512];
	micro_opts o;

	fflush(stdout);
	saved = dup(1);
	devnull = open("/dev/null", O_WRONLY);
	CHECK(saved >= 0 && devnull >= 0);
	CHECK(dup2(devnull, 1) == 1);
	ruma_os_count_reset();
	st = micro_parse(6, argv, NULL, &o, err, sizeof(err));
	if (st == 0)
		st = micro_run(&o);
	fflush(stdout);
	CHECK(dup2(saved, 1) == 1);
	close(saved);
	close(devnull);
	CHECK_EQ(st, 0);
	return TEST_PASS;
}

/*
 * Block-chain partitioning (17) carves its blocks from one block pool that
 * is mapped and touched before the timed pass, as the original prefaults
 * its pool: the run maps the pool through the os layer (one mmap) instead
 * of allocating every block inside the pass.  Run in this process (stdout
 * to /dev/null) so that the os layer's counters can be read.
 */
static int t_chains_block_pool(void)
{
	CHECK_EQ(micro_in_process("17(64,1)", "1", "100000"), TEST_PASS);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 1);
	return TEST_PASS;
}

/*
 * Random placement of the rewiring pool (40(0,1)) moves the pool's pages
 * into place (one UFFDIO_MOVE per page, one kernel mapping) where the kernel
 * can: the run issues no mmap per page.
 */
static int t_alloc_random_moves(void)
{
	ruma_rewire_path path;

	ruma_move_probe(&path, NULL);
	if (path != RUMA_REWIRE_UFFD)
		SKIP("the kernel does not move pages (UFFDIO_MOVE)");
	CHECK_EQ(micro_in_process("40(0,1)", "2(100)", "65536"), TEST_PASS);
	/* one move per run of the permutation: about one per page of the 128 */
	uint64_t moves = ruma_os_count(RUMA_SYS_UFFDIO_MOVE);
	CHECK(moves > 64 && moves <= 128);
	CHECK(ruma_os_count(RUMA_SYS_MMAP) < 16);
	return TEST_PASS;
}

static int t_remap_file_pages(void)
{
	char *out = NULL, *err = NULL;
	uint64_t t[2];
	int st = micro(&out, &err, "--verify", "15(2)", "2(100)", "16384", "1", "false", NULL);

	if (st == 1 && err && strstr(err, "remap_file_pages")) {
		free(out);
		free(err);
		SKIP("the kernel refuses remap_file_pages");
	}
	CHECK_EQ(st, 0);
	CHECK_EQ(totals(out, t, 2), 1);
	CHECK_EQ(t[0], 16384ull * 16383 / 2);
	free(out);
	free(err);
	/* writes to the shared dst: verification must still pass */
	CHECK_EQ(micro(NULL, &err, "--verify", "15(1)", "8(50)", "8192", "1", "false", NULL), 0);
	free(err);
	return TEST_PASS;
}

/*
 * The partitioning input is the original's: `Rewiring_Microbench "12(64,1,0)" "2(100)"
 * 1000000 1 false` prints read-seq-dst //total=7779775069554438844 (the sum of its
 * srand48(42) urand64 keys), and so must ruma.  The keys spread over the top bits:
 * each of 64 partitions holds n/64 within 5 %.
 */
static int t_original_keys(void)
{
	char *out = NULL, *err = NULL;
	uint64_t t[2];

	CHECK_EQ(micro(&out, &err, "12(64,1,0)", "2(100)", "1000000", "1", "false", NULL), 0);
	CHECK_EQ(totals(out, t, 2), 1);
	CHECK_EQ(t[0], 7779775069554438844ull);
	free(out);
	free(err);
	uint64_t *k = urand64_keys(1000000, SEED);
	size_t hist[64] = { 0 };
	CHECK(k);
	for (size_t i = 0; i < 1000000; i++)
		hist[k[i] >> 58]++;
	free(k);
	for (int p = 0; p < 64; p++)
		CHECK(hist[p] > 1000000 / 64 * 95 / 100 && hist[p] < 1000000 / 64 * 105 / 100);
	return TEST_PASS;
}

static int t_two_runs_seeds(void)
{
	char *out = NULL, *err = NULL;
	uint64_t t[4], w0 = 0, w1 = 0;

	CHECK_EQ(micro(&out, &err, "--verify", "1", "4(30)", "10000", "2", "false", NULL), 0);
	CHECK_EQ(totals(out, t, 4), 2);
	uint64_t *L = layout(1, 10000, 0, NULL);
	expect(4, 30, 10000, L, NULL, SEED, &w0);
	expect(4, 30, 10000, L, NULL, SEED + 1, &w1);
	CHECK_EQ(t[0], w0);
	CHECK_EQ(t[1], w1);
	free(out);
	free(err);
	CHECK_EQ(micro(&out, &err, "--seed", "7", "1", "4(30)", "10000", "1", "false", NULL), 0);
	CHECK_EQ(totals(out, t, 4), 1);
	expect(4, 30, 10000, L, NULL, 7, &w0);
	CHECK_EQ(t[0], w0);
	free(L);
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_defaults_without_parens(void)
{
	char *err = NULL;

	/* methods given without their parameter list use documented defaults */
	CHECK_EQ(micro(NULL, &err, "--verify", "6", "2", "8192", "1", "false", NULL), 0);
	free(err);
	CHECK_EQ(micro(NULL, &err, "--verify", "12", "13", "8192", "1", "false", NULL), 0);
	free(err);
	CHECK_EQ(micro(NULL, &err, "--verify", "40", "2", "8192", "1", "false", NULL), 0);
	free(err);
	return TEST_PASS;
}

/* The verifier is not vacuous: one changed entry makes the run fail. */
static int t_verifier_catches(void)
{
	const char *const runs[][2] = {
		{ "1", "2(100)" },   { "6(2)", "4(50)" }, { "10(1,0)", "9" },  { "12(16,1,0)", "12" },
		{ "17(8,1)", "11" }, { "18(8,1)", "13" }, { "41(0,1)", "21(100)" }, { "22", "15" },
		{ "40(0,1)", "20" }, { "2", "5(50)" },     { "32(0,0,1,0,0,0,0)", "5(10)" },
	};

	for (size_t i = 0; i < TEST_N(runs); i++) {
		char *err = NULL;
		int st = micro(NULL, &err, "--verify", "--corrupt", (char *)runs[i][0],
			       (char *)runs[i][1], "8192", "1", "false", NULL);
		if (st != 1 || !err || !strstr(err, "verification failed")) {
			fprintf(stderr, "  %s %s --corrupt: exit %d, %s\n", runs[i][0], runs[i][1], st,
				err ? err : "");
			free(err);
			return TEST_FAIL;
		}
		free(err);
	}
	return TEST_PASS;
}

/* ---- invalid combinations and bad input -------------------------------------------------------------- */

static int expect_2(const char *why_substr, const char *m, const char *t, const char *n,
		    const char *r, const char *det)
{
	char *out = NULL, *err = NULL;
	int st = micro(&out, &err, (char *)m, (char *)t, (char *)n, (char *)r, (char *)det, NULL);

	if (st != 2 || !err || !strstr(err, why_substr)) {
		fprintf(stderr, "  '%s %s %s %s %s': exit %d, stderr: %s\n", m, t, n, r, det, st,
			err ? err : "(none)");
		free(out);
		free(err);
		return TEST_FAIL;
	}
	free(out);
	free(err);
	return TEST_PASS;
}

#define EXPECT2(...) CHECK(expect_2(__VA_ARGS__) == TEST_PASS)

static int t_invalid_combos(void)
{
	EXPECT2("method 24 (STL Vector) produces a vector; test 2", "24", "2(100)", "1000", "1",
		"false");
	EXPECT2("needs a vector", "1", "15", "1000", "1", "false");
	EXPECT2("allocation comparison", "40(0,0)", "8(100)", "1000", "1", "false");
	EXPECT2("method 41", "41(0,0)", "6(100)", "1000", "1", "false");
	EXPECT2("method 41", "41(0,0)", "9", "1000", "1", "false");
	EXPECT2("several chunks", "1", "10", "1000", "1", "false");
	EXPECT2("partitions", "2", "13", "1000", "1", "false");
	EXPECT2("destination", "32", "2(100)", "1000", "1", "false");
	EXPECT2("no contiguous destination", "17(4,1)", "2(100)", "1000", "1", "false");
	EXPECT2("a vector", "22", "12", "1000", "1", "false");
	/* pairs Rewiring_Microbench runs: the refusal says what it measured there */
	EXPECT2("reports it as write-seq-src: that is test 5", "32(0,0,0,0,0,0,0)", "18(0)", "1000",
		"1", "false");
	EXPECT2("reports it as write-seq-src", "32(1,1,0,0,0,0,0)", "18(0)", "1000", "1", "false");
	EXPECT2("first merging the block chains", "17(64,1)", "4(50)", "100000", "1", "false");
	/* and the one ruma runs as the original does: dependent sequential reads of an allocation */
	char *out = NULL, *err = NULL;
	CHECK_EQ(micro(&out, &err, "--verify", "40(0,1)", "23(100)", "10000", "1", "false", NULL), 0);
	CHECK(out && strstr(out, "read-seq-dst"));
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_bad_input(void)
{
	EXPECT2("unknown method", "25", "2(100)", "1000", "1", "false");
	EXPECT2("unknown method", "0", "2(100)", "1000", "1", "false");
	EXPECT2("must start with a number", "x", "2(100)", "1000", "1", "false");
	EXPECT2("unknown test type", "1", "16", "1000", "1", "false");
	EXPECT2("missing ')'", "1", "2(abc", "1000", "1", "false");
	EXPECT2("not a number", "1", "2(abc)", "1000", "1", "false");
	EXPECT2("(0, 100]", "1", "2(101)", "1000", "1", "false");
	EXPECT2("(0, 100]", "1", "2(0)", "1000", "1", "false");
	EXPECT2("parentheses", "1", "2[5]", "1000", "1", "false");
	EXPECT2("takes no parameter", "1", "9(5)", "1000", "1", "false");
	EXPECT2("takes no parameters", "1(5)", "2", "1000", "1", "false");
	EXPECT2("expects 1 parameter", "6(1,2)", "2", "1000", "1", "false");
	EXPECT2("pagesPerChunk", "6(0)", "2", "1000", "1", "false");
	EXPECT2("power of two", "12(63,1,0)", "12", "1000", "1", "false");
	EXPECT2("prefaultDst must be 0 or 1", "12(64,1,2)", "12", "1000", "1", "false");
	EXPECT2("huge must be 0 or 1", "42(0.5)", "2", "1000", "1", "false");
	EXPECT2("huge = 0 or 1", "1", "18(3)", "1000", "1", "false");
	EXPECT2("positive integer", "1", "2", "0", "1", "false");
	EXPECT2("positive integer", "1", "2", "-5", "1", "false");
	EXPECT2("positive integer", "1", "2", "abc", "1", "false");
	EXPECT2("positive integer", "1", "2", "1.5", "1", "false");
	EXPECT2("number_of_repetitions", "1", "2", "1000", "0", "false");
	EXPECT2("number_of_repetitions", "1", "2", "1000", "x", "false");
	EXPECT2("detailed must be true or false", "1", "2", "1000", "1", "maybe");
	EXPECT2("MemAvailable", "1", "2(100)", "1e15", "1", "false");
	EXPECT2("MemAvailable", "1", "2(100)", "18446744073709551615", "1", "false");
	EXPECT2("positive integer", "1", "2", "99999999999999999999999", "1", "false");

	char *err = NULL;
	char *argv[] = { NULL, "micro", "1", "2", "10", "1", "false", "/tmp/x", "extra", NULL };
	CHECK_EQ(test_run_cli(argv, NULL, &err), 2);
	CHECK(strstr(err, "too many arguments") != NULL);
	free(err);
	char *argv2[] = { NULL, "micro", "--bogus", "1", "2", "10", "1", "false", NULL };
	CHECK_EQ(test_run_cli(argv2, NULL, &err), 2);
	CHECK(strstr(err, "unknown option") != NULL);
	free(err);
	char *argv3[] = { NULL, "micro", "1", "2", "10", "1", "false", "/nonexistent/dir/out", NULL };
	CHECK_EQ(test_run_cli(argv3, NULL, &err), 2);
	CHECK(strstr(err, "cannot open output file") != NULL);
	free(err);
	return TEST_PASS;
}

/* ---- huge pages ---------------------------------------------------------------------------------- */

static int t_huge_refused_or_run(void)
{
	char *out = NULL, *err = NULL;
	int st = micro(&out, &err, "4", "2(100)", "300000", "1", "false", NULL);

	/* method 4 needs 2 pages of data + 2 for private copies */
	if (free_huge() >= 4) {
		CHECK_EQ(st, 0);
	} else {
		CHECK_EQ(st, 1);
		CHECK(strstr(err, "nr_hugepages") != NULL);
		CHECK(strstr(err, "--fallback") != NULL);
		free(out);
		free(err);
		st = micro(&out, &err, "--fallback", "--verify", "4", "2(100)", "300000", "1", "false",
			   NULL);
		CHECK_EQ(st, 0);
		CHECK(strstr(err, "falling back to 4 KiB pages") != NULL);
	}
	uint64_t t[2];
	CHECK_EQ(totals(out, t, 2), 1);
	CHECK_EQ(t[0], 300000ull * 299999 / 2);
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_page_fault_test_huge_stride(void)
{
	char *out = NULL, *err = NULL;
	uint64_t t[2], want = 0;
	size_t n = 600000;

	CHECK_EQ(micro(&out, &err, "--verify", "1", "18(1)", "600000", "1", "false", NULL), 0);
	CHECK_EQ(totals(out, t, 2), 1);
	for (size_t i = 0; i < n; i += 262144)
		want += i;
	CHECK_EQ(t[0], want);
	free(out);
	free(err);
	return TEST_PASS;
}

/* micro_parse of the NULL-terminated arguments after "micro". */
static int parse_micro(micro_opts *o, char *err, size_t len, ...)
{
	TEST_VA_ARGV(argv, argc, "micro", len);
	return micro_parse(argc, argv, NULL, o, err, len);
}

/* micro_parse is callable without running anything: values and messages. */
static int t_parse_direct(void)
{
	micro_opts o;
	char err[1024];

	CHECK_OK(parse_micro(&o, err, sizeof(err), "--seed=7", "6(512)", "--verify", "2(100)",
			     "1000", "3", "true", "out.txt", "--result", "r.csv", NULL));
	CHECK(o.seed == 7 && o.verify && !o.fallback && o.m && o.m->id == 6 && o.t->id == 2);
	CHECK(o.n == 1000 && o.runs == 3 && o.detailed && !strcmp(o.out_path, "out.txt"));
	CHECK(!strcmp(o.result, "r.csv") && o.prm.pages_per_chunk == 512);
	CHECK(parse_micro(&o, err, sizeof(err), "1", "1", NULL) == RUMA_EPARSE);
	CHECK(o.usage_stdout && !strcmp(err, "ruma micro: missing <number_of_entries> (2 of the 5 "
					     "arguments given)\n"));
	CHECK(parse_micro(&o, err, sizeof(err), "1", "2", "100", "1", NULL) == RUMA_EPARSE);
	CHECK(o.usage_stdout && strstr(err, "missing <detailed (true|false)>"));
	CHECK(parse_micro(&o, err, sizeof(err), "1", "99", "10", "1", "false", NULL) == RUMA_EPARSE);
	CHECK_EQ(o.progress, 2); /* both "Parsing ..." lines were due */
	CHECK(!strcmp(err, "ruma micro: unknown test type 99 (test types are 1-15, 18-23)\n(run "
			   "`ruma micro` without arguments for the list of methods and tests)\n"));
	CHECK(parse_micro(&o, err, sizeof(err), "--seed", NULL) == RUMA_EPARSE);
	CHECK(starts_with(err, "ruma micro: --seed needs a non-negative integer\n"));
	CHECK(parse_micro(&o, err, sizeof(err), "--x", NULL) == RUMA_EPARSE);
	CHECK(starts_with(err, "ruma micro: unknown option '--x'\n"));
	CHECK(parse_micro(&o, err, sizeof(err), "1", "2", "3", "4", "5", "6", "7", NULL) ==
	      RUMA_EPARSE);
	CHECK(starts_with(err, "ruma micro: too many arguments ('7' is the 7th)\n"));
	CHECK_OK(parse_micro(&o, err, sizeof(err), "--help", NULL));
	CHECK(o.help);
	return TEST_PASS;
}


/*
 * The copy methods book the phases the original books, in its order and
 * under its field names (BigDataAnalyticsGroup/rewiring, the methods directory): e.g.
 * the shuffled views' memfd as shm-src for both page sizes, the source's
 * mapping as mmap-src, 10/11's anonymous source as malloc-src, and 32's
 * mapping, which is its source array, as mmap-src.
 */
static int t_copy_phase_fields(void)
{
	static const struct {
		const char *method;
		bool huge;
		const char *phases;
	} want[] = {
		{ "1", false, "malloc-src,init-malloc-src,malloc-dst,memcpy" },
		{ "2", false, "shm-src,mmap-src,init-shm-src,mmap-dst" },
		{ "3", false, "shm-src,mmap-src,init-shm-src,mmap-dst" },
		{ "6(1)", false, "shm-src,mmap-src,init-shm-src,mmap-dst,remap-dst" },
		{ "7(4)", false, "shm-src,mmap-src,init-shm-src,mmap-dst,remap-dst" },
		{ "10(4,1)", false, "malloc-src,init-malloc-src,malloc-dst,memcpy" },
		{ "15(4)", false, "shm-src,mmap-src,init-shm-src,mmap-dst,remap-dst" },
		{ "4", true, "shm-src-huge,mmap-src,init-shm-src,mmap-dst" },
		{ "5", true, "shm-src-huge,mmap-src,init-shm-src,mmap-dst" },
		{ "8(1)", true, "shm-src,mmap-src,init-shm-src,mmap-dst,remap-dst" },
		{ "9(1)", true, "shm-src,mmap-src,init-shm-src,mmap-dst,remap-dst" },
		{ "11(1,0)", false, "malloc-src,init-malloc-src,malloc-dst,memcpy" },
		{ "16(1)", true, "shm-src,mmap-src,init-shm-src,mmap-dst,remap-dst" },
		{ "20", true, "shm-src,mmap-src,init-shm-src,mmap-dst" },
		{ "32(0,1,1,1,1,1,0)", false, "shm-src,mmap-src" },
		{ "32(0,1,0,1,0,0,1)", false, "shm-src,mmap-src" },
		{ "32(0,0,0,1,1,0,0)", false, "mmap-src" },
		{ "32(1,1,1,1,1,0,0)", true, "shm-src,mmap-src" },
	};
	for (size_t k = 0; k < TEST_N(want); k++) {
		char *out = NULL, *err = NULL, got[256] = "";
		if (want[k].huge && free_huge() < 8)
			continue; /* 4 huge pages of data at most, and their private copies */
		const char *test = want[k].method[0] == '3' ? "1" : "2";
		CHECK_EQ(micro(&out, &err, want[k].method, test, "300000", "1", "false", NULL), 0);
		const char *p = strstr(out, "===\n");
		CHECK(p != NULL);
		const char *stop = strstr(p, "Starting tests:");
		for (p = strchr(p + 4, '\n'); p && p < stop; p = strchr(p + 1, '\n')) {
			const char *comma = strchr(p, ',');
			const char *eol = strchr(p + 1, '\n');
			if (!comma || !eol || comma > eol || !isdigit((unsigned char)p[1]))
				continue;
			if (got[0])
				strcat(got, ",");
			strncat(got, comma + 1, (size_t)(eol - comma - 1));
		}
		if (strcmp(got, want[k].phases)) {
			fprintf(stderr, "  method %s: phases %s, want %s\n", want[k].method, got,
				want[k].phases);
			return TEST_FAIL;
		}
		free(out);
		free(err);
	}
	return TEST_PASS;
}

/* The hugetlb bytes of the last "# memory" line of a detailed run, -1 if none. */
static long long last_hugetlb(const char *out)
{
	const char *p = NULL;
	for (const char *q = out; (q = strstr(q, "private_hugetlb=")) != NULL; q++)
		p = q;
	return p ? strtoll(p + strlen("private_hugetlb="), NULL, 10) : -1;
}

/*
 * 11 and 37 run as the original by default: 2 MiB units of ordinary memory,
 * no hugetlb page and no refusal without them.  --hugetlb maps hugetlb
 * pages, or is refused with the nr_hugepages advice when none are free.
 */
static int t_hugetlb_option(void)
{
	static const char *const runs[][2] = { { "11(1,0)", "2" }, { "37", "15" } };

	for (size_t k = 0; k < TEST_N(runs); k++) {
		char *out = NULL, *err = NULL;
		CHECK_EQ(micro(&out, &err, "--verify", (char *)runs[k][0], (char *)runs[k][1],
			       "600000", "1", "true", NULL), 0);
		CHECK_EQ(last_hugetlb(out), 0);
		free(out);
		free(err);
		bool room = free_huge() >= 8;
		int st = micro(&out, &err, "--hugetlb", (char *)runs[k][0], (char *)runs[k][1],
			       "600000", "1", "true", NULL);
		if (room) {
			CHECK_EQ(st, 0);
			CHECK(last_hugetlb(out) > 0);
		} else {
			CHECK_EQ(st, 1);
			CHECK(err && strstr(err, "nr_hugepages"));
		}
		free(out);
		free(err);
	}
	return TEST_PASS;
}

/* The "//total=" of the first line of field f in out, or -1. */
static long long field_total(const char *out, const char *f)
{
	char key[64];
	snprintf(key, sizeof(key), ",%s //total=", f);
	const char *p = strstr(out, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/*
 * 4 and 5 map their 2 MiB source and view without reservation by default,
 * as the original, and with it under --reserve: the same data either way,
 * verified, with a write test that makes private copies of every page.
 */
static int t_reserve_option(void)
{
	static const char *const methods[] = { "4", "5" };

	if (free_huge() < 8)
		SKIP("fewer than 8 free 2 MiB huge pages");
	for (size_t k = 0; k < TEST_N(methods); k++) {
		long long totals[2];
		for (int reserve = 0; reserve <= 1; reserve++) {
			char *out = NULL, *err = NULL;
			const char *opt = reserve ? "--reserve" : "--verify";
			CHECK_EQ(micro(&out, &err, opt, (char *)methods[k], "9", "300000", "1",
				       "false", NULL), 0);
			totals[reserve] = field_total(out, "read-seq-dst");
			CHECK(totals[reserve] > 0);
			free(out);
			free(err);
			CHECK_EQ(micro(&out, &err, opt, (char *)methods[k], "6(100)", "300000", "1",
				       "false", NULL), 0);
			free(out);
			free(err);
		}
		CHECK_EQ(totals[0], totals[1]);
	}
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "usage", t_usage },
	{ "parse_direct", t_parse_direct },
	{ "seed_example", t_seed_example },
	{ "output_file", t_output_file },
	{ "detailed", t_detailed },
	{ "methods_copy", t_methods_copy },
	{ "copy_phase_fields", t_copy_phase_fields },
	{ "hugetlb_option", t_hugetlb_option },
	{ "reserve_option", t_reserve_option },
	{ "methods_partition", t_methods_partition },
	{ "methods_vector_alloc", t_methods_vector_alloc },
	{ "partition_unaligned", t_partition_unaligned },
	{ "partition_phases", t_partition_phases },
	{ "chains_block_pool", t_chains_block_pool },
	{ "alloc_random_moves", t_alloc_random_moves },
	{ "remap_file_pages", t_remap_file_pages },
	{ "original_keys", t_original_keys },
	{ "two_runs_seeds", t_two_runs_seeds },
	{ "verifier_catches", t_verifier_catches },
	{ "defaults_without_parens", t_defaults_without_parens },
	{ "invalid_combos", t_invalid_combos },
	{ "bad_input", t_bad_input },
	{ "huge_refused_or_run", t_huge_refused_or_run },
	{ "page_fault_test_huge_stride", t_page_fault_test_huge_stride },
};

int main(int argc, char **argv)
{
	return test_main("micro", cases, TEST_N(cases), argc, argv);
}
