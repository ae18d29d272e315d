/*
 * fuzz_art.c — libFuzzer harness for the Adaptive Radix Tree (art.h) against
 * a sorted-array model (fuzz_model.h).
 *
 * Input: byte 0 picks the set-up (bit 0: allocator pool or huge (THP/4 KiB
 * source, no explicit huge pages); bit 1: byte-string or TID mode; bit 2:
 * delete every key before destroying; bit 7 with bit 1: u64 mode, whose
 * fast path ruma_art_u64_* then alternates with the general calls on the
 * same tree, and lookups ask both).  The rest is a sequence of operations
 * — insert, delete, lookup, lower-bound scan with a limit, bulk insert and
 * bulk delete of up to 256 keys sharing a prefix (to grow nodes to Node256
 * and shrink them again), each with keys taken from the input or derived
 * from a key already in the tree (truncated and extended, so prefixes are
 * shared and split).  Keys include 0x00 bytes, the empty key, proper
 * prefixes of other keys, and keys over RUMA_ART_MAX_KEY.
 *
 * Checked after every operation: return code, the replaced flag and old
 * values against the model; ruma_art_size and stats.keys.  At the end: a
 * full iteration equals the model, an early stop of the visitor propagates
 * its value, every key is found; with bit 2 every key is deleted and the
 * node/leaf statistics must be zero; after ruma_art_destroy the allocator
 * must report 0 live bytes (nothing leaked through the allocator).
 * Any mismatch aborts with the key printed.  Deterministic: values come from
 * a counter.  Syscalls: only the allocator's mmap/munmap.
 */
#include "fuzz_model.h"

#include <ruma/art.h>

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define H "fuzz_art"
#define MODEL_CAP 6000 /* bounds the quadratic model */
#define BIG_KEY (RUMA_ART_MAX_KEY + 3)

typedef struct run {
	ruma_art *t;
	fz_model m;
	fz_in in;
	bool tid;
	bool u64; /* RUMA_ART_U64 (tid is set too) */
	uint64_t counter;
	uint8_t key[BIG_KEY];
	size_t len;
} run;

#define FAIL(r, what) fz_fail(H, what, (r)->key, (r)->len)

/* In TID mode every key is 8 bytes: the big-endian TID. */
static void tid_normalize(run *r)
{
	if (r->len != 8) {
		if (r->len < 8)
			memset(r->key + r->len, 0, 8 - r->len);
		r->len = 8;
	}
}

static uint64_t tid_of(const uint8_t k[8])
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | k[i];
	return v;
}

/* Keys from the input: length byte % 24, or 255 (not in TID mode) an
 * oversized key of 'k' bytes, its first 4 from the input. */
static const fz_keyspec keyspec = { .modulo = 24, .max = RUMA_ART_MAX_KEY, .over_span = 2,
				    .fill = 'k', .head = 4 };

/* A fresh key, or one near an existing key (fz_key_next); TID-normalized. */
static void next_key(run *r, bool derived)
{
	r->len = fz_key_next(&r->in, &r->m, &keyspec, !r->tid, derived, r->key);
	if (r->tid)
		tid_normalize(r);
}

static void op_insert(run *r)
{
	bool replaced = true;
	uint64_t v = fz_mix(++r->counter);
	int rc;

	if (r->tid) {
		uint64_t tid = tid_of(r->key);
		if (tid > RUMA_ART_MAX_TID) {
			rc = ruma_art_insert_tid(r->t, tid, &replaced);
			if (rc != RUMA_ETOOBIG)
				FAIL(r, "insert_tid of a TID above the maximum is not RUMA_ETOOBIG");
			return;
		}
		if (!fz_find(&r->m, r->key, 8) && r->m.n >= MODEL_CAP)
			return;
		if (r->u64 && (r->counter & 2)) {
			rc = ruma_art_u64_insert(r->t, tid);
			replaced = rc == 1;
			rc = rc == 1 ? 0 : rc;
		} else if (r->counter & 1)
			rc = ruma_art_insert_tid(r->t, tid, &replaced);
		else
			rc = ruma_art_insert(r->t, r->key, 8, tid, &replaced);
		v = tid;
	} else {
		if (r->len > RUMA_ART_MAX_KEY) {
			rc = ruma_art_insert(r->t, r->key, r->len, v, &replaced);
			if (rc != RUMA_ETOOBIG)
				FAIL(r, "insert of an oversized key is not RUMA_ETOOBIG");
			return;
		}
		if (!fz_find(&r->m, r->key, r->len) && r->m.n >= MODEL_CAP)
			return;
		rc = ruma_art_insert(r->t, r->key, r->len, v, &replaced);
	}
	if (rc != 0)
		FAIL(r, "insert failed");
	if (replaced != fz_put(&r->m, r->key, r->len, v, NULL, 0))
		FAIL(r, "insert: replaced flag");
}

static void op_delete(run *r)
{
	uint64_t old = 0;
	fz_entry *e = r->len <= RUMA_ART_MAX_KEY ? fz_find(&r->m, r->key, r->len) : NULL;
	uint64_t want = e ? e->v : 0;
	int rc;

	if (r->u64 && (++r->counter & 1)) {
		rc = ruma_art_u64_delete(r->t, tid_of(r->key));
		old = want;
	} else {
		rc = ruma_art_delete(r->t, r->key, r->len, &old);
	}

	if (e) {
		if (rc != 0 || old != want)
			FAIL(r, "delete of a present key");
		fz_del(&r->m, r->key, r->len);
	} else if (rc != RUMA_ENOTFOUND) {
		FAIL(r, "delete of an absent key is not RUMA_ENOTFOUND");
	}
}

static void op_lookup(run *r)
{
	uint64_t v = 0;
	fz_entry *e = r->len <= RUMA_ART_MAX_KEY ? fz_find(&r->m, r->key, r->len) : NULL;
	int rc = ruma_art_lookup(r->t, r->key, r->len, &v);

	if (e ? (rc != 0 || v != e->v) : rc != RUMA_ENOTFOUND)
		FAIL(r, e ? "lookup of a present key" : "lookup of an absent key");
	if (r->tid && ruma_art_lookup(r->t, r->key, 7, NULL) != RUMA_ENOTFOUND)
		FAIL(r, "TID mode: lookup of a 7-byte key found something");
	if (r->u64 && ruma_art_u64_lookup(r->t, tid_of(r->key)) != (e ? 0 : RUMA_ENOTFOUND))
		FAIL(r, e ? "u64 lookup of a present key" : "u64 lookup of an absent key");
}

/* ---- scans and iteration -------------------------------------------------------- */

typedef struct scan_ctx {
	run *r;
	size_t next, seen, limit;
	int stop_value;
} scan_ctx;

static int visit(const uint8_t *key, size_t len, uint64_t value, void *arg)
{
	scan_ctx *c = arg;
	const fz_model *m = &c->r->m;

	if (c->next >= m->n)
		fz_fail(H, "scan visits a key past the model's last", key, len);
	const fz_entry *e = &m->e[c->next];
	if (fz_keycmp(e->key, e->len, key, len) != 0)
		fz_fail(H, "scan visits a key other than the model's next", key, len);
	if (e->v != value)
		fz_fail(H, "scan reports a wrong value", key, len);
	c->next++;
	c->seen++;
	return c->seen == c->limit ? c->stop_value : 0;
}

/* Scan from start (r->key) with a limit; compare with the model. */
static void op_scan(run *r, size_t limit)
{
	size_t lb = fz_lower_bound(&r->m, r->key, r->len);
	scan_ctx c = { .r = r, .next = lb, .limit = limit, .stop_value = 3 + (int)(limit % 5) };
	int rc = ruma_art_scan(r->t, r->key, r->len, visit, &c);
	size_t avail = r->m.n - lb;

	if (limit && avail >= limit) {
		if (rc != c.stop_value || c.seen != limit)
			FAIL(r, "scan stopped by the visitor: wrong count or return value");
	} else if (rc != 0 || c.seen != avail) {
		FAIL(r, "scan to the end: missed keys or wrong return value");
	}
}

static void check_all(run *r)
{
	scan_ctx c = { .r = r, .limit = 0 };
	if (ruma_art_iterate(r->t, visit, &c) != 0 || c.seen != r->m.n)
		fz_fail(H, "iteration differs from the model", NULL, 0);
	if (r->m.n) {
		scan_ctx s = { .r = r, .limit = (r->m.n + 1) / 2, .stop_value = -7 };
		if (ruma_art_iterate(r->t, visit, &s) != -7 || s.seen != (r->m.n + 1) / 2)
			fz_fail(H, "iteration stopped by the visitor", NULL, 0);
	}
	for (size_t i = 0; i < r->m.n; i++) {
		uint64_t v = 0;
		if (ruma_art_lookup(r->t, r->m.e[i].key, r->m.e[i].len, &v) != 0 ||
		    v != r->m.e[i].v)
			fz_fail(H, "a model key is not found", r->m.e[i].key, r->m.e[i].len);
	}
}

static void check_size(run *r)
{
	ruma_art_stats st;
	ruma_art_get_stats(r->t, &st);
	if (ruma_art_size(r->t) != r->m.n || st.keys != r->m.n)
		fz_fail(H, "size or stats.keys differs from the model", NULL, 0);
	if (r->m.n == 0 && (st.node4 || st.node16 || st.node48 || st.node256 || st.node_bytes ||
			    st.leaf_bytes))
		fz_fail(H, "empty tree with nodes or leaves in its statistics", NULL, 0);
}

/* Bulk insert/delete: prefix + one varying byte (+ a fixed tail). */
static void op_bulk(run *r, bool insert)
{
	uint8_t prefix[32];
	size_t plen;

	uint8_t how = fz_u8(&r->in);
	unsigned first;
	/* a range starting at a key in the tree: its last byte varies */
	if (!((how & 1) && fz_bulk_from_model(&r->in, &r->m, 1, 20, prefix, &plen, &first))) {
		next_key(r, how & 2);
		plen = r->len > 20 ? 20 : r->len;
		if (r->tid)
			plen = 7;
		memcpy(prefix, r->key, plen);
		first = fz_u8(&r->in);
	}
	unsigned count = 1u + fz_u8(&r->in), step = 1u + fz_u8(&r->in) % 3;
	uint8_t tail = fz_u8(&r->in);
	bool with_tail = !r->tid && (tail & 1) && !(how & 1);
	for (unsigned i = 0; i < count; i++) {
		r->len = fz_bulk_key(r->key, prefix, plen, first + i * step, 1);
		if (with_tail)
			r->key[r->len++] = tail;
		if (insert)
			op_insert(r);
		else
			op_delete(r);
	}
}

static void delete_all(run *r, uint8_t order)
{
	size_t n = r->m.n;
	for (size_t k = 0; k < n; k++) {
		/* order: 0 forward, 1 backward, else a stride through the keys */
		size_t i = (order % 3 == 0) ? 0 : (order % 3 == 1) ? r->m.n - 1 : (k * 7919) % r->m.n;
		r->len = r->m.e[i].len;
		memcpy(r->key, r->m.e[i].key, r->len);
		op_delete(r);
	}
	ruma_art_stats st;
	ruma_art_get_stats(r->t, &st);
	if (ruma_art_size(r->t) != 0 || st.keys || st.node4 || st.node16 || st.node48 ||
	    st.node256 || st.node_bytes || st.leaf_bytes)
		fz_fail(H, "statistics not zero after deleting every key", NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static run r; /* the big key buffer stays off the stack */
	ruma_alloc a;
	ruma_alloc_stats as;

	if (size < 1)
		return 0;
	memset(&r, 0, sizeof(r));
	r.in = (fz_in){ data + 1, size - 1 };
	uint8_t setup = data[0];
	r.tid = setup & 2;
	r.u64 = r.tid && (setup & 0x80);
	ruma_huge_source src = (setup & 8) ? RUMA_HUGE_SRC_4K : RUMA_HUGE_SRC_THP;
	int rc = (setup & 1) ? ruma_alloc_create_huge(src, NULL, &a)
			     : ruma_alloc_create(RUMA_ALLOC_POOL, &a);
	if (rc)
		fz_fail(H, "allocator create failed", NULL, 0);
	ruma_art_options opt = { .keys = r.u64 ? RUMA_ART_U64 : r.tid ? RUMA_ART_TID : RUMA_ART_BYTES,
				 .alloc = &a };
	if (ruma_art_create(&opt, &r.t) != 0)
		fz_fail(H, "ruma_art_create failed", NULL, 0);
	if (r.tid) {
		uint8_t k[8] = { 0 };
		if (ruma_art_insert(r.t, k, 7, 0, NULL) != -EINVAL)
			fz_fail(H, "TID mode: a 7-byte key is not -EINVAL", k, 7);
		k[7] = 1;
		if (ruma_art_insert(r.t, k, 8, 2, NULL) != -EINVAL)
			fz_fail(H, "TID mode: key != load_key(tid) is not -EINVAL", k, 8);
	}

	while (!fz_empty(&r.in)) {
		uint8_t op = fz_u8(&r.in);
		if (op % 8 <= 4) /* the operations on one key draw it first */
			next_key(&r, op & 0x80);
		switch (op % 8) {
		case 0: case 1:
			op_insert(&r);
			break;
		case 2:
			op_delete(&r);
			break;
		case 3:
			op_lookup(&r);
			break;
		case 4:
			op_scan(&r, fz_u8(&r.in) % 24);
			break;
		case 5:
			op_bulk(&r, true);
			break;
		case 6:
			op_bulk(&r, false);
			break;
		case 7:
			check_all(&r);
			break;
		}
		check_size(&r);
	}
	check_all(&r);
	if (setup & 4)
		delete_all(&r, setup >> 4);
	ruma_art_destroy(r.t);
	ruma_alloc_get_stats(&a, &as);
	if (as.bytes_live != 0)
		fz_fail(H, "allocator has live bytes after ruma_art_destroy", NULL, 0);
	ruma_alloc_destroy(&a);
	fz_model_free(&r.m);
	return 0;
}
