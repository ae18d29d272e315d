/*
 * partition_internal.h — shared pieces of partition.c (traditional, chained
 * malloc blocks, mremap) and partition_mapped.c (the rewired methods).
 */
#ifndef RUMA_RWSTRUCT_PARTITION_INTERNAL_H
#define RUMA_RWSTRUCT_PARTITION_INTERNAL_H

#include <ruma/partition.h>
#include <ruma/area.h>
#include <ruma/phys.h>
#include "rwstruct/rwstruct_ext.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Everything a result owns besides the public arrays. */
typedef struct part_impl {
	/* TRADITIONAL: the output buffer (mmap'ed) */
	void *out_map;
	size_t out_map_bytes;
	/* TRADITIONAL_CHAINS: malloc'ed blocks */
	void **blocks;
	size_t nblocks;
	/* MREMAP: one anonymous region per partition */
	void **regions;
	size_t *region_bytes;
	uint32_t nregions;
	/* mapped methods: pools and output areas (index 1: the 4 KiB pool of ADAPTIVE + huge) */
	ruma_phys *phys[2];
	ruma_area *area[2];
	/* MAPPED over anonymous memory: the output (or, for chunks, the staging slots) */
	ruma_anon *anon;
	/* the caller's phase hook (ruma_part_run_phased), NULL for none */
	ruma_part_phase_fn phase;
	void *phase_ctx;
} part_impl;

/* A software write-combining line: 8 keys, 64-byte aligned. */
typedef struct part_line {
	_Alignas(64) uint64_t k[8];
} part_line;

/* Copy one 64-byte line (dst and src 16-byte aligned; dst 64-byte aligned
 * for full effect) with non-temporal stores where SSE2 exists. */
static inline void part_line_flush(void *dst, const void *src)
{
#if defined(__SSE2__)
	__m128i *d = (__m128i *)dst;
	const __m128i *s = (const __m128i *)src;
	_mm_stream_si128(d + 0, _mm_load_si128(s + 0));
	_mm_stream_si128(d + 1, _mm_load_si128(s + 1));
	_mm_stream_si128(d + 2, _mm_load_si128(s + 2));
	_mm_stream_si128(d + 3, _mm_load_si128(s + 3));
#else
	memcpy(dst, src, 64);
#endif
}

/* Order the non-temporal stores before later loads/stores of other threads. */
static inline void part_store_fence(void)
{
#if defined(__SSE2__)
	_mm_sfence();
#endif
}

/* Report the end of a phase to the caller's hook, if any (see ruma_part_phase). */
static inline void ruma_part_phase_end(const part_impl *impl, ruma_part_phase ph)
{
	if (impl->phase)
		impl->phase(impl->phase_ctx, ph);
}

/* Mapped methods (partition_mapped.c): fill r (data/start/chunks) and impl. */
int ruma_part_mapped_run(const uint64_t *keys, size_t n, const ruma_part_options *o,
			 ruma_part_result *r, part_impl *impl);

/* Release what impl holds (partition.c). */
void ruma_part_impl_release(part_impl *impl);

#endif
