/*
 * artbench.h — the driver of `ruma art`: Leis's ART benchmark (insert n keys,
 * look them up max(1, 10M/n) times in key-array order, erase them all) over
 * any ordered index given as a small operations table, so that the ART and
 * a peer (JudyL, bench/peers/art_judy_peer.c) run through the same key
 * generation, timing, counters and output.
 */
#ifndef RUMA_ARTBENCH_H
#define RUMA_ARTBENCH_H

#include "bench/common/result.h"

#include <ruma/alloc.h>
#include <ruma/core.h>

#include <stdio.h>

/*
 * Key modes.  0-2 are Leis's ART.cpp, drawn from the C library's rand()
 * after srand(seed) (seed 1 = rand()'s state at program start, which the
 * original uses): 0 = keys 1..n in order; 1 = the same keys shuffled as
 * libstdc++'s std::random_shuffle does with rand() (for i = 1..n-1 swap
 * keys[i] with keys[rand() % (i + 1)]); 2 = keys (rand() << 32) | rand(),
 * the first call giving the high half, as g++ evaluates the original.  The
 * key is its own TID in all three.  3 = n distinct random keys using all 64
 * bits (ruma's generator), TID = row index: a tagged-pointer TID holds 63
 * bits, so such a key cannot be its own TID; an index finds the key of a
 * TID in keys[tid].
 */
enum {
	ARTBENCH_DENSE_SORTED = 0,
	ARTBENCH_DENSE_SHUFFLED = 1,
	ARTBENCH_SPARSE = 2,
	ARTBENCH_SPARSE64 = 3,
	ARTBENCH_NMODES = 4,
};

/* The keys of one run. */
typedef struct artbench_keys {
	uint64_t *keys;
	size_t n;
	int mode;
	bool tid_is_row; /* tid(i) = i (mode 3), else tid(i) = keys[i] */
	size_t duplicates_replaced; /* random keys drawn again (modes 2, 3) */
} artbench_keys;

static inline uint64_t artbench_tid(const artbench_keys *k, size_t i)
{
	return k->tid_is_row ? i : k->keys[i];
}

/*
 * artbench_make_keys — generate the keys of mode (seeded; modes 0-2 call
 * srand((unsigned)seed) and then rand(), so they change the C library's
 * rand() state).  Duplicates among random keys are replaced by further
 * random keys (counted in duplicates_replaced).  Returns 0, -EINVAL (unknown
 * mode) or -ENOMEM.
 */
int artbench_make_keys(int mode, size_t n, uint64_t seed, artbench_keys *out);

/* artbench_leis_key — one mode-2 key: (rand() << 32) | rand(), high half first. */
uint64_t artbench_leis_key(void);

/* artbench_leis_shuffle — std::random_shuffle of libstdc++ with rand(). */
void artbench_leis_shuffle(uint64_t *keys, size_t n);

/*
 * artbench_bytes_needed — a generous estimate of the memory a run of n keys
 * of mode needs at its peak (key array, duplicate check, tree), for refusing
 * runs that cannot fit before they start.
 */
uint64_t artbench_bytes_needed(int mode, uint64_t n);
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
	/* The index to run instead when TIDs are row numbers (mode 3); NULL = this one. */
	const struct artbench_index *row_tids;
	/* Batched lookup of keys that are their own TIDs: found[i] = 1 when keys[i]
	 * is present, returns the number found; width lookups in flight.  NULL =
	 * the index has none (lookups then stay single). */
	size_t (*lookup_batch)(void *self, const uint64_t *keys, size_t n, unsigned width,
			       uint8_t *found);
	/* Whole phases over keys that are their own TIDs, each a loop of direct
	 * calls (the way a user's code calls the index; NULL = one call per key
	 * through the pointers above).  insert_keys: 0 or the first error;
	 * lookup_keys/erase_keys: the number of keys not found. */
	int (*insert_keys)(void *self, const uint64_t *keys, size_t n);
	uint64_t (*lookup_keys)(void *self, const uint64_t *keys, size_t n);
	uint64_t (*erase_keys)(void *self, const uint64_t *keys, size_t n);
} artbench_index;

/* The ART: u64 mode and its fast path for keys that are their own TIDs
 * (modes 0-2), TID mode with keys[tid] as the key of a TID for mode 3. */
extern const artbench_index artbench_art_index;
extern const artbench_index artbench_art_tid_index;

typedef struct artbench_config {
	uint64_t n;
	int mode;
	const char *alloc_name; /* a ruma backend; NULL = none (peer indexes) */
	unsigned reps;
	uint64_t seed;
	uint64_t lookups;       /* total lookups: the keys are looked up max(1, lookups/n) times */
	unsigned batch;         /* 0 = single lookups; W > 0 = lookup_batch with width W over
				 * chunks of ARTBENCH_BATCH_CHUNK keys (when the index has it) */
} artbench_config;

/* Keys per lookup_batch call in the batched lookup phase. */
#define ARTBENCH_BATCH_CHUNK 1024

/*
 * artbench_measure — the whole benchmark: per repetition insert, lookup and
 * erase lines with the counter table, faults and memory, then a summary for
 * reps > 1.  Results to out, notes to err; with res (NULL = none) also the
 * rows <op> (Mops), <op>_faults, <op>_footprint and <op>_index_bytes per
 * repetition (parameter rep).  Returns 0, 1 when a lookup or erase gave a
 * wrong result (counted and printed), or a negative error (allocator or
 * memory failure; printed to err).
 */
int artbench_measure(const artbench_config *cfg, const artbench_index *idx, FILE *out, FILE *err,
		     ruma_result *res);

/* ---- the `ruma art` command ------------------------------------------------------ */

typedef struct artbench_opts {
	artbench_config cfg;
	const char *result; /* --result FILE, NULL = none */
	bool help;          /* --help: print the usage to stdout, exit 0 */
	bool usage_after;   /* after a parse error, the usage follows on stderr */
} artbench_opts;

/*
 * artbench_parse — `ruma art <n> <mode> [options]` (argv[0] is the command)
 * into *o; envp (NULL = none) is the environment, unused by this driver.
 * Returns 0 (run it, or print the help when o->help), or RUMA_EPARSE with
 * the message for stderr in err ("ruma art: ...\n"); exit status 2.
 */
int artbench_parse(int argc, char **argv, char *const *envp, artbench_opts *o, char *err,
		   size_t errlen);

/*
 * artbench_run — run parsed options: refuse a run that cannot fit into the
 * available memory (2), print the node sizes, measure the ART, write the
 * --result rows.  Returns the exit status: 0, 1 (a failure, wrong results or
 * lost output), 2 (refused).
 */
int artbench_run(const artbench_opts *o);

#endif
