/*
 * rwstruct_ext.h — what the structures module gives the repository's own
 * programs beyond the installed partition.h and snapshot.h, so that `ruma
 * micro` times the phases of the RUMA micro-benchmark as the original
 * does: a partitioning run that reports the end of each phase, a snapshot
 * source made in two steps (the memfd pool's creation, its mapping), and
 * the benchmark's MAP_NORESERVE mapping of a 2 MiB source.  Not installed and
 * not exported (no RUMA_API; libruma is built with hidden visibility): the
 * programs reach it through the module's static library.  snapshot.c
 * implements it.
 */
#ifndef RUMA_RWSTRUCT_EXT_H
#define RUMA_RWSTRUCT_EXT_H

#include <ruma/partition.h>
#include <ruma/snapshot.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Phases of a run, reported to the hook of ruma_part_run_phased as each one
 * ends (for benchmarks that time them; the phases follow the original RUMA code's
 * accounting).  What comes after the last report until ruma_part_run
 * returns is the partitioning pass itself.
 *   HISTOGRAM  TRADITIONAL: the histogram pass and the prefix sums
 *   OPEN       mapped methods rewiring memfd pages (RUMA_REWIRE_MMAP): their
 *              page pools were created (the original opens its pool files
 *              here, before its clock)
 *   ALLOC      the output (TRADITIONAL), the per-partition state (CHAINS,
 *              MREMAP) or the mapped methods' work areas are set up
 *   PREFAULT   TRADITIONAL / TRADITIONAL_CHAINS with prefault_dst: the
 *              output / the block pool was touched
 *   PASS       the partitioning pass is done; what follows is the layout of
 *              the contiguous output (the mapped methods' squeeze)
 * A method reports the phases it has in the order listed here (OPEN's value
 * is the last so that the older values stay as they were).
 */
typedef enum ruma_part_phase {
	RUMA_PART_PHASE_HISTOGRAM = 0,
	RUMA_PART_PHASE_ALLOC,
	RUMA_PART_PHASE_PREFAULT,
	RUMA_PART_PHASE_PASS,
	RUMA_PART_PHASE_OPEN,
} ruma_part_phase;

/* A phase hook: called with its context when the phase `ended` ends. */
typedef void (*ruma_part_phase_fn)(void *phase_ctx, ruma_part_phase ended);

/*
 * ruma_part_run_phased — ruma_part_run that calls phase(phase_ctx, ...) as
 * each phase of the run ends (phase NULL: none, the same as ruma_part_run).
 * Returns as ruma_part_run.
 */
int ruma_part_run_phased(const uint64_t *keys, size_t n, const ruma_part_options *o,
			 ruma_part_phase_fn phase, void *phase_ctx, ruma_part_result **out);

/*
 * A flag of ruma_snap_src_options beside the RUMA_SNAP_SRC_* of
 * snapshot.h: map the source MAP_NORESERVE.  A 2 MiB source then reserves
 * no huge pages, as the RUMA code base maps its hugetlbfs files: the mapping
 * is a little cheaper, but a shortage of huge pages no longer fails it, and
 * the first write to a page that finds no free huge page gets SIGBUS.  No
 * effect on 4 KiB sources (a shared memfd mapping reserves nothing);
 * -EINVAL with RUMA_SNAP_SRC_ANON.
 */
#define RUMA_SNAP_SRC_NORESERVE 0x100u

/*
 * ruma_snap_src_open — the first step of ruma_snap_src_create for a memfd
 * source: the pool and its run of pages, not mapped yet (no probe and no
 * ftruncate for 2 MiB pages: the mapping sizes the file).
 * ruma_snap_src_data is NULL until ruma_snap_src_map.  Returns as
 * ruma_snap_src_create, and -EINVAL with RUMA_SNAP_SRC_ANON.
 */
int ruma_snap_src_open(const ruma_snap_src_options *o, ruma_snap_src **out);

/*
 * ruma_snap_src_map — the second step: map an opened source MAP_SHARED with
 * one mmap, as the flags given to ruma_snap_src_open say.  Returns 0,
 * -EINVAL (mapped already, or an anonymous source), RUMA_ENOHUGE,
 * RUMA_EMAPLIMIT, or an errno; on error the source stays opened and may be
 * mapped again.
 */
int ruma_snap_src_map(ruma_snap_src *s);

#ifdef __cplusplus
}
#endif
#endif
