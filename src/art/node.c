/*
 * node.c — the four inner node types of the Adaptive Radix Tree: allocation,
 * child search (SSE2 in Node16), insertion with growth 4 -> 16 -> 48 -> 256,
 * removal with shrinking 256 -> 48 (at 37 children), 48 -> 16 (at 12),
 * 16 -> 4 (at 3), and collapse of a Node4 left with one child into that child
 * (the prefixes merged, as in Leis's eraseNode4).
 *
 * Invariants: Node4/Node16 keys sorted ascending (Node16 flipped, b ^ 0x80);
 * Node48 index[b] == ART_EMPTY48 or a slot whose child is non-zero, and every
 * non-zero slot is indexed by exactly one byte; count == number of children.
 * Every node comes from the tree's allocator and goes back with its size.
 * No system calls.
 */
#include "art/node.h"

#include <errno.h>
#include <string.h>


const size_t art_node_sizes[4] = { sizeof(art_node4), sizeof(art_node16), sizeof(art_node48),
				   sizeof(art_node256) };

art_node *art_node_new(ruma_art *t, int type)
{
	size_t size = art_node_sizes[type];
	art_node *n = art_alloc(t, size);

	if (!n)
		return NULL;
	/* constant sizes, so the small nodes are cleared inline (no call) */
	switch (type) {
	case ART_N4: memset(n, 0, sizeof(art_node4)); break;
	case ART_N16: memset(n, 0, sizeof(art_node16)); break;
	case ART_N48:
		memset(n, 0, sizeof(art_node48));
		memset(((art_node48 *)n)->index, ART_EMPTY48, 256);
		break;
	default: memset(n, 0, sizeof(art_node256)); break;
	}
	n->type = (uint8_t)type;
	t->nodes[type]++;
	return n;
}

void art_node_free(ruma_art *t, art_node *n)
{
	t->nodes[n->type]--;
	art_free(t, n, art_node_sizes[n->type]);
}

static inline uint8_t flip(uint8_t b)
{
	return b ^ 0x80;
}

static void copy_header(art_node *dst, const art_node *src)
{
	dst->prefix_len = src->prefix_len;
	dst->count = src->count;
	memcpy(dst->prefix, src->prefix, ART_MAX_PREFIX);
}

/* ---- growth --------------------------------------------------------------- */

static art_node *grow4(ruma_art *t, art_node4 *n)
{
	art_node16 *g = (art_node16 *)art_node_new(t, ART_N16);
	if (!g)
		return NULL;
	copy_header(&g->h, &n->h);
	for (unsigned i = 0; i < n->h.count; i++) {
		g->key[i] = flip(n->key[i]);
		g->child[i] = n->child[i];
	}
	return &g->h;
}

static art_node *grow16(ruma_art *t, art_node16 *n)
{
	art_node48 *g = (art_node48 *)art_node_new(t, ART_N48);
	if (!g)
		return NULL;
	copy_header(&g->h, &n->h);
	for (unsigned i = 0; i < n->h.count; i++) {
		g->index[flip(n->key[i])] = (uint8_t)i;
		g->child[i] = n->child[i];
	}
	return &g->h;
}

/* Eight bytes of a Node48's index from index[w], as a word whose byte i
 * (bits 8i..8i+7) is non-zero exactly when index[w + i] holds a child. */
static inline uint64_t indexed_bytes(const art_node48 *n, unsigned w)
{
	uint64_t x;
	memcpy(&x, n->index + w, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	x = __builtin_bswap64(x);
#endif
	return x ^ (UINT64_C(0x0101010101010101) * ART_EMPTY48);
}

/* Runs body for every byte b with index[b] != ART_EMPTY48, ascending: eight
 * index bytes per load, an empty word skipped at once, the present bytes of
 * a word found by counting trailing zeros (instead of 256 tests of a byte). */
#define FOR_EACH_INDEXED(n48, b, body)                                         \
	for (unsigned w_ = 0; w_ < 256; w_ += 8) {                             \
		uint64_t x_ = indexed_bytes((n48), w_);                        \
		while (x_) {                                                   \
			unsigned b = w_ + (unsigned)__builtin_ctzll(x_) / 8;   \
			x_ &= ~(UINT64_C(0xff) << (8 * (b - w_)));             \
			body                                                   \
		}                                                              \
	}

static art_node *grow48(ruma_art *t, art_node48 *n)
{
	art_node256 *g = (art_node256 *)art_node_new(t, ART_N256);
	if (!g)
		return NULL;
	copy_header(&g->h, &n->h);
	FOR_EACH_INDEXED(n, b, { g->child[b] = n->child[n->index[b]]; })
	return &g->h;
}

/* Opens entry pos of a sorted key/child array of count entries with room for
 * one more (at most 16 entries: a loop, cheaper than two calls of memmove). */
static void insert_gap(uint8_t *keys, art_ref *child, unsigned count, unsigned pos)
{
	for (unsigned i = count; i > pos; i--) {
		keys[i] = keys[i - 1];
		child[i] = child[i - 1];
	}
}

/* Adds to a node known to have room. */
static void add_room(art_node *n, uint8_t b, art_ref child)
{
	switch (n->type) {
	case ART_N4: {
		art_node4 *n4 = (art_node4 *)n;
		unsigned pos = 0;
		while (pos < n->count && n4->key[pos] < b)
			pos++;
		insert_gap(n4->key, n4->child, n->count, pos);
		n4->key[pos] = b;
		n4->child[pos] = child;
		break;
	}
	case ART_N16: {
		art_node16 *n16 = (art_node16 *)n;
		unsigned pos = art_n16_insert_pos(n16, b);
		insert_gap(n16->key, n16->child, n->count, pos);
		n16->key[pos] = flip(b);
		n16->child[pos] = child;
		break;
	}
	case ART_N48:
		art_n48_add((art_node48 *)n, b, child);
		return;
	default:
		((art_node256 *)n)->child[b] = child;
		break;
	}
	n->count++;
}

static const unsigned capacity[4] = { 4, 16, 48, 256 };

int art_node_add(ruma_art *t, art_ref *ref, uint8_t b, art_ref child)
{
	art_node *n = art_as_node(*ref);

	if (n->count == capacity[n->type]) {
		art_node *g;
		switch (n->type) {
		case ART_N4: g = grow4(t, (art_node4 *)n); break;
		case ART_N16: g = grow16(t, (art_node16 *)n); break;
		default: g = grow48(t, (art_node48 *)n); break;
		}
		if (!g)
			return -ENOMEM;
		art_node_free(t, n);
		*ref = (art_ref)g;
		n = g;
	}
	add_room(n, b, child);
	return 0;
}

/* ---- shrinking ------------------------------------------------------------- */

/* A Node4 with one child: replace it by the child, merging the prefixes. */
static void collapse4(ruma_art *t, art_ref *ref, art_node4 *n)
{
	art_ref child = n->child[0];

	if (!art_is_leaf(child)) {
		art_node *c = art_as_node(child);
		uint8_t merged[ART_MAX_PREFIX];
		unsigned len = n->h.prefix_len < ART_MAX_PREFIX ? n->h.prefix_len : ART_MAX_PREFIX;

		memcpy(merged, n->h.prefix, len);
		if (len < ART_MAX_PREFIX)
			merged[len++] = n->key[0];
		if (len < ART_MAX_PREFIX) {
			unsigned more = ART_MAX_PREFIX - len;
			if (c->prefix_len < more)
				more = c->prefix_len;
			memcpy(merged + len, c->prefix, more);
			len += more;
		}
		memcpy(c->prefix, merged, len);
		c->prefix_len += n->h.prefix_len + 1;
	}
	*ref = child;
	art_node_free(t, &n->h);
}

static void shrink16(ruma_art *t, art_ref *ref, art_node16 *n)
{
	art_node4 *s = (art_node4 *)art_node_new(t, ART_N4);
	if (!s)
		return; /* stays a Node16: correct, only larger */
	copy_header(&s->h, &n->h);
	for (unsigned i = 0; i < n->h.count; i++) {
		s->key[i] = flip(n->key[i]);
		s->child[i] = n->child[i];
	}
	*ref = (art_ref)s;
	art_node_free(t, &n->h);
}

static void shrink48(ruma_art *t, art_ref *ref, art_node48 *n)
{
	art_node16 *s = (art_node16 *)art_node_new(t, ART_N16);
	unsigned pos = 0;
	if (!s)
		return;
	copy_header(&s->h, &n->h);
	FOR_EACH_INDEXED(n, b, {
		s->key[pos] = flip((uint8_t)b);
		s->child[pos++] = n->child[n->index[b]];
	})
	*ref = (art_ref)s;
	art_node_free(t, &n->h);
}

/* Branch-free compaction: every child is stored at pos and pos advances only
 * past the non-empty ones (37 of 256 children at random places would cost a
 * mispredicted branch each); pos stays below 48, so the stores stay inside. */
static void shrink256(ruma_art *t, art_ref *ref, art_node256 *n)
{
	art_node48 *s = (art_node48 *)art_node_new(t, ART_N48);
	unsigned pos = 0;
	if (!s)
		return;
	copy_header(&s->h, &n->h);
	for (unsigned b = 0; b < 256; b++) {
		art_ref c = n->child[b];
		s->child[pos] = c;
		s->index[b] = c ? (uint8_t)pos : ART_EMPTY48;
		pos += c != 0;
	}
	*ref = (art_ref)s;
	art_node_free(t, &n->h);
}

/* Removes entry pos of a sorted key/child array of count entries (at most 16). */
static void remove_sorted(uint8_t *keys, art_ref *child, unsigned count, unsigned pos)
{
	for (unsigned i = pos + 1; i < count; i++) {
		keys[i - 1] = keys[i];
		child[i - 1] = child[i];
	}
}

void art_node_remove(ruma_art *t, art_ref *ref, uint8_t b, art_ref *slot)
{
	art_node *n = art_as_node(*ref);

	switch (n->type) {
	case ART_N4: {
		art_node4 *n4 = (art_node4 *)n;
		remove_sorted(n4->key, n4->child, n->count, (unsigned)(slot - n4->child));
		n->count--;
		if (n->count == 1)
			collapse4(t, ref, n4);
		break;
	}
	case ART_N16: {
		art_node16 *n16 = (art_node16 *)n;
		remove_sorted(n16->key, n16->child, n->count, (unsigned)(slot - n16->child));
		n->count--;
		if (n->count == ART_SHRINK16)
			shrink16(t, ref, n16);
		break;
	}
	case ART_N48: {
		art_node48 *n48 = (art_node48 *)n;
		*slot = 0;
		n48->index[b] = ART_EMPTY48;
		n->count--;
		if (n->count == ART_SHRINK48)
			shrink48(t, ref, n48);
		break;
	}
	default:
		*slot = 0;
		n->count--;
		if (n->count == ART_SHRINK256)
			shrink256(t, ref, (art_node256 *)n);
		break;
	}
}

/* ---- ordered traversal ---------------------------------------------------------- */

art_ref art_min_leaf(art_ref r)
{
	while (r && !art_is_leaf(r)) {
		art_node *n = art_as_node(r);
		switch (n->type) {
		case ART_N4: r = ((art_node4 *)n)->child[0]; break;
		case ART_N16: r = ((art_node16 *)n)->child[0]; break;
		case ART_N48: {
			art_node48 *n48 = (art_node48 *)n;
			unsigned b = 0;
			while (n48->index[b] == ART_EMPTY48)
				b++;
			r = n48->child[n48->index[b]];
			break;
		}
		default: {
			art_node256 *n256 = (art_node256 *)n;
			unsigned b = 0;
			while (!n256->child[b])
				b++;
			r = n256->child[b];
			break;
		}
		}
	}
	return r;
}

int art_node_each(const art_node *n, int (*fn)(uint8_t b, art_ref child, void *ctx), void *ctx)
{
	int rc = 0;

	switch (n->type) {
	case ART_N4: {
		const art_node4 *n4 = (const art_node4 *)n;
		for (unsigned i = 0; i < n->count && !rc; i++)
			rc = fn(n4->key[i], n4->child[i], ctx);
		break;
	}
	case ART_N16: {
		const art_node16 *n16 = (const art_node16 *)n;
		for (unsigned i = 0; i < n->count && !rc; i++)
			rc = fn(flip(n16->key[i]), n16->child[i], ctx);
		break;
	}
	case ART_N48: {
		const art_node48 *n48 = (const art_node48 *)n;
		for (unsigned b = 0; b < 256 && !rc; b++)
			if (n48->index[b] != ART_EMPTY48)
				rc = fn((uint8_t)b, n48->child[n48->index[b]], ctx);
		break;
	}
	default: {
		const art_node256 *n256 = (const art_node256 *)n;
		for (unsigned b = 0; b < 256 && !rc; b++)
			if (n256->child[b])
				rc = fn((uint8_t)b, n256->child[b], ctx);
		break;
	}
	}
	return rc;
}
