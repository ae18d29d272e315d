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
 *            min_log, max_log, log, plus_one, seed; metric <variant> followed
 *            by the row's test (access), phase (pool, snapshot), partitions
 *            (partition, as p<P>) or n (vector, as n<N>), and _all for the
 *            vector's all-cost rows.  When a child measures one size only —
 *            vector with log=L (2^L elements), partition with one partition
 *            count — the size is the sweep's axis, not part of the name:
 *            metrics <variant> (and <variant>_all) in s, per element
 *            <variant>_ns_per_op (ns/op: per push, per key), and for the
 *            vector <variant>_mem_per_data (B/B: peak memory over the 8-byte
 *            elements' bytes) — what a chart against the size shows.  With
 *            one variant per child (only=NAME, the sweep's variable) the
 *            variant leaves the names too: seconds, ns_per_op, all_seconds,
 *            all_ns_per_op, mem_per_data, so every variant is a line of
 *            the same chart.
 *
 * Syscalls: none.
 */
#include "bench/common/sweep.h"
#include "bench/rewire/rewirebench.h"
#include "bench/rewire/rwbench.h"

#include <ruma/core.h>

#include <stdio.h>
#include <stdlib.h>
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

static int rewire_check(int argc, char **argv, char *const *envp, char *err, size_t len)
{
	ruma_rewirebench_opts o;

	return ruma_rewirebench_parse(argc, argv, envp, &o, err, len);
}

const ruma_sweep_adapter ruma_sweep_rewire = {
	.system = "rewire",
	.keys = "pages,reps,seed,no_huge",
	.required = { NULL },
	.argv = rewire_argv,
	.check = rewire_check,
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
		{ "--min-log", "log" },
		{ "--max-log", "log" },
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

static bool metric_name(const ruma_result_row *row, char *buf, size_t len)
{
	snprintf(buf, len, "%s", row->metric);
	return true;
}

/* does the child measure one size only (the sweep's axis)? */
static bool one_size(const ruma_sweep_run *run)
{
	const char *bench = run->param(run, "bench"), *parts = run->param(run, "partitions");

	if (!bench)
		return false;
	if (!strcmp(bench, "vector"))
		return run->param(run, "log") != NULL;
	return !strcmp(bench, "partition") && parts && !strchr(parts, ',');
}

/* one derived row: metric name, unit and value */
static void derived(ruma_result_row *out, const char *name, const char *unit, double value)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->metric, sizeof(out->metric), "%.*s", (int)sizeof(out->metric) - 1, name);
	snprintf(out->unit, sizeof(out->unit), "%s", unit);
	out->value = value;
}

/* the name of a derived metric: head "<variant>[_all]" + "_" + what, or
 * (single: the child ran one variant, the sweep's variable) "[all_]" + what */
static void derived_name(char *buf, size_t len, const char *metric, const char *only,
			 const char *what)
{
	size_t ol = only ? strlen(only) : 0;

	if (only && !strncmp(metric, only, ol) && (!metric[ol] || metric[ol] == '_'))
		snprintf(buf, len, "%s%s%s", metric[ol] ? metric + ol + 1 : "",
			 metric[ol] ? "_" : "", what);
	else
		snprintf(buf, len, "%s_%s", metric, what);
}

/* One derived row per measured row of a one-size child: seconds, ns per
 * element, memory per data byte (name per derived_name). */
static size_t derive(const ruma_result_row *row, const char *only, ruma_result_row *d)
{
	char v[RUMA_RESULT_VALUE], head[64], name[96];
	size_t hl = strlen(row->metric);
	double elems;

	if (!ruma_result_param(row, "n", v, sizeof(v)) || ruma_parse_double(v, &elems) ||
	    elems <= 0)
		return 0;
	if (!strcmp(row->unit, "s")) {
		derived_name(name, sizeof(name), row->metric, only, "seconds");
		derived(&d[0], only ? name : row->metric, "s", row->value);
		derived_name(name, sizeof(name), row->metric, only, "ns_per_op");
		derived(&d[1], name, "ns/op", row->value * 1e9 / elems);
		return 2;
	}
	if (strcmp(row->unit, "bytes") || hl <= 5 || strcmp(row->metric + hl - 5, "_peak"))
		return 0;
	snprintf(head, sizeof(head), "%.*s", (int)(hl - 5), row->metric);
	derived_name(name, sizeof(name), head, only, "mem_per_data");
	derived(&d[0], name, "B/B", row->value / (8 * elems));
	return 1;
}

/* The rows of a one-size child: seconds, per element, memory per data byte. */
static void one_size_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	const char *only = run->param(run, "only");
	ruma_result_row *d = calloc(2 * n + 1, sizeof(*d));
	size_t k = 0;

	if (!d)
		return;
	if (only && strchr(only, ','))
		only = NULL; /* several variants per child: their names stay in the metrics */
	for (size_t i = 0; i < n; i++)
		k += derive(&rows[i], only, &d[k]);
	(void)ruma_sweep_means(run, d, k, metric_name, 0, true, NULL);
	free(d);
}

static void rwbench_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	if (one_size(run))
		one_size_rows(run, rows, n);
	else
		(void)ruma_sweep_means(run, rows, n, rwbench_name, 0, true, NULL);
}

static int rwbench_check(int argc, char **argv, char *const *envp, char *err, size_t len)
{
	ruma_rwbench_opts o;

	return ruma_rwbench_parse(argc, argv, envp, &o, err, len);
}

const ruma_sweep_adapter ruma_sweep_rwbench = {
	.system = "rwbench",
	.keys = "bench,n,reps,huge,only,partitions,pages_per_block,extent_pages,min_log,max_log,log,"
		"plus_one,seed",
	.required = { "bench", NULL },
	.argv = rwbench_argv,
	.check = rwbench_check,
	.rows = rwbench_rows,
};
