/*
 * grid.c — the grid of a sweep: which system, the variables whose values form
 * the variants, the size axis, fixed settings, the peers (external programs
 * an impl parameter can name), repetitions and warm-ups, and the plan that
 * orders the runs.
 *
 * Invariants: a checked grid names only parameters its system accepts, every
 * list is non-empty, no name appears twice (var, size and set together), sizes
 * are numbers stored in one normal form (so a resumed sweep matches its rows).
 * The plan interleaves: each round runs every size and, within a size, every
 * variant once, in an order shuffled by a generator seeded from the grid seed
 * and the round (or rotated with order=roundrobin).  Warm-up rounds come first.
 *
 * Syscalls: access(X_OK) on each peer's program when the grid is checked
 * (the grid file is read with stdio).
 */
#include "tools/exp/exp.h"

#include "bench/common/opt.h"
#include "bench/common/rep.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (err && len)
		vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

void ruma_exp_grid_init(ruma_exp_grid *g)
{
	memset(g, 0, sizeof(*g));
	g->system = -1;
	g->reps = 5;
	g->warmup = 1;
	g->seed = 42;
	g->timeout = 900;
}

/* Copy the first n bytes of src (callers checked n < RUMA_EXP_STR) into dst. */
static int copy_str(char *dst, const char *src, size_t n)
{
	size_t l = strnlen(src, n);

	if (l >= RUMA_EXP_STR)
		return -1;
	memcpy(dst, src, l);
	dst[l] = '\0';
	return 0;
}

static int valid_name(const char *s, size_t n)
{
	if (n == 0 || n >= RUMA_EXP_STR)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

void ruma_exp_fmt_num(double v, char *buf, size_t len)
{
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.10g", v);
}

/* a size value: a plain number ("1e5", "0.25") or a byte size ("64M") */
static int parse_number(const char *s, double *out)
{
	uint64_t u;

	if (ruma_parse_double(s, out) == 0)
		return *out >= 0 ? 0 : RUMA_EPARSE;
	if (ruma_parse_size(s, &u) == 0) {
		*out = (double)u;
		return 0;
	}
	return RUMA_EPARSE;
}

const char *ruma_exp_next_comma(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth > 0)
			depth--;
		else if (*p == ',' && depth == 0)
			return p;
	}
	return NULL;
}

/* "name=a,b,c" -> name and the list; lists are split on ',' outside parentheses */
static int split_list(const char *arg, char *name, char values[][RUMA_EXP_STR], size_t *n,
		      const char *what, char *err, size_t len)
{
	const char *eq = strchr(arg, '=');
	const char *p;

	if (!eq || !valid_name(arg, (size_t)(eq - arg)))
		return fail(err, len, RUMA_EPARSE, "--%s '%s': expected NAME=VALUE[,VALUE...]",
			    what, arg);
	copy_str(name, arg, (size_t)(eq - arg));
	*n = 0;
	p = eq + 1;
	for (;;) {
		const char *c = ruma_exp_next_comma(p);
		size_t l = c ? (size_t)(c - p) : strlen(p);

		if (l == 0)
			return fail(err, len, RUMA_EPARSE, "--%s %s: empty value in the list", what,
				    name);
		if (*n == RUMA_EXP_MAX_VALUES)
			return fail(err, len, RUMA_EPARSE, "--%s %s: more than %d values", what,
				    name, RUMA_EXP_MAX_VALUES);
		if (l >= RUMA_EXP_STR)
			return fail(err, len, RUMA_EPARSE, "--%s %s: value too long", what, name);
		copy_str(values[*n], p, l);
		(*n)++;
		if (!c)
			break;
		p = c + 1;
	}
	return 0;
}

static int add_var(ruma_exp_grid *g, const char *arg, char *err, size_t len)
{
	struct ruma_exp_var *v;
	int rc;

	if (g->nvars == RUMA_EXP_MAX_VARS)
		return fail(err, len, RUMA_EPARSE, "at most %d --var", RUMA_EXP_MAX_VARS);
	v = &g->vars[g->nvars];
	rc = split_list(arg, v->name, v->values, &v->n, "var", err, len);
	if (rc)
		return rc;
	for (size_t i = 0; i < v->n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(v->values[i], v->values[j]))
				return fail(err, len, RUMA_EPARSE, "--var %s: value '%s' twice",
					    v->name, v->values[i]);
	g->nvars++;
	return 0;
}

static int add_size(ruma_exp_grid *g, const char *arg, char *err, size_t len)
{
	char raw[RUMA_EXP_MAX_VALUES][RUMA_EXP_STR];
	size_t n;
	int rc;

	if (g->nsizes)
		return fail(err, len, RUMA_EPARSE, "only one --size axis per sweep");
	rc = split_list(arg, g->size_name, raw, &n, "size", err, len);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		double v;

		if (parse_number(raw[i], &v))
			return fail(err, len, RUMA_EPARSE, "--size %s: '%s' is not a number",
				    g->size_name, raw[i]);
		ruma_exp_fmt_num(v, g->sizes[i], RUMA_EXP_STR);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(g->sizes[i], g->sizes[j]))
				return fail(err, len, RUMA_EPARSE, "--size %s: '%s' twice",
					    g->size_name, raw[i]);
	}
	g->nsizes = n;
	return 0;
}

static int add_set(ruma_exp_grid *g, const char *arg, char *err, size_t len)
{
	const char *eq = strchr(arg, '=');
	struct ruma_exp_set *s;

	if (!eq || !valid_name(arg, (size_t)(eq - arg)) || !eq[1])
		return fail(err, len, RUMA_EPARSE, "--set '%s': expected NAME=VALUE", arg);
	if (strlen(eq + 1) >= RUMA_EXP_STR)
		return fail(err, len, RUMA_EPARSE, "--set '%s': value too long", arg);
	for (size_t i = 0; i < g->nsets; i++)
		if (!strncmp(g->sets[i].key, arg, (size_t)(eq - arg)) &&
		    g->sets[i].key[eq - arg] == '\0') {
			copy_str(g->sets[i].value, eq + 1, strlen(eq + 1)); /* later wins */
			return 0;
		}
	if (g->nsets == RUMA_EXP_MAX_SETS)
		return fail(err, len, RUMA_EPARSE, "at most %d --set", RUMA_EXP_MAX_SETS);
	s = &g->sets[g->nsets++];
	copy_str(s->key, arg, (size_t)(eq - arg));
	copy_str(s->value, eq + 1, strlen(eq + 1));
	return 0;
}

static int parse_long_min(const char *what, const char *arg, long min, long *out, char *err,
			  size_t len)
{
	uint64_t u;

	if (ruma_parse_u64(arg, &u) || u > 1000000 || (long)u < min)
		return fail(err, len, RUMA_EPARSE, "--%s '%s': expected an integer >= %ld", what,
			    arg, min);
	*out = (long)u;
	return 0;
}

/* peer NAME=PATH: an external program the impl parameter can name */
static int add_peer(ruma_exp_grid *g, const char *arg, char *err, size_t len)
{
	const char *eq = strchr(arg, '=');
	size_t nl = eq ? (size_t)(eq - arg) : 0;

	if (!eq || nl == 0 || !eq[1])
		return fail(err, len, RUMA_EPARSE, "--peer '%s': expected NAME=PATH", arg);
	if (nl >= RUMA_EXP_STR || strlen(eq + 1) >= RUMA_EXP_PATH)
		return fail(err, len, RUMA_EPARSE, "--peer '%s': name or path too long", arg);
	if (strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != nl)
		return fail(err, len, RUMA_EPARSE,
			    "--peer '%s': the name may hold letters, digits, '_' and '-'", arg);
	if (nl == 4 && !strncmp(arg, "ruma", 4))
		return fail(err, len, RUMA_EPARSE, "--peer: 'ruma' names ruma itself");
	for (size_t i = 0; i < g->npeers; i++)
		if (strlen(g->peers[i].name) == nl && !strncmp(g->peers[i].name, arg, nl))
			return fail(err, len, RUMA_EPARSE, "--peer '%.*s' given twice", (int)nl, arg);
	if (g->npeers == RUMA_EXP_MAX_PEERS)
		return fail(err, len, RUMA_EPARSE, "more than %d peers", RUMA_EXP_MAX_PEERS);
	snprintf(g->peers[g->npeers].name, RUMA_EXP_STR, "%.*s", (int)nl, arg);
	snprintf(g->peers[g->npeers].path, RUMA_EXP_PATH, "%s", eq + 1);
	g->npeers++;
	return 0;
}

static const struct ruma_exp_peer *peer_named(const ruma_exp_grid *g, const char *name)
{
	for (size_t i = 0; name && i < g->npeers; i++)
		if (!strcmp(g->peers[i].name, name))
			return &g->peers[i];
	return NULL;
}

const char *ruma_exp_run_param(const ruma_exp_grid *g, const struct ruma_exp_run *run,
			       const char *name)
{
	for (size_t k = 0; k < g->nvars; k++)
		if (!strcmp(g->vars[k].name, name))
			return ruma_exp_variant_value(g, run->variant, k);
	if (!strcmp(g->size_name, name))
		return g->sizes[run->size];
	for (size_t i = 0; i < g->nsets; i++)
		if (!strcmp(g->sets[i].key, name))
			return g->sets[i].value;
	return NULL;
}

const struct ruma_exp_peer *ruma_exp_grid_peer(const ruma_exp_grid *g, size_t variant)
{
	for (size_t k = 0; k < g->nvars; k++)
		if (!strcmp(g->vars[k].name, "impl"))
			return peer_named(g, ruma_exp_variant_value(g, variant, k));
	for (size_t i = 0; i < g->nsets; i++)
		if (!strcmp(g->sets[i].key, "impl"))
			return peer_named(g, g->sets[i].value);
	return NULL;
}

/* every impl value names ruma or a peer whose program can be executed */
static int check_impl(const ruma_exp_grid *g, char *err, size_t len)
{
	for (size_t i = 0; i < g->npeers; i++)
		if (access(g->peers[i].path, X_OK) != 0)
			return fail(err, len, -EINVAL, "peer %s: cannot execute '%s': %s",
				    g->peers[i].name, g->peers[i].path, strerror(errno));
	for (size_t k = 0; k < g->nvars + g->nsets; k++) {
		const char *name = k < g->nvars ? g->vars[k].name : g->sets[k - g->nvars].key;
		size_t nv = k < g->nvars ? g->vars[k].n : 1;

		if (strcmp(name, "impl"))
			continue;
		for (size_t j = 0; j < nv; j++) {
			const char *v = k < g->nvars ? g->vars[k].values[j] : g->sets[k - g->nvars].value;
			if (strcmp(v, "ruma") && !peer_named(g, v))
				return fail(err, len, -EINVAL,
					    "impl=%s: neither 'ruma' nor a peer (declare it with "
					    "--peer %s=/path/to/program)", v, v);
		}
	}
	return 0;
}

static int add_system(ruma_exp_grid *g, const char *arg, char *err, size_t len)
{
	int s = ruma_exp_system_find(arg);
	char known[128];

	if (s < 0)
		return fail(err, len, RUMA_EPARSE, "unknown system '%s' (%s)", arg,
			    ruma_exp_system_list(known, sizeof(known)));
	g->system = s;
	return 0;
}

/* --order: the variants of a round shuffled, or rotated round by round. */
static int add_order(ruma_exp_grid *g, const char *arg, char *err, size_t len)
{
	static const char *const orders[] = { "shuffle", "roundrobin" };
	int o = ruma_opt_enum(arg, orders, RUMA_ARRAY_SIZE(orders));

	if (o < 0)
		return fail(err, len, RUMA_EPARSE, "--order '%s': shuffle or roundrobin", arg);
	g->roundrobin = o == 1;
	return 0;
}

int ruma_exp_grid_add(ruma_exp_grid *g, const char *what, const char *arg, char *err,
		      size_t len)
{
	if (!arg)
		return fail(err, len, RUMA_EPARSE, "--%s needs a value", what);
	static const char *const items[] = { "system", "var",  "size",  "set",    "peer",
					     "reps",   "warmup", "seed", "order", "timeout" };
	switch (ruma_opt_enum(what, items, RUMA_ARRAY_SIZE(items))) {
	case 0: return add_system(g, arg, err, len);
	case 1: return add_var(g, arg, err, len);
	case 2: return add_size(g, arg, err, len);
	case 3: return add_set(g, arg, err, len);
	case 4: return add_peer(g, arg, err, len);
	case 5: return parse_long_min("reps", arg, 1, &g->reps, err, len);
	case 6: return parse_long_min("warmup", arg, 0, &g->warmup, err, len);
	case 7:
		return ruma_parse_u64(arg, &g->seed)
			       ? fail(err, len, RUMA_EPARSE, "--seed '%s': not a number", arg)
			       : 0;
	case 8: return add_order(g, arg, err, len);
	case 9:
		if (ruma_parse_double(arg, &g->timeout) || g->timeout <= 0)
			return fail(err, len, RUMA_EPARSE, "--timeout '%s': seconds > 0", arg);
		return 0;
	default: return fail(err, len, RUMA_EPARSE, "unknown grid item '%s'", what);
	}
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int ruma_exp_grid_load(ruma_exp_grid *g, const char *path, char *err, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[1024], msg[RUMA_EXP_ERR];
	int lineno = 0, rc = 0;

	if (!f)
		return fail(err, len, -errno, "cannot read grid file %s: %s", path,
			    strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *hash = strchr(line, '#'), *eq, *key, *dot;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = fail(err, len, RUMA_EPARSE, "%s:%d: line longer than %zu characters",
				  path, lineno, sizeof(line) - 2);
			break;
		}
		if (hash)
			*hash = '\0';
		s = trim(s);
		if (!*s)
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			rc = fail(err, len, RUMA_EPARSE, "%s:%d: expected key=value", path, lineno);
			break;
		}
		*eq = '\0';
		key = trim(s);
		dot = strchr(key, '.');
		if (dot) { /* var.NAME=list -> "var", "NAME=list" */
			char item[1024];

			*dot = '\0';
			snprintf(item, sizeof(item), "%s=%s", dot + 1, trim(eq + 1));
			rc = ruma_exp_grid_add(g, key, item, msg, sizeof(msg));
		} else {
			rc = ruma_exp_grid_add(g, key, trim(eq + 1), msg, sizeof(msg));
		}
		if (rc) {
			fail(err, len, rc, "%s:%d: %s", path, lineno, msg);
			break;
		}
	}
	if (!rc && ferror(f)) /* e.g. EISDIR: not an empty grid */
		rc = fail(err, len, errno ? -errno : -EIO, "cannot read grid file %s: %s", path,
			  strerror(errno));
	fclose(f);
	return rc;
}

/* is name a key of the system's comma-separated key list? */
static int key_known(const char *keys, const char *name)
{
	size_t l = strlen(name);

	for (const char *p = keys; *p;) {
		const char *c = strchr(p, ',');
		size_t kl = c ? (size_t)(c - p) : strlen(p);

		if (kl == l && !strncmp(p, name, l))
			return 1;
		if (!c)
			break;
		p = c + 1;
	}
	return 0;
}

static int name_used(const ruma_exp_grid *g, const char *name, int skip_var)
{
	int uses = 0;

	for (size_t i = 0; i < g->nvars; i++)
		uses += (int)i != skip_var && !strcmp(g->vars[i].name, name);
	for (size_t i = 0; i < g->nsets; i++)
		uses += !strcmp(g->sets[i].key, name);
	uses += g->nsizes && !strcmp(g->size_name, name);
	return uses;
}

static const char *param_value(const ruma_exp_grid *g, const char *name)
{
	for (size_t i = 0; i < g->nsets; i++)
		if (!strcmp(g->sets[i].key, name))
			return g->sets[i].value;
	for (size_t i = 0; i < g->nvars; i++)
		if (!strcmp(g->vars[i].name, name))
			return g->vars[i].values[0];
	if (g->nsizes && !strcmp(g->size_name, name))
		return g->sizes[0];
	return NULL;
}

int ruma_exp_grid_check(ruma_exp_grid *g, char *err, size_t len)
{
	const char *keys;
	const char *const *required;
	char known[128];

	if (g->system < 0)
		return fail(err, len, -EINVAL, "no system given (%s)",
			    ruma_exp_system_list(known, sizeof(known)));
	keys = ruma_exp_system_keys(g->system);
	required = ruma_exp_system_required(g->system);
	for (size_t i = 0; i < g->nvars; i++) {
		if (!key_known(keys, g->vars[i].name))
			return fail(err, len, -EINVAL, "%s has no variable '%s' (known: %s)",
				    ruma_exp_system_name(g->system), g->vars[i].name, keys);
		if (name_used(g, g->vars[i].name, (int)i))
			return fail(err, len, -EINVAL, "'%s' given more than once",
				    g->vars[i].name);
	}
	for (size_t i = 0; i < g->nsets; i++) {
		if (!key_known(keys, g->sets[i].key))
			return fail(err, len, -EINVAL, "%s has no parameter '%s' (known: %s)",
				    ruma_exp_system_name(g->system), g->sets[i].key, keys);
		if (name_used(g, g->sets[i].key, -1) > 1)
			return fail(err, len, -EINVAL, "'%s' given more than once",
				    g->sets[i].key);
	}
	if (!g->nsizes)
		return fail(err, len, -EINVAL, "no --size axis (e.g. --size n=1e5,1e6)");
	if (!key_known(keys, g->size_name))
		return fail(err, len, -EINVAL, "%s has no size parameter '%s' (known: %s)",
			    ruma_exp_system_name(g->system), g->size_name, keys);
	for (size_t i = 0; required[i]; i++)
		if (!param_value(g, required[i]))
			return fail(err, len, -EINVAL, "%s needs '%s' (as --set, --var or --size)",
				    ruma_exp_system_name(g->system), required[i]);
	if (g->reps < 1)
		return fail(err, len, -EINVAL, "--reps must be >= 1");
	if (check_impl(g, err, len))
		return -EINVAL;
	/* vmcache's own default workload is TPC-C, where DATASIZE counts
	 * warehouses: a sweep over tuple counts would ask for 1e5 warehouses.
	 * Sweeps default to rndread; the CSV's workload column shows it. */
	if (g->system == RUMA_EXP_VMCACHE && !param_value(g, "workload")) {
		if (g->nsets == RUMA_EXP_MAX_SETS)
			return fail(err, len, -EINVAL, "set workload=rndread or tpcc explicitly");
		snprintf(g->sets[g->nsets].key, RUMA_EXP_STR, "workload");
		snprintf(g->sets[g->nsets].value, RUMA_EXP_STR, "rndread");
		g->nsets++;
	}
	return 0;
}

size_t ruma_exp_grid_variants(const ruma_exp_grid *g)
{
	size_t n = 1;

	for (size_t i = 0; i < g->nvars; i++)
		n *= g->vars[i].n;
	return n;
}

/* value index of variable k in variant i (mixed radix, first variable slowest) */
static size_t var_index(const ruma_exp_grid *g, size_t i, size_t k)
{
	for (size_t j = g->nvars; j-- > k + 1;)
		i /= g->vars[j].n;
	return i % g->vars[k].n;
}

const char *ruma_exp_variant_value(const ruma_exp_grid *g, size_t variant, size_t k)
{
	return g->vars[k].values[var_index(g, variant, k)];
}

void ruma_exp_grid_variant_name(const ruma_exp_grid *g, size_t i, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (!g->nvars) {
		snprintf(buf, len, "default");
		return;
	}
	for (size_t k = 0; k < g->nvars && off < len; k++) {
		int w = snprintf(buf + off, len - off, "%s%s=%s", k ? "," : "", g->vars[k].name,
				 ruma_exp_variant_value(g, i, k));
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

int ruma_exp_plan(const ruma_exp_grid *g, struct ruma_exp_run **runs, size_t *n)
{
	size_t nv = ruma_exp_grid_variants(g), rounds = (size_t)(g->warmup + g->reps), k = 0;
	struct ruma_exp_run *r = calloc(rounds * g->nsizes * nv, sizeof(*r));
	uint64_t *order = calloc(nv, sizeof(*order));
	ruma_rep order_gen;

	if (!r || !order) {
		free(r);
		free(order);
		return -ENOMEM;
	}
	/* the order generator of the in-process benchmarks (common/rep.h) */
	ruma_rep_init(&order_gen, nv, g->nsizes, (unsigned)g->warmup, (unsigned)g->reps,
		      g->roundrobin ? RUMA_REP_ROTATE : RUMA_REP_SHUFFLE, g->seed ^ 0x5eed5eedull);
	for (size_t round = 0; round < rounds; round++) {
		int warm = round < (size_t)g->warmup;
		long rep = warm ? (long)round + 1 : (long)round - g->warmup + 1;

		for (size_t s = 0; s < g->nsizes; s++) {
			ruma_rep_next_order(&order_gen, round + s, order);
			for (size_t v = 0; v < nv; v++) {
				r[k].variant = (size_t)order[v];
				r[k].size = s;
				r[k].rep = rep;
				r[k].warmup = warm;
				r[k].seed = g->seed + round;
				k++;
			}
		}
	}
	free(order);
	*runs = r;
	*n = k;
	return 0;
}
