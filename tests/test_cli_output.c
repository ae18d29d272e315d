/*
 * test_cli_output.c — results that cannot be written are a failure: a
 * benchmark whose --csv file meets a full disk (/dev/full) exits non-zero
 * with a message naming the file, instead of exiting 0 with an empty file.
 */
#include "test.h"

#include <string.h>

static int expect_write_failure(char **argv, const char *cmd)
{
	char *err = NULL;
	int st = test_run_cli(argv, NULL, &err);

	CHECK(err != NULL);
	if (st == 0 || !strstr(err, "cannot write /dev/full")) {
		fprintf(stderr, "  ruma %s: exit %d, stderr:\n%s\n", cmd, st, err);
		free(err);
		return TEST_FAIL;
	}
	free(err);
	return TEST_PASS;
}

static int t_rwbench_csv_full_disk(void)
{
	char *argv[] = { "", "rwbench", "vector", "--min-log", "10", "--max-log", "10",
			 "--reps", "1", "--only", "copy", "--csv", "/dev/full", NULL };
	return expect_write_failure(argv, "rwbench");
}

static int t_rewire_csv_full_disk(void)
{
	char *argv[] = { "", "rewire", "--pages", "64", "--reps", "1", "--no-huge",
			 "--csv", "/dev/full", NULL };
	return expect_write_failure(argv, "rewire");
}

static const struct test_case cases[] = {
	{ "rwbench_csv_full_disk", t_rwbench_csv_full_disk },
	{ "rewire_csv_full_disk", t_rewire_csv_full_disk },
};

int main(int argc, char **argv)
{
	return test_main("cli_output", cases, TEST_N(cases), argc, argv);
}
