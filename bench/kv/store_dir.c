/*
 * store_dir.c — the store directory of a `ruma kv` run (store_dir.h).
 *
 * Syscalls: mkdir, stat, open/close (the mark), nftw's walk with unlink
 * and rmdir (remove).
 */
#include "bench/kv/store_dir.h"
#include "bench/kv/kv.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MARK ".ruma-kv"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
	return rc ? -errno : 0;
}

int ruma_kv_store_dir_remove(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int make_dir(const char *path, char *err, size_t errlen)
{
	if (!mkdir(path, 0755) || errno == EEXIST)
		return 0;
	int e = -errno;
	return ruma_kv_open_fail(err, errlen, e, "cannot create %s: %s", path, strerror(-e));
}

int ruma_kv_store_dir(const char *dir, const char *system, char *path, size_t len, char *err,
		      size_t errlen)
{
	char mark[4200];
	struct stat st;
	int rc;

	if ((size_t)snprintf(path, len, "%s/kv-%s", dir, system) >= len)
		return ruma_kv_open_fail(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
	snprintf(mark, sizeof(mark), "%s/%s", path, MARK);
	if (!stat(path, &st)) {
		if (stat(mark, &st))
			return ruma_kv_open_fail(err, errlen, -EEXIST,
						 "%s exists and was not made by ruma kv (no %s in "
						 "it): not deleted; remove it or choose another "
						 "--dir", path, MARK);
		if ((rc = ruma_kv_store_dir_remove(path)))
			return ruma_kv_open_fail(err, errlen, rc, "cannot empty %s: %s", path,
						 strerror(-rc));
	}
	if ((rc = make_dir(dir, err, errlen)) || (rc = make_dir(path, err, errlen)))
		return rc;
	int fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		rc = -errno;
		return ruma_kv_open_fail(err, errlen, rc, "cannot write %s: %s", mark,
					 strerror(-rc));
	}
	close(fd);
	return 0;
}
