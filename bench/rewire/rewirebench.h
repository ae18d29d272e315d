/*
 * rewirebench.h — the rewiring cost benchmark behind `ruma rewire`.
 *
 * Variants (each measured once per repetition, interleaved):
 *   page_random, page_contig   one mmap per page (ruma_area_map_run of 1 page),
 *                              physical pages in random order / in order;
 *   batch_random, batch_contig ruma_area_rewire_batch over all pages (random
 *                              pairing: one mmap per page; contiguous: one);
 *   populate_madvise           MADV_POPULATE_WRITE after a random rewire
 *                              (named populate_touch if the kernel lacks it);
 *   touch_after_populate       touching every page after that populate;
 *   first_touch                touching every page right after a random rewire;
 *   move_mremap                mremap of a populated run + touching it;
 *   move_rewire_refault        mmap of the same pages at the destination,
 *                              unmap of the source, touching (refaults);
 *   uffd_move_random           4 KiB: populated anonymous pages moved to a
 *                              fresh area in random order with UFFDIO_MOVE
 *                              (one ioctl per page, the area stays one
 *                              mapping), then touched (no faults);
 *   uffd_move_run              the same pages moved as one run (one ioctl;
 *                              mremap_move_run when only mremap is available).
 * The set runs for 4 KiB pages and, when enough huge pages are free, for
 * 2 MiB pages over the same number of bytes (fewer if fewer are free).
 */
#ifndef RUMA_BENCH_REWIREBENCH_H
#define RUMA_BENCH_REWIREBENCH_H

#include "bench/common/result.h"

#include <ruma/core.h>

#include <stdio.h>

typedef struct ruma_rewirebench_opts {
	uint64_t pages;        /* 4 KiB pages per measurement */
	unsigned reps;         /* measured repetitions (a warm-up runs before them) */
	uint64_t reserve_huge; /* raise nr_hugepages by this much for the run (0: never) */
	bool no_huge;          /* skip the 2 MiB set */
	uint64_t seed;
	/* command line */
	const char *csv_path;  /* --csv FILE, NULL = stdout */
	const char *result;    /* --result FILE, NULL = none */
	bool help;             /* --help: usage to stdout, exit 0 */
	bool usage_after;      /* after a parse error, the usage follows on stderr */
	/* set by ruma_rewirebench_run for the measurement */
	FILE *csv;             /* CSV rows go here */
	ruma_result *res;      /* result rows go here (NULL = none) */
} ruma_rewirebench_opts;

/*
 * ruma_rewirebench_measure — run the benchmark: CSV rows (variant, page_size,
 * pages, rep, seconds, ns_per_page) to o->csv, with o->res the result rows
 * <variant> (s) and <variant>_ns_per_page (ns/page) with parameters
 * page_size, pages, rep; the summary and notes to stderr.  Returns 0,
 * RUMA_EMAPLIMIT when pages does not fit under vm.max_map_count, or another
 * error of the rewiring library.
 */
int ruma_rewirebench_measure(const ruma_rewirebench_opts *o);

/*
 * ruma_rewirebench_parse — `ruma rewire [options]` (argv[0] is the command)
 * into *o; envp (NULL = none) supplies RUMA_SEED, the default seed (else the
 * clock).  Returns 0 (run it, or print the help when o->help) or RUMA_EPARSE
 * with the message for stderr in err; exit status 2.
 */
int ruma_rewirebench_parse(int argc, char **argv, char *const *envp, ruma_rewirebench_opts *o,
			   char *err, size_t errlen);

/*
 * ruma_rewirebench_run — run parsed options: open --csv and --result, measure,
 * close them.  Returns the exit status: 0, 1 (failure, lost output), 2
 * (an output cannot be created, or pages above the mapping limit).
 */
int ruma_rewirebench_run(const ruma_rewirebench_opts *o);

#endif
