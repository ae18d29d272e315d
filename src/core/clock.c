/*
 * clock.c — monotonic time.  clock_gettime(CLOCK_MONOTONIC) is served by the
 * vDSO, so it is cheap enough for per-operation timing.
 */
#include <ruma/core.h>

#include <time.h>

uint64_t ruma_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double ruma_now_sec(void)
{
	return (double)ruma_now_ns() / 1e9;
}
