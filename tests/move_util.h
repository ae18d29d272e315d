/*
 * move_util.h — helpers of the page-move tests (test_rewire_move.c,
 * test_rwstruct_move.c): the kernel's count of mappings over a range, and
 * whether this process moves pages with UFFDIO_MOVE.
 */
#ifndef RUMA_TEST_MOVE_UTIL_H
#define RUMA_TEST_MOVE_UTIL_H

#include "test.h"

#include <ruma/anon.h>

/* Lines of /proc/self/maps overlapping [base, base + len). */
static inline long kernel_maps(const void *base, size_t len)
{
	char *maps = test_slurp("/proc/self/maps");
	uintptr_t lo = (uintptr_t)base, hi = lo + len;
	long n = 0;

	if (!maps)
		return -1;
	for (char *line = maps; *line;) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo)
			n++;
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	free(maps);
	return n;
}

static inline bool have_uffd(void)
{
	ruma_rewire_path p;
	ruma_move_probe(&p, NULL);
	return p == RUMA_REWIRE_UFFD;
}

#endif
