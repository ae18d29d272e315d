/*
 * node.c — B-tree node operations on one 4 KiB slotted page: search (prefix,
 * hint heads, binary search over heads, memcmp on ties), insertion and
 * removal of entries, compaction, split-point choice and building the halves
 * of a split and the result of a merge.
 *
 * Invariants of a node (checked by check.c): slots sorted strictly by key;
 * every key k satisfies lower < k <= upper; every stored key starts after
 * the common prefix of the fences; the heap lies within [data_offset, 4096)
 * and space_used is the sum of its live bytes (fences + key suffixes +
 * values).  Functions reading a page that may be read optimistically never
 * step outside the page, whatever its bytes say.  No system calls.
 *
 * The free gap between the slot array and the heap holds nothing: every
 * function writes a gap byte (a new slot, a heap allocation) before it
 * reads it, and none reads the gap otherwise.  The log's full page images
 * leave it out (node_hole), zeroing it, and recovery fills it with zeros.
 *
 * Every function that writes a node names the bytes it writes with
 * ruma_bm_wrote (through bm_wrote, bm/declare.h) (the redo log of a declaring operation logs exactly those,
 * src/bm/mtr.c); on a private copy of a page the call does nothing.  The
 * header's first 32 bytes (counts, offsets, fences, run, upper) are named
 * as one range, the hint heads from the first one an insert or removal moves; the slots
 * an insert or removal shifts are named as a move (ruma_bm_moved), which the log keeps
 * in six bytes when it is the page's first write since its last record.  The bulk builders
 * (node_append, node_append_range) name nothing: they fill a page that is
 * named whole when it is done (split, merge, compaction).
 */
#include "btree/node.h"

#include "bm/declare.h"

static unsigned min_u(unsigned a, unsigned b) { return a < b ? a : b; }

uint32_t node_head(const uint8_t *key, size_t klen)
{
	if (klen >= 4) {
		uint32_t x;
		memcpy(&x, key, sizeof x);
		return __builtin_bswap32(x);
	}
	uint32_t h = 0;
	for (unsigned i = 0; i < 4; i++)
		h = (h << 8) | (i < klen ? key[i] : 0u);
	return h;
}

bool node_plausible(const node *n)
{
	if (n->magic != NODE_MAGIC || n->count > NODE_MAX_COUNT)
		return false;
	if (n->data_offset > NODE_PAGE || n->data_offset < NODE_HDR + n->count * NODE_SLOT)
		return false;
	if ((unsigned)n->lower_off + n->lower_len > NODE_PAGE ||
	    (unsigned)n->upper_off + n->upper_len > NODE_PAGE)
		return false;
	if (n->prefix_len > n->lower_len || n->lower_len > RUMA_BTREE_MAX_KEY ||
	    n->upper_len > RUMA_BTREE_MAX_KEY)
		return false;
	return true;
}

bool node_hole(const void *page, unsigned *off, unsigned *len)
{
	const node *n = page;
	if (n->magic != NODE_MAGIC || n->count > NODE_MAX_COUNT)
		return false;
	unsigned lo = NODE_HDR + n->count * NODE_SLOT;
	if (n->data_offset < lo || n->data_offset > NODE_PAGE)
		return false;
	*off = lo;
	*len = n->data_offset - lo;
	return true;
}

/* ---- full validation (node_check) ------------------------------------------------ */

static unsigned common_prefix(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* The fences: where node_init puts them (every node is built by it), the
 * upper fence at the top of the page and the lower fence right below it,
 * above every entry; lower < upper; prefix_len their common prefix. */
static const char *check_fences(const node *n)
{
	bool inf = node_upper_inf(n);
	if (n->flags & ~NODE_UPPER_INF)
		return "unknown flag bits";
	if (inf ? n->upper_len != 0 || n->upper_off != NODE_PAGE
		: n->upper_len == 0 || n->upper_off + n->upper_len != NODE_PAGE)
		return "upper fence not at the top of the page";
	if (n->lower_off + n->lower_len != n->upper_off || n->lower_off < n->data_offset)
		return "lower fence not right below the upper fence";
	if (!inf && n->lower_len &&
	    node_keycmp(node_lower(n), n->lower_len, node_upper_key(n), n->upper_len) >= 0)
		return "lower fence not below the upper fence";
	unsigned want = inf ? 0u
			    : common_prefix(node_lower(n), n->lower_len, node_upper_key(n),
					    n->upper_len);
	if (n->prefix_len != want)
		return "prefix_len is not the fences' common prefix";
	return NULL;
}

/* A key suffix (after the node's prefix) and its head, for the order check. */
typedef struct key_at {
	const uint8_t *k;
	unsigned len;
	uint32_t head;
} key_at;

/* a < b, by heads first (different heads order the keys, equal ones need
 * the bytes) */
static bool key_below(key_at a, key_at b)
{
	return a.head != b.head ? a.head < b.head : node_keycmp(a.k, a.len, b.k, b.len) < 0;
}

/* Slot i: inside the heap below the fences, sizes within the limits, head
 * as computed, key above prev (set to it), child pid in [pid_lo, pid_hi). */
static const char *check_slot(const node *n, unsigned i, key_at *prev, uint64_t pid_lo,
			      uint64_t pid_hi)
{
	const node_slot *s = &n->slot[i];
	unsigned len = (unsigned)s->klen + s->vlen, klen = n->prefix_len + s->klen;
	if (s->off < n->data_offset || s->off + len > n->lower_off)
		return "slot outside the heap or over the fences";
	if (klen == 0 || klen > RUMA_BTREE_MAX_KEY || s->vlen > RUMA_BTREE_MAX_VALUE ||
	    klen + s->vlen > RUMA_BTREE_MAX_ENTRY)
		return "slot sizes beyond the limits";
	key_at k = { node_bytes(n) + s->off, s->klen, node_head(node_bytes(n) + s->off, s->klen) };
	if (s->head != k.head)
		return "slot head does not match its key";
	if (prev->k && !key_below(*prev, k))
		return i ? "keys out of order" : "first key not above the lower fence";
	*prev = k;
	if (node_is_leaf(n))
		return NULL;
	if (s->vlen != sizeof(uint64_t))
		return "inner slot without a child pid";
	uint64_t pid;
	memcpy(&pid, k.k + s->klen, sizeof pid);
	return pid < pid_lo || pid >= pid_hi ? "child pid outside the store" : NULL;
}

const char *node_check(const node *n, uint64_t pid_lo, uint64_t pid_hi)
{
	if (!node_plausible(n))
		return "header out of bounds";
	const char *why = check_fences(n);
	if (why)
		return why;
	/* keys are compared without the prefix every key and both fences share */
	unsigned plen = n->prefix_len, live = n->lower_len + n->upper_len;
	key_at prev = { NULL, 0, 0 };
	if (n->lower_len) {
		prev.k = node_lower(n) + plen;
		prev.len = n->lower_len - plen;
		prev.head = node_head(prev.k, prev.len);
	}
	for (unsigned i = 0; i < n->count; i++) {
		if ((why = check_slot(n, i, &prev, pid_lo, pid_hi)))
			return why;
		live += n->slot[i].klen + n->slot[i].vlen;
	}
	if (n->count && !node_upper_inf(n) &&
	    node_keycmp(prev.k, prev.len, node_upper_key(n) + plen, n->upper_len - plen) > 0)
		return "last key above the upper fence";
	/* exact accounting: the free space computed from it is real */
	if (live != n->space_used || live > NODE_PAGE - n->data_offset)
		return "space_used differs from the live bytes";
	if (!node_is_leaf(n) && (n->upper < pid_lo || n->upper >= pid_hi))
		return "right-most child pid outside the store";
	unsigned dist = n->count / (NODE_HINTS + 1);
	for (unsigned i = 0; i < NODE_HINTS; i++)
		if (n->hint[i] != (dist ? n->slot[dist * (i + 1)].head : 0u))
			return "hint heads differ from the slots";
	return NULL;
}

/* Narrow [*lo, *hi) with the hint heads (only worth it for larger nodes). */
static void search_hints(const node *n, uint32_t head, unsigned count, unsigned *lo, unsigned *hi)
{
	if (count <= 2 * NODE_HINTS || n->hint[0] == n->hint[NODE_HINTS - 1])
		return; /* small, or every hint the same head: nothing to narrow */
	unsigned dist = count / (NODE_HINTS + 1);
	unsigned i = 0, j;
	while (i < NODE_HINTS && n->hint[i] < head)
		i++;
	j = i;
	while (j < NODE_HINTS && n->hint[j] == head)
		j++;
	/* slot dist*i holds hint[i-1] < head; slot dist*(j+1) holds hint[j] > head */
	*lo = i * dist;
	if (j < NODE_HINTS)
		*hi = min_u((j + 1) * dist, count);
}

/* Only what reading the suffix needs: inside the page (an optimistic
 * reader may see garbage; node_check validates the whole slot). */
const uint8_t *node_suffix(const node *n, unsigned pos, unsigned *len, bool *bad)
{
	const node_slot *s = &n->slot[pos];
	if (RUMA_UNLIKELY((unsigned)s->off + s->klen > NODE_PAGE)) {
		*bad = true;
		*len = 0;
		return node_bytes(n);
	}
	*len = s->klen;
	return node_bytes(n) + s->off;
}

const uint8_t *node_value(const node *n, unsigned pos, unsigned *len, bool *bad)
{
	const node_slot *s = &n->slot[pos];
	if ((unsigned)s->off + s->klen + s->vlen > NODE_PAGE || s->off < NODE_HDR) {
		*bad = true;
		*len = 0;
		return node_bytes(n);
	}
	*len = s->vlen;
	return node_bytes(n) + s->off + s->klen;
}

unsigned node_lower_bound(const node *n, const uint8_t *key, size_t klen, bool *found, bool *bad)
{
	unsigned count = n->count, plen = n->prefix_len;
	*found = false;
	if (plen) {
		size_t m = klen < plen ? klen : plen;
		int c = node_keycmp(key, m, node_prefix(n), m);
		if (c < 0 || (c == 0 && klen < plen))
			return 0;
		if (c > 0)
			return count;
	}
	key += plen;
	klen -= plen;
	uint32_t head = node_head(key, klen);
	unsigned lo = 0, hi = count;
	search_hints(n, head, count, &lo, &hi);
	if (lo > hi)
		lo = hi;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		uint32_t h = n->slot[mid].head;
		if (head < h) {
			hi = mid;
		} else if (head > h) {
			lo = mid + 1;
		} else {
			unsigned slen;
			const uint8_t *s = node_suffix(n, mid, &slen, bad);
			/* equal heads: when both keys have 4 bytes, those are equal */
			int c = klen >= 4 && slen >= 4 ? node_keycmp(key + 4, klen - 4, s + 4, slen - 4)
						       : node_keycmp(key, klen, s, slen);
			if (c < 0) {
				hi = mid;
			} else if (c > 0) {
				lo = mid + 1;
			} else {
				*found = true;
				return mid;
			}
		}
	}
	return lo;
}

uint64_t node_child_at(const node *n, unsigned pos, bool *bad)
{
	if (pos >= n->count)
		return n->upper;
	const node_slot *s = &n->slot[pos];
	uint64_t pid = 0;
	/* as node_value, with the value's length known: an 8-byte pid */
	if (RUMA_UNLIKELY(s->vlen != sizeof pid ||
			  (unsigned)s->off + s->klen + sizeof pid > NODE_PAGE || s->off < NODE_HDR)) {
		*bad = true;
		return 0;
	}
	memcpy(&pid, node_bytes(n) + s->off + s->klen, sizeof pid);
	return pid;
}

unsigned node_full_key(const node *n, unsigned pos, uint8_t *buf, bool *bad)
{
	unsigned slen, plen = n->prefix_len;
	const uint8_t *s = node_suffix(n, pos, &slen, bad);
	if (plen + slen > NODE_KEYBUF) {
		*bad = true;
		return 0;
	}
	memcpy(buf, node_prefix(n), plen);
	memcpy(buf + plen, s, slen);
	return plen + slen;
}

/* ---- modification ------------------------------------------------------------------ */

/* The header's fields before the hint heads, written by most changes. */
#define NODE_FIELDS offsetof(node, hint)

static inline void wrote_fields(node *n)
{
	bm_wrote(n, NODE_FIELDS);
}

static uint16_t heap_alloc(node *n, unsigned len)
{
	RUMA_ASSERT(node_free_contig(n) >= len);
	n->data_offset = (uint16_t)(n->data_offset - len);
	n->space_used = (uint16_t)(n->space_used + len);
	return n->data_offset;
}

static unsigned common_prefix(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t m = alen < blen ? alen : blen, i = 0;
	while (i < m && a[i] == b[i])
		i++;
	return (unsigned)i;
}

void node_init(node *n, unsigned level, const uint8_t *lower, size_t llen, const uint8_t *upper,
	       size_t ulen)
{
	memset(n, 0, NODE_HDR);
	bm_wrote(n, NODE_HDR);
	n->magic = NODE_MAGIC;
	n->level = (uint8_t)level;
	n->data_offset = NODE_PAGE;
	if (upper) {
		n->upper_off = heap_alloc(n, (unsigned)ulen);
		n->upper_len = (uint16_t)ulen;
		if (ulen)
			memcpy(node_wbytes(n) + n->upper_off, upper, ulen);
		bm_wrote(node_wbytes(n) + n->upper_off, ulen);
	} else {
		n->flags |= NODE_UPPER_INF;
		n->upper_off = NODE_PAGE;
	}
	n->lower_off = heap_alloc(n, (unsigned)llen);
	n->lower_len = (uint16_t)llen;
	if (llen)
		memcpy(node_wbytes(n) + n->lower_off, lower, llen);
	bm_wrote(node_wbytes(n) + n->lower_off, llen);
	n->prefix_len = upper ? (uint16_t)common_prefix(lower, llen, upper, ulen) : 0;
}

void node_update_hints(node *n)
{
	unsigned dist = n->count / (NODE_HINTS + 1);
	for (unsigned i = 0; i < NODE_HINTS; i++)
		n->hint[i] = dist ? n->slot[dist * (i + 1)].head : 0;
}

/* The hints after one slot was inserted or removed at pos (old_count slots
 * before): when the spacing stays, only the hints at or past pos move, so
 * only those are rewritten and named for the log. */
static void hints_after_change(node *n, unsigned pos, unsigned old_count)
{
	unsigned dist = n->count / (NODE_HINTS + 1);
	if (dist != old_count / (NODE_HINTS + 1)) {
		node_update_hints(n);
		bm_wrote(n->hint, sizeof(n->hint));
		return;
	}
	if (!dist)
		return; /* all zero, and they stay so */
	unsigned first = pos / dist; /* dist * (i + 1) >= pos for i >= first - 1 */
	first = first ? first - 1 : 0;
	for (unsigned i = first; i < NODE_HINTS; i++)
		n->hint[i] = n->slot[dist * (i + 1)].head;
	if (first < NODE_HINTS)
		bm_wrote(&n->hint[first], (NODE_HINTS - first) * sizeof(n->hint[0]));
}

/* Write entry pos (its slot and heap bytes); `name`: name the heap bytes for
 * the log (the caller names the slot). */
static void store_entry(node *n, unsigned pos, const uint8_t *key, size_t klen, const void *val,
			size_t vlen, bool name)
{
	unsigned plen = n->prefix_len;
	unsigned slen = (unsigned)(klen - plen);
	uint16_t off = heap_alloc(n, slen + (unsigned)vlen);
	memcpy(node_wbytes(n) + off, key + plen, slen);
	if (vlen)
		memcpy(node_wbytes(n) + off + slen, val, vlen);
	node_slot *s = &n->slot[pos];
	if (name)
		bm_wrote(node_wbytes(n) + off, slen + vlen);
	s->off = off;
	s->klen = (uint16_t)slen;
	s->vlen = (uint16_t)vlen;
	s->rsv = 0;
	s->head = node_head(key + plen, slen);
}

/* Insert history for node_find_split: extend the run when pos is the slot
 * right after the previous insert, else start a new one. */
static void note_insert(node *n, unsigned pos)
{
	unsigned last = n->run & ((1u << NODE_RUN_SLOT_BITS) - 1u);
	unsigned len = n->run >> NODE_RUN_SLOT_BITS;
	len = last != 0 && pos == last ? (len < NODE_RUN_MAX ? len + 1u : len) : 0u;
	n->run = (uint16_t)(len << NODE_RUN_SLOT_BITS | (pos + 1u));
}

void node_insert_at(node *n, unsigned pos, const uint8_t *key, size_t klen, const void *val,
		    size_t vlen)
{
	unsigned need = node_entry_size(n, klen, vlen);
	RUMA_ASSERT(node_free_total(n) >= need);
	if (node_free_contig(n) < need)
		node_compact(n);
	memmove(&n->slot[pos + 1], &n->slot[pos], (n->count - pos) * NODE_SLOT);
	bm_moved(&n->slot[pos + 1], &n->slot[pos], (n->count - pos) * NODE_SLOT);
	bm_wrote(&n->slot[pos], NODE_SLOT); /* the new slot */
	n->count++;
	store_entry(n, pos, key, klen, val, vlen, true);
	hints_after_change(n, pos, n->count - 1u);
	note_insert(n, pos);
	wrote_fields(n);
}

void node_remove_at(node *n, unsigned pos)
{
	n->space_used = (uint16_t)(n->space_used - n->slot[pos].klen - n->slot[pos].vlen);
	memmove(&n->slot[pos], &n->slot[pos + 1], (n->count - pos - 1) * NODE_SLOT);
	bm_moved(&n->slot[pos], &n->slot[pos + 1], (n->count - pos - 1) * NODE_SLOT);
	wrote_fields(n);
	n->count--;
	hints_after_change(n, pos, n->count + 1u);
	n->run = 0; /* slots moved: the history no longer names a slot */
}

void node_set_value(node *n, unsigned pos, const void *val, size_t vlen)
{
	const node_slot *s = &n->slot[pos];
	RUMA_ASSERT(vlen == s->vlen);
	uint8_t *v = node_wbytes(n) + s->off + s->klen;
	memmove(v, val, vlen); /* val may be the value itself (a value read in place) */
	bm_wrote(v, vlen);
}

void node_set_child(node *n, unsigned pos, uint64_t pid)
{
	if (pos >= n->count) {
		n->upper = pid;
		wrote_fields(n);
		return;
	}
	node_slot *s = &n->slot[pos];
	memcpy(node_wbytes(n) + s->off + s->klen, &pid, sizeof pid);
	bm_wrote(node_wbytes(n) + s->off + s->klen, sizeof pid);
}

void node_append(node *dst, const uint8_t *key, size_t klen, const void *val, size_t vlen)
{
	store_entry(dst, dst->count, key, klen, val, vlen, false);
	dst->count++;
}

void node_append_range(node *dst, const node *src, unsigned from, unsigned to)
{
	uint8_t key[NODE_KEYBUF];
	bool bad = false;
	for (unsigned i = from; i < to; i++) {
		unsigned klen = node_full_key(src, i, key, &bad);
		unsigned vlen;
		const uint8_t *v = node_value(src, i, &vlen, &bad);
		node_append(dst, key, klen, v, vlen);
	}
	RUMA_ASSERT(!bad);
}

static void node_init_like(node *dst, const node *src)
{
	node_init(dst, src->level, node_lower(src), src->lower_len,
		  node_upper_inf(src) ? NULL : node_upper_key(src), src->upper_len);
	dst->upper = src->upper;
}

void node_compact(node *n)
{
	_Alignas(8) uint8_t tmp[NODE_PAGE];
	node *t = (node *)tmp;
	node_init_like(t, n);
	node_append_range(t, n, 0, n->count);
	node_update_hints(t);
	t->run = n->run; /* same slots */
	memcpy(n, t, NODE_PAGE);
	bm_wrote(n, NODE_PAGE);
}

/* ---- split ----------------------------------------------------------------------------- */

/* Separator between leaf entries i and i+1: the shortest key s with
 * key(i) <= s < key(i+1): the right key cut after its first byte that
 * differs from the left key, or else the full left key. */
static unsigned leaf_separator(const node *n, unsigned i, uint8_t *sep)
{
	bool bad = false;
	unsigned al, bl, plen = n->prefix_len;
	const uint8_t *a = node_suffix(n, i, &al, &bad);
	const uint8_t *b = node_suffix(n, i + 1, &bl, &bad);
	unsigned cp = common_prefix(a, al, b, bl);
	RUMA_ASSERT(!bad);
	if (bl > cp + 1) {
		memcpy(sep, node_prefix(n), plen);
		memcpy(sep + plen, b, cp + 1);
		return plen + cp + 1;
	}
	return node_full_key(n, i, sep, &bad);
}

/* Bytes the left half of a leaf split at (left_count, sep) would use. */
static unsigned left_half_size(const node *n, unsigned left_count, const uint8_t *sep,
			       unsigned slen)
{
	unsigned new_prefix = common_prefix(node_lower(n), n->lower_len, sep, slen);
	if (n->lower_len == 0)
		new_prefix = 0;
	unsigned size = NODE_HDR + n->lower_len + slen;
	for (unsigned i = 0; i < left_count; i++)
		size += NODE_SLOT + n->prefix_len + n->slot[i].klen - new_prefix + n->slot[i].vlen;
	return size;
}

/* Is an insert at ipos the continuation of an ascending run in n? */
static bool continues_run(const node *n, unsigned ipos)
{
	unsigned last = n->run & ((1u << NODE_RUN_SLOT_BITS) - 1u);
	return last != 0 && ipos == last && (n->run >> NODE_RUN_SLOT_BITS) >= NODE_RUN_MIN;
}

unsigned node_find_split(const node *n, unsigned ipos, unsigned *left_count, uint8_t *sep)
{
	bool bad = false;
	unsigned count = n->count;
	RUMA_ASSERT(count >= 2);
	if (!node_is_leaf(n)) {
		/* inner: the middle separator moves up; left keeps [0, mid) and
		 * the middle child as its right-most child */
		unsigned mid = count / 2;
		*left_count = mid;
		return node_full_key(n, mid, sep, &bad);
	}
	/* leaf: left gets [0, best]; (best, best+1) is the neighbouring pair
	 * with the shortest common prefix in [count/2 - count/16, count/2],
	 * ties going to the pair nearest the middle */
	unsigned target = (count - 1) / 2;
	unsigned lo = count / 2 - count / 16, hi = count / 2;
	if (ipos >= count && ipos != NODE_POS_NONE && count >= 4) {
		/* an append: keep the left node nearly full */
		target = count - 2;
		lo = hi = count - 2;
	} else if (ipos >= 2 && ipos < count && continues_run(n, ipos)) {
		/* an ascending run inside the leaf (its stream is interleaved
		 * with another one whose keys lie above): the run stays left,
		 * full, and the keys above it move right, out of its way */
		target = ipos - 1;
		lo = hi = ipos - 1;
	}
	if (hi > count - 2)
		hi = count - 2;
	if (lo > hi)
		lo = hi;
	unsigned best = lo, best_cp = ~0u, best_dist = ~0u;
	for (unsigned i = lo; i <= hi; i++) {
		unsigned al, bl;
		const uint8_t *a = node_suffix(n, i, &al, &bad);
		const uint8_t *b = node_suffix(n, i + 1, &bl, &bad);
		unsigned cp = common_prefix(a, al, b, bl);
		unsigned dist = i > target ? i - target : target - i;
		if (cp < best_cp || (cp == best_cp && dist < best_dist)) {
			best = i;
			best_cp = cp;
			best_dist = dist;
		}
	}
	unsigned slen = leaf_separator(n, best, sep);
	if (left_half_size(n, best + 1, sep, slen) > NODE_PAGE) {
		/* a long full left key as separator can overflow a left half
		 * that keeps most of the bytes; fewer entries on the left
		 * always fit (pair (0, 1) at the latest) */
		while (best > 0) {
			best--;
			slen = leaf_separator(n, best, sep);
			if (left_half_size(n, best + 1, sep, slen) <= NODE_PAGE)
				break;
		}
	}
	*left_count = best + 1;
	return slen;
}

void node_split_into(const node *n, unsigned left_count, const uint8_t *sep, unsigned slen,
		     node *left, node *right)
{
	const uint8_t *upper = node_upper_inf(n) ? NULL : node_upper_key(n);
	node_init(left, n->level, node_lower(n), n->lower_len, sep, slen);
	node_init(right, n->level, sep, slen, upper, n->upper_len);
	right->upper = n->upper;
	if (node_is_leaf(n)) {
		left->upper = n->upper; /* the mark */
		node_append_range(left, n, 0, left_count);
		node_append_range(right, n, left_count, n->count);
	} else {
		bool bad = false;
		node_append_range(left, n, 0, left_count);
		left->upper = node_child_at(n, left_count, &bad);
		node_append_range(right, n, left_count + 1, n->count);
		RUMA_ASSERT(!bad);
	}
	node_update_hints(left);
	node_update_hints(right);
	bm_wrote(left, NODE_PAGE);
	bm_wrote(right, NODE_PAGE);
}

/* ---- merge ------------------------------------------------------------------------------ */

static unsigned entries_size(const node *n, unsigned new_prefix)
{
	/* stored suffixes grow by (old prefix - new prefix) bytes each */
	return n->space_used - n->lower_len - (node_upper_inf(n) ? 0u : n->upper_len) +
	       n->count * (NODE_SLOT + n->prefix_len - new_prefix);
}

bool node_merge_into(const node *left, const node *right, const uint8_t *sep, unsigned slen,
		     node *out)
{
	const uint8_t *upper = node_upper_inf(right) ? NULL : node_upper_key(right);
	unsigned new_prefix = upper ? common_prefix(node_lower(left), left->lower_len, upper,
						    right->upper_len)
				    : 0u;
	unsigned size = NODE_HDR + left->lower_len + (upper ? right->upper_len : 0u) +
			entries_size(left, new_prefix) + entries_size(right, new_prefix);
	if (!node_is_leaf(left))
		size += NODE_SLOT + slen - new_prefix + (unsigned)sizeof(uint64_t);
	if (size > NODE_PAGE)
		return false;
	node_init(out, left->level, node_lower(left), left->lower_len, upper, right->upper_len);
	node_append_range(out, left, 0, left->count);
	if (!node_is_leaf(left)) {
		/* the parent's separator comes down, pointing at left's
		 * right-most child */
		uint64_t pid = left->upper;
		node_append(out, sep, slen, &pid, sizeof pid);
	}
	node_append_range(out, right, 0, right->count);
	/* a leaf keeps the larger mark, an inner node right's right-most child */
	out->upper = node_is_leaf(left) && left->upper > right->upper ? left->upper : right->upper;
	node_update_hints(out);
	bm_wrote(out, NODE_PAGE);
	return true;
}
