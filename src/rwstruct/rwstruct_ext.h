/*
 * rwstruct_ext.h — what the structures module gives the repository's own
 * programs beyond the installed snapshot.h: a snapshot source made in two
 * steps, so that `ruma micro` times the memfd pool's creation and its
 * mapping as the separate phases of the RUMA micro-benchmark, and the
 * benchmark's MAP_NORESERVE mapping of a 2 MiB source.  Not installed and
 * not exported (no RUMA_API; libruma is built with hidden visibility): the
 * programs reach it through the module's static library.  snapshot.c
 * implements it.
 */
#ifndef RUMA_RWSTRUCT_EXT_H
#define RUMA_RWSTRUCT_EXT_H

#include <ruma/snapshot.h>

#ifdef __cplusplus
extern "C" {
#endif

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
