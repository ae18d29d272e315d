/*
 * test_core.c — parsing, errors, rng, stats, CSV and CRC-32C; the harness's
 * fixture hook (setup before a case, teardown after it whatever its
 * verdict, a failed setup failing the case unrun), temporary directories
 * and CHECK_HAS.
 */
#include "test.h"

#include "core/core_ext.h"
#include "core/crc32c.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>

static int t_parse_size(void)
{
	uint64_t v;

	CHECK_OK(ruma_parse_size("4096", &v));
	CHECK_EQ(v, 4096);
	CHECK_OK(ruma_parse_size("64M", &v));
	CHECK_EQ(v, 64ull << 20);
	CHECK_OK(ruma_parse_size("1.5G", &v));
	CHECK_EQ(v, 3ull << 29);
	CHECK_OK(ruma_parse_size("2KiB", &v));
	CHECK_EQ(v, 2048);
	CHECK_OK(ruma_parse_size("1e6", &v));
	CHECK_EQ(v, 1000000);
	CHECK_OK(ruma_parse_size("0.5g", &v));
	CHECK_EQ(v, 1ull << 29);
	CHECK_OK(ruma_parse_size("16T", &v));
	CHECK_EQ(v, 16ull << 40);
	CHECK_EQ(ruma_parse_size("", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size("abc", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size("-5", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size("12x", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size(" 12", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size("1MM", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size("nan", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size("inf", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_size("99999999999P", &v), -ERANGE);
	CHECK_EQ(ruma_parse_size("1e400", &v), -ERANGE);
	/* between 2^63 and 2^64: must not saturate at 2^63 */
	CHECK_OK(ruma_parse_size("10000P", &v));
	CHECK_EQ(v, 10000ull << 50);
	CHECK_OK(ruma_parse_size("1e19", &v));
	CHECK_EQ(v, 10000000000000000000ull);
	CHECK_OK(ruma_parse_size("18446744073709551615", &v));
	CHECK_EQ(v, UINT64_MAX);
	CHECK_OK(ruma_parse_size("9007199254740993", &v));
	CHECK_EQ(v, 9007199254740993ull);
	CHECK_EQ(ruma_parse_size("16384P", &v), -ERANGE);
	return TEST_PASS;
}

static int t_parse_u64(void)
{
	uint64_t v;

	CHECK_OK(ruma_parse_u64("100000", &v));
	CHECK_EQ(v, 100000);
	CHECK_OK(ruma_parse_u64("1e6", &v));
	CHECK_EQ(v, 1000000);
	CHECK_OK(ruma_parse_u64("2.5e3", &v));
	CHECK_EQ(v, 2500);
	CHECK_OK(ruma_parse_u64("0x10", &v));
	CHECK_EQ(v, 16);
	CHECK_OK(ruma_parse_u64("18446744073709551615", &v));
	CHECK(v == UINT64_MAX);
	CHECK_EQ(ruma_parse_u64("18446744073709551616", &v), -ERANGE);
	CHECK_EQ(ruma_parse_u64("1.5", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_u64("-1", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_u64("ten", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_u64("", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_u64("0x", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_u64("0x-1", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_u64("0x0x11", &v), RUMA_EPARSE); /* found by fuzz_parse */
	CHECK_EQ(ruma_parse_u64("0x 1", &v), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_u64("1e30", &v), -ERANGE);
	return TEST_PASS;
}

static int t_parse_misc(void)
{
	double d;
	bool b;

	CHECK_OK(ruma_parse_double("-2.5", &d));
	CHECK(d == -2.5);
	CHECK_EQ(ruma_parse_double("2.5x", &d), RUMA_EPARSE);
	CHECK_EQ(ruma_parse_double("nan", &d), RUMA_EPARSE);
	CHECK_OK(ruma_parse_bool("TRUE", &b));
	CHECK(b);
	CHECK_OK(ruma_parse_bool("off", &b));
	CHECK(!b);
	CHECK_EQ(ruma_parse_bool("maybe", &b), RUMA_EPARSE);
	return TEST_PASS;
}

static int t_strerror(void)
{
	CHECK(strcmp(ruma_strerror(0), "success") == 0);
	CHECK(strstr(ruma_strerror(-ENOMEM), "memory") != NULL);
	CHECK(strstr(ruma_strerror(RUMA_ENOHUGE), "nr_hugepages") != NULL);
	CHECK(strstr(ruma_strerror(RUMA_EMAPLIMIT), "max_map_count") != NULL);
	for (int e = RUMA_EBASE; e > RUMA_ELAST; e--)
		CHECK(ruma_strerror(e) != NULL && *ruma_strerror(e));
	CHECK(strcmp(ruma_strerror(RUMA_ELAST - 5), "unknown error") == 0);
	CHECK(strcmp(ruma_strerror(42), "unknown error") == 0);
	return TEST_PASS;
}

static int t_rng(void)
{
	ruma_rng a, b;
	uint64_t hist[10] = { 0 };
	uint64_t v[100];

	ruma_rng_seed(&a, 42);
	ruma_rng_seed(&b, 42);
	for (int i = 0; i < 1000; i++)
		CHECK(ruma_rng_next(&a) == ruma_rng_next(&b));
	for (int i = 0; i < 100000; i++) {
		uint64_t x = ruma_rng_below(&test_rng, 10);
		CHECK(x < 10);
		hist[x]++;
	}
	for (int i = 0; i < 10; i++) /* expected 10000 each, 6 sigma ~ 570 */
		CHECK(hist[i] > 9000 && hist[i] < 11000);
	for (int i = 0; i < 1000; i++) {
		double d = ruma_rng_double(&test_rng);
		CHECK(d >= 0.0 && d < 1.0);
	}
	for (int i = 0; i < 100; i++)
		v[i] = (uint64_t)i;
	ruma_rng_shuffle_u64(&test_rng, v, 100);
	uint64_t sum = 0, mask[2] = { 0, 0 };
	for (int i = 0; i < 100; i++) {
		sum += v[i];
		mask[v[i] / 64] |= 1ull << (v[i] % 64);
	}
	CHECK(mask[0] == UINT64_MAX && mask[1] == (1ull << 36) - 1); /* a permutation */
	CHECK_EQ(sum, 4950);
	return TEST_PASS;
}

static int t_stats(void)
{
	const double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 };
	ruma_summary s;

	CHECK_OK(ruma_summarize(odd, 3, &s));
	CHECK(s.median == 3 && s.min == 1 && s.max == 5 && s.mean == 3);
	CHECK(fabs(s.stddev - 2.0) < 1e-12);
	CHECK_OK(ruma_summarize(even, 4, &s));
	CHECK(s.median == 2.5);
	CHECK_OK(ruma_summarize(even, 0, &s));
	CHECK(s.n == 0);
	CHECK(ruma_median(odd, 3) == 3);
	return TEST_PASS;
}

static int t_csv(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ruma_csv c;
	static const char *const hdr[] = { "a", "b,c", NULL };

	CHECK(f);
	ruma_csv_init(&c, f);
	ruma_csv_header(&c, hdr);
	ruma_csv_str(&c, "say \"hi\"");
	ruma_csv_u64(&c, 18446744073709551615ull);
	ruma_csv_i64(&c, -3);
	ruma_csv_dbl(&c, 0.5);
	CHECK_OK(ruma_csv_end(&c));
	fclose(f);
	CHECK(strcmp(buf, "a,\"b,c\"\n\"say \"\"hi\"\"\",18446744073709551615,-3,0.5\n") == 0);
	free(buf);
	return TEST_PASS;
}

static int t_format_size(void)
{
	char b[32];

	CHECK(strcmp(ruma_format_size(512, b, sizeof(b)), "512 B") == 0);
	CHECK(strcmp(ruma_format_size(3ull << 29, b, sizeof(b)), "1.50 GiB") == 0);
	return TEST_PASS;
}

/* The clock is monotonic and counts nanoseconds: a 2 ms sleep reads as at
 * least 2 ms (a clock in microseconds or a frozen one reads less). */
static int t_clock(void)
{
	uint64_t a = ruma_now_ns(), b = ruma_now_ns();
	CHECK(b >= a);
	struct timespec ts = { 0, 2000000 };
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
	uint64_t c = ruma_now_ns();
	CHECK(c - b >= 2000000u);
	return TEST_PASS;
}

/* CRC-32C: published check values (RFC 3720 B.4 and the usual "123456789"),
 * the hardware and portable code agreeing on random buffers at every
 * alignment, and continuation over split buffers. */
static int t_crc32c(void)
{
	static unsigned char buf[16384 + 64];
	static const size_t lens[] = { 191, 192, 193, 767, 768, 769, 959, 960, 1031,
				       4056, 4064, 4092, 4096, 3 * 4056 + 13, 16384 };
	static const struct {
		int fill; /* -1 ascending, -2 descending, else the byte */
		uint32_t want;
	} iscsi[] = { { 0, 0x8A9136AAu }, { 0xff, 0x62A8AB43u }, { -1, 0x46DD794Eu },
		      { -2, 0x113FDB5Cu } };

	CHECK_EQ(ruma_crc32c(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ(ruma_crc32c_portable(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ(ruma_crc32c_hardware(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ(ruma_crc32c(0, "", 0), 0);
	for (size_t v = 0; v < TEST_N(iscsi); v++) {
		for (int i = 0; i < 32; i++)
			buf[i] = (unsigned char)(iscsi[v].fill == -1 ? i
						 : iscsi[v].fill == -2 ? 31 - i
									: iscsi[v].fill);
		CHECK_EQ(ruma_crc32c_portable(0, buf, 32), iscsi[v].want);
		CHECK_EQ(ruma_crc32c_hardware(0, buf, 32), iscsi[v].want);
	}
	for (size_t round = 0; round < 200 + TEST_N(lens); round++) {
		size_t off = ruma_rng_below(&test_rng, 64);
		size_t n = round < TEST_N(lens) ? lens[round] : ruma_rng_below(&test_rng, 4097);
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (unsigned char)ruma_rng_next(&test_rng);
		uint32_t sw = ruma_crc32c_portable(0, buf + off, n);
		CHECK_EQ(ruma_crc32c_hardware(0, buf + off, n), sw);
		CHECK_EQ(ruma_crc32c(0, buf + off, n), sw);
		size_t cut = n ? ruma_rng_below(&test_rng, n + 1) : 0;
		CHECK_EQ(ruma_crc32c(ruma_crc32c(0, buf + off, cut), buf + off + cut, n - cut), sw);
	}
	printf("    crc32c: %s (sse4.2 %s on this CPU)\n", ruma_crc32c_impl(),
	       ruma_crc32c_hw_supported() ? "present" : "absent");
	return TEST_PASS;
}

/* ---- the harness itself ---------------------------------------------------- */

static int hook_setups, hook_teardowns, hook_runs, hook_setup_rc;

static int hook_setup(void)
{
	hook_setups++;
	return hook_setup_rc;
}

static void hook_teardown(void)
{
	hook_teardowns++;
}

static int hook_case_fails(void)
{
	hook_runs++;
	return TEST_FAIL;
}

static int has_all(void)
{
	CHECK_HAS("alpha beta", "alpha", "beta");
	return TEST_PASS;
}

static int has_not(void)
{
	CHECK_HAS("alpha beta", "alpha", "gamma");
	return TEST_PASS;
}

/* test_run_case: teardown after a failed case; a failed setup fails the
 * case without running it (and without its teardown). */
static int t_fixture_hook(void)
{
	const struct test_fixture fx = { hook_setup, hook_teardown };
	const struct test_case c = { "fails", hook_case_fails };
	CHECK_EQ(test_run_case(&c, &fx), TEST_FAIL);
	CHECK(hook_setups == 1 && hook_runs == 1 && hook_teardowns == 1);
	hook_setup_rc = -1;
	CHECK_EQ(test_run_case(&c, &fx), TEST_FAIL);
	CHECK(hook_setups == 2 && hook_runs == 1 && hook_teardowns == 1);
	hook_setup_rc = 0;
	return TEST_PASS;
}

/* test_dir_make names its paths in a new directory; test_dir_remove takes
 * it with what is in it; CHECK_HAS passes or fails as the text says. */
static int t_dir_and_has(void)
{
	char dir[64], a[128], b[128];
	struct stat st;
	CHECK_OK(test_dir_make(dir, sizeof(dir), "core", TEST_PATH(a, "a"), TEST_PATH(b, "sub"),
			       NULL));
	CHECK(!strncmp(a, dir, strlen(dir)) && !strcmp(a + strlen(dir), "/a"));
	CHECK_OK(mkdir(b, 0700));
	FILE *f = fopen(a, "w");
	CHECK(f && fclose(f) == 0);
	test_dir_remove(dir);
	CHECK(stat(dir, &st) != 0 && errno == ENOENT);
	char small[4];
	CHECK_EQ(test_dir_make(dir, sizeof(dir), "core", TEST_PATH(small, "toolong"), NULL), -1);
	test_dir_remove(dir);
	CHECK_EQ(has_all(), TEST_PASS);
	CHECK_EQ(has_not(), TEST_FAIL);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "parse_size", t_parse_size }, { "parse_u64", t_parse_u64 },
	{ "parse_misc", t_parse_misc }, { "strerror", t_strerror },
	{ "rng", t_rng },		{ "stats", t_stats },
	{ "csv", t_csv },		{ "format_size", t_format_size },
	{ "clock", t_clock },		{ "crc32c", t_crc32c },
	{ "fixture_hook", t_fixture_hook }, { "dir_and_has", t_dir_and_has },
};

int main(int argc, char **argv)
{
	return test_main("core", cases, TEST_N(cases), argc, argv);
}
