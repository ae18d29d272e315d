/*
 * cmd_rewire.c — `ruma rewire`: the rewiring cost benchmark
 * (bench/rewire/rewirebench.c).  Parses the options, opens the CSV target
 * and maps library errors to exit codes: 0 ok, 1 failure, 2 bad usage or a
 * size the machine's limits cannot hold.
 *
 * Syscalls: none directly (fopen of the --csv file through stdio).
 */
#include "bench/rewire/rewirebench.h"
#include "tool.h"

#include <ruma/core.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int ruma_cmd_rewire(int argc, char **argv);
extern const char ruma_cmd_rewire_summary[];
const char ruma_cmd_rewire_summary[] =
	"rewiring cost: per-page vs per-run mmap, populate vs touch, 4K vs 2M, mremap move";

#define MAX_PAGES ((uint64_t)1 << 22)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma rewire [--pages N] [--reps R] [--csv FILE] [--reserve-huge N]\n"
		"                   [--no-huge] [--seed S]\n"
		"  --pages N         4 KiB pages per measurement (default 16384 = 64 MiB); the\n"
		"                    2 MiB set uses the same bytes, as far as huge pages are free\n"
		"  --reps R          measured repetitions after one warm-up (default 7, >= 1)\n"
		"  --csv FILE        write the CSV rows to FILE instead of stdout\n"
		"  --reserve-huge N  raise vm.nr_hugepages by N for the run, restore it after (root)\n"
		"  --no-huge         skip the 2 MiB set\n"
		"  --seed S          seed of the random pairings (default: $RUMA_SEED or clock)\n"
		"CSV columns: variant,page_size,pages,rep,seconds,ns_per_page (stdout);\n"
		"summary (median/min/max per variant) and notes on stderr.\n");
}

static int bad(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "ruma rewire: invalid value for %s: '%s' (expected %s)\n", opt,
		val ? val : "(missing)", want);
	return 2;
}

/* Parse argv into *o; *csv_path gets --csv.  Returns -1 to go on, else an exit code. */
static int parse(int argc, char **argv, ruma_rewirebench_opts *o, const char **csv_path)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--no-huge")) {
			o->no_huge = true;
			continue;
		} else if (!strcmp(a, "--csv")) {
			if (!v || !*v)
				return bad(a, v, "a file name");
			*csv_path = v;
		} else if (!strcmp(a, "--pages")) {
			if (!v || ruma_parse_u64(v, &x) || x == 0 || x > MAX_PAGES)
				return bad(a, v, "an integer in 1..4194304 (16 GiB of 4 KiB pages)");
			o->pages = x;
		} else if (!strcmp(a, "--reps")) {
			if (!v || ruma_parse_u64(v, &x) || x == 0 || x > 10000)
				return bad(a, v, "an integer in 1..10000");
			o->reps = (unsigned)x;
		} else if (!strcmp(a, "--reserve-huge")) {
			if (!v || ruma_parse_u64(v, &x) || x > 65536)
				return bad(a, v, "an integer in 0..65536");
			o->reserve_huge = x;
		} else if (!strcmp(a, "--seed")) {
			if (!v || ruma_parse_u64(v, &x))
				return bad(a, v, "an integer in 0..2^64-1");
			o->seed = x;
		} else {
			fprintf(stderr, "ruma rewire: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
		i++;
	}
	return -1;
}

int ruma_cmd_rewire(int argc, char **argv)
{
	ruma_rewirebench_opts o = { .pages = 16384, .reps = 7, .csv = stdout,
				    .seed = ruma_seed_default() };
	const char *csv_path = NULL;
	int st = parse(argc, argv, &o, &csv_path);

	if (st >= 0)
		return st;
	if (o.reps < 5)
		fprintf(stderr, "# note: fewer than 5 measured reps; medians are fragile\n");
	if (csv_path && !(o.csv = fopen(csv_path, "w"))) {
		fprintf(stderr, "ruma rewire: cannot write %s: %s\n", csv_path, strerror(errno));
		return 2;
	}
	int rc = ruma_rewirebench_run(&o);
	if (csv_path && ruma_tool_close_output(o.csv, "rewire", csv_path))
		return 1; /* results lost: never exit 0 (stdout is checked by main) */
	if (rc) {
		fprintf(stderr, "ruma rewire: %s\n", ruma_strerror(rc));
		return rc == RUMA_EMAPLIMIT ? 2 : 1;
	}
	return 0;
}
