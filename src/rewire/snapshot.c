/*
 * snapshot.c — copies and copy-on-write snapshots of a memfd array
 * (snapshot.h): memcpy, kernel COW (MAP_PRIVATE view), chunk-shuffled COW
 * views, chunk-shuffled memcpy, and the rewired COW.
 *
 * Invariants:
 *   - a source owns a phys pool and the run [first, first + pages) of it,
 *     mapped MAP_SHARED at its area's virtual pages [0, pages);
 *   - a view snapshot (COW, SHUFFLE, REWIRED_COW) owns an area of pages + 1
 *     virtual pages (the last one is never mapped);
 *     snapshot page i maps source page order-derived page, never a page of
 *     another pool except the private copies of REWIRED_COW, which come from
 *     the source's pool and are freed with the snapshot;
 *   - REWIRED_COW: copied[i] is the pool page of snapshot page i's private
 *     copy (wired read-write) or RUMA_AREA_NONE (the source page, read-only);
 *     copies are made per run of uncopied pages: one pwrite (4 KiB) and one
 *     mmap per run, whatever the number of pages;
 *   - a copy snapshot (MEMCPY, MEMCPY_SHUFFLE) owns an anonymous mapping;
 *   - chunk k covers pages [k*ppc, min((k+1)*ppc, pages)); only full chunks
 *     are permuted, a shorter last chunk stays last: order[last] == last.
 *
 * Syscalls: phys.h/area.h for the memfd and every file mapping (mmap
 * MAP_FIXED MAP_SHARED/MAP_PRIVATE, MAP_POPULATE for a private copy, madvise
 * populate); the os layer for the anonymous buffers (mmap, munmap) and for
 * pwrite, which fills a run of fresh pool pages with the copy (4 KiB).
 *
 * Where the rewired COW's time went before this layout: per copied page a
 * pool page was wired at a scratch slot (mmap), faulted in by the memcpy,
 * moved over the snapshot page (mremap) and the slot re-reserved (mmap):
 * three changes of the mapping tree and a fault per page.  Now a run of
 * pages costs one pwrite and one mmap.
 */
#include <ruma/snapshot.h>
#include <ruma/area.h>
#include <ruma/core.h>
#include <ruma/phys.h>

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

struct ruma_snap_src {
	ruma_phys *phys;
	ruma_area *area;
	uint64_t first; /* first pool page */
	size_t bytes, page, pages;
	unsigned char *data;
};

struct ruma_snap {
	ruma_snap_src *src;
	ruma_snap_method method;
	size_t ppc, nchunks;
	uint64_t *order;
	unsigned char *data;
	size_t map_bytes;      /* copy kinds: anonymous mapping length */
	ruma_area *area;       /* view kinds */
	uint64_t *copied;      /* REWIRED_COW: pool page of the private copy, or RUMA_AREA_NONE */
	uint64_t pages_copied;
};

static const char *const method_names[RUMA_SNAP_METHOD_COUNT_] = {
	[RUMA_SNAP_MEMCPY] = "memcpy", [RUMA_SNAP_COW] = "cow",
	[RUMA_SNAP_SHUFFLE] = "shuffle", [RUMA_SNAP_MEMCPY_SHUFFLE] = "memcpy-shuffle",
	[RUMA_SNAP_REWIRED_COW] = "rewired-cow",
};

const char *ruma_snap_method_name(ruma_snap_method m)
{
	return (unsigned)m < RUMA_SNAP_METHOD_COUNT_ ? method_names[m] : "?";
}

int ruma_snap_method_parse(const char *s, ruma_snap_method *out)
{
	for (unsigned k = 0; k < RUMA_SNAP_METHOD_COUNT_; k++)
		if (s && !strcasecmp(s, method_names[k])) {
			*out = (ruma_snap_method)k;
			return 0;
		}
	return RUMA_EPARSE;
}

void ruma_snap_options_default(ruma_snap_options *o)
{
	memset(o, 0, sizeof(*o));
	o->method = RUMA_SNAP_COW;
	o->pages_per_chunk = 1;
	o->seed = 1;
}

/* ---- source ------------------------------------------------------------------ */

int ruma_snap_src_create(size_t bytes, bool huge, bool populate, ruma_snap_src **out)
{
	ruma_snap_src *s;
	int rc;

	if (!out || !bytes)
		return -EINVAL;
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->bytes = bytes;
	s->page = huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	s->pages = (bytes + s->page - 1) / s->page;
	ruma_phys_options po = { .page_size = s->page, .flags = huge ? RUMA_PHYS_PREPOPULATE : 0 };
	rc = ruma_phys_create(&po, &s->phys);
	if (!rc)
		rc = ruma_area_create(s->page, s->pages, &s->area);
	if (!rc)
		rc = ruma_phys_alloc(s->phys, s->pages, &s->first);
	if (!rc)
		rc = ruma_area_map_run(s->area, 0, s->phys, s->first, s->pages,
				       populate ? RUMA_AREA_POPULATE : 0, NULL);
	if (rc) {
		ruma_snap_src_destroy(s);
		return rc;
	}
	s->data = ruma_area_base(s->area);
	*out = s;
	return 0;
}

void ruma_snap_src_destroy(ruma_snap_src *s)
{
	if (!s)
		return;
	ruma_area_destroy(s->area);
	ruma_phys_destroy(s->phys);
	free(s);
}

void *ruma_snap_src_data(ruma_snap_src *s)
{
	return s->data;
}

size_t ruma_snap_src_bytes(const ruma_snap_src *s)
{
	return s->bytes;
}

size_t ruma_snap_src_page_size(const ruma_snap_src *s)
{
	return s->page;
}

/* ---- snapshot ------------------------------------------------------------------ */

/* order[k] for nchunks chunks; only full chunks are shuffled. */
static int make_order(ruma_snap *s, bool shuffle, uint64_t seed)
{
	size_t pages = s->src->pages, full;
	ruma_rng rng;

	s->nchunks = (pages + s->ppc - 1) / s->ppc;
	full = pages / s->ppc;
	s->order = malloc(s->nchunks * sizeof(*s->order));
	if (!s->order)
		return -ENOMEM;
	for (size_t k = 0; k < s->nchunks; k++)
		s->order[k] = k;
	if (shuffle) {
		ruma_rng_seed(&rng, seed);
		ruma_rng_shuffle_u64(&rng, s->order, full);
	}
	return 0;
}

static size_t chunk_pages(const ruma_snap *s, uint64_t k)
{
	size_t first = k * s->ppc;
	return RUMA_MIN(s->ppc, s->src->pages - first);
}

static int create_copy(ruma_snap *s, const ruma_snap_options *o)
{
	ruma_snap_src *src = s->src;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	size_t cb = s->ppc * src->page;
	void *m;
	int rc;

	s->map_bytes = src->pages * src->page;
	flags |= src->page == RUMA_PAGE_2M ? MAP_HUGETLB : MAP_NORESERVE;
	if (o->populate)
		flags |= MAP_POPULATE;
	rc = ruma_os_mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, flags, -1, 0, &m);
	if (rc)
		return rc == -ENOMEM && src->page == RUMA_PAGE_2M ? RUMA_ENOHUGE : rc;
	s->data = m;
	if (o->init_dst)
		memset(s->data, 0, s->map_bytes);
	if (s->method == RUMA_SNAP_MEMCPY) {
		memcpy(s->data, src->data, s->map_bytes);
		return 0;
	}
	for (size_t k = 0; k < s->nchunks; k++)
		memcpy(s->data + k * cb, src->data + s->order[k] * cb,
		       chunk_pages(s, s->order[k]) * src->page);
	return 0;
}

static int create_view(ruma_snap *s, const ruma_snap_options *o)
{
	ruma_snap_src *src = s->src;
	unsigned flags = o->populate ? RUMA_AREA_POPULATE : 0;
	int rc;

	rc = ruma_area_create(src->page, src->pages + 1, &s->area);
	if (rc)
		return rc;
	s->data = ruma_area_base(s->area);
	switch (s->method) {
	case RUMA_SNAP_COW:
		return ruma_area_map_run(s->area, 0, src->phys, src->first, src->pages,
					 flags | RUMA_AREA_PRIVATE, NULL);
	case RUMA_SNAP_SHUFFLE:
		/* one mmap per chunk, in snapshot order; shared unless asked otherwise */
		if (o->private_view)
			flags |= RUMA_AREA_PRIVATE;
		for (size_t k = 0; k < s->nchunks; k++) {
			rc = ruma_area_map_run(s->area, k * s->ppc, src->phys,
					       src->first + s->order[k] * s->ppc,
					       chunk_pages(s, s->order[k]), flags, NULL);
			if (rc)
				return rc;
		}
		return 0;
	default: /* REWIRED_COW */
		s->copied = malloc(src->pages * sizeof(*s->copied));
		if (!s->copied)
			return -ENOMEM;
		for (size_t i = 0; i < src->pages; i++)
			s->copied[i] = RUMA_AREA_NONE;
		return ruma_area_map_run(s->area, 0, src->phys, src->first, src->pages,
					 flags | RUMA_AREA_RDONLY, NULL);
	}
}

int ruma_snap_create(const ruma_snap_options *o, ruma_snap_src *src, ruma_snap **out)
{
	ruma_snap_options def;
	ruma_snap *s;
	int rc;

	if (!out || !src)
		return -EINVAL;
	*out = NULL;
	if (!o) {
		ruma_snap_options_default(&def);
		o = &def;
	}
	if ((unsigned)o->method >= RUMA_SNAP_METHOD_COUNT_)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->src = src;
	s->method = o->method;
	s->ppc = o->pages_per_chunk ? o->pages_per_chunk : 1;
	if (s->method != RUMA_SNAP_SHUFFLE && s->method != RUMA_SNAP_MEMCPY_SHUFFLE)
		s->ppc = 1;
	rc = make_order(s, s->method == RUMA_SNAP_SHUFFLE || s->method == RUMA_SNAP_MEMCPY_SHUFFLE,
			o->seed);
	if (!rc) {
		if (s->method == RUMA_SNAP_MEMCPY || s->method == RUMA_SNAP_MEMCPY_SHUFFLE)
			rc = create_copy(s, o);
		else
			rc = create_view(s, o);
	}
	if (rc) {
		ruma_snap_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* Give the private copies back to the pool, one free (one hole punch) per run of pool pages. */
static void free_copies(ruma_snap *s)
{
	for (size_t i = 0; i < s->src->pages;) {
		uint64_t q = s->copied[i];
		size_t k = 1;
		if (q == RUMA_AREA_NONE) {
			i++;
			continue;
		}
		while (i + k < s->src->pages && s->copied[i + k] == q + k)
			k++;
		(void)ruma_phys_free(s->src->phys, q, k);
		i += k;
	}
}

void ruma_snap_destroy(ruma_snap *s)
{
	if (!s)
		return;
	if (s->area)
		ruma_area_destroy(s->area);
	else if (s->data)
		(void)ruma_os_munmap(s->data, s->map_bytes);
	if (s->copied)
		free_copies(s);
	free(s->copied);
	free(s->order);
	free(s);
}

void *ruma_snap_data(ruma_snap *s)
{
	return s->data;
}

size_t ruma_snap_bytes(const ruma_snap *s)
{
	return s->src->bytes;
}

ruma_snap_method ruma_snap_method_of(const ruma_snap *s)
{
	return s->method;
}

const uint64_t *ruma_snap_chunk_order(const ruma_snap *s, size_t *nchunks, size_t *chunk_bytes)
{
	if (nchunks)
		*nchunks = s->nchunks;
	if (chunk_bytes)
		*chunk_bytes = s->ppc * s->src->page;
	return s->order;
}

uint64_t ruma_snap_pages_copied(const ruma_snap *s)
{
	return s->pages_copied;
}

/* Pages from `page` on (at most n) that have no private copy yet. */
static size_t uncopied_run(const ruma_snap *s, size_t page, size_t n)
{
	size_t k = 0;

	while (k < n && s->copied[page + k] == RUMA_AREA_NONE)
		k++;
	return k;
}

/*
 * Rewired COW of the run [page, page + k): take k contiguous pool pages,
 * fill them with a copy of the source pages and wire them over the snapshot
 * pages read-write with one mmap.  4 KiB: one pwrite from the source's
 * mapping fills the pool pages (tmpfs allocates them and copies, no zeroing
 * and no fault), and the mmap fills the page tables (MAP_POPULATE), so a
 * write after it takes no fault.  2 MiB (hugetlbfs has no write()): the pool
 * pages are wired and populated first, then copied with memcpy.  On failure
 * the snapshot pages go back to the source's pages and nothing is kept.
 */
static int rewired_copy_run(ruma_snap *s, size_t page, size_t k)
{
	ruma_snap_src *src = s->src;
	size_t bytes = k * src->page;
	const unsigned char *from = src->data + page * src->page;
	bool huge = ruma_phys_is_huge(src->phys);
	uint64_t q;
	int rc;

	rc = ruma_phys_alloc(src->phys, k, &q);
	if (rc)
		return rc;
	if (!huge)
		rc = ruma_os_pwrite_full(ruma_phys_fd(src->phys), from, bytes,
					 (off_t)ruma_phys_offset(src->phys, q));
	if (!rc)
		rc = ruma_area_map_run(s->area, page, src->phys, q, k,
				       huge ? RUMA_AREA_POPULATE : RUMA_AREA_MAP_POPULATE, NULL);
	if (rc) {
		(void)ruma_area_map_run(s->area, page, src->phys, src->first + page, k,
					RUMA_AREA_RDONLY, NULL);
		(void)ruma_phys_free(src->phys, q, k);
		return rc;
	}
	if (huge)
		memcpy(s->data + page * src->page, from, bytes);
	for (size_t i = 0; i < k; i++)
		s->copied[page + i] = q + i;
	s->pages_copied += k;
	return 0;
}

int ruma_snap_make_writable(ruma_snap *s, size_t first, size_t n)
{
	size_t pages = s->src->pages;

	if (first >= pages || n > pages - first || n == 0)
		return -EINVAL;
	if (s->method != RUMA_SNAP_REWIRED_COW)
		return 0;
	for (size_t i = 0; i < n;) {
		if (s->copied[first + i] != RUMA_AREA_NONE) {
			i++;
			continue;
		}
		size_t k = uncopied_run(s, first + i, n - i);
		int rc = rewired_copy_run(s, first + i, k);
		if (rc)
			return rc;
		i += k;
	}
	return 0;
}

int ruma_snap_page_writable(ruma_snap *s, size_t page, void **addr)
{
	if (page >= s->src->pages)
		return -EINVAL;
	int rc = ruma_snap_make_writable(s, page, 1);
	if (rc)
		return rc;
	if (addr)
		*addr = s->data + page * s->src->page;
	return 0;
}

int ruma_snap_write(ruma_snap *s, size_t off, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	size_t page_size = s->src->page;

	if (off > s->src->bytes || len > s->src->bytes - off)
		return -EINVAL;
	if (len) { /* every page of the range at once: one copy and one mmap per run */
		int rc = ruma_snap_make_writable(s, off / page_size,
						 (off + len - 1) / page_size - off / page_size + 1);
		if (rc)
			return rc;
	}
	while (len) {
		size_t page = off / page_size, in = off % page_size;
		size_t k = RUMA_MIN(len, page_size - in);
		void *addr;
		int rc = ruma_snap_page_writable(s, page, &addr);
		if (rc)
			return rc;
		memcpy((unsigned char *)addr + in, b, k);
		b += k;
		off += k;
		len -= k;
	}
	return 0;
}
