/*
 * cmd_compare.c — `ruma compare <sweep.csv> --baseline VAR=VALUE`: every
 * variant of a sweep against its baseline, per size and overall, with ratio of
 * medians, bootstrap 95% interval, per-rep ratio range and a plain verdict
 * (tools/exp/stats.c; docs/experiments.md).  Never sums across sizes.
 *
 * Invariants: warm-up and failed rows are ignored; the same seed gives the same
 * intervals.  Syscalls: none beyond stdio.
 */
#include "tools/exp/exp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ruma_cmd_compare(int argc, char **argv);
extern const char ruma_cmd_compare_summary[];
const char ruma_cmd_compare_summary[] =
	"variants of a sweep CSV vs a baseline: ratio of medians, bootstrap CI, verdict";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma compare <sweep.csv> [--baseline VAR=VALUE[,VAR=VALUE]] [--metric M]\n"
		"                    [--csv] [--resamples N] [--seed S]\n"
		"  --baseline   the reference: each variant is compared with the variant that has\n"
		"               these values and its own values elsewhere (default: the first\n"
		"               variant in the CSV)\n"
		"  --metric M   only this metric (tx, rmb, wmb; insert, lookup, erase; a micro\n"
		"               phase such as vector-insert, or total); default all\n"
		"  --csv        machine-readable CSV instead of the table\n"
		"  --resamples  bootstrap resamples (default 2000, >= 100)\n"
		"  --seed       bootstrap seed (default 1)\n"
		"Per size: ratio = median(variant)/median(baseline) over the measured reps, 95%%\n"
		"bootstrap interval, min-max of the per-rep ratios.  Overall: geometric mean of the\n"
		"per-size ratios.  Verdict: faster / slower, or 'no difference beyond the noise'\n"
		"when the interval contains 1 (tx/s, Mops: higher is better; s: lower is better;\n"
		"MiB/s: higher/lower only).  Exit: 0 ok, 1 error, 2 bad input.\n");
}

int ruma_cmd_compare(int argc, char **argv)
{
	const char *path = NULL, *baseline = NULL, *metric = NULL;
	char err[RUMA_EXP_ERR] = "", defbase[RUMA_EXP_STR * 2];
	uint64_t resamples = 2000, seed = 1;
	int csv = 0, rc;
	ruma_exp_table t;
	ruma_exp_cmp_list l;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--csv")) {
			csv = 1;
		} else if (a[0] != '-') {
			if (path) {
				fprintf(stderr, "ruma compare: one CSV only (got '%s')\n", a);
				return 2;
			}
			path = a;
		} else if (i + 1 >= argc) {
			fprintf(stderr, "ruma compare: %s needs a value (see --help)\n", a);
			return 2;
		} else if (!strcmp(a, "--baseline")) {
			baseline = argv[++i];
		} else if (!strcmp(a, "--metric")) {
			metric = argv[++i];
		} else if (!strcmp(a, "--resamples")) {
			if (ruma_parse_u64(argv[++i], &resamples) || resamples < 100 ||
			    resamples > 1000000) {
				fprintf(stderr, "ruma compare: --resamples: 100..1000000\n");
				return 2;
			}
		} else if (!strcmp(a, "--seed")) {
			if (ruma_parse_u64(argv[++i], &seed)) {
				fprintf(stderr, "ruma compare: --seed: not a number\n");
				return 2;
			}
		} else {
			fprintf(stderr, "ruma compare: unknown option '%s' (see --help)\n", a);
			return 2;
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	rc = ruma_exp_table_read(path, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ruma compare: %s\n", err);
		return 2;
	}
	if (!baseline) {
		ruma_exp_default_baseline(&t, defbase, sizeof(defbase));
		baseline = defbase;
		if (!csv)
			fprintf(stderr, "compare: no --baseline given, using %s\n", baseline);
	}
	rc = ruma_exp_compare(&t, baseline, metric, (unsigned)resamples, seed, &l, err,
			      sizeof(err));
	ruma_exp_table_free(&t);
	if (rc) {
		fprintf(stderr, "ruma compare: %s\n", err[0] ? err : ruma_strerror(rc));
		return rc == -ENOMEM ? 1 : 2;
	}
	if (csv)
		ruma_exp_cmp_csv(&l, stdout);
	else
		ruma_exp_cmp_print(&l, stdout);
	ruma_exp_cmp_free(&l);
	return fflush(stdout) ? 1 : 0;
}
