/*
 * sysfile.h — internal: reading and writing /proc and /sys files (sysctls,
 * sysfs switches, procfs tables) through the OS layer.  Shared by
 * sysinfo.c and perf.c; tools reach the writer through
 * ruma_sysinfo_write_u64_file / ruma_sysinfo_write_file.
 */
#ifndef RUMA_CORE_SYSFILE_H
#define RUMA_CORE_SYSFILE_H

#include <ruma/ruma.h>

/*
 * ruma_sysfile_read — read up to cap - 1 bytes of path into buf and
 * NUL-terminate it (cap > 0).  Returns 0 or a negative errno.
 */
int ruma_sysfile_read(const char *path, char *buf, size_t cap);

/*
 * A /proc or /sys file kept open for repeated reads: a sysctl's handler
 * formats the current value at every read from offset 0, so one pread per
 * reading replaces open, read and close.  Zero-initialise (static storage);
 * the descriptor is opened at the first read (O_CLOEXEC) and kept for the
 * process.
 */
typedef struct ruma_sysfile_kept {
	_Atomic int fd_plus_one; /* 0: not open yet */
} ruma_sysfile_kept;

/*
 * ruma_sysfile_read_kept — as ruma_sysfile_read, through k's descriptor
 * (opened on first use; concurrent first uses keep one).  Returns 0 or a
 * negative errno.
 */
int ruma_sysfile_read_kept(ruma_sysfile_kept *k, const char *path, char *buf, size_t cap);

/*
 * ruma_sysfile_count_lines — the number of '\n' in path, read in chunks
 * (for files of any size such as /proc/self/maps).  Returns 0 or a negative errno.
 */
int ruma_sysfile_count_lines(const char *path, uint64_t *n);

/*
 * ruma_sysfile_each_line — call fn(ctx, line) for every line of path (read
 * in chunks, so for files of any size such as /proc/locks), without its
 * '\n' and NUL-terminated; a line longer than RUMA_SYSFILE_LINE - 1 bytes
 * is cut to that.  fn returns 0 to go on or anything else to stop.
 * Returns fn's non-zero value, 0 after the last line, or a negative errno
 * of the open or a read (lines before the failing read were handed on).
 */
#define RUMA_SYSFILE_LINE 512
int ruma_sysfile_each_line(const char *path, int (*fn)(void *ctx, const char *line), void *ctx);

/*
 * ruma_sysfile_each_entry — call fn(ctx, name) for every entry of the
 * directory path (sysfs listings such as /sys/kernel/mm/hugepages), "." and
 * ".." included.  The directory is opened through the OS layer, the entries
 * read with readdir.  Returns 0 or a negative errno of the open.
 */
int ruma_sysfile_each_entry(const char *path, void (*fn)(void *ctx, const char *name), void *ctx);

/*
 * ruma_sysfile_write — write text (NUL-terminated) to path with one
 * write(2).  Returns 0, a negative errno (also one reported at close), or
 * RUMA_ESHORTIO when the kernel took only part of it.
 */
int ruma_sysfile_write(const char *path, const char *text);

#endif
