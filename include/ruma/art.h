/*
 * art.h — the Adaptive Radix Tree (Leis, Kemper, Neumann, ICDE 2013) over any
 * ruma allocator.
 *
 * Inner nodes have the sizes of Leis's original: a 16-byte header (prefix
 * length, child count, type, 9 prefix bytes) and Node4 56 B, Node16 160 B,
 * Node48 656 B, Node256 2064 B.  Paths are compressed pessimistically (at
 * most 9 prefix bytes are stored; a longer prefix is recovered from a leaf
 * below the node) and expanded lazily (a leaf sits as high as its key allows).
 * Nodes grow 4 -> 16 -> 48 -> 256 and shrink on delete (256 -> 48 at 37
 * children, 48 -> 16 at 12, 16 -> 4 at 3; a Node4 left with one child is
 * replaced by that child, the prefixes merged).
 *
 * Three key modes, chosen at creation:
 *
 *  RUMA_ART_BYTES  byte-string keys of 0..RUMA_ART_MAX_KEY bytes (any bytes,
 *                  0x00 included) with a 64-bit value each (store a pointer
 *                  as (uint64_t)(uintptr_t)p).  Each key gets a leaf from the
 *                  allocator holding the value, the length and a copy of the
 *                  key.  A key may be a prefix of another key: inside the tree
 *                  every key is rewritten into a prefix-free, order-preserving
 *                  form (each 0x00 byte becomes 0x00 0x01, and 0x00 0x00 ends
 *                  the key), so "ab" sorts before "ab\0" before "abc" and no
 *                  node needs an extra slot.  See docs/art.md.
 *
 *  RUMA_ART_TID    Leis's mode: keys are exactly 8 bytes and the value is a
 *                  64-bit tuple identifier (TID) below 2^63 stored in a tagged
 *                  child pointer, so no leaf is allocated.  The key of a TID
 *                  comes from a caller-supplied load_key(tid, key[8], ctx)
 *                  callback (default: the big-endian bytes of the TID, so the
 *                  TID is its own key).  load_key must be a function: the same
 *                  TID always yields the same key, and different TIDs in the
 *                  tree yield different keys.
 *
 *  RUMA_ART_U64    integer keys 0..RUMA_ART_MAX_TID, each its own value (a
 *                  set of TIDs or row ids; TID mode with the default key):
 *                  the key's 8 big-endian bytes index the tree, so the order
 *                  is numeric.  The ruma_art_u64_* functions below are its
 *                  fast path (no key buffer, no callback, no prefix compare
 *                  on lookups and deletes: one integer compare at the leaf);
 *                  the general functions work on such a tree too (8-byte
 *                  big-endian keys, value == key).
 *
 * Order: keys are ordered as unsigned byte strings (memcmp order, a proper
 * prefix before its extensions).  The tree is not thread-safe: one writer or
 * any number of readers at a time, synchronised by the caller.
 *
 * Every node and leaf comes from the allocator passed at creation (which the
 * tree does not own) and is returned with a sized free.
 */
#ifndef RUMA_ART_H
#define RUMA_ART_H

#include <ruma/alloc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest key in RUMA_ART_BYTES mode, in bytes; longer keys give RUMA_ETOOBIG. */
#define RUMA_ART_MAX_KEY 4096

/* Largest TID in RUMA_ART_TID mode (one bit of the child pointer is the leaf tag). */
#define RUMA_ART_MAX_TID ((UINT64_C(1) << 63) - 1)

/* Node sizes in bytes, equal to Leis's original (checked at compile time). */
enum {
	RUMA_ART_NODE4_SIZE = 56,
	RUMA_ART_NODE16_SIZE = 160,
	RUMA_ART_NODE48_SIZE = 656,
	RUMA_ART_NODE256_SIZE = 2064,
};

typedef enum ruma_art_keys {
	RUMA_ART_BYTES = 0, /* byte strings with values, leaves allocated */
	RUMA_ART_TID = 1,   /* 8-byte keys derived from 63-bit TIDs, no leaves */
	RUMA_ART_U64 = 2,   /* 63-bit integer keys that are their own values, no leaves */
} ruma_art_keys;

/* Fills key[0..7] with the key of tid.  Must not modify the tree. */
typedef void (*ruma_art_load_key_fn)(uint64_t tid, uint8_t key[8], void *ctx);

typedef struct ruma_art_options {
	ruma_art_keys keys;             /* key mode */
	const ruma_alloc *alloc;        /* required; not owned, must outlive the tree */
	ruma_art_load_key_fn load_key;  /* TID mode only (NULL there and in the other modes):
					 * NULL = big-endian TID bytes */
	void *load_key_ctx;             /* passed to load_key */
} ruma_art_options;

typedef struct ruma_art ruma_art;

/* Memory statistics (exact, maintained on every change). */
typedef struct ruma_art_stats {
	uint64_t keys;                      /* number of keys */
	uint64_t node4, node16, node48, node256; /* inner nodes by type */
	uint64_t node_bytes;                /* bytes in inner nodes */
	uint64_t leaf_bytes;                /* bytes in leaves (0 in TID mode) */
} ruma_art_stats;

/*
 * ruma_art_create — make an empty tree into *out.  The tree's own small
 * descriptor also comes from opt->alloc.  When opt->alloc is an instance of
 * one of ruma's backends the tree calls its functions directly (libc inline;
 * decided once, here); a user allocator is called through its vtable.  Returns
 * 0, -EINVAL (no allocator, unknown mode, load_key given outside TID mode) or
 * -ENOMEM.
 */
RUMA_API int ruma_art_create(const ruma_art_options *opt, ruma_art **out);

/* ruma_art_destroy — free every node, leaf and the tree itself.  NULL is ignored. */
RUMA_API void ruma_art_destroy(ruma_art *t);

/*
 * ruma_art_insert — insert key -> value, or replace the value when the key is
 * present.  *replaced (may be NULL) tells which happened.  The key bytes are
 * copied (bytes mode).  In TID mode len must be 8, value <= RUMA_ART_MAX_TID
 * and key equal to load_key(value).
 * Returns 0, RUMA_ETOOBIG (key longer than RUMA_ART_MAX_KEY, TID too large),
 * -EINVAL (TID mode: len != 8 or key != load_key(value)) or -ENOMEM (the tree
 * is unchanged then).
 */
RUMA_API int ruma_art_insert(ruma_art *t, const void *key, size_t len, uint64_t value,
			     bool *replaced);

/*
 * ruma_art_insert_tid — TID and u64 modes: insert tid under the key
 * load_key(tid).  Returns as ruma_art_insert; -EINVAL in bytes mode.
 */
RUMA_API int ruma_art_insert_tid(ruma_art *t, uint64_t tid, bool *replaced);

/*
 * The u64 fast path (trees created with RUMA_ART_U64 only; calling these on
 * a tree of another mode is undefined — the mode is checked with
 * RUMA_ASSERT in debug builds, not per call).  Per operation they do what
 * Leis's ART.cpp does or less: key bytes are taken from the integer by
 * shifts; lookups and deletes skip the prefix comparisons and compare the
 * leaf's key (one integer compare) instead, which is exact because a leaf
 * holds its whole key; inserts check prefixes 8 bytes at a time (a prefix is
 * at most 7 bytes with 8-byte keys, so it is always stored in full).
 */

/*
 * ruma_art_u64_insert — insert key.  Returns 0 (inserted), 1 (present
 * already; nothing changed), RUMA_ETOOBIG (key > RUMA_ART_MAX_TID) or
 * -ENOMEM (the tree is unchanged).
 */
RUMA_API int ruma_art_u64_insert(ruma_art *t, uint64_t key);

/* ruma_art_u64_lookup — 0 when key is in the tree, RUMA_ENOTFOUND otherwise. */
RUMA_API int ruma_art_u64_lookup(const ruma_art *t, uint64_t key);

/* Lookups in flight in ruma_art_u64_lookup_batch: the default and the most. */
#define RUMA_ART_BATCH_DEFAULT 8
#define RUMA_ART_BATCH_MAX 32

/*
 * ruma_art_u64_lookup_batch — look up keys[0..n-1] with up to width lookups
 * in flight on this thread (asynchronous memory access chaining, AMAC:
 * Kocberber, Falsafi, Grot, PVLDB 8(4) 2014): each lookup advances one node
 * or child slot at a time, prefetching the line it needs next, while the
 * others advance, so their cache misses overlap.  found[i] (found may be
 * NULL) becomes 1 when keys[i] is in the tree, else 0 — exactly what
 * ruma_art_u64_lookup says.  Returns the number of keys found.  width 0 =
 * RUMA_ART_BATCH_DEFAULT; a width above RUMA_ART_BATCH_MAX is cut to it;
 * width 1 is the loop of single lookups.  It pays off when the tree is far
 * larger than the caches; it does not make one lookup faster.
 */
RUMA_API size_t ruma_art_u64_lookup_batch(const ruma_art *t, const uint64_t *keys, size_t n,
					  unsigned width, uint8_t *found);

/*
 * ruma_art_u64_delete — remove key.  Returns 0 or RUMA_ENOTFOUND.  Never
 * allocates (as ruma_art_delete).
 */
RUMA_API int ruma_art_u64_delete(ruma_art *t, uint64_t key);

/*
 * ruma_art_lookup — find key; its value (TID in TID mode) goes to *value
 * (may be NULL).  Returns 0 or RUMA_ENOTFOUND (also for a key of the wrong
 * length in TID mode or one longer than RUMA_ART_MAX_KEY).
 */
RUMA_API int ruma_art_lookup(const ruma_art *t, const void *key, size_t len, uint64_t *value);

/*
 * ruma_art_delete — remove key; its value goes to *old_value (may be NULL).
 * Returns 0 or RUMA_ENOTFOUND.  Never allocates: shrinking a node that cannot
 * get memory for its smaller form keeps the larger form.
 */
RUMA_API int ruma_art_delete(ruma_art *t, const void *key, size_t len, uint64_t *old_value);

/* ruma_art_size — number of keys in the tree. */
RUMA_API size_t ruma_art_size(const ruma_art *t);

/*
 * Visitor for iteration: key bytes (valid only during the call), length and
 * value.  Return 0 to go on, anything else to stop (that value is returned by
 * the iteration call).  The visitor must not modify the tree.
 */
typedef int (*ruma_art_visit_fn)(const uint8_t *key, size_t len, uint64_t value, void *ctx);

/*
 * ruma_art_iterate — visit every key in ascending order.  Returns 0 after the
 * last key, or the visitor's non-zero return value when it stopped.
 */
RUMA_API int ruma_art_iterate(const ruma_art *t, ruma_art_visit_fn fn, void *ctx);

/*
 * ruma_art_scan — lower-bound range scan: visit, in ascending order, every
 * key >= start (start of len bytes; any length is accepted as a bound).
 * Returns as ruma_art_iterate.
 */
RUMA_API int ruma_art_scan(const ruma_art *t, const void *start, size_t len,
			   ruma_art_visit_fn fn, void *ctx);

/* ruma_art_get_stats — node counts by type, bytes in nodes and leaves, keys. */
RUMA_API void ruma_art_get_stats(const ruma_art *t, ruma_art_stats *out);

/* ruma_art_default_load_key — the default TID -> key mapping (big-endian bytes). */
RUMA_API void ruma_art_default_load_key(uint64_t tid, uint8_t key[8], void *ctx);

#ifdef __cplusplus
}
#endif
#endif
