/*
 * snapshot.c — copies and copy-on-write snapshots of a memfd array
 * (snapshot.h): memcpy, kernel COW (MAP_PRIVATE view), chunk-shuffled COW
 * views, chunk-shuffled memcpy, and the rewired COW.
 *
 * Invariants:
 *   - a file source owns a phys pool and the run [first, first + pages) of
 *     it, mapped MAP_SHARED with one mmap once ruma_snap_src_map ran (data
 *     is NULL before); an anonymous source owns one private anonymous
 *     mapping and no pool;
 *   - COW and SHUFFLE snapshots own one mapping of map_bytes bytes of the
 *     source's file (SHUFFLE replaces it chunk by chunk, MAP_FIXED); no
 *     table: each costs the kernel's work and nothing more;
 *   - a REWIRED_COW snapshot owns an area of pages + 1 virtual pages (the
 *     last one is never mapped); snapshot page i maps source page i or its
 *     private copy, which comes from the source's pool and is freed with
 *     the snapshot;
 *   - REWIRED_COW: copied[i] is the pool page of snapshot page i's private
 *     copy (wired read-write), KERNEL_COPY (a short run left to the
 *     kernel's COW of the private view) or RUMA_AREA_NONE (the source page:
 *     read-only and shared when rewire_min is 1, else private and writable,
 *     so a direct store makes a kernel copy that copied[] does not know of);
 *     copies are made per run of uncopied pages of at least rewire_min
 *     pages: one mmap per run, whatever the number of pages, filled by one
 *     pwrite (shared view), by one pwritev per 64 pages (private view) or
 *     by UFFDIO_COPY (2 MiB);
 *   - pagemap_fd and uffd belong to the process fd_owner; another process
 *     (a forked child) opens its own;
 *   - a copy snapshot (MEMCPY, MEMCPY_SHUFFLE) owns an anonymous mapping;
 *   - chunk k covers pages [k*ppc, min((k+1)*ppc, pages)); only full chunks
 *     are permuted, a shorter last chunk stays last: order[last] == last.
 *
 * Syscalls: phys.h for the memfd (memfd_create, ftruncate; a 2 MiB pool
 * without the creation probe and without ftruncate, since the source's
 * writable MAP_SHARED mapping reserves its huge pages or fails with ENOMEM,
 * and sizes the file); the os layer for the
 * source and view mappings (mmap, munmap), MADV_POPULATE_READ (populate by
 * read faults: fault-around on the file, COW pages stay shared), the
 * anonymous buffers, pwrite / pwritev, which fill a run of fresh pool pages
 * with a rewired copy (4 KiB), pread of /proc/self/pagemap (which pages of a
 * private view the kernel copied), userfaultfd with UFFDIO_REGISTER,
 * UFFDIO_COPY and UFFDIO_UNREGISTER, which fill fresh 2 MiB copies without
 * zeroing them first; area.h for the REWIRED_COW mappings.
 *
 * A rewired copy is written before it is wired: the pwrite fills the fresh
 * pool pages without a mapping or a fault, and one mmap (MAP_POPULATE) then
 * wires them read-write with their page tables filled.  A run of pages costs
 * those two calls whatever its length; for a single page the mmap's change
 * of the mapping tree is most of the cost, about twice the kernel's whole
 * COW fault (docs/bench/structures.md).  So by default single pages and
 * runs shorter than 16 pages are left to the kernel: the view is mapped
 * MAP_PRIVATE and writable, and the kernel copies each such page at its
 * first write.
 */
#include <ruma/snapshot.h>
#include <ruma/area.h>
#include <ruma/core.h>
#include <ruma/phys.h>
#include <ruma/sysinfo.h>

#include "os/os.h"
#include "rewire/rewire_ext.h"
#include "rwstruct/rwstruct_ext.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

struct ruma_snap_src {
	ruma_phys *phys;       /* NULL for an anonymous source */
	uint64_t first;        /* first pool page */
	size_t bytes, page, pages;
	unsigned flags;        /* RUMA_SNAP_SRC_* of its creation */
	unsigned char *data;   /* NULL until mapped */
};

struct ruma_snap {
	ruma_snap_src *src;
	ruma_snap_method method;
	size_t ppc, nchunks;
	uint64_t *order;       /* owned unless order_borrowed; NULL: identity, made on demand */
	bool order_borrowed, populate, private_view, noreserve, built;
	unsigned char *data;
	size_t map_bytes;      /* MEMCPY, MEMCPY_SHUFFLE, COW, SHUFFLE: the mapping's length */
	ruma_area *area;       /* REWIRED_COW */
	uint64_t *copied;      /* REWIRED_COW: pool page of the private copy, KERNEL_COPY or
				* RUMA_AREA_NONE */
	size_t rewire_min;     /* REWIRED_COW: shortest run rewired; 1: a read-only shared view */
	int pagemap_fd;        /* private view: /proc/self/pagemap; -1 not opened, -2 unusable */
	int uffd;              /* 2 MiB copies: a userfaultfd; -1 not opened, -2 unusable */
	pid_t fd_owner;        /* the process pagemap_fd and uffd belong to; 0 until the
				* first use, so ruma_snap_reserve makes no syscall but mmap */
	uint64_t pages_copied;
};

/* copied[i] of a page left to the kernel's COW of the private view (hybrid mode). */
#define KERNEL_COPY (UINT64_MAX - 1)

/* REWIRED_COW 4 KiB: runs shorter than this are left to the kernel (docs/structures.md). */
#define DEFAULT_REWIRE_MIN 16u

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

static bool is_huge(size_t page)
{
	return page == RUMA_PAGE_2M;
}

/*
 * Fill the page tables of [p, p + len) without writing: MADV_POPULATE_READ
 * (read faults, so a file mapping gets fault-around and a private one keeps
 * sharing the file's pages); before 5.14 (EINVAL) one read per page.
 */
static int populate_read(unsigned char *p, size_t len, size_t page)
{
	int rc = ruma_os_madvise(p, len, MADV_POPULATE_READ);

	if (rc == -EINVAL) {
		for (size_t o = 0; o < len; o += page)
			(void)*(volatile unsigned char *)(p + o);
		return 0;
	}
	return rc && is_huge(page) && (rc == -ENOMEM || rc == -EFAULT) ? RUMA_ENOHUGE : rc;
}

/* ---- source ------------------------------------------------------------------ */

#define SRC_FLAGS \
	(RUMA_SNAP_SRC_HUGE | RUMA_SNAP_SRC_POPULATE | RUMA_SNAP_SRC_ANON | RUMA_SNAP_SRC_NORESERVE)

/* Known flags, bytes > 0, and no mapping flag on an anonymous source. */
static bool src_options_ok(const ruma_snap_src_options *o)
{
	if (!o || !o->bytes || (o->flags & ~SRC_FLAGS))
		return false;
	return !(o->flags & RUMA_SNAP_SRC_ANON) ||
	       !(o->flags & (RUMA_SNAP_SRC_POPULATE | RUMA_SNAP_SRC_NORESERVE));
}

static ruma_snap_src *src_new(const ruma_snap_src_options *o)
{
	ruma_snap_src *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->bytes = o->bytes;
	s->flags = o->flags;
	s->page = o->flags & RUMA_SNAP_SRC_HUGE ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	s->pages = (o->bytes + s->page - 1) / s->page;
	return s;
}

int ruma_snap_src_open(const ruma_snap_src_options *o, ruma_snap_src **out)
{
	ruma_snap_src *s;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!src_options_ok(o) || (o->flags & RUMA_SNAP_SRC_ANON))
		return -EINVAL;
	s = src_new(o);
	if (!s)
		return -ENOMEM;
	/*
	 * 2 MiB: no probe and no ftruncate.  The source's one writable mapping
	 * (ruma_snap_src_map) reserves the huge pages and sizes the file; every
	 * other mapping of it (snapshots, copied pages) comes after that one or
	 * is writable itself.
	 */
	unsigned flags = is_huge(s->page) ? RUMA_PHYS_NO_PROBE | RUMA_PHYS_SIZE_BY_MAP : 0;
	ruma_phys_options po = { .page_size = s->page, .flags = flags };
	rc = ruma_phys_create(&po, &s->phys);
	if (!rc)
		rc = ruma_phys_alloc(s->phys, s->pages, &s->first);
	if (rc) {
		ruma_snap_src_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

int ruma_snap_src_map(ruma_snap_src *s)
{
	void *m;

	if (!s || s->data || !s->phys)
		return -EINVAL;
	/* hugetlb: MAP_SHARED without MAP_NORESERVE reserves the pages now or fails */
	int mflags = MAP_SHARED | (s->flags & RUMA_SNAP_SRC_POPULATE ? MAP_POPULATE : 0) |
		     (s->flags & RUMA_SNAP_SRC_NORESERVE ? MAP_NORESERVE : 0);
	int rc = ruma_os_mmap(NULL, s->pages * s->page, PROT_READ | PROT_WRITE, mflags,
			      ruma_phys_fd(s->phys), (off_t)ruma_phys_offset(s->phys, s->first), &m);
	if (rc)
		return ruma_area_map_error(rc, is_huge(s->page));
	s->data = m;
	return 0;
}

/* An anonymous source: one private mapping, no pool. */
static int src_create_anon(const ruma_snap_src_options *o, ruma_snap_src **out)
{
	ruma_snap_src *s = src_new(o);
	bool huge = o->flags & RUMA_SNAP_SRC_HUGE;
	void *m;

	if (!s)
		return -ENOMEM;
	int rc = ruma_os_mmap(NULL, s->pages * s->page, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : MAP_NORESERVE), -1,
			      0, &m);
	if (rc) {
		free(s);
		return ruma_area_map_error(rc, huge);
	}
	s->data = m;
	*out = s;
	return 0;
}

int ruma_snap_src_create(const ruma_snap_src_options *o, ruma_snap_src **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!src_options_ok(o))
		return -EINVAL;
	if (o->flags & RUMA_SNAP_SRC_ANON)
		return src_create_anon(o, out);
	int rc = ruma_snap_src_open(o, out);
	if (!rc) {
		rc = ruma_snap_src_map(*out);
		if (rc) {
			ruma_snap_src_destroy(*out);
			*out = NULL;
		}
	}
	return rc;
}

void ruma_snap_src_destroy(ruma_snap_src *s)
{
	if (!s)
		return;
	if (s->data)
		(void)ruma_os_munmap(s->data, s->pages * s->page);
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

static bool shuffled(ruma_snap_method m)
{
	return m == RUMA_SNAP_SHUFFLE || m == RUMA_SNAP_MEMCPY_SHUFFLE;
}

static bool is_copy(ruma_snap_method m)
{
	return m == RUMA_SNAP_MEMCPY || m == RUMA_SNAP_MEMCPY_SHUFFLE;
}

/* order[k] for nchunks chunks: o->order when given, else only full chunks shuffled. */
static int make_order(ruma_snap *s, const ruma_snap_options *o)
{
	size_t pages = s->src->pages, full = pages / s->ppc;
	ruma_rng rng;

	if (!shuffled(s->method))
		return 0; /* the identity, made by ruma_snap_chunk_order if asked */
	if (o->order) { /* checked by ruma_snap_build (order_valid), outside the reservation */
		s->order = (uint64_t *)o->order;
		s->order_borrowed = true;
		return 0;
	}
	s->order = malloc(s->nchunks * sizeof(*s->order));
	if (!s->order)
		return -ENOMEM;
	for (size_t k = 0; k < s->nchunks; k++)
		s->order[k] = k;
	ruma_rng_seed(&rng, o->seed);
	ruma_rng_shuffle_u64(&rng, s->order, full);
	return 0;
}

static size_t chunk_pages(const ruma_snap *s, uint64_t k)
{
	size_t first = k * s->ppc;
	return RUMA_MIN(s->ppc, s->src->pages - first);
}

/* MEMCPY, MEMCPY_SHUFFLE: the destination buffer (anonymous; 2 MiB pages for a huge source). */
static int reserve_copy(ruma_snap *s, const ruma_snap_options *o)
{
	ruma_snap_src *src = s->src;
	bool huge = is_huge(src->page);
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : MAP_NORESERVE);
	void *m;

	s->map_bytes = src->pages * src->page;
	int rc = ruma_os_mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE,
			      flags | (o->populate ? MAP_POPULATE : 0), -1, 0, &m);
	if (rc)
		return ruma_area_map_error(rc, huge);
	s->data = m;
	if (o->init_dst)
		memset(s->data, 0, s->map_bytes);
	return 0;
}

static void build_copy(ruma_snap *s)
{
	ruma_snap_src *src = s->src;
	size_t cb = s->ppc * src->page;

	if (s->method == RUMA_SNAP_MEMCPY) {
		memcpy(s->data, src->data, s->map_bytes);
		return;
	}
	for (size_t k = 0; k < s->nchunks; k++)
		memcpy(s->data + k * cb, src->data + s->order[k] * cb,
		       chunk_pages(s, s->order[k]) * src->page);
}

/*
 * COW, SHUFFLE: one mapping of the source's file range (MAP_PRIVATE for
 * COW and private views, else MAP_SHARED).  For COW this is the snapshot;
 * SHUFFLE maps its chunks over it.  A private hugetlb view keeps its
 * reservation (no MAP_NORESERVE), so a copy-on-write fault cannot run out
 * of huge pages, unless the options ask for noreserve; a shared one is
 * backed by the source's reservation.
 */
static int reserve_view(ruma_snap *s)
{
	ruma_snap_src *src = s->src;
	bool priv = s->method == RUMA_SNAP_COW || s->private_view;
	void *m;

	s->map_bytes = src->pages * src->page;
	int rc = ruma_os_mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE,
			      priv ? MAP_PRIVATE | (s->noreserve ? MAP_NORESERVE : 0)
				   : MAP_SHARED | MAP_NORESERVE,
			      ruma_phys_fd(src->phys),
			      (off_t)ruma_phys_offset(src->phys, src->first), &m);
	if (rc)
		return ruma_area_map_error(rc, is_huge(src->page));
	s->data = m;
	return 0;
}

/* Chunks from which build_shuffle checks the mapping limit first (cheaper than that many mmaps). */
#define SHUFFLE_CHECK_CHUNKS 4096u

/*
 * Would the chunk mappings exceed vm.max_map_count?  Each run of chunks
 * whose source chunks follow each other becomes one kernel mapping.
 */
static bool shuffle_over_map_limit(const ruma_snap *s)
{
	uint64_t runs = 1, now, max;

	for (size_t k = 1; k < s->nchunks; k++)
		runs += s->order[k] != s->order[k - 1] + 1;
	return ruma_sysinfo_map_count(&now) == 0 && ruma_sysinfo_max_map_count(&max) == 0 && now + runs + 2 > max;
}

/*
 * SHUFFLE: snapshot chunk k maps source chunk order[k], one mmap per chunk.
 * With many chunks the mapping limit is checked first, so a build that
 * cannot finish fails before it maps anything.
 */
static int build_shuffle(ruma_snap *s)
{
	ruma_snap_src *src = s->src;
	int flags = MAP_FIXED | (s->private_view ? MAP_PRIVATE | (s->noreserve ? MAP_NORESERVE : 0)
						 : MAP_SHARED | MAP_NORESERVE);
	size_t cb = s->ppc * src->page;
	int fd = ruma_phys_fd(src->phys);

	if (s->nchunks >= SHUFFLE_CHECK_CHUNKS && shuffle_over_map_limit(s))
		return RUMA_EMAPLIMIT;
	for (size_t k = 0; k < s->nchunks; k++) {
		uint64_t from = src->first + s->order[k] * s->ppc;
		void *at;
		int rc = ruma_os_mmap(s->data + k * cb, chunk_pages(s, s->order[k]) * src->page,
				      PROT_READ | PROT_WRITE, flags, fd,
				      (off_t)ruma_phys_offset(src->phys, from), &at);
		if (rc)
			return ruma_area_map_error(rc, is_huge(src->page));
	}
	return 0;
}

/* How REWIRED_COW maps the source's pages into the view. */
static unsigned view_flags(const ruma_snap *s)
{
	return s->rewire_min > 1 ? RUMA_AREA_PRIVATE : RUMA_AREA_RDONLY;
}

/*
 * REWIRED_COW: an area whose pages map the source's pages, read-only and
 * shared when every page is rewired (rewire_min 1, and always for 2 MiB
 * pages: a private hugetlb view would reserve a second copy of the whole
 * source), else MAP_PRIVATE and writable so that the kernel copies the pages
 * of short runs.
 */
static int reserve_rewired(ruma_snap *s, const ruma_snap_options *o)
{
	ruma_snap_src *src = s->src;

	s->rewire_min = is_huge(src->page) ? 1 : o->rewire_min_pages ? o->rewire_min_pages
								      : DEFAULT_REWIRE_MIN;
	int rc = ruma_area_create(src->page, src->pages + 1, &s->area);
	if (rc)
		return rc;
	s->data = ruma_area_base(s->area);
	s->copied = malloc(src->pages * sizeof(*s->copied));
	if (!s->copied)
		return -ENOMEM;
	for (size_t i = 0; i < src->pages; i++)
		s->copied[i] = RUMA_AREA_NONE;
	return ruma_area_map_run(s->area, 0, src->phys, src->first, src->pages,
				 (s->populate ? RUMA_AREA_POPULATE : 0) | view_flags(s), NULL);
}

int ruma_snap_reserve(const ruma_snap_options *o, ruma_snap_src *src, ruma_snap **out)
{
	ruma_snap_options def;
	ruma_snap *s;
	int rc;

	if (!out || !src || !src->data)
		return -EINVAL;
	*out = NULL;
	if (!o) {
		ruma_snap_options_default(&def);
		o = &def;
	}
	if ((unsigned)o->method >= RUMA_SNAP_METHOD_COUNT_ || (!src->phys && !is_copy(o->method)))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->src = src;
	s->pagemap_fd = -1;
	s->uffd = -1;
	s->method = o->method;
	s->populate = o->populate;
	s->private_view = o->private_view;
	s->noreserve = o->noreserve;
	s->ppc = shuffled(s->method) && o->pages_per_chunk ? o->pages_per_chunk : 1;
	s->nchunks = (src->pages + s->ppc - 1) / s->ppc;
	rc = make_order(s, o);
	if (!rc) {
		if (is_copy(s->method))
			rc = reserve_copy(s, o);
		else if (s->method == RUMA_SNAP_REWIRED_COW)
			rc = reserve_rewired(s, o);
		else
			rc = reserve_view(s);
	}
	if (rc) {
		ruma_snap_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* A borrowed order names every chunk within range and keeps a shorter last chunk last. */
static bool order_valid(const ruma_snap *s)
{
	size_t full = s->src->pages / s->ppc;

	for (size_t k = 0; k < s->nchunks; k++)
		if (s->order[k] >= s->nchunks || (k >= full && s->order[k] != k))
			return false;
	return true;
}

int ruma_snap_build(ruma_snap *s)
{
	int rc = 0;

	if (!s)
		return -EINVAL;
	if (s->built)
		return 0;
	if (s->order_borrowed && !order_valid(s))
		return -EINVAL;
	if (is_copy(s->method))
		build_copy(s);
	else if (s->method == RUMA_SNAP_SHUFFLE)
		rc = build_shuffle(s);
	if (!rc && s->populate && !is_copy(s->method) && s->method != RUMA_SNAP_REWIRED_COW)
		rc = populate_read(s->data, s->map_bytes, s->src->page);
	if (!rc)
		s->built = true;
	return rc;
}

int ruma_snap_create(const ruma_snap_options *o, ruma_snap_src *src, ruma_snap **out)
{
	int rc = ruma_snap_reserve(o, src, out);

	if (!rc) {
		rc = ruma_snap_build(*out);
		if (rc) {
			ruma_snap_destroy(*out);
			*out = NULL;
		}
	}
	return rc;
}

/* Close the lazily opened pagemap and userfaultfd descriptors; the next use opens them again. */
static void close_descriptors(ruma_snap *s)
{
	if (s->pagemap_fd >= 0)
		close(s->pagemap_fd);
	if (s->uffd >= 0)
		close(s->uffd);
	s->pagemap_fd = s->uffd = -1;
}

/* Give the private copies back to the pool, one free (one hole punch) per run of pool pages. */
static void free_copies(ruma_snap *s)
{
	for (size_t i = 0; i < s->src->pages;) {
		uint64_t q = s->copied[i];
		size_t k = 1;
		if (q == RUMA_AREA_NONE || q == KERNEL_COPY) {
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
	close_descriptors(s);
	if (!s->order_borrowed)
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
	ruma_snap *m = (ruma_snap *)s; /* the identity is made on first use: a cache */

	if (!m->order) {
		m->order = malloc(s->nchunks * sizeof(*m->order));
		for (size_t k = 0; m->order && k < s->nchunks; k++)
			m->order[k] = k;
	}
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
 * After a failed mmap of the copies over [page, page + k): map the source's
 * pages there again and, for a private view, put the content the run had
 * back from the copies (the kernel copies those pages again), so that a
 * direct store made before the call is not lost.  A MAP_FIXED mmap that
 * fails may have removed the old mapping, so this runs whatever the cause.
 */
static int restore_run(ruma_snap *s, size_t page, size_t k, uint64_t q)
{
	ruma_snap_src *src = s->src;
	int rc = ruma_area_map_run(s->area, page, src->phys, src->first + page, k, view_flags(s),
				   NULL);

	if (rc || s->rewire_min == 1)
		return rc;
	return ruma_os_pread_full(ruma_phys_fd(src->phys), s->data + page * src->page,
				  k * src->page, (off_t)ruma_phys_offset(src->phys, q));
}

/* Wire pool pages [q, q + k) read-write over snapshot pages [page, page + k). */
static int wire_copies(ruma_snap *s, size_t page, size_t k, uint64_t q)
{
	bool huge = ruma_phys_is_huge(s->src->phys);

	return ruma_area_map_run(s->area, page, s->src->phys, q, k,
				 huge ? 0 : RUMA_AREA_MAP_POPULATE, NULL);
}

/*
 * /proc/self/pagemap and a userfaultfd describe the memory of the process
 * that opened them, and a child made by fork inherits both: a child that
 * used its parent's would read the parent's page tables or register ranges
 * in the parent.  So a process uses only descriptors it opened itself.
 */
static void own_descriptors(ruma_snap *s)
{
	pid_t me = getpid();

	if (s->fd_owner == me)
		return;
	close_descriptors(s);
	s->fd_owner = me;
}

/* Pages a pagemap lookup covers at a time (one pread, one pwritev). */
#define PAGEMAP_BATCH 64u
#define PM_PRESENT (1ull << 63)
#define PM_SWAP (1ull << 62)
#define PM_FILE (1ull << 61)

/*
 * Whether each of pages [page, page + n) of the private view (n <=
 * PAGEMAP_BATCH) may hold a private copy made by the kernel: its
 * /proc/self/pagemap entry is present and anonymous, or swapped out.  A
 * page never touched or mapping the file's page reads the source.  False
 * (and the pagemap given up) when /proc cannot be read: the caller then
 * copies every page from the view, which is always right.
 */
static bool private_pages(ruma_snap *s, size_t page, size_t n, bool *priv)
{
	uint64_t pm[PAGEMAP_BATCH];
	uint64_t vpn = (uint64_t)(uintptr_t)(s->data + page * s->src->page) / s->src->page;

	if (s->pagemap_fd == -1 &&
	    ruma_os_open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0, &s->pagemap_fd) != 0)
		s->pagemap_fd = -2;
	if (s->pagemap_fd < 0)
		return false;
	if (ruma_os_pread_full(s->pagemap_fd, pm, n * sizeof(pm[0]), (off_t)(vpn * sizeof(pm[0])))) {
		close(s->pagemap_fd);
		s->pagemap_fd = -2;
		return false;
	}
	for (size_t i = 0; i < n; i++)
		priv[i] = (pm[i] & PM_SWAP) || ((pm[i] & PM_PRESENT) && !(pm[i] & PM_FILE));
	return true;
}

/*
 * Fill k fresh pool pages at file offset off with the content of snapshot
 * pages [page, page + k) of a private view: one pwritev per batch, each
 * page taken from the source's mapping (its page tables are filled) unless
 * the kernel made a private copy of it after a direct store, which is taken
 * from the view.  Copying from the view alone would be right too, but its
 * untouched pages would be faulted in only to be read once.
 */
static int fill_from_private_view(ruma_snap *s, size_t page, size_t k, off_t off)
{
	size_t ps = s->src->page;
	int fd = ruma_phys_fd(s->src->phys);

	for (size_t b = 0; b < k; b += PAGEMAP_BATCH) {
		size_t n = RUMA_MIN(PAGEMAP_BATCH, k - b), niov = 0;
		struct iovec iov[PAGEMAP_BATCH];
		bool priv[PAGEMAP_BATCH];
		bool known = private_pages(s, page + b, n, priv);
		for (size_t i = 0; i < n; i++) {
			bool view = !known || priv[i];
			unsigned char *at = (view ? s->data : s->src->data) + (page + b + i) * ps;
			if (niov && (unsigned char *)iov[niov - 1].iov_base + iov[niov - 1].iov_len == at)
				iov[niov - 1].iov_len += ps;
			else
				iov[niov++] = (struct iovec){ .iov_base = at, .iov_len = ps };
		}
		int rc = ruma_os_pwritev_full(fd, iov, (int)niov, off + (off_t)(b * ps));
		if (rc)
			return rc;
	}
	return 0;
}

/* Give up UFFDIO_COPY for this snapshot (its copies are memcpy'd from now on). */
static void drop_uffd(ruma_snap *s)
{
	if (s->uffd >= 0)
		close(s->uffd);
	s->uffd = -2;
}

/*
 * A userfaultfd for UFFDIO_COPY into hugetlbfs pages, opened on first use;
 * -1 when the kernel or its settings offer none (then memcpy is used).
 */
static int huge_uffd(ruma_snap *s)
{
	if (s->uffd == -1) {
		int fd = -1;
		if (ruma_os_userfaultfd(&fd) == 0 &&
		    ruma_os_uffdio_api(fd, UFFD_FEATURE_MISSING_HUGETLBFS, NULL) == 0) {
			s->uffd = fd;
		} else {
			if (fd >= 0)
				close(fd);
			s->uffd = -2;
		}
	}
	return s->uffd >= 0 ? s->uffd : -1;
}

/*
 * Fill the fresh 2 MiB pool pages [q, q + k), just wired read-write over
 * snapshot pages [page, page + k) (their reservation taken by the mapping,
 * not yet faulted), from the source at from.  UFFDIO_COPY allocates, copies
 * and maps each page without zeroing it first, where faulting it in and
 * copying (the fallback) clears 2 MiB before overwriting it.  Whatever the
 * copy left undone is memcpy'd.  The range never stays registered: if
 * unregistering fails, the run is wired again (a fresh mapping carries no
 * registration; closing the descriptor would not drop it while a forked
 * child holds a copy of it).  Returns 0 or the error of that wiring.
 */
static int fill_huge(ruma_snap *s, size_t page, size_t k, uint64_t q, const unsigned char *from)
{
	unsigned char *dst = s->data + page * s->src->page;
	size_t len = k * s->src->page, done = 0;
	int fd = huge_uffd(s);

	if (fd >= 0 && ruma_os_uffdio_register(fd, dst, len, UFFDIO_REGISTER_MODE_MISSING) != 0) {
		drop_uffd(s);
	} else if (fd >= 0) {
		(void)ruma_os_uffdio_copy(fd, dst, from, len, 0, &done);
		if (ruma_os_uffdio_unregister(fd, dst, len) != 0) {
			drop_uffd(s);
			int rc = wire_copies(s, page, k, q);
			if (rc)
				return rc;
		}
	}
	if (done < len)
		memcpy(dst + done, from + done, len - done);
	return 0;
}

/*
 * Rewired COW of the run [page, page + k): take k contiguous pool pages,
 * fill them with a copy of the snapshot's pages and wire them over the
 * snapshot pages read-write with one mmap.  4 KiB: one pwrite (shared
 * view) or pwritev per 64 pages (private view, fill_from_private_view)
 * fills the pool pages — tmpfs allocates them and copies, no zeroing and no
 * fault — and the mmap fills the page tables (MAP_POPULATE), so a write
 * after it takes no fault.  2 MiB (hugetlbfs has no write()): the pool
 * pages are wired first and filled from the source by fill_huge.  On
 * failure the snapshot reads what it read before and nothing is kept —
 * unless the view cannot be put back either (restore_run): then the copies
 * are wired again, and the run counts as copied if that works.
 */
static int rewired_copy_run(ruma_snap *s, size_t page, size_t k)
{
	ruma_snap_src *src = s->src;
	size_t bytes = k * src->page;
	const unsigned char *from = src->data + page * src->page;
	bool huge = ruma_phys_is_huge(src->phys);
	uint64_t q;
	int rc;

	own_descriptors(s);
	rc = ruma_phys_alloc(src->phys, k, &q);
	if (rc)
		return rc;
	if (!huge && s->rewire_min == 1)
		rc = ruma_os_pwrite_full(ruma_phys_fd(src->phys), from, bytes,
					 (off_t)ruma_phys_offset(src->phys, q));
	else if (!huge)
		rc = fill_from_private_view(s, page, k, (off_t)ruma_phys_offset(src->phys, q));
	if (rc) {
		(void)ruma_phys_free(src->phys, q, k);
		return rc;
	}
	rc = wire_copies(s, page, k, q);
	if (rc && restore_run(s, page, k, q) != 0 && wire_copies(s, page, k, q) == 0)
		rc = 0; /* the old view could not be put back, the copies could: keep them */
	if (!rc && huge) {
		rc = fill_huge(s, page, k, q, from);
		if (rc)
			(void)restore_run(s, page, k, q);
	}
	if (rc) {
		(void)ruma_phys_free(src->phys, q, k);
		return rc;
	}
	for (size_t i = 0; i < k; i++)
		s->copied[page + i] = q + i;
	s->pages_copied += k;
	return 0;
}

/*
 * A run shorter than rewire_min in a private view: the kernel copies each
 * page on its first write, cheaper than a change of the mapping.
 */
static void leave_to_kernel(ruma_snap *s, size_t page, size_t k)
{
	for (size_t i = 0; i < k; i++)
		s->copied[page + i] = KERNEL_COPY;
	s->pages_copied += k;
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
		if (k < s->rewire_min) {
			leave_to_kernel(s, first + i, k);
		} else {
			int rc = rewired_copy_run(s, first + i, k);
			if (rc)
				return rc;
		}
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
