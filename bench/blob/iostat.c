/*
 * iostat.c — what `ruma blob` counts of the bytes a system sends to the
 * device and keeps on it (blob.h):
 *   - /proc/self/io write_bytes: the bytes this process caused to be sent
 *     to the block layer (direct writes when issued, buffered ones when the
 *     page is dirtied), all its threads together; a file system's journal,
 *     written by the kernel's own thread, is not in it;
 *   - the block device's sectors written (field 7 of /sys/dev/block/
 *     <major>:<minor>/stat, 512-byte units) of the device the store's
 *     directory is on: everything, journal and metadata included, but also
 *     every other process's writes to that device;
 *   - the store's size: the sizes of the regular files under its directory.
 *
 * Syscalls: stat (the directory's device), fopen/read of /proc/self/io and
 * the sysfs stat file, nftw's walk (lstat) of the store directory.
 */
#include "bench/blob/blob.h"

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

bool ruma_blob_dev_stat(const char *dir, char *path, size_t len)
{
	struct stat st;
	if (stat(dir, &st) || major(st.st_dev) == 0)
		return false;
	snprintf(path, len, "/sys/dev/block/%u:%u/stat", major(st.st_dev), minor(st.st_dev));
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	fclose(f);
	return true;
}

/* Field 7 (sectors written) of a block device's stat file. */
static int dev_written(const char *path, uint64_t *bytes)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	uint64_t v[7];
	int n = fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		       " %" SCNu64, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
	fclose(f);
	if (n != 7)
		return -EIO;
	*bytes = v[6] * 512;
	return 0;
}

int ruma_blob_io_read(const char *dev_stat, ruma_blob_io *out)
{
	char line[128];
	bool found = false;
	memset(out, 0, sizeof(*out));
	FILE *f = fopen("/proc/self/io", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "write_bytes: %" SCNu64, &out->proc_write) == 1)
			found = true;
	fclose(f);
	if (!found)
		return -EIO;
	out->dev_ok = dev_stat && dev_stat[0] && !dev_written(dev_stat, &out->dev_write);
	return 0;
}

static uint64_t walk_bytes; /* nftw has no context argument; one walk at a time */

static int add_file(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path;
	(void)f;
	if (flag == FTW_F && S_ISREG(st->st_mode))
		walk_bytes += (uint64_t)st->st_blocks * 512;
	return 0;
}

int ruma_blob_dir_bytes(const char *dir, uint64_t *bytes)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	walk_bytes = 0;
	int rc = nftw(dir, add_file, 16, FTW_PHYS);
	*bytes = walk_bytes;
	pthread_mutex_unlock(&lock);
	return rc ? (errno ? -errno : -EIO) : 0;
}
