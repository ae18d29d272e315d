/*
 * test_vmcache_tpcc_mt.c — TPC-C under concurrency (label `concurrent`, the
 * TSan job): 2-4 threads run the standard mix with a buffer pool smaller
 * than the data (eviction running), then consistency conditions 1-4 and
 * the B-trees are checked, also after close and reopen; a storm of
 * concurrent New-Orders and Deliveries on one warehouse checks that every
 * order is delivered exactly once and order ids stay unique; on a store
 * with a log, 3 threads run the mix as transactions (row conflicts retried)
 * while a fourth takes checkpoints, and the database is consistent after;
 * without a log, 2 threads run the mix as transactions while a third checks
 * conditions 1-4 in one snapshot after another, each of which must hold;
 * the same with 1 and 32 threads, in memory and out, with and without a log.
 *
 * Reduced scale (items, customers, orders and new-orders per district / 10,
 * a test-only mode) except one full-scale case skipped under sanitizers.
 */
#include "tpcc_util.h"

#include "bm/bm_ext.h"

#include <pthread.h>
#include <stdatomic.h>


struct targ {
	tpcc_db *db;
	unsigned tid;
	unsigned n;          /* transactions to run */
	bool storm;          /* only New-Order and Delivery on warehouse 1 */
	int rc;
	uint64_t delivered;  /* storm: orders this thread delivered */
	uint64_t new_orders; /* storm: committed */
	uint64_t retries, gave_up, committed;
	pthread_t th;
};

static void *run_thread(void *p)
{
	struct targ *a = p;
	tpcc_worker wk;
	tpcc_worker_init(&wk, a->db, a->tid, test_seed + 7919 * (a->tid + 1));
	for (unsigned i = 0; i < a->n && !a->rc; i++) {
		if (!a->storm) {
			enum tpcc_tx kind;
			bool rb;
			a->rc = tpcc_run_one(&wk, &kind, &rb);
			a->retries = wk.retries;
			a->gave_up = wk.gave_up;
			a->committed += a->rc == 0 && !rb;
			continue;
		}
		if (i % 3 != 2) {
			tpcc_new_order_in in;
			tpcc_gen_new_order(&wk, 1, &in);
			in.i_id[in.ol_cnt - 1] = 1 + in.i_id[0] % a->db->sz.items;
			a->rc = tpcc_tx_new_order(&wk, &in, NULL);
			a->new_orders += a->rc == 0;
		} else {
			tpcc_delivery_out out;
			a->rc = tpcc_tx_delivery(&wk, 1, (uint8_t)(1 + a->tid), &out);
			for (int d = 0; d < 10; d++)
				a->delivered += out.o_id[d] != 0;
		}
	}
	return NULL;
}

static int run_parallel(tpcc_db *db, unsigned threads, void *(*fn)(void *), unsigned n,
			bool storm, struct targ *a)
{
	for (unsigned i = 0; i < threads; i++) {
		a[i] = (struct targ){ .db = db, .tid = i, .n = n, .storm = storm };
		if (pthread_create(&a[i].th, NULL, fn, &a[i]))
			return -EAGAIN;
	}
	int rc = 0;
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(a[i].th, NULL);
		if (a[i].rc && !rc)
			rc = a[i].rc;
	}
	return rc;
}

/* The mix on `threads` threads (n transactions each) while side(arg) runs
 * beside them until *stop is set, once they are done.  The mix's first error. */
static int run_beside(tpcc_db *db, unsigned threads, unsigned n, struct targ *a,
		      void *(*side)(void *), void *arg, _Atomic bool *stop)
{
	pthread_t th;
	if (pthread_create(&th, NULL, side, arg))
		return -EAGAIN;
	int rc = run_parallel(db, threads, run_thread, n, false, a);
	atomic_store(stop, true);
	pthread_join(th, NULL);
	return rc;
}

static int fx_setup(fixture *f, uint32_t warehouses, uint32_t scale, unsigned threads,
		    uint64_t phys)
{
	return fx_setup_durable(f, warehouses, scale, threads, phys, RUMA_BM_DURABLE_OFF);
}

static int pages_evicted(ruma_bm *bm, uint64_t *out)
{
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	*out = st.evictions;
	return 0;
}

/* 2, 3 and 4 threads run the mix with a 16 MiB pool (data ~45 MB); under
 * sanitizers 2 and 4 threads at scale 50 with a 4 MiB pool (data ~10 MB). */
static int t_mix_small_pool(void)
{
	bool small = test_sanitized();
	unsigned n = small ? 400 : 2500;
	uint32_t scale = small ? 50 : 10;
	uint64_t pool = small ? 4ull << 20 : 16ull << 20;
	for (unsigned threads = 2; threads <= 4; threads += small ? 2 : 1) {
		fixture f = { 0 };
		struct targ a[8];
		uint64_t ev;
		CHECK_OK(fx_setup(&f, 2, scale, threads, pool));
		CHECK_OK(tpcc_check(f.db, false, stderr));
		CHECK_OK(run_parallel(f.db, threads, run_thread, n, false, a));
		pages_evicted(f.bm, &ev);
		CHECK(ev > 0);
		CHECK_OK(tpcc_check(f.db, true, stderr));
		/* Close, reopen with the small pool, check again, run again. */
		fx_close(&f, false);
		CHECK_OK(fx_open_bm(&f, pool, false));
		CHECK_OK(tpcc_db_open(f.bm, &f.db));
		CHECK_OK(tpcc_check(f.db, true, stderr));
		CHECK_OK(tpcc_db_begin_run(f.db, &test_rng));
		CHECK_OK(run_parallel(f.db, threads, run_thread, n / 2, false, a));
		CHECK_OK(tpcc_check(f.db, false, stderr));
		fx_close(&f, true);
		printf("  %u threads: %u transactions each, %" PRIu64 " pages evicted\n", threads,
		       n, ev);
	}
	return TEST_PASS;
}

struct deliv_count {
	uint64_t carrier_set, delivery_cnt;
	uint32_t o_max[10];
};

static bool count_orders(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct deliv_count *c = arg;
	tpcc_order o_r;
	const tpcc_order *o = tpcc_row_in(&o_r, sizeof(o_r), v, vl);
	c->carrier_set += o->o_carrier_id != 0;
	return true;
}

static bool count_customers(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	tpcc_customer c;
	tpcc_row_in(&c, sizeof(c), v, vl);
	((struct deliv_count *)arg)->delivery_cnt += c.c_delivery_cnt;
	return true;
}

/* Concurrent New-Orders and Deliveries of the same districts. */
static int t_delivery_storm(void)
{
	unsigned threads = 4, n = test_sanitized() ? 400 : 1500;
	fixture f = { 0 };
	struct targ a[8];
	struct deliv_count before = { 0 }, after = { 0 };
	CHECK_OK(fx_setup(&f, 1, test_sanitized() ? 50 : 10, 2, (test_sanitized() ? 4ull : 16ull) << 20));
	CHECK_OK(ruma_btree_scan_asc(f.db->t[TPCC_ORDER], NULL, 0, count_orders, &before));
	CHECK_OK(run_parallel(f.db, threads, run_thread, n, true, a));
	uint64_t delivered = 0, created = 0;
	for (unsigned i = 0; i < threads; i++) {
		delivered += a[i].delivered;
		created += a[i].new_orders;
	}
	CHECK(delivered > 0);
	CHECK_OK(ruma_btree_scan_asc(f.db->t[TPCC_ORDER], NULL, 0, count_orders, &after));
	CHECK_OK(ruma_btree_scan_asc(f.db->t[TPCC_CUSTOMER], NULL, 0, count_customers, &after));
	/* Each delivered order was delivered once: one carrier set and one
	 * customer delivery count per delivery reported by the threads. */
	CHECK_EQ(after.carrier_set - before.carrier_set, delivered);
	CHECK_EQ(after.delivery_cnt, delivered);
	/* Order ids unique and dense: D_NEXT_O_ID advanced by the orders made. */
	uint64_t next_sum = 0;
	for (uint8_t d = 1; d <= 10; d++) {
		tpcc_district di;
		tpcc_key k = tk_district(1, d);
		CHECK_OK(ruma_btree_lookup(f.db->t[TPCC_DISTRICT], k.b, k.n, &di, sizeof(di), NULL));
		next_sum += di.d_next_o_id - 1 - f.db->sz.customers;
	}
	CHECK_EQ(next_sum, created);
	CHECK_OK(tpcc_check(f.db, true, stderr));
	printf("  %" PRIu64 " new-orders, %" PRIu64 " deliveries of single orders\n", created,
	       delivered);
	fx_close(&f, true);
	return TEST_PASS;
}

/* One full-scale warehouse (~210 MB) with a 32 MiB pool, 2 threads. */
static int t_full_scale_small_pool(void)
{
	if (test_sanitized())
		SKIP("a full-scale warehouse takes too long under sanitizers");
	fixture f = { 0 };
	struct targ a[8];
	CHECK_OK(fx_setup(&f, 1, 1, 2, 32ull << 20));
	CHECK_OK(run_parallel(f.db, 2, run_thread, 1000, false, a));
	uint64_t ev;
	pages_evicted(f.bm, &ev);
	CHECK(ev > 0);
	CHECK_OK(tpcc_check(f.db, false, stderr));
	fx_close(&f, true);
	return TEST_PASS;
}

struct ckpt_arg {
	ruma_bm *bm;
	_Atomic bool stop;
	int rc;
	unsigned n;
};

static void *checkpoint_thread(void *p)
{
	struct ckpt_arg *c = p;
	while (!atomic_load(&c->stop) && !c->rc) {
		c->rc = ruma_bm_flush(c->bm);
		c->n++;
	}
	return NULL;
}

/* With a log (SYNC): 3 threads run the mix as transactions, 2 warehouses so
 * that they meet on rows now and then (each conflict aborts and retries),
 * while checkpoints run back to back; then conditions 1-4 and the trees
 * hold, also after close and reopen (a clean close: no recovery). */
static int t_transactions_mix(void)
{
	fixture f = { 0 };
	struct targ a[3];
	unsigned n = test_sanitized() ? 60 : 300;
	CHECK_OK(fx_setup_durable(&f, 2, 50, 2, 4u << 20, RUMA_BM_DURABLE_SYNC));
	CHECK(ruma_bm_logging(f.bm));
	f.db->txn = true;
	struct ckpt_arg ck = { .bm = f.bm };
	CHECK_OK(run_beside(f.db, 3, n, a, checkpoint_thread, &ck, &ck.stop));
	CHECK_OK(ck.rc);
	uint64_t committed = 0, retries = 0, gave_up = 0;
	for (int i = 0; i < 3; i++) {
		committed += a[i].committed;
		retries += a[i].retries;
		gave_up += a[i].gave_up;
	}
	fprintf(stderr, "  %" PRIu64 " committed, %" PRIu64 " conflict retries, %" PRIu64
			" given up, %u checkpoints\n", committed, retries, gave_up, ck.n);
	CHECK(committed + gave_up > 3 * n * 9 / 10); /* the 1% rollbacks aside */
	CHECK(ck.n > 0);
	CHECK_OK(tpcc_check(f.db, true, stderr));
	fx_close(&f, false);
	CHECK_OK(fx_open_bm_durable(&f, 4u << 20, false, RUMA_BM_DURABLE_SYNC));
	CHECK_OK(tpcc_db_open(f.bm, &f.db));
	CHECK_OK(tpcc_check(f.db, true, stderr));
	fx_close(&f, true);
	char wal[80];
	snprintf(wal, sizeof(wal), "%s.wal", f.path);
	unlink(wal);
	return TEST_PASS;
}

struct snap_arg {
	tpcc_db *db;
	_Atomic bool stop;
	int rc;
	unsigned checks, too_old;
};

static void *snapshot_checker(void *p)
{
	struct snap_arg *c = p;
	do { /* at least once, however soon the writers end */
		int rc = tpcc_check_snapshot(c->db, stderr);
		c->too_old += rc == RUMA_ESNAPTOOOLD;
		c->rc = rc == RUMA_ESNAPTOOOLD ? 0 : rc;
		c->checks += rc == 0;
	} while (!atomic_load(&c->stop) && !c->rc);
	return NULL;
}

/* Without a log, the mix as transactions (db->txn, as `ruma vmcache
 * --txn`): 2 threads run it on 2 warehouses while a third checks conditions
 * 1-4 and the row counts again and again, each time in one read-only
 * transaction.  Plain, a Payment updates W_YTD and D_YTD one after the
 * other and a New-Order its rows one by one, so a check between them would
 * fail; in a snapshot every check must hold.  The database holds after. */
static int t_snapshot_check(void)
{
	fixture f = { 0 };
	struct targ a[2];
	unsigned n = test_sanitized() ? 150 : 1500;
	CHECK_OK(fx_setup(&f, 2, 50, 2, 8u << 20));
	CHECK(!ruma_bm_logging(f.bm));
	f.db->txn = true;
	struct snap_arg ck = { .db = f.db };
	CHECK_OK(run_beside(f.db, 2, n, a, snapshot_checker, &ck, &ck.stop));
	CHECK_OK(ck.rc);
	CHECK(ck.checks > 0);
	uint64_t committed = a[0].committed + a[1].committed;
	fprintf(stderr, "  %" PRIu64 " committed, %u snapshot checks passed (%u too old)\n",
		committed, ck.checks, ck.too_old);
	CHECK(committed > 2 * n * 9 / 10);
	CHECK_OK(tpcc_check(f.db, true, stderr));
	fx_close(&f, true);
	return TEST_PASS;
}

/* Conditions 1-4 with 1 to 32 threads running the mix as transactions, in
 * memory and out of memory, without a log and with one (asynchronous),
 * checked in snapshot after snapshot while they run and once more after. */
static int t_thread_counts(void)
{
	static const struct {
		unsigned threads;
		uint64_t pool;
		ruma_bm_durability d;
	} runs[] = {
		{ 1, 4u << 20, RUMA_BM_DURABLE_OFF },
		{ 32, 4u << 20, RUMA_BM_DURABLE_OFF },
		{ 32, 64u << 20, RUMA_BM_DURABLE_OFF },
		{ 32, 4u << 20, RUMA_BM_DURABLE_ASYNC },
	};
	unsigned n = test_sanitized() ? 15 : 60;
	for (size_t i = 0; i < TEST_N(runs); i++) {
		fixture f = { .max_threads = 40 };
		struct targ a[32];
		uint64_t ev;
		CHECK_OK(fx_setup_durable(&f, 2, 50, 2, runs[i].pool, runs[i].d));
		f.db->txn = true;
		struct snap_arg ck = { .db = f.db };
		CHECK_OK(run_beside(f.db, runs[i].threads, n, a, snapshot_checker, &ck, &ck.stop));
		CHECK_OK(ck.rc);
		CHECK(ck.checks > 0);
		pages_evicted(f.bm, &ev);
		CHECK(runs[i].pool > (8u << 20) ? ev == 0 : ev > 0);
		CHECK_OK(tpcc_check(f.db, true, stderr));
		printf("  %u threads, %s, %s: %u snapshot checks passed\n", runs[i].threads,
		       ev ? "out of memory" : "in memory",
		       runs[i].d ? "asynchronous log" : "no log", ck.checks);
		fx_close(&f, true);
		if (runs[i].d) {
			char wal[80];
			snprintf(wal, sizeof(wal), "%s.wal", f.path);
			unlink(wal);
		}
	}
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "mix_small_pool", t_mix_small_pool },
	{ "delivery_storm", t_delivery_storm },
	{ "full_scale_small_pool", t_full_scale_small_pool },
	{ "transactions_mix", t_transactions_mix },
	{ "snapshot_check", t_snapshot_check },
	{ "thread_counts", t_thread_counts },
};

int main(int argc, char **argv)
{
	return test_main("vmcache_tpcc_mt", cases, TEST_N(cases), argc, argv);
}
