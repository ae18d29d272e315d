/*
 * csv.c — a minimal RFC 4180 writer: fields separated by ',', quoted when they
 * contain a comma, quote or newline; numbers printed with full precision so
 * a CSV round-trips.  No syscalls beyond stdio.
 */
#include "core/core_ext.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

void ruma_csv_init(ruma_csv *c, FILE *f)
{
	c->f = f;
	c->col = 0;
}

static void sep(ruma_csv *c)
{
	if (c->col++)
		fputc(',', c->f);
}

void ruma_csv_str(ruma_csv *c, const char *s)
{
	sep(c);
	if (!s)
		return;
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, c->f);
		return;
	}
	fputc('"', c->f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', c->f);
		fputc(*s, c->f);
	}
	fputc('"', c->f);
}

void ruma_csv_u64(ruma_csv *c, uint64_t v)
{
	sep(c);
	fprintf(c->f, "%" PRIu64, v);
}

void ruma_csv_i64(ruma_csv *c, int64_t v)
{
	sep(c);
	fprintf(c->f, "%" PRId64, v);
}

void ruma_csv_dbl(ruma_csv *c, double v)
{
	sep(c);
	fprintf(c->f, "%.9g", v);
}

void ruma_csv_header(ruma_csv *c, const char *const *names)
{
	for (; *names; names++)
		ruma_csv_str(c, *names);
	ruma_csv_end(c);
}

int ruma_csv_end(ruma_csv *c)
{
	fputc('\n', c->f);
	c->col = 0;
	return ferror(c->f) ? -EIO : 0;
}
