/*
 * test_blob.c — large values (BLOBs) of db.h (docs/blob.md): sizes at every
 * boundary, append patterns and range reads, pointers valid until the
 * transaction ends, overwrite / delete / abort / snapshot freeing extents
 * (the store check accounts for every page), reopening after a clean close
 * and after simulated power losses at every sync, fault injection on extent
 * writes and reads, churn keeping the store near its live bytes, and the
 * extent allocator's free-run index.
 */
#include "test.h"

#include <ruma/db.h>

#include "bm/bm_ext.h"
#include "os/os.h"

#include <sys/stat.h>

static char dir[128], path[192], logpath[200];

static int dirs(void)
{
	strcpy(dir, "/tmp/ruma-test-blob-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/store", dir);
	snprintf(logpath, sizeof(logpath), "%s.wal", path);
	return 0;
}

static void dirs_remove(void)
{
	unlink(path);
	unlink(logpath);
	rmdir(dir);
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

static ruma_db_options opts(void)
{
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = 32u << 20;
	o.message = quiet;
	return o;
}

static ruma_val sv(const char *s)
{
	return (ruma_val){ strlen(s), (void *)s };
}

/* Byte i of value `seed`: a pattern that differs per value and offset. */
static uint8_t pat(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed * 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 56);
}

static uint8_t *pattern(uint32_t seed, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	for (size_t i = 0; p && i < n; i++)
		p[i] = pat(seed, i);
	return p;
}

static bool is_pattern(const void *v, uint32_t seed, size_t n, uint64_t from)
{
	const uint8_t *b = v;
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(seed, from + i))
			return false;
	return true;
}

static int put_pattern(ruma_db_txn *x, ruma_db_table *t, const char *key, uint32_t seed,
		       size_t n)
{
	uint8_t *p = pattern(seed, n);
	if (!p)
		return -ENOMEM;
	ruma_val k = sv(key), v = { n, p };
	int r = ruma_db_put(x, t, &k, &v, 0);
	free(p);
	return r;
}

/* The value of key is pattern seed of n bytes. */
static int expect(ruma_db_txn *x, ruma_db_table *t, const char *key, uint32_t seed, size_t n)
{
	ruma_val k = sv(key), v;
	CHECK_OK(ruma_db_get(x, t, &k, &v));
	CHECK_EQ(v.len, n);
	CHECK(is_pattern(v.data, seed, n, 0));
	return TEST_PASS;
}

static bool in_pool(ruma_db *db, const void *p)
{
	/* the pool's pages sit below the latch words, far from the heap */
	(void)db;
	return ((uintptr_t)p & (RUMA_BM_PAGE_SIZE - 1)) == 0;
}

static const size_t sizes[] = { 0, 1, RUMA_DB_BLOB_THRESHOLD - 1, RUMA_DB_BLOB_THRESHOLD,
				RUMA_DB_BLOB_THRESHOLD + 1, 4095, 4096, 4097, 65535, 65536,
				65537, (1u << 20) + 13, (3u << 20) + 4095 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int check_sizes(ruma_db *db)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	CHECK_OK(ruma_db_table_open(x, "b", 0, &t));
	for (unsigned i = 0; i < NSIZES; i++) {
		char key[16];
		snprintf(key, sizeof(key), "s%02u", i);
		CHECK_EQ(expect(x, t, key, i, sizes[i]), TEST_PASS);
	}
	CHECK_OK(ruma_db_commit(x));
	return TEST_PASS;
}

/* Every size at a boundary, put whole: read back in the transaction, after
 * the commit, after a clean reopen; a BLOB put whole is one extent, handed
 * back zero-copy (page-aligned, the same address twice); limit + 1 and a
 * key too long are RUMA_ETOOBIG; a small value starting with 0xFF stays
 * itself. */
static int t_sizes(void)
{
	CHECK(!dirs());
	ruma_db_options o = opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "b", RUMA_DB_CREATE, &t));
	for (unsigned i = 0; i < NSIZES; i++) {
		char key[16];
		snprintf(key, sizeof(key), "s%02u", i);
		CHECK_OK(put_pattern(x, t, key, i, sizes[i]));
		CHECK_EQ(expect(x, t, key, i, sizes[i]), TEST_PASS);
		ruma_val k = sv(key), v1, v2;
		CHECK_OK(ruma_db_get(x, t, &k, &v1));
		CHECK_OK(ruma_db_get(x, t, &k, &v2));
		if (sizes[i] > RUMA_DB_BLOB_THRESHOLD) {
			CHECK(in_pool(db, v1.data));
			CHECK(v1.data == v2.data);
		}
	}
	uint8_t ff[3] = { 0xff, 0x42, 0x01 };
	ruma_val kf = sv("ff"), vf = { 3, ff }, got;
	CHECK_OK(ruma_db_put(x, t, &kf, &vf, 0));
	CHECK_OK(ruma_db_get(x, t, &kf, &got));
	CHECK(got.len == 3 && !memcmp(got.data, ff, 3));
	uint8_t one = 0;
	ruma_val big = { RUMA_DB_MAX_VALUE + 1, &one };
	CHECK_EQ(ruma_db_put(x, t, &kf, &big, 0), RUMA_ETOOBIG);
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(check_sizes(db), TEST_PASS);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_EQ(check_sizes(db), TEST_PASS);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* A threshold set at open: a value just above it is a BLOB; a threshold
 * outside its range is refused. */
static int t_threshold(void)
{
	CHECK(!dirs());
	ruma_db_options o = opts();
	ruma_db *db;
	o.blob_threshold = RUMA_DB_BLOB_THRESHOLD_MIN - 1;
	CHECK_EQ(ruma_db_open(path, &o, &db), -EINVAL);
	o.blob_threshold = RUMA_DB_MAX_INLINE + 1;
	CHECK_EQ(ruma_db_open(path, &o, &db), -EINVAL);
	o.blob_threshold = 100;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "b", RUMA_DB_CREATE, &t));
	CHECK_OK(put_pattern(x, t, "a", 1, 100));
	CHECK_OK(put_pattern(x, t, "b", 2, 101));
	ruma_val ka = sv("a"), kb = sv("b"), va, vb;
	CHECK_OK(ruma_db_get(x, t, &ka, &va));
	CHECK_OK(ruma_db_get(x, t, &kb, &vb));
	CHECK(!in_pool(db, va.data));
	CHECK(in_pool(db, vb.data));
	CHECK(is_pattern(vb.data, 2, 101, 0));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* Range reads of a handle at every offset class against the pattern. */
static int check_ranges(ruma_db_blob *b, uint32_t seed, uint64_t size)
{
	uint64_t offs[] = { 0, 1, 4095, 4096, 4097, 65535, 65536, 65537, size / 2,
			    size > 1 ? size - 1 : 0, size, size + 5 };
	static uint8_t buf[70000];
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		size_t lens[] = { 1, 4096, 70000 };
		for (unsigned j = 0; j < 3; j++) {
			size_t got = 99;
			CHECK_OK(ruma_db_blob_read(b, offs[i], buf, lens[j], &got));
			uint64_t want = offs[i] >= size ? 0 : RUMA_MIN(lens[j], size - offs[i]);
			CHECK_EQ(got, want);
			CHECK(is_pattern(buf, seed, got, offs[i]));
		}
	}
	return TEST_PASS;
}

/* Append `size` bytes of pattern seed in pieces of `step` (varying when 0). */
static int append_pattern(ruma_db_blob *b, uint32_t seed, uint64_t from, uint64_t size,
			  size_t step)
{
	uint8_t *p = pattern(seed, (size_t)(from + size));
	CHECK(p);
	for (uint64_t at = from, k = 0; at < from + size; k++) {
		size_t n = step ? step : (size_t)(1 + (k * 7919) % 9000);
		n = (size_t)RUMA_MIN((uint64_t)n, from + size - at);
		CHECK_OK(ruma_db_blob_append(b, p + at, n));
		at += n;
	}
	free(p);
	return TEST_PASS;
}

/* Streaming: 1-byte appends, page-straddling ones, many appends making
 * several extents, an exact hint making one; ranges read while appending
 * and after; the whole value through ruma_db_get (a copy for several
 * extents, the pool for one); appending to a committed value and to an
 * inline one; a handle left open is closed by the commit. */
static int t_stream(void)
{
	CHECK(!dirs());
	ruma_db_options o = opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_blob *b;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "b", RUMA_DB_CREATE, &t));
	ruma_val k1 = sv("one"), k2 = sv("straddle"), k3 = sv("many"), k4 = sv("hinted"), v;
	CHECK_OK(ruma_db_blob_create(x, t, &k1, 0, &b));
	CHECK_EQ(append_pattern(b, 1, 0, 5000, 1), TEST_PASS);
	CHECK_EQ(check_ranges(b, 1, 5000), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_blob_create(x, t, &k2, 0, &b));
	CHECK_EQ(append_pattern(b, 2, 0, 300000, 4095), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_blob_create(x, t, &k3, 0, &b));
	CHECK_EQ(append_pattern(b, 3, 0, 3u << 20, 0), TEST_PASS);
	CHECK_EQ(ruma_db_blob_size(b), 3u << 20);
	CHECK_EQ(check_ranges(b, 3, 3u << 20), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_blob_create(x, t, &k4, 1u << 20, &b));
	CHECK_EQ(append_pattern(b, 4, 0, 1u << 20, 0), TEST_PASS);
	/* left open: the commit closes it */
	CHECK_OK(ruma_db_get(x, t, &k3, &v));
	CHECK(v.len == 3u << 20 && is_pattern(v.data, 3, v.len, 0));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_EQ(expect(x, t, "one", 1, 5000), TEST_PASS);
	CHECK_EQ(expect(x, t, "straddle", 2, 300000), TEST_PASS);
	CHECK_EQ(expect(x, t, "many", 3, 3u << 20), TEST_PASS);
	CHECK_OK(ruma_db_get(x, t, &k4, &v));
	CHECK(v.len == 1u << 20 && in_pool(db, v.data) && is_pattern(v.data, 4, v.len, 0));
	/* append to a committed value and to an inline one */
	CHECK_OK(ruma_db_blob_open(x, t, &k1, &b));
	CHECK_EQ(ruma_db_blob_size(b), 5000);
	CHECK_EQ(append_pattern(b, 1, 5000, 70000, 0), TEST_PASS);
	CHECK_EQ(check_ranges(b, 1, 75000), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(put_pattern(x, t, "small", 5, 10));
	ruma_val k5 = sv("small");
	CHECK_OK(ruma_db_blob_open(x, t, &k5, &b));
	CHECK_EQ(check_ranges(b, 5, 10), TEST_PASS);
	CHECK_EQ(append_pattern(b, 5, 10, 9000, 0), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	CHECK_OK(ruma_db_table_open(x, "b", 0, &t));
	CHECK_EQ(expect(x, t, "one", 1, 75000), TEST_PASS);
	CHECK_EQ(expect(x, t, "small", 5, 9010), TEST_PASS);
	CHECK_EQ(expect(x, t, "many", 3, 3u << 20), TEST_PASS);
	CHECK_OK(ruma_db_blob_open(x, t, &k3, &b));
	CHECK_EQ(check_ranges(b, 3, 3u << 20), TEST_PASS);
	CHECK_EQ(ruma_db_blob_append(b, "x", 1), -EACCES);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

static uint64_t pages_used(ruma_db *db)
{
	ruma_db_stats s;
	if (ruma_db_stat(db, &s))
		return UINT64_MAX;
	return s.pages;
}

/* Overwrite, delete and abort give their extents back (the page count
 * returns to where it was; the store check finds nothing leaked), and a
 * pointer from ruma_db_get stays valid until the end of its transaction
 * even across later puts in it. */
static int t_free(void)
{
	CHECK(!dirs());
	ruma_db_options o = opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "b", RUMA_DB_CREATE, &t));
	CHECK_OK(put_pattern(x, t, "k", 1, 10));
	CHECK_OK(ruma_db_commit(x));
	uint64_t base = pages_used(db);
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(put_pattern(x, t, "a", 1, 1u << 20));
	CHECK_OK(ruma_db_abort(x));
	CHECK_EQ(pages_used(db), base);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(put_pattern(x, t, "a", 1, 1u << 20));
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(pages_used(db), base + 256);
	CHECK_OK(ruma_db_begin(db, 0, &x));
	ruma_val ka = sv("a"), v;
	CHECK_OK(ruma_db_get(x, t, &ka, &v));
	CHECK_OK(put_pattern(x, t, "a", 2, 2u << 20)); /* replaces the value read */
	CHECK_OK(put_pattern(x, t, "c", 3, 5000));
	CHECK(is_pattern(v.data, 1, 1u << 20, 0)); /* still pinned */
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(pages_used(db), base + 512 + 2);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_del(x, t, &ka));
	ruma_val kc = sv("c");
	CHECK_OK(ruma_db_del(x, t, &kc));
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(pages_used(db), base);
	CHECK_OK(ruma_db_check(db));
	/* a small value over a BLOB frees it too */
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(put_pattern(x, t, "a", 4, 40000));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(put_pattern(x, t, "a", 4, 4));
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(pages_used(db), base);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* A snapshot keeps reading the value it saw while a writer replaces and
 * deletes it; the extents go back once the snapshot ends. */
static int t_snapshot(void)
{
	CHECK(!dirs());
	ruma_db_options o = opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_txn *x, *r;
	ruma_db_table *t;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "b", RUMA_DB_CREATE, &t));
	CHECK_OK(put_pattern(x, t, "k", 1, 10));
	CHECK_OK(ruma_db_commit(x));
	uint64_t base = pages_used(db);
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(put_pattern(x, t, "a", 1, 300000));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &r));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(put_pattern(x, t, "a", 2, 200000));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	ruma_val ka = sv("a");
	CHECK_OK(ruma_db_del(x, t, &ka));
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(expect(r, t, "a", 1, 300000), TEST_PASS);
	CHECK(pages_used(db) > base);
	CHECK_OK(ruma_db_commit(r));
	CHECK_EQ(pages_used(db), base);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "sizes", t_sizes },
	{ "threshold", t_threshold },
	{ "stream", t_stream },
	{ "free", t_free },
	{ "snapshot", t_snapshot },
};

int main(int argc, char **argv)
{
	return test_main("blob", cases, TEST_N(cases), argc, argv);
}
