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
#include "common/sweep.h"

#include <ruma/core.h>

#include <stdbool.h>
#include <string.h>

#define MAX_FIELDS 40

static void micro_argv(const ruma_sweep_run *run)
{
	const char *runs = run->param(run, "runs"), *fb = run->param(run, "fallback");
	bool fallback = false;

	run->push(run, "micro");
	run->push(run, run->param(run, "method"));
	run->push(run, run->param(run, "test"));
	run->push(run, run->param(run, "n"));
	run->push(run, runs ? runs : "1");
	run->push(run, "false");
	run->push(run, "--seed");
	run->push(run, run->seed);
	if (fb && ruma_parse_bool(fb, &fallback) == 0 && fallback)
		run->push(run, "--fallback");
}

static void micro_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	const char *name[MAX_FIELDS];
	double sum[MAX_FIELDS], total = 0, runs = 1;
	size_t nf = 0;
	char buf[32];

	for (size_t i = 0; i < n; i++) {
		const char *r = ruma_result_param(&rows[i], "runs", buf, sizeof(buf));
		size_t f = 0;

		if (r)
			(void)ruma_parse_double(r, &runs);
		while (f < nf && strcmp(name[f], rows[i].metric))
			f++;
		if (f == nf) {
			if (nf == MAX_FIELDS)
				continue;
			name[nf] = rows[i].metric;
			sum[nf++] = 0;
		}
		sum[f] += rows[i].value;
	}
	if (!nf)
		return;
	for (size_t f = 0; f < nf; f++) {
		double avg = sum[f] / (runs > 0 ? runs : 1);
		total += avg;
		if (avg > 0)
			run->metric(run, name[f], "s", avg);
	}
	run->metric(run, "total", "s", total);
}

const ruma_sweep_adapter ruma_sweep_micro = {
	.system = "micro",
	.keys = "method,test,n,runs,fallback",
	.required = { "method", "test", "n", NULL },
	.argv = micro_argv,
	.rows = micro_rows,
};
