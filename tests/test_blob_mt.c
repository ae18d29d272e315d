/*
 * test_blob_mt.c — BLOBs of db.h from several threads at once (run under
 * ThreadSanitizer too): threads put, overwrite, delete, append to and read
 * the same few keys, in read-write, snapshot and read-only transactions
 * (some reading around the pool: RUMA_DB_NOFILL);
 * every value read is one that was written whole (its seed in its first
 * bytes, its pattern after them), pointers stay valid until their
 * transaction ends, and the store check finds every extent accounted for.
 */
#include "test.h"

#include <ruma/db.h>

#include <pthread.h>
#include <stdatomic.h>

#define DB_TEST_NAME "blobmt"
#include "db_util.h"

#define THREADS 3u
#define KEYS 2u
#define ROUNDS 150u

static ruma_db *db;
static ruma_db_table *tab;
static _Atomic unsigned failures;

static uint8_t pat(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed * 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 56);
}

/* A value of n >= 4 bytes: the seed, then its pattern. */
static void fill(uint8_t *p, uint32_t seed, size_t n)
{
	memcpy(p, &seed, 4);
	for (size_t i = 4; i < n; i++)
		p[i] = pat(seed, i);
}

static bool whole(const uint8_t *p, size_t n)
{
	uint32_t seed;
	if (n < 4)
		return false;
	memcpy(&seed, p, 4);
	for (size_t i = 4; i < n; i++)
		if (p[i] != pat(seed, i))
			return false;
	return true;
}

static void fail(const char *what, int rc)
{
	fprintf(stderr, "  %s: %s\n", what, ruma_strerror(rc));
	atomic_fetch_add(&failures, 1);
}

/* One write: a whole put, a streamed one, or a delete. */
static int write_one(ruma_db_txn *x, ruma_val *k, uint32_t seed, uint8_t *buf, unsigned kind)
{
	size_t n = 4 + seed % 200000;
	fill(buf, seed, n);
	if (kind == 0) {
		int r = ruma_db_del(x, tab, k);
		return r == RUMA_ENOTFOUND ? 0 : r;
	}
	if (kind == 1) {
		ruma_db_blob *b;
		int r = ruma_db_blob_create(x, tab, k, 0, &b);
		for (size_t at = 0; !r && at < n; at += 7000)
			r = ruma_db_blob_append(b, buf + at, n - at < 7000 ? n - at : 7000);
		if (!r)
			r = ruma_db_blob_close(b);
		return r;
	}
	ruma_val v = { n, buf };
	return ruma_db_put(x, tab, k, &v, 0);
}

/* Read every key twice in x: each value is whole and the first pointer
 * still holds its bytes at the end (not under RUMA_DB_NOFILL, whose copy
 * lasts until the next call). */
static int read_all(ruma_db_txn *x, bool nofill)
{
	ruma_val first[KEYS];
	for (unsigned i = 0; i < KEYS; i++) {
		char key[8];
		snprintf(key, sizeof(key), "k%u", i);
		ruma_val k = { strlen(key), key };
		int r = ruma_db_get(x, tab, &k, &first[i]);
		if (r == RUMA_ENOTFOUND) {
			first[i].len = 0;
			continue;
		}
		if (r)
			return r;
		if (!whole(first[i].data, first[i].len))
			return RUMA_ECORRUPT;
	}
	for (unsigned i = 0; i < KEYS && !nofill; i++) /* a BLOB's pointer lasts */
		if (first[i].len > RUMA_DB_BLOB_THRESHOLD && !whole(first[i].data, first[i].len))
			return RUMA_ECORRUPT;
	return 0;
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint8_t *buf = malloc(200004);
	if (!buf) {
		fail("malloc", -ENOMEM);
		return NULL;
	}
	for (unsigned i = 0; i < ROUNDS; i++) {
		unsigned what = (i * 7 + id) % 5;
		static const unsigned flags[] = { 0, RUMA_DB_SNAPSHOT, RUMA_DB_RDONLY, 0,
						  RUMA_DB_RDONLY | RUMA_DB_NOFILL };
		ruma_db_txn *x;
		int r = ruma_db_begin(db, flags[what], &x);
		if (r) {
			fail("begin", r);
			break;
		}
		char key[8];
		snprintf(key, sizeof(key), "k%u", (i + id) % KEYS);
		ruma_val k = { strlen(key), key };
		r = read_all(x, (flags[what] & RUMA_DB_NOFILL) != 0);
		if (!r && !(flags[what] & RUMA_DB_RDONLY))
			r = write_one(x, &k, id * 100000 + i, buf, i % 3);
		if (r == RUMA_ECONFLICT) {
			(void)ruma_db_abort(x);
			continue;
		}
		if (r) {
			fail("operation", r);
			(void)ruma_db_abort(x);
			continue;
		}
		r = ruma_db_commit(x);
		if (r && r != RUMA_ECONFLICT)
			fail("commit", r);
	}
	free(buf);
	return NULL;
}

/* A fresh store with table "b" (its options *o) and THREADS workers
 * started on it. */
static int start_workers(const ruma_db_options *o, pthread_t *th)
{
	ruma_db_txn *x;
	CHECK_OK(db_test_start(o, &db, &x, &tab, "b"));
	CHECK_OK(ruma_db_commit(x));
	for (unsigned i = 0; i < THREADS; i++)
		CHECK(!pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i));
	return TEST_PASS;
}

static void join_workers(pthread_t *th)
{
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
}

/* The store at p opened with *o: every value in it is whole (read_all) and
 * the store check passes; closed again. */
static int check_store(const char *p, const ruma_db_options *o)
{
	ruma_db_txn *x;
	CHECK_OK(ruma_db_open(p, o, &db));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &tab));
	CHECK_OK(read_all(x, false));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	return TEST_PASS;
}

static int t_same_keys(void)
{
	ruma_db_options o = db_test_opts(32u << 20);
	pthread_t th[THREADS];
	CHECK_EQ(start_workers(&o, th), TEST_PASS);
	join_workers(th);
	CHECK_EQ(atomic_load(&failures), 0);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	CHECK_EQ(check_store(path, &o), TEST_PASS);
	dirs_remove();
	return TEST_PASS;
}

/* A hot copy while threads write BLOBs: the copy passes the store check
 * and every value in it is whole. */
static int t_copy(void)
{
	ruma_db_options o = db_test_opts(32u << 20);
	pthread_t th[THREADS];
	CHECK_EQ(start_workers(&o, th), TEST_PASS);
	char cpath[220], clog[230];
	snprintf(cpath, sizeof(cpath), "%s/copy", dir);
	snprintf(clog, sizeof(clog), "%s.wal", cpath);
	int rc = ruma_db_copy(db, cpath, 0);
	join_workers(th);
	CHECK_OK(rc);
	CHECK_EQ(atomic_load(&failures), 0);
	CHECK_OK(ruma_db_close(db));
	CHECK_EQ(check_store(cpath, &o), TEST_PASS);
	unlink(cpath);
	unlink(clog);
	dirs_remove();
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "same_keys", t_same_keys },
	{ "copy", t_copy },
};

int main(int argc, char **argv)
{
	return test_main("blob_mt", cases, TEST_N(cases), argc, argv);
}
