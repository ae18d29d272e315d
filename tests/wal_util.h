/*
 * wal_util.h — helpers shared by the tests of stores with a log
 * (test_btree_wal, _wal_mt, _txn, _si, _si_mt, _si_hist_mt): wal_fixture (a
 * temporary directory per case with the store, its log and a side file),
 * the store's configuration, opening it with its tree "t" and closing both,
 * a simulated power loss, keys and values derived from (key, version),
 * killing a forked child at a random instant, and running writer and
 * reader threads for a while.
 */
#ifndef RUMA_TEST_WAL_UTIL_H
#define RUMA_TEST_WAL_UTIL_H

#include "fixture.h"

#include <ruma/btree.h>

#include "os/os.h"

#include <fcntl.h>
#include <pthread.h>
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
	test_bm_config(c, p, 8192, 64);
	c->fresh = false;
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

/* The store at `path` (not fresh) and its tree "t"; when rec is not NULL,
 * what the open's recovery did goes there.  0 or the first error. */
static inline int open_tree(ruma_bm_durability d, ruma_bm **bm, ruma_btree **t,
			    ruma_bm_recovery *rec)
{
	int rc = open_store(false, d, bm);
	if (rc != 0)
		return rc;
	if (rec)
		ruma_bm_get_recovery(*bm, rec);
	if ((rc = ruma_btree_open(*bm, "t", t)) != 0)
		ruma_bm_close(*bm);
	return rc;
}

/* A power loss now (ruma_os_powerloss): the tree and store are closed after
 * it, so nothing of theirs reaches the files, and the simulation disarmed.
 * 0 or the error of ruma_os_powerloss. */
static inline int power_off(ruma_bm *bm, ruma_btree *t)
{
	int rc = ruma_os_powerloss();
	ruma_btree_release(t);
	(void)ruma_bm_close(bm);
	ruma_os_powerloss_disarm();
	return rc;
}

/* Release t and close bm: the close's result. */
static inline int close_tree(ruma_bm *bm, ruma_btree *t)
{
	ruma_btree_release(t);
	return ruma_bm_close(bm);
}

static inline void key_of(uint32_t k, uint8_t out[4])
{
	out[0] = (uint8_t)(k >> 24);
	out[1] = (uint8_t)(k >> 16);
	out[2] = (uint8_t)(k >> 8);
	out[3] = (uint8_t)k;
}

/* The key number of a 4-byte key (key_of's inverse). */
static inline uint32_t key_num(const void *key)
{
	const uint8_t *b = key;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/*
 * run_threads — start nw threads of writer (argument test_seed + i) and nr
 * of reader (argument rarg + i), let them run for 1.5 s or until *fails is
 * not 0, then set *stop and join them all.  0, or the error of
 * pthread_create (the threads started are stopped and joined).
 */
static inline int run_threads(void *(*writer)(void *), unsigned nw, void *(*reader)(void *),
			      unsigned nr, uintptr_t rarg, const uint64_t *fails, int *stop)
{
	pthread_t th[64];
	unsigned n = 0;
	int rc = 0;

	for (unsigned i = 0; rc == 0 && i < nw + nr && i < 64; i++) {
		void *(*fn)(void *) = i < nw ? writer : reader;
		uintptr_t arg = i < nw ? (uintptr_t)test_seed + i : rarg + (i - nw);
		if ((rc = pthread_create(&th[n], NULL, fn, (void *)arg)) == 0)
			n++;
	}
	uint64_t until = ruma_now_ns() + 1500000000ull;
	while (rc == 0 && ruma_now_ns() < until && !__atomic_load_n(fails, __ATOMIC_RELAXED))
		usleep(20000);
	__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return rc ? rc : nw + nr > 64 ? -E2BIG : 0;
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

/* What a forked child of run_and_kill works with. */
struct child {
	ruma_bm *bm;
	ruma_btree *t;
	ruma_rng rng; /* seeded from run_and_kill's seed */
	int fd;	      /* the side file */
};

/* In a forked child: c->rng seeded with seed, the side file (append) and the
 * store's tree "t" (SYNC); exits with 3 if they cannot be opened.  Then tells
 * run_and_kill that the work begins (one byte on child_ready_fd). */
static inline void child_open(struct child *c, uint64_t seed)
{
	ruma_rng_seed(&c->rng, seed);
	c->fd = open(side, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (c->fd < 0 || open_tree(RUMA_BM_DURABLE_SYNC, &c->bm, &c->t, NULL))
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

/* The fixture of the tests with a log (test_main_fixture): a temporary
 * directory per case, with the store, its log and the side file in it. */
static inline int wal_setup(void)
{
	return test_dir_make(dir, sizeof(dir), test_module, TEST_PATH(path, "store"),
			     TEST_PATH(logpath, "store.wal"), TEST_PATH(side, "side"), NULL);
}

static inline void wal_teardown(void)
{
	test_dir_remove(dir);
}

static const struct test_fixture wal_fixture = { wal_setup, wal_teardown };

#endif
