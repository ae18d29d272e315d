/*
 * node.h — internal layout of the Adaptive Radix Tree's nodes (shared by
 * art.c and node.c).
 *
 * A child reference is a uintptr_t: 0 = empty, bit 0 set = leaf (bytes mode:
 * a pointer to a struct art_leaf | 1; TID mode: tid << 1 | 1), otherwise a
 * pointer to an inner node (allocated with 8-byte alignment, so bit 0 is 0).
 *
 * Inner nodes keep Leis's layout and sizes: header {u32 prefix_len, u16
 * count, u8 type, u8 prefix[9]} = 16 bytes.  prefix_len is the full length of
 * the compressed path; only its first min(prefix_len, 9) bytes are stored.
 * Node16 stores its key bytes with the top bit flipped (b ^ 0x80) so that the
 * signed SSE2 compare _mm_cmplt_epi8 orders them as unsigned bytes; Node4 and
 * Node16 keep their keys sorted; Node48 maps a byte to a slot through
 * index[256] (ART_EMPTY48 = no child).
 */
#ifndef RUMA_ART_NODE_H
#define RUMA_ART_NODE_H

#include <ruma/art.h>

#include "alloc/alloc_fast.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define ART_MAX_PREFIX 9
#define ART_EMPTY48 48

/* Shrinking (Leis's thresholds): a node left with this many children after a
 * delete becomes the next smaller type; a Node4 left with one is collapsed. */
#define ART_SHRINK256 37
#define ART_SHRINK48 12
#define ART_SHRINK16 3

enum { ART_N4 = 0, ART_N16 = 1, ART_N48 = 2, ART_N256 = 3 };

typedef uintptr_t art_ref;

typedef struct art_node {
	uint32_t prefix_len;
	uint16_t count;
	uint8_t type;
	uint8_t prefix[ART_MAX_PREFIX];
} art_node;

typedef struct art_node4 {
	art_node h;
	uint8_t key[4];
	art_ref child[4];
} art_node4;

typedef struct art_node16 {
	art_node h;
	uint8_t key[16]; /* flipped: b ^ 0x80 */
	art_ref child[16];
} art_node16;

typedef struct art_node48 {
	art_node h;
	uint8_t index[256];
	art_ref child[48];
} art_node48;

typedef struct art_node256 {
	art_node h;
	art_ref child[256];
} art_node256;

_Static_assert(sizeof(art_node) == 16, "ART node header is 16 bytes as in Leis's ART");
_Static_assert(sizeof(art_node4) == RUMA_ART_NODE4_SIZE, "Node4 is 56 bytes");
_Static_assert(sizeof(art_node16) == RUMA_ART_NODE16_SIZE, "Node16 is 160 bytes");
_Static_assert(sizeof(art_node48) == RUMA_ART_NODE48_SIZE, "Node48 is 656 bytes");
_Static_assert(sizeof(art_node256) == RUMA_ART_NODE256_SIZE, "Node256 is 2064 bytes");

/* A leaf of bytes mode: value, key length, key copy (original, not encoded). */
typedef struct art_leaf {
	uint64_t value;
	uint32_t len;
	uint8_t key[];
} art_leaf;

/* The tree descriptor. */
struct ruma_art {
	art_ref root;
	uint64_t count;          /* keys */
	const ruma_alloc *alloc;
	int alloc_kind;          /* ruma_alloc_fast_kind(alloc), fixed at creation */
	ruma_art_keys keys;
	ruma_art_load_key_fn load_key; /* NULL = big-endian TID */
	void *load_key_ctx;
	uint64_t nodes[4];       /* inner nodes by type (bytes: nodes[i] * art_node_sizes[i]) */
	uint64_t leaf_bytes;
};

/* Longest encoded key: every byte escaped, plus the 2-byte terminator (bounds
 * of scans are cut to RUMA_ART_MAX_KEY + 1 bytes, which keeps them exact). */
#define ART_ENC_MAX (2 * (RUMA_ART_MAX_KEY + 1) + 2)

static inline int art_is_leaf(art_ref r)
{
	return (int)(r & 1);
}

static inline art_node *art_as_node(art_ref r)
{
	return (art_node *)r;
}

static inline art_leaf *art_as_leaf(art_ref r)
{
	return (art_leaf *)(r & ~(uintptr_t)1);
}

static inline size_t art_leaf_size(size_t len)
{
	return offsetof(art_leaf, key) + len;
}

/* Does the tree hold 8-byte keys stored in the child pointers (TID and u64 modes)? */
static inline bool art_tid_keys(const ruma_art *t)
{
	return t->keys != RUMA_ART_BYTES;
}

/* ---- allocation ------------------------------------------------------------- */

/* The libc backend inline, the other backends by direct call, a user
 * allocator through its vtable (alloc_fast.h). */
static inline void *art_alloc(ruma_art *t, size_t size)
{
	return ruma_alloc_fast_alloc(t->alloc_kind, t->alloc, size, 8);
}

static inline void art_free(ruma_art *t, void *p, size_t size)
{
	ruma_alloc_fast_free(t->alloc_kind, t->alloc, p, size);
}

/* ---- Node16 search: SSE2 and portable ------------------------------------------
 * Both are always compiled where SSE2 exists, so tests can compare them;
 * art_n16_match/art_n16_insert_pos pick SSE2 unless RUMA_ART_NO_SIMD is
 * defined.  Node16 keys are stored flipped (b ^ 0x80). */

/* Bit i set when the flipped key i equals flipped byte fb (all 16 positions). */
static inline unsigned art_n16_eq_portable(const uint8_t keys[16], uint8_t fb)
{
	unsigned bits = 0;
	for (unsigned i = 0; i < 16; i++)
		bits |= (unsigned)(keys[i] == fb) << i;
	return bits;
}

/* Bit i set when fb < keys[i] as signed bytes (unsigned order of the unflipped bytes). */
static inline unsigned art_n16_lt_portable(const uint8_t keys[16], uint8_t fb)
{
	unsigned bits = 0;
	for (unsigned i = 0; i < 16; i++)
		bits |= (unsigned)((int8_t)fb < (int8_t)keys[i]) << i;
	return bits;
}

#ifdef __SSE2__
static inline unsigned art_n16_eq_sse2(const uint8_t keys[16], uint8_t fb)
{
	__m128i k = _mm_loadu_si128((const __m128i *)keys);
	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_set1_epi8((char)fb), k));
}

static inline unsigned art_n16_lt_sse2(const uint8_t keys[16], uint8_t fb)
{
	__m128i k = _mm_loadu_si128((const __m128i *)keys);
	return (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(_mm_set1_epi8((char)fb), k));
}
#endif

#if defined(__SSE2__) && !defined(RUMA_ART_NO_SIMD)
#define ART_N16_EQ art_n16_eq_sse2
#define ART_N16_LT art_n16_lt_sse2
#else
#define ART_N16_EQ art_n16_eq_portable
#define ART_N16_LT art_n16_lt_portable
#endif

/* Bit i set when key i of the Node16 is b (i < count). */
static inline unsigned art_n16_match(const art_node16 *n, uint8_t b)
{
	return ART_N16_EQ(n->key, (uint8_t)(b ^ 0x80)) & ((1u << n->h.count) - 1);
}

/* Index at which b goes into a Node16 to keep it sorted. */
static inline unsigned art_n16_insert_pos(const art_node16 *n, uint8_t b)
{
	unsigned bits = ART_N16_LT(n->key, (uint8_t)(b ^ 0x80)) & ((1u << n->h.count) - 1);
	return bits ? (unsigned)__builtin_ctz(bits) : n->h.count;
}

/* ---- child search ------------------------------------------------------------ */

/* The slot of child b, or NULL when the node has none.  Largest node type
 * first: the upper levels of a tree, which every operation passes, hold the
 * large nodes. */
static inline art_ref *art_node_find(art_node *n, uint8_t b)
{
	if (n->type == ART_N256) {
		art_node256 *n256 = (art_node256 *)n;
		return n256->child[b] ? &n256->child[b] : NULL;
	}
	if (n->type == ART_N48) {
		art_node48 *n48 = (art_node48 *)n;
		unsigned i = n48->index[b];
		return i != ART_EMPTY48 ? &n48->child[i] : NULL;
	}
	if (n->type == ART_N16) {
		art_node16 *n16 = (art_node16 *)n;
		unsigned bits = art_n16_match(n16, b);
		return bits ? &n16->child[__builtin_ctz(bits)] : NULL;
	}
	art_node4 *n4 = (art_node4 *)n;
	for (unsigned i = 0; i < n->count; i++)
		if (n4->key[i] == b)
			return &n4->child[i];
	return NULL;
}

/* The child b (0 when there is none): the search of art_node_find returning
 * the child itself, which saves the second test of the slot on lookups. */
static inline art_ref art_node_child(const art_node *n, uint8_t b)
{
	if (n->type == ART_N256)
		return ((const art_node256 *)n)->child[b];
	if (n->type == ART_N48) {
		const art_node48 *n48 = (const art_node48 *)n;
		unsigned i = n48->index[b];
		return i != ART_EMPTY48 ? n48->child[i] : 0;
	}
	if (n->type == ART_N16) {
		const art_node16 *n16 = (const art_node16 *)n;
		unsigned bits = art_n16_match(n16, b);
		return bits ? n16->child[__builtin_ctz(bits)] : 0;
	}
	const art_node4 *n4 = (const art_node4 *)n;
	for (unsigned i = 0; i < n->count; i++)
		if (n4->key[i] == b)
			return n4->child[i];
	return 0;
}

/* node.c: per-node operations. */
extern const size_t art_node_sizes[4];
art_node *art_node_new(ruma_art *t, int type);
void art_node_free(ruma_art *t, art_node *n);
/* Adds b -> child to the node at *ref (growing it into a new node when full).
 * Returns 0 or -ENOMEM (nothing changed then). */
int art_node_add(ruma_art *t, art_ref *ref, uint8_t b, art_ref child);
/* Adds b -> child to a Node48 with room: the first free slot (at count when
 * nothing was removed since the node was built). */
static inline void art_n48_add(art_node48 *n, uint8_t b, art_ref child)
{
	unsigned pos = n->h.count;
	if (n->child[pos])
		for (pos = 0; n->child[pos]; pos++)
			;
	n->child[pos] = child;
	n->index[b] = (uint8_t)pos;
	n->h.count++;
}

/* art_node_add with the common cases inline: a Node256 always has room, a
 * Node48 mostly. */
static inline int art_node_add_inline(ruma_art *t, art_ref *ref, uint8_t b, art_ref child)
{
	art_node *n = art_as_node(*ref);

	if (n->type == ART_N256) {
		((art_node256 *)n)->child[b] = child;
		n->count++;
		return 0;
	}
	if (n->type == ART_N48 && n->count < 48) {
		art_n48_add((art_node48 *)n, b, child);
		return 0;
	}
	return art_node_add(t, ref, b, child);
}

/* Removes the child b, held in slot (from art_node_find), of the node at
 * *ref, shrinking or collapsing it. */
void art_node_remove(ruma_art *t, art_ref *ref, uint8_t b, art_ref *slot);
/* art_node_remove with the common cases inline: a Node256 or Node48 that
 * does not shrink only clears the slot (and the index byte). */
static inline void art_node_remove_inline(ruma_art *t, art_ref *ref, uint8_t b, art_ref *slot)
{
	art_node *n = art_as_node(*ref);

	if (n->type == ART_N256 && n->count != ART_SHRINK256 + 1) {
		*slot = 0;
		n->count--;
		return;
	}
	if (n->type == ART_N48 && n->count != ART_SHRINK48 + 1) {
		*slot = 0;
		((art_node48 *)n)->index[b] = ART_EMPTY48;
		n->count--;
		return;
	}
	art_node_remove(t, ref, b, slot);
}

/* Leftmost leaf below r. */
art_ref art_min_leaf(art_ref r);
/* Calls fn(b, child, ctx) for every child in ascending byte order until fn
 * returns non-zero; returns that value or 0. */
int art_node_each(const art_node *n, int (*fn)(uint8_t b, art_ref child, void *ctx), void *ctx);

#endif
