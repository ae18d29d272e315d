/*
 * cmd_demo.c — `ruma demo`: one short, honest experiment per system, each a
 * small sweep (variants interleaved, warm-up discarded, repeated), compared
 * against its baseline and plotted:
 *
 *   vector   rewired vector vs copying std::vector growth
 *            (ruma micro methods 22 vs 24, test 15: vector insertion)
 *   art      ART under the libc allocator vs the 2 MiB huge-page allocator
 *            (ruma art, mode 1 = dense keys shuffled)
 *   vmcache  random reads in memory and out of memory (data about 3x the
 *            pool), spin vs futex latch waiting (ruma vmcache rndread)
 *
 * Results go to a folder (default results/demo-<timestamp>/): one sweep CSV
 * per experiment, compare tables as CSV, PNG charts, and summary.txt — the
 * same summary printed on stdout.  Defaults fit a 2-core machine and take
 * about three minutes; --quick runs a tiny version in seconds (for tests).
 *
 * Invariants: every number shown comes from the sweeps; the demo says when the
 * huge-page allocator did not get explicit huge pages (its own report, kept in
 * the CSV's note column).  Syscalls: via tools/exp (fork/exec, mkdir).
 */
#include "bench/common/opt.h"
#include "tools/exp/exp.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <time.h>

int ruma_cmd_demo(int argc, char **argv);
extern const char ruma_cmd_demo_summary[];
const char ruma_cmd_demo_summary[] =
	"about 100 s: rewired vs copying vector, ART libc vs huge pages, vmcache spin vs futex";

struct experiment {
	const char *name;
	const char *title;
	const char *baseline;
	const char *metrics[3]; /* shown in the summary */
	const char *explain[3]; /* what each of them counts, for its table's head */
	/* grid items, as on the sweep command line: {what, arg} */
	const char *items[12][2];
	const char *quick[12][2]; /* replacements in --quick mode */
};

static const struct experiment experiments[] = {
	{ "vector",
	  "vector growth: rewired vector (micro method 22) vs copying std::vector (24), "
	  "test 15 = vector insertion",
	  "method=24",
	  { "vector-insert", "total", NULL },
	  { "time to push the n elements (the vector-insert phase)",
	    "time of every phase of a run.  The rewired vector first sets up the shared-memory "
	    "pool it wires pages from (phases shm-src, mmap-src); std::vector has no such "
	    "phase, so this row counts that setup against the rewired vector",
	    NULL },
	  { { "system", "micro" },
	    { "var", "method=22,24" },
	    { "set", "test=15" },
	    { "size", "n=1e6,4e6,1.6e7" },
	    { "reps", "5" },
	    { "warmup", "1" },
	    { NULL, NULL } },
	  { { "size", "n=1e4,1e5" }, { "reps", "3" }, { "warmup", "0" }, { NULL, NULL } } },
	{ "art",
	  "ART: libc malloc vs the 2 MiB huge-page allocator, mode 1 (dense keys, shuffled)",
	  "alloc=libc",
	  { "insert", "lookup", NULL },
	  { "million keys inserted per second, n keys into an empty tree",
	    "million lookups per second of the keys inserted", NULL },
	  { { "system", "art" },
	    { "var", "alloc=libc,huge" },
	    { "set", "mode=1" },
	    { "size", "n=1e5,1e6" },
	    { "reps", "5" },
	    { "warmup", "1" },
	    { NULL, NULL } },
	  { { "size", "n=1000,2000" },
	    { "set", "lookups=1e5" },
	    { "reps", "3" },
	    { "warmup", "0" },
	    { NULL, NULL } } },
	{ "vmcache",
	  "vmcache random reads out of memory (pool ~1/3 of the data) and in memory, "
	  "spin vs futex latch waiting",
	  "wait=spin",
	  { "tx", NULL, NULL },
	  { "random point lookups (transactions) per second, both worker threads together; "
	    "per size the buffer pool (PHYSGB) out of and in memory",
	    NULL, NULL },
	  { { "system", "vmcache" },
	    { "var", "wait=spin,futex" },
	    { "set", "workload=rndread" },
	    { "set", "datasize=2e5" },
	    { "set", "threads=2" },
	    { "set", "runfor=3" },
	    { "size", "physgb=0.01,0.1" },
	    { "reps", "5" },
	    { "warmup", "1" },
	    { NULL, NULL } },
	  { { "set", "datasize=2e4" },
	    { "set", "runfor=1" },
	    { "size", "physgb=0.001" },
	    { "reps", "3" },
	    { "warmup", "0" },
	    { NULL, NULL } } },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma demo [--out DIR] [--quick] [--only NAME[,NAME]]\n"
		"Runs three small experiments (about 100 s on 2 cores, 24 GiB):\n");
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(experiments); i++)
		fprintf(f, "  %-8s %s\n", experiments[i].name, experiments[i].title);
	fprintf(f,
		"each a sweep with the variants interleaved, a warm-up discarded, >= 3 reps; then\n"
		"a summary (median [min-max], ratio vs baseline with 95%% CI, verdict) on stdout\n"
		"and in DIR/summary.txt, the CSVs and PNG charts in DIR\n"
		"(default results/demo-<timestamp>).\n"
		"  --quick   a tiny version that takes seconds (for tests; too small to conclude)\n"
		"  --only    run only these experiments (vector, art, vmcache)\n"
		"Exit: 0 ok, 1 an experiment failed or was interrupted, 2 bad usage.\n");
}

/* build the grid of an experiment (quick replacements applied by "what" + key) */
static int build_grid(const struct experiment *e, int quick, ruma_exp_grid *g, char *err,
		      size_t len)
{
	ruma_exp_grid_init(g);
	for (size_t i = 0; e->items[i][0]; i++) {
		const char *what = e->items[i][0], *arg = e->items[i][1];

		for (size_t q = 0; quick && e->quick[q][0]; q++) {
			const char *qa = e->quick[q][1];
			size_t kl = strcspn(qa, "=");

			if (!strcmp(e->quick[q][0], what) &&
			    (strcmp(what, "set") || !strncmp(qa, arg, kl + 1)))
				arg = qa;
		}
		if (ruma_exp_grid_add(g, what, arg, err, len))
			return -EINVAL;
	}
	for (size_t q = 0; quick && e->quick[q][0]; q++) /* sets only in quick mode */
		if (!strcmp(e->quick[q][0], "set") && ruma_exp_grid_add(g, "set", e->quick[q][1], err, len))
			return -EINVAL;
	return ruma_exp_grid_check(g, err, len);
}

/* print to stdout and to the summary file */
static void out2(FILE *sum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out2(FILE *sum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (sum) {
		va_start(ap, fmt);
		vfprintf(sum, fmt, ap);
		va_end(ap);
	}
}

static const char *unit_of(const ruma_exp_table *t, const char *metric)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].ok && !strcmp(t->rows[i].metric, metric))
			return t->rows[i].unit;
	return "";
}

/* text after head, broken at blanks into lines of at most 100 columns */
static void out_wrapped(FILE *sum, const char *head, const char *text)
{
	size_t indent = strlen(head), width = 100 - indent;

	out2(sum, "%s", head);
	while (*text) {
		size_t l = strlen(text), cut = l;

		if (l > width) {
			cut = width;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (!cut)
				cut = width;
		}
		out2(sum, "%.*s\n", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
		if (*text)
			out2(sum, "%*s", (int)indent, "");
	}
}

/* one table: what it counts, then per size the baseline and each variant */
static void summarize_metric(FILE *sum, const ruma_exp_table *t, const ruma_exp_cmp_list *l,
			     const char *metric, const char *explain)
{
	const char *unit = unit_of(t, metric);
	int better = ruma_exp_unit_better(unit);
	double last_size = NAN;

	out2(sum, "  %s (%s, %s)\n", metric, unit,
	     better == RUMA_EXP_LOWER    ? "lower is better" :
	     better == RUMA_EXP_HIGHER   ? "higher is better" :
					   "bytes moved, neither direction is better");
	if (explain)
		out_wrapped(sum, "    counts: ", explain);
	out2(sum, "    %-18s %-20s %-36s %-7s %-17s %s\n", "size", "variant", "median [min - max]",
	     "ratio", "95% CI", "verdict");
	for (size_t i = 0; i < l->n; i++) {
		const struct ruma_exp_cmp *c = &l->c[i];
		char size[160], num[32], med[128], ci[48], label[2 * RUMA_EXP_STR];

		if (strcmp(c->metric, metric))
			continue;
		snprintf(ci, sizeof(ci), "[%.3f, %.3f]", c->lo, c->hi);
		ruma_exp_variant_label(c->variant, label, sizeof(label));
		if (c->overall) {
			out2(sum, "    %-18s %-20s %-36s %-7.3f %-17s %s\n", "overall (geomean)",
			     label, "", c->ratio, ci, c->verdict);
			continue;
		}
		ruma_exp_fmt_num(c->size, num, sizeof(num));
		snprintf(size, sizeof(size), "%s=%s", c->size_param, num);
		if (c->size != last_size) {
			char blabel[2 * RUMA_EXP_STR];

			ruma_exp_variant_label(c->baseline, blabel, sizeof(blabel));
			ruma_exp_fmt_summary(&c->b, unit, med, sizeof(med));
			out2(sum, "    %-18s %-20s %-36s 1\n", size, blabel, med);
			last_size = c->size;
		}
		ruma_exp_fmt_summary(&c->v, unit, med, sizeof(med));
		out2(sum, "    %-18s %-20s %-36s %-7.3f %-17s %s\n", "", label, med, c->ratio, ci,
		     c->verdict);
	}
}

/* what the huge-page allocator reported in the art sweep */
static void huge_note(FILE *sum, const ruma_exp_table *t)
{
	const char *other = NULL;
	int explicit_pages = 0, runs = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct ruma_exp_row *r = &t->rows[i];

		if (!r->ok || strcmp(r->variant, "alloc=huge") || strcmp(r->metric, "insert"))
			continue;
		runs++;
		if (strstr(r->note, "from explicit 2 MiB") && !strstr(r->note, "from transparent") &&
		    !strstr(r->note, "from 4 KiB"))
			explicit_pages++;
		else
			other = r->note[0] ? r->note : "no report from the allocator";
	}
	if (!runs)
		return;
	if (explicit_pages == runs)
		out2(sum, "  huge allocator: all %d runs got explicit 2 MiB huge pages (MAP_HUGETLB)\n",
		     runs);
	else
		out2(sum,
		     "  NOTE: the huge-page allocator ran WITHOUT explicit huge pages in %d of %d runs "
		     "(%s); reserve some with `ruma doctor --apply` or "
		     "`echo 64 > /proc/sys/vm/nr_hugepages` for the real comparison\n",
		     runs - explicit_pages, runs, other);
}

static void failures(FILE *sum, const ruma_exp_table *t)
{
	size_t n = 0;
	const struct ruma_exp_row *first = NULL;

	for (size_t i = 0; i < t->n; i++)
		if (!t->rows[i].ok) {
			n++;
			if (!first)
				first = &t->rows[i];
		}
	if (n)
		out2(sum, "  %zu measurement(s) FAILED; first: %s %s=%g rep %ld: %s: %s\n", n,
		     first->variant, first->size_param, first->size, first->rep, first->status,
		     first->note[0] ? first->note : "(no stderr)");
}

/* the grid as run: fixed settings, sizes, repetitions */
static void grid_line(FILE *sum, const ruma_exp_grid *g)
{
	out2(sum, "  grid: ruma %s", ruma_exp_system_name(g->system));
	for (size_t i = 0; i < g->nsets; i++)
		out2(sum, " %s=%s", g->sets[i].key, g->sets[i].value);
	out2(sum, "; %s =", g->size_name);
	for (size_t i = 0; i < g->nsizes; i++)
		out2(sum, "%s%s", i ? "," : " ", g->sizes[i]);
	out2(sum, "; %ld reps + %ld warm-up, interleaved\n", g->reps, g->warmup);
}

struct demo_opts {
	const char *dir;
	bool quick, help;
	const char *only;
};

#define O(f) offsetof(struct demo_opts, f)
static const ruma_opt options[] = {
	{ "--quick", RUMA_OPT_FLAG, O(quick), 0, 0, NULL, NULL, 0 },
	{ "--out", RUMA_OPT_STR, O(dir), 0, 0, NULL, NULL, 0 },
	{ "--only", RUMA_OPT_STR, O(only), 0, 0, NULL, NULL, 0 },
	{ "--help", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
};

static int wanted(const char *only, const char *name)
{
	size_t l = strlen(name);

	if (!only)
		return 1;
	for (const char *p = only; (p = strstr(p, name)); p += l)
		if ((p == only || p[-1] == ',') && (p[l] == ',' || p[l] == '\0'))
			return 1;
	return 0;
}

/* The first name in the comma list `only` that is no experiment, or NULL. */
static const char *unknown_name(const char *only, char *buf, size_t len)
{
	for (const char *p = only; p && *p;) {
		size_t l = strcspn(p, ",");
		int known = 0;

		for (size_t i = 0; i < RUMA_ARRAY_SIZE(experiments); i++)
			known |= strlen(experiments[i].name) == l &&
				 !strncmp(p, experiments[i].name, l);
		if (!known) {
			snprintf(buf, len, "%.*s", (int)l, p);
			return buf;
		}
		p += l + (p[l] == ',');
	}
	return NULL;
}

/* one experiment: sweep, compare, plot, summary; returns 0, 1 (failed) or -EINTR */
static int run_experiment(const struct experiment *e, const struct demo_opts *o, FILE *sum,
			  size_t index, size_t total)
{
	static ruma_exp_grid g;
	struct ruma_exp_sweep_opts so = { 0 };
	char err[RUMA_EXP_ERR] = "", csv[4096], plots[4096], cmpcsv[4096], zero[512];
	char shown[128] = "";
	ruma_exp_table t;
	ruma_exp_cmp_list l;
	size_t failed = 0, npng = 0;
	double t0 = ruma_now_sec();
	int rc, bad = 0;
	FILE *f;

	if (build_grid(e, o->quick, &g, err, sizeof(err))) {
		fprintf(stderr, "ruma demo: %s: %s\n", e->name, err);
		return 1;
	}
	if (snprintf(csv, sizeof(csv), "%s/%s.csv", o->dir, e->name) >= (int)sizeof(csv) ||
	    snprintf(plots, sizeof(plots), "%s/plots/%s", o->dir, e->name) >= (int)sizeof(plots) ||
	    snprintf(cmpcsv, sizeof(cmpcsv), "%s/compare-%s.csv", o->dir, e->name) >=
		    (int)sizeof(cmpcsv)) {
		fprintf(stderr, "ruma demo: output path too long\n");
		return 1;
	}
	fprintf(stderr, "demo: [%zu/%zu] %s: %zu variants x %zu sizes x (%ld reps + %ld warm-up)\n",
		index, total, e->name, ruma_exp_grid_variants(&g), g.nsizes, g.reps, g.warmup);
	so.out = csv;
	so.force = 1;
	rc = ruma_exp_sweep(&g, &so, &failed, err, sizeof(err));
	if (rc == -EINTR)
		return rc;
	out2(sum, "\n== %s: %s\n", e->name, e->title);
	if (rc) {
		out2(sum, "  sweep failed: %s\n", err);
		return 1;
	}
	rc = ruma_exp_table_read(csv, &t, err, sizeof(err));
	if (rc) {
		out2(sum, "  cannot read %s: %s\n", csv, err);
		return 1;
	}
	grid_line(sum, &g);
	failures(sum, &t);
	bad = failed > 0;
	rc = ruma_exp_compare(&t, e->baseline, NULL, 2000, 1, &l, err, sizeof(err));
	if (rc) {
		out2(sum, "  no comparison: %s\n", err);
		ruma_exp_table_free(&t);
		return 1;
	}
	for (size_t m = 0; m < RUMA_ARRAY_SIZE(e->metrics) && e->metrics[m]; m++)
		summarize_metric(sum, &t, &l, e->metrics[m], e->explain[m]);
	if (!strcmp(e->name, "art"))
		huge_note(sum, &t);
	f = fopen(cmpcsv, "w");
	if (f) {
		ruma_exp_cmp_csv(&l, f);
		fclose(f);
	}
	ruma_exp_cmp_free(&l);
	for (size_t m = 0; m < RUMA_ARRAY_SIZE(e->metrics) && e->metrics[m]; m++)
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "%s%s", m ? "," : "",
			 e->metrics[m]);
	/* the charts of the metrics the tables show: each a table's picture */
	rc = ruma_exp_plot(&t, plots, e->baseline, shown, &npng, zero, sizeof(zero), err,
			   sizeof(err));
	if (rc)
		out2(sum, "  charts: none (%s)\n", err);
	else
		out2(sum, "  %zu charts in %s/{all,ratio}%s%s%s; %.0f s\n", npng, plots,
		     zero[0] ? " (none of " : "", zero, zero[0] ? ": every median 0)" : "",
		     ruma_now_sec() - t0);
	ruma_exp_table_free(&t);
	return bad;
}

int ruma_cmd_demo(int argc, char **argv)
{
	struct demo_opts o = { 0 };
	char dir[4096], sumpath[4096];
	size_t total = 0, index = 0;
	int rc = 0, failed = 0;
	double t0 = ruma_now_sec();
	char bad[64];
	FILE *sum;

	ruma_opt_error e;
	if (ruma_opt_parse(options, RUMA_ARRAY_SIZE(options), argc, argv, 1, &o, NULL, 0, NULL, &e) &&
	    e.status != RUMA_OPT_STOPPED) {
		fprintf(stderr, "ruma demo: unknown argument '%s' (see --help)\n", e.arg);
		return 2;
	}
	if (o.help) {
		usage(stdout);
		return 0;
	}
	if (unknown_name(o.only, bad, sizeof(bad))) {
		fprintf(stderr, "ruma demo: --only: unknown experiment '%s' (vector, art, vmcache)\n",
			bad);
		return 2;
	}
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(experiments); i++)
		total += wanted(o.only, experiments[i].name);
	if (!total) {
		fprintf(stderr, "ruma demo: --only names none of vector, art, vmcache\n");
		return 2;
	}
	if (o.dir && !*o.dir) {
		fprintf(stderr, "ruma demo: --out needs a directory name\n");
		return 2;
	}
	if (!o.dir) {
		time_t now = time(NULL);
		struct tm tm;
		char stamp[32];

		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(dir, sizeof(dir), "results/demo-%s", stamp);
		o.dir = dir;
	}
	rc = ruma_exp_mkdirs(o.dir);
	if (rc) {
		fprintf(stderr, "ruma demo: cannot create %s: %s\n", o.dir, strerror(-rc));
		return 1;
	}
	if (snprintf(sumpath, sizeof(sumpath), "%s/summary.txt", o.dir) >= (int)sizeof(sumpath)) {
		fprintf(stderr, "ruma demo: --out path too long\n");
		return 2;
	}
	sum = fopen(sumpath, "w");
	if (!sum) {
		fprintf(stderr, "ruma demo: cannot write %s: %s\n", sumpath, strerror(errno));
		return 1;
	}
	ruma_exp_signals_install();
	fprintf(stderr, "demo: %s; results in %s\n",
		o.quick ? "quick mode (tiny sizes, seconds; too small to conclude anything)" :
			  "about 100 s on 2 cores; numbers vary with machine load",
		o.dir);
	out2(sum, "ruma demo%s — median [min-max] over repetitions, ratio = variant / baseline,\n"
		  "95%% bootstrap interval; 'no difference beyond the noise' when it contains 1.\n",
	     o.quick ? " --quick" : "");
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(experiments); i++) {
		if (!wanted(o.only, experiments[i].name))
			continue;
		rc = run_experiment(&experiments[i], &o, sum, ++index, total);
		if (rc == -EINTR)
			break;
		failed |= rc != 0;
	}
	if (rc == -EINTR) {
		out2(sum, "\ninterrupted; partial results in %s\n", o.dir);
		fclose(sum);
		return 1;
	}
	{
		char *abs = realpath(o.dir, NULL);

		out2(sum, "\ndemo took %.0f s. Results (CSVs, compare-*.csv, plots/, summary.txt) "
			  "in:\n%s\n",
		     ruma_now_sec() - t0, abs ? abs : o.dir);
		free(abs);
	}
	if (fclose(sum))
		failed = 1;
	return failed ? 1 : 0;
}
