/*
 * txn.c — transactions: row locks (strict 2PL, no-wait), logical undo
 * (in memory for abort, in the log for crash recovery), commit.  See txn.h
 * and docs/wal.md.
 *
 * Per change: lock the row, read its current value (the before-image), log
 * an UNDO record {tree root, key, before-image or absent} (first record of
 * the transaction: its LSN becomes the transaction id), keep the same in
 * memory, then make the change with the normal B-tree operation while the
 * thread's ruma_bm_op_end does not wait (ruma_bm_op_defer).  The UNDO record
 * precedes the change's redo in the log, so any durable prefix holding the
 * change also holds how to undo it.  Commit logs COMMIT {id} and waits for
 * it (on a SYNC store, unless RUMA_TXN_ASYNC; an ASYNC store's background
 * flusher makes it durable a few milliseconds later); abort restores the before-images newest first and logs END {id}.
 * ruma_txn_commit_nowait logs COMMIT and releases the locks at once (early
 * lock release): a transaction that then sees these changes commits later
 * in the same log, so it is never durable without them; a read-only one is
 * given the log's end as the point it must wait for.
 * Restoring is idempotent (upsert the old value / remove), so undoing again
 * after a crash in the middle of an abort or of a recovery undo is right.
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

#define LOCK_STRIPES 256u

struct lock_stripe {
	pthread_mutex_t mu;
	struct { uint64_t h; const ruma_txn *owner; } *e;
	size_t n, cap;
};

static struct lock_stripe stripes[LOCK_STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t recover_mu = PTHREAD_MUTEX_INITIALIZER;

/* One undo entry in memory: the row and its before-image. */
struct undo {
	ruma_pid root;
	uint16_t klen;
	bool present;
	uint32_t vlen;
	uint8_t *bytes; /* key, then the old value */
};

struct ruma_txn {
	ruma_bm *bm;
	unsigned flags;
	uint64_t id; /* 0 until the first UNDO record is logged */
	uint64_t *locks;
	size_t nlocks, caplocks;
	struct undo *undo;
	size_t nundo, capundo;
};

/* Undo record payload after the id: this header, key, old value. */
struct undo_hdr {
	uint64_t root;
	uint16_t klen;
	uint8_t present;
	uint8_t rsv;
	uint32_t vlen;
};

static void stripes_init(void)
{
	for (unsigned i = 0; i < LOCK_STRIPES; i++)
		pthread_mutex_init(&stripes[i].mu, NULL);
}

static uint64_t row_hash(const ruma_btree *t, const void *key, size_t klen)
{
	uint64_t ids[2] = { (uint64_t)(uintptr_t)t->bm, t->root };
	uint32_t a = ruma_crc32c(ruma_crc32c(0x9e3779b9u, ids, sizeof(ids)), key, klen);
	uint32_t b = ruma_crc32c(ruma_crc32c(0x85ebca6bu, key, klen), ids, sizeof(ids));
	return ((uint64_t)a << 32) | b;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Lock the row exclusively for x: 0, or RUMA_ECONFLICT, -ENOMEM. */
static int row_lock(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen)
{
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
	for (size_t i = 0; i < x->nundo; i++)
		free(x->undo[i].bytes);
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
	*out = x;
	return 0;
}

/* Restore one row to its before-image (abort and recovery). */
static int restore(ruma_btree *t, const uint8_t *key, size_t klen, bool present,
		   const uint8_t *val, size_t vlen)
{
	if (present)
		return ruma_btree_upsert(t, key, klen, val, vlen, NULL);
	int r = ruma_btree_remove(t, key, klen);
	return r == RUMA_ENOTFOUND ? 0 : r;
}

/* Lock the row, take its before-image, log and keep the undo entry. */
static int prepare_change(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			  bool *present)
{
	uint8_t old[RUMA_BTREE_MAX_VALUE];
	size_t vlen = 0;
	if (klen == 0 || klen > RUMA_BTREE_MAX_KEY)
		return klen ? RUMA_ETOOBIG : -EINVAL;
	int r = row_lock(x, t, key, klen);
	if (r)
		return r;
	r = ruma_btree_lookup(t, key, klen, old, sizeof(old), &vlen);
	if (r && r != RUMA_ENOTFOUND)
		return r;
	*present = r == 0;
	if (!*present)
		vlen = 0;
	if (grow((void **)&x->undo, &x->capundo, x->nundo + 1, sizeof(*x->undo)))
		return -ENOMEM;
	uint8_t *bytes = malloc(klen + vlen + 1);
	if (!bytes)
		return -ENOMEM;
	memcpy(bytes, key, klen);
	memcpy(bytes + klen, old, vlen);
	if (ruma_bm_logging(x->bm)) {
		uint8_t rec[8 + sizeof(struct undo_hdr) + RUMA_BTREE_MAX_KEY + RUMA_BTREE_MAX_VALUE];
		struct undo_hdr h = { t->root, (uint16_t)klen, *present, 0, (uint32_t)vlen };
		memcpy(rec, &x->id, 8);
		memcpy(rec + 8, &h, sizeof(h));
		memcpy(rec + 8 + sizeof(h), bytes, klen + vlen);
		uint64_t lsn;
		r = ruma_bm_log(x->bm, RUMA_BM_LOG_UNDO, rec, 8 + sizeof(h) + klen + vlen, &lsn, NULL);
		if (r) {
			free(bytes);
			return r;
		}
		if (!x->id)
			x->id = lsn;
	}
	x->undo[x->nundo++] = (struct undo){ t->root, (uint16_t)klen, *present, (uint32_t)vlen, bytes };
	return 0;
}

enum op { OP_INSERT, OP_UPSERT, OP_UPDATE, OP_REMOVE };

struct op_args {
	enum op op;
	const void *val;
	size_t vlen;
	void (*fn)(void *val, size_t vlen, void *ctx);
	void *ctx;
};

static int txn_op(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const struct op_args *a)
{
	bool present = false;
	int r = prepare_change(x, t, key, klen, &present);
	if (r)
		return r;
	if ((a->op == OP_INSERT && present) || ((a->op == OP_UPDATE || a->op == OP_REMOVE) && !present))
		return present ? RUMA_EEXISTS : RUMA_ENOTFOUND; /* unchanged; the undo is a no-op */
	ruma_bm_op_defer(x->bm, true);
	switch (a->op) {
	case OP_INSERT:
		r = ruma_btree_insert(t, key, klen, a->val, a->vlen);
		break;
	case OP_UPSERT:
		r = ruma_btree_upsert(t, key, klen, a->val, a->vlen, NULL);
		break;
	case OP_UPDATE:
		r = ruma_btree_update(t, key, klen, a->fn, a->ctx);
		break;
	case OP_REMOVE:
		r = ruma_btree_remove(t, key, klen);
		break;
	}
	ruma_bm_op_defer(x->bm, false);
	return r;
}

int ruma_txn_insert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	if (!x)
		return ruma_btree_insert(t, key, klen, val, vlen);
	struct op_args a = { .op = OP_INSERT, .val = val, .vlen = vlen };
	return txn_op(x, t, key, klen, &a);
}

int ruma_txn_upsert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	if (!x)
		return ruma_btree_upsert(t, key, klen, val, vlen, NULL);
	struct op_args a = { .op = OP_UPSERT, .val = val, .vlen = vlen };
	return txn_op(x, t, key, klen, &a);
}

int ruma_txn_update(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
		    void (*fn)(void *val, size_t vlen, void *ctx), void *ctx)
{
	if (!x)
		return ruma_btree_update(t, key, klen, fn, ctx);
	if (!fn)
		return -EINVAL;
	struct op_args a = { .op = OP_UPDATE, .fn = fn, .ctx = ctx };
	return txn_op(x, t, key, klen, &a);
}

int ruma_txn_remove(ruma_txn *x, ruma_btree *t, const void *key, size_t klen)
{
	if (!x)
		return ruma_btree_remove(t, key, klen);
	struct op_args a = { .op = OP_REMOVE };
	return txn_op(x, t, key, klen, &a);
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
		int r = restore(&t, u->bytes, u->klen, u->present, u->bytes + u->klen, u->vlen);
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
		if (list[i].len != sizeof(h) + h.klen + h.vlen || h.klen == 0) {
			err = RUMA_ECORRUPT;
			break;
		}
		t.root = h.root;
		err = restore(&t, p + sizeof(h), h.klen, h.present, p + sizeof(h) + h.klen, h.vlen);
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
