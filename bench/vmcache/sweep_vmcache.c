/*
 * sweep_vmcache.c — `ruma vmcache` as a system of `ruma sweep`
 * (bench/common/sweep.h): parameters block (default: the sweep's scratch
 * store), virtgb, physgb, batch, runfor, threads, datasize, workload, wait,
 * evict, write, reuse, check, keep (keep=1: --keep, the store loaded by the
 * first run is reused by the later ones); the metrics tx, rmb and wmb are the means of
 * the per-second result rows after the first second (load, cold cache) —
 * a run of one second keeps its only row; with load_time=1 also "load", the
 * seconds the load took (runs that loaded).  A peer (impl=NAME) runs as
 * PATH DIR DATASIZE RUNFOR THREADS (DIR a scratch directory of the sweep the
 * peer may empty and fill; bench/peers/vmcache_peer_lmdb.c takes exactly these)
 * with the original vmcache's environment variables set from the same
 * parameters (BLOCK=DIR/block, an empty file the sweep makes before each
 * peer run; VIRTGB, PHYSGB, BATCH, RUNFOR, THREADS, DATASIZE, and RNDREAD=1
 * for rndread, 0 for tpcc), so that the original's binary is a peer as it
 * is, and prints vmcache's per-second CSV (ts,tx,rmb,wmb,...), read as the rows.
 *
 * Syscalls: none.
 */
#include "bench/common/sweep.h"
#include "bench/vmcache/driver.h"

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
	ruma_sweep_push_flag(run, "--keep", "keep");
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
	char ts[32];
	if (!ruma_result_param(row, "ts", ts, sizeof(ts)))
		return false;
	snprintf(buf, len, "%s", row->metric);
	return true;
}

static void vmcache_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	const char *load = run->param(run, "load_time");
	bool on = false;

	if (!ruma_sweep_means(run, rows, n, after_first_second, 0, true, NULL))
		(void)ruma_sweep_means(run, rows, n, any_second, 0, true, NULL);
	if (load && !ruma_parse_bool(load, &on) && on)
		(void)ruma_sweep_mean_of(run, rows, n, "load", 0);
}

/* PATH DIR DATASIZE RUNFOR THREADS (defaults as ruma vmcache's) */
static void vmcache_peer_argv(const ruma_sweep_run *run)
{
	static char dir[600]; /* pushed: must outlive the call (one run at a time) */
	const char *datasize = run->param(run, "datasize"), *runfor = run->param(run, "runfor");
	const char *threads = run->param(run, "threads");

	snprintf(dir, sizeof(dir), "%s.peer", run->store);
	run->push(run, dir);
	run->push(run, datasize ? datasize : "10");
	run->push(run, runfor ? runfor : "30");
	run->push(run, threads ? threads : "1");
}

/* The original vmcache's variables: those the run sets, BLOCK in DIR, and
 * RNDREAD from the workload (rndread when none is given, as for ruma). */
static void vmcache_peer_env(const ruma_sweep_run *run)
{
	static const char *const vars[][2] = {
		{ "virtgb", "VIRTGB" }, { "physgb", "PHYSGB" },     { "batch", "BATCH" },
		{ "runfor", "RUNFOR" }, { "threads", "THREADS" }, { "datasize", "DATASIZE" },
	};
	const char *workload = run->param(run, "workload");
	char block[600];

	snprintf(block, sizeof(block), "%s.peer/block", run->store);
	run->env(run, "BLOCK", block);
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(vars); i++) {
		const char *v = run->param(run, vars[i][0]);
		if (v)
			run->env(run, vars[i][1], v);
	}
	if (!workload || !strcmp(workload, "rndread"))
		run->env(run, "RNDREAD", "1");
	else if (!strcmp(workload, "tpcc"))
		run->env(run, "RNDREAD", "0");
}

/* One CSV line "ts,tx,rmb,wmb,..." into three rows; false for other lines. */
static bool csv_second(const char *line, ruma_result_row *r)
{
	char *end;
	double f[4];
	const char *p = line;

	for (int i = 0; i < 4; i++) {
		f[i] = strtod(p, &end);
		if (end == p || (*end != ',' && i < 3) || !(f[i] >= 0))
			return false;
		p = end + 1;
	}
	static const char *const metric[3] = { "tx", "rmb", "wmb" };
	static const char *const unit[3] = { "tx/s", "MiB/s", "MiB/s" };
	for (int i = 0; i < 3; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		snprintf(r[i].metric, sizeof(r[i].metric), "%s", metric[i]);
		snprintf(r[i].unit, sizeof(r[i].unit), "%s", unit[i]);
		r[i].value = f[i + 1];
		snprintf(r[i].params, sizeof(r[i].params), "ts=%.0f", f[0]);
	}
	return true;
}

static void vmcache_peer_out(const ruma_sweep_run *run, const char *out)
{
	size_t lines = 1, n = 0;
	ruma_result_row *rows;

	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	rows = calloc(3 * lines, sizeof(*rows));
	if (!rows)
		return;
	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');
		char line[256];
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		snprintf(line, sizeof(line), "%.*s", (int)(l < sizeof(line) ? l : sizeof(line) - 1), p);
		if (csv_second(line, &rows[n]))
			n += 3;
		p += l + (nl ? 1 : 0);
	}
	vmcache_rows(run, rows, n);
	free(rows);
}

static int vmcache_check(int argc, char **argv, char *const *envp, char *err, size_t len)
{
	ruma_vmcache_opts o;

	return ruma_vmcache_parse(argc, argv, envp, &o, err, len);
}

const ruma_sweep_adapter ruma_sweep_vmcache = {
	.system = "vmcache",
	.keys = "block,virtgb,physgb,batch,runfor,threads,datasize,workload,wait,evict,write,"
		"reuse,check,keep,load_time,impl",
	.required = { NULL },
	.argv = vmcache_argv,
	.check = vmcache_check,
	.rows = vmcache_rows,
	.peer_argv = vmcache_peer_argv,
	.peer_env = vmcache_peer_env,
	.peer_out = vmcache_peer_out,
};
