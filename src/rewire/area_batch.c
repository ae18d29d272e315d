/*
 * area_batch.c — multi-run operations on an area: batch rewiring, aliasing
 * and populating.
 *
 * Invariants: a batch issues exactly one mmap per maximal run of pairs whose
 * virtual and physical page numbers both increase by one (after sorting by
 * virtual page), and nothing is mapped when the input is invalid.  On a
 * failing run the batch stops; the table records what was done (see area.h).
 *
 * Syscalls (through the OS layer):
 *   mmap    — one per run (area_set_run);
 *   process_madvise — MADV_POPULATE_WRITE / _READ over up to 1024 stretches
 *             of mapped virtual pages per call, when there are several and the
 *             kernel accepts it for the own process (6.13+; a refusal is
 *             remembered per area);
 *   madvise — one per maximal stretch of mapped virtual pages, through
 *             area_populate_mapped (area.c).
 *
 * Calls area.c and phys.c only (see area_internal.h for the order).
 */
#include "rewire/area_internal.h"

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

/* ---- populate ----------------------------------------------------------------- */

/* Length of the stretch of mapped pages from v (same mode bits), at most n. */
static uint64_t mapped_stretch(const ruma_area *a, uint64_t v, uint64_t n)
{
	uint64_t mode = area_ent(a, v) & (ENT_PRIVATE | ENT_RDONLY), k = 0;

	while (k < n && area_ent(a, v + k) && (area_ent(a, v + k) & (ENT_PRIVATE | ENT_RDONLY)) == mode)
		k++;
	return k;
}

/* ---- vectored populate ---------------------------------------------------------- */

#define POP_IOV_CHUNK 1024 /* ranges per process_madvise call (IOV_MAX) */

/* Virtual stretches to prefault, all mapped with the same mode. */
struct pop_list {
	struct iovec *iov;
	size_t n, cap;
};

static int pop_add(struct pop_list *l, const ruma_area *a, uint64_t v, uint64_t n)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct iovec *iov = realloc(l->iov, cap * sizeof(*iov));
		if (!iov)
			return -ENOMEM;
		l->iov = iov;
		l->cap = cap;
	}
	l->iov[l->n++] = (struct iovec){ ruma_area_addr(a, v), area_bytes(a, n) };
	return 0;
}

static uint64_t iov_vpage(const ruma_area *a, const struct iovec *io)
{
	return (uint64_t)((uint8_t *)io->iov_base - a->base) >> a->shift;
}

static bool refusal(int rc)
{
	return rc == -EINVAL || rc == -ENOSYS || rc == -EPERM || rc == -EOPNOTSUPP;
}

/*
 * One process_madvise per chunk of stretches.  Returns how many stretches
 * are done; the caller populates the rest one by one (a refusal by the
 * kernel is remembered, any other failure is left to the per-range path,
 * which reports it precisely).
 */
static size_t populate_vectored(ruma_area *a, const struct pop_list *l, bool write)
{
	int advice = write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;
	size_t i = 0;

	for (; i < l->n; i += POP_IOV_CHUNK) {
		size_t k = RUMA_MIN((size_t)POP_IOV_CHUNK, l->n - i), want = 0, done = 0;
		for (size_t j = 0; j < k; j++)
			want += l->iov[i + j].iov_len;
		int rc = ruma_os_process_madvise(&l->iov[i], k, advice, &done);
		if (refusal(rc))
			a->no_process_madvise = true;
		if (rc || done != want)
			break;
		a->populated += want >> a->shift;
	}
	return RUMA_MIN(i, l->n);
}

/* Prefault every stretch of l (one call for many when the kernel allows). */
static int populate_list(ruma_area *a, const struct pop_list *l, unsigned flags,
			 ruma_populate_method *how)
{
	size_t from = 0;

	if (l->n == 0)
		return 0;
	bool write = !(area_ent(a, iov_vpage(a, &l->iov[0])) & (ENT_PRIVATE | ENT_RDONLY));
	if (l->n > 1 && !(flags & RUMA_AREA_POP_TOUCH) && !a->no_populate_madvise &&
	    !a->no_process_madvise) {
		from = populate_vectored(a, l, write);
		if (from > 0 && how)
			*how = RUMA_POPULATE_PROCESS_MADVISE;
	}
	for (size_t i = from; i < l->n; i++) {
		int rc = area_populate_mapped(a, iov_vpage(a, &l->iov[i]),
					      l->iov[i].iov_len >> a->shift, flags, how);
		if (rc)
			return rc;
	}
	return 0;
}

/* Collect the mapped stretches of [v, v + n) into lists by advice. */
static int collect_stretches(ruma_area *a, uint64_t v, uint64_t n, struct pop_list *wr,
			     struct pop_list *rd)
{
	for (uint64_t i = 0; i < n;) {
		if (!area_ent(a, v + i)) {
			i++;
			continue;
		}
		uint64_t k = mapped_stretch(a, v + i, n - i);
		bool write = !(area_ent(a, v + i) & (ENT_PRIVATE | ENT_RDONLY));
		int rc = pop_add(write ? wr : rd, a, v + i, k);
		if (rc)
			return rc;
		i += k;
	}
	return 0;
}

int ruma_area_populate(ruma_area *a, uint64_t vpage, uint64_t n, unsigned flags,
		       ruma_populate_method *how)
{
	struct pop_list wr = { 0 }, rd = { 0 };

	if (how)
		*how = RUMA_POPULATE_NONE;
	if (!area_range_ok(a, vpage, n))
		return -EINVAL;
	int rc = collect_stretches(a, vpage, n, &wr, &rd);
	if (!rc)
		rc = populate_list(a, &wr, flags, how);
	if (!rc)
		rc = populate_list(a, &rd, flags, how);
	free(wr.iov);
	free(rd.iov);
	return rc;
}

/* ---- batch rewire ------------------------------------------------------------- */

static int cmp_vpage(const void *x, const void *y)
{
	const ruma_rewire_pair *p = x, *q = y;
	return p->vpage < q->vpage ? -1 : p->vpage > q->vpage;
}

static void sort_pairs(ruma_rewire_pair *pairs, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (pairs[i].vpage < pairs[i - 1].vpage) {
			qsort(pairs, n, sizeof(*pairs), cmp_vpage);
			return;
		}
	}
}

/* Sorted input: every page in range, no duplicate virtual page. */
static int validate_pairs(const ruma_area *a, const ruma_phys *phys,
			  const ruma_rewire_pair *pairs, size_t n)
{
	uint64_t file_pages = ruma_phys_file_pages(phys);

	for (size_t i = 0; i < n; i++) {
		if (pairs[i].vpage >= a->pages || pairs[i].ppage >= file_pages)
			return -EINVAL;
		if (i > 0 && pairs[i].vpage == pairs[i - 1].vpage)
			return -EINVAL;
	}
	return 0;
}

/* Number of pairs from i on that form one run (both page numbers contiguous). */
static size_t run_length(const ruma_rewire_pair *pairs, size_t i, size_t n)
{
	size_t k = 1;

	while (i + k < n && pairs[i + k].vpage == pairs[i].vpage + k &&
	       pairs[i + k].ppage == pairs[i].ppage + k)
		k++;
	return k;
}

/* Prefault the batch: its stretches of consecutive virtual pages. */
static int populate_pairs(ruma_area *a, const ruma_rewire_pair *pairs, size_t n, unsigned flags,
			  ruma_populate_method *how)
{
	struct pop_list l = { 0 };
	int rc = 0;

	for (size_t i = 0; i < n && !rc;) {
		size_t k = 1;
		while (i + k < n && pairs[i + k].vpage == pairs[i].vpage + k)
			k++;
		rc = pop_add(&l, a, pairs[i].vpage, k);
		i += k;
	}
	if (!rc)
		rc = populate_list(a, &l, flags, how);
	free(l.iov);
	return rc;
}

int ruma_area_rewire_batch(ruma_area *a, ruma_phys *phys, ruma_rewire_pair *pairs, size_t n,
			   unsigned flags, ruma_area_result *res)
{
	ruma_area_result r = { 0 };
	uint64_t e0;
	int rc = 0;

	if (res)
		*res = r;
	if (n == 0)
		return 0;
	sort_pairs(pairs, n);
	rc = validate_pairs(a, phys, pairs, n);
	if (!rc)
		rc = area_pool_entry(a, phys, pairs[0].ppage, 1, flags, &e0);
	for (size_t i = 0; !rc && i < n;) {
		size_t k = run_length(pairs, i, n);
		uint64_t e = (e0 & ~ENT_PAGE_MASK) | pairs[i].ppage;
		rc = area_set_run(a, pairs[i].vpage, k, e);
		if (!rc) {
			r.runs++;
			r.pages_done += k;
		}
		i += k;
	}
	if (!rc && (flags & RUMA_AREA_POPULATE))
		rc = populate_pairs(a, pairs, n, flags, &r.populate);
	if (res)
		*res = r;
	return rc;
}

/* ---- alias ---------------------------------------------------------------------- */

/* Number of entries from i on that continue each other in ents[], at most n - i. */
static uint64_t entry_run(const uint64_t *ents, uint64_t i, uint64_t n)
{
	uint64_t k = 1;

	while (i + k < n && ent_continues(ents[i + k - 1], ents[i + k]))
		k++;
	return k;
}

static int alias_runs(ruma_area *a, uint64_t dst, const uint64_t *ents, uint64_t n,
		      unsigned flags, ruma_area_result *r)
{
	uint64_t mode = area_mode_bits(flags);

	for (uint64_t i = 0; i < n;) {
		uint64_t k = entry_run(ents, i, n);
		uint64_t e = ents[i] ? (ents[i] & ~(ENT_PRIVATE | ENT_RDONLY)) | mode : 0;
		int rc = area_set_run(a, dst + i, k, e);
		if (rc)
			return rc;
		if (e && (flags & RUMA_AREA_POPULATE))
			rc = area_populate_mapped(a, dst + i, k, flags, &r->populate);
		if (rc)
			return rc;
		r->runs++;
		r->pages_done += k;
		i += k;
	}
	return 0;
}

int ruma_area_alias(ruma_area *a, uint64_t dst, uint64_t src, uint64_t n, unsigned flags,
		    ruma_area_result *res)
{
	ruma_area_result r = { 0 };

	if (res)
		*res = r;
	if (!area_range_ok(a, dst, n) || !area_range_ok(a, src, n))
		return -EINVAL;
	uint64_t *ents = malloc(n * sizeof(*ents)); /* the source may overlap the destination */
	if (!ents)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		ents[i] = area_ent(a, src + i);
	int rc = alias_runs(a, dst, ents, n, flags, &r);
	free(ents);
	if (res)
		*res = r;
	return rc;
}
