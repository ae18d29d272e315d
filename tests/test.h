/*
 * test.h — the ruma test harness (header only).
 *
 * A test binary lists its cases in a table and calls test_main():
 *
 *     static int t_parse(void) { CHECK(...); return TEST_PASS; }
 *     static const struct test_case cases[] = { { "parse", t_parse }, ... };
 *     int main(int argc, char **argv) { return test_main("core", cases, TEST_N(cases), argc, argv); }
 *
 * A case returns TEST_PASS, TEST_FAIL or TEST_SKIP (CHECK returns TEST_FAIL
 * for it, after printing file:line and the expression).  test_main prints the
 * seed (RUMA_SEED from the environment replays one), runs the cases (or only
 * those named on the command line: a name that is no case fails the run
 * before anything runs), ends with "<module>: N passed, N failed, N skipped"
 * and exits 1 if any failed, 77 if all were skipped, else 0.
 * Random data in tests must come from test_rng, which test_main seeds.
 *
 * A binary whose cases each need the same setup (a temporary directory, a
 * store in it) passes a fixture to test_main_fixture instead: its setup runs
 * before each case (a setup that fails fails the case, which then does not
 * run) and its teardown after each case, passed or failed.  test_dir_make
 * and test_dir_remove are the temporary-directory pair such a fixture
 * starts from; tests/fixture.h has the store fixtures built on them.
 *
 * Also here: CHECK_HAS (a text holds each of several strings), TEST_BIND
 * (a case that runs a check with one value), the CLI runner test_cli (one
 * run of the ruma binary, its status and output), test_setenv_list and
 * TEST_VA_ARGV for the drivers' parsers.
 */
#ifndef RUMA_TEST_H
#define RUMA_TEST_H

#include <ruma/core.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

enum { TEST_PASS = 0, TEST_FAIL = 1, TEST_SKIP = 77 };

struct test_case {
	const char *name;
	int (*fn)(void);
};

#define TEST_N(a) (sizeof(a) / sizeof((a)[0]))

/* What runs around each case of test_main_fixture; either may be NULL. */
struct test_fixture {
	int (*setup)(void);	/* 0, or the case fails without running */
	void (*teardown)(void); /* after the case, whatever its verdict */
};

static ruma_rng test_rng;
static uint64_t test_seed;
static const char *test_module; /* test_main's module name, for fixtures */

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			return TEST_FAIL;                                             \
		}                                                                     \
	} while (0)

#define CHECK_EQ(a, b)                                                                 \
	do {                                                                           \
		long long va_ = (long long)(a), vb_ = (long long)(b);                  \
		if (va_ != vb_) {                                                      \
			fprintf(stderr, "  FAIL %s:%d: %s == %s (%lld != %lld)\n", __FILE__, \
				__LINE__, #a, #b, va_, vb_);                           \
			return TEST_FAIL;                                              \
		}                                                                      \
	} while (0)

/* CHECK_OK(call): the call must return 0; prints ruma_strerror otherwise. */
#define CHECK_OK(call)                                                                 \
	do {                                                                           \
		int rc_ = (call);                                                      \
		if (rc_ != 0) {                                                        \
			fprintf(stderr, "  FAIL %s:%d: %s returned %d (%s)\n", __FILE__, \
				__LINE__, #call, rc_, ruma_strerror(rc_));             \
			return TEST_FAIL;                                              \
		}                                                                      \
	} while (0)

/* test_lacks — the first of the NULL-terminated strings that text (NULL:
 * none) does not contain, or NULL when it contains them all. */
static inline const char *test_lacks(const char *text, ...)
{
	va_list ap;
	const char *s;

	va_start(ap, text);
	while ((s = va_arg(ap, const char *)) && text && strstr(text, s))
		;
	va_end(ap);
	return s;
}

/* test_refused — whether the command-line parser of `ruma <command>`
 * refused the arguments a1 [a2] (a2 NULL: none) as it should: rc is
 * RUMA_EPARSE and its message err starts "ruma <command>: " and contains
 * want.  TEST_PASS, or TEST_FAIL after saying what came instead. */
static inline int test_refused(const char *command, const char *a1, const char *a2, int rc,
			       const char *err, const char *want)
{
	char prefix[64];
	int n = snprintf(prefix, sizeof(prefix), "ruma %s: ", command);
	if (rc != RUMA_EPARSE || !strstr(err, want) || strncmp(err, prefix, (size_t)n)) {
		fprintf(stderr, "  %s %s: rc %d, message '%s' (wanted '%s')\n", a1, a2 ? a2 : "", rc,
			err, want);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

/* CHECK_HAS(text, "a", "b", ...): text contains each string; else the case
 * fails naming the first one missing. */
#define CHECK_HAS(text, ...)                                                          \
	do {                                                                          \
		const char *lacks_ = test_lacks((text), __VA_ARGS__, (const char *)NULL); \
		if (lacks_) {                                                         \
			fprintf(stderr, "  FAIL %s:%d: %s lacks \"%s\"\n", __FILE__,   \
				__LINE__, #text, lacks_);                             \
			return TEST_FAIL;                                             \
		}                                                                     \
	} while (0)

#define SKIP(...)                                         \
	do {                                              \
		fprintf(stderr, "  skip: " __VA_ARGS__);  \
		fputc('\n', stderr);                      \
		return TEST_SKIP;                         \
	} while (0)

/* TEST_BIND(name, fn, args...) defines the case `name` as fn(args...): the
 * cases of one check run with different values. */
#define TEST_BIND(name, fn, ...)          \
	static int name(void)             \
	{                                 \
		return fn(__VA_ARGS__);   \
	}

/* Run fn in a forked child under alarm(seconds): a crash (any signal) or a
 * hang (SIGALRM) fails the case instead of the whole suite, and damage the
 * child does to shared state stays in the child. */
static inline int test_in_child(int (*fn)(void), unsigned seconds)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(seconds);
		_exit(fn() == TEST_PASS ? 0 : 1);
	}
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "  child killed by signal %d%s\n", WTERMSIG(status),
			WTERMSIG(status) == SIGALRM ? " (no result in time: hung)" : "");
		return TEST_FAIL;
	}
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	return TEST_PASS;
}

/* The seed of this run: RUMA_SEED when set and valid, else from the clock. */
static inline uint64_t test_seed_of_env(void)
{
	const char *env = getenv("RUMA_SEED");
	uint64_t seed;

	return env && ruma_parse_u64(env, &seed) == 0 ? seed : ruma_seed_default();
}

/* Every name on the command line names a case; else say which does not. */
static inline bool test_names_known(const char *module, const struct test_case *cases, size_t n,
				    int argc, char **argv)
{
	bool known = true;

	for (int a = 1; a < argc; a++) {
		size_t i = 0;
		while (i < n && strcmp(argv[a], cases[i].name) != 0)
			i++;
		if (i == n) {
			fprintf(stderr, "%s: no test case named '%s'\n", module, argv[a]);
			known = false;
		}
	}
	return known;
}

/* One case inside the fixture fx (NULL: none). */
static inline int test_run_case(const struct test_case *c, const struct test_fixture *fx)
{
	if (fx && fx->setup && fx->setup() != 0) {
		fprintf(stderr, "  FAIL: the fixture's setup for %s failed\n", c->name);
		return TEST_FAIL;
	}
	int r = c->fn();
	if (fx && fx->teardown)
		fx->teardown();
	return r;
}

/* test_main with a fixture around each case (see the top of this file). */
static inline int test_main_fixture(const char *module, const struct test_case *cases, size_t n,
				    int argc, char **argv, const struct test_fixture *fx)
{
	int passed = 0, failed = 0, skipped = 0;

	if (!test_names_known(module, cases, n, argc, argv))
		return 1;
	test_module = module;
	test_seed = test_seed_of_env();
	ruma_rng_seed(&test_rng, test_seed);
	printf("%s: seed %" PRIu64 " (replay with RUMA_SEED=%" PRIu64 ")\n", module, test_seed,
	       test_seed);
	for (size_t i = 0; i < n; i++) {
		if (argc > 1) {
			int wanted = 0;
			for (int a = 1; a < argc; a++)
				wanted |= strcmp(argv[a], cases[i].name) == 0;
			if (!wanted)
				continue;
		}
		fflush(stdout);
		double t0 = ruma_now_sec();
		int r = test_run_case(&cases[i], fx);
		double dt = ruma_now_sec() - t0;
		const char *verdict = r == TEST_PASS ? "ok" : r == TEST_SKIP ? "skipped" : "FAILED";
		printf("  %-40s %s (%.2fs)\n", cases[i].name, verdict, dt);
		if (r == TEST_PASS)
			passed++;
		else if (r == TEST_SKIP)
			skipped++;
		else
			failed++;
	}
	printf("%s: %d passed, %d failed, %d skipped\n", module, passed, failed, skipped);
	fflush(stdout);
	if (failed)
		return 1;
	return passed == 0 && skipped > 0 ? 77 : 0;
}

static inline int test_main(const char *module, const struct test_case *cases, size_t n,
			    int argc, char **argv)
{
	return test_main_fixture(module, cases, n, argc, argv, NULL);
}

/* ---- temporary directories ------------------------------------------------ */

/*
 * test_dir_make — create a fresh directory /tmp/ruma-test-<tag>-XXXXXX into
 * dir (size bytes); then, for each (char *out, size_t size, const char
 * *name) triple of the NULL-terminated list, out = "<dir>/<name>".  Returns
 * 0, or -1 with a message when the directory cannot be made or a name does
 * not fit.  TEST_PATH(buf, "name") writes one triple.
 */
static inline int test_dir_make(char *dir, size_t size, const char *tag, ...)
{
	va_list ap;
	int rc = 0;

	if ((size_t)snprintf(dir, size, "/tmp/ruma-test-%s-XXXXXX", tag) >= size || !mkdtemp(dir)) {
		fprintf(stderr, "  cannot make a temporary directory for %s: %s\n", tag,
			strerror(errno));
		return -1;
	}
	va_start(ap, tag);
	for (char *out; rc == 0 && (out = va_arg(ap, char *));) {
		size_t osize = va_arg(ap, size_t);
		const char *name = va_arg(ap, const char *);
		if ((size_t)snprintf(out, osize, "%s/%s", dir, name) >= osize) {
			fprintf(stderr, "  path %s/%s too long\n", dir, name);
			rc = -1;
		}
	}
	va_end(ap);
	return rc;
}

/* For test_dir_make's list: TEST_PATH(buf, "name") names buf (an array). */
#define TEST_PATH(buf, name) (buf), sizeof(buf), (name)

/* One entry of the tree test_dir_remove walks: removed. */
static inline int test_dir_remove_one(const char *p, const struct stat *st, int type,
				      struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	if (remove(p) != 0)
		fprintf(stderr, "  (could not remove %s: %s)\n", p, strerror(errno));
	return 0;
}

/* test_dir_remove — remove dir and everything below it; says what it could not. */
static inline void test_dir_remove(const char *dir)
{
	if (dir[0] && nftw(dir, test_dir_remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
	    errno != ENOENT)
		fprintf(stderr, "  (could not walk %s: %s)\n", dir, strerror(errno));
}

/*
 * test_sanitized — true when RUMA_TEST_SANITIZED is set to something other
 * than "" or "0" (the sanitizer jobs of dev.sh set it): tests scale their
 * sizes down there.
 */
static inline bool test_sanitized(void)
{
	const char *s = getenv("RUMA_TEST_SANITIZED");

	return s && *s && strcmp(s, "0") != 0;
}

/* test_cmp_u64 — qsort's comparison of uint64_t values, ascending. */
static inline int test_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* test_same_u64s — a and b (n values each; both sorted in place) hold the
 * same values, each as often. */
static inline bool test_same_u64s(uint64_t *a, uint64_t *b, size_t n)
{
	qsort(a, n, sizeof(*a), test_cmp_u64);
	qsort(b, n, sizeof(*b), test_cmp_u64);
	return memcmp(a, b, n * sizeof(*a)) == 0;
}

/* test_setenv_list — for each (name, value) pair of the NULL-terminated
 * list: setenv(name, value), or unsetenv(name) when value is NULL. */
static inline void test_setenv_list(const char *name, ...)
{
	va_list ap;

	va_start(ap, name);
	for (; name; name = va_arg(ap, const char *)) {
		const char *value = va_arg(ap, const char *);
		if (value)
			setenv(name, value, 1);
		else
			unsetenv(name);
	}
	va_end(ap);
}

/* ---- /proc and /sys helpers (huge-page tests) ----------------------------- */

/* test_read_long — the first number in a /proc or /sys file, or -1. */
/* A message callback (ruma_message_fn) printing "<ctx>: <line>" on stderr,
 * ctx being the prefix string. */
static inline void test_say(void *ctx, const char *line)
{
	fprintf(stderr, "%s: %s\n", (const char *)ctx, line);
}

static inline long test_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* test_write_long — write a number to a /proc or /sys file; false on error. */
static inline bool test_write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	bool ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok;
}

/* test_meminfo — the value of a /proc/meminfo line ("HugePages_Free"), or -1. */
static inline long test_meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v = -1;
	size_t kl = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	fclose(f);
	return v;
}

/* The whole contents of file path (malloc'ed, NUL-terminated; NULL when it
 * cannot be read) and its size in *len. */
static inline char *test_file_bytes(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, r;

	*len = 0;
	if (!f)
		return NULL;
	do {
		if (*len + 4096 + 1 > cap) {
			cap = (cap + 4096) * 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + *len, 1, 4096, f);
		*len += r;
	} while (r > 0);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* Does file path hold exactly the len bytes at before? */
static inline bool test_file_is(const char *path, const char *before, size_t len)
{
	size_t now_len;
	char *now = test_file_bytes(path, &now_len);
	bool same = now && now_len == len && !memcmp(now, before, len);
	free(now);
	return same;
}

/*
 * test_run_cli — run the ruma binary with argv (argv[0] is ignored and set to
 * RUMA_BIN); stdout and stderr go to files whose contents are returned in
 * *out / *err (malloc'ed, NUL-terminated; pass NULL to discard).  Returns the
 * exit status, 128 + signal number when killed, or -1 when it cannot run.
 */
#ifdef RUMA_BIN
static inline char *test_slurp(const char *path)
{
	size_t len;
	return test_file_bytes(path, &len);
}

/*
 * test_spawn_cli — start the built ruma binary with argv (argv[0] is set
 * here) and stdout/stderr on ofd/efd, without waiting; *pid gets its id.
 * Returns 0 or -1.
 */
static inline int test_spawn_cli(char **argv, int ofd, int efd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	extern char **environ;

	argv[0] = (char *)RUMA_BIN;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ofd, 1);
	posix_spawn_file_actions_adddup2(&fa, efd, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	int r = posix_spawn(pid, RUMA_BIN, &fa, NULL, argv, environ) == 0 ? 0 : -1;
	posix_spawn_file_actions_destroy(&fa);
	return r;
}

/* test_wait_status — wait for pid: its exit status, 128 + signal, or -1. */
static inline int test_wait_status(pid_t pid)
{
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline int test_run_cli(char **argv, char **out, char **err)
{
	char opath[] = "/tmp/ruma-test-outXXXXXX", epath[] = "/tmp/ruma-test-errXXXXXX";
	int ofd = mkstemp(opath), efd = mkstemp(epath), status = -1;
	pid_t pid;

	if (ofd < 0 || efd < 0)
		return -1;
	if (test_spawn_cli(argv, ofd, efd, &pid) == 0)
		status = test_wait_status(pid);
	close(ofd);
	close(efd);
	if (out)
		*out = test_slurp(opath);
	if (err)
		*err = test_slurp(epath);
	unlink(opath);
	unlink(epath);
	return status;
}

/* ---- the CLI runner: one run of the ruma binary and what it wrote --------- */

typedef struct test_cli {
	int status;	/* as test_run_cli returns it */
	char *out, *err; /* malloc'ed, NUL-terminated, or NULL */
} test_cli;

/* test_cli_free — free what r holds (r can run again; { 0 } holds nothing). */
static inline void test_cli_free(test_cli *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* test_cli_argv — test_cli_free(r), then run ruma with argv (test_run_cli)
 * into r: its status. */
static inline int test_cli_argv(test_cli *r, char **argv)
{
	test_cli_free(r);
	r->status = test_run_cli(argv, &r->out, &r->err);
	return r->status;
}

/* test_cli_ok — true when r's run exited 0; otherwise its status and both
 * streams go to stderr, the failing case's log. */
static inline bool test_cli_ok(const test_cli *r)
{
	if (r->status != 0)
		fprintf(stderr, "  status %d\n  stdout: %s\n  stderr: %s\n", r->status,
			r->out ? r->out : "", r->err ? r->err : "");
	return r->status == 0;
}
#endif

/*
 * test_argv — argv[0] = cmd, then the arguments of ap up to a NULL (at most
 * max - 2 of them), NULL-terminated; returns argc.  For tests that call a
 * driver's parser with a NULL-terminated argument list.
 */
static inline int test_argv(char **argv, int max, const char *cmd, va_list ap)
{
	int argc = 1;

	argv[0] = (char *)cmd;
	for (char *a; argc < max - 1 && (a = va_arg(ap, char *));)
		argv[argc++] = a;
	argv[argc] = NULL;
	return argc;
}

/*
 * TEST_VA_ARGV(argv, argc, cmd, last) — in a variadic function whose
 * arguments after `last` are a NULL-terminated list of strings: declares
 * char *argv[32] and int argc, holding cmd and that list (test_argv).
 */
#define TEST_VA_ARGV(argv, argc, cmd, last)                   \
	char *argv[32];                                       \
	int argc;                                             \
	do {                                                  \
		va_list ap_;                                  \
		va_start(ap_, last);                          \
		argc = test_argv(argv, 32, cmd, ap_);         \
		va_end(ap_);                                  \
	} while (0)

#endif
