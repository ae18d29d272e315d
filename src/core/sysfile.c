/*
 * sysfile.c — small readers for /proc and /sys files.
 *
 * Invariants: the descriptor is closed on every path; EINTR is retried.
 * Syscalls: open, read, close (procfs/sysfs only; data files go through the
 * OS layer).
 */
#include "core/sysfile.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* One read(2), retried on EINTR: bytes read or a negative errno. */
static ssize_t read_once(int fd, char *buf, size_t len)
{
	ssize_t r;

	do
		r = read(fd, buf, len);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int ruma_sysfile_read(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t r = 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (len + 1 < cap && (r = read_once(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	buf[len] = '\0';
	return r < 0 ? (int)r : 0;
}

int ruma_sysfile_count_lines(const char *path, uint64_t *n)
{
	char buf[16384];
	uint64_t lines = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((r = read_once(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			lines += buf[i] == '\n';
	close(fd);
	if (r < 0)
		return (int)r;
	*n = lines;
	return 0;
}
