/*
 * area.c — virtual areas: reservation, the translation table, the mapping
 * budget and single-run wiring (map, unmap, translate).
 *
 * Invariants:
 *   - [base, base + pages * page_size) is always owned by the area: every
 *     page is either a PROT_NONE anonymous NORESERVE reservation (table 0)
 *     or a mapping of a pool's memfd as the table says.  A failed call puts
 *     the failing run back to the reservation before returning.
 *   - maps == 1 + number of boundaries b in [1, pages) where tab[b - 1] does
 *     not continue into tab[b] (see area_internal.h); area_maps_total is the
 *     sum of maps over all live areas of the process.
 *   - mapped == number of non-zero table entries.
 *   - run_e0 != 0 only while the whole area is the one run that wired it
 *     fresh (a single run over every page, the common "allocate and wire"
 *     case): the table is then left unwritten, so wiring costs no table
 *     stores and no page faults on the table; area_ent reads through it and
 *     the first change writes it out.
 *
 * Syscalls (through the OS layer):
 *   mmap   — the pool run of an area created wired (ruma_area_create_mapped:
 *            one mmap at an address the kernel picks, no reservation), the
 *            reservation (PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|
 *            MAP_NORESERVE, over-reserved and trimmed for
 *            alignment), each run (MAP_SHARED or MAP_PRIVATE | MAP_FIXED at
 *            the pool file offset, plus MAP_POPULATE for
 *            RUMA_AREA_MAP_POPULATE) and each un-mapping (the reservation
 *            again, MAP_FIXED, so the range stays reserved);
 *            and the table of a large area (TAB_MMAP_BYTES or more: private
 *            anonymous, zero until written);
 *   munmap — trimming the over-reservation and releasing the area and its
 *            table;
 *   madvise — MADV_POPULATE_WRITE (shared, writable runs) or
 *            MADV_POPULATE_READ (private or read-only runs) to prefault a
 *            run (area_populate_mapped); when the kernel answers EINVAL
 *            (before 5.14) each page is touched.
 *
 * Calls only area_proc.c (mapping counts) in this module.
 */
#include "rewire/area_internal.h"
#include <ruma/sysinfo.h>

#include "os/os.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Sum of the VMA estimates of all live areas (for the process-wide budget). */
static _Atomic uint64_t area_maps_total;

/* Largest area: keeps page << shift and table sizes far from overflow. */
#define AREA_PAGE_LIMIT ((uint64_t)1 << 36)

/* vm.max_map_count, or the kernel default when /proc is unreadable. */
static uint64_t read_max_map_count(void)
{
	uint64_t max;

	return ruma_sysinfo_max_map_count(&max) ? 65530 : max;
}

/* ---- the table ------------------------------------------------------------------ */

/*
 * Tables of TAB_MMAP_BYTES or more get their own anonymous mapping: its
 * pages are zero until written, so a table that stays unwritten (run_e0)
 * costs neither a memset nor page faults, whatever malloc's heap holds.
 */
#define TAB_MMAP_BYTES ((size_t)128 << 10)

static int tab_alloc(uint64_t pages, uint64_t **out)
{
	size_t bytes = pages * sizeof(uint64_t);
	void *m;

	*out = NULL;
	if (bytes < TAB_MMAP_BYTES) {
		*out = calloc(pages, sizeof(uint64_t));
		return *out ? 0 : -ENOMEM;
	}
	int rc = ruma_os_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0, &m);
	if (!rc)
		*out = m;
	return rc;
}

static void tab_free(uint64_t *tab, uint64_t pages)
{
	size_t bytes = pages * sizeof(uint64_t);

	if (bytes < TAB_MMAP_BYTES)
		free(tab);
	else if (tab)
		(void)ruma_os_munmap(tab, bytes);
}

/* ---- creation ------------------------------------------------------------------- */

/* A new area object with its (unwritten) table and no address range yet. */
static int area_new(size_t page_size, uint64_t pages, ruma_area **out)
{
	*out = NULL;
	if ((page_size != RUMA_PAGE_4K && page_size != RUMA_PAGE_2M) || pages == 0 ||
	    pages > AREA_PAGE_LIMIT || pages > (SIZE_MAX / 2) / page_size)
		return -EINVAL;
	ruma_area *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->shift = (unsigned)__builtin_ctzll(page_size);
	a->pages = pages;
	a->maps = 1;
	a->budget = UINT64_MAX;
	int rc = tab_alloc(pages, &a->tab);
	if (rc) {
		free(a);
		return rc;
	}
	*out = a;
	return 0;
}

/* Free an area object whose range was never mapped. */
static void area_free_new(ruma_area *a)
{
	tab_free(a->tab, a->pages);
	free(a);
}

int ruma_area_create(size_t page_size, uint64_t pages, ruma_area **out)
{
	ruma_area *a;
	void *base;
	int rc = area_new(page_size, pages, &a);

	/* the address range: PROT_NONE, not backed, aligned to the page size */
	if (!rc)
		rc = ruma_os_mmap_aligned(area_bytes(a, pages), page_size, PROT_NONE, MAP_NORESERVE,
					  &base);
	if (rc) {
		if (a)
			area_free_new(a);
		*out = NULL;
		return rc;
	}
	a->base = base;
	a->mmaps = 1;
	atomic_fetch_add(&area_maps_total, a->maps);
	*out = a;
	return 0;
}

void ruma_area_destroy(ruma_area *a)
{
	if (!a)
		return;
	ruma_os_munmap(a->base, area_bytes(a, a->pages));
	atomic_fetch_sub(&area_maps_total, a->maps);
	tab_free(a->tab, a->pages);
	free(a);
}

/* ---- accessors ---------------------------------------------------------------- */

void *ruma_area_base(const ruma_area *a)
{
	return a->base;
}

void *ruma_area_addr(const ruma_area *a, uint64_t vpage)
{
	return a->base + area_bytes(a, vpage);
}

size_t ruma_area_page_size(const ruma_area *a)
{
	return (size_t)1 << a->shift;
}

uint64_t ruma_area_pages(const ruma_area *a)
{
	return a->pages;
}

uint64_t ruma_area_map_estimate(const ruma_area *a)
{
	return a->maps;
}

void ruma_area_set_map_budget(ruma_area *a, uint64_t budget)
{
	a->budget = budget;
}

void ruma_area_get_stats(const ruma_area *a, ruma_area_stats *out)
{
	*out = (ruma_area_stats){
		.pages = a->pages,
		.pages_mapped = a->mapped,
		.map_estimate = a->maps,
		.map_budget = a->budget,
		.max_map_count = a->max_map_count ? a->max_map_count : read_max_map_count(),
		.mmaps = a->mmaps,
		.mremaps = a->mremaps,
		.populated_pages = a->populated,
	};
}

int ruma_area_translate(const ruma_area *a, uint64_t vpage, ruma_phys **phys, uint64_t *ppage,
			unsigned *flags)
{
	if (vpage >= a->pages)
		return -EINVAL;
	uint64_t e = area_ent(a, vpage);
	*ppage = e ? ent_page(e) : RUMA_AREA_NONE;
	if (phys)
		*phys = area_pool_of(a, e);
	if (flags)
		*flags = (e & ENT_PRIVATE ? RUMA_AREA_PRIVATE : 0u) |
			 (e & ENT_RDONLY ? RUMA_AREA_RDONLY : 0u);
	return 0;
}

/* ---- pools and modes ------------------------------------------------------------ */

uint64_t area_mode_bits(unsigned flags)
{
	return (flags & RUMA_AREA_PRIVATE ? ENT_PRIVATE : 0) |
	       (flags & RUMA_AREA_RDONLY ? ENT_RDONLY : 0);
}

int area_slot(ruma_area *a, ruma_phys *phys, unsigned *slot)
{
	if (ruma_phys_page_size(phys) != ((size_t)1 << a->shift))
		return -EINVAL;
	for (unsigned i = 0; i < a->npools; i++) {
		if (a->pools[i] == phys) {
			*slot = i + 1;
			return 0;
		}
	}
	if (a->npools == RUMA_AREA_MAX_POOLS)
		return -ENOSPC;
	a->pools[a->npools++] = phys;
	*slot = a->npools;
	return 0;
}

/* ---- the VMA estimate and the budget -------------------------------------------- */

static uint64_t boundary_breaks(const ruma_area *a, uint64_t v, uint64_t n)
{
	uint64_t lo = v ? v : 1, hi = RUMA_MIN(v + n, a->pages - 1), breaks = 0;

	if (a->mapped == 0)
		return 0; /* every entry is 0: nothing breaks (the first mapping of a fresh area) */
	for (uint64_t b = lo; b <= hi; b++)
		breaks += !ent_continues(area_ent(a, b - 1), area_ent(a, b));
	return breaks;
}

uint64_t area_predict(const ruma_area *a, uint64_t v, uint64_t n, uint64_t e0)
{
	uint64_t old = boundary_breaks(a, v, n), now = 0;

	if (v > 0)
		now += !ent_continues(area_ent(a, v - 1), e0);
	if (v + n < a->pages)
		now += !ent_continues(ent_add(e0, n - 1), area_ent(a, v + n));
	return a->maps - old + now;
}

int area_budget_check(ruma_area *a, uint64_t predicted)
{
	if (predicted <= a->maps)
		return 0;
	if (!a->max_map_count) /* read at the first growth: a single run needs no /proc read */
		a->max_map_count = read_max_map_count();
	uint64_t limit = a->max_map_count > RUMA_AREA_MAP_MARGIN
				 ? a->max_map_count - RUMA_AREA_MAP_MARGIN
				 : 0;
	uint64_t total = atomic_load(&area_maps_total) + (predicted - a->maps);
	if (predicted > a->budget || total > limit)
		return RUMA_EMAPLIMIT;
	return 0;
}

int area_maps_claim(uint64_t max_map_count, uint64_t delta)
{
	uint64_t limit = max_map_count > RUMA_AREA_MAP_MARGIN ? max_map_count - RUMA_AREA_MAP_MARGIN : 0;

	if (atomic_fetch_add(&area_maps_total, delta) + delta > limit) {
		atomic_fetch_sub(&area_maps_total, delta);
		return RUMA_EMAPLIMIT;
	}
	return 0;
}

void area_maps_release(uint64_t delta)
{
	atomic_fetch_sub(&area_maps_total, delta);
}

/* Write the whole-area run out to the table, before an entry changes. */
static void write_out_run(ruma_area *a)
{
	for (uint64_t i = 0; i < a->pages; i++)
		a->tab[i] = a->run_e0 + i;
	a->run_e0 = 0;
}

void area_commit(ruma_area *a, uint64_t v, uint64_t n, uint64_t e0, uint64_t predicted)
{
	uint64_t *t = a->tab + v;

	if (a->run_e0)
		write_out_run(a);
	if (a->mapped == 0 && v == 0 && n == a->pages && e0) {
		/* the whole fresh area as one run: the table stays unwritten (see area_ent) */
		a->run_e0 = e0;
		a->mapped = n;
	} else if (a->mapped == 0) {
		/* every old entry is 0: no per-entry accounting, and nothing to do for e0 == 0 */
		if (e0) {
			for (uint64_t i = 0; i < n; i++)
				t[i] = e0 + i;
			a->mapped = n;
		}
	} else {
		for (uint64_t i = 0; i < n; i++) {
			uint64_t e = ent_add(e0, i);
			a->mapped += (e != 0) - (t[i] != 0);
			t[i] = e;
		}
	}
	if (predicted >= a->maps)
		atomic_fetch_add(&area_maps_total, predicted - a->maps);
	else
		atomic_fetch_sub(&area_maps_total, a->maps - predicted);
	a->maps = predicted;
}

/* ---- errors ---------------------------------------------------------------------- */

int ruma_area_map_error(int err, bool huge)
{
	uint64_t now, max;

	if (err != -ENOMEM)
		return err;
	if (ruma_sysinfo_map_count(&now) == 0 && ruma_sysinfo_max_map_count(&max) == 0 && now + 3 > max)
		return RUMA_EMAPLIMIT;
	return huge ? RUMA_ENOHUGE : err;
}

/* ---- single runs ------------------------------------------------------------------- */

int area_reserve_range(ruma_area *a, uint64_t v, uint64_t n)
{
	uint64_t predicted = area_predict(a, v, n, 0);
	void *got;
	int rc = ruma_os_mmap(ruma_area_addr(a, v), area_bytes(a, n), PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0, &got);

	a->mmaps++;
	if (rc)
		a->lost += n; /* previous mapping or a hole: no pool page is claimed */
	area_commit(a, v, n, 0, predicted);
	return rc;
}

static int map_pool_run(ruma_area *a, uint64_t v, uint64_t n, uint64_t e0, int extra)
{
	ruma_phys *pool = area_pool_of(a, e0);
	int prot = PROT_READ | (e0 & ENT_RDONLY ? 0 : PROT_WRITE);
	int fl = MAP_FIXED | extra | (e0 & ENT_PRIVATE ? MAP_PRIVATE : MAP_SHARED);
	void *got;

	a->mmaps++;
	int rc = ruma_os_mmap(ruma_area_addr(a, v), area_bytes(a, n), prot, fl,
			      ruma_phys_fd(pool), (off_t)ruma_phys_offset(pool, ent_page(e0)), &got);
	return rc ? ruma_area_map_error(rc, ruma_phys_is_huge(pool)) : 0;
}

int area_set_run(ruma_area *a, uint64_t v, uint64_t n, uint64_t e0)
{
	return area_set_run_ex(a, v, n, e0, 0);
}

int area_set_run_ex(ruma_area *a, uint64_t v, uint64_t n, uint64_t e0, int mmap_extra)
{
	uint64_t predicted = area_predict(a, v, n, e0);
	int rc = area_budget_check(a, predicted);

	if (rc)
		return rc;
	if (!e0) {
		void *got;
		a->mmaps++;
		rc = ruma_os_mmap(ruma_area_addr(a, v), area_bytes(a, n), PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0,
				  &got);
		if (rc)
			return ruma_area_map_error(rc, false);
		area_commit(a, v, n, 0, predicted);
		return 0;
	}
	rc = map_pool_run(a, v, n, e0, mmap_extra);
	if (rc) {
		area_reserve_range(a, v, n);
		return rc;
	}
	area_commit(a, v, n, e0, predicted);
	return 0;
}

int area_pool_entry(ruma_area *a, ruma_phys *phys, uint64_t ppage, uint64_t n, unsigned flags,
		      uint64_t *e0)
{
	unsigned slot;

	/* validate before area_slot: a refused call must not take a pool slot */
	if (n == 0 || ppage > ENT_PAGE_MASK || ppage >= ruma_phys_file_pages(phys) ||
	    n > ruma_phys_file_pages(phys) - ppage)
		return -EINVAL;
	int rc = area_slot(a, phys, &slot);
	if (rc)
		return rc;
	*e0 = (uint64_t)slot << ENT_SLOT_SHIFT | area_mode_bits(flags) | ppage;
	return 0;
}

int ruma_area_map_run(ruma_area *a, uint64_t vpage, ruma_phys *phys, uint64_t ppage, uint64_t n,
		      unsigned flags, ruma_populate_method *how)
{
	uint64_t e0;

	if (how)
		*how = RUMA_POPULATE_NONE;
	if (!area_range_ok(a, vpage, n))
		return -EINVAL;
	int rc = area_pool_entry(a, phys, ppage, n, flags, &e0);
	if (!rc)
		rc = area_set_run_ex(a, vpage, n, e0,
				     flags & RUMA_AREA_MAP_POPULATE ? MAP_POPULATE : 0);
	if (!rc && (flags & RUMA_AREA_POPULATE))
		rc = area_populate_mapped(a, vpage, n, flags, how);
	return rc;
}

int ruma_area_create_mapped(ruma_phys *phys, uint64_t ppage, uint64_t pages, unsigned flags,
			    ruma_area **out, ruma_populate_method *how)
{
	size_t page_size = ruma_phys_page_size(phys);
	ruma_area *a;
	uint64_t e0;
	void *got;

	if (how)
		*how = RUMA_POPULATE_NONE;
	int rc = area_new(page_size, pages, &a);
	if (rc) {
		*out = NULL;
		return rc;
	}
	rc = area_pool_entry(a, phys, ppage, pages, flags, &e0);
	if (!rc) {
		int prot = PROT_READ | (e0 & ENT_RDONLY ? 0 : PROT_WRITE);
		int fl = (e0 & ENT_PRIVATE ? MAP_PRIVATE : MAP_SHARED) |
			 (flags & RUMA_AREA_MAP_POPULATE ? MAP_POPULATE : 0);
		rc = ruma_os_mmap(NULL, area_bytes(a, pages), prot, fl, ruma_phys_fd(phys),
				  (off_t)ruma_phys_offset(phys, ppage), &got);
		rc = rc ? ruma_area_map_error(rc, ruma_phys_is_huge(phys)) : 0;
	}
	if (!rc && ((uintptr_t)got & (page_size - 1))) {
		/* not expected: any address is 4 KiB aligned, hugetlb files map 2 MiB aligned */
		(void)ruma_os_munmap(got, area_bytes(a, pages));
		rc = -EINVAL;
	}
	if (rc) {
		area_free_new(a);
		*out = NULL;
		return rc;
	}
	a->base = got;
	a->mmaps = 1;
	atomic_fetch_add(&area_maps_total, a->maps);
	area_commit(a, 0, pages, e0, 1); /* the whole area is one run: the table stays unwritten */
	if (flags & RUMA_AREA_POPULATE)
		rc = area_populate_mapped(a, 0, pages, flags, how);
	if (rc) {
		ruma_area_destroy(a);
		a = NULL;
	}
	*out = a;
	return rc;
}

int ruma_area_unmap(ruma_area *a, uint64_t vpage, uint64_t n)
{
	if (!area_range_ok(a, vpage, n))
		return -EINVAL;
	return area_set_run(a, vpage, n, 0);
}

/* ---- populating one run --------------------------------------------------------- */

static void touch_pages(ruma_area *a, uint64_t v, uint64_t n, bool write)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t *p = (uint64_t *)ruma_area_addr(a, v + i);
		if (write)
			__atomic_fetch_or(p, 0, __ATOMIC_RELAXED); /* a write that keeps the value */
		else
			(void)*(volatile uint64_t *)p;
	}
}

int area_populate_mapped(ruma_area *a, uint64_t v, uint64_t n, unsigned flags,
			 ruma_populate_method *how)
{
	uint64_t e = area_ent(a, v);
	bool write = !(e & (ENT_PRIVATE | ENT_RDONLY));

	a->populated += n;
	if (!(flags & RUMA_AREA_POP_TOUCH) && !a->no_populate_madvise) {
		int rc = ruma_os_madvise(ruma_area_addr(a, v), area_bytes(a, n),
					 write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
		if (rc == 0) {
			if (how)
				*how = RUMA_POPULATE_MADVISE;
			return 0;
		}
		if (rc == -EINVAL) {
			a->no_populate_madvise = true; /* remembered: touch from now on */
		} else {
			bool huge = ruma_phys_is_huge(area_pool_of(a, e));
			return huge && (rc == -ENOMEM || rc == -EFAULT) ? RUMA_ENOHUGE : rc;
		}
	}
	touch_pages(a, v, n, write);
	if (how)
		*how = RUMA_POPULATE_TOUCH;
	return 0;
}
