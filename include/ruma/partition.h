/*
 * partition.h — radix partitioning of 64-bit keys, traditional and rewired.
 *
 * Partition function (the same everywhere in ruma, see ruma_part_of):
 *     partition(key) = (key >> shift) & (P - 1)
 * i.e. the LOW radix bits of the key by default (shift 0).  P is a power of
 * two between 1 and 65536.  Within a partition, keys keep their input order
 * for TRADITIONAL, TRADITIONAL_CHAINS, MREMAP and for chunk results; the
 * squeeze that makes a mapped output contiguous moves up to one page of keys
 * from the end of a partition to its front, so the order inside a partition
 * is not kept there (the set of keys is).
 *
 * Methods (numbers are the RUMA micro-benchmark's):
 *   TRADITIONAL        (12) histogram pass, prefix sums, scatter pass into a
 *                      malloc'ed output: two passes, contiguous output.
 *   TRADITIONAL_CHAINS (17) one pass, no histogram: every partition appends to
 *                      a chain of malloc'ed blocks of pages_per_block pages.
 *                      Result: chunks only (data == NULL).
 *   MAPPED             (13/14) one pass, no histogram: every partition has its
 *                      own slot of a reserved virtual area and grows in it.
 *                      At the end its pages are rewired into one contiguous
 *                      output in partition order.  How depends on the
 *                      rewire path (opts.path, see below).
 *   MAPPED_CHAINS      (18/19) one pass: every partition writes through a
 *                      window of one block; when the block is full its pool
 *                      offset is appended to the partition's chain and the
 *                      window is rewired to a fresh block.  At the end the
 *                      chains are rewired into one contiguous output.
 *   MAPPED_ADAPTIVE    (21) like MAPPED_CHAINS, but the block size starts at
 *                      2 MiB and halves down to 4 KiB towards the end of the
 *                      input.  Without huge, all blocks come from a 4 KiB
 *                      pool and the output is contiguous; with huge, 2 MiB
 *                      blocks come from a hugetlb pool and smaller ones from
 *                      a 4 KiB pool, and the result is chunks (one range
 *                      cannot mix both page sizes at arbitrary offsets).
 *   MREMAP             (44) every partition is an anonymous region, mapped
 *                      before the pass and grown with mremap(MREMAP_MAYMOVE)
 *                      by pages_per_block pages at a time (with huge: 2 MiB
 *                      pages of ordinary memory, as Linux refuses to expand
 *                      a hugetlb mapping).  Result: chunks only (data == NULL).
 *
 * The partly filled last page of every partition (mapped methods): the
 * output must be contiguous without holes.  Walking the partitions in order,
 * the partly filled page at the end of the output so far is completed with
 * keys moved from the END of the next partition (its last, partly filled
 * page first); a page emptied that way is dropped, all other pages are
 * only rewired into the output (one batch rewire, one mmap per run of
 * consecutive pool pages).  At most one page of keys is copied per
 * partition ("squeeze").
 *
 * Rewire paths of MAPPED and MAPPED_CHAINS (ruma_rewire_path, area.h;
 * result.path says which one ran):
 *   RUMA_REWIRE_UFFD    blocks are pages of a private anonymous staging
 *                       area (the kernel gives every page on its first
 *                       write; MAPPED: one slot per partition, CHAINS:
 *                       blocks of pages_per_block pages carved from extents
 *                       of max(extent_pages, 64) staging pages per
 *                       partition); the final layout moves the pages into
 *                       the output with UFFDIO_MOVE, one ioctl per run of
 *                       consecutive staging pages (about one per partition
 *                       resp. extent).  One kernel mapping per area whatever
 *                       the block size: no vm.max_map_count limit.
 *   RUMA_REWIRE_MREMAP  the same, moving runs with mremap(MREMAP_DONTUNMAP):
 *                       up to two mappings per run.
 *   RUMA_REWIRE_MMAP    the original's way: blocks of pages_per_block pool
 *                       pages of a memfd wired with mmap(MAP_SHARED|MAP_FIXED),
 *                       one mapping per discontinuity (about one per block).
 *   RUMA_REWIRE_AUTO    (default) UFFD when the kernel offers UFFDIO_MOVE
 *                       (ruma_move_probe), else MREMAP when its mappings
 *                       (two per expected run) fit the budget, else MMAP.
 *                       huge always uses MMAP (hugetlb pages cannot be
 *                       moved this way).
 * MAPPED_ADAPTIVE always uses MMAP.
 *
 * Software write-combining (swwc): a 64-byte buffer per partition, flushed
 * with a 64-byte copy (non-temporal stores on x86-64 with SSE2) when full.
 * docs/structures.md says where it helped in our measurements.
 */
#ifndef RUMA_PARTITION_H
#define RUMA_PARTITION_H

#include <ruma/ruma.h>
#include <ruma/area.h>
#include <ruma/anon.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ruma_part_method {
	RUMA_PART_TRADITIONAL = 0,
	RUMA_PART_TRADITIONAL_CHAINS,
	RUMA_PART_MAPPED,
	RUMA_PART_MAPPED_CHAINS,
	RUMA_PART_MAPPED_ADAPTIVE,
	RUMA_PART_MREMAP,
	RUMA_PART_METHOD_COUNT_
} ruma_part_method;

#define RUMA_PART_MAX_PARTITIONS 65536u

typedef struct ruma_part_options {
	ruma_part_method method;
	uint32_t partitions;     /* P: power of two in [1, 65536]; default 64 */
	unsigned shift;          /* partition = (key >> shift) & (P-1); < 64 */
	size_t pages_per_block;  /* block size in pages (not ADAPTIVE); default 1 */
	bool huge;               /* 2 MiB pages: pool pages (mapped methods), MAP_HUGETLB
				    (TRADITIONAL output), THP-advised 2 MiB blocks
				    (TRADITIONAL_CHAINS), 2 MiB growth steps (MREMAP) */
	bool swwc;               /* software write-combining buffers (TRADITIONAL, TRADITIONAL_CHAINS,
				    MREMAP) */
	bool prefault_dst;       /* TRADITIONAL: touch the output before scattering;
				    TRADITIONAL_CHAINS: carve the blocks from one pool mapping
				    (n keys + a block per partition) touched before the pass */
	bool populate;           /* mapped methods: populate the final contiguous output */
	bool contiguous;         /* mapped methods: build the contiguous output (default true); false leaves chunks */
	/*
	 * Mapped methods: pool pages reserved per partition at a time.  Blocks of
	 * a partition are carved from its reserved extent, so they are
	 * physically contiguous: the kernel merges their mappings and the final
	 * layout needs about one mmap per extent instead of one per block.
	 * Unused reserved pages were never touched and cost no memory; they are
	 * freed at the end.  0 (default) = every block is allocated on its own,
	 * as in the original.  For MAPPED, whose partitions grow in their own
	 * virtually contiguous slot, a whole extent is wired with one mmap
	 * (extent_pages rounded up to a multiple of pages_per_block).
	 */
	size_t extent_pages;
	ruma_rewire_path path;   /* MAPPED, MAPPED_CHAINS: how pages are rewired (default AUTO, see above) */
	/*
	 * Mapped methods: most kernel mappings each area of the run may create;
	 * 0 = only the process-wide budget (vm.max_map_count minus
	 * RUMA_AREA_MAP_MARGIN).  Lets a test impose a low limit without the sysctl.
	 */
	uint64_t map_budget;
} ruma_part_options;

/* One run of consecutive output keys of one partition. */
typedef struct ruma_part_chunk {
	uint64_t *keys;
	size_t n;
	uint32_t part;
} ruma_part_chunk;

/*
 * The result.  Layout is part of the contract; fields are read-only for the
 * caller; release with ruma_part_result_free.
 *   data        contiguous output (n keys, partitions in order), or NULL for
 *               methods that return chunks only.
 *   start       P+1 offsets: partition p is data[start[p] .. start[p+1]);
 *               also valid when data == NULL (offsets in the concatenation
 *               of the chunks).
 *   chunks      the output as chunks in partition order (for a contiguous
 *               result, one chunk per non-empty partition pointing into data).
 */
typedef struct ruma_part_result {
	uint64_t *data;
	size_t n;
	uint32_t partitions;
	size_t *start;
	ruma_part_chunk *chunks;
	size_t nchunks;
	ruma_part_method method;
	ruma_rewire_path path; /* mapped methods: the rewire path used (MAPPED, CHAINS may move pages) */
	uint64_t rewires;     /* mmap / UFFDIO_MOVE / mremap calls spent on rewiring */
	uint64_t bytes_copied;/* bytes copied to close holes (mapped methods) */
	void *impl_;          /* private: pools, areas, blocks */
} ruma_part_result;

/* ruma_part_of — the partition of key: (key >> shift) & (partitions - 1). */
static inline uint32_t ruma_part_of(uint64_t key, unsigned shift, uint32_t partitions)
{
	return (uint32_t)((key >> shift) & (uint64_t)(partitions - 1));
}

/*
 * ruma_part_options_default — TRADITIONAL, 64 partitions, shift 0, 1 page
 * per block, contiguous.
 */
RUMA_API void ruma_part_options_default(ruma_part_options *o);

/*
 * ruma_part_run — partition n keys (not modified) as o describes.  *out
 * receives a result the caller owns.  Returns 0, -EINVAL (P not a power of
 * two, shift >= 64, pages_per_block 0, bad method), -ENOMEM, RUMA_ENOHUGE
 * (huge pages requested, none free), RUMA_EMAPLIMIT (the layout needs more
 * mappings than vm.max_map_count allows: use more pages per block or huge
 * pages), RUMA_EVIRTFULL.  Nothing is leaked on error.
 */
RUMA_API int ruma_part_run(const uint64_t *keys, size_t n, const ruma_part_options *o,
			   ruma_part_result **out);

/* ruma_part_result_free — release the result and everything it maps (NULL ignored). */
RUMA_API void ruma_part_result_free(ruma_part_result *r);

/* ruma_part_histogram — hist[p] = number of keys in partition p (hist has P entries). */
RUMA_API void ruma_part_histogram(const uint64_t *keys, size_t n, unsigned shift,
				  uint32_t partitions, size_t *hist);

/* ruma_part_method_name — "traditional", "traditional-chains", "mapped", "mapped-chains", "mapped-adaptive", "mremap". */
RUMA_API const char *ruma_part_method_name(ruma_part_method m);
/* ruma_part_method_parse — inverse of ruma_part_method_name.  0 or RUMA_EPARSE. */
RUMA_API int ruma_part_method_parse(const char *s, ruma_part_method *out);

#ifdef __cplusplus
}
#endif
#endif
