/*
 * node.h — the B-tree node: one slotted page of RUMA_BM_PAGE_DATA (4064) bytes,
 * the part of a 4 KiB buffer-manager page the buffer manager leaves to its
 * caller (internal to src/btree).
 *
 * Layout (offsets in bytes):
 *   0    header (32 B): magic, level (0 = leaf), flags, count, space_used,
 *        data_offset, prefix_len, the two fence keys {off,len}, the insert
 *        history `run` (for the split policy), and `upper` (inner nodes: the
 *        right-most child pid; leaves: the largest writer mark of the
 *        transactions that changed it, src/btree/mvcc.h, kept by splits and
 *        merges)
 *   32   16 hint heads (u32 each, 64 B)
 *   96   slot array, growing upwards: {u32 head, u16 off, u16 klen, u16 vlen}
 *   ...  free space
 *   data_offset..4064  heap, growing downwards: the fence keys (stored in
 *        full) and each entry's key suffix followed by its value.
 *
 * Keys are stored without the node's prefix: the common prefix of its lower
 * fence (exclusive) and upper fence (inclusive).  A lower fence of length 0
 * means -infinity; the flag NODE_UPPER_INF means +infinity (then prefix_len
 * is 0).  `head` is the first 4 bytes of the stored key suffix, big-endian,
 * zero padded, so comparing heads as integers orders keys by their first 4
 * bytes.  Inner nodes store the child pid (8 bytes) as the value of each
 * separator; child i holds the keys k with sep[i-1] < k <= sep[i], and
 * `upper` those above the last separator.
 *
 * Every function that may run on an optimistically read page takes the page
 * as const and bounds-checks what it reads (setting *bad instead of reading
 * outside the page); the others require the page to be latched exclusively
 * (or private).
 */
#ifndef RUMA_BTREE_NODE_H
#define RUMA_BTREE_NODE_H

#include <ruma/btree.h>

#include <string.h>

/* the part of a buffer-manager page the caller owns (the rest is its trailer) */
#define NODE_PAGE RUMA_BM_PAGE_DATA
#define NODE_MAGIC 0x4e544252u /* "RBTN" */
#define NODE_HINTS 16u
#define NODE_HDR 96u
#define NODE_SLOT 12u
#define NODE_MAX_COUNT ((NODE_PAGE - NODE_HDR) / NODE_SLOT)
#define NODE_UPPER_INF 1u
/* Longest key handled internally: a scan successor key (upper fence + 0x00). */
#define NODE_KEYBUF (RUMA_BTREE_MAX_KEY + 1u)
/* A node whose used bytes fall below this is under-full (merge candidate). */
#define NODE_UNDERFULL (NODE_PAGE / 4u)

typedef struct node_slot {
	uint32_t head;
	uint16_t off;
	uint16_t klen;
	uint16_t vlen;
	uint16_t rsv;
} node_slot;

typedef struct node {
	uint32_t magic;
	uint8_t level;
	uint8_t flags;
	uint16_t count;
	uint16_t space_used;  /* heap bytes in use (fences, keys, values) */
	uint16_t data_offset; /* start of the heap */
	uint16_t prefix_len;
	uint16_t lower_off, lower_len;
	uint16_t upper_off, upper_len;
	uint16_t run;         /* insert history: run length << 10 | (slot of the last insert + 1) */
	uint64_t upper;       /* inner: right-most child; leaf: its mark */
	uint32_t hint[NODE_HINTS];
	node_slot slot[];
} node;

_Static_assert(sizeof(node) == NODE_HDR, "node header is 96 bytes");
_Static_assert(sizeof(node_slot) == NODE_SLOT, "slot is 12 bytes");
_Static_assert(NODE_HDR + 2 * RUMA_BTREE_MAX_KEY + 3 * (NODE_SLOT + RUMA_BTREE_MAX_ENTRY) <= NODE_PAGE,
	       "three maximal entries and two maximal fences fit a node");

/* node.run: the slot of the last insert (+ 1, 0: none) in the low bits, and
 * how many inserts in a row went to the slot right after the previous one
 * (an ascending run) above them, saturating. */
#define NODE_RUN_SLOT_BITS 10u
#define NODE_RUN_MAX 63u
/* An ascending run this long marks a sequential insert stream. */
#define NODE_RUN_MIN 2u
/* node_find_split: no insert position (inner nodes, or unknown). */
#define NODE_POS_NONE 0xffffu
_Static_assert(NODE_MAX_COUNT < (1u << NODE_RUN_SLOT_BITS), "a slot number + 1 fits the run field");

static inline bool node_is_leaf(const node *n) { return n->level == 0; }
static inline bool node_upper_inf(const node *n) { return (n->flags & NODE_UPPER_INF) != 0; }
static inline const uint8_t *node_bytes(const node *n) { return (const uint8_t *)n; }
static inline uint8_t *node_wbytes(node *n) { return (uint8_t *)n; }
static inline const uint8_t *node_lower(const node *n) { return node_bytes(n) + n->lower_off; }
static inline const uint8_t *node_upper_key(const node *n) { return node_bytes(n) + n->upper_off; }
static inline const uint8_t *node_prefix(const node *n) { return node_lower(n); }

/* Free bytes between the slot array and the heap. */
static inline unsigned node_free_contig(const node *n)
{
	return n->data_offset - (NODE_HDR + n->count * NODE_SLOT);
}
/* Free bytes after compaction. */
static inline unsigned node_free_total(const node *n)
{
	return NODE_PAGE - NODE_HDR - n->count * NODE_SLOT - n->space_used;
}
static inline unsigned node_used(const node *n) { return NODE_PAGE - node_free_total(n); }
/* Under-full: less than a quarter used, or empty (long fences can take a
 * quarter of a page by themselves, and an empty node is never kept). */
static inline bool node_underfull(const node *n)
{
	return node_used(n) < NODE_UNDERFULL || n->count == 0;
}

/* Bytes an entry with a full key of klen bytes needs in n. */
static inline unsigned node_entry_size(const node *n, size_t klen, size_t vlen)
{
	return NODE_SLOT + (unsigned)(klen - n->prefix_len) + (unsigned)vlen;
}

uint32_t node_head(const uint8_t *key, size_t klen);

static inline uint64_t node_load_be64(const uint8_t *p)
{
	uint64_t x;
	memcpy(&x, p, sizeof x);
	return __builtin_bswap64(x);
}

/* memcmp order, shorter first on a common prefix.  Keys are short (most
 * under 16 bytes), so 8-byte big-endian words beat a call to memcmp; inline
 * because every descent and every scanned key compares a few. */
static inline int node_keycmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t m = alen < blen ? alen : blen, i = 0;
	for (; i + 8 <= m; i += 8) {
		uint64_t x = node_load_be64(a + i), y = node_load_be64(b + i);
		if (x != y)
			return x < y ? -1 : 1;
	}
	if (m - i >= 4) { /* a 4-byte step: 8-byte keys end here past their head */
		uint32_t x, y;
		memcpy(&x, a + i, 4);
		memcpy(&y, b + i, 4);
		if (x != y)
			return __builtin_bswap32(x) < __builtin_bswap32(y) ? -1 : 1;
		i += 4;
	}
	for (; i < m; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* ---- usable on optimistic (possibly garbage) pages ---------------------------- */

/* Header sanity: counts, offsets and fences inside the page.  Cheap:
 * checked at every node of a descent. */
bool node_plausible(const node *n);

/* The fences lie at or above data_offset, so an insert's allocation below
 * it cannot reach them (checked before every insert). */
static inline bool node_heap_ok(const node *n)
{
	return (n->lower_len == 0 || n->lower_off >= n->data_offset) &&
	       (node_upper_inf(n) || n->upper_off >= n->data_offset);
}

/*
 * node_check — full structural validation of a node: node_plausible; only
 * known flag bits; the fences where node_init puts them (the upper one at
 * the top of the page, the lower one right below it), lower < upper, and
 * prefix_len their common prefix (0 with an upper fence at +infinity);
 * every slot's key suffix and value inside [data_offset, lower_off) (the
 * heap below the fences), with a full key of 1..RUMA_BTREE_MAX_KEY bytes,
 * sizes within the entry limits and the head computed from its suffix;
 * inner nodes: 8-byte values holding child pids in [pid_lo, pid_hi), and
 * `upper` too; space_used equal to the fences' and entries' bytes (so the
 * free space computed from it is real); the hint heads as computed from
 * the slots; keys strictly ascending inside (lower, upper].  Returns NULL
 * when all hold, else what failed (a constant string).  Reads nothing
 * outside the page, whatever its bytes; O(count) key comparisons.
 *
 * After it passes, no unsigned difference the node code forms (suffix =
 * key length - prefix_len, free space, entry sizes) can wrap, and a
 * rewrite from the node's own contents (compaction, split, merge) stays
 * inside its buffers.
 */
const char *node_check(const node *n, uint64_t pid_lo, uint64_t pid_hi);

/* node_check with child pids only checked to be non-zero (the store's
 * size is checked when a pid is followed): before a change that rewrites
 * the whole node from its own contents. */
static inline bool node_valid(const node *n)
{
	return node_check(n, 1, UINT64_MAX) == NULL;
}

/* Does n's key range (lower, upper] hold key?  klen 0 stands for -infinity
 * (the start of a scan from the first key): only a node whose lower fence
 * is -infinity holds it.  Requires node_plausible.  A descent that reaches a
 * node not holding its key took a pointer to a page that is not where its
 * parent says. */
static inline bool node_covers(const node *n, const uint8_t *key, size_t klen)
{
	if (klen == 0)
		return n->lower_len == 0;
	if (n->lower_len && node_keycmp(key, klen, node_lower(n), n->lower_len) <= 0)
		return false;
	return node_upper_inf(n) || node_keycmp(key, klen, node_upper_key(n), n->upper_len) <= 0;
}

/* First position whose key is >= key; *found when equal.  Requires
 * node_plausible; sets *bad if a slot points outside the page. */
unsigned node_lower_bound(const node *n, const uint8_t *key, size_t klen, bool *found, bool *bad);

/* The child for key (inner nodes): slot pos's pid, or `upper` if pos == count. */
uint64_t node_child_at(const node *n, unsigned pos, bool *bad);

/* Entry accessors with bounds checks (suffix = stored part of the key). */
const uint8_t *node_suffix(const node *n, unsigned pos, unsigned *len, bool *bad);
const uint8_t *node_value(const node *n, unsigned pos, unsigned *len, bool *bad);

/* Full key of entry pos into buf (NODE_KEYBUF bytes); returns its length. */
unsigned node_full_key(const node *n, unsigned pos, uint8_t *buf, bool *bad);

/* The free gap of the node at page, [*off, *off + *len): the bytes between
 * the slot array and the heap, which no node function reads before it
 * writes them (a new slot, a heap allocation).  false when the page is not
 * a node with a plausible header.  The buffer manager leaves the gap out of
 * the node's full page images and zeroes it (ruma_bm_set_page_hole,
 * src/bm/mtr.c). */
bool node_hole(const void *page, unsigned *off, unsigned *len);

/* ---- require an exclusive latch (or a private page) ----------------------------- */

/* Initialise an empty node with the given fences (upper == NULL: +inf). */
void node_init(node *n, unsigned level, const uint8_t *lower, size_t llen, const uint8_t *upper,
	       size_t ulen);

/* Insert key (full) → val at pos (from node_lower_bound); the caller made
 * sure node_free_total >= node_entry_size.  Compacts if needed. */
void node_insert_at(node *n, unsigned pos, const uint8_t *key, size_t klen, const void *val,
		    size_t vlen);

/* Remove entry pos. */
void node_remove_at(node *n, unsigned pos);

/* Overwrite entry pos's value with one of the same length, in place (no
 * slot moves, no heap change). */
void node_set_value(node *n, unsigned pos, const void *val, size_t vlen);

/* Set the child pid stored in slot pos (inner). */
void node_set_child(node *n, unsigned pos, uint64_t pid);

/* Rewrite the heap without holes. */
void node_compact(node *n);

/* Recompute the hint heads from the slots. */
void node_update_hints(node *n);

/* Append src's entries [from, to) at the end of dst (keys re-truncated to
 * dst's prefix; the caller guarantees order and room). */
void node_append_range(node *dst, const node *src, unsigned from, unsigned to);
/* Append one entry with a full key at the end of dst. */
void node_append(node *dst, const uint8_t *key, size_t klen, const void *val, size_t vlen);

/* ---- split and merge (on private copies; the caller does the latching) -------------- */

/* Choose where to split a full node: entries [0, *left_count) go left, and
 * the separator (full key) is written to sep (NODE_KEYBUF bytes).  Inner
 * nodes split in the middle and the middle separator moves up (it is not
 * kept in either half); leaves choose, near the middle, the neighbouring
 * pair with the shortest distinguishing prefix, and the separator is that
 * prefix of the right key (or the full left key).  `ipos` is where the key
 * being inserted goes (node_lower_bound; NODE_POS_NONE if unknown): at the
 * end of the leaf (an append) the leaf splits before its last entry; inside
 * the leaf right after an ascending run of inserts (node.run), it splits at
 * the insert position, so the run's keys stay together in a full left half
 * and the keys above (another stream's) move right.  Either way ascending
 * insert streams, also several interleaved ones, fill leaves.  Returns the
 * separator length. */
unsigned node_find_split(const node *n, unsigned ipos, unsigned *left_count, uint8_t *sep);

/* Build the two halves of n split at (left_count, sep) into left and
 * right (private pages). */
void node_split_into(const node *n, unsigned left_count, const uint8_t *sep, unsigned slen,
		     node *left, node *right);

/* Merged size of left + right (+ the separator pulled down for inner
 * nodes); returns true and builds the result in out (a private page) if it
 * fits a page. */
bool node_merge_into(const node *left, const node *right, const uint8_t *sep, unsigned slen,
		     node *out);

#endif
