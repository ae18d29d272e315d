/*
 * cmd_guard.c — `ruma guard`: the deterministic workloads of the
 * instruction-count guard (docs/guard.md).  Natively it only runs them;
 * scripts/icount_guard.py runs it under callgrind, reads the instructions
 * per operation of each case and compares them with bench/guard/baseline.txt.
 * Usage text only; the driver is bench/guard/guard.c, the cases
 * bench/guard/guard_cases.c.
 */
#include "bench/guard/guard.h"

#include <stdio.h>

int ruma_cmd_guard(int argc, char **argv);
extern const char ruma_cmd_guard_summary[];
const char ruma_cmd_guard_summary[] =
	"the hot-path workloads of the instruction-count guard (scripts/icount_guard.py)";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma guard [--case NAME[,NAME...]] [--dir DIR] [--list]\n"
		"\n"
		"Runs each case (--list names them) for a fixed number of operations after\n"
		"a warm-up, from fixed seeds, and prints \"case NAME ops N\" when it is done.\n"
		"Under valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no each\n"
		"case's measured operations are one profile, \"guard NAME ops=N\":\n"
		"scripts/icount_guard.py does that and compares with bench/guard/baseline.txt.\n"
		"  --case  run only these cases\n"
		"  --dir   directory of the buffer manager's stores and logs (default $TMPDIR\n"
		"          or /tmp); removed when each case ends\n");
}

int ruma_cmd_guard(int argc, char **argv)
{
	ruma_guard_opts o;
	char err[512];

	if (ruma_guard_parse(argc, argv, &o, err, sizeof(err))) {
		fputs(err, stderr);
		usage(stderr);
		return 2;
	}
	if (o.help) {
		usage(stdout);
		return 0;
	}
	return ruma_guard_run(&o);
}
