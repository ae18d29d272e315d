/*
 * test_db_load.c — bulk loads (ruma_db_load_*, include/ruma/db.h): a load
 * of inline, escaped and BLOB values read back by get and cursors in both
 * directions, out of memory, before and after a reopen and after puts and
 * deletes over the loaded pages; keys up to the limit with long common
 * prefixes (the largest fences); misuse; an abort and a refused end free
 * every page; older snapshots are refused, newer ones see the whole table;
 * an I/O error; kill -9 during a load and after one; a simulated power
 * loss at every sync of a load.
 */
#include "test.h"

#include <ruma/db.h>

#include "os/os.h"

#define DB_TEST_NAME "db_load"
#include "db_util.h"
#include "db_crash.h"

static ruma_db_options small_opts(void)
{
	return db_test_opts(4u << 20);
}

static void key_of(uint32_t i, char *b)
{
	snprintf(b, 16, "k%09u", i);
}

/* Entry i's value in variant `var` (1: as loaded, 2: as rewritten): most
 * short, some starting with the bytes stored escaped, every 1000th a BLOB. */
static size_t val_of(uint32_t i, unsigned var, uint8_t *b)
{
	size_t len = (i * 7919u + var * 31u) % 300u + (var == 2 ? 200u : 0u);
	if (i % 1000 == 999)
		len = 3000u + (i % 7u) * 1000u;
	for (size_t j = 0; j < len; j++)
		b[j] = (uint8_t)(i * 31u + j * 7u + var);
	if (len && i % 97 == 5)
		b[0] = (uint8_t)(0xfe + i % 2);
	return len;
}

static bool val_eq(ruma_val v, uint32_t i, unsigned var)
{
	static uint8_t want[16384];
	size_t len = val_of(i, var, want);
	return v.len == len && !memcmp(v.data, want, len);
}

static int load_n(ruma_db *db, const char *name, uint32_t n)
{
	static uint8_t vb[16384];
	ruma_db_loader *ld;
	CHECK_OK(ruma_db_load_begin(db, name, &ld));
	for (uint32_t i = 0; i < n; i++) {
		char kb[16];
		key_of(i, kb);
		ruma_val k = sv(kb), v = { val_of(i, 1, vb), vb };
		CHECK_OK(ruma_db_load_put(ld, &k, &v));
	}
	uint64_t got;
	CHECK_OK(ruma_db_load_end(ld, &got));
	CHECK_EQ(got, (uint64_t)n);
	return TEST_PASS;
}

/* The table after `changed`: the loaded entries i < n, or, changed, with
 * every 5th deleted, i % 5 == 1 rewritten and key_of(i) + "a" inserted
 * after each i % 7 == 0; checked both ways by cursor and by gets. */
static bool present(uint32_t i, bool changed) { return !changed || i % 5 != 0; }
static unsigned variant(uint32_t i, bool changed) { return changed && i % 5 == 1 ? 2 : 1; }

static int check_walk(ruma_db_cursor *c, uint32_t n, bool changed, bool desc)
{
	int rc = desc ? ruma_db_cursor_last(c) : ruma_db_cursor_first(c);
	for (uint32_t s = 0; s < n; s++) {
		uint32_t i = desc ? n - 1 - s : s;
		for (int part = 0; part < 2; part++) {
			bool extra = (part == 0) == desc; /* "a" follows i ascending */
			if (extra ? !(changed && i % 7 == 0) : !present(i, changed))
				continue;
			char kb[16];
			ruma_val k, v;
			key_of(i, kb);
			if (extra)
				strcat(kb, "a");
			CHECK_OK(rc);
			CHECK_OK(ruma_db_cursor_get(c, &k, &v));
			CHECK(k.len == strlen(kb) && !memcmp(k.data, kb, k.len));
			CHECK(extra ? (v.len == 1 && *(const char *)v.data == 'x') :
				      val_eq(v, i, variant(i, changed)));
			rc = desc ? ruma_db_cursor_prev(c) : ruma_db_cursor_next(c);
		}
	}
	CHECK_EQ(rc, RUMA_ENOTFOUND);
	return TEST_PASS;
}

static int check_table(ruma_db *db, const char *name, uint32_t n, bool changed)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_cursor *c;
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, name, 0, &x, &t));
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	CHECK_EQ(check_walk(c, n, changed, false), TEST_PASS);
	CHECK_EQ(check_walk(c, n, changed, true), TEST_PASS);
	ruma_db_cursor_close(c);
	for (unsigned j = 0; j < 500 && n; j++) {
		uint32_t i = (uint32_t)(ruma_rng_next(&test_rng) % n);
		char kb[16];
		ruma_val v;
		key_of(i, kb);
		ruma_val k = sv(kb);
		int rc = ruma_db_get(x, t, &k, &v);
		if (!present(i, changed)) {
			CHECK_EQ(rc, RUMA_ENOTFOUND);
			continue;
		}
		CHECK_OK(rc);
		CHECK(val_eq(v, i, variant(i, changed)));
	}
	ruma_db_table_stats st;
	CHECK_OK(ruma_db_table_stat(x, t, &st));
	uint64_t want = 0;
	for (uint32_t i = 0; i < n; i++)
		want += present(i, changed) + (changed && i % 7 == 0);
	CHECK_EQ(st.entries, want);
	CHECK_OK(ruma_db_commit(x));
	return TEST_PASS;
}

/* Deletes, rewrites (longer values: leaf splits) and inserts over the
 * loaded pages, in transactions of 500. */
static int change(ruma_db *db, const char *name, uint32_t n)
{
	static uint8_t vb[16384];
	ruma_db_txn *x = NULL;
	ruma_db_table *t;
	for (uint32_t i = 0; i < n; i++) {
		if (i % 500 == 0) {
			if (x)
				CHECK_OK(ruma_db_commit(x));
			CHECK_OK(db_begin_table(db, 0, name, 0, &x, &t));
		}
		char kb[16];
		key_of(i, kb);
		ruma_val k = sv(kb);
		if (i % 5 == 0)
			CHECK_OK(ruma_db_del(x, t, &k));
		if (i % 5 == 1) {
			ruma_val v = { val_of(i, 2, vb), vb };
			CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
		}
		if (i % 7 == 0) {
			strcat(kb, "a");
			ruma_val k2 = sv(kb), v = sv("x");
			CHECK_OK(ruma_db_put(x, t, &k2, &v, RUMA_DB_NOOVERWRITE));
		}
	}
	CHECK_OK(ruma_db_commit(x));
	return TEST_PASS;
}

/* 40 000 entries (about 7 MB) through a 4 MiB pool: read back, reopened,
 * changed, reopened; small loads (one leaf, none) too. */
static int t_load(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	const uint32_t n = 40000;
	CHECK_EQ(load_n(db, "big", n), TEST_PASS);
	CHECK_EQ(load_n(db, "one", 1), TEST_PASS);
	CHECK_EQ(load_n(db, "leaf", 12), TEST_PASS);
	CHECK_EQ(load_n(db, "none", 0), TEST_PASS);
	CHECK_EQ(check_table(db, "big", n, false), TEST_PASS);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(db_reopen(&db, &o));
	CHECK_EQ(check_table(db, "big", n, false), TEST_PASS);
	CHECK_EQ(check_table(db, "one", 1, false), TEST_PASS);
	CHECK_EQ(check_table(db, "leaf", 12, false), TEST_PASS);
	CHECK_EQ(check_table(db, "none", 0, false), TEST_PASS);
	CHECK_EQ(change(db, "big", n), TEST_PASS);
	CHECK_EQ(check_table(db, "big", n, true), TEST_PASS);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(db_reopen(&db, &o));
	CHECK_EQ(check_table(db, "big", n, true), TEST_PASS);
	return db_test_end(db);
}

/* Keys of 1 to 256 bytes with long common prefixes and entries up to the
 * leaf's limit: separators and fences of every length, inner nodes with
 * the largest fences; read back in order, checked, reopened. */
static void long_key(uint32_t i, uint8_t *k, size_t *klen)
{
	char num[16];
	snprintf(num, sizeof(num), "%08u", i % 100000000u);
	if (i < 1000) { /* 8 bytes */
		memcpy(k, num, 8);
		*klen = 8;
		return;
	}
	/* a 240-byte common prefix, the number, then 0-8 bytes more: 248-256 */
	memset(k, 'p', 240);
	memcpy(k + 240, num, 8);
	memset(k + 248, 'q', i % 9);
	*klen = 248 + i % 9;
}

static int t_long_keys(void)
{
	static uint8_t vb[RUMA_DB_MAX_INLINE];
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_loader *ld;
	CHECK_OK(ruma_db_load_begin(db, "t", &ld));
	const uint32_t n = 6000;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t kb[RUMA_DB_MAX_KEY];
		size_t klen;
		long_key(i, kb, &klen);
		size_t vlen = RUMA_DB_MAX_INLINE - klen - (i % 3) * 200;
		memset(vb, (int)(i & 0x7f), vlen);
		ruma_val k = { klen, kb }, v = { vlen, vb };
		CHECK_OK(ruma_db_load_put(ld, &k, &v));
	}
	CHECK_OK(ruma_db_load_end(ld, NULL));
	for (int pass = 0; pass < 2; pass++) {
		CHECK_OK(ruma_db_check(db));
		ruma_db_txn *x;
		ruma_db_table *t;
		ruma_db_cursor *c;
		CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "t", 0, &x, &t));
		CHECK_OK(ruma_db_cursor_open(x, t, &c));
		uint32_t i = 0;
		int rc;
		for (rc = ruma_db_cursor_first(c); !rc; rc = ruma_db_cursor_next(c), i++) {
			uint8_t kb[RUMA_DB_MAX_KEY];
			size_t klen;
			long_key(i, kb, &klen);
			ruma_val k, v;
			CHECK_OK(ruma_db_cursor_get(c, &k, &v));
			CHECK(k.len == klen && !memcmp(k.data, kb, klen));
			CHECK_EQ(v.len, RUMA_DB_MAX_INLINE - klen - (i % 3) * 200);
			CHECK(v.len == 0 || ((const uint8_t *)v.data)[v.len - 1] == (uint8_t)(i & 0x7f));
		}
		CHECK_EQ(rc, RUMA_ENOTFOUND);
		CHECK_EQ(i, n);
		ruma_db_cursor_close(c);
		CHECK_OK(ruma_db_commit(x));
		CHECK_OK(db_reopen(&db, &o));
	}
	return db_test_end(db);
}

/* Keys out of order are refused one by one; bad entries; a table that is
 * not empty; a read-only store; close while a load is open. */
static int t_misuse(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	ruma_db_loader *ld;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_EQ(ruma_db_load_begin(NULL, "t", &ld), -EINVAL);
	CHECK_EQ(ruma_db_load_begin(db, NULL, &ld), -EINVAL);
	CHECK_EQ(ruma_db_load_begin(db, "t", NULL), -EINVAL);
	CHECK_OK(ruma_db_load_begin(db, "t", &ld));
	ruma_val b = sv("b"), a = sv("a"), c = sv("c"), v = sv("v"), empty = { 0, NULL };
	CHECK_OK(ruma_db_load_put(ld, &b, &v));
	CHECK_EQ(ruma_db_load_put(ld, &b, &v), RUMA_EEXISTS);
	CHECK_EQ(ruma_db_load_put(ld, &a, &v), RUMA_EEXISTS);
	CHECK_EQ(ruma_db_load_put(ld, &empty, &v), -EINVAL);
	CHECK_EQ(ruma_db_load_put(ld, &c, NULL), -EINVAL);
	char longkey[RUMA_DB_MAX_KEY + 2];
	memset(longkey, 'z', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	ruma_val lk = sv(longkey);
	CHECK_EQ(ruma_db_load_put(ld, &lk, &v), RUMA_ETOOBIG);
	CHECK_OK(ruma_db_load_put(ld, &c, &empty));
	CHECK_EQ(ruma_db_close(db), -EBUSY);
	uint64_t n;
	CHECK_OK(ruma_db_load_end(ld, &n));
	CHECK_EQ(n, 2u);
	CHECK_EQ(ruma_db_load_end(NULL, &n), -EINVAL);
	ruma_db_load_abort(NULL);
	CHECK_EQ(ruma_db_load_begin(db, "t", &ld), -ENOTEMPTY);
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "t", 0, &x, &t));
	ruma_val got;
	CHECK_OK(ruma_db_get(x, t, &b, &got));
	CHECK(got.len == 1 && !memcmp(got.data, "v", 1));
	CHECK_OK(ruma_db_get(x, t, &c, &got));
	CHECK_EQ(got.len, 0u);
	CHECK_EQ(ruma_db_get(x, t, &a, &got), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	CHECK_OK(db_open_readonly(&o, &db));
	CHECK_EQ(ruma_db_load_begin(db, "u", &ld), -EACCES);
	CHECK_OK(ruma_db_close(db));
	CHECK_OK(ruma_db_open(path, &o, &db));
	return db_test_end(db);
}

static uint64_t pages_in_use(ruma_db *db)
{
	ruma_db_stats s;
	if (ruma_db_stat(db, &s))
		return UINT64_MAX;
	return s.pages;
}

/* An abort, and an end refused because a transaction wrote the table
 * meanwhile, free every page the load wrote (BLOBs' too): the store check
 * finds nothing leaked and the pages in use are what they were. */
static int t_abort_frees(void)
{
	static uint8_t vb[16384];
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_EQ(load_n(db, "t", 10), TEST_PASS); /* the table and its first pages */
	ruma_db_loader *ld;
	CHECK_OK(ruma_db_load_begin(db, "u", &ld));
	ruma_db_load_abort(ld);
	uint64_t before = pages_in_use(db);
	for (int round = 0; round < 2; round++) {
		CHECK_OK(ruma_db_load_begin(db, "u", &ld));
		for (uint32_t i = 0; i < 20000; i++) {
			char kb[16];
			key_of(i, kb);
			ruma_val k = sv(kb), v = { val_of(i, 1, vb), vb };
			CHECK_OK(ruma_db_load_put(ld, &k, &v));
		}
		if (round == 0) {
			ruma_db_load_abort(ld);
			continue;
		}
		ruma_db_txn *x;
		ruma_db_table *t;
		CHECK_OK(db_begin_table(db, 0, "u", 0, &x, &t));
		ruma_val k = sv("zz"), v = sv("written meanwhile");
		CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
		CHECK_OK(ruma_db_commit(x));
		uint64_t n = 1;
		CHECK_EQ(ruma_db_load_end(ld, &n), -ENOTEMPTY);
		CHECK_EQ(n, 0u);
		CHECK_OK(db_begin_table(db, 0, "u", 0, &x, &t));
		CHECK_OK(ruma_db_del(x, t, &k));
		CHECK_OK(ruma_db_commit(x));
	}
	CHECK_OK(ruma_db_check(db));
	CHECK_EQ(pages_in_use(db), before);
	CHECK_EQ(load_n(db, "u", 20000), TEST_PASS);
	CHECK_EQ(check_table(db, "u", 20000, false), TEST_PASS);
	return db_test_end(db);
}

/* A snapshot that began before the load ended is refused on the table
 * (get, cursor, put), before and after the end; one begun after sees it
 * all; other tables stay readable to the old one. */
static int t_snapshot(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_EQ(load_n(db, "other", 100), TEST_PASS);
	ruma_db_loader *ld;
	CHECK_OK(ruma_db_load_begin(db, "t", &ld));
	ruma_db_txn *old, *oldw, *x;
	ruma_db_table *t, *other;
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "t", 0, &old, &t));
	CHECK_OK(db_begin_table(db, 0, "t", 0, &oldw, &t));
	char kb[16];
	key_of(3, kb);
	ruma_val k = sv(kb), v;
	CHECK_EQ(ruma_db_get(old, t, &k, &v), RUMA_ENOTFOUND); /* empty until the end */
	for (uint32_t i = 0; i < 5000; i++) {
		uint8_t vb[16384];
		char b[16];
		key_of(i, b);
		ruma_val lk = sv(b), lv = { val_of(i, 1, vb), vb };
		CHECK_OK(ruma_db_load_put(ld, &lk, &lv));
	}
	CHECK_EQ(ruma_db_get(old, t, &k, &v), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_load_end(ld, NULL));
	CHECK_EQ(ruma_db_get(old, t, &k, &v), RUMA_ESNAPTOOOLD);
	ruma_db_cursor *c;
	CHECK_OK(ruma_db_cursor_open(old, t, &c));
	CHECK_EQ(ruma_db_cursor_first(c), RUMA_ESNAPTOOOLD);
	ruma_db_cursor_close(c);
	ruma_val nv = sv("new");
	CHECK_EQ(ruma_db_put(oldw, t, &k, &nv, 0), RUMA_ESNAPTOOOLD);
	CHECK_OK(ruma_db_table_open(old, "other", 0, &other));
	key_of(7, kb);
	CHECK_OK(ruma_db_get(old, other, &k, &v));
	CHECK(val_eq(v, 7, 1));
	CHECK_OK(ruma_db_commit(old));
	CHECK_OK(ruma_db_abort(oldw));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "t", 0, &x, &t));
	key_of(3, kb);
	CHECK_OK(ruma_db_get(x, t, &k, &v));
	CHECK(val_eq(v, 3, 1));
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(check_table(db, "t", 5000, false), TEST_PASS);
	return db_test_end(db);
}

/* A page write that fails: the error sticks, the end returns it and
 * nothing is loaded or leaked; the next load works. */
static int t_write_error(void)
{
	static uint8_t vb[16384];
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	o.pool_bytes = 64u << 20;
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_EQ(load_n(db, "t", 10), TEST_PASS);
	ruma_db_loader *ld;
	CHECK_OK(ruma_db_load_begin(db, "u", &ld));
	ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, true);
	int rc = 0;
	uint32_t i;
	for (i = 0; i < 30000 && !rc; i++) {
		char kb[16];
		key_of(i, kb);
		ruma_val k = sv(kb), v = { val_of(i, 1, vb), vb };
		rc = ruma_db_load_put(ld, &k, &v);
	}
	ruma_os_inject_clear();
	CHECK_EQ(rc, -EIO);
	CHECK_EQ(ruma_db_load_end(ld, NULL), -EIO);
	CHECK_EQ(check_table(db, "u", 0, false), TEST_PASS);
	CHECK_OK(ruma_db_check(db));
	CHECK_EQ(load_n(db, "u", 3000), TEST_PASS);
	CHECK_EQ(check_table(db, "u", 3000, false), TEST_PASS);
	return db_test_end(db);
}

/* ---- crashes --------------------------------------------------------------------- */

#define KILL_STEP 4000u

/* Load table a whole (reported as 0), then load b, reporting every
 * KILL_STEP entries, forever. */
static void kill_child(int fd)
{
	static uint8_t vb[16384];
	ruma_db_options o = small_opts();
	ruma_db *db;
	if (ruma_db_open(path, &o, &db) || load_n(db, "a", 9000) != TEST_PASS)
		_exit(3);
	unsigned rep = 0;
	if (write(fd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(4);
	ruma_db_loader *ld;
	if (ruma_db_load_begin(db, "b", &ld))
		_exit(3);
	for (uint32_t i = 0;; i++) {
		char kb[16];
		key_of(i, kb);
		ruma_val k = sv(kb), v = { val_of(i % 5000, 1, vb), vb };
		if (ruma_db_load_put(ld, &k, &v))
			_exit(3);
		if (i % KILL_STEP == KILL_STEP - 1) {
			rep++;
			if (write(fd, &rep, sizeof(rep)) != sizeof(rep))
				_exit(4);
		}
	}
}

/* Killed while it loads b: a is whole, b empty, and the pages of b's load
 * freed by recovery (the store check finds nothing leaked). */
static int t_kill9(void)
{
	CHECK(!dirs());
	unsigned last;
	CHECK_EQ(db_kill9(kill_child, 2 + (unsigned)(ruma_rng_next(&test_rng) % 4), &last),
		 TEST_PASS);
	ruma_db_options o = small_opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_check(db));
	CHECK_EQ(check_table(db, "a", 9000, false), TEST_PASS);
	CHECK_EQ(check_table(db, "b", 0, false), TEST_PASS);
	CHECK_EQ(load_n(db, "b", 2000), TEST_PASS);
	return db_test_end(db);
}

/* Whether table t holds the n loaded entries or nothing (*whole says
 * which); the store check passes either way. */
static int whole_or_empty(ruma_db *db, uint32_t n, bool *whole)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_check(db));
	int rc = db_begin_table(db, RUMA_DB_RDONLY, "t", 0, &x, &t);
	if (rc == RUMA_ENOTFOUND) {
		*whole = false;
		return TEST_PASS;
	}
	CHECK_OK(rc);
	ruma_db_table_stats st;
	CHECK_OK(ruma_db_table_stat(x, t, &st));
	CHECK_OK(ruma_db_commit(x));
	CHECK(st.entries == 0 || st.entries == n);
	*whole = st.entries == n;
	if (*whole)
		CHECK_EQ(check_table(db, "t", n, false), TEST_PASS);
	return TEST_PASS;
}

/* Power lost at each sync of a load in turn: after recovery the table is
 * whole or empty, never in between, and nothing is leaked. */
static int t_powerloss(void)
{
	CHECK(!dirs());
	ruma_db_options o = small_opts();
	unsigned outcomes[2] = { 0, 0 };
	const uint32_t n = 12000;
	for (unsigned nth = 1; nth <= 40; nth++) {
		ruma_db *db;
		CHECK_OK(db_powerloss_open(&o, &db));
		ruma_os_inject_hook(RUMA_SYS_FDATASYNC, nth, power_off, NULL);
		(void)load_n(db, "t", n);
		bool lost = db_powerloss_close(db);
		CHECK_OK(ruma_db_open(path, &o, &db));
		bool whole;
		CHECK_EQ(whole_or_empty(db, n, &whole), TEST_PASS);
		CHECK_OK(ruma_db_close(db));
		outcomes[whole]++;
		if (!lost)
			break; /* the load ended before the nth sync */
	}
	printf("  whole after %u power losses, empty after %u\n", outcomes[1], outcomes[0]);
	CHECK(outcomes[0] > 0 && outcomes[1] > 0);
	dirs_remove();
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "load", t_load },
	{ "long_keys", t_long_keys },
	{ "misuse", t_misuse },
	{ "abort_frees", t_abort_frees },
	{ "snapshot", t_snapshot },
	{ "write_error", t_write_error },
	{ "kill9", t_kill9 },
	{ "powerloss", t_powerloss },
};

int main(int argc, char **argv)
{
	return test_main("db_load", cases, TEST_N(cases), argc, argv);
}
