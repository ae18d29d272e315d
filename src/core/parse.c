/*
 * parse.c — strict parsing of sizes, counts, numbers and booleans.
 *
 * Every parser consumes the whole string or fails: "12x", "", "-5", "nan"
 * and values that overflow 64 bits are errors, never silent zeros or
 * truncations (vmcache's envOr truncated "0.5" GB to 0 and hung).
 * No syscalls.
 */
#include <ruma/core.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parse a leading finite, non-negative decimal; *end points past it. */
static int parse_leading_number(const char *s, double *v, const char **end)
{
	char *e;

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return RUMA_EPARSE;
	if (!isdigit((unsigned char)*s) && *s != '.')
		return RUMA_EPARSE;
	errno = 0;
	*v = strtod(s, &e);
	if (e == s)
		return RUMA_EPARSE;
	if (errno == ERANGE || !isfinite(*v))
		return -ERANGE;
	*end = e;
	return 0;
}

static int size_suffix_shift(const char *suf, unsigned *shift)
{
	static const char units[] = "KMGTP";
	const char *u;

	if (*suf == '\0' || strcasecmp(suf, "B") == 0) {
		*shift = 0;
		return 0;
	}
	u = strchr(units, toupper((unsigned char)suf[0]));
	if (!u)
		return RUMA_EPARSE;
	*shift = 10u * (unsigned)(u - units + 1);
	suf++;
	if (*suf == '\0' || strcasecmp(suf, "B") == 0 || strcasecmp(suf, "iB") == 0)
		return 0;
	return RUMA_EPARSE;
}

int ruma_parse_size(const char *s, uint64_t *out)
{
	const char *end;
	unsigned shift;
	double v;
	int rc;

	if (s && *s && strspn(s, "0123456789") == strlen(s))
		return ruma_parse_u64(s, out); /* plain bytes: exact beyond 2^53 */
	rc = parse_leading_number(s, &v, &end);
	if (rc)
		return rc;
	rc = size_suffix_shift(end, &shift);
	if (rc)
		return rc;
	v = round(ldexp(v, (int)shift));
	if (v >= 18446744073709551616.0)
		return -ERANGE;
	*out = (uint64_t)v; /* not llround: that overflows from 2^63 on */
	return 0;
}

int ruma_parse_u64(const char *s, uint64_t *out)
{
	const char *end;
	double v;
	int rc;

	if (s && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2]) {
		char *e;
		/* only hex digits: strtoull would also take a sign, spaces and a second "0x" */
		if (strspn(s + 2, "0123456789abcdefABCDEF") != strlen(s + 2))
			return RUMA_EPARSE;
		errno = 0;
		unsigned long long x = strtoull(s + 2, &e, 16);
		if (errno == ERANGE)
			return -ERANGE;
		*out = x;
		return 0;
	}
	/* Plain digits: exact, beyond the 53 bits a double holds. */
	if (s && *s && strspn(s, "0123456789") == strlen(s)) {
		char *e;
		errno = 0;
		unsigned long long x = strtoull(s, &e, 10);
		if (errno == ERANGE)
			return -ERANGE;
		*out = x;
		return 0;
	}
	rc = parse_leading_number(s, &v, &end);
	if (rc)
		return rc;
	if (*end)
		return RUMA_EPARSE;
	if (v != floor(v))
		return RUMA_EPARSE;
	if (v >= 18446744073709551616.0)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

int ruma_parse_double(const char *s, double *out)
{
	char *e;

	if (!s || !*s || isspace((unsigned char)*s))
		return RUMA_EPARSE;
	errno = 0;
	double v = strtod(s, &e);
	if (e == s || *e || !isfinite(v))
		return RUMA_EPARSE;
	if (errno == ERANGE && fabs(v) > 1.0)
		return RUMA_EPARSE;
	*out = v;
	return 0;
}

int ruma_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };

	if (!s)
		return RUMA_EPARSE;
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return RUMA_EPARSE;
}

char *ruma_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < RUMA_ARRAY_SIZE(units)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}
