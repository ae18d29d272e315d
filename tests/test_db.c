/*
 * test_db.c — include/ruma/db.h: every call and its misuse, cursors, table
 * list, statistics and the checker, a read-only transaction's snapshot, a
 * model-based random test against a sorted array with a pool much smaller
 * than the data, automatic
 * checkpoints keeping the log bounded, kill -9 during a write loop, and a
 * store whose catalog is damaged refused at open, a disk that fills up
 * while a durable store commits, and dropping a table (its misuse, no page
 * leaked, a simulated power loss at every sync of the drop).
 */
#include "test.h"

#include <ruma/db.h>
#include <ruma/btree.h>

#include "btree/btree_int.h"
#include "os/os.h"
#include "page0_util.h"

#include <sys/stat.h>

#define DB_TEST_NAME "db"
#include "db_util.h"
#include "db_crash.h"

static ruma_db_options small_opts(void)
{
	return db_test_opts(4u << 20);
}

static bool val_is(ruma_val v, const char *s)
{
	return v.len == strlen(s) && !memcmp(v.data, s, v.len);
}

static int t_basic(void)
{
	CHECK(!dirs());
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, NULL, &db));
	ruma_db_txn *x;
	ruma_db_table *t, *t2;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_EQ(ruma_db_table_open(x, "kv", 0, &t), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_table_open(x, "kv", RUMA_DB_CREATE, &t));
	CHECK_OK(ruma_db_table_open(x, "kv", 0, &t2));
	CHECK(t == t2);
	CHECK(!strcmp(ruma_db_table_name(t), "kv"));
	ruma_val k = sv("alpha"), v = sv("one"), got;
	CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
	CHECK_OK(ruma_db_get(x, t, &k, &got));
	CHECK(val_is(got, "one"));
	v = sv("uno");
	CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
	CHECK_EQ(ruma_db_put(x, t, &k, &v, RUMA_DB_NOOVERWRITE), RUMA_EEXISTS);
	ruma_val k2 = sv("beta"), k0 = sv("aaa");
	CHECK_OK(ruma_db_put(x, t, &k2, &v, RUMA_DB_APPEND));
	CHECK_EQ(ruma_db_put(x, t, &k0, &v, RUMA_DB_APPEND), RUMA_EEXISTS);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));

	/* reopen: committed data is there; a clean close left an empty log */
	struct stat st;
	CHECK(!stat(logpath, &st));
	CHECK(st.st_size <= 4096);
	CHECK_OK(ruma_db_open(path, NULL, &db));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	CHECK_OK(ruma_db_table_open(x, "kv", 0, &t));
	CHECK_OK(ruma_db_get(x, t, &k, &got));
	CHECK(val_is(got, "uno"));
	CHECK_OK(ruma_db_commit(x));
	/* abort undoes; del removes */
	CHECK_OK(ruma_db_begin(db, RUMA_DB_ASYNC, &x));
	CHECK_OK(ruma_db_del(x, t, &k));
	CHECK_EQ(ruma_db_del(x, t, &k), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_db_get(x, t, &k, &got), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_abort(x));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_get(x, t, &k, &got));
	CHECK(val_is(got, "uno"));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

static int t_misuse(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x, *r;
	ruma_db_table *t;
	ruma_db_cursor *c;
	ruma_val k = sv("k"), v = sv("v"), got;
	CHECK_EQ(ruma_db_open(NULL, &o, &db), -EINVAL);
	CHECK_EQ(ruma_db_open(path, &o, NULL), -EINVAL);
	o.flags = RUMA_DB_NOCREATE;
	CHECK_EQ(ruma_db_open(path, &o, &db), -ENOENT);
	o.flags = RUMA_DB_READONLY;
	CHECK_EQ(ruma_db_open(path, &o, &db), -ENOENT);
	o.flags = 64;
	CHECK_EQ(ruma_db_open(path, &o, &db), -EINVAL);
	o.flags = 0;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_EQ(ruma_db_begin(NULL, 0, &x), -EINVAL);
	CHECK_EQ(ruma_db_begin(db, 99, &x), -EINVAL);
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_EQ(ruma_db_table_open(x, "ruma:tables", RUMA_DB_CREATE, &t), -EINVAL);
	CHECK_EQ(ruma_db_table_open(x, "", RUMA_DB_CREATE, &t), -EINVAL);
	CHECK_EQ(ruma_db_table_open(x, NULL, RUMA_DB_CREATE, &t), -EINVAL);
	CHECK_OK(ruma_db_table_open(x, "t", RUMA_DB_CREATE, &t));
	CHECK_EQ(ruma_db_put(x, NULL, &k, &v, 0), -EINVAL);
	CHECK_EQ(ruma_db_put(x, t, NULL, &v, 0), -EINVAL);
	CHECK_EQ(ruma_db_put(x, t, &k, NULL, 0), -EINVAL);
	CHECK_EQ(ruma_db_put(x, t, &k, &v, 128), -EINVAL);
	CHECK_EQ(ruma_db_get(x, t, &k, NULL), -EINVAL);
	ruma_val empty = { 0, NULL };
	CHECK_EQ(ruma_db_put(x, t, &empty, &v, 0), -EINVAL);
	static char big[RUMA_DB_MAX_KEY + 1];
	ruma_val bigv = { RUMA_DB_MAX_VALUE + 1, big }; /* the length is refused first */
	CHECK_EQ(ruma_db_put(x, t, &k, &bigv, 0), RUMA_ETOOBIG);
	ruma_val bigk = { RUMA_DB_MAX_KEY + 1, big };
	CHECK_EQ(ruma_db_put(x, t, &bigk, &v, 0), RUMA_ETOOBIG);
	CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
	/* a second transaction does not see the uncommitted row (its snapshot)
	 * and conflicts on writing it; under two-phase locking reading it
	 * conflicts too */
	CHECK_EQ(ruma_db_begin(db, RUMA_DB_SNAPSHOT | RUMA_DB_LOCKING, &r), -EINVAL);
	CHECK_OK(ruma_db_begin(db, 0, &r));
	CHECK_EQ(ruma_db_get(r, t, &k, &got), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_db_put(r, t, &k, &v, 0), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_abort(r));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_LOCKING, &r));
	CHECK_EQ(ruma_db_get(r, t, &k, &got), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_abort(r));
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	CHECK_EQ(ruma_db_cursor_next(c), -EINVAL); /* unpositioned */
	CHECK_EQ(ruma_db_cursor_get(c, &k, &v), -EINVAL);
	CHECK_EQ(ruma_db_close(db), -EBUSY);       /* a transaction is open */
	CHECK_OK(ruma_db_commit(x));
	/* after the end: the transaction and its cursor are refused */
	CHECK_EQ(ruma_db_commit(x), -EINVAL);
	CHECK_EQ(ruma_db_abort(x), -EINVAL);
	CHECK_EQ(ruma_db_get(x, t, &k, &got), -EINVAL);
	CHECK_EQ(ruma_db_put(x, t, &k, &v, 0), -EINVAL);
	CHECK_EQ(ruma_db_cursor_first(c), -EINVAL);
	ruma_db_cursor_close(c);
	ruma_db_cursor_close(NULL);
	/* read-only transactions refuse writes */
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &r));
	CHECK_EQ(ruma_db_put(r, t, &k, &v, 0), -EACCES);
	CHECK_EQ(ruma_db_del(r, t, &k), -EACCES);
	CHECK_EQ(ruma_db_table_open(r, "new", RUMA_DB_CREATE, &t), -EACCES);
	CHECK_OK(ruma_db_commit(r));
	CHECK_EQ(ruma_db_stat(NULL, NULL), -EINVAL);
	CHECK_EQ(ruma_db_check(NULL), -EINVAL);
	CHECK_OK(ruma_db_close(db));
	CHECK_OK(ruma_db_close(NULL));
	/* a store opened read-only: every transaction is read-only */
	o.flags = RUMA_DB_READONLY;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db *db2;
	CHECK_EQ(ruma_db_open(path, &o, &db2), RUMA_ELOCKED);
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "t", 0, &t));
	CHECK_OK(ruma_db_get(x, t, &k, &got));
	CHECK_EQ(ruma_db_put(x, t, &k, &v, 0), -EACCES);
	CHECK_OK(ruma_db_abort(x));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

static void key_of(unsigned i, char *buf)
{
	snprintf(buf, 16, "k%06u", i);
}

/* Put keys k000000.. k<n-1> with value = key. */
static int put_range(ruma_db_txn *x, ruma_db_table *t, unsigned from, unsigned to, unsigned step)
{
	for (unsigned i = from; i < to; i += step) {
		char b[16];
		key_of(i, b);
		ruma_val k = sv(b);
		int rc = ruma_db_put(x, t, &k, &k, 0);
		if (rc)
			return rc;
	}
	return 0;
}

static bool cur_is(ruma_db_cursor *c, unsigned i)
{
	char b[16];
	ruma_val k, v;
	key_of(i, b);
	return !ruma_db_cursor_get(c, &k, &v) && val_is(k, b) && val_is(v, b);
}

static int t_cursor(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_cursor *c;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "t", RUMA_DB_CREATE, &t));
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	CHECK_EQ(ruma_db_cursor_first(c), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_db_cursor_last(c), RUMA_ENOTFOUND);
	CHECK_OK(put_range(x, t, 0, 100, 2)); /* even keys 0..98 */
	CHECK_OK(ruma_db_cursor_first(c));
	CHECK(cur_is(c, 0));
	unsigned n = 1, i = 0;
	while (!ruma_db_cursor_next(c)) {
		i += 2;
		CHECK(cur_is(c, i));
		n++;
	}
	CHECK_EQ(n, 50);
	CHECK_OK(ruma_db_cursor_last(c));
	CHECK(cur_is(c, 98));
	for (i = 98; i > 0; i -= 2) {
		CHECK_OK(ruma_db_cursor_prev(c));
		CHECK(cur_is(c, i - 2));
	}
	CHECK_EQ(ruma_db_cursor_prev(c), RUMA_ENOTFOUND);
	char b[16];
	key_of(31, b);
	ruma_val k = sv(b);
	CHECK_OK(ruma_db_cursor_seek(c, &k));
	CHECK(cur_is(c, 32));
	/* own writes between steps are seen */
	CHECK_OK(put_range(x, t, 33, 34, 1));
	CHECK_OK(ruma_db_cursor_next(c));
	CHECK(cur_is(c, 33));
	CHECK_OK(ruma_db_cursor_prev(c));
	CHECK(cur_is(c, 32));
	/* delete at the cursor, then go on */
	CHECK_OK(ruma_db_cursor_del(c));
	CHECK_EQ(ruma_db_cursor_get(c, NULL, NULL), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_cursor_next(c));
	CHECK(cur_is(c, 33));
	CHECK_OK(ruma_db_cursor_prev(c));
	CHECK(cur_is(c, 30));
	/* a bounded range [10, 20) both ways */
	key_of(20, b);
	k = sv(b);
	CHECK_OK(ruma_db_cursor_set_upper(c, &k));
	CHECK_OK(ruma_db_cursor_last(c));
	CHECK(cur_is(c, 18));
	key_of(10, b);
	k = sv(b);
	CHECK_OK(ruma_db_cursor_seek(c, &k));
	for (i = 10; i < 18; i += 2) {
		CHECK(cur_is(c, i));
		CHECK_OK(ruma_db_cursor_next(c));
	}
	CHECK(cur_is(c, 18));
	CHECK_EQ(ruma_db_cursor_next(c), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_cursor_set_upper(c, NULL));
	CHECK_OK(ruma_db_cursor_last(c));
	CHECK(cur_is(c, 98));
	ruma_db_cursor_close(c);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

static bool count_name(const char *name, void *ctx)
{
	char *s = ctx;
	strcat(s, name);
	strcat(s, ",");
	return true;
}

static int t_list_stat_check(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *a, *b;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "beta", RUMA_DB_CREATE, &b));
	CHECK_OK(ruma_db_table_open(x, "alpha", RUMA_DB_CREATE, &a));
	CHECK_OK(put_range(x, a, 0, 3000, 1));
	char names[64] = "";
	CHECK_OK(ruma_db_table_list(x, count_name, names));
	CHECK(!strcmp(names, "alpha,beta,"));
	ruma_db_table_stats ts;
	CHECK_OK(ruma_db_table_stat(x, a, &ts));
	CHECK_EQ(ts.entries, 3000);
	CHECK(ts.depth >= 2 && ts.pages > 2 && ts.bytes > 3000 * 14);
	CHECK_OK(ruma_db_table_stat(x, b, &ts));
	CHECK_EQ(ts.entries, 0);
	CHECK_OK(ruma_db_commit(x));
	ruma_db_stats s;
	CHECK_OK(ruma_db_stat(db, &s));
	CHECK_EQ(s.tables, 2);
	CHECK(s.pages > 2 && s.pool_bytes == o.pool_bytes);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* NOLOG: no log file, still a store across a clean close; advanced: the
 * buffer manager's settings, a small reservation filling up with a clear
 * error that leaves the transaction abortable. */
static int t_options(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_bm_config adv;
	ruma_bm_config_default(&adv);
	adv.virt_bytes = 8u << 20;
	o.flags = RUMA_DB_NOLOG;
	o.advanced = &adv;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK(access(logpath, F_OK) != 0);
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "t", RUMA_DB_CREATE, &t));
	CHECK_OK(put_range(x, t, 0, 100, 1));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	unsigned char big[RUMA_DB_MAX_INLINE - 16];
	memset(big, 1, sizeof(big));
	int rc = 0;
	for (unsigned i = 0; i < 20000 && !rc; i++) {
		char b[16];
		key_of(1000 + i, b);
		ruma_val k = sv(b), v = { sizeof(big), big };
		rc = ruma_db_put(x, t, &k, &v, 0);
	}
	CHECK_EQ(rc, RUMA_EVIRTFULL);
	CHECK_OK(ruma_db_abort(x));
	CHECK_OK(ruma_db_close(db));
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	CHECK_OK(ruma_db_table_open(x, "t", 0, &t));
	ruma_db_table_stats ts;
	CHECK_OK(ruma_db_table_stat(x, t, &ts));
	CHECK_EQ(ts.entries, 100);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* ---- model-based random test ---------------------------------------------------- */

#define MODEL_KEYS 12000u
#define MODEL_VAL 600u

/* The model: value length per key index (0 = absent), value bytes derived
 * from (index, version). */
typedef struct model {
	uint16_t len[MODEL_KEYS];
	uint32_t ver[MODEL_KEYS];
} model;

static void mval(unsigned i, uint32_t ver, unsigned len, unsigned char *out)
{
	for (unsigned j = 0; j < len; j++)
		out[j] = (unsigned char)(i * 31 + ver * 7 + j);
}

static bool entry_matches(const model *m, unsigned i, ruma_val k, ruma_val v)
{
	char b[16];
	unsigned char want[MODEL_VAL];
	key_of(i, b);
	if (!val_is(k, b) || v.len != m->len[i])
		return false;
	mval(i, m->ver[i], m->len[i], want);
	return !memcmp(v.data, want, v.len);
}

/* A random delete (one in four, when `del`) or put of key index i, in x
 * and in m. */
static int model_op(ruma_db_txn *x, ruma_db_table *t, model *m, unsigned i, bool del)
{
	unsigned char buf[MODEL_VAL];
	char b[16];
	key_of(i, b);
	ruma_val k = sv(b);
	if (del && ruma_rng_next(&test_rng) % 4 == 0) {
		int rc = ruma_db_del(x, t, &k);
		CHECK_EQ(rc, m->len[i] ? 0 : RUMA_ENOTFOUND);
		m->len[i] = 0;
	} else {
		unsigned len = 1 + (unsigned)(ruma_rng_next(&test_rng) % MODEL_VAL);
		m->ver[i]++;
		mval(i, m->ver[i], len, buf);
		ruma_val v = { len, buf };
		CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
		m->len[i] = (uint16_t)len;
	}
	return TEST_PASS;
}

static int model_write(ruma_db_txn *x, ruma_db_table *t, model *m, unsigned ops)
{
	for (unsigned n = 0; n < ops; n++)
		CHECK_EQ(model_op(x, t, m, (unsigned)(ruma_rng_next(&test_rng) % MODEL_KEYS), true),
			 TEST_PASS);
	return TEST_PASS;
}

/* Walk from key index `from` a few steps in one direction and compare. */
static int model_walk(ruma_db_txn *x, ruma_db_table *t, const model *m, unsigned from, bool up)
{
	ruma_db_cursor *c;
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	char b[16];
	key_of(from, b);
	ruma_val k = sv(b), ck, cv;
	int rc = up ? ruma_db_cursor_seek(c, &k) : ruma_db_cursor_last(c);
	long i = up ? (long)from : (long)MODEL_KEYS - 1;
	for (unsigned steps = 0; steps < 300; steps++) {
		while (i >= 0 && i < (long)MODEL_KEYS && !m->len[i])
			i += up ? 1 : -1;
		if (i < 0 || i >= (long)MODEL_KEYS) {
			CHECK_EQ(rc, RUMA_ENOTFOUND);
			break;
		}
		CHECK_OK(rc);
		CHECK_OK(ruma_db_cursor_get(c, &ck, &cv));
		CHECK(entry_matches(m, (unsigned)i, ck, cv));
		i += up ? 1 : -1;
		rc = up ? ruma_db_cursor_next(c) : ruma_db_cursor_prev(c);
	}
	ruma_db_cursor_close(c);
	return TEST_PASS;
}

static int model_full_check(ruma_db *db, const model *m)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_cursor *c;
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	CHECK_OK(ruma_db_table_open(x, "m", 0, &t));
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	int rc = ruma_db_cursor_first(c);
	for (unsigned i = 0; i < MODEL_KEYS; i++) {
		if (!m->len[i])
			continue;
		CHECK_OK(rc);
		ruma_val k, v;
		CHECK_OK(ruma_db_cursor_get(c, &k, &v));
		CHECK(entry_matches(m, i, k, v));
		rc = ruma_db_cursor_next(c);
	}
	CHECK_EQ(rc, RUMA_ENOTFOUND);
	ruma_db_cursor_close(c);
	CHECK_OK(ruma_db_commit(x));
	return TEST_PASS;
}

static int t_model(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	o.pool_bytes = 1u << 20; /* data: ~12000 * 300 B, several times the pool */
	model *m = calloc(1, sizeof(*m)), *saved = malloc(sizeof(*m));
	CHECK(m && saved);
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	for (unsigned round = 0; round < 60; round++) {
		ruma_db_txn *x;
		ruma_db_table *t;
		CHECK_OK(ruma_db_begin(db, RUMA_DB_ASYNC, &x));
		CHECK_OK(ruma_db_table_open(x, "m", RUMA_DB_CREATE, &t));
		memcpy(saved, m, sizeof(*m));
		CHECK_EQ(model_write(x, t, m, 400), TEST_PASS);
		unsigned from = (unsigned)(ruma_rng_next(&test_rng) % MODEL_KEYS);
		CHECK_EQ(model_walk(x, t, m, from, true), TEST_PASS);
		CHECK_EQ(model_walk(x, t, m, from, false), TEST_PASS);
		if (ruma_rng_next(&test_rng) % 4 == 0) {
			CHECK_OK(ruma_db_abort(x));
			memcpy(m, saved, sizeof(*m));
		} else {
			CHECK_OK(ruma_db_commit(x));
		}
		if (round % 20 == 19) {
			CHECK_OK(ruma_db_close(db));
			CHECK_OK(ruma_db_open(path, &o, &db));
			CHECK_EQ(model_full_check(db, m), TEST_PASS);
		}
	}
	ruma_bm_stats bs;
	ruma_bm_get_stats(ruma_db_bm(db), &bs);
	CHECK(bs.evictions > 0); /* the pool was much smaller than the data */
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	free(m);
	free(saved);
	dirs_remove();
	return TEST_PASS;
}

/* ---- cursors going on where their last fill stopped ------------------------------- */

/* The present key index of m after (up) or before i; -1: none. */
static long model_next(const model *m, long i, bool up)
{
	for (i += up ? 1 : -1; i >= 0 && i < (long)MODEL_KEYS; i += up ? 1 : -1)
		if (m->len[i])
			return i;
	return -1;
}

/* A key index within 4 of i (clamped to the model). */
static unsigned near_key(long i)
{
	long j = i + (long)(ruma_rng_next(&test_rng) % 9) - 4;
	return (unsigned)(j < 0 ? 0 : j >= (long)MODEL_KEYS ? (long)MODEL_KEYS - 1 : j);
}

/*
 * Walk 600 steps in x from a random key (up) or the last key, comparing
 * every entry with `view`; before a third of the steps, change a key near
 * the cursor (`del`: puts and deletes, else puts only): in x itself (own:
 * the change is in view too) or in a transaction of its own that commits
 * (m: x's snapshot must not see it).  The cursor's refills go on from
 * where the last fill stopped, in a leaf changed or not (a snapshot scan
 * that meets versions of deleted rows takes its slower path, without a
 * spot: puts only keep it on the fast one).
 */
static int spot_walk(ruma_db *db, ruma_db_txn *x, ruma_db_table *t, model *view, model *m,
		     bool own, bool up, bool del)
{
	ruma_db_cursor *c;
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	ruma_val ck, cv;
	long i;
	int rc;
	if (up) {
		unsigned from = (unsigned)(ruma_rng_next(&test_rng) % MODEL_KEYS);
		char b[16];
		key_of(from, b);
		ruma_val k = sv(b);
		rc = ruma_db_cursor_seek(c, &k);
		i = view->len[from] ? (long)from : model_next(view, from, true);
	} else {
		rc = ruma_db_cursor_last(c);
		i = model_next(view, MODEL_KEYS, false);
	}
	for (unsigned steps = 0; steps < 600 && i >= 0; steps++) {
		CHECK_OK(rc);
		CHECK_OK(ruma_db_cursor_get(c, &ck, &cv));
		CHECK(entry_matches(view, (unsigned)i, ck, cv));
		if (ruma_rng_next(&test_rng) % 3 == 0) {
			unsigned j = near_key(i);
			if (own) {
				CHECK_EQ(model_op(x, t, view, j, del), TEST_PASS);
			} else {
				ruma_db_txn *w;
				ruma_db_table *wt;
				CHECK_OK(ruma_db_begin(db, RUMA_DB_ASYNC, &w));
				CHECK_OK(ruma_db_table_open(w, "m", 0, &wt));
				CHECK_EQ(model_op(w, wt, m, j, del), TEST_PASS);
				CHECK_OK(ruma_db_commit(w));
			}
		}
		i = model_next(view, i, up);
		rc = up ? ruma_db_cursor_next(c) : ruma_db_cursor_prev(c);
	}
	if (i < 0)
		CHECK_EQ(rc, RUMA_ENOTFOUND);
	ruma_db_cursor_close(c);
	return TEST_PASS;
}

/* A fill stops at its last entry, and a refill from there goes on beyond
 * it; a seek to that very key must still give the key itself. */
static int spot_seek_back(ruma_db_txn *x, ruma_db_table *t)
{
	ruma_db_cursor *c;
	ruma_val k, v, k2;
	char b[16];
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	CHECK_OK(ruma_db_cursor_first(c));
	for (unsigned s = 0; s < 7; s++) /* the last entry of the first fill */
		CHECK_OK(ruma_db_cursor_next(c));
	CHECK_OK(ruma_db_cursor_get(c, &k, NULL));
	memcpy(b, k.data, k.len);
	k2 = (ruma_val){ k.len, b };
	CHECK_OK(ruma_db_cursor_seek(c, &k2));
	CHECK_OK(ruma_db_cursor_get(c, &k, &v));
	CHECK(k.len == k2.len && !memcmp(k.data, b, k.len));
	ruma_db_cursor_close(c);
	return TEST_PASS;
}

static int t_cursor_spot(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	o.pool_bytes = 1u << 20; /* several times smaller than the data: leaves are evicted */
	model *m = calloc(1, sizeof(*m)), *view = malloc(sizeof(*m));
	CHECK(m && view);
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_ASYNC, &x));
	CHECK_OK(ruma_db_table_open(x, "m", RUMA_DB_CREATE, &t));
	CHECK_EQ(model_write(x, t, m, 8000), TEST_PASS);
	CHECK_OK(ruma_db_commit(x));
	static const unsigned kinds[] = { RUMA_DB_RDONLY, RUMA_DB_SNAPSHOT, 0 };
	for (unsigned round = 0; round < 24; round++) {
		unsigned kind = kinds[round % 3];
		bool up = round % 2 == 0, del = round % 4 >= 2;
		CHECK_OK(ruma_db_begin(db, kind, &x));
		CHECK_OK(ruma_db_table_open(x, "m", 0, &t));
		memcpy(view, m, sizeof(*m));
		if (kind == RUMA_DB_RDONLY) { /* others commit beside the snapshot */
			CHECK_EQ(spot_seek_back(x, t), TEST_PASS);
			CHECK_EQ(spot_walk(db, x, t, view, m, false, up, del), TEST_PASS);
			CHECK_OK(ruma_db_commit(x));
		} else { /* the transaction's own writes */
			CHECK_EQ(spot_walk(db, x, t, view, m, true, up, del), TEST_PASS);
			CHECK_OK(ruma_db_commit(x));
			memcpy(m, view, sizeof(*m));
		}
	}
	CHECK_EQ(model_full_check(db, m), TEST_PASS);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	free(m);
	free(view);
	dirs_remove();
	return TEST_PASS;
}

/* ---- automatic checkpoints ---------------------------------------------------------- */

static int t_checkpoint(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	o.checkpoint_bytes = 1u << 20;
	o.checkpoint_ms = 200;
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	unsigned char val[800];
	memset(val, 7, sizeof(val));
	uint64_t most = 0;
	for (unsigned round = 0; round < 40; round++) {
		ruma_db_txn *x;
		ruma_db_table *t;
		CHECK_OK(ruma_db_begin(db, RUMA_DB_ASYNC, &x));
		CHECK_OK(ruma_db_table_open(x, "c", RUMA_DB_CREATE, &t));
		for (unsigned i = 0; i < 500; i++) {
			char b[16];
			key_of(i, b);
			ruma_val k = sv(b), v = { sizeof(val), val };
			CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
		}
		CHECK_OK(ruma_db_commit(x));
		usleep(20000);
		struct stat st;
		CHECK(!stat(logpath, &st));
		most = RUMA_MAX(most, (uint64_t)st.st_blocks * 512);
	}
	ruma_db_stats s;
	CHECK_OK(ruma_db_stat(db, &s));
	/* 40 rounds log about 64 MB without checkpoints; with them the log
	 * stays a few MB */
	fprintf(stderr, "  log at most %" PRIu64 " bytes on disk, %" PRIu64 " checkpoints\n",
		most, s.checkpoints);
	CHECK(s.checkpoints > 0);
	CHECK(most < (16u << 20));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* ---- kill -9 during a write loop ---------------------------------------------------- */

#define KILL_BATCH 10u

/* The child: transaction i puts keys i*10 .. i*10+9, commits, then reports i. */
static void kill_child(int fd)
{
	ruma_db *db;
	ruma_db_options o = small_opts();
	if (ruma_db_open(path, &o, &db))
		_exit(2);
	for (uint32_t i = 0;; i++) {
		ruma_db_txn *x;
		ruma_db_table *t;
		if (db_begin_table(db, 0, "k", RUMA_DB_CREATE, &x, &t) ||
		    put_range(x, t, i * KILL_BATCH, (i + 1) * KILL_BATCH, 1) || ruma_db_commit(x))
			_exit(3);
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(4);
	}
}

static int t_kill9(void)
{
	CHECK(!dirs());
	/* the child goes on committing and reporting until the kill lands:
	 * the last report is the last one in the pipe */
	unsigned last;
	CHECK_EQ(db_kill9(kill_child, 200 + (unsigned)(ruma_rng_next(&test_rng) % 300), &last),
		 TEST_PASS);
	/* every reported transaction is there whole; after them at most one
	 * more (committed, killed before it reported), and nothing else */
	ruma_db *db;
	ruma_db_options o = small_opts();
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "k", 0, &x, &t));
	ruma_db_table_stats ts;
	CHECK_OK(ruma_db_table_stat(x, t, &ts));
	CHECK(ts.entries == (last + 1) * KILL_BATCH || ts.entries == (last + 2) * KILL_BATCH);
	for (uint32_t i = 0; i < (uint32_t)ts.entries; i++) {
		char b[16];
		ruma_val v;
		key_of(i, b);
		ruma_val k = sv(b);
		CHECK_OK(ruma_db_get(x, t, &k, &v));
		CHECK(val_is(v, b));
	}
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}

/* Read every key of table k through a store opened read-only; with
 * die_open, the process then ends without closing it (as a killed reader). */
static int read_all_readonly(bool die_open)
{
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_open_readonly(&o, &db));
	CHECK_OK(db_begin_table(db, 0, "k", 0, &x, &t));
	ruma_db_cursor *c;
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	unsigned n = 0;
	int rc;
	for (rc = ruma_db_cursor_first(c); !rc; rc = ruma_db_cursor_next(c))
		n++;
	CHECK_EQ(rc, RUMA_ENOTFOUND);
	CHECK_EQ(n, 3000u);
	ruma_val k = sv("new"), v = sv("value");
	CHECK_EQ(ruma_db_put(x, t, &k, &v, 0), -EACCES);
	if (die_open)
		_exit(0);
	ruma_db_cursor_close(c);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	return TEST_PASS;
}

/* A store opened read-only is never written: its file and log are byte for
 * byte what they were, after a clean close and after a reader that ended
 * without closing (it stays clean: the next open recovers nothing). */
static int t_readonly_writes_nothing(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(db_begin_table(db, 0, "k", RUMA_DB_CREATE, &x, &t));
	for (uint32_t i = 0; i < 3000; i++) {
		char b[16];
		key_of(i, b);
		ruma_val k = sv(b);
		CHECK_OK(ruma_db_put(x, t, &k, &k, 0));
	}
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	size_t slen, llen;
	char *store = test_file_bytes(path, &slen), *log = test_file_bytes(logpath, &llen);
	CHECK(store && log);
	CHECK_EQ(read_all_readonly(false), TEST_PASS);
	CHECK(test_file_is(path, store, slen) && test_file_is(logpath, log, llen));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(read_all_readonly(true) == TEST_PASS ? 0 : 1);
	CHECK_EQ(test_wait_status(pid), 0);
	CHECK(test_file_is(path, store, slen) && test_file_is(logpath, log, llen));
	free(store);
	free(log);
	ruma_bm_recovery r;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_bm_get_recovery(ruma_db_bm(db), &r);
	CHECK(!r.ran);
	return db_test_end(db);
}

static char said[512];

static void keep_said(void *ctx, const char *line)
{
	(void)ctx;
	snprintf(said, sizeof(said), "%s", line);
}

/* A data leaf of the store at path with more than 100 entries (read from
 * the file: level 0 at byte 4 and the count at byte 6 of a node). */
static ruma_pid full_leaf(uint64_t hw)
{
	int fd = open(path, O_RDONLY);
	ruma_pid found = 0;
	for (ruma_pid pid = 2; fd >= 0 && pid < hw && !found; pid++) {
		unsigned char h[8];
		uint16_t count;
		if (pread(fd, h, sizeof(h), (off_t)(pid * RUMA_BM_PAGE_SIZE)) != (ssize_t)sizeof(h))
			break;
		memcpy(&count, h + 6, 2);
		found = h[4] == 0 && count > 100 ? pid : 0;
	}
	if (fd >= 0)
		close(fd);
	return found;
}

/* The catalog root in page 0 (checksum recomputed) zeroed, naming the
 * bitmap page, a page beyond the store, or a data leaf: the open is
 * refused with RUMA_ECORRUPT and a message naming the catalog, instead of
 * a new catalog made on top of the pages in use; with the slot put back
 * the store opens and checks clean. */
static int t_catalog_damaged(void)
{
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "kv"));
	CHECK_OK(put_range(x, t, 0, 3000, 1));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	struct bm_meta_hdr h, saved;
	uint64_t w0;
	CHECK_OK(page0_read(path, &h, &w0));
	saved = h;
	ruma_pid leaf = full_leaf(h.alloc_hw);
	CHECK(leaf != 0);
	uint64_t bad[] = { 0, 1 + 1, h.alloc_hw + 1 + 5, leaf + 1 }; /* slot = root + 1 */
	o.message = keep_said;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h.slots[RUMA_BTREE_META_SLOT] = bad[i];
		CHECK_OK(page0_craft(path, h, w0));
		said[0] = 0;
		CHECK_EQ(ruma_db_open(path, &o, &db), RUMA_ECORRUPT);
		printf("  slot %llu: %s\n", (unsigned long long)bad[i], said);
		CHECK(strstr(said, "catalog is damaged"));
	}
	CHECK_OK(page0_craft(path, saved, w0));
	CHECK_OK(ruma_db_open(path, &o, &db));
	return db_test_end(db);
}

/* Commit key i in a transaction of its own: the put's or the commit's result. */
static int commit_one(ruma_db *db, ruma_db_table *t, unsigned i)
{
	ruma_db_txn *x;
	char b[16];
	int rc = ruma_db_begin(db, 0, &x);
	if (rc)
		return rc;
	key_of(i, b);
	ruma_val k = sv(b);
	rc = ruma_db_put(x, t, &k, &k, 0);
	if (rc) {
		(void)ruma_db_abort(x);
		return rc;
	}
	return ruma_db_commit(x);
}

/* The disk fills up (every pwrite and fallocate fails with ENOSPC) while a
 * durable store commits: the commit fails with -ENOSPC and says why, later
 * ones fail too (the log is dead: nothing after the failed write can be
 * trusted); the store reopens, recovers every acknowledged commit, and the
 * failed one is absent. */
static int t_disk_full(void)
{
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	o.message = keep_said;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "kv"));
	CHECK_OK(ruma_db_commit(x));
	unsigned acked = 0;
	int rc = 0;
	for (unsigned i = 0; i < 1000 && rc == 0; i++) {
		if (i == 300) {
			ruma_os_inject(RUMA_SYS_PWRITE, 1, ENOSPC, true);
			ruma_os_inject(RUMA_SYS_PWRITEV, 1, ENOSPC, true);
			ruma_os_inject(RUMA_SYS_FALLOCATE, 1, ENOSPC, true);
		}
		rc = commit_one(db, t, i);
		acked = rc == 0 ? i + 1 : acked;
	}
	CHECK_EQ(rc, -ENOSPC);
	CHECK_EQ(acked, 300u);
	printf("  %s\n", said);
	CHECK(strstr(said, "No space left") && strstr(said, logpath));
	CHECK_EQ(commit_one(db, t, 5000), -ENOSPC);
	ruma_os_inject_clear();
	CHECK(ruma_db_close(db) != 0); /* the store stays marked open: recovered next */
	o.message = quiet;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "kv", 0, &x, &t));
	for (unsigned i = 0; i <= acked; i++) {
		char b[16];
		key_of(i, b);
		ruma_val k = sv(b), got;
		CHECK_EQ(ruma_db_get(x, t, &k, &got), i < acked ? 0 : RUMA_ENOTFOUND);
	}
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}


/* Table a: n rows of 1000-byte values (4 a page); table b: 10 small rows. */
static int fill_ab(ruma_db *db, unsigned n)
{
	static char big[1000];
	ruma_db_txn *x;
	ruma_db_table *a, *b;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "a", RUMA_DB_CREATE, &a));
	CHECK_OK(ruma_db_table_open(x, "b", RUMA_DB_CREATE, &b));
	for (unsigned i = 0; i < n; i++) {
		char kb[16];
		key_of(i, kb);
		memset(big, 'a' + (int)(i % 26), sizeof(big));
		ruma_val k = sv(kb), v = { sizeof(big), big };
		CHECK_OK(ruma_db_put(x, a, &k, &v, 0));
	}
	CHECK_OK(put_range(x, b, 0, 10, 1));
	CHECK_OK(ruma_db_commit(x));
	return TEST_PASS;
}

/* Table a holds its n rows whole, or is gone; b holds its 10 rows; the store
 * check finds every page reached once and none leaked.  *present: a's fate. */
static int a_whole_or_gone(ruma_db *db, unsigned n, bool *present)
{
	ruma_db_txn *x;
	ruma_db_table *a, *b;
	ruma_db_table_stats ts;
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	int rc = ruma_db_table_open(x, "a", 0, &a);
	CHECK(rc == 0 || rc == RUMA_ENOTFOUND);
	*present = rc == 0;
	char names[64] = "";
	CHECK_OK(ruma_db_table_list(x, count_name, names));
	CHECK(!strcmp(names, *present ? "a,b," : "b,"));
	if (*present) {
		CHECK_OK(ruma_db_table_stat(x, a, &ts));
		CHECK_EQ(ts.entries, n);
	}
	CHECK_OK(ruma_db_table_open(x, "b", 0, &b));
	CHECK_OK(ruma_db_table_stat(x, b, &ts));
	CHECK_EQ(ts.entries, 10);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_check(db));
	return TEST_PASS;
}

/* Dropping a table: refused in a read-only transaction and while another
 * transaction is open; inside the transaction the table is gone (its handle
 * and cursors -EINVAL, its name not found, -EBUSY to create it again), for
 * other transactions it is RUMA_ECONFLICT; an abort brings it back whole,
 * with the transaction's other writes undone; a commit frees every page of
 * the tree (the store check finds none leaked, the free pages grow), the
 * name can then be created again, and all of it holds after a reopen. */
static int t_drop(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_txn *x, *y;
	ruma_db_table *a, *b, *a2;
	ruma_db_cursor *c;
	bool present;
	ruma_val k = sv("k000001"), got;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_EQ(fill_ab(db, 2400), TEST_PASS);
	ruma_db_stats before, after;
	CHECK_OK(ruma_db_stat(db, &before));
	CHECK_OK(db_begin_table(db, 0, "a", 0, &x, &a));
	CHECK_OK(ruma_db_table_open(x, "b", 0, &b));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &y));
	CHECK_EQ(ruma_db_table_drop(y, a), -EACCES);
	CHECK_EQ(ruma_db_table_drop(x, a), -EBUSY); /* y is open */
	CHECK_OK(ruma_db_commit(y));
	CHECK_OK(put_range(x, b, 10, 11, 1));
	CHECK_OK(ruma_db_table_drop(x, a));
	CHECK_EQ(ruma_db_get(x, a, &k, &got), -EINVAL);
	CHECK_EQ(ruma_db_table_open(x, "a", 0, &a2), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_db_table_open(x, "a", RUMA_DB_CREATE, &a2), -EBUSY);
	CHECK_OK(ruma_db_abort(x)); /* a back, b's row undone */
	CHECK_EQ(a_whole_or_gone(db, 2400, &present), TEST_PASS);
	CHECK(present);

	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_cursor_open(x, a, &c));
	CHECK_OK(ruma_db_table_drop(x, a));
	CHECK_EQ(ruma_db_cursor_first(c), -EINVAL);
	ruma_db_cursor_close(c);
	CHECK_EQ(ruma_db_table_drop(x, a), -EINVAL);
	CHECK_OK(ruma_db_begin(db, 0, &y)); /* begun after the drop */
	CHECK_EQ(ruma_db_table_open(y, "a", 0, &a2), RUMA_ECONFLICT);
	CHECK_EQ(ruma_db_get(y, a, &k, &got), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_get(y, b, &k, &got)); /* other tables as usual */
	CHECK_OK(ruma_db_commit(y));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_stat(db, &after));
	printf("  free pages: %llu before the drop, %llu after\n",
	       (unsigned long long)before.pages_free, (unsigned long long)after.pages_free);
	CHECK(after.pages_free >= before.pages_free + 600);
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_EQ(ruma_db_get(x, a, &k, &got), -EINVAL);
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(a_whole_or_gone(db, 2400, &present), TEST_PASS);
	CHECK(!present);
	CHECK_OK(db_reopen(&db, &o));
	CHECK_EQ(a_whole_or_gone(db, 2400, &present), TEST_PASS);
	CHECK(!present);
	CHECK_OK(db_begin_table(db, 0, "a", RUMA_DB_CREATE, &x, &a));
	CHECK_OK(put_range(x, a, 0, 5, 1));
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}

/* A simulated power loss at the nth fdatasync of a drop, for every n: the
 * reopened store has table a whole or gone, never part of it, and no page
 * leaked or reachable twice (an open finishes a drop whose start was
 * durable); both outcomes occur; a read-only open of such a store recovers
 * it (with writes) and finishes the drop first. */
static int t_drop_powerloss(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	unsigned outcomes[2] = { 0, 0 };
	for (unsigned nth = 1; nth <= 12; nth++) {
		ruma_db *db;
		ruma_db_txn *x;
		ruma_db_table *a;
		CHECK_OK(db_powerloss_open(&o, &db));
		CHECK_EQ(fill_ab(db, 2400), TEST_PASS);
		CHECK_OK(db_begin_table(db, 0, "a", 0, &x, &a));
		ruma_os_inject_hook(RUMA_SYS_FDATASYNC, nth, power_off, NULL);
		(void)ruma_db_table_drop(x, a);
		(void)ruma_db_commit(x);
		bool lost = db_powerloss_close(db);
		CHECK_OK(db_open_readonly(&o, &db));
		CHECK_OK(ruma_db_close(db));
		CHECK_OK(ruma_db_open(path, &o, &db));
		bool present;
		CHECK_EQ(a_whole_or_gone(db, 2400, &present), TEST_PASS);
		CHECK_OK(ruma_db_close(db));
		outcomes[present]++;
		if (!lost)
			break; /* the drop ended before the nth sync */
	}
	printf("  a present after %u power losses, gone after %u\n", outcomes[1], outcomes[0]);
	CHECK(outcomes[0] > 0 && outcomes[1] > 0);
	dirs_remove();
	return TEST_PASS;
}

/* A read-only transaction reads the committed state as of its begin: a
 * writer's uncommitted changes and its later commit are not seen, by get or
 * cursor in either direction, and the row the writer holds is no conflict.
 * A RUMA_DB_SNAPSHOT transaction reads the same way plus its own writes,
 * and its write to a row committed since it began conflicts. */
static int t_snapshot(void)
{
	ruma_db *db;
	ruma_db_txn *w, *r;
	ruma_db_table *t;
	ruma_db_cursor *c;
	ruma_db_options o = small_opts();
	ruma_val a = sv("a"), b = sv("b"), cc = sv("c"), k, got;
	ruma_val v1 = sv("1"), v2 = sv("2");
	CHECK(!dirs());
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_begin(db, 0, &w));
	CHECK_OK(ruma_db_table_open(w, "t", RUMA_DB_CREATE, &t));
	CHECK_OK(ruma_db_put(w, t, &a, &v1, 0));
	CHECK_OK(ruma_db_put(w, t, &b, &v1, 0));
	CHECK_OK(ruma_db_commit(w));
	CHECK_OK(ruma_db_begin(db, 0, &w));
	CHECK_OK(ruma_db_put(w, t, &a, &v2, 0));
	CHECK_OK(ruma_db_del(w, t, &b));
	CHECK_OK(ruma_db_put(w, t, &cc, &v2, 0));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &r));
	CHECK_OK(ruma_db_get(r, t, &a, &got)); /* held by w: no conflict */
	CHECK(val_is(got, "1"));
	CHECK_OK(ruma_db_commit(w));
	CHECK_OK(ruma_db_get(r, t, &b, &got));
	CHECK(val_is(got, "1"));
	CHECK_EQ(ruma_db_get(r, t, &cc, &got), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_cursor_open(r, t, &c));
	CHECK_OK(ruma_db_cursor_first(c));
	CHECK_OK(ruma_db_cursor_get(c, &k, &got));
	CHECK(val_is(k, "a") && val_is(got, "1"));
	CHECK_OK(ruma_db_cursor_next(c));
	CHECK_OK(ruma_db_cursor_get(c, &k, &got));
	CHECK(val_is(k, "b") && val_is(got, "1"));
	CHECK_EQ(ruma_db_cursor_next(c), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_cursor_last(c));
	CHECK_OK(ruma_db_cursor_get(c, &k, NULL));
	CHECK(val_is(k, "b"));
	CHECK_OK(ruma_db_cursor_prev(c));
	CHECK_OK(ruma_db_cursor_get(c, &k, NULL));
	CHECK(val_is(k, "a"));
	CHECK_EQ(ruma_db_cursor_prev(c), RUMA_ENOTFOUND);
	ruma_db_cursor_close(c);
	CHECK_OK(ruma_db_commit(r));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &r)); /* a new snapshot: w's commit */
	CHECK_EQ(ruma_db_get(r, t, &b, &got), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_get(r, t, &cc, &got));
	CHECK(val_is(got, "2"));
	CHECK_OK(ruma_db_commit(r));
	/* read-write under snapshot isolation: no read locks, first writer wins */
	CHECK_OK(ruma_db_begin(db, RUMA_DB_SNAPSHOT, &r));
	CHECK_OK(ruma_db_begin(db, 0, &w));
	CHECK_OK(ruma_db_put(w, t, &a, &v1, 0));
	CHECK_OK(ruma_db_get(r, t, &a, &got)); /* held by w: the snapshot's value */
	CHECK(val_is(got, "2"));
	CHECK_OK(ruma_db_commit(w));
	CHECK_EQ(ruma_db_put(r, t, &a, &v2, 0), RUMA_ECONFLICT); /* w committed it later */
	CHECK_OK(ruma_db_put(r, t, &cc, &v1, 0));
	CHECK_OK(ruma_db_get(r, t, &cc, &got)); /* its own write */
	CHECK(val_is(got, "1"));
	CHECK_OK(ruma_db_abort(r));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* The keys a cursor of txn walks in t, first to last, joined into out. */
static int cursor_keys(ruma_db_txn *txn, ruma_db_table *t, char *out, size_t cap)
{
	ruma_db_cursor *c;
	ruma_val k;
	size_t n = 0;
	int rc = ruma_db_cursor_open(txn, t, &c);
	if (rc)
		return rc;
	for (rc = ruma_db_cursor_first(c); !rc; rc = ruma_db_cursor_next(c)) {
		if ((rc = ruma_db_cursor_get(c, &k, NULL)) || n + k.len + 1 > cap)
			break;
		memcpy(out + n, k.data, k.len);
		n += k.len;
	}
	out[n] = 0;
	ruma_db_cursor_close(c);
	return rc == RUMA_ENOTFOUND ? 0 : rc ? rc : -ENOBUFS;
}

/* Read-write transactions run under snapshot isolation by default: their
 * point reads and cursors never see another transaction's uncommitted rows
 * (RUMA_DB_LOCKING cursors do, as documented).  ruma_db_lock takes a row as
 * a write would: others' writes of it conflict until the end, under
 * snapshot isolation it conflicts with a change committed since the
 * transaction began, and it keeps write skew off the rows it locks. */
static int t_default_isolation(void)
{
	ruma_db *db;
	ruma_db_txn *w, *x, *y;
	ruma_db_table *t;
	ruma_db_options o = small_opts();
	ruma_val a = sv("a"), b = sv("b"), c = sv("c"), d = sv("d"), got;
	ruma_val v1 = sv("1"), v2 = sv("2");
	char keys[16];
	CHECK_OK(db_test_start(&o, &db, &w, &t, "t"));
	CHECK_OK(ruma_db_put(w, t, &a, &v1, 0));
	CHECK_OK(ruma_db_put(w, t, &b, &v1, 0));
	CHECK_OK(ruma_db_commit(w));
	/* w's uncommitted insert and delete are invisible to x, seen by y */
	CHECK_OK(ruma_db_begin(db, 0, &w));
	CHECK_OK(ruma_db_put(w, t, &c, &v1, 0));
	CHECK_OK(ruma_db_del(w, t, &a));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(cursor_keys(x, t, keys, sizeof keys));
	CHECK(!strcmp(keys, "ab"));
	CHECK_EQ(ruma_db_get(x, t, &c, &got), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_get(x, t, &a, &got));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_LOCKING, &y));
	CHECK_OK(cursor_keys(y, t, keys, sizeof keys));
	CHECK(!strcmp(keys, "bc"));
	CHECK_OK(ruma_db_abort(y));
	CHECK_OK(ruma_db_commit(w));
	CHECK_OK(cursor_keys(x, t, keys, sizeof keys)); /* still x's snapshot */
	CHECK(!strcmp(keys, "ab"));
	/* a lock on a row changed since x began conflicts; one on an absent
	 * row holds off another transaction's insert of it */
	CHECK_EQ(ruma_db_lock(x, t, &c), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_lock(x, t, &d));
	CHECK_OK(ruma_db_begin(db, 0, &y));
	CHECK_EQ(ruma_db_put(y, t, &d, &v1, 0), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_abort(y));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &y));
	CHECK_EQ(ruma_db_lock(y, t, &d), -EACCES);
	CHECK_OK(ruma_db_commit(y));
	/* write skew (G2-item) on rows b and c: each reads both and writes
	 * one; with the other row locked the second one conflicts */
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_begin(db, 0, &y));
	CHECK_OK(ruma_db_get(x, t, &b, &got));
	CHECK_OK(ruma_db_get(y, t, &c, &got));
	CHECK_OK(ruma_db_lock(x, t, &c));
	CHECK_OK(ruma_db_put(x, t, &b, &v2, 0));
	CHECK_EQ(ruma_db_lock(y, t, &b), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_abort(y));
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}

/* The registry of open snapshots: many at once from one thread, each
 * reading its own state; past its 4096 slots a clear -EAGAIN; slots freed
 * by commit are taken again. */
static int t_many_snapshots(void)
{
	enum { MAX = 4096 };
	ruma_db *db;
	ruma_db_txn *w, **r = calloc(MAX + 1, sizeof(*r));
	ruma_db_table *t;
	ruma_db_options o = small_opts();
	ruma_val k = sv("k"), got;
	char num[16];
	CHECK(r != NULL);
	CHECK(!dirs());
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_begin(db, 0, &w));
	CHECK_OK(ruma_db_table_open(w, "t", RUMA_DB_CREATE, &t));
	CHECK_OK(ruma_db_commit(w));
	for (unsigned i = 0; i < MAX; i++) {
		if (i % 512 == 0) { /* a new value every 512 snapshots */
			snprintf(num, sizeof(num), "%u", i);
			ruma_val v = sv(num);
			CHECK_OK(ruma_db_begin(db, 0, &w));
			CHECK_OK(ruma_db_put(w, t, &k, &v, 0));
			CHECK_OK(ruma_db_commit(w));
		}
		CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &r[i]));
	}
	CHECK_EQ(ruma_db_begin(db, RUMA_DB_RDONLY, &r[MAX]), -EAGAIN);
	for (unsigned i = 0; i < MAX; i += 97) {
		CHECK_OK(ruma_db_get(r[i], t, &k, &got));
		snprintf(num, sizeof(num), "%u", i / 512 * 512);
		CHECK(val_is(got, num));
	}
	CHECK_OK(ruma_db_commit(r[7]));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &r[7])); /* the freed slot */
	CHECK_OK(ruma_db_get(r[7], t, &k, &got));
	CHECK(val_is(got, "3584"));
	for (unsigned i = 0; i < MAX; i++)
		CHECK_OK(ruma_db_commit(r[i]));
	CHECK_OK(ruma_db_close(db));
	free(r);
	return 0;
}

static const struct test_case cases[] = {
	{ "basic", t_basic },
	{ "misuse", t_misuse },
	{ "cursor", t_cursor },
	{ "snapshot", t_snapshot },
	{ "default_isolation", t_default_isolation },
	{ "many_snapshots", t_many_snapshots },
	{ "list_stat_check", t_list_stat_check },
	{ "options", t_options },
	{ "model", t_model },
	{ "cursor_spot", t_cursor_spot },
	{ "checkpoint", t_checkpoint },
	{ "kill9", t_kill9 },
	{ "catalog_damaged", t_catalog_damaged },
	{ "disk_full", t_disk_full },
	{ "drop", t_drop },
	{ "drop_powerloss", t_drop_powerloss },
	{ "readonly_writes_nothing", t_readonly_writes_nothing },
};

int main(int argc, char **argv)
{
	return test_main("db", cases, TEST_N(cases), argc, argv);
}
