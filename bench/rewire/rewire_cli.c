/*
 * rewire_cli.c — the command line of `ruma rewire` as data (option table,
 * ruma_rewirebench_parse) and ruma_rewirebench_run: open the --csv and
 * --result outputs, measure (rewirebench.c), and map errors to exit
 * statuses: 0 ok, 1 failure or lost output, 2 bad usage, an output that
 * cannot be created, or a size the machine's mapping limit cannot hold.
 * Messages: "ruma rewire: invalid value for OPT: 'V' (expected ...)" and
 * "ruma rewire: unknown option 'X'" followed by the usage.
 *
 * Syscalls: none (the outputs through stdio).
 */
#include "bench/common/opt.h"
#include "bench/rewire/rewirebench.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define MAX_PAGES ((uint64_t)1 << 22)
#define OPT(f) offsetof(ruma_rewirebench_opts, f)

static const ruma_opt rewire_options[] = {
	{ "--help", RUMA_OPT_FLAG, OPT(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, OPT(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "--no-huge", RUMA_OPT_FLAG, OPT(no_huge), 0, 0, NULL, NULL, 0 },
	{ "--csv", RUMA_OPT_STR, OPT(csv_path), 0, 0, "a file name", NULL, RUMA_OPT_NONEMPTY },
	{ "--result", RUMA_OPT_STR, OPT(result), 0, 0, "a file name", NULL, RUMA_OPT_NONEMPTY },
	{ "--pages", RUMA_OPT_U64, OPT(pages), 1, MAX_PAGES,
	  "an integer in 1..4194304 (16 GiB of 4 KiB pages)", NULL, 0 },
	{ "--reps", RUMA_OPT_UINT, OPT(reps), 1, 10000, "an integer in 1..10000", NULL, 0 },
	{ "--reserve-huge", RUMA_OPT_U64, OPT(reserve_huge), 0, 65536, "an integer in 0..65536",
	  NULL, 0 },
	{ "--seed", RUMA_OPT_U64, OPT(seed), 0, UINT64_MAX, "an integer in 0..2^64-1", NULL, 0 },
};

int ruma_rewirebench_parse(int argc, char **argv, char *const *envp, ruma_rewirebench_opts *o,
			   char *err, size_t errlen)
{
	ruma_opt_error e;

	memset(o, 0, sizeof(*o));
	o->pages = 16384;
	o->reps = 7;
	o->seed = ruma_opt_env_seed(envp);
	err[0] = '\0';
	if (!ruma_opt_parse(rewire_options, RUMA_ARRAY_SIZE(rewire_options), argc, argv, 1, o,
			    NULL, 0, NULL, &e) ||
	    e.status == RUMA_OPT_STOPPED)
		return 0;
	if (e.status == RUMA_OPT_UNKNOWN || e.status == RUMA_OPT_TOOMANY) {
		snprintf(err, errlen, "ruma rewire: unknown option '%s'\n", e.arg);
		o->usage_after = true;
	} else {
		snprintf(err, errlen, "ruma rewire: invalid value for %s: '%s' (expected %s)\n",
			 e.opt->name, e.value ? e.value : "(missing)", e.opt->help);
	}
	return RUMA_EPARSE;
}

int ruma_rewirebench_run(const ruma_rewirebench_opts *opts)
{
	ruma_rewirebench_opts o = *opts;
	ruma_outputs out;
	int rc;

	if (o.reps < 5)
		fprintf(stderr, "# note: fewer than 5 measured reps; medians are fragile\n");
	if (ruma_outputs_open(&out, "rewire", o.csv_path, o.result))
		return 2;
	o.csv = out.csv;
	o.res = ruma_outputs_result(&out);
	rc = ruma_rewirebench_measure(&o);
	if (ruma_outputs_close(&out))
		return 1; /* results lost: never exit 0 */
	if (rc) {
		fprintf(stderr, "ruma rewire: %s\n", ruma_strerror(rc));
		return rc == RUMA_EMAPLIMIT ? 2 : 1;
	}
	return 0;
}
