/*
 * cmd_rwbench.c — `ruma rwbench <vector|access|partition|pool|snapshot>`: benchmarks
 * of the data structures built on rewiring (bench/rewire/rwbench*.c).
 * Parses the options, optionally reserves huge pages for the run (and puts
 * the old value back), and maps results to exit codes: 0 ok (variants that
 * a machine limit ruled out are reported on stderr), 1 a measurement failed,
 * 2 bad usage.
 *
 * Syscalls: none directly (stdio for --csv; sysinfo writes nr_hugepages).
 */
#include "bench/rewire/rwbench.h"
#include "tool.h"

#include <ruma/core.h>
#include <ruma/partition.h>
#include <ruma/sysinfo.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ruma_cmd_rwbench(int argc, char **argv);
extern const char ruma_cmd_rwbench_summary[];
const char ruma_cmd_rwbench_summary[] =
	"structures on rewiring: vector growth, access penalty, partitioning, pools, snapshots";

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
		"  --csv FILE           CSV to FILE instead of stdout\n"
		"CSV rows (one per measurement) on stdout, summaries on stderr.\n");
}

static int bad(const char *opt, const char *val)
{
	fprintf(stderr, "ruma rwbench: invalid value for %s: '%s'\n", opt, val ? val : "(missing)");
	return 2;
}

static int parse_parts(const char *s, ruma_rwbench_opts *o)
{
	char buf[512];
	char *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	o->nparts = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t p;
		if (ruma_parse_u64(tok, &p) || p == 0 || p > RUMA_PART_MAX_PARTITIONS ||
		    (p & (p - 1)) || o->nparts == RUMA_RWB_MAX_LIST)
			return -1;
		o->parts[o->nparts++] = (uint32_t)p;
	}
	return o->nparts ? 0 : -1;
}

int ruma_cmd_rwbench(int argc, char **argv)
{
	ruma_rwbench_opts o = { .reps = 5, .min_log = 20, .max_log = 24, .pages_per_block = 1,
				 .extent_pages = 1024 };
	const char *which, *csv_path = NULL;
	uint64_t reserve = 0, n = 0, prev_huge = 0;
	bool reserved = false;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	which = argv[1];
	if (strcmp(which, "vector") && strcmp(which, "access") && strcmp(which, "partition") &&
	    strcmp(which, "pool") && strcmp(which, "snapshot")) {
		fprintf(stderr, "ruma rwbench: unknown benchmark '%s'\n", which);
		usage(stderr);
		return 2;
	}
	o.seed = ruma_seed_default();
	o.parts[0] = 16, o.parts[1] = 64, o.parts[2] = 256, o.parts[3] = 1024;
	o.nparts = 4;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--huge")) {
			o.huge = true;
			continue;
		} else if (!strcmp(a, "--plus-one")) {
			o.plus_one = true;
			continue;
		}
		if (!v)
			return bad(a, v);
		i++;
		if (!strcmp(a, "--reps")) {
			if (ruma_parse_u64(v, &x) || x < 1 || x > 64)
				return bad(a, v);
			o.reps = (unsigned)x;
		} else if (!strcmp(a, "--seed")) {
			if (ruma_parse_u64(v, &o.seed))
				return bad(a, v);
		} else if (!strcmp(a, "--reserve-huge")) {
			if (ruma_parse_u64(v, &reserve) || reserve > 100000)
				return bad(a, v);
		} else if (!strcmp(a, "--only")) {
			o.only = v;
		} else if (!strcmp(a, "--min-log")) {
			if (ruma_parse_u64(v, &x) || x < 4 || x > 30)
				return bad(a, v);
			o.min_log = (unsigned)x;
		} else if (!strcmp(a, "--max-log")) {
			if (ruma_parse_u64(v, &x) || x < 4 || x > 30)
				return bad(a, v);
			o.max_log = (unsigned)x;
		} else if (!strcmp(a, "--n")) {
			if ((ruma_parse_u64(v, &n) && ruma_parse_size(v, &n)) || n == 0 ||
			    n > ((uint64_t)1 << 34))
				return bad(a, v);
		} else if (!strcmp(a, "--partitions")) {
			if (parse_parts(v, &o))
				return bad(a, v);
		} else if (!strcmp(a, "--pages-per-block")) {
			if (ruma_parse_u64(v, &x) || x < 1 || x > 4096)
				return bad(a, v);
			o.pages_per_block = (size_t)x;
		} else if (!strcmp(a, "--extent-pages")) {
			if (ruma_parse_u64(v, &x) || x < 1 || x > ((uint64_t)1 << 24))
				return bad(a, v);
			o.extent_pages = (size_t)x;
		} else if (!strcmp(a, "--csv")) {
			csv_path = v;
		} else {
			fprintf(stderr, "ruma rwbench: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (o.min_log > o.max_log) {
		fprintf(stderr, "ruma rwbench: --min-log %u > --max-log %u\n", o.min_log, o.max_log);
		return 2;
	}
	if (!strcmp(which, "pool") || !strcmp(which, "snapshot"))
		o.n = n ? n : (uint64_t)128 << 20;
	else
		o.n = n ? n : (uint64_t)1 << 24;
	o.csv = stdout;
	if (csv_path) {
		o.csv = fopen(csv_path, "w");
		if (!o.csv) {
			fprintf(stderr, "ruma rwbench: cannot write %s: %s\n", csv_path, strerror(errno));
			return 2;
		}
	}
	if (reserve) {
		uint64_t actual = 0, cur = 0;
		if (ruma_sysinfo_read_nr_hugepages(2048, -1, &cur) ||
		    ruma_sysinfo_set_nr_hugepages_ex(2048, cur + reserve, &prev_huge, &actual)) {
			fprintf(stderr, "ruma rwbench: cannot raise vm.nr_hugepages (needs root); "
					"2 MiB variants use what is free\n");
		} else {
			reserved = true;
			fprintf(stderr, "ruma rwbench: vm.nr_hugepages %llu -> %llu for this run\n",
				(unsigned long long)prev_huge, (unsigned long long)actual);
		}
	}
	fprintf(stderr, "ruma rwbench %s: seed %llu, %u repetitions + 1 warm-up\n", which,
		(unsigned long long)o.seed, o.reps);
	if (!strcmp(which, "vector"))
		rc = ruma_rwbench_vector(&o);
	else if (!strcmp(which, "access"))
		rc = ruma_rwbench_access(&o);
	else if (!strcmp(which, "partition"))
		rc = ruma_rwbench_partition(&o);
	else if (!strcmp(which, "pool"))
		rc = ruma_rwbench_pool(&o);
	else
		rc = ruma_rwbench_snapshot(&o);
	if (reserved)
		(void)ruma_sysinfo_set_nr_hugepages_ex(2048, prev_huge, NULL, NULL);
	if (csv_path && ruma_tool_close_output(o.csv, "rwbench", csv_path))
		return 1; /* results lost: never exit 0 (stdout is checked by main) */
	if (rc == RUMA_ENOHUGE || rc == RUMA_EMAPLIMIT) {
		fprintf(stderr, "ruma rwbench: some variants did not run: %s\n", ruma_strerror(rc));
		return 0;
	}
	if (rc == -EINVAL)
		return 2;
	return rc ? 1 : 0;
}
