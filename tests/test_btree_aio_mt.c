/*
 * test_btree_aio_mt.c — lookups with many reads in flight
 * (ruma_btree_lookup_batch) and scan read-ahead, with a pool far smaller
 * than the data so that parked lookups, evictions and restarts interleave:
 * the batched path against the synchronous one on the same keys, from
 * several threads at once (also while a writer changes values); injected
 * failed and short reads reaching exactly the lookup that needed the page;
 * a failed submission; io_uring refused (synchronous fallback, pwrite
 * write-back, one message); and that the batched flush writes everything.
 */
#include "fixture.h"

#include <ruma/btree.h>
#include "bm/bm_ext.h"

#include "os/os.h"

#include <pthread.h>
#include <stdatomic.h>

#define PS RUMA_BM_PAGE_DATA /* the bytes a page's user owns (the trailer is the manager's) */
#define NKEYS 6000u
#define VLEN 200u

static char dir[64];
static char path[128];

static void key_of(uint64_t k, uint8_t out[8])
{
	for (int i = 7; i >= 0; i--, k >>= 8)
		out[i] = (uint8_t)k;
}

/* value of key k in generation gen */
static void val_of(uint64_t k, uint64_t gen, uint8_t out[VLEN])
{
	uint64_t x = k * 0x9E3779B97F4A7C15ull + gen;
	for (unsigned i = 0; i < VLEN; i++) {
		x ^= x >> 29;
		x *= 0xBF58476D1CE4E5B9ull;
		out[i] = (uint8_t)(x >> 56);
	}
}

static _Atomic unsigned messages;
static char last_message[512];

static void on_message(void *ctx, const char *line)
{
	(void)ctx;
	atomic_fetch_add(&messages, 1);
	snprintf(last_message, sizeof last_message, "%s", line);
}

static void cfg(ruma_bm_config *c, uint64_t phys_pages, bool fresh)
{
	test_bm_config(c, path, 8192, phys_pages);
	c->batch = 16;
	c->max_threads = 16;
	c->fresh = fresh;
	c->message = on_message;
}

/* A store holding even keys 0, 2, .. 2*(NKEYS-1) with generation 0, closed. */
static int build_store(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	uint8_t k[8], v[VLEN];

	cfg(&c, 4096, true);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_create(bm, "aio", &t));
	for (uint64_t i = 0; i < NKEYS; i++) {
		key_of(2 * i, k);
		val_of(2 * i, 0, v);
		CHECK_OK(ruma_btree_insert(t, k, 8, v, VLEN));
	}
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

struct got {
	uint8_t val[64][VLEN];
	size_t len[64];
	unsigned calls[64];
};

static void got_fn(size_t i, const void *val, size_t vlen, void *ctx)
{
	struct got *g = ctx;
	g->calls[i]++;
	g->len[i] = vlen;
	memcpy(g->val[i], val, vlen < VLEN ? vlen : VLEN);
}

/* One batch of n random keys (half of them absent) checked against the
 * synchronous lookup of the same keys; values must be of a generation in
 * [0, max_gen]. */
static int batch_vs_sync(ruma_btree *t, ruma_rng *rng, unsigned n, unsigned inflight,
			 uint64_t max_gen)
{
	uint8_t keys[64][8];
	const void *kp[64] = { 0 };
	size_t kl[64] = { 0 };
	int res[64];
	struct got g;
	uint64_t kn[64];

	memset(&g, 0, sizeof g);
	for (unsigned i = 0; i < n; i++) {
		kn[i] = ruma_rng_below(rng, 2 * NKEYS);
		key_of(kn[i], keys[i]);
		kp[i] = keys[i];
		kl[i] = 8;
	}
	CHECK_OK(ruma_btree_lookup_batch(t, n, kp, kl, inflight, got_fn, &g, res));
	for (unsigned i = 0; i < n; i++) {
		uint8_t buf[VLEN + 8];
		size_t len = 0;
		int rs = ruma_btree_lookup(t, keys[i], 8, buf, sizeof buf, &len);
		CHECK_EQ(res[i], rs);
		CHECK_EQ(res[i], (kn[i] & 1) ? RUMA_ENOTFOUND : 0);
		CHECK_EQ(g.calls[i], res[i] == 0 ? 1u : 0u);
		if (res[i])
			continue;
		CHECK_EQ(g.len[i], VLEN);
		bool ok = false;
		for (uint64_t gen = 0; gen <= max_gen && !ok; gen++) {
			uint8_t want[VLEN];
			val_of(kn[i], gen, want);
			ok = memcmp(g.val[i], want, VLEN) == 0;
		}
		CHECK(ok);
	}
	return TEST_PASS;
}

struct mt {
	ruma_btree *t;
	unsigned tid;
	unsigned rounds;
	_Atomic bool *stop;
	int result;
};

static void *reader_main(void *p)
{
	struct mt *m = p;
	ruma_rng rng;
	ruma_rng_seed(&rng, test_seed + m->tid);
	m->result = TEST_PASS;
	for (unsigned r = 0; r < m->rounds && m->result == TEST_PASS; r++)
		m->result = batch_vs_sync(m->t, &rng, 8 + (unsigned)ruma_rng_below(&rng, 56),
					  1 + (unsigned)ruma_rng_below(&rng, 64), 1);
	return NULL;
}

/* Rewrites values to generation 1 while the readers run. */
static void *writer_main(void *p)
{
	struct mt *m = p;
	uint8_t k[8], v[VLEN];
	m->result = TEST_PASS;
	for (uint64_t i = 0; i < NKEYS && !atomic_load(m->stop); i += 3) {
		key_of(2 * i, k);
		val_of(2 * i, 1, v);
		if (ruma_btree_upsert(m->t, k, 8, v, VLEN, NULL)) {
			m->result = TEST_FAIL;
			break;
		}
	}
	return NULL;
}

static int t_batch_matches_sync_mt(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	enum { READERS = 4 };
	pthread_t th[READERS + 1];
	struct mt m[READERS + 1];
	_Atomic bool stop = false;

	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	cfg(&c, 48, false); /* ~450 pages of data, 48 in memory */
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	uint64_t cqe0 = ruma_os_count(RUMA_SYS_IO_URING_CQE);
	unsigned rounds = test_sanitized() ? 30 : 120;
	for (unsigned i = 0; i <= READERS; i++) {
		m[i] = (struct mt){ .t = t, .tid = i, .rounds = rounds, .stop = &stop };
		CHECK(pthread_create(&th[i], NULL, i < READERS ? reader_main : writer_main, &m[i]) ==
		      0);
	}
	for (unsigned i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop, true);
	pthread_join(th[READERS], NULL);
	for (unsigned i = 0; i <= READERS; i++)
		CHECK_EQ(m[i].result, TEST_PASS);
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	ruma_btree_stats bs;
	ruma_btree_get_counters(t, &bs);
	fprintf(stderr, "  %" PRIu64 " reads (%" PRIu64 " completions), %" PRIu64
			" evictions, %" PRIu64 " restarts\n",
		st.reads, ruma_os_count(RUMA_SYS_IO_URING_CQE) - cqe0, st.evictions, bs.restarts);
	CHECK(st.evictions > 0);
	CHECK(ruma_os_count(RUMA_SYS_IO_URING_CQE) - cqe0 > 0); /* reads went through io_uring */
	CHECK_EQ(ruma_bm_aio_inflight(bm), 0);
	CHECK_OK(ruma_btree_check(t, stderr));
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* Batch of every key i*stride (all present) on a cold pool; results[]. */
static int cold_batch(ruma_btree *t, unsigned n, unsigned stride, int *res, struct got *g)
{
	uint8_t keys[64][8];
	const void *kp[64] = { 0 };
	size_t kl[64] = { 0 };

	memset(g, 0, sizeof *g);
	for (unsigned i = 0; i < n; i++) {
		key_of(2ull * i * stride, keys[i]);
		kp[i] = keys[i];
		kl[i] = 8;
	}
	return ruma_btree_lookup_batch(t, n, kp, kl, n, got_fn, g, res);
}

static int read_error_case(int err, int want)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	int res[64];
	struct got g;
	const unsigned n = 32, stride = NKEYS / 32;

	cfg(&c, 64, false);
	CHECK_OK(ruma_bm_open(&c, &bm)); /* everything evicted */
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	/* warm the inner nodes so that the failing read is a leaf's */
	uint8_t k[8], buf[VLEN];
	size_t len;
	key_of(0, k);
	CHECK_OK(ruma_btree_lookup(t, k, 8, buf, sizeof buf, &len));
	ruma_os_inject(RUMA_SYS_IO_URING_CQE, 5, err, false);
	CHECK_OK(cold_batch(t, n, stride, res, &g));
	CHECK_EQ(ruma_os_injected(RUMA_SYS_IO_URING_CQE) > 0, 1);
	ruma_os_inject_clear();
	unsigned failed = 0;
	for (unsigned i = 0; i < n; i++) {
		if (res[i] == 0) {
			uint8_t v[VLEN];
			val_of(2ull * i * stride, 0, v);
			CHECK(g.calls[i] == 1 && memcmp(g.val[i], v, VLEN) == 0);
		} else {
			CHECK_EQ(res[i], want);
			CHECK_EQ(g.calls[i], 0);
			failed++;
		}
	}
	CHECK_EQ(failed, 1); /* exactly the lookup whose read failed */
	/* the page is intact on disk: the same batch succeeds now */
	CHECK_OK(cold_batch(t, n, stride, res, &g));
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(res[i], 0);
	CHECK_EQ(ruma_bm_aio_inflight(bm), 0);
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static int t_read_eio(void)
{
	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	return read_error_case(EIO, -EIO);
}

static int t_read_short(void)
{
	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	return read_error_case(0, RUMA_ESHORTIO);
}

/* io_uring_enter fails: every read of that submission fails with its
 * error, nothing stays latched, and the next batch works. */
static int t_submit_error(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	int res[64];
	struct got g;

	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	cfg(&c, 64, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	ruma_os_inject(RUMA_SYS_IO_URING_ENTER, 1, EIO, false);
	CHECK_OK(cold_batch(t, 16, NKEYS / 16, res, &g));
	ruma_os_inject_clear();
	unsigned failed = 0;
	for (unsigned i = 0; i < 16; i++) {
		CHECK(res[i] == 0 || res[i] == -EIO);
		failed += res[i] == -EIO;
	}
	CHECK(failed >= 1);
	CHECK_OK(cold_batch(t, 16, NKEYS / 16, res, &g));
	for (unsigned i = 0; i < 16; i++)
		CHECK_EQ(res[i], 0);
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

struct scan_st {
	uint64_t next;
	int step;
	bool bad;
};

static bool scan_fn(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct scan_st *s = ctx;
	uint8_t k[8], v[VLEN];
	key_of(s->next, k);
	val_of(s->next, 0, v);
	if (klen != 8 || memcmp(key, k, 8) || vlen != VLEN || memcmp(val, v, VLEN))
		s->bad = true;
	s->next += (uint64_t)(int64_t)s->step;
	return true;
}

static int t_scan_read_ahead(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;

	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	cfg(&c, 32, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	uint64_t cqe0 = ruma_os_count(RUMA_SYS_IO_URING_CQE);
	struct scan_st s = { 0, 2, false };
	CHECK_OK(ruma_btree_scan_asc(t, NULL, 0, scan_fn, &s));
	CHECK(!s.bad);
	CHECK_EQ(s.next, 2ull * NKEYS);
	uint64_t ahead = ruma_os_count(RUMA_SYS_IO_URING_CQE) - cqe0;
	CHECK(ahead > 0); /* leaves were read ahead */
	CHECK_EQ(ruma_bm_aio_inflight(bm), 0);
	struct scan_st d = { 2ull * (NKEYS - 1), -2, false };
	CHECK_OK(ruma_btree_scan_desc(t, NULL, 0, scan_fn, &d));
	CHECK(!d.bad);
	CHECK_EQ(d.next, (uint64_t)-2);
	CHECK(ruma_os_count(RUMA_SYS_IO_URING_CQE) - cqe0 > ahead);
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* io_uring refused: one message, pwrite/pwritev write-back, synchronous
 * batched lookups with the same results, and the data survives reopen. */
static bool count_fn(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	(void)key, (void)klen, (void)val, (void)vlen;
	(*(uint64_t *)ctx)++;
	return true;
}

/* A cold scan (asc, or desc) of the whole store with read-ahead limit ra
 * on a pool of pool pages; *r the scan's result, the entries checked. */
static int cold_scan(uint64_t pool, unsigned ra, bool desc, int *r, ruma_bm_stats *st)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;

	cfg(&c, pool, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	CHECK_OK(ruma_btree_set_read_ahead(t, ra));
	struct scan_st s = { desc ? 2ull * (NKEYS - 1) : 0, desc ? -2 : 2, false };
	*r = desc ? ruma_btree_scan_desc(t, NULL, 0, scan_fn, &s)
		  : ruma_btree_scan_asc(t, NULL, 0, scan_fn, &s);
	ruma_os_inject_clear();
	if (*r == 0) {
		CHECK(!s.bad);
		CHECK_EQ(s.next, desc ? (uint64_t)-2 : 2ull * NKEYS);
	}
	CHECK_EQ(ruma_bm_aio_inflight(bm), 0);
	ruma_bm_get_stats(bm, st);
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* Failed and short read-ahead reads: the scan reads those leaves again
 * synchronously and sees every entry; a failing synchronous read is the
 * scan's error; nothing stays latched. */
static int t_scan_ahead_faults(void)
{
	int r;
	ruma_bm_stats st;

	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	ruma_os_inject(RUMA_SYS_IO_URING_CQE, 1, EIO, true); /* every read-ahead fails */
	uint64_t pread0 = ruma_os_count(RUMA_SYS_PREAD);
	CHECK_EQ(cold_scan(512, 64, false, &r, &st), TEST_PASS);
	CHECK_OK(r);
	CHECK(ruma_os_injected(RUMA_SYS_IO_URING_CQE) > 0);
	CHECK(ruma_os_count(RUMA_SYS_PREAD) - pread0 > 100); /* the leaves, read again */
	uint64_t inj0 = ruma_os_injected(RUMA_SYS_IO_URING_CQE);
	ruma_os_inject(RUMA_SYS_IO_URING_CQE, 3, 0, false); /* one short read */
	CHECK_EQ(cold_scan(512, 64, true, &r, &st), TEST_PASS);
	CHECK_OK(r);
	CHECK_EQ(ruma_os_injected(RUMA_SYS_IO_URING_CQE) - inj0, 1);
	ruma_os_inject(RUMA_SYS_IO_URING_CQE, 1, EIO, true);
	ruma_os_inject(RUMA_SYS_PREAD, 20, EIO, true); /* a leaf cannot be read at all */
	CHECK_EQ(cold_scan(512, 64, false, &r, &st), TEST_PASS);
	CHECK_EQ(r, -EIO);
	CHECK_EQ(cold_scan(512, 64, false, &r, &st), TEST_PASS); /* intact on disk */
	CHECK_OK(r);
	return TEST_PASS;
}

/* The read-ahead limit: refused above RUMA_BM_AIO_MAX; 0 reads nothing
 * ahead; 64 reads the leaves ahead and leaves nothing latched. */
static int t_read_ahead_window(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	ruma_bm_stats st;
	int r;

	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	cfg(&c, 64, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	CHECK_EQ(ruma_btree_set_read_ahead(t, RUMA_BM_AIO_MAX + 1), -EINVAL);
	CHECK_EQ(ruma_btree_set_read_ahead(NULL, 1), -EINVAL);
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));

	uint64_t cqe0 = ruma_os_count(RUMA_SYS_IO_URING_CQE);
	CHECK_EQ(cold_scan(4096, 0, false, &r, &st), TEST_PASS);
	CHECK_OK(r);
	CHECK_EQ(ruma_os_count(RUMA_SYS_IO_URING_CQE) - cqe0, 0);
	CHECK_EQ(st.aio_waits, 0);

	/* limit 64 (the window grows 4, 8, .. 64): every entry, nothing left latched */
	cfg(&c, 4096, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	CHECK_OK(ruma_btree_set_read_ahead(t, 64));
	uint64_t seen = 0;
	cqe0 = ruma_os_count(RUMA_SYS_IO_URING_CQE);
	CHECK_OK(ruma_btree_scan_asc(t, NULL, 0, count_fn, &seen));
	CHECK_EQ(seen, NKEYS);
	CHECK(ruma_os_count(RUMA_SYS_IO_URING_CQE) - cqe0 > 100); /* the leaves, read ahead */
	CHECK_EQ(ruma_bm_aio_inflight(bm), 0);
	ruma_bm_get_stats(bm, &st);
	CHECK(st.aio_wait_depth >= st.aio_waits);
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* A long cold scan reads synchronously only the pages of its first descent:
 * the read-ahead window runs on into the next parent instead of running dry
 * at each parent's last child (a synchronous leaf read per parent), and the
 * next parent itself is read ahead through its own parent (else a
 * synchronous inner-node read per parent). */
static int t_read_ahead_next_parent(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	ruma_btree_stats bs;

	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	for (int desc = 0; desc <= 1; desc++) {
		cfg(&c, 4096, false);
		CHECK_OK(ruma_bm_open(&c, &bm));
		CHECK_OK(ruma_btree_open(bm, "aio", &t));
		CHECK_OK(ruma_btree_set_read_ahead(t, 16));
		uint64_t seen = 0, pread0 = ruma_os_count(RUMA_SYS_PREAD);
		CHECK_OK(desc ? ruma_btree_scan_desc(t, NULL, 0, count_fn, &seen)
			      : ruma_btree_scan_asc(t, NULL, 0, count_fn, &seen));
		uint64_t sync = ruma_os_count(RUMA_SYS_PREAD) - pread0;
		CHECK_EQ(seen, NKEYS);
		CHECK_OK(ruma_btree_get_stats(t, &bs));
		CHECK(bs.height >= 2 && bs.inner_nodes >= 4); /* several parents */
		if (sync > bs.height)
			fprintf(stderr, "  %s: %" PRIu64 " synchronous reads, height %u, %" PRIu64
				" inner nodes\n", desc ? "desc" : "asc", sync, bs.height, bs.inner_nodes);
		CHECK(sync <= bs.height); /* the first descent only */
		ruma_btree_release(t);
		CHECK_OK(ruma_bm_close(bm));
	}
	return TEST_PASS;
}

static int t_uring_refused(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	ruma_rng rng;

	if (build_store() != TEST_PASS)
		return TEST_FAIL;
	ruma_rng_seed(&rng, test_seed);
	atomic_store(&messages, 0);
	ruma_os_inject(RUMA_SYS_IO_URING_SETUP, 1, ENOSYS, true);
	cfg(&c, 48, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_EQ(atomic_load(&messages), 1);
	CHECK(strstr(last_message, "io_uring unavailable") != NULL);
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	uint64_t enter0 = ruma_os_count(RUMA_SYS_IO_URING_ENTER);
	uint64_t w0 = ruma_os_count(RUMA_SYS_PWRITE) + ruma_os_count(RUMA_SYS_PWRITEV);
	for (unsigned r = 0; r < 20; r++)
		if (batch_vs_sync(t, &rng, 32, 32, 0) != TEST_PASS)
			return TEST_FAIL;
	uint8_t k[8], v[VLEN];
	for (uint64_t i = 0; i < NKEYS; i += 2) {
		key_of(2 * i, k);
		val_of(2 * i, 1, v);
		CHECK_OK(ruma_btree_upsert(t, k, 8, v, VLEN, NULL));
	}
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	CHECK_EQ(ruma_os_count(RUMA_SYS_IO_URING_ENTER), enter0);
	CHECK(ruma_os_count(RUMA_SYS_PWRITE) + ruma_os_count(RUMA_SYS_PWRITEV) > w0);
	CHECK_EQ(atomic_load(&messages), 1); /* said once */
	ruma_os_inject_clear();

	cfg(&c, 48, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_open(bm, "aio", &t));
	for (uint64_t i = 0; i < NKEYS; i++) {
		uint8_t buf[VLEN];
		size_t len = 0;
		key_of(2 * i, k);
		val_of(2 * i, i % 2 == 0 ? 1 : 0, v);
		CHECK_OK(ruma_btree_lookup(t, k, 8, buf, sizeof buf, &len));
		CHECK(len == VLEN && memcmp(buf, v, VLEN) == 0);
	}
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* Many dirty resident pages: close writes them in a few batched calls
 * (io_uring submissions, or pwritev runs) and one fdatasync; reopening
 * with a tiny pool finds every page. */
static int flush_case(ruma_bm_write w)
{
	ruma_bm_config c;
	ruma_bm *bm;
	enum { N = 1500 };
	static ruma_pid pids[N];
	void *p;

	cfg(&c, 4096, true);
	c.write = w;
	CHECK_OK(ruma_bm_open(&c, &bm));
	for (unsigned i = 0; i < N; i++) {
		CHECK_OK(ruma_bm_alloc(bm, &pids[i], &p));
		memset(p, (int)(i * 7 + 1), PS);
		ruma_bm_unfix_x(bm, pids[i]);
	}
	uint64_t e0 = ruma_os_count(RUMA_SYS_IO_URING_ENTER);
	uint64_t v0 = ruma_os_count(RUMA_SYS_PWRITEV), p0 = ruma_os_count(RUMA_SYS_PWRITE);
	uint64_t s0 = ruma_os_count(RUMA_SYS_FDATASYNC), f0 = ruma_os_count(RUMA_SYS_FSYNC);
	CHECK_OK(ruma_bm_close(bm));
	uint64_t enters = ruma_os_count(RUMA_SYS_IO_URING_ENTER) - e0;
	uint64_t vecs = ruma_os_count(RUMA_SYS_PWRITEV) - v0;
	uint64_t singles = ruma_os_count(RUMA_SYS_PWRITE) - p0;
	fprintf(stderr, "  %s: %u pages closed with %" PRIu64 " io_uring_enter, %" PRIu64
			" pwritev, %" PRIu64 " pwrite\n",
		ruma_bm_write_name(w), (unsigned)N, enters, vecs, singles);
	/* one submission or pwritev per flush chunk (and the metadata's) */
	const uint64_t chunks = (N + RUMA_BM_FLUSH_CHUNK - 1) / RUMA_BM_FLUSH_CHUNK;
	if (w == RUMA_BM_WRITE_URING)
		CHECK(enters >= 2 && enters <= chunks + 2);
	else
		CHECK(vecs >= 2 && vecs <= chunks + 2);
	CHECK(singles <= 2); /* the metadata */
	/* one for the pages and metadata, one for the clean-shutdown state after them */
	CHECK_EQ(ruma_os_count(RUMA_SYS_FDATASYNC) - s0, 2);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FSYNC) - f0, 0);

	cfg(&c, 32, false);
	CHECK_OK(ruma_bm_open(&c, &bm));
	for (unsigned i = 0; i < N; i++) {
		CHECK_OK(ruma_bm_fix_s(bm, pids[i], &p));
		const uint8_t *b = p;
		bool ok = true;
		for (size_t j = 0; j < PS && ok; j++)
			ok = b[j] == (uint8_t)(i * 7 + 1);
		ruma_bm_unfix_s(bm, pids[i]);
		CHECK(ok);
	}
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

TEST_BIND(t_flush_uring, flush_case, RUMA_BM_WRITE_URING)
TEST_BIND(t_flush_pwritev, flush_case, RUMA_BM_WRITE_PWRITE)

static const struct test_case cases[] = {
	{ "batch_matches_sync", t_batch_matches_sync_mt },
	{ "read_eio", t_read_eio },
	{ "read_short", t_read_short },
	{ "submit_error", t_submit_error },
	{ "scan_read_ahead", t_scan_read_ahead },
	{ "scan_ahead_faults", t_scan_ahead_faults },
	{ "read_ahead_window", t_read_ahead_window },
	{ "read_ahead_next_parent", t_read_ahead_next_parent },
	{ "uring_refused", t_uring_refused },
	{ "flush_uring", t_flush_uring },
	{ "flush_pwritev", t_flush_pwritev },
};

int main(int argc, char **argv)
{
	strcpy(dir, "/tmp/ruma-test-aio-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof path, "%s/store", dir);
	int r = test_main("btree_aio_mt", cases, TEST_N(cases), argc, argv);
	unlink(path);
	rmdir(dir);
	return r;
}
