/*
 * sweep_vmcache.c — `ruma vmcache` as a system of `ruma sweep`
 * (bench/common/sweep.h): parameters block (default: the sweep's scratch
 * store), virtgb, physgb, batch, runfor, threads, datasize, workload, wait,
 * evict, write, reuse, check; the metrics tx, rmb and wmb are the means of
 * the per-second result rows after the first second (load, cold cache) —
 * a run of one second keeps its only row.
 *
 * Syscalls: none.
 */
#include "bench/common/sweep.h"

#include <ruma/core.h>

#include <stdlib.h>
#include <string.h>

static void vmcache_argv(const ruma_sweep_run *run)
{
	static const char *const flags[][2] = {
		{ "virtgb", "--virtgb" },     { "physgb", "--physgb" }, { "batch", "--batch" },
		{ "runfor", "--runfor" },     { "threads", "--threads" },
		{ "datasize", "--datasize" }, { "workload", "--workload" },
		{ "wait", "--wait" },         { "evict", "--evict" },   { "write", "--write" },
	};
	const char *block = run->param(run, "block"), *reuse = run->param(run, "reuse");
	bool b;

	run->push(run, "vmcache");
	run->push(run, "--block");
	run->push(run, block ? block : run->store);
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(flags); i++)
		ruma_sweep_push_opt(run, flags[i][1], flags[i][0]);
	if (reuse && !ruma_parse_bool(reuse, &b) && !b)
		run->push(run, "--no-reuse");
	ruma_sweep_push_flag(run, "--check", "check");
	run->push(run, "--seed");
	run->push(run, run->seed);
}

/* Rows of the seconds after the first (all of them when there is one second). */
static bool after_first_second(const ruma_result_row *row, char *buf, size_t len)
{
	char ts[32];
	if (!ruma_result_param(row, "ts", ts, sizeof(ts)) || !strcmp(ts, "0"))
		return false;
	snprintf(buf, len, "%s", row->metric);
	return true;
}

static bool any_second(const ruma_result_row *row, char *buf, size_t len)
{
	snprintf(buf, len, "%s", row->metric);
	return true;
}

static void vmcache_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	if (!ruma_sweep_means(run, rows, n, after_first_second, 0, true, NULL))
		(void)ruma_sweep_means(run, rows, n, any_second, 0, true, NULL);
}

const ruma_sweep_adapter ruma_sweep_vmcache = {
	.system = "vmcache",
	.keys = "block,virtgb,physgb,batch,runfor,threads,datasize,workload,wait,evict,write,"
		"reuse,check",
	.required = { NULL },
	.argv = vmcache_argv,
	.rows = vmcache_rows,
};
