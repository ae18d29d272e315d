/*
 * sweep_art.c — `ruma art` as a system of `ruma sweep` (common/sweep.h):
 * parameters n, mode, alloc, lookups, batch, seed (preload and impl are the
 * sweep's own: LD_PRELOAD of the child, a peer program instead of ruma);
 * the metrics are the rows in Mops of the result file — insert, lookup and
 * erase — the first repetition's when several were run; the note rows
 * (where the huge-page allocator got its pages, one per source it used)
 * become the run's note.
 *
 * Syscalls: none.
 */
#include "bench/common/sweep.h"

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

static void art_rows(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n)
{
	char rep[32], note[sizeof(rows->params)];

	for (size_t i = 0; i < n; i++) {
		const char *r = ruma_result_param(&rows[i], "rep", rep, sizeof(rep));
		if (!strcmp(rows[i].unit, "Mops") && r && !strcmp(r, "1"))
			run->metric(run, rows[i].metric, rows[i].unit, rows[i].value);
		else if (!strcmp(rows[i].unit, "note") && run->note &&
			 ruma_result_param(&rows[i], "note", note, sizeof(note)))
			run->note(run, note);
	}
}

const ruma_sweep_adapter ruma_sweep_art = {
	.system = "art",
	.keys = "n,mode,alloc,lookups,batch,preload,impl,seed",
	.required = { "n", NULL },
	.argv = art_argv,
	.rows = art_rows,
};
