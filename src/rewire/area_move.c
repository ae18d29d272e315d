/*
 * area_move.c — moving mapped runs inside an area with mremap, so that
 * populated pages keep their page-table entries (no refault at the new
 * place).
 *
 * Invariants: after each successful mremap the vacated source range is put
 * back to the PROT_NONE reservation at once (mremap leaves a hole there),
 * and the table is updated run by run, so a failure leaves the table equal
 * to what is mapped.  Overlapping moves go in pieces no longer than the
 * distance, in memmove order, so no piece overlaps its own destination and
 * no source is overwritten before it moved.
 *
 * Syscalls (through the OS layer):
 *   mremap — MREMAP_MAYMOVE|MREMAP_FIXED, one per physical run (a run the
 *            kernel holds in several VMAs is retried page by page, since
 *            mremap cannot span VMAs);
 *   mmap   — the PROT_NONE reservation over the vacated source, and over a
 *            destination that a failed mremap may have unmapped.
 */
#include "rewire/area_internal.h"

#include "os/os.h"

#include <errno.h>
#include <sys/mman.h>

static int move_run(ruma_area *a, uint64_t s, uint64_t d, uint64_t n, ruma_area_result *r);

/* Move page by page: the run spans several kernel mappings. */
static int move_pages(ruma_area *a, uint64_t s, uint64_t d, uint64_t n, ruma_area_result *r)
{
	for (uint64_t i = 0; i < n; i++) {
		int rc = move_run(a, s + i, d + i, 1, r);
		if (rc)
			return rc;
	}
	return 0;
}

/* Move one physical run [s, s + n) -> [d, d + n); the ranges do not overlap. */
static int move_run(ruma_area *a, uint64_t s, uint64_t d, uint64_t n, ruma_area_result *r)
{
	uint64_t e0 = area_ent(a, s);
	uint64_t predicted = area_predict(a, d, n, e0);
	int rc = area_budget_check(a, predicted);
	void *got;

	if (rc)
		return rc;
	a->mremaps++;
	rc = ruma_os_mremap(ruma_area_addr(a, s), area_bytes(a, n), area_bytes(a, n),
			    MREMAP_MAYMOVE | MREMAP_FIXED, ruma_area_addr(a, d), &got);
	if (rc == -EFAULT && n > 1) {
		/* the kernel may have unmapped the destination before it saw the split */
		rc = area_reserve_range(a, d, n);
		return rc ? rc : move_pages(a, s, d, n, r);
	}
	if (rc) {
		area_reserve_range(a, d, n); /* the kernel may have unmapped the destination */
		return ruma_area_map_error(rc, ruma_phys_is_huge(area_pool_of(a, e0)));
	}
	area_commit(a, d, n, e0, predicted);
	r->runs++;
	r->pages_done += n;
	return area_reserve_range(a, s, n);
}

/* Move [s, s + n) -> [d, d + n) (no overlap), one run at a time. */
static int move_piece(ruma_area *a, uint64_t s, uint64_t d, uint64_t n, ruma_area_result *r)
{
	for (uint64_t i = 0; i < n;) {
		uint64_t k = 1;
		while (i + k < n && ent_continues(area_ent(a, s + i + k - 1), area_ent(a, s + i + k)))
			k++;
		int rc = move_run(a, s + i, d + i, k, r);
		if (rc)
			return rc;
		i += k;
	}
	return 0;
}

static bool all_mapped(const ruma_area *a, uint64_t v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (!area_ent(a, v + i))
			return false;
	return true;
}

int ruma_area_move(ruma_area *a, uint64_t src, uint64_t dst, uint64_t n, ruma_area_result *res)
{
	ruma_area_result r = { 0 };
	int rc = 0;

	if (res)
		*res = r;
	if (!area_range_ok(a, src, n) || !area_range_ok(a, dst, n) || !all_mapped(a, src, n))
		return -EINVAL;
	if (src == dst)
		return 0;
	uint64_t dist = src > dst ? src - dst : dst - src;
	uint64_t piece = RUMA_MIN(dist, n);
	if (dst < src) {
		for (uint64_t off = 0; !rc && off < n; off += piece)
			rc = move_piece(a, src + off, dst + off, RUMA_MIN(piece, n - off), &r);
	} else {
		for (uint64_t end = n; !rc && end > 0;) {
			uint64_t len = RUMA_MIN(piece, end);
			end -= len;
			rc = move_piece(a, src + end, dst + end, len, &r);
		}
	}
	if (res)
		*res = r;
	return rc;
}
