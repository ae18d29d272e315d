/*
 * cmd_sweep.c — `ruma sweep`: run a grid of measurements (variants x sizes x
 * repetitions, warm-ups first, variants interleaved) of `ruma vmcache`,
 * `ruma art` or `ruma micro` as child processes and write one tidy CSV
 * (tools/exp/sweep.c; docs/experiments.md).
 *
 * Invariants: bad grids are rejected before anything runs (exit 2); rows are
 * flushed after every run; Ctrl-C kills the running child, keeps the rows and
 * prints the command that resumes.  Syscalls: via tools/exp (fork/exec, pipes).
 */
#include "tools/exp/exp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ruma_cmd_sweep(int argc, char **argv);
extern const char ruma_cmd_sweep_summary[];
const char ruma_cmd_sweep_summary[] =
	"run a variants x sizes x reps grid of vmcache/art/micro/rewire/rwbench into a CSV";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma sweep <vmcache|art|micro|rewire|rwbench> [grid options] --out FILE\n"
		"                  [--resume|--force]\n"
		"       ruma sweep --grid FILE [grid options] --out FILE\n"
		"grid options (repeatable where it makes sense):\n"
		"  --var NAME=V1,V2,...   a variable: every combination of values is a variant\n"
		"  --size NAME=S1,S2,...  the size axis (numbers: 1e5, 0.25, 64M); exactly one\n"
		"  --set NAME=VALUE       a fixed parameter\n"
		"  --peer NAME=PATH       an external program; a run with impl=NAME executes it:\n"
		"                         art: `PATH <n> <mode>`, its NAME,N,VALUE lines read (e.g.\n"
		"                         Leis's ART.cpp); vmcache: `PATH DIR DATASIZE RUNFOR\n"
		"                         THREADS`, its per-second CSV read (the LMDB peer);\n"
		"                         impl=ruma runs ruma's own subcommand\n"
		"  --reps N               measured repetitions per variant and size (default 5)\n"
		"  --warmup N             discarded warm-up rounds before them (default 1)\n"
		"  --seed N               seed of the run order and of the children (default 42)\n"
		"  --order shuffle|roundrobin   variant order within a round (default shuffle)\n"
		"  --timeout S            kill a run after S seconds (default 900)\n"
		"  --grid FILE            read the grid from FILE: system=art, var.alloc=libc,huge,\n"
		"                         size.n=1e5,1e6, set.mode=1, reps=5, warmup=1, ... (# comments)\n"
		"other options:\n"
		"  --out FILE             the CSV (required)\n"
		"  --resume               keep the measurements already in FILE, run the rest\n"
		"  --force                overwrite an existing FILE\n"
		"  --quiet                no progress on stderr\n"
		"parameters per system:\n"
		"  vmcache: %s\n  art: %s\n  micro: %s\n  rewire: %s\n  rwbench: %s\n  kv: %s\n"
		"examples:\n"
		"  ruma sweep art --var alloc=libc,huge --size n=1e5,1e6 --set mode=1 --out art.csv\n"
		"  ruma sweep art --peer leis=/path/to/ART --var impl=ruma,leis --var mode=0,1,2 \\\n"
		"      --set seed=1 --size n=1e6,1e7 --out art-leis.csv\n"
		"  ruma sweep vmcache --var wait=spin,futex --size datasize=1e5,1e6 --set runfor=3 \\\n"
		"      --set physgb=0.25 --set workload=rndread --reps 5 --out vm.csv\n"
		"  ruma sweep micro --var method=22,24 --set test=15 --size n=1e6,1e7 --out micro.csv\n"
		"  ruma sweep rwbench --set bench=partition --var pages_per_block=1,4 \\\n"
		"      --size n=1M,4M --out part.csv\n"
		"  ruma sweep kv --var store=ruma,lmdb --var workload=a,c --var threads=1,2 \\\n"
		"      --size records=1e5 --set runfor=10 --reps 5 --out ycsb.csv\n"
		"CSV columns: system,variant,<vars>,<sets>,size_param,size,rep,warmup,seed,metric,\n"
		"unit,value,status,note (one row per metric; see docs/experiments.md).\n"
		"Exit: 0 all measured, 1 some measurements failed or interrupted, 2 bad grid.\n",
		ruma_exp_system_keys(RUMA_EXP_VMCACHE), ruma_exp_system_keys(RUMA_EXP_ART),
		ruma_exp_system_keys(RUMA_EXP_MICRO), ruma_exp_system_keys(RUMA_EXP_REWIRE),
		ruma_exp_system_keys(RUMA_EXP_RWBENCH), ruma_exp_system_keys(RUMA_EXP_KV));
}

/* the command line, shell-quoted, with --resume added (and --force dropped) */
static void print_resume(int argc, char **argv)
{
	int has_resume = 0;

	fprintf(stderr, "resume with: ruma");
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--force"))
			continue;
		has_resume |= !strcmp(a, "--resume");
		if (a[strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			       "-_=.,/:+")] == '\0' && *a) {
			fprintf(stderr, " %s", a);
		} else {
			fputs(" '", stderr);
			for (; *a; a++)
				if (*a == '\'')
					fputs("'\\''", stderr);
				else
					fputc(*a, stderr);
			fputc('\'', stderr);
		}
	}
	fprintf(stderr, "%s\n", has_resume ? "" : " --resume");
}

int ruma_cmd_sweep(int argc, char **argv)
{
	static ruma_exp_grid g;
	struct ruma_exp_sweep_opts o = { 0 };
	char err[RUMA_EXP_ERR] = "";
	size_t failed = 0;
	int rc;

	ruma_exp_grid_init(&g);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		static const char *const items[] = { "var",    "size", "set",   "peer",   "reps",
						     "warmup", "seed", "order", "timeout" };
		int done = 0;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (a[0] != '-') {
			if (g.system >= 0 || ruma_exp_grid_add(&g, "system", a, err, sizeof(err))) {
				fprintf(stderr, "ruma sweep: %s\n",
					err[0] ? err : "more than one system given");
				return 2;
			}
			continue;
		}
		if (!strcmp(a, "--resume")) {
			o.resume = 1;
			continue;
		}
		if (!strcmp(a, "--force")) {
			o.force = 1;
			continue;
		}
		if (!strcmp(a, "--quiet")) {
			o.quiet = 1;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "ruma sweep: %s needs a value (see --help)\n", a);
			return 2;
		}
		if (!strcmp(a, "--out")) {
			o.out = argv[++i];
			continue;
		}
		if (!strcmp(a, "--grid")) {
			if (ruma_exp_grid_load(&g, argv[++i], err, sizeof(err))) {
				fprintf(stderr, "ruma sweep: %s\n", err);
				return 2;
			}
			continue;
		}
		for (size_t k = 0; k < RUMA_ARRAY_SIZE(items) && !done; k++)
			if (!strcmp(a + 2, items[k]) && a[1] == '-') {
				if (ruma_exp_grid_add(&g, items[k], argv[++i], err, sizeof(err))) {
					fprintf(stderr, "ruma sweep: %s\n", err);
					return 2;
				}
				done = 1;
			}
		if (!done) {
			fprintf(stderr, "ruma sweep: unknown option '%s' (see --help)\n", a);
			return 2;
		}
	}
	if (ruma_exp_grid_check(&g, err, sizeof(err))) {
		fprintf(stderr, "ruma sweep: %s\n", err);
		return 2;
	}
	if (!o.out) {
		fprintf(stderr, "ruma sweep: --out FILE is required\n");
		return 2;
	}
	if (o.resume && o.force) {
		fprintf(stderr, "ruma sweep: --resume and --force exclude each other\n");
		return 2;
	}
	ruma_exp_signals_install();
	if (!o.quiet)
		fprintf(stderr,
			"sweep: %s, %zu variants x %zu sizes x (%ld reps + %ld warm-up) = %zu runs, "
			"seed %llu -> %s\n",
			ruma_exp_system_name(g.system), ruma_exp_grid_variants(&g), g.nsizes, g.reps,
			g.warmup,
			ruma_exp_grid_variants(&g) * g.nsizes * (size_t)(g.reps + g.warmup),
			(unsigned long long)g.seed, o.out);
	rc = ruma_exp_sweep(&g, &o, &failed, err, sizeof(err));
	if (rc == -EINTR) {
		print_resume(argc, argv);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "ruma sweep: %s\n", err[0] ? err : strerror(-rc));
		return rc == -EINVAL || rc == -EEXIST || rc == RUMA_EPARSE ? 2 : 1;
	}
	if (failed) {
		fprintf(stderr,
			"sweep: %zu measurement(s) failed (rows with status != ok in %s; see their "
			"note)\n",
			failed, o.out);
		return 1;
	}
	if (!o.quiet)
		fprintf(stderr, "sweep: done, rows in %s (next: ruma compare %s --baseline ...)\n",
			o.out, o.out);
	return 0;
}
