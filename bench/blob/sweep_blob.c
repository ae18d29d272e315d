/*
 * sweep_blob.c — `ruma blob` as a system of `ruma sweep`
 * (bench/common/sweep.h): parameters store (the blob system: ruma,
 * ruma-read, ruma-rows, files; the sweep's own "system" is blob), mode, size (one
 * object size a run), ops, objects, data, threads, durability, cache,
 * put_mode, buffers, memory, churn_ops, churn_keys, min_size, max_size,
 * probe_size, probes and dir (default: a directory next to the sweep's scratch store),
 * so that a grid of systems x sizes x threads x durability runs
 * interleaved, each cell repeated and summarised as a median.  Metrics per
 * phase of the run (<op> is put, get, overwrite, delete, churn,
 * probe-churned, probe-fresh): <op>_objects_per_s, <op>_mb_per_s,
 * <op>_p50, <op>_p99 (s), <op>_wa_proc and <op>_wa_dev (device bytes per
 * payload byte), <op>_space_amp (store bytes per live byte); churn adds
 * probe_ratio.
 *
 * Syscalls: none.
 */
#include "bench/blob/blob.h"
#include "bench/common/sweep.h"

#include <ruma/core.h>

#include <stdio.h>
#include <string.h>

static void blob_argv(const ruma_sweep_run *run)
{
	static const char *const flags[][2] = {
		{ "store", "--system" },        { "mode", "--mode" },
		{ "size", "--sizes" },          { "ops", "--ops" },
		{ "objects", "--objects" },     { "data", "--data" },
		{ "threads", "--threads" },     { "durability", "--durability" },
		{ "cache", "--cache" },         { "put_mode", "--put-mode" },
		{ "buffers", "--buffers" },     { "memory", "--memory-limit" },
		{ "churn_ops", "--churn-ops" }, { "churn_keys", "--churn-keys" },
		{ "min_size", "--min-size" },   { "max_size", "--max-size" },
		{ "probe_size", "--probe-size" }, { "probes", "--probes" },
	};
	static char dir[600]; /* pushed: must outlive the call (one run at a time) */
	const char *d = run->param(run, "dir");

	run->push(run, "blob");
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(flags); i++)
		ruma_sweep_push_opt(run, flags[i][1], flags[i][0]);
	snprintf(dir, sizeof(dir), "%s.blob", run->store);
	run->push(run, "--dir");
	run->push(run, d ? d : dir);
	run->push(run, "--quiet");
	run->push(run, "--seed");
	run->push(run, run->seed);
}

static int blob_check(int argc, char **argv, char *const *envp, char *err, size_t len)
{
	ruma_blob_opts o;
	int rc = ruma_blob_parse(argc, argv, envp, &o, err, len);
	if (!rc && o.mode == RUMA_BLOB_CRASH) {
		snprintf(err, len, "ruma blob: --mode crash is a test, not a measurement\n");
		return RUMA_EPARSE;
	}
	return rc;
}

/* One row's metric: <op>_<metric> for the figures a grid compares. */
static void blob_row(const ruma_sweep_run *run, const ruma_result_row *row)
{
	static const char *const kept[] = { "objects_per_s", "mb_per_s", "p50", "p99",
					    "wa_proc", "wa_dev", "space_amp" };
	char op[32], name[112];
	if (!strcmp(row->metric, "probe_ratio")) {
		run->metric(run, row->metric, row->unit, row->value);
		return;
	}
	if (!ruma_result_param(row, "op", op, sizeof(op)))
		return;
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(kept); i++)
		if (!strcmp(row->metric, kept[i])) {
			snprintf(name, sizeof(name), "%s_%s", op, row->metric);
			run->metric(run, name, row->unit, row->value);
		}
}

static void blob_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		blob_row(run, &rows[i]);
}

const ruma_sweep_adapter ruma_sweep_blob = {
	.system = "blob",
	.keys = "store,mode,size,ops,objects,data,threads,durability,cache,put_mode,buffers,"
		"memory,churn_ops,churn_keys,min_size,max_size,probe_size,probes,dir",
	.required = { NULL },
	.argv = blob_argv,
	.check = blob_check,
	.rows = blob_rows,
};
