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
 * Syscalls (os layer): mmap/munmap for the TRADITIONAL output (MAP_HUGETLB
 * with huge) and the MREMAP regions, mremap to grow them, madvise
 * (MADV_HUGEPAGE) on 2 MiB malloc'ed chain blocks.
 */
#include "rewire/partition_internal.h"

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

void ruma_part_opts_default(ruma_part_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->method = RUMA_PART_TRADITIONAL;
	o->partitions = 64;
	o->pages_per_block = 1;
	o->contiguous = true;
}

void ruma_part_histogram(const uint64_t *keys, size_t n, unsigned shift, uint32_t partitions,
			 size_t *hist)
{
	memset(hist, 0, partitions * sizeof(*hist));
	for (size_t i = 0; i < n; i++)
		hist[ruma_part_of(keys[i], shift, partitions)]++;
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

static int run_traditional(const uint64_t *keys, size_t n, const ruma_part_opts *o,
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
	rc = ruma_os_mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0, &m);
	if (rc)
		return rc == -ENOMEM && o->huge ? RUMA_ENOHUGE : rc;
	impl->out_map = m;
	impl->out_map_bytes = bytes;
	r->data = m;
	if (o->prefault_dst)
		memset(m, 0, bytes);
	/* pass 1: histogram; prefix sums into start */
	ruma_part_histogram(keys, n, o->shift, P, r->start + 1);
	r->start[0] = 0;
	for (uint32_t p = 0; p < P; p++)
		r->start[p + 1] += r->start[p];
	pos = malloc(P * sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	memcpy(pos, r->start, P * sizeof(*pos));
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
		for (size_t i = 0; i < n; i++) {
			uint64_t k = keys[i];
			out[pos[ruma_part_of(k, o->shift, P)]++] = k;
		}
	}
	free(pos);
	return chunks_from_start(r);
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

static int chains_new_block(part_impl *impl, chain_block **cb, size_t *cb_cap, size_t bbytes,
			    bool huge, uint32_t p, chain_state *st)
{
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
	if (posix_memalign(&b, huge ? RUMA_PAGE_2M : RUMA_PAGE_4K, bbytes))
		return -ENOMEM;
	if (huge)
		(void)ruma_os_madvise(b, bbytes, MADV_HUGEPAGE);
	impl->blocks[impl->nblocks] = b;
	(*cb)[impl->nblocks] = (chain_block){ b, 0, p };
	impl->nblocks++;
	st[p].wp = b;
	st[p].wend = (uint64_t *)b + bbytes / 8;
	return 0;
}

static int run_traditional_chains(const uint64_t *keys, size_t n, const ruma_part_opts *o,
				  ruma_part_result *r, part_impl *impl)
{
	uint32_t P = o->partitions;
	size_t bbytes = o->pages_per_block * (o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K);
	chain_state *st = calloc(P, sizeof(*st));
	size_t *last = malloc(P * sizeof(*last)), cb_cap = 0;
	size_t *seq = NULL;
	chain_block *cb = NULL;
	int rc = 0;

	if (!st || !last) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t k = keys[i];
		uint32_t p = ruma_part_of(k, o->shift, P);
		if (RUMA_UNLIKELY(st[p].wp == st[p].wend)) {
			rc = chains_new_block(impl, &cb, &cb_cap, bbytes, o->huge, p, st);
			if (rc)
				goto out;
			last[p] = impl->nblocks - 1;
		}
		*st[p].wp++ = k;
	}
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

static int run_mremap(const uint64_t *keys, size_t n, const ruma_part_opts *o,
		      ruma_part_result *r, part_impl *impl)
{
	uint32_t P = o->partitions;
	size_t step = o->pages_per_block * (o->huge ? RUMA_PAGE_2M : RUMA_PAGE_4K);
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (o->huge ? MAP_HUGETLB : MAP_NORESERVE);
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
	for (size_t i = 0; i < n; i++) {
		uint64_t k = keys[i];
		uint32_t p = ruma_part_of(k, o->shift, P);
		if (RUMA_UNLIKELY(fill[p] * 8 == impl->region_bytes[p])) {
			void *m;
			size_t nb = impl->region_bytes[p] + step;
			if (!impl->regions[p])
				rc = ruma_os_mmap(NULL, nb, PROT_READ | PROT_WRITE, flags, -1, 0, &m);
			else
				rc = ruma_os_mremap(impl->regions[p], impl->region_bytes[p], nb,
						    MREMAP_MAYMOVE, NULL, &m);
			if (rc) {
				if (rc == -ENOMEM && o->huge)
					rc = RUMA_ENOHUGE;
				break;
			}
			impl->regions[p] = m;
			impl->region_bytes[p] = nb;
		}
		((uint64_t *)impl->regions[p])[fill[p]++] = k;
	}
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

int ruma_part_run(const uint64_t *keys, size_t n, const ruma_part_opts *o, ruma_part_result **out)
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
