/*
 * txn.c — transactions: row locks (strict 2PL, no-wait), logical undo
 * (in memory for abort, in the log for crash recovery), commit.  See txn.h
 * and docs/wal.md.
 *
 * Per change: lock the row, then log an UNDO record {tree root, key, kind,
 * bytes} (first record of the transaction: its LSN becomes the transaction
 * id) and keep the same in memory, then make the change with the normal
 * B-tree operation while the thread's ruma_bm_op_end does not wait
 * (ruma_bm_op_defer).  Inserts and upserts take the undo from the leaf
 * itself, latched, right before the entry is written (bt_put's hook:
 * "absent" or the value replaced); in-place updates take it inside the
 * update callback as a patch of the bytes the caller's function changed;
 * removals look the row up first.  Either way the UNDO record is appended
 * before the leaf's change is logged (when its latch is released), so any
 * durable prefix holding the change also holds how to undo it.  Commit logs
 * COMMIT {id} and waits for it (on a SYNC store, unless RUMA_TXN_ASYNC; an
 * ASYNC store's background flusher makes it durable a few milliseconds
 * later); abort restores newest first and logs END {id}.
 * ruma_txn_commit_nowait logs COMMIT and releases the locks at once (early
 * lock release): a transaction that then sees these changes commits later
 * in the same log, so it is never durable without them; a read-only one is
 * given the log's end as the point it must wait for.
 * Restoring is idempotent (upsert the old value / write the patch's old
 * bytes / remove), so undoing again after a crash in the middle of an abort
 * or of a recovery undo is right.
 *
 * Row locks: a process-wide table of LOCK_STRIPES stripes, each a mutex and
 * a small array of (hash, owner); a row held by another owner is
 * RUMA_ECONFLICT immediately.
 *
 * Recovery undo (bt_txn_recover, called by ruma_btree_open/create): takes
 * the losers' undo records from the buffer manager (newest first), restores
 * them, logs END for each loser, flushes the log and tells the buffer manager
 * it may mark the store clean again.  One global mutex serialises it.
 *
 * No syscalls (the log's I/O is in src/wal, reached through bm.h).
 */
#include "btree/btree_int.h"

#include <ruma/txn.h>
#include <ruma/core.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define LOCK_STRIPES 256u

struct lock_stripe {
	pthread_mutex_t mu;
	struct { uint64_t h; const ruma_txn *owner; } *e;
	size_t n, cap;
};

static struct lock_stripe stripes[LOCK_STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t recover_mu = PTHREAD_MUTEX_INITIALIZER;

/* What an undo entry restores (undo_hdr.kind). */
enum undo_kind {
	UNDO_ABSENT = 0, /* the row did not exist: remove it */
	UNDO_VALUE = 1,  /* put the old value back */
	UNDO_PATCH = 2,  /* an in-place update: write old bytes back at offsets */
};

/* One undo entry in memory: the row and what restores it. */
struct undo {
	ruma_pid root;
	uint16_t klen;
	uint8_t kind;
	uint32_t vlen;  /* bytes after the key */
	size_t at;      /* in the transaction's undo bytes: key, then the old value or the patch */
};

struct ruma_txn {
	ruma_bm *bm;
	unsigned flags;
	uint64_t id; /* 0 until the first UNDO record is logged */
	uint64_t *locks;
	size_t nlocks, caplocks;
	struct undo *undo;
	size_t nundo, capundo;
	uint8_t *bytes; /* the undo entries' keys and data, back to back */
	size_t nbytes, capbytes;
};

/* Undo record payload after the id: this header, key, then the old value
 * (UNDO_VALUE) or the patch (UNDO_PATCH): a sequence of
 * { u16 off, u16 len, len old bytes }. */
struct undo_hdr {
	uint64_t root;
	uint16_t klen;
	uint8_t kind;
	uint8_t rsv;
	uint32_t vlen;
};

static void stripes_init(void)
{
	for (unsigned i = 0; i < LOCK_STRIPES; i++)
		pthread_mutex_init(&stripes[i].mu, NULL);
}

/* 64 bits of (store, tree, key): the CRC-32C of the key, and the CRC-32C of
 * the store and tree ids continued from it. */
/* One 64-bit mixing step (multiply, fold the high half down). */
static inline uint64_t mix64(uint64_t h, uint64_t w)
{
	__uint128_t m = (__uint128_t)(h ^ w) * 0x9e3779b97f4a7c15ull;
	return (uint64_t)m ^ (uint64_t)(m >> 64);
}

/* The row's lock identity: store, tree and key mixed 8 bytes at a time (a
 * collision only makes two rows share a lock: a needless conflict). */
static uint64_t row_hash(const ruma_btree *t, const void *key, size_t klen)
{
	const uint8_t *p = key;
	uint64_t h = mix64((uint64_t)(uintptr_t)t->bm, t->root ^ ((uint64_t)klen << 56));
	for (; klen >= 8; klen -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = mix64(h, w);
	}
	if (klen) {
		uint64_t w = 0;
		memcpy(&w, p, klen);
		h = mix64(h, w); /* the length is in h already */
	}
	return mix64(h, 0x2545f4914f6cdd1dull);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Lock the row exclusively for x: 0, or RUMA_ECONFLICT, -ENOMEM; -EINVAL for
 * a tree of another store than the transaction's. */
static int row_lock(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen)
{
	if (!t || t->bm != x->bm)
		return -EINVAL;
	uint64_t h = row_hash(t, key, klen);
	struct lock_stripe *s = &stripes[h % LOCK_STRIPES];
	int r = 0;
	if (grow((void **)&x->locks, &x->caplocks, x->nlocks + 1, sizeof(*x->locks)))
		return -ENOMEM;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].h == h) {
			r = s->e[i].owner == x ? 1 : RUMA_ECONFLICT;
			break;
		}
	if (r == 0) {
		if (grow((void **)&s->e, &s->cap, s->n + 1, sizeof(*s->e)))
			r = -ENOMEM;
		else {
			s->e[s->n].h = h;
			s->e[s->n].owner = x;
			s->n++;
			x->locks[x->nlocks++] = h;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return r == 1 ? 0 : r;
}

static void unlock_all(ruma_txn *x)
{
	for (size_t k = 0; k < x->nlocks; k++) {
		uint64_t h = x->locks[k];
		struct lock_stripe *s = &stripes[h % LOCK_STRIPES];
		pthread_mutex_lock(&s->mu);
		for (size_t i = 0; i < s->n; i++)
			if (s->e[i].h == h && s->e[i].owner == x) {
				s->e[i] = s->e[--s->n];
				break;
			}
		pthread_mutex_unlock(&s->mu);
	}
	x->nlocks = 0;
}

static void txn_free(ruma_txn *x)
{
	ruma_bm_txn_count(x->bm, -1);
	free(x->bytes);
	free(x->undo);
	free(x->locks);
	free(x);
}

int ruma_txn_begin(ruma_bm *bm, unsigned flags, ruma_txn **out)
{
	if (!bm || !out || (flags & ~RUMA_TXN_ASYNC))
		return -EINVAL;
	pthread_once(&stripes_once, stripes_init);
	ruma_txn *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->bm = bm;
	x->flags = flags;
	ruma_bm_txn_count(bm, 1);
	*out = x;
	return 0;
}

struct patch {
	const uint8_t *p;
	size_t len;
	int err;
};

/* Write a patch's old bytes back into the value (ruma_btree_update callback). */
static void patch_apply(void *val, size_t vlen, void *ctx)
{
	struct patch *pt = ctx;
	const uint8_t *p = pt->p, *end = pt->p + pt->len;
	while (p < end) {
		uint16_t off, len;
		if (end - p < 4) {
			pt->err = RUMA_ECORRUPT;
			return;
		}
		memcpy(&off, p, 2);
		memcpy(&len, p + 2, 2);
		p += 4;
		if ((size_t)(end - p) < len || (size_t)off + len > vlen) {
			pt->err = RUMA_ECORRUPT;
			return;
		}
		memcpy((uint8_t *)val + off, p, len);
		p += len;
	}
}

/* Restore one row (abort and recovery).  Idempotent: a patch writes the old
 * bytes whether or not the update had reached the row. */
static int restore(ruma_btree *t, const uint8_t *key, size_t klen, unsigned kind,
		   const uint8_t *val, size_t vlen)
{
	if (kind == UNDO_VALUE)
		return ruma_btree_upsert(t, key, klen, val, vlen, NULL);
	if (kind == UNDO_PATCH) {
		struct patch pt = { val, vlen, 0 };
		int r = ruma_btree_update(t, key, klen, patch_apply, &pt);
		return r ? r : pt.err;
	}
	int r = ruma_btree_remove(t, key, klen);
	return r == RUMA_ENOTFOUND ? 0 : r;
}

/* Log (with a log) and keep one undo entry: kind, then `len` bytes of old
 * value or patch.  The entry is built once in the transaction's undo bytes
 * as the whole record payload (id, header, key, data); the undo entry
 * points at its key. */
static int record_undo(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen,
		       unsigned kind, const uint8_t *data, size_t len)
{
	const size_t head = 8 + sizeof(struct undo_hdr);
	if (grow((void **)&x->undo, &x->capundo, x->nundo + 1, sizeof(*x->undo)) ||
	    grow((void **)&x->bytes, &x->capbytes, x->nbytes + head + klen + len, 1))
		return -ENOMEM;
	uint8_t *rec = x->bytes + x->nbytes;
	struct undo_hdr h = { t->root, (uint16_t)klen, (uint8_t)kind, 0, (uint32_t)len };
	memcpy(rec, &x->id, 8);
	memcpy(rec + 8, &h, sizeof(h));
	memcpy(rec + head, key, klen);
	if (len) /* "absent" has no data (NULL) */
		memcpy(rec + head + klen, data, len);
	if (ruma_bm_logging(x->bm)) {
		uint64_t lsn;
		int r = ruma_bm_log(x->bm, RUMA_BM_LOG_UNDO, rec, head + klen + len, &lsn, NULL);
		if (r)
			return r;
		if (!x->id)
			x->id = lsn;
	}
	x->undo[x->nundo++] = (struct undo){ t->root, (uint16_t)klen, (uint8_t)kind, (uint32_t)len,
					     x->nbytes + head };
	x->nbytes += head + klen + len;
	return 0;
}

static int lock_key(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen)
{
	if (klen == 0 || klen > RUMA_BTREE_MAX_KEY)
		return klen ? RUMA_ETOOBIG : -EINVAL;
	return row_lock(x, t, key, klen);
}

/* Lock the row, take its before-image, log and keep the undo entry. */
static int prepare_change(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			  bool *present)
{
	uint8_t old[RUMA_BTREE_MAX_VALUE];
	size_t vlen = 0;
	int r = lock_key(x, t, key, klen);
	if (r)
		return r;
	r = ruma_btree_lookup(t, key, klen, old, sizeof(old), &vlen);
	if (r && r != RUMA_ENOTFOUND)
		return r;
	*present = r == 0;
	return record_undo(x, t, key, klen, *present ? UNDO_VALUE : UNDO_ABSENT, old,
			   *present ? vlen : 0);
}

/* An in-place update inside a transaction: the B-tree calls this with the
 * row latched; it runs the caller's function on the value and logs, before
 * the page change can be logged, a patch of the bytes it changed (no
 * separate lookup for the before-image). */
struct capture {
	ruma_txn *x;
	const ruma_btree *t;
	const void *key;
	size_t klen;
	void (*fn)(void *val, size_t vlen, void *ctx);
	void *ctx;
	int err;
};

/* Whether the 8-byte words (the last one possibly shorter) at i differ. */
static bool word_differs(const uint8_t *a, const uint8_t *b, size_t i, size_t n)
{
	if (n - i >= 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		return x != y;
	}
	return memcmp(a + i, b + i, n - i) != 0;
}

/* The first multiple of 8 at or after i (itself a multiple of 8) where the
 * words of a and b differ, or n or more: 16 bytes per step with SSE2. */
static size_t next_differing_word(const uint8_t *a, const uint8_t *b, size_t i, size_t n)
{
#ifdef __SSE2__
	for (; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(a + i));
		__m128i y = _mm_loadu_si128((const __m128i *)(b + i));
		unsigned eq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y));
		if (eq != 0xffffu)
			return (eq & 0xffu) != 0xffu ? i : i + 8;
	}
#endif
	for (; i < n; i += 8)
		if (word_differs(a, b, i, n))
			return i;
	return n;
}

/* The changed ranges of now against old, in 8-byte words (ranges closer
 * than 16 bytes merged), as a patch of old bytes; returns its length.  Each
 * range is also named for the page's redo record (ruma_bm_wrote). */
static size_t make_patch(const uint8_t *old, uint8_t *now, size_t n, uint8_t *out)
{
	size_t o = 0;
	for (size_t i = next_differing_word(old, now, 0, n); i < n;
	     i = next_differing_word(old, now, i, n)) {
		size_t start = i, last = RUMA_MIN(i + 8, n);
		for (i += 8; i < n && i - last < 16; i += 8)
			if (word_differs(old, now, i, n))
				last = RUMA_MIN(i + 8, n);
		uint16_t off = (uint16_t)start, len = (uint16_t)(last - start);
		ruma_bm_wrote(now + start, len);
		memcpy(out + o, &off, 2);
		memcpy(out + o + 2, &len, 2);
		memcpy(out + o + 4, old + start, len);
		o += 4u + len;
		i = last;
	}
	return o;
}

static void capture_update(void *val, size_t vlen, void *ctx)
{
	struct capture *c = ctx;
	uint8_t old[RUMA_BTREE_MAX_VALUE], patch[RUMA_BTREE_MAX_VALUE * 2 + 4];
	memcpy(old, val, vlen);
	c->fn(val, vlen, c->ctx);
	size_t n = make_patch(old, val, vlen, patch);
	bool small = n < vlen;
	c->err = record_undo(c->x, c->t, c->key, c->klen, small ? UNDO_PATCH : UNDO_VALUE,
			     small ? patch : old, small ? n : vlen);
	if (c->err)
		memcpy(val, old, vlen); /* no undo: no change */
}

static int txn_update(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
		      void (*fn)(void *val, size_t vlen, void *ctx), void *ctx)
{
	int r = lock_key(x, t, key, klen);
	if (r)
		return r;
	struct capture c = { x, t, key, klen, fn, ctx, 0 };
	ruma_bm_op_defer(x->bm, true);
	r = bt_update(t, key, klen, capture_update, &c, true);
	ruma_bm_op_defer(x->bm, false);
	return r ? r : c.err;
}

/* An insert or upsert inside a transaction: the B-tree calls this with the
 * leaf latched, right before it writes the entry, so the undo (absent, or
 * the value replaced) comes from the leaf itself, with no lookup first. */
struct put_capture {
	ruma_txn *x;
	const ruma_btree *t;
	const void *key;
	size_t klen;
};

static int capture_put(void *ctx, bool found, const void *old, size_t old_len)
{
	struct put_capture *c = ctx;
	return record_undo(c->x, c->t, c->key, c->klen, found ? UNDO_VALUE : UNDO_ABSENT, old,
			   found ? old_len : 0);
}

static int txn_put(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		   size_t vlen, bool insert_only)
{
	int r = lock_key(x, t, key, klen);
	if (r)
		return r;
	struct put_capture c = { x, t, key, klen };
	ruma_bm_op_defer(x->bm, true);
	r = bt_put(t, key, klen, val, vlen, insert_only, capture_put, &c);
	ruma_bm_op_defer(x->bm, false);
	return r;
}

int ruma_txn_insert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	if (!x)
		return ruma_btree_insert(t, key, klen, val, vlen);
	return txn_put(x, t, key, klen, val, vlen, true);
}

int ruma_txn_upsert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	if (!x)
		return ruma_btree_upsert(t, key, klen, val, vlen, NULL);
	return txn_put(x, t, key, klen, val, vlen, false);
}

int ruma_txn_update(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
		    void (*fn)(void *val, size_t vlen, void *ctx), void *ctx)
{
	if (!x)
		return ruma_btree_update(t, key, klen, fn, ctx);
	if (!fn)
		return -EINVAL;
	return txn_update(x, t, key, klen, fn, ctx);
}

int ruma_txn_remove(ruma_txn *x, ruma_btree *t, const void *key, size_t klen)
{
	if (!x)
		return ruma_btree_remove(t, key, klen);
	bool present = false;
	int r = prepare_change(x, t, key, klen, &present);
	if (r || !present)
		return r ? r : RUMA_ENOTFOUND; /* unchanged; the undo is a no-op */
	ruma_bm_op_defer(x->bm, true);
	r = ruma_btree_remove(t, key, klen);
	ruma_bm_op_defer(x->bm, false);
	return r;
}

int ruma_txn_lookup(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, void *buf,
		    size_t cap, size_t *vlen)
{
	if (x) {
		if (klen == 0 || klen > RUMA_BTREE_MAX_KEY)
			return klen ? RUMA_ETOOBIG : -EINVAL;
		int r = row_lock(x, t, key, klen);
		if (r)
			return r;
	}
	return ruma_btree_lookup(t, key, klen, buf, cap, vlen);
}

static int log_id(ruma_bm *bm, uint16_t type, uint64_t id, uint64_t *end)
{
	return ruma_bm_log(bm, type, &id, sizeof(id), NULL, end);
}

int ruma_txn_commit(ruma_txn *x)
{
	if (!x)
		return -EINVAL;
	int r = 0;
	if (x->id) {
		uint64_t end = 0;
		r = log_id(x->bm, RUMA_BM_LOG_COMMIT, x->id, &end);
		if (!r && !(x->flags & RUMA_TXN_ASYNC) &&
		    ruma_bm_durability_of(x->bm) == RUMA_BM_DURABLE_SYNC)
			r = ruma_bm_log_flush(x->bm, end);
	}
	unlock_all(x);
	txn_free(x);
	return r;
}

int ruma_txn_commit_nowait(ruma_txn *x, uint64_t *durable_at)
{
	if (!x || !durable_at)
		return -EINVAL;
	int r = 0;
	uint64_t end = 0;
	if (x->id)
		r = log_id(x->bm, RUMA_BM_LOG_COMMIT, x->id, &end);
	else
		end = ruma_bm_log_end(x->bm); /* what it read may not be durable yet */
	if (!r && end && ruma_bm_logging(x->bm))
		r = ruma_bm_log_request(x->bm, end);
	*durable_at = end;
	unlock_all(x);
	txn_free(x);
	return r;
}

int ruma_txn_abort(ruma_txn *x)
{
	if (!x)
		return -EINVAL;
	int err = 0;
	ruma_btree t = { .bm = x->bm };
	ruma_bm_op_defer(x->bm, true);
	for (size_t i = x->nundo; i-- > 0;) {
		struct undo *u = &x->undo[i];
		t.root = u->root;
		const uint8_t *b = x->bytes + u->at;
		int r = restore(&t, b, u->klen, u->kind, b + u->klen, u->vlen);
		err = err ? err : r;
	}
	ruma_bm_op_defer(x->bm, false);
	if (!err && x->id) {
		uint64_t end;
		err = log_id(x->bm, RUMA_BM_LOG_END, x->id, &end);
	}
	unlock_all(x);
	txn_free(x);
	return err;
}

/* Undo the transactions a crash cut off (see the file comment). */
int bt_txn_recover(ruma_bm *bm)
{
	ruma_bm_undo *list;
	size_t n;
	int err = 0;
	pthread_mutex_lock(&recover_mu);
	ruma_bm_undo_take(bm, &list, &n);
	ruma_btree t = { .bm = bm };
	for (size_t i = 0; i < n && !err; i++) {
		struct undo_hdr h;
		const uint8_t *p = list[i].payload;
		if (list[i].len < sizeof(h)) {
			err = RUMA_ECORRUPT;
			break;
		}
		memcpy(&h, p, sizeof(h));
		if (list[i].len != sizeof(h) + h.klen + h.vlen || h.klen == 0 || h.kind > UNDO_PATCH) {
			err = RUMA_ECORRUPT;
			break;
		}
		t.root = h.root;
		err = restore(&t, p + sizeof(h), h.klen, h.kind, p + sizeof(h) + h.klen, h.vlen);
	}
	uint64_t end = 0;
	for (size_t i = 0; i < n && !err; i++) {
		bool first = true;
		for (size_t k = 0; k < i && first; k++)
			first = list[k].txn != list[i].txn;
		if (first)
			err = log_id(bm, RUMA_BM_LOG_END, list[i].txn, &end);
	}
	if (!err && end)
		err = ruma_bm_log_flush(bm, end);
	if (!err && n)
		ruma_bm_undo_done(bm);
	ruma_bm_undo_free(list, n);
	pthread_mutex_unlock(&recover_mu);
	return err;
}
