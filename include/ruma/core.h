/*
 * core.h — small building blocks every ruma module uses: number and size
 * parsing, a monotonic clock, a seeded random generator, summary statistics
 * over repetitions, and a CSV writer.  None of these allocate global state.
 */
#ifndef RUMA_CORE_H
#define RUMA_CORE_H

#include <ruma/ruma.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- parsing ---------------------------------------------------------- */

/*
 * ruma_parse_size — parse a byte size: "4096", "64M", "1.5G", "2KiB", "1e6".
 * Suffixes K, M, G, T (optionally followed by "iB" or "B") are powers of 1024.
 * Fractions are allowed and rounded to the nearest byte.  Surrounding spaces
 * are not.  Returns 0, RUMA_EPARSE for junk or a negative number, -ERANGE when
 * the value does not fit in 64 bits.
 */
RUMA_API int ruma_parse_size(const char *s, uint64_t *out);

/*
 * ruma_parse_u64 — parse a non-negative count: "100000", "1e6", "2.5e3",
 * "0x10".  The value must be integral ("1.5" is rejected).  Returns 0,
 * RUMA_EPARSE or -ERANGE.
 */
RUMA_API int ruma_parse_u64(const char *s, uint64_t *out);

/* ruma_parse_double — parse a finite decimal number. Returns 0 or RUMA_EPARSE. */
RUMA_API int ruma_parse_double(const char *s, double *out);

/*
 * ruma_parse_bool — "true/false", "1/0", "yes/no", "on/off" (any case).
 * Returns 0 or RUMA_EPARSE.
 */
RUMA_API int ruma_parse_bool(const char *s, bool *out);

/*
 * ruma_format_size — write a human-readable size ("1.50 GiB") into buf.
 * Returns buf.
 */
RUMA_API char *ruma_format_size(uint64_t bytes, char *buf, size_t len);

/* ---- time ------------------------------------------------------------- */

/* ruma_now_ns — CLOCK_MONOTONIC in nanoseconds. */
RUMA_API uint64_t ruma_now_ns(void);

/* ruma_now_sec — CLOCK_MONOTONIC in seconds, as a double. */
RUMA_API double ruma_now_sec(void);

struct timespec;
/* ruma_deadline_after_ns — *out = CLOCK_REALTIME now plus ns: the absolute
 * time pthread_cond_timedwait takes for a wait of at most ns. */
RUMA_API void ruma_deadline_after_ns(uint64_t ns, struct timespec *out);

/* ---- random numbers (xoshiro256**, seeded by splitmix64) --------------- */

typedef struct ruma_rng {
	uint64_t s[4];
} ruma_rng;

/* ruma_rng_seed — initialise the generator from a 64-bit seed. */
RUMA_API void ruma_rng_seed(ruma_rng *r, uint64_t seed);

/* ruma_rng_next — next 64 random bits. */
RUMA_API uint64_t ruma_rng_next(ruma_rng *r);

/* ruma_rng_below — uniform integer in [0, n); n must be > 0 (unbiased). */
RUMA_API uint64_t ruma_rng_below(ruma_rng *r, uint64_t n);

/* ruma_rng_double — uniform double in [0, 1). */
RUMA_API double ruma_rng_double(ruma_rng *r);

/* ruma_rng_shuffle_u64 — Fisher-Yates shuffle of n 64-bit values. */
RUMA_API void ruma_rng_shuffle_u64(ruma_rng *r, uint64_t *v, size_t n);

/*
 * ruma_seed_default — a seed for a run, derived from the clock and pid.
 * The library reads no environment: a driver that honours $RUMA_SEED looks
 * it up in the environment it was given and calls this only without one.
 * Callers print the seed so a run can be repeated.
 */
RUMA_API uint64_t ruma_seed_default(void);

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
RUMA_API int ruma_summarize(const double *v, size_t n, ruma_summary *out);

/* ruma_median — median of n values (copies internally); 0 for n == 0. */
RUMA_API double ruma_median(const double *v, size_t n);

/* ---- CSV writer --------------------------------------------------------- */

typedef struct ruma_csv {
	FILE *f;
	size_t col; /* fields written in the current row */
} ruma_csv;

/* ruma_csv_init — write rows to f (not owned). */
RUMA_API void ruma_csv_init(ruma_csv *c, FILE *f);

/* ruma_csv_str — add a string field, quoted when it contains , " or newline. */
RUMA_API void ruma_csv_str(ruma_csv *c, const char *s);

/* ruma_csv_u64 / ruma_csv_i64 / ruma_csv_dbl — add a numeric field. */
RUMA_API void ruma_csv_u64(ruma_csv *c, uint64_t v);
RUMA_API void ruma_csv_i64(ruma_csv *c, int64_t v);
RUMA_API void ruma_csv_dbl(ruma_csv *c, double v);

/* ruma_csv_header — write a whole row of column names from a NULL-ended list. */
RUMA_API void ruma_csv_header(ruma_csv *c, const char *const *names);

/* ruma_csv_end — finish the row. Returns 0, or -EIO if the stream had an error. */
RUMA_API int ruma_csv_end(ruma_csv *c);

/* ---- messages -------------------------------------------------------------- */

/*
 * ruma_say — format one line (without newline, at most 511 bytes) and hand it
 * to fn(ctx, line), or print it on stderr as "<prefix>: line" when fn is
 * NULL.  The message callbacks of the buffer manager and the log use it.
 */
RUMA_API void ruma_say(void (*fn)(void *ctx, const char *line), void *ctx, const char *prefix,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- files through the OS layer (drivers and tools) ---------------------- */

/*
 * ruma_file_open — open(2) through the OS layer: counted, fault-injectable,
 * O_CLOEXEC added, and tracked by the simulated power loss while it is
 * armed (writable files only).  Returns 0 with the descriptor in *fd, or a
 * negative errno.  Close it with close(2).
 */
RUMA_API int ruma_file_open(const char *path, int flags, unsigned mode, int *fd);

/*
 * ruma_file_size — the size in bytes of the regular file or block device
 * (ioctl BLKGETSIZE64) open as fd; *is_blockdev (may be NULL) says which.
 * Returns 0, -EINVAL for any other kind of file, or a negative errno.
 */
RUMA_API int ruma_file_size(int fd, uint64_t *bytes, bool *is_blockdev);

/*
 * ruma_file_pread_full / ruma_file_pwrite_full — transfer exactly len bytes
 * at off through the OS layer (EINTR and partial transfers retried; writes
 * tracked by the simulated power loss).  0, a negative errno, or
 * RUMA_ESHORTIO when the file ends first.
 */
RUMA_API int ruma_file_pread_full(int fd, void *buf, size_t len, uint64_t off);
RUMA_API int ruma_file_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/*
 * ruma_mmap / ruma_munmap / ruma_remap_file_pages — mmap(2), munmap(2) and
 * remap_file_pages(2) through the OS layer (counted, fault-injectable), for
 * drivers that build raw views themselves.  0 (the mapping in *out) or a
 * negative errno.
 */
RUMA_API int ruma_mmap(void *addr, size_t len, int prot, int flags, int fd, uint64_t off,
		       void **out);
RUMA_API int ruma_munmap(void *addr, size_t len);
RUMA_API int ruma_remap_file_pages(void *addr, size_t size, size_t pgoff, int flags);
/* ruma_madvise — madvise(2) through the OS layer (counted, fault-injectable).  0 or -errno. */
RUMA_API int ruma_madvise(void *addr, size_t len, int advice);

/* ---- simulated power loss (tests and crash drivers) ------------------------ */

/*
 * ruma_powerloss_arm — from now on, files opened writable through the OS
 * layer keep what each unsynced write overwrote (see src/os/os.h).
 * Returns 0 or -ENOMEM.
 */
RUMA_API int ruma_powerloss_arm(void);

/*
 * ruma_powerloss_now — put every tracked file back to what its completed
 * syncs covered, as a machine that lost power would find it; with torn,
 * the first half of each unsynced 4 KiB block write reaches the file and
 * *torn_blocks (may be NULL) counts them.  From then on writes to those
 * files are dropped and reads fail.  Returns 0 or the first I/O error met.
 */
RUMA_API int ruma_powerloss_now(bool torn, uint64_t *torn_blocks);

/* ruma_powerloss_dead — true once ruma_powerloss_now ran. */
RUMA_API bool ruma_powerloss_dead(void);

/* ---- checksums ----------------------------------------------------------- */

/*
 * ruma_crc32c — CRC-32C (Castagnoli) of buf[0..n), continuing crc (pass 0 to
 * start; pass a previous result to extend it over more bytes).
 * ruma_crc32c(0, "123456789", 9) == 0xE3069283.  Uses the SSE4.2 crc32
 * instruction when the CPU has it (chosen once at run time; the library
 * never requires it) and a portable slicing-by-8 table otherwise; both give
 * the same result.  Thread-safe.
 */
RUMA_API uint32_t ruma_crc32c(uint32_t crc, const void *buf, size_t n);

/* ruma_crc32c_impl — "sse4.2" or "slicing-by-8": what ruma_crc32c uses here. */
RUMA_API const char *ruma_crc32c_impl(void);

#define RUMA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RUMA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RUMA_MAX(a, b) ((a) > (b) ? (a) : (b))

#ifdef __cplusplus
}
#endif
#endif
