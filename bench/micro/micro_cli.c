/*
 * micro_cli.c — `ruma micro`: command line, checks before running, the run
 * loop and the summary.
 *
 *   ruma micro [--verify] [--fallback] [--seed N] <method>[(params)]
 *              <test_type>[(test_parameter)] <number_of_entries>
 *              <number_of_repetitions> <detailed (true|false)> [<output_file>]
 *
 * Without the five positional arguments it prints the original's usage text
 * (with "./a.out" replaced by "ruma micro") to stdout and exits 2, like every
 * other bad usage of ruma.  Bad input (unknown method or test, malformed or
 * out-of-range parameters, bad counts, a size that does not fit in memory,
 * a method/test combination that does not fit) is reported on stderr with
 * the reason and exits 2.  A run that cannot get its resources (no free huge
 * pages without --fallback, mmap failures) or fails verification exits 1.
 *
 * Syscalls: none directly; /proc/meminfo is read with stdio.
 */
#include "bench/micro/micro.h"

#include <ruma/sysinfo.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"Usage: ruma micro <method> <test_type>[(test_parameter)] <number_of_entries> "
	"<number_of_repetitions> <detailed (true|false)> [<output_file>]\n"
	"Methods\n"
	"1. Memcpy\n"
	"2. Cow memcpy\n"
	"3. Cow memcpy using populate\n"
	"4. Cow memcpy using huge pages\n"
	"5. Cow memcpy using huge pages and populate\n"
	"6. Cow memcpy with shuffling\n"
	"7. Cow memcpy with shuffling using populate\n"
	"8. Cow memcpy with shuffling using huge pages\n"
	"9. Cow memcpy with shuffling using huge pages and populate\n"
	"10. Memcpy with shuffling\n"
	"11. Memcpy with shuffling using huge pages\n"
	"12. Traditional partitioning with histogram\n"
	"13. Mapped partitioning without histogram\n"
	"14. Mapped partitioning without histogram using huge pages\n"
	"15. Cow memcpy with shuffling using remap_file_pages\n"
	"16. Cow memcpy with shuffling using remap_file_pages and huge pages\n"
	"17. Traditional partitioning with block-chains\n"
	"18. Mapped partitioning with block-chains\n"
	"19. Mapped partitioning with block-chains using huge pages\n"
	"20. Mix huge and small pages\n"
	"21. Mapped partitioning with block-chains using adaptive block sizes\n"
	"22. Rewired vector\n"
	"23. Rewired vector using huge pages\n"
	"24. STL vector\n"
	"30. Rewired vector using prepopulation\n"
	"31. Rewired vector using huge pages and prepopulation\n"
	"32. Map and Populate\n"
	"36. Mremaped vector\n"
	"37. Mremaped vector using huge pages\n"
	"40. Allocation Rewiring (Pool)\n"
	"41. Allocation Software Indirection (Pool)\n"
	"42. Allocation Mmap\n"
	"43. Software Indirection Vector (hugepages)\n"
	"44. Mremaped partitioning using huge pages\n"
	"Test Types\n"
	"1. Read sequential x% src (x is test_parameter)\n"
	"2. Read sequential x% dst (x is test_parameter)\n"
	"3. Read x% random,uniform src (x is test_parameter).\n"
	"4. Read x% random,uniform dst (x is test_parameter).\n"
	"5. Write sequential x% src (x is test_parameter).\n"
	"6. Write sequential x% dst (x is test_parameter).\n"
	"7. Write x% random,uniform src (x is test_parameter).\n"
	"8. Write x% random,uniform dst (x is test_parameter).\n"
	"9. Read sequential all dst (two times)\n"
	"10. Read sequential all dst from several chunks\n"
	"11. Read sequential all dst and merge several chunks\n"
	"12. Radix-sort all dst\n"
	"13. Radix-sort all dst from several partitions (from consecutive memory region)\n"
	"14. Radix-sort all dst from several partitions (using an indirection)\n"
	"15. Vector insertion test\n"
	"18. Page fault test\n"
	"19. Read x% random,uniform dst (x is test_parameter) through an indirection.\n"
	"20. Write sequential all dst (two times)\n"
	"21. Read x% random,uniform dst (x is test_parameter) with dependent access.\n"
	"22. Read x% random,uniform dst (x is test_parameter) with dependent access (mixed).\n"
	"23. Read sequential x% dst (x is test_parameter) with dependent access.\n";

static const char options_text[] =
	"\nruma options (before or between the arguments):\n"
	"  --verify     check the method's result against a reference built without\n"
	"               rewiring, replay the test on it and compare totals and contents\n"
	"               (exit 1 on a mismatch; touches the data, so timings of a --verify\n"
	"               run are not comparable)\n"
	"  --fallback   huge-page methods use 4 KiB pages when too few huge pages are free\n"
	"  --seed N     seed of shuffles and random tests (default 42; run r uses N + r - 1)\n"
	"  --corrupt    testing aid: change one entry after the test, so --verify must fail\n"
	"Methods take their parameters in parentheses, e.g. \"6(512)\", \"12(64,1,0)\";\n"
	"without them documented defaults apply (docs/micro.md).\n";

#define MAX_PARAMS 8

/* Parse "N" or "N(a,b,...)"; on error *why says what is wrong. */
static int parse_spec(const char *arg, const char *what, int *id, double *v, unsigned *k,
		      char *why, size_t len)
{
	const char *s = arg;
	char *end;
	long x;

	*k = 0;
	if (!isdigit((unsigned char)*s)) {
		snprintf(why, len, "%s '%s' must start with a number", what, arg);
		return RUMA_EPARSE;
	}
	errno = 0;
	x = strtol(s, &end, 10);
	if (errno || x > 1000) {
		snprintf(why, len, "%s '%s' is out of range", what, arg);
		return RUMA_EPARSE;
	}
	*id = (int)x;
	if (*end == '\0')
		return 0;
	if (*end != '(') {
		snprintf(why, len, "%s '%s': parameters go inside parentheses, e.g. 6(512)", what, arg);
		return RUMA_EPARSE;
	}
	s = end + 1;
	const char *close = strchr(s, ')');
	if (!close || close[1] != '\0') {
		snprintf(why, len, "%s '%s': missing ')' at the end", what, arg);
		return RUMA_EPARSE;
	}
	for (;;) {
		char buf[64];
		const char *comma = s;
		while (comma < close && *comma != ',')
			comma++;
		size_t l = (size_t)(comma - s);
		if (l == 0 || l >= sizeof(buf)) {
			snprintf(why, len, "%s '%s': empty or overlong parameter", what, arg);
			return RUMA_EPARSE;
		}
		if (*k >= MAX_PARAMS) {
			snprintf(why, len, "%s '%s': too many parameters", what, arg);
			return RUMA_EPARSE;
		}
		memcpy(buf, s, l);
		buf[l] = '\0';
		if (ruma_parse_double(buf, &v[*k]) != 0) {
			snprintf(why, len, "%s '%s': parameter '%s' is not a number", what, arg, buf);
			return RUMA_EPARSE;
		}
		(*k)++;
		if (comma == close)
			break;
		s = comma + 1;
	}
	return 0;
}

static int bad(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "ruma micro: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n(run `ruma micro` without arguments for the list of methods and tests)\n");
	return 2;
}

/* Bytes a run needs at most (arrays of n entries): method + test + verification. */
static uint64_t bytes_needed(const micro_method *m, int test, bool verify, uint64_t n)
{
	uint64_t arrays = m->kind == MICRO_VECTOR ? 3 : 2;

	if (test == 11 || test == 12 || test == 13 || test == 14 || test == 19 || test == 21 ||
	    test == 22)
		arrays += 2; /* merged copy / sort buffer / indirection / cycle order */
	if (verify)
		arrays += 4; /* reference src and dst and the replay's buffers */
	return arrays * n * 8;
}

static uint64_t free_huge_pages(void)
{
	ruma_hugepage_pool pool;

	if (ruma_sysinfo_huge_pool(2048, &pool) != 0)
		return 0;
	return pool.all.free > pool.all.reserved ? pool.all.free - pool.all.reserved : 0;
}

typedef struct cli {
	bool verify, fallback, help, corrupt;
	uint64_t seed;
	const char *pos[7];
	int npos;
} cli;

static int parse_cli(int argc, char **argv, cli *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 42;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--verify")) {
			o->verify = true;
		} else if (!strcmp(a, "--corrupt")) {
			o->corrupt = true;
		} else if (!strcmp(a, "--fallback")) {
			o->fallback = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			o->help = true;
		} else if (!strcmp(a, "--seed") || !strncmp(a, "--seed=", 7)) {
			const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
			if (!v || ruma_parse_u64(v, &o->seed) != 0)
				return bad("--seed needs a non-negative integer%s%s", "", "");
		} else if (a[0] == '-' && a[1] == '-') {
			return bad("unknown option '%s'%s", a, "");
		} else {
			if (o->npos >= 6)
				return bad("too many arguments ('%s' is the 7th)%s", a, "");
			o->pos[o->npos++] = a;
		}
	}
	return 0;
}

/* Decide huge pages vs --fallback; returns 0, 1 (refused) or sets p->use_huge. */
static int check_huge(const micro_method *m, micro_params *p, const cli *o, uint64_t n)
{
	p->use_huge = micro_method_wants_huge(m, p);
	if (!p->use_huge)
		return 0;
	uint64_t need = micro_method_huge_pages(m, p, n), have = free_huge_pages();
	if (need == 0) {
		p->use_huge = false;
		return 0;
	}
	if (have >= need)
		return 0;
	if (o->fallback) {
		fprintf(stderr,
			"ruma micro: method %d needs about %" PRIu64 " free 2 MiB huge pages, %" PRIu64
			" are free: falling back to 4 KiB pages (--fallback)\n",
			m->id, need, have);
		p->use_huge = false;
		p->fell_back = true;
		return 0;
	}
	fprintf(stderr,
		"ruma micro: method %d (%s) needs about %" PRIu64 " free 2 MiB huge pages but %" PRIu64
		" are free.\nReserve them as root with: echo %" PRIu64
		" > /proc/sys/vm/nr_hugepages (more if other programs use them), or pass --fallback "
		"to run with 4 KiB pages.\n",
		m->id, m->name, need, have, need);
	return 1;
}

static void release(micro_data *d)
{
	printf("Cleanup:\n");
	if (d->cleanup)
		d->cleanup(d);
	micro_free_data_arrays(d);
}

int micro_main(int argc, char **argv)
{
	char why[512], combo[512];
	double mv[MAX_PARAMS], tv[MAX_PARAMS];
	unsigned mk, tk;
	int mid, tid, rc;
	micro_params prm;
	cli o;

	rc = parse_cli(argc, argv, &o);
	if (rc)
		return rc;
	if (o.help) {
		fputs(usage_text, stdout);
		fputs(options_text, stdout);
		return 0;
	}
	if (o.npos < 5) {
		fputs(usage_text, stdout);
		return 2;
	}
	memset(&prm, 0, sizeof(prm));

	printf("Parsing copy method.\n");
	if (parse_spec(o.pos[0], "method", &mid, mv, &mk, why, sizeof(why)))
		return bad("%s%s", why, "");
	const micro_method *m = micro_method_find(mid);
	if (!m)
		return bad("unknown method %s%s (methods are 1-24, 30-32, 36, 37, 40-44)", o.pos[0], "");
	if (micro_method_set_params(m, mv, mk, &prm, why, sizeof(why)))
		return bad("%s%s", why, "");

	printf("Parsing test type.\n");
	if (parse_spec(o.pos[1], "test type", &tid, tv, &tk, why, sizeof(why)))
		return bad("%s%s", why, "");
	const micro_test *t = micro_test_find(tid);
	if (!t)
		return bad("unknown test type %s%s (test types are 1-15, 18-23)", o.pos[1], "");
	if (micro_test_set_params(t, tv, tk, &prm, why, sizeof(why)))
		return bad("%s%s", why, "");

	uint64_t n, runs;
	bool detailed;
	if (ruma_parse_u64(o.pos[2], &n) != 0 || n == 0)
		return bad("number_of_entries '%s' must be a positive integer%s", o.pos[2], "");
	if (ruma_parse_u64(o.pos[3], &runs) != 0 || runs == 0 || runs > 100000)
		return bad("number_of_repetitions '%s' must be an integer in [1, 100000]%s", o.pos[3],
			   "");
	if (ruma_parse_bool(o.pos[4], &detailed) != 0)
		return bad("detailed must be true or false, got '%s'%s", o.pos[4], "");
	if (micro_combo_check(m, t, &prm, combo, sizeof(combo)))
		return bad("invalid combination: %s%s", combo, "");

	/* memory: the arrays of this run must fit into what the machine has available */
	ruma_mem_avail mem;
	(void)ruma_sysinfo_mem_available(&mem);
	uint64_t avail = mem.bytes;
	if (n > (UINT64_MAX / 64) || (avail && bytes_needed(m, tid, o.verify, n) > avail)) {
		char need_s[32], have_s[32];
		ruma_format_size(n > UINT64_MAX / 64 ? UINT64_MAX : bytes_needed(m, tid, o.verify, n),
				 need_s, sizeof(need_s));
		ruma_format_size(avail, have_s, sizeof(have_s));
		fprintf(stderr,
			"ruma micro: %" PRIu64 " entries need about %s of memory for method %d with "
			"test %d, but only %s is available (%s); use fewer entries\n",
			n, need_s, mid, tid, have_s, mem.limited_by);
		return 2;
	}
	if (check_huge(m, &prm, &o, n))
		return 1;

	FILE *out = NULL;
	if (o.npos == 6) {
		out = fopen(o.pos[5], "w");
		if (!out) {
			fprintf(stderr, "ruma micro: cannot open output file '%s': %s\n", o.pos[5],
				strerror(errno));
			return 2;
		}
	}

	double (*rows)[MF_COUNT_] = calloc(runs, sizeof(*rows));
	micro_ctx ctx = { .detailed = detailed, .verify = o.verify, .fallback = o.fallback,
			  .corrupt = o.corrupt, .seed = o.seed };
	if (!rows) {
		if (out)
			fclose(out);
		micro_fail("allocating the result table", -ENOMEM);
		return 1;
	}
	if (detailed && micro_detail_open(&ctx) != 0)
		fprintf(stderr, "ruma micro: performance counters unavailable; detailed lines print n/a\n");

	printf("Number of elements = %" PRIu64 "\n", n);
	printf("Number of runs = %" PRIu64 "\n", runs);
	int status = 0;
	for (uint64_t r = 0; r < runs && status == 0; r++) {
		micro_data d;

		memset(&d, 0, sizeof(d));
		memset(ctx.fields, 0, sizeof(ctx.fields));
		ctx.seed = o.seed + r;
		printf("\n=============== Run %" PRIu64 " ===============\n", r + 1);
		printf("%s:\n", m->name);
		fflush(stdout);
		rc = m->build(&ctx, &prm, (size_t)n, &d);
		if (rc) {
			if (rc == RUMA_ENOHUGE)
				fprintf(stderr,
					"ruma micro: method %d ran out of 2 MiB huge pages during the run: "
					"raise /proc/sys/vm/nr_hugepages%s\n",
					mid, o.fallback ? "" : " or pass --fallback");
			else if (rc == RUMA_EMAPLIMIT)
				fprintf(stderr,
					"ruma micro: method %d needs more mappings than vm.max_map_count "
					"allows: raise /proc/sys/vm/max_map_count or use more pages per "
					"chunk/block\n", mid);
			status = 1;
			break;
		}
		if (!d.no_blank_line)
			printf("\n");
		rc = micro_test_run(&ctx, t, &prm, &d);
		if (rc)
			status = 1;
		release(&d);
		memcpy(rows[r], ctx.fields, sizeof(ctx.fields));
		fflush(stdout);
	}
	micro_detail_close(&ctx);
	if (status == 0) {
		printf("\n");
		micro_summary_print(out ? out : stdout, m->name, (const double(*)[MF_COUNT_])rows,
				    (size_t)runs);
		printf("\n");
	}
	if (out && fclose(out) != 0) {
		fprintf(stderr, "ruma micro: writing '%s' failed: %s\n", o.pos[5], strerror(errno));
		status = 1;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ruma micro: writing to stdout failed: %s\n", strerror(errno));
		status = 1;
	}
	free(rows);
	return status;
}
