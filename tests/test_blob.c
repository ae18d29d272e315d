/*
 * test_blob.c — large values (BLOBs) of db.h (docs/blob.md): sizes at every
 * boundary, the threshold, misuse and limits of the handle calls, extent
 * tiers and the tail extent, append patterns and range reads, values
 * larger than the pool, pointers valid until the
 * transaction ends, overwrite / delete / abort / snapshot freeing extents
 * (the store check accounts for every page), reopening after a clean close
 * and after simulated power losses at every sync, extents on pages the
 * B-tree freed before a crash (redo must neither shadow nor overwrite them),
 * fault injection on extent
 * writes and reads, churn keeping the store near its live bytes, and the
 * extent allocator's free-run index.
 */
#include "test.h"

#include <ruma/db.h>
#include <ruma/btree.h>

#include "bm/bm_ext.h"
#include "os/os.h"

#include <fcntl.h>
#include <sys/stat.h>

#define DB_TEST_NAME "blob"
#include "db_util.h"
#include "db_crash.h"

static ruma_db_options opts(void)
{
	return db_test_opts(32u << 20);
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
	ruma_bm *bm = ruma_db_bm(db);
	const char *base = ruma_bm_extent_addr(bm, 0), *c = p;
	return c >= base && c < base + ruma_bm_high_water(bm) * RUMA_BM_PAGE_SIZE;
}

static const size_t sizes[] = { 0, 1, RUMA_DB_BLOB_THRESHOLD - 1, RUMA_DB_BLOB_THRESHOLD,
				RUMA_DB_BLOB_THRESHOLD + 1, 4095, 4096, 4097, 65535, 65536,
				65537, (1u << 20) + 13, (3u << 20) + 4095 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int check_sizes(ruma_db *db)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
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
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
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
	uint8_t ff[3] = { 0xff, 0x42, 0x01 }, fe[2] = { 0xfe, 0xfe };
	ruma_val kf = sv("ff"), vf = { 3, ff }, ke = sv("fe"), ve = { 2, fe }, got;
	CHECK_OK(ruma_db_put(x, t, &kf, &vf, 0));
	CHECK_OK(ruma_db_put(x, t, &ke, &ve, 0));
	CHECK_OK(ruma_db_get(x, t, &kf, &got));
	CHECK(got.len == 3 && !memcmp(got.data, ff, 3));
	CHECK_OK(ruma_db_get(x, t, &ke, &got));
	CHECK(got.len == 2 && !memcmp(got.data, fe, 2));
	uint8_t one = 0;
	ruma_val big = { RUMA_DB_MAX_VALUE + 1, &one };
	CHECK_EQ(ruma_db_put(x, t, &kf, &big, 0), RUMA_ETOOBIG);
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(check_sizes(db), TEST_PASS);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(db_reopen(&db, &o));
	CHECK_EQ(check_sizes(db), TEST_PASS);
	return db_test_end(db);
}

/* A put writes its extent around the pool: whole aligned pages straight
 * from the caller's buffer, unaligned bytes and the last partial page
 * through the thread's 4 MiB bounce buffer (values here span several
 * bounce loads).  Its pages do not become resident; a get reads them back
 * from the file, byte for byte. */
static int t_write_around(void)
{
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	const size_t n = (5u << 20) + 3 * 4096 + 100;
	uint8_t *src = pattern(7, n), *al = NULL;
	CHECK(src && !posix_memalign((void **)&al, 4096, n + 4096 + 1));
	memcpy(al, src, n); /* aligned: direct, then a bounced tail */
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
	ruma_db_stats before, after;
	CHECK_OK(ruma_db_stat(db, &before));
	ruma_val ka = sv("aligned"), ku = sv("unaligned"), v = { n, al }, got;
	CHECK_OK(ruma_db_put(x, t, &ka, &v, 0));
	CHECK_OK(ruma_db_stat(db, &after));
	printf("  resident pages: %llu before the put of %zu bytes, %llu after\n",
	       (unsigned long long)before.pages_resident, n,
	       (unsigned long long)after.pages_resident);
	CHECK(after.pages_resident < before.pages_resident + 16);
	memcpy(al + 4096 + 1, src, n); /* unaligned: all bounced */
	v.data = al + 4096 + 1;
	CHECK_OK(ruma_db_put(x, t, &ku, &v, 0));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	CHECK_OK(ruma_db_get(x, t, &ka, &got));
	CHECK(got.len == n && !memcmp(got.data, src, n));
	CHECK_OK(ruma_db_get(x, t, &ku, &got));
	CHECK(got.len == n && !memcmp(got.data, src, n));
	CHECK_OK(ruma_db_commit(x));
	free(src);
	free(al);
	return db_test_end(db);
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
	CHECK_OK(db_begin_table(db, 0, "b", RUMA_DB_CREATE, &x, &t));
	CHECK_OK(put_pattern(x, t, "a", 1, 100));
	CHECK_OK(put_pattern(x, t, "b", 2, 101));
	ruma_val ka = sv("a"), kb = sv("b"), va, vb;
	CHECK_OK(ruma_db_get(x, t, &ka, &va));
	CHECK_OK(ruma_db_get(x, t, &kb, &vb));
	CHECK(!in_pool(db, va.data));
	CHECK(in_pool(db, vb.data));
	CHECK(is_pattern(vb.data, 2, 101, 0));
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
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

/* A range read that fails reading around the pool gives -EIO and leaves
 * the handle usable. */
static int read_around_fails(ruma_db_txn *x, ruma_db_table *t, const char *key)
{
	ruma_val k = sv(key);
	ruma_db_blob *b;
	uint8_t buf[64];
	size_t got;
	CHECK_OK(ruma_db_blob_open(x, t, &k, &b));
	ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	int r = ruma_db_blob_read(b, 1000, buf, sizeof(buf), &got);
	ruma_os_inject_clear();
	CHECK_EQ(r, -EIO);
	CHECK_OK(ruma_db_blob_read(b, 1000, buf, sizeof(buf), &got));
	CHECK(got == sizeof(buf) && is_pattern(buf, 1, sizeof(buf), 1000));
	CHECK_OK(ruma_db_blob_close(b));
	return TEST_PASS;
}

/* Read [off, off + len) of key through a handle into buf and compare it
 * with the pattern (seed, the value's whole size). */
static int read_range(ruma_db_txn *x, ruma_db_table *t, const char *key, uint32_t seed,
		      uint64_t off, uint8_t *buf, size_t len)
{
	ruma_val k = sv(key);
	ruma_db_blob *b;
	size_t got;
	CHECK_OK(ruma_db_blob_open(x, t, &k, &b));
	CHECK_OK(ruma_db_blob_read(b, off, buf, len, &got));
	CHECK(got == len && is_pattern(buf, seed, len, off));
	CHECK_OK(ruma_db_blob_close(b));
	return TEST_PASS;
}

/* The pieces of a large read around the pool: one that fails gives the
 * read its error (after the others came back); a short one is finished;
 * a ring that fails to submit gives its error.  (An injection counts the
 * calls of every thread: one another thread takes leaves this read whole,
 * and the case is run again.) */
static int read_big_faults(ruma_db_txn *x, ruma_db_table *t, uint8_t *al, size_t n)
{
	ruma_val k = sv("big");
	ruma_db_blob *b;
	size_t got;
	CHECK_OK(ruma_db_blob_open(x, t, &k, &b));
	const ruma_sys sys[] = { RUMA_SYS_IO_URING_CQE, RUMA_SYS_IO_URING_CQE,
				 RUMA_SYS_IO_URING_ENTER, RUMA_SYS_PREAD };
	const int err[] = { EIO, 0, EIO, EIO }, want[] = { -EIO, 0, -EIO, 0 };
	ruma_bm_io_support io;
	ruma_bm_probe_io(&io);
	if (io.uring)
		printf("  io_uring refused here (%s): the pieces are plain reads\n",
		       ruma_strerror(io.uring));
	for (unsigned i = io.uring ? 3 : 0; i < 4; i++) {
		int r = 1;
		/* another thread of the process may take the injection: again */
		for (unsigned tries = 0; r != want[i] && tries < 20; tries++) {
			memset(al, 0, n);
			ruma_os_inject(sys[i], 2, err[i], false);
			r = ruma_db_blob_read(b, 0, al, n, &got);
			ruma_os_inject_clear();
			CHECK(r == want[i] || (r == 0 && got == n));
		}
		CHECK_EQ(r, want[i]);
		CHECK(r || (got == n && is_pattern(al, 3, n, 0)));
	}
	CHECK_OK(ruma_db_blob_close(b));
	return TEST_PASS;
}

/* Range reads and gets in a RUMA_DB_NOFILL transaction: whole values into
 * aligned and unaligned buffers and parts of them, from a cold pool, leave
 * the pool as it was (a get copies); without the flag the same read fills
 * it, and a NOFILL get then copies from the pool. */
static int t_read_around(void)
{
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	const size_t n = (9u << 20) + 5 * 4096 + 77; /* three chunks of 4 MiB, a tail */
	uint8_t *al = NULL;
	CHECK(!posix_memalign((void **)&al, 4096, n + 4096 + 1));
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
	CHECK_OK(put_pattern(x, t, "big", 3, n));
	CHECK_OK(put_pattern(x, t, "small", 4, 100000));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(db_reopen(&db, &o));
	ruma_db_stats before, after;
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, "b", 0, &x, &t));
	CHECK_OK(ruma_db_stat(db, &before));
	CHECK_EQ(read_range(x, t, "big", 3, 0, al, n), TEST_PASS);         /* direct */
	CHECK_EQ(read_range(x, t, "big", 3, 0, al + 1, n), TEST_PASS);     /* bounced */
	CHECK_EQ(read_range(x, t, "big", 3, 4096, al, n - 4096), TEST_PASS);
	CHECK_EQ(read_range(x, t, "big", 3, n - 70, al, 70), TEST_PASS);
	CHECK_EQ(read_range(x, t, "small", 4, 0, al, 100000), TEST_PASS);
	CHECK_EQ(read_range(x, t, "small", 4, 4095, al + 3, 50000), TEST_PASS);
	ruma_val ks = sv("small"), v;
	CHECK_OK(ruma_db_get(x, t, &ks, &v)); /* a copy the transaction owns */
	CHECK(v.len == 100000 && is_pattern(v.data, 4, v.len, 0) && !in_pool(db, v.data));
	CHECK_OK(ruma_db_stat(db, &after));
	printf("  resident pages: %llu before the reads around the pool, %llu after\n",
	       (unsigned long long)before.pages_resident, (unsigned long long)after.pages_resident);
	CHECK(after.pages_resident < before.pages_resident + 4);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
	CHECK_EQ(read_range(x, t, "small", 4, 0, al, 100000), TEST_PASS);
	CHECK_OK(ruma_db_stat(db, &after));
	CHECK(after.pages_resident >= before.pages_resident + 100000 / 4096);
	CHECK_OK(ruma_db_commit(x));
	/* resident now: NOFILL gets and reads copy from the pool, a get into
	 * one buffer that the next get reuses */
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, "b", 0, &x, &t));
	CHECK_OK(ruma_db_get(x, t, &ks, &v));
	CHECK(v.len == 100000 && is_pattern(v.data, 4, v.len, 0) && !in_pool(db, v.data));
	ruma_val v2;
	CHECK_OK(ruma_db_get(x, t, &ks, &v2));
	CHECK(v2.data == v.data && is_pattern(v2.data, 4, v2.len, 0));
	ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	int r = read_range(x, t, "small", 4, 10, al, 90000);
	ruma_os_inject_clear();
	CHECK_EQ(r, TEST_PASS);
	CHECK_OK(ruma_db_commit(x));
	/* a handle's own appends, read back around the pool before it closes */
	CHECK_OK(db_begin_table(db, RUMA_DB_NOFILL, "b", 0, &x, &t));
	ruma_val kn = sv("grown");
	ruma_db_blob *b;
	CHECK_OK(ruma_db_blob_create(x, t, &kn, 0, &b));
	CHECK_EQ(append_pattern(b, 5, 0, (3u << 20) + 77, 100000), TEST_PASS);
	CHECK_EQ(check_ranges(b, 5, (3u << 20) + 77), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	/* opened for reading, no thread of the store reaps io_uring completions
	 * but the reader, so an injection reaches the read it aims at */
	o.flags |= RUMA_DB_READONLY;
	CHECK_OK(db_reopen(&db, &o));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, "b", 0, &x, &t));
	CHECK_EQ(read_big_faults(x, t, al, n), TEST_PASS);
	CHECK_OK(ruma_db_commit(x));
	free(al);
	return db_test_end(db);
}

/* ruma_db_buffer_alloc: bad lengths refused; a value put from such a
 * buffer (aligned: written straight from it) reads back whole into another
 * (straight into it, around the pool), at an odd address (through the
 * thread's bounce buffer) and by a NOFILL get (the scratch buffer), cold
 * after a reopen. */
static int t_buffer(void)
{
	void *p = NULL;
	CHECK_EQ(ruma_db_buffer_alloc(0, &p), -EINVAL);
	CHECK_EQ(ruma_db_buffer_alloc(10, NULL), -EINVAL);
	CHECK_EQ(ruma_db_buffer_alloc(SIZE_MAX, &p), -EINVAL);
	ruma_db_buffer_free(NULL);
	const size_t n = (3u << 20) + 77;
	uint8_t *src, *dst;
	CHECK_OK(ruma_db_buffer_alloc(n, (void **)&src));
	CHECK_OK(ruma_db_buffer_alloc(n + 1, (void **)&dst));
	CHECK((uintptr_t)src % (2u << 20) == 0 && (uintptr_t)dst % (2u << 20) == 0);
	for (size_t i = 0; i < n; i++)
		src[i] = pat(6, i);
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
	ruma_val k = sv("huge"), v = { n, src };
	CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(db_reopen(&db, &o));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, "b", 0, &x, &t));
	CHECK_EQ(read_range(x, t, "huge", 6, 0, dst, n), TEST_PASS);
	CHECK_EQ(read_range(x, t, "huge", 6, 0, dst + 1, n), TEST_PASS);
	ruma_val got; /* copied into the transaction's scratch buffer of huge pages */
	CHECK_OK(ruma_db_get(x, t, &k, &got));
	CHECK(got.len == n && is_pattern(got.data, 6, n, 0) && !in_pool(db, got.data));
	CHECK_OK(ruma_db_commit(x));
	ruma_db_buffer_free(src);
	ruma_db_buffer_free(dst);
	return db_test_end(db);
}

/* Streaming: 1-byte appends, page-straddling ones, many appends making
 * several extents, an exact hint making one; ranges read while appending
 * and after; the whole value through ruma_db_get (a copy for several
 * extents, the pool for one); appending to a committed value and to an
 * inline one; a handle left open is closed by the commit. */
static int t_stream(void)
{
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_blob *b;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
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
	CHECK_OK(db_reopen(&db, &o));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
	CHECK_EQ(expect(x, t, "one", 1, 75000), TEST_PASS);
	CHECK_EQ(expect(x, t, "small", 5, 9010), TEST_PASS);
	CHECK_EQ(expect(x, t, "many", 3, 3u << 20), TEST_PASS);
	CHECK_OK(ruma_db_blob_open(x, t, &k3, &b));
	CHECK_EQ(check_ranges(b, 3, 3u << 20), TEST_PASS);
	CHECK_EQ(ruma_db_blob_append(b, "x", 1), -EACCES);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}

static uint64_t pages_used(ruma_db *db)
{
	ruma_db_stats s;
	if (ruma_db_stat(db, &s))
		return UINT64_MAX;
	return s.pages;
}

/* A case's start (db_test_start with opts()) whose first transaction puts
 * a small value (key, pattern 1, 10 bytes) in table name and commits, so
 * the B-tree has its first pages: *base is the pages in use then. */
static int start_small(ruma_db **db, ruma_db_table **t, const char *name, const char *key,
		       uint64_t *base)
{
	ruma_db_options o = opts();
	ruma_db_txn *x;
	CHECK_OK(db_test_start(&o, db, &x, t, name));
	CHECK_OK(put_pattern(x, *t, key, 1, 10));
	CHECK_OK(ruma_db_commit(x));
	*base = pages_used(*db);
	return TEST_PASS;
}

/* The bytes of disk the store file takes (its blocks, not its size). */
static uint64_t store_disk_bytes(void)
{
	struct stat st;
	return stat(path, &st) ? 0 : (uint64_t)st.st_blocks * 512;
}

/* Whether the file system of the test's directory punches holes. */
static bool can_punch(void)
{
	char f[600];
	snprintf(f, sizeof(f), "%s/punch", dir);
	int fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return false;
	bool ok = fallocate(fd, 0, 0, 1 << 20) == 0 &&
		  fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20) == 0;
	close(fd);
	unlink(f);
	return ok;
}

/* Overwrite, delete and abort give their extents back (the page count
 * returns to where it was; the store check finds nothing leaked), and a
 * pointer from ruma_db_get stays valid until the end of its transaction
 * even across later puts in it. */
static int t_free(void)
{
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	uint64_t base;
	CHECK_EQ(start_small(&db, &t, "b", "k", &base), TEST_PASS);
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
	return db_test_end(db);
}

#define HOLE_VALUES 24u

/* Delete HOLE_VALUES values of 1 MiB, one per transaction; with fail, every
 * punch fails (the space stays in the file). */
static int holes_delete(ruma_db *db, bool fail)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	char key[8];
	for (unsigned i = 0; i < HOLE_VALUES; i++) {
		CHECK_OK(db_begin_table(db, 0, "b", 0, &x, &t));
		snprintf(key, sizeof(key), "v%02u", i);
		ruma_val k = sv(key);
		CHECK_OK(ruma_db_del(x, t, &k));
		if (fail)
			ruma_os_inject(RUMA_SYS_FALLOCATE, 1, EIO, true);
		int r = ruma_db_commit(x);
		ruma_os_inject_clear();
		CHECK_OK(r);
	}
	return TEST_PASS;
}

static int holes_put(ruma_db *db)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	char key[8];
	CHECK_OK(db_begin_table(db, 0, "b", 0, &x, &t));
	for (unsigned i = 0; i < HOLE_VALUES; i++) {
		snprintf(key, sizeof(key), "v%02u", i);
		CHECK_OK(put_pattern(x, t, key, i, 1u << 20));
	}
	CHECK_OK(ruma_db_commit(x));
	return TEST_PASS;
}

/* Deleted values keep their disk space for reuse up to 16 MiB free (a
 * quarter of the pages in use when more); the extents freed beyond that go
 * back to the file system as holes, which later values reuse; a punch that
 * fails keeps the space and the store whole. */
static int t_holes(void)
{
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	uint64_t base;
	CHECK_EQ(start_small(&db, &t, "b", "k", &base), TEST_PASS);
	CHECK_EQ(holes_put(db), TEST_PASS);
	bool holes = can_punch();
	uint64_t disk = store_disk_bytes();
	CHECK_EQ(holes_delete(db, false), TEST_PASS);
	if (holes) /* 16 MiB kept, the last 8 values' space given back */
		CHECK_EQ(store_disk_bytes(), disk - (8u << 20));
	CHECK_EQ(pages_used(db), base);
	CHECK_OK(ruma_db_check(db));
	CHECK_EQ(holes_put(db), TEST_PASS); /* into the kept space and the holes */
	for (unsigned i = 0; i < HOLE_VALUES; i++) { /* a transaction each: pins last until its end */
		char key[8];
		snprintf(key, sizeof(key), "v%02u", i);
		CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
		CHECK_EQ(expect(x, t, key, i, 1u << 20), TEST_PASS);
		CHECK_OK(ruma_db_commit(x));
	}
	disk = store_disk_bytes();
	CHECK_EQ(holes_delete(db, true), TEST_PASS);
	CHECK_EQ(store_disk_bytes(), disk); /* every punch failed: all kept */
	CHECK_EQ(pages_used(db), base);
	CHECK_OK(ruma_db_check(db));
	return db_test_end(db);
}

/* A snapshot keeps reading the value it saw while a writer replaces and
 * deletes it; the extents go back once the snapshot ends. */
static int t_snapshot(void)
{
	ruma_db *db;
	ruma_db_txn *x, *r;
	ruma_db_table *t;
	uint64_t base;
	CHECK_EQ(start_small(&db, &t, "b", "k", &base), TEST_PASS);
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
	return db_test_end(db);
}

/* ---- crashes -------------------------------------------------------------------- */

#define CRASH_KEYS 3u
#define CRASH_TXNS 8u

/* The plan of the crash tests: transaction j writes key j % CRASH_KEYS with
 * seed j + 1 (size by j), streamed for odd j, or deletes it every fourth. */
static size_t crash_size(unsigned j)
{
	static const size_t s[] = { 5000, 70000, 1u << 20, 300, 200000 };
	return s[j % 5];
}

static unsigned crash_flags; /* RUMA_DB_ASYNC: commits durable a little later */

static int crash_txn(ruma_db *db, unsigned j)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	char key[8];
	snprintf(key, sizeof(key), "k%u", j % CRASH_KEYS);
	int r = db_begin_table(db, crash_flags, "c", RUMA_DB_CREATE, &x, &t);
	if (r)
		return r;
	ruma_val k = sv(key);
	if (j % 4 == 3) {
		r = ruma_db_del(x, t, &k);
		r = r == RUMA_ENOTFOUND ? 0 : r;
	} else if (j % 2) {
		ruma_db_blob *b;
		uint8_t *p = pattern(j + 1, crash_size(j));
		r = p ? ruma_db_blob_create(x, t, &k, 0, &b) : -ENOMEM;
		for (size_t at = 0; !r && at < crash_size(j); at += 10000)
			r = ruma_db_blob_append(b, p + at, RUMA_MIN(10000, crash_size(j) - at));
		free(p);
	} else {
		r = put_pattern(x, t, key, j + 1, crash_size(j));
	}
	if (r) {
		(void)ruma_db_abort(x);
		return r;
	}
	return ruma_db_commit(x);
}

/* Whether the store holds exactly the state after transactions [0, n). */
static bool state_after(ruma_db *db, unsigned n)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	int r = db_begin_table(db, RUMA_DB_RDONLY, "c", 0, &x, &t);
	if (r) /* no table: nothing committed yet */
		return r == RUMA_ENOTFOUND && n == 0;
	bool ok = true;
	for (unsigned k = 0; ok && k < CRASH_KEYS; k++) {
		int last = -1; /* the last transaction that wrote key k */
		for (unsigned j = 0; j < n; j++)
			if (j % CRASH_KEYS == k)
				last = (int)j;
		char key[8];
		snprintf(key, sizeof(key), "k%u", k);
		ruma_val kk = sv(key), v;
		r = ruma_db_get(x, t, &kk, &v);
		if (last < 0 || last % 4 == 3)
			ok = r == RUMA_ENOTFOUND;
		else
			ok = !r && v.len == crash_size((unsigned)last) &&
			     is_pattern(v.data, (uint32_t)last + 1, v.len, 0);
	}
	ruma_db_abort(x);
	return ok;
}

/* One run with a power loss at the nth fdatasync: every commit that
 * returned before it is there byte for byte, at most the transactions after
 * it, whole, and the store check finds no extent leaked or shared.  *fired
 * tells whether the loss happened. */
static int powerloss_run(unsigned nth, bool torn, bool *fired)
{
	ruma_db_options o = opts();
	ruma_db *db;
	CHECK_OK(db_powerloss_open(&o, &db));
	ruma_os_inject_hook(RUMA_SYS_FDATASYNC, nth, power_off, NULL);
	unsigned sure = 0, tried = 0;
	for (unsigned j = 0; j < CRASH_TXNS; j++) {
		int r = crash_txn(db, j);
		tried = j + 1;
		if (ruma_os_powerloss_dead())
			break;
		CHECK_OK(r);
		sure = crash_flags & RUMA_DB_ASYNC ? 0 : j + 1;
	}
	*fired = db_powerloss_close(db);
	(void)torn;
	/* a read-only open recovers the store and frees what the crash left
	 * unnamed, as a read-write one */
	CHECK_OK(db_open_readonly(&o, &db));
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	CHECK_OK(ruma_db_open(path, &o, &db));
	bool found = false;
	for (unsigned n = sure; n <= tried && !found; n++)
		found = state_after(db, n);
	CHECK(found);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_close(db));
	return TEST_PASS;
}

/* A simulated power loss at every fdatasync of a run of BLOB puts,
 * streamed appends, overwrites and deletes, with durable commits and with
 * asynchronous ones (some prefix of them survives, each whole: an extent
 * is never missing under a state that reached the log). */
static int t_powerloss(void)
{
	CHECK(!dirs());
	for (unsigned async = 0; async < 2; async++) {
		crash_flags = async ? RUMA_DB_ASYNC : 0;
		unsigned runs = 0;
		for (unsigned nth = 1; nth < 200; nth++) {
			bool fired;
			CHECK_EQ(powerloss_run(nth, false, &fired), TEST_PASS);
			runs++;
			if (!fired)
				break;
		}
		printf("  %u power losses (%s commits)\n", runs - 1, async ? "asynchronous" : "durable");
		CHECK(runs > 3);
	}
	crash_flags = 0;
	dirs_remove();
	return TEST_PASS;
}

/* The kill -9 child: the crash plan's transactions, each reported after
 * its commit. */
static void crash_child(int fd)
{
	ruma_db_options o = opts();
	ruma_db *db;
	if (ruma_db_open(path, &o, &db))
		_exit(2);
	for (unsigned j = 0;; j++) {
		if (crash_txn(db, j))
			_exit(3);
		if (write(fd, &j, sizeof(j)) != sizeof(j))
			_exit(4);
	}
}

/* kill -9 of a child putting BLOBs: every reported commit is there, and the
 * extents the child had in flight are freed at the reopen. */
static int t_kill9(void)
{
	CHECK(!dirs());
	unsigned last;
	CHECK_EQ(db_kill9(crash_child, 20 + (unsigned)(ruma_rng_next(&test_rng) % 30), &last),
		 TEST_PASS);
	ruma_db_options o = opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK(state_after(db, last + 1) || state_after(db, last + 2));
	return db_test_end(db);
}

/* ---- extents on pages the B-tree freed ------------------------------------------------ */

/* The shape of a reuse case: inline values of 900 bytes whose leaves the
 * deletes free (deleted in order, or in a stride that empties every leaf
 * late: all of them changed, unfreed, at once), the BLOB that takes their
 * pages, and the pool (small: recovery's redo evicts pages). */
static struct {
	unsigned values;
	bool stride;
	size_t blob;
	uint64_t pool;
} reuse;

static void reuse_shape(unsigned values, bool stride, size_t blob, uint64_t pool)
{
	reuse.values = values;
	reuse.stride = stride;
	reuse.blob = blob;
	reuse.pool = pool;
}

static ruma_db_options reuse_opts(void)
{
	ruma_db_options o = opts();
	o.pool_bytes = reuse.pool;
	o.checkpoint_bytes = 1ull << 40; /* the whole run in the log */
	o.checkpoint_ms = 600000;
	return o;
}

/* Table "r": reuse.values inline values put, committed, then all deleted
 * and committed, so their B-tree pages are free for an extent. */
static int free_tree_pages(ruma_db *db)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	uint8_t v[900];
	char k[16];
	memset(v, 0x55, sizeof(v));
	for (int del = 0; del < 2; del++) {
		CHECK_OK(ruma_db_begin(db, 0, &x));
		CHECK_OK(ruma_db_table_open(x, "r", RUMA_DB_CREATE, &t));
		for (unsigned j = 0; j < reuse.values; j++) {
			unsigned i = del && reuse.stride ? (unsigned)((j * 7919ull) % reuse.values) : j;
			snprintf(k, sizeof(k), "k%08u", i);
			ruma_val key = sv(k), val = { sizeof(v), v };
			CHECK_OK(del ? ruma_db_del(x, t, &key) : ruma_db_put(x, t, &key, &val, 0));
		}
		CHECK_OK(ruma_db_commit(x));
	}
	return TEST_PASS;
}

static int put_reuse_blob(ruma_db *db)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "r", 0, &t));
	CHECK_OK(put_pattern(x, t, "big", 35, reuse.blob));
	CHECK_OK(ruma_db_commit(x));
	return TEST_PASS;
}

/* Reopen the store and find the BLOB whole, byte for byte, twice: as the
 * open leaves it, then after a clean close wrote every page back. */
static int expect_reuse_blob(void)
{
	for (int round = 0; round < 2; round++) {
		ruma_db_options o = reuse_opts();
		ruma_db *db;
		ruma_db_txn *x;
		ruma_db_table *t;
		CHECK_OK(ruma_db_open(path, &o, &db));
		CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
		CHECK_OK(ruma_db_table_open(x, "r", 0, &t));
		int r = expect(x, t, "big", 35, reuse.blob);
		CHECK_OK(ruma_db_abort(x));
		CHECK_EQ(r, TEST_PASS);
		CHECK_OK(ruma_db_check(db));
		CHECK_OK(ruma_db_close(db));
	}
	return TEST_PASS;
}

/* Run steps in a child that exits without closing the store (as a kill). */
static int crash_after(int (*steps)(ruma_db *db))
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		ruma_db_options o = reuse_opts();
		ruma_db *db;
		if (ruma_db_open(path, &o, &db))
			_exit(2);
		_exit(steps(db) == TEST_PASS ? 0 : 3);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	return TEST_PASS;
}

static int reuse_steps(ruma_db *db)
{
	CHECK_EQ(free_tree_pages(db), TEST_PASS);
	return put_reuse_blob(db);
}

/* Free B-tree pages, put the BLOB, die; reopen and find it whole. */
static int crash_reuse(void)
{
	CHECK(!dirs());
	CHECK_EQ(crash_after(reuse_steps), TEST_PASS);
	CHECK_EQ(expect_reuse_blob(), TEST_PASS);
	dirs_remove();
	return TEST_PASS;
}

/* A BLOB whose extent takes pages the B-tree freed, committed, then the
 * process dies: recovery redoes the B-tree's changes of those pages, and
 * none of them may stand in for the extent's bytes (in the pool or written
 * over the extent by a later checkpoint). */
static int t_reuse_redo(void)
{
	reuse_shape(200, false, 64u << 10, 32u << 20); /* 50 leaves: 64 KiB fits in them */
	return crash_reuse();
}

/* The same pages freed by recovery's redo (resident, changed by it), then
 * taken by an extent while the recovered store runs and written back at its
 * close: the extent's bytes stand. */
static int t_reuse_after_redo(void)
{
	reuse_shape(200, false, 64u << 10, 32u << 20);
	CHECK(!dirs());
	CHECK_EQ(crash_after(free_tree_pages), TEST_PASS);
	ruma_db_options o = reuse_opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	int r = put_reuse_blob(db);
	CHECK_OK(ruma_db_close(db));
	CHECK_EQ(r, TEST_PASS);
	CHECK_EQ(expect_reuse_blob(), TEST_PASS);
	dirs_remove();
	return TEST_PASS;
}

/* As reuse_redo with more changed leaves than the pool holds: redo must not
 * rebuild the freed leaves at all, or eviction writes them over the
 * extent's bytes on disk before redo reaches their frees. */
static int t_reuse_redo_evict(void)
{
	reuse_shape(20000, true, 4u << 20, 16u << 20); /* 5000 leaves, all changed */
	return crash_reuse();
}

/* ---- faults ---------------------------------------------------------------------- */

/* An extent write that fails gives the put a clear error and loses nothing
 * committed; an extent read that fails gives the get one, and the next get
 * succeeds; bytes damaged on disk are RUMA_ECORRUPT for get and range read. */
static int t_faults(void)
{
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
	CHECK_OK(put_pattern(x, t, "a", 1, 100000));
	CHECK_OK(put_pattern(x, t, "s", 9, 10));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, false);
	CHECK_EQ(put_pattern(x, t, "b", 2, 100000), -EIO);
	ruma_os_inject_clear();
	CHECK_OK(ruma_db_abort(x));
	CHECK_OK(ruma_db_check(db));
	/* cold: the extent comes from the file */
	CHECK_OK(db_reopen(&db, &o));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
	CHECK_EQ(expect(x, t, "s", 9, 10), TEST_PASS); /* the leaf is resident */
	ruma_val ka = sv("a"), kb = sv("b"), v;
	CHECK_EQ(ruma_db_get(x, t, &kb, &v), RUMA_ENOTFOUND);
	ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	CHECK_EQ(ruma_db_get(x, t, &ka, &v), -EIO);
	ruma_os_inject_clear();
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(db_reopen(&db, &o));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, "b", 0, &x, &t));
	CHECK_EQ(read_around_fails(x, t, "a"), TEST_PASS);
	CHECK_EQ(expect(x, t, "a", 1, 100000), TEST_PASS);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	/* damage one byte of the value in the file */
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	uint8_t head[16], page[4096];
	for (unsigned i = 0; i < 16; i++)
		head[i] = pat(1, i);
	off_t at = -1;
	for (off_t off = 0; at < 0 && pread(fd, page, sizeof(page), off) == sizeof(page); off += 4096)
		if (!memcmp(page, head, 16))
			at = off;
	CHECK(at >= 0);
	page[100] ^= 1;
	CHECK(pwrite(fd, page, sizeof(page), at + 4096 * 0) == sizeof(page));
	close(fd);
	CHECK_OK(ruma_db_open(path, &o, &db));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
	CHECK_EQ(ruma_db_get(x, t, &ka, &v), RUMA_ECORRUPT);
	ruma_db_blob *b;
	CHECK_OK(ruma_db_blob_open(x, t, &ka, &b));
	size_t got;
	CHECK_EQ(ruma_db_blob_read(b, 50000, page, 10, &got), RUMA_ECORRUPT);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, "b", 0, &x, &t));
	CHECK_OK(ruma_db_blob_open(x, t, &ka, &b)); /* read around the pool */
	CHECK_EQ(ruma_db_blob_read(b, 50000, page, 10, &got), RUMA_ECORRUPT);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	/* a state naming pages beyond the store's end, written under the db layer */
	CHECK_OK(db_reopen(&db, &o));
	ruma_btree *bt;
	CHECK_OK(ruma_btree_open(ruma_db_bm(db), "b", &bt));
	uint8_t st[2 + 16 + 24] = { 0xff, 0x42, 1, 1 };
	uint64_t size = 5000, far = 1ull << 30;
	uint32_t pages = 2;
	memcpy(st + 2 + 8, &size, 8);
	memcpy(st + 18, &far, 8);
	memcpy(st + 26, &pages, 4);
	memcpy(st + 34, &size, 8);
	CHECK_OK(ruma_btree_upsert(bt, "z", 1, st, sizeof(st), NULL));
	ruma_btree_release(bt);
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
	ruma_val kz = sv("z");
	CHECK_EQ(ruma_db_get(x, t, &kz, &v), RUMA_ECORRUPT);
	CHECK_EQ(ruma_db_blob_open(x, t, &kz, &b), RUMA_ECORRUPT);
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(ruma_db_check(db), RUMA_ECORRUPT);
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* ---- free space ---------------------------------------------------------------- */

/* Random overwrites and deletes of values from 100 B to 1 MiB: the pages in
 * use are the live bytes (plus the B-tree's pages), the store grows to at
 * most 1.4x the most live bytes it held plus one value in flight (over
 * seeds 1-160: 1.16x on average, 1.29x at most), and the store check
 * accounts for every page. */
static int t_churn(void)
{
	CHECK(!dirs());
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_open(path, &o, &db));
	enum { KEYS = 40 };
	uint64_t live[KEYS] = { 0 };
	uint8_t *buf = pattern(7, 1u << 20);
	CHECK(buf);
	uint64_t base = pages_used(db), base_hw = ruma_bm_high_water(ruma_db_bm(db));
	uint64_t live_max = 0, bytes = 0;
	for (unsigned i = 0; i < 1500; i++) {
		unsigned k = (unsigned)(ruma_rng_next(&test_rng) % KEYS);
		char key[8];
		snprintf(key, sizeof(key), "k%u", k);
		ruma_val kk = sv(key);
		CHECK_OK(db_begin_table(db, 0, "c", RUMA_DB_CREATE, &x, &t));
		if (ruma_rng_next(&test_rng) % 5 == 0) {
			int r = ruma_db_del(x, t, &kk);
			CHECK(r == 0 || r == RUMA_ENOTFOUND);
			live[k] = 0;
		} else {
			size_t n = (size_t)(100 + ruma_rng_next(&test_rng) % ((1u << 20) - 100));
			ruma_val v = { n, buf };
			CHECK_OK(ruma_db_put(x, t, &kk, &v, 0));
			live[k] = n;
		}
		CHECK_OK(ruma_db_commit(x));
		bytes = 0;
		for (unsigned j = 0; j < KEYS; j++)
			bytes += live[j];
		live_max = bytes > live_max ? bytes : live_max;
	}
	uint64_t hw = ruma_bm_high_water(ruma_db_bm(db)) - base_hw, used = pages_used(db) - base;
	printf("  live %.1f MiB (at most %.1f), data pages in use %.1f MiB, store grew by %.1f "
	       "MiB\n", bytes / 1048576.0, live_max / 1048576.0, used * 4096 / 1048576.0,
	       hw * 4096 / 1048576.0);
	CHECK(used * 4096 <= bytes + KEYS * 4096 + (64u << 10));
	CHECK(hw * 4096 <= live_max * 14 / 10 + (1u << 20));
	free(buf);
	return db_test_end(db);
}

/* One append per transaction, 400 times (each session leaves a tail
 * extent): the value never runs out of extents (the newest are merged into
 * one), every 7th session aborts after its append and gives back what it
 * made (the value and the pages in use are as before it), and the value
 * reads back whole after a reopen. */
static int t_sessions(void)
{
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_blob *b;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "s"));
	CHECK_OK(ruma_db_commit(x));
	ruma_val k = sv("log");
	uint64_t size = 0;
	for (unsigned i = 0; i < 400; i++) {
		uint64_t n = 1 + (i * 7919u) % (i % 50 ? 3000u : 70000u);
		bool abort = i % 7 == 6;
		uint64_t pages = pages_used(db);
		CHECK_OK(db_begin_table(db, 0, "s", 0, &x, &t));
		CHECK_OK(i ? ruma_db_blob_open(x, t, &k, &b) : ruma_db_blob_create(x, t, &k, 0, &b));
		CHECK_EQ(append_pattern(b, 9, size, n, 0), TEST_PASS);
		CHECK_OK(ruma_db_blob_close(b));
		if (abort) {
			CHECK_OK(ruma_db_abort(x));
			CHECK_EQ(pages_used(db), pages);
			continue;
		}
		CHECK_OK(ruma_db_commit(x));
		size += n;
		if (i % 50 == 49) {
			CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "s", 0, &x, &t));
			CHECK_EQ(expect(x, t, "log", 9, size), TEST_PASS);
			CHECK_OK(ruma_db_commit(x));
		}
	}
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(db_reopen(&db, &o));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "s", 0, &x, &t));
	CHECK_EQ(expect(x, t, "log", 9, size), TEST_PASS);
	CHECK_OK(ruma_db_blob_open(x, t, &k, &b));
	CHECK_EQ(check_ranges(b, 9, size), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}

/* The extent allocator: a freed run is found again, neighbours merge, a
 * piece of a run is taken and the rest stays, double frees are refused,
 * single pages are not taken from the extent space, a run at the end of the
 * file grows instead of the file growing past it. */
static int t_extents(void)
{
	CHECK(!dirs());
	ruma_db_options o = opts();
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_bm *bm = ruma_db_bm(db);
	ruma_pid a, b, c, d;
	CHECK_OK(ruma_bm_extent_alloc(bm, 10, &a));
	CHECK_OK(ruma_bm_extent_alloc(bm, 20, &b));
	CHECK_OK(ruma_bm_extent_alloc(bm, 30, &c));
	CHECK_EQ(b, a + 10);
	CHECK_EQ(c, b + 20);
	CHECK_OK(ruma_bm_extent_free(bm, a, 10));
	CHECK_OK(ruma_bm_extent_free(bm, c, 30));
	CHECK_EQ(ruma_bm_extent_free(bm, a, 10), -EINVAL);
	CHECK_OK(ruma_bm_extent_free(bm, b, 20)); /* merges into one run of 60 */
	uint64_t hw = ruma_bm_high_water(bm);
	CHECK_OK(ruma_bm_extent_alloc(bm, 60, &d));
	CHECK_EQ(d, a);
	CHECK_EQ(ruma_bm_high_water(bm), hw);
	CHECK_OK(ruma_bm_extent_free(bm, d, 60));
	CHECK_OK(ruma_bm_extent_alloc(bm, 25, &d)); /* a piece of the run */
	CHECK_EQ(d, a);
	CHECK_OK(ruma_bm_extent_alloc(bm, 35, &d));
	CHECK_EQ(d, a + 25);
	CHECK_OK(ruma_bm_extent_free(bm, a, 60));
	/* too long for any run: the run at the end of the file is extended */
	CHECK_EQ(ruma_bm_high_water(bm), a + 60);
	CHECK_OK(ruma_bm_extent_alloc(bm, 100, &d));
	CHECK_EQ(d, a);
	CHECK_EQ(ruma_bm_high_water(bm), a + 100);
	CHECK_OK(ruma_bm_extent_free(bm, d, 100));
	/* a single page never comes out of a free run */
	ruma_pid p;
	void *page;
	CHECK_OK(ruma_bm_alloc(bm, &p, &page));
	CHECK(p < a || p >= a + 100);
	CHECK_OK(ruma_bm_free(bm, p));
	CHECK_OK(ruma_bm_extent_alloc(bm, 60, &d));
	CHECK_EQ(d, a);
	CHECK_OK(ruma_bm_extent_free(bm, d, 60));
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* Cursors hand back BLOBs whole; dropping a table frees its BLOBs' extents
 * with the commit (an abort keeps them). */
static int t_cursor_drop(void)
{
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t, *k;
	uint64_t base;
	CHECK_EQ(start_small(&db, &k, "keep", "a", &base), TEST_PASS);
	CHECK_OK(db_begin_table(db, 0, "d", RUMA_DB_CREATE, &x, &t));
	for (unsigned i = 0; i < 20; i++) {
		char key[8];
		snprintf(key, sizeof(key), "k%02u", i);
		CHECK_OK(put_pattern(x, t, key, i, i % 2 ? 30000 + i : 10 + i));
	}
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	ruma_db_cursor *c;
	CHECK_OK(ruma_db_cursor_open(x, t, &c));
	unsigned n = 0;
	for (int r = ruma_db_cursor_first(c); r == 0; r = ruma_db_cursor_next(c), n++) {
		ruma_val v;
		CHECK_OK(ruma_db_cursor_get(c, NULL, &v));
		CHECK_EQ(v.len, n % 2 ? 30000 + n : 10 + n);
		CHECK(is_pattern(v.data, n, v.len, 0));
	}
	CHECK_EQ(n, 20);
	ruma_db_cursor_close(c);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_drop(x, t));
	CHECK_OK(ruma_db_abort(x));
	CHECK(pages_used(db) > base + 80);
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(ruma_db_begin(db, 0, &x));
	CHECK_OK(ruma_db_table_drop(x, t));
	CHECK_OK(ruma_db_commit(x));
	CHECK_EQ(pages_used(db), base);
	return db_test_end(db);
}

/* A value larger than half the pool: put whole and streamed, not pinned by
 * ruma_db_get (-ENOMEM), read in ranges through the file (cold too); two
 * values that each fit are not pinned together by one transaction. */
static int t_larger_than_pool(void)
{
	ruma_db_options o = opts();
	o.pool_bytes = 16u << 20;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_blob *b;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
	CHECK_OK(put_pattern(x, t, "whole", 1, 12u << 20));
	CHECK_OK(put_pattern(x, t, "p1", 3, 5u << 20));
	CHECK_OK(put_pattern(x, t, "p2", 4, 5u << 20));
	ruma_val k = sv("whole"), ks = sv("streamed"), k1 = sv("p1"), k2 = sv("p2"), v;
	CHECK_OK(ruma_db_blob_create(x, t, &ks, 20u << 20, &b));
	CHECK_EQ(append_pattern(b, 2, 0, 20u << 20, 1u << 20), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(db_reopen(&db, &o));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "b", 0, &x, &t));
	CHECK_EQ(ruma_db_get(x, t, &k, &v), -ENOMEM);
	/* each fits half the pool, not both in one transaction */
	CHECK_OK(ruma_db_get(x, t, &k1, &v));
	CHECK(is_pattern(v.data, 3, 5u << 20, 0));
	CHECK_EQ(ruma_db_get(x, t, &k2, &v), -ENOMEM);
	CHECK_OK(ruma_db_get(x, t, &k1, &v)); /* pinned already */
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	CHECK_OK(ruma_db_get(x, t, &k2, &v));
	CHECK(is_pattern(v.data, 4, 5u << 20, 0));
	CHECK_OK(ruma_db_blob_open(x, t, &k, &b));
	CHECK_EQ(check_ranges(b, 1, 12u << 20), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_blob_open(x, t, &ks, &b));
	CHECK_EQ(ruma_db_blob_size(b), 20u << 20);
	CHECK_EQ(check_ranges(b, 2, 20u << 20), TEST_PASS);
	CHECK_OK(ruma_db_blob_close(b));
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}

/* Extent tiers and the tail extent: a value streamed without a hint takes
 * extents of 16, 32, 64 ... pages, the last trimmed to its bytes at close,
 * so it holds exactly the pages its bytes need; with a hint too small, the
 * hint's extent and then tiers; with the exact hint, one extent (pinned). */
static int t_tiers(void)
{
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_blob *b;
	uint64_t base;
	CHECK_EQ(start_small(&db, &t, "b", "a", &base), TEST_PASS);
	static const struct { uint64_t hint, size; } runs[] = {
		{ 0, 300000 }, { 100000, 300000 }, { 300000, 300000 }, { 0, 16 * 4096 },
		{ 0, 16 * 4096 + 1 }, { 0, 48 * 4096 }, { 5, 4097 },
	};
	for (unsigned i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		base = pages_used(db);
		ruma_val k = sv("v"), v;
		CHECK_OK(ruma_db_begin(db, 0, &x));
		CHECK_OK(ruma_db_blob_create(x, t, &k, runs[i].hint, &b));
		CHECK_EQ(append_pattern(b, i, 0, runs[i].size, 0), TEST_PASS);
		CHECK_OK(ruma_db_blob_close(b));
		CHECK_OK(ruma_db_get(x, t, &k, &v));
		CHECK(v.len == runs[i].size && is_pattern(v.data, i, v.len, 0));
		if (runs[i].hint == runs[i].size || i == 0) /* one extent, or adjacent ones */
			CHECK(in_pool(db, v.data));
		CHECK_OK(ruma_db_commit(x));
		uint64_t old = i ? (runs[i - 1].size + 4095) / 4096 : 0;
		CHECK_EQ(pages_used(db) + old, base + (runs[i].size + 4095) / 4096);
		CHECK_OK(ruma_db_check(db));
	}
	CHECK_OK(ruma_db_close(db));
	dirs_remove();
	return TEST_PASS;
}

/* A snapshot writer that lost the row to a later commit conflicts at
 * create, before it appends a byte; a handle whose value cannot be stored
 * (its last write fails) gives its extents back at close, and the
 * transaction can still commit without leaking them. */
static int t_close_conflict(void)
{
	ruma_db *db;
	ruma_db_txn *a, *b;
	ruma_db_table *t;
	ruma_db_blob *h;
	uint64_t base;
	CHECK_EQ(start_small(&db, &t, "b", "x", &base), TEST_PASS);
	CHECK_OK(ruma_db_begin(db, RUMA_DB_SNAPSHOT, &a));
	CHECK_OK(ruma_db_begin(db, 0, &b));
	CHECK_OK(put_pattern(b, t, "k", 2, 50000));
	CHECK_OK(ruma_db_commit(b));
	base = pages_used(db);
	ruma_val k = sv("k"), k2 = sv("k2");
	CHECK_EQ(ruma_db_blob_create(a, t, &k, 0, &h), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_blob_create(a, t, &k2, 0, &h));
	CHECK_EQ(append_pattern(h, 3, 0, 200001, 0), TEST_PASS);
	ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, true);
	int rc = ruma_db_blob_close(h);
	ruma_os_inject_clear();
	CHECK_EQ(rc, -EIO);
	CHECK_OK(ruma_db_commit(a));
	CHECK_EQ(pages_used(db), base);
	return db_test_end(db);
}

/* Misuse and limits of the handle calls: each a clear error code. */
static int t_misuse(void)
{
	ruma_db_options o = opts();
	ruma_db *db;
	ruma_db_txn *x, *r;
	ruma_db_table *t;
	ruma_db_blob *b;
	CHECK_OK(db_test_start(&o, &db, &x, &t, "b"));
	ruma_val k = sv("k"), none = sv("none"), empty = { 0, NULL };
	uint8_t big[RUMA_DB_MAX_KEY + 1] = { 0 };
	ruma_val bigk = { sizeof(big), big };
	CHECK_EQ(ruma_db_blob_create(NULL, t, &k, 0, &b), -EINVAL);
	CHECK_EQ(ruma_db_blob_create(x, NULL, &k, 0, &b), -EINVAL);
	CHECK_EQ(ruma_db_blob_create(x, t, NULL, 0, &b), -EINVAL);
	CHECK_EQ(ruma_db_blob_create(x, t, &k, 0, NULL), -EINVAL);
	CHECK_EQ(ruma_db_blob_create(x, t, &empty, 0, &b), -EINVAL);
	CHECK_EQ(ruma_db_blob_create(x, t, &bigk, 0, &b), RUMA_ETOOBIG);
	CHECK_EQ(ruma_db_blob_create(x, t, &k, RUMA_DB_MAX_VALUE + 1, &b), RUMA_ETOOBIG);
	CHECK_EQ(ruma_db_blob_open(x, t, &none, &b), RUMA_ENOTFOUND);
	CHECK_OK(ruma_db_blob_create(x, t, &k, 0, &b));
	CHECK_EQ(ruma_db_blob_append(b, NULL, 1), -EINVAL);
	CHECK_EQ(ruma_db_blob_append(NULL, "x", 1), -EINVAL);
	CHECK_EQ(ruma_db_blob_append(b, big, RUMA_DB_MAX_VALUE + 1), RUMA_ETOOBIG);
	CHECK_OK(ruma_db_blob_append(b, "abc", 3));
	size_t got;
	CHECK_EQ(ruma_db_blob_read(b, 0, NULL, 1, &got), -EINVAL);
	CHECK_EQ(ruma_db_blob_read(b, 0, big, 1, NULL), -EINVAL);
	CHECK_EQ(ruma_db_blob_read(NULL, 0, big, 1, &got), -EINVAL);
	CHECK_OK(ruma_db_blob_read(b, 1, big, 10, &got));
	CHECK(got == 2 && !memcmp(big, "bc", 2));
	CHECK_EQ(ruma_db_blob_size(NULL), 0);
	CHECK_OK(ruma_db_blob_close(NULL));
	CHECK_OK(ruma_db_blob_close(b));
	/* a second transaction does not see the uncommitted BLOB and conflicts
	 * on writing its row; under two-phase locking reading it conflicts too */
	CHECK_OK(ruma_db_begin(db, 0, &r));
	CHECK_EQ(ruma_db_blob_open(r, t, &k, &b), RUMA_ENOTFOUND);
	CHECK_EQ(ruma_db_blob_create(r, t, &k, 0, &b), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_abort(r));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_LOCKING, &r));
	CHECK_EQ(ruma_db_blob_open(r, t, &k, &b), RUMA_ECONFLICT);
	CHECK_EQ(ruma_db_blob_create(r, t, &k, 0, &b), RUMA_ECONFLICT);
	CHECK_OK(ruma_db_abort(r));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_begin(db, RUMA_DB_RDONLY, &r));
	CHECK_EQ(ruma_db_blob_create(r, t, &k, 0, &b), -EACCES);
	CHECK_OK(ruma_db_blob_open(r, t, &k, &b));
	CHECK_EQ(ruma_db_blob_size(b), 3);
	CHECK_EQ(ruma_db_blob_append(b, "d", 1), -EACCES);
	CHECK_OK(ruma_db_commit(r)); /* closes the handle */
	CHECK_EQ(ruma_db_blob_create(r, t, &k, 0, &b), -EINVAL); /* ended */
	return db_test_end(db);
}

static const struct test_case cases[] = {
	{ "sizes", t_sizes },
	{ "write_around", t_write_around },
	{ "read_around", t_read_around },
	{ "buffer", t_buffer },
	{ "threshold", t_threshold },
	{ "misuse", t_misuse },
	{ "stream", t_stream },
	{ "free", t_free },
	{ "holes", t_holes },
	{ "snapshot", t_snapshot },
	{ "cursor_drop", t_cursor_drop },
	{ "tiers", t_tiers },
	{ "close_conflict", t_close_conflict },
	{ "larger_than_pool", t_larger_than_pool },
	{ "powerloss", t_powerloss },
	{ "kill9", t_kill9 },
	{ "reuse_redo", t_reuse_redo },
	{ "reuse_after_redo", t_reuse_after_redo },
	{ "reuse_redo_evict", t_reuse_redo_evict },
	{ "faults", t_faults },
	{ "churn", t_churn },
	{ "extents", t_extents },
	{ "sessions", t_sessions },
};

int main(int argc, char **argv)
{
	return test_main("blob", cases, TEST_N(cases), argc, argv);
}
