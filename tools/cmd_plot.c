/*
 * cmd_plot.c — `ruma plot <sweep.csv> --out DIR`: PNG charts of a sweep with
 * gnuplot: DIR/all/<metric>.png (all variants vs size, median with min-max
 * bars) and DIR/ratio/<metric>.png (each variant / its baseline with the 95%
 * bootstrap interval; tools/exp/plot.c).
 *
 * Invariants: the CSV is only read; without gnuplot the command says so and
 * exits 1.  Syscalls: via tools/exp (mkdir, fork/exec of gnuplot).  Options:
 * the drivers' option table (bench/common/opt.h).
 */
#include "bench/common/opt.h"
#include "tools/exp/exp.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

int ruma_cmd_plot(int argc, char **argv);
extern const char ruma_cmd_plot_summary[];
const char ruma_cmd_plot_summary[] =
	"PNG charts of a sweep CSV with gnuplot (all variants; ratios to the baseline)";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma plot <sweep.csv> --out DIR [--baseline VAR=VALUE] [--metric M[,M...]]\n"
		"  writes DIR/all/<metric>.png     all variants: median per size, bars min-max\n"
		"         DIR/ratio/<metric>.png   each variant / its baseline per size, bars the 95%%\n"
		"                                  bootstrap interval (as ruma compare), line at 1\n"
		"         DIR/data/*.dat, DIR/plot.gp  the plotted numbers and the gnuplot script\n"
		"  a metric whose medians are all zero gets no chart (it is named)\n"
		"  --baseline  as in ruma compare (default: the first variant in the CSV)\n"
		"  --metric M  only these metrics, comma-separated (default all)\n"
		"Needs gnuplot with the pngcairo terminal (Debian: gnuplot-nox).\n"
		"Exit: 0 ok, 1 gnuplot missing or failed, 2 bad input.\n");
}

/* The command line. */
struct plot_cli {
	const char *out, *baseline, *metric;
	bool help;
};

#define O(f) offsetof(struct plot_cli, f)
static const ruma_opt options[] = {
	{ "--out", RUMA_OPT_STR, O(out), 0, 0, NULL, NULL, 0 },
	{ "--baseline", RUMA_OPT_STR, O(baseline), 0, 0, NULL, NULL, 0 },
	{ "--metric", RUMA_OPT_STR, O(metric), 0, 0, NULL, NULL, 0 },
	{ "--help", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
};

/* The charts of the sweep at path, as c says; the exit status. */
static int plot(const char *path, const struct plot_cli *c)
{
	char err[RUMA_EXP_ERR] = "", defbase[RUMA_EXP_STR * 2], zero[512];
	const char *baseline = c->baseline;
	ruma_exp_table t;
	size_t n = 0;

	int rc = ruma_exp_table_read(path, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ruma plot: %s\n", err);
		return 2;
	}
	if (baseline && (rc = ruma_exp_check_baseline(&t, baseline, err, sizeof(err)))) {
		ruma_exp_table_free(&t);
		fprintf(stderr, "ruma plot: %s\n", err[0] ? err : ruma_strerror(rc));
		return 2;
	}
	if (!baseline) {
		ruma_exp_default_baseline(&t, defbase, sizeof(defbase));
		baseline = defbase;
	}
	rc = ruma_exp_plot(&t, c->out, baseline, c->metric, &n, zero, sizeof(zero), err,
			   sizeof(err));
	ruma_exp_table_free(&t);
	if (rc) {
		fprintf(stderr, "ruma plot: %s\n", err[0] ? err : ruma_strerror(rc));
		return rc == -EINVAL ? 2 : 1;
	}
	printf("plot: %zu charts in %s/all and %s/ratio (baseline %s)\n", n, c->out, c->out,
	       baseline);
	if (zero[0])
		printf("plot: no chart of %s: every median is 0\n", zero);
	return 0;
}

int ruma_cmd_plot(int argc, char **argv)
{
	struct plot_cli c = { 0 };
	const char *path = NULL;
	ruma_opt_error e;
	int npos;

	if (ruma_opt_parse(options, RUMA_ARRAY_SIZE(options), argc, argv, 1, &c, &path, 1, &npos,
			   &e) && e.status != RUMA_OPT_STOPPED)
		return ruma_opt_report("ruma plot", &e, NULL, "one CSV only", true);
	if (c.help) {
		usage(stdout);
		return 0;
	}
	if (!path || !c.out) {
		fprintf(stderr, "ruma plot: missing %s\n",
			!path ? "the sweep CSV to plot" : "--out DIR (where the charts go)");
		usage(stderr);
		return 2;
	}
	if (!*c.out) {
		fprintf(stderr, "ruma plot: --out needs a directory name\n");
		return 2;
	}
	return plot(path, &c);
}
