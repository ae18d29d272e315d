/*
 * guard_db.c — the store's cases of the instruction-count guard (guard.h):
 * a point read and a cursor walk through db.h, each in its own read-only
 * transaction, as an application makes them, and an update in its own
 * read-write transaction while a snapshot is open.
 *
 * The store holds DB_ENTRIES entries of DB_VALUE bytes (YCSB's record size)
 * under 11-byte keys, put in a random order from the fixed seed (so leaves
 * are as full as random inserts leave them), in a pool that holds them all,
 * without a log (the read path is the same with one).  db_get reads one
 * key; db_scan seeks to a key and walks 1 to 100 entries (uniform, as
 * YCSB's workload E), reading each value.  db_update_si overwrites one
 * key's value in a read-write transaction while a read-only transaction of
 * the same thread is open, so that every commit moves its before-image to
 * the version store; the snapshot is ended and begun again every
 * DB_SNAPSHOT_OPS updates, and its end frees the versions it held (the
 * write side of snapshot isolation: hand-off and collection, docs/isolation.md).
 * Keys and lengths come from the fixed seed: every run does the same work.
 *
 * Syscalls: the store's own; it is removed with unlink.
 */
#include "bench/guard/guard.h"

#include <ruma/bm.h>
#include <ruma/core.h>
#include <ruma/db.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DB_SEED 20261206u
#define DB_ENTRIES 20000u
#define DB_VALUE 1000u
#define DB_PUTS_PER_TXN 100u
#define DB_SCAN_MAX 100u
#define DB_KEY_LEN 11u /* "g" and ten digits */
#define DB_SNAPSHOT_OPS 64u

struct db_case {
	ruma_db *db;
	char (*keys)[16]; /* the key of every entry (key_format), made at setup */
	ruma_db_table *table;
	ruma_rng rng;
	uint64_t sink; /* a byte of every value read, so that no read is skipped */
	ruma_db_txn *snap; /* db_update_si's open snapshot (NULL: none) */
	uint64_t updates;
	char path[512];
	unsigned char value[DB_VALUE];
};

/* The key of entry n: "g" and n's digits, scrambled so that key order is
 * not insertion order. */
static void key_format(uint32_t n, char buf[16])
{
	uint32_t x = n * 2654435761u; /* a bijection on 32 bits */
	snprintf(buf, 16, "g%010u", x);
}

static ruma_val key_of(const struct db_case *c, uint32_t n)
{
	return (ruma_val){ DB_KEY_LEN, c->keys[n] };
}

static void db_case_free(struct db_case *c)
{
	char store[600];
	if (c->snap)
		(void)ruma_db_commit(c->snap);
	(void)ruma_db_close(c->db);
	free(c->keys);
	snprintf(store, sizeof(store), "%s/store", c->path);
	unlink(store);
	rmdir(c->path);
	free(c);
}

/* Put the entries in a random order, DB_PUTS_PER_TXN to a transaction. */
static int db_load(struct db_case *c)
{
	uint32_t *order = malloc(DB_ENTRIES * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < DB_ENTRIES; i++)
		order[i] = i;
	for (uint32_t i = DB_ENTRIES - 1; i > 0; i--) {
		uint32_t j = (uint32_t)ruma_rng_below(&c->rng, i + 1);
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	int r = 0;
	for (uint32_t i = 0; !r && i < DB_ENTRIES; i += DB_PUTS_PER_TXN) {
		ruma_db_txn *x;
		if ((r = ruma_db_begin(c->db, 0, &x)))
			break;
		for (uint32_t k = i; !r && k < i + DB_PUTS_PER_TXN && k < DB_ENTRIES; k++) {
			ruma_val key = key_of(c, order[k]), val = { DB_VALUE, c->value };
			memcpy(c->value, &order[k], sizeof(order[k]));
			r = ruma_db_put(x, c->table, &key, &val, 0);
		}
		int r2 = r ? ruma_db_abort(x) : ruma_db_commit(x);
		r = r ? r : r2;
	}
	free(order);
	return r;
}

static int db_open_table(struct db_case *c)
{
	ruma_db_txn *x;
	int r = ruma_db_begin(c->db, 0, &x);
	if (r)
		return r;
	r = ruma_db_table_open(x, "guard", RUMA_DB_CREATE, &c->table);
	int r2 = r ? ruma_db_abort(x) : ruma_db_commit(x);
	return r ? r : r2;
}

int ruma_guard_db_setup(const char *dir, void **state)
{
	struct db_case *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	snprintf(c->path, sizeof(c->path), "%s/ruma-guard-%d-db", dir, (int)getpid());
	ruma_bm_config adv;
	ruma_bm_config_default(&adv);
	adv.virt_bytes = 1ull << 30; /* valgrind refuses the default 256 GiB */
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.flags = RUMA_DB_NOLOG;
	o.pool_bytes = 256ull << 20;
	o.advanced = &adv;
	ruma_rng_seed(&c->rng, DB_SEED);
	c->keys = malloc(DB_ENTRIES * sizeof(*c->keys));
	int r = c->keys ? ruma_db_open(c->path, &o, &c->db) : -ENOMEM;
	if (r) {
		free(c->keys);
		free(c);
		return r;
	}
	for (uint32_t n = 0; n < DB_ENTRIES; n++)
		key_format(n, c->keys[n]);
	if (!(r = db_open_table(c)))
		r = db_load(c);
	if (r) {
		db_case_free(c);
		return r;
	}
	*state = c;
	return 0;
}

/* A present key, drawn from the seed (formatted at setup: not counted). */
static ruma_val some_key(struct db_case *c)
{
	return key_of(c, (uint32_t)ruma_rng_below(&c->rng, DB_ENTRIES));
}

/* One point read of a present key. */
static int get_one(struct db_case *c)
{
	ruma_val key = some_key(c), val;
	ruma_db_txn *x;
	int r = ruma_db_begin(c->db, RUMA_DB_RDONLY, &x);
	if (r)
		return r;
	r = ruma_db_get(x, c->table, &key, &val);
	if (!r)
		c->sink += val.len == DB_VALUE ? ((const unsigned char *)val.data)[0] : 0;
	int r2 = ruma_db_commit(x);
	return r ? r : r2;
}

/* One walk of 1..DB_SCAN_MAX entries from a present key (fewer at the end). */
static int scan_one(struct db_case *c)
{
	ruma_val key = some_key(c), k, v;
	unsigned want = 1 + (unsigned)ruma_rng_below(&c->rng, DB_SCAN_MAX);
	ruma_db_txn *x;
	ruma_db_cursor *cur;
	int r = ruma_db_begin(c->db, RUMA_DB_RDONLY, &x);
	if (r)
		return r;
	if ((r = ruma_db_cursor_open(x, c->table, &cur))) {
		(void)ruma_db_abort(x);
		return r;
	}
	r = ruma_db_cursor_seek(cur, &key);
	for (unsigned n = 0; !r; r = ruma_db_cursor_next(cur)) {
		if ((r = ruma_db_cursor_get(cur, &k, &v)))
			break;
		c->sink += v.len == DB_VALUE ? ((const unsigned char *)v.data)[v.len - 1] : 0;
		if (++n == want)
			break;
	}
	ruma_db_cursor_close(cur);
	int r2 = ruma_db_commit(x);
	return r && r != RUMA_ENOTFOUND ? r : r2;
}

int ruma_guard_db_get(void *state, uint64_t ops)
{
	int r = 0;
	for (uint64_t i = 0; !r && i < ops; i++)
		r = get_one(state);
	return r;
}

int ruma_guard_db_scan(void *state, uint64_t ops)
{
	int r = 0;
	for (uint64_t i = 0; !r && i < ops; i++)
		r = scan_one(state);
	return r;
}

/* One overwrite in its own read-write transaction; the snapshot beside it
 * is renewed every DB_SNAPSHOT_OPS updates. */
static int update_one(struct db_case *c)
{
	int r = 0;
	if (c->snap && c->updates % DB_SNAPSHOT_OPS == 0) {
		r = ruma_db_commit(c->snap);
		c->snap = NULL;
	}
	if (!r && !c->snap)
		r = ruma_db_begin(c->db, RUMA_DB_RDONLY, &c->snap);
	if (r)
		return r;
	ruma_val key = some_key(c), val = { DB_VALUE, c->value };
	c->value[c->updates++ % DB_VALUE]++;
	ruma_db_txn *x;
	if ((r = ruma_db_begin(c->db, 0, &x)))
		return r;
	r = ruma_db_put(x, c->table, &key, &val, 0);
	int r2 = r ? ruma_db_abort(x) : ruma_db_commit(x);
	return r ? r : r2;
}

int ruma_guard_db_update_si(void *state, uint64_t ops)
{
	int r = 0;
	for (uint64_t i = 0; !r && i < ops; i++)
		r = update_one(state);
	return r;
}

void ruma_guard_db_teardown(void *state)
{
	db_case_free(state);
}
