/*
 * exp_util.h — helpers shared by the experiment tests (test_exp.c,
 * test_exp_grids.c): a private temporary directory, paths in it, and its
 * removal at the end.
 */
#ifndef RUMA_TEST_EXP_UTIL_H
#define RUMA_TEST_EXP_UTIL_H

#include "test.h"

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static char tmpdir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* remove tmpdir and everything in it */
static void cleanup(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmpdir/name (eight buffers, reused in turn) */
static const char *tpath(const char *name)
{
	static char buf[8][512];
	static int k;
	char *p = buf[k++ % 8];

	snprintf(p, 512, "%s/%s", tmpdir, name);
	return p;
}

#endif
