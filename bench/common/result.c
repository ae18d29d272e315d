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

/* value into buf with ';' and '%' written as %3B and %25 (cut at len) */
static size_t escape_value(const char *value, char *buf, size_t len)
{
	size_t o = 0;

	for (const char *t = value; *t; t++) {
		bool esc = *t == ';' || *t == '%';
		if (o + (esc ? 3 : 1) >= len)
			break;
		if (esc)
			o += (size_t)snprintf(buf + o, len - o, "%%%02X", (unsigned)*t);
		else if (*t != '\n' && *t != '\r')
			buf[o++] = *t;
	}
	buf[o] = '\0';
	return o;
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
	escape_value(value, r->value[i], RUMA_RESULT_VALUE);
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

/* the parameters set now, "k=v;k=v", into params; returns the length written */
static size_t format_params(const ruma_result *r, char *params, size_t len)
{
	size_t o = 0;

	params[0] = '\0';
	for (size_t i = 0; i < r->nparams && o < len; i++)
		o += (size_t)snprintf(params + o, len - o, "%s%s=%s", i ? ";" : "", r->key[i],
				      r->value[i]);
	return o < len ? o : len - 1;
}

static void put_row(ruma_result *r, const char *metric, const char *unit, double value,
		    const char *params)
{
	put_field(r->f, metric);
	fputc(',', r->f);
	put_field(r->f, unit);
	fprintf(r->f, ",%.17g,", value);
	put_field(r->f, params);
	fputc('\n', r->f);
}

void ruma_result_add(ruma_result *r, const char *metric, const char *unit, double value)
{
	char params[sizeof(((ruma_result_row *)0)->params)];

	if (!r || !r->f || !isfinite(value))
		return;
	format_params(r, params, sizeof(params));
	put_row(r, metric, unit, value, params);
}

void ruma_result_note(ruma_result *r, const char *metric, const char *text)
{
	char params[sizeof(((ruma_result_row *)0)->params)];
	size_t o, len = sizeof(params);

	if (!r || !r->f)
		return;
	o = format_params(r, params, len);
	o += (size_t)snprintf(params + o, len - o, "%snote=", o ? ";" : "");
	if (o < len)
		escape_value(text, params + o, len - o);
	put_row(r, metric, "note", 1, params);
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

/* copy the l bytes of a value at v into buf, decoding %3B (';') and %25 ('%') */
static void copy_value(const char *v, size_t l, char *buf, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < l && o + 1 < len; i++) {
		if (v[i] == '%' && i + 2 < l &&
		    (!strncmp(v + i, "%3B", 3) || !strncmp(v + i, "%25", 3))) {
			buf[o++] = v[i + 2] == 'B' ? ';' : '%';
			i += 2;
		} else {
			buf[o++] = v[i];
		}
	}
	if (len)
		buf[o] = '\0';
}

const char *ruma_result_param(const ruma_result_row *row, const char *key, char *buf,
			      size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = row->params; *p;) {
		size_t l = strcspn(p, ";");
		if (l > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
			copy_value(p + kl + 1, l - kl - 1, buf, len);
			return buf;
		}
		p += l;
		if (*p == ';')
			p++;
	}
	return NULL;
}
