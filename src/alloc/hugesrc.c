/*
 * hugesrc.c — the page source of the huge backend: 2 MiB-aligned memory in
 * multiples of 2 MiB, from the best source the machine offers right now.
 *
 * Order: (1) explicit huge pages, mmap(MAP_HUGETLB | MAP_HUGE_2MB), which
 * reserves the pages at mmap time and fails with ENOMEM when too few are
 * free; after a failure the next HUGETLB_BACKOFF attempts skip this step (as
 * mimalloc does), so an exhausted pool costs one failed syscall per 8 pages.
 * (2) transparent huge pages: an over-sized anonymous mapping trimmed to
 * 2 MiB alignment plus madvise(MADV_HUGEPAGE) (THP runs in madvise mode on
 * many machines, so without the advice nothing is huge); skipped when
 * /sys/kernel/mm/transparent_hugepage/enabled says [never] or is missing;
 * a failed madvise leaves the mapping as 4 KiB pages.  (3) the same aligned
 * mapping without advice.  A request fails only when (3) fails, i.e. where
 * a plain anonymous mmap of the size (plus 2 MiB of address space for the
 * alignment) would fail too.
 *
 * Each source is announced once per instance through the instance's
 * message callback (ruma_alloc_options) when first used; without a callback
 * nothing is said.
 *
 * Syscalls (via src/os): mmap (hugetlb, anonymous), munmap (trimming),
 * madvise(MADV_HUGEPAGE); the THP sysfs switch is read once per process
 * through sysfile (src/core).
 */
#include "alloc/alloc_internal.h"

#include "core/sysfile.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << 26)
#endif

#define HUGETLB_BACKOFF 8

static _Atomic int thp_mode = -1; /* -1 unknown, 0 unavailable, 1 available */

/* THP usable with madvise? Reads the sysfs switch once per process. */
static bool thp_available(void)
{
	int mode = atomic_load(&thp_mode);
	if (mode >= 0)
		return mode == 1;

	char buf[128];
	mode = ruma_sysfile_read("/sys/kernel/mm/transparent_hugepage/enabled", buf,
				 sizeof(buf)) == 0 && buf[0] && !strstr(buf, "[never]");
	atomic_store(&thp_mode, mode);
	return mode == 1;
}

static void announce(ruma_hugesrc *hs, ruma_huge_source src, const char *thp_note)
{
	unsigned bit = 1u << src;

	if (!hs->message || (hs->announced & bit))
		return;
	hs->announced |= bit;
	char why[256] = "";
	if (hs->first == RUMA_HUGE_SRC_HUGETLB && src != RUMA_HUGE_SRC_HUGETLB)
		snprintf(why, sizeof(why),
			 " (no explicit huge pages: mmap MAP_HUGETLB failed: %s; reserve some with "
			 "'echo N > /proc/sys/vm/nr_hugepages')",
			 hs->hugetlb_err ? ruma_strerror(-hs->hugetlb_err) : "skipped");
	else if (hs->first == src)
		snprintf(why, sizeof(why), " (requested)");
	char line[512];
	switch (src) {
	case RUMA_HUGE_SRC_HUGETLB:
		snprintf(line, sizeof(line), "huge allocator: pages from explicit 2 MiB huge pages "
					     "(MAP_HUGETLB)");
		break;
	case RUMA_HUGE_SRC_THP:
		snprintf(line, sizeof(line), "huge allocator: pages from transparent huge pages "
					     "(madvise MADV_HUGEPAGE)%s", why);
		break;
	case RUMA_HUGE_SRC_4K:
		snprintf(line, sizeof(line), "huge allocator: pages from 4 KiB pages%s%s", why,
			 thp_note);
		break;
	case RUMA_HUGE_SRC_NONE:
		return;
	}
	hs->message(hs->message_ctx, line);
}

void ruma_hugesrc_init(ruma_hugesrc *hs, ruma_huge_source first, ruma_message_fn message,
		       void *message_ctx)
{
	memset(hs, 0, sizeof(*hs));
	hs->first = first;
	hs->last = RUMA_HUGE_SRC_NONE;
	hs->message = message;
	hs->message_ctx = message_ctx;
}

static int try_hugetlb(ruma_hugesrc *hs, size_t len, void **out)
{
	if (hs->hugetlb_skip) {
		hs->hugetlb_skip--;
		return -EAGAIN;
	}
	int rc = ruma_os_mmap(NULL, len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0, out);
	if (rc) {
		hs->hugetlb_err = -rc;
		hs->hugetlb_skip = HUGETLB_BACKOFF;
	}
	return rc;
}

int ruma_hugesrc_map(ruma_hugesrc *hs, size_t len, void **out, ruma_huge_source *src)
{
	const char *thp_note = "";
	int rc;

	if (hs->first == RUMA_HUGE_SRC_HUGETLB && try_hugetlb(hs, len, out) == 0) {
		*src = RUMA_HUGE_SRC_HUGETLB;
		goto got;
	}
	if (hs->first == RUMA_HUGE_SRC_4K) {
		thp_note = "";
	} else if (!thp_available()) {
		thp_note = "; transparent huge pages are off "
			   "(/sys/kernel/mm/transparent_hugepage/enabled)";
	} else if ((rc = ruma_os_mmap_aligned(len, RUMA_PAGE_2M, PROT_READ | PROT_WRITE, 0,
					      out)) == 0) {
		if (ruma_os_madvise(*out, len, MADV_HUGEPAGE) == 0) {
			*src = RUMA_HUGE_SRC_THP;
			goto got;
		}
		thp_note = "; madvise(MADV_HUGEPAGE) failed";
		*src = RUMA_HUGE_SRC_4K;
		goto got;
	} else {
		thp_note = "; the mapping for transparent huge pages failed";
	}
	rc = ruma_os_mmap_aligned(len, RUMA_PAGE_2M, PROT_READ | PROT_WRITE, 0, out);
	if (rc)
		return rc;
	*src = RUMA_HUGE_SRC_4K;
got:
	hs->last = *src;
	announce(hs, *src, thp_note);
	return 0;
}
