/*
 * cmd_sweep.c — `ruma sweep`: run a grid of measurements (variants x sizes x
 * repetitions, warm-ups first, variants interleaved) of `ruma vmcache`,
 * `ruma art` or `ruma micro` as child processes and write one tidy CSV
 * (tools/exp/sweep.c; docs/experiments.md).
 *
 * Invariants: bad grids are rejected before anything runs (exit 2); rows are
 * flushed after every run; Ctrl-C kills the running child, keeps the rows and
 * prints the command that resumes.  Syscalls: via tools/exp (fork/exec, pipes).
 * Options: the drivers' option table (bench/common/opt.h); the grid items
 * are added in the order given (tools/exp/grid.c checks each).
 */
#include "bench/common/opt.h"
#include "tools/exp/exp.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ruma_cmd_sweep(int argc, char **argv);
extern const char ruma_cmd_sweep_summary[];
const char ruma_cmd_sweep_summary[] =
	"a variants x sizes x reps grid (vmcache, art, micro, rewire, rwbench, kv, blob) into a CSV";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma sweep <vmcache|art|micro|rewire|rwbench|kv|blob> [grid options] --out FILE\n"
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
		"  blob: %s\n"
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
		"  ruma sweep blob --var store=ruma,files --var threads=1,2 --var durability=sync,none \\\n"
		"      --size size=100K,1M,10M --set data=256M --reps 5 --out blob.csv\n"
		"CSV columns: system,variant,<vars>,<sets>,size_param,size,rep,warmup,seed,metric,\n"
		"unit,value,status,note (one row per metric; see docs/experiments.md).\n"
		"Exit: 0 all measured, 1 some measurements failed or interrupted, 2 bad grid.\n",
		ruma_exp_system_keys(RUMA_EXP_VMCACHE), ruma_exp_system_keys(RUMA_EXP_ART),
		ruma_exp_system_keys(RUMA_EXP_MICRO), ruma_exp_system_keys(RUMA_EXP_REWIRE),
		ruma_exp_system_keys(RUMA_EXP_RWBENCH), ruma_exp_system_keys(RUMA_EXP_KV),
		ruma_exp_system_keys(RUMA_EXP_BLOB));
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

/* What the command line gives: the grid (filled as the options come, in
 * order, so that a later one adds to or overrides an earlier --grid file),
 * the sweep's own options, and the first grid error. */
struct sweep_cli {
	ruma_exp_grid *g;
	struct ruma_exp_sweep_opts o;
	bool resume, force, quiet, help;
	char err[RUMA_EXP_ERR];
};

static int grid_item(void *opts, const char *item, const char *value)
{
	struct sweep_cli *c = opts;
	return ruma_exp_grid_add(c->g, item, value, c->err, sizeof(c->err)) ? -EINVAL : 0;
}

#define GRID_ITEM(item) \
	static int add_##item(const char *value, void *opts) { return grid_item(opts, #item, value); }
GRID_ITEM(var)
GRID_ITEM(size)
GRID_ITEM(set)
GRID_ITEM(peer)
GRID_ITEM(reps)
GRID_ITEM(warmup)
GRID_ITEM(seed)
GRID_ITEM(order)
GRID_ITEM(timeout)

static int load_grid(const char *path, void *opts)
{
	struct sweep_cli *c = opts;
	return ruma_exp_grid_load(c->g, path, c->err, sizeof(c->err)) ? -EINVAL : 0;
}

#define ITEM(name, fn) { name, RUMA_OPT_FUNC, 0, 0, 0, NULL, fn, 0 }
#define FLAG(name, field, fl) { name, RUMA_OPT_FLAG, offsetof(struct sweep_cli, field), 0, 0, NULL, NULL, fl }

static const ruma_opt options[] = {
	ITEM("--var", add_var),         ITEM("--size", add_size),   ITEM("--set", add_set),
	ITEM("--peer", add_peer),       ITEM("--reps", add_reps),   ITEM("--warmup", add_warmup),
	ITEM("--seed", add_seed),       ITEM("--order", add_order), ITEM("--timeout", add_timeout),
	ITEM("--grid", load_grid),
	{ "--out", RUMA_OPT_STR, offsetof(struct sweep_cli, o.out), 0, 0, NULL, NULL, 0 },
	FLAG("--resume", resume, 0),    FLAG("--force", force, 0),  FLAG("--quiet", quiet, 0),
	FLAG("--help", help, RUMA_OPT_STOP), FLAG("-h", help, RUMA_OPT_STOP),
};

/* The command line into c; 0, or exit status 2 after the message. */
static int parse(int argc, char **argv, struct sweep_cli *c)
{
	const char *system = NULL;
	ruma_opt_error e;
	int npos;

	if (!ruma_opt_parse(options, RUMA_ARRAY_SIZE(options), argc, argv, 1, c, &system, 1, &npos,
			    &e) || e.status == RUMA_OPT_STOPPED) {
		c->o.resume = c->resume;
		c->o.force = c->force;
		c->o.quiet = c->quiet;
		if (c->help || !system)
			return 0;
		if (c->g->system < 0 && !ruma_exp_grid_add(c->g, "system", system, c->err,
							   sizeof(c->err)))
			return 0;
		fprintf(stderr, "ruma sweep: %s\n", c->err[0] ? c->err : "more than one system given");
		return 2;
	}
	return ruma_opt_report("ruma sweep", &e, c->err, "more than one system given", false);
}

/* A grid that can run, an output, options that go together; 0 or exit status 2. */
static int check(struct sweep_cli *c)
{
	const char *why = NULL;

	if (ruma_exp_grid_check(c->g, c->err, sizeof(c->err)))
		why = c->err;
	else if (!c->o.out)
		why = "--out FILE is required";
	else if (c->o.resume && c->o.force)
		why = "--resume and --force exclude each other";
	if (!why)
		return 0;
	fprintf(stderr, "ruma sweep: %s\n", why);
	return 2;
}

static void print_plan(const ruma_exp_grid *g, const struct ruma_exp_sweep_opts *o)
{
	fprintf(stderr,
		"sweep: %s, %zu variants x %zu sizes x (%ld reps + %ld warm-up) = %zu runs, "
		"seed %llu -> %s\n",
		ruma_exp_system_name(g->system), ruma_exp_grid_variants(g), g->nsizes, g->reps,
		g->warmup, ruma_exp_grid_variants(g) * g->nsizes * (size_t)(g->reps + g->warmup),
		(unsigned long long)g->seed, o->out);
}

/* The exit status of a sweep that returned rc with failed measurements. */
static int outcome(int argc, char **argv, const struct sweep_cli *c, int rc, size_t failed)
{
	if (rc == -EINTR) {
		print_resume(argc, argv);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "ruma sweep: %s\n", c->err[0] ? c->err : strerror(-rc));
		return rc == -EINVAL || rc == -EEXIST || rc == RUMA_EPARSE ? 2 : 1;
	}
	if (failed) {
		fprintf(stderr,
			"sweep: %zu measurement(s) failed (rows with status != ok in %s; see their "
			"note)\n",
			failed, c->o.out);
		return 1;
	}
	if (!c->o.quiet)
		fprintf(stderr, "sweep: done, rows in %s (next: ruma compare %s --baseline ...)\n",
			c->o.out, c->o.out);
	return 0;
}

int ruma_cmd_sweep(int argc, char **argv)
{
	static ruma_exp_grid g;
	struct sweep_cli c = { .g = &g };
	size_t failed = 0;
	int st;

	ruma_exp_grid_init(&g);
	if ((st = parse(argc, argv, &c)))
		return st;
	if (c.help) {
		usage(stdout);
		return 0;
	}
	if ((st = check(&c)))
		return st;
	ruma_exp_signals_install();
	if (!c.o.quiet)
		print_plan(&g, &c.o);
	c.err[0] = '\0';
	int rc = ruma_exp_sweep(&g, &c.o, &failed, c.err, sizeof(c.err));
	return outcome(argc, argv, &c, rc, failed);
}
