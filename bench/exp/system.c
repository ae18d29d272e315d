/*
 * system.c — the three benchmark systems a sweep can drive, as the ruma
 * subcommands that measure them: how a run's parameters become the child's
 * arguments, and how the child's output becomes metrics.
 *
 *   vmcache  `ruma vmcache` per-second CSV (ts,tx,rmb,wmb,...).  Metric = mean
 *            of the per-second rows after dropping the first second (load,
 *            cold cache); a run of one second keeps its only row.
 *   art      `ruma art <n> <mode>` lines insert,n,Mops / lookup / erase.  The
 *            huge-page allocator's reports of where its pages came from
 *            (stderr, one per source used) become the row's note.  A run
 *            whose impl names a peer runs `PATH <n> <mode>` instead and every
 *            line NAME,N,VALUE of its stdout is a metric (in Mops), which is
 *            what Leis's ART.cpp prints.
 *   micro    `ruma micro <method> <test> <n> <runs> false`: the last row of the
 *            summary table (the average over <runs>), every phase that took
 *            time, in seconds, plus their sum "total".
 *
 * Invariants: a metric is only ever a number read from the child's output;
 * output that cannot be parsed makes the measurement fail ("no-output").
 * Syscalls: none.
 */
#include "bench/exp/exp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sys_names[RUMA_EXP_NSYSTEMS] = { "vmcache", "art", "micro" };
static const char *const sys_keys[RUMA_EXP_NSYSTEMS] = {
	"block,virtgb,physgb,batch,runfor,threads,datasize,workload,wait,evict,write,reuse,check",
	"n,mode,alloc,lookups,batch,preload,impl,seed",
	"method,test,n,runs,fallback",
};

const char *ruma_exp_system_name(int system)
{
	return system >= 0 && system < RUMA_EXP_NSYSTEMS ? sys_names[system] : "?";
}

int ruma_exp_system_find(const char *name)
{
	for (int i = 0; i < RUMA_EXP_NSYSTEMS; i++)
		if (!strcmp(name, sys_names[i]))
			return i;
	return -1;
}

const char *ruma_exp_system_keys(int system)
{
	return system >= 0 && system < RUMA_EXP_NSYSTEMS ? sys_keys[system] : "";
}

static void add_metric(struct ruma_exp_result *r, const char *name, const char *unit, double v)
{
	struct ruma_exp_metric *m;

	if (r->nm == RUMA_EXP_MAX_METRICS || !isfinite(v))
		return;
	m = &r->m[r->nm++];
	snprintf(m->name, sizeof(m->name), "%.*s", (int)sizeof(m->name) - 1, name);
	snprintf(m->unit, sizeof(m->unit), "%s", unit);
	m->value = v;
}

/* next line of a NUL-terminated text: copies it into buf, returns the rest or NULL */
static const char *next_line(const char *p, char *buf, size_t len)
{
	const char *nl;
	size_t l;

	if (!p || !*p)
		return NULL;
	nl = strchr(p, '\n');
	l = nl ? (size_t)(nl - p) : strlen(p);
	if (l >= len)
		l = len - 1;
	memcpy(buf, p, l);
	buf[l] = '\0';
	return nl ? nl + 1 : p + strlen(p);
}

static void parse_vmcache(const char *out, struct ruma_exp_result *r)
{
	char line[512];
	double sum[3] = { 0, 0, 0 }, first[3] = { 0, 0, 0 };
	long rows = 0, header = 0;

	for (const char *p = out; (p = next_line(p, line, sizeof(line)));) {
		long ts;
		double v[3];

		if (!strncmp(line, "ts,tx,rmb,wmb", 13)) {
			header = 1;
			continue;
		}
		if (!header || sscanf(line, "%ld,%lf,%lf,%lf", &ts, &v[0], &v[1], &v[2]) != 4)
			continue;
		for (int i = 0; i < 3; i++) {
			if (rows == 0)
				first[i] = v[i];
			else
				sum[i] += v[i];
		}
		rows++;
	}
	if (rows == 0)
		return;
	if (rows == 1) /* a one-second run keeps its only row */
		for (int i = 0; i < 3; i++)
			sum[i] = first[i];
	add_metric(r, "tx", "tx/s", sum[0] / (double)(rows > 1 ? rows - 1 : 1));
	add_metric(r, "rmb", "MiB/s", sum[1] / (double)(rows > 1 ? rows - 1 : 1));
	add_metric(r, "wmb", "MiB/s", sum[2] / (double)(rows > 1 ? rows - 1 : 1));
}

/* a word of letters, digits, '_' and '-' of length l at the start of s? */
static int is_word(const char *s, size_t l)
{
	return l > 0 && l < 48 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == l;
}

void ruma_exp_parse_metric_lines(const char *out, const char *unit, struct ruma_exp_result *r)
{
	char line[512];

	r->nm = 0;
	for (const char *p = out ? out : ""; (p = next_line(p, line, sizeof(line)));) {
		char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
		double n, v;

		if (!c2 || !is_word(line, (size_t)(c1 - line)) || strchr(c2 + 1, ','))
			continue;
		*c1 = *c2 = '\0';
		if (ruma_parse_double(c1 + 1, &n) || ruma_parse_double(c2 + 1, &v))
			continue;
		add_metric(r, line, unit, v);
	}
	r->ok = r->nm > 0;
	snprintf(r->status, sizeof(r->status), "%s", r->ok ? "ok" : "no-output");
}

static void parse_art(const char *out, const char *err, struct ruma_exp_result *r)
{
	static const char *const ops[] = { "insert", "lookup", "erase" };
	char line[512];

	for (const char *p = out; (p = next_line(p, line, sizeof(line)));) {
		for (size_t i = 0; i < 3; i++) {
			size_t l = strlen(ops[i]);
			double n, mops;

			if (!strncmp(line, ops[i], l) && line[l] == ',' &&
			    sscanf(line + l + 1, "%lf,%lf", &n, &mops) == 2)
				add_metric(r, ops[i], "Mops", mops);
		}
	}
	for (const char *p = err; (p = next_line(p, line, sizeof(line)));) {
		const char *h = strstr(line, "huge allocator:");

		size_t used = strlen(r->note);

		/* one line per page source the allocator used (it can fall back mid-run) */
		if (h && used + 3 < sizeof(r->note))
			snprintf(r->note + used, sizeof(r->note) - used, "%s%s", used ? "; " : "", h);
	}
}

/* split "a, b, c" into tokens (in place); returns the count */
static size_t split_commas(char *s, char **tok, size_t max)
{
	size_t n = 0;

	while (n < max) {
		char *c = strchr(s, ',');

		while (*s == ' ')
			s++;
		tok[n++] = s;
		if (!c)
			break;
		*c = '\0';
		s = c + 1;
	}
	for (size_t i = 0; i < n; i++) {
		char *e = tok[i] + strlen(tok[i]);
		while (e > tok[i] && (e[-1] == ' ' || e[-1] == '\r'))
			*--e = '\0';
	}
	return n;
}

static void parse_micro(const char *out, struct ruma_exp_result *r)
{
	enum { MAXCOL = 64 };
	char header[2048], line[2048], last[2048] = "";
	char *names[MAXCOL], *vals[MAXCOL];
	size_t nn = 0, nv;
	int in_table = 0;
	double total = 0;

	header[0] = '\0';
	for (const char *p = out; (p = next_line(p, line, sizeof(line)));) {
		if (!strncmp(line, "malloc-src,", 11)) {
			snprintf(header, sizeof(header), "%s", line);
			in_table = 1;
			last[0] = '\0';
			continue;
		}
		if (in_table) {
			if (!line[0] || !(line[0] == '-' || (line[0] >= '0' && line[0] <= '9'))) {
				in_table = 0;
				continue;
			}
			snprintf(last, sizeof(last), "%s", line);
		}
	}
	if (!header[0] || !last[0])
		return;
	nn = split_commas(header, names, MAXCOL);
	nv = split_commas(last, vals, MAXCOL);
	if (nn != nv)
		return;
	for (size_t i = 0; i < nn; i++) {
		double v;

		if (ruma_parse_double(vals[i], &v))
			return;
		total += v;
	}
	for (size_t i = 0; i < nn; i++) {
		double v;

		ruma_parse_double(vals[i], &v);
		if (v > 0)
			add_metric(r, names[i], "s", v);
	}
	add_metric(r, "total", "s", total);
}

void ruma_exp_parse_output(int system, const char *out, const char *err,
			   struct ruma_exp_result *r)
{
	r->nm = 0;
	if (!out)
		out = "";
	if (!err)
		err = "";
	switch (system) {
	case RUMA_EXP_VMCACHE:
		parse_vmcache(out, r);
		break;
	case RUMA_EXP_ART:
		parse_art(out, err, r);
		break;
	case RUMA_EXP_MICRO:
		parse_micro(out, r);
		break;
	default:
		break;
	}
	r->ok = r->nm > 0;
	snprintf(r->status, sizeof(r->status), "%s", r->ok ? "ok" : "no-output");
}
