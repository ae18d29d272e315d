/*
 * exp.h — experiments as data: the grid of a sweep (variants x sizes x
 * repetitions of one benchmark system), running one measurement as a child
 * process of the own binary, the tidy CSV every measurement lands in, and the
 * statistics and charts built from that CSV.  Used by `ruma sweep`,
 * `ruma compare`, `ruma plot` and `ruma demo` (tools/cmd_*.c); the format and
 * the statistics are described in docs/experiments.md.
 *
 * Functions return 0 or a negative errno / RUMA_E* code; those that take an
 * `err` buffer write a one-line reason there for the user.
 */
#ifndef RUMA_TOOLS_EXP_H
#define RUMA_TOOLS_EXP_H

#include "bench/common/sweep.h"

#include <ruma/core.h>
#include "core/core_ext.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RUMA_EXP_MAX_VARS 6
#define RUMA_EXP_MAX_VALUES 16
#define RUMA_EXP_MAX_SETS 16
#define RUMA_EXP_STR 96
#define RUMA_EXP_MAX_METRICS 40
#define RUMA_EXP_NOTE 320
#define RUMA_EXP_ERR 256
#define RUMA_EXP_MAX_PEERS 8
#define RUMA_EXP_PATH 512

/* ---- systems ------------------------------------------------------------ */

enum ruma_exp_system {
	RUMA_EXP_VMCACHE,
	RUMA_EXP_ART,
	RUMA_EXP_MICRO,
	RUMA_EXP_REWIRE,
	RUMA_EXP_RWBENCH,
	RUMA_EXP_KV,
	RUMA_EXP_BLOB,
	RUMA_EXP_NSYSTEMS
};

/* ruma_exp_system_name — "vmcache", "art", "micro", "rewire", "rwbench", "kv"
 * or "blob". */
const char *ruma_exp_system_name(int system);

/* ruma_exp_system_find — system index for a name, or -1. */
int ruma_exp_system_find(const char *name);
/* ruma_exp_system_list — the systems' names for a message ("vmcache, art,
 * ... or kv") into buf; returns buf. */
const char *ruma_exp_system_list(char *buf, size_t len);

/* ruma_exp_system_keys — the parameter names a system accepts, comma separated. */
const char *ruma_exp_system_keys(int system);

/* ruma_exp_system_required — the keys a grid of the system must give (NULL-terminated). */
const char *const *ruma_exp_system_required(int system);

/* ruma_exp_system_adapter — the driver's sweep adapter (its children write
 * --result rows), or NULL for a system whose stdout is parsed (vmcache). */
const ruma_sweep_adapter *ruma_exp_system_adapter(int system);

/* ---- grid --------------------------------------------------------------- */

struct ruma_exp_var {
	char name[RUMA_EXP_STR];
	char values[RUMA_EXP_MAX_VALUES][RUMA_EXP_STR];
	size_t n;
};

struct ruma_exp_set {
	char key[RUMA_EXP_STR];
	char value[RUMA_EXP_STR];
};

/* An external program measured beside ruma: `impl=NAME` runs PATH with the
 * arguments the system's adapter gives peers (art: `PATH <n> <mode>`). */
struct ruma_exp_peer {
	char name[RUMA_EXP_STR];
	char path[RUMA_EXP_PATH];
};

typedef struct ruma_exp_grid {
	int system; /* -1 until set */
	struct ruma_exp_var vars[RUMA_EXP_MAX_VARS];
	size_t nvars;
	char size_name[RUMA_EXP_STR];
	char sizes[RUMA_EXP_MAX_VALUES][RUMA_EXP_STR]; /* normalised numbers */
	size_t nsizes;
	struct ruma_exp_set sets[RUMA_EXP_MAX_SETS];
	size_t nsets;
	struct ruma_exp_peer peers[RUMA_EXP_MAX_PEERS];
	size_t npeers;
	long reps, warmup;
	uint64_t seed;
	int roundrobin;  /* 1: rotate the variant order per round instead of shuffling */
	double timeout;  /* seconds per run before the child is killed */
} ruma_exp_grid;

/* ruma_exp_grid_init — empty grid: no system, reps 5, warm-up 1, seed 42. */
void ruma_exp_grid_init(ruma_exp_grid *g);

/*
 * ruma_exp_grid_add — one grid item, as from the command line or a grid file:
 * what is "system", "var", "size", "set", "peer", "reps", "warmup", "seed",
 * "order" or "timeout"; arg its value ("wait=spin,futex" for var/size/set,
 * "leis=/path/to/ART" for peer).
 * Returns 0 or RUMA_EPARSE / -EINVAL with the reason in err.
 */
int ruma_exp_grid_add(ruma_exp_grid *g, const char *what, const char *arg, char *err,
		      size_t errlen);

/*
 * ruma_exp_grid_load — read a grid file: lines "system=art", "var.alloc=libc,huge",
 * "size.n=1e5,1e6", "set.mode=1", "peer.leis=/path/ART", "reps=5", "warmup=1", "seed=7",
 * "order=shuffle|roundrobin", "timeout=600"; '#' starts a comment.
 * Returns 0, -errno when the file cannot be read, or a parse error (err names the line).
 */
int ruma_exp_grid_load(ruma_exp_grid *g, const char *path, char *err, size_t errlen);

/*
 * ruma_exp_grid_check — the grid is complete and every name is known to the
 * system, every impl value is "ruma" or a declared peer whose program can be
 * executed; fills in defaults the system needs.  Returns 0 or -EINVAL (err says why).
 */
int ruma_exp_grid_check(ruma_exp_grid *g, char *err, size_t errlen);

/*
 * ruma_exp_next_comma — the first ',' of p outside parentheses, or NULL: lists
 * and "k=v,k=v" variant names are split there, so a value such as the micro
 * method "10(64,0)" stays whole.
 */
const char *ruma_exp_next_comma(const char *p);

/* ruma_exp_grid_variants — number of variants (product of the var list lengths). */
size_t ruma_exp_grid_variants(const ruma_exp_grid *g);

/* ruma_exp_grid_variant_name — "k=v,k=v" of variant i (or "default" with no vars). */
void ruma_exp_grid_variant_name(const ruma_exp_grid *g, size_t i, char *buf, size_t len);

/* ruma_exp_variant_value — value of variable k in variant i. */
const char *ruma_exp_variant_value(const ruma_exp_grid *g, size_t variant, size_t k);

/*
 * ruma_exp_grid_peer — the peer a run measures: the value of its "impl"
 * parameter when that names a declared peer, else NULL (the run measures
 * ruma's own subcommand).
 */
const struct ruma_exp_peer *ruma_exp_grid_peer(const ruma_exp_grid *g, size_t variant);

/* one planned measurement */
struct ruma_exp_run {
	size_t variant, size;
	long rep;    /* 1.. within warm-up runs or within measured runs */
	int warmup;  /* 1 for a discarded warm-up run */
	uint64_t seed;
};

/*
 * ruma_exp_plan — all runs in execution order: rounds (warm-ups first), in each
 * round every size, in each size every variant in a seeded shuffled (or
 * rotated) order.  *runs is malloc'ed (caller frees).  Returns 0 or -ENOMEM.
 */
int ruma_exp_plan(const ruma_exp_grid *g, struct ruma_exp_run **runs, size_t *n);

/*
 * ruma_exp_run_param — the value of parameter name in a run: its variable's
 * value in the run's variant, the run's size, or a fixed setting; NULL when
 * the grid does not give it.
 */
const char *ruma_exp_run_param(const ruma_exp_grid *g, const struct ruma_exp_run *run,
			       const char *name);

/* ---- one measurement ---------------------------------------------------- */

struct ruma_exp_metric {
	char name[48];
	char unit[8]; /* "tx/s", "MiB/s", "Mops", "s", "ns/op", "B/B", "bytes", "faults" */
	double value;
};

struct ruma_exp_result {
	int ok;
	char status[48]; /* "ok", "exit=N", "signal=N", "timeout", "no-output", "interrupted" */
	struct ruma_exp_metric m[RUMA_EXP_MAX_METRICS];
	size_t nm;
	char note[RUMA_EXP_NOTE]; /* allocator source, stderr tail of a failure */
	double seconds;           /* wall time of the child */
};

/*
 * ruma_exp_measure — run one measurement: build the child's arguments from the
 * grid and the run, fork/exec /proc/self/exe, capture its stdout and stderr,
 * parse the output into metrics.  A failing child is a failed result, not an
 * error.  store is the vmcache store file used when the grid sets no block.
 * Returns 0 (see res->ok) or -errno when the child cannot be started.
 */
int ruma_exp_measure(const ruma_exp_grid *g, const struct ruma_exp_run *run, const char *store,
		     struct ruma_exp_result *res);

/*
 * ruma_exp_check_run — the arguments ruma_exp_measure would give the run's
 * child, parsed by the driver's own parser (the adapter's check) with this
 * process's environment; nothing runs.  A peer's run is not checked.
 * Returns 0, or RUMA_EPARSE with the driver's message (one line) in err.
 */
int ruma_exp_check_run(const ruma_exp_grid *g, const struct ruma_exp_run *run, const char *store,
		       char *err, size_t len);

/*
 * ruma_exp_read_rows — the metrics of a child's result rows, through its
 * system's adapter, into res; the note rows the adapter keeps (art: where
 * the huge-page allocator got its pages) become res->note, "; "-joined.
 * Sets res->ok (some metric read) and res->status ("ok" or "no-output").
 * Exposed for tests.
 */
void ruma_exp_read_rows(int system, const ruma_result_row *rows, size_t n,
			struct ruma_exp_result *res);

/* ruma_exp_read_rows_of — the same for a run of grid g: the adapter sees the
 * run's parameters (ruma_exp_read_rows: none). */
void ruma_exp_read_rows_of(const ruma_exp_grid *g, const struct ruma_exp_run *run,
			   const ruma_result_row *rows, size_t n, struct ruma_exp_result *res);

/* ruma_exp_read_peer_out — a peer's stdout into res through its system's
 * adapter (peer_out); sets res->ok and res->status as ruma_exp_read_rows. */
void ruma_exp_read_peer_out(const ruma_exp_grid *g, const struct ruma_exp_run *run,
			    const char *out, struct ruma_exp_result *res);

/* ruma_exp_add_metric — append a metric to res (ignored when not finite or full). */
void ruma_exp_add_metric(struct ruma_exp_result *res, const char *name, const char *unit,
			 double value);

/*
 * ruma_exp_parse_metric_lines — the generic output of a peer: every stdout
 * line "NAME,N,VALUE" (NAME a word of letters, digits, '_' or '-'; N and
 * VALUE numbers) becomes metric NAME with the given unit; other lines are
 * ignored.  Sets res->ok as ruma_exp_read_rows.  Exposed for tests.
 */
void ruma_exp_parse_metric_lines(const char *out, const char *unit, struct ruma_exp_result *res);

/* a finished child process */
struct ruma_exp_exec {
	int status;      /* waitpid status */
	int timed_out;   /* killed after the timeout */
	int interrupted; /* killed by an interrupt of the parent */
	double seconds;
	char *out, *err; /* malloc'ed, NUL-terminated (err: its last MiB) */
};

/*
 * ruma_exp_exec — run file with argv in its own process group (in cwd when not
 * NULL, with the "NAME=VALUE" settings of env, a NULL-terminated list, added
 * to its environment when env is not NULL), collect stdout and stderr, kill
 * it after timeout seconds or on an interrupt.  Returns 0 (x filled; free
 * x->out and x->err) or -errno when it could not be started.
 */
int ruma_exp_exec(const char *file, char *const argv[], const char *cwd, const char *const *env,
		  double timeout, struct ruma_exp_exec *x);

/* ruma_exp_exec_status — "ok", "exit=N", "signal=N", "timeout" or "interrupted". */
void ruma_exp_exec_status(const struct ruma_exp_exec *x, char *buf, size_t len);

/* Interrupt handling: SIGINT/SIGTERM set the flag and kill the running child. */
void ruma_exp_signals_install(void);
int ruma_exp_interrupted(void);

/* ---- sweep -------------------------------------------------------------- */

struct ruma_exp_sweep_opts {
	const char *out;    /* CSV path */
	int resume;         /* skip measurements already in out */
	int force;          /* overwrite an existing out without --resume */
	int quiet;          /* no progress output */
};

/*
 * ruma_exp_sweep — run the grid, append rows to opts->out after every run
 * (header first when the file is new or not resumed).  Returns 0 when all runs
 * were done (some may have failed: *failed counts them), -EINTR after an
 * interrupt, -EINVAL for a CSV that does not match the grid on resume,
 * -EEXIST when out exists without resume/force (err says why), -errno for
 * I/O errors.
 */
int ruma_exp_sweep(const ruma_exp_grid *g, const struct ruma_exp_sweep_opts *opts,
		   size_t *failed, char *err, size_t errlen);

/* ---- reading a sweep CSV ------------------------------------------------ */

struct ruma_exp_row {
	char system[16];
	char variant[RUMA_EXP_STR * 2];
	char size_param[RUMA_EXP_STR];
	double size;
	long rep;
	int warmup;
	char metric[48];
	char unit[8];
	double value;
	int ok;
	char status[48];
	char note[RUMA_EXP_NOTE];
	int line; /* line number in the CSV (1 = header) */
};

typedef struct ruma_exp_table {
	struct ruma_exp_row *rows;
	size_t n, cap;
	/* the settings every row shares: each parameter column (not a fixed
	 * column) whose value is the same in all rows, "name=value" joined by
	 * " " ("workload=rndread threads=2"), for chart titles */
	char context[512];
} ruma_exp_table;

/*
 * ruma_exp_table_read — load a sweep CSV.  Returns 0, -errno when it cannot be
 * opened, RUMA_EPARSE when it is not a sweep CSV (err names the line), and
 * RUMA_EPARSE when two rows measure the same thing — same system, variant,
 * size, repetition, warm-up flag and metric — since counting both would make
 * one repetition look like two (err names both lines; a CSV concatenated from
 * two sweeps with the same repetition numbers is the usual cause), and
 * RUMA_EPARSE when a measured row (status ok) holds NaN, an infinity or a
 * negative value (err names the line and the metric).
 * Free with ruma_exp_table_free.
 */
int ruma_exp_table_read(const char *path, ruma_exp_table *t, char *err, size_t errlen);
void ruma_exp_table_free(ruma_exp_table *t);

/*
 * ruma_exp_csv_split — split one CSV line in place into at most max fields
 * (quotes removed, "" unescaped).  Returns the number of fields.
 */
size_t ruma_exp_csv_split(char *line, char **fields, size_t max);

/* ---- statistics --------------------------------------------------------- */

enum ruma_exp_better { RUMA_EXP_HIGHER, RUMA_EXP_LOWER, RUMA_EXP_NEUTRAL };

/* ruma_exp_unit_better — tx/s and Mops: higher; s, ns/op, B/B (bytes per data
 * byte), bytes and faults: lower; MiB/s: neutral (volume). */
int ruma_exp_unit_better(const char *unit);

struct ruma_exp_cmp {
	char variant[RUMA_EXP_STR * 2], baseline[RUMA_EXP_STR * 2];
	char metric[48], unit[8];
	char size_param[RUMA_EXP_STR];
	double size;     /* NAN for the overall row */
	int overall;
	ruma_summary v, b;            /* variant and baseline over reps (per-size rows) */
	double ratio, lo, hi;         /* ratio of medians (overall: geometric mean) + 95% CI */
	double rep_min, rep_max;      /* min-max of per-rep ratios (same rep), NAN if none */
	const char *verdict;
};

typedef struct ruma_exp_cmp_list {
	struct ruma_exp_cmp *c;
	size_t n, cap;
} ruma_exp_cmp_list;

/*
 * ruma_exp_compare — every variant against its baseline partner: the variant
 * with the VAR=VALUE pairs of `baseline` ("wait=spin" or "a=1,b=2") put in.
 * Per size the ratio of medians with a bootstrap 95% interval (resamples,
 * seeded); overall the geometric mean of the per-size ratios with its
 * bootstrap interval.  metric NULL = all metrics.  Warm-up and failed rows are
 * ignored.  Returns 0, -EINVAL (err says why: unknown variable, no baseline
 * rows, no such metric) or -ENOMEM.
 */
int ruma_exp_compare(const ruma_exp_table *t, const char *baseline, const char *metric,
		     unsigned resamples, uint64_t seed, ruma_exp_cmp_list *out, char *err,
		     size_t errlen);
void ruma_exp_cmp_free(ruma_exp_cmp_list *l);

/*
 * ruma_exp_partner — the baseline partner of a variant ("k=v,..."): the
 * variant with baseline's k=v pairs put in.  out is "" when variant is not of
 * the k=v form.
 */
void ruma_exp_partner(const char *variant, const char *baseline, char *out, size_t len);

/*
 * ruma_exp_check_baseline — does `baseline` ("k=v[,k=v]") name variables of
 * the table's variants and values that have measured rows?  Returns 0,
 * -EINVAL (err says which part is wrong) or -ENOMEM.
 */
int ruma_exp_check_baseline(const ruma_exp_table *t, const char *baseline, char *err,
			    size_t errlen);

/* ruma_exp_default_baseline — "k=v,..." of the first variant in the table. */
void ruma_exp_default_baseline(const ruma_exp_table *t, char *buf, size_t len);

/* ruma_exp_cmp_print — the readable table (one block per metric). */
void ruma_exp_cmp_print(const ruma_exp_cmp_list *l, FILE *f);

/* ruma_exp_cmp_csv — one CSV row per comparison (size rows and overall rows). */
void ruma_exp_cmp_csv(const ruma_exp_cmp_list *l, FILE *f);

/* ---- charts ------------------------------------------------------------- */

/*
 * ruma_exp_plot — write gnuplot data and a script into dir and run gnuplot:
 * dir/all/<metric>.png (all variants, median with min-max error bars, vs size)
 * and dir/ratio/<metric>.png (each variant / its baseline partner with the 95%
 * bootstrap interval, as ruma_exp_compare with 2000 resamples and seed 1).
 * A metric whose medians are all zero gets no chart: its name goes into zero
 * (comma-separated; "" when none).  metric: a metric or a comma-separated
 * list of them, NULL = all.  *npng gets the number
 * of charts written.  Returns 0, RUMA_EUNSUPP when gnuplot is not installed,
 * -EIO when gnuplot failed (err has its message), -errno otherwise.
 */
int ruma_exp_plot(const ruma_exp_table *t, const char *dir, const char *baseline,
		  const char *metric, size_t *npng, char *zero, size_t zlen, char *err,
		  size_t errlen);

/* ruma_exp_gnuplot_path — path of gnuplot found in $PATH, or NULL. */
const char *ruma_exp_gnuplot_path(void);

/* ruma_exp_mkdirs — mkdir -p.  Returns 0 or -errno. */
int ruma_exp_mkdirs(const char *path);

/* ruma_exp_fmt_num — shortest readable form of a size value ("100000", "0.25"). */
void ruma_exp_fmt_num(double v, char *buf, size_t len);

/* ---- labels (label.c) ------------------------------------------------------ */

/*
 * ruma_exp_variant_label — a variant's readable name: each "key=value" of it
 * through a table of known values ("method=22" -> "rewired vector",
 * "alloc=huge" -> "huge-page allocator", other micro methods by their
 * name), unknown pairs as written, joined by ", ".
 */
void ruma_exp_variant_label(const char *variant, char *buf, size_t len);

/* ruma_exp_size_label — an x axis label: what size_param counts in system,
 * with its unit ("buffer pool (PHYSGB), GiB"); the name itself if unknown. */
void ruma_exp_size_label(const char *system, const char *size_param, char *buf, size_t len);

/* ruma_exp_metric_label — a y axis label: what the metric is and its unit
 * in words ("throughput (tx), transactions per second (tx/s)"). */
void ruma_exp_metric_label(const char *metric, const char *unit, char *buf, size_t len);

/* ruma_exp_fmt_value — a measured value in a fixed short form: seconds as
 * "12.3 ms" / "1.25 s" / "840 us", anything else with three significant
 * digits and a k/M/G suffix ("38.9k", "1.23M", "7.41"); "-" if not finite. */
void ruma_exp_fmt_value(double v, const char *unit, char *buf, size_t len);

/* ruma_exp_fmt_summary — "median [min - max] n=N" in that form:
 * "38.9k [34.2k - 42.5k] n=5", "2.51 ms [1.94 ms - 10.1 ms] n=5". */
void ruma_exp_fmt_summary(const ruma_summary *s, const char *unit, char *buf, size_t len);

#endif
