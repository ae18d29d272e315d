/*
 * test_vmcache_crash.c — durable TPC-C through the CLI (`ruma vmcache
 * --durable`): the crash-test script (scripts/crash_test.py) at a small
 * size — SIGKILL and simulated power losses at random instants, each followed
 * by a reopen that recovers and checks conditions 1-4, the B-trees and every
 * committed New-Order of the commit log — plus the commit-log check itself
 * (a recorded order that is not in the store fails the check) and the
 * refusal of bad durable options.
 *
 * It runs separate processes (python3 and the ruma binary), so it carries no
 * "concurrent" label; it skips when python3 is missing.  Sizes are small
 * (TPCC_SCALE=20, one warehouse, a 4 MiB pool), fewer rounds under the
 * sanitizers.
 */
#include "test.h"

#include <sys/stat.h>

extern char **environ;

/* A fresh directory for one case's files (removed by the caller). */
static int make_dir(char *path)
{
	return mkdtemp(path) ? 0 : -1;
}

static void remove_dir(const char *dir)
{
	const char *names[] = { "store", "store.wal", "commits" };
	char p[256];
	for (size_t i = 0; i < TEST_N(names); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static int t_crash_script(void)
{
	char rounds[16];
	char *argv[] = { "python3", RUMA_SOURCE_DIR "/scripts/crash_test.py", "--ruma", RUMA_BIN,
			 "--kills", rounds, "--powerloss", rounds, "--max-run", "0.8",
			 "--fresh-every", "3", "--seed", NULL, NULL };
	char seed[24];
	pid_t pid;

	snprintf(rounds, sizeof(rounds), "%d", test_sanitized() ? 2 : 4);
	snprintf(seed, sizeof(seed), "%" PRIu64, test_seed % 1000000007u);
	argv[TEST_N(argv) - 2] = seed;
	if (posix_spawnp(&pid, "python3", NULL, NULL, argv, environ) != 0)
		SKIP("python3 is not available");
	int st = test_wait_status(pid);
	if (st == 127)
		SKIP("python3 is not available");
	CHECK_EQ(st, 0);
	return TEST_PASS;
}

static int run_cli(char **argv, char **err)
{
	char *out = NULL;
	int st = test_run_cli(argv, &out, err);
	free(out);
	return st;
}

/* The check catches an order whose commit was recorded but that is not in
 * the store: the oracle of the crash tests works. */
static int t_commit_log_detects_missing(void)
{
	char dir[] = "/tmp/ruma-test-crashXXXXXX";
	char store[128], commits[128], *err = NULL;
	CHECK(make_dir(dir) == 0);
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(commits, sizeof(commits), "%s/commits", dir);
	setenv("TPCC_SCALE", "20", 1);
	char *run[] = { NULL, "vmcache", "--workload", "tpcc", "--block", store, "--virtgb", "1",
			"--physgb", "0.004", "--datasize", "1", "--threads", "2", "--runfor", "1",
			"--durable", "--checkpoint", "0.3", "--commit-log", commits, "--check",
			NULL };
	int st = run_cli(run, &err);
	int pass = st == 0 && err && strstr(err, "committed new-orders of the commit log are present");
	if (!pass)
		fprintf(stderr, "%s", err ? err : "");
	free(err);
	err = NULL;
	CHECK(pass);

	/* An order far beyond the district's next id: never committed. */
	int fd = open(commits, O_WRONLY | O_APPEND);
	CHECK(fd >= 0);
	char rec[32];
	snprintf(rec, sizeof(rec), "%10u %3u %10u\n", 1u, 3u, 4000000000u);
	CHECK(write(fd, rec, 26) == 26);
	close(fd);
	char *reopen[] = { NULL, "vmcache", "--workload", "tpcc", "--block", store, "--virtgb", "1",
			   "--physgb", "0.004", "--datasize", "1", "--runfor", "0", "--keep",
			   "--commit-log", commits, "--check", NULL };
	st = run_cli(reopen, &err);
	pass = st == 1 && err && strstr(err, "committed order 4000000000 of warehouse 1 district 3");
	if (!pass)
		fprintf(stderr, "exit %d\n%s", st, err ? err : "");
	free(err);
	unsetenv("TPCC_SCALE");
	remove_dir(dir);
	CHECK(pass);
	return TEST_PASS;
}

static int t_bad_options(void)
{
	static const char *const bad[][4] = {
		{ "--durable=maybe", NULL },
		{ "--durable", "--checkpoint", "-1", NULL },
		{ "--checkpoint", "soon", NULL },
		{ "--workload", "rndread", "--commit-log", "/tmp/x" },
		{ "--workload", "rndread", "--txn", NULL },
	};
	for (size_t i = 0; i < TEST_N(bad); i++) {
		char *argv[10] = { NULL, "vmcache", "--block", "/tmp/ruma-test-crash-never" };
		size_t n = 4;
		for (size_t k = 0; k < 4 && bad[i][k]; k++)
			argv[n++] = (char *)bad[i][k];
		argv[n] = NULL;
		char *err = NULL;
		int st = run_cli(argv, &err);
		int pass = st == 2 && err && strstr(err, "ruma vmcache: ");
		if (!pass)
			fprintf(stderr, "case %zu: exit %d\n%s", i, st, err ? err : "");
		free(err);
		CHECK(pass);
	}
	setenv("DURABLE", "often", 1);
	char *argv[] = { NULL, "vmcache", "--block", "/tmp/ruma-test-crash-never", NULL };
	char *err = NULL;
	int st = run_cli(argv, &err);
	unsetenv("DURABLE");
	int pass = st == 2 && err && strstr(err, "DURABLE=often");
	free(err);
	CHECK(pass);
	return TEST_PASS;
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "bad_options", t_bad_options },
		{ "commit_log_detects_missing", t_commit_log_detects_missing },
		{ "crash_script", t_crash_script },
	};
	return test_main("vmcache_crash", cases, TEST_N(cases), argc, argv);
}
