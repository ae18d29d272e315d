/*
 * m_copy.c — the copy and copy-on-write methods of `ruma micro`:
 *   1       malloc'ed src, memcpy into a malloc'ed dst
 *   2-5     src in a memfd page pool; dst a kernel COW view (MAP_PRIVATE of
 *           the same pages) — snapshot.h RUMA_SNAP_COW; populate; 2 MiB pages
 *   6-9     dst built chunk by chunk from a random permutation of src's
 *           chunks, one mapping per chunk (snapshot.h RUMA_SNAP_SHUFFLE)
 *   10, 11  the same permutation copied with memcpy (RUMA_SNAP_MEMCPY_SHUFFLE;
 *           11: 2 MiB chunks of ordinary memory, as the original, or of
 *           hugetlb pages with --hugetlb)
 *   15, 16  the permutation built with remap_file_pages on one MAP_SHARED
 *           mapping of the pool (dst is then a shared view: writes to dst
 *           show in src, as in the original)
 *   20      dst is one contiguous COW view whose whole 2 MiB part comes from
 *           a 2 MiB-page pool and whose tail comes from a 4 KiB-page pool
 *   32      map and populate: the mapping is the source array (as in the
 *           original), of a memfd pool or anonymous, shared or private,
 *           populated by MAP_POPULATE or by a prefault thread that reads
 *           every page while the test runs, the file zeroed first or not,
 *           mapped in one call or page by page in shuffled order
 * Invariants: each builder either returns 0 with d->cleanup set, or frees
 * everything it made and returns the error.  src[i] == i after init.
 * Syscalls: through phys.h/snapshot.h, and the OS layer's mmap, munmap and
 * remap_file_pages (ruma_mmap, ruma_munmap, ruma_remap_file_pages) for the
 * raw views of methods 15/16, 20 and 32; pthread_create/join for 32's
 * prefault thread.
 */
#include "bench/micro/micro.h"

#include <ruma/core.h>
#include "core/core_ext.h"

#include <ruma/phys.h>
#include <ruma/snapshot.h>
#include "rwstruct/rwstruct_ext.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void init_values(uint64_t *a, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		a[i - from] = i;
}

/* ---- 1: memcpy ------------------------------------------------------------------ */

static void memcpy_cleanup(micro_data *d)
{
	free(d->src);
	printf("Freeing %s\n", micro_field_name(MF_MALLOC_SRC));
	free(d->dst);
	printf("Freeing %s\n", micro_field_name(MF_MALLOC_DST));
}

int micro_build_memcpy(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	(void)p;
	d->kind = MICRO_CONTIG;
	d->n = n;
	micro_phase_begin(c);
	d->src = malloc(n * sizeof(uint64_t));
	micro_phase_end(c, MF_MALLOC_SRC);
	if (!d->src)
		return micro_fail("malloc src", -ENOMEM);
	micro_phase_begin(c);
	init_values(d->src, 0, n);
	micro_phase_end(c, MF_INIT_MALLOC_SRC);
	micro_phase_begin(c);
	d->dst = malloc(n * sizeof(uint64_t));
	micro_phase_end(c, MF_MALLOC_DST);
	if (!d->dst) {
		free(d->src);
		return micro_fail("malloc dst", -ENOMEM);
	}
	micro_phase_begin(c);
	memcpy(d->dst, d->src, n * sizeof(uint64_t));
	micro_phase_end(c, MF_MEMCPY);
	d->cleanup = memcpy_cleanup;
	return 0;
}

/* A permutation of the full chunks; a shorter last chunk stays last. */
static uint64_t *chunk_permutation(size_t pages, size_t ppc, uint64_t seed, size_t *nchunks)
{
	size_t nc = (pages + ppc - 1) / ppc;

	*nchunks = nc;
	return micro_permutation(nc, pages / ppc, seed);
}

/* ---- 2-11: snapshots ------------------------------------------------------------------- */

typedef struct snap_priv {
	ruma_snap_src *src;
	ruma_snap *snap;
	uint64_t *order; /* the chunk order of a shuffled snapshot (borrowed by it) */
	micro_field src_fields[2], dst_fields[2];
} snap_priv;

static void snap_free(snap_priv *s)
{
	ruma_snap_destroy(s->snap);
	free(s->order);
	ruma_snap_src_destroy(s->src);
	free(s);
}

/* Free everything, then name the freed fields: the destination's, then the source's. */
static void snap_cleanup(micro_data *d)
{
	snap_priv *s = d->priv;
	micro_field fields[4] = { s->dst_fields[0], s->dst_fields[1], s->src_fields[0],
				  s->src_fields[1] };

	snap_free(s);
	for (int i = 0; i < 4; i++)
		if (fields[i])
			printf("Freeing %s\n", micro_field_name(fields[i]));
}

/*
 * The source in the original's phases: a memfd pool opened (shm-src or
 * shm-src-huge, as the original books it), mapped (mmap-src; populate as
 * the method asks) and written (init-shm-src); or, for the copy methods,
 * anonymous memory (malloc-src, init-malloc-src).
 */
static int snap_source(micro_ctx *c, size_t n, snap_priv *s, unsigned src_flags,
		       micro_field open_field, size_t unit)
{
	ruma_snap_src_options so = {
		.bytes = micro_round_up(n * sizeof(uint64_t), unit),
		.flags = src_flags,
	};
	bool anon = src_flags & RUMA_SNAP_SRC_ANON;
	int rc;

	if (anon) {
		micro_phase_begin(c);
		rc = ruma_snap_src_create(&so, &s->src);
		micro_phase_end(c, MF_MALLOC_SRC);
		if (rc)
			return micro_fail("allocating the source", rc);
		s->src_fields[0] = MF_MALLOC_SRC;
	} else {
		micro_phase_begin(c);
		rc = ruma_snap_src_open(&so, &s->src);
		micro_phase_end(c, open_field);
		if (rc)
			return micro_fail("creating the source's memfd page pool", rc);
		micro_phase_begin(c);
		rc = ruma_snap_src_map(s->src);
		micro_phase_end(c, MF_MMAP_SRC);
		if (rc)
			return micro_fail("mapping the source", rc);
		s->src_fields[0] = MF_MMAP_SRC;
		s->src_fields[1] = open_field;
	}
	micro_phase_begin(c);
	init_values(ruma_snap_src_data(s->src), 0, n);
	micro_phase_end(c, anon ? MF_INIT_MALLOC_SRC : MF_INIT_SHM_SRC);
	return 0;
}

/* The chunk order, drawn untimed as the original does (same draw as ruma_snap_options.seed). */
static int snap_order(micro_ctx *c, snap_priv *s, size_t ppc, micro_data *d,
		      ruma_snap_options *o)
{
	size_t page = ruma_snap_src_page_size(s->src);
	size_t pages = (ruma_snap_src_bytes(s->src) + page - 1) / page;

	s->order = chunk_permutation(pages, ppc, c->seed, &d->nchunks_perm);
	if (!s->order)
		return micro_fail("allocating the chunk order", -ENOMEM);
	o->order = s->order;
	d->chunk_perm = s->order;
	d->chunk_entries = ppc * page / sizeof(uint64_t);
	return 0;
}

static int snap_build(micro_ctx *c, size_t n, micro_data *d, snap_priv *s,
		      const ruma_snap_options *o, micro_field reserve_field,
		      micro_field build_field, bool init_dst)
{
	int rc;

	micro_phase_begin(c);
	rc = ruma_snap_reserve(o, s->src, &s->snap);
	if (!rc && !build_field)
		rc = ruma_snap_build(s->snap);
	micro_phase_end(c, reserve_field);
	if (rc)
		return micro_fail("creating the destination", rc);
	s->dst_fields[0] = reserve_field;
	if (init_dst) /* untimed, as in the original */
		memset(ruma_snap_data(s->snap), 0, ruma_snap_bytes(s->snap));
	if (build_field) {
		micro_phase_begin(c);
		rc = ruma_snap_build(s->snap);
		micro_phase_end(c, build_field);
		if (rc)
			return micro_fail("building the destination", rc);
	}
	d->kind = MICRO_CONTIG;
	d->n = n;
	d->src = ruma_snap_src_data(s->src);
	d->dst = ruma_snap_data(s->snap);
	return 0;
}

static int snap_method(micro_ctx *c, const micro_params *p, size_t n, micro_data *d,
		       ruma_snap_method method)
{
	snap_priv *s = calloc(1, sizeof(*s));
	bool huge = p->use_huge, shuffle = method != RUMA_SNAP_COW;
	bool copy = method == RUMA_SNAP_MEMCPY_SHUFFLE;
	/* 11 in ordinary memory: a chunk of 2 MiB is 512 pages of 4 KiB */
	size_t units = p->huge_units ? MICRO_HUGE_PAGE / MICRO_SMALL_PAGE : 1;
	ruma_snap_options o;
	int rc;

	if (!s)
		return micro_fail("allocating", -ENOMEM);
	ruma_snap_options_default(&o);
	o.method = method;
	o.pages_per_chunk = shuffle ? p->pages_per_chunk * units : 1;
	o.populate = !copy && p->populate_cow;
	/* 4 and 5 map source and view without reservation, as the original */
	o.noreserve = huge && !shuffle && !p->reserve;
	if (o.noreserve)
		micro_report_sigbus();
	/* 2-5 populate the source's mapping too; 6-9 only the snapshot */
	unsigned src_flags = (huge ? RUMA_SNAP_SRC_HUGE : 0) | (copy ? RUMA_SNAP_SRC_ANON : 0) |
			     (o.populate && !shuffle ? RUMA_SNAP_SRC_POPULATE : 0) |
			     (o.noreserve ? RUMA_SNAP_SRC_NORESERVE : 0);
	rc = snap_source(c, n, s, src_flags, huge && !shuffle ? MF_SHM_SRC_HUGE : MF_SHM_SRC,
			 units * MICRO_SMALL_PAGE);
	if (!rc && shuffle)
		rc = snap_order(c, s, o.pages_per_chunk, d, &o);
	if (!rc && method == RUMA_SNAP_COW)
		rc = snap_build(c, n, d, s, &o, MF_MMAP_DST, 0, false);
	else if (!rc && method == RUMA_SNAP_SHUFFLE)
		rc = snap_build(c, n, d, s, &o, MF_MMAP_DST, MF_REMAP_DST, false);
	else if (!rc)
		rc = snap_build(c, n, d, s, &o, MF_MALLOC_DST, MF_MEMCPY, p->init_dst);
	if (rc) {
		snap_free(s);
		d->chunk_perm = NULL;
		return rc;
	}
	if (copy)
		s->dst_fields[0] = MF_MALLOC_DST;
	/* a shuffled view maps the source's pages shared, as the original does */
	d->src_aliases_dst = method == RUMA_SNAP_SHUFFLE;
	d->priv = s;
	d->cleanup = snap_cleanup;
	return 0;
}

int micro_build_cow(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return snap_method(c, p, n, d, RUMA_SNAP_COW);
}

int micro_build_cow_shuffle(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return snap_method(c, p, n, d, RUMA_SNAP_SHUFFLE);
}

int micro_build_memcpy_shuffle(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	return snap_method(c, p, n, d, RUMA_SNAP_MEMCPY_SHUFFLE);
}

/* ---- 15, 16: remap_file_pages --------------------------------------------------------------- */

/*
 * A pool of `pages` pages of page_size and the run of all of them: memfd_create
 * and ftruncate.  2 MiB pools skip the creation probe: the MAP_SHARED
 * mapping made next reserves the huge pages or fails cleanly.
 */
static int pool_create(size_t page_size, size_t pages, ruma_phys **phys, uint64_t *first)
{
	ruma_phys_options o = { .page_size = page_size };
	int rc;

	if (page_size == RUMA_PAGE_2M)
		o.flags = RUMA_PHYS_NO_PROBE;
	rc = ruma_phys_create(&o, phys);
	if (!rc)
		rc = ruma_phys_alloc(*phys, pages, first);
	return rc;
}

typedef struct raw_priv {
	ruma_phys *phys, *phys2;
	void *src_map, *dst_map;
	size_t src_len, dst_len;
	uint64_t *perm;
	bool huge;
} raw_priv;

static void raw_free(raw_priv *r)
{
	if (r->dst_map)
		ruma_munmap(r->dst_map, r->dst_len);
	if (r->src_map)
		ruma_munmap(r->src_map, r->src_len);
	ruma_phys_destroy(r->phys);
	ruma_phys_destroy(r->phys2);
	free(r->perm);
	free(r);
}

static void rfp_cleanup(micro_data *d)
{
	raw_free(d->priv);
	printf("Freeing %s\n", micro_field_name(MF_MMAP_DST));
	printf("Freeing %s\n", micro_field_name(MF_MMAP_SRC));
	printf("Freeing %s\n", micro_field_name(MF_SHM_SRC));
}

int micro_build_cow_shuffle_rfp(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	size_t page = p->use_huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	size_t bytes = micro_round_up(n * sizeof(uint64_t), page), pages = bytes / page;
	size_t ppc = p->pages_per_chunk, nchunks = 0;
	raw_priv *r = calloc(1, sizeof(*r));
	uint64_t first = 0;
	int rc;

	if (!r)
		return micro_fail("allocating", -ENOMEM);
	r->huge = p->use_huge;
	d->kind = MICRO_CONTIG;
	d->n = n;
	micro_phase_begin(c);
	rc = pool_create(page, pages, &r->phys, &first);
	micro_phase_end(c, MF_SHM_SRC); /* the original's field for both page sizes */
	if (rc)
		goto fail;
	int fd = ruma_phys_fd(r->phys);
	off_t off = (off_t)ruma_phys_offset(r->phys, first);
	micro_phase_begin(c);
	r->src_len = bytes;
	rc = ruma_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off, &r->src_map);
	micro_phase_end(c, MF_MMAP_SRC);
	if (rc) {
		r->src_map = NULL;
		goto fail;
	}
	d->src = r->src_map;
	micro_phase_begin(c);
	init_values(d->src, 0, n);
	micro_phase_end(c, MF_INIT_SHM_SRC);
	r->perm = chunk_permutation(pages, ppc, c->seed, &nchunks);
	if (!r->perm) {
		rc = -ENOMEM;
		goto fail;
	}
	micro_phase_begin(c);
	r->dst_len = bytes;
	rc = ruma_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off, &r->dst_map);
	micro_phase_end(c, MF_MMAP_DST);
	if (rc) {
		r->dst_map = NULL;
		goto fail;
	}
	micro_phase_begin(c);
	for (size_t k = 0; k < pages / ppc && rc == 0; k++) {
		/* pgoff counts 4 KiB units of the file */
		size_t pgoff = (size_t)((uint64_t)off / 4096 + r->perm[k] * ppc * (page / 4096));
		rc = ruma_remap_file_pages((char *)r->dst_map + k * ppc * page, ppc * page, pgoff, 0);
	}
	micro_phase_end(c, MF_REMAP_DST);
	if (rc) {
		fprintf(stderr,
			"ruma micro: the kernel refused remap_file_pages (%s) for %s pages; this "
			"kernel cannot run method %d\n",
			ruma_strerror(rc), r->huge ? "2 MiB" : "4 KiB", r->huge ? 16 : 15);
		raw_free(r);
		return rc;
	}
	d->dst = r->dst_map;
	d->src_aliases_dst = true;
	d->chunk_perm = r->perm;
	d->nchunks_perm = nchunks;
	d->chunk_entries = ppc * page / sizeof(uint64_t);
	d->priv = r;
	d->cleanup = rfp_cleanup;
	return 0;
fail:
	raw_free(r);
	return micro_fail("method setup", rc);
}

/* ---- 20: mix huge and small pages ----------------------------------------------------------- */

static void mix_cleanup(micro_data *d)
{
	raw_free(d->priv);
	printf("Freeing %s\n", micro_field_name(MF_MMAP_DST));
	printf("Freeing %s\n", micro_field_name(MF_MMAP_SRC));
	printf("Freeing %s\n", micro_field_name(MF_SHM_SRC));
}

int micro_build_mix(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	size_t bytes = n * sizeof(uint64_t);
	size_t hbytes = p->use_huge ? bytes / RUMA_PAGE_2M * RUMA_PAGE_2M : 0;
	size_t tbytes = micro_round_up(bytes - hbytes, RUMA_PAGE_4K);
	size_t hn = hbytes / sizeof(uint64_t);
	raw_priv *r = calloc(1, sizeof(*r));
	uint64_t hfirst = 0, sfirst = 0;
	void *hview = NULL, *sview = NULL, *at;
	int rc = 0;

	if (!r)
		return micro_fail("allocating", -ENOMEM);
	d->kind = MICRO_CONTIG;
	d->n = n;
	/* both pools in one phase, as the original books its two files */
	micro_phase_begin(c);
	if (hbytes)
		rc = pool_create(RUMA_PAGE_2M, hbytes / RUMA_PAGE_2M, &r->phys2, &hfirst);
	if (!rc && tbytes)
		rc = pool_create(RUMA_PAGE_4K, tbytes / RUMA_PAGE_4K, &r->phys, &sfirst);
	micro_phase_end(c, MF_SHM_SRC);
	if (rc)
		goto fail;
	/* the sources: shared views of both pools */
	micro_phase_begin(c);
	if (hbytes)
		rc = ruma_mmap(NULL, hbytes, PROT_READ | PROT_WRITE, MAP_SHARED,
				  ruma_phys_fd(r->phys2), (off_t)ruma_phys_offset(r->phys2, hfirst),
				  &hview);
	if (!rc && tbytes)
		rc = ruma_mmap(NULL, tbytes, PROT_READ | PROT_WRITE, MAP_SHARED,
				  ruma_phys_fd(r->phys), (off_t)ruma_phys_offset(r->phys, sfirst),
				  &sview);
	micro_phase_end(c, MF_MMAP_SRC);
	if (rc)
		goto fail_views;
	micro_phase_begin(c);
	if (hbytes)
		init_values(hview, 0, hn);
	if (tbytes)
		init_values(sview, hn, n);
	micro_phase_end(c, MF_INIT_SHM_SRC);
	if (hview)
		ruma_munmap(hview, hbytes);
	if (sview)
		ruma_munmap(sview, tbytes);
	hview = sview = NULL;

	/* dst: one reservation, 2 MiB aligned; huge part and tail as private (COW) views */
	micro_phase_begin(c);
	r->dst_len = hbytes + tbytes + RUMA_PAGE_2M;
	rc = ruma_mmap(NULL, r->dst_len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &r->dst_map);
	if (rc) {
		r->dst_map = NULL;
		goto fail;
	}
	char *base = (char *)micro_round_up((size_t)r->dst_map, RUMA_PAGE_2M);
	if (hbytes)
		rc = ruma_mmap(base, hbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
				  ruma_phys_fd(r->phys2), (off_t)ruma_phys_offset(r->phys2, hfirst),
				  &at);
	if (!rc && tbytes)
		rc = ruma_mmap(base + hbytes, tbytes, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_FIXED, ruma_phys_fd(r->phys),
				  (off_t)ruma_phys_offset(r->phys, sfirst), &at);
	micro_phase_end(c, MF_MMAP_DST);
	if (rc)
		goto fail;
	d->dst = (uint64_t *)base;
	d->priv = r;
	d->cleanup = mix_cleanup;
	return 0;
fail_views:
	if (hview)
		ruma_munmap(hview, hbytes);
	if (sview)
		ruma_munmap(sview, tbytes);
fail:
	raw_free(r);
	return micro_fail("method 20 setup", rc);
}

/* ---- 32: map and populate --------------------------------------------------------------------- */

/*
 * The prefault thread of 32 without byOption: it faults every page in while
 * the test runs, as the original's asynchronous prefaulter (one read per
 * page).  MADV_POPULATE_READ does those read faults in the kernel, so the
 * thread touches no data the test may write meanwhile; before Linux 5.14
 * (EINVAL) it reads one byte per page with relaxed atomic loads.  Another
 * error only leaves the pages to fault at their first access.
 */
typedef struct prefault {
	pthread_t th;
	unsigned char *base;
	size_t bytes, page;
	int rc;
} prefault;

static void *prefault_main(void *arg)
{
	prefault *f = arg;
	unsigned char x = 0;

	f->rc = ruma_madvise(f->base, f->bytes, MADV_POPULATE_READ);
	for (size_t o = 0; f->rc == -EINVAL && o < f->bytes; o += f->page)
		x ^= __atomic_load_n(f->base + o, __ATOMIC_RELAXED);
	return (void *)(uintptr_t)x;
}

typedef struct mp_priv {
	raw_priv *raw;
	prefault *pf; /* running until the cleanup joins it */
	bool file, huge;
} mp_priv;

static void mp_free(mp_priv *m)
{
	if (m->pf) {
		(void)pthread_join(m->pf->th, NULL);
		free(m->pf);
	}
	raw_free(m->raw);
	free(m);
}

static void mp_cleanup(micro_data *d)
{
	mp_priv *m = d->priv;
	bool file = m->file, huge = m->huge;

	mp_free(m);
	printf("Freeing %s\n", micro_field_name(MF_MMAP_SRC));
	if (file)
		printf("Freeing %s\n", micro_field_name(huge ? MF_SHM_SRC_HUGE : MF_SHM_SRC));
}

/* Zero the file through a temporary shared mapping (the original's initializeFile; untimed). */
static int zero_file(int fd, off_t off, size_t bytes)
{
	void *tmp;
	int rc = ruma_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off, &tmp);

	if (rc)
		return rc;
	memset(tmp, 0, bytes);
	return ruma_munmap(tmp, bytes);
}

static int start_prefault(mp_priv *m, void *base, size_t bytes, size_t page)
{
	m->pf = calloc(1, sizeof(*m->pf));
	if (!m->pf)
		return -ENOMEM;
	*m->pf = (prefault){ .base = base, .bytes = bytes, .page = page };
	int rc = -pthread_create(&m->pf->th, NULL, prefault_main, m->pf);
	if (rc) {
		free(m->pf);
		m->pf = NULL;
	}
	return rc;
}

/*
 * The mapping as the original makes it: one mmap (MAP_POPULATE with byOption),
 * or with shuffle one mapping of the whole range and then one MAP_FIXED
 * mapping per page in the shuffled order (the original's per-page mappings
 * carry no MAP_POPULATE).  Without byOption a thread prefaults the pages
 * while the test runs; only its start is timed.
 */
static int mp_map(mp_priv *m, const micro_params *p, int fd, off_t off, size_t page,
		  const uint64_t *order)
{
	raw_priv *r = m->raw;
	size_t bytes = r->src_len, pages = bytes / page;
	int flags = (p->shared ? MAP_SHARED : MAP_PRIVATE) |
		    (p->file ? 0 : MAP_ANONYMOUS | (p->use_huge ? MAP_HUGETLB : 0));
	bool by_option = p->populate && p->by_option;
	int rc = ruma_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			   flags | (by_option && !order ? MAP_POPULATE : 0), fd, off, &r->src_map);

	if (rc) {
		r->src_map = NULL;
		return rc;
	}
	for (size_t i = 0; order && i < pages && rc == 0; i++) {
		void *at;
		off_t from = p->file ? off + (off_t)(order[i] * page) : 0;
		rc = ruma_mmap((char *)r->src_map + i * page, page, PROT_READ | PROT_WRITE,
			       flags | MAP_FIXED, fd, from, &at);
	}
	if (!rc && p->populate && !p->by_option)
		rc = start_prefault(m, r->src_map, bytes, page);
	return rc;
}

int micro_build_map_populate(micro_ctx *c, const micro_params *p, size_t n, micro_data *d)
{
	size_t page = p->use_huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	size_t bytes = micro_round_up(n * sizeof(uint64_t), page), pages = bytes / page;
	mp_priv *m = calloc(1, sizeof(*m));
	uint64_t first = 0, *order = NULL;
	size_t dummy;
	int fd = -1, rc = 0;
	off_t off = 0;

	if (!m || !(m->raw = calloc(1, sizeof(*m->raw)))) {
		free(m);
		return micro_fail("allocating", -ENOMEM);
	}
	m->file = p->file;
	m->huge = p->use_huge;
	d->kind = MICRO_CONTIG;
	d->n = n;
	d->src_zero = true; /* a fresh file, a zeroed one, or anonymous memory */
	if (p->file) {
		micro_phase_begin(c);
		rc = pool_create(page, pages, &m->raw->phys, &first);
		micro_phase_end(c, MF_SHM_SRC); /* the original's field for both page sizes */
		if (rc)
			goto fail;
		fd = ruma_phys_fd(m->raw->phys);
		off = (off_t)ruma_phys_offset(m->raw->phys, first);
		if (p->init_file && (rc = zero_file(fd, off, bytes)) != 0)
			goto fail;
	}
	if (p->shuffle && !(order = chunk_permutation(pages, 1, c->seed, &dummy))) {
		rc = -ENOMEM;
		goto fail;
	}
	m->raw->src_len = bytes;
	micro_phase_begin(c);
	rc = mp_map(m, p, fd, off, page, order);
	micro_phase_end(c, MF_MMAP_SRC);
	if (rc)
		goto fail;
	free(order);
	d->src = m->raw->src_map;
	d->priv = m;
	d->cleanup = mp_cleanup;
	return 0;
fail:
	free(order);
	mp_free(m);
	if (rc == -ENOMEM && p->use_huge)
		rc = RUMA_ENOHUGE;
	return micro_fail("method 32 setup", rc);
}
