/*
 * cmd_rwbench.c — `ruma rwbench <vector|access|partition|pool|snapshot>`: benchmarks
 * of the data structures built on rewiring (bench/rewire/rwbench*.c).
 * The usage text and the call of the driver's parser and run
 * (bench/rewire/rwbench_cli.c), which map results to exit codes: 0 ok
 * (variants that a machine limit ruled out are reported on stderr), 1 a
 * measurement failed, 2 bad usage.
 *
 * Syscalls: none.
 */
#include "bench/common/opt.h"
#include "bench/rewire/rwbench.h"


#include <stdio.h>

int ruma_cmd_rwbench(int argc, char **argv);
extern const char ruma_cmd_rwbench_summary[];
const char ruma_cmd_rwbench_summary[] =
	"structures on rewiring: vector growth, access penalty, partitioning, pools, snapshots";

extern char **environ;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma rwbench <vector|access|partition|pool|snapshot> [options]\n"
		"  vector     push 2^min..2^max uint64 into rewired, copy, mremap, realloc and\n"
		"             indirect vectors; time and peak memory (one child process each)\n"
		"  access     seq/random read/write on rewired vs malloc'ed memory (ratios)\n"
		"  partition  traditional vs mapped partitioning of n random keys, each P\n"
		"  pool       rewiring vs software-indirection vs mmap allocation pools\n"
		"  snapshot   memcpy vs kernel COW vs rewired COW vs shuffled snapshots\n"
		"options:\n"
		"  --reps R             measured repetitions (default 5; one warm-up more runs first)\n"
		"  --seed S             seed (default $RUMA_SEED or clock; printed)\n"
		"  --huge               add the 2 MiB page variants\n"
		"  --reserve-huge N     raise vm.nr_hugepages by N for the run, restore after (root)\n"
		"  --only A,B,...       run only these variants (names as in the CSV)\n"
		"  --min-log A --max-log B   vector sizes 2^A..2^B (default 20..24, B <= 30)\n"
		"  --plus-one           vector: push 2^k + 1 elements (one past a growth step,\n"
		"                       where a copying vector holds old + new buffer)\n"
		"  --n N                access: words (default 2^24); partition: keys (default 2^24);\n"
		"                       pool, snapshot: bytes (default 128M); suffixes K/M/G\n"
		"                       and 1e6 accepted\n"
		"  --partitions LIST    partition counts, powers of two (default 16,64,256,1024)\n"
		"  --pages-per-block K  block size of the mapped partitioning methods (default 1)\n"
		"  --extent-pages E     pool pages reserved per partition by the -ext variants\n"
		"                       (default 1024)\n"
		"  --run-pages R        snapshot: pages per call of rewired-cow-run, rewired\n"
		"                       whatever R (rewire_min_pages R; default 64)\n"
		"  --csv FILE           CSV to FILE instead of stdout\n"
		"  --result FILE        also write the measurements as rows metric,unit,value,params\n"
		"CSV rows (one per measurement) on stdout, summaries on stderr.\n");
}

int ruma_cmd_rwbench(int argc, char **argv)
{
	ruma_rwbench_opts o;
	char err[512];

	int rc = ruma_rwbench_parse(argc, argv, environ, &o, err, sizeof(err));
	int st = ruma_opt_outcome(rc, err, o.usage_after, o.help, usage);

	return st >= 0 ? st : ruma_rwbench_run(&o);
}
