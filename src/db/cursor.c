/*
 * cursor.c — cursors over one B-tree without a latch between calls.
 *
 * A step copies a small batch of entries out of the tree with one
 * ruma_btree_scan_asc / _desc from the current key (the scan callback runs
 * under a leaf latch, so it only copies), then serves the following steps
 * in the same direction from the batch.  The batch is dropped when the
 * direction changes or the transaction wrote since it was filled (so the
 * cursor sees its transaction's own writes), and refilled from a copy of
 * the current key, skipping that key itself.  The same batch code serves
 * the store's table list (db_next_name) and the last key for appends.
 */
#include "db/db_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CURSOR_BATCH 8u

enum { DIR_ASC = 1, DIR_DESC = 2 };

/* One fill: collect up to cap entries beyond `skip` (when given) and below
 * the upper bound (when given). */
typedef struct fill_ctx {
	db_entry *out;
	unsigned n, cap;
	const void *skip;
	size_t skiplen;
	bool has_skip;
	const void *hi;
	size_t hilen;
	bool has_hi;
	int dir;
} fill_ctx;

static bool fill_one(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	fill_ctx *f = ctx;
	if (f->has_skip && !db_key_cmp(key, klen, f->skip, f->skiplen))
		return true;
	if (f->has_hi && db_key_cmp(key, klen, f->hi, f->hilen) >= 0)
		return f->dir == DIR_DESC; /* ascending: past the bound, stop */
	db_entry *e = &f->out[f->n++];
	e->klen = (uint16_t)klen;
	e->vlen = (uint16_t)vlen;
	memcpy(e->key, key, klen);
	memcpy(e->val, val, vlen);
	return f->n < f->cap;
}

/* Fill out[0, cap) scanning in dir from start (slen 0: the tree's end). */
static int fill(ruma_btree *bt, fill_ctx *f, const void *start, size_t slen)
{
	f->n = 0;
	int rc = f->dir == DIR_ASC ? ruma_btree_scan_asc(bt, start, slen, fill_one, f)
				   : ruma_btree_scan_desc(bt, start, slen, fill_one, f);
	if (rc)
		return rc;
	return f->n ? 0 : RUMA_ENOTFOUND;
}

int db_last_key(ruma_btree *bt, db_entry *e)
{
	fill_ctx f = { .out = e, .cap = 1, .dir = DIR_DESC };
	return fill(bt, &f, NULL, 0);
}

int db_next_name(ruma_db *db, const char *after, char *name)
{
	if (!db->registry)
		return RUMA_ENOTFOUND;
	db_entry *e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	fill_ctx f = { .out = e, .cap = 1, .dir = DIR_ASC, .has_skip = after != NULL,
		       .skip = after, .skiplen = after ? strlen(after) : 0 };
	int rc = fill(db->registry, &f, after, f.skiplen);
	if (!rc) {
		memcpy(name, e->key, e->klen);
		name[e->klen] = '\0';
	}
	free(e);
	return rc;
}

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
	bool has_hi;
	uint16_t hilen;
	unsigned char hi[RUMA_DB_MAX_KEY];
	db_entry cur;
	db_entry batch[CURSOR_BATCH];
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
	ruma_db_cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->txn = txn;
	c->table = t;
	c->gen = txn->gen;
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
	c->cur = c->batch[c->idx++];
	c->positioned = true;
	c->deleted = false;
	return 0;
}

/* Fill the batch in dir from start (skipping start itself when skip). */
static int refill(ruma_db_cursor *c, int dir, const void *start, size_t slen, bool skip)
{
	fill_ctx f = { .out = c->batch, .cap = CURSOR_BATCH, .dir = dir,
		       .has_skip = skip, .skip = start, .skiplen = slen,
		       .has_hi = c->has_hi, .hi = c->hi, .hilen = c->hilen };
	int rc = fill(c->table->bt, &f, start, slen);
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
	return rc ? rc : refill(c, DIR_ASC, NULL, 0, false);
}

int ruma_db_cursor_last(ruma_db_cursor *c)
{
	int rc = cursor_usable(c);
	if (rc)
		return rc;
	if (c->has_hi)
		return refill(c, DIR_DESC, c->hi, c->hilen, true);
	return refill(c, DIR_DESC, NULL, 0, false);
}

int ruma_db_cursor_seek(ruma_db_cursor *c, const ruma_val *key)
{
	int rc = cursor_usable(c);
	if (rc || !key || !key->data || !key->len)
		return rc ? rc : -EINVAL;
	if (key->len > RUMA_DB_MAX_KEY)
		return RUMA_ETOOBIG;
	db_entry *k = &c->cur; /* refill overwrites cur only on success */
	if (k->key != key->data)
		memmove(k->key, key->data, key->len);
	k->klen = (uint16_t)key->len;
	return refill(c, DIR_ASC, k->key, k->klen, false);
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
	return refill(c, dir, c->cur.key, c->cur.klen, true);
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
		*key = (ruma_val){ c->cur.klen, c->cur.key };
	if (val)
		*val = (ruma_val){ c->cur.vlen, c->cur.val };
	return 0;
}

int ruma_db_cursor_del(ruma_db_cursor *c)
{
	int rc = cursor_usable(c);
	if (rc)
		return rc;
	if (!c->positioned || c->deleted)
		return !c->positioned ? -EINVAL : RUMA_ENOTFOUND;
	ruma_val k = { c->cur.klen, c->cur.key };
	rc = ruma_db_del(c->txn, c->table, &k);
	if (!rc)
		c->deleted = true;
	return rc;
}
