/*
 * vector.c — the growable arrays of vector.h: rewired, copying, realloc,
 * mremap and software-indirection vectors behind one API.
 *
 * Invariants (all kinds): size <= cap; elements [0, size) hold the data;
 * a failed growth returns before any state of the vector changed, so the old
 * size and contents stay.  size * elem_size <= max_bytes: grow_to checks
 * every request (overflow, limit) before it allocates.  The public head
 * (ruma_vec_head: data, cap, push run) is the first member; the size is not
 * stored but derived from the run (vsize: run_first + pushes since the run
 * began), so the inline push and a push cursor only move push_pos.  Every
 * function that changes the size (set_size), cap or the storage ends with
 * sync_push_run, so the inline push stores exactly where the slow path
 * would.
 *   REWIRED   area pages [0, pages) are wired onto pool pages in the memfd;
 *             cap = pages * page / es.  Area page p < pool_pages is always
 *             pool page pool_first + p (the pool filled at creation when
 *             pool_bytes is set); growth wires those first, then allocates
 *             pool pages (ruma_phys_alloc_runs) and wires them behind the
 *             last one (ruma_area_map_run, one mmap per run); new pages are
 *             placed at the end of the file, so consecutive growth steps stay
 *             one kernel mapping.  Nothing is ever copied.
 *   COPY      data is a malloc'ed buffer of cap elements; growth doubles.
 *   REALLOC   as COPY, but growth is realloc().
 *   MREMAP    data is an anonymous private mapping of map_bytes (a multiple
 *             of the page size); growth doubles with mremap(MREMAP_MAYMOVE).
 *   INDIRECT  dir[0 .. npages) point at pages of `page` bytes holding
 *             per_page elements each; cap = npages * per_page; the pages
 *             come from slabs (4 KiB: of 1, 2, 4, ... pages, at most 2 MiB;
 *             2 MiB: one mapping per growth step), and slabs[k].first_page
 *             is the first directory index of slab k.
 * Populate-ahead (contiguous kinds, 4 KiB pages): elements [size, pop_end)
 * lie in pages whose page tables were filled; the push run ends at pop_end
 * so that the slow path fills the next window (sync_push_run).
 *
 * Syscalls: through the os layer only — mmap/mremap/munmap for the MREMAP
 * kind and the 2 MiB indirect pages (MAP_HUGETLB, else MADV_HUGEPAGE);
 * madvise(MADV_POPULATE_WRITE) for populate-ahead; the REWIRED kind uses
 * phys.h (memfd, ftruncate, fallocate) and area.h (mmap MAP_FIXED).
 */
#define RUMA_VEC_NO_INLINE /* this file defines the exported out-of-line forms */
#include <ruma/vector.h>
#include <ruma/area.h>
#include <ruma/phys.h>
#include <ruma/core.h>

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>

#define VEC_DEFAULT_MAX_BYTES ((size_t)64 << 30)
#define VEC_MAX_GROW_RUNS 16
/* populate-ahead fills no window (and no copy target), and prepopulate
 * populates no run of pool pages, smaller than this */
#define VEC_POPULATE_MIN_BYTES ((size_t)64 << 10)
/* requests below this size are not checked against RAM + swap (vec_max_bytes_for) */
#define VEC_HEAP_LIMIT_MIN ((size_t)256 << 20)

struct ruma_vec {
	ruma_vec_head h;   /* data, cap, push run: first, read by the inline paths */
	ruma_vec_kind kind;
	size_t es;         /* element size */
	size_t page;       /* growth unit in bytes: 4 KiB or 2 MiB */
	size_t max_bytes;  /* growth limit (checked before allocating; 0: not yet computed) */
	bool huge, prepopulate;
	size_t pop_window; /* populate-ahead window in elements (0: off) */
	size_t pop_end;    /* the next window is due when the push end reaches it */
	ruma_vec_stats st;
	/* REWIRED */
	ruma_phys *phys;
	ruma_area *area;
	uint64_t pages; /* wired pages */
	uint64_t pool_first, pool_pages; /* pages allocated and backed at creation */
	/* MREMAP */
	size_t map_bytes;
	/* INDIRECT */
	unsigned char **dir;
	size_t dir_cap, npages, per_page;
	struct vec_slab {
		void *mem;
		size_t first_page;
		size_t map_bytes; /* 2 MiB pages: the mapping's length (0: posix_memalign'ed) */
	} *slabs;
	size_t nslabs, slabs_cap;
};

static const char *const kind_names[RUMA_VEC_KIND_COUNT_] = {
	[RUMA_VEC_REWIRED] = "rewired", [RUMA_VEC_COPY] = "copy",
	[RUMA_VEC_REALLOC] = "realloc", [RUMA_VEC_MREMAP] = "mremap",
	[RUMA_VEC_INDIRECT] = "indirect",
};

const char *ruma_vec_kind_name(ruma_vec_kind k)
{
	return (unsigned)k < RUMA_VEC_KIND_COUNT_ ? kind_names[k] : "?";
}

int ruma_vec_kind_parse(const char *s, ruma_vec_kind *out)
{
	for (unsigned k = 0; k < RUMA_VEC_KIND_COUNT_; k++)
		if (s && !strcasecmp(s, kind_names[k])) {
			*out = (ruma_vec_kind)k;
			return 0;
		}
	return RUMA_EPARSE;
}

void ruma_vec_options_default(ruma_vec_options *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = RUMA_VEC_REWIRED;
	o->elem_size = 8;
}

/* ---- the push run ---------------------------------------------------------- */

/* The number of elements: the size when the push run began plus the pushes since. */
static size_t vsize(const ruma_vec *v)
{
	return ruma_vec_head_size(&v->h);
}

/*
 * Set the size to n and end the push run (an empty run at NULL); the caller
 * ends with sync_push_run, which opens the next one.
 */
static void set_size(ruma_vec *v, size_t n)
{
	ruma_vec_head *h = &v->h;

	h->run_first = n;
	h->run_start = h->push_pos = h->push_limit = NULL;
}

/*
 * Fill the page tables of [p, p + len) from the page holding p up to the
 * last whole 4 KiB page (a partial last page may be shared with other
 * memory of the heap); -errno on failure.
 */
static int populate_bytes(unsigned char *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(RUMA_PAGE_4K - 1);
	uintptr_t b = ((uintptr_t)p + len) & ~(uintptr_t)(RUMA_PAGE_4K - 1);

	if (b <= a)
		return 0;
	return ruma_os_madvise((void *)a, b - a, MADV_POPULATE_WRITE);
}

/* populate_bytes over elements [from, to). */
static int populate_elems(ruma_vec *v, size_t from, size_t to)
{
	return populate_bytes(v->h.data + from * v->es, (to - from) * v->es);
}

/*
 * The end of the push run that starts at element n < cap: cap, or with
 * populate-ahead the end of the window [n, n + pop_window) once its page
 * tables are filled.  The window starts at the page holding element n, so
 * the run's stores take no faults; a store into a page the window did not
 * cover still faults it in as usual.  A failed populate turns the feature
 * off (an older kernel's EINVAL; under memory pressure the faults report
 * what the populate would).
 */
static size_t populate_ahead(ruma_vec *v, size_t n)
{
	size_t end;

	if (!v->pop_window)
		return v->h.cap;
	if (n < v->pop_end)
		return RUMA_MIN(v->pop_end, v->h.cap);
	end = v->h.cap - n > v->pop_window ? n + v->pop_window : v->h.cap;
	if (v->kind == RUMA_VEC_REWIRED) {
		/* only pool pages, which have memory: for a fresh memfd page the
		   populate costs as much as the fault it saves */
		size_t pool_end = (size_t)(v->pool_pages * v->page / v->es);
		if (n >= pool_end) {
			v->pop_window = 0;
			return v->h.cap;
		}
		end = RUMA_MIN(end, pool_end);
	}
	v->pop_end = end;
	if (n == 0 || (end - n) * v->es < VEC_POPULATE_MIN_BYTES)
		return end; /* an empty vector or a short window: faults cost less than the call */
	if (populate_elems(v, n, end)) {
		v->pop_window = 0;
		return v->h.cap;
	}
	return end;
}

/*
 * Re-derive the push run of the head from the size, cap and the storage;
 * called by every function that changes one of them.  The run is empty
 * (push_pos == push_limit == NULL) for elem_size != 8 and for a full
 * vector; otherwise it starts at element `size` and ends at cap (INDIRECT:
 * at the end of the current page), so the inline push calls the slow path
 * exactly when it must.
 */
static void sync_push_run(ruma_vec *v)
{
	ruma_vec_head *h = &v->h;
	size_t n = vsize(v);

	set_size(v, n);
	if (v->es != 8 || n >= h->cap)
		return;
	if (v->kind == RUMA_VEC_INDIRECT) {
		size_t page = n / v->per_page;
		h->push_pos = (uint64_t *)(void *)v->dir[page] + (n - page * v->per_page);
		h->push_limit = (uint64_t *)(void *)v->dir[page] + v->per_page;
	} else {
		h->push_pos = (uint64_t *)(void *)h->data + n;
		h->push_limit = (uint64_t *)(void *)h->data + populate_ahead(v, n);
	}
	h->run_start = h->push_pos;
}

/* ---- growth per kind ------------------------------------------------------ */

static size_t round_up(size_t x, size_t to)
{
	return (x + to - 1) / to * to;
}

/* Wire pool pages so that at least want_pages pages are mapped. */
static int rewired_grow(ruma_vec *v, uint64_t want_pages)
{
	ruma_phys_run runs[VEC_MAX_GROW_RUNS];
	size_t nruns = 0;
	uint64_t add = want_pages - v->pages, vp = v->pages;
	unsigned flags = v->prepopulate ? RUMA_AREA_POPULATE : 0;
	int rc = 0;

	if (want_pages > ruma_area_pages(v->area))
		return RUMA_EVIRTFULL;
	if (vp < v->pool_pages) {
		/* the next pages of the pool first: vpage p is pool page pool_first + p */
		uint64_t take = RUMA_MIN(add, v->pool_pages - vp);
		/* the pool's pages have memory: the mmap itself fills their page
		 * tables, except for a run so short that its faults cost less than
		 * the populate (nothing can fail at those faults: the pages exist) */
		bool pop = v->prepopulate && take * v->page >= VEC_POPULATE_MIN_BYTES;
		unsigned pool_flags = pop ? RUMA_AREA_MAP_POPULATE : 0;
		rc = ruma_area_map_run(v->area, vp, v->phys, v->pool_first + vp, take, pool_flags, NULL);
		if (rc)
			return rc;
		vp += take;
		add -= take;
	}
	if (add)
		rc = ruma_phys_alloc_runs(v->phys, add, runs, VEC_MAX_GROW_RUNS, &nruns);
	for (size_t i = 0; i < nruns && !rc; i++) {
		rc = ruma_area_map_run(v->area, vp, v->phys, runs[i].first, runs[i].n, flags, NULL);
		if (!rc)
			vp += runs[i].n;
	}
	if (rc) {
		/* put the area back as it was, then return the new pages (pool pages stay reserved) */
		if (vp > v->pages)
			(void)ruma_area_unmap(v->area, v->pages, vp - v->pages);
		for (size_t i = 0; i < nruns; i++)
			(void)ruma_phys_free(v->phys, runs[i].first, runs[i].n);
		return rc;
	}
	v->pages = want_pages;
	v->h.cap = (size_t)(v->pages * v->page / v->es);
	v->st.bytes_mapped = v->pages * v->page;
	return 0;
}

/*
 * Unwire pages [keep, pages) and free their pool pages.  The pool pages are
 * freed only after the unmap succeeded, so a page is never handed out again
 * while still mapped here.
 */
static int rewired_release(ruma_vec *v, uint64_t keep)
{
	uint64_t n = v->pages - keep, nruns = 0;
	ruma_phys_run *runs;
	int rc;

	if (keep >= v->pages)
		return 0;
	runs = malloc(n * sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	for (uint64_t p = keep; p < v->pages; p++) {
		uint64_t pp;
		if (ruma_area_translate(v->area, p, NULL, &pp, NULL) || pp == RUMA_AREA_NONE)
			continue;
		if (pp >= v->pool_first && pp - v->pool_first < v->pool_pages)
			continue; /* a pool page: unwired, but stays reserved for regrowth */
		if (nruns && pp == runs[nruns - 1].first + runs[nruns - 1].n) {
			runs[nruns - 1].n++;
			continue;
		}
		runs[nruns].first = pp;
		runs[nruns].n = 1;
		nruns++;
	}
	rc = ruma_area_unmap(v->area, keep, n);
	if (!rc)
		for (uint64_t i = 0; i < nruns; i++)
			(void)ruma_phys_free(v->phys, runs[i].first, runs[i].n);
	free(runs);
	return rc;
}

static int heap_grow(ruma_vec *v, size_t want)
{
	size_t bytes;
	unsigned char *n;

	if (want > SIZE_MAX / v->es)
		return -ENOMEM;
	bytes = want * v->es;
	if (v->kind == RUMA_VEC_REALLOC) {
		n = realloc(v->h.data, bytes);
		if (!n)
			return -ENOMEM;
	} else {
		n = malloc(bytes);
		if (!n)
			return -ENOMEM;
		if (vsize(v)) {
			/* the copy's target without a fault per page; a failure turns populate-ahead off */
			if (v->pop_window && vsize(v) * v->es >= VEC_POPULATE_MIN_BYTES &&
			    populate_bytes(n, vsize(v) * v->es))
				v->pop_window = 0;
			memcpy(n, v->h.data, vsize(v) * v->es);
			v->st.bytes_copied += vsize(v) * v->es;
		}
		free(v->h.data);
	}
	v->h.data = n;
	v->pop_end = vsize(v); /* a new buffer: nothing beyond the copied part is populated */
	v->h.cap = want;
	v->st.bytes_mapped = bytes;
	return 0;
}

static int mremap_map_flags(const ruma_vec *v)
{
	/* hugetlb without MAP_NORESERVE: a lack of huge pages fails here, not as SIGBUS later */
	return MAP_PRIVATE | MAP_ANONYMOUS | (v->huge ? MAP_HUGETLB : MAP_NORESERVE);
}

static int mremap_grow(ruma_vec *v, size_t want_bytes)
{
	void *n;
	int rc;

	if (!v->h.data) {
		int flags = mremap_map_flags(v) | (v->prepopulate ? MAP_POPULATE : 0);
		rc = ruma_os_mmap(NULL, want_bytes, PROT_READ | PROT_WRITE, flags, -1, 0, &n);
	} else if (!v->huge) {
		rc = ruma_os_mremap(v->h.data, v->map_bytes, want_bytes, MREMAP_MAYMOVE, NULL, &n);
	} else {
		/*
		 * The kernel does not resize hugetlb mappings (EINVAL), but it moves
		 * them: map the larger region, then move the old pages over its start
		 * (page tables move, nothing is copied).
		 */
		int flags = mremap_map_flags(v) | (v->prepopulate ? MAP_POPULATE : 0);
		void *moved;
		rc = ruma_os_mmap(NULL, want_bytes, PROT_READ | PROT_WRITE, flags, -1, 0, &n);
		if (!rc) {
			rc = ruma_os_mremap(v->h.data, v->map_bytes, v->map_bytes,
					    MREMAP_MAYMOVE | MREMAP_FIXED, n, &moved);
			if (rc) /* the old mapping is untouched when the move fails */
				(void)ruma_os_munmap(n, want_bytes);
		}
	}
	if (rc)
		return rc == -ENOMEM && v->huge ? RUMA_ENOHUGE : rc;
	if (v->prepopulate && v->h.data && !v->huge) {
		/* fill the page tables of the new part now; older kernels lack it */
		(void)ruma_os_madvise((unsigned char *)n + v->map_bytes, want_bytes - v->map_bytes,
				      MADV_POPULATE_WRITE);
	}
	v->h.data = n;
	v->map_bytes = want_bytes;
	v->h.cap = want_bytes / v->es;
	v->st.bytes_mapped = want_bytes;
	return 0;
}

/*
 * INDIRECT 4 KiB pages come from slabs (one posix_memalign each) of 1, 2,
 * 4, ... pages, at most 2 MiB: a page-aligned allocation per 4 KiB page
 * would cost glibc about a second page.  2 MiB pages come from one mapping
 * per growth step of all the pages it needs (at least as many as the vector
 * has: doubling).  A slab's pages enter the directory together.
 */
static size_t indirect_slab_pages(const ruma_vec *v, size_t want_pages)
{
	size_t n = v->npages < 1 ? 1 : v->npages;

	if (v->page >= RUMA_PAGE_2M)
		return RUMA_MAX(n, want_pages - v->npages);
	return RUMA_MIN(n, RUMA_PAGE_2M / v->page);
}

/*
 * A slab of n 2 MiB pages: from the hugetlb pool (MAP_HUGETLB without
 * MAP_NORESERVE, so the kernel reserves the pages now and a lack of them
 * fails here), or when the pool has too few, transparent huge pages
 * (MADV_HUGEPAGE: 2 MiB pages where THP is enabled, 4 KiB pages otherwise).
 */
static int indirect_map_huge(size_t bytes, void **out)
{
	int rc = ruma_os_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0, out);

	if (rc != -ENOMEM)
		return rc;
	/* THP needs 2 MiB-aligned ranges */
	rc = ruma_os_mmap_aligned(bytes, RUMA_PAGE_2M, PROT_READ | PROT_WRITE, MAP_NORESERVE, out);
	if (rc)
		return rc;
	(void)ruma_os_madvise(*out, bytes, MADV_HUGEPAGE);
	return 0;
}

static int indirect_add_slab(ruma_vec *v, size_t want_pages)
{
	size_t n = indirect_slab_pages(v, want_pages), map_bytes = 0;
	void *p = NULL;

	if (v->nslabs == v->slabs_cap) {
		size_t nc = v->slabs_cap ? v->slabs_cap * 2 : 16;
		struct vec_slab *ns = realloc(v->slabs, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		v->slabs = ns;
		v->slabs_cap = nc;
	}
	if (v->npages + n > v->dir_cap) {
		size_t nc = v->dir_cap ? v->dir_cap : 16;
		while (nc < v->npages + n)
			nc *= 2;
		unsigned char **nd = malloc(nc * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		if (v->npages) {
			memcpy(nd, v->dir, v->npages * sizeof(*nd));
			v->st.bytes_copied += v->npages * sizeof(*nd);
		}
		free(v->dir);
		v->dir = nd;
		v->dir_cap = nc;
	}
	if (v->page >= RUMA_PAGE_2M) {
		int rc = indirect_map_huge(n * v->page, &p);
		if (rc)
			return rc;
		map_bytes = n * v->page;
	} else if (posix_memalign(&p, v->page, n * v->page)) {
		return -ENOMEM;
	}
	if (v->prepopulate) /* fault the slab in now: one write per 4 KiB page */
		for (size_t off = 0; off < n * v->page; off += RUMA_PAGE_4K)
			((volatile unsigned char *)p)[off] = 0;
	v->slabs[v->nslabs++] = (struct vec_slab){ p, v->npages, map_bytes };
	for (size_t i = 0; i < n; i++)
		v->dir[v->npages++] = (unsigned char *)p + i * v->page;
	return 0;
}

/* Free the slabs that start at or after page `keep`. */
static void indirect_free_from(ruma_vec *v, size_t keep)
{
	while (v->nslabs && v->slabs[v->nslabs - 1].first_page >= keep) {
		v->nslabs--;
		v->npages = v->slabs[v->nslabs].first_page;
		if (v->slabs[v->nslabs].map_bytes)
			(void)ruma_os_munmap(v->slabs[v->nslabs].mem, v->slabs[v->nslabs].map_bytes);
		else
			free(v->slabs[v->nslabs].mem);
	}
}

static int indirect_grow(ruma_vec *v, size_t want)
{
	size_t want_pages = (want + v->per_page - 1) / v->per_page, first_new = v->npages;
	int rc = 0;

	while (v->npages < want_pages && !rc)
		rc = indirect_add_slab(v, want_pages);
	if (rc) {
		indirect_free_from(v, first_new);
		return rc;
	}
	v->h.cap = v->npages * v->per_page;
	v->st.bytes_mapped = v->npages * v->page + v->dir_cap * sizeof(*v->dir);
	return 0;
}

/* Double cap, but not beyond limit. */
static size_t doubled(size_t cap, size_t first, size_t limit)
{
	if (!cap)
		return RUMA_MIN(first, limit);
	return cap > limit / 2 ? limit : cap * 2;
}

/* x rounded up to a multiple of page (down when rounding up would overflow); at least one page. */
static size_t page_limit(size_t x, size_t page)
{
	if (x > SIZE_MAX - page)
		return SIZE_MAX / page * page;
	return x < page ? page : round_up(x, page);
}

/* The default growth limit of the non-rewired kinds: RAM + swap (all of it, 1 TiB if unknown). */
static size_t default_heap_limit(void)
{
	struct sysinfo si;

	if (sysinfo(&si) != 0 || si.mem_unit == 0)
		return (size_t)1 << 40;
	return (size_t)(((uint64_t)si.totalram + si.totalswap) * si.mem_unit);
}

/*
 * The growth limit in bytes for a growth to at most `bytes`.  The heap
 * kinds' default (RAM + swap) is asked for only when that reaches
 * VEC_HEAP_LIMIT_MIN: a smaller growth is left to the allocator, which
 * reports a lack of memory itself, so that creating and growing a small
 * vector makes no sysinfo call.
 */
static size_t vec_max_bytes_for(ruma_vec *v, size_t bytes)
{
	if (!v->max_bytes) {
		if (bytes < VEC_HEAP_LIMIT_MIN)
			return VEC_HEAP_LIMIT_MIN;
		v->max_bytes = page_limit(default_heap_limit(), v->page);
	}
	return v->max_bytes;
}

/*
 * Grow to hold at least want elements.  The byte size is checked first —
 * against size_t overflow (-EOVERFLOW) and the vector's max_bytes
 * (RUMA_EVIRTFULL for REWIRED, -ENOMEM otherwise) — so a request that can
 * never succeed allocates nothing.  max_bytes is a multiple of the page, so
 * every target below, clamped to it, still holds want elements.
 */
static int grow_to(ruma_vec *v, size_t want)
{
	int rc;

	if (want <= v->h.cap)
		return 0;
	if (want > SIZE_MAX / v->es)
		return -EOVERFLOW;
	size_t bytes = want * v->es;
	/* asked with the doubled size: growth below the floor is never clamped by it */
	size_t limit = vec_max_bytes_for(v, bytes > SIZE_MAX / 2 ? SIZE_MAX : bytes * 2);
	if (bytes > limit)
		return v->kind == RUMA_VEC_REWIRED ? RUMA_EVIRTFULL : -ENOMEM;
	size_t max_elems = limit / v->es;
	switch (v->kind) {
	case RUMA_VEC_REWIRED: {
		uint64_t need = round_up(bytes, v->page) / v->page;
		uint64_t target = doubled(v->pages, 1, limit / v->page);
		rc = rewired_grow(v, RUMA_MAX(target, need));
		break;
	}
	case RUMA_VEC_COPY:
	case RUMA_VEC_REALLOC:
		rc = heap_grow(v, RUMA_MAX(doubled(v->h.cap, 16, max_elems), want));
		break;
	case RUMA_VEC_MREMAP: {
		size_t need = round_up(bytes, v->page);
		rc = mremap_grow(v, RUMA_MAX(doubled(v->map_bytes, v->page, limit), need));
		break;
	}
	case RUMA_VEC_INDIRECT:
		rc = indirect_grow(v, RUMA_MAX(doubled(v->h.cap, v->per_page, max_elems), want));
		break;
	default:
		rc = -EINVAL;
	}
	if (!rc)
		v->st.grows++;
	return rc;
}

/* ---- creation ---------------------------------------------------------------- */

/* The populate-ahead window of a new vector in elements (0: off); see ruma_vec_options. */
static size_t populate_window(const ruma_vec_options *o, size_t es)
{
	size_t bytes = o->populate_ahead ? o->populate_ahead : RUMA_VEC_POPULATE_AHEAD_DEFAULT;

	if (o->huge || o->prepopulate || o->kind == RUMA_VEC_INDIRECT ||
	    o->populate_ahead == RUMA_VEC_POPULATE_AHEAD_OFF)
		return 0;
	return RUMA_MAX(bytes / es, (size_t)1);
}

/*
 * Allocate the pool of a REWIRED vector and fill it: the pages are wired at
 * the start of the area with population (the kernel allocates and zeroes
 * them and fills the page tables), then unwired again.  The pages stay in
 * the memfd; growth later wires them in order, and the first touch of each
 * then only maps a page the file already holds.  This is the original RUMA
 * rewired vector's pool preparation (touch every page through a temporary
 * shared mapping, unmap it).
 */
static int rewired_fill_pool(ruma_vec *v, size_t bytes)
{
	uint64_t n;
	int rc;

	if (bytes > v->max_bytes)
		return RUMA_EVIRTFULL;
	n = round_up(bytes, v->page) / v->page;
	rc = ruma_phys_alloc(v->phys, n, &v->pool_first);
	if (rc)
		return rc;
	rc = ruma_area_map_run(v->area, 0, v->phys, v->pool_first, n, RUMA_AREA_POPULATE, NULL);
	if (!rc)
		rc = ruma_area_unmap(v->area, 0, n);
	if (rc) {
		(void)ruma_area_unmap(v->area, 0, n);
		(void)ruma_phys_free(v->phys, v->pool_first, n);
		return rc;
	}
	v->pool_pages = n;
	return 0;
}

int ruma_vec_create(const ruma_vec_options *o, ruma_vec **out)
{
	ruma_vec_options def;
	ruma_vec *v;
	int rc = 0;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!o) {
		ruma_vec_options_default(&def);
		o = &def;
	}
	if ((unsigned)o->kind >= RUMA_VEC_KIND_COUNT_)
		return -EINVAL;
	if (o->huge && (o->kind == RUMA_VEC_COPY || o->kind == RUMA_VEC_REALLOC))
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->kind = o->kind;
	v->es = o->elem_size ? o->elem_size : 8;
	v->huge = o->huge;
	v->prepopulate = o->prepopulate;
	v->page = o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	v->pop_window = populate_window(o, v->es);
	if (v->kind == RUMA_VEC_INDIRECT) {
		if (v->es > v->page) {
			free(v);
			return -EINVAL;
		}
		v->per_page = v->page / v->es;
	}
	/* 0 for the heap kinds' default: vec_max_bytes_for asks the machine when a growth needs it */
	if (o->max_bytes || v->kind == RUMA_VEC_REWIRED)
		v->max_bytes = page_limit(o->max_bytes ? o->max_bytes : VEC_DEFAULT_MAX_BYTES, v->page);
	if (v->kind == RUMA_VEC_REWIRED) {
		ruma_phys_options po = { .page_size = v->page,
					 .flags = v->huge ? RUMA_PHYS_PREPOPULATE : 0 };
		rc = ruma_phys_create(&po, &v->phys);
		if (!rc)
			rc = ruma_area_create(v->page, v->max_bytes / v->page, &v->area);
		if (!rc)
			v->h.data = ruma_area_base(v->area);
		if (!rc && o->pool_bytes)
			rc = rewired_fill_pool(v, o->pool_bytes);
	}
	if (!rc && o->initial_capacity)
		rc = grow_to(v, o->initial_capacity);
	if (rc) {
		ruma_vec_destroy(v);
		return rc;
	}
	v->st.grows = 0;
	sync_push_run(v);
	*out = v;
	return 0;
}

void ruma_vec_destroy(ruma_vec *v)
{
	if (!v)
		return;
	switch (v->kind) {
	case RUMA_VEC_REWIRED:
		ruma_area_destroy(v->area);
		ruma_phys_destroy(v->phys);
		break;
	case RUMA_VEC_COPY:
	case RUMA_VEC_REALLOC:
		free(v->h.data);
		break;
	case RUMA_VEC_MREMAP:
		if (v->h.data)
			(void)ruma_os_munmap(v->h.data, v->map_bytes);
		break;
	case RUMA_VEC_INDIRECT:
		indirect_free_from(v, 0);
		free(v->slabs);
		free(v->dir);
		break;
	default:
		break;
	}
	free(v);
}

/* ---- element access ------------------------------------------------------------ */

static inline unsigned char *elem_addr(const ruma_vec *v, size_t i)
{
	if (v->kind == RUMA_VEC_INDIRECT)
		return v->dir[i / v->per_page] + (i % v->per_page) * v->es;
	return v->h.data + i * v->es;
}

void *ruma_vec_at(const ruma_vec *v, size_t i)
{
	if (i >= v->h.cap)
		return NULL;
	return elem_addr(v, i);
}

int ruma_vec_push(ruma_vec *v, const void *elem)
{
	if (vsize(v) == v->h.cap) {
		int rc = grow_to(v, vsize(v) + 1);
		if (rc)
			return rc;
	}
	memcpy(elem_addr(v, vsize(v)), elem, v->es);
	set_size(v, vsize(v) + 1);
	sync_push_run(v);
	return 0;
}

int ruma_vec_push_u64_slow(ruma_vec *v, uint64_t x)
{
	if (v->es != 8)
		return -EINVAL;
	if (vsize(v) == v->h.cap) {
		int rc = grow_to(v, vsize(v) + 1);
		if (rc)
			return rc;
	}
	memcpy(elem_addr(v, vsize(v)), &x, 8);
	set_size(v, vsize(v) + 1);
	sync_push_run(v);
	return 0;
}

int ruma_vec_push_u64(ruma_vec *v, uint64_t x)
{
	ruma_vec_head *h = &v->h;
	uint64_t *p = h->push_pos;

	if (RUMA_LIKELY(p != h->push_limit)) {
		*p = x;
		h->push_pos = p + 1;
		return 0;
	}
	return ruma_vec_push_u64_slow(v, x);
}

ruma_vec_cursor ruma_vec_cursor_push_slow(ruma_vec *v, ruma_vec_cursor c, uint64_t x, int *rc)
{
	ruma_vec_cursor_end(v, c);
	*rc = ruma_vec_push_u64_slow(v, x);
	return ruma_vec_cursor_begin(v);
}

int ruma_vec_push_many(ruma_vec *v, const void *elems, size_t n)
{
	const unsigned char *src = elems;
	int rc;

	if (n > SIZE_MAX - vsize(v))
		return -EOVERFLOW;
	rc = grow_to(v, vsize(v) + n);
	if (rc)
		return rc;
	if (v->kind != RUMA_VEC_INDIRECT) {
		if (n)
			memcpy(v->h.data + vsize(v) * v->es, src, n * v->es);
		set_size(v, vsize(v) + n);
		sync_push_run(v);
		return 0;
	}
	while (n) {
		size_t off = vsize(v) % v->per_page, k = RUMA_MIN(n, v->per_page - off);
		memcpy(elem_addr(v, vsize(v)), src, k * v->es);
		set_size(v, vsize(v) + k);
		src += k * v->es;
		n -= k;
	}
	sync_push_run(v);
	return 0;
}

/* Shift elements [pos, size) of an INDIRECT vector up by one (size < cap). */
static void indirect_shift_up(ruma_vec *v, size_t pos)
{
	size_t last = vsize(v); /* index that receives the old last element */
	size_t es = v->es, pp = v->per_page;

	while (last > pos) {
		size_t page = last / pp, off = last % pp;
		size_t lo = page * pp > pos ? page * pp : pos; /* first index moved within this page */
		if (off == 0) {
			/* carry: last element of the previous page becomes first of this page */
			memcpy(v->dir[page], elem_addr(v, last - 1), es);
			last--;
			continue;
		}
		unsigned char *base = v->dir[page];
		size_t from = lo % pp;
		memmove(base + (from + 1) * es, base + from * es, (off - from) * es);
		last = lo;
	}
}

int ruma_vec_insert(ruma_vec *v, size_t pos, const void *elem)
{
	if (pos > vsize(v))
		return -EINVAL;
	if (vsize(v) == v->h.cap) {
		int rc = grow_to(v, vsize(v) + 1);
		if (rc)
			return rc;
	}
	if (v->kind == RUMA_VEC_INDIRECT)
		indirect_shift_up(v, pos);
	else
		memmove(v->h.data + (pos + 1) * v->es, v->h.data + pos * v->es, (vsize(v) - pos) * v->es);
	memcpy(elem_addr(v, pos), elem, v->es);
	set_size(v, vsize(v) + 1);
	sync_push_run(v);
	return 0;
}

int ruma_vec_insert_u64(ruma_vec *v, size_t pos, uint64_t x)
{
	if (v->es != 8)
		return -EINVAL;
	return ruma_vec_insert(v, pos, &x);
}

int ruma_vec_get(const ruma_vec *v, size_t i, void *out)
{
	if (i >= vsize(v))
		return -EINVAL;
	memcpy(out, elem_addr(v, i), v->es);
	return 0;
}

int ruma_vec_set(ruma_vec *v, size_t i, const void *elem)
{
	if (i >= vsize(v))
		return -EINVAL;
	memcpy(elem_addr(v, i), elem, v->es);
	return 0;
}

uint64_t ruma_vec_get_u64_slow(const ruma_vec *v, size_t i)
{
	uint64_t x;

	RUMA_ASSERT(i < vsize(v) && v->es == 8);
	memcpy(&x, elem_addr(v, i), 8);
	return x;
}

void ruma_vec_set_u64_slow(ruma_vec *v, size_t i, uint64_t x)
{
	RUMA_ASSERT(i < vsize(v) && v->es == 8);
	memcpy(elem_addr(v, i), &x, 8);
}

uint64_t ruma_vec_get_u64(const ruma_vec *v, size_t i)
{
	return ruma_vec_get_u64_slow(v, i);
}

void ruma_vec_set_u64(ruma_vec *v, size_t i, uint64_t x)
{
	ruma_vec_set_u64_slow(v, i, x);
}

size_t ruma_vec_size(const ruma_vec *v)
{
	return vsize(v);
}

size_t ruma_vec_capacity(const ruma_vec *v)
{
	return v->h.cap;
}

size_t ruma_vec_elem_size(const ruma_vec *v)
{
	return v->es;
}

ruma_vec_kind ruma_vec_kind_of(const ruma_vec *v)
{
	return v->kind;
}

void *ruma_vec_data(ruma_vec *v)
{
	return v->kind == RUMA_VEC_INDIRECT ? NULL : v->h.data;
}

size_t ruma_vec_page_bytes(const ruma_vec *v)
{
	return v->page;
}

void *ruma_vec_page(const ruma_vec *v, size_t p)
{
	if (v->kind == RUMA_VEC_INDIRECT)
		return p < v->npages ? v->dir[p] : NULL;
	if (!v->h.data || p >= round_up(v->h.cap * v->es, v->page) / v->page)
		return NULL;
	return v->h.data + p * v->page;
}

bool ruma_vec_stable_addresses(const ruma_vec *v)
{
	return v->kind == RUMA_VEC_REWIRED || v->kind == RUMA_VEC_INDIRECT;
}

int ruma_vec_reserve(ruma_vec *v, size_t n)
{
	int rc = grow_to(v, n);

	sync_push_run(v);
	return rc;
}

void ruma_vec_clear(ruma_vec *v)
{
	set_size(v, 0);
	sync_push_run(v);
}

void ruma_vec_get_stats(const ruma_vec *v, ruma_vec_stats *out)
{
	*out = v->st;
}

/* ---- shrinking ----------------------------------------------------------------- */

int ruma_vec_shrink(ruma_vec *v, size_t n)
{
	int rc = 0;

	if (n > vsize(v))
		return -EINVAL;
	switch (v->kind) {
	case RUMA_VEC_REWIRED: {
		uint64_t keep = round_up(n * v->es, v->page) / v->page;
		rc = rewired_release(v, keep);
		if (!rc) {
			v->pages = keep;
			v->h.cap = (size_t)(keep * v->page / v->es);
			v->st.bytes_mapped = keep * v->page;
		}
		break;
	}
	case RUMA_VEC_COPY:
	case RUMA_VEC_REALLOC:
		if (n == 0) {
			free(v->h.data);
			v->h.data = NULL;
			v->h.cap = 0;
			v->st.bytes_mapped = 0;
		} else {
			size_t keep_size = vsize(v);
			set_size(v, n);
			rc = heap_grow(v, n); /* COPY: malloc + memcpy of n; REALLOC: realloc down */
			if (rc)
				set_size(v, keep_size);
		}
		break;
	case RUMA_VEC_MREMAP: {
		size_t keep = round_up(n * v->es, v->page);
		if (keep == 0 && v->h.data) {
			rc = ruma_os_munmap(v->h.data, v->map_bytes);
			if (!rc) {
				v->h.data = NULL;
				v->map_bytes = 0;
				v->h.cap = 0;
				v->st.bytes_mapped = 0;
			}
		} else if (keep < v->map_bytes) {
			void *p;
			rc = ruma_os_mremap(v->h.data, v->map_bytes, keep, 0, NULL, &p);
			if (!rc) {
				v->h.data = p;
				v->map_bytes = keep;
				v->h.cap = keep / v->es;
				v->st.bytes_mapped = keep;
			}
		}
		break;
	}
	case RUMA_VEC_INDIRECT: {
		size_t keep = (n + v->per_page - 1) / v->per_page;
		indirect_free_from(v, keep);
		v->h.cap = v->npages * v->per_page;
		v->st.bytes_mapped = v->npages * v->page + v->dir_cap * sizeof(*v->dir);
		break;
	}
	default:
		rc = -EINVAL;
	}
	if (!rc)
		set_size(v, n);
	sync_push_run(v);
	return rc;
}
