/*
 * rwbench.h — benchmarks of the data structures built on rewiring, behind
 * `ruma rwbench <vector|access|partition|pool>`:
 *
 *   vector     push throughput and peak memory of the rewired vector against
 *              the copying (std::vector), mremap, glibc realloc and software
 *              indirection vectors, 2^min_log .. 2^max_log 8-byte elements.
 *              Every measurement runs in a forked child, so the child's peak
 *              RSS (getrusage ru_maxrss) is the peak of that variant alone.
 *   access     sequential and random reads and writes over n 8-byte words of
 *              rewired memory (sequentially wired, randomly wired one mapping
 *              per page), mmap'ed, malloc'ed and indirect (directory) memory;
 *              all memory is touched before timing; ratios against malloc.
 *   partition  the partitioning methods over n random keys and each P.
 *   pool       the three allocation pools: allocate, first touch, read, free.
 *   snapshot   memcpy, kernel COW, rewired COW and shuffled snapshots of an
 *              n-byte memfd array: create, write one word per page, read,
 *              destroy.
 *
 * Method (the repetition engine, common/rep.h): reps measured repetitions
 * after one warm-up repetition that is discarded; within a repetition every
 * variant runs once per parameter, in an order rotated from repetition to
 * repetition.  CSV (one row per
 * measurement) goes to `csv`, the summary (median, min, max; ratio to the
 * baseline variant as the median of per-repetition ratios) to stderr.
 */
#ifndef RUMA_BENCH_RWBENCH_H
#define RUMA_BENCH_RWBENCH_H

#include "bench/common/rep.h"
#include "bench/common/result.h"

#include <ruma/core.h>

#include <stdio.h>

#define RUMA_RWB_MAX_LIST 32

typedef struct ruma_rwbench_opts {
	unsigned reps;            /* measured repetitions (>= 1); one warm-up more runs first */
	uint64_t seed;
	bool huge;                /* add the 2 MiB page variants (skipped with a note if none free) */
	unsigned min_log, max_log;/* vector: element counts 2^min_log .. 2^max_log */
	bool plus_one;            /* vector: 2^k + 1 elements (just past a growth step) */
	uint64_t n;               /* access: words; partition: keys; pool, snapshot: bytes */
	uint32_t parts[RUMA_RWB_MAX_LIST];
	size_t nparts;            /* partition: the P values */
	size_t pages_per_block;   /* partition: block size of the mapped methods */
	size_t extent_pages;      /* partition: extent size of the -ext variants */
	size_t run_pages;         /* snapshot: pages per call of rewired-cow-run */
	const char *only;         /* comma-separated variant names to run; NULL = all */
	/* command line */
	const char *which;        /* vector, access, partition, pool or snapshot */
	uint64_t reserve_huge;    /* raise vm.nr_hugepages by this much for the run */
	const char *csv_path;     /* --csv FILE, NULL = stdout */
	const char *result;       /* --result FILE, NULL = none */
	bool help;                /* --help: usage to stdout, exit 0 */
	bool usage_after;         /* after a parse error (or none given): usage on stderr */
	/* set by ruma_rwbench_run for the measurement */
	FILE *csv;
	ruma_result *res;         /* result rows: metric = variant, unit s (NULL = none) */
} ruma_rwbench_opts;

/*
 * ruma_rwbench_parse — `ruma rwbench <bench> [options]` (argv[0] is the
 * command) into *o, with the defaults of the bench filled in; envp (NULL =
 * none) supplies RUMA_SEED, the default seed (else the clock).  Returns 0
 * (run it, or print the help when o->help), or RUMA_EPARSE with the message
 * for stderr in err (may be empty: only the usage); exit status 2.
 */
int ruma_rwbench_parse(int argc, char **argv, char *const *envp, ruma_rwbench_opts *o, char *err,
		       size_t errlen);

/*
 * ruma_rwbench_run — run parsed options: reserve huge pages when asked (and
 * restore them), open --csv and --result, run the bench.  Returns the exit
 * status: 0 ok (variants a machine limit ruled out are reported on stderr),
 * 1 a measurement failed or output was lost, 2 bad usage.
 */
int ruma_rwbench_run(const ruma_rwbench_opts *o);

/* Each returns 0, or a negative error when a variant failed (printed on stderr). */
int ruma_rwbench_vector(const ruma_rwbench_opts *o);
int ruma_rwbench_access(const ruma_rwbench_opts *o);
int ruma_rwbench_partition(const ruma_rwbench_opts *o);
int ruma_rwbench_pool(const ruma_rwbench_opts *o);
int ruma_rwbench_snapshot(const ruma_rwbench_opts *o);

/* ---- shared helpers (rwbench_common.c) -------------------------------------- */

/* true when name is selected by o->only (a comma-separated list) or only is NULL. */
bool ruma_rwb_selected(const ruma_rwbench_opts *o, const char *name);

/* Results of one benchmark: cells (variant x parameter) x reps seconds. */
typedef struct ruma_rwb_table {
	size_t ncells, reps;
	ruma_rep_samples s; /* seconds per cell and measured repetition */
	char (*label)[64];  /* per cell */
	int *baseline;      /* per cell: cell index of its baseline, -1 = none */
} ruma_rwb_table;

int ruma_rwb_table_init(ruma_rwb_table *t, size_t ncells, size_t reps);
void ruma_rwb_table_free(ruma_rwb_table *t);
/* Print one summary line per cell: median/min/max seconds, extra = per-op unit
 * scale (ops per cell, 0 = none), ratio to the baseline. */
void ruma_rwb_table_print(const ruma_rwb_table *t, const char *title, const double *ops_per_cell);

/*
 * ruma_rwb_rep_init — the repetition plan of a bench: nsel variants per
 * group (parameter value), one warm-up and o->reps measured rounds, the
 * order rotated per round.
 */
void ruma_rwb_rep_init(ruma_rep *rep, const ruma_rwbench_opts *o, size_t nsel, size_t groups);

/*
 * A benchmark of variants that each run a fixed list of timed phases over
 * o->n bytes (pool, snapshot).  run() times one variant once: sec[nphases]
 * and one count (`count_name` in the CSV: mappings, pages).  With
 * per_count_column the CSV also gets seconds * 1e6 / count per phase.
 */
typedef struct ruma_rwb_phased {
	const char *bench;            /* "pool": CSV bench column and messages */
	const char *title;            /* summary title */
	/* name of variant k (< nvariants); *huge = it needs --huge */
	const char *(*variant)(size_t k, bool *huge);
	size_t nvariants;
	const char *const *phases;
	size_t nphases;               /* <= RUMA_RWB_MAX_PHASES */
	const char *count_name;
	const char *per_count_column; /* e.g. "us_per_page", NULL = no such column */
	int (*run)(size_t variant, uint64_t bytes, uint64_t seed, double *sec, uint64_t *count);
} ruma_rwb_phased;

#define RUMA_RWB_MAX_PHASES 8

/* Run every selected variant reps + 1 times (first discarded), interleaved;
 * CSV to o->csv, summary per phase and variant to stderr (ratio to the
 * first selected variant, ns/op per 4 KiB).  0 or the first error. */
int ruma_rwb_run_phased(const ruma_rwbench_opts *o, const ruma_rwb_phased *b);

/* Free 2 MiB huge pages now (HugePages_Free), 0 when unknown. */
uint64_t ruma_rwb_free_huge_pages(void);

#endif
