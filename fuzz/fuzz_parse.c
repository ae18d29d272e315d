/*
 * fuzz_parse.c — libFuzzer harness for the strict number parsers of core.h
 * (ruma_parse_size, ruma_parse_u64, ruma_parse_double, ruma_parse_bool) and
 * ruma_format_size.
 *
 * The input becomes one NUL-terminated string (bytes after an embedded NUL
 * are ignored by the parsers, as by any C caller).  Invariants checked, each
 * an abort() with the input echoed on failure:
 *   - return codes: size/u64 give 0, RUMA_EPARSE or -ERANGE; double and bool
 *     give 0 or RUMA_EPARSE (as documented in core.h);
 *   - a failed parse leaves the output untouched;
 *   - a string of plain decimal digits: u64 succeeds iff the value fits in 64
 *     bits, and then printf("%" PRIu64) of the result is the string without
 *     its leading zeros (exact, also above 2^53); double agrees with
 *     (double)value; size agrees with u64 to within double rounding
 *     (the size parser goes through a double);
 *   - the same digits with a K/M/G suffix: size == value << 10/20/30 while
 *     that is exactly representable (below 2^53);
 *   - "0x" + hex digits: u64 gives the value printf("%" PRIx64) shows;
 *   - u64 accepts a string => double accepts it too (except hex), and the
 *     double is the u64 within rounding; size accepts it too and agrees;
 *   - double success => finite; bool success iff one of the eight words;
 *   - ruma_format_size never writes past the buffer length given, NUL-terminates.
 * No syscalls; deterministic; allocates only the string copy, freed each run.
 */
#include <ruma/core.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *cur_input;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_parse: invariant broken: %s\n  input: \"", what);
	for (const char *p = cur_input; *p; p++)
		fprintf(stderr, (*p >= 32 && *p < 127) ? "%c" : "\\x%02x", (unsigned char)*p);
	fprintf(stderr, "\"\n");
	abort();
}

#define REQUIRE(cond, what) ((cond) ? (void)0 : fail(what))

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static bool is_hex_literal(const char *s)
{
	return s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2] &&
	       strspn(s + 2, "0123456789abcdefABCDEF") == strlen(s + 2);
}

/* Compare decimal digit strings after stripping leading zeros. */
static bool same_decimal(const char *a, const char *b)
{
	while (*a == '0' && a[1])
		a++;
	while (*b == '0' && b[1])
		b++;
	return strcmp(a, b) == 0;
}

static bool same_hex(const char *a, const char *b)
{
	while (*a == '0' && a[1])
		a++;
	while (*b == '0' && b[1])
		b++;
	return strcasecmp(a, b) == 0;
}

/* Exact value of a digit string if it fits in 64 bits (independent of strtoull). */
static bool decimal_value(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

/* |a - b| within the rounding of a double near max(a, b). */
static bool close_u64(uint64_t a, uint64_t b)
{
	uint64_t hi = a > b ? a : b, diff = a > b ? a - b : b - a;
	return diff <= (hi >> 52) + 1;
}

static void check_codes(const char *s)
{
	const uint64_t sentinel = UINT64_C(0xdeadbeefcafef00d);
	uint64_t u = sentinel, z = sentinel;
	double d = -12345.25;
	bool b = true;

	int ru = ruma_parse_u64(s, &u);
	int rz = ruma_parse_size(s, &z);
	int rd = ruma_parse_double(s, &d);
	int rb = ruma_parse_bool(s, &b);

	REQUIRE(ru == 0 || ru == RUMA_EPARSE || ru == -ERANGE, "u64 return code");
	REQUIRE(rz == 0 || rz == RUMA_EPARSE || rz == -ERANGE, "size return code");
	REQUIRE(rd == 0 || rd == RUMA_EPARSE, "double return code");
	REQUIRE(rb == 0 || rb == RUMA_EPARSE, "bool return code");
	if (ru)
		REQUIRE(u == sentinel, "u64 wrote its output on failure");
	if (rz)
		REQUIRE(z == sentinel, "size wrote its output on failure");
	if (rd)
		REQUIRE(d == -12345.25, "double wrote its output on failure");
	else
		REQUIRE(isfinite(d), "double returned a non-finite value");

	static const char *const words[] = { "true", "1", "yes", "on", "false", "0", "no", "off" };
	bool word = false;
	for (size_t i = 0; i < 8; i++)
		if (!strcasecmp(s, words[i]))
			word = true;
	REQUIRE((rb == 0) == word, "bool accepts exactly the eight words");
	if (rb == 0)
		REQUIRE(b == (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes") ||
			      !strcasecmp(s, "on")),
			"bool value");

	if (ru == 0 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		REQUIRE(is_hex_literal(s), "u64 accepts a 0x string that is not 0x + hex digits");
	if (ru == 0 && !is_hex_literal(s) && !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))) {
		REQUIRE(rd == 0, "u64 accepts a decimal string that double rejects");
		REQUIRE(d >= 0 && close_u64((uint64_t)fmin(d, 18446744073709549568.0), u),
			"u64 and double disagree");
		/* (size goes through a double: near 2^64 it may round up to -ERANGE) */
		REQUIRE(rz == 0 || (rz == -ERANGE && u > UINT64_MAX - 4096),
			"u64 accepts a string that size rejects");
		if (rz == 0)
			REQUIRE(close_u64(z, u), "u64 and size disagree on a plain count");
	}
}

static void check_digits(const char *s)
{
	uint64_t exact, u = 0, z = 0;
	double d = 0;
	char buf[32];

	if (!all_digits(s))
		return;
	bool fits = decimal_value(s, &exact);
	int ru = ruma_parse_u64(s, &u);
	if (!fits) {
		REQUIRE(ru == -ERANGE, "u64 of a digit string above 2^64-1 is not -ERANGE");
		return;
	}
	REQUIRE(ru == 0, "u64 rejects a digit string that fits");
	REQUIRE(u == exact, "u64 value of a digit string");
	snprintf(buf, sizeof(buf), "%" PRIu64, u);
	REQUIRE(same_decimal(buf, s), "u64 does not round-trip through printf");
	REQUIRE(ruma_parse_double(s, &d) == 0, "double rejects a digit string");
	REQUIRE(d == (double)exact, "double of a digit string is not the correctly rounded value");
	int rz = ruma_parse_size(s, &z);
	if (rz == -ERANGE && (double)exact >= 18446744073709551616.0)
		return; /* rounds up to 2^64 as a double */
	REQUIRE(rz == 0, "size rejects a digit string that fits in 64 bits");
	REQUIRE(close_u64(z, exact), "size of a digit string is not its value");
	if (exact < (UINT64_C(1) << 53))
		REQUIRE(z == exact, "size of a digit string below 2^53 is not exact");

	/* with suffixes */
	static const char *const suf[] = { "K", "M", "G", "KiB", "mb", "g" };
	static const unsigned shift[] = { 10, 20, 30, 10, 20, 30 };
	size_t n = strlen(s);
	if (n > 40)
		return;
	for (size_t i = 0; i < 6; i++) {
		char t[64];
		snprintf(t, sizeof(t), "%s%s", s, suf[i]);
		int r = ruma_parse_size(t, &z);
		if (exact < (UINT64_C(1) << (53 - shift[i]))) {
			REQUIRE(r == 0, "size rejects digits with a unit suffix");
			REQUIRE(z == exact << shift[i], "size with a unit suffix is not value << shift");
		} else if (exact > (UINT64_MAX >> shift[i])) {
			REQUIRE(r == -ERANGE, "size with a suffix beyond 2^64 is not -ERANGE");
		} else {
			uint64_t want = exact << shift[i];
			REQUIRE(r == 0 || (r == -ERANGE && want > UINT64_MAX - (UINT64_C(1) << 12)),
				"size rejects digits with a suffix below 2^64");
			if (r == 0)
				REQUIRE(close_u64(z, want), "size with a unit suffix is off");
		}
	}
}

static void check_hex(const char *s)
{
	uint64_t u = 0;
	char buf[40];

	if (!is_hex_literal(s))
		return;
	size_t nd = strlen(s + 2);
	const char *p = s + 2;
	while (*p == '0' && p[1])
		p++, nd--;
	int ru = ruma_parse_u64(s, &u);
	if (nd > 16) {
		REQUIRE(ru == -ERANGE, "u64 of a hex literal above 2^64-1 is not -ERANGE");
		return;
	}
	REQUIRE(ru == 0, "u64 rejects a hex literal that fits");
	snprintf(buf, sizeof(buf), "%" PRIx64, u);
	REQUIRE(same_hex(buf, s + 2), "u64 of a hex literal does not round-trip through printf");
}

static void check_format(const char *s)
{
	uint64_t z;
	char buf[48];

	if (ruma_parse_size(s, &z) != 0)
		return;
	for (size_t len = 1; len <= sizeof(buf); len += 11) {
		memset(buf, 'Z', sizeof(buf));
		ruma_format_size(z, buf, len);
		REQUIRE(memchr(buf, '\0', len) != NULL, "format_size does not NUL-terminate");
		for (size_t i = len; i < sizeof(buf); i++)
			REQUIRE(buf[i] == 'Z', "format_size writes past its length");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	cur_input = s;
	check_codes(s);
	check_digits(s);
	check_hex(s);
	check_format(s);
	free(s);
	return 0;
}
