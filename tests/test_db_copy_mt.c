/*
 * test_db_copy_mt.c — ruma_db_copy, the hot backup (include/ruma/db.h): a
 * writer thread commits numbered transactions (each one row in two tables)
 * while the store is copied, with a pool much smaller than the store so
 * that pages are written all through the copy; the copy must open without
 * recovery, pass ruma_db_check and hold exactly the transactions 0..m-1
 * for some m at least the count committed before the call, each whole.
 * Also: misuse and a destination that exists.
 */
#include "fixture.h"

#include <ruma/db.h>

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[128], store[192], dest[192], dest_wal[200];

/* The fixture: a directory per case, the paths of a store and of its copy. */
static int setup(void)
{
	return test_dir_make(dir, sizeof(dir), "dbcopy", TEST_PATH(store, "s"), TEST_PATH(dest, "c"),
			     TEST_PATH(dest_wal, "c.wal"), NULL);
}

static void teardown(void)
{
	test_dir_remove(dir);
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

static bool exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

typedef struct writer {
	ruma_db *db;
	ruma_db_table *a, *b;
	uint64_t committed; /* transactions 0..committed-1 acknowledged */
	bool stop;
	int err;
} writer;

static void key_of(uint64_t i, unsigned char k[8])
{
	for (int j = 0; j < 8; j++)
		k[j] = (unsigned char)(i >> (56 - 8 * j));
}

/* Put key i (value of i) in t, and key i + 1 too when both. */
static int put_rows(ruma_db_txn *x, ruma_db_table *t, uint64_t i, bool both)
{
	unsigned char k[8], v[300];
	memset(v, (int)(i & 0xff), sizeof(v));
	ruma_val kv = { sizeof(k), k }, vv = { sizeof(v), v };
	int rc = 0;
	for (uint64_t j = i; !rc && j <= i + both; j++) {
		key_of(j, k);
		rc = ruma_db_put(x, t, &kv, &vv, 0);
	}
	return rc;
}

/* Transaction i: key i in both tables, a 300-byte value; before every
 * 7th, an aborted one writing keys i and i + 1 (undone work in the log). */
static int write_one(writer *w, uint64_t i)
{
	ruma_db_txn *x;
	for (int pass = i % 7 == 3 ? 0 : 1; pass < 2; pass++) {
		int rc = ruma_db_begin(w->db, RUMA_DB_ASYNC, &x);
		if (rc)
			return rc;
		rc = put_rows(x, w->a, i, pass == 0);
		if (!rc)
			rc = put_rows(x, w->b, i, pass == 0);
		if (rc || pass == 0) {
			int ar = ruma_db_abort(x);
			if (rc || ar)
				return rc ? rc : ar;
			continue;
		}
		return ruma_db_commit(x);
	}
	return -EINVAL;
}

static void *writer_main(void *arg)
{
	writer *w = arg;
	uint64_t i = 0;
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		int rc = write_one(w, i);
		if (rc) {
			w->err = rc;
			break;
		}
		__atomic_store_n(&w->committed, ++i, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The rows of t: keys 0..n-1 exactly, each with its value; n into *n. */
static int count_prefix(ruma_db_txn *x, ruma_db_table *t, uint64_t *n)
{
	ruma_db_cursor *c;
	int rc = ruma_db_cursor_open(x, t, &c);
	uint64_t i = 0;
	for (rc = rc ? rc : ruma_db_cursor_first(c); !rc; rc = ruma_db_cursor_next(c), i++) {
		ruma_val k, v;
		unsigned char want[8];
		key_of(i, want);
		if ((rc = ruma_db_cursor_get(c, &k, &v)))
			break;
		if (k.len != 8 || memcmp(k.data, want, 8) || v.len != 300 ||
		    ((unsigned char *)v.data)[299] != (unsigned char)(i & 0xff)) {
			fprintf(stderr, "    row %" PRIu64 " is not transaction %" PRIu64 "'s\n", i, i);
			rc = RUMA_ECORRUPT;
			break;
		}
	}
	ruma_db_cursor_close(c);
	*n = i;
	return rc == RUMA_ENOTFOUND ? 0 : rc;
}

/* Open the copy read-only (no recovery may be needed), check it, and
 * count its prefix of transactions. */
static int check_copy(const char *path, uint64_t *n)
{
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.flags = RUMA_DB_READONLY;
	o.pool_bytes = 16u << 20;
	ruma_db *d;
	int rc = ruma_db_open(path, &o, &d);
	if (rc)
		return rc;
	ruma_bm_recovery r;
	ruma_bm_get_recovery(ruma_db_bm(d), &r);
	if (r.ran)
		rc = -EPROTO; /* the copy was left needing recovery */
	if (!rc)
		rc = ruma_db_check(d);
	ruma_db_txn *x = NULL;
	ruma_db_table *a, *b;
	uint64_t na = 0, nb = 0;
	if (!rc)
		rc = ruma_db_begin(d, RUMA_DB_RDONLY, &x);
	if (!rc)
		rc = ruma_db_table_open(x, "a", 0, &a);
	if (!rc)
		rc = ruma_db_table_open(x, "b", 0, &b);
	if (!rc)
		rc = count_prefix(x, a, &na);
	if (!rc)
		rc = count_prefix(x, b, &nb);
	if (!rc && na != nb)
		rc = RUMA_ECORRUPT; /* a transaction not whole */
	if (x)
		ruma_db_commit(x);
	int crc = ruma_db_close(d);
	*n = na;
	return rc ? rc : crc;
}

#define LIVE_COPIES 3

/* Stop the writer; its error. */
static int writer_stop(writer *w, pthread_t th)
{
	__atomic_store_n(&w->stop, true, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	return w->err;
}

static int t_live(void)
{
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = 1u << 20; /* the store grows past 4 MB: eviction writes all along */
	o.checkpoint_bytes = 256u << 10; /* automatic checkpoints meet the copies */
	o.checkpoint_ms = 1;
	writer w = { 0 };
	CHECK_OK(ruma_db_open(store, &o, &w.db));
	CHECK_OK(test_db_tables(w.db, "a", &w.a, "b", &w.b, NULL));
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, writer_main, &w), 0);
	uint64_t before[LIVE_COPIES], after[LIVE_COPIES];
	char path[LIVE_COPIES][200];
	int rc = 0;
	for (int i = 0; i < LIVE_COPIES && !rc; i++) {
		while (__atomic_load_n(&w.committed, __ATOMIC_ACQUIRE) < 1500u * (i + 1u) && !w.err)
			usleep(5000);
		snprintf(path[i], sizeof(path[i]), "%s%d", dest, i);
		before[i] = __atomic_load_n(&w.committed, __ATOMIC_ACQUIRE);
		rc = ruma_db_copy(w.db, path[i], 0);
		after[i] = __atomic_load_n(&w.committed, __ATOMIC_ACQUIRE);
	}
	CHECK_OK(writer_stop(&w, th));
	CHECK_OK(rc);
	CHECK_OK(ruma_db_close(w.db));
	for (int i = 0; i < LIVE_COPIES; i++) {
		uint64_t n = 0;
		CHECK_OK(check_copy(path[i], &n));
		fprintf(stderr, "    copy %d: committed %" PRIu64 " before it, %" PRIu64
			" after it; it holds %" PRIu64 "\n", i, before[i], after[i], n);
		CHECK(n >= before[i] && n <= after[i]);
	}
	return TEST_PASS;
}

static int t_misuse(void)
{
	ruma_db *d;
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = 16u << 20;
	o.message = quiet;
	CHECK_OK(ruma_db_open(store, &o, &d));
	CHECK_EQ(ruma_db_copy(NULL, dest, 0), -EINVAL);
	CHECK_EQ(ruma_db_copy(d, NULL, 0), -EINVAL);
	CHECK_EQ(ruma_db_copy(d, "", 0), -EINVAL);
	CHECK_EQ(ruma_db_copy(d, dest, 1), -EINVAL);
	/* dest.wal exists: refused, and nothing of the copy is left */
	FILE *f = fopen(dest_wal, "w");
	CHECK(f && fputs("keep me\n", f) >= 0 && !fclose(f));
	CHECK_EQ(ruma_db_copy(d, dest, 0), -EEXIST);
	CHECK(!exists(dest) && exists(dest_wal));
	CHECK(!unlink(dest_wal));
	CHECK_OK(ruma_db_copy(d, dest, 0)); /* an empty store */
	CHECK_EQ(ruma_db_copy(d, dest, 0), -EEXIST);
	CHECK(exists(dest) && exists(dest_wal));
	CHECK_OK(ruma_db_close(d));
	/* read-only and unlogged stores are refused */
	o.flags = RUMA_DB_READONLY;
	CHECK_OK(ruma_db_open(store, &o, &d));
	CHECK_EQ(ruma_db_copy(d, dir, 0), -ENOTSUP);
	CHECK_OK(ruma_db_close(d));
	char nolog[200];
	snprintf(nolog, sizeof(nolog), "%s/n", dir);
	o.flags = RUMA_DB_NOLOG;
	CHECK_OK(ruma_db_open(nolog, &o, &d));
	CHECK_EQ(ruma_db_copy(d, dir, 0), -ENOTSUP);
	CHECK_OK(ruma_db_close(d));
	uint64_t n;
	CHECK_EQ(check_copy(dest, &n), RUMA_ENOTFOUND); /* no table "a" in the empty copy */
	return TEST_PASS;
}

/* A transaction open across the copy (its rows in the log, perhaps on
 * copied pages): the copy has none of them, and the rows committed before. */
static int t_open_txn(void)
{
	writer w = { 0 };
	CHECK_OK(test_db_open(store, 1u << 20, &w.db));
	CHECK_OK(test_db_tables(w.db, "a", &w.a, "b", &w.b, NULL));
	for (uint64_t i = 0; i < 500; i++)
		CHECK_OK(write_one(&w, i));
	ruma_db_txn *x;
	CHECK_OK(ruma_db_begin(w.db, 0, &x)); /* rows 500..2499, uncommitted */
	for (uint64_t i = 500; i < 2500; i++) {
		CHECK_OK(put_rows(x, w.a, i, false));
		CHECK_OK(put_rows(x, w.b, i, false));
	}
	CHECK_OK(ruma_db_copy(w.db, dest, 0));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(w.db));
	uint64_t n = 0;
	CHECK_OK(check_copy(dest, &n));
	CHECK_EQ(n, 500);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "live", t_live },
	{ "open_txn", t_open_txn },
	{ "misuse", t_misuse },
};

int main(int argc, char **argv)
{
	static const struct test_fixture fixture = { setup, teardown };
	return test_main_fixture("db_copy_mt", cases, TEST_N(cases), argc, argv, &fixture);
}
