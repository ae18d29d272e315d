/*
 * clock.c — monotonic time, and deadlines for timed waits.
 * clock_gettime(CLOCK_MONOTONIC) is served by the vDSO, so it is cheap
 * enough for per-operation timing.
 */
#include "core/core_ext.h"

#include <time.h>

uint64_t ruma_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ruma_deadline_after_ns(uint64_t ns, struct timespec *out)
{
	clock_gettime(CLOCK_REALTIME, out);
	uint64_t sum = (uint64_t)out->tv_nsec + ns;
	out->tv_sec += (time_t)(sum / 1000000000u);
	out->tv_nsec = (long)(sum % 1000000000u);
}

double ruma_now_sec(void)
{
	return (double)ruma_now_ns() / 1e9;
}
