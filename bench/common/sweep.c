/*
 * sweep.c — helpers shared by the drivers' sweep adapters (sweep.h):
 * optional arguments from run parameters, and the means of result rows
 * grouped into metrics.
 *
 * Invariants: ruma_sweep_means reports each name once, in first-seen
 * order, and never more than RUMA_SWEEP_MAX_NAMES names (later ones are
 * ignored).  Syscalls: none.
 */
#include "bench/common/sweep.h"

#include <ruma/core.h>

#include <string.h>

#define RUMA_SWEEP_MAX_NAMES 64

void ruma_sweep_push_opt(const ruma_sweep_run *run, const char *flag, const char *key)
{
	const char *v = run->param(run, key);

	if (!v)
		return;
	run->push(run, flag);
	run->push(run, v);
}

void ruma_sweep_push_flag(const ruma_sweep_run *run, const char *flag, const char *key)
{
	const char *v = run->param(run, key);
	bool on = false;

	if (v && ruma_parse_bool(v, &on) == 0 && on)
		run->push(run, flag);
}

struct group {
	char name[64];
	const char *unit;
	double sum;
	size_t rows;
};

size_t ruma_sweep_means(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n,
			ruma_sweep_name_fn name_of, double divisor, bool keep_zero, double *total)
{
	struct group g[RUMA_SWEEP_MAX_NAMES];
	size_t ng = 0;
	char name[64];

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		if (!name_of(&rows[i], name, sizeof(name)))
			continue;
		while (k < ng && strcmp(g[k].name, name))
			k++;
		if (k == ng) {
			if (ng == RUMA_SWEEP_MAX_NAMES)
				continue;
			snprintf(g[ng].name, sizeof(g[ng].name), "%s", name);
			g[ng].unit = rows[i].unit;
			g[ng].sum = 0;
			g[ng++].rows = 0;
		}
		g[k].sum += rows[i].value;
		g[k].rows++;
	}
	if (total)
		*total = 0;
	for (size_t k = 0; k < ng; k++) {
		double mean = g[k].sum / (divisor > 0 ? divisor : (double)g[k].rows);
		if (total)
			*total += mean;
		if (mean > 0 || keep_zero)
			run->metric(run, g[k].name, g[k].unit, mean);
	}
	return ng;
}

bool ruma_sweep_mean_of(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n,
			const char *metric, double divisor)
{
	const char *unit = NULL;
	double sum = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].metric, metric)) {
			unit = unit ? unit : rows[i].unit;
			sum += rows[i].value;
			k++;
		}
	if (k)
		run->metric(run, metric, unit, sum / (divisor > 0 ? divisor : (double)k));
	return k > 0;
}
