/*
 * vector.c — the growable arrays of vector.h: rewired, copying, realloc,
 * mremap and software-indirection vectors behind one API.
 *
 * Invariants (all kinds): size <= cap; elements [0, size) hold the data;
 * a failed growth returns before any state of the vector changed, so the old
 * size and contents stay.
 *   REWIRED   area pages [0, pages) are wired onto pool pages in the memfd;
 *             cap = pages * page / es.  Growth allocates pool pages
 *             (ruma_phys_alloc_runs) and wires them behind the last one
 *             (ruma_area_map_run, one mmap per run); new pages are placed at
 *             the end of the file, so consecutive growth steps stay one
 *             kernel mapping.  Nothing is ever copied.
 *   COPY      data is a malloc'ed buffer of cap elements; growth doubles.
 *   REALLOC   as COPY, but growth is realloc().
 *   MREMAP    data is an anonymous private mapping of map_bytes (a multiple
 *             of the page size); growth doubles with mremap(MREMAP_MAYMOVE).
 *   INDIRECT  dir[0 .. npages) point at pages of `page` bytes holding
 *             per_page elements each; cap = npages * per_page; the pages
 *             come from slabs of 1, 2, 4, ... pages (at most 2 MiB), and
 *             slabs[k].first_page is the first directory index of slab k.
 *
 * Syscalls: through the os layer only — mmap/mremap/munmap/madvise for the
 * MREMAP kind and 2 MiB indirect pages (MADV_HUGEPAGE); the REWIRED kind uses
 * phys.h (memfd, ftruncate, fallocate) and area.h (mmap MAP_FIXED).
 */
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

#define VEC_DEFAULT_MAX_BYTES ((size_t)64 << 30)
#define VEC_MAX_GROW_RUNS 16

struct ruma_vec {
	ruma_vec_kind kind;
	size_t es;         /* element size */
	size_t size, cap;  /* elements */
	size_t page;       /* growth unit in bytes: 4 KiB or 2 MiB */
	bool huge, prepopulate;
	unsigned char *data;
	ruma_vec_stats st;
	/* REWIRED */
	ruma_phys *phys;
	ruma_area *area;
	uint64_t pages; /* wired pages */
	/* MREMAP */
	size_t map_bytes;
	/* INDIRECT */
	unsigned char **dir;
	size_t dir_cap, npages, per_page;
	struct vec_slab {
		void *mem;
		size_t first_page;
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

void ruma_vec_opts_default(ruma_vec_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = RUMA_VEC_REWIRED;
	o->elem_size = 8;
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
	int rc;

	if (want_pages > ruma_area_pages(v->area))
		return RUMA_EVIRTFULL;
	rc = ruma_phys_alloc_runs(v->phys, add, runs, VEC_MAX_GROW_RUNS, &nruns);
	if (rc)
		return rc;
	for (size_t i = 0; i < nruns && !rc; i++) {
		rc = ruma_area_map_run(v->area, vp, v->phys, runs[i].first, runs[i].n, flags, NULL);
		if (!rc)
			vp += runs[i].n;
	}
	if (rc) {
		/* put the area back as it was and return the pages */
		if (vp > v->pages)
			(void)ruma_area_unmap(v->area, v->pages, vp - v->pages);
		for (size_t i = 0; i < nruns; i++)
			(void)ruma_phys_free(v->phys, runs[i].first, runs[i].n);
		return rc;
	}
	v->pages = want_pages;
	v->cap = (size_t)(v->pages * v->page / v->es);
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
		n = realloc(v->data, bytes);
		if (!n)
			return -ENOMEM;
	} else {
		n = malloc(bytes);
		if (!n)
			return -ENOMEM;
		if (v->size) {
			memcpy(n, v->data, v->size * v->es);
			v->st.bytes_copied += v->size * v->es;
		}
		free(v->data);
	}
	v->data = n;
	v->cap = want;
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

	if (!v->data) {
		int flags = mremap_map_flags(v) | (v->prepopulate ? MAP_POPULATE : 0);
		rc = ruma_os_mmap(NULL, want_bytes, PROT_READ | PROT_WRITE, flags, -1, 0, &n);
	} else if (!v->huge) {
		rc = ruma_os_mremap(v->data, v->map_bytes, want_bytes, MREMAP_MAYMOVE, NULL, &n);
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
			rc = ruma_os_mremap(v->data, v->map_bytes, v->map_bytes,
					    MREMAP_MAYMOVE | MREMAP_FIXED, n, &moved);
			if (rc) /* the old mapping is untouched when the move fails */
				(void)ruma_os_munmap(n, want_bytes);
		}
	}
	if (rc)
		return rc == -ENOMEM && v->huge ? RUMA_ENOHUGE : rc;
	if (v->prepopulate && v->data && !v->huge) {
		/* fill the page tables of the new part now; older kernels lack it */
		(void)ruma_os_madvise((unsigned char *)n + v->map_bytes, want_bytes - v->map_bytes,
				      MADV_POPULATE_WRITE);
	}
	v->data = n;
	v->map_bytes = want_bytes;
	v->cap = want_bytes / v->es;
	v->st.bytes_mapped = want_bytes;
	return 0;
}

/*
 * INDIRECT pages come from slabs (one posix_memalign each) of 1, 2, 4, ...
 * pages, at most 2 MiB: a page-aligned allocation per 4 KiB page would cost
 * glibc about a second page.  A slab's pages enter the directory together.
 */
static size_t indirect_slab_pages(const ruma_vec *v)
{
	size_t max = v->page >= RUMA_PAGE_2M ? 1 : RUMA_PAGE_2M / v->page, n = v->npages;
	return n < 1 ? 1 : n > max ? max : n;
}

static int indirect_add_slab(ruma_vec *v)
{
	size_t n = indirect_slab_pages(v);
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
	if (posix_memalign(&p, v->page, n * v->page))
		return -ENOMEM;
	if (v->page >= RUMA_PAGE_2M)
		(void)ruma_os_madvise(p, n * v->page, MADV_HUGEPAGE); /* THP where enabled */
	v->slabs[v->nslabs++] = (struct vec_slab){ p, v->npages };
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
		free(v->slabs[v->nslabs].mem);
	}
}

static int indirect_grow(ruma_vec *v, size_t want)
{
	size_t want_pages = (want + v->per_page - 1) / v->per_page, first_new = v->npages;
	int rc = 0;

	while (v->npages < want_pages && !rc)
		rc = indirect_add_slab(v);
	if (rc) {
		indirect_free_from(v, first_new);
		return rc;
	}
	v->cap = v->npages * v->per_page;
	v->st.bytes_mapped = v->npages * v->page + v->dir_cap * sizeof(*v->dir);
	return 0;
}

static int grow_to(ruma_vec *v, size_t want)
{
	int rc;

	if (want <= v->cap)
		return 0;
	switch (v->kind) {
	case RUMA_VEC_REWIRED: {
		uint64_t need = round_up(want * v->es, v->page) / v->page;
		uint64_t target = v->pages ? v->pages * 2 : 1;
		if (target < need)
			target = need;
		if (target > ruma_area_pages(v->area) && need <= ruma_area_pages(v->area))
			target = ruma_area_pages(v->area);
		rc = rewired_grow(v, target);
		break;
	}
	case RUMA_VEC_COPY:
	case RUMA_VEC_REALLOC: {
		size_t target = v->cap ? v->cap * 2 : 16;
		if (target < want)
			target = want;
		rc = heap_grow(v, target);
		break;
	}
	case RUMA_VEC_MREMAP: {
		size_t need = round_up(want * v->es, v->page);
		size_t target = v->map_bytes ? v->map_bytes * 2 : v->page;
		if (target < need)
			target = need;
		rc = mremap_grow(v, target);
		break;
	}
	case RUMA_VEC_INDIRECT: {
		size_t target = v->cap ? v->cap * 2 : v->per_page;
		if (target < want)
			target = want;
		rc = indirect_grow(v, target);
		break;
	}
	default:
		rc = -EINVAL;
	}
	if (!rc)
		v->st.grows++;
	return rc;
}

/* ---- creation ---------------------------------------------------------------- */

int ruma_vec_create(ruma_vec **out, const ruma_vec_opts *o)
{
	ruma_vec_opts def;
	ruma_vec *v;
	int rc = 0;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!o) {
		ruma_vec_opts_default(&def);
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
	if (v->kind == RUMA_VEC_INDIRECT) {
		if (v->es > v->page) {
			free(v);
			return -EINVAL;
		}
		v->per_page = v->page / v->es;
	}
	if (v->kind == RUMA_VEC_REWIRED) {
		size_t max = o->max_bytes ? o->max_bytes : VEC_DEFAULT_MAX_BYTES;
		uint64_t pages = round_up(max, v->page) / v->page;
		rc = ruma_phys_create(&v->phys, v->page, v->huge ? RUMA_PHYS_PREPOPULATE : 0);
		if (!rc)
			rc = ruma_area_create(&v->area, v->page, pages);
		if (!rc)
			v->data = ruma_area_base(v->area);
	}
	if (!rc && o->initial_capacity)
		rc = grow_to(v, o->initial_capacity);
	if (rc) {
		ruma_vec_destroy(v);
		return rc;
	}
	v->st.grows = 0;
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
		free(v->data);
		break;
	case RUMA_VEC_MREMAP:
		if (v->data)
			(void)ruma_os_munmap(v->data, v->map_bytes);
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
	return v->data + i * v->es;
}

void *ruma_vec_at(const ruma_vec *v, size_t i)
{
	if (i >= v->cap)
		return NULL;
	return elem_addr(v, i);
}

int ruma_vec_push(ruma_vec *v, const void *elem)
{
	if (v->size == v->cap) {
		int rc = grow_to(v, v->size + 1);
		if (rc)
			return rc;
	}
	memcpy(elem_addr(v, v->size), elem, v->es);
	v->size++;
	return 0;
}

int ruma_vec_push_u64(ruma_vec *v, uint64_t x)
{
	if (v->es != 8)
		return -EINVAL;
	if (RUMA_UNLIKELY(v->size == v->cap)) {
		int rc = grow_to(v, v->size + 1);
		if (rc)
			return rc;
	}
	if (v->kind == RUMA_VEC_INDIRECT)
		memcpy(elem_addr(v, v->size), &x, 8);
	else
		((uint64_t *)(void *)v->data)[v->size] = x;
	v->size++;
	return 0;
}

int ruma_vec_push_many(ruma_vec *v, const void *elems, size_t n)
{
	const unsigned char *src = elems;
	int rc;

	if (n > SIZE_MAX - v->size)
		return -ENOMEM;
	rc = grow_to(v, v->size + n);
	if (rc)
		return rc;
	if (v->kind != RUMA_VEC_INDIRECT) {
		memcpy(v->data + v->size * v->es, src, n * v->es);
		v->size += n;
		return 0;
	}
	while (n) {
		size_t off = v->size % v->per_page, k = RUMA_MIN(n, v->per_page - off);
		memcpy(elem_addr(v, v->size), src, k * v->es);
		v->size += k;
		src += k * v->es;
		n -= k;
	}
	return 0;
}

/* Shift elements [pos, size) of an INDIRECT vector up by one (size < cap). */
static void indirect_shift_up(ruma_vec *v, size_t pos)
{
	size_t last = v->size; /* index that receives the old last element */
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
	if (pos > v->size)
		return -EINVAL;
	if (v->size == v->cap) {
		int rc = grow_to(v, v->size + 1);
		if (rc)
			return rc;
	}
	if (v->kind == RUMA_VEC_INDIRECT)
		indirect_shift_up(v, pos);
	else
		memmove(v->data + (pos + 1) * v->es, v->data + pos * v->es, (v->size - pos) * v->es);
	memcpy(elem_addr(v, pos), elem, v->es);
	v->size++;
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
	if (i >= v->size)
		return -EINVAL;
	memcpy(out, elem_addr(v, i), v->es);
	return 0;
}

int ruma_vec_set(ruma_vec *v, size_t i, const void *elem)
{
	if (i >= v->size)
		return -EINVAL;
	memcpy(elem_addr(v, i), elem, v->es);
	return 0;
}

uint64_t ruma_vec_get_u64(const ruma_vec *v, size_t i)
{
	uint64_t x;

	RUMA_ASSERT(i < v->size && v->es == 8);
	memcpy(&x, elem_addr(v, i), 8);
	return x;
}

void ruma_vec_set_u64(ruma_vec *v, size_t i, uint64_t x)
{
	RUMA_ASSERT(i < v->size && v->es == 8);
	memcpy(elem_addr(v, i), &x, 8);
}

size_t ruma_vec_size(const ruma_vec *v)
{
	return v->size;
}

size_t ruma_vec_capacity(const ruma_vec *v)
{
	return v->cap;
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
	return v->kind == RUMA_VEC_INDIRECT ? NULL : v->data;
}

size_t ruma_vec_page_bytes(const ruma_vec *v)
{
	return v->page;
}

void *ruma_vec_page(const ruma_vec *v, size_t p)
{
	if (v->kind == RUMA_VEC_INDIRECT)
		return p < v->npages ? v->dir[p] : NULL;
	if (!v->data || p >= round_up(v->cap * v->es, v->page) / v->page)
		return NULL;
	return v->data + p * v->page;
}

bool ruma_vec_stable_addresses(const ruma_vec *v)
{
	return v->kind == RUMA_VEC_REWIRED || v->kind == RUMA_VEC_INDIRECT;
}

int ruma_vec_reserve(ruma_vec *v, size_t n)
{
	return grow_to(v, n);
}

void ruma_vec_clear(ruma_vec *v)
{
	v->size = 0;
}

void ruma_vec_get_stats(const ruma_vec *v, ruma_vec_stats *out)
{
	*out = v->st;
}

/* ---- shrinking ----------------------------------------------------------------- */

int ruma_vec_shrink(ruma_vec *v, size_t n)
{
	int rc = 0;

	if (n > v->size)
		return -EINVAL;
	switch (v->kind) {
	case RUMA_VEC_REWIRED: {
		uint64_t keep = round_up(n * v->es, v->page) / v->page;
		rc = rewired_release(v, keep);
		if (!rc) {
			v->pages = keep;
			v->cap = (size_t)(keep * v->page / v->es);
			v->st.bytes_mapped = keep * v->page;
		}
		break;
	}
	case RUMA_VEC_COPY:
	case RUMA_VEC_REALLOC:
		if (n == 0) {
			free(v->data);
			v->data = NULL;
			v->cap = 0;
			v->st.bytes_mapped = 0;
		} else {
			size_t keep_size = v->size;
			v->size = n;
			rc = heap_grow(v, n); /* COPY: malloc + memcpy of n; REALLOC: realloc down */
			if (rc)
				v->size = keep_size;
		}
		break;
	case RUMA_VEC_MREMAP: {
		size_t keep = round_up(n * v->es, v->page);
		if (keep == 0 && v->data) {
			rc = ruma_os_munmap(v->data, v->map_bytes);
			if (!rc) {
				v->data = NULL;
				v->map_bytes = 0;
				v->cap = 0;
				v->st.bytes_mapped = 0;
			}
		} else if (keep < v->map_bytes) {
			void *p;
			rc = ruma_os_mremap(v->data, v->map_bytes, keep, 0, NULL, &p);
			if (!rc) {
				v->data = p;
				v->map_bytes = keep;
				v->cap = keep / v->es;
				v->st.bytes_mapped = keep;
			}
		}
		break;
	}
	case RUMA_VEC_INDIRECT: {
		size_t keep = (n + v->per_page - 1) / v->per_page;
		indirect_free_from(v, keep);
		v->cap = v->npages * v->per_page;
		v->st.bytes_mapped = v->npages * v->page + v->dir_cap * sizeof(*v->dir);
		break;
	}
	default:
		rc = -EINVAL;
	}
	if (!rc)
		v->size = n;
	return rc;
}
