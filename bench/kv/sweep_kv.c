/*
 * sweep_kv.c — `ruma kv` as a system of `ruma sweep` (bench/common/sweep.h):
 * parameters store (the kv system: ruma, lmdb, rocksdb, sqlite, leveldb,
 * wiredtiger; the sweep's own "system" is kv), workload, threads, records,
 * value_size, memory, durability, distribution, runfor, ops, load_batch
 * and dir (default: a directory next to the sweep's scratch store), so
 * that a grid of stores x workloads x threads runs interleaved.  Metrics:
 * throughput (ops/s of the run phase), <op>_p50, <op>_p99, <op>_p999
 * (s, per operation of the workload), load (s, when the workload loads)
 * and retries (conflicts retried); scanfull and scanwhilewriting also
 * entry_rate (entries/s), runs with a writer on ruma versions_peak (bytes)
 * and versions_floor_time (s, the version store's return to its floor
 * after the run); what a store cannot honour becomes the run's note.
 *
 * Syscalls: none.
 */
#include "bench/common/sweep.h"
#include "bench/kv/kv.h"

#include <ruma/core.h>

#include <stdio.h>
#include <string.h>

static void kv_argv(const ruma_sweep_run *run)
{
	static const char *const flags[][2] = {
		{ "store", "--system" },          { "workload", "--workload" },
		{ "threads", "--threads" },       { "records", "--records" },
		{ "value_size", "--value-size" }, { "memory", "--memory-limit" },
		{ "durability", "--durability" }, { "distribution", "--distribution" },
		{ "runfor", "--runfor" },         { "ops", "--ops" },
		{ "load_batch", "--load-batch" }, { "cgroup_limit", "--cgroup-limit" },
	};
	static char dir[600]; /* pushed: must outlive the call (one run at a time) */
	const char *d = run->param(run, "dir");

	run->push(run, "kv");
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(flags); i++)
		ruma_sweep_push_opt(run, flags[i][1], flags[i][0]);
	snprintf(dir, sizeof(dir), "%s.kv", run->store);
	run->push(run, "--dir");
	run->push(run, d ? d : dir);
	run->push(run, "--quiet");
	run->push(run, "--seed");
	run->push(run, run->seed);
}

static int kv_check(int argc, char **argv, char *const *envp, char *err, size_t len)
{
	ruma_kv_opts o;
	return ruma_kv_parse(argc, argv, envp, &o, err, len);
}

/* One row's metric: whole-phase rows only (ts=all), named as the header says. */
static void kv_row(const ruma_sweep_run *run, const ruma_result_row *row)
{
	char ts[16], op[16], name[48];
	if (!strcmp(row->unit, "note")) {
		char text[RUMA_RESULT_VALUE];
		if (!strcmp(row->metric, "unhonoured") && run->note &&
		    ruma_result_param(row, "note", text, sizeof(text)))
			run->note(run, text);
		return;
	}
	if (!ruma_result_param(row, "ts", ts, sizeof(ts)) || strcmp(ts, "all") ||
	    !ruma_result_param(row, "op", op, sizeof(op)))
		return;
	if (!strcmp(row->metric, "throughput") || !strcmp(row->metric, "retries") ||
	    !strcmp(row->metric, "load") || !strcmp(row->metric, "entry_rate") ||
	    !strcmp(row->metric, "versions_peak")) {
		run->metric(run, row->metric, row->unit, row->value);
	} else if (!strcmp(row->metric, "versions_floor_ms")) {
		/* seconds, the unit the comparison knows lower is better for */
		run->metric(run, "versions_floor_time", "s", row->value / 1e3);
	} else if (!strcmp(row->metric, "p50") || !strcmp(row->metric, "p99") ||
		   !strcmp(row->metric, "p999")) {
		snprintf(name, sizeof(name), "%s_%.8s", op, row->metric);
		run->metric(run, name, row->unit, row->value);
	}
}

static void kv_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kv_row(run, &rows[i]);
}

const ruma_sweep_adapter ruma_sweep_kv = {
	.system = "kv",
	.keys = "store,workload,threads,records,value_size,memory,durability,distribution,runfor,"
		"ops,load_batch,dir",
	.required = { "workload", NULL },
	.argv = kv_argv,
	.check = kv_check,
	.rows = kv_rows,
};
