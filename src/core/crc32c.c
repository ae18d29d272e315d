/*
 * crc32c.c — CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78),
 * the checksum the buffer manager seals every store page with.
 *
 * Two implementations give the same result for every input:
 *   hardware  the SSE4.2 crc32 instruction (8 bytes per instruction), compiled
 *             with __attribute__((target("sse4.2"))) so the library itself
 *             runs on any x86-64; only chosen when the CPU reports SSE4.2.
 *             The instruction has a latency of 3 cycles and a throughput of
 *             1, so blocks of three stripes run as three independent
 *             chains, combined with a table that advances a CRC over a
 *             stripe of zero bytes (CRC is linear: crc(s, A B) =
 *             zeros(crc(s, A), |B|) ^ crc(0, B)).  Three stripe lengths:
 *             1352 bytes (3 x 1352 = 4056, a page's data in one block), then
 *             256 and 64 for what is left, so a log record of a kilobyte
 *             runs in blocks too (about twice as fast as one chain); the
 *             last bytes (fewer than 192) go through one chain.
 *   portable  slicing-by-8 over eight 256-entry tables (8 bytes per step, no
 *             special instruction), on every other machine
 * The choice is made once, on the first call (pthread_once), and kept in an
 * atomic function pointer; later calls cost one relaxed load and an indirect
 * call.  Convention: ruma_crc32c(0, p, n) is the CRC of p[0..n); passing a
 * previous result as crc continues it (pre- and post-inversion inside).
 *
 * No syscalls.
 */
#include "core/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u

/* Stripe lengths, longest first (see the header). */
#define HW_STRIPE_LONG 1352u /* 3 x 1352 = 4056 bytes: a page's data in one block */
#define HW_STRIPE_MID 256u
#define HW_STRIPE_SHORT 64u
static const size_t stripe_len[3] = { HW_STRIPE_LONG, HW_STRIPE_MID, HW_STRIPE_SHORT };

static uint32_t table[8][256];
/* shift_table[s]: CRC states advanced over stripe_len[s] zero bytes */
static uint32_t shift_table[3][4][256];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint32_t (*_Atomic impl)(uint32_t, const void *, size_t);

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static uint32_t sw_update(uint32_t c, const unsigned char *p, size_t n)
{
	while (n && ((uintptr_t)p & 7)) {
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
		n--;
	}
	for (; n >= 8; n -= 8, p += 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= c;
		c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		    table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		    table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
	}
	while (n--)
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
	return c;
}

static void init_tables_once(void);

/* shift_table[s][j][v]: the raw state (v << 8j) advanced over
 * stripe_len[s] zeros.  Advancing is linear, so each table is built from
 * the 32 single-bit states. */
static void shift_table_init(void)
{
	static const unsigned char zeros[HW_STRIPE_LONG];
	uint32_t bit[32];

	for (int s = 0; s < 3; s++) {
		for (int b = 0; b < 32; b++)
			bit[b] = sw_update(1u << b, zeros, stripe_len[s]);
		for (int j = 0; j < 4; j++)
			for (uint32_t v = 0; v < 256; v++) {
				uint32_t x = 0;
				for (int b = 0; b < 8; b++)
					if (v >> b & 1)
						x ^= bit[8 * j + b];
				shift_table[s][j][v] = x;
			}
	}
}

static inline uint32_t shift_stripe(const uint32_t (*t)[256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

uint32_t ruma_crc32c_portable(uint32_t crc, const void *buf, size_t n)
{
	pthread_once(&once, init_tables_once);
	return ~sw_update(~crc, buf, n);
}

#if defined(__x86_64__)
#include <nmmintrin.h>

/* The raw state c over *p's blocks of three stripes of `stripe` bytes
 * (shift table t) while at least one block is left; *p and *n advance. */
__attribute__((target("sse4.2"), always_inline)) static inline uint64_t
hw_blocks(uint64_t c, const unsigned char **pp, size_t *nn, size_t stripe,
	  const uint32_t (*t)[256])
{
	const unsigned char *p = *pp;
	size_t n = *nn;
	for (; n >= 3 * stripe; n -= 3 * stripe, p += 3 * stripe) {
		uint64_t c1 = 0, c2 = 0;
		for (size_t i = 0; i < stripe; i += 8) {
			uint64_t w0, w1, w2;
			memcpy(&w0, p + i, 8);
			memcpy(&w1, p + stripe + i, 8);
			memcpy(&w2, p + 2 * stripe + i, 8);
			c = _mm_crc32_u64(c, w0);
			c1 = _mm_crc32_u64(c1, w1);
			c2 = _mm_crc32_u64(c2, w2);
		}
		c = shift_stripe(t, shift_stripe(t, (uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
	}
	*pp = p;
	*nn = n;
	return c;
}

__attribute__((target("sse4.2"))) static uint32_t hw_crc(uint32_t crc, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	while (n && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		n--;
	}
	c = hw_blocks(c, &p, &n, HW_STRIPE_LONG, shift_table[0]);
	c = hw_blocks(c, &p, &n, HW_STRIPE_MID, shift_table[1]);
	c = hw_blocks(c, &p, &n, HW_STRIPE_SHORT, shift_table[2]);
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
	}
	while (n--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

bool ruma_crc32c_hw_supported(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}

uint32_t ruma_crc32c_hardware(uint32_t crc, const void *buf, size_t n)
{
	pthread_once(&once, init_tables_once);
	return ruma_crc32c_hw_supported() ? hw_crc(crc, buf, n) : ruma_crc32c_portable(crc, buf, n);
}
#else
bool ruma_crc32c_hw_supported(void)
{
	return false;
}

uint32_t ruma_crc32c_hardware(uint32_t crc, const void *buf, size_t n)
{
	return ruma_crc32c_portable(crc, buf, n);
}
#endif

static uint32_t portable_entry(uint32_t crc, const void *buf, size_t n)
{
	return ~sw_update(~crc, buf, n);
}

static void init_tables_once(void)
{
	table_init();
	shift_table_init();
#if defined(__x86_64__)
	if (ruma_crc32c_hw_supported()) {
		atomic_store(&impl, hw_crc);
		return;
	}
#endif
	atomic_store(&impl, portable_entry);
}

const char *ruma_crc32c_impl(void)
{
	pthread_once(&once, init_tables_once);
	return atomic_load(&impl) == portable_entry ? "slicing-by-8" : "sse4.2";
}

uint32_t ruma_crc32c(uint32_t crc, const void *buf, size_t n)
{
	uint32_t (*f)(uint32_t, const void *, size_t) =
		atomic_load_explicit(&impl, memory_order_acquire);
	if (RUMA_UNLIKELY(!f)) {
		pthread_once(&once, init_tables_once);
		f = atomic_load(&impl);
	}
	return f(crc, buf, n);
}
