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

#include <ruma/core.h>

#include <stdio.h>

typedef struct ruma_rewirebench_opts {
	uint64_t pages;        /* 4 KiB pages per measurement */
	unsigned reps;         /* measured repetitions (a warm-up runs before them) */
	FILE *csv;             /* CSV rows go here */
	uint64_t reserve_huge; /* raise nr_hugepages by this much for the run (0: never) */
	bool no_huge;          /* skip the 2 MiB set */
	uint64_t seed;
} ruma_rewirebench_opts;

/*
 * ruma_rewirebench_run — run the benchmark: CSV rows (variant, page_size,
 * pages, rep, seconds, ns_per_page) to o->csv, the summary and notes to
 * stderr.  Returns 0, RUMA_EMAPLIMIT when pages does not fit under
 * vm.max_map_count, or another error of the rewiring library.
 */
int ruma_rewirebench_run(const ruma_rewirebench_opts *o);

#endif
