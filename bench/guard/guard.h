/*
 * guard.h — the workloads of the instruction-count guard (`ruma guard`,
 * docs/guard.md): small, deterministic runs of the hot paths — a B-tree
 * lookup through the buffer manager, a TPC-C transaction without and with a
 * log, a point read and a cursor walk through the store's API (db.h), ART
 * u64 lookup and insert, the rewired vector's push — each a fixed
 * number of operations after a warm-up, from fixed seeds.  Run natively
 * they only do the work; under `valgrind --tool=callgrind
 * --collect-atstart=no --instr-atstart=no` (scripts/icount_guard.py) each
 * case's measured operations, and nothing else, are counted, on the thread
 * that runs them only, and dumped as one profile per case.
 */
#ifndef RUMA_BENCH_GUARD_H
#define RUMA_BENCH_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One case: setup makes the state (not measured), run does `ops` operations
 * on it (called for the warm-up, then for the measured operations), teardown
 * frees it.  setup and run return 0 or a negative error. */
typedef struct ruma_guard_case {
	const char *name;
	const char *what;   /* one line for --list */
	uint64_t warmup;    /* operations run before the measured ones */
	uint64_t ops;       /* measured operations */
	int (*setup)(const char *dir, void **state);
	int (*run)(void *state, uint64_t ops);
	void (*teardown)(void *state);
} ruma_guard_case;

/* The store's cases (guard_db.c): setup loads a store, the runs use it
 * through db.h, each operation in its own transaction (db_get: a point
 * read; db_scan: a cursor walk; db_update_si: an overwrite while a
 * snapshot is open). */
int ruma_guard_db_setup(const char *dir, void **state);
int ruma_guard_db_get(void *state, uint64_t ops);
int ruma_guard_db_scan(void *state, uint64_t ops);
int ruma_guard_db_update_si(void *state, uint64_t ops);
void ruma_guard_db_teardown(void *state);

/* The cases, in the order they run (guard_cases.c); n in *count. */
const ruma_guard_case *ruma_guard_cases(size_t *count);

typedef struct ruma_guard_opts {
	const char *only;  /* --case NAME[,NAME...]: run only these (NULL = all) */
	const char *dir;   /* --dir DIR: where the stores and logs go ($TMPDIR or /tmp) */
	bool list;         /* --list: print the cases, run nothing */
	bool help;         /* --help */
} ruma_guard_opts;

/*
 * ruma_guard_parse — `ruma guard [options]` (argv[0] the command) into *o.
 * Returns 0, or RUMA_EPARSE with the message for stderr in err.
 */
int ruma_guard_parse(int argc, char **argv, ruma_guard_opts *o, char *err, size_t errlen);

/*
 * ruma_guard_run — run the selected cases; for each prints one line
 * "case NAME ops N" on stdout when its measured operations are done.  Under
 * callgrind each case's measured operations are one dump named
 * "guard NAME ops=N".  Returns the exit status: 0, 1 (a case failed, with
 * the error on stderr) or 2 (an unknown case name).
 */
int ruma_guard_run(const ruma_guard_opts *o);

#endif
