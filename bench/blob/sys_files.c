/*
 * sys_files.c — `files`: one file per object in a directory, the way a
 * program keeps large values beside a store when the store cannot hold
 * them.  It is the file system's own path, so its calls go to libc as
 * such a program's would (not through ruma's OS layer).
 *
 * Object id is the file <dir>/<id>.  What each operation does:
 *   put of a new object   open(O_CREAT | O_EXCL), write, and with
 *                         durability sync fdatasync (ext4 commits the new
 *                         directory entry in the same journal transaction);
 *   overwrite             the new content into <id>.tmp, fdatasync (sync),
 *                         rename over <id>, fsync of the directory (sync):
 *                         a reader or a crash sees the old or the new
 *                         object whole, never a mix;
 *   delete                unlink, fsync of the directory (sync);
 *   get                   open, fstat, read of the whole file into the
 *                         thread's buffer (a copy, as read(2) makes one);
 *   settle                every file fdatasync'ed and, for cold reads,
 *                         dropped from the page cache with
 *                         posix_fadvise(POSIX_FADV_DONTNEED), so the next
 *                         reads come from the device.
 * Durability none: no fdatasync and no directory fsync.
 *
 * Syscalls: open, write, read, fstat, fdatasync, fsync, rename, unlink,
 * posix_fadvise, opendir/readdir, close.
 */
#include "bench/blob/blob.h"

#include <ruma/ruma.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct store {
	char dir[4096];
	int dirfd;
	bool sync;
	bool huge;  /* conf.huge_buffers */
};

struct thread {
	ruma_blob_thread base;
	struct store *s;
	unsigned char *buf;
	size_t cap;
};

static int files_open(const ruma_blob_conf *c, void **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	if (!s)
		return ruma_blob_open_fail(err, errlen, -ENOMEM, "out of memory");
	snprintf(s->dir, sizeof(s->dir), "%s", c->dir);
	s->sync = c->sync;
	s->huge = c->huge_buffers;
	s->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		int e = -errno;
		free(s);
		return ruma_blob_open_fail(err, errlen, e, "%s: %s", c->dir, strerror(-e));
	}
	*out = s;
	return 0;
}

static int files_close(void *p, char *err, size_t errlen)
{
	struct store *s = p;
	int rc = close(s->dirfd) ? -errno : 0;
	free(s);
	return rc ? ruma_blob_open_fail(err, errlen, rc, "close: %s", strerror(-rc)) : 0;
}

static int files_thread_open(void *p, ruma_blob_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t)
		return ruma_blob_open_fail(err, errlen, -ENOMEM, "out of memory");
	t->s = p;
	*out = &t->base;
	return 0;
}

static void files_thread_close(ruma_blob_thread *th)
{
	struct thread *t = (struct thread *)th;
	if (t)
		ruma_blob_buffer_free(t->buf, t->s->huge);
	free(t);
}

/* errno as a negative code with the message in th. */
static int sys_fail(ruma_blob_thread *th, const char *what, uint64_t id)
{
	int e = errno ? errno : EIO;
	return ruma_blob_fail(th, -e, "object %" PRIu64 ": %s: %s", id, what, strerror(e));
}

static int write_all(int fd, const void *data, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* Write data into a new file at name (relative to the directory), synced when durable. */
static int write_file(struct thread *t, const char *name, int flags, uint64_t id,
		      const void *data, size_t len)
{
	int fd = openat(t->s->dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
	if (fd < 0)
		return errno == EEXIST ? -EEXIST : sys_fail(&t->base, "create", id);
	int rc = write_all(fd, data, len) ? sys_fail(&t->base, "write", id) : 0;
	if (!rc && t->s->sync && fdatasync(fd))
		rc = sys_fail(&t->base, "fdatasync", id);
	if (close(fd) && !rc)
		rc = sys_fail(&t->base, "close", id);
	return rc;
}

static int dir_sync(struct thread *t, uint64_t id)
{
	return t->s->sync && fsync(t->s->dirfd) ? sys_fail(&t->base, "fsync of the directory", id)
						 : 0;
}

static int files_put(ruma_blob_thread *th, uint64_t id, const void *data, size_t len)
{
	struct thread *t = (struct thread *)th;
	char name[32], tmp[40];
	snprintf(name, sizeof(name), "%" PRIu64, id);
	int rc = write_file(t, name, O_EXCL, id, data, len);
	if (rc != -EEXIST)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	if ((rc = write_file(t, tmp, O_TRUNC, id, data, len)))
		return rc;
	if (renameat(t->s->dirfd, tmp, t->s->dirfd, name))
		return sys_fail(th, "rename", id);
	return dir_sync(t, id);
}

static int read_all(int fd, void *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = read(fd, (char *)buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* shorter than fstat said */
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

static int grow(struct thread *t, size_t len)
{
	void *b = t->buf;
	if (ruma_blob_buffer(&b, &t->cap, len, t->s->huge))
		return ruma_blob_fail(&t->base, -ENOMEM, "out of memory for %zu bytes", len);
	t->buf = b;
	return 0;
}

static int files_get(ruma_blob_thread *th, uint64_t id, const void **data, size_t *len)
{
	struct thread *t = (struct thread *)th;
	char name[32];
	struct stat st;
	snprintf(name, sizeof(name), "%" PRIu64, id);
	int fd = openat(t->s->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? RUMA_ENOTFOUND : sys_fail(th, "open", id);
	int rc = fstat(fd, &st) ? sys_fail(th, "fstat", id) : grow(t, (size_t)st.st_size);
	if (!rc && read_all(fd, t->buf, (size_t)st.st_size))
		rc = sys_fail(th, "read", id);
	close(fd);
	if (!rc) {
		*data = t->buf;
		*len = (size_t)st.st_size;
	}
	return rc;
}

static int files_del(ruma_blob_thread *th, uint64_t id)
{
	struct thread *t = (struct thread *)th;
	char name[32];
	snprintf(name, sizeof(name), "%" PRIu64, id);
	if (unlinkat(t->s->dirfd, name, 0))
		return errno == ENOENT ? RUMA_ENOTFOUND : sys_fail(th, "unlink", id);
	return dir_sync(t, id);
}

/* One file of the directory synced and, when cold, dropped from the page cache. */
static int settle_file(struct store *s, const char *name, bool cold, char *err, size_t errlen)
{
	int fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ruma_blob_open_fail(err, errlen, -errno, "%s/%s: %s", s->dir, name,
					   strerror(errno));
	int rc = fdatasync(fd) ? -errno : 0;
	if (!rc && cold)
		rc = -posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return rc ? ruma_blob_open_fail(err, errlen, rc, "%s/%s: %s", s->dir, name,
					strerror(-rc)) : 0;
}

static int files_settle(void *p, bool cold, char *err, size_t errlen)
{
	struct store *s = p;
	DIR *d = opendir(s->dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return ruma_blob_open_fail(err, errlen, -errno, "%s: %s", s->dir, strerror(errno));
	while (!rc && (e = readdir(d)))
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			rc = settle_file(s, e->d_name, cold, err, errlen);
	closedir(d);
	if (!rc && fsync(s->dirfd))
		rc = ruma_blob_open_fail(err, errlen, -errno, "%s: fsync: %s", s->dir,
					 strerror(errno));
	return rc;
}

const ruma_blob_system ruma_blob_sys_files = {
	.name = "files",
	.what = "one file per object (fdatasync per commit; rename for overwrites)",
	.open = files_open,
	.close = files_close,
	.thread_open = files_thread_open,
	.thread_close = files_thread_close,
	.put = files_put,
	.get = files_get,
	.del = files_del,
	.settle = files_settle,
	.check = NULL,
};
