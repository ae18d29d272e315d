/*
 * test_rewirebench.c — the command lines of `ruma rewire` and `ruma rwbench`
 * through their parsers (ruma_rewirebench_parse, ruma_rwbench_parse), called
 * directly: defaults, the seed from the given environment, ranges, and the
 * messages of bad usage; and one short `rwbench snapshot` run end to end.
 */
#include "bench/rewire/rewirebench.h"
#include "bench/rewire/rwbench.h"
#include "test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *env_seed[] = { (char *)"RUMA_SEED=123", NULL };

static int rewire(ruma_rewirebench_opts *o, char *err, ...)
{
	TEST_VA_ARGV(argv, argc, "rewire", err);
	return ruma_rewirebench_parse(argc, argv, env_seed, o, err, 512);
}

static int rwbench(ruma_rwbench_opts *o, char *err, ...)
{
	TEST_VA_ARGV(argv, argc, "rwbench", err);
	return ruma_rwbench_parse(argc, argv, env_seed, o, err, 512);
}

static int t_rewire_parse(void)
{
	ruma_rewirebench_opts o;
	char err[512];

	CHECK_OK(rewire(&o, err, NULL));
	CHECK(o.pages == 16384 && o.reps == 7 && o.seed == 123 && !o.no_huge && !o.csv_path);
	CHECK_OK(rewire(&o, err, "--pages", "64", "--reps=2", "--no-huge", "--csv", "a.csv",
			"--result", "r.csv", "--reserve-huge", "8", "--seed", "5", NULL));
	CHECK(o.pages == 64 && o.reps == 2 && o.no_huge && o.reserve_huge == 8 && o.seed == 5);
	CHECK(!strcmp(o.csv_path, "a.csv") && !strcmp(o.result, "r.csv"));
	CHECK(rewire(&o, err, "--pages", "0", NULL) == RUMA_EPARSE && !o.usage_after);
	CHECK(!strcmp(err, "ruma rewire: invalid value for --pages: '0' (expected an integer in "
			   "1..4194304 (16 GiB of 4 KiB pages))\n"));
	CHECK(rewire(&o, err, "--csv", NULL) == RUMA_EPARSE);
	CHECK(!strcmp(err, "ruma rewire: invalid value for --csv: '(missing)' (expected a file "
			   "name)\n"));
	CHECK(rewire(&o, err, "--nope", NULL) == RUMA_EPARSE && o.usage_after);
	CHECK(!strcmp(err, "ruma rewire: unknown option '--nope'\n"));
	CHECK(rewire(&o, err, "stray", NULL) == RUMA_EPARSE);
	CHECK(!strcmp(err, "ruma rewire: unknown option 'stray'\n"));
	CHECK_OK(rewire(&o, err, "-h", "--nope", NULL));
	CHECK(o.help);
	return TEST_PASS;
}

static int t_rwbench_parse(void)
{
	ruma_rwbench_opts o;
	char err[512];

	CHECK(rwbench(&o, err, NULL) == RUMA_EPARSE && o.usage_after && !err[0]);
	CHECK_OK(rwbench(&o, err, "--help", NULL));
	CHECK(o.help);
	CHECK_OK(rwbench(&o, err, "vector", NULL));
	CHECK(o.reps == 5 && o.min_log == 20 && o.max_log == 24 && o.n == (uint64_t)1 << 24);
	CHECK(o.seed == 123 && o.nparts == 4 && o.parts[3] == 1024 && !strcmp(o.which, "vector"));
	CHECK_OK(rwbench(&o, err, "pool", NULL));
	CHECK_EQ(o.n, (uint64_t)128 << 20);
	CHECK_EQ(o.run_pages, 64);
	CHECK_OK(rwbench(&o, err, "snapshot", "--run-pages", "8", NULL));
	CHECK_EQ(o.run_pages, 8);
	CHECK(rwbench(&o, err, "snapshot", "--run-pages", "0", NULL) == RUMA_EPARSE);
	CHECK(!strcmp(err, "ruma rwbench: invalid value for --run-pages: '0'\n"));
	CHECK_OK(rwbench(&o, err, "partition", "--partitions", "2,8", "--n", "1M", "--huge",
			 "--only", "a,b", "--pages-per-block", "4", "--extent-pages", "16", NULL));
	CHECK(o.nparts == 2 && o.parts[1] == 8 && o.n == (1u << 20) && o.huge);
	CHECK(!strcmp(o.only, "a,b") && o.pages_per_block == 4 && o.extent_pages == 16);
	CHECK(rwbench(&o, err, "bogus", NULL) == RUMA_EPARSE && o.usage_after);
	CHECK(!strcmp(err, "ruma rwbench: unknown benchmark 'bogus'\n"));
	CHECK(rwbench(&o, err, "vector", "--reps", "65", NULL) == RUMA_EPARSE);
	CHECK(!strcmp(err, "ruma rwbench: invalid value for --reps: '65'\n"));
	CHECK(rwbench(&o, err, "vector", "--partitions", "3", NULL) == RUMA_EPARSE);
	CHECK(!strcmp(err, "ruma rwbench: invalid value for --partitions: '3'\n"));
	CHECK(rwbench(&o, err, "vector", "--n", NULL) == RUMA_EPARSE);
	CHECK(!strcmp(err, "ruma rwbench: invalid value for --n: '(missing)'\n"));
	CHECK(rwbench(&o, err, "vector", "--min-log", "25", NULL) == RUMA_EPARSE);
	CHECK(!strcmp(err, "ruma rwbench: --min-log 25 > --max-log 24\n"));
	CHECK(rwbench(&o, err, "vector", "--what", "1", NULL) == RUMA_EPARSE && o.usage_after);
	CHECK(!strcmp(err, "ruma rwbench: unknown option '--what'\n"));
	return TEST_PASS;
}

/*
 * `rwbench snapshot` end to end on 1 MiB: every 4 KiB rewired-COW variant
 * runs, checks its source afterwards (a changed source fails the run) and
 * writes its CSV rows.
 */
static int t_rwbench_snapshot_run(void)
{
	static const char *const names[] = { "cow", "rewired-cow", "rewired-cow-each",
					     "rewired-cow-run" };
	char csv[] = "/tmp/ruma-test-rwbench-XXXXXX", err[512], line[256];
	ruma_rwbench_opts o;
	int fd = mkstemp(csv);

	CHECK(fd >= 0);
	close(fd);
	CHECK_OK(rwbench(&o, err, "snapshot", "--n", "1M", "--reps", "1", "--only",
			 "cow,rewired-cow,rewired-cow-each,rewired-cow-run", "--run-pages", "8",
			 "--csv", csv, NULL));
	int rc = ruma_rwbench_run(&o);
	size_t rows[4] = { 0 };
	FILE *f = fopen(csv, "r");
	while (f && fgets(line, sizeof(line), f))
		for (size_t k = 0; k < TEST_N(names); k++) {
			char want[64];
			snprintf(want, sizeof(want), "snapshot,%s,", names[k]);
			rows[k] += !strncmp(line, want, strlen(want));
		}
	if (f)
		fclose(f);
	unlink(csv);
	CHECK_EQ(rc, 0);
	for (size_t k = 0; k < TEST_N(names); k++)
		CHECK_EQ(rows[k], 4); /* one row per phase */
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "rewire_parse", t_rewire_parse },
	{ "rwbench_parse", t_rwbench_parse },
	{ "rwbench_snapshot_run", t_rwbench_snapshot_run },
};

int main(int argc, char **argv)
{
	return test_main("rewirebench", cases, TEST_N(cases), argc, argv);
}
