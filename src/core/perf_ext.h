/*
 * perf_ext.h — hardware and software performance counters for a measured region,
 * plus getrusage deltas and the process memory footprint, and the printer of
 * the counter table in the format of Leis's PerfEvent (public repository viktorleis/perfevent):
 *
 *   cycles, instructions, L1-misses, LLC-misses, dTLB-load-misses, dTLB-store-misses, branch-misses, task-clock,    scale,  IPC, CPUs,  GHz, page-faults
 *    70.64,       196.10,      0.34,       0.01,             0.01,              0.01,          0.03,      21.80, 10000000, 2.78, 1.00, 3.24,        0.00
 *
 * Every event is opened on its own (no group), so an event the machine lacks
 * (no PMU in a VM: cycles & co. fail with ENOENT) is marked unavailable with
 * its errno and printed as "n/a" while the others still count.  Counters are
 * inherited by threads created after ruma_perf_create and corrected for
 * multiplexing (value * time_enabled / time_running).
 *
 * Typical use (one operation of a benchmark):
 *     ruma_perf *p; ruma_perf_create(&p);
 *     ruma_perf_start(p); ...work on n keys...; ruma_perf_stop(p);
 *     ruma_perf_print(p, stdout, n);           // values per key
 *     ruma_perf_destroy(p);
 * A ruma_perf object is used by one thread at a time.
 *
 * A measuring facility of the benchmark drivers and tools, not installed
 * and not exported (no RUMA_API; libruma is built with hidden visibility):
 * the repository's programs reach it through the modules' static
 * libraries.  perf.c implements it.
 */
#ifndef RUMA_PERF_EXT_H
#define RUMA_PERF_EXT_H

#include <ruma/ruma.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The counters, in table order. */
typedef enum ruma_perf_event {
	RUMA_PERF_CYCLES,            /* hardware CPU cycles */
	RUMA_PERF_INSTRUCTIONS,      /* retired instructions */
	RUMA_PERF_L1_MISSES,         /* L1 data cache read misses */
	RUMA_PERF_LLC_MISSES,        /* last-level cache misses (PERF_COUNT_HW_CACHE_MISSES) */
	RUMA_PERF_DTLB_LOAD_MISSES,  /* data TLB read misses */
	RUMA_PERF_DTLB_STORE_MISSES, /* data TLB write misses */
	RUMA_PERF_BRANCH_MISSES,     /* mispredicted branches */
	RUMA_PERF_TASK_CLOCK,        /* software: CPU time in nanoseconds */
	RUMA_PERF_PAGE_FAULTS,       /* software: page faults (minor + major) */
	RUMA_PERF_NEVENTS
} ruma_perf_event;

typedef struct ruma_perf ruma_perf;

/* getrusage(RUSAGE_SELF) differences between start and stop (all threads). */
typedef struct ruma_perf_rusage {
	int64_t minor_faults, major_faults;
	int64_t voluntary_switches, involuntary_switches;
	double user_sec, sys_sec;
} ruma_perf_rusage;

/* Process memory from /proc/self/smaps_rollup, in bytes. */
typedef struct ruma_perf_memory {
	uint64_t rss;              /* Rss: resident base and THP pages (no hugetlb!) */
	uint64_t anon_huge;        /* AnonHugePages: THP-backed anonymous memory */
	uint64_t private_hugetlb;  /* Private_Hugetlb: hugetlb pages, not part of Rss */
	uint64_t shared_hugetlb;   /* Shared_Hugetlb */
} ruma_perf_memory;

/*
 * A measurement taken by ruma_perf_stop, detached from the counters: can be
 * kept per operation or per repetition and printed later.
 */
typedef struct ruma_perf_sample {
	double value[RUMA_PERF_NEVENTS]; /* multiplexing-corrected deltas */
	int err[RUMA_PERF_NEVENTS];      /* 0 = available, else negative errno */
	double wall_sec;                 /* wall-clock time between start and stop */
	ruma_perf_rusage rusage;
} ruma_perf_sample;

/* ruma_perf_event_name — "cycles", "instructions", ..., "page-faults"; "?" out of range. */
const char *ruma_perf_event_name(int event);

/*
 * ruma_perf_create — open every counter for the calling process (disabled).
 * Events that fail to open are unavailable; that is not an error.
 * *out is owned by the caller (ruma_perf_destroy).  Returns 0 or -ENOMEM.
 */
int ruma_perf_create(ruma_perf **out);

/* ruma_perf_destroy — close the counters and free p (NULL is ignored). */
void ruma_perf_destroy(ruma_perf *p);

/*
 * ruma_perf_start — reset and enable the counters, take the rusage and clock
 * baselines.  Returns 0, or the negative errno of a failing ioctl/read (that
 * event is then unavailable for this measurement).
 */
int ruma_perf_start(ruma_perf *p);

/*
 * ruma_perf_stop — read and disable the counters; the deltas since
 * ruma_perf_start become the current sample.  Returns 0 or a negative errno
 * (as for start; the other events keep their values).
 */
int ruma_perf_stop(ruma_perf *p);

/* ruma_perf_available — whether event opened (and its last read worked). */
bool ruma_perf_available(const ruma_perf *p, int event);

/* ruma_perf_error — 0 for an available event, else why not (negative errno). */
int ruma_perf_error(const ruma_perf *p, int event);

/*
 * ruma_perf_user_only — true when the event had to be opened with
 * exclude_kernel=1 (not root and perf_event_paranoid >= 2).
 */
bool ruma_perf_user_only(const ruma_perf *p, int event);

/*
 * ruma_perf_value — the event's delta of the last start/stop.  Returns 0,
 * RUMA_EUNSUPP when the event is unavailable (*v = 0), -EINVAL for a bad index.
 */
int ruma_perf_value(const ruma_perf *p, int event, double *v);

/* ruma_perf_sample_get — copy the last measurement out. */
void ruma_perf_sample_get(const ruma_perf *p, ruma_perf_sample *s);

/* ruma_perf_print — print the last measurement (see ruma_perf_print_sample). */
void ruma_perf_print(const ruma_perf *p, FILE *f, uint64_t scale);

/* Flags of ruma_perf_print_sample. */
enum {
	/* Leave out the page-faults column: exactly the columns of PerfEvent's
	 * report (github.com/viktorleis/perfevent) that the ART benchmark prints. */
	RUMA_PERF_PRINT_NO_PAGE_FAULTS = 1,
};

/*
 * ruma_perf_print_sample — two lines, header and data, comma separated and
 * right-aligned per column to max(name, value) width: each counter divided
 * by scale (2 decimals), scale, IPC = instructions/cycles, CPUs =
 * task-clock/wall time, GHz = cycles/task-clock, then page-faults/scale
 * (unless RUMA_PERF_PRINT_NO_PAGE_FAULTS).  Unavailable values and ratios
 * whose inputs are unavailable print "n/a".  scale 0 is treated as 1.
 */
void ruma_perf_print_sample(const ruma_perf_sample *s, FILE *f, uint64_t scale,
			    unsigned flags);

/* ruma_perf_rusage_get — the rusage deltas of the last start/stop. */
void ruma_perf_rusage_get(const ruma_perf *p, ruma_perf_rusage *out);

/*
 * ruma_perf_memory_read — Rss, AnonHugePages, Private_Hugetlb and
 * Shared_Hugetlb of this process from /proc/self/smaps_rollup.  Hugetlb
 * memory is not part of Rss: a footprint is rss + private_hugetlb.
 * Returns 0, a negative errno, or RUMA_EPARSE if a field is missing.
 */
int ruma_perf_memory_read(ruma_perf_memory *out);

#ifdef __cplusplus
}
#endif
#endif
