/*
 * partition_mapped.c — the rewired partitioning methods of partition.h:
 * MAPPED, MAPPED_CHAINS and MAPPED_ADAPTIVE.
 *
 * Phase 1 (one pass over the input, no histogram): every partition writes
 * into blocks of pool pages.  MAPPED wires block k of partition p at
 * p * slot + k * pages_per_block of a work area, so a partition is virtually
 * contiguous while it grows; MAPPED_CHAINS and MAPPED_ADAPTIVE keep one
 * window per partition and rewire it onto a fresh block when the block is
 * full (the block's pool page numbers are appended to the partition's
 * chain).  ADAPTIVE chooses each new block's size from the expected rest of
 * the partition: 2 MiB while at least 2 MiB per partition remain, halving
 * down to 4 KiB towards the end of the input.  ADAPTIVE opens the first
 * block of every partition before the pass (as the original): P consecutive
 * blocks of one pool, one mmap when the windows lie side by side.
 *
 * Phase 2: the work area is destroyed (its data stays in the memfd) and the
 * unused pages of every partition's last block are freed.  The pages that
 * hold data, in partition order, form the "gappy" layout: every partition
 * contiguous but ending in a partly filled page.  With contiguous == false
 * it is wired as the result (one batch rewire: one mmap per run of
 * consecutive pool pages).
 *
 * Phase 3 (contiguous output): the squeeze.  Walking the partitions in
 * order, the partly filled page of the output so far is completed with keys
 * taken from the END of the next partition (its tail page, then its last
 * full page), so at most one page of keys is copied per partition; a page
 * emptied by this is dropped and freed.  Only the pages the squeeze copies
 * from or into are wired, into a scratch area (about three per partition);
 * the remaining pages are then wired once, in their final order, into the
 * output area with one batch rewire.  Keys within a partition are therefore
 * not in input order after a squeeze.
 *
 * With ADAPTIVE + huge, 2 MiB blocks come from a hugetlb pool and smaller
 * ones from a 4 KiB pool: one contiguous range cannot hold both page sizes at
 * arbitrary partition boundaries, so that combination returns chunks (one
 * gappy area per pool), as does contiguous == false for every method.
 *
 * MAPPED and MAPPED_CHAINS over anonymous memory (the UFFD and MREMAP
 * rewire paths, chosen by choose_path): the blocks are pages of one
 * anonymous staging area written directly (the kernel supplies each page
 * on its first write), the squeeze runs on the staging pages in place, and
 * the output pages are moved into an anonymous output area with one move
 * per run of consecutive staging pages (about one per partition or
 * extent).  One kernel mapping per area on the UFFD path, so one-page
 * granularity has no vm.max_map_count limit.
 *
 * Syscalls: all through phys.h (memfd_create, ftruncate, fallocate punch)
 * and area.h (mmap MAP_FIXED, madvise populate; anonymous areas: mmap,
 * UFFDIO_REGISTER, UFFDIO_MOVE or mremap).
 */
#include "rwstruct/partition_internal.h"

#include <ruma/core.h>
#include <ruma/sysinfo.h>

#include <errno.h>
#include <stdlib.h>

typedef struct mblock {
	uint64_t ppage;
	uint32_t npages;
	uint8_t pool;
} mblock;

typedef struct mpart {
	uint64_t *wp, *wend, *bstart; /* write pointer, end and start of the current block */
	mblock *b;
	size_t nb, cap;
	uint64_t ext_next, ext_end;   /* reserved pool pages [ext_next, ext_end) of pool 0 */
} mpart;

typedef struct mctx {
	const ruma_part_options *o;
	uint32_t P;
	size_t n;
	part_impl *impl;       /* owns the pools */
	size_t page[2];
	ruma_area *work[2];
	uint64_t slot[2];      /* work-area pages per partition */
	uint32_t block_pages;  /* MAPPED / MAPPED_CHAINS: pages per block */
	mpart *parts;
	uint64_t rewires, bytes_copied;
} mctx;

enum { ADAPTIVE_MAX_PAGES = 512 }; /* 2 MiB in 4 KiB pages */

/*
 * Pool pages for a block of partition mp: from the partition's reserved
 * extent when extents are on (pool 0), else straight from the pool.
 */
static int alloc_block(mctx *c, mpart *mp, int q, uint32_t npages, uint64_t *first)
{
	size_t ext = c->o->extent_pages;
	int rc;

	if (!ext || q)
		return ruma_phys_alloc(c->impl->phys[q], npages, first);
	if (mp->ext_end - mp->ext_next < npages) {
		uint64_t want = RUMA_MAX((uint64_t)ext, (uint64_t)npages), start;
		rc = ruma_phys_alloc(c->impl->phys[0], want, &start);
		if (rc)
			return rc;
		if (mp->ext_end > mp->ext_next) /* the unused rest of the old extent */
			(void)ruma_phys_free(c->impl->phys[0], mp->ext_next, mp->ext_end - mp->ext_next);
		mp->ext_next = start;
		mp->ext_end = start + want;
	}
	*first = mp->ext_next;
	mp->ext_next += npages;
	return 0;
}

/* Free what is left of every partition's reserved extent. */
static void free_extents(mctx *c)
{
	for (uint32_t p = 0; p < c->P; p++) {
		mpart *mp = &c->parts[p];
		if (mp->ext_end > mp->ext_next)
			(void)ruma_phys_free(c->impl->phys[0], mp->ext_next, mp->ext_end - mp->ext_next);
		mp->ext_next = mp->ext_end = 0;
	}
}

/*
 * ADAPTIVE: the size and pool of a block opened with `left` keys of the
 * input still to come.  The expected rest per partition is left / P; a
 * partition's first block is sized for the whole input, so n = P x 2 MiB of
 * keys starts with 2 MiB blocks.
 */
static void adaptive_block(const mctx *c, size_t left, uint32_t *npages, int *q)
{
	uint64_t rest = left / c->P;
	uint32_t b = ADAPTIVE_MAX_PAGES;

	while (b > 1 && (uint64_t)b * (RUMA_PAGE_4K / 8) > rest)
		b /= 2;
	*npages = b;
	*q = 0;
	if (c->impl->phys[1]) { /* huge: 2 MiB blocks from the hugetlb pool */
		if (b == ADAPTIVE_MAX_PAGES)
			*npages = 1;
		else
			*q = 1;
	}
}

/* Room for one more block in partition p's list (made before a block is wired). */
static int block_room(mpart *mp)
{
	if (mp->nb < mp->cap)
		return 0;
	size_t nc = mp->cap ? mp->cap * 2 : 4;
	mblock *nbk = realloc(mp->b, nc * sizeof(*nbk));
	if (!nbk)
		return -ENOMEM;
	mp->b = nbk;
	mp->cap = nc;
	return 0;
}

/* The work area page where partition p's next block of npages pages of pool q goes. */
static uint64_t block_vpage(const mctx *c, uint32_t p, int q, uint32_t npages)
{
	uint64_t vpage = p * c->slot[q];

	if (c->o->method == RUMA_PART_MAPPED)
		vpage += c->parts[p].nb * (uint64_t)npages;
	return vpage;
}

/* Append the wired block (first, npages) of pool q to partition p (room made) and write there. */
static void add_block(mctx *c, uint32_t p, int q, uint64_t first, uint32_t npages)
{
	mpart *mp = &c->parts[p];
	uint64_t vpage = block_vpage(c, p, q, npages);

	mp->b[mp->nb++] = (mblock){ first, npages, (uint8_t)q };
	mp->wp = mp->bstart = ruma_area_addr(c->work[q], vpage);
	mp->wend = mp->wp + npages * c->page[q] / 8;
}

/*
 * ADAPTIVE: open the first block of every partition before the pass, as the
 * original does: P consecutive blocks of one pool, wired with one mapping
 * when the partitions' windows are side by side (2 MiB blocks: one page per
 * window), else one per partition.
 */
static int open_first_blocks(mctx *c)
{
	uint32_t npages;
	uint64_t first;
	int q, rc = 0;

	adaptive_block(c, c->n, &npages, &q);
	for (uint32_t p = 0; p < c->P && !rc; p++)
		rc = block_room(&c->parts[p]);
	if (!rc)
		rc = ruma_phys_alloc(c->impl->phys[q], (uint64_t)c->P * npages, &first);
	if (rc)
		return rc;
	if (c->slot[q] == npages) {
		rc = ruma_area_map_run(c->work[q], 0, c->impl->phys[q], first,
				       (uint64_t)c->P * npages, 0, NULL);
		c->rewires += !rc;
	}
	for (uint32_t p = 0; p < c->P && !rc; p++) {
		uint64_t b = first + (uint64_t)p * npages;
		if (c->slot[q] != npages) {
			rc = ruma_area_map_run(c->work[q], block_vpage(c, p, q, npages),
					       c->impl->phys[q], b, npages, 0, NULL);
			c->rewires += !rc;
		}
		if (!rc)
			add_block(c, p, q, b, npages);
	}
	return rc;
}

/* Open a new block for partition p; `done` keys of the input are consumed. */
static int new_block(mctx *c, uint32_t p, size_t done)
{
	mpart *mp = &c->parts[p];
	uint32_t npages = c->block_pages;
	int q = 0;
	uint64_t first;
	int rc;

	if (c->o->method == RUMA_PART_MAPPED_ADAPTIVE)
		adaptive_block(c, c->n - (mp->nb ? done : 0), &npages, &q);
	rc = block_room(mp);
	if (!rc)
		rc = alloc_block(c, mp, q, npages, &first);
	if (rc)
		return rc;
	rc = ruma_area_map_run(c->work[q], block_vpage(c, p, q, npages), c->impl->phys[q], first,
			       npages, 0, NULL);
	if (rc) {
		if (!c->o->extent_pages || q)
			(void)ruma_phys_free(c->impl->phys[q], first, npages);
		/* a block carved from an extent is released with the extent's rest */
		return rc;
	}
	add_block(c, p, q, first, npages);
	c->rewires++;
	return 0;
}

static int scatter_plain(mctx *c, const uint64_t *keys)
{
	unsigned shift = c->o->shift;
	uint32_t P = c->P;
	mpart *parts = c->parts;

	for (size_t i = 0; i < c->n; i++) {
		uint64_t k = keys[i];
		mpart *mp = &parts[ruma_part_of(k, shift, P)];
		if (RUMA_UNLIKELY(mp->wp == mp->wend)) {
			int rc = new_block(c, (uint32_t)(mp - parts), i);
			if (rc)
				return rc;
		}
		*mp->wp++ = k;
	}
	return 0;
}

/* With write-combining lines: a block always receives whole 64-byte lines
 * (block sizes are multiples of 8 keys and blocks are page aligned). */
static int scatter_swwc(mctx *c, const uint64_t *keys)
{
	unsigned shift = c->o->shift;
	uint32_t P = c->P;
	mpart *parts = c->parts;
	part_line *lines = aligned_alloc(64, P * sizeof(*lines));
	uint8_t *fill = calloc(P, 1);
	int rc = 0;

	if (!lines || !fill) {
		free(lines);
		free(fill);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n && !rc; i++) {
		uint64_t k = keys[i];
		uint32_t p = ruma_part_of(k, shift, P);
		lines[p].k[fill[p]++] = k;
		if (fill[p] == 8) {
			mpart *mp = &parts[p];
			if (RUMA_UNLIKELY(mp->wp == mp->wend))
				rc = new_block(c, p, i);
			if (!rc) {
				part_line_flush(mp->wp, lines[p].k);
				mp->wp += 8;
				fill[p] = 0;
			}
		}
	}
	for (uint32_t p = 0; p < P && !rc; p++) {
		mpart *mp = &parts[p];
		if (!fill[p])
			continue;
		if (mp->wp == mp->wend)
			rc = new_block(c, p, c->n);
		if (!rc) {
			memcpy(mp->wp, lines[p].k, fill[p] * 8u);
			mp->wp += fill[p];
		}
	}
	part_store_fence();
	free(lines);
	free(fill);
	return rc;
}

/* Keys stored in block j of partition p. */
static size_t block_keys(const mctx *c, const mpart *mp, size_t j)
{
	if (j + 1 < mp->nb)
		return mp->b[j].npages * c->page[mp->b[j].pool] / 8;
	return (size_t)(mp->wp - mp->bstart);
}

/* Pages of block j of partition p that hold data (the last block may end early). */
static uint32_t block_used_pages(const mctx *c, const mpart *mp, size_t j)
{
	size_t per_page = c->page[mp->b[j].pool] / 8;
	return (uint32_t)((block_keys(c, mp, j) + per_page - 1) / per_page);
}

/*
 * The gappy layout of pool q: the pages of pool q that hold data, in
 * partition order.  gp[p] / kp[p] receive partition p's first page index and
 * page count in it, tp[p] the keys in its last page; *ppages (malloc'ed,
 * *total entries) the pool page of every gappy index.
 */
static int gappy_plan(mctx *c, int q, uint64_t *gp, uint64_t *kp, size_t *tp, uint64_t *total,
		      uint64_t **ppages)
{
	const size_t per_page = c->page[q] / 8;
	uint64_t g = 0, *pp;

	for (uint32_t p = 0; p < c->P; p++) {
		mpart *mp = &c->parts[p];
		gp[p] = g;
		kp[p] = 0;
		tp[p] = 0;
		for (size_t j = 0; j < mp->nb; j++) {
			if (mp->b[j].pool != q)
				continue;
			uint32_t used = block_used_pages(c, mp, j);
			size_t keys = block_keys(c, mp, j);
			if (!used)
				continue; /* a first block opened before the pass and never written */
			kp[p] += used;
			tp[p] = keys - (size_t)(used - 1) * per_page;
		}
		g += kp[p];
	}
	*total = g;
	pp = malloc((g ? g : 1) * sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	g = 0;
	for (uint32_t p = 0; p < c->P; p++) {
		mpart *mp = &c->parts[p];
		for (size_t j = 0; j < mp->nb; j++) {
			if (mp->b[j].pool != q)
				continue;
			uint32_t used = block_used_pages(c, mp, j);
			for (uint32_t k = 0; k < used; k++)
				pp[g++] = mp->b[j].ppage + k;
		}
	}
	*ppages = pp;
	return 0;
}

/*
 * Wire pool q's pages ppages[idx[0..n)] (idx NULL: ppages[0..n)) as virtual
 * pages 0..n-1 of a new output area impl->area[q]: one batch rewire, one
 * mmap per run of consecutive pool pages.
 */
static int wire_output(mctx *c, int q, const uint64_t *ppages, const uint64_t *idx, uint64_t n)
{
	ruma_rewire_pair *pairs = malloc(n * sizeof(*pairs));
	ruma_area_result res = { 0 };
	int rc;

	if (!pairs)
		return -ENOMEM;
	for (uint64_t j = 0; j < n; j++)
		pairs[j] = (ruma_rewire_pair){ j, ppages[idx ? idx[j] : j] };
	rc = ruma_area_create(c->page[q], n, &c->impl->area[q]);
	if (!rc && c->o->map_budget)
		ruma_area_set_map_budget(c->impl->area[q], c->o->map_budget);
	if (!rc)
		rc = ruma_area_rewire_batch(c->impl->area[q], c->impl->phys[q], pairs, n,
					    c->o->populate ? RUMA_AREA_POPULATE : 0, &res);
	c->rewires += res.runs;
	free(pairs);
	return rc;
}

/* Give the never-written pages of each partition's last block back to the pool. */
static void free_unused_tails(mctx *c)
{
	for (uint32_t p = 0; p < c->P; p++) {
		mpart *mp = &c->parts[p];
		if (!mp->nb)
			continue;
		mblock *b = &mp->b[mp->nb - 1];
		uint32_t used = block_used_pages(c, mp, mp->nb - 1);
		if (used < b->npages)
			(void)ruma_phys_free(c->impl->phys[b->pool], b->ppage + used, b->npages - used);
	}
}

/* Where the squeeze reads and writes gappy page g. */
typedef int (*gappy_page_fn)(void *ctx, uint64_t g, uint64_t **addr);

/* What the squeeze decided: the output pages in order, the pages it emptied. */
typedef struct squeeze_out {
	uint64_t *emit, ne;
	uint64_t *drop, nd;
	uint64_t bytes_copied;
} squeeze_out;

/*
 * Plan the squeeze of a gappy layout (gp/kp/tp as gappy_plan gives them, E
 * keys per page): complete the partly filled page of the output so far with
 * keys from the END of the next partition, copying through page().  Fills
 * so->emit (output order) and so->drop (emptied pages).
 */
static int squeeze_plan(uint32_t P, size_t E, const uint64_t *gp, const uint64_t *kp,
			const size_t *tp, gappy_page_fn page, void *ctx, squeeze_out *so)
{
	uint64_t cur = UINT64_MAX, *dst = NULL;
	size_t f = 0;
	int rc = 0;

	for (uint32_t p = 0; p < P && !rc; p++) {
		uint64_t k = kp[p], first = gp[p], last = gp[p] + kp[p] - 1;
		size_t t = tp[p];
		if (!k)
			continue;
		if (cur != UINT64_MAX) {
			size_t h = E - f;
			while (h && k && !rc) {
				uint64_t *src;
				rc = page(ctx, last, &src);
				if (rc)
					break;
				size_t take = RUMA_MIN(h, t);
				memcpy(dst + f, src + t - take, take * 8);
				so->bytes_copied += take * 8;
				f += take;
				h -= take;
				t -= take;
				if (!t) {
					so->drop[so->nd++] = last--;
					k--;
					t = E;
				}
			}
			if (rc || h)
				continue; /* error, or partition used up and the page still partly filled */
			so->emit[so->ne++] = cur;
			cur = UINT64_MAX;
			if (!k)
				continue;
		}
		for (uint64_t v = first; v < last; v++)
			so->emit[so->ne++] = v;
		if (t == E) {
			so->emit[so->ne++] = last;
		} else {
			cur = last;
			f = t;
			rc = page(ctx, cur, &dst);
		}
	}
	if (!rc && cur != UINT64_MAX)
		so->emit[so->ne++] = cur;
	return rc;
}

static int squeeze_out_alloc(squeeze_out *so, uint64_t total)
{
	*so = (squeeze_out){ 0 };
	so->emit = malloc((total ? total : 1) * sizeof(*so->emit));
	so->drop = malloc((total ? total : 1) * sizeof(*so->drop));
	return so->emit && so->drop ? 0 : -ENOMEM;
}

static void squeeze_out_free(squeeze_out *so)
{
	free(so->emit);
	free(so->drop);
}

/* The memfd squeeze reads and writes pool pages through a scratch area. */
typedef struct scratch_ctx {
	mctx *c;
	ruma_area *a;
	const uint64_t *ppages;
	uint8_t *wired;
} scratch_ctx;

/* Address of gappy page g in the scratch area, wiring it on first use. */
static int scratch_page(void *ctx, uint64_t g, uint64_t **addr)
{
	scratch_ctx *sc = ctx;

	if (!sc->wired[g]) {
		int rc = ruma_area_map_run(sc->a, g, sc->c->impl->phys[0], sc->ppages[g], 1, 0, NULL);
		if (rc)
			return rc;
		sc->c->rewires++;
		sc->wired[g] = 1;
	}
	*addr = ruma_area_addr(sc->a, g);
	return 0;
}

/*
 * Phase 3: squeeze the gappy layout of pool 0 into a contiguous output.
 * Only the pages the squeeze copies from or into are wired (into a scratch
 * area, at most about three per partition); the output is then wired once,
 * in its final order.
 */
static int squeeze(mctx *c, const uint64_t *gp, const uint64_t *kp, const size_t *tp,
		   uint64_t total, const uint64_t *ppages)
{
	const size_t E = c->page[0] / 8;
	scratch_ctx sc = { .c = c, .ppages = ppages, .wired = calloc(total, 1) };
	squeeze_out so;
	int rc = squeeze_out_alloc(&so, total);

	if (!rc && !sc.wired)
		rc = -ENOMEM;
	if (!rc)
		rc = ruma_area_create(c->page[0], total, &sc.a);
	if (!rc && c->o->map_budget)
		ruma_area_set_map_budget(sc.a, c->o->map_budget);
	if (!rc)
		rc = squeeze_plan(c->P, E, gp, kp, tp, scratch_page, &sc, &so);
	ruma_area_destroy(sc.a);
	c->bytes_copied += so.bytes_copied;
	if (!rc) {
		RUMA_ASSERT(so.ne == (c->n + E - 1) / E);
		rc = wire_output(c, 0, ppages, so.emit, so.ne);
	}
	if (!rc)
		for (uint64_t i = 0; i < so.nd; i++)
			(void)ruma_phys_free(c->impl->phys[0], ppages[so.drop[i]], 1);
	squeeze_out_free(&so);
	free(sc.wired);
	return rc;
}

static int create_pools_and_work(mctx *c)
{
	const ruma_part_options *o = c->o;
	bool adaptive = o->method == RUMA_PART_MAPPED_ADAPTIVE;
	int rc;

	c->page[0] = o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	c->page[1] = RUMA_PAGE_4K;
	rc = ruma_phys_create(&(ruma_phys_options){ .page_size = c->page[0] }, &c->impl->phys[0]);
	if (!rc && adaptive && o->huge)
		rc = ruma_phys_create(&(ruma_phys_options){ .page_size = c->page[1] }, &c->impl->phys[1]);
	if (rc)
		return rc;
	ruma_part_phase_end(c->impl, RUMA_PART_PHASE_OPEN);
	c->block_pages = (uint32_t)o->pages_per_block;
	if (o->method == RUMA_PART_MAPPED && o->extent_pages > o->pages_per_block)
		/*
		 * A partition's slot is virtually contiguous, so the blocks carved
		 * from one extent would be wired side by side onto consecutive pool
		 * pages: wire the whole extent at once (one mmap instead of one per
		 * block; pool pages get memory only when written).
		 */
		c->block_pages = (uint32_t)((o->extent_pages + o->pages_per_block - 1) /
					    o->pages_per_block * o->pages_per_block);
	if (o->method == RUMA_PART_MAPPED) {
		uint64_t bb = (uint64_t)c->block_pages * c->page[0];
		c->slot[0] = ((uint64_t)c->n * 8 + bb - 1) / bb * c->block_pages + c->block_pages;
	} else if (adaptive) {
		c->slot[0] = o->huge ? 1 : ADAPTIVE_MAX_PAGES;
		c->slot[1] = ADAPTIVE_MAX_PAGES;
	} else {
		c->slot[0] = o->pages_per_block;
	}
	for (int q = 0; q < 2 && !rc; q++)
		if (c->impl->phys[q]) {
			rc = ruma_area_create(c->page[q], c->slot[q] * c->P, &c->work[q]);
			if (!rc && o->map_budget)
				ruma_area_set_map_budget(c->work[q], o->map_budget);
		}
	return rc;
}

/* ---- MAPPED and MAPPED_CHAINS over anonymous memory (move paths) ---------------------- */

/*
 * Blocks are pages of one anonymous staging area; the kernel supplies each
 * page on its first write, which is all that wiring a block did.  MAPPED
 * gives every partition one block: a slot big enough for all keys.
 * MAPPED_CHAINS gives a partition blocks of pages_per_block pages as it
 * fills them, carved from extents of ANON_EXT_PAGES (or extent_pages)
 * staging pages reserved per partition, so the blocks of one partition are
 * consecutive staging pages and the final layout moves long runs.  The
 * squeeze works on the staging pages in place; then the output pages are
 * moved into an anonymous output area (ruma_anon_move_batch: one call per
 * run of consecutive staging pages).
 */
enum { ANON_EXT_PAGES = 64 };

typedef struct anon_block {
	uint64_t page; /* first staging page */
	uint64_t n;    /* pages */
} anon_block;

typedef struct anon_mpart {
	uint64_t *wp, *wend;        /* write pointer and end of the current block */
	uint64_t ext_next, ext_end; /* staging pages reserved for the partition */
	uint64_t capacity;          /* keys of all blocks handed out */
	anon_block *b;              /* blocks, consecutive ones merged */
	size_t nb, cap;
} anon_mpart;

typedef struct anon_part {
	const ruma_part_options *o;
	uint32_t P;
	size_t n;
	ruma_anon *stage;
	uint64_t block_pages, ext_pages, next_page;
	anon_mpart *parts;
	const uint64_t *spage; /* staging page of every gappy page */
} anon_part;

static int anon_new_block(anon_part *ap, anon_mpart *mp)
{
	const size_t E = RUMA_PAGE_4K / 8;
	uint64_t bp = ap->block_pages;

	if (mp->ext_end - mp->ext_next < bp) {
		if (ap->ext_pages > ruma_anon_pages(ap->stage) - ap->next_page)
			return RUMA_EVIRTFULL; /* cannot happen with the sizing of anon_stage_pages */
		mp->ext_next = ap->next_page;
		mp->ext_end = ap->next_page += ap->ext_pages;
	}
	if (mp->nb && mp->b[mp->nb - 1].page + mp->b[mp->nb - 1].n == mp->ext_next) {
		mp->b[mp->nb - 1].n += bp;
	} else {
		if (mp->nb == mp->cap) {
			size_t nc = mp->cap ? 2 * mp->cap : 4;
			anon_block *nb = realloc(mp->b, nc * sizeof(*nb));
			if (!nb)
				return -ENOMEM;
			mp->b = nb;
			mp->cap = nc;
		}
		mp->b[mp->nb++] = (anon_block){ mp->ext_next, bp };
	}
	mp->wp = ruma_anon_addr(ap->stage, mp->ext_next);
	mp->wend = mp->wp + bp * E;
	mp->capacity += bp * E;
	mp->ext_next += bp;
	return 0;
}

static int anon_scatter_plain(anon_part *ap, const uint64_t *keys)
{
	unsigned shift = ap->o->shift;
	anon_mpart *parts = ap->parts;

	for (size_t i = 0; i < ap->n; i++) {
		uint64_t k = keys[i];
		anon_mpart *mp = &parts[ruma_part_of(k, shift, ap->P)];
		if (RUMA_UNLIKELY(mp->wp == mp->wend)) {
			int rc = anon_new_block(ap, mp);
			if (rc)
				return rc;
		}
		*mp->wp++ = k;
	}
	return 0;
}

/* Blocks are page aligned multiples of 8 keys: every line lands whole in one block. */
static int anon_scatter_swwc(anon_part *ap, const uint64_t *keys)
{
	unsigned shift = ap->o->shift;
	part_line *lines = aligned_alloc(64, ap->P * sizeof(*lines));
	uint8_t *fill = calloc(ap->P, 1);
	int rc = 0;

	if (!lines || !fill)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < ap->n; i++) {
		uint64_t k = keys[i];
		uint32_t p = ruma_part_of(k, shift, ap->P);
		lines[p].k[fill[p]++] = k;
		if (fill[p] == 8) {
			anon_mpart *mp = &ap->parts[p];
			if (RUMA_UNLIKELY(mp->wp == mp->wend))
				rc = anon_new_block(ap, mp);
			if (!rc) {
				part_line_flush(mp->wp, lines[p].k);
				mp->wp += 8;
				fill[p] = 0;
			}
		}
	}
	for (uint32_t p = 0; !rc && p < ap->P; p++) {
		anon_mpart *mp = &ap->parts[p];
		if (!fill[p])
			continue;
		if (mp->wp == mp->wend)
			rc = anon_new_block(ap, mp);
		if (!rc) {
			memcpy(mp->wp, lines[p].k, fill[p] * 8u);
			mp->wp += fill[p];
		}
	}
	part_store_fence();
	free(lines);
	free(fill);
	return rc;
}

static int anon_page(void *ctx, uint64_t g, uint64_t **addr)
{
	const anon_part *ap = ctx;

	*addr = ruma_anon_addr(ap->stage, ap->spage[g]);
	return 0;
}

/* Gappy layout of the blocks: gp/kp/tp as gappy_plan, spage[g] the staging page of g. */
static int anon_gappy_plan(const ruma_part_result *r, anon_part *ap, uint64_t *gp, uint64_t *kp,
			   size_t *tp, uint64_t *total, uint64_t **spage)
{
	const size_t E = RUMA_PAGE_4K / 8;
	uint64_t g = 0, *sp;

	for (uint32_t p = 0; p < ap->P; p++) {
		size_t cnt = r->start[p + 1] - r->start[p];
		gp[p] = g;
		kp[p] = (cnt + E - 1) / E;
		tp[p] = cnt ? cnt - (size_t)(kp[p] - 1) * E : 0;
		g += kp[p];
	}
	*total = g;
	sp = malloc((g ? g : 1) * sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	for (uint32_t p = 0; p < ap->P; p++) {
		const anon_mpart *mp = &ap->parts[p];
		uint64_t left = kp[p], at = gp[p];
		for (size_t j = 0; j < mp->nb && left; j++)
			for (uint64_t k = 0; k < mp->b[j].n && left; k++, left--)
				sp[at++] = mp->b[j].page + k;
	}
	*spage = sp;
	return 0;
}

/* Squeeze in the staging area (contiguous output only), then move the output pages into place. */
static int anon_layout(anon_part *ap, ruma_part_result *r, part_impl *impl, ruma_rewire_path path)
{
	const size_t E = RUMA_PAGE_4K / 8;
	uint64_t *gp = malloc(ap->P * sizeof(*gp)), *kp = malloc(ap->P * sizeof(*kp));
	size_t *tp = malloc(ap->P * sizeof(*tp));
	uint64_t total = 0, *spage = NULL;
	ruma_move_pair *pairs = NULL;
	ruma_anon_result res = { 0 };
	squeeze_out so = { 0 };
	int rc = gp && kp && tp ? 0 : -ENOMEM;

	if (!rc)
		rc = anon_gappy_plan(r, ap, gp, kp, tp, &total, &spage);
	ap->spage = spage;
	if (!rc)
		rc = squeeze_out_alloc(&so, total);
	if (!rc && ap->o->contiguous) {
		rc = squeeze_plan(ap->P, E, gp, kp, tp, anon_page, ap, &so);
		RUMA_ASSERT(rc || so.ne == (ap->n + E - 1) / E);
	} else if (!rc) { /* chunks: the gappy layout itself */
		for (uint64_t g = 0; g < total; g++)
			so.emit[so.ne++] = g;
	}
	if (!rc && so.ne) {
		pairs = malloc(so.ne * sizeof(*pairs));
		rc = pairs ? ruma_anon_create(so.ne, path, &impl->anon) : -ENOMEM;
	}
	if (!rc && so.ne) {
		if (ap->o->map_budget)
			ruma_anon_set_map_budget(impl->anon, ap->o->map_budget);
		for (uint64_t i = 0; i < so.ne; i++)
			pairs[i] = (ruma_move_pair){ i, spage[so.emit[i]] };
		rc = ruma_anon_move_batch(impl->anon, ap->stage, pairs, so.ne, &res);
	}
	r->nchunks = 0;
	for (uint32_t p = 0; !rc && so.ne && p < ap->P; p++) {
		uint64_t *base = ruma_anon_base(impl->anon);
		size_t cnt = r->start[p + 1] - r->start[p];
		if (cnt)
			r->chunks[r->nchunks++] = (ruma_part_chunk){
				base + (ap->o->contiguous ? r->start[p] : gp[p] * E), cnt, p };
	}
	if (!rc && so.ne && ap->o->contiguous)
		r->data = ruma_anon_base(impl->anon);
	r->rewires = res.calls;
	r->bytes_copied = so.bytes_copied;
	squeeze_out_free(&so);
	free(pairs);
	free(spage);
	free(gp);
	free(kp);
	free(tp);
	return rc;
}

/* Block and extent sizes of the anonymous path, and the staging pages they need. */
static uint64_t anon_stage_pages(anon_part *ap)
{
	const size_t E = RUMA_PAGE_4K / 8;
	uint64_t data = (ap->n + E - 1) / E;

	if (ap->o->method == RUMA_PART_MAPPED) { /* one slot per partition */
		ap->block_pages = ap->ext_pages = data + 1;
		return (uint64_t)ap->P * ap->ext_pages;
	}
	uint64_t bp = ap->o->pages_per_block;
	uint64_t ext = RUMA_MAX((uint64_t)ap->o->extent_pages, (uint64_t)ANON_EXT_PAGES);
	ap->block_pages = bp;
	ap->ext_pages = (RUMA_MAX(ext, bp) + bp - 1) / bp * bp;
	/* used blocks hold the data plus at most one block per partition; one extent more each */
	return data + (uint64_t)ap->P * (bp + ap->ext_pages) + 1;
}

static int mapped_anon_run(const uint64_t *keys, size_t n, const ruma_part_options *o,
			   ruma_part_result *r, part_impl *impl, ruma_rewire_path path)
{
	anon_part ap = { .o = o, .P = o->partitions, .n = n };
	int rc;

	ap.parts = calloc(ap.P, sizeof(*ap.parts));
	r->chunks = malloc((ap.P ? ap.P : 1) * sizeof(*r->chunks));
	rc = ap.parts && r->chunks ? 0 : -ENOMEM;
	if (!rc)
		rc = ruma_anon_create(anon_stage_pages(&ap), path, &ap.stage);
	if (!rc) {
		ruma_part_phase_end(impl, RUMA_PART_PHASE_ALLOC);
		rc = o->swwc ? anon_scatter_swwc(&ap, keys) : anon_scatter_plain(&ap, keys);
	}
	if (!rc) {
		ruma_part_phase_end(impl, RUMA_PART_PHASE_PASS);
		r->start[0] = 0;
		for (uint32_t p = 0; p < ap.P; p++) {
			anon_mpart *mp = &ap.parts[p];
			r->start[p + 1] = r->start[p] + (size_t)(mp->capacity - (uint64_t)(mp->wend - mp->wp));
		}
		r->path = path;
		rc = anon_layout(&ap, r, impl, path);
	}
	ruma_anon_destroy(ap.stage);
	if (ap.parts)
		for (uint32_t p = 0; p < ap.P; p++)
			free(ap.parts[p].b);
	free(ap.parts);
	return rc;
}

/* The mappings the mremap path may need: two per run (about one per partition or extent). */
static bool mremap_fits(const ruma_part_options *o, size_t n)
{
	uint64_t runs = (uint64_t)o->partitions + 1, max, now;

	if (o->method != RUMA_PART_MAPPED) {
		uint64_t ext = RUMA_MAX((uint64_t)o->extent_pages, (uint64_t)ANON_EXT_PAGES);
		runs += ((uint64_t)n / (RUMA_PAGE_4K / 8)) / ext + o->partitions;
	}
	uint64_t need = 2 * runs + 3;
	if (o->map_budget)
		return need <= o->map_budget;
	if (ruma_sysinfo_max_map_count(&max) || ruma_sysinfo_map_count(&now))
		return false;
	return now + need + RUMA_AREA_MAP_MARGIN <= max;
}

/* The rewire path MAPPED / MAPPED_CHAINS take (see partition.h). */
static ruma_rewire_path choose_path(const ruma_part_options *o, size_t n)
{
	ruma_rewire_path avail;

	if ((o->method != RUMA_PART_MAPPED && o->method != RUMA_PART_MAPPED_CHAINS) || o->huge)
		return RUMA_REWIRE_MMAP;
	if (o->path != RUMA_REWIRE_AUTO)
		return o->path;
	anon_part probe_sizes = { .o = o, .P = o->partitions, .n = n };
	if (anon_stage_pages(&probe_sizes) > ((uint64_t)1 << 35))
		return RUMA_REWIRE_MMAP; /* staging beyond 128 TiB of address space */
	ruma_move_probe(&avail, NULL);
	if (avail == RUMA_REWIRE_MREMAP && !mremap_fits(o, n))
		return RUMA_REWIRE_MMAP;
	return avail;
}

/* Phase 2 with the result in chunks: every pool's gappy area is the
 * result; a chunk is (partition, pool). */
static int output_chunks(mctx *c, ruma_part_result *r, uint64_t *kp, size_t *tp)
{
	part_impl *impl = c->impl;
	uint64_t *gq[2] = { NULL, NULL }, total;
	int rc = 0;
	for (int q = 0; q < 2 && !rc; q++) {
		uint64_t *ppages = NULL;
		if (!impl->phys[q])
			continue;
		gq[q] = malloc(c->P * sizeof(uint64_t));
		if (!gq[q]) {
			rc = -ENOMEM;
			break;
		}
		rc = gappy_plan(c, q, gq[q], kp, tp, &total, &ppages);
		if (!rc && total)
			rc = wire_output(c, q, ppages, NULL, total);
		free(ppages);
	}
	for (uint32_t p = 0; p < c->P && !rc; p++)
		for (int q = 0; q < 2; q++) {
			size_t cnt = 0;
			mpart *mp = &c->parts[p];
			for (size_t j = 0; j < mp->nb; j++)
				if (mp->b[j].pool == q)
					cnt += block_keys(c, mp, j);
			if (cnt)
				r->chunks[r->nchunks++] = (ruma_part_chunk){
					ruma_area_addr(impl->area[q], gq[q][p]), cnt, p };
		}
	free(gq[0]);
	free(gq[1]);
	return rc;
}

/* Phase 2 with one contiguous result: the partitions squeezed together in
 * pool 0's area, a chunk per non-empty partition. */
static int output_contiguous(mctx *c, ruma_part_result *r, uint64_t *gp, uint64_t *kp,
			     size_t *tp)
{
	uint64_t total = 0, *ppages = NULL;
	int rc = gappy_plan(c, 0, gp, kp, tp, &total, &ppages);
	if (!rc && total)
		rc = squeeze(c, gp, kp, tp, total, ppages);
	free(ppages);
	if (!rc && total) {
		r->data = ruma_area_base(c->impl->area[0]);
		for (uint32_t p = 0; p < c->P; p++)
			if (r->start[p + 1] > r->start[p])
				r->chunks[r->nchunks++] = (ruma_part_chunk){
					r->data + r->start[p], r->start[p + 1] - r->start[p], p };
	}
	return rc;
}

/* Phase 2: drop the windows, keep the data in the pool, and hand it out as
 * the result (partition starts, then chunks). */
static int gather_output(mctx *c, ruma_part_result *r, uint64_t *gp, uint64_t *kp, size_t *tp)
{
	for (int q = 0; q < 2; q++) {
		ruma_area_destroy(c->work[q]);
		c->work[q] = NULL;
	}
	free_extents(c);
	free_unused_tails(c);
	r->nchunks = 0;
	r->chunks = malloc(((size_t)c->P * 2 + 1) * sizeof(*r->chunks));
	if (!r->chunks)
		return -ENOMEM;
	r->start[0] = 0;
	for (uint32_t p = 0; p < c->P; p++) {
		size_t cnt = 0;
		for (size_t j = 0; j < c->parts[p].nb; j++)
			cnt += block_keys(c, &c->parts[p], j);
		r->start[p + 1] = r->start[p] + cnt;
	}
	bool chunks_only = !c->o->contiguous || c->impl->phys[1];
	int rc = chunks_only ? output_chunks(c, r, kp, tp) : output_contiguous(c, r, gp, kp, tp);
	r->rewires = c->rewires;
	r->bytes_copied = c->bytes_copied;
	return rc;
}

int ruma_part_mapped_run(const uint64_t *keys, size_t n, const ruma_part_options *o,
			 ruma_part_result *r, part_impl *impl)
{
	mctx c = { .o = o, .P = o->partitions, .n = n, .impl = impl };
	uint64_t *gp = NULL, *kp = NULL;
	size_t *tp = NULL;
	int rc;
	ruma_rewire_path path = choose_path(o, n);

	if (path == RUMA_REWIRE_UFFD || path == RUMA_REWIRE_MREMAP)
		return mapped_anon_run(keys, n, o, r, impl, path);
	if (path != RUMA_REWIRE_MMAP)
		return -EINVAL;
	r->path = RUMA_REWIRE_MMAP;
	c.parts = calloc(c.P, sizeof(*c.parts));
	gp = malloc(c.P * sizeof(*gp));
	kp = malloc(c.P * sizeof(*kp));
	tp = malloc(c.P * sizeof(*tp));
	rc = !c.parts || !gp || !kp || !tp ? -ENOMEM : create_pools_and_work(&c);
	if (!rc && o->method == RUMA_PART_MAPPED_ADAPTIVE && !o->extent_pages)
		rc = open_first_blocks(&c);
	if (!rc) {
		ruma_part_phase_end(impl, RUMA_PART_PHASE_ALLOC);
		rc = o->swwc ? scatter_swwc(&c, keys) : scatter_plain(&c, keys);
	}
	if (!rc) {
		ruma_part_phase_end(impl, RUMA_PART_PHASE_PASS);
		rc = gather_output(&c, r, gp, kp, tp);
	}
	for (int q = 0; q < 2; q++)
		ruma_area_destroy(c.work[q]);
	if (c.parts)
		for (uint32_t p = 0; p < c.P; p++)
			free(c.parts[p].b);
	free(c.parts);
	free(gp);
	free(kp);
	free(tp);
	return rc;
}
