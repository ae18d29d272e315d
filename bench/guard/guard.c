/*
 * guard.c — the driver of `ruma guard` (guard.h): option parsing and the
 * measurement of each case.
 *
 * A case is set up, warmed up and measured in this order:
 *
 *     setup                     (instrumentation off: runs fast under callgrind)
 *     START_INSTRUMENTATION
 *     run(warmup)               (instrumented, not counted)
 *     ZERO_STATS, TOGGLE_COLLECT
 *     run(ops)                  (counted, on this thread only)
 *     TOGGLE_COLLECT, DUMP_STATS_AT("guard NAME ops=N")
 *     STOP_INSTRUMENTATION, teardown
 *
 * callgrind's collection state is per thread and starts off
 * (--collect-atstart=no), so the background threads of the buffer manager
 * and the log are never counted.  Built without <valgrind/callgrind.h> the
 * requests are empty and the guard only runs the work (scripts/icount_guard.py
 * then finds no profiles and says so).
 *
 * Syscalls: none of its own.
 */
#include "bench/guard/guard.h"

#include <ruma/core.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define GUARD_HAVE_CALLGRIND 1
#endif
#endif
#ifndef GUARD_HAVE_CALLGRIND
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#endif

int ruma_guard_parse(int argc, char **argv, ruma_guard_opts *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_value = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			o->help = true;
		} else if (!strcmp(a, "--list")) {
			o->list = true;
		} else if (!strcmp(a, "--case") && has_value) {
			o->only = argv[++i];
		} else if (!strcmp(a, "--dir") && has_value) {
			o->dir = argv[++i];
		} else {
			bool takes_value = !strcmp(a, "--case") || !strcmp(a, "--dir");
			snprintf(err, errlen, "ruma guard: %s '%s' (see --help)\n",
				 takes_value ? "missing value after" : "unknown argument", a);
			return RUMA_EPARSE;
		}
	}
	return 0;
}

/* Whether name is one of the comma-separated names of list (NULL = all). */
static bool selected(const char *list, const char *name)
{
	size_t n = strlen(name);
	if (!list)
		return true;
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		p += len + (end ? 1 : 0);
	}
	return false;
}

/* Every name of list names a case: 0, or 2 with a message. */
static int check_names(const char *list, const ruma_guard_case *cs, size_t n)
{
	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = strlen(cs[i].name) == len && !strncmp(p, cs[i].name, len);
		if (!found) {
			fprintf(stderr, "ruma guard: no case '%.*s' (see --list)\n", (int)len, p);
			return 2;
		}
		p += len + (end ? 1 : 0);
	}
	return 0;
}

static int measure(const ruma_guard_case *c, const char *dir)
{
	char label[128];
	void *state = NULL;
	int r = c->setup(dir, &state);

	if (r) {
		fprintf(stderr, "ruma guard: %s: setup failed: %s\n", c->name, ruma_strerror(r));
		return r;
	}
	snprintf(label, sizeof(label), "guard %s ops=%" PRIu64, c->name, c->ops);
	CALLGRIND_START_INSTRUMENTATION;
	r = c->run(state, c->warmup);
	if (!r) {
		CALLGRIND_ZERO_STATS;
		CALLGRIND_TOGGLE_COLLECT;
		r = c->run(state, c->ops);
		CALLGRIND_TOGGLE_COLLECT;
		CALLGRIND_DUMP_STATS_AT(label);
	}
	CALLGRIND_STOP_INSTRUMENTATION;
	c->teardown(state);
	if (r)
		fprintf(stderr, "ruma guard: %s: %s\n", c->name, ruma_strerror(r));
	else
		printf("case %s ops %" PRIu64 "\n", c->name, c->ops);
	fflush(stdout);
	return r;
}

int ruma_guard_run(const ruma_guard_opts *o)
{
	size_t n;
	const ruma_guard_case *cs = ruma_guard_cases(&n);
	const char *dir = o->dir;
	int status = check_names(o->only, cs, n);

	if (status)
		return status;
	if (o->list) {
		for (size_t i = 0; i < n; i++)
			printf("%-16s %s\n", cs[i].name, cs[i].what);
		return 0;
	}
	if (!dir && (!(dir = getenv("TMPDIR")) || !*dir))
		dir = "/tmp";
	for (size_t i = 0; i < n; i++)
		if (selected(o->only, cs[i].name) && measure(&cs[i], dir))
			status = 1;
	return status;
}
