/*
 * load.c — bulk loads (include/ruma/db.h, "loading sorted entries"): an
 * empty table filled from entries in ascending key order by building its
 * B-tree bottom-up (src/btree/bulk.c), its pages written straight to the
 * store file.
 *
 * A value is put into the leaf in the form ruma_db_put stores it
 * (db_stored_form: inline, escaped, or the state of a BLOB written to its
 * own extent at once), so the loaded table is indistinguishable from one
 * built by puts.  The loader counts as an open transaction of the store
 * (close and drop wait for it to end).
 *
 * Durability: the tree's pages and the BLOBs' extents are written around
 * the pool as the load goes; bt_bulk_finish then replaces the empty root
 * with the top node in one logged page change, and the log syncs the store
 * before that record reaches its file, so the record is never durable
 * before the pages it names.  The end then waits for the log (group
 * commit), holding off a hot backup meanwhile (db_copy_hold: a copied log
 * must not name pages written after the file was copied).  A crash
 * before the record is durable leaves an empty table and pages nothing
 * names, which the sweep after recovery frees (blob.c).
 *
 * Visibility: the loaded entries have no older versions, so the table
 * keeps the load's commit timestamp (loaded_ts); a snapshot older than it
 * is refused before and after each read (db_loaded_after in db_int.h).
 */
#include "db/db_int.h"
#include "bm/bm_ext.h"
#include "btree/bulk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct ruma_db_loader {
	ruma_db *db;
	ruma_db_table *t;
	bt_bulk *bulk;
	int err;           /* sticky: a store error (not an entry refused) */
	db_ext_list blobs; /* extents of BLOB values: freed unless the load installs */
	uint8_t val[RUMA_BTREE_MAX_VALUE];
};

static void blobs_free(ruma_db_loader *ld)
{
	for (size_t i = 0; i < ld->blobs.n; i++) {
		const db_ext_ref *e = &ld->blobs.e[i];
		int r = ruma_bm_extent_free(ld->db->bm, e->first, e->pages);
		if (r)
			db_report(ld->db, "db: load: freeing extent [%" PRIu64 ", +%" PRIu64 "): %s",
				  e->first, e->pages, ruma_strerror(r));
	}
	ld->blobs.n = 0;
}

static void loader_free(ruma_db_loader *ld)
{
	ruma_counter_add(&ld->db->active, -1);
	free(ld->blobs.e);
	free(ld);
}

/* The table `name`, created (and registered) in a transaction of its own. */
static int load_table(ruma_db *db, const char *name, ruma_db_table **t)
{
	ruma_db_txn *x;
	int rc = ruma_db_begin(db, 0, &x);
	if (rc)
		return rc;
	rc = ruma_db_table_open(x, name, RUMA_DB_CREATE, t);
	int crc = rc ? ruma_db_abort(x) : ruma_db_commit(x);
	return rc ? rc : crc;
}

int ruma_db_load_begin(ruma_db *db, const char *name, ruma_db_loader **out)
{
	if (!db || !name || !out)
		return -EINVAL;
	if (db->flags & RUMA_DB_READONLY)
		return -EACCES;
	ruma_db_table *t;
	int rc = load_table(db, name, &t);
	if (rc)
		return rc;
	ruma_btree *bt = __atomic_load_n(&t->bt, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&t->dropping, __ATOMIC_ACQUIRE) || !bt)
		return RUMA_ECONFLICT;
	ruma_db_loader *ld = calloc(1, sizeof(*ld));
	if (!ld)
		return -ENOMEM;
	*ld = (ruma_db_loader){ .db = db, .t = t };
	if ((rc = bt_bulk_begin(bt, &ld->bulk))) {
		free(ld);
		return rc;
	}
	ruma_counter_add(&db->active, 1);
	*out = ld;
	return 0;
}

int ruma_db_load_put(ruma_db_loader *ld, const ruma_val *key, const ruma_val *val)
{
	if (!ld || !key || !val || (!key->data && key->len) || (!val->data && val->len))
		return -EINVAL;
	if (ld->err)
		return ld->err;
	size_t len;
	db_ext_ref ext;
	int rc = db_stored_form(ld->db, key, val, ld->val, &len, &ext);
	if (ext.pages) {
		int kr = db_ext_add(&ld->blobs, ext.first, ext.pages);
		if (kr) {
			(void)ruma_bm_extent_free(ld->db->bm, ext.first, ext.pages);
			return kr;
		}
	}
	if (!rc)
		rc = bt_bulk_add(ld->bulk, key->data, key->len, ld->val, len);
	if (rc && ext.pages) { /* refused: its BLOB goes again */
		ld->blobs.n--;
		(void)ruma_bm_extent_free(ld->db->bm, ext.first, ext.pages);
	}
	if (rc && rc != RUMA_EEXISTS && rc != -EINVAL && rc != RUMA_ETOOBIG)
		ld->err = rc;
	return rc;
}

int ruma_db_load_end(ruma_db_loader *ld, uint64_t *entries)
{
	if (!ld)
		return -EINVAL;
	ruma_db *db = ld->db;
	uint64_t n = bt_bulk_entries(ld->bulk);
	if (ld->err) {
		int err = ld->err;
		ruma_db_load_abort(ld);
		if (entries)
			*entries = 0;
		return err;
	}
	db_copy_hold(db);
	int rc = bt_bulk_finish(ld->bulk, &ld->t->loaded_ts);
	if (rc)
		blobs_free(ld);
	else if (ruma_bm_logging(db->bm))
		rc = ruma_bm_log_flush(db->bm, ruma_bm_log_end(db->bm));
	db_copy_release(db);
	if (rc == -ENOTEMPTY)
		db_report(db, "db: load into %s: the table was written meanwhile: nothing loaded",
			  ld->t->name);
	if (entries)
		*entries = rc ? 0 : n;
	loader_free(ld);
	return rc;
}

void ruma_db_load_abort(ruma_db_loader *ld)
{
	if (!ld)
		return;
	bt_bulk_abort(ld->bulk);
	blobs_free(ld);
	loader_free(ld);
}
