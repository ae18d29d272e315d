/*
 * sweep.h — what `ruma sweep` needs to know about a driver, kept next to the
 * driver (bench/<x>/sweep_<x>.c): the system's name, the parameter keys a
 * grid may use, the keys it requires, how one run's parameters become the
 * driver's arguments (the sweep adds "--result FILE"), how the driver's
 * result rows (common/result.h) become the run's metrics and notes, and how
 * a peer program (an external system measured in the same rounds) is run
 * and read.  The adapters see the run's parameters when they read, so a
 * metric's name can leave out what the grid already varies.  The experiment
 * layer (tools/exp) holds the table of adapters; it runs the child, reads
 * the rows and stores the metrics.  A tooling API, not part of libruma.
 */
#ifndef RUMA_BENCH_SWEEP_H
#define RUMA_BENCH_SWEEP_H

#include "bench/common/result.h"

#include <stdbool.h>
#include <stddef.h>

/* One run as an adapter sees it. */
typedef struct ruma_sweep_run {
	/* the value of a run parameter (variable, size or fixed setting), NULL if absent */
	const char *(*param)(const struct ruma_sweep_run *run, const char *name);
	/* append one argument to the child's argv */
	void (*push)(const struct ruma_sweep_run *run, const char *arg);
	/* set one variable of a peer's environment (copied; peer_env only) */
	void (*env)(const struct ruma_sweep_run *run, const char *name, const char *value);
	/* record one metric of the run */
	void (*metric)(const struct ruma_sweep_run *run, const char *name, const char *unit,
		       double value);
	/* append a text to the run's note (a result file's note rows; NULL = none kept) */
	void (*note)(const struct ruma_sweep_run *run, const char *text);
	const char *seed; /* the run's seed, as text */
	const char *store; /* a scratch file of the sweep the run may use (vmcache's store) */
	void *ctx;        /* the experiment layer's state */
} ruma_sweep_run;

typedef struct ruma_sweep_adapter {
	const char *system;      /* "art": the grid's system=, and the subcommand */
	const char *keys;        /* the parameter names the system accepts, comma separated */
	const char *required[4]; /* keys a grid must give (NULL-terminated) */
	/* push the subcommand and its arguments (without --result) */
	void (*argv)(const ruma_sweep_run *run);
	/* parse the arguments argv pushed (argv[0] is the subcommand) with the
	 * driver's own parser, running nothing: 0, or nonzero with the driver's
	 * message in err.  The sweep checks every run of a grid before the first. */
	int (*check)(int argc, char **argv, char *const *envp, char *err, size_t len);
	/* turn the child's result rows into metrics (run->metric) */
	void (*rows)(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n);
	/* peers (external programs, the grid's impl=NAME): push a peer's arguments
	 * after its path; NULL = the system takes no peers */
	void (*peer_argv)(const ruma_sweep_run *run);
	/* set a peer's environment variables (run->env) beyond RUMA_SEED; NULL = none */
	void (*peer_env)(const ruma_sweep_run *run);
	/* a peer's stdout into metrics; NULL = every line NAME,N,VALUE is metric
	 * NAME in Mops (what Leis's ART.cpp prints) */
	void (*peer_out)(const ruma_sweep_run *run, const char *out);
} ruma_sweep_adapter;

/* The adapters of the drivers (bench/<x>/sweep_<x>.c). */
extern const ruma_sweep_adapter ruma_sweep_vmcache;
extern const ruma_sweep_adapter ruma_sweep_art;
extern const ruma_sweep_adapter ruma_sweep_micro;
extern const ruma_sweep_adapter ruma_sweep_rewire;
extern const ruma_sweep_adapter ruma_sweep_rwbench;
extern const ruma_sweep_adapter ruma_sweep_kv;
extern const ruma_sweep_adapter ruma_sweep_blob;

/* Name the metric a row counts towards (into buf); false = the row is skipped. */
typedef bool (*ruma_sweep_name_fn)(const ruma_result_row *row, char *buf, size_t len);

/*
 * ruma_sweep_means — the rows grouped by name_of, in the order the names
 * first appear: per name the sum of its values divided by divisor (0: by
 * the number of its rows), reported with the unit of its first row when
 * positive, or always when keep_zero.  total (not NULL) gets the sum of all
 * these means.  Returns the number of names, 0 when no row counted.
 */
size_t ruma_sweep_means(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n,
			ruma_sweep_name_fn name_of, double divisor, bool keep_zero, double *total);

/*
 * ruma_sweep_mean_of — metric `metric`: the sum of the rows of that name
 * divided by divisor (0: by their number), with the first one's unit.
 * Returns false (nothing reported) when no row has that name.
 */
bool ruma_sweep_mean_of(const ruma_sweep_run *run, const ruma_result_row *rows, size_t n,
			const char *metric, double divisor);

/*
 * ruma_sweep_push_opt — when the run has parameter key, push flag and its value.
 * ruma_sweep_push_flag — when parameter key is true (ruma_parse_bool), push flag.
 */
void ruma_sweep_push_opt(const ruma_sweep_run *run, const char *flag, const char *key);
void ruma_sweep_push_flag(const ruma_sweep_run *run, const char *flag, const char *key);

#endif
