/*
 * check.c — the invariant checker (ruma_btree_check) and
 * ruma_btree_get_stats (the counters of btree.c plus the shape), both one
 * depth-first walk over the tree.
 *
 * Each node is latched shared only long enough to copy it (so the walk
 * never holds a latch while visiting children and cannot deadlock with
 * writers), then checked on the copy:
 *   - header and slots inside the page, space_used = fences + live bytes,
 *     heap below data_offset, hint heads and slot heads as computed;
 *   - fences equal the separators the parent holds around the child (the
 *     root's are -inf/+inf), prefix_len = their common prefix;
 *   - keys strictly ascending, lower < key <= upper;
 *   - everything else node_check validates (fences and slots apart, flags,
 *     entry sizes);
 *   - levels: every child one below its parent, every leaf at level 0 and
 *     so at the same depth (an inner node with a single child and no
 *     separator is valid: it is left when a merge above does not fit);
 *   - the leaves' fence intervals tile the key space in order (each leaf's
 *     lower fence is the previous leaf's upper fence, the first is -inf, the
 *     last +inf), so every key is routed to exactly one reachable leaf;
 *   - every page is reached from one parent slot only.
 * The walk ends on any page contents: each page is entered at most once (a
 * set of the pids seen; a second slot leading to a page, a shared child or
 * a cycle, is reported and not followed), and a child must be one level
 * below its parent, so the recursion is at most 256 deep.
 * Problems are described through the caller's message callback (at most
 * 50 lines and a count); no system calls.
 *
 * The store check (ruma_btree_check_store) runs the same walk over the
 * catalog and every tree it names with one set of pids for all of them, so
 * a page of two trees is a page reached twice; it then asks the allocator
 * about every reached pid (it must be a used data page) and every pid below
 * the high-water mark (a used one no tree reached is leaked).
 */
#include "btree/btree_int.h"
#include "btree/blobref.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct key_ref {
	const uint8_t *key;
	unsigned len;
	bool inf;
} key_ref;

/* Open-addressing set of page ids (stored as pid + 1; 0 = empty slot). */
typedef struct pid_set {
	uint64_t *slot;
	size_t cap, n;
} pid_set;

static size_t pid_hash(uint64_t x, size_t cap)
{
	x *= 0x9e3779b97f4a7c15ull;
	return (size_t)(x ^ (x >> 29)) & (cap - 1);
}

static void pid_set_put(pid_set *s, uint64_t key)
{
	size_t i = pid_hash(key, s->cap);
	while (s->slot[i])
		i = (i + 1) & (s->cap - 1);
	s->slot[i] = key;
	s->n++;
}

/* Add pid; *fresh tells whether it was new.  -ENOMEM if the set cannot grow. */
static int pid_set_add(pid_set *s, ruma_pid pid, bool *fresh)
{
	uint64_t key = pid + 1;
	if (2 * (s->n + 1) > s->cap) {
		pid_set old = *s;
		s->cap = old.cap ? 2 * old.cap : 1024;
		s->slot = calloc(s->cap, sizeof *s->slot);
		if (!s->slot) {
			*s = old;
			return -ENOMEM;
		}
		s->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.slot[i])
				pid_set_put(s, old.slot[i]);
		free(old.slot);
	}
	for (size_t i = pid_hash(key, s->cap); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == key) {
			*fresh = false;
			return 0;
		}
	pid_set_put(s, key);
	*fresh = true;
	return 0;
}

typedef struct walk {
	ruma_btree *t;
	ruma_message_fn message; /* NULL: count problems silently */
	void *message_ctx;
	bool check;
	uint64_t errors;
	ruma_pid first_bad; /* page of the first problem */
	pid_set *seen;      /* the walk's own, or the store check's across trees */
	ruma_btree_stats *st;
	bt_value_runs_fn runs;   /* leaf values' own page runs (NULL: none) */
	void *runs_ctx;
	uint8_t prev_upper[NODE_KEYBUF];
	unsigned prev_len;
	bool prev_inf;
	bool seen_leaf;
} walk;

/* Hand "page <pid>: <what>" to the walk's message callback. */
static void __attribute__((format(printf, 3, 4))) say(walk *w, ruma_pid pid, const char *fmt,
						      ...)
{
	char what[400], line[448];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "page %" PRIu64 ": %s", (uint64_t)pid, what);
	w->message(w->message_ctx, line);
}

#define REPORT(w, pid, ...)                                         \
	do {                                                        \
		if ((w)->errors++ == 0)                             \
			(w)->first_bad = (pid);                     \
		if ((w)->message && (w)->errors <= 50)              \
			say((w), (pid), __VA_ARGS__);               \
	} while (0)

static bool key_eq(key_ref a, const uint8_t *k, unsigned len, bool inf)
{
	if (a.inf || inf)
		return a.inf == inf;
	return a.len == len && (len == 0 || memcmp(a.key, k, len) == 0);
}

static unsigned common_len(key_ref a, key_ref b)
{
	if (a.inf || b.inf)
		return 0;
	unsigned m = a.len < b.len ? a.len : b.len, i = 0;
	while (i < m && a.key[i] == b.key[i])
		i++;
	return i;
}

/* Header, slot and heap bounds; fences and prefix against the expected ones. */
static bool check_layout(walk *w, ruma_pid pid, const node *n, key_ref lo, key_ref hi)
{
	if (!node_plausible(n)) {
		REPORT(w, pid, "implausible header (magic %08x count %u data_offset %u)", n->magic,
		       n->count, n->data_offset);
		return false;
	}
	bool ok = true;
	unsigned live = n->lower_len + (node_upper_inf(n) ? 0u : n->upper_len);
	for (unsigned i = 0; i < n->count; i++) {
		const node_slot *s = &n->slot[i];
		if (s->off < n->data_offset || (unsigned)s->off + s->klen + s->vlen > NODE_PAGE) {
			REPORT(w, pid, "slot %u outside the heap", i);
			return false;
		}
		live += s->klen + s->vlen;
		if (s->head != node_head(node_bytes(n) + s->off, s->klen)) {
			REPORT(w, pid, "slot %u: head does not match its key", i);
			ok = false;
		}
		if (!node_is_leaf(n) && s->vlen != sizeof(uint64_t)) {
			REPORT(w, pid, "inner slot %u: value of %u bytes is no child pid", i, s->vlen);
			return false;
		}
	}
	if (live != n->space_used) {
		REPORT(w, pid, "space_used %u but %u bytes live", n->space_used, live);
		ok = false;
	}
	unsigned dist = n->count / (NODE_HINTS + 1);
	for (unsigned i = 0; dist && i < NODE_HINTS; i++)
		if (n->hint[i] != n->slot[dist * (i + 1)].head) {
			REPORT(w, pid, "hint %u stale", i);
			ok = false;
			break;
		}
	if (!key_eq(lo, node_lower(n), n->lower_len, false)) {
		REPORT(w, pid, "lower fence differs from the parent's separator");
		ok = false;
	}
	if (!key_eq(hi, node_upper_key(n), n->upper_len, node_upper_inf(n))) {
		REPORT(w, pid, "upper fence differs from the parent's separator");
		ok = false;
	}
	if (n->prefix_len != common_len(lo, hi)) {
		REPORT(w, pid, "prefix_len %u, fences share %u bytes", n->prefix_len,
		       common_len(lo, hi));
		ok = false;
	}
	/* the rest of the structure, as a page read from the store is checked */
	const char *why = ok ? node_check(n, 1, UINT64_MAX) : NULL;
	if (why) {
		REPORT(w, pid, "%s", why);
		ok = false;
	}
	return ok;
}

/* Keys ascending and within the fences. */
static void check_order(walk *w, ruma_pid pid, const node *n)
{
	uint8_t a[NODE_KEYBUF], b[NODE_KEYBUF];
	bool bad = false;
	unsigned alen = 0;
	for (unsigned i = 0; i < n->count; i++) {
		unsigned blen = node_full_key(n, i, b, &bad);
		if (bad) {
			REPORT(w, pid, "slot %u: key too long", i);
			return;
		}
		if (i == 0 && n->lower_len &&
		    node_keycmp(b, blen, node_lower(n), n->lower_len) <= 0)
			REPORT(w, pid, "first key not above the lower fence");
		if (i > 0 && node_keycmp(a, alen, b, blen) >= 0)
			REPORT(w, pid, "keys %u and %u out of order", i - 1, i);
		if (i + 1 == n->count && !node_upper_inf(n) &&
		    node_keycmp(b, blen, node_upper_key(n), n->upper_len) > 0)
			REPORT(w, pid, "last key above the upper fence");
		memcpy(a, b, blen);
		alen = blen;
	}
}

static void check_leaf_chain(walk *w, ruma_pid pid, const node *n)
{
	bool lower_ok = w->seen_leaf ? (!w->prev_inf && w->prev_len == n->lower_len &&
					memcmp(w->prev_upper, node_lower(n), n->lower_len) == 0)
				     : n->lower_len == 0;
	if (!lower_ok)
		REPORT(w, pid, "leaf does not start where the previous leaf ended");
	w->seen_leaf = true;
	w->prev_inf = node_upper_inf(n);
	w->prev_len = n->upper_len;
	memcpy(w->prev_upper, node_upper_key(n), n->upper_len);
}

/* One page run a leaf value names (bt_value_runs_fn's add): every page
 * joins the set of pages reached. */
struct run_add {
	walk *w;
	ruma_pid leaf;
	unsigned slot;
	int rc;
};

static int add_run(void *ctx, ruma_pid first, uint64_t n)
{
	struct run_add *a = ctx;
	for (uint64_t i = 0; i < n && !a->rc; i++) {
		bool fresh;
		a->rc = pid_set_add(a->w->seen, first + i, &fresh);
		if (!a->rc && !fresh) {
			REPORT(a->w, a->leaf, "slot %u: its value's page %" PRIu64
			       " is reached a second time (an extent shared)", a->slot, first + i);
			return 0;
		}
	}
	return a->rc;
}

/* Hand every value of leaf n to the walk's run callback. */
static int walk_values(walk *w, ruma_pid pid, const node *n)
{
	for (unsigned i = 0; i < n->count; i++) {
		bool bad = false;
		unsigned vlen;
		const uint8_t *v = node_value(n, i, &vlen, &bad);
		if (bad)
			continue; /* check_order reported it */
		struct run_add a = { w, pid, i, 0 };
		int r = w->runs(v, vlen, w->runs_ctx, add_run, &a);
		if (a.rc)
			return a.rc;
		if (r)
			REPORT(w, pid, "slot %u: a value that names malformed page runs", i);
	}
	return 0;
}

static int walk_node(walk *w, ruma_pid pid, int level, bool is_root, key_ref lo, key_ref hi)
{
	bool fresh;
	int rc = pid_set_add(w->seen, pid, &fresh);
	if (rc)
		return rc;
	if (!fresh) {
		REPORT(w, pid, "reached a second time (a child shared by two slots, or a cycle)");
		return 0;
	}
	uint8_t *copy = malloc(NODE_PAGE);
	if (!copy)
		return -ENOMEM;
	void *page;
	rc = ruma_bm_fix_s(w->t->bm, pid, &page);
	if (rc == -EINVAL)
		REPORT(w, pid, "child pid outside the store");
	if (rc) {
		free(copy);
		return rc == -EINVAL ? 0 : rc;
	}
	memcpy(copy, page, NODE_PAGE);
	ruma_bm_unfix_s(w->t->bm, pid);
	node *n = (node *)copy;
	if (!check_layout(w, pid, n, lo, hi)) {
		free(copy);
		return 0;
	}
	if (level >= 0 && n->level != level) {
		/* not descending further also stops cycles of child pointers */
		REPORT(w, pid, "level %u, expected %d", n->level, level);
		free(copy);
		return 0;
	}
	level = n->level;
	ruma_btree_stats *st = w->st;
	if (is_root && st)
		st->height = n->level + 1u;
	if (st) {
		st->bytes_used += node_used(n);
		if (node_is_leaf(n)) {
			st->leaf_nodes++;
			st->entries += n->count;
		} else {
			st->inner_nodes++;
		}
	}
	if (w->check)
		check_order(w, pid, n);
	if (node_is_leaf(n)) {
		check_leaf_chain(w, pid, n);
		rc = w->runs ? walk_values(w, pid, n) : 0;
		free(copy);
		return rc;
	}
	uint8_t sep[2][NODE_KEYBUF];
	key_ref clo = lo;
	for (unsigned i = 0; i <= n->count && rc == 0; i++) {
		bool bad = false;
		key_ref chi = hi;
		if (i < n->count) {
			uint8_t *buf = sep[i & 1];
			chi.len = node_full_key(n, i, buf, &bad);
			chi.key = buf;
			chi.inf = false;
		}
		ruma_pid child = node_child_at(n, i, &bad);
		if (bad) {
			REPORT(w, pid, "slot %u unreadable", i);
			break;
		}
		rc = walk_node(w, child, level - 1, false, clo, chi);
		clo = chi;
	}
	free(copy);
	return rc;
}

/* One tree's walk; seen is the set of pages reached so far (NULL: a set of
 * the walk's own). */
static int walk_tree_runs(ruma_btree *t, ruma_message_fn message, void *message_ctx, bool check,
			  ruma_btree_stats *st, uint64_t *errors, pid_set *seen, bt_value_runs_fn runs,
			  void *runs_ctx)
{
	walk *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->runs = runs;
	w->runs_ctx = runs_ctx;
	pid_set own = { 0 };
	w->seen = seen ? seen : &own;
	w->t = t;
	w->message = message;
	w->message_ctx = message_ctx;
	w->check = check;
	w->st = st;
	key_ref lo = { (const uint8_t *)"", 0, false }, hi = { (const uint8_t *)"", 0, true };
	int rc = walk_node(w, t->root, -1, true, lo, hi);
	if (rc == 0 && (!w->seen_leaf || !w->prev_inf))
		REPORT(w, t->root, "the last leaf does not end at +infinity");
	*errors = w->errors;
	if (check && w->errors)
		bt_corrupt(t, w->first_bad, BT_DMG_CHECK);
	free(own.slot);
	free(w);
	return rc;
}

static int walk_tree(ruma_btree *t, ruma_message_fn message, void *message_ctx, bool check,
		     ruma_btree_stats *st, uint64_t *errors, pid_set *seen)
{
	return walk_tree_runs(t, message, message_ctx, check, st, errors, seen, NULL, NULL);
}

int ruma_btree_check_msg(ruma_btree *t, ruma_message_fn message, void *message_ctx)
{
	uint64_t errors = 0;
	int rc = walk_tree(t, message, message_ctx, true, NULL, &errors, NULL);
	if (rc)
		return rc;
	if (errors && message) {
		char line[64];
		snprintf(line, sizeof(line), "%" PRIu64 " problem(s)", errors);
		message(message_ctx, line);
	}
	return errors ? RUMA_ECORRUPT : 0;
}

int bt_walk_stats(ruma_btree *t, ruma_btree_stats *out)
{
	uint64_t errors = 0;
	return walk_tree(t, NULL, NULL, false, out, &errors, NULL);
}

/* ---- the store check: every tree the catalog names, against the bitmap ---- */

typedef struct named_root {
	ruma_pid root;
	char name[RUMA_BTREE_MAX_NAME + 1];
} named_root;

typedef struct store_walk {
	ruma_message_fn message;
	void *message_ctx;
	const char *tree; /* name of the tree being walked, for the lines */
	named_root *roots;
	size_t n_roots, cap_roots;
	uint64_t problems; /* of the catalog entries and the bitmap */
	int rc;            /* -ENOMEM while collecting the roots */
	bt_value_runs_fn runs; /* the named trees' values' page runs (NULL: none) */
	void *runs_ctx;
	void (*leak)(void *ctx, ruma_pid first, uint64_t n); /* each run of leaked pages */
	void *leak_ctx;
} store_walk;

static void __attribute__((format(printf, 2, 3))) store_say(store_walk *s, const char *fmt, ...)
{
	char line[448];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (s->message)
		s->message(s->message_ctx, line);
}

/* The per-tree walk's lines, prefixed with the tree's name. */
static void tree_line(void *ctx, const char *line)
{
	store_walk *s = ctx;
	store_say(s, "tree %s: %s", s->tree, line);
}

/* ruma_btree_list callback: remember each catalog entry's root. */
static bool collect_root(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	store_walk *s = ctx;
	size_t n = klen < RUMA_BTREE_MAX_NAME ? klen : RUMA_BTREE_MAX_NAME;
	if (vlen != sizeof(ruma_pid)) {
		s->problems++;
		store_say(s, "catalog entry %.*s: a value of %zu bytes, not a page id", (int)n,
			  (const char *)key, vlen);
		return true;
	}
	if (s->n_roots == s->cap_roots) {
		size_t cap = s->cap_roots ? 2 * s->cap_roots : 16;
		named_root *r = realloc(s->roots, cap * sizeof *r);
		if (!r) {
			s->rc = -ENOMEM;
			return false;
		}
		s->roots = r;
		s->cap_roots = cap;
	}
	named_root *r = &s->roots[s->n_roots++];
	memcpy(&r->root, val, sizeof r->root);
	memcpy(r->name, key, n);
	r->name[n] = '\0';
	return true;
}

/* Walk the catalog, then every tree it names, all into one set of pages. */
static int walk_catalog(ruma_bm *bm, store_walk *s, pid_set *seen, uint64_t *errors,
			ruma_btree_store_check *c)
{
	uint64_t v = 0, e = 0;
	int rc = ruma_bm_meta_get(bm, RUMA_BTREE_META_SLOT, &v);
	if (rc || v == 0)
		return rc; /* no catalog: no trees */
	ruma_btree cat = { .bm = bm, .root = v - 1 };
	s->tree = "(catalog)";
	rc = walk_tree(&cat, tree_line, s, true, NULL, &e, seen);
	*errors += e;
	if (rc || e)
		return rc; /* a damaged catalog is not followed */
	rc = ruma_btree_list(bm, collect_root, s);
	if (rc == 0)
		rc = s->rc;
	for (size_t i = 0; i < s->n_roots && rc == 0; i++) {
		ruma_btree t = { .bm = bm, .root = s->roots[i].root };
		s->tree = s->roots[i].name;
		e = 0;
		rc = walk_tree_runs(&t, tree_line, s, true, NULL, &e, seen, s->runs, s->runs_ctx);
		*errors += e;
		c->trees++;
	}
	return rc;
}

static bool pid_set_has(const pid_set *s, ruma_pid pid)
{
	if (!s->cap)
		return false;
	for (size_t i = pid_hash(pid + 1, s->cap); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == pid + 1)
			return true;
	return false;
}


/* Every reached page must be an allocated data page. */
static void check_reached(ruma_bm *bm, store_walk *s, const pid_set *seen,
			  ruma_btree_store_check *c)
{
	for (size_t i = 0; i < seen->cap; i++) {
		if (!seen->slot[i])
			continue;
		ruma_pid pid = seen->slot[i] - 1;
		ruma_bm_page_state st = ruma_bm_page_state_of(bm, pid);
		if (st == RUMA_BM_PAGE_USED)
			continue;
		c->reached_unallocated++;
		if (s->problems++ < 50)
			store_say(s, "page %" PRIu64 ": reachable but %s", (uint64_t)pid,
				  bt_page_state_name(st));
	}
}

/* Every allocated data page must be reached. */
static void count_leaks(ruma_bm *bm, store_walk *s, const pid_set *seen,
			ruma_btree_store_check *c)
{
	uint64_t hw = ruma_bm_high_water(bm), first_leak = 0, run = 0;
	for (ruma_pid pid = 0; pid < hw; pid++) {
		ruma_bm_page_state st = ruma_bm_page_state_of(bm, pid);
		if (st == RUMA_BM_PAGE_FREE)
			c->pages_free++;
		if (st != RUMA_BM_PAGE_USED || pid_set_has(seen, pid)) {
			if (run && s->leak)
				s->leak(s->leak_ctx, pid - run, run);
			run = 0;
			continue;
		}
		run++;
		if (c->pages_leaked++ == 0)
			first_leak = pid;
	}
	if (run && s->leak)
		s->leak(s->leak_ctx, hw - run, run);
	if (c->pages_leaked) {
		s->problems++;
		store_say(s,
			  "%" PRIu64 " pages leaked: allocated but reached by no tree (the first: "
			  "page %" PRIu64 ")",
			  c->pages_leaked, first_leak);
	}
}

int ruma_btree_check_store(ruma_bm *bm, ruma_message_fn message, void *message_ctx,
			   ruma_btree_store_check *out)
{
	return bt_check_store_runs(bm, message, message_ctx, out, NULL, NULL, NULL, NULL);
}

int bt_check_store_runs(ruma_bm *bm, ruma_message_fn message, void *message_ctx,
			ruma_btree_store_check *out, bt_value_runs_fn runs, void *runs_ctx,
			void (*leak)(void *ctx, ruma_pid first, uint64_t n), void *leak_ctx)
{
	if (!bm)
		return -EINVAL;
	ruma_btree_store_check c = { 0 };
	store_walk s = { .message = message, .message_ctx = message_ctx, .runs = runs,
			 .runs_ctx = runs_ctx, .leak = leak, .leak_ctx = leak_ctx };
	pid_set seen = { 0 };
	uint64_t errors = 0;
	int rc = walk_catalog(bm, &s, &seen, &errors, &c);
	c.pages_reached = seen.n;
	if (rc == 0)
		check_reached(bm, &s, &seen, &c);
	if (rc == 0 && errors == 0) /* a damaged tree's unreached pages are no leak */
		count_leaks(bm, &s, &seen, &c);
	free(seen.slot);
	free(s.roots);
	if (out)
		*out = c;
	if (rc)
		return rc;
	errors += s.problems;
	if (errors)
		store_say(&s, "%" PRIu64 " problem(s)", errors);
	return errors ? RUMA_ECORRUPT : 0;
}

int ruma_btree_get_stats(ruma_btree *t, ruma_btree_stats *out)
{
	ruma_btree_get_counters(t, out);
	return bt_walk_stats(t, out);
}
