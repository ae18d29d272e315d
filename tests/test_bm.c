/*
 * test_bm.c — single-threaded tests of the buffer manager: latch semantics,
 * allocation and id reuse, frames made ready ahead of allocation within
 * the pool's size, eviction through a tiny pool, persistence across
 * close/open, injected I/O failures, a truncated file, corrupt metadata, bad
 * configurations and every wait x evict x write combination; the store's
 * integrity: a flipped bit or a misplaced page image caught by the page
 * checksum, the lock against a second opener (same process and a forked
 * child), stores killed with SIGKILL refused as not closed cleanly, injected
 * failures of flock and fdatasync, and the thread-limit message said once.
 */
#include "fixture.h"

#include <ruma/bm.h>

#include "os/os.h"
#include "bm/bm_int.h"
#include "page0_util.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define PS RUMA_BM_PAGE_SIZE

/* The defaults for a small test store at test_store_path, eviction batch 16. */
static void cfg_small(ruma_bm_config *c, uint64_t virt_pages, uint64_t phys_pages)
{
	test_bm_config(c, test_store_path, virt_pages, phys_pages);
	c->batch = 16;
}

static void fill(void *page, ruma_pid pid, uint64_t gen)
{
	uint64_t *w = page;
	for (size_t i = 0; i < RUMA_BM_PAGE_DATA / 8; i++)
		w[i] = pid * 0x9E3779B97F4A7C15ull + gen * 1000003 + i;
}

static bool matches(const void *page, ruma_pid pid, uint64_t gen)
{
	const uint64_t *w = page;
	for (size_t i = 0; i < RUMA_BM_PAGE_DATA / 8; i++)
		if (w[i] != pid * 0x9E3779B97F4A7C15ull + gen * 1000003 + i)
			return false;
	return true;
}

/* Allocate n pages with patterns (gen), unlatched afterwards. */
static int alloc_fill(ruma_bm *bm, ruma_pid *pids, size_t n, uint64_t gen)
{
	for (size_t i = 0; i < n; i++) {
		void *p;
		CHECK_OK(ruma_bm_alloc(bm, &pids[i], &p));
		fill(p, pids[i], gen);
		ruma_bm_unfix_x(bm, pids[i]);
	}
	return TEST_PASS;
}

/* Open c's store and allocate n pages with generation gen (alloc_fill). */
static int open_filled(ruma_bm_config *c, ruma_bm **bm, ruma_pid *pids, size_t n, uint64_t gen)
{
	CHECK_OK(ruma_bm_open(c, bm));
	return alloc_fill(*bm, pids, n, gen);
}

static int verify_all(ruma_bm *bm, const ruma_pid *pids, size_t n, uint64_t gen)
{
	for (size_t i = 0; i < n; i++) {
		void *p;
		CHECK_OK(ruma_bm_fix_s(bm, pids[i], &p));
		bool ok = matches(p, pids[i], gen);
		ruma_bm_unfix_s(bm, pids[i]);
		if (!ok) {
			fprintf(stderr, "  page %" PRIu64 " (index %zu) has wrong content\n", pids[i], i);
			return TEST_FAIL;
		}
	}
	return TEST_PASS;
}

static int t_latches(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_pid pid;
	void *p, *q;
	uint64_t v, v2;

	cfg_small(&c, 1024, 256);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_alloc(bm, &pid, &p));
	memset(p, 7, RUMA_BM_PAGE_DATA);
	ruma_bm_unfix_x(bm, pid);

	CHECK_OK(ruma_bm_optimistic(bm, pid, &v, &q));
	CHECK(q == p);
	CHECK_OK(ruma_bm_validate(bm, pid, v));
	/* an exclusive latch cycle changes the version */
	CHECK_OK(ruma_bm_fix_x(bm, pid, &q));
	ruma_bm_unfix_x(bm, pid);
	CHECK_EQ(ruma_bm_validate(bm, pid, v), RUMA_RESTART);
	CHECK_EQ(ruma_bm_upgrade_x(bm, pid, v), RUMA_RESTART);
	CHECK_EQ(ruma_bm_upgrade_s(bm, pid, v), RUMA_RESTART);

	/* shared latches count; validate ignores them, upgrade_x refuses */
	CHECK_OK(ruma_bm_optimistic(bm, pid, &v2, &q));
	CHECK(v2 != v);
	CHECK_OK(ruma_bm_fix_s(bm, pid, &q));
	CHECK_OK(ruma_bm_upgrade_s(bm, pid, v2));
	CHECK_OK(ruma_bm_validate(bm, pid, v2));
	CHECK_EQ(ruma_bm_upgrade_x(bm, pid, v2), RUMA_RESTART);
	ruma_bm_unfix_s(bm, pid);
	ruma_bm_unfix_s(bm, pid);
	/* shared latches do not change the version */
	CHECK_OK(ruma_bm_validate(bm, pid, v2));
	CHECK_OK(ruma_bm_upgrade_x(bm, pid, v2));
	CHECK_EQ(ruma_bm_validate(bm, pid, v2), RUMA_RESTART); /* locked now */
	ruma_bm_unfix_x(bm, pid);
	CHECK_OK(ruma_bm_optimistic(bm, pid, &v, &q));
	CHECK(v != v2);

	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	CHECK(st.restarts >= 4);
	CHECK(st.state_bytes >= 1024 * 8);
	/* bad pids */
	CHECK_EQ(ruma_bm_fix_s(bm, 0, &q), -EINVAL);
	CHECK_EQ(ruma_bm_optimistic(bm, 1u << 30, &v, &q), -EINVAL);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static int reuse_case(bool reuse)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_pid pids[32], again[8];
	void *p;

	cfg_small(&c, 1024, 512);
	c.reuse_pages = reuse;
	CHECK(open_filled(&c, &bm, pids, 32, 1) == TEST_PASS);
	for (int i = 0; i < 32; i += 4) {
		CHECK_OK(ruma_bm_fix_x(bm, pids[i], &p));
		CHECK_OK(ruma_bm_free(bm, pids[i]));
	}
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	CHECK_EQ(st.pages_free, 8);
	/* freeing an unlatched page is refused */
	CHECK_EQ(ruma_bm_free(bm, pids[1]), -EINVAL);
	for (int i = 0; i < 8; i++) {
		CHECK_OK(ruma_bm_alloc(bm, &again[i], &p));
		for (size_t k = 0; k < PS; k++)
			CHECK(((unsigned char *)p)[k] == 0);
		ruma_bm_unfix_x(bm, again[i]);
		bool was_freed = false;
		for (int j = 0; j < 32; j += 4)
			was_freed |= again[i] == pids[j];
		CHECK(was_freed == reuse);
	}
	ruma_bm_get_stats(bm, &st);
	CHECK_EQ(st.pages_free, reuse ? 0 : 8);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

TEST_BIND(t_reuse, reuse_case, true)
TEST_BIND(t_no_reuse, reuse_case, false)

static int t_evict_tiny_pool(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 1000 };
	static ruma_pid pids[N];

	cfg_small(&c, 4096, 64);
	CHECK(open_filled(&c, &bm, pids, N, 3) == TEST_PASS);
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	CHECK(st.pages_resident <= 64);
	CHECK(st.evictions >= N - 64);
	CHECK(st.writes >= N - 64);
	CHECK(verify_all(bm, pids, N, 3) == TEST_PASS);
	/* random order, rewrite half, optimistic reads */
	for (int round = 0; round < 2000; round++) {
		size_t i = ruma_rng_below(&test_rng, N);
		uint64_t v;
		void *p;
		CHECK_OK(ruma_bm_optimistic(bm, pids[i], &v, &p));
		bool ok = matches(p, pids[i], 3);
		if (ruma_bm_validate(bm, pids[i], v) == 0)
			CHECK(ok);
	}
	ruma_bm_get_stats(bm, &st);
	CHECK(st.reads > 0);
	CHECK(st.pages_resident <= 64);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* Rewrite random pages (generation gen) until the page cleaner has written
 * some, at most `rounds` rewrites; returns the pages it wrote. */
static uint64_t rewrite_until_cleaned(ruma_bm *bm, const ruma_pid *pids, size_t n, uint64_t gen,
				      unsigned rounds)
{
	ruma_bm_stats st;
	for (unsigned r = 0; r < rounds; r++) {
		void *p;
		size_t i = ruma_rng_below(&test_rng, n);
		if (ruma_bm_fix_x(bm, pids[i], &p) == 0) {
			fill(p, pids[i], gen);
			ruma_bm_unfix_x(bm, pids[i]);
		}
		if (r % 64 == 0) {
			ruma_bm_get_stats(bm, &st);
			if (st.cleaned > 0 && r >= 2 * n)
				return st.cleaned;
			usleep(100); /* let the cleaner run on a loaded machine */
		}
	}
	ruma_bm_get_stats(bm, &st);
	return st.cleaned;
}

/* The page cleaner writes dirty pages ahead of the clock (stats.cleaned);
 * off, it writes none; either way every page keeps its last contents. */
static int cleaner_case(bool on)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 600 };
	static ruma_pid pids[N];

	cfg_small(&c, 4096, 64);
	c.cleaner = on;
	CHECK(open_filled(&c, &bm, pids, N, 1) == TEST_PASS);
	for (size_t i = 0; i < N; i++) { /* every page at generation 2 */
		void *p;
		CHECK_OK(ruma_bm_fix_x(bm, pids[i], &p));
		fill(p, pids[i], 2);
		ruma_bm_unfix_x(bm, pids[i]);
	}
	uint64_t cleaned = rewrite_until_cleaned(bm, pids, N, 2, on ? 200000 : 4 * N);
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	printf("  cleaner %s: %" PRIu64 " of %" PRIu64 " writes by the cleaner\n", on ? "on" : "off",
	       cleaned, st.writes);
	if (on)
		CHECK(cleaned > 0);
	else
		CHECK_EQ(cleaned, 0);
	CHECK(st.writes >= cleaned);
	CHECK(verify_all(bm, pids, N, 2) == TEST_PASS);
	CHECK_OK(test_bm_reopen(&c, &bm));
	CHECK(verify_all(bm, pids, N, 2) == TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

TEST_BIND(t_cleaner_on, cleaner_case, true)
TEST_BIND(t_cleaner_off, cleaner_case, false)

/* Every page pids[i] holds generation gen[i]. */
static int verify_gens(ruma_bm *bm, const ruma_pid *pids, const uint64_t *gen, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *p;
		CHECK_OK(ruma_bm_fix_s(bm, pids[i], &p));
		bool ok = matches(p, pids[i], gen[i]);
		ruma_bm_unfix_s(bm, pids[i]);
		CHECK(ok);
	}
	return TEST_PASS;
}

/* Writes fail for a while, the cleaner's among them: a page whose write
 * failed stays dirty, so after the failures end every page still has the
 * contents of its last successful rewrite — after close and reopen too. */
static int t_cleaner_write_error(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 600 };
	static ruma_pid pids[N];
	static uint64_t gen[N];

	cfg_small(&c, 4096, 64);
	c.write = RUMA_BM_WRITE_PWRITE;
	CHECK(open_filled(&c, &bm, pids, N, 1) == TEST_PASS);
	for (size_t i = 0; i < N; i++)
		gen[i] = 1;
	CHECK(rewrite_until_cleaned(bm, pids, N, 1, 200000) > 0);
	ruma_bm_stats before;
	ruma_bm_get_stats(bm, &before);
	ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, true);
	ruma_os_inject(RUMA_SYS_PWRITEV, 1, EIO, true);
	for (unsigned r = 0; r < 20000; r++) {
		void *p;
		size_t i = ruma_rng_below(&test_rng, N);
		if (ruma_bm_fix_x(bm, pids[i], &p) == 0) {
			gen[i] = 2 + r;
			fill(p, pids[i], gen[i]);
			ruma_bm_unfix_x(bm, pids[i]);
		}
	}
	uint64_t failed = ruma_os_injected(RUMA_SYS_PWRITE) + ruma_os_injected(RUMA_SYS_PWRITEV);
	ruma_os_inject_clear();
	ruma_bm_stats after;
	ruma_bm_get_stats(bm, &after);
	printf("  %" PRIu64 " writes failed; the cleaner wrote %" PRIu64 " pages before, %" PRIu64
	       " after\n", failed, before.cleaned, after.cleaned);
	CHECK(failed > 0);
	CHECK(verify_gens(bm, pids, gen, N) == TEST_PASS);
	CHECK_OK(test_bm_reopen(&c, &bm));
	CHECK(verify_gens(bm, pids, gen, N) == TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static int t_persist(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 300 };
	static ruma_pid pids[N];
	void *p;

	cfg_small(&c, 4096, 128);
	CHECK(open_filled(&c, &bm, pids, N, 5) == TEST_PASS);
	CHECK_OK(ruma_bm_meta_set(bm, 0, 42));
	CHECK_OK(ruma_bm_meta_set(bm, RUMA_BM_META_SLOTS - 1, 0xdeadbeef));
	CHECK_EQ(ruma_bm_meta_set(bm, RUMA_BM_META_SLOTS, 1), -EINVAL);
	ruma_pid freed = pids[N - 10];
	CHECK_OK(ruma_bm_fix_x(bm, freed, &p));
	CHECK_OK(ruma_bm_free(bm, freed));
	CHECK_OK(ruma_bm_close(bm));

	c.fresh = false;
	CHECK_OK(ruma_bm_open(&c, &bm));
	uint64_t v;
	CHECK_OK(ruma_bm_meta_get(bm, 0, &v));
	CHECK_EQ(v, 42);
	CHECK_OK(ruma_bm_meta_get(bm, RUMA_BM_META_SLOTS - 1, &v));
	CHECK_EQ(v, 0xdeadbeef);
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	CHECK_EQ(st.pages_free, 1);
	CHECK_EQ(st.pages_resident, 0);
	for (size_t i = 0; i < N; i++) {
		if (pids[i] == freed)
			continue;
		CHECK_OK(ruma_bm_fix_s(bm, pids[i], &p));
		CHECK(matches(p, pids[i], 5));
		ruma_bm_unfix_s(bm, pids[i]);
	}
	ruma_pid np;
	CHECK_OK(ruma_bm_alloc(bm, &np, &p));
	CHECK_EQ(np, freed); /* the free bitmap survived */
	fill(p, np, 6);
	ruma_bm_unfix_x(bm, np);
	CHECK_OK(ruma_bm_flush(bm));
	CHECK_OK(ruma_bm_close(bm));
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_fix_s(bm, np, &p));
	CHECK(matches(p, np, 6));
	ruma_bm_unfix_s(bm, np);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* A store of 4096 pages with 64 in memory, n pages filled with generation
 * gen, reopened: none of them resident. */
static int open_cold(ruma_bm_config *c, ruma_bm **bm, ruma_pid *pids, size_t n, uint64_t gen)
{
	cfg_small(c, 4096, 64);
	CHECK(open_filled(c, bm, pids, n, gen) == TEST_PASS);
	CHECK_OK(test_bm_reopen(c, bm));
	return TEST_PASS;
}

/* Each latch of the page pid (shared, optimistic, exclusive) fails with
 * rc; with eio, a read error is injected before each. */
static int latches_fail(ruma_bm *bm, ruma_pid pid, int rc, bool eio)
{
	void *p;
	uint64_t v;
	if (eio)
		ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	CHECK_EQ(ruma_bm_fix_s(bm, pid, &p), rc);
	if (eio)
		ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	CHECK_EQ(ruma_bm_optimistic(bm, pid, &v, &p), rc);
	if (eio)
		ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	CHECK_EQ(ruma_bm_fix_x(bm, pid, &p), rc);
	return TEST_PASS;
}

static int t_read_error(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 100 };
	ruma_pid pids[N];
	void *p;

	CHECK(open_cold(&c, &bm, pids, N, 7) == TEST_PASS); /* everything evicted now */

	CHECK(latches_fail(bm, pids[3], -EIO, true) == TEST_PASS);
	ruma_os_inject(RUMA_SYS_PREAD, 1, 0, false); /* end of file */
	CHECK_EQ(ruma_bm_fix_s(bm, pids[3], &p), RUMA_ESHORTIO);
	ruma_os_inject_clear();
	/* the page is intact and can be latched again */
	CHECK_OK(ruma_bm_fix_s(bm, pids[3], &p));
	CHECK(matches(p, pids[3], 7));
	ruma_bm_unfix_s(bm, pids[3]);
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	CHECK_EQ(st.pages_resident, 1);
	CHECK(verify_all(bm, pids, N, 7) == TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static int write_error_case(ruma_bm_write wpath)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 200 };
	static ruma_pid pids[N];
	void *p;
	ruma_sys sys = wpath == RUMA_BM_WRITE_URING ? RUMA_SYS_IO_URING_ENTER : RUMA_SYS_PWRITE;

	cfg_small(&c, 4096, 64);
	c.write = wpath;
	CHECK(open_filled(&c, &bm, pids, N, 8) == TEST_PASS);
	CHECK_OK(ruma_bm_flush(bm)); /* acknowledged */

	/* every write fails from now on: rewriting pages must fail visibly */
	ruma_os_inject(sys, 1, EIO, true);
	if (wpath == RUMA_BM_WRITE_URING)
		ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, true); /* metadata */
	else
		ruma_os_inject(RUMA_SYS_PWRITEV, 1, EIO, true); /* runs of pages */
	int err = 0;
	for (size_t i = 0; i < N && !err; i++) {
		err = ruma_bm_fix_x(bm, pids[i], &p);
		if (!err) {
			fill(p, pids[i], 9);
			ruma_bm_unfix_x(bm, pids[i]);
		}
	}
	CHECK_EQ(err, -EIO);
	int cr = ruma_bm_close(bm);
	CHECK_EQ(cr, -EIO);
	ruma_os_inject_clear();

	/* a close that failed leaves the store marked as not closed cleanly:
	 * the next open refuses it rather than trust metadata and pages that
	 * may not match (until a write-ahead log can recover it) */
	c.fresh = false;
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_EUNCLEAN);
	c.fresh = true;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

TEST_BIND(t_write_error_pwrite, write_error_case, RUMA_BM_WRITE_PWRITE)
TEST_BIND(t_write_error_uring, write_error_case, RUMA_BM_WRITE_URING)

static int t_short_file(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 100 };
	ruma_pid pids[N];
	void *p;

	CHECK(open_cold(&c, &bm, pids, N, 10) == TEST_PASS);
	/* cut the file behind the manager's back */
	CHECK(truncate(test_store_path, (off_t)(pids[N / 2] * PS)) == 0);
	CHECK(latches_fail(bm, pids[N - 1], RUMA_ESHORTIO, false) == TEST_PASS);
	CHECK_OK(ruma_bm_fix_s(bm, pids[0], &p));
	CHECK(matches(p, pids[0], 10));
	ruma_bm_unfix_s(bm, pids[0]);
	ruma_bm_close(bm);
	/* reopening a truncated store is refused */
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ESHORTIO);
	return TEST_PASS;
}

static int t_corrupt_meta(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_pid pids[4];

	cfg_small(&c, 1024, 64);
	CHECK(open_filled(&c, &bm, pids, 4, 1) == TEST_PASS);
	CHECK_OK(ruma_bm_meta_set(bm, 3, 12345));
	CHECK_OK(ruma_bm_close(bm));
	int fd = open(test_store_path, O_RDWR);
	CHECK(fd >= 0);
	unsigned char b = 0x5a;
	CHECK(pwrite(fd, &b, 1, 100) == 1); /* inside the meta slots */
	close(fd);
	c.fresh = false;
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ECORRUPT);
	/* a file that is not a store at all */
	fd = open(test_store_path, O_RDWR | O_TRUNC);
	CHECK(fd >= 0);
	CHECK(write(fd, "hello world", 11) == 11);
	close(fd);
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ENOTSTORE);
	/* fresh does not clobber a file that is not a store, unless forced */
	c.fresh = true;
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ENOTSTORE);
	char *txt = test_slurp(test_store_path);
	CHECK(txt && !strcmp(txt, "hello world"));
	free(txt);
	c.force = true;
	CHECK_OK(ruma_bm_open(&c, &bm));
	uint64_t v = 1;
	CHECK_OK(ruma_bm_meta_get(bm, 3, &v));
	CHECK_EQ(v, 0);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* read_only: the store as it is, evicted pages read back, every write
 * refused, nothing written (the file is byte for byte the same); refused
 * with fresh, and on a file without a store. */
static int t_read_only(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 300 };
	static ruma_pid pids[N];
	void *p;

	cfg_small(&c, 4096, 128); /* a pool smaller than the pages */
	CHECK(open_filled(&c, &bm, pids, N, 7) == TEST_PASS);
	CHECK_OK(ruma_bm_meta_set(bm, 2, 77));
	CHECK_OK(ruma_bm_close(bm));
	size_t len;
	char *before = test_file_bytes(test_store_path, &len);
	c.fresh = false;
	c.read_only = true;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK(verify_all(bm, pids, N, 7) == TEST_PASS);
	uint64_t v = 0;
	CHECK_OK(ruma_bm_meta_get(bm, 2, &v));
	CHECK_EQ(v, 77);
	ruma_pid pid;
	CHECK_EQ(ruma_bm_alloc(bm, &pid, &p), -EACCES);
	CHECK_EQ(ruma_bm_fix_x(bm, pids[0], &p), -EACCES);
	CHECK_EQ(ruma_bm_meta_set(bm, 2, 78), -EACCES);
	uint64_t ver;
	CHECK_OK(ruma_bm_optimistic(bm, pids[1], &ver, &p));
	CHECK_EQ(ruma_bm_upgrade_x(bm, pids[1], ver), -EACCES);
	CHECK_OK(ruma_bm_flush(bm));
	CHECK_OK(ruma_bm_close(bm));
	CHECK(before && test_file_is(test_store_path, before, len));
	free(before);
	c.fresh = true;
	CHECK_EQ(ruma_bm_open(&c, &bm), -EINVAL);
	c.fresh = false;
	int fd = open(test_store_path, O_RDWR | O_TRUNC);
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ENOTSTORE);
	return TEST_PASS;
}

/* Without the thread of ahead.c, frames of new page ids are made ahead by
 * the allocating thread, 64 ids per call; an injected failure of that call
 * loses nothing (the pages fault in as before), and after -EINVAL (a
 * kernel without MADV_POPULATE_WRITE) it is not made again. */
static int t_populate_ahead(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 300 };
	static ruma_pid pids[N];
	static const int errs[] = { 0, ENOMEM, EINVAL };

	for (size_t k = 0; k < TEST_N(errs); k++) {
		cfg_small(&c, 4096, 128); /* a pool smaller than the pages: evictions */
		c.ready_ahead = false;
		CHECK_OK(ruma_bm_open(&c, &bm));
		uint64_t n0 = ruma_os_count(RUMA_SYS_POPULATE);
		if (errs[k])
			ruma_os_inject(RUMA_SYS_POPULATE, 1, errs[k], true);
		int filled = alloc_fill(bm, pids, N, 3);
		ruma_os_inject_clear();
		uint64_t calls = ruma_os_count(RUMA_SYS_POPULATE) - n0;
		CHECK_EQ(filled, TEST_PASS);
		CHECK(verify_all(bm, pids, N, 3) == TEST_PASS);
		CHECK_OK(ruma_bm_close(bm));
		if (errs[k] == EINVAL)
			CHECK_EQ(calls, 1); /* refused once: not asked again */
		else
			CHECK(calls >= N / 64 && calls <= N / 64 + 2);
	}
	return TEST_PASS;
}

/* Frames the thread of ahead.c made ready, once it made at least min (or
 * two seconds passed). */
static uint64_t made_ready(ruma_bm *bm, uint64_t min)
{
	for (int i = 0; i < 2000 && atomic_load(&bm->ahead_made) < min; i++)
		usleep(1000);
	return atomic_load(&bm->ahead_made);
}

/* Frames of the pool's mapping in memory (mincore). */
static uint64_t resident_frames(ruma_bm *bm)
{
	size_t n = bm->map_len / RUMA_BM_PAGE_SIZE;
	unsigned char *v = malloc(n);
	uint64_t k = 0;
	if (v && mincore(bm->base, n * RUMA_BM_PAGE_SIZE, v) == 0)
		for (size_t i = 0; i < n; i++)
			k += v[i] & 1;
	free(v);
	return k;
}

/* Fresh pages read as zeros. */
static int alloc_zeroed(ruma_bm *bm, ruma_pid *pids, size_t n, uint64_t gen)
{
	for (size_t i = 0; i < n; i++) {
		void *p;
		CHECK_OK(ruma_bm_alloc(bm, &pids[i], &p));
		const uint64_t *w = p;
		for (size_t k = 0; k < RUMA_BM_PAGE_DATA / 8; k++)
			CHECK_EQ(w[k], 0);
		fill(p, pids[i], gen);
		ruma_bm_unfix_x(bm, pids[i]);
	}
	return TEST_PASS;
}

/* The thread of ahead.c makes the frames of new ids ready while the pool
 * has room: pages come zeroed and keep what is written into them, extents
 * taken among them too; and once the pool is full it makes none, so the
 * pool stays within its size. */
static int t_ready_ahead(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 600, SMALL = 300 };
	static ruma_pid pids[N];

	cfg_small(&c, 8192, 2048);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK(made_ready(bm, 64) >= 64); /* the window fills at open */
	CHECK(alloc_zeroed(bm, pids, N / 2, 4) == TEST_PASS);
	ruma_pid ext;
	CHECK_OK(ruma_bm_extent_alloc(bm, 20, &ext));
	CHECK(alloc_zeroed(bm, pids + N / 2, N / 2, 4) == TEST_PASS);
	CHECK(made_ready(bm, N) >= N / 2);
	CHECK(verify_all(bm, pids, N, 4) == TEST_PASS);
	CHECK_OK(ruma_bm_extent_free(bm, ext, 20));
	CHECK_OK(ruma_bm_close(bm));

	cfg_small(&c, 4096, 128); /* evictions: the pool is full */
	CHECK_OK(ruma_bm_open(&c, &bm));
	uint64_t most = 0;
	for (size_t i = 0; i < N; i += 10) {
		CHECK(alloc_zeroed(bm, pids + i, 10, 5) == TEST_PASS);
		most = RUMA_MAX(most, resident_frames(bm));
	}
	printf("    pool of 128 pages: at most %" PRIu64 " frames resident, %" PRIu64
	       " made ready\n", most, made_ready(bm, 0));
	CHECK(most <= 128 + bm->meta_pages);
	CHECK(verify_all(bm, pids, N, 5) == TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static void capture_line(void *ctx, const char *line)
{
	snprintf(ctx, 256, "%s", line);
}

/* The store's kind and size come from the OS layer's file probe: an
 * injected fstat failure reaches ruma_bm_open's caller. */
static int t_open_probe_error(void)
{
	ruma_bm_config c;
	ruma_bm *bm;

	cfg_small(&c, 1024, 64);
	uint64_t n0 = ruma_os_count(RUMA_SYS_FSTAT);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK(ruma_os_count(RUMA_SYS_FSTAT) > n0);
	CHECK_OK(ruma_bm_close(bm));
	ruma_os_inject(RUMA_SYS_FSTAT, 1, EIO, false);
	int rc = ruma_bm_open(&c, &bm);
	ruma_os_inject_clear();
	CHECK_EQ(rc, -EIO);
	CHECK_OK(ruma_bm_open(&c, &bm)); /* nothing was left behind */
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static int t_bad_config(void)
{
	ruma_bm_config c;
	ruma_bm *bm;

	char said[256] = "";
	cfg_small(&c, 1024, 64);
	c.phys_bytes = c.virt_bytes + PS;
	c.message = capture_line; /* the reason reaches the caller, not stderr */
	c.message_ctx = said;
	CHECK_EQ(ruma_bm_open(&c, &bm), -EINVAL);
	CHECK(strstr(said, "bad configuration") != NULL);
	cfg_small(&c, 1024, 64);
	c.batch = 0;
	CHECK_EQ(ruma_bm_open(&c, &bm), -EINVAL);
	cfg_small(&c, 1024, 64);
	c.max_threads = 0;
	CHECK_EQ(ruma_bm_open(&c, &bm), -EINVAL);
	cfg_small(&c, 1024, 64);
	c.phys_bytes = 4 * PS;
	CHECK_EQ(ruma_bm_open(&c, &bm), -EINVAL);
	cfg_small(&c, 1024, 64);
	c.path = "/nonexistent-dir-ruma/store";
	CHECK_EQ(ruma_bm_open(&c, &bm), -ENOENT);
	cfg_small(&c, 1024, 64);
	c.path = "/dev/null";
	CHECK_EQ(ruma_bm_open(&c, &bm), -EINVAL);
	/* the defaults name no store: the caller must (no benchmark path in the library) */
	ruma_bm_config_default(&c);
	said[0] = '\0';
	c.message = capture_line;
	c.message_ctx = said;
	CHECK(c.path == NULL);
	CHECK_EQ(ruma_bm_open(&c, &bm), -EINVAL);
	CHECK(strstr(said, "no path given") != NULL);

	/* a full reservation gives RUMA_EVIRTFULL */
	cfg_small(&c, 128, 64);
	CHECK_OK(ruma_bm_open(&c, &bm));
	int r = 0;
	for (int i = 0; i < 200 && !r; i++) {
		ruma_pid pid;
		void *p;
		r = ruma_bm_alloc(bm, &pid, &p);
		if (!r)
			ruma_bm_unfix_x(bm, pid);
	}
	CHECK_EQ(r, RUMA_EVIRTFULL);
	CHECK_OK(ruma_bm_close(bm));

	ruma_bm_wait w;
	ruma_bm_evict e;
	ruma_bm_write wr;
	CHECK_OK(ruma_bm_wait_parse("futex", &w));
	CHECK_EQ(w, RUMA_BM_WAIT_FUTEX);
	CHECK_OK(ruma_bm_evict_parse("process_madvise", &e));
	CHECK_OK(ruma_bm_write_parse("uring", &wr));
	CHECK_EQ(ruma_bm_wait_parse("sleepy", &w), RUMA_EPARSE);
	CHECK(!strcmp(ruma_bm_wait_name(RUMA_BM_WAIT_MUTEX), "mutex"));
	return TEST_PASS;
}

static int t_matrix(void)
{
	enum { N = 240 };
	static ruma_pid pids[N];

	for (int w = 0; w <= RUMA_BM_WAIT_MUTEX; w++)
		for (int e = 0; e <= RUMA_BM_EVICT_PROCESS_MADVISE; e++)
			for (int wr = 0; wr <= RUMA_BM_WRITE_URING; wr++) {
				ruma_bm_config c;
				ruma_bm *bm;
				void *p;
				cfg_small(&c, 2048, 32);
				c.wait = (ruma_bm_wait)w;
				c.evict = (ruma_bm_evict)e;
				c.write = (ruma_bm_write)wr;
				c.batch = 8;
				CHECK(open_filled(&c, &bm, pids, N, 11) == TEST_PASS);
				for (size_t i = 0; i < N; i += 3) {
					CHECK_OK(ruma_bm_fix_x(bm, pids[i], &p));
					CHECK(matches(p, pids[i], 11));
					fill(p, pids[i], 12);
					ruma_bm_unfix_x(bm, pids[i]);
				}
				for (size_t i = 0; i < N; i++) {
					CHECK_OK(ruma_bm_fix_s(bm, pids[i], &p));
					CHECK(matches(p, pids[i], i % 3 == 0 ? 12 : 11));
					ruma_bm_unfix_s(bm, pids[i]);
				}
				ruma_bm_stats st;
				ruma_bm_get_stats(bm, &st);
				CHECK(st.evictions > 0);
				CHECK(st.pages_resident <= 32);
				CHECK_OK(ruma_bm_close(bm));
			}
	return TEST_PASS;
}

static int t_process_madvise_used(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 200 };
	static ruma_pid pids[N];

	cfg_small(&c, 2048, 32);
	c.evict = RUMA_BM_EVICT_PROCESS_MADVISE;
	CHECK_OK(ruma_bm_open(&c, &bm));
	uint64_t pm0 = ruma_os_count(RUMA_SYS_PROCESS_MADVISE);
	uint64_t m0 = ruma_os_count(RUMA_SYS_MADVISE);
	if (alloc_fill(bm, pids, N, 1) != TEST_PASS)
		return TEST_FAIL;
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	uint64_t pm = ruma_os_count(RUMA_SYS_PROCESS_MADVISE) - pm0;
	uint64_t m = ruma_os_count(RUMA_SYS_MADVISE) - m0;
	CHECK_OK(ruma_bm_close(bm));
	CHECK(pm > 0);
	if (m > 0) /* the kernel refused: fell back to madvise */
		CHECK_EQ(m, st.evictions);
	else
		CHECK(pm < st.evictions); /* batched */
	return TEST_PASS;
}

/* Attach img to a free loop device; the device path goes to dev. */
static int loop_attach(const char *img, char *dev, size_t len)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "losetup -f --show %s 2>/dev/null", img);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	bool ok = fgets(dev, (int)len, f) != NULL;
	int st = pclose(f);
	if (!ok || st != 0 || strncmp(dev, "/dev/loop", 9))
		return -1;
	dev[strcspn(dev, "\n")] = 0;
	return 0;
}

static void loop_detach(const char *dev)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "losetup -d %s", dev);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not detach %s\n", dev);
}

static int make_image(const char *img, off_t size)
{
	int fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	int r = ftruncate(fd, size);
	close(fd);
	return r;
}

static int blockdev_body(const char *dev, const char *img2, char *dev2, size_t dev2len)
{
	ruma_bm_config c;
	ruma_bm *bm;
	static ruma_pid pids[1024];
	size_t n = 0;
	int r = 0;
	void *p;

	strcpy(test_store_path, dev);
	cfg_small(&c, 4096, 64);
	CHECK_OK(ruma_bm_open(&c, &bm));
	/* 2 MiB = 512 pages, 2 of them metadata: allocation ends with -ENOSPC */
	while (n < 1024) {
		r = ruma_bm_alloc(bm, &pids[n], &p);
		if (r)
			break;
		fill(p, pids[n], 21);
		ruma_bm_unfix_x(bm, pids[n]);
		n++;
	}
	CHECK_EQ(r, -ENOSPC);
	CHECK(n >= 500 && n <= 510);
	CHECK_OK(test_bm_reopen(&c, &bm));
	CHECK(verify_all(bm, pids, n, 21) == TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	/* the same store on a device that is too small is refused */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "dd if=%s of=%s bs=1M count=1 status=none", dev, img2);
	CHECK(system(cmd) == 0);
	CHECK(loop_attach(img2, dev2, dev2len) == 0);
	strcpy(test_store_path, dev2);
	r = ruma_bm_open(&c, &bm);
	CHECK_EQ(r, -ENOSPC);
	return TEST_PASS;
}

static int t_blockdev(void)
{
	char img[160], img2[160], dev[64], dev2[64] = "";
	char saved[128];

	if (geteuid() != 0)
		SKIP("needs root for a loop device");
	snprintf(img, sizeof(img), "%s/disk.img", test_dir);
	snprintf(img2, sizeof(img2), "%s/small.img", test_dir);
	if (make_image(img, 2 << 20))
		SKIP("cannot create %s", img);
	if (loop_attach(img, dev, sizeof(dev))) {
		unlink(img);
		SKIP("no loop device available (losetup failed)");
	}
	strcpy(saved, test_store_path);
	int r = blockdev_body(dev, img2, dev2, sizeof(dev2));
	strcpy(test_store_path, saved);
	loop_detach(dev);
	if (dev2[0])
		loop_detach(dev2);
	unlink(img);
	unlink(img2);
	return r;
}


/* ---- store integrity: lock, clean-shutdown state, page checksums ---------- */

struct msgs {
	int n;
	char last[512];
};

static void collect(void *ctx, const char *line)
{
	struct msgs *m = ctx;
	m->n++;
	snprintf(m->last, sizeof(m->last), "%s", line);
}

/* A store of n filled pages, closed cleanly; pids[] gets their ids. */
static int clean_store(ruma_bm_config *c, ruma_pid *pids, size_t n, ruma_bm_write wr)
{
	ruma_bm *bm;

	cfg_small(c, 1024, 64);
	c->write = wr;
	CHECK_OK(ruma_bm_open(c, &bm));
	if (alloc_fill(bm, pids, n, 3) != TEST_PASS)
		return TEST_FAIL;
	CHECK_OK(ruma_bm_close(bm));
	c->fresh = false;
	return TEST_PASS;
}

static int file_rw(off_t off, void *buf, size_t len, bool write)
{
	int fd = open(test_store_path, O_RDWR);
	if (fd < 0)
		return -1;
	ssize_t r = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
	close(fd);
	return r == (ssize_t)len ? 0 : -1;
}

/* Reopen with a 16-page pool and latch every page: *bad = the page that
 * failed (or UINT64_MAX); every other page must read back intact. */
static int read_all(ruma_bm_config *c, const ruma_pid *pids, size_t n, struct msgs *m,
		    ruma_pid *bad, int *err)
{
	ruma_bm *bm;

	c->phys_bytes = 16 * PS;
	c->message = collect;
	c->message_ctx = m;
	CHECK_OK(ruma_bm_open(c, &bm));
	*bad = UINT64_MAX;
	*err = 0;
	for (size_t i = 0; i < n; i++) {
		void *p;
		int r = ruma_bm_fix_s(bm, pids[i], &p);
		if (r) {
			CHECK(*bad == UINT64_MAX);
			*bad = pids[i];
			*err = r;
			continue;
		}
		bool ok = matches(p, pids[i], 3);
		ruma_bm_unfix_s(bm, pids[i]);
		CHECK(ok);
	}
	CHECK_OK(ruma_bm_close(bm));
	c->message = NULL;
	return TEST_PASS;
}

static int bitflip_case(ruma_bm_write wr)
{
	enum { N = 80 };
	ruma_pid pids[N], bad;
	ruma_bm_config c;
	struct msgs m = { 0 };
	int err;

	if (clean_store(&c, pids, N, wr) != TEST_PASS)
		return TEST_FAIL;
	ruma_pid victim = pids[ruma_rng_below(&test_rng, N)];
	uint64_t bit = ruma_rng_below(&test_rng, PS * 8);
	unsigned char b;
	off_t off = (off_t)(victim * PS + bit / 8);
	CHECK(file_rw(off, &b, 1, false) == 0);
	b ^= (unsigned char)(1u << (bit % 8));
	CHECK(file_rw(off, &b, 1, true) == 0);
	if (read_all(&c, pids, N, &m, &bad, &err) != TEST_PASS)
		return TEST_FAIL;
	CHECK_EQ(bad, victim);
	CHECK_EQ(err, RUMA_ECORRUPT);
	char want[64];
	snprintf(want, sizeof(want), "page %" PRIu64 " ", victim);
	CHECK(strstr(m.last, want) && strstr(m.last, test_store_path) &&
	      strstr(m.last, "checksum mismatch"));
	return TEST_PASS;
}

/* Both write paths seal the pages: pwrite and io_uring batches. */
static int t_bitflip(void)
{
	if (bitflip_case(RUMA_BM_WRITE_PWRITE) != TEST_PASS)
		return TEST_FAIL;
	return bitflip_case(RUMA_BM_WRITE_URING);
}

/* A page image copied over its neighbour (valid checksum, wrong place). */
static int t_misdirected(void)
{
	enum { N = 40 };
	ruma_pid pids[N], bad;
	ruma_bm_config c;
	struct msgs m = { 0 };
	unsigned char img[PS];
	int err;

	if (clean_store(&c, pids, N, RUMA_BM_WRITE_PWRITE) != TEST_PASS)
		return TEST_FAIL;
	CHECK(file_rw((off_t)(pids[10] * PS), img, PS, false) == 0);
	CHECK(file_rw((off_t)(pids[11] * PS), img, PS, true) == 0);
	if (read_all(&c, pids, N, &m, &bad, &err) != TEST_PASS)
		return TEST_FAIL;
	CHECK_EQ(bad, pids[11]);
	CHECK_EQ(err, RUMA_ECORRUPT);
	CHECK(strstr(m.last, "holds the image of page"));
	/* a page that never reached the file (zeros) is corrupt too, not a new page */
	memset(img, 0, PS);
	CHECK(file_rw((off_t)(pids[11] * PS), img, PS, true) == 0);
	if (read_all(&c, pids, N, &m, &bad, &err) != TEST_PASS)
		return TEST_FAIL;
	CHECK_EQ(bad, pids[11]);
	CHECK_EQ(err, RUMA_ECORRUPT);
	CHECK(strstr(m.last, "only zeros"));
	return TEST_PASS;
}

/* A file that is not a store, opened without fresh: "not a ruma store", and
 * the advice it gives (fresh and force) opens it. */
static int t_not_a_store(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	struct msgs m = { 0 };

	cfg_small(&c, 1024, 64);
	int fd = open(test_store_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, "hello world", 11) == 11);
	close(fd);
	c.fresh = false;
	c.message = collect;
	c.message_ctx = &m;
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ENOTSTORE);
	CHECK(strstr(m.last, "is not a ruma store") && strstr(m.last, "fresh and force"));
	CHECK(!strstr(m.last, "--"));
	c.fresh = true;
	c.force = true;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* Rewrite page 0 of the store from hdr and the bitmap word 0 (w0), with
 * its checksum recomputed: damage that the checksum does not catch. */
static int craft_page0(struct bm_meta_hdr hdr, uint64_t w0)
{
	return page0_craft(test_store_path, hdr, w0);
}

/* Page 0 is checked beyond its checksum: a free bit for a metadata page or
 * for a page beyond the high-water mark, a free count that differs from
 * the bitmap, an LSN near 2^64 are refused; the original opens. */
static int t_page0_checked(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_pid pids[4];
	struct msgs m = { 0 };
	struct bm_meta_hdr h;
	uint64_t w0;

	cfg_small(&c, 1024, 64);
	CHECK(open_filled(&c, &bm, pids, 4, 1) == TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	int fd = open(test_store_path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	CHECK(pread(fd, &w0, 8, PS) == 8);
	close(fd);
	CHECK(h.id[0] || h.id[1]);
	CHECK(h.alloc_hw < 60);
	c.fresh = false;
	c.message = collect;
	c.message_ctx = &m;
	struct bm_meta_hdr x = h;
	x.free_count++;
	CHECK_OK(craft_page0(x, w0 | 1)); /* page 0 itself free */
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ECORRUPT);
	CHECK(strstr(m.last, "page 0 is damaged"));
	CHECK_OK(craft_page0(x, w0 | (1ull << h.alloc_hw))); /* beyond the high-water mark */
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ECORRUPT);
	CHECK_OK(craft_page0(x, w0)); /* a free count the bitmap does not have */
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ECORRUPT);
	x = h;
	x.next_lsn = UINT64_MAX - 100;
	CHECK_OK(craft_page0(x, w0));
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ECORRUPT);
	CHECK(strstr(m.last, "LSNs"));
	CHECK_OK(craft_page0(h, w0));
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* A store of the previous format (no page trailer) is refused clearly. */
static int t_old_format(void)
{
	ruma_pid pids[4];
	ruma_bm_config c;
	ruma_bm *bm;
	struct msgs m = { 0 };
	uint32_t fmt = 1;

	if (clean_store(&c, pids, 4, RUMA_BM_WRITE_PWRITE) != TEST_PASS)
		return TEST_FAIL;
	CHECK(file_rw(8, &fmt, 4, true) == 0); /* header: magic, then format */
	c.message = collect;
	c.message_ctx = &m;
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_ENOTSTORE);
	CHECK(strstr(m.last, "format 1") && strstr(m.last, "recreate"));
	/* a store of any format may be recreated without force */
	c.fresh = true;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* Second opener: same process (fresh or not) and a forked child. */
static int t_lock(void)
{
	ruma_bm_config c, c2;
	ruma_bm *bm, *bm2;
	struct msgs m = { 0 };
	ruma_pid pids[8];

	cfg_small(&c, 1024, 64);
	CHECK(open_filled(&c, &bm, pids, 8, 3) == TEST_PASS);
	CHECK_OK(ruma_bm_flush(bm));
	struct stat st0;
	CHECK(stat(test_store_path, &st0) == 0);
	c2 = c;
	c2.message = collect;
	c2.message_ctx = &m;
	CHECK_EQ(ruma_bm_open(&c2, &bm2), RUMA_ELOCKED); /* fresh: must not truncate */
	char want[64];
	snprintf(want, sizeof(want), "pid %d", (int)getpid());
	CHECK(strstr(m.last, "in use") && strstr(m.last, want));
	c2.fresh = false;
	CHECK_EQ(ruma_bm_open(&c2, &bm2), RUMA_ELOCKED);
	struct stat st1;
	CHECK(stat(test_store_path, &st1) == 0);
	CHECK_EQ(st1.st_size, st0.st_size);
	fflush(NULL);
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		ruma_bm *b3;
		c2.message = NULL;
		_exit(ruma_bm_open(&c2, &b3) == RUMA_ELOCKED ? 0 : 1);
	}
	int status;
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(verify_all(bm, pids, 8, 3) == TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	/* released by close */
	CHECK_OK(ruma_bm_open(&c2, &bm2));
	CHECK_OK(ruma_bm_close(bm2));
	return TEST_PASS;
}

/* A clean store of 8 pages (clean_store, its configuration *c) and a child
 * forked on it that runs child(c, fd, arg): it opens the store, writes one
 * byte to fd when the parent is to act, and never returns.  Returns once
 * that byte came; *pid is the child. */
static int fork_holder(ruma_bm_config *c, void (*child)(ruma_bm_config *, int, int), int arg,
		       pid_t *pid)
{
	ruma_pid pids[8];
	int fds[2];

	if (clean_store(c, pids, 8, RUMA_BM_WRITE_PWRITE) != TEST_PASS)
		return TEST_FAIL;
	CHECK(pipe(fds) == 0);
	fflush(NULL);
	*pid = fork();
	CHECK(*pid >= 0);
	if (*pid == 0) {
		close(fds[0]);
		child(c, fds[1], arg);
		_exit(1);
	}
	close(fds[1]);
	char got;
	CHECK(read(fds[0], &got, 1) == 1);
	close(fds[0]);
	return TEST_PASS;
}

/* kill_case's child: allocates and evicts pages, and says go at the moment
 * (see kill_case). */
static void kill_child(ruma_bm_config *c, int fd, int moment)
{
	ruma_bm *bm;
	if (ruma_bm_open(c, &bm))
		_exit(1);
	char go = 'g';
	for (uint64_t i = 0;; i++) {
		ruma_pid pid;
		void *p;
		if (moment == 0 && i == 0 && write(fd, &go, 1) != 1)
			_exit(1);
		if (ruma_bm_alloc(bm, &pid, &p))
			_exit(1);
		fill(p, pid, 4);
		ruma_bm_unfix_x(bm, pid);
		if (moment == 2 && i == 100 && (ruma_bm_flush(bm) || write(fd, &go, 1) != 1))
			_exit(1);
		if (moment == 1 && i == 200 && write(fd, &go, 1) != 1)
			_exit(1);
		if (i > 600)
			for (;;)
				pause();
	}
}

/*
 * A child opens the store (kept), works on it and is killed with SIGKILL at
 * a chosen moment; the parent's reopen must refuse the store.  Moments:
 * 0 right after open, 1 while pages are being allocated and evicted, 2 after
 * a flush (a checkpoint is not a clean close).
 */
static int kill_case(int moment)
{
	ruma_bm_config c;
	ruma_bm *bm;
	pid_t child;

	CHECK_EQ(fork_holder(&c, kill_child, moment, &child), TEST_PASS);
	CHECK(kill(child, SIGKILL) == 0);
	int status;
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFSIGNALED(status));
	struct msgs m = { 0 };
	c.message = collect;
	c.message_ctx = &m;
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_EUNCLEAN);
	CHECK(strstr(m.last, "not closed cleanly") && strstr(m.last, "recreate"));
	/* refused again: the refusal itself changes nothing */
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_EUNCLEAN);
	c.fresh = true;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static int t_kill(void)
{
	for (int moment = 0; moment < 3; moment++)
		if (kill_case(moment) != TEST_PASS) {
			fprintf(stderr, "  (SIGKILL at moment %d)\n", moment);
			return TEST_FAIL;
		}
	return TEST_PASS;
}

/*
 * The holder of the store is killed and the parent opens the store at once,
 * without waiting for the child: the child still holds the lock while it
 * tears down its 256 MiB of touched memory, so the open must wait for it to
 * be gone, not refuse the store as in use (then it finds it not closed
 * cleanly).
 */
static void holder_child(ruma_bm_config *c, int fd, int mib)
{
	ruma_bm *bm;
	const size_t big = (size_t)mib << 20;
	char *mem = malloc(big);
	if (!mem || ruma_bm_open(c, &bm))
		_exit(1);
	memset(mem, 1, big);
	char go = 'g';
	if (write(fd, &go, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static int t_reopen_while_holder_exits(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	pid_t child;

	CHECK_EQ(fork_holder(&c, holder_child, 256, &child), TEST_PASS);
	struct msgs m = { 0 };
	c.message = collect;
	c.message_ctx = &m;
	CHECK(kill(child, SIGKILL) == 0);
	int r = ruma_bm_open(&c, &bm); /* no waitpid first */
	int status;
	CHECK(waitpid(child, &status, 0) == child);
	if (r != RUMA_EUNCLEAN)
		printf("  open returned %d: %s\n", r, m.last);
	CHECK_EQ(r, RUMA_EUNCLEAN);
	c.fresh = true;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* Injected failures of the new calls: flock and the fdatasync of the state. */
static int t_lock_sync_faults(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_pid pids[4];
	struct msgs m = { 0 };

	if (clean_store(&c, pids, 4, RUMA_BM_WRITE_PWRITE) != TEST_PASS)
		return TEST_FAIL;
	c.message = collect;
	c.message_ctx = &m;
	ruma_os_inject(RUMA_SYS_FLOCK, 1, ENOLCK, false);
	CHECK_EQ(ruma_bm_open(&c, &bm), -ENOLCK);
	CHECK(strstr(m.last, "cannot lock"));
	/* marking the store open fails: open fails, the store stays clean */
	ruma_os_inject(RUMA_SYS_FDATASYNC, 1, EIO, false);
	CHECK_EQ(ruma_bm_open(&c, &bm), -EIO);
	CHECK(strstr(m.last, "cannot record that the store is open"));
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK(verify_all(bm, pids, 4, 3) == TEST_PASS);
	/* close syncs twice: the pages and metadata, then the clean state.  The
	 * second fdatasync fails: reported (the pages were synced before the
	 * clean state was written, so either state on disk is true) */
	ruma_os_inject(RUMA_SYS_FDATASYNC, 2, EIO, false);
	CHECK_EQ(ruma_bm_close(bm), -EIO);
	CHECK_OK(ruma_bm_open(&c, &bm));
	/* syncing the pages fails at close: the store is not marked clean */
	ruma_os_inject(RUMA_SYS_FDATASYNC, 1, EIO, false);
	CHECK_EQ(ruma_bm_close(bm), -EIO);
	CHECK_EQ(ruma_bm_open(&c, &bm), RUMA_EUNCLEAN);
	ruma_os_inject_clear();
	return TEST_PASS;
}

/* Threads beyond max_threads fail with -EUSERS; the message comes once. */
struct over_arg {
	ruma_bm *bm;
	ruma_pid pid;
	int rc;
};

static void *over_main(void *p)
{
	struct over_arg *a = p;
	void *pg;
	for (int i = 0; i < 50; i++) {
		a->rc = ruma_bm_alloc(a->bm, &a->pid, &pg);
		if (!a->rc)
			ruma_bm_unfix_x(a->bm, a->pid);
	}
	return NULL;
}

static int t_thread_limit_once(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	struct msgs m = { 0 };
	ruma_pid pid;
	void *p;

	cfg_small(&c, 1024, 64);
	c.max_threads = 1;
	c.message = collect;
	c.message_ctx = &m;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_bm_alloc(bm, &pid, &p)); /* this thread takes the one slot */
	ruma_bm_unfix_x(bm, pid);
	struct over_arg a[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		a[i] = (struct over_arg){ .bm = bm };
		CHECK(pthread_create(&th[i], NULL, over_main, &a[i]) == 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(a[i].rc, -EUSERS);
	}
	CHECK_EQ(m.n, 1);
	CHECK(strstr(m.last, "max_threads=1"));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "latches", t_latches },
	{ "reuse", t_reuse },
	{ "no_reuse", t_no_reuse },
	{ "evict_tiny_pool", t_evict_tiny_pool },
	{ "cleaner_on", t_cleaner_on },
	{ "cleaner_off", t_cleaner_off },
	{ "cleaner_write_error", t_cleaner_write_error },
	{ "persist", t_persist },
	{ "read_only", t_read_only },
	{ "populate_ahead", t_populate_ahead },
	{ "ready_ahead", t_ready_ahead },
	{ "read_error", t_read_error },
	{ "write_error_pwrite", t_write_error_pwrite },
	{ "write_error_uring", t_write_error_uring },
	{ "short_file", t_short_file },
	{ "corrupt_meta", t_corrupt_meta },
	{ "bad_config", t_bad_config },
	{ "open_probe_error", t_open_probe_error },
	{ "matrix", t_matrix },
	{ "process_madvise", t_process_madvise_used },
	{ "blockdev", t_blockdev },
	{ "bitflip", t_bitflip },
	{ "misdirected", t_misdirected },
	{ "old_format", t_old_format },
	{ "not_a_store", t_not_a_store },
	{ "page0_checked", t_page0_checked },
	{ "lock", t_lock },
	{ "kill", t_kill },
	{ "reopen_while_holder_exits", t_reopen_while_holder_exits },
	{ "lock_sync_faults", t_lock_sync_faults },
	{ "thread_limit_once", t_thread_limit_once },
};

int main(int argc, char **argv)
{
	return test_main_fixture("bm", cases, TEST_N(cases), argc, argv, &test_store_fixture);
}
