/*
 * artbench.h — the driver of `ruma art`: Leis's ART benchmark (insert n keys,
 * look them up max(1, 10M/n) times in key-array order, erase them all) over
 * any ordered index given as a small operations table, so that the ART and
 * a peer (JudyL, scripts/art_judy_peer.c) run through the same key
 * generation, timing, counters and output.
 */
#ifndef RUMA_ARTBENCH_H
#define RUMA_ARTBENCH_H

#include <ruma/alloc.h>
#include <ruma/core.h>

#include <stdio.h>

/* Key modes, as Leis's ART.cpp. */
enum { ARTBENCH_DENSE_SORTED = 0, ARTBENCH_DENSE_SHUFFLED = 1, ARTBENCH_SPARSE = 2 };

/*
 * The keys of one run.  Modes 0 and 1: keys 1..n and tid == key.  Mode 2:
 * n distinct random 64-bit keys (all 64 bits used), tid == row index (a
 * tagged-pointer TID holds 63 bits, so a full 64-bit key cannot be its own
 * TID); an index finds the key of a TID in keys[tid].
 */
typedef struct artbench_keys {
	uint64_t *keys;
	size_t n;
	int mode;
	bool tid_is_row; /* tid(i) = i, else tid(i) = keys[i] */
	size_t duplicates_replaced;
} artbench_keys;

static inline uint64_t artbench_tid(const artbench_keys *k, size_t i)
{
	return k->tid_is_row ? i : k->keys[i];
}

/* artbench_make_keys — generate the keys (seeded).  Returns 0 or -ENOMEM. */
int artbench_make_keys(int mode, size_t n, uint64_t seed, artbench_keys *out);
void artbench_free_keys(artbench_keys *k);

/* An ordered index under test.  All calls return 0 or a negative error. */
typedef struct artbench_index {
	const char *name;
	/* Make an empty index over the allocator (may be ignored) for these keys. */
	int (*open)(void **self, const ruma_alloc *a, const artbench_keys *keys);
	int (*insert)(void *self, uint64_t key, uint64_t tid);
	/* 0 and *tid when found, RUMA_ENOTFOUND otherwise. */
	int (*lookup)(void *self, uint64_t key, uint64_t *tid);
	int (*erase)(void *self, uint64_t key);
	uint64_t (*count)(void *self);
	/* Bytes the index holds in nodes (0 when it cannot tell). */
	uint64_t (*bytes)(void *self);
	void (*close)(void *self);
} artbench_index;

/* The ART in TID mode. */
extern const artbench_index artbench_art_index;

typedef struct artbench_config {
	uint64_t n;
	int mode;
	const char *alloc_name; /* a ruma backend; NULL = none (peer indexes) */
	unsigned reps;
	uint64_t seed;
	uint64_t lookups;       /* total lookups: the keys are looked up max(1, lookups/n) times */
} artbench_config;

/*
 * artbench_run — the whole benchmark: node sizes, then per repetition insert,
 * lookup and erase lines with the counter table, faults and memory, then a
 * summary for reps > 1.  Results to out, notes to err.  Returns 0, 1 when a
 * lookup or erase gave a wrong result (counted and printed), or a negative
 * error (allocator or memory failure; printed to err).
 */
int artbench_run(const artbench_config *cfg, const artbench_index *idx, FILE *out, FILE *err);

#endif
