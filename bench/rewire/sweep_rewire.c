/*
 * sweep_rewire.c — `ruma rewire` and `ruma rwbench` as systems of
 * `ruma sweep` (common/sweep.h).  Every variant of the driver runs inside
 * each child (interleaved there); the sweep repeats children and compares
 * its variables across them.  Metrics are the rows in seconds, per name the
 * mean over the child's repetitions (reps, default 1):
 *
 *   rewire   parameters pages, reps, seed, no_huge; metric <variant> for
 *            4 KiB pages, <variant>_2m for the 2 MiB set.
 *   rwbench  parameters bench (vector, access, partition, pool, snapshot),
 *            n, reps, huge, only, partitions, pages_per_block, extent_pages,
 *            min_log, max_log, plus_one, seed; metric <variant> followed by
 *            the row's test (access), phase (pool, snapshot), partitions
 *            (partition, as p<P>) or n (vector, as n<N>), and _all for the
 *            vector's all-cost rows.
 *
 * Syscalls: none.
 */
#include "bench/common/sweep.h"

#include <stdio.h>
#include <string.h>

static void rewire_argv(const ruma_sweep_run *run)
{
	const char *reps = run->param(run, "reps"), *seed = run->param(run, "seed");

	run->push(run, "rewire");
	ruma_sweep_push_opt(run, "--pages", "pages");
	run->push(run, "--reps");
	run->push(run, reps ? reps : "1");
	run->push(run, "--seed");
	run->push(run, seed ? seed : run->seed);
	ruma_sweep_push_flag(run, "--no-huge", "no_huge");
}

static bool rewire_name(const ruma_result_row *row, char *buf, size_t len)
{
	char ps[32];

	if (strcmp(row->unit, "s"))
		return false;
	const char *p = ruma_result_param(row, "page_size", ps, sizeof(ps));
	snprintf(buf, len, "%s%s", row->metric, p && strcmp(p, "4096") ? "_2m" : "");
	return true;
}

static void rewire_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	(void)ruma_sweep_means(run, rows, n, rewire_name, 0, true, NULL);
}

const ruma_sweep_adapter ruma_sweep_rewire = {
	.system = "rewire",
	.keys = "pages,reps,seed,no_huge",
	.required = { NULL },
	.argv = rewire_argv,
	.rows = rewire_rows,
};

static void rwbench_argv(const ruma_sweep_run *run)
{
	static const char *const opts[][2] = {
		{ "--n", "n" },
		{ "--only", "only" },
		{ "--partitions", "partitions" },
		{ "--pages-per-block", "pages_per_block" },
		{ "--extent-pages", "extent_pages" },
		{ "--min-log", "min_log" },
		{ "--max-log", "max_log" },
	};
	const char *reps = run->param(run, "reps"), *seed = run->param(run, "seed");

	run->push(run, "rwbench");
	run->push(run, run->param(run, "bench"));
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		ruma_sweep_push_opt(run, opts[i][0], opts[i][1]);
	ruma_sweep_push_flag(run, "--huge", "huge");
	ruma_sweep_push_flag(run, "--plus-one", "plus_one");
	run->push(run, "--reps");
	run->push(run, reps ? reps : "1");
	run->push(run, "--seed");
	run->push(run, seed ? seed : run->seed);
}

static bool rwbench_name(const ruma_result_row *row, char *buf, size_t len)
{
	char v[RUMA_RESULT_VALUE];

	if (strcmp(row->unit, "s"))
		return false;
	if (ruma_result_param(row, "test", v, sizeof(v)) ||
	    ruma_result_param(row, "phase", v, sizeof(v)))
		snprintf(buf, len, "%s_%s", row->metric, v);
	else if (ruma_result_param(row, "partitions", v, sizeof(v)))
		snprintf(buf, len, "%s_p%s", row->metric, v);
	else if (ruma_result_param(row, "n", v, sizeof(v)))
		snprintf(buf, len, "%s_n%s", row->metric, v);
	else
		snprintf(buf, len, "%s", row->metric);
	return true;
}

static void rwbench_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	(void)ruma_sweep_means(run, rows, n, rwbench_name, 0, true, NULL);
}

const ruma_sweep_adapter ruma_sweep_rwbench = {
	.system = "rwbench",
	.keys = "bench,n,reps,huge,only,partitions,pages_per_block,extent_pages,min_log,max_log,"
		"plus_one,seed",
	.required = { "bench", NULL },
	.argv = rwbench_argv,
	.rows = rwbench_rows,
};
