/*
 * bulk.c — a bulk load: an empty tree built bottom-up from entries that
 * arrive in ascending key order, its pages written straight to the store
 * file, never through the buffer pool and never into the log.
 *
 * Why.  Loading sorted entries one insert at a time costs, per leaf, a
 * page fault on a fresh pool page, an image of the page in the log, a
 * checksum and a write at eviction, and the eviction's madvise; per entry
 * a descent and an undo record.  A sorted stream needs none of that: each
 * leaf is filled once, in memory the loader owns, and written once.
 *
 * How.  Each level of the tree has one open node, filled in a private
 * buffer with full keys (no prefix truncation: its upper fence is not yet
 * known).  When the next entry does not fit a leaf, the leaf is closed: its
 * upper fence is the shortest separator between its last key and the next
 * one (separator()), the node is rebuilt from the open one with both
 * fences (node_init truncates the common prefix) into the next page of the
 * write buffer, and (fence, page) goes up to the level above.  An inner
 * level keeps its latest child pending outside its open node: when the
 * next child comes and the pending one no longer fits as an entry, the
 * node is closed with the pending child as its right-most one (node.upper)
 * and the pending separator as its upper fence, exactly the shape
 * btree.c's splits leave.  Leaves fill completely; an inner node keeps
 * room for one largest fence.  Page ids come from extents
 * (ruma_bm_extent_alloc: logged, redone by recovery) as long as the load's
 * pages so far, from BULK_EXTENT_MIN to BULK_EXTENT pages, so a level's
 * nodes lie mostly in ascending pid order; the write buffer goes out with
 * one ruma_bm_pages_write per BULK_BATCH pages.
 *
 * The end.  The last node of each level is closed with an upper fence of
 * +infinity; the first level whose last node is also its first is the top.
 * The top is not written: it replaces the empty root (whose pid the
 * catalog keeps) in one logged page change, and the log syncs the store
 * before that record reaches its file (bm_extent_before_log_write), so a
 * crash leaves either the empty tree or the whole load.  What a crash
 * leaves allocated and unnamed is freed by the store layer's sweep after
 * recovery (src/db/blob.c); an abort frees it at once.
 *
 * Visibility.  The loaded entries have no versions, so a snapshot older
 * than the load must not read the tree: bt_bulk_finish raises the caller's
 * visibility timestamp to UINT64_MAX before the change and lowers it to a
 * commit timestamp after; the store layer refuses older snapshots
 * (RUMA_ESNAPTOOOLD).  Leaves carry mark 0: to newer snapshots their
 * entries are committed rows, read in place.
 */
#include "btree/bulk.h"
#include "btree/btree_int.h"
#include "btree/mvcc.h"

#include <ruma/core.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BULK_EXTENT 2048u /* pages allocated at a time, at most (8 MiB) ... */
#define BULK_EXTENT_MIN 16u /* ... and at first (64 KiB) */
#define BULK_BATCH 256u   /* pages written at a time (1 MiB) */
#define BULK_LEVELS 16u   /* far above any tree's height (fanout >= 3) */
#define PG RUMA_BM_PAGE_SIZE

/* A key with its length (a fence, a separator, the last key added). */
typedef struct bulk_key {
	unsigned len;
	uint8_t b[NODE_KEYBUF];
} bulk_key;

/* One level being built: its open node, its lower fence, its pending child
 * (inner levels) and how many of its nodes were closed. */
typedef struct bulk_level {
	_Alignas(8) uint8_t open[NODE_PAGE];
	bulk_key lower;
	bool has_pending;
	bool pending_inf; /* the pending child's fence is +infinity (the end) */
	bulk_key pending_sep;
	ruma_pid pending_pid;
	uint64_t closed;
} bulk_level;

/* An extent the load allocated. */
typedef struct bulk_run {
	ruma_pid first;
	uint64_t n;
} bulk_run;

struct bt_bulk {
	ruma_btree *t;
	int err;          /* sticky */
	uint64_t entries;
	bulk_key last;    /* the last key added (len 0: none yet) */
	unsigned nlevels; /* levels with an open node */
	bulk_level *lv[BULK_LEVELS];
	char *buf;        /* BULK_BATCH pages being filled, page aligned */
	unsigned nbuf;
	ruma_pid buf_first;
	bulk_run *runs;   /* every extent allocated, freed on abort */
	size_t nruns, capruns;
	uint64_t ext_used; /* pages of the last run handed out */
	uint64_t pages;    /* pages of every run */
	_Alignas(8) uint8_t top[NODE_PAGE]; /* the top node, installed as root */
};

static node *open_node(bulk_level *l) { return (node *)(void *)l->open; }

/* The shortest separator s with a <= s < b (a < b): b's first
 * common-prefix + 1 bytes when that is a proper prefix of b, else a. */
static unsigned separator(const bulk_key *a, const uint8_t *b, unsigned blen, uint8_t *out)
{
	unsigned m = a->len < blen ? a->len : blen, cp = 0;
	while (cp < m && a->b[cp] == b[cp])
		cp++;
	if (cp + 1 < blen) {
		memcpy(out, b, cp + 1);
		return cp + 1;
	}
	memcpy(out, a->b, a->len);
	return a->len;
}

/* ---- pages: extents, the write buffer ---------------------------------------------- */

static int buf_flush(bt_bulk *b)
{
	if (!b->nbuf)
		return 0;
	int r = ruma_bm_pages_write(b->t->bm, b->buf_first, b->nbuf, b->buf);
	b->nbuf = 0;
	return r;
}

static int run_new(bt_bulk *b)
{
	if (b->nruns == b->capruns) {
		size_t cap = b->capruns ? 2 * b->capruns : 16;
		bulk_run *r = realloc(b->runs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		b->runs = r;
		b->capruns = cap;
	}
	/* as many pages as the load has so far, from BULK_EXTENT_MIN up to
	 * BULK_EXTENT: a small load leaves little behind */
	uint64_t n = b->pages;
	n = n < BULK_EXTENT_MIN ? BULK_EXTENT_MIN : n > BULK_EXTENT ? BULK_EXTENT : n;
	ruma_pid first;
	int r = ruma_bm_extent_alloc(b->t->bm, n, &first);
	if (r)
		return r;
	b->runs[b->nruns++] = (bulk_run){ first, n };
	b->pages += n;
	b->ext_used = 0;
	return 0;
}

/* The next page of the load: its pid and its place in the write buffer
 * (zeroed; the caller builds a node in its data part). */
static int page_next(bt_bulk *b, ruma_pid *pid, node **page)
{
	bool run_full = !b->nruns || b->ext_used == b->runs[b->nruns - 1].n;
	int r = 0;
	if (b->nbuf == BULK_BATCH || (run_full && b->nbuf))
		r = buf_flush(b);
	if (!r && run_full)
		r = run_new(b);
	if (r)
		return r;
	*pid = b->runs[b->nruns - 1].first + b->ext_used++;
	if (!b->nbuf)
		b->buf_first = *pid;
	char *p = b->buf + (size_t)b->nbuf++ * PG;
	memset(p, 0, PG);
	*page = (node *)(void *)p;
	return 0;
}

/* ---- levels ---------------------------------------------------------------------------- */

static int level_get(bt_bulk *b, unsigned level, bulk_level **out)
{
	if (level >= BULK_LEVELS)
		return -EOVERFLOW;
	if (level == b->nlevels) {
		bulk_level *l = calloc(1, sizeof(*l));
		if (!l)
			return -ENOMEM;
		node_init(open_node(l), level, NULL, 0, NULL, 0);
		b->lv[b->nlevels++] = l;
	}
	*out = b->lv[level];
	return 0;
}

/* Rebuild l's open node with fences (lower, upper; NULL: +infinity) into
 * dst. */
static void node_final(bulk_level *l, unsigned level, const bulk_key *upper, node *dst)
{
	node *o = open_node(l);
	node_init(dst, level, l->lower.b, l->lower.len, upper ? upper->b : NULL,
		  upper ? upper->len : 0);
	node_append_range(dst, o, 0, o->count);
	node_update_hints(dst);
}

/* Start l's next node after one closed with fence `fence`. */
static void level_reopen(bulk_level *l, unsigned level, const bulk_key *fence)
{
	l->lower = *fence;
	node_init(open_node(l), level, l->lower.b, l->lower.len, NULL, 0);
}

static int push(bt_bulk *b, unsigned level, const bulk_key *sep, ruma_pid pid);

/* Close the open node of `level` with upper fence `fence` (NULL: +infinity,
 * the end) and `upper` as its node.upper (an inner node's right-most
 * child, a leaf's mark); `top`: it is the top node, built into b->top,
 * else it is written and goes up to the next level. */
static int level_close(bt_bulk *b, unsigned level, const bulk_key *fence, uint64_t upper,
		       bool top)
{
	bulk_level *l = b->lv[level];
	node *dst = (node *)(void *)b->top;
	ruma_pid pid = 0;
	int r = top ? 0 : page_next(b, &pid, &dst);
	if (r)
		return r;
	node_final(l, level, fence, dst);
	dst->upper = upper;
	l->closed++;
	if (top)
		return 0;
	if (fence)
		level_reopen(l, level, fence);
	return push(b, level + 1, fence, pid);
}

/* Close inner level `level`'s node with its pending child as the right-most. */
static int inner_close(bt_bulk *b, unsigned level, bool top)
{
	bulk_level *l = b->lv[level];
	l->has_pending = false;
	return level_close(b, level, l->pending_inf ? NULL : &l->pending_sep, l->pending_pid, top);
}

/* Child pid with upper fence sep (NULL: +infinity) for inner level `level`. */
static int push(bt_bulk *b, unsigned level, const bulk_key *sep, ruma_pid pid)
{
	bulk_level *l;
	int r = level_get(b, level, &l);
	if (r)
		return r;
	if (l->has_pending) {
		node *o = open_node(l);
		unsigned need = node_entry_size(o, l->pending_sep.len, sizeof(ruma_pid));
		if (node_free_total(o) >= need + RUMA_BTREE_MAX_KEY) /* room for the last fence */
			node_append(o, l->pending_sep.b, l->pending_sep.len, &l->pending_pid,
				    sizeof(ruma_pid));
		else if ((r = inner_close(b, level, false)))
			return r;
	}
	l->has_pending = true;
	l->pending_inf = sep == NULL;
	if (sep)
		l->pending_sep = *sep;
	l->pending_pid = pid;
	return 0;
}

/* Close the open leaf with upper fence `fence` (NULL: the end; `top`: the
 * only leaf).  Mark 0: committed rows (bt_bulk_finish sets the visibility). */
static int leaf_close(bt_bulk *b, const bulk_key *fence, bool top)
{
	return level_close(b, 0, fence, 0, top);
}

/* ---- the calls ------------------------------------------------------------------------ */

static int tree_empty(ruma_btree *t)
{
	void *p;
	int r = ruma_bm_fix_s(t->bm, t->root, &p);
	if (r)
		return bt_read_failed(t, t->root, r);
	const node *n = p;
	bool empty = node_plausible(n) && n->level == 0 && n->count == 0;
	ruma_bm_unfix_s(t->bm, t->root);
	return empty ? 0 : -ENOTEMPTY;
}

int bt_bulk_begin(ruma_btree *t, bt_bulk **out)
{
	if (!t || !out)
		return -EINVAL;
	int r = tree_empty(t);
	if (r)
		return r;
	bt_bulk *b = calloc(1, sizeof(*b));
	void *buf = NULL;
	if (!b || posix_memalign(&buf, PG, (size_t)BULK_BATCH * PG)) {
		free(b);
		return -ENOMEM;
	}
	b->t = t;
	b->buf = buf;
	bulk_level *l;
	if ((r = level_get(b, 0, &l))) {
		bt_bulk_abort(b);
		return r;
	}
	*out = b;
	return 0;
}

uint64_t bt_bulk_entries(const bt_bulk *b)
{
	return b->entries;
}

int bt_bulk_add(bt_bulk *b, const void *key, size_t klen, const void *val, size_t vlen)
{
	if (!b || (!key && klen) || (!val && vlen))
		return -EINVAL;
	if (b->err)
		return b->err;
	if (klen == 0)
		return -EINVAL;
	if (klen > RUMA_BTREE_MAX_KEY || vlen > RUMA_BTREE_MAX_VALUE ||
	    klen + vlen > RUMA_BTREE_MAX_ENTRY)
		return RUMA_ETOOBIG;
	const uint8_t *k = key;
	if (b->entries && node_keycmp(k, klen, b->last.b, b->last.len) <= 0)
		return RUMA_EEXISTS;
	node *o = open_node(b->lv[0]);
	unsigned fence = klen + 1 < RUMA_BTREE_MAX_KEY ? (unsigned)klen + 1 : RUMA_BTREE_MAX_KEY;
	if (node_free_total(o) < node_entry_size(o, klen, vlen) + fence) {
		bulk_key sep;
		sep.len = separator(&b->last, k, (unsigned)klen, sep.b);
		int r = leaf_close(b, &sep, false);
		if (r)
			return b->err = r;
	}
	node_append(o, k, klen, val, vlen);
	memcpy(b->last.b, k, klen);
	b->last.len = (unsigned)klen;
	b->entries++;
	return 0;
}

/* Close every level up to the top, write the last pages, give back what
 * the last extent did not use. */
static int close_all(bt_bulk *b)
{
	int r = leaf_close(b, NULL, b->lv[0]->closed == 0);
	for (unsigned level = 1; !r && level < b->nlevels; level++)
		r = inner_close(b, level, b->lv[level]->closed == 0);
	if (!r)
		r = buf_flush(b);
	if (!r && b->nruns) {
		bulk_run *last = &b->runs[b->nruns - 1];
		if (b->ext_used < last->n)
			r = ruma_bm_extent_free(b->t->bm, last->first + b->ext_used,
						last->n - b->ext_used);
		if (!r)
			last->n = b->ext_used;
	}
	return r;
}

/* The top node replaces the empty root: one logged page change. */
static int install(bt_bulk *b)
{
	ruma_btree *t = b->t;
	void *p;
	ruma_bm_op_declare(t->bm);
	int r = ruma_bm_fix_x(t->bm, t->root, &p);
	if (r)
		return ruma_bm_op_end(t->bm, bt_read_failed(t, t->root, r));
	node *root = p;
	if (!node_plausible(root) || root->level != 0 || root->count != 0) {
		ruma_bm_unfix_x(t->bm, t->root);
		return ruma_bm_op_end(t->bm, -ENOTEMPTY);
	}
	memcpy(root, b->top, NODE_PAGE);
	ruma_bm_wrote(root, NODE_PAGE);
	ruma_bm_unfix_x(t->bm, t->root);
	return ruma_bm_op_end(t->bm, 0);
}

static void bulk_free(bt_bulk *b)
{
	for (unsigned i = 0; i < b->nlevels; i++)
		free(b->lv[i]);
	free(b->runs);
	free(b->buf);
	free(b);
}

int bt_bulk_finish(bt_bulk *b, _Atomic uint64_t *visible)
{
	if (!b || !visible)
		return -EINVAL;
	int r = b->err;
	if (!r && b->entries == 0) { /* nothing to install */
		bt_bulk_abort(b);
		return 0;
	}
	if (!r)
		r = close_all(b);
	if (!r) {
		uint64_t before = atomic_exchange(visible, UINT64_MAX);
		r = install(b);
		atomic_store(visible, r ? before : mv_commit_ts());
	}
	if (r) {
		bt_bulk_abort(b);
		return r;
	}
	bulk_free(b);
	return 0;
}

void bt_bulk_abort(bt_bulk *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nruns; i++)
		if (b->runs[i].n)
			(void)ruma_bm_extent_free(b->t->bm, b->runs[i].first, b->runs[i].n);
	bulk_free(b);
}
