/*
 * core.h — small building blocks every ruma module uses: number and size
 * parsing, a monotonic clock, a seeded random generator and CRC-32C.  None
 * of these allocate global state.
 */
#ifndef RUMA_CORE_H
#define RUMA_CORE_H

#include <ruma/ruma.h>

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
