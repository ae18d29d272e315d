/*
 * system.c — the benchmark systems a sweep can drive: the table of the
 * drivers' sweep adapters (common/sweep.h; each lives next to its driver)
 * and what the experiment layer does with a child's output.
 *
 *   vmcache  bench/vmcache/sweep_vmcache.c: the child's --result rows, one per
 *            second; metric = mean after the first second.  A peer (LMDB)
 *            prints the same per-second CSV, read by the adapter.
 *   art      bench/art/sweep_art.c: the child's --result rows.  The
 *            huge-page allocator's reports of where its pages came from
 *            (note rows of the result file, one per source used) become
 *            the row's note.  A run whose impl names a peer runs `PATH <n>
 *            <mode>` instead and every line NAME,N,VALUE of its stdout is a
 *            metric (in Mops), which is what Leis's ART.cpp prints.
 *   micro    bench/micro/sweep_micro.c: the child's --result rows.
 *   rewire, rwbench   bench/rewire/sweep_rewire.c: the child's --result rows.
 *   kv       bench/kv/sweep_kv.c: the child's --result rows (whole-run
 *            throughput and latency percentiles; notes of what a store
 *            cannot honour).
 *   blob     bench/blob/sweep_blob.c: the child's --result rows (per phase:
 *            objects/s, MB/s, latency, bytes written per payload byte,
 *            store size per live byte).
 *
 * Invariants: a metric is only ever a number read from the child's output
 * or result file; output that cannot be read makes the measurement fail
 * ("no-output").
 * Syscalls: none.
 */
#include "bench/common/opt.h"
#include "tools/exp/exp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ruma_sweep_adapter *const systems[RUMA_EXP_NSYSTEMS] = {
	[RUMA_EXP_VMCACHE] = &ruma_sweep_vmcache,
	[RUMA_EXP_ART] = &ruma_sweep_art,
	[RUMA_EXP_MICRO] = &ruma_sweep_micro,
	[RUMA_EXP_REWIRE] = &ruma_sweep_rewire,
	[RUMA_EXP_RWBENCH] = &ruma_sweep_rwbench,
	[RUMA_EXP_KV] = &ruma_sweep_kv,
	[RUMA_EXP_BLOB] = &ruma_sweep_blob,
};

const ruma_sweep_adapter *ruma_exp_system_adapter(int system)
{
	return system >= 0 && system < RUMA_EXP_NSYSTEMS && systems[system]->rows ?
		       systems[system] : NULL;
}

const char *ruma_exp_system_name(int system)
{
	return system >= 0 && system < RUMA_EXP_NSYSTEMS ? systems[system]->system : "?";
}

/* The systems' names, in the order of their RUMA_EXP_* values. */
static void system_names(const char *names[RUMA_EXP_NSYSTEMS])
{
	for (int i = 0; i < RUMA_EXP_NSYSTEMS; i++)
		names[i] = systems[i]->system;
}

int ruma_exp_system_find(const char *name)
{
	const char *names[RUMA_EXP_NSYSTEMS];

	system_names(names);
	return ruma_opt_enum(name, names, RUMA_EXP_NSYSTEMS);
}

const char *ruma_exp_system_list(char *buf, size_t len)
{
	const char *names[RUMA_EXP_NSYSTEMS];

	system_names(names);
	return ruma_opt_enum_list(names, RUMA_EXP_NSYSTEMS, buf, len);
}

const char *ruma_exp_system_keys(int system)
{
	return system >= 0 && system < RUMA_EXP_NSYSTEMS ? systems[system]->keys : "";
}

const char *const *ruma_exp_system_required(int system)
{
	static const char *const none[1] = { NULL };

	return system >= 0 && system < RUMA_EXP_NSYSTEMS ? systems[system]->required : none;
}

void ruma_exp_add_metric(struct ruma_exp_result *r, const char *name, const char *unit, double v)
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
		ruma_exp_add_metric(r, line, unit, v);
	}
	r->ok = r->nm > 0;
	snprintf(r->status, sizeof(r->status), "%s", r->ok ? "ok" : "no-output");
}

/* what the row callbacks of one read see */
struct read_ctx {
	struct ruma_exp_result *res;
	const ruma_exp_grid *g;        /* NULL: the run's parameters are unknown */
	const struct ruma_exp_run *run;
};

static void add_row_metric(const ruma_sweep_run *run, const char *name, const char *unit,
			   double value)
{
	const struct read_ctx *c = run->ctx;

	ruma_exp_add_metric(c->res, name, unit, value);
}

/* "; "-joined notes, as many as fit */
static void add_row_note(const ruma_sweep_run *run, const char *text)
{
	const struct read_ctx *c = run->ctx;
	struct ruma_exp_result *r = c->res;
	size_t used = strlen(r->note);

	if (used + 3 < sizeof(r->note))
		snprintf(r->note + used, sizeof(r->note) - used, "%s%s", used ? "; " : "", text);
}

static const char *row_param(const ruma_sweep_run *run, const char *name)
{
	const struct read_ctx *c = run->ctx;

	return c->g ? ruma_exp_run_param(c->g, c->run, name) : NULL;
}

static void read_rows(int system, const struct read_ctx *c, const ruma_result_row *rows,
		      size_t n)
{
	const ruma_sweep_adapter *a = ruma_exp_system_adapter(system);
	ruma_sweep_run run = { .param = row_param, .metric = add_row_metric, .note = add_row_note,
			       .ctx = (void *)c };
	struct ruma_exp_result *r = c->res;

	r->nm = 0;
	if (a)
		a->rows(&run, rows, n);
	r->ok = r->nm > 0;
	snprintf(r->status, sizeof(r->status), "%s", r->ok ? "ok" : "no-output");
}

void ruma_exp_read_rows(int system, const ruma_result_row *rows, size_t n,
			struct ruma_exp_result *r)
{
	struct read_ctx c = { r, NULL, NULL };

	read_rows(system, &c, rows, n);
}

void ruma_exp_read_peer_out(const ruma_exp_grid *g, const struct ruma_exp_run *run,
			    const char *out, struct ruma_exp_result *r)
{
	const ruma_sweep_adapter *a = ruma_exp_system_adapter(g->system);
	struct read_ctx c = { r, g, run };
	ruma_sweep_run sr = { .param = row_param, .metric = add_row_metric, .note = add_row_note,
			      .ctx = &c };

	r->nm = 0;
	if (a && a->peer_out)
		a->peer_out(&sr, out);
	r->ok = r->nm > 0;
	snprintf(r->status, sizeof(r->status), "%s", r->ok ? "ok" : "no-output");
}

void ruma_exp_read_rows_of(const ruma_exp_grid *g, const struct ruma_exp_run *run,
			   const ruma_result_row *rows, size_t n, struct ruma_exp_result *r)
{
	struct read_ctx c = { r, g, run };

	read_rows(g->system, &c, rows, n);
}
