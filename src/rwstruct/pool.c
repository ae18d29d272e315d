/*
 * pool.c — the three page allocation pools of pool.h (RUMA methods 40-42).
 *
 * Invariants: a pool holds exactly `pages` pages of page_size bytes, all
 * writable, pairwise distinct, addressable by index until destruction.
 *   REWIRED   pool pages [first, first + pages) of a private phys pool, wired
 *             into an area of `pages` virtual pages: sequentially with one
 *             mmap (ruma_area_create_mapped: no reservation), or (random)
 *             virtual page i onto first + perm[i] through a batch rewire
 *             (one mmap per run, i.e. about one per page).
 *             Random placement by moving instead: an anonymous area whose
 *             page i is staging page perm[i], moved there (area.h,
 *             ruma_anon_move_batch).
 *   INDIRECT  one posix_memalign'ed chunk (2 MiB aligned) and a directory:
 *             dir[i] = chunk + (random ? perm[i] : i) * page_size.
 *   MMAP      one anonymous mapping.
 *
 * Syscalls: REWIRED via phys.h/area.h (memfd_create, ftruncate, fallocate,
 * mmap MAP_FIXED, madvise populate; moved: mmap, MADV_POPULATE_WRITE,
 * UFFDIO_MOVE); MMAP: one mmap (MAP_NORESERVE for 4 KiB;
 * for MAP_HUGETLB without MAP_NORESERVE so that a lack of huge pages fails at
 * mmap time instead of as SIGBUS at the first touch) and munmap; INDIRECT:
 * madvise(MADV_HUGEPAGE) on 2 MiB pages — all through the os layer.
 */
#include <ruma/pool.h>
#include <ruma/area.h>
#include <ruma/core.h>
#include <ruma/phys.h>
#include <ruma/sysinfo.h>

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

struct ruma_pool {
	ruma_pool_kind kind;
	size_t page, pages;
	unsigned char *base; /* REWIRED (area base), MMAP; INDIRECT: the chunk */
	void **dir;          /* INDIRECT */
	ruma_phys *phys;     /* REWIRED */
	ruma_area *area;     /* REWIRED, memfd rewiring */
	ruma_anon *anon;     /* REWIRED, pages moved */
	ruma_rewire_path path;
	uint64_t mappings;
};

static const char *const kind_names[RUMA_POOL_KIND_COUNT_] = {
	[RUMA_POOL_REWIRED] = "rewired", [RUMA_POOL_INDIRECT] = "indirect",
	[RUMA_POOL_MMAP] = "mmap",
};

const char *ruma_pool_kind_name(ruma_pool_kind k)
{
	return (unsigned)k < RUMA_POOL_KIND_COUNT_ ? kind_names[k] : "?";
}

int ruma_pool_kind_parse(const char *s, ruma_pool_kind *out)
{
	for (unsigned k = 0; k < RUMA_POOL_KIND_COUNT_; k++)
		if (s && !strcasecmp(s, kind_names[k])) {
			*out = (ruma_pool_kind)k;
			return 0;
		}
	return RUMA_EPARSE;
}

void ruma_pool_options_default(ruma_pool_options *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = RUMA_POOL_REWIRED;
	o->seed = 1;
}

/* A random permutation of 0..n-1 (caller frees). */
static uint64_t *permutation(size_t n, uint64_t seed)
{
	uint64_t *perm = malloc((n ? n : 1) * sizeof(*perm));
	ruma_rng rng;

	if (!perm)
		return NULL;
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	ruma_rng_seed(&rng, seed);
	ruma_rng_shuffle_u64(&rng, perm, n);
	return perm;
}

static int create_wired(ruma_pool *p, const ruma_pool_options *o);

/* Mappings this pool may still create when the caller gave no budget. */
static int default_budget(uint64_t *out)
{
	uint64_t max, now;
	int rc = ruma_sysinfo_max_map_count(&max);

	if (!rc)
		rc = ruma_sysinfo_map_count(&now);
	if (rc)
		return rc;
	*out = max > now + RUMA_AREA_MAP_MARGIN ? max - now - RUMA_AREA_MAP_MARGIN : 0;
	return 0;
}

/*
 * Random placement by moving: allocate the pages in order in a staging
 * area, then move staging page perm[i] to pool page i (one UFFDIO_MOVE per
 * page; the pool stays one mapping).
 */
static int create_moved(ruma_pool *p, const ruma_pool_options *o, ruma_rewire_path path)
{
	ruma_anon *stage = NULL;
	ruma_anon_result res = { 0 };
	uint64_t *perm = permutation(p->pages, o->seed);
	ruma_move_pair *pairs = malloc(p->pages * sizeof(*pairs));
	int rc = perm && pairs ? 0 : -ENOMEM;

	if (!rc)
		rc = ruma_anon_create(p->pages, path, &p->anon);
	if (!rc)
		rc = ruma_anon_create(p->pages, path, &stage);
	if (!rc)
		rc = ruma_anon_populate(stage, 0, p->pages);
	if (!rc) {
		if (o->map_budget)
			ruma_anon_set_map_budget(p->anon, o->map_budget);
		for (size_t i = 0; i < p->pages; i++)
			pairs[i] = (ruma_move_pair){ i, perm[i] };
		rc = ruma_anon_move_batch(p->anon, stage, pairs, p->pages, &res);
	}
	if (!rc) {
		p->base = ruma_anon_base(p->anon);
		p->path = path;
		p->mappings = ruma_anon_map_estimate(p->anon);
	}
	ruma_anon_destroy(stage);
	free(perm);
	free(pairs);
	return rc;
}

/* The placement path of a REWIRED pool (see pool.h). */
static ruma_rewire_path choose_path(const ruma_pool_options *o)
{
	ruma_rewire_path avail;

	if (!o->random || o->huge)
		return RUMA_REWIRE_MMAP;
	if (o->path != RUMA_REWIRE_AUTO)
		return o->path;
	ruma_move_probe(&avail, NULL);
	return avail == RUMA_REWIRE_UFFD ? avail : RUMA_REWIRE_MMAP;
}

static int create_rewired(ruma_pool *p, const ruma_pool_options *o)
{
	ruma_rewire_path path = choose_path(o);

	if (path == RUMA_REWIRE_UFFD || path == RUMA_REWIRE_MREMAP)
		return create_moved(p, o, path);
	if (path != RUMA_REWIRE_MMAP)
		return -EINVAL;
	p->path = RUMA_REWIRE_MMAP;
	return create_wired(p, o);
}

static int create_wired(ruma_pool *p, const ruma_pool_options *o)
{
	unsigned flags = o->populate ? RUMA_AREA_POPULATE : 0;
	uint64_t first, budget = o->map_budget;
	ruma_area_result res = { 0 };
	ruma_phys_options po = { .page_size = p->page,
				 .flags = o->huge ? RUMA_PHYS_PREPOPULATE : 0 };
	int rc;

	rc = ruma_phys_create(&po, &p->phys);
	if (!rc)
		rc = ruma_phys_alloc(p->phys, p->pages, &first);
	if (!rc && !o->random) { /* one mmap of the pool run, no reservation first */
		rc = ruma_area_create_mapped(p->phys, first, p->pages, flags, &p->area, NULL);
		if (!rc) {
			p->base = ruma_area_base(p->area);
			p->mappings = 1;
		}
		return rc;
	}
	if (!rc)
		rc = ruma_area_create(p->page, p->pages, &p->area);
	if (rc)
		return rc;
	p->base = ruma_area_base(p->area);
	uint64_t *perm = permutation(p->pages, o->seed);
	ruma_rewire_pair *pairs = malloc(p->pages * sizeof(*pairs));
	uint64_t runs = 0;
	if (!perm || !pairs) {
		free(perm);
		free(pairs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->pages; i++) {
		pairs[i].vpage = i;
		pairs[i].ppage = first + perm[i];
		runs += i == 0 || perm[i] != perm[i - 1] + 1;
	}
	free(perm);
	if (!budget)
		rc = default_budget(&budget);
	/* refuse before mapping anything: one kernel mapping per run */
	if (!rc && runs > budget)
		rc = RUMA_EMAPLIMIT;
	if (!rc) {
		if (o->map_budget)
			ruma_area_set_map_budget(p->area, o->map_budget);
		rc = ruma_area_rewire_batch(p->area, p->phys, pairs, p->pages, flags, &res);
		p->mappings = res.runs;
	}
	free(pairs);
	return rc;
}

static int create_indirect(ruma_pool *p, const ruma_pool_options *o)
{
	void *chunk = NULL;
	uint64_t *perm = NULL;

	if (posix_memalign(&chunk, RUMA_PAGE_2M, p->pages * p->page))
		return -ENOMEM;
	p->base = chunk;
	if (o->huge)
		(void)ruma_os_madvise(chunk, p->pages * p->page, MADV_HUGEPAGE);
	p->dir = malloc(p->pages * sizeof(*p->dir));
	if (o->random)
		perm = permutation(p->pages, o->seed);
	if (!p->dir || (o->random && !perm)) {
		free(perm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->pages; i++)
		p->dir[i] = p->base + (perm ? perm[i] : i) * p->page;
	free(perm);
	if (o->populate)
		for (size_t off = 0; off < p->pages * p->page; off += RUMA_PAGE_4K)
			p->base[off] = 0;
	return 0;
}

static int create_mmap(ruma_pool *p, const ruma_pool_options *o)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void *m;
	int rc;

	flags |= o->huge ? MAP_HUGETLB : MAP_NORESERVE;
	if (o->populate)
		flags |= MAP_POPULATE;
	rc = ruma_os_mmap(NULL, p->pages * p->page, PROT_READ | PROT_WRITE, flags, -1, 0, &m);
	if (rc)
		return rc == -ENOMEM && o->huge ? RUMA_ENOHUGE : rc;
	p->base = m;
	p->mappings = 1;
	return 0;
}

int ruma_pool_create(const ruma_pool_options *o, size_t bytes, ruma_pool **out)
{
	ruma_pool_options def;
	ruma_pool *p;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!o) {
		ruma_pool_options_default(&def);
		o = &def;
	}
	if (!bytes || (unsigned)o->kind >= RUMA_POOL_KIND_COUNT_)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->kind = o->kind;
	p->page = o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	p->pages = (bytes + p->page - 1) / p->page;
	switch (p->kind) {
	case RUMA_POOL_REWIRED:
		rc = create_rewired(p, o);
		break;
	case RUMA_POOL_INDIRECT:
		rc = create_indirect(p, o);
		break;
	default:
		rc = create_mmap(p, o);
		break;
	}
	if (rc) {
		ruma_pool_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

void ruma_pool_destroy(ruma_pool *p)
{
	if (!p)
		return;
	switch (p->kind) {
	case RUMA_POOL_REWIRED:
		ruma_anon_destroy(p->anon);
		ruma_area_destroy(p->area);
		ruma_phys_destroy(p->phys);
		break;
	case RUMA_POOL_INDIRECT:
		free(p->dir);
		free(p->base);
		break;
	default:
		if (p->base)
			(void)ruma_os_munmap(p->base, p->pages * p->page);
		break;
	}
	free(p);
}

size_t ruma_pool_pages(const ruma_pool *p)
{
	return p->pages;
}

size_t ruma_pool_page_size(const ruma_pool *p)
{
	return p->page;
}

size_t ruma_pool_bytes(const ruma_pool *p)
{
	return p->pages * p->page;
}

void *ruma_pool_page(const ruma_pool *p, size_t i)
{
	if (i >= p->pages)
		return NULL;
	if (p->kind == RUMA_POOL_INDIRECT)
		return p->dir[i];
	return p->base + i * p->page;
}

void *ruma_pool_base(const ruma_pool *p)
{
	return p->kind == RUMA_POOL_INDIRECT ? NULL : p->base;
}

void *const *ruma_pool_directory(const ruma_pool *p)
{
	return p->kind == RUMA_POOL_INDIRECT ? (void *const *)p->dir : NULL;
}

ruma_rewire_path ruma_pool_path(const ruma_pool *p)
{
	return p->path;
}

uint64_t ruma_pool_mappings(const ruma_pool *p)
{
	return p->mappings;
}
