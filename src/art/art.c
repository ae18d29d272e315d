/*
 * art.c — Adaptive Radix Tree operations: create/destroy, insert, lookup,
 * delete, ordered iteration and lower-bound scans, statistics.
 *
 * Keys inside the tree ("tree keys"): in TID mode the 8 key bytes as given;
 * in bytes mode the key rewritten prefix-free and order-preserving (0x00 ->
 * 0x00 0x01, then the terminator 0x00 0x00), so two different tree keys always
 * differ at a position inside both and no key ends at an inner node.  Leaves
 * keep the original key; lookups compare original keys, while splits and the
 * recovery of prefixes longer than 9 bytes re-encode a leaf's key.
 *
 * Invariants: an inner node has >= 2 children; all keys below a node share
 * the node's full prefix; the statistics in ruma_art match the nodes and
 * leaves reachable from root.  Lookups skip prefix bytes beyond the 9 stored
 * ones (optimistic, as Leis) and always verify the key at the leaf; inserts
 * check the whole prefix (pessimistic), recovering it from the leftmost leaf.
 * All memory comes from the tree's allocator.  No system calls.
 */
#include "art/node.h"

#include <errno.h>
#include <string.h>

void ruma_art_default_load_key(uint64_t tid, uint8_t key[8], void *ctx)
{
	(void)ctx;
	uint64_t be = __builtin_bswap64(tid);
	memcpy(key, &be, 8);
}

static inline void load_tid_key(const ruma_art *t, uint64_t tid, uint8_t key[8])
{
	if (t->load_key)
		t->load_key(tid, key, t->load_key_ctx);
	else
		ruma_art_default_load_key(tid, key, NULL);
}

static size_t encode_key(const uint8_t *k, size_t len, uint8_t *out)
{
	size_t j = 0;
	for (size_t i = 0; i < len; i++) {
		out[j++] = k[i];
		if (k[i] == 0)
			out[j++] = 1;
	}
	out[j++] = 0;
	out[j++] = 0;
	return j;
}

/* The tree key of a leaf into buf; returns its length. */
static size_t leaf_tree_key(const ruma_art *t, art_ref leaf, uint8_t *buf)
{
	if (art_tid_keys(t)) {
		load_tid_key(t, leaf >> 1, buf);
		return 8;
	}
	const art_leaf *l = art_as_leaf(leaf);
	return encode_key(l->key, l->len, buf);
}

/* Does the leaf hold exactly the (original) key? */
static inline bool leaf_matches(const ruma_art *t, art_ref leaf, const uint8_t *key, size_t len)
{
	if (art_tid_keys(t)) {
		uint8_t k[8];
		load_tid_key(t, leaf >> 1, k);
		return len == 8 && memcmp(k, key, 8) == 0;
	}
	const art_leaf *l = art_as_leaf(leaf);
	return l->len == len && memcmp(l->key, key, len) == 0;
}

static inline uint64_t leaf_value(const ruma_art *t, art_ref leaf)
{
	return art_tid_keys(t) ? (uint64_t)(leaf >> 1) : art_as_leaf(leaf)->value;
}

static void free_leaf(ruma_art *t, art_ref leaf)
{
	if (t->keys == RUMA_ART_BYTES) {
		art_leaf *l = art_as_leaf(leaf);
		size_t size = art_leaf_size(l->len);
		t->leaf_bytes -= size;
		art_free(t, l, size);
	}
}

/* ---- create / destroy ---------------------------------------------------------- */

int ruma_art_create(const ruma_art_options *opt, ruma_art **out)
{
	if (!opt || !opt->alloc || !out)
		return -EINVAL;
	if (opt->keys != RUMA_ART_BYTES && opt->keys != RUMA_ART_TID && opt->keys != RUMA_ART_U64)
		return -EINVAL;
	if (opt->keys != RUMA_ART_TID && opt->load_key)
		return -EINVAL;
	ruma_art *t = ruma_alloc_alloc(opt->alloc, sizeof(*t), 8);
	if (!t)
		return -ENOMEM;
	memset(t, 0, sizeof(*t));
	t->alloc = opt->alloc;
	t->alloc_kind = ruma_alloc_fast_kind(opt->alloc);
	t->keys = opt->keys;
	t->load_key = opt->load_key;
	t->load_key_ctx = opt->load_key_ctx;
	*out = t;
	return 0;
}

static int free_child(uint8_t b, art_ref child, void *ctx);

static void free_subtree(ruma_art *t, art_ref r)
{
	if (!r)
		return;
	if (art_is_leaf(r)) {
		free_leaf(t, r);
		return;
	}
	art_node *n = art_as_node(r);
	art_node_each(n, free_child, t);
	art_node_free(t, n);
}

static int free_child(uint8_t b, art_ref child, void *ctx)
{
	(void)b;
	free_subtree(ctx, child);
	return 0;
}

void ruma_art_destroy(ruma_art *t)
{
	if (!t)
		return;
	free_subtree(t, t->root);
	ruma_alloc_free(t->alloc, t, sizeof(*t));
}

/* ---- insert ------------------------------------------------------------------------ */

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Length of the match between the node's full prefix and k[depth..]
 * (pessimistic: bytes beyond the stored 9 come from the leftmost leaf). */
static size_t prefix_mismatch(const ruma_art *t, const art_node *n, const uint8_t *k, size_t klen,
			      size_t depth, uint8_t *scratch)
{
	size_t stored = min_sz(n->prefix_len, ART_MAX_PREFIX), i;

	for (i = 0; i < stored; i++)
		if (depth + i >= klen || k[depth + i] != n->prefix[i])
			return i;
	if (n->prefix_len > ART_MAX_PREFIX) {
		size_t llen = leaf_tree_key(t, art_min_leaf((art_ref)n), scratch);
		for (; i < n->prefix_len; i++)
			if (depth + i >= klen || depth + i >= llen || k[depth + i] != scratch[depth + i])
				return i;
	}
	return i;
}

/* The leaf at *ref differs from k: put both under a new Node4. */
static int split_leaf(ruma_art *t, art_ref *ref, const uint8_t *k, size_t klen, size_t depth,
		      art_ref leaf, uint8_t *scratch)
{
	size_t llen = leaf_tree_key(t, *ref, scratch), i = depth;

	while (i < klen && i < llen && k[i] == scratch[i])
		i++;
	RUMA_ASSERT(i < klen && i < llen); /* tree keys are prefix-free */
	art_node4 *n = (art_node4 *)art_node_new(t, ART_N4);
	if (!n)
		return -ENOMEM;
	n->h.prefix_len = (uint32_t)(i - depth);
	memcpy(n->h.prefix, k + depth, min_sz(i - depth, ART_MAX_PREFIX));
	art_ref old = *ref;
	uint8_t a = scratch[i], b = k[i];
	n->key[0] = a < b ? a : b;
	n->child[0] = a < b ? old : leaf;
	n->key[1] = a < b ? b : a;
	n->child[1] = a < b ? leaf : old;
	n->h.count = 2;
	*ref = (art_ref)n;
	return 0;
}

/* The node at *ref matches only p < prefix_len prefix bytes: a new Node4
 * with the first p bytes takes the node (shortened) and the new leaf. */
static int split_prefix(ruma_art *t, art_ref *ref, const uint8_t *k, size_t depth, size_t p,
			art_ref leaf, uint8_t *scratch)
{
	art_node *n = art_as_node(*ref);
	art_node4 *top = (art_node4 *)art_node_new(t, ART_N4);
	uint8_t nb;

	if (!top)
		return -ENOMEM;
	top->h.prefix_len = (uint32_t)p;
	memcpy(top->h.prefix, n->prefix, min_sz(p, ART_MAX_PREFIX));
	if (n->prefix_len <= ART_MAX_PREFIX) {
		nb = n->prefix[p];
		n->prefix_len -= (uint32_t)(p + 1);
		memmove(n->prefix, n->prefix + p + 1, n->prefix_len);
	} else {
		leaf_tree_key(t, art_min_leaf(*ref), scratch);
		nb = scratch[depth + p];
		n->prefix_len -= (uint32_t)(p + 1);
		memcpy(n->prefix, scratch + depth + p + 1, min_sz(n->prefix_len, ART_MAX_PREFIX));
	}
	uint8_t kb = k[depth + p];
	top->key[0] = nb < kb ? nb : kb;
	top->child[0] = nb < kb ? (art_ref)n : leaf;
	top->key[1] = nb < kb ? kb : nb;
	top->child[1] = nb < kb ? leaf : (art_ref)n;
	top->h.count = 2;
	*ref = (art_ref)top;
	return 0;
}

/*
 * Insert the tree key k with its leaf reference.  Returns 0 (inserted),
 * 1 (an equal key exists: *found points at its slot; nothing changed) or
 * -ENOMEM (nothing changed).
 */
static int insert_tree_key(ruma_art *t, const uint8_t *k, size_t klen, art_ref leaf,
			   uint8_t *scratch, art_ref **found)
{
	art_ref *ref = &t->root;
	size_t depth = 0;

	for (;;) {
		art_ref r = *ref;
		if (!r) {
			*ref = leaf;
			return 0;
		}
		if (art_is_leaf(r)) {
			size_t llen = leaf_tree_key(t, r, scratch);
			if (llen == klen && memcmp(scratch + depth, k + depth, klen - depth) == 0) {
				*found = ref;
				return 1;
			}
			return split_leaf(t, ref, k, klen, depth, leaf, scratch);
		}
		art_node *n = art_as_node(r);
		if (n->prefix_len) {
			size_t p = prefix_mismatch(t, n, k, klen, depth, scratch);
			if (p != n->prefix_len)
				return split_prefix(t, ref, k, depth, p, leaf, scratch);
			depth += n->prefix_len;
		}
		RUMA_ASSERT(depth < klen);
		art_ref *child = art_node_find(n, k[depth]);
		if (!child)
			return art_node_add(t, ref, k[depth], leaf);
		ref = child;
		depth++;
	}
}

int ruma_art_insert(ruma_art *t, const void *key, size_t len, uint64_t value, bool *replaced)
{
	art_ref *slot;
	int rc;

	if (art_tid_keys(t)) {
		uint8_t expect[8], scratch[8];
		if (value > RUMA_ART_MAX_TID)
			return RUMA_ETOOBIG;
		if (len != 8)
			return -EINVAL;
		load_tid_key(t, value, expect);
		if (memcmp(expect, key, 8) != 0)
			return -EINVAL;
		art_ref leaf = (art_ref)(value << 1) | 1;
		rc = insert_tree_key(t, key, 8, leaf, scratch, &slot);
		if (rc == 1)
			*slot = leaf;
	} else {
		uint8_t enc[ART_ENC_MAX], scratch[ART_ENC_MAX];
		if (len > RUMA_ART_MAX_KEY)
			return RUMA_ETOOBIG;
		size_t klen = encode_key(key, len, enc);
		size_t size = art_leaf_size(len);
		art_leaf *l = art_alloc(t, size);
		if (!l)
			return -ENOMEM;
		l->value = value;
		l->len = (uint32_t)len;
		if (len)
			memcpy(l->key, key, len);
		rc = insert_tree_key(t, enc, klen, (art_ref)l | 1, scratch, &slot);
		if (rc == 1)
			art_as_leaf(*slot)->value = value;
		if (rc != 0)
			art_free(t, l, size);
		else
			t->leaf_bytes += size;
	}
	if (rc < 0)
		return rc;
	if (rc == 0)
		t->count++;
	if (replaced)
		*replaced = rc == 1;
	return 0;
}

int ruma_art_insert_tid(ruma_art *t, uint64_t tid, bool *replaced)
{
	uint8_t key[8];

	if (!art_tid_keys(t))
		return -EINVAL;
	if (tid > RUMA_ART_MAX_TID)
		return RUMA_ETOOBIG;
	load_tid_key(t, tid, key);
	return ruma_art_insert(t, key, 8, tid, replaced);
}

/* ---- lookup ------------------------------------------------------------------------ */

/* The slot holding the leaf whose tree key is k (optimistic prefix skipping,
 * verified at the leaf against the original key), or NULL.  *parent gets the
 * slot of the inner node holding it (NULL when the leaf is the root), *pbyte
 * its byte there. */
static art_ref *find_leaf_slot(const ruma_art *t, const uint8_t *k, size_t klen,
			       const uint8_t *orig, size_t olen, art_ref **parent, uint8_t *pbyte)
{
	art_ref *ref = (art_ref *)&t->root;
	art_ref *up = NULL;
	uint8_t upbyte = 0;
	size_t depth = 0;

	for (;;) {
		art_ref r = *ref;
		if (!r)
			return NULL;
		if (art_is_leaf(r)) {
			if (!leaf_matches(t, r, orig, olen))
				return NULL;
			*parent = up;
			*pbyte = upbyte;
			return ref;
		}
		art_node *n = art_as_node(r);
		if (n->prefix_len) {
			size_t stored = min_sz(n->prefix_len, ART_MAX_PREFIX);
			if (depth + n->prefix_len >= klen)
				return NULL;
			if (memcmp(n->prefix, k + depth, stored) != 0)
				return NULL;
			depth += n->prefix_len;
		}
		if (depth >= klen)
			return NULL;
		art_ref *child = art_node_find(n, k[depth]);
		if (!child)
			return NULL;
		up = ref;
		upbyte = k[depth];
		ref = child;
		depth++;
	}
}

/* find_leaf_slot for an original key (encoded first in bytes mode). */
static art_ref *find_key(const ruma_art *t, const void *key, size_t len, art_ref **parent,
			 uint8_t *pbyte)
{
	if (art_tid_keys(t))
		return len == 8 ? find_leaf_slot(t, key, 8, key, 8, parent, pbyte) : NULL;
	if (len > RUMA_ART_MAX_KEY)
		return NULL;
	uint8_t enc[ART_ENC_MAX];
	size_t klen = encode_key(key, len, enc);
	return find_leaf_slot(t, enc, klen, key, len, parent, pbyte);
}

int ruma_art_lookup(const ruma_art *t, const void *key, size_t len, uint64_t *value)
{
	art_ref *parent;
	uint8_t pbyte;
	art_ref *slot = find_key(t, key, len, &parent, &pbyte);

	if (!slot)
		return RUMA_ENOTFOUND;
	if (value)
		*value = leaf_value(t, *slot);
	return 0;
}

/* ---- delete ------------------------------------------------------------------------ */

int ruma_art_delete(ruma_art *t, const void *key, size_t len, uint64_t *old_value)
{
	art_ref *parent;
	uint8_t pbyte;
	art_ref *slot = find_key(t, key, len, &parent, &pbyte);

	if (!slot)
		return RUMA_ENOTFOUND;
	art_ref leaf = *slot;
	if (old_value)
		*old_value = leaf_value(t, leaf);
	if (parent)
		art_node_remove_inline(t, parent, pbyte, slot);
	else
		t->root = 0;
	free_leaf(t, leaf);
	t->count--;
	return 0;
}

size_t ruma_art_size(const ruma_art *t)
{
	return (size_t)t->count;
}

/* ---- iteration and scans -------------------------------------------------------- */

struct walk {
	const ruma_art *t;
	ruma_art_visit_fn fn;
	void *ctx;
	const uint8_t *bound; /* tree key of the lower bound, NULL = none */
	size_t blen;
	const uint8_t *orig;  /* the bound as given (compared against leaves) */
	size_t olen;
	uint8_t *scratch;
	size_t depth;         /* depth of the child being visited (bounded walk) */
};

static int visit_leaf(const struct walk *w, art_ref leaf)
{
	if (art_tid_keys(w->t)) {
		uint8_t k[8];
		load_tid_key(w->t, leaf >> 1, k);
		return w->fn(k, 8, leaf >> 1, w->ctx);
	}
	const art_leaf *l = art_as_leaf(leaf);
	return w->fn(l->key, l->len, l->value, w->ctx);
}

static int walk_all_child(uint8_t b, art_ref child, void *ctx);

static int walk_all(const struct walk *w, art_ref r)
{
	if (art_is_leaf(r))
		return visit_leaf(w, r);
	return art_node_each(art_as_node(r), walk_all_child, (void *)w);
}

static int walk_all_child(uint8_t b, art_ref child, void *ctx)
{
	(void)b;
	return walk_all(ctx, child);
}

/* memcmp order with a proper prefix first. */
static int compare_keys(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, min_sz(alen, blen));
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int leaf_at_or_above(const struct walk *w, art_ref leaf)
{
	if (art_tid_keys(w->t)) {
		uint8_t k[8];
		load_tid_key(w->t, leaf >> 1, k);
		return compare_keys(k, 8, w->orig, w->olen) >= 0;
	}
	const art_leaf *l = art_as_leaf(leaf);
	return compare_keys(l->key, l->len, w->orig, w->olen) >= 0;
}

static int walk_from(const struct walk *w, art_ref r, size_t depth);

struct walk_child {
	const struct walk *w;
	size_t depth;
	uint8_t kb; /* bound byte at depth */
	bool past;  /* kb is beyond the bound: every remaining child is above it */
};

static int walk_from_child(uint8_t b, art_ref child, void *ctx)
{
	struct walk_child *c = ctx;
	if (c->past || b > c->kb)
		return walk_all(c->w, child);
	if (b == c->kb)
		return walk_from(c->w, child, c->depth + 1);
	return 0;
}

/* Visit the keys >= bound below r, whose tree keys agree with the bound's in
 * positions [0, depth). */
static int walk_from(const struct walk *w, art_ref r, size_t depth)
{
	if (art_is_leaf(r))
		return leaf_at_or_above(w, r) ? visit_leaf(w, r) : 0;
	const art_node *n = art_as_node(r);
	if (n->prefix_len) {
		const uint8_t *prefix = n->prefix;
		if (n->prefix_len > ART_MAX_PREFIX) {
			leaf_tree_key(w->t, art_min_leaf(r), w->scratch);
			prefix = w->scratch + depth;
		}
		for (size_t i = 0; i < n->prefix_len; i++) {
			if (depth + i >= w->blen || prefix[i] > w->bound[depth + i])
				return walk_all(w, r);
			if (prefix[i] < w->bound[depth + i])
				return 0;
		}
		depth += n->prefix_len;
	}
	struct walk_child c = { w, depth, 0, depth >= w->blen };
	if (!c.past)
		c.kb = w->bound[depth];
	return art_node_each(n, walk_from_child, &c);
}

int ruma_art_iterate(const ruma_art *t, ruma_art_visit_fn fn, void *ctx)
{
	struct walk w = { t, fn, ctx, NULL, 0, NULL, 0, NULL, 0 };
	return t->root ? walk_all(&w, t->root) : 0;
}

int ruma_art_scan(const ruma_art *t, const void *start, size_t len, ruma_art_visit_fn fn,
		  void *ctx)
{
	struct walk w = { t, fn, ctx, NULL, 0, start, len, NULL, 0 };

	if (!t->root)
		return 0;
	if (art_tid_keys(t)) {
		uint8_t scratch[8];
		w.bound = start;
		w.blen = len;
		w.scratch = scratch;
		return walk_from(&w, t->root, 0);
	}
	uint8_t enc[ART_ENC_MAX], scratch[ART_ENC_MAX];
	/* Keys have at most RUMA_ART_MAX_KEY bytes, so cutting the bound after
	 * RUMA_ART_MAX_KEY + 1 bytes gives the same set of keys >= bound. */
	size_t cut = min_sz(len, RUMA_ART_MAX_KEY + 1);
	w.blen = encode_key(start, cut, enc);
	w.bound = enc;
	w.orig = start;
	w.olen = cut;
	w.scratch = scratch;
	return walk_from(&w, t->root, 0);
}

void ruma_art_get_stats(const ruma_art *t, ruma_art_stats *out)
{
	out->keys = t->count;
	out->node4 = t->nodes[ART_N4];
	out->node16 = t->nodes[ART_N16];
	out->node48 = t->nodes[ART_N48];
	out->node256 = t->nodes[ART_N256];
	out->node_bytes = 0;
	for (int i = 0; i < 4; i++)
		out->node_bytes += t->nodes[i] * art_node_sizes[i];
	out->leaf_bytes = t->leaf_bytes;
}
