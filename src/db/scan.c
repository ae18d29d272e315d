/*
 * scan.c — copying entries out of a B-tree in key order, the bottom of the
 * db module: one ruma_btree_scan_asc / _desc collects a few entries beyond
 * a key (the scan callback runs under a leaf latch, so it only copies).
 * Cursors (cursor.c), the table list and appends (db.c) are built on it.
 * It also holds the two helpers every file above uses: the store's message
 * line and the check that a transaction is live.
 */
#include "db/db_int.h"

#include "bm/bm_ext.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int db_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

static bool fill_one(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	fill_ctx *f = ctx;
	if (f->has_skip) { /* only the first key can be the start key itself */
		f->has_skip = false;
		if (!db_key_cmp(key, klen, f->skip, f->skiplen))
			return true;
	}
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
int db_fill(ruma_btree *bt, fill_ctx *f, const void *start, size_t slen)
{
	f->n = 0;
	int rc = txn_scan_from(f->x, bt, f->dir == DIR_DESC, start, slen, f->spot, fill_one, f);
	if (rc)
		return rc;
	return f->n ? 0 : RUMA_ENOTFOUND;
}

int db_last_key(ruma_btree *bt, db_entry *e)
{
	fill_ctx f = { .out = e, .cap = 1, .dir = DIR_DESC };
	return db_fill(bt, &f, NULL, 0);
}

int db_registry_next(ruma_db *db, const char *from, bool skip, char *key, size_t cap)
{
	if (!db->registry)
		return RUMA_ENOTFOUND;
	db_entry *e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	fill_ctx f = { .out = e, .cap = 1, .dir = DIR_ASC, .has_skip = skip && from,
		       .skip = from, .skiplen = from ? strlen(from) : 0 };
	int rc = db_fill(db->registry, &f, from, f.skiplen);
	if (!rc && (e->klen >= cap || memchr(e->key, 0, e->klen)))
		rc = RUMA_ECORRUPT;
	if (!rc) {
		memcpy(key, e->key, e->klen);
		key[e->klen] = '\0';
	}
	free(e);
	return rc;
}

int db_next_name(ruma_db *db, const char *after, char *name)
{
	char key[DB_REGISTRY_KEY_MAX + 1];
	size_t np = strlen(DB_RESERVED_PREFIX);
	int rc = db_registry_next(db, after, true, key, sizeof(key));
	if (!rc && !strncmp(key, DB_RESERVED_PREFIX, np)) /* the store's own: jump past them */
		rc = db_registry_next(db, DB_RESERVED_PREFIX_END, false, key, sizeof(key));
	if (!rc && strlen(key) > RUMA_DB_MAX_NAME)
		rc = RUMA_ECORRUPT;
	if (!rc)
		strcpy(name, key);
	return rc;
}


/* ---- helpers of the files above ---- */

void db_report(ruma_db *db, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ruma_bm_report(db->bm, line);
}

int db_txn_unusable(const ruma_db_txn *txn)
{
	if (txn && !txn->live)
		db_report(txn->db, "db: transaction used after commit or abort");
	return -EINVAL;
}
