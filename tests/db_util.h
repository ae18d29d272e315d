/*
 * db_util.h — what the db.h tests (test_db.c, test_blob.c, test_db_mt.c,
 * test_blob_mt.c) share: a fresh store directory per case (path, and its
 * log logpath), options with a given pool and no messages, values from C
 * strings, and the steps most cases open and close with (a store opened
 * in a fresh directory with a table created in a first transaction; a
 * transaction with a table opened; a reopen; the store check, close and
 * removal at the end).  The including file defines DB_TEST_NAME (the
 * directory's name part) first.
 */
#ifndef RUMA_TEST_DB_UTIL_H
#define RUMA_TEST_DB_UTIL_H

#include "test.h"

#include <ruma/db.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[128], path[192], logpath[200];

/* A new directory /tmp/ruma-test-<name>-XXXXXX; path and logpath in it. */
static inline int dirs(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ruma-test-%s-XXXXXX", DB_TEST_NAME);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/store", dir);
	snprintf(logpath, sizeof(logpath), "%s.wal", path);
	return 0;
}

static inline void dirs_remove(void)
{
	unlink(path);
	unlink(logpath);
	rmdir(dir);
}

static inline void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

/* The default options with a pool of pool_bytes and no messages. */
static inline ruma_db_options db_test_opts(uint64_t pool_bytes)
{
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = pool_bytes;
	o.message = quiet;
	return o;
}

static inline ruma_val sv(const char *s)
{
	return (ruma_val){ strlen(s), (void *)s };
}

/* Begin a transaction with txn_flags and open table name in it with
 * open_flags (RUMA_DB_CREATE or 0); a failed open aborts the transaction. */
static inline int db_begin_table(ruma_db *d, unsigned txn_flags, const char *name,
				 unsigned open_flags, ruma_db_txn **x, ruma_db_table **t)
{
	int r = ruma_db_begin(d, txn_flags, x);
	if (r)
		return r;
	r = ruma_db_table_open(*x, name, open_flags, t);
	if (r)
		(void)ruma_db_abort(*x);
	return r;
}

/* A case's start: a fresh directory (dirs), the store at path opened in it
 * with *o, and a transaction begun that created table name. */
static inline int db_test_start(const ruma_db_options *o, ruma_db **d, ruma_db_txn **x,
				ruma_db_table **t, const char *name)
{
	if (dirs())
		return -errno;
	int r = ruma_db_open(path, o, d);
	if (r)
		return r;
	r = db_begin_table(*d, 0, name, RUMA_DB_CREATE, x, t);
	if (r)
		(void)ruma_db_close(*d);
	return r;
}

/* Close the store *d and open the one at path again with *o. */
static inline int db_reopen(ruma_db **d, const ruma_db_options *o)
{
	int r = ruma_db_close(*d);
	return r ? r : ruma_db_open(path, o, d);
}

/* A case's end: the store check passes, the store closes, and its
 * directory is removed. */
static inline int db_test_end(ruma_db *d)
{
	CHECK_OK(ruma_db_check(d));
	CHECK_OK(ruma_db_close(d));
	dirs_remove();
	return TEST_PASS;
}

#endif
