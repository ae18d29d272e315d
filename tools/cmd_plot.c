/*
 * cmd_plot.c — `ruma plot <sweep.csv> --out DIR`: PNG charts of a sweep with
 * gnuplot: DIR/all/<metric>.png (all variants vs size, median with min-max
 * bars) and DIR/ratio/<metric>.png (each variant / its baseline with the 95%
 * bootstrap interval; tools/exp/plot.c).
 *
 * Invariants: the CSV is only read; without gnuplot the command says so and
 * exits 1.  Syscalls: via tools/exp (mkdir, fork/exec of gnuplot).
 */
#include "tools/exp/exp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

int ruma_cmd_plot(int argc, char **argv)
{
	const char *path = NULL, *out = NULL, *baseline = NULL, *metric = NULL;
	char err[RUMA_EXP_ERR] = "", defbase[RUMA_EXP_STR * 2], zero[512];
	ruma_exp_table t;
	size_t n = 0;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (a[0] != '-') {
			if (path) {
				fprintf(stderr, "ruma plot: one CSV only (got '%s')\n", a);
				return 2;
			}
			path = a;
		} else if (i + 1 >= argc) {
			fprintf(stderr, "ruma plot: %s needs a value (see --help)\n", a);
			return 2;
		} else if (!strcmp(a, "--out")) {
			out = argv[++i];
		} else if (!strcmp(a, "--baseline")) {
			baseline = argv[++i];
		} else if (!strcmp(a, "--metric")) {
			metric = argv[++i];
		} else {
			fprintf(stderr, "ruma plot: unknown option '%s' (see --help)\n", a);
			return 2;
		}
	}
	if (!path || !out) {
		fprintf(stderr, "ruma plot: missing %s\n",
			!path ? "the sweep CSV to plot" : "--out DIR (where the charts go)");
		usage(stderr);
		return 2;
	}
	if (!*out) {
		fprintf(stderr, "ruma plot: --out needs a directory name\n");
		return 2;
	}
	rc = ruma_exp_table_read(path, &t, err, sizeof(err));
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
	rc = ruma_exp_plot(&t, out, baseline, metric, &n, zero, sizeof(zero), err, sizeof(err));
	ruma_exp_table_free(&t);
	if (rc) {
		fprintf(stderr, "ruma plot: %s\n", err[0] ? err : ruma_strerror(rc));
		return rc == -EINVAL ? 2 : 1;
	}
	printf("plot: %zu charts in %s/all and %s/ratio (baseline %s)\n", n, out, out, baseline);
	if (zero[0])
		printf("plot: no chart of %s: every median is 0\n", zero);
	return 0;
}
