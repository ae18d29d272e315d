/*
 * partition.c — radix partitioning (partition.h): the API, the result, and
 * the methods that do not rewire: TRADITIONAL (histogram + prefix sums +
 * scatter), TRADITIONAL_CHAINS (malloc'ed block chains, one pass) and MREMAP
 * (one anonymous region per partition grown with mremap).  The rewired
 * methods live in partition_mapped.c.
 *
 * Invariants of a result: start[0] = 0, start[P] = n, start is the prefix
 * sum of the partition sizes; chunks are in partition order and chunk keys of
 * partition p sum to start[p+1] - start[p]; every key of partition p's
 * chunks satisfies ruma_part_of(key) == p.
 *
 * Syscalls (os layer): mmap/munmap for the TRADITIONAL output and the
 * TRADITIONAL_CHAINS block pool (MAP_HUGETLB with huge) and the MREMAP
 * regions (ordinary anonymous memory: hugetlb mappings cannot grow with
 * mremap), mremap to grow them, madvise (MADV_HUGEPAGE) on 2 MiB malloc'ed
 * chain blocks.
 */
#include "rwstruct/partition_internal.h"

#include <ruma/core.h>

#include "os/os.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/mman.h>

static const char *const method_names[RUMA_PART_METHOD_COUNT_] = {
	[RUMA_PART_TRADITIONAL] = "traditional",
	[RUMA_PART_TRADITIONAL_CHAINS] = "traditional-chains",
	[RUMA_PART_MAPPED] = "mapped",
	[RUMA_PART_MAPPED_CHAINS] = "mapped-chains",
	[RUMA_PART_MAPPED_ADAPTIVE] = "mapped-adaptive",
	[RUMA_PART_MREMAP] = "mremap",
};

const char *ruma_part_method_name(ruma_part_method m)
{
	return (unsigned)m < RUMA_PART_METHOD_COUNT_ ? method_names[m] : "?";
}

int ruma_part_method_parse(const char *s, ruma_part_method *out)
{
	for (unsigned k = 0; k < RUMA_PART_METHOD_COUNT_; k++)
		if (s && !strcasecmp(s, method_names[k])) {
			*out = (ruma_part_method)k;
			return 0;
		}
	return RUMA_EPARSE;
}

void ruma_part_options_default(ruma_part_options *o)
{
	memset(o, 0, sizeof(*o));
	o->method = RUMA_PART_TRADITIONAL;
	o->partitions = 64;
	o->pages_per_block = 1;
	o->contiguous = true;
}

/*
 * Count keys 4 at a time: the 4 keys are loaded before any count is
 * incremented (a count is a size_t, the same type as the keys, so an
 * increment could otherwise alias the next key and force its reload), and
 * when the partition bits are the key's top bits (shift + log2 P == 64, as
 * in the RUMA micro-benchmark) the mask is left out: key >> shift < P.
 */
#define HIST_LOOP(PART)                                                        \
	do {                                                                   \
		for (; i + 4 <= n; i += 4) {                                   \
			uint64_t k0 = keys[i], k1 = keys[i + 1];               \
			uint64_t k2 = keys[i + 2], k3 = keys[i + 3];           \
			hist[PART(k0)]++;                                      \
			hist[PART(k1)]++;                                      \
			hist[PART(k2)]++;                                      \
			hist[PART(k3)]++;                                      \
		}                                                              \
		for (; i < n; i++)                                             \
			hist[PART(keys[i])]++;                                 \
	} while (0)

void ruma_part_histogram(const uint64_t *keys, size_t n, unsigned shift, uint32_t partitions,
			 size_t *hist)
{
	const uint64_t mask = (uint64_t)partitions - 1;
	size_t i = 0;

	memset(hist, 0, partitions * sizeof(*hist));
	if (shift > 0 && (UINT64_MAX >> shift) <= mask) {
#define TOP_PART(k) ((k) >> shift)
		HIST_LOOP(TOP_PART);
#undef TOP_PART
	} else {
#define MASKED_PART(k) (((k) >> shift) & mask)
		HIST_LOOP(MASKED_PART);
#undef MASKED_PART
	}
}

/* ---- result ---------------------------------------------------------------------- */

void ruma_part_impl_release(part_impl *impl)
{
	if (impl->out_map)
		(void)ruma_os_munmap(impl->out_map, impl->out_map_bytes);
	for (size_t i = 0; i < impl->nblocks; i++)
		free(impl->blocks[i]);
	free(impl->blocks);
	for (uint32_t p = 0; p < impl->nregions; p++)
		if (impl->regions[p])
			(void)ruma_os_munmap(impl->regions[p], impl->region_bytes[p]);
	free(impl->regions);
	free(impl->region_bytes);
	ruma_anon_destroy(impl->anon);
	for (int i = 0; i < 2; i++) {
		ruma_area_destroy(impl->area[i]);
		ruma_phys_destroy(impl->phys[i]);
	}
	memset(impl, 0, sizeof(*impl));
}

void ruma_part_result_free(ruma_part_result *r)
{
	if (!r)
		return;
	if (r->impl_) {
		ruma_part_impl_release(r->impl_);
		free(r->impl_);
	}
	free(r->start);
	free(r->chunks);
	free(r);
}

/* One chunk per non-empty partition of a contiguous result. */
static int chunks_from_start(ruma_part_result *r)
{
	size_t nc = 0;

	r->chunks = malloc((r->partitions ? r->partitions : 1) * sizeof(*r->chunks));
	if (!r->chunks)
		return -ENOMEM;
	for (uint32_t p = 0; p < r->partitions; p++)
		if (r->start[p + 1] > r->start[p])
			r->chunks[nc++] = (ruma_part_chunk){ r->data + r->start[p],
							     r->start[p + 1] - r->start[p], p };
	r->nchunks = nc;
	return 0;
}

/* ---- TRADITIONAL ------------------------------------------------------------------ */

/* Scatter through write-combining lines; out is 64-byte aligned. */
static void scatter_swwc(const uint64_t *keys, size_t n, unsigned shift, uint32_t P,
			 const size_t *start, size_t *pos, part_line *lines, uint64_t *out)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k = keys[i];
		uint32_t p = ruma_part_of(k, shift, P);
		size_t w = pos[p]++;
		lines[p].k[w & 7] = k;
		if ((w & 7) == 7) {
			size_t line = w & ~(size_t)7;
			if (line >= start[p])
				part_line_flush(out + line, lines[p].k);
			else /* first line of the partition starts in the previous one */
				memcpy(out + start[p], &lines[p].k[start[p] & 7],
				       (w + 1 - start[p]) * 8);
		}
	}
	for (uint32_t p = 0; p < P; p++) {
		size_t w = pos[p], line = w & ~(size_t)7, from = RUMA_MAX(line, start[p]);
		if (w > from)
			memcpy(out + from, &lines[p].k[from & 7], (w - from) * 8);
	}
	part_store_fence();
}

static int run_traditional(const uint64_t *keys, size_t n, const ruma_part_options *o,
			   ruma_part_result *r, part_impl *impl)
{
	uint32_t P = o->partitions;
	size_t page = o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	size_t bytes = (n * 8 + page - 1) / page * page, *pos;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void *m;
	int rc;

	flags |= o->huge ? MAP_HUGETLB : MAP_NORESERVE;
	if (!bytes)
		bytes = page;
	/* pass 1: histogram; prefix sums into start */
	ruma_part_histogram(keys, n, o->shift, P, r->start + 1);
	r->start[0] = 0;
	for (uint32_t p = 0; p < P; p++)
		r->start[p + 1] += r->start[p];
	ruma_part_phase_end(impl, RUMA_PART_PHASE_HISTOGRAM);
	rc = ruma_os_mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0, &m);
	if (rc)
		return rc == -ENOMEM && o->huge ? RUMA_ENOHUGE : rc;
	impl->out_map = m;
	impl->out_map_bytes = bytes;
	r->data = m;
	pos = malloc(P * sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	memcpy(pos, r->start, P * sizeof(*pos));
	ruma_part_phase_end(impl, RUMA_PART_PHASE_ALLOC);
	if (o->prefault_dst) {
		memset(m, 0, bytes);
		ruma_part_phase_end(impl, RUMA_PART_PHASE_PREFAULT);
	}
	/* pass 2: scatter */
	if (o->swwc) {
		part_line *lines = aligned_alloc(64, P * sizeof(*lines));
		if (!lines) {
			free(pos);
			return -ENOMEM;
		}
		scatter_swwc(keys, n, o->shift, P, r->start, pos, lines, r->data);
		free(lines);
	} else {
		uint64_t *out = r->data;
		const unsigned shift = o->shift; /* a local: the key stores could alias *o */
		for (size_t i = 0; i < n; i++) {
			uint64_t k = keys[i];
			out[pos[ruma_part_of(k, shift, P)]++] = k;
		}
	}
	free(pos);
	return chunks_from_start(r);
}

/* ---- write-combining lines of the one-pass methods ------------------------------------ */

/* A 64-byte line and its fill count per partition (CHAINS and MREMAP with swwc). */
typedef struct part_wc {
	part_line *lines;
	unsigned char *fill;
} part_wc;

static void wc_close(part_wc *wc)
{
	free(wc->lines);
	free(wc->fill);
	wc->lines = NULL;
	wc->fill = NULL;
}

static int wc_open(part_wc *wc, uint32_t P)
{
	wc->lines = aligned_alloc(64, P * sizeof(*wc->lines));
	wc->fill = calloc(P, 1);
	if (wc->lines && wc->fill)
		return 0;
	wc_close(wc);
	return -ENOMEM;
}

/* Add k to partition p's line; true when the line is full (its count restarts at 0). */
static inline bool wc_add(part_wc *wc, uint32_t p, uint64_t k)
{
	wc->lines[p].k[wc->fill[p]++] = k;
	if (wc->fill[p] < 8)
		return false;
	wc->fill[p] = 0;
	return true;
}

/* ---- TRADITIONAL_CHAINS ------------------------------------------------------------ */

typedef struct chain_state {
	uint64_t *wp, *wend;
} chain_state;

/* Per-block bookkeeping: partition and fill, to build chunks in partition order. */
typedef struct chain_block {
	uint64_t *keys;
	size_t n;
	uint32_t part;
} chain_block;

/*
 * The block memory of one chains run: blocks are posix_memalign'ed one by
 * one, or — with prefault_dst — carved in order from one pool mapping
 * (impl->out_map) touched before the pass, as the original's prefaulted
 * block pool.
 */
typedef struct chains_ctx {
	chain_block *cb;
	size_t cb_cap;
	size_t bbytes;
	bool huge;
	unsigned char *pool_next, *pool_end; /* NULL: no pool */
	size_t *last;                        /* each partition's current block */
} chains_ctx;

static int chains_new_block(part_impl *impl, chains_ctx *cx, uint32_t p, chain_state *st)
{
	chain_block **cb = &cx->cb;
	size_t *cb_cap = &cx->cb_cap, bbytes = cx->bbytes;
	void *b = NULL;

	if (impl->nblocks == *cb_cap) {
		size_t nc = *cb_cap ? *cb_cap * 2 : 256;
		void **nb = realloc(impl->blocks, nc * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		impl->blocks = nb;
		chain_block *ncb = realloc(*cb, nc * sizeof(*ncb));
		if (!ncb)
			return -ENOMEM;
		*cb = ncb;
		*cb_cap = nc;
	}
	if (cx->pool_next) {
		if (bbytes > (size_t)(cx->pool_end - cx->pool_next))
			return -ENOMEM; /* cannot happen: the pool holds n keys + a block per partition */
		b = cx->pool_next;
		cx->pool_next += bbytes;
	} else {
		if (posix_memalign(&b, cx->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K, bbytes))
			return -ENOMEM;
		if (cx->huge)
			(void)ruma_os_madvise(b, bbytes, MADV_HUGEPAGE);
	}
	impl->blocks[impl->nblocks] = cx->pool_next ? NULL : b; /* pool blocks are not freed one by one */
	(*cb)[impl->nblocks] = (chain_block){ b, 0, p };
	cx->last[p] = impl->nblocks;
	impl->nblocks++;
	st[p].wp = b;
	st[p].wend = (uint64_t *)b + bbytes / 8;
	return 0;
}

/* The pool of prefault_dst: room for n keys plus one partly filled block per partition, touched. */
static int chains_pool(size_t n, const ruma_part_options *o, part_impl *impl, chains_ctx *cx)
{
	size_t page = o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	size_t blocks = (n * 8 + cx->bbytes - 1) / cx->bbytes + o->partitions;
	size_t bytes = blocks * cx->bbytes;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (o->huge ? MAP_HUGETLB : MAP_NORESERVE);
	void *m;
	int rc = ruma_os_mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0, &m);

	if (rc)
		return rc == -ENOMEM && o->huge ? RUMA_ENOHUGE : rc;
	impl->out_map = m;
	impl->out_map_bytes = bytes;
	for (size_t off = 0; off < bytes; off += page)
		((volatile unsigned char *)m)[off] = 0;
	cx->pool_next = m;
	cx->pool_end = (unsigned char *)m + bytes;
	return 0;
}

/* Append k to partition p's chain (a new block when the current one is full). */
static inline int chains_put(part_impl *impl, chains_ctx *cx, chain_state *st, uint32_t p,
			     uint64_t k)
{
	if (RUMA_UNLIKELY(st[p].wp == st[p].wend)) {
		int rc = chains_new_block(impl, cx, p, st);
		if (rc)
			return rc;
	}
	*st[p].wp++ = k;
	return 0;
}

/*
 * The pass with software write-combining: keys gather in a 64-byte line per
 * partition; a full line goes to the partition's block with non-temporal
 * stores (blocks are page aligned and a multiple of 64 bytes, so a line
 * never straddles two blocks); the partial lines are written at the end.
 */
static int chains_scatter_swwc(const uint64_t *keys, size_t n, const ruma_part_options *o,
			       part_impl *impl, chains_ctx *cx, chain_state *st)
{
	uint32_t P = o->partitions;
	const unsigned shift = o->shift; /* a local: the line stores could alias *o */
	part_wc wc;
	int rc = wc_open(&wc, P);

	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t k = keys[i];
		uint32_t p = ruma_part_of(k, shift, P);
		if (!wc_add(&wc, p, k))
			continue;
		if (RUMA_UNLIKELY(st[p].wp == st[p].wend) && (rc = chains_new_block(impl, cx, p, st)))
			break;
		part_line_flush(st[p].wp, wc.lines[p].k);
		st[p].wp += 8;
	}
	for (uint32_t p = 0; p < P && !rc; p++)
		for (unsigned j = 0; j < wc.fill[p] && !rc; j++)
			rc = chains_put(impl, cx, st, p, wc.lines[p].k[j]);
	part_store_fence();
	wc_close(&wc);
	return rc;
}

static int run_traditional_chains(const uint64_t *keys, size_t n, const ruma_part_options *o,
				  ruma_part_result *r, part_impl *impl)
{
	uint32_t P = o->partitions;
	size_t bbytes = o->pages_per_block * (o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K);
	chain_state *st = calloc(P, sizeof(*st));
	size_t *last = malloc(P * sizeof(*last));
	size_t *seq = NULL;
	chains_ctx cx = { .bbytes = bbytes, .huge = o->huge, .last = last };
	chain_block *cb = NULL;
	int rc = 0;

	if (!st || !last) {
		rc = -ENOMEM;
		goto out;
	}
	ruma_part_phase_end(impl, RUMA_PART_PHASE_ALLOC);
	if (o->prefault_dst) {
		rc = chains_pool(n, o, impl, &cx);
		if (rc)
			goto out;
		ruma_part_phase_end(impl, RUMA_PART_PHASE_PREFAULT);
	}
	if (o->swwc) {
		rc = chains_scatter_swwc(keys, n, o, impl, &cx, st);
	} else {
		const unsigned shift = o->shift;
		for (size_t i = 0; i < n && !rc; i++) {
			uint64_t k = keys[i];
			rc = chains_put(impl, &cx, st, ruma_part_of(k, shift, P), k);
		}
	}
	cb = cx.cb;
	if (rc)
		goto out;
	/* fill counts: every block but a partition's last is full */
	for (size_t b = 0; b < impl->nblocks; b++)
		cb[b].n = bbytes / 8;
	for (uint32_t p = 0; p < P; p++)
		if (st[p].wp)
			cb[last[p]].n = (size_t)(st[p].wp - cb[last[p]].keys);
	/* chunks in partition order, blocks of a partition in allocation order */
	seq = malloc((impl->nblocks ? impl->nblocks : 1) * sizeof(*seq));
	r->chunks = malloc((impl->nblocks ? impl->nblocks : 1) * sizeof(*r->chunks));
	if (!seq || !r->chunks) {
		rc = -ENOMEM;
		goto out;
	}
	{
		/* counting sort of block indices by partition keeps allocation order */
		size_t *cnt = calloc((size_t)P + 1, sizeof(*cnt));
		if (!cnt) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t b = 0; b < impl->nblocks; b++)
			cnt[cb[b].part + 1]++;
		for (uint32_t p = 0; p < P; p++)
			cnt[p + 1] += cnt[p];
		for (size_t b = 0; b < impl->nblocks; b++)
			seq[cnt[cb[b].part]++] = b;
		free(cnt);
	}
	memset(r->start, 0, ((size_t)P + 1) * sizeof(*r->start));
	for (size_t i = 0; i < impl->nblocks; i++) {
		const chain_block *b = &cb[seq[i]];
		r->chunks[i] = (ruma_part_chunk){ b->keys, b->n, b->part };
		r->start[b->part + 1] += b->n;
	}
	for (uint32_t p = 0; p < P; p++)
		r->start[p + 1] += r->start[p];
	r->nchunks = impl->nblocks;
out:
	free(seq);
	free(cb);
	free(st);
	free(last);
	return rc;
}

/* ---- MREMAP ------------------------------------------------------------------------- */

/*
 * Make room for one more key in partition p's region: map it, or grow it by
 * step.  The regions are ordinary anonymous memory also with huge (which
 * only makes the step 2 MiB pages, as the original's 44): Linux refuses to
 * expand a hugetlb mapping with mremap (EINVAL).
 */
static int mremap_room(part_impl *impl, uint32_t p, size_t step)
{
	size_t nb = impl->region_bytes[p] + step;
	void *m;
	int rc;

	if (!impl->regions[p])
		rc = ruma_os_mmap(NULL, nb, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m);
	else
		rc = ruma_os_mremap(impl->regions[p], impl->region_bytes[p], nb, MREMAP_MAYMOVE, NULL,
				    &m);
	if (rc)
		return rc;
	impl->regions[p] = m;
	impl->region_bytes[p] = nb;
	return 0;
}

/*
 * The MREMAP pass; with swwc, keys gather in a 64-byte line per partition
 * and full lines go to the region with non-temporal stores (regions are
 * page aligned and grow by a multiple of 64 bytes, and only full lines are
 * flushed before the end, so a line is aligned and never straddles the
 * region's end); the partial lines are appended at the end.
 */
static int mremap_scatter(const uint64_t *keys, size_t n, const ruma_part_options *o,
			  part_impl *impl, size_t *fill, size_t step)
{
	uint32_t P = o->partitions;
	const unsigned shift = o->shift; /* a local: the line stores could alias *o */
	part_wc wc = { NULL, NULL };
	int rc = o->swwc ? wc_open(&wc, P) : 0;

	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t k = keys[i];
		uint32_t p = ruma_part_of(k, shift, P);
		if (wc.lines && !wc_add(&wc, p, k))
			continue;
		if (RUMA_UNLIKELY(fill[p] * 8 == impl->region_bytes[p]) && (rc = mremap_room(impl, p, step)))
			break;
		if (wc.lines) {
			part_line_flush((uint64_t *)impl->regions[p] + fill[p], wc.lines[p].k);
			fill[p] += 8;
		} else {
			((uint64_t *)impl->regions[p])[fill[p]++] = k;
		}
	}
	for (uint32_t p = 0; wc.lines && p < P && !rc; p++)
		for (unsigned j = 0; j < wc.fill[p] && !rc; j++) {
			if (fill[p] * 8 == impl->region_bytes[p] && (rc = mremap_room(impl, p, step)))
				break;
			((uint64_t *)impl->regions[p])[fill[p]++] = wc.lines[p].k[j];
		}
	if (wc.lines)
		part_store_fence();
	wc_close(&wc);
	return rc;
}

static int run_mremap(const uint64_t *keys, size_t n, const ruma_part_options *o,
		      ruma_part_result *r, part_impl *impl)
{
	uint32_t P = o->partitions;
	size_t step = o->pages_per_block * (o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K);
	size_t *fill = calloc(P, sizeof(*fill));
	int rc = 0;

	impl->regions = calloc(P, sizeof(*impl->regions));
	impl->region_bytes = calloc(P, sizeof(*impl->region_bytes));
	impl->nregions = P;
	r->chunks = malloc(P * sizeof(*r->chunks));
	if (!fill || !impl->regions || !impl->region_bytes || !r->chunks) {
		free(fill);
		return -ENOMEM;
	}
	/* every partition's first region is mapped before the pass, as the original's */
	for (uint32_t p = 0; p < P && !rc; p++)
		rc = mremap_room(impl, p, step);
	if (rc) {
		free(fill);
		return rc;
	}
	ruma_part_phase_end(impl, RUMA_PART_PHASE_ALLOC);
	rc = mremap_scatter(keys, n, o, impl, fill, step);
	if (!rc) {
		size_t nc = 0;
		r->start[0] = 0;
		for (uint32_t p = 0; p < P; p++) {
			r->start[p + 1] = r->start[p] + fill[p];
			if (fill[p])
				r->chunks[nc++] = (ruma_part_chunk){ impl->regions[p], fill[p], p };
		}
		r->nchunks = nc;
	}
	free(fill);
	return rc;
}

/* ---- entry ------------------------------------------------------------------------ */

int ruma_part_run_phased(const uint64_t *keys, size_t n, const ruma_part_options *o,
			 ruma_part_phase_fn phase, void *phase_ctx, ruma_part_result **out)
{
	ruma_part_result *r;
	part_impl *impl;
	int rc;

	if (!out || !o || (n && !keys))
		return -EINVAL;
	*out = NULL;
	if (o->partitions == 0 || o->partitions > RUMA_PART_MAX_PARTITIONS ||
	    (o->partitions & (o->partitions - 1)) || o->shift >= 64 ||
	    o->extent_pages > ((size_t)1 << 24) ||
	    (unsigned)o->method >= RUMA_PART_METHOD_COUNT_ ||
	    (o->method != RUMA_PART_MAPPED_ADAPTIVE && o->method != RUMA_PART_TRADITIONAL &&
	     (o->pages_per_block == 0 || o->pages_per_block > ((size_t)1 << 20))))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	impl = calloc(1, sizeof(*impl));
	if (r)
		r->start = calloc((size_t)o->partitions + 1, sizeof(*r->start));
	if (!r || !impl || !r->start) {
		if (r)
			free(r->start);
		free(r);
		free(impl);
		return -ENOMEM;
	}
	impl->phase = phase;
	impl->phase_ctx = phase_ctx;
	r->impl_ = impl;
	r->n = n;
	r->partitions = o->partitions;
	r->method = o->method;
	switch (o->method) {
	case RUMA_PART_TRADITIONAL:
		rc = run_traditional(keys, n, o, r, impl);
		break;
	case RUMA_PART_TRADITIONAL_CHAINS:
		rc = run_traditional_chains(keys, n, o, r, impl);
		break;
	case RUMA_PART_MREMAP:
		rc = run_mremap(keys, n, o, r, impl);
		break;
	default:
		rc = ruma_part_mapped_run(keys, n, o, r, impl);
		break;
	}
	if (rc) {
		ruma_part_result_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int ruma_part_run(const uint64_t *keys, size_t n, const ruma_part_options *o,
		  ruma_part_result **out)
{
	return ruma_part_run_phased(keys, n, o, NULL, NULL, out);
}
