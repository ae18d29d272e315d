/*
 * sysfile.h — internal: reading /proc and /sys files (plain open/read; these
 * files are not part of the OS layer's syscall list).  Shared by sysinfo.c
 * and perf.c.
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
 * ruma_sysfile_count_lines — the number of '\n' in path, read in chunks
 * (for files of any size such as /proc/self/maps).  Returns 0 or a negative errno.
 */
int ruma_sysfile_count_lines(const char *path, uint64_t *n);

#endif
