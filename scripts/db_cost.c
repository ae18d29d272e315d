/*
 * db_cost.c — instructions per get and per put through db.h against the
 * same operations called directly (txn.h inside a transaction of the same
 * isolation, snapshot isolation for read-write ones as db.h begins them,
 * and plain btree.h), for callgrind.  Each operation is one noinline function, so
 * callgrind's inclusive count of it divided by its calls is the cost per
 * operation.  Deterministic: fixed keys, a store without a log.
 * Build and run: see docs/db.md ("Cost").
 */
#include <ruma/db.h>
#include <ruma/txn.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 20000u
#define PER_TXN 100u

static char key[N][16];
static char val[100];

#define NOINLINE __attribute__((noinline))

NOINLINE static int db_put_one(ruma_db_txn *x, ruma_db_table *t, unsigned i)
{
	ruma_val k = { 12, key[i] }, v = { sizeof(val), val };
	return ruma_db_put(x, t, &k, &v, 0);
}

NOINLINE static int txn_put_one(ruma_txn *x, ruma_btree *t, unsigned i)
{
	return ruma_txn_upsert(x, t, key[i], 12, val, sizeof(val));
}

NOINLINE static int db_get_one(ruma_db_txn *x, ruma_db_table *t, unsigned i)
{
	ruma_val k = { 12, key[i] }, v;
	return ruma_db_get(x, t, &k, &v);
}

NOINLINE static int db_snap_get_one(ruma_db_txn *x, ruma_db_table *t, unsigned i)
{
	ruma_val k = { 12, key[i] }, v;
	return ruma_db_get(x, t, &k, &v);
}

NOINLINE static int txn_get_one(ruma_txn *x, ruma_btree *t, unsigned i, char *buf)
{
	size_t len;
	return ruma_txn_lookup(x, t, key[i], 12, buf, RUMA_BTREE_MAX_VALUE, &len);
}

NOINLINE static int txn_snap_get_one(ruma_txn *x, ruma_btree *t, unsigned i, char *buf)
{
	size_t len;
	return ruma_txn_lookup(x, t, key[i], 12, buf, RUMA_BTREE_MAX_VALUE - 1, &len);
}

NOINLINE static int bt_get_one(ruma_btree *t, unsigned i, char *buf)
{
	size_t len;
	return ruma_btree_lookup(t, key[i], 12, buf, RUMA_BTREE_MAX_VALUE, &len);
}

#define TRY(c) do { int rc_ = (c); if (rc_) { fprintf(stderr, "%s: %s\n", #c, ruma_strerror(rc_)); exit(1); } } while (0)

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/db_cost.store";
	unlink(path);
	for (unsigned i = 0; i < N; i++)
		snprintf(key[i], sizeof(key[i]), "k%011u", (i * 7919u) % N);
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.flags = RUMA_DB_NOLOG;
	o.pool_bytes = 64u << 20;
	ruma_bm_config adv; /* valgrind refuses the default 256 GiB reservation */
	ruma_bm_config_default(&adv);
	adv.virt_bytes = 1ull << 30;
	o.advanced = &adv;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t, *u;
	ruma_btree *bu;
	ruma_txn *tx;
	static char buf[RUMA_BTREE_MAX_VALUE];
	TRY(ruma_db_open(path, &o, &db));
	TRY(ruma_db_begin(db, 0, &x));
	TRY(ruma_db_table_open(x, "t", RUMA_DB_CREATE, &t));
	TRY(ruma_db_table_open(x, "u", RUMA_DB_CREATE, &u));
	TRY(ruma_db_commit(x));
	TRY(ruma_btree_open(ruma_db_bm(db), "u", &bu));
	for (unsigned i = 0; i < N; i += PER_TXN) { /* puts: db.h into t, txn.h into u */
		TRY(ruma_db_begin(db, 0, &x));
		for (unsigned j = i; j < i + PER_TXN; j++)
			TRY(db_put_one(x, t, j));
		TRY(ruma_db_commit(x));
		TRY(ruma_txn_begin(ruma_db_bm(db), RUMA_TXN_SNAPSHOT, &tx));
		for (unsigned j = i; j < i + PER_TXN; j++)
			TRY(txn_put_one(tx, bu, j));
		TRY(ruma_txn_commit(tx));
	}
	for (unsigned i = 0; i < N; i += PER_TXN) { /* gets of the same keys */
		TRY(ruma_db_begin(db, 0, &x));
		for (unsigned j = i; j < i + PER_TXN; j++)
			TRY(db_get_one(x, t, j));
		TRY(ruma_db_commit(x));
		TRY(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
		for (unsigned j = i; j < i + PER_TXN; j++)
			TRY(db_snap_get_one(x, t, j));
		TRY(ruma_db_commit(x));
		TRY(ruma_txn_begin(ruma_db_bm(db), RUMA_TXN_SNAPSHOT, &tx));
		for (unsigned j = i; j < i + PER_TXN; j++)
			TRY(txn_get_one(tx, bu, j, buf));
		TRY(ruma_txn_commit(tx));
		TRY(ruma_txn_begin(ruma_db_bm(db), RUMA_TXN_RDONLY, &tx));
		for (unsigned j = i; j < i + PER_TXN; j++)
			TRY(txn_snap_get_one(tx, bu, j, buf));
		TRY(ruma_txn_commit(tx));
		for (unsigned j = i; j < i + PER_TXN; j++)
			TRY(bt_get_one(bu, j, buf));
	}
	ruma_btree_release(bu);
	TRY(ruma_db_close(db));
	unlink(path);
	return 0;
}
