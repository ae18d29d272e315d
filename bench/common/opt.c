/*
 * opt.c — the table-driven command-line parser of the benchmark drivers
 * (opt.h).  One pass over argv: an argument naming a table entry consumes
 * its value (the next argument, or the text after '='), converts it by the
 * entry's kind, checks the range and stores it at the entry's offset; other
 * arguments starting with "--" are unknown options; the rest are
 * positional.  The first problem ends the pass and is described in the
 * ruma_opt_error, never printed: the driver words the message.
 *
 * ruma_opt_outcome turns a parser's result into what a `ruma <cmd>` does:
 * the message, the usage, the exit status; ruma_opt_report words the error
 * for the commands that share one wording.  ruma_opt_enum parses a name
 * against a name table (the enums of the options).
 *
 * Invariants: nothing is stored for an argument that fails; a target is
 * written only with the width its kind names.  Syscalls: none (stdio).
 */
#include "bench/common/opt.h"

#include <ruma/core.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

const ruma_opt *ruma_opt_find(const ruma_opt *table, size_t n, const char *name)
{
	size_t len = strcspn(name, "=");

	for (size_t i = 0; i < n; i++)
		if (strlen(table[i].name) == len && !strncmp(table[i].name, name, len))
			return &table[i];
	return NULL;
}

static int fail(ruma_opt_error *e, ruma_opt_status st, int rc)
{
	e->status = st;
	e->rc = rc;
	return RUMA_EPARSE;
}

/* Convert value by the kind of o and store it into opts. */
static int store(const ruma_opt *o, const char *value, void *opts, ruma_opt_error *e)
{
	char *target = (char *)opts + o->off;
	uint64_t x = 0;
	int rc;

	switch (o->kind) {
	case RUMA_OPT_STR:
		if ((o->flags & RUMA_OPT_NONEMPTY) && !*value)
			return fail(e, RUMA_OPT_BADVALUE, -EINVAL);
		memcpy(target, &value, sizeof(value));
		return 0;
	case RUMA_OPT_FUNC:
		rc = o->parse(value, opts);
		return rc ? fail(e, RUMA_OPT_BADVALUE, rc) : 0;
	case RUMA_OPT_BYTES:
		rc = ruma_parse_u64(value, &x);
		if (rc && ruma_parse_size(value, &x) == 0)
			rc = 0;
		break;
	default:
		rc = ruma_parse_u64(value, &x);
		break;
	}
	if (rc)
		return fail(e, RUMA_OPT_BADVALUE, rc);
	if (x < o->min || x > o->max)
		return fail(e, RUMA_OPT_RANGE, 0);
	if (o->kind == RUMA_OPT_UINT) {
		unsigned u = (unsigned)x;
		memcpy(target, &u, sizeof(u));
	} else if (o->kind == RUMA_OPT_SIZET) {
		size_t z = (size_t)x;
		memcpy(target, &z, sizeof(z));
	} else {
		memcpy(target, &x, sizeof(x));
	}
	return 0;
}

const char ruma_opt_bare[] = "";

/* One table option at argv[*i]; advances *i past its value. */
static int take_option(const ruma_opt *o, int argc, char **argv, int *i, void *opts,
		       ruma_opt_error *e)
{
	const char *a = argv[*i], *eq = strchr(a, '=');

	e->opt = o;
	if (o->kind == RUMA_OPT_FLAG) {
		bool t = true;
		memcpy((char *)opts + o->off, &t, sizeof(t));
		return (o->flags & RUMA_OPT_STOP) ? fail(e, RUMA_OPT_STOPPED, 0) : 0;
	}
	if (eq) {
		e->value = eq + 1;
	} else if (o->flags & RUMA_OPT_BARE) {
		e->value = ruma_opt_bare;
	} else if (*i + 1 < argc) {
		e->value = argv[++*i];
	} else {
		return fail(e, RUMA_OPT_MISSING, 0);
	}
	return store(o, e->value, opts, e);
}

int ruma_opt_parse(const ruma_opt *table, size_t n, int argc, char **argv, int first,
		   void *opts, const char **pos, int maxpos, int *npos, ruma_opt_error *e)
{
	memset(e, 0, sizeof(*e));
	if (npos)
		*npos = 0;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i];
		const ruma_opt *o = ruma_opt_find(table, n, a);

		e->arg = a;
		e->index = i;
		if (o && (o->kind != RUMA_OPT_FLAG || !strchr(a, '='))) {
			if (take_option(o, argc, argv, &i, opts, e))
				return RUMA_EPARSE;
			continue;
		}
		if (a[0] == '-' && a[1] == '-')
			return fail(e, RUMA_OPT_UNKNOWN, 0);
		if (!npos || *npos >= maxpos)
			return fail(e, RUMA_OPT_TOOMANY, 0);
		pos[(*npos)++] = a;
	}
	memset(e, 0, sizeof(*e));
	return 0;
}

const char *ruma_opt_getenv(char *const *envp, const char *name)
{
	size_t l = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, l) && (*envp)[l] == '=')
			return *envp + l + 1;
	return NULL;
}

uint64_t ruma_opt_env_seed(char *const *envp)
{
	const char *v = ruma_opt_getenv(envp, "RUMA_SEED");
	uint64_t seed;

	if (v && ruma_parse_u64(v, &seed) == 0)
		return seed;
	return ruma_seed_default();
}

int ruma_opt_outcome(int rc, const char *err, bool usage_after, bool help,
		     void (*usage)(FILE *f))
{
	if (rc) {
		fputs(err, stderr);
		if (usage_after)
			usage(stderr);
		return 2;
	}
	if (help) {
		usage(stdout);
		return 0;
	}
	return -1;
}

int ruma_opt_report(const char *cmd, const ruma_opt_error *e, const char *func_err,
		    const char *too_many, bool name_extra)
{
	const char *name = e->opt ? e->opt->name : e->arg;

	switch (e->status) {
	case RUMA_OPT_MISSING:
		fprintf(stderr, "%s: %s needs a value (see --help)\n", cmd, name);
		break;
	case RUMA_OPT_BADVALUE:
	case RUMA_OPT_RANGE:
		if (e->opt && e->opt->kind == RUMA_OPT_FUNC)
			fprintf(stderr, "%s: %s\n", cmd, func_err ? func_err : "");
		else
			fprintf(stderr, "%s: %s: %s\n", cmd, name,
				e->opt && e->opt->help ? e->opt->help : "bad value");
		break;
	case RUMA_OPT_TOOMANY:
		fprintf(stderr, "%s: %s", cmd, too_many);
		if (name_extra)
			fprintf(stderr, " (got '%s')", e->arg);
		fputc('\n', stderr);
		break;
	default:
		fprintf(stderr, "%s: unknown option '%s' (see --help)\n", cmd, e->arg);
		break;
	}
	return 2;
}

int ruma_opt_enum(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

const char *ruma_opt_enum_list(const char *const *names, size_t n, char *buf, size_t len)
{
	size_t at = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
		int k = snprintf(buf + at, len - at, "%s%s", sep, names[i]);
		if (k < 0)
			break;
		at += (size_t)k;
	}
	return buf;
}

int ruma_opt_vsay(const char *cmd, char *err, size_t len, const char *fmt, va_list ap)
{
	char what[400];
	vsnprintf(what, sizeof(what), fmt, ap);
	snprintf(err, len, "ruma %s: %s\n", cmd, what);
	return RUMA_EPARSE;
}

int ruma_opt_say(const char *cmd, char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ruma_opt_vsay(cmd, err, len, fmt, ap);
	va_end(ap);
	return RUMA_EPARSE;
}

int ruma_opt_explain(const char *cmd, const ruma_opt_error *e, char *err, size_t len)
{
	switch (e->status) {
	case RUMA_OPT_UNKNOWN:
		return ruma_opt_say(cmd, err, len, "unknown option '%s' (see --help)", e->arg);
	case RUMA_OPT_TOOMANY:
		return ruma_opt_say(cmd, err, len, "unexpected argument '%s' (see --help)", e->arg);
	case RUMA_OPT_MISSING:
		return ruma_opt_say(cmd, err, len, "%s needs a value", e->arg);
	case RUMA_OPT_RANGE:
		return ruma_opt_say(cmd, err, len, "%s %s: out of range: expected %s", e->opt->name,
			   e->value, e->opt->help);
	default:
		return ruma_opt_say(cmd, err, len, "%s '%s': expected %s%s", e->opt->name,
			   e->value ? e->value : "", e->opt->help,
			   e->rc == -ERANGE ? " (too large)" : "");
	}
}

int ruma_opt_parse_driver(const char *cmd, const ruma_opt *table, size_t n, int argc, char **argv,
			  void *opts, bool *help, char *err, size_t len)
{
	ruma_opt_error e;
	if (len)
		err[0] = '\0';
	*help = false;
	if (!ruma_opt_parse(table, n, argc, argv, 1, opts, NULL, 0, NULL, &e))
		return 0;
	if (e.status != RUMA_OPT_STOPPED)
		return ruma_opt_explain(cmd, &e, err, len);
	*help = true;
	return 0;
}
