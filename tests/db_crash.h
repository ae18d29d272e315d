/*
 * db_crash.h — the crash steps the db.h tests (test_db.c, test_blob.c)
 * share: a child process killed with SIGKILL while it commits and reports
 * each commit through a pipe, and a simulated power loss (os/os.h's
 * ruma_os_powerloss: every write after the loss is dropped, as if the
 * machine lost power) at the nth fdatasync of a store opened fresh.
 * Include after db_util.h.
 */
#ifndef RUMA_TEST_DB_CRASH_H
#define RUMA_TEST_DB_CRASH_H

#include "db_util.h"
#include "os/os.h"

#include <signal.h>
#include <sys/wait.h>

/* Fork a child that runs child(fd): it commits in a loop and writes a
 * report of 4 bytes to fd after each commit, and never returns.  Read
 * `want` reports, kill -9 the child, then read the pipe to its end: *last
 * is the last report the child wrote before the kill landed. */
static inline int db_kill9(void (*child)(int fd), unsigned want, unsigned *last)
{
	int p[2];
	CHECK(!pipe(p));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(p[1]);
		_exit(5);
	}
	close(p[1]);
	unsigned got = 0;
	*last = 0;
	while (got < want && read(p[0], last, sizeof(*last)) == sizeof(*last))
		got++;
	CHECK_EQ(got, want);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	while (read(p[0], last, sizeof(*last)) == sizeof(*last))
		got++;
	close(p[0]);
	return TEST_PASS;
}

/* The inject hook that makes the power go off. */
static inline void power_off(void *ctx)
{
	(void)ctx;
	(void)ruma_os_powerloss();
}

/* A fresh store at path (its files removed) opened with *o, with power
 * losses armed: a hook on an fdatasync with power_off makes one. */
static inline int db_powerloss_open(const ruma_db_options *o, ruma_db **d)
{
	unlink(path);
	unlink(logpath);
	int r = ruma_os_powerloss_arm();
	return r ? r : ruma_db_open(path, o, d);
}

/* After the run: whether the power went off; the store closed (its result
 * does not matter after a loss), the hooks cleared, power losses disarmed. */
static inline bool db_powerloss_close(ruma_db *d)
{
	bool lost = ruma_os_powerloss_dead();
	(void)ruma_db_close(d);
	ruma_os_inject_clear();
	ruma_os_powerloss_disarm();
	return lost;
}

/* Open the store at path read-only, with *o otherwise. */
static inline int db_open_readonly(const ruma_db_options *o, ruma_db **d)
{
	ruma_db_options ro = *o;
	ro.flags |= RUMA_DB_READONLY;
	return ruma_db_open(path, &ro, d);
}

#endif
