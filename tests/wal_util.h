/*
 * wal_util.h — helpers shared by the crash tests of stores with a log
 * (test_btree_wal.c, test_btree_txn.c): the store configuration, keys and
 * values derived from (key, version), and killing a forked child at a
 * random instant.
 */
#ifndef RUMA_TEST_WAL_UTIL_H
#define RUMA_TEST_WAL_UTIL_H

#include "test.h"

#include <ruma/btree.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static char path[128];
static char logpath[160];
static char side[128];

/* Messages of the buffer manager: shown with RUMA_TEST_VERBOSE=1. */
static inline void quiet(void *ctx, const char *line)
{
	(void)ctx;
	if (getenv("RUMA_TEST_VERBOSE"))
		printf("  [bm] %s\n", line);
}

/* The configuration of the store at p: a 64-page pool, so eviction writes
 * pages all the time. */
static inline void store_config(ruma_bm_config *c, const char *p)
{
	ruma_bm_config_default(c);
	c->path = p;
	c->virt_bytes = 8192ull * RUMA_BM_PAGE_SIZE;
	c->phys_bytes = 64ull * RUMA_BM_PAGE_SIZE;
	c->batch = 8;
	c->max_threads = 8;
	c->write = RUMA_BM_WRITE_PWRITE; /* the power-loss simulation tracks pwrite/pwritev */
}

/* The store at `path`. */
static inline int open_store(bool fresh, ruma_bm_durability d, ruma_bm **bm)
{
	ruma_bm_config c;
	store_config(&c, path);
	c.fresh = fresh;
	c.durability = d;
	c.wal_flush_ms = 2;
	c.message = quiet;
	return ruma_bm_open(&c, bm);
}

static inline void key_of(uint32_t k, uint8_t out[4])
{
	out[0] = (uint8_t)(k >> 24);
	out[1] = (uint8_t)(k >> 16);
	out[2] = (uint8_t)(k >> 8);
	out[3] = (uint8_t)k;
}

/* The value of version ver of key k (8..187 bytes). */
static inline size_t val_of(uint32_t k, uint32_t ver, uint8_t *out)
{
	size_t n = 8 + (k * 7u + ver) % 180u;
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(k + ver + i);
	return n;
}

/* The write end of the pipe through which the child of run_and_kill reports
 * that its store is open (-1 outside such a child). */
static int child_ready_fd = -1;

/* In a forked child: the side file (append) and the store's tree "t" (SYNC);
 * exits with 3 if they cannot be opened.  Then tells run_and_kill that the
 * work begins (one byte on child_ready_fd). */
static inline void child_open(int *fd, ruma_bm **bm, ruma_btree **t)
{
	*fd = open(side, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (*fd < 0 || open_store(false, RUMA_BM_DURABLE_SYNC, bm) || ruma_btree_open(*bm, "t", t))
		_exit(3);
	char go = 1;
	if (child_ready_fd >= 0 && (write(child_ready_fd, &go, 1) != 1 || close(child_ready_fd)))
		_exit(3);
	child_ready_fd = -1;
}

/* Fork a child running fn(seed) (which calls child_open and then works until
 * killed); once it reports that its store is open, SIGKILL it after another
 * 100..500 ms (the crash instant, from the test's seed).  True when it died
 * by the signal (and not before).  The kill never lands before the store is
 * open, however slowly the child starts. */
static inline bool run_and_kill(void (*fn)(uint64_t), uint64_t seed)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return false;
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		close(fds[0]);
		child_ready_fd = fds[1];
		fn(seed);
		_exit(0);
	}
	close(fds[1]);
	char go;
	ssize_t got;
	while ((got = read(fds[0], &go, 1)) < 0 && errno == EINTR)
		;
	close(fds[0]);
	if (got == 1) {
		struct timespec ts = { 0, (long)(100 + ruma_rng_below(&test_rng, 400)) * 1000000L };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	int status;
	return waitpid(pid, &status, 0) == pid && got == 1 && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGKILL;
}

/* Set the paths under a new temporary directory. */
static inline int wal_dirs(const char *tmpl)
{
	strcpy(dir, tmpl);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/store", dir);
	snprintf(logpath, sizeof(logpath), "%s.wal", path);
	snprintf(side, sizeof(side), "%s/side", dir);
	return 0;
}

static inline void wal_dirs_remove(void)
{
	unlink(path);
	unlink(logpath);
	unlink(side);
	rmdir(dir);
}

#endif
