/*
 * sysfile.c — small readers and one writer for /proc and /sys files: every
 * sysctl, sysfs switch or procfs table ruma reads or sets goes through here.
 *
 * Invariants: the descriptor is closed on every path; EINTR is retried (in
 * the OS layer); a write is one write(2) of the whole value, as the kernel's
 * sysctl and sysfs handlers expect, and an error reported only at close(2)
 * (sysfs may do that) is returned too.
 * A kept reader (ruma_sysfile_read_kept) holds its descriptor for the
 * process and preads from offset 0 each time: the value is current, and a
 * reading is one syscall.
 * Syscalls: open, read, pread, write through the OS layer (counted, injectable);
 * close, and getdents through readdir on a directory the OS layer opened,
 * directly.
 */
#include "core/sysfile.h"

#include "os/os.h"

#include <dirent.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int ruma_sysfile_read(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t r = 1;
	int fd;
	int rc = ruma_os_open(path, O_RDONLY | O_CLOEXEC, 0, &fd);

	if (rc)
		return rc;
	while (len + 1 < cap && (r = ruma_os_read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	buf[len] = '\0';
	return r < 0 ? (int)r : 0;
}

/* k's descriptor, opened on first use; 0 or a negative errno. */
static int kept_fd(ruma_sysfile_kept *k, const char *path, int *fd)
{
	int cur = atomic_load_explicit(&k->fd_plus_one, memory_order_acquire);
	int mine, rc;

	if (cur) {
		*fd = cur - 1;
		return 0;
	}
	if ((rc = ruma_os_open(path, O_RDONLY | O_CLOEXEC, 0, &mine)) != 0)
		return rc;
	if (!atomic_compare_exchange_strong(&k->fd_plus_one, &cur, mine + 1)) {
		close(mine); /* another thread opened it first */
		mine = cur - 1;
	}
	*fd = mine;
	return 0;
}

int ruma_sysfile_read_kept(ruma_sysfile_kept *k, const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t r = 1;
	int fd, rc = kept_fd(k, path, &fd);

	if (rc)
		return rc;
	/* a short read is the whole value: a sysctl formats it in one go */
	while (len + 1 < cap) {
		size_t want = cap - 1 - len;
		r = ruma_os_pread(fd, buf + len, want, (off_t)len);
		if (r <= 0)
			break;
		len += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	buf[len] = '\0';
	return r < 0 ? (int)r : 0;
}

int ruma_sysfile_count_lines(const char *path, uint64_t *n)
{
	char buf[16384];
	uint64_t lines = 0;
	ssize_t r;
	int fd;
	int rc = ruma_os_open(path, O_RDONLY | O_CLOEXEC, 0, &fd);

	if (rc)
		return rc;
	while ((r = ruma_os_read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			lines += buf[i] == '\n';
	close(fd);
	if (r < 0)
		return (int)r;
	*n = lines;
	return 0;
}

/* Line splitting for ruma_sysfile_each_line: the current line so far. */
typedef struct line_buf {
	char text[RUMA_SYSFILE_LINE];
	size_t len;
} line_buf;

/* Hand the complete lines of chunk to fn; keep the unfinished tail in lb. */
static int feed_lines(line_buf *lb, const char *chunk, size_t n,
		      int (*fn)(void *ctx, const char *line), void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		if (chunk[i] != '\n') {
			if (lb->len + 1 < sizeof(lb->text))
				lb->text[lb->len++] = chunk[i];
			continue;
		}
		lb->text[lb->len] = '\0';
		lb->len = 0;
		int stop = fn(ctx, lb->text);
		if (stop)
			return stop;
	}
	return 0;
}

int ruma_sysfile_each_line(const char *path, int (*fn)(void *ctx, const char *line), void *ctx)
{
	char chunk[4096];
	line_buf lb = { .len = 0 };
	ssize_t r = 0;
	int fd, stop = 0;
	int rc = ruma_os_open(path, O_RDONLY | O_CLOEXEC, 0, &fd);

	if (rc)
		return rc;
	while (!stop && (r = ruma_os_read(fd, chunk, sizeof(chunk))) > 0)
		stop = feed_lines(&lb, chunk, (size_t)r, fn, ctx);
	close(fd);
	if (stop)
		return stop;
	if (r < 0)
		return (int)r;
	if (lb.len == 0)
		return 0;
	lb.text[lb.len] = '\0'; /* a last line without '\n' */
	return fn(ctx, lb.text);
}

int ruma_sysfile_each_entry(const char *path, void (*fn)(void *ctx, const char *name), void *ctx)
{
	int fd;
	int rc = ruma_os_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, &fd);

	if (rc)
		return rc;
	DIR *d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		fn(ctx, e->d_name);
	closedir(d); /* closes fd */
	return 0;
}

int ruma_sysfile_write(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd;
	int rc = ruma_os_open(path, O_WRONLY | O_CLOEXEC, 0, &fd);

	if (rc)
		return rc;
	ssize_t w = ruma_os_write(fd, text, len);
	rc = w < 0 ? (int)w : (size_t)w != len ? RUMA_ESHORTIO : 0;
	if (close(fd) != 0 && rc == 0)
		rc = -errno; /* sysfs may report the error at close */
	return rc;
}
