/*
 * u64.c — the fast path of RUMA_ART_U64 trees: insert, lookup and delete of
 * integer keys that are their own values (Leis's TID mode with the key =
 * the TID's big-endian bytes, the case of his benchmark).
 *
 * What makes it cheaper than the general path: the key byte at depth d is
 * (key >> (56 - 8d)) & 0xff, so there is no key buffer and no key-loading
 * callback; a leaf is the tagged pointer key << 1 | 1, so comparing a leaf
 * with the key is one integer compare.  Lookup and delete therefore skip
 * every prefix comparison on the way down (they add the prefix length to
 * the depth, as Leis's optimistic lookup does for long prefixes) and compare
 * the leaf once at the end — exact, because the leaf holds the whole key.
 * Insert must find the first mismatching prefix byte and checks it eight
 * bytes at a time: with 8-byte keys a prefix is at most 7 bytes (an inner
 * node's byte lies inside the key), so prefixes are always stored in full
 * and never recovered from a leaf.
 *
 * Invariants (those of art.c): every inner node at depth d with prefix p
 * has d + p < 8, so the shift above never goes below 0 even for a key that
 * is not in the tree.  t->count is the number of keys.  No system calls;
 * nodes come from the tree's allocator (node.c).
 */
#include "art/node.h"

#include <errno.h>
#include <string.h>

static inline uint8_t key_byte(uint64_t key, unsigned depth)
{
	return (uint8_t)(key >> (56 - 8 * depth));
}

/*
 * Walking down, lookup and delete keep the key rotated left by 8 * (depth
 * + 1) bits, so the key byte at depth is its low byte: a node with prefix
 * length p rotates it by 8 * (p + 1) more.  The total over a path is at
 * most 64, and a rotation by 64 is the identity, which is again right (the
 * byte at depth 7 is the key's low byte).
 */
static inline uint64_t next_byte(uint64_t k, unsigned prefix_len)
{
	unsigned s = 8 * (prefix_len + 1);
	return (k << (s & 63)) | (k >> (-s & 63));
}

/* The 8 bytes from the node's prefix[0] as a big-endian number (prefix[0]
 * in the top byte); the bytes past the prefix length are ignored by callers. */
static inline uint64_t prefix_word(const art_node *n)
{
	uint64_t w;
	memcpy(&w, n->prefix, 8);
	return __builtin_bswap64(w);
}

static inline void store_prefix(art_node *n, uint64_t be_word)
{
	uint64_t w = __builtin_bswap64(be_word);
	memcpy(n->prefix, &w, 8);
}

/* Number of leading bytes of the node's prefix equal to the top bytes of k
 * (the key shifted left by 8 * depth); a result >= prefix_len is a match. */
static inline unsigned prefix_match(const art_node *n, uint64_t k)
{
	uint64_t x = prefix_word(n) ^ k;

	return x ? (unsigned)__builtin_clzll(x) / 8 : 8;
}

/* A Node4 holding two children under bytes a < b (or b < a). */
static void put_two(art_node4 *n, uint8_t a, art_ref ca, uint8_t b, art_ref cb)
{
	bool lo = a < b;
	n->key[0] = lo ? a : b;
	n->child[0] = lo ? ca : cb;
	n->key[1] = lo ? b : a;
	n->child[1] = lo ? cb : ca;
	n->h.count = 2;
}

/* The leaf at *ref holds old != key: both go under a new Node4. */
static int split_leaf(ruma_art *t, art_ref *ref, uint64_t old, uint64_t key, unsigned depth)
{
	unsigned i = (unsigned)__builtin_clzll(old ^ key) / 8; /* first differing byte, >= depth */
	art_node4 *n = (art_node4 *)art_node_new(t, ART_N4);

	if (!n)
		return -ENOMEM;
	n->h.prefix_len = i - depth;
	if (i > depth)
		store_prefix(&n->h, key << (8 * depth));
	put_two(n, key_byte(old, i), *ref, key_byte(key, i), key << 1 | 1);
	*ref = (art_ref)n;
	return 0;
}

/* Only m < prefix_len prefix bytes of the node at *ref match: a new Node4
 * with those m bytes takes the node (its prefix shortened) and the leaf. */
static int split_prefix(ruma_art *t, art_ref *ref, uint64_t key, unsigned depth, unsigned m)
{
	art_node *n = art_as_node(*ref);
	art_node4 *top = (art_node4 *)art_node_new(t, ART_N4);

	if (!top)
		return -ENOMEM;
	top->h.prefix_len = m;
	memcpy(top->h.prefix, n->prefix, m);
	uint8_t nb = n->prefix[m];
	n->prefix_len -= m + 1;
	memmove(n->prefix, n->prefix + m + 1, n->prefix_len);
	put_two(top, nb, *ref, key_byte(key, depth + m), key << 1 | 1);
	*ref = (art_ref)top;
	return 0;
}

int ruma_art_u64_insert(ruma_art *t, uint64_t key)
{
	art_ref *ref = &t->root, r = *ref;
	uint64_t k = key; /* the key shifted left by 8 * depth: next byte on top */
	unsigned depth = 0;
	int rc;

	RUMA_ASSERT(t->keys == RUMA_ART_U64);
	if (key > RUMA_ART_MAX_TID)
		return RUMA_ETOOBIG;
	if (!r) {
		*ref = key << 1 | 1;
		t->count++;
		return 0;
	}
	for (;;) {
		if (art_is_leaf(r)) {
			if ((r >> 1) == key)
				return 1;
			rc = split_leaf(t, ref, r >> 1, key, depth);
			break;
		}
		art_node *n = art_as_node(r);
		unsigned p = n->prefix_len;
		if (p) {
			unsigned m = prefix_match(n, k);
			if (m < p) {
				rc = split_prefix(t, ref, key, depth, m);
				break;
			}
			depth += p;
			k <<= 8 * p; /* p <= 7 */
		}
		uint8_t b = (uint8_t)(k >> 56);
		art_ref *slot = art_node_find(n, b);
		if (!slot) {
			rc = art_node_add_inline(t, ref, b, key << 1 | 1);
			break;
		}
		ref = slot;
		r = *slot;
		depth++;
		k <<= 8;
	}
	if (rc == 0)
		t->count++;
	return rc;
}

int ruma_art_u64_lookup(const ruma_art *t, uint64_t key)
{
	art_ref r = t->root;
	uint64_t k = key;

	RUMA_ASSERT(t->keys == RUMA_ART_U64);
	if (!r)
		return RUMA_ENOTFOUND;
	while (!art_is_leaf(r)) {
		const art_node *n = art_as_node(r);
		k = next_byte(k, n->prefix_len);
		r = art_node_child(n, (uint8_t)k);
		if (!r)
			return RUMA_ENOTFOUND;
	}
	return (r >> 1) == key ? 0 : RUMA_ENOTFOUND;
}

int ruma_art_u64_delete(ruma_art *t, uint64_t key)
{
	art_ref *ref = &t->root, r = *ref;
	uint64_t k = key;

	RUMA_ASSERT(t->keys == RUMA_ART_U64);
	if (!r)
		return RUMA_ENOTFOUND;
	if (art_is_leaf(r)) {
		if ((r >> 1) != key)
			return RUMA_ENOTFOUND;
		t->root = 0;
		t->count--;
		return 0;
	}
	for (;;) {
		art_node *n = art_as_node(r);
		k = next_byte(k, n->prefix_len);
		uint8_t b = (uint8_t)k;
		art_ref *slot = art_node_find(n, b);
		if (!slot)
			return RUMA_ENOTFOUND;
		art_ref c = *slot;
		if (art_is_leaf(c)) {
			if ((c >> 1) != key)
				return RUMA_ENOTFOUND;
			art_node_remove(t, ref, b, slot);
			t->count--;
			return 0;
		}
		ref = slot;
		r = c;
	}
}
