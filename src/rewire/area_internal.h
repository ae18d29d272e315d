/*
 * area_internal.h — the layout of ruma_area and the helpers shared by
 * area_proc.c (/proc readers and the check), area.c (table, budget, single
 * runs and populating them), area_batch.c (batches, alias, populating many
 * runs), area_move.c (mremap moves) and area_anon.c (anonymous areas and
 * page moves, which share the budget).  Bottom-up in that order: a file
 * calls only files before it (scripts/check_calls.py checks it).
 *
 * Table entries (uint64_t per virtual page):
 *   0                          unmapped (PROT_NONE reservation)
 *   slot << 56 | mode | ppage  mapped: slot = pool index + 1 (1..255),
 *                              mode = ENT_PRIVATE / ENT_RDONLY bits,
 *                              ppage < 2^54
 * Two neighbouring entries x, y "continue" each other (no VMA boundary
 * expected between them) when both are 0, or both are mapped with the same
 * slot and mode and ppage(y) == ppage(x) + 1.
 */
#ifndef RUMA_REWIRE_AREA_INTERNAL_H
#define RUMA_REWIRE_AREA_INTERNAL_H

#include <ruma/area.h>
#include <ruma/core.h>
#include "rewire/rewire_ext.h"

#define ENT_SLOT_SHIFT 56
#define ENT_PRIVATE ((uint64_t)1 << 55)
#define ENT_RDONLY ((uint64_t)1 << 54)
#define ENT_PAGE_MASK (((uint64_t)1 << 54) - 1)

struct ruma_area {
	uint8_t *base;
	unsigned shift;           /* log2(page size) */
	uint64_t pages;
	uint64_t *tab;            /* translation table, see above; read through area_ent */
	uint64_t run_e0;          /* != 0: the whole area is the one run run_e0, run_e0 + 1, ...
				     and tab is not written yet (area_commit writes it out) */
	ruma_phys *pools[RUMA_AREA_MAX_POOLS];
	unsigned npools;
	uint64_t maps;            /* VMA estimate: 1 + boundaries that do not continue */
	uint64_t budget;          /* per-area budget, UINT64_MAX = none */
	uint64_t max_map_count;   /* vm.max_map_count, read at the first growth (0 = not yet) */
	uint64_t mapped;          /* entries != 0 */
	uint64_t mmaps, mremaps, populated, lost;
	bool no_populate_madvise; /* the kernel answered EINVAL to MADV_POPULATE_* */
	bool no_process_madvise;  /* process_madvise refused MADV_POPULATE_* on this process */
};

static inline uint64_t ent_page(uint64_t e)
{
	return e & ENT_PAGE_MASK;
}

static inline unsigned ent_slot(uint64_t e)
{
	return (unsigned)(e >> ENT_SLOT_SHIFT);
}

/* Entry i pages after e (0 stays 0). */
static inline uint64_t ent_add(uint64_t e, uint64_t i)
{
	return e ? e + i : 0;
}

static inline bool ent_continues(uint64_t x, uint64_t y)
{
	if (!x || !y)
		return !x && !y;
	return (x & ~ENT_PAGE_MASK) == (y & ~ENT_PAGE_MASK) && ent_page(y) == ent_page(x) + 1;
}

/* The table entry of virtual page v. */
static inline uint64_t area_ent(const ruma_area *a, uint64_t v)
{
	return a->run_e0 ? a->run_e0 + v : a->tab[v];
}

static inline size_t area_bytes(const ruma_area *a, uint64_t npages)
{
	return (size_t)(npages << a->shift);
}

/* The address of virtual page v (ruma_area_addr, for the files below area.c). */
static inline void *area_addr(const ruma_area *a, uint64_t v)
{
	return a->base + area_bytes(a, v);
}

static inline bool area_range_ok(const ruma_area *a, uint64_t v, uint64_t n)
{
	return n > 0 && v < a->pages && n <= a->pages - v;
}

static inline ruma_phys *area_pool_of(const ruma_area *a, uint64_t e)
{
	return e ? a->pools[ent_slot(e) - 1] : NULL;
}

/* Mode bits for RUMA_AREA_* flags. */
uint64_t area_mode_bits(unsigned flags);

/* Pool slot (1-based) for phys, registering it; -ENOSPC when full, -EINVAL on page-size mismatch. */
int area_slot(ruma_area *a, ruma_phys *phys, unsigned *slot);

/*
 * Check the pool run [ppage, ppage + n) against the pool's file size,
 * register the pool and build the entry of ppage for RUMA_AREA_* flags.
 * Returns 0, -EINVAL or -ENOSPC (too many pools).
 */
int area_pool_entry(ruma_area *a, ruma_phys *phys, uint64_t ppage, uint64_t n, unsigned flags,
		    uint64_t *e0);

/*
 * Set [v, v + n) to entries e0, e0 + 1, ... (e0 == 0: back to the
 * reservation) with one mmap, checking the budget first.  On failure the
 * range is reset to the reservation and reads none.  Returns 0 or an error.
 */
int area_set_run(ruma_area *a, uint64_t v, uint64_t n, uint64_t e0);
/* As area_set_run, adding mmap_extra (MAP_POPULATE) to the flags of a pool mapping. */
int area_set_run_ex(ruma_area *a, uint64_t v, uint64_t n, uint64_t e0, int mmap_extra);

/* Budget: the estimate after setting [v, v + n) to e0.., and whether it is allowed. */
uint64_t area_predict(const ruma_area *a, uint64_t v, uint64_t n, uint64_t e0);
int area_budget_check(ruma_area *a, uint64_t predicted);

/*
 * The process-wide mapping estimate shared by ruma_area and ruma_anon:
 * claim delta more mappings (RUMA_EMAPLIMIT, nothing claimed, when the total
 * would exceed max_map_count - RUMA_AREA_MAP_MARGIN) and release them.
 */
int area_maps_claim(uint64_t max_map_count, uint64_t delta);
void area_maps_release(uint64_t delta);

/* Record [v, v + n) = e0.. in the table and the estimates (no syscall). */
void area_commit(ruma_area *a, uint64_t v, uint64_t n, uint64_t e0, uint64_t predicted);

/* Put [v, v + n) back to PROT_NONE (one mmap) without a budget check; records none. */
int area_reserve_range(ruma_area *a, uint64_t v, uint64_t n);

/* Prefault [v, v + n), all of which must be mapped with the same mode. */
int area_populate_mapped(ruma_area *a, uint64_t v, uint64_t n, unsigned flags,
			 ruma_populate_method *how);

/* Read a whole small /proc or /sys file into a malloc'ed NUL-terminated buffer. */
int area_read_file(const char *path, char **buf, size_t *len);

#endif
