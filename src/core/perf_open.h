/*
 * perf_open.h — internal: open one perf counter for this process the way all
 * of ruma does it (shared by perf.c and the PMU probe in sysinfo.c).
 */
#ifndef RUMA_CORE_PERF_OPEN_H
#define RUMA_CORE_PERF_OPEN_H

#include <ruma/ruma.h>

/*
 * ruma_perf_open_counter — perf_event_open(type, config) for the calling
 * process on any CPU, disabled, inherited by new threads, with read_format
 * TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING.  Kernel events are counted; when
 * that is refused with EACCES/EPERM (perf_event_paranoid >= 2 and not root)
 * it retries with exclude_kernel=1 and sets *user_only.  Returns 0 with the
 * descriptor in *fd, or the negative errno of the last attempt.
 */
int ruma_perf_open_counter(uint32_t type, uint64_t config, int *fd, bool *user_only);

#endif
