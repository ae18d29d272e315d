/*
 * cmd_compare.c — `ruma compare <sweep.csv> --baseline VAR=VALUE`: every
 * variant of a sweep against its baseline, per size and overall, with ratio of
 * medians, bootstrap 95% interval, per-rep ratio range and a plain verdict
 * (tools/exp/stats.c; docs/experiments.md).  Never sums across sizes.
 *
 * Invariants: warm-up and failed rows are ignored; the same seed gives the same
 * intervals.  Syscalls: none beyond stdio.  Options: the drivers' option
 * table (bench/common/opt.h).
 */
#include "bench/common/opt.h"
#include "tools/exp/exp.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* The command line. */
struct compare_cli {
	const char *baseline, *metric;
	uint64_t resamples, seed;
	bool csv, help;
};

#define O(f) offsetof(struct compare_cli, f)
static const ruma_opt options[] = {
	{ "--baseline", RUMA_OPT_STR, O(baseline), 0, 0, NULL, NULL, 0 },
	{ "--metric", RUMA_OPT_STR, O(metric), 0, 0, NULL, NULL, 0 },
	{ "--resamples", RUMA_OPT_U64, O(resamples), 100, 1000000, "100..1000000", NULL, 0 },
	{ "--seed", RUMA_OPT_U64, O(seed), 0, UINT64_MAX, "not a number", NULL, 0 },
	{ "--csv", RUMA_OPT_FLAG, O(csv), 0, 0, NULL, NULL, 0 },
	{ "--help", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
};

/* Compare the sweep at path as c says; the exit status. */
static int compare(const char *path, const struct compare_cli *c)
{
	char err[RUMA_EXP_ERR] = "", defbase[RUMA_EXP_STR * 2];
	const char *baseline = c->baseline;
	ruma_exp_table t;
	ruma_exp_cmp_list l;

	int rc = ruma_exp_table_read(path, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ruma compare: %s\n", err);
		return 2;
	}
	if (!baseline) {
		ruma_exp_default_baseline(&t, defbase, sizeof(defbase));
		baseline = defbase;
		if (!c->csv)
			fprintf(stderr, "compare: no --baseline given, using %s\n", baseline);
	}
	rc = ruma_exp_compare(&t, baseline, c->metric, (unsigned)c->resamples, c->seed, &l, err,
			      sizeof(err));
	ruma_exp_table_free(&t);
	if (rc) {
		fprintf(stderr, "ruma compare: %s\n", err[0] ? err : ruma_strerror(rc));
		return rc == -ENOMEM ? 1 : 2;
	}
	if (c->csv)
		ruma_exp_cmp_csv(&l, stdout);
	else
		ruma_exp_cmp_print(&l, stdout);
	ruma_exp_cmp_free(&l);
	return fflush(stdout) ? 1 : 0;
}

int ruma_cmd_compare(int argc, char **argv)
{
	struct compare_cli c = { .resamples = 2000, .seed = 1 };
	const char *path = NULL;
	ruma_opt_error e;
	int npos;

	if (ruma_opt_parse(options, RUMA_ARRAY_SIZE(options), argc, argv, 1, &c, &path, 1, &npos,
			   &e) && e.status != RUMA_OPT_STOPPED)
		return ruma_opt_report("ruma compare", &e, NULL, "one CSV only", true);
	if (c.help) {
		usage(stdout);
		return 0;
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	return compare(path, &c);
}
