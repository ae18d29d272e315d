/*
 * table.c — read a sweep CSV back (for compare, plot and demo).  Columns are
 * found by name in the header, so any grid's parameter columns are accepted;
 * the fixed columns (system, variant, size_param, size, rep, warmup, metric,
 * unit, value, status, note) must be present.
 *
 * Invariants: every row is kept (failed and warm-up rows too, flagged), a
 * failed row (status != ok) has no value; a measured row (status ok) whose
 * value is not a finite number >= 0 (NaN, infinite, negative, empty) is
 * refused with its line (every metric is a time, count, size or rate);
 * no two rows share the key
 * (system, variant, size_param, size, rep, warmup, metric) — a duplicate is
 * refused, not counted as a further repetition.  Syscalls: none (stdio).
 */
#include "tools/exp/exp.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ruma_exp_csv_split(char *line, char **fields, size_t max)
{
	size_t n = 0;
	char *r = line, *w = line;

	if (max == 0)
		return 0;
	for (;;) {
		fields[n] = w;
		if (*r == '"') {
			r++;
			for (; *r; r++) {
				if (*r == '"' && r[1] == '"') {
					*w++ = '"';
					r++;
				} else if (*r == '"') {
					r++;
					break;
				} else {
					*w++ = *r;
				}
			}
		}
		while (*r && *r != ',')
			*w++ = *r++;
		n++;
		if (!*r || n == max) {
			*w = '\0';
			break;
		}
		*w++ = '\0';
		r++;
	}
	return n;
}

enum { C_SYSTEM, C_VARIANT, C_SIZE_PARAM, C_SIZE, C_REP, C_WARMUP, C_METRIC, C_UNIT, C_VALUE,
       C_STATUS, C_NOTE, C_N };
static const char *const col_names[C_N] = { "system", "variant", "size_param", "size",
					    "rep",    "warmup",  "metric",     "unit",
					    "value",  "status",  "note" };

static int push_row(ruma_exp_table *t, const struct ruma_exp_row *r)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct ruma_exp_row *nr = realloc(t->rows, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		t->rows = nr;
		t->cap = cap;
	}
	t->rows[t->n++] = *r;
	return 0;
}

static void fill_row(struct ruma_exp_row *r, char **f, const int *col, int lineno)
{
	double v;

	memset(r, 0, sizeof(*r));
	snprintf(r->system, sizeof(r->system), "%s", f[col[C_SYSTEM]]);
	snprintf(r->variant, sizeof(r->variant), "%s", f[col[C_VARIANT]]);
	snprintf(r->size_param, sizeof(r->size_param), "%s", f[col[C_SIZE_PARAM]]);
	r->size = ruma_parse_double(f[col[C_SIZE]], &v) == 0 ? v : NAN;
	r->rep = strtol(f[col[C_REP]], NULL, 10);
	r->warmup = strtol(f[col[C_WARMUP]], NULL, 10) != 0;
	snprintf(r->metric, sizeof(r->metric), "%s", f[col[C_METRIC]]);
	snprintf(r->unit, sizeof(r->unit), "%s", f[col[C_UNIT]]);
	r->ok = !strcmp(f[col[C_STATUS]], "ok") && f[col[C_VALUE]][0] &&
		ruma_parse_double(f[col[C_VALUE]], &v) == 0;
	r->value = r->ok ? v : NAN;
	snprintf(r->status, sizeof(r->status), "%s", f[col[C_STATUS]]);
	snprintf(r->note, sizeof(r->note), "%s", f[col[C_NOTE]]);
	r->line = lineno;
}

/* The parameter columns (not fixed, not seed) and whether each keeps one value. */
struct context_cols {
	size_t n;
	int col[64];
	char name[64][48], value[64][64];
	bool varies[64];
};

static void context_init(struct context_cols *x, char **hdr, size_t nh, const int *col)
{
	x->n = 0;
	for (size_t i = 0; i < nh && x->n < 64; i++) {
		bool fixed = !strcmp(hdr[i], "seed");
		for (int c = 0; c < C_N; c++)
			fixed |= col[c] == (int)i;
		if (fixed)
			continue;
		x->col[x->n] = (int)i;
		snprintf(x->name[x->n], sizeof(x->name[0]), "%s", hdr[i]);
		x->varies[x->n++] = false;
	}
}

static void context_row(struct context_cols *x, char **f, bool first)
{
	for (size_t i = 0; i < x->n; i++) {
		if (first)
			snprintf(x->value[i], sizeof(x->value[0]), "%s", f[x->col[i]]);
		else if (strcmp(x->value[i], f[x->col[i]]))
			x->varies[i] = true;
	}
}

static void context_text(const struct context_cols *x, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < x->n; i++) {
		size_t used = strlen(buf);
		if (!x->varies[i] && x->value[i][0] && used < len)
			snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", x->name[i],
				 x->value[i]);
	}
}

/* Order of the measurement key; equal means the two rows measure the same thing. */
static int row_key_cmp(const void *pa, const void *pb)
{
	const struct ruma_exp_row *a = *(const struct ruma_exp_row *const *)pa;
	const struct ruma_exp_row *b = *(const struct ruma_exp_row *const *)pb;
	int c;

	if ((c = strcmp(a->system, b->system)) || (c = strcmp(a->variant, b->variant)) ||
	    (c = strcmp(a->size_param, b->size_param)) || (c = strcmp(a->metric, b->metric)))
		return c;
	if (a->size != b->size) /* NaN sizes (unparsable) compare by line: never equal */
		return a->size < b->size ? -1 : a->size > b->size ? 1 : a->line - b->line;
	if (a->rep != b->rep)
		return a->rep < b->rep ? -1 : 1;
	if (a->warmup != b->warmup)
		return a->warmup - b->warmup;
	return 0;
}

/* RUMA_EPARSE naming two lines when a measurement key occurs twice. */
static int check_duplicates(const ruma_exp_table *t, const char *path, char *err, size_t errlen)
{
	const struct ruma_exp_row **v;
	int rc = 0;

	if (t->n < 2)
		return 0;
	v = malloc(t->n * sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory reading %s", path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++)
		v[i] = &t->rows[i];
	qsort(v, t->n, sizeof(*v), row_key_cmp);
	for (size_t i = 1; i < t->n && !rc; i++) {
		if (row_key_cmp(&v[i - 1], &v[i]))
			continue;
		const struct ruma_exp_row *a = v[i - 1], *b = v[i];
		if (a->line > b->line) {
			const struct ruma_exp_row *tmp = a;
			a = b;
			b = tmp;
		}
		snprintf(err, errlen,
			 "%s:%d duplicates line %d (%s %s, %s=%g, rep %ld, metric %s): counting both "
			 "would turn one repetition into two; remove one of them or renumber the reps",
			 path, b->line, a->line, a->system, a->variant, a->size_param, a->size, a->rep,
			 a->metric);
		rc = RUMA_EPARSE;
	}
	free(v);
	return rc;
}

int ruma_exp_table_read(const char *path, ruma_exp_table *t, char *err, size_t errlen)
{
	enum { MAXF = 64 };
	FILE *f = fopen(path, "r");
	char line[8192];
	char *fields[MAXF];
	int col[C_N], rc = 0, lineno = 1;
	size_t nh;
	struct context_cols *ctx = malloc(sizeof(*ctx));

	memset(t, 0, sizeof(*t));
	if (!f || !ctx) {
		rc = !f ? -errno : -ENOMEM;
		free(ctx);
		if (f)
			fclose(f);
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
		return rc;
	}
	if (!fgets(line, sizeof(line), f)) {
		free(ctx);
		rc = ferror(f) ? (errno ? -errno : -EIO) : RUMA_EPARSE;
		if (rc == RUMA_EPARSE)
			snprintf(err, errlen, "%s is empty", path);
		else
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
		fclose(f);
		return rc;
	}
	line[strcspn(line, "\r\n")] = '\0';
	nh = ruma_exp_csv_split(line, fields, MAXF);
	for (int c = 0; c < C_N; c++) {
		col[c] = -1;
		for (size_t i = 0; i < nh; i++)
			if (!strcmp(fields[i], col_names[c]))
				col[c] = (int)i;
		if (col[c] < 0) {
			fclose(f);
			free(ctx);
			snprintf(err, errlen, "%s is not a sweep CSV (no column '%s')", path,
				 col_names[c]);
			return RUMA_EPARSE;
		}
	}
	context_init(ctx, fields, nh, col);
	while (fgets(line, sizeof(line), f)) {
		struct ruma_exp_row r;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = RUMA_EPARSE;
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			break;
		}
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		if (ruma_exp_csv_split(line, fields, MAXF) != nh) {
			rc = RUMA_EPARSE;
			snprintf(err, errlen, "%s:%d: %zu columns expected", path, lineno, nh);
			break;
		}
		fill_row(&r, fields, col, lineno);
		context_row(ctx, fields, t->n == 0);
		if (!strcmp(r.status, "ok") && (!r.ok || r.value < 0)) {
			rc = RUMA_EPARSE;
			snprintf(err, errlen,
				 "%s:%d: metric %s of %s has the value %s: a measurement must be a "
				 "finite number >= 0 (a failed run has status != ok)",
				 path, lineno, r.metric, r.variant, fields[col[C_VALUE]]);
			break;
		}
		if ((rc = push_row(t, &r))) {
			snprintf(err, errlen, "out of memory reading %s", path);
			break;
		}
	}
	if (!rc && ferror(f)) { /* a read error is not the end of the table */
		rc = -EIO;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
	}
	fclose(f);
	context_text(ctx, t->context, sizeof(t->context));
	free(ctx);
	if (!rc)
		rc = check_duplicates(t, path, err, errlen);
	if (rc)
		ruma_exp_table_free(t);
	return rc;
}

void ruma_exp_table_free(ruma_exp_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
