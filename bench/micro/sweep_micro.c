/*
 * sweep_micro.c — `ruma micro` as a system of `ruma sweep` (common/sweep.h):
 * parameters method, test, n, runs (default 1) and fallback; the child runs
 * `ruma micro <method> <test> <n> <runs> false --seed S [--fallback]`.  The
 * metrics are the summary's averages: per phase field, the sum of its rows
 * over the runs divided by the number of runs (every field that took time,
 * in seconds, in the order they first appear), plus their sum "total".
 *
 * Syscalls: none.
 */
#include "bench/common/sweep.h"
#include "bench/micro/micro.h"

#include <ruma/core.h>

#include <stdio.h>
#include <string.h>

static void micro_argv(const ruma_sweep_run *run)
{
	const char *runs = run->param(run, "runs");

	run->push(run, "micro");
	run->push(run, run->param(run, "method"));
	run->push(run, run->param(run, "test"));
	run->push(run, run->param(run, "n"));
	run->push(run, runs ? runs : "1");
	run->push(run, "false");
	run->push(run, "--seed");
	run->push(run, run->seed);
	ruma_sweep_push_flag(run, "--fallback", "fallback");
}

static bool field_name(const ruma_result_row *row, char *buf, size_t len)
{
	if (!strcmp(row->metric, "build"))
		return false;
	snprintf(buf, len, "%s", row->metric);
	return true;
}


static void micro_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	double runs = 1, total;
	char buf[32];

	if (n && ruma_result_param(&rows[0], "runs", buf, sizeof(buf)))
		(void)ruma_parse_double(buf, &runs);
	if (ruma_sweep_means(run, rows, n, field_name, runs, false, &total))
		run->metric(run, "total", "s", total);
	const char *build = run->param(run, "build");
	bool on = false;
	if (build && ruma_parse_bool(build, &on) == 0 && on)
		(void)ruma_sweep_mean_of(run, rows, n, "build", runs);
}
static int micro_check(int argc, char **argv, char *const *envp, char *err, size_t len)
{
	micro_opts o;

	return micro_parse(argc, argv, envp, &o, err, len);
}

const ruma_sweep_adapter ruma_sweep_micro = {
	.system = "micro",
	.keys = "method,test,n,runs,fallback,build",
	.required = { "method", "test", "n", NULL },
	.argv = micro_argv,
	.check = micro_check,
	.rows = micro_rows,
};
