/*
 * db.c — the TPC-C database in a ruma store: one B-tree per table, the two
 * secondary indexes, and a meta tree with one row (sizes, the loader's
 * NURand constants, the number of measured phases so far).
 *
 * Invariant: a store either has all TPCC_NTABLES trees or none; the meta
 * row is written last by tpcc_db_create, so a store whose meta row is
 * missing is treated as holding no TPC-C database; its `loaded` field is
 * set by tpcc_db_mark_loaded after the whole population is in, so an
 * interrupted load is recognised (tpcc_db_open: RUMA_EBADCOMBO).  No syscalls (the
 * buffer manager does the I/O).
 */
#include "bench/vmcache/tpcc/tpcc.h"

#include <errno.h>
#include <stdlib.h>

const char *const tpcc_table_names[TPCC_NTABLES] = {
	"tpcc.warehouse", "tpcc.district",  "tpcc.customer", "tpcc.customer_wdl",
	"tpcc.history",   "tpcc.new_order", "tpcc.order",    "tpcc.order_wdc",
	"tpcc.order_line", "tpcc.item",     "tpcc.stock",    "tpcc.meta",
};

#define TPCC_MAGIC 0x54504343u /* "TPCC" */
#define TPCC_FORMAT 2u

typedef struct tpcc_meta_row {
	uint32_t magic, format;
	uint32_t warehouses, scale;
	tpcc_cconst c_load;
	uint32_t runs;
	uint32_t loaded; /* 1 once the initial population is complete */
} tpcc_meta_row;

static const char meta_key[] = "tpcc";

int tpcc_sizes_init(tpcc_sizes *sz, uint32_t warehouses, uint32_t scale)
{
	if (warehouses == 0 || warehouses > 100000 || scale == 0 || scale > 100)
		return -EINVAL;
	sz->warehouses = warehouses;
	sz->scale = scale;
	sz->items = TPCC_ITEMS / scale;
	sz->customers = TPCC_CUSTOMERS / scale;
	sz->new_orders = TPCC_NEW_ORDERS / scale;
	sz->names = sz->customers < 1000 ? sz->customers : 1000;
	return 0;
}

static void release_trees(tpcc_db *db)
{
	for (int i = 0; i < TPCC_NTABLES; i++) {
		ruma_btree_release(db->t[i]);
		db->t[i] = NULL;
	}
}

void tpcc_db_close(tpcc_db *db)
{
	if (!db)
		return;
	release_trees(db);
	free(db);
}

int tpcc_db_create(ruma_bm *bm, const tpcc_sizes *sz, ruma_rng *rng, tpcc_db **out)
{
	tpcc_db *db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->bm = bm;
	db->sz = *sz;
	tpcc_cconst_draw(rng, NULL, &db->c_load);
	db->c_run = db->c_load;
	int rc = 0;
	for (int i = 0; i < TPCC_NTABLES && !rc; i++)
		rc = ruma_btree_create(bm, tpcc_table_names[i], &db->t[i]);
	if (!rc) {
		tpcc_meta_row m = { TPCC_MAGIC, TPCC_FORMAT, sz->warehouses, sz->scale,
				    db->c_load, 0, 0 };
		rc = ruma_btree_insert(db->t[TPCC_META], meta_key, sizeof(meta_key) - 1, &m,
				       sizeof(m));
	}
	if (rc) {
		tpcc_db_close(db);
		return rc;
	}
	*out = db;
	return 0;
}

int tpcc_db_open(ruma_bm *bm, tpcc_db **out)
{
	tpcc_db *db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->bm = bm;
	int rc = 0;
	for (int i = 0; i < TPCC_NTABLES && !rc; i++)
		rc = ruma_btree_open(bm, tpcc_table_names[i], &db->t[i]);
	tpcc_meta_row m;
	size_t len = 0;
	if (!rc)
		rc = ruma_btree_lookup(db->t[TPCC_META], meta_key, sizeof(meta_key) - 1, &m,
				       sizeof(m), &len);
	if (!rc && (len < 2 * sizeof(uint32_t) || m.magic != TPCC_MAGIC))
		rc = RUMA_ECORRUPT;
	else if (!rc && (len != sizeof(m) || m.format != TPCC_FORMAT))
		rc = RUMA_EUNSUPP; /* written by another version of this code */
	if (!rc) {
		rc = tpcc_sizes_init(&db->sz, m.warehouses, m.scale);
		if (rc == -EINVAL)
			rc = RUMA_ECORRUPT;
	}
	if (!rc && !m.loaded)
		rc = RUMA_EBADCOMBO;
	if (rc) {
		tpcc_db_close(db);
		return rc;
	}
	db->c_load = m.c_load;
	db->c_run = m.c_load;
	*out = db;
	return 0;
}

static void bump_runs(void *val, size_t vlen, void *ctx)
{
	tpcc_meta_row m;
	if (vlen == sizeof(m)) {
		tpcc_row_in(&m, sizeof(m), val, vlen);
		*(uint32_t *)ctx = ++m.runs;
		tpcc_row_out(val, vlen, &m, sizeof(m));
	}
}

int tpcc_db_begin_run(tpcc_db *db, ruma_rng *rng)
{
	uint32_t run = 0;
	int rc = ruma_btree_update(db->t[TPCC_META], meta_key, sizeof(meta_key) - 1, bump_runs,
				   &run);
	if (rc)
		return rc;
	if (run == 0)
		return RUMA_ECORRUPT;
	db->run = run;
	tpcc_cconst_draw(rng, &db->c_load, &db->c_run);
	return 0;
}

static void set_loaded(void *val, size_t vlen, void *ctx)
{
	tpcc_meta_row m;
	if (vlen == sizeof(m)) {
		tpcc_row_in(&m, sizeof(m), val, vlen);
		m.loaded = 1;
		tpcc_row_out(val, vlen, &m, sizeof(m));
		*(int *)ctx = 0;
	}
}

int tpcc_db_mark_loaded(tpcc_db *db)
{
	int ok = RUMA_ECORRUPT;
	int rc = ruma_btree_update(db->t[TPCC_META], meta_key, sizeof(meta_key) - 1, set_loaded,
				   &ok);
	return rc ? rc : ok;
}

uint64_t tpcc_bytes_per_warehouse(void)
{
	/* Measured: about 0.12 GB per warehouse after the load (docs/tpcc.md);
	 * the rest is head room for the rows a run adds. */
	return 160ull << 20;
}
