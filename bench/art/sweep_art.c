/*
 * sweep_art.c — `ruma art` as a system of `ruma sweep` (common/sweep.h):
 * parameters n, mode, alloc, lookups, batch, seed (preload and impl are the
 * sweep's own: LD_PRELOAD of the child, a peer program instead of ruma);
 * the metrics are the rows in Mops of the result file — insert, lookup and
 * erase — the first repetition's when several were run; with memory=1 also
 * <op>_faults (faults) and <op>_footprint, _index_bytes, _anon_huge,
 * _private_hugetlb, _alloc_mapped (bytes) of that repetition.  The note rows (where the huge-page allocator got its pages,
 * one per source it used) become the run's note.  A peer (impl=NAME) runs as
 * PATH <n> <mode>, the arguments of Leis's ART.cpp, with RUMA_SEED set to the
 * key seed (for peers built on ruma's ART driver, such as
 * bench/peers/art_judy_peer.c); preload=none runs the child without LD_PRELOAD.
 *
 * Syscalls: none.
 */
#include "bench/art/artbench.h"
#include "bench/common/sweep.h"

#include <ruma/core.h>

#include <string.h>

static void art_argv(const ruma_sweep_run *run)
{
	const char *mode = run->param(run, "mode"), *seed = run->param(run, "seed");

	run->push(run, "art");
	run->push(run, run->param(run, "n"));
	run->push(run, mode ? mode : "1");
	ruma_sweep_push_opt(run, "--alloc", "alloc");
	ruma_sweep_push_opt(run, "--lookups", "lookups");
	ruma_sweep_push_opt(run, "--batch", "batch");
	run->push(run, "--seed");
	run->push(run, seed ? seed : run->seed); /* seed=1: the keys of Leis's ART.cpp */
}

/* a memory metric of the result file: <op>_faults, _footprint, _index_bytes,
 * _anon_huge, _private_hugetlb, _alloc_mapped */
static bool memory_row(const ruma_result_row *row)
{
	static const char *const what[] = { "_faults",	  "_footprint",	      "_index_bytes",
					    "_anon_huge", "_private_hugetlb", "_alloc_mapped" };
	const char *u = strchr(row->metric, '_');

	for (size_t i = 0; u && i < sizeof(what) / sizeof(what[0]); i++)
		if (!strcmp(u, what[i]))
			return true;
	return false;
}

static void art_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	char rep[32], note[sizeof(rows->params)];
	const char *memory = run->param(run, "memory");
	bool mem = false;

	if (memory)
		(void)ruma_parse_bool(memory, &mem);
	for (size_t i = 0; i < n; i++) {
		const char *r = ruma_result_param(&rows[i], "rep", rep, sizeof(rep));
		bool first = r && !strcmp(r, "1");
		if (first && (!strcmp(rows[i].unit, "Mops") || (mem && memory_row(&rows[i]))))
			run->metric(run, rows[i].metric, rows[i].unit, rows[i].value);
		else if (!strcmp(rows[i].unit, "note") && run->note &&
			 ruma_result_param(&rows[i], "note", note, sizeof(note)))
			run->note(run, note);
	}
}

/* PATH <n> <mode>, as Leis's ART.cpp takes them */
static void art_peer_argv(const ruma_sweep_run *run)
{
	const char *mode = run->param(run, "mode");

	run->push(run, run->param(run, "n"));
	run->push(run, mode ? mode : "1");
}

static int art_check(int argc, char **argv, char *const *envp, char *err, size_t len)
{
	artbench_opts o;

	return artbench_parse(argc, argv, envp, &o, err, len);
}

const ruma_sweep_adapter ruma_sweep_art = {
	.system = "art",
	.keys = "n,mode,alloc,lookups,batch,preload,impl,seed,memory",
	.required = { "n", NULL },
	.argv = art_argv,
	.check = art_check,
	.rows = art_rows,
	.peer_argv = art_peer_argv,
};
