/*
 * fuzz_btree.c — libFuzzer harness for the B+-tree (btree.h) on the buffer
 * manager (bm.h), against a sorted-array model (fuzz_model.h).
 *
 * Each input opens a fresh, small store: a file /tmp/ruma-fuzz-btree.<pid>
 * (removed at exit), 32 MiB virtual, 24 pages (96 KiB) of buffer pool, so
 * a tree of a few dozen pages already evicts and reads pages back.  Byte 0
 * of the input picks the buffer-manager options (wait strategy, madvise or
 * process_madvise eviction, pwrite or io_uring write-back, page-id reuse,
 * eviction batch) and whether the store is closed and reopened at the end.
 * The rest is a sequence of operations: insert, upsert, remove, lookup
 * (full buffer, existence test, too-small buffer), lookup_fn, update in
 * place, ascending and descending scans with a limit, and bulk insert /
 * remove of up to 256 keys sharing a prefix (splits, merges, root collapse).
 * Keys come from the input or are derived from a key in the tree (cut and
 * extended); values have input-chosen lengths with contents from a counter.
 * Sizes outside the limits (empty key, key > 256, key + value > 1024) must
 * give -EINVAL / RUMA_ETOOBIG and change nothing.
 *
 * Checked: every return code, value and replaced flag against the model;
 * at the end ruma_btree_check passes, get_stats().entries equals the model,
 * full ascending and descending scans equal the model; with the reopen bit
 * the store is closed, reopened (fresh = false) and the tree found again
 * with the same contents and a passing check.  Deterministic (values from a
 * counter; the store is fresh per input).
 * RUMA_FUZZ_VERBOSE=1 prints the tree shape and the bm's read/write/eviction
 * counts per input.
 * Syscalls: the buffer manager's (file I/O, mmap/madvise); unlink at exit.
 */
#include "fuzz_model.h"

#include <ruma/btree.h>

#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define H "fuzz_btree"
#define MODEL_CAP 5000
#define KMAX RUMA_BTREE_MAX_KEY
#define VMAX RUMA_BTREE_MAX_VALUE

static char store_path[64];

typedef struct run {
	ruma_btree *t;
	ruma_bm *bm;
	fz_model m;
	fz_in in;
	uint64_t counter;
	uint8_t key[KMAX + 16];
	size_t len;
	uint8_t val[VMAX + 16];
	size_t vlen;
} run;

#define FAIL(r, what) fz_fail(H, what, (r)->key, (r)->len)

/* ---- keys and values ----------------------------------------------------------- */

/* Keys from the input: length byte % 40 (0 = empty), or 255 an oversized
 * key of 'K' bytes, its first 2 from the input. */
static const fz_keyspec keyspec = { .modulo = 40, .max = KMAX, .over_span = 8, .fill = 'K',
				    .head = 2 };

/* A fresh key, or one near an existing key (fz_key_next). */
static void next_key(run *r, bool derived)
{
	r->len = fz_key_next(&r->in, &r->m, &keyspec, true, derived, r->key);
}

/* A value: length from the input (255 = one byte over the entry limit). */
static void next_value(run *r)
{
	uint8_t l = fz_u8(&r->in);
	size_t room = r->len < RUMA_BTREE_MAX_ENTRY ? RUMA_BTREE_MAX_ENTRY - r->len : 0;
	if (l == 255)
		r->vlen = room + 1 > VMAX + 1 ? VMAX + 1 : room + 1;
	else
		r->vlen = (size_t)(l % 64) * (l >= 128 ? 16 : 1);
	if (r->vlen > VMAX + 1)
		r->vlen = VMAX + 1;
	uint64_t x = fz_mix(++r->counter);
	for (size_t i = 0; i < r->vlen; i++) {
		if (i % 8 == 0)
			x = fz_mix(x);
		r->val[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

/* The error the tree must give for this key/value size, 0 when it fits. */
static int size_error(const run *r, bool with_value)
{
	if (r->len == 0)
		return -EINVAL;
	if (r->len > KMAX)
		return RUMA_ETOOBIG;
	if (with_value && (r->vlen > VMAX || r->len + r->vlen > RUMA_BTREE_MAX_ENTRY))
		return RUMA_ETOOBIG;
	return 0;
}

static bool key_ok(const run *r)
{
	return r->len >= 1 && r->len <= KMAX;
}

/* ---- point operations ---------------------------------------------------------------- */

static void op_insert(run *r, bool upsert)
{
	int want = size_error(r, true);
	fz_entry *e = want ? NULL : fz_find(&r->m, r->key, r->len);
	bool replaced = !e;
	int rc;

	if (!want && !e && r->m.n >= MODEL_CAP)
		return;
	if (upsert)
		rc = ruma_btree_upsert(r->t, r->key, r->len, r->val, r->vlen, &replaced);
	else
		rc = ruma_btree_insert(r->t, r->key, r->len, r->val, r->vlen);
	if (want) {
		if (rc != want)
			FAIL(r, "a key/value outside the limits gives the wrong error");
		return;
	}
	if (!upsert && e) {
		if (rc != RUMA_EEXISTS)
			FAIL(r, "insert of a present key is not RUMA_EEXISTS");
		return;
	}
	if (rc != 0)
		FAIL(r, upsert ? "upsert failed" : "insert failed");
	if (upsert && replaced != (e != NULL))
		FAIL(r, "upsert: replaced flag");
	fz_put(&r->m, r->key, r->len, 0, r->val, r->vlen);
}

static void op_remove(run *r)
{
	fz_entry *e = key_ok(r) ? fz_find(&r->m, r->key, r->len) : NULL;
	int rc = ruma_btree_remove(r->t, r->key, r->len);

	if (!key_ok(r)) {
		if (rc != size_error(r, false) && rc != RUMA_ENOTFOUND)
			FAIL(r, "remove of a key outside the limits gives the wrong error");
		return;
	}
	if (e ? rc != 0 : rc != RUMA_ENOTFOUND)
		FAIL(r, e ? "remove of a present key" : "remove of an absent key is not ENOTFOUND");
	if (e)
		fz_del(&r->m, r->key, r->len);
}

static void op_lookup(run *r, uint8_t how)
{
	static uint8_t buf[VMAX + 16];
	fz_entry *e = key_ok(r) ? fz_find(&r->m, r->key, r->len) : NULL;
	size_t vlen = 12345, cap = sizeof(buf);
	int rc;

	if (how % 3 == 1)
		cap = 0;
	else if (how % 3 == 2 && e && e->vlen)
		cap = e->vlen - 1;
	rc = ruma_btree_lookup(r->t, r->key, r->len, cap ? buf : NULL, cap, &vlen);
	if (!key_ok(r)) {
		if (rc != size_error(r, false) && rc != RUMA_ENOTFOUND)
			FAIL(r, "lookup of a key outside the limits");
		return;
	}
	if (!e) {
		if (rc != RUMA_ENOTFOUND)
			FAIL(r, "lookup of an absent key is not ENOTFOUND");
		return;
	}
	if (cap < e->vlen) {
		if (rc != -ENOBUFS || vlen != e->vlen)
			FAIL(r, "lookup into a small buffer is not -ENOBUFS with the length");
		return;
	}
	if (rc != 0 || vlen != e->vlen || (vlen && memcmp(buf, e->val, vlen)))
		FAIL(r, "lookup of a present key gives a wrong value");
}

typedef struct fn_ctx {
	const fz_entry *e;
	int calls;
	bool same;
} fn_ctx;

static void value_fn(const void *val, size_t vlen, void *arg)
{
	fn_ctx *c = arg;
	c->calls++;
	c->same = c->e && vlen == c->e->vlen && (!vlen || !memcmp(val, c->e->val, vlen));
}

static void op_lookup_fn(run *r)
{
	if (!key_ok(r))
		return;
	fn_ctx c = { .e = fz_find(&r->m, r->key, r->len) };
	int rc = ruma_btree_lookup_fn(r->t, r->key, r->len, value_fn, &c);
	if (c.e ? (rc != 0 || c.calls != 1 || !c.same) : (rc != RUMA_ENOTFOUND || c.calls != 0))
		FAIL(r, "lookup_fn");
}

static void update_fn(void *val, size_t vlen, void *arg)
{
	fn_ctx *c = arg;
	uint8_t *v = val;
	c->calls++;
	c->same = c->e && vlen == c->e->vlen && (!vlen || !memcmp(val, c->e->val, vlen));
	for (size_t i = 0; i < vlen; i++)
		v[i] = (uint8_t)(v[i] ^ 0x5a ^ (uint8_t)i);
}

static void op_update(run *r)
{
	if (!key_ok(r))
		return;
	fn_ctx c = { .e = fz_find(&r->m, r->key, r->len) };
	int rc = ruma_btree_update(r->t, r->key, r->len, update_fn, &c);
	if (c.e ? (rc != 0 || c.calls != 1 || !c.same) : (rc != RUMA_ENOTFOUND || c.calls != 0))
		FAIL(r, "update: not called once on the stored value");
	if (c.e)
		for (size_t i = 0; i < c.e->vlen; i++)
			c.e->val[i] = (uint8_t)(c.e->val[i] ^ 0x5a ^ (uint8_t)i);
}

/* ---- scans ---------------------------------------------------------------------------- */

typedef struct scan_ctx {
	const fz_model *m;
	size_t next; /* model index of the next expected entry */
	size_t seen, limit;
	bool desc, bad;
} scan_ctx;

static bool scan_cb(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	scan_ctx *c = arg;
	if (c->next >= c->m->n) { /* also catches a descending scan running below index 0 */
		c->bad = true;
		return false;
	}
	const fz_entry *e = &c->m->e[c->next];
	if (fz_keycmp(e->key, e->len, key, klen) || e->vlen != vlen ||
	    (vlen && memcmp(val, e->val, vlen))) {
		c->bad = true;
		return false;
	}
	c->seen++;
	c->next = c->desc ? c->next - 1 : c->next + 1; /* wraps to SIZE_MAX below 0 */
	return !(c->limit && c->seen == c->limit);
}

static void op_scan(run *r, bool desc, size_t limit, bool from_end)
{
	size_t slen = from_end ? 0 : r->len, start;
	if (slen > KMAX) {
		scan_ctx none = { .m = &r->m, .next = r->m.n };
		int rc = desc ? ruma_btree_scan_desc(r->t, r->key, slen, scan_cb, &none)
			      : ruma_btree_scan_asc(r->t, r->key, slen, scan_cb, &none);
		if (rc != RUMA_ETOOBIG && rc != -EINVAL)
			FAIL(r, "scan with an oversized start key");
		return;
	}
	size_t lb = fz_lower_bound(&r->m, r->key, slen);
	if (!desc)
		start = slen ? lb : 0;
	else if (!slen)
		start = r->m.n - 1;
	else if (lb < r->m.n && !fz_keycmp(r->m.e[lb].key, r->m.e[lb].len, r->key, slen))
		start = lb;
	else
		start = lb - 1;
	size_t avail = desc ? start + 1 : r->m.n - start; /* start + 1 wraps to 0 for none */
	scan_ctx c = { .m = &r->m, .next = start, .limit = limit, .desc = desc };
	int rc = desc ? ruma_btree_scan_desc(r->t, r->key, slen, scan_cb, &c)
		      : ruma_btree_scan_asc(r->t, r->key, slen, scan_cb, &c);
	if (rc != 0 || c.bad)
		FAIL(r, desc ? "descending scan differs from the model" : "ascending scan differs");
	size_t want = limit && limit < avail ? limit : avail;
	if (c.seen != want)
		FAIL(r, desc ? "descending scan: wrong number of entries" : "ascending scan: count");
}

/* ---- bulk operations --------------------------------------------------------------------- */

static void op_bulk(run *r, bool insert)
{
	uint8_t prefix[48];
	size_t plen;

	uint8_t how = fz_u8(&r->in);
	unsigned first = 0;
	/* a range starting at a key in the tree: its last two bytes are the counter */
	if (!((how & 1) && fz_bulk_from_model(&r->in, &r->m, 2, 40, prefix, &plen, &first))) {
		next_key(r, how & 2);
		plen = r->len > 40 ? 40 : r->len;
		memcpy(prefix, r->key, plen);
		first = fz_u16(&r->in);
	}
	unsigned count = 1u + fz_u8(&r->in), step = 1u + fz_u8(&r->in) % 7;
	uint8_t vb = fz_u8(&r->in);
	for (unsigned i = 0; i < count; i++) {
		r->len = fz_bulk_key(r->key, prefix, plen, first + i * step, 2);
		if (insert) {
			fz_in save = r->in; /* value length from vb, not from the input */
			r->in = (fz_in){ &vb, 1 };
			next_value(r);
			r->in = save;
			op_insert(r, vb & 1);
		} else {
			op_remove(r);
		}
	}
}

/* ---- whole-tree checks ------------------------------------------------------------------ */

static void check_tree(run *r, const char *when)
{
	ruma_btree_stats st;
	if (ruma_btree_check(r->t, stderr) != 0) {
		fprintf(stderr, "%s: ruma_btree_check failed %s\n", H, when);
		abort();
	}
	if (ruma_btree_get_stats(r->t, &st) != 0 || st.entries != r->m.n)
		fz_fail(H, "stats.entries differs from the model", NULL, 0);
	r->len = 0;
	op_scan(r, false, 0, true);
	op_scan(r, true, 0, true);
}

static int open_store(run *r, uint8_t setup, bool fresh)
{
	ruma_bm_config c;
	ruma_bm_config_default(&c);
	c.path = store_path;
	c.virt_bytes = 32u << 20;
	c.phys_bytes = 24u * RUMA_BM_PAGE_SIZE;
	c.batch = 1u + (setup >> 5);
	c.max_threads = 2;
	c.wait = (ruma_bm_wait)(setup & 3);
	c.evict = (setup & 4) ? RUMA_BM_EVICT_PROCESS_MADVISE : RUMA_BM_EVICT_MADVISE;
	c.write = (setup & 8) ? RUMA_BM_WRITE_URING : RUMA_BM_WRITE_PWRITE;
	c.reuse_pages = !(setup & 16);
	c.fresh = fresh;
	return ruma_bm_open(&c, &r->bm);
}

static void remove_store(void)
{
	if (store_path[0])
		unlink(store_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(store_path, sizeof(store_path), "/tmp/ruma-fuzz-btree.%d", (int)getpid());
	atexit(remove_store);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static run r;
	if (size < 2)
		return 0;
	memset(&r, 0, sizeof(r));
	uint8_t setup = data[0], flags = data[1];
	r.in = (fz_in){ data + 2, size - 2 };
	if (open_store(&r, setup, true) != 0)
		fz_fail(H, "ruma_bm_open of a fresh store failed", NULL, 0);
	if (ruma_btree_create(r.bm, "fuzz", &r.t) != 0)
		fz_fail(H, "ruma_btree_create failed", NULL, 0);

	while (!fz_empty(&r.in)) {
		uint8_t op = fz_u8(&r.in);
		if (op % 12 <= 7 || op % 12 == 11) /* the operations on one key draw it first */
			next_key(&r, op & 0x80);
		switch (op % 12) {
		case 0: case 1: case 2:
			next_value(&r);
			op_insert(&r, op % 12 == 2);
			break;
		case 3:
			op_remove(&r);
			break;
		case 4:
			op_lookup(&r, fz_u8(&r.in));
			break;
		case 5:
			op_lookup_fn(&r);
			break;
		case 6:
			op_update(&r);
			break;
		case 7: {
			uint8_t how = fz_u8(&r.in);
			op_scan(&r, how & 1, (how >> 1) % 24, (how & 0x40) != 0);
			break;
		}
		case 8:
			op_bulk(&r, true);
			break;
		case 9:
			op_bulk(&r, false);
			break;
		case 10:
			check_tree(&r, "in the middle");
			break;
		default:
			op_lookup(&r, 0);
			break;
		}
	}
	check_tree(&r, "at the end");
	if (getenv("RUMA_FUZZ_VERBOSE")) {
		ruma_bm_stats bs;
		ruma_btree_stats ts;
		ruma_bm_get_stats(r.bm, &bs);
		ruma_btree_get_stats(r.t, &ts);
		fprintf(stderr, "%s: %" PRIu64 " entries, height %u, %" PRIu64 " leaves; bm: %" PRIu64
			" reads, %" PRIu64 " writes, %" PRIu64 " evictions, %" PRIu64
			" pages freed by merges\n",
			H, ts.entries, ts.height, ts.leaf_nodes, bs.reads, bs.writes, bs.evictions,
			ts.pages_freed);
	}
	ruma_btree_release(r.t);
	int rc = ruma_bm_close(r.bm);
	if (rc != 0)
		fz_fail(H, "ruma_bm_close failed", NULL, 0);
	if (flags & 1) {
		if (open_store(&r, setup, false) != 0)
			fz_fail(H, "reopening the store failed", NULL, 0);
		if (ruma_btree_open(r.bm, "fuzz", &r.t) != 0)
			fz_fail(H, "the tree is not found after reopening", NULL, 0);
		check_tree(&r, "after reopening");
		ruma_btree_release(r.t);
		if (ruma_bm_close(r.bm) != 0)
			fz_fail(H, "ruma_bm_close after reopening failed", NULL, 0);
	}
	fz_model_free(&r.m);
	return 0;
}
