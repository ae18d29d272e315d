/*
 * rewire_ext.h — what the rewiring module gives the repository's own
 * programs beyond the installed area.h: the reset of the cached move probe,
 * for tests that inject failures into it.  Not installed and not exported
 * (no RUMA_API; libruma is built with hidden visibility): the tests reach
 * it through the module's static library.  area_anon.c implements it.
 */
#ifndef RUMA_REWIRE_EXT_H
#define RUMA_REWIRE_EXT_H

#include <ruma/area.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ruma_move_probe_reset — forget the cached answer of ruma_move_probe: the
 * next call probes again. */
void ruma_move_probe_reset(void);

#ifdef __cplusplus
}
#endif
#endif
