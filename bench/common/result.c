/*
 * result.c — writer and reader of the tidy result files of the benchmark
 * drivers (result.h): "metric,unit,value,params" rows.
 *
 * Invariants: a row is written only with a finite value; the parameter list
 * keeps the order in which keys were first set, so every row of a run has
 * its pairs in the same order; the reader accepts exactly what the writer
 * writes (header, four fields, a number as value).
 * Syscalls: none (stdio on the result file).
 */
#include "bench/common/result.h"

#include <ruma/core.h>

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ruma_result_open(ruma_result *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	if (!path)
		return 0;
	r->f = fopen(path, "w");
	if (!r->f)
		return -errno;
	fputs(RUMA_RESULT_HEADER "\n", r->f);
	return 0;
}

static bool is_key(const char *k)
{
	size_t l = strlen(k);

	return l > 0 && l < RUMA_RESULT_KEY &&
	       strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == l;
}

int ruma_result_set(ruma_result *r, const char *key, const char *value)
{
	size_t i;

	if (!r)
		return 0;
	if (!is_key(key) || strchr(value, ';') || strlen(value) >= RUMA_RESULT_VALUE)
		return -EINVAL;
	for (i = 0; i < r->nparams && strcmp(r->key[i], key); i++)
		;
	if (i == RUMA_RESULT_MAX_PARAMS)
		return -ENOSPC;
	if (i == r->nparams) {
		snprintf(r->key[i], RUMA_RESULT_KEY, "%s", key);
		r->nparams++;
	}
	snprintf(r->value[i], RUMA_RESULT_VALUE, "%s", value);
	return 0;
}

int ruma_result_setu(ruma_result *r, const char *key, unsigned long long value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", value);
	return ruma_result_set(r, key, buf);
}

/* One CSV field, quoted when it holds a comma, a quote or a line break. */
static void put_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void ruma_result_add(ruma_result *r, const char *metric, const char *unit, double value)
{
	char params[sizeof(((ruma_result_row *)0)->params)];
	size_t o = 0;

	if (!r || !r->f || !isfinite(value))
		return;
	params[0] = '\0';
	for (size_t i = 0; i < r->nparams && o < sizeof(params); i++)
		o += (size_t)snprintf(params + o, sizeof(params) - o, "%s%s=%s", i ? ";" : "",
				      r->key[i], r->value[i]);
	put_field(r->f, metric);
	fputc(',', r->f);
	put_field(r->f, unit);
	fprintf(r->f, ",%.17g,", value);
	put_field(r->f, params);
	fputc('\n', r->f);
}

int ruma_result_close(ruma_result *r)
{
	int rc = 0;

	if (!r || !r->f)
		return 0;
	if (fflush(r->f) != 0 || ferror(r->f))
		rc = errno ? -errno : -EIO;
	if (fclose(r->f) != 0 && rc == 0)
		rc = errno ? -errno : -EIO;
	r->f = NULL;
	return rc;
}

int ruma_output_close(FILE *f, const char *cmd, const char *what)
{
	int err = 0;

	errno = 0;
	if (fflush(f) != 0)
		err = errno ? errno : EIO;
	else if (ferror(f))
		err = EIO; /* an earlier flush failed; its errno is gone */
	if (f != stdout && fclose(f) != 0 && !err)
		err = errno ? errno : EIO;
	if (!err)
		return 0;
	fprintf(stderr, "ruma %s: cannot write %s: %s\n", cmd, what,
		err == EIO ? "a write failed (disk full or I/O error)" : strerror(err));
	return -err;
}

int ruma_outputs_open(ruma_outputs *o, const char *cmd, const char *csv_path,
		      const char *result_path)
{
	int rc;

	o->cmd = cmd;
	o->csv_path = csv_path;
	o->result_path = result_path;
	o->csv = csv_path ? fopen(csv_path, "w") : stdout;
	if (!o->csv) {
		rc = -errno;
		fprintf(stderr, "ruma %s: cannot write %s: %s\n", cmd, csv_path, strerror(-rc));
		return rc;
	}
	rc = ruma_result_open(&o->res, result_path);
	if (rc) {
		fprintf(stderr, "ruma %s: cannot write %s: %s\n", cmd, result_path, strerror(-rc));
		if (csv_path)
			fclose(o->csv);
		o->csv = NULL;
	}
	return rc;
}

ruma_result *ruma_outputs_result(ruma_outputs *o)
{
	return o->result_path ? &o->res : NULL;
}

int ruma_outputs_close(ruma_outputs *o)
{
	int rc = o->csv_path ? ruma_output_close(o->csv, o->cmd, o->csv_path) : 0;
	int wrc = ruma_result_close(&o->res);

	if (wrc) {
		fprintf(stderr, "ruma %s: cannot write %s: %s\n", o->cmd, o->result_path,
			strerror(-wrc));
		rc = rc ? rc : wrc;
	}
	return rc;
}

/* ---- reading ----------------------------------------------------------- */

/* Split a line into at most max fields in place (RFC 4180 quotes). */
static size_t split(char *s, char **field, size_t max)
{
	size_t n = 0;

	while (n < max) {
		char *w = s;
		field[n++] = w;
		if (*s == '"') {
			for (s++; *s; s++) {
				if (*s == '"' && s[1] != '"') {
					s++;
					break;
				}
				*w++ = *s == '"' ? *s++ : *s;
			}
		}
		while (*s && *s != ',')
			*w++ = *s++;
		bool more = *s == ',';
		*w = '\0';
		if (!more)
			break;
		s++;
	}
	return n;
}

static int parse_row(char *line, ruma_result_row *row)
{
	char *f[5];
	size_t nf = split(line, f, 5);

	if (nf != 4 || strlen(f[0]) >= sizeof(row->metric) || strlen(f[1]) >= sizeof(row->unit) ||
	    strlen(f[3]) >= sizeof(row->params) || ruma_parse_double(f[2], &row->value))
		return RUMA_EPARSE;
	strcpy(row->metric, f[0]);
	strcpy(row->unit, f[1]);
	strcpy(row->params, f[3]);
	return 0;
}

static int read_rows(FILE *f, ruma_result_row **rows, size_t *n)
{
	char line[4096];
	size_t cap = 0;

	if (!fgets(line, sizeof(line), f) || strcmp(line, RUMA_RESULT_HEADER "\n"))
		return RUMA_EPARSE;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		if (*n == cap) {
			ruma_result_row *p = realloc(*rows, (cap = cap ? cap * 2 : 16) * sizeof(*p));
			if (!p)
				return -ENOMEM;
			*rows = p;
		}
		if (parse_row(line, &(*rows)[*n]))
			return RUMA_EPARSE;
		(*n)++;
	}
	return ferror(f) ? -EIO : 0;
}

int ruma_result_read(const char *path, ruma_result_row **rows, size_t *n)
{
	FILE *f = fopen(path, "r");
	int rc;

	*rows = NULL;
	*n = 0;
	if (!f)
		return -errno;
	rc = read_rows(f, rows, n);
	fclose(f);
	if (rc) {
		free(*rows);
		*rows = NULL;
		*n = 0;
	}
	return rc;
}

const char *ruma_result_param(const ruma_result_row *row, const char *key, char *buf,
			      size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = row->params; *p;) {
		size_t l = strcspn(p, ";");
		if (l > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
			snprintf(buf, len, "%.*s", (int)(l - kl - 1), p + kl + 1);
			return buf;
		}
		p += l;
		if (*p == ';')
			p++;
	}
	return NULL;
}
