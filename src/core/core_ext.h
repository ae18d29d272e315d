/*
 * core_ext.h — what core gives the layers above it and the repository's own
 * programs, beyond the installed core.h:
 *   - for the drivers above the library (bench/, tools/), which never
 *     include src/os/os.h: files, raw mappings and the simulated power loss
 *     of the crash tests, each through the OS layer so that it is counted
 *     and fault-injectable like the library's own calls (file.c);
 *   - for the library's layers: the absolute deadline of a timed wait and
 *     the one-line message helper behind every message callback;
 *   - for the benchmarks and tools: summaries over repetitions and the CSV
 *     writer of their result tables.
 * Not installed and not exported: none of these carries RUMA_API, libruma
 * is built with hidden visibility, and the programs reach them through the
 * modules' static libraries.
 */
#ifndef RUMA_CORE_EXT_H
#define RUMA_CORE_EXT_H

#include <ruma/core.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- files through the OS layer (drivers and tools) ---------------------- */

/*
 * ruma_file_open — open(2) through the OS layer: counted, fault-injectable,
 * O_CLOEXEC added, and tracked by the simulated power loss while it is
 * armed (writable files only).  Returns 0 with the descriptor in *fd, or a
 * negative errno.  Close it with close(2).
 */
int ruma_file_open(const char *path, int flags, unsigned mode, int *fd);

/*
 * ruma_file_size — the size in bytes of the regular file or block device
 * (ioctl BLKGETSIZE64) open as fd; *is_blockdev (may be NULL) says which.
 * Returns 0, -EINVAL for any other kind of file, or a negative errno.
 */
int ruma_file_size(int fd, uint64_t *bytes, bool *is_blockdev);

/*
 * ruma_file_pread_full / ruma_file_pwrite_full — transfer exactly len bytes
 * at off through the OS layer (EINTR and partial transfers retried; writes
 * tracked by the simulated power loss).  0, a negative errno, or
 * RUMA_ESHORTIO when the file ends first.
 */
int ruma_file_pread_full(int fd, void *buf, size_t len, uint64_t off);
int ruma_file_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/*
 * ruma_mmap / ruma_munmap / ruma_remap_file_pages — mmap(2), munmap(2) and
 * remap_file_pages(2) through the OS layer (counted, fault-injectable), for
 * drivers that build raw views themselves.  0 (the mapping in *out) or a
 * negative errno.
 */
int ruma_mmap(void *addr, size_t len, int prot, int flags, int fd, uint64_t off, void **out);
int ruma_munmap(void *addr, size_t len);
int ruma_remap_file_pages(void *addr, size_t size, size_t pgoff, int flags);
/* ruma_madvise — madvise(2) through the OS layer (counted, fault-injectable).  0 or -errno. */
int ruma_madvise(void *addr, size_t len, int advice);

/* ---- simulated power loss (tests and crash drivers) ------------------------ */

/*
 * ruma_powerloss_arm — from now on, files opened writable through the OS
 * layer keep what each unsynced write overwrote (see src/os/os.h).
 * Returns 0 or -ENOMEM.
 */
int ruma_powerloss_arm(void);

/*
 * ruma_powerloss_now — put every tracked file back to what its completed
 * syncs covered, as a machine that lost power would find it; with torn,
 * the first half of each unsynced 4 KiB block write reaches the file and
 * *torn_blocks (may be NULL) counts them.  From then on writes to those
 * files are dropped and reads fail.  Returns 0 or the first I/O error met.
 */
int ruma_powerloss_now(bool torn, uint64_t *torn_blocks);

/* ruma_powerloss_dead — true once ruma_powerloss_now ran. */
bool ruma_powerloss_dead(void);

/* ---- time ------------------------------------------------------------- */

struct timespec;
/* ruma_deadline_after_ns — *out = CLOCK_REALTIME now plus ns: the absolute
 * time pthread_cond_timedwait takes for a wait of at most ns. */
void ruma_deadline_after_ns(uint64_t ns, struct timespec *out);

/* ---- messages -------------------------------------------------------------- */

/*
 * ruma_say — format one line (without newline, at most 511 bytes) and hand it
 * to fn(ctx, line), or print it on stderr as "<prefix>: line" when fn is
 * NULL.  The message callbacks of the buffer manager and the log use it.
 */
void ruma_say(void (*fn)(void *ctx, const char *line), void *ctx, const char *prefix,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- statistics over repetitions -------------------------------------- */

typedef struct ruma_summary {
	size_t n;
	double median, min, max, mean, stddev;
} ruma_summary;

/*
 * ruma_summarize — median, min, max, mean and sample standard deviation of
 * n values (the input is not modified).  n == 0 yields all zeros.
 * Returns 0 or -ENOMEM.
 */
int ruma_summarize(const double *v, size_t n, ruma_summary *out);

/* ruma_median — median of n values (copies internally); 0 for n == 0. */
double ruma_median(const double *v, size_t n);

/* ---- CSV writer --------------------------------------------------------- */

typedef struct ruma_csv {
	FILE *f;
	size_t col; /* fields written in the current row */
} ruma_csv;

/* ruma_csv_init — write rows to f (not owned). */
void ruma_csv_init(ruma_csv *c, FILE *f);

/* ruma_csv_str — add a string field, quoted when it contains , " or newline. */
void ruma_csv_str(ruma_csv *c, const char *s);

/* ruma_csv_u64 / ruma_csv_i64 / ruma_csv_dbl — add a numeric field. */
void ruma_csv_u64(ruma_csv *c, uint64_t v);
void ruma_csv_i64(ruma_csv *c, int64_t v);
void ruma_csv_dbl(ruma_csv *c, double v);

/* ruma_csv_header — write a whole row of column names from a NULL-ended list. */
void ruma_csv_header(ruma_csv *c, const char *const *names);

/* ruma_csv_end — finish the row. Returns 0, or -EIO if the stream had an error. */
int ruma_csv_end(ruma_csv *c);

#ifdef __cplusplus
}
#endif
#endif
