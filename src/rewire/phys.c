/*
 * phys.c — the physical page pool: a memfd whose pages are handed out by
 * number and wired into virtual areas by area.c.
 *
 * Invariants:
 *   - Pages [0, frontier) have been handed out at least once; every page at
 *     or above the frontier is free.  Below the frontier a page is free iff
 *     it lies in one of the free extents.
 *   - ext[0..next) is sorted by first, extents are disjoint, never adjacent
 *     (freeing coalesces) and never touch the frontier (an extent that would
 *     end at the frontier lowers the frontier instead).
 *   - file_pages * page_size is the memfd size; file_pages >= frontier.  The
 *     file never shrinks: its size is the high-water mark of the pool.  With
 *     RUMA_PHYS_SIZE_BY_MAP (hugetlb) it is the size the file reaches once
 *     the pages handed out are mapped writable: hugetlbfs_file_mmap extends
 *     i_size to the end of each writable mapping, so no ftruncate is made.
 *
 * Syscalls (all through the OS layer):
 *   memfd_create — the pool file (MFD_CLOEXEC; MFD_HUGETLB|MFD_HUGE_2MB for
 *                  2 MiB pages; MFD_NOEXEC_SEAL when the kernel knows it);
 *   ftruncate    — grow the file on demand (geometrically, sparse; not with
 *                  RUMA_PHYS_SIZE_BY_MAP);
 *   fallocate    — mode 0 to back pages now (prepopulate; for hugetlb this
 *                  takes the huge pages and fails early with ENOSPC), and
 *                  PUNCH_HOLE|KEEP_SIZE to return freed pages to the kernel;
 *   mmap/munmap  — once at creation of a hugetlb pool: a one-page shared
 *                  mapping reserves a huge page or fails, and a truncation to
 *                  zero drops the reservation again (see probe_huge);
 *   fstat        — file size and allocated blocks for the statistics.
 */
#include <ruma/phys.h>
#include <ruma/core.h>

#include "os/os.h"
#include "rewire/rewire_ext.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/memfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

/* Largest page number + 1 a pool can address (file offsets stay below 2^62). */
#define PHYS_PAGE_LIMIT ((uint64_t)1 << 40)

struct ruma_phys {
	int fd;
	unsigned shift;       /* log2(page_size) */
	unsigned flags;       /* RUMA_PHYS_* */
	bool huge;
	uint64_t max_pages;   /* growth limit (PHYS_PAGE_LIMIT when unlimited) */
	uint64_t frontier;    /* see the invariants above */
	uint64_t high_water;  /* largest frontier ever */
	uint64_t file_pages;  /* memfd size in pages */
	ruma_phys_run *ext;   /* sorted free extents below the frontier */
	size_t next, cap;
	uint64_t in_use, allocated, freed, punches;
};

/* ---- helpers -------------------------------------------------------------- */

static size_t page_bytes(const ruma_phys *p)
{
	return (size_t)1 << p->shift;
}

/* A failed fallocate on a hugetlb pool means the huge pages ran out. */
static int backing_error(const ruma_phys *p, int err)
{
	if (p->huge && (err == -ENOSPC || err == -ENOMEM))
		return RUMA_ENOHUGE;
	return err;
}

/* Index of the first extent whose first page is > page (binary search). */
static size_t ext_upper(const ruma_phys *p, uint64_t page)
{
	size_t lo = 0, hi = p->next;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->ext[mid].first <= page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int ext_reserve(ruma_phys *p, size_t need)
{
	if (need <= p->cap)
		return 0;
	size_t cap = p->cap ? p->cap * 2 : 16;
	while (cap < need)
		cap *= 2;
	ruma_phys_run *e = realloc(p->ext, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	p->ext = e;
	p->cap = cap;
	return 0;
}

static void ext_remove(ruma_phys *p, size_t i)
{
	memmove(&p->ext[i], &p->ext[i + 1], (p->next - i - 1) * sizeof(p->ext[0]));
	p->next--;
}

/* Take n pages from the start of extent i (which holds at least n). */
static uint64_t ext_take(ruma_phys *p, size_t i, uint64_t n)
{
	uint64_t first = p->ext[i].first;

	p->ext[i].first += n;
	p->ext[i].n -= n;
	if (p->ext[i].n == 0)
		ext_remove(p, i);
	return first;
}

/* Lowest extent holding at least n pages, or p->next when none does. */
static size_t ext_first_fit(const ruma_phys *p, uint64_t n)
{
	for (size_t i = 0; i < p->next; i++)
		if (p->ext[i].n >= n)
			return i;
	return p->next;
}

/* True when [first, first + n) overlaps no free extent. */
static bool range_all_allocated(const ruma_phys *p, uint64_t first, uint64_t n)
{
	if (n == 0 || first >= p->frontier || n > p->frontier - first)
		return false;
	size_t i = ext_upper(p, first + n - 1); /* extents starting at or before the end */
	if (i == 0)
		return true;
	const ruma_phys_run *e = &p->ext[i - 1];
	return e->first + e->n <= first;
}

/*
 * Insert the free range [first, first + n) (known not to overlap), merging
 * with neighbours and folding a run that reaches the frontier into it.
 */
static int ext_insert(ruma_phys *p, uint64_t first, uint64_t n)
{
	size_t i = ext_upper(p, first);
	bool join_prev = i > 0 && p->ext[i - 1].first + p->ext[i - 1].n == first;
	bool join_next = i < p->next && first + n == p->ext[i].first;

	if (join_prev && join_next) {
		p->ext[i - 1].n += n + p->ext[i].n;
		ext_remove(p, i);
		i--;
	} else if (join_prev) {
		p->ext[i - 1].n += n;
		i--;
	} else if (join_next) {
		p->ext[i].first = first;
		p->ext[i].n += n;
	} else {
		int rc = ext_reserve(p, p->next + 1);
		if (rc)
			return rc;
		memmove(&p->ext[i + 1], &p->ext[i], (p->next - i) * sizeof(p->ext[0]));
		p->ext[i] = (ruma_phys_run){ first, n };
		p->next++;
	}
	if (p->ext[i].first + p->ext[i].n == p->frontier) {
		p->frontier = p->ext[i].first;
		ext_remove(p, i);
	}
	return 0;
}

/* Make the file hold at least pages pages (ftruncate, geometric growth). */
static int ensure_file(ruma_phys *p, uint64_t pages)
{
	if (pages <= p->file_pages)
		return 0;
	uint64_t step_cap = ((uint64_t)1 << 30) >> p->shift; /* grow by at most 1 GiB at once */
	uint64_t grow = RUMA_MIN(RUMA_MAX(p->file_pages, 16), RUMA_MAX(step_cap, 1));
	uint64_t want = RUMA_MAX(pages, p->file_pages + grow);
	want = RUMA_MIN(want, p->max_pages);
	if (!(p->flags & RUMA_PHYS_SIZE_BY_MAP)) {
		int rc = ruma_os_ftruncate(p->fd, (off_t)(want << p->shift));
		if (rc)
			return rc;
	}
	p->file_pages = want;
	return 0;
}

/* Claim [frontier, frontier + n) after checking the limit and the file size. */
static int frontier_check(ruma_phys *p, uint64_t n)
{
	if (n > p->max_pages || p->frontier > p->max_pages - n)
		return -ENOSPC;
	return ensure_file(p, p->frontier + n);
}

static uint64_t frontier_take(ruma_phys *p, uint64_t n)
{
	uint64_t first = p->frontier;

	p->frontier += n;
	p->high_water = RUMA_MAX(p->high_water, p->frontier);
	return first;
}

static void count_alloc(ruma_phys *p, uint64_t n)
{
	p->in_use += n;
	p->allocated += n;
}

static int back_range(ruma_phys *p, uint64_t first, uint64_t n)
{
	int rc = ruma_os_fallocate(p->fd, 0, (off_t)(first << p->shift), (off_t)(n << p->shift));
	return rc ? backing_error(p, rc) : 0;
}

static int punch_range(ruma_phys *p, uint64_t first, uint64_t n)
{
	p->punches++;
	return ruma_os_fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 (off_t)(first << p->shift), (off_t)(n << p->shift));
}

/* Undo an allocation whose prepopulation failed (no punch: nothing to drop). */
static void release_quietly(ruma_phys *p, uint64_t first, uint64_t n)
{
	if (ext_insert(p, first, n) == 0) {
		p->in_use -= n;
		p->allocated -= n;
	}
}

/* ---- creation ---------------------------------------------------------------- */

static int open_memfd(const char *name, bool huge, int *fd)
{
	unsigned flags = MFD_CLOEXEC | (huge ? MFD_HUGETLB | MFD_HUGE_2MB : 0);
	int rc = ruma_os_memfd_create(name, flags | MFD_NOEXEC_SEAL, fd);

	if (rc == -EINVAL) /* kernel before 6.3 (or hugetlb without sealing) */
		rc = ruma_os_memfd_create(name, flags, fd);
	if (rc == -EINVAL && huge)
		return RUMA_EUNSUPP;
	return rc;
}

/*
 * Fail early when no huge page is free, without taking one: a MAP_SHARED
 * hugetlb mapping without MAP_NORESERVE reserves its pages when it is made
 * (the kernel's hugetlb_reserve_pages) and fails with ENOMEM when they are
 * not there.  The probe maps page 0 (reserving it; nothing is faulted or
 * zeroed) and unmaps it.  The reservation belongs to the file and a punch
 * does not drop it for a page never faulted, so the file goes back to size
 * zero (file_pages is still 0; ensure_file grows it later).  Every later
 * mapping of the pool reserves the same way, so a shortage then fails that
 * mmap (RUMA_ENOHUGE), never a page fault.
 */
static int probe_huge(ruma_phys *p)
{
	void *at;
	int rc = ruma_os_ftruncate(p->fd, (off_t)page_bytes(p));

	if (rc)
		return rc;
	rc = ruma_os_mmap(NULL, page_bytes(p), PROT_READ, MAP_SHARED, p->fd, 0, &at);
	if (rc)
		return backing_error(p, rc);
	rc = ruma_os_munmap(at, page_bytes(p));
	return rc ? rc : ruma_os_ftruncate(p->fd, 0);
}

int ruma_phys_create(const ruma_phys_options *opts, ruma_phys **out)
{
	ruma_phys_options o = opts ? *opts : (ruma_phys_options){ 0 };
	size_t ps = o.page_size ? o.page_size : RUMA_PAGE_4K;

	*out = NULL;
	unsigned known = RUMA_PHYS_PREPOPULATE | RUMA_PHYS_NO_PUNCH | RUMA_PHYS_NO_PROBE |
			 RUMA_PHYS_SIZE_BY_MAP;
	if ((ps != RUMA_PAGE_4K && ps != RUMA_PAGE_2M) || (o.flags & ~known) ||
	    ((o.flags & RUMA_PHYS_SIZE_BY_MAP) && ps != RUMA_PAGE_2M))
		return -EINVAL;
	ruma_phys *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = -1;
	p->shift = (unsigned)__builtin_ctzll(ps);
	p->flags = o.flags;
	p->huge = ps == RUMA_PAGE_2M;
	p->max_pages = o.max_pages && o.max_pages < PHYS_PAGE_LIMIT ? o.max_pages : PHYS_PAGE_LIMIT;
	int rc = open_memfd(o.name ? o.name : "ruma-phys", p->huge, &p->fd);
	if (rc == 0 && p->huge && !(o.flags & RUMA_PHYS_NO_PROBE))
		rc = probe_huge(p);
	if (rc) {
		if (p->fd >= 0)
			close(p->fd);
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void ruma_phys_destroy(ruma_phys *p)
{
	if (!p)
		return;
	close(p->fd);
	free(p->ext);
	free(p);
}

/* ---- accessors ------------------------------------------------------------------ */

int ruma_phys_fd(const ruma_phys *p)
{
	return p->fd;
}

size_t ruma_phys_page_size(const ruma_phys *p)
{
	return page_bytes(p);
}

bool ruma_phys_is_huge(const ruma_phys *p)
{
	return p->huge;
}

uint64_t ruma_phys_offset(const ruma_phys *p, uint64_t page)
{
	return page << p->shift;
}

uint64_t ruma_phys_file_pages(const ruma_phys *p)
{
	return p->file_pages;
}

bool ruma_phys_is_allocated(const ruma_phys *p, uint64_t page)
{
	return range_all_allocated(p, page, 1);
}

/* ---- allocation ----------------------------------------------------------------- */

int ruma_phys_alloc(ruma_phys *p, uint64_t n, uint64_t *first)
{
	if (n == 0)
		return -EINVAL;
	size_t i = ext_first_fit(p, n);
	uint64_t f;
	if (i < p->next) {
		f = ext_take(p, i, n);
	} else {
		int rc = frontier_check(p, n);
		if (rc)
			return rc;
		f = frontier_take(p, n);
	}
	count_alloc(p, n);
	if (p->flags & RUMA_PHYS_PREPOPULATE) {
		int rc = back_range(p, f, n);
		if (rc) {
			release_quietly(p, f, n);
			return rc;
		}
	}
	*first = f;
	return 0;
}

/* Plan runs from the free extents: how many extents and how much from the end. */
static void plan_runs(const ruma_phys *p, uint64_t n, size_t max_runs, size_t *use_ext,
		      uint64_t *from_end)
{
	uint64_t left = n;
	size_t k = 0;

	while (k < p->next && k + 1 < max_runs && left > 0) {
		left -= RUMA_MIN(left, p->ext[k].n);
		k++;
	}
	*use_ext = k;
	*from_end = left;
}

static int prepopulate_runs(ruma_phys *p, const ruma_phys_run *runs, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		int rc = back_range(p, runs[i].first, runs[i].n);
		if (rc)
			return rc;
	}
	return 0;
}

int ruma_phys_alloc_runs(ruma_phys *p, uint64_t n, ruma_phys_run *runs, size_t max_runs,
			 size_t *nruns)
{
	if (n == 0 || max_runs == 0)
		return -EINVAL;
	if (ext_first_fit(p, n) < p->next || p->next == 0 || max_runs == 1) {
		int rc = ruma_phys_alloc(p, n, &runs[0].first);
		if (rc)
			return rc;
		runs[0].n = n;
		*nruns = 1;
		return 0;
	}
	size_t use_ext;
	uint64_t from_end;
	plan_runs(p, n, max_runs, &use_ext, &from_end);
	if (from_end) {
		int rc = frontier_check(p, from_end);
		if (rc)
			return rc;
	}
	size_t nr = 0;
	uint64_t left = n - from_end;
	while (left > 0) { /* always extent 0: taking it whole removes it */
		uint64_t take = RUMA_MIN(left, p->ext[0].n);
		runs[nr++] = (ruma_phys_run){ ext_take(p, 0, take), take };
		left -= take;
	}
	if (from_end) {
		runs[nr].first = frontier_take(p, from_end);
		runs[nr++].n = from_end;
	}
	count_alloc(p, n);
	if (p->flags & RUMA_PHYS_PREPOPULATE) {
		int rc = prepopulate_runs(p, runs, nr);
		if (rc) {
			for (size_t i = nr; i-- > 0;)
				release_quietly(p, runs[i].first, runs[i].n);
			return rc;
		}
	}
	*nruns = nr;
	return 0;
}

int ruma_phys_free(ruma_phys *p, uint64_t first, uint64_t n)
{
	if (!range_all_allocated(p, first, n))
		return -EINVAL;
	int rc = ext_insert(p, first, n);
	if (rc)
		return rc;
	p->in_use -= n;
	p->freed += n;
	if (p->flags & RUMA_PHYS_NO_PUNCH)
		return 0;
	return punch_range(p, first, n);
}

int ruma_phys_prepopulate(ruma_phys *p, uint64_t first, uint64_t n)
{
	if (!range_all_allocated(p, first, n))
		return -EINVAL;
	return back_range(p, first, n);
}

int ruma_phys_get_stats(const ruma_phys *p, ruma_phys_stats *out)
{
	ruma_os_file_info st;
	int rc = ruma_os_file_probe(p->fd, &st);

	if (rc)
		return rc;
	*out = (ruma_phys_stats){
		.page_size = page_bytes(p),
		.pages_in_use = p->in_use,
		.pages_allocated = p->allocated,
		.pages_freed = p->freed,
		.high_water = p->high_water,
		.file_size = st.bytes,
		.bytes_resident = st.allocated,
		.free_extents = p->next,
		.punches = p->punches,
	};
	return 0;
}
