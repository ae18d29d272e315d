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
 * ruma_art_u64_lookup_batch runs many lookups on one thread as interleaved
 * state machines that prefetch the next line each needs (AMAC, below).
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
static inline uint64_t rotl(uint64_t k, unsigned s)
{
	return (k << (s & 63)) | (k >> (-s & 63));
}

/*
 * The rotation for a node's prefix is a branch, not a rotation by the
 * loaded prefix length: with "rotl(k, 8 * (p + 1))" the address of the
 * child slot depends on the header's load, so a walk through nodes that
 * are not in the cache waits for two misses per node (header, then slot)
 * one after the other.  With the branch, predicted "no prefix" on the deep
 * levels of dense and random trees, the slot's address depends on the key
 * and the node's address only, and the core loads header and slot at the
 * same time (the header's type and prefix length only confirm the
 * prediction).  The empty asm keeps the compiler from turning the branch
 * back into a conditional move, which would restore the dependency.
 */
static inline uint64_t next_byte(uint64_t k, unsigned prefix_len)
{
	if (__builtin_expect(prefix_len != 0, 0)) {
		k = rotl(k, 8 * prefix_len);
		__asm__("" : "+r"(k));
	}
	return rotl(k, 8);
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
__attribute__((noinline)) static int split_leaf(ruma_art *t, art_ref *ref, uint64_t old, uint64_t key, unsigned depth)
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
__attribute__((noinline)) static int split_prefix(ruma_art *t, art_ref *ref, uint64_t key, unsigned depth, unsigned m)
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

/* The key count after an insert that returned rc. */
static inline int counted(ruma_art *t, int rc)
{
	if (rc == 0)
		t->count++;
	return rc;
}

/*
 * The walk keeps only the key, the depth and the slot in registers; what an
 * insert does at its end (split a leaf or a prefix, add to a full or small
 * node) is out of line (split_leaf, split_prefix, art_node_add are not
 * inlined), so the loop does not pay for saving the registers those need.
 * Only the most frequent end, adding to a Node256 or a Node48 with room,
 * is inline.
 */
int ruma_art_u64_insert(ruma_art *t, uint64_t key)
{
	art_ref *ref = &t->root, r = *ref;
	uint64_t k = key; /* the key shifted left by 8 * depth: next byte on top */
	unsigned depth = 0;

	RUMA_ASSERT(t->keys == RUMA_ART_U64);
	if (key > RUMA_ART_MAX_TID)
		return RUMA_ETOOBIG;
	if (!r) {
		*ref = key << 1 | 1;
		t->count++;
		return 0;
	}
	while (!art_is_leaf(r)) {
		art_node *n = art_as_node(r);
		unsigned p = n->prefix_len;
		if (p) {
			unsigned m = prefix_match(n, k);
			if (m < p)
				return counted(t, split_prefix(t, ref, key, depth, m));
			depth += p;
			k <<= 8 * p; /* p <= 7 */
		}
		uint8_t b = (uint8_t)(k >> 56);
		art_ref *slot = art_node_find(n, b);
		if (!slot)
			return counted(t, art_node_add_inline(t, ref, b, key << 1 | 1));
		ref = slot;
		r = *slot;
		depth++;
		k <<= 8;
	}
	if ((r >> 1) == key)
		return 1;
	return counted(t, split_leaf(t, ref, r >> 1, key, depth));
}

/* Is key below the non-empty ref r?  The single lookup's walk. */
static inline bool find_below(art_ref r, uint64_t key)
{
	uint64_t k = key;

	while (!art_is_leaf(r)) {
		const art_node *n = art_as_node(r);
		k = next_byte(k, n->prefix_len);
		r = art_node_child(n, (uint8_t)k);
		if (!r)
			return false;
	}
	return (r >> 1) == key;
}

int ruma_art_u64_lookup(const ruma_art *t, uint64_t key)
{
	RUMA_ASSERT(t->keys == RUMA_ART_U64);
	return t->root && find_below(t->root, key) ? 0 : RUMA_ENOTFOUND;
}

/*
 * Batched lookup: asynchronous memory access chaining (AMAC; Kocberber,
 * Falsafi, Grot, PVLDB 8(4) 2014).  Up to width lookups are in flight, each
 * a small state machine; a step does the work one cache line allows, issues
 * a prefetch for the line the lookup needs next and moves on to the next
 * lookup, so the misses of different lookups overlap instead of one
 * dependent miss at a time.  The stages of one lookup:
 *
 *   AT_NODE   the node's first 56 bytes (prefetched: its first line and the
 *             line of byte 55, as nodes are only 8-byte aligned) are read:
 *             the key byte is rotated in as in find_below.  Node4: the whole
 *             node is in those lines, its child is read at once (AT_SLOT's
 *             work without a pause).  Node16: its keys are too, the matching
 *             child's slot is prefetched -> AT_SLOT.  Node256: child[b] is
 *             prefetched -> AT_SLOT.  Node48: index[b] is prefetched ->
 *             AT_INDEX.
 *   AT_INDEX  Node48's index[b] is read, child[index[b]] prefetched -> AT_SLOT.
 *   AT_SLOT   the child is read: empty = absent, a leaf is compared with the
 *             key (done), an inner node is prefetched -> AT_NODE.
 *
 * A finished lookup's slot takes the next key; when none is left the last
 * slot in flight moves into it.  The answers are those of find_below: the
 * same bytes are followed and the leaf is compared the same way.
 */
enum { AT_NODE, AT_INDEX, AT_SLOT };

struct amac_slot {
	const void *p;  /* AT_NODE/AT_INDEX: the node; AT_SLOT: the child slot */
	uint64_t k;     /* the key rotated as in find_below */
	size_t i;       /* index of the key */
	unsigned stage;
};

static inline void prefetch(const void *p)
{
	__builtin_prefetch(p, 0, 3);
}

/* The lines of a node's first 56 bytes: a Node4 whole, a Node16's keys. */
static inline void prefetch_node(const art_node *n)
{
	prefetch(n);
	prefetch((const char *)n + RUMA_ART_NODE4_SIZE - 1);
}

/* One step of the lookup in s: 1 = done and found, 0 = done and absent, -1 = going on. */
static inline int amac_step(struct amac_slot *s, const uint64_t *keys)
{
	const art_ref *slot;

	switch (s->stage) {
	case AT_NODE: {
		const art_node *n = s->p;
		s->k = next_byte(s->k, n->prefix_len);
		uint8_t b = (uint8_t)s->k;
		if (n->type == ART_N256) {
			slot = &((const art_node256 *)n)->child[b];
		} else if (n->type == ART_N48) {
			prefetch(&((const art_node48 *)n)->index[b]);
			s->stage = AT_INDEX;
			return -1;
		} else if (n->type == ART_N16) {
			const art_node16 *n16 = (const art_node16 *)n;
			unsigned bits = art_n16_match(n16, b);
			if (!bits)
				return 0;
			slot = &n16->child[__builtin_ctz(bits)];
		} else {
			const art_node4 *n4 = (const art_node4 *)n;
			unsigned i = 0;
			while (i < n->count && n4->key[i] != b)
				i++;
			if (i == n->count)
				return 0;
			slot = &n4->child[i];
			goto read_slot;
		}
		break;
	}
	case AT_INDEX: {
		const art_node48 *n48 = s->p;
		unsigned i = n48->index[(uint8_t)s->k];
		if (i == ART_EMPTY48)
			return 0;
		slot = &n48->child[i];
		break;
	}
	default:
		slot = s->p;
	read_slot: {
		art_ref c = *slot;
		if (!c)
			return 0;
		if (art_is_leaf(c))
			return (c >> 1) == keys[s->i];
		prefetch_node(art_as_node(c));
		s->p = art_as_node(c);
		s->stage = AT_NODE;
		return -1;
	}
	}
	prefetch(slot);
	s->p = slot;
	s->stage = AT_SLOT;
	return -1;
}

static size_t lookup_each(art_ref root, const uint64_t *keys, size_t n, uint8_t *found)
{
	size_t hits = 0;

	for (size_t i = 0; i < n; i++) {
		bool hit = find_below(root, keys[i]);
		if (found)
			found[i] = hit;
		hits += hit;
	}
	return hits;
}

size_t ruma_art_u64_lookup_batch(const ruma_art *t, const uint64_t *keys, size_t n,
				 unsigned width, uint8_t *found)
{
	struct amac_slot st[RUMA_ART_BATCH_MAX];
	art_ref root = t->root;
	size_t hits = 0, next;
	unsigned live, s = 0;

	RUMA_ASSERT(t->keys == RUMA_ART_U64);
	if (!root) {
		if (found && n)
			memset(found, 0, n);
		return 0;
	}
	if (width == 0)
		width = RUMA_ART_BATCH_DEFAULT;
	if (width > RUMA_ART_BATCH_MAX)
		width = RUMA_ART_BATCH_MAX;
	if (width == 1 || art_is_leaf(root))
		return lookup_each(root, keys, n, found);
	live = n < width ? (unsigned)n : width;
	for (unsigned j = 0; j < live; j++)
		st[j] = (struct amac_slot){ art_as_node(root), keys[j], j, AT_NODE };
	next = live;
	while (live) {
		struct amac_slot *p = &st[s];
		int rc = amac_step(p, keys);
		if (rc >= 0) {
			if (found)
				found[p->i] = (uint8_t)rc;
			hits += (size_t)rc;
			if (next < n) {
				*p = (struct amac_slot){ art_as_node(root), keys[next], next, AT_NODE };
				next++;
			} else {
				*p = st[--live];
				if (s < live)
					continue; /* the moved lookup takes its step now */
			}
		}
		if (++s >= live)
			s = 0;
	}
	return hits;
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
			art_node_remove_inline(t, ref, b, slot);
			t->count--;
			return 0;
		}
		ref = slot;
		r = c;
	}
}
