/*
 * rewire_ext.h — what the rewiring module gives the layers above it
 * beyond the installed phys.h, area.h and anon.h: pools sized by their
 * mappings and the errno translation of a failed mapping call (for the
 * structures of src/rwstruct that map memory themselves), and the reset of
 * the cached move probe (for tests that inject failures into it).  Not
 * installed and not exported (no RUMA_API; libruma is built with hidden
 * visibility): the modules above and the tests reach them through the
 * module's static library.  phys.c, area.c and area_anon.c implement them.
 */
#ifndef RUMA_REWIRE_EXT_H
#define RUMA_REWIRE_EXT_H

#include <ruma/anon.h>

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A flag of ruma_phys_options beside the RUMA_PHYS_* of phys.h, for 2 MiB
 * pools only: handing out pages does not grow the file with ftruncate.
 * hugetlbfs extends a file to the end of every writable mapping of it when
 * the mapping is made, so the caller's first mapping of new pages must be
 * writable (PROT_WRITE, shared or private); a read-only mapping or a read()
 * past the file's end before that faults SIGBUS or reads nothing.  A
 * backing fallocate (PREPOPULATE, ruma_phys_prepopulate) sizes the file as
 * well.  Saves the ftruncate: about 1 us, and 6-10 us right after another
 * hugetlb file's pages were freed (measured on Linux 6.18).
 * ruma_phys_file_pages then reports the size the file takes once every page
 * handed out is mapped writable (the file itself may be smaller until
 * then).  The snapshot source uses it.  ruma_phys_create returns -EINVAL
 * for it with 4 KiB pages (tmpfs does not size a file by its mappings).
 */
#define RUMA_PHYS_SIZE_BY_MAP (1u << 3)

/*
 * ruma_area_map_error — the error to report for a failed mmap/mremap
 * (err, a negative errno): -ENOMEM becomes RUMA_EMAPLIMIT when the process
 * is at vm.max_map_count, else RUMA_ENOHUGE when huge (a hugetlb mapping);
 * any other err is returned as it is.
 */
int ruma_area_map_error(int err, bool huge);

/* ruma_move_probe_reset — forget the cached answer of ruma_move_probe: the
 * next call probes again. */
void ruma_move_probe_reset(void);

#ifdef __cplusplus
}
#endif
#endif
