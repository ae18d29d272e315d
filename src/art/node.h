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

#include <stddef.h>
#include <stdint.h>

#define ART_MAX_PREFIX 9
#define ART_EMPTY48 48

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
	const ruma_alloc *alloc;
	ruma_art_keys keys;
	ruma_art_load_key_fn load_key; /* NULL = big-endian TID */
	void *load_key_ctx;
	uint64_t count;          /* keys */
	uint64_t nodes[4];       /* inner nodes by type */
	uint64_t node_bytes, leaf_bytes;
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

/* node.c: per-node operations. */
extern const size_t art_node_sizes[4];
art_node *art_node_new(ruma_art *t, int type);
void art_node_free(ruma_art *t, art_node *n);
art_ref *art_node_find(art_node *n, uint8_t b);
/* Adds b -> child to the node at *ref (growing it into a new node when full).
 * Returns 0 or -ENOMEM (nothing changed then). */
int art_node_add(ruma_art *t, art_ref *ref, uint8_t b, art_ref child);
/* Removes the child b of the node at *ref, shrinking or collapsing it. */
void art_node_remove(ruma_art *t, art_ref *ref, uint8_t b);
/* Leftmost leaf below r. */
art_ref art_min_leaf(art_ref r);
/* Calls fn(b, child, ctx) for every child in ascending byte order until fn
 * returns non-zero; returns that value or 0. */
int art_node_each(const art_node *n, int (*fn)(uint8_t b, art_ref child, void *ctx), void *ctx);

#endif
