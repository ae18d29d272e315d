/*
 * cmd_rewire.c — `ruma rewire`: the rewiring cost benchmark
 * (bench/rewire/rewirebench.c): the usage text and the call of the driver's
 * parser and run (bench/rewire/rewire_cli.c), which map errors to exit
 * codes: 0 ok, 1 failure, 2 bad usage or a size the machine's limits cannot
 * hold.
 *
 * Syscalls: none.
 */
#include "bench/common/opt.h"
#include "bench/rewire/rewirebench.h"


#include <stdio.h>

int ruma_cmd_rewire(int argc, char **argv);
extern const char ruma_cmd_rewire_summary[];
const char ruma_cmd_rewire_summary[] =
	"rewiring cost: per-page vs per-run mmap, populate vs touch, 4K vs 2M, mremap move";

extern char **environ;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma rewire [--pages N] [--reps R] [--csv FILE] [--reserve-huge N]\n"
		"                   [--no-huge] [--seed S] [--result FILE]\n"
		"  --pages N         4 KiB pages per measurement (default 16384 = 64 MiB); the\n"
		"                    2 MiB set uses the same bytes, as far as huge pages are free\n"
		"  --reps R          measured repetitions after one warm-up (default 7, >= 1)\n"
		"  --csv FILE        write the CSV rows to FILE instead of stdout\n"
		"  --reserve-huge N  raise vm.nr_hugepages by N for the run, restore it after (root)\n"
		"  --no-huge         skip the 2 MiB set\n"
		"  --seed S          seed of the random pairings (default: $RUMA_SEED or clock)\n"
		"  --result FILE     also write the measurements as rows metric,unit,value,params\n"
		"CSV columns: variant,page_size,pages,rep,seconds,ns_per_page (stdout);\n"
		"summary (median/min/max per variant) and notes on stderr.\n");
}

int ruma_cmd_rewire(int argc, char **argv)
{
	ruma_rewirebench_opts o;
	char err[512];

	int rc = ruma_rewirebench_parse(argc, argv, environ, &o, err, sizeof(err));
	int st = ruma_opt_outcome(rc, err, o.usage_after, o.help, usage);

	return st >= 0 ? st : ruma_rewirebench_run(&o);
}
