/*
 * cmd_art.c — `ruma art <n> <mode> [--alloc NAME] [--reps R] [--seed S]
 * [--lookups T] [--batch W] [--result FILE]`:
 * Leis's ART benchmark (ART.cpp, JigaoLuo/duckdb) on ruma's ART over one of ruma's
 * allocator backends (u64 mode and its fast path for modes 0-2, TID mode
 * for mode 3).  A run whose keys and tree cannot fit into the memory the
 * machine and the cgroup leave is refused before it starts (exit 2).  Prints the node sizes, then per repetition the
 * lines insert,n,Mops / lookup,n,Mops / erase,n,Mops, each followed by the
 * per-operation counter table and faults/memory lines; a summary for R > 1.
 * Usage text only; the parser and the driver are bench/art/ (art_cli.c,
 * artbench.c).  No system calls.
 */
#include "bench/art/artbench.h"
#include "bench/common/opt.h"

#include <ruma/art.h>


#include <stdio.h>

int ruma_cmd_art(int argc, char **argv);
extern const char ruma_cmd_art_summary[];
const char ruma_cmd_art_summary[] =
	"Leis's ART benchmark: insert/lookup/erase n keys (modes 0-3) over an allocator";

extern char **environ;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma art <n> <mode> [--alloc NAME] [--reps R] [--seed S] [--lookups T]\n"
		"                [--batch W] [--result FILE]\n"
		"  n        number of keys (> 0; \"1e6\" style accepted)\n"
		"  mode     as Leis's ART.cpp, keys from the C library's rand() after srand(seed):\n"
		"           0 = dense keys 1..n inserted sorted, 1 = the same keys shuffled\n"
		"           (std::random_shuffle's method), 2 = keys (rand() << 32) | rand();\n"
		"           the key is its own TID.  3 = random keys using all 64 bits (ruma's\n"
		"           generator; TIDs are row numbers, keys found through keys[tid])\n"
		"  --alloc  libc (default), pool, mempool, huge (also huge-thp, huge-4k);\n"
		"           compare glibc/jemalloc/mimalloc with LD_PRELOAD and --alloc libc\n"
		"  --reps   repeat the insert/lookup/erase cycle R times (default 1); for R > 1\n"
		"           a summary (median/min/max Mops, first repetition discarded) follows\n"
		"  --seed   key seed (default 1: the keys of Leis's ART.cpp, which never\n"
		"           calls srand; modes 0-2 use srand(seed mod 2^32))\n"
		"  --lookups T  lookups in total: the key array is looked up max(1, T/n) times\n"
		"           (default 1e7, as Leis's benchmark)\n"
		"  --batch W  0 (default) = one lookup at a time; 1..%d = batched lookups\n"
		"           with W in flight (ruma_art_u64_lookup_batch, %d keys per call;\n"
		"           modes 0-2 only, mode 3 stays single)\n"
		"  --result FILE  also write the measurements as rows metric,unit,value,params\n"
		"           (docs/experiments.md)\n",
		RUMA_ART_BATCH_MAX, ARTBENCH_BATCH_CHUNK);
}

int ruma_cmd_art(int argc, char **argv)
{
	artbench_opts o;
	char err[512];

	int rc = artbench_parse(argc, argv, environ, &o, err, sizeof(err));
	int st = ruma_opt_outcome(rc, err, o.usage_after, o.help, usage);

	return st >= 0 ? st : artbench_run(&o);
}
