/*
 * child.c — one measurement as a child process: the own binary
 * (/proc/self/exe) runs the system's subcommand with the run's parameters
 * (built by the driver's sweep adapter, plus --result into a temporary file
 * whose rows become the metrics), or, when the run's impl names a peer, the
 * peer's program with the arguments and environment the adapter gives peers
 * (art: <n> <mode>; RUMA_SEED in its environment; vmcache: also the original
 * vmcache's variables, BLOCK naming an empty file made afresh before each
 * run in the scratch directory <store>.peer); its stdout and stderr come back through
 * pipes (peers' lines are parsed; ruma's drivers write result rows, notes
 * included; stderr only gives a failed run's tail).
 *
 * Invariants: at most one child runs at a time; it leads its own process group
 * so an interrupt (SIGINT/SIGTERM to the sweep) or the per-run timeout kills it
 * and anything it started with one kill(-pgid, SIGKILL).  The interrupt handler
 * only sets a flag and sends that kill; everything else happens in the loop.
 * A child that exits non-zero, dies of a signal, times out or prints nothing
 * parsable is a failed measurement carrying its status and stderr tail.
 *
 * Syscalls: pipe2, fork, setpgid, dup2, execv (run the child), poll and read
 * (collect its output), kill, waitpid, sigaction; mkstemp and unlink for the
 * result file; mkdir and open(O_CREAT | O_TRUNC) for a vmcache peer's BLOCK file.
 */
#include "tools/exp/exp.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;
static volatile sig_atomic_t child_pid;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
	if (child_pid > 0)
		kill(-(pid_t)child_pid, SIGKILL);
}

void ruma_exp_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int ruma_exp_interrupted(void)
{
	return interrupted != 0;
}

#define MAX_ARGS 48

struct argv_buf {
	char *v[MAX_ARGS + 1];
	int n;
	char seed[32];
};

static void push(struct argv_buf *a, const char *s)
{
	if (a->n < MAX_ARGS)
		a->v[a->n++] = (char *)s;
	a->v[a->n] = NULL;
}

/* the child's extra environment, "NAME=VALUE" strings (NULL-terminated) */
#define MAX_ENV 16

struct env_buf {
	const char *v[MAX_ENV + 1];
	char s[MAX_ENV][RUMA_EXP_PATH + 16];
	size_t n;
};

static void env_add(struct env_buf *e, const char *name, const char *value)
{
	if (e->n < MAX_ENV) {
		snprintf(e->s[e->n], sizeof(e->s[e->n]), "%s=%s", name, value);
		e->v[e->n] = e->s[e->n];
		e->n++;
	}
	e->v[e->n] = NULL;
}

/* the adapter's view of one run (common/sweep.h) */
struct adapter_ctx {
	const ruma_exp_grid *g;
	const struct ruma_exp_run *run;
	struct argv_buf *a;
	struct env_buf *e;
};

static const char *adapter_param(const ruma_sweep_run *r, const char *name)
{
	const struct adapter_ctx *c = r->ctx;

	return ruma_exp_run_param(c->g, c->run, name);
}

static void adapter_push(const ruma_sweep_run *r, const char *arg)
{
	const struct adapter_ctx *c = r->ctx;

	push(c->a, arg);
}

static void adapter_env(const ruma_sweep_run *r, const char *name, const char *value)
{
	const struct adapter_ctx *c = r->ctx;

	if (c->e)
		env_add(c->e, name, value);
}

/* a peer's child: PATH, the arguments and the environment the system's adapter gives peers */
static void build_peer(const ruma_exp_grid *g, const struct ruma_exp_run *run,
		       const struct ruma_exp_peer *peer, const char *store, struct argv_buf *a,
		       struct env_buf *e)
{
	const ruma_sweep_adapter *ad = ruma_exp_system_adapter(g->system);
	struct adapter_ctx c = { g, run, a, e };
	ruma_sweep_run r = { .param = adapter_param, .push = adapter_push, .env = adapter_env,
			     .seed = a->seed, .store = store, .ctx = &c };

	push(a, peer->path);
	if (ad && ad->peer_argv)
		ad->peer_argv(&r);
	if (ad && ad->peer_env)
		ad->peer_env(&r);
}

/* A vmcache peer's scratch directory <store>.peer with an empty file
 * "block" in it (the original vmcache opens BLOCK without creating it, and
 * each run starts from an empty store): 0 or -errno. */
static int vmcache_peer_block(const char *store)
{
	char path[RUMA_EXP_PATH + 16];
	int fd;

	snprintf(path, sizeof(path), "%s.peer", store);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s.peer/block", store);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* a peer's stdout into metrics: the adapter's reader, else NAME,N,VALUE lines in Mops */
static void read_peer(const ruma_exp_grid *g, const struct ruma_exp_run *run, const char *out,
		      struct ruma_exp_result *res)
{
	const ruma_sweep_adapter *ad = ruma_exp_system_adapter(g->system);

	if (ad && ad->peer_out)
		ruma_exp_read_peer_out(g, run, out ? out : "", res);
	else
		ruma_exp_parse_metric_lines(out, "Mops", res);
}

/* the child's extra environment: LD_PRELOAD (preload, unless "none") and,
 * for a peer, RUMA_SEED (the key seed: the seed parameter or the run's) */
static void child_env(const ruma_exp_grid *g, const struct ruma_exp_run *run, int is_peer,
		      const char *run_seed, struct env_buf *e)
{
	const char *preload = ruma_exp_run_param(g, run, "preload");
	const char *seed = ruma_exp_run_param(g, run, "seed");

	e->n = 0;
	e->v[0] = NULL;
	if (g->system == RUMA_EXP_ART && preload && strcmp(preload, "none"))
		env_add(e, "LD_PRELOAD", preload);
	if (is_peer)
		env_add(e, "RUMA_SEED", seed ? seed : run_seed);
}

/* ruma <subcommand> <args> --result FILE, through the system's adapter */
static void build_driver(const ruma_exp_grid *g, const struct ruma_exp_run *run,
			 const ruma_sweep_adapter *ad, const char *store, const char *result,
			 struct argv_buf *a)
{
	struct adapter_ctx c = { g, run, a, NULL };
	ruma_sweep_run r = { .param = adapter_param, .push = adapter_push, .seed = a->seed,
			     .store = store, .ctx = &c };

	ad->argv(&r);
	push(a, "--result");
	push(a, result);
}

extern char **environ;

int ruma_exp_check_run(const ruma_exp_grid *g, const struct ruma_exp_run *run, const char *store,
		       char *err, size_t len)
{
	struct argv_buf a = { .n = 0 };
	const ruma_sweep_adapter *ad = ruma_exp_system_adapter(g->system);

	err[0] = '\0';
	if (ruma_exp_grid_peer(g, run->variant) || !ad || !ad->check)
		return 0;
	snprintf(a.seed, sizeof(a.seed), "%llu", (unsigned long long)run->seed);
	push(&a, "ruma");
	build_driver(g, run, ad, store, "/dev/null", &a);
	if (!ad->check(a.n - 1, a.v + 1, environ, err, len))
		return 0;
	err[strcspn(err, "\n")] = '\0'; /* the driver's first line */
	return RUMA_EPARSE;
}

/* A fresh, empty file for the child's result rows: 0 or -errno. */
static int result_file(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/ruma-result-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* The metrics of the rows the child wrote (none when it wrote no file). */
static void read_result(const ruma_exp_grid *g, const struct ruma_exp_run *run, const char *path,
			struct ruma_exp_result *res)
{
	ruma_result_row *rows = NULL;
	size_t n = 0;

	if (ruma_result_read(path, &rows, &n) != 0)
		n = 0;
	ruma_exp_read_rows_of(g, run, rows, n, res);
	free(rows);
}

/* growing output buffer of at most limit bytes; keep_tail: keep the last ones */
struct obuf {
	char *p;
	size_t len, cap, limit;
	int keep_tail;
};

static int obuf_add(struct obuf *b, const char *d, size_t n)
{
	if (b->keep_tail && n >= b->limit) {
		d += n - b->limit;
		n = b->limit;
	}
	if (b->keep_tail && b->len + n > b->limit) {
		size_t drop = b->len + n - b->limit;
		memmove(b->p, b->p + drop, b->len - drop);
		b->len -= drop;
	}
	if (!b->keep_tail && b->len + n > b->limit)
		n = b->limit > b->len ? b->limit - b->len : 0;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *np = realloc(b->p, cap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static void close_open(struct pollfd *pf, int n)
{
	for (int i = 0; i < n; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
}

/* drain both pipes until EOF, the deadline, or an interrupt; closes both ends */
static int collect(int ofd, int efd, pid_t pid, double timeout, struct obuf *out,
		   struct obuf *err, int *timed_out)
{
	struct pollfd pf[2] = { { .fd = ofd, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
	double deadline = ruma_now_sec() + timeout;
	char buf[65536];
	int open_fds = 2, killed = 0;

	while (open_fds) {
		double left = deadline - ruma_now_sec();
		int r;

		if ((interrupted || left <= 0) && !killed) {
			if (!interrupted)
				*timed_out = 1;
			kill(-pid, SIGKILL);
			killed = 1;
		}
		r = poll(pf, 2, killed ? 1000 : (int)RUMA_MIN(left * 1000 + 1, 1000.0));
		if (r < 0 && errno != EINTR) {
			int rc = -errno;
			close_open(pf, 2);
			return rc;
		}
		for (int i = 0; i < 2 && r > 0; i++) {
			ssize_t n;

			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(pf[i].fd, buf, sizeof(buf));
			if (n > 0) {
				if (obuf_add(i == 0 ? out : err, buf, (size_t)n)) {
					close_open(pf, 2);
					return -ENOMEM;
				}
			} else if (n == 0 || errno != EINTR) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
			}
		}
	}
	return 0;
}

static void tail_note(const char *err, char *note, size_t len)
{
	size_t l = err ? strlen(err) : 0, o = 0;
	const char *s;

	while (l && (err[l - 1] == '\n' || err[l - 1] == ' '))
		l--;
	s = err ? err + (l > len - 1 ? l - (len - 1) : 0) : "";
	for (; s < err + l && o + 1 < len; s++)
		note[o++] = *s == '\n' ? ';' : *s == '\r' ? ' ' : *s;
	note[o] = '\0';
}

static pid_t spawn(const char *file, char *const *argv, const char *cwd,
		   const char *const *env, int ofd[2], int efd[2])
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setpgid(0, 0);
	dup2(ofd[1], STDOUT_FILENO);
	dup2(efd[1], STDERR_FILENO);
	close(ofd[0]);
	close(ofd[1]);
	close(efd[0]);
	close(efd[1]);
	if (cwd && chdir(cwd)) {
		fprintf(stderr, "cannot enter %s: %s\n", cwd, strerror(errno));
		_exit(127);
	}
	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		char name[64];
		if (!eq || (size_t)(eq - env[i]) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - env[i]), env[i]);
		setenv(name, eq + 1, 1);
	}
	execv(file, argv);
	fprintf(stderr, "cannot execute %s: %s\n", file, strerror(errno));
	_exit(127);
}

int ruma_exp_exec(const char *file, char *const argv[], const char *cwd, const char *const *env,
		  double timeout, struct ruma_exp_exec *x)
{
	struct obuf out = { .limit = 64u << 20 }, err = { .limit = 1u << 20, .keep_tail = 1 };
	int ofd[2], efd[2], status = 0, rc;
	double t0 = ruma_now_sec();
	pid_t pid;

	memset(x, 0, sizeof(*x));
	if (pipe2(ofd, O_CLOEXEC))
		return -errno;
	if (pipe2(efd, O_CLOEXEC)) {
		rc = -errno;
		close(ofd[0]);
		close(ofd[1]);
		return rc;
	}
	fflush(NULL);
	pid = spawn(file, argv, cwd, env, ofd, efd);
	rc = pid < 0 ? -errno : 0;
	close(ofd[1]);
	close(efd[1]);
	if (pid < 0) {
		close(ofd[0]);
		close(efd[0]);
		return rc;
	}
	setpgid(pid, pid);
	child_pid = pid;
	if (interrupted)
		kill(-pid, SIGKILL);
	rc = collect(ofd[0], efd[0], pid, timeout, &out, &err, &x->timed_out);
	if (rc)
		kill(-pid, SIGKILL); /* collect closed the pipes (some may be closed already) */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	x->seconds = ruma_now_sec() - t0;
	x->status = status;
	x->interrupted = interrupted != 0;
	x->out = out.p ? out.p : calloc(1, 1);
	x->err = err.p ? err.p : calloc(1, 1);
	if (rc || !x->out || !x->err) {
		free(x->out);
		free(x->err);
		x->out = x->err = NULL;
		return rc ? rc : -ENOMEM;
	}
	return 0;
}

void ruma_exp_exec_status(const struct ruma_exp_exec *x, char *buf, size_t len)
{
	if (x->interrupted)
		snprintf(buf, len, "interrupted");
	else if (x->timed_out)
		snprintf(buf, len, "timeout");
	else if (WIFSIGNALED(x->status))
		snprintf(buf, len, "signal=%d", WTERMSIG(x->status));
	else if (WIFEXITED(x->status) && WEXITSTATUS(x->status))
		snprintf(buf, len, "exit=%d", WEXITSTATUS(x->status));
	else
		snprintf(buf, len, "ok");
}

int ruma_exp_measure(const ruma_exp_grid *g, const struct ruma_exp_run *run, const char *store,
		     struct ruma_exp_result *res)
{
	struct argv_buf a = { .n = 0 };
	struct ruma_exp_exec x;
	char status[48], result[RUMA_EXP_PATH] = "";
	struct env_buf env;
	int rc;

	const struct ruma_exp_peer *peer = ruma_exp_grid_peer(g, run->variant);
	const ruma_sweep_adapter *ad = peer ? NULL : ruma_exp_system_adapter(g->system);

	memset(res, 0, sizeof(*res));
	snprintf(a.seed, sizeof(a.seed), "%llu", (unsigned long long)run->seed);
	if (ad && (rc = result_file(result, sizeof(result))) != 0)
		return rc;
	child_env(g, run, peer != NULL, a.seed, &env);
	if (peer && g->system == RUMA_EXP_VMCACHE && (rc = vmcache_peer_block(store)) != 0)
		return rc;
	if (peer) {
		build_peer(g, run, peer, store, &a, &env);
	} else {
		push(&a, "ruma");
		build_driver(g, run, ad, store, result, &a);
	}
	rc = ruma_exp_exec(peer ? peer->path : "/proc/self/exe", a.v, NULL, env.v, g->timeout, &x);
	if (rc) {
		if (ad)
			unlink(result);
		return rc;
	}
	res->seconds = x.seconds;
	if (peer)
		read_peer(g, run, x.out, res);
	else
		read_result(g, run, result, res);
	if (ad)
		unlink(result);
	ruma_exp_exec_status(&x, status, sizeof(status));
	if (strcmp(status, "ok")) {
		snprintf(res->status, sizeof(res->status), "%s", status);
		res->ok = 0;
		res->nm = 0;
	}
	if (!res->ok)
		tail_note(x.err, res->note, sizeof(res->note));
	free(x.out);
	free(x.err);
	return 0;
}
