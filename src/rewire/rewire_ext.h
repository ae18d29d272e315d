/*
 * rewire_ext.h — what the rewiring module gives the layers above it
 * beyond the installed area.h and anon.h: the errno translation of a failed
 * mapping call (for the structures of src/rwstruct that map memory
 * themselves) and the reset of the cached move probe (for tests that inject
 * failures into it).  Not installed and not exported (no RUMA_API; libruma
 * is built with hidden visibility): the tests reach them through the
 * module's static library.  area.c and area_anon.c implement them.
 */
#ifndef RUMA_REWIRE_EXT_H
#define RUMA_REWIRE_EXT_H

#include <ruma/anon.h>

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

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
