/*
 * micro_cli.c — `ruma micro`: command line (an option table and the
 * positional arguments, micro_parse), checks before running, the run loop
 * and the summary (micro_run).  The usage text is in tools/cmd_micro.c.
 *
 *   ruma micro [--verify] [--fallback] [--hugetlb] [--reserve] [--seed N] <method>[(params)]
 *              <test_type>[(test_parameter)] <number_of_entries>
 *              <number_of_repetitions> <detailed (true|false)> [<output_file>]
 *
 * Without the five positional arguments the command prints the original's
 * usage text (with "./a.out" replaced by "ruma micro") to stdout and exits
 * 2, like every other bad usage of ruma.  Bad input (unknown method or test, malformed or
 * out-of-range parameters, bad counts, a size that does not fit in memory,
 * a method/test combination that does not fit) is reported on stderr with
 * the reason and exits 2.  A run that cannot get its resources (no free huge
 * pages without --fallback, mmap failures) or fails verification exits 1.
 *
 * Syscalls: madvise(MADV_POPULATE_READ/_WRITE) over the program's code and
 * data before the first run (ruma_madvise, through the OS layer);
 * /proc/meminfo is read with stdio.
 */
#include "bench/common/opt.h"
#include "bench/common/rep.h"
#include "bench/common/result.h"
#include "bench/micro/micro.h"

#include <ruma/area.h>
#include <ruma/core.h>
#include "core/core_ext.h"
#include <ruma/phys.h>
#include <ruma/sysinfo.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

#define OPT(f) offsetof(micro_opts, f)

static const ruma_opt micro_options[] = {
	{ "--verify", RUMA_OPT_FLAG, OPT(verify), 0, 0, NULL, NULL, 0 },
	{ "--corrupt", RUMA_OPT_FLAG, OPT(corrupt), 0, 0, NULL, NULL, 0 },
	{ "--fallback", RUMA_OPT_FLAG, OPT(fallback), 0, 0, NULL, NULL, 0 },
	{ "--hugetlb", RUMA_OPT_FLAG, OPT(hugetlb), 0, 0, NULL, NULL, 0 },
	{ "--reserve", RUMA_OPT_FLAG, OPT(reserve), 0, 0, NULL, NULL, 0 },
	{ "--help", RUMA_OPT_FLAG, OPT(help), 0, 0, NULL, NULL, 0 },
	{ "-h", RUMA_OPT_FLAG, OPT(help), 0, 0, NULL, NULL, 0 },
	{ "--seed", RUMA_OPT_U64, OPT(seed), 0, UINT64_MAX, "--seed needs a non-negative integer",
	  NULL, 0 },
	{ "--result", RUMA_OPT_STR, OPT(result), 0, 0, "--result needs a file name", NULL,
	  RUMA_OPT_NONEMPTY },
};

/* "ruma micro: <why>" and the hint into err. */
static int bad(char *err, size_t len, const char *fmt, const char *a, const char *b)
{
	char why[640];

	snprintf(why, sizeof(why), fmt, a, b);
	snprintf(err, len,
		 "ruma micro: %s\n(run `ruma micro` without arguments for the list of methods and "
		 "tests)\n", why);
	return RUMA_EPARSE;
}

static int option_error(const ruma_opt_error *e, char *err, size_t len)
{
	if (e->status == RUMA_OPT_UNKNOWN)
		return bad(err, len, "unknown option '%s'%s", e->arg, "");
	if (e->status == RUMA_OPT_TOOMANY)
		return bad(err, len, "too many arguments ('%s' is the 7th)%s", e->arg, "");
	return bad(err, len, "%s%s", e->opt->help, "");
}

/* The method and test specifications (o->progress counts the stages begun). */
static int parse_specs(micro_opts *o, char *err, size_t len)
{
	char why[512];
	double mv[MAX_PARAMS], tv[MAX_PARAMS];
	unsigned mk, tk;

	o->progress = 1;
	if (parse_spec(o->pos[0], "method", &o->mid, mv, &mk, why, sizeof(why)))
		return bad(err, len, "%s%s", why, "");
	o->m = micro_method_find(o->mid);
	if (!o->m)
		return bad(err, len, "unknown method %s%s (methods are 1-24, 30-32, 36, 37, 40-44)",
			   o->pos[0], "");
	if (micro_method_set_params(o->m, mv, mk, &o->prm, why, sizeof(why)))
		return bad(err, len, "%s%s", why, "");
	o->progress = 2;
	if (parse_spec(o->pos[1], "test type", &o->tid, tv, &tk, why, sizeof(why)))
		return bad(err, len, "%s%s", why, "");
	o->t = micro_test_find(o->tid);
	if (!o->t)
		return bad(err, len, "unknown test type %s%s (test types are 1-15, 18-23)", o->pos[1],
			   "");
	if (micro_test_set_params(o->t, tv, tk, &o->prm, why, sizeof(why)))
		return bad(err, len, "%s%s", why, "");
	return 0;
}

/* The five positional arguments, as the original's usage names them. */
static const char *const micro_positional_names[5] = {
	"<method>", "<test_type>", "<number_of_entries>", "<number_of_repetitions>",
	"<detailed (true|false)>"
};

int micro_parse(int argc, char **argv, char *const *envp, micro_opts *o, char *err, size_t len)
{
	char combo[512];
	ruma_opt_error e;

	(void)envp;
	memset(o, 0, sizeof(*o));
	o->seed = 42;
	err[0] = '\0';
	if (ruma_opt_parse(micro_options, RUMA_ARRAY_SIZE(micro_options), argc, argv, 1, o, o->pos,
			   6, &o->npos, &e))
		return option_error(&e, err, len);
	if (o->help)
		return 0;
	if (o->npos < 5) {
		o->usage_stdout = true;
		if (o->npos > 0) /* none at all: the original's usage alone */
			snprintf(err, len, "ruma micro: missing %s (%d of the 5 arguments given)\n",
				 micro_positional_names[o->npos], o->npos);
		return RUMA_EPARSE;
	}
	if (parse_specs(o, err, len))
		return RUMA_EPARSE;
	if (ruma_parse_u64(o->pos[2], &o->n) != 0 || o->n == 0)
		return bad(err, len, "number_of_entries '%s' must be a positive integer%s", o->pos[2],
			   "");
	if (ruma_parse_u64(o->pos[3], &o->runs) != 0 || o->runs == 0 || o->runs > 100000)
		return bad(err, len, "number_of_repetitions '%s' must be an integer in [1, 100000]%s",
			   o->pos[3], "");
	if (ruma_parse_bool(o->pos[4], &o->detailed) != 0)
		return bad(err, len, "detailed must be true or false, got '%s'%s", o->pos[4], "");
	if (micro_combo_check(o->m, o->t, &o->prm, combo, sizeof(combo)))
		return bad(err, len, "invalid combination: %s%s", combo, "");
	o->out_path = o->npos == 6 ? o->pos[5] : NULL;
	return 0;
}

/* Without hugetlb pages, 11 and 37 keep the original's 2 MiB units in ordinary memory. */
static void set_huge_units(const micro_method *m, micro_params *p)
{
	p->huge_units = (m->id == 11 || m->id == 37) && !p->use_huge;
}

/* Decide huge pages vs --fallback; returns 0, 1 (refused) or sets p->use_huge. */
static int check_huge(const micro_method *m, micro_params *p, const micro_opts *o, uint64_t n)
{
	p->hugetlb = o->hugetlb;
	p->reserve = o->reserve;
	p->use_huge = micro_method_wants_huge(m, p);
	set_huge_units(m, p);
	if (!p->use_huge)
		return 0;
	uint64_t need = micro_method_huge_pages(m, p, n), have = free_huge_pages();
	if (need == 0) {
		p->use_huge = false;
		set_huge_units(m, p);
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
		set_huge_units(m, p);
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

/* Refuse (2) a run whose arrays do not fit into the available memory. */
static int check_memory(const micro_opts *o)
{
	ruma_mem_avail mem;
	(void)ruma_sysinfo_mem_available(&mem);
	uint64_t avail = mem.bytes, n = o->n;

	if (n <= (UINT64_MAX / 64) && (!avail || bytes_needed(o->m, o->tid, o->verify, n) <= avail))
		return 0;
	char need_s[32], have_s[32];
	ruma_format_size(n > UINT64_MAX / 64 ? UINT64_MAX : bytes_needed(o->m, o->tid, o->verify, n),
			 need_s, sizeof(need_s));
	ruma_format_size(avail, have_s, sizeof(have_s));
	fprintf(stderr,
		"ruma micro: %" PRIu64 " entries need about %s of memory for method %d with "
		"test %d, but only %s is available (%s); use fewer entries\n",
		n, need_s, o->mid, o->tid, have_s, mem.limited_by);
	return 2;
}

/* The --result rows of one run: every phase field that took time. */
/* The rows of one run: every phase field that took time, then "build", the
 * seconds the method's build spent before the test ran (its fields then). */
static void result_rows(ruma_result *res, const double *fields, double build, uint64_t run)
{
	(void)ruma_result_setu(res, "rep", run);
	for (int f = 0; f < MF_COUNT_; f++)
		if (fields[f] != 0)
			ruma_result_add(res, micro_field_name((micro_field)f), "s", fields[f]);
	if (build > 0)
		ruma_result_add(res, "build", "s", build);
}

static double fields_sum(const double *fields)
{
	double sum = 0;

	for (int f = 0; f < MF_COUNT_; f++)
		sum += fields[f];
	return sum;
}

static void result_params(ruma_result *res, const micro_opts *o)
{
	(void)ruma_result_set(res, "method", o->pos[0]);
	(void)ruma_result_set(res, "test", o->pos[1]);
	(void)ruma_result_setu(res, "n", o->n);
	(void)ruma_result_setu(res, "runs", o->runs);
	(void)ruma_result_setu(res, "seed", o->seed);
}

static void report_build_error(const micro_opts *o, int rc)
{
	if (rc == RUMA_ENOHUGE)
		fprintf(stderr,
			"ruma micro: method %d ran out of 2 MiB huge pages during the run: "
			"raise /proc/sys/vm/nr_hugepages%s\n",
			o->mid, o->fallback ? "" : " or pass --fallback");
	else if (rc == RUMA_EMAPLIMIT)
		fprintf(stderr,
			"ruma micro: method %d needs more mappings than vm.max_map_count "
			"allows: raise /proc/sys/vm/max_map_count or use more pages per "
			"chunk/block\n", o->mid);
}

/* the state of the runs, for their turns */
struct runs {
	const micro_opts *o;
	const micro_params *prm;
	micro_ctx *ctx;
	double (*rows)[MF_COUNT_];
	ruma_result *res;
};

/* Run `round` (0-based): build, test, keep its fields in rows[round].
 * Returns 0 or 1 (the run failed: the runs stop). */
static int run_one(void *arg, const ruma_rep_turn *turn)
{
	const struct runs *p = arg;
	const micro_opts *o = p->o;
	micro_ctx *ctx = p->ctx;
	micro_data d;
	int rc, status = 0;

	memset(&d, 0, sizeof(d));
	memset(ctx->fields, 0, sizeof(ctx->fields));
	ctx->seed = o->seed + turn->round;
	printf("\n=============== Run %u ===============\n", turn->round + 1);
	printf("%s:\n", o->m->name);
	fflush(stdout);
	rc = o->m->build(ctx, p->prm, (size_t)o->n, &d);
	if (rc) {
		report_build_error(o, rc);
		return 1;
	}
	double build = fields_sum(ctx->fields);
	if (!d.no_blank_line)
		printf("\n");
	if (micro_test_run(ctx, o->t, p->prm, &d))
		status = 1;
	release(&d);
	memcpy(p->rows[turn->round], ctx->fields, sizeof(ctx->fields));
	result_rows(p->res, ctx->fields, build, turn->round + 1);
	fflush(stdout);
	return status;
}

/* The runs, one after the other (the original's number_of_repetitions, no
 * warm-up: every run is printed and averaged); rows[r] gets run r's fields.
 * Returns 0 or 1 (a run failed). */
static int run_all(const micro_opts *o, const micro_params *prm, micro_ctx *ctx,
		   double (*rows)[MF_COUNT_], ruma_result *res)
{
	struct runs p = { o, prm, ctx, rows, res };
	ruma_rep plan;

	ruma_rep_init(&plan, 1, 1, 0, (unsigned)o->runs, RUMA_REP_ROTATE, o->seed);
	return ruma_rep_run(&plan, run_one, &p) ? 1 : 0;
}

/* The program's code and its data (.data to the end of .bss), as the GNU and LLVM linkers name them. */
extern char __executable_start[], etext[], __data_start[], end[];

/*
 * Fill the page tables of the program's own code and data before the first
 * run, so that the first run's phases do not pay a page fault per code or
 * data page the driver and the library touch for the first time (the
 * original's phases mostly run libc code, which every process finds
 * resident), and open the library's reader of vm.max_map_count.  Best effort:
 * a kernel without MADV_POPULATE_READ (before 5.14) leaves the faults.
 */
static void warm_code(void)
{
	uintptr_t a = (uintptr_t)__executable_start & ~(uintptr_t)(RUMA_PAGE_4K - 1);
	uintptr_t b = ((uintptr_t)etext + RUMA_PAGE_4K - 1) & ~(uintptr_t)(RUMA_PAGE_4K - 1);

	(void)ruma_madvise((void *)a, b - a, MADV_POPULATE_READ);
	a = (uintptr_t)__data_start & ~(uintptr_t)(RUMA_PAGE_4K - 1);
	b = ((uintptr_t)end + RUMA_PAGE_4K - 1) & ~(uintptr_t)(RUMA_PAGE_4K - 1);
	(void)ruma_madvise((void *)a, b - a, MADV_POPULATE_WRITE);
	/* the library's kept reader of vm.max_map_count opens here, not in a run's phase */
	uint64_t max_maps;
	(void)ruma_sysinfo_max_map_count(&max_maps);
}

int micro_run(const micro_opts *o)
{
	micro_params prm = o->prm;
	ruma_result res;
	FILE *out = NULL;
	int rc;

	printf("Parsing copy method.\nParsing test type.\n");
	if ((rc = check_memory(o)) != 0)
		return rc;
	if (check_huge(o->m, &prm, o, o->n))
		return 1;
	if (o->out_path && !(out = fopen(o->out_path, "w"))) {
		fprintf(stderr, "ruma micro: cannot open output file '%s': %s\n", o->out_path,
			strerror(errno));
		return 2;
	}
	if ((rc = ruma_result_open(&res, o->result)) != 0) {
		fprintf(stderr, "ruma micro: cannot write %s: %s\n", o->result, ruma_strerror(rc));
		if (out)
			fclose(out);
		return 2;
	}
	result_params(&res, o);

	double (*rows)[MF_COUNT_] = calloc(o->runs, sizeof(*rows));
	micro_ctx ctx = { .detailed = o->detailed, .verify = o->verify, .fallback = o->fallback,
			  .corrupt = o->corrupt, .seed = o->seed };
	if (!rows) {
		if (out)
			fclose(out);
		(void)ruma_result_close(&res);
		micro_fail("allocating the result table", -ENOMEM);
		return 1;
	}
	if (o->detailed && micro_detail_open(&ctx) != 0)
		fprintf(stderr, "ruma micro: performance counters unavailable; detailed lines print n/a\n");

	printf("Number of elements = %" PRIu64 "\n", o->n);
	printf("Number of runs = %" PRIu64 "\n", o->runs);
	warm_code();
	int status = run_all(o, &prm, &ctx, rows, &res);
	micro_detail_close(&ctx);
	if (status == 0) {
		printf("\n");
		micro_summary_print(out ? out : stdout, o->m->name, (const double(*)[MF_COUNT_])rows,
				    (size_t)o->runs);
		printf("\n");
	}
	if (out && fclose(out) != 0) {
		fprintf(stderr, "ruma micro: writing '%s' failed: %s\n", o->out_path, strerror(errno));
		status = 1;
	}
	if ((rc = ruma_result_close(&res)) != 0) {
		fprintf(stderr, "ruma micro: cannot write %s: %s\n", o->result, ruma_strerror(rc));
		status = 1;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ruma micro: writing to stdout failed: %s\n", strerror(errno));
		status = 1;
	}
	free(rows);
	return status;
}
