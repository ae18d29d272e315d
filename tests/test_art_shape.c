/*
 * test_art_shape.c — the structure of ART trees, checked node by node
 * through the internal layout (src/art/node.h), independently of the
 * counters the tree keeps:
 *
 *   - every inner node's child count equals its non-empty slots and lies
 *     within its type's bounds under Leis's policy (Node4 2..4, Node16
 *     4..16, Node48 13..48, Node256 38..256: grown when full, shrunk at 3,
 *     12 and 37 children, a Node4 with one child collapsed);
 *   - Node4/Node16 keys strictly ascending (Node16 stored flipped), a
 *     Node48's index and slots a bijection;
 *   - every leaf's key carries the bytes of its path (stored prefixes and
 *     child bytes), so merged prefixes after a collapse are right; in a u64
 *     tree no node lies at depth + prefix >= 8;
 *   - the node counts by type and the key count equal the tree's statistics.
 *
 * Cases: one node taken through every size up and down, with its children
 * at scattered byte values and deleted in random order (the Node48 slots
 * and the Node256 compaction see holes everywhere), by the u64 fast path
 * and by the general API; and Leis's three benchmark key sets (dense
 * sorted, dense shuffled, sparse 31+31-bit random) inserted and then erased
 * completely in key order by the fast path, checked at intervals and empty
 * (no node, no byte from the allocator) at the end.
 */
#include "art/node.h"

#include "fixture.h"

struct shape {
	uint64_t nodes[4];
	uint64_t leaves;
	bool u64;    /* 8-byte keys = TID (u64 and TID trees with the default key) */
	int bad;     /* first violation, for the message */
};

static const unsigned min_children[4] = { 2, ART_SHRINK16 + 1, ART_SHRINK48 + 1, ART_SHRINK256 + 1 };
static const unsigned max_children[4] = { 4, 16, 48, 256 };

#define SHAPE_FAIL(s, code)                                                                    \
	do {                                                                                   \
		if (!(s)->bad)                                                                 \
			(s)->bad = (code);                                                     \
		return;                                                                        \
	} while (0)

/* The path so far: bytes[0..len) of the key every leaf below must start with. */
struct path {
	uint8_t bytes[16];
	unsigned len;
};

static void walk(art_ref r, struct path p, struct shape *s);

static void walk_child(art_ref c, struct path p, uint8_t b, struct shape *s)
{
	if (p.len < sizeof(p.bytes))
		p.bytes[p.len] = b;
	p.len++;
	walk(c, p, s);
}

static void walk_leaf(art_ref r, const struct path *p, struct shape *s)
{
	uint64_t key = r >> 1;

	s->leaves++;
	if (!s->u64)
		return;
	for (unsigned i = 0; i < p->len && i < 8; i++)
		if ((uint8_t)(key >> (56 - 8 * i)) != p->bytes[i])
			SHAPE_FAIL(s, 1); /* a leaf off its path: a prefix or byte is wrong */
}

static void walk(art_ref r, struct path p, struct shape *s)
{
	if (art_is_leaf(r)) {
		walk_leaf(r, &p, s);
		return;
	}
	const art_node *n = art_as_node(r);
	unsigned type = n->type, kids = 0;

	if (type > ART_N256)
		SHAPE_FAIL(s, 2);
	s->nodes[type]++;
	if (n->count < min_children[type] || n->count > max_children[type])
		SHAPE_FAIL(s, 3); /* against the grow/shrink policy */
	if (s->u64 && p.len + n->prefix_len >= 8)
		SHAPE_FAIL(s, 4);
	for (unsigned i = 0; i < n->prefix_len && i < ART_MAX_PREFIX; i++)
		if (p.len + i < sizeof(p.bytes))
			p.bytes[p.len + i] = n->prefix[i];
	p.len += n->prefix_len;

	switch (type) {
	case ART_N4: {
		const art_node4 *n4 = (const art_node4 *)n;
		for (unsigned i = 0; i < n->count; i++) {
			if (!n4->child[i] || (i && n4->key[i - 1] >= n4->key[i]))
				SHAPE_FAIL(s, 5);
			walk_child(n4->child[i], p, n4->key[i], s);
			kids++;
		}
		break;
	}
	case ART_N16: {
		const art_node16 *n16 = (const art_node16 *)n;
		for (unsigned i = 0; i < n->count; i++) {
			uint8_t b = n16->key[i] ^ 0x80;
			if (!n16->child[i] || (i && (uint8_t)(n16->key[i - 1] ^ 0x80) >= b))
				SHAPE_FAIL(s, 6);
			walk_child(n16->child[i], p, b, s);
			kids++;
		}
		break;
	}
	case ART_N48: {
		const art_node48 *n48 = (const art_node48 *)n;
		unsigned used = 0, slots = 0;
		uint64_t seen = 0;
		for (unsigned b = 0; b < 256; b++) {
			unsigned i = n48->index[b];
			if (i == ART_EMPTY48)
				continue;
			if (i > 47 || !n48->child[i] || (seen >> i & 1))
				SHAPE_FAIL(s, 7); /* index to an empty or shared slot */
			seen |= UINT64_C(1) << i;
			walk_child(n48->child[i], p, (uint8_t)b, s);
			used++;
		}
		for (unsigned i = 0; i < 48; i++)
			slots += n48->child[i] != 0;
		if (slots != used)
			SHAPE_FAIL(s, 8); /* a slot no byte indexes */
		kids = used;
		break;
	}
	default: {
		const art_node256 *n256 = (const art_node256 *)n;
		for (unsigned b = 0; b < 256; b++)
			if (n256->child[b]) {
				walk_child(n256->child[b], p, (uint8_t)b, s);
				kids++;
			}
		break;
	}
	}
	if (kids != n->count)
		SHAPE_FAIL(s, 9);
}

/* Walks t and compares with its statistics. */
static int check_shape(const ruma_art *t)
{
	struct shape s = { .u64 = t->keys != RUMA_ART_BYTES && !t->load_key };
	ruma_art_stats st;
	struct path p = { .len = 0 };

	if (t->root)
		walk(t->root, p, &s);
	if (s.bad)
		fprintf(stderr, "  tree shape: violation %d\n", s.bad);
	CHECK_EQ(s.bad, 0);
	ruma_art_get_stats(t, &st);
	CHECK_EQ(st.node4, s.nodes[ART_N4]);
	CHECK_EQ(st.node16, s.nodes[ART_N16]);
	CHECK_EQ(st.node48, s.nodes[ART_N48]);
	CHECK_EQ(st.node256, s.nodes[ART_N256]);
	CHECK_EQ(st.keys, s.leaves);
	return TEST_PASS;
}

/* The type the single inner node of the tree has (-1: not exactly one node). */
static int only_node_type(const ruma_art *t)
{
	ruma_art_stats st;
	ruma_art_get_stats(t, &st);
	if (st.node4 + st.node16 + st.node48 + st.node256 != 1)
		return -1;
	return st.node4 ? ART_N4 : st.node16 ? ART_N16 : st.node48 ? ART_N48 : ART_N256;
}

static void shuffle_bytes(uint8_t *b, unsigned n)
{
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)ruma_rng_below(&test_rng, i + 1);
		uint8_t x = b[i];
		b[i] = b[j];
		b[j] = x;
	}
}

static int tree_insert(ruma_art *t, bool fast, uint64_t k)
{
	return fast ? ruma_art_u64_insert(t, k) : ruma_art_insert_tid(t, k, NULL);
}

static void be_key(uint64_t k, uint8_t kb[8])
{
	uint64_t be = __builtin_bswap64(k);
	memcpy(kb, &be, 8);
}

static int tree_delete(ruma_art *t, bool fast, uint64_t k)
{
	uint8_t kb[8];
	be_key(k, kb);
	return fast ? ruma_art_u64_delete(t, k) : ruma_art_delete(t, kb, 8, NULL);
}

static int tree_lookup(ruma_art *t, bool fast, uint64_t k)
{
	uint8_t kb[8];
	be_key(k, kb);
	return fast ? ruma_art_u64_lookup(t, k) : ruma_art_lookup(t, kb, 8, NULL);
}

/* One node under the prefix 0x0000AB12345600 with children at 256 byte
 * values in random order, grown to 256 and deleted in another random
 * order: the node's type after every step is the policy's. */
static int one_node_up_and_down(bool fast, ruma_alloc *a)
{
	ruma_art_options opt = { fast ? RUMA_ART_U64 : RUMA_ART_TID, a, NULL, NULL };
	const uint64_t base = UINT64_C(0x0000ab1234560000);
	uint8_t order[256];
	ruma_art *t;

	for (unsigned i = 0; i < 256; i++)
		order[i] = (uint8_t)i;
	shuffle_bytes(order, 256);
	CHECK_OK(ruma_art_create(&opt, &t));
	for (unsigned k = 1; k <= 256; k++) {
		CHECK_EQ(tree_insert(t, fast, base | order[k - 1]), 0);
		int want = k == 1 ? -1 : k <= 4 ? ART_N4 : k <= 16 ? ART_N16 : k <= 48 ? ART_N48 : ART_N256;
		CHECK_EQ(only_node_type(t), want);
		if (check_shape(t) != TEST_PASS)
			return TEST_FAIL;
	}
	shuffle_bytes(order, 256);
	for (unsigned k = 256; k >= 1; k--) {
		CHECK_EQ(tree_delete(t, fast, base | order[k - 1]), 0);
		unsigned left = k - 1;
		int want = left > ART_SHRINK256 ? ART_N256 : left > ART_SHRINK48 ? ART_N48
			 : left > ART_SHRINK16 ? ART_N16 : left >= 2 ? ART_N4 : -1;
		CHECK_EQ(only_node_type(t), want);
		if (check_shape(t) != TEST_PASS)
			return TEST_FAIL;
		for (unsigned i = 0; i + 1 < k; i++) /* the others are all still there */
			CHECK_EQ(tree_lookup(t, fast, base | order[i]), 0);
		CHECK_EQ(tree_lookup(t, fast, base | order[k - 1]), RUMA_ENOTFOUND);
	}
	CHECK_EQ(ruma_art_size(t), 0);
	ruma_art_destroy(t);
	return TEST_PASS;
}

static int t_shrink_boundaries(void)
{
	ruma_alloc a;
	CHECK_OK(ruma_alloc_create_by_name("libc", NULL, &a));
	for (int round = 0; round < 4; round++) {
		CHECK_EQ(one_node_up_and_down(true, &a), TEST_PASS);
		CHECK_EQ(one_node_up_and_down(false, &a), TEST_PASS);
	}
	CHECK_EQ(test_alloc_live(&a), 0);
	ruma_alloc_destroy(&a);
	return TEST_PASS;
}

/* Leis's key sets: 0 = 1..n sorted, 1 = shuffled, 2 = two 31-bit random halves. */
static void leis_keys(int mode, uint64_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		keys[i] = mode == 2 ? (ruma_rng_next(&test_rng) >> 33) << 32 | (ruma_rng_next(&test_rng) >> 33)
				    : i + 1;
	if (mode == 1)
		ruma_rng_shuffle_u64(&test_rng, keys, n);
}

static int erase_all(int mode, const char *alloc_name, size_t n)
{
	ruma_alloc a;
	ruma_art_options opt = { RUMA_ART_U64, &a, NULL, NULL };
	ruma_art *t;
	uint64_t *keys = malloc(n * sizeof(uint64_t));
	size_t present = 0;

	CHECK(keys);
	leis_keys(mode, keys, n);
	if (ruma_alloc_create_by_name(alloc_name, NULL, &a) != 0) {
		free(keys);
		return TEST_PASS; /* backend unavailable here (no huge pages): nothing to check */
	}
	CHECK_OK(ruma_art_create(&opt, &t));
	for (size_t i = 0; i < n; i++) {
		int rc = ruma_art_u64_insert(t, keys[i]);
		CHECK(rc == 0 || (mode == 2 && rc == 1)); /* random duplicates are possible */
		present += rc == 0;
	}
	CHECK_EQ(ruma_art_size(t), present);
	if (check_shape(t) != TEST_PASS)
		return TEST_FAIL;
	size_t step = n / 16 + 1;
	for (size_t i = 0; i < n; i++) {
		int rc = ruma_art_u64_delete(t, keys[i]);
		CHECK(rc == 0 || (mode == 2 && rc == RUMA_ENOTFOUND));
		if (i % step == 0) {
			if (check_shape(t) != TEST_PASS)
				return TEST_FAIL;
			if (i + 1 < n)
				CHECK_EQ(ruma_art_u64_lookup(t, keys[n - 1]), 0);
		}
	}
	ruma_art_stats st;
	ruma_art_get_stats(t, &st);
	CHECK_EQ(st.keys + st.node4 + st.node16 + st.node48 + st.node256 + st.node_bytes, 0);
	CHECK_EQ(t->root, 0);
	ruma_art_destroy(t); /* frees the descriptor, the last bytes from a */
	CHECK_EQ(test_alloc_live(&a), 0);
	ruma_alloc_destroy(&a);
	free(keys);
	return TEST_PASS;
}

static int t_erase_all_modes(void)
{
	static const char *const allocs[] = { "libc", "pool", "huge" };
	size_t n = test_sanitized() ? 20000 : 200000;

	for (int mode = 0; mode < 3; mode++)
		for (size_t i = 0; i < TEST_N(allocs); i++)
			if (erase_all(mode, allocs[i], n) != TEST_PASS) {
				fprintf(stderr, "  mode %d, allocator %s\n", mode, allocs[i]);
				return TEST_FAIL;
			}
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "shrink_boundaries", t_shrink_boundaries },
	{ "erase_all_modes", t_erase_all_modes },
};

int main(int argc, char **argv)
{
	return test_main("art_shape", cases, TEST_N(cases), argc, argv);
}
