/*
 * cursor.c — cursors over one B-tree without a latch between calls.
 *
 * A step copies a small batch of entries out of the tree with one scan
 * from the current key (the scan callback runs under a leaf latch, so it
 * only copies), then serves the following steps in the same direction
 * from the batch.  A refill goes on where the fill before it stopped in
 * the tree, without a descent, while that leaf is unchanged (a spot,
 * src/btree/spot.h), so a fill costs little more than its entries and
 * batches stay small: 8 entries, so that a walk that stops anywhere leaves
 * few copied for nothing, until a walk has gone past 128 entries in one
 * direction, then 64.  The batch is dropped when the
 * direction changes or the transaction wrote since it was filled (so the
 * cursor sees its transaction's own writes), and refilled from a copy of
 * the current key, skipping that key itself (scan.c does the copying).
 * The current entry is read where it lies in the batch; its key is copied
 * out only when a refill is about to overwrite the batch.
 */
#include "db/db_int.h"

#include <ruma/core.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CURSOR_BATCH_MIN 8u
#define CURSOR_BATCH_MAX 64u
/* Refills in a row in one direction after which a walk is a long one. */
#define CURSOR_LONG_WALK 16u

/* ---- cursors ---------------------------------------------------------------- */

struct ruma_db_cursor {
	ruma_db_txn *txn;
	ruma_db_table *table;
	uint64_t gen;           /* txn->gen at open: a change means it ended */
	bool positioned;
	bool deleted;           /* the current entry was deleted at the cursor */
	int dir;                /* direction the batch was filled in */
	uint64_t writes;        /* txn->writes when the batch was filled */
	unsigned n, idx;        /* batch entries and the one after cur */
	unsigned onward;        /* refills in a row in dir (at most CURSOR_LONG_WALK) */
	bool has_hi;
	uint16_t hilen;
	unsigned char hi[RUMA_DB_MAX_KEY];
	const db_entry *curv;   /* the current entry: in the batch */
	bt_spot spot;           /* where the last fill stopped in the tree (spot.h) */
	uint16_t startlen;      /* the key a refill starts from */
	unsigned char start[RUMA_DB_MAX_KEY];
	db_entry batch[CURSOR_BATCH_MAX];
};

static int cursor_usable(const ruma_db_cursor *c)
{
	if (!c)
		return -EINVAL;
	if (c->gen != c->txn->gen || !c->txn->live) {
		db_report(c->txn->db, "db: cursor used after its transaction ended");
		return -EINVAL;
	}
	return 0;
}

int ruma_db_cursor_open(ruma_db_txn *txn, ruma_db_table *t, ruma_db_cursor **out)
{
	int rc = db_txn_usable(txn);
	if (rc || !t || t->db != txn->db || !out)
		return rc ? rc : -EINVAL;
	ruma_db_cursor *c = malloc(sizeof(*c)); /* the batch needs no zeroing */
	if (!c)
		return -ENOMEM;
	c->txn = txn;
	c->table = t;
	c->gen = txn->gen;
	c->positioned = c->deleted = c->has_hi = false;
	c->dir = 0;
	c->writes = 0;
	c->n = c->idx = 0;
	c->onward = 0;
	c->curv = NULL;
	c->spot.valid = false;
	*out = c;
	return 0;
}

void ruma_db_cursor_close(ruma_db_cursor *c)
{
	free(c);
}

int ruma_db_cursor_set_upper(ruma_db_cursor *c, const ruma_val *hi)
{
	int rc = cursor_usable(c);
	if (rc)
		return rc;
	if (hi && (!hi->data || !hi->len || hi->len > RUMA_DB_MAX_KEY))
		return hi->len > RUMA_DB_MAX_KEY ? RUMA_ETOOBIG : -EINVAL;
	c->has_hi = hi != NULL;
	if (hi) {
		c->hilen = (uint16_t)hi->len;
		memcpy(c->hi, hi->data, hi->len);
	}
	c->n = c->idx = 0; /* the batch may hold keys past the new bound */
	return 0;
}

/* Take the batch's next entry as the current one. */
static int take(ruma_db_cursor *c)
{
	c->curv = &c->batch[c->idx++];
	c->positioned = true;
	c->deleted = false;
	return 0;
}

/* Entries a fill takes: the fewest until the walk is a long one, then the
 * most.  A fill that goes on from a spot costs about two entries' copying
 * of 1 KB (its set-up and the check of the spot), a walk stops anywhere in
 * its last batch, and short walks are the common ones (YCSB E walks 1 to
 * 100): under callgrind a walk of 1-100 such entries took 51 400
 * instructions with 8 at every fill, 54 200 with 4, 51 500 with 12, 54 400
 * with 8 growing to 16, 32 and 64 after 56 entries (ruma guard, db_scan). */
static unsigned fill_size(unsigned onward)
{
	return onward < CURSOR_LONG_WALK ? CURSOR_BATCH_MIN : CURSOR_BATCH_MAX;
}

/* Fill the batch in dir from start (skipping start itself when skip): a
 * step on in the direction of the last fill takes more entries than the
 * one before it (fill_size), any other fill the fewest. */
static int refill(ruma_db_cursor *c, int dir, const void *start, size_t slen, bool skip,
		  bool onward)
{
	c->onward = onward && c->dir == dir ? RUMA_MIN(c->onward + 1, CURSOR_LONG_WALK) : 0;
	if (!skip)
		c->spot.valid = false; /* a spot goes on beyond its key: start itself is wanted */
	fill_ctx f = { .x = c->txn->x, .out = c->batch, .cap = fill_size(c->onward), .dir = dir,
		       .has_skip = skip, .skip = start, .skiplen = slen,
		       .has_hi = c->has_hi, .hi = c->hi, .hilen = c->hilen, .spot = &c->spot };
	ruma_btree *bt;
	int rc = db_table_readable(c->txn, c->table, &bt);
	if (!rc)
		rc = db_fill(bt, &f, start, slen);
	if (RUMA_UNLIKELY(db_loaded_after(c->txn, c->table))) /* a load installed meanwhile */
		rc = RUMA_ESNAPTOOOLD, f.n = 0;
	c->dir = dir;
	c->n = f.n;
	c->idx = 0;
	c->writes = c->txn->writes;
	if (rc) {
		c->positioned = false;
		c->n = 0;
		return rc;
	}
	return take(c);
}

int ruma_db_cursor_first(ruma_db_cursor *c)
{
	int rc = cursor_usable(c);
	return rc ? rc : refill(c, DIR_ASC, NULL, 0, false, false);
}

int ruma_db_cursor_last(ruma_db_cursor *c)
{
	int rc = cursor_usable(c);
	if (rc)
		return rc;
	if (c->has_hi)
		return refill(c, DIR_DESC, c->hi, c->hilen, true, false);
	return refill(c, DIR_DESC, NULL, 0, false, false);
}

int ruma_db_cursor_seek(ruma_db_cursor *c, const ruma_val *key)
{
	int rc = cursor_usable(c);
	if (rc || !key || !key->data || !key->len)
		return rc ? rc : -EINVAL;
	if (key->len > RUMA_DB_MAX_KEY)
		return RUMA_ETOOBIG;
	if (c->start != key->data) /* the key may be the cursor's own */
		memmove(c->start, key->data, key->len);
	c->startlen = (uint16_t)key->len;
	return refill(c, DIR_ASC, c->start, c->startlen, false, false);
}

/* One step in dir from the current key. */
static int step(ruma_db_cursor *c, int dir)
{
	int rc = cursor_usable(c);
	if (rc)
		return rc;
	if (!c->positioned)
		return -EINVAL;
	if (c->dir == dir && c->idx < c->n && c->writes == c->txn->writes)
		return take(c);
	c->startlen = c->curv->klen; /* the refill overwrites the batch */
	memcpy(c->start, c->curv->key, c->startlen);
	return refill(c, dir, c->start, c->startlen, true, true);
}

int ruma_db_cursor_next(ruma_db_cursor *c)
{
	return step(c, DIR_ASC);
}

int ruma_db_cursor_prev(ruma_db_cursor *c)
{
	return step(c, DIR_DESC);
}

int ruma_db_cursor_get(ruma_db_cursor *c, ruma_val *key, ruma_val *val)
{
	int rc = cursor_usable(c);
	if (rc)
		return rc;
	if (!c->positioned)
		return -EINVAL;
	if (c->deleted)
		return RUMA_ENOTFOUND;
	if (key)
		*key = (ruma_val){ c->curv->klen, (void *)c->curv->key };
	if (val)
		return db_value_out_fast(c->txn, c->curv->val, c->curv->vlen, val);
	return 0;
}

int ruma_db_cursor_del(ruma_db_cursor *c)
{
	int rc = cursor_usable(c);
	if (rc)
		return rc;
	if (!c->positioned || c->deleted)
		return !c->positioned ? -EINVAL : RUMA_ENOTFOUND;
	ruma_val k = { c->curv->klen, (void *)c->curv->key };
	rc = ruma_db_del(c->txn, c->table, &k);
	if (!rc)
		c->deleted = true;
	return rc;
}
