/*
 * db_util.h — what the db.h tests (test_db.c, test_blob.c) share: a fresh
 * store directory per case (path, and its log logpath), options with a
 * given pool and no messages, and values from C strings.  The including
 * file defines DB_TEST_NAME (the directory's name part) first.
 */
#ifndef RUMA_TEST_DB_UTIL_H
#define RUMA_TEST_DB_UTIL_H

#include <ruma/db.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[128], path[192], logpath[200];

/* A new directory /tmp/ruma-test-<name>-XXXXXX; path and logpath in it. */
static int dirs(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ruma-test-%s-XXXXXX", DB_TEST_NAME);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/store", dir);
	snprintf(logpath, sizeof(logpath), "%s.wal", path);
	return 0;
}

static void dirs_remove(void)
{
	unlink(path);
	unlink(logpath);
	rmdir(dir);
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

/* The default options with a pool of pool_bytes and no messages. */
static ruma_db_options db_test_opts(uint64_t pool_bytes)
{
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = pool_bytes;
	o.message = quiet;
	return o;
}

static ruma_val sv(const char *s)
{
	return (ruma_val){ strlen(s), (void *)s };
}

#endif
