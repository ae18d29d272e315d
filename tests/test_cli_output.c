/*
 * test_cli_output.c — results that cannot be written are a failure: a
 * benchmark whose --csv file meets a full disk (/dev/full) exits non-zero
 * with a message naming the file, instead of exiting 0 with an empty file.
 * Results as data: with --result FILE every driver writes its measurements
 * as rows metric,unit,value,params, while its stdout keeps the same lines
 * (the same lines with the numbers taken out) as without --result.
 * Bad usage says what is wrong: exit status 2 and a message naming the
 * missing argument, every known workload, the grid value a driver refuses
 * (before the sweep's first run).
 */
#include "test.h"

#include <string.h>
#include <unistd.h>

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

struct usage_case {
	char *argv[16];
	int status;
	const char *in_out, *in_err; /* expected in stdout / stderr (NULL: anything) */
};

static int check_usage_case(struct usage_case *c)
{
	char *out = NULL, *err = NULL;
	int st = test_run_cli(c->argv, &out, &err);
	int ok = st == c->status && out && err && (!c->in_out || strstr(out, c->in_out)) &&
		 (!c->in_err || strstr(err, c->in_err));

	if (!ok)
		fprintf(stderr, "  ruma %s: exit %d (want %d), stdout:\n%s\nstderr:\n%s\n",
			c->argv[1], st, c->status, out ? out : "", err ? err : "");
	free(out);
	free(err);
	return ok ? TEST_PASS : TEST_FAIL;
}

static int t_usage_messages(void)
{
	struct usage_case cases[] = { /* not const: test_run_cli sets argv[0] */
		{ { "", "plot", "x.csv", NULL }, 2, NULL, "ruma plot: missing --out DIR" },
		{ { "", "plot", "--out", "d", NULL }, 2, NULL, "missing the sweep CSV" },
		{ { "", "micro", "1", "2", "100", "1", NULL }, 2, "Usage: ruma micro",
		  "missing <detailed (true|false)> (4 of the 5" },
		{ { "", "vmcache", "--workload", "foo", NULL }, 2, NULL,
		  "(known: rndread, scan, scandesc, tpcc)" },
		{ { "", "help", NULL }, 0, "(modes 0-3)", NULL },
		{ { "", "help", NULL }, 0, "(vmcache, art, micro, rewire, rwbench, kv, blob)", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (check_usage_case(&cases[i]) != TEST_PASS)
			return TEST_FAIL;
	return TEST_PASS;
}

/* A grid value the driver refuses fails the sweep before its first run:
 * exit 2, the variant and the driver's message, no output file. */
static int t_sweep_checks_grid(void)
{
	char out[] = "/tmp/ruma-test-gridXXXXXX";
	int fd = mkstemp(out);

	CHECK(fd >= 0);
	close(fd);
	unlink(out);
	struct usage_case c = {
		{ "", "sweep", "vmcache", "--var", "wait=spin,futx", "--size", "datasize=1000",
		  "--set", "runfor=1", "--reps", "1", "--warmup", "0", "--out", out, NULL },
		2, NULL, "variant wait=futx datasize=1000 would be refused, nothing ran: "
			 "ruma vmcache: --wait=futx"
	};
	CHECK(check_usage_case(&c) == TEST_PASS);
	CHECK(access(out, F_OK) != 0);
	char *micro[] = { "", "sweep", "micro", "--var", "method=1,99", "--set", "test=1",
			  "--size", "n=1000", "--out", out, NULL };
	c = (struct usage_case){ .status = 2, .in_err = "method=99 n=1000 would be refused" };
	memcpy(c.argv, micro, sizeof(micro));
	CHECK(check_usage_case(&c) == TEST_PASS);
	CHECK(access(out, F_OK) != 0);
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

/* out with every number replaced by '#' and every run of blanks by one:
 * the shape of a driver's output (columns are padded to the numbers) */
static void mask_numbers(char *out)
{
	char *w = out;

	for (const char *p = out; *p;) {
		if (*p >= '0' && *p <= '9') {
			while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == '-')
				p++;
			*w++ = '#';
		} else if (*p == ' ') {
			while (*p == ' ')
				p++;
			*w++ = ' ';
		} else {
			*w++ = *p++;
		}
	}
	*w = '\0';
}

/* Run argv (NULL-terminated, argv[0] ignored) without and with --result;
 * the rows must exist with first_metric among them, stdout of the same shape. */
static int check_result(char **argv, const char *first_metric)
{
	char path[] = "/tmp/test_cli_result_XXXXXX", *plain = NULL, *with = NULL, *rows;
	char *argr[32];
	int fd = mkstemp(path), n = 0, st1, st2;

	CHECK(fd >= 0);
	close(fd);
	for (; argv[n]; n++)
		argr[n] = argv[n];
	argr[n] = (char *)"--result";
	argr[n + 1] = path;
	argr[n + 2] = NULL;
	st1 = test_run_cli(argv, &plain, NULL);
	st2 = test_run_cli(argr, &with, NULL);
	rows = test_slurp(path);
	unlink(path);
	CHECK(plain && with);
	CHECK_EQ(st1, 0);
	CHECK_EQ(st2, 0);
	CHECK(rows && !strncmp(rows, "metric,unit,value,params\n", 25));
	char want[80];
	snprintf(want, sizeof(want), "\n%s,", first_metric);
	CHECK(strstr(rows, want) != NULL);
	mask_numbers(plain);
	mask_numbers(with);
	if (strcmp(plain, with)) {
		fprintf(stderr, "  stdout differs with --result:\n%s\n----\n%s\n", plain, with);
		return TEST_FAIL;
	}
	free(plain);
	free(with);
	free(rows);
	return TEST_PASS;
}

static int t_art_result(void)
{
	char *argv[] = { "", "art", "2000", "1", "--reps", "2", "--lookups", "4000", NULL };
	return check_result(argv, "insert");
}

static int t_micro_result(void)
{
	char *argv[] = { "", "micro", "1", "2(50)", "10000", "2", "false", NULL };
	return check_result(argv, "memcpy");
}

static int t_rewire_result(void)
{
	char *argv[] = { "", "rewire", "--pages", "64", "--reps", "1", "--no-huge", "--seed", "3",
			 NULL };
	return check_result(argv, "page_random");
}

static int t_rwbench_result(void)
{
	char *argv[] = { "", "rwbench", "pool", "--n", "1M", "--reps", "1", "--seed", "3", NULL };
	return check_result(argv, "rewired");
}

static const struct test_case cases[] = {
	{ "usage_messages", t_usage_messages },
	{ "sweep_checks_grid", t_sweep_checks_grid },
	{ "rwbench_csv_full_disk", t_rwbench_csv_full_disk },
	{ "rewire_csv_full_disk", t_rewire_csv_full_disk },
	{ "art_result", t_art_result },
	{ "micro_result", t_micro_result },
	{ "rewire_result", t_rewire_result },
	{ "rwbench_result", t_rwbench_result },
};

int main(int argc, char **argv)
{
	return test_main("cli_output", cases, TEST_N(cases), argc, argv);
}
