/*
 * sysinfo_ext.h — the system report and the machine's knobs for the
 * repository's own programs: the kernel version and base page size, huge
 * page sizes, NUMA nodes and the persistent huge page counts (with the
 * writers the tests use to reserve huge pages and restore the previous
 * value afterwards), the THP modes and vm sysctls, /proc and /sys readers
 * and writers, the lock holder and exit state of a process (the buffer
 * manager's "store in use" message), and probes that try io_uring, perf
 * counters and O_DIRECT for real.  `ruma doctor` is built on this.
 *
 * Not installed and not exported (no RUMA_API; libruma is built with hidden
 * visibility): the programs of the repository reach it through the
 * modules' static libraries.  Like sysinfo.h, every function is
 * thread-safe and keeps no global state; sysinfo.c implements them.
 */
#ifndef RUMA_SYSINFO_EXT_H
#define RUMA_SYSINFO_EXT_H

#include <ruma/sysinfo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernel and page size ------------------------------------------------ */

typedef struct ruma_kernel_version {
	int major, minor, patch; /* parsed from the release; missing parts are 0 */
	char release[65];        /* uname -r, e.g. "6.18.44-fc-v657" */
} ruma_kernel_version;

/* ruma_sysinfo_kernel — uname(2) release, parsed.  Returns 0 or a negative errno. */
int ruma_sysinfo_kernel(ruma_kernel_version *out);

/*
 * ruma_sysinfo_kernel_at_least — true when the running kernel is at least
 * major.minor (false when uname fails).
 */
bool ruma_sysinfo_kernel_at_least(int major, int minor);

/* ruma_sysinfo_page_size — the base page size in bytes (sysconf). */
size_t ruma_sysinfo_page_size(void);

/* ---- huge page pools ----------------------------------------------------- */

#define RUMA_SYSINFO_MAX_HUGE_SIZES 8

/*
 * ruma_sysinfo_huge_sizes — the huge page sizes the kernel offers (from
 * /sys/kernel/mm/hugepages/hugepages-*kB), ascending, at most cap of them.
 * *n gets the number found (0 when the kernel has no hugetlb support).
 * Returns 0 or a negative errno.
 */
int ruma_sysinfo_huge_sizes(uint64_t *sizes_kb, size_t cap, size_t *n);

/*
 * ruma_sysinfo_default_huge_kb — the default huge page size (Hugepagesize of
 * /proc/meminfo; what /proc/sys/vm/nr_hugepages and MAP_HUGETLB without a size
 * flag use).  Returns 0, -ENOENT when the kernel has no hugetlb support.
 */
int ruma_sysinfo_default_huge_kb(uint64_t *size_kb);

/*
 * ruma_sysinfo_numa_nodes — the NUMA node ids (/sys/devices/system/node/node*),
 * ascending, at most cap.  A kernel without NUMA sysfs reports node 0.
 * Returns 0 or a negative errno.
 */
int ruma_sysinfo_numa_nodes(int *nodes, size_t cap, size_t *n);

/*
 * ruma_sysinfo_read_nr_hugepages — persistent huge pages of size_kb on node
 * (-1 = all nodes): the value ruma_sysinfo_set_nr_hugepages reads and writes,
 * without the surplus pages that sysfs nr_hugepages also counts.  So "read,
 * set to read + k, set back" leaves surplus pages surplus.  Returns 0,
 * -ENOENT for an unknown size or node.
 */
int ruma_sysinfo_read_nr_hugepages(uint64_t size_kb, int node, uint64_t *n);

/*
 * ruma_sysinfo_set_nr_hugepages — ask the kernel to keep n persistent huge
 * pages of size_kb (system-wide): writes /proc/sys/vm/nr_hugepages for the
 * default size, /sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages for
 * the others.  *previous (may be NULL) gets the persistent count before
 * the write (as ruma_sysinfo_read_nr_hugepages gives it, for every size).
 * The count is read back: when the kernel reserved fewer than n pages
 * (fragmented memory) the previous value is written again and RUMA_ENOHUGE is
 * returned, so after any non-zero return nothing changed.
 * Typical test use: set(2048, prev + k, &prev) ... set(2048, prev, NULL).
 * Returns 0, -EACCES/-EPERM when not root, -ENOENT for an unknown size,
 * RUMA_ENOHUGE, or another negative errno.
 */
int ruma_sysinfo_set_nr_hugepages(uint64_t size_kb, uint64_t n, uint64_t *previous);

/*
 * ruma_sysinfo_set_nr_hugepages_ex — like ruma_sysinfo_set_nr_hugepages but
 * a shortfall is not an error: the kernel's result stays in place and *actual
 * gets the persistent count read back (may be below n).  previous and actual may be NULL.
 * Returns 0 or a negative errno (the write itself failed).
 */
int ruma_sysinfo_set_nr_hugepages_ex(uint64_t size_kb, uint64_t n, uint64_t *previous,
				     uint64_t *actual);

/* ---- transparent huge pages and vm sysctls ------------------------------- */

typedef struct ruma_thp_info {
	char enabled[24];       /* "always", "madvise" or "never" */
	char defrag[24];        /* "always", "defer", "defer+madvise", "madvise", "never" */
	char shmem_enabled[24]; /* "always", "within_size", "advise", "never", "deny", "force" */
} ruma_thp_info;

/*
 * ruma_sysinfo_thp — the selected (bracketed) THP modes from
 * /sys/kernel/mm/transparent_hugepage/.  A file that is missing leaves its
 * string empty.  Returns 0, -ENOENT when the kernel has no THP at all.
 */
int ruma_sysinfo_thp(ruma_thp_info *out);

typedef struct ruma_vm_info {
	uint64_t max_map_count;     /* vm.max_map_count: mappings per process */
	uint64_t overcommit_memory; /* vm.overcommit_memory: 0 heuristic, 1 always, 2 strict */
	uint64_t overcommit_ratio;  /* vm.overcommit_ratio (percent, used in mode 2) */
} ruma_vm_info;

/* ruma_sysinfo_vm — read the vm sysctls above.  Returns 0 or a negative errno. */
int ruma_sysinfo_vm(ruma_vm_info *out);

/*
 * ruma_sysinfo_read_u64_file — read one unsigned decimal number from a /proc
 * or /sys file (e.g. "/proc/sys/vm/max_map_count").  Returns 0, a negative
 * errno, or RUMA_EPARSE when the file does not start with a number.
 */
int ruma_sysinfo_read_u64_file(const char *path, uint64_t *v);

/*
 * ruma_sysinfo_write_u64_file — write a decimal number to a /proc or /sys
 * file (root).  Returns 0 or a negative errno.
 */
int ruma_sysinfo_write_u64_file(const char *path, uint64_t v);

/*
 * ruma_sysinfo_write_file — write text (e.g. "madvise") to a /proc or /sys
 * file with one write(2) (root).  Returns 0, a negative errno (also one the
 * kernel reports at close), or RUMA_ESHORTIO.
 */
int ruma_sysinfo_write_file(const char *path, const char *text);

/* ---- processes and locks ------------------------------------------------- */

/*
 * ruma_sysinfo_flock_holder — the pid holding a flock(2) lock on the file
 * with device dev (st_dev) and inode ino, from /proc/locks.  Returns 0 with
 * *pid set, RUMA_ENOTFOUND when no such lock is listed (or the holder is not
 * visible from this pid namespace), or a negative errno.
 */
int ruma_sysinfo_flock_holder(uint64_t dev, uint64_t ino, int *pid);

/*
 * ruma_sysinfo_pid_exiting — whether process pid is on its way out: a
 * SIGKILL pending (/proc/<pid>/status), the kernel's PF_EXITING flag
 * (/proc/<pid>/stat), or a zombie.  A killed
 * process keeps its files (and their locks) until it has torn its memory
 * down, which takes a while for a large one.  Returns true when exiting or
 * gone (no /proc entry), false when running or when it cannot be told.
 */
bool ruma_sysinfo_pid_exiting(int pid);

/* ---- probes: try the feature for real ------------------------------------ */

/*
 * ruma_sysinfo_probe_uring — set up an io_uring with 2 entries and tear it
 * down.  Returns 0 when io_uring works, else the negative errno (-ENOSYS: not
 * in this kernel, -EPERM: disabled by io_uring_disabled or a seccomp filter).
 */
int ruma_sysinfo_probe_uring(void);

/*
 * ruma_sysinfo_probe_perf_hw / _sw — open (and close) a hardware cycles
 * counter / a software task-clock counter for this process.  A permission
 * error is retried with exclude_kernel=1, as ruma's counters do.
 * Returns 0 when it opened, else the negative errno (-ENOENT: no PMU,
 * -EACCES: perf_event_paranoid forbids it).
 */
int ruma_sysinfo_probe_perf_hw(void);
int ruma_sysinfo_probe_perf_sw(void);

/*
 * ruma_sysinfo_probe_odirect — create a temporary file in dir with O_DIRECT,
 * write and read back one aligned 4096-byte block, compare, unlink it.
 * *step (may be NULL) gets the step that failed ("open", "pwrite", "pread",
 * "compare", "alloc") or "" on success.  Returns 0, the negative errno of the
 * failing step (-EINVAL from open: the file system refuses O_DIRECT), or
 * RUMA_ESHORTIO / RUMA_ECORRUPT for a short or wrong transfer.
 */
int ruma_sysinfo_probe_odirect(const char *dir, const char **step);

#ifdef __cplusplus
}
#endif
#endif
