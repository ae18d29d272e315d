/*
 * test_btree_si_mt.c — snapshot reads against concurrent writers (run under
 * ThreadSanitizer by the `concurrent` label):
 *
 *   bank    NACC accounts, each a row at key i or, after a move, key
 *           i + NACC.  Writer threads run read-write transactions that
 *           transfer amounts between two accounts (in-place updates: the
 *           patch path), move an account to its other key (remove +
 *           insert), or make changes and abort; each retries on
 *           RUMA_ECONFLICT.  Reader threads run read-only transactions
 *           that scan the table ascending and descending and read every
 *           account by point reads: each must see exactly NACC accounts
 *           whose balances add up to the constant total, in every
 *           snapshot; a pool smaller than the data makes them meet
 *           eviction.  At the end the version store is empty.
 *   bank_si the same with the writers under snapshot isolation
 *           (RUMA_TXN_SNAPSHOT: their reads take no locks, first writer
 *           wins): the total still holds, since every transfer writes
 *           the rows it read.
 */
#include "wal_util.h"

#include <ruma/txn.h>

#include <pthread.h>

#define NACC 2000u
#define START 1000
#define VLEN 120u
#define WRITERS 2
#define READERS 2

static ruma_bm *bm;
static ruma_btree *tree;
static int stop;
static unsigned writer_flags; /* RUMA_TXN_LOCKING or RUMA_TXN_SNAPSHOT */
static uint64_t reads_done, fails;

static void acc_key(uint32_t k, uint8_t out[4])
{
	key_of(k, out);
}

static int64_t balance_of(const uint8_t *v)
{
	int64_t b;
	memcpy(&b, v + 16, 8);
	return b;
}

struct delta {
	int64_t d;
};

static void add_fn(void *val, size_t vlen, void *ctx)
{
	const struct delta *d = ctx;
	if (vlen == VLEN) {
		int64_t b = balance_of(val) + d->d;
		memcpy((uint8_t *)val + 16, &b, 8);
	}
}

/* The key account a lives at (locked by x), its value into v. */
static int locate(ruma_txn *x, uint32_t a, uint32_t *at, uint8_t *v)
{
	uint8_t key[4];
	size_t n;
	acc_key(a, key);
	int r = ruma_txn_lookup(x, tree, key, 4, v, VLEN, &n);
	if (r == RUMA_ENOTFOUND) {
		acc_key(a + NACC, key);
		r = ruma_txn_lookup(x, tree, key, 4, v, VLEN, &n);
		*at = a + NACC;
	} else {
		*at = a;
	}
	return r;
}

static int transfer(ruma_txn *x, ruma_rng *rng)
{
	uint32_t a = (uint32_t)ruma_rng_below(rng, NACC), b = (uint32_t)ruma_rng_below(rng, NACC);
	uint32_t ka = 0, kb = 0;
	uint8_t v[VLEN], key[4];
	int r = locate(x, a, &ka, v);
	if (!r)
		r = locate(x, b, &kb, v);
	struct delta out = { -(int64_t)ruma_rng_below(rng, 50) }, in = { -out.d };
	acc_key(ka, key);
	if (!r)
		r = ruma_txn_update(x, tree, key, 4, add_fn, &out);
	acc_key(kb, key);
	if (!r)
		r = ruma_txn_update(x, tree, key, 4, add_fn, &in);
	return r;
}

static int move(ruma_txn *x, ruma_rng *rng)
{
	uint32_t a = (uint32_t)ruma_rng_below(rng, NACC), ka;
	uint8_t v[VLEN], key[4];
	int r = locate(x, a, &ka, v);
	uint32_t to = ka == a ? a + NACC : a;
	acc_key(to, key);
	if (!r) /* lock the new key before the old one goes */
		r = ruma_txn_lookup(x, tree, key, 4, NULL, 0, NULL) == RUMA_ENOTFOUND ? 0 : -EIO;
	acc_key(ka, key);
	if (!r)
		r = ruma_txn_remove(x, tree, key, 4);
	acc_key(to, key);
	if (!r)
		r = ruma_txn_insert(x, tree, key, 4, v, VLEN);
	return r;
}

static void *writer(void *arg)
{
	ruma_rng rng;
	ruma_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		ruma_txn *x;
		if (ruma_txn_begin(bm, writer_flags, &x))
			break;
		unsigned what = (unsigned)ruma_rng_below(&rng, 10);
		int r = what < 7 ? transfer(x, &rng) : move(x, &rng);
		if (r && r != RUMA_ECONFLICT) {
			fprintf(stderr, "writer: %s\n", ruma_strerror(r));
			__atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED);
		}
		if (r || what == 9)
			ruma_txn_abort(x);
		else if (ruma_txn_commit(x))
			__atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

struct sum {
	uint64_t n;
	int64_t total;
	uint32_t last;
	bool desc, bad;
};

static bool sum_fn(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct sum *s = ctx;
	uint32_t kk = key_num(key);
	if (klen != 4 || vlen != VLEN || (s->n && (s->desc ? kk >= s->last : kk <= s->last)))
		s->bad = true;
	s->last = kk;
	s->n++;
	s->total += balance_of(val);
	return true;
}

/* One snapshot: two scans and a point read of every account agree on the
 * invariant. */
static int reader_round(void)
{
	ruma_txn *s;
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &s));
	struct sum up = { 0 }, down = { .desc = true };
	CHECK_OK(ruma_txn_scan_asc(s, tree, NULL, 0, sum_fn, &up));
	CHECK_OK(ruma_txn_scan_desc(s, tree, NULL, 0, sum_fn, &down));
	int64_t points = 0;
	for (uint32_t a = 0; a < NACC; a++) {
		uint32_t at;
		uint8_t v[VLEN];
		CHECK_OK(locate(s, a, &at, v));
		points += balance_of(v);
	}
	CHECK_OK(ruma_txn_commit(s));
	CHECK(!up.bad && !down.bad);
	CHECK_EQ(up.n, NACC);
	CHECK_EQ(down.n, NACC);
	CHECK_EQ(up.total, (int64_t)NACC * START);
	CHECK_EQ(down.total, (int64_t)NACC * START);
	CHECK_EQ(points, (int64_t)NACC * START);
	return 0;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (reader_round()) {
			__atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED);
			break;
		}
		__atomic_add_fetch(&reads_done, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int bank(unsigned flags)
{
	writer_flags = flags;
	stop = 0;
	reads_done = fails = 0;
	unlink(logpath);
	CHECK_OK(open_store(true, RUMA_BM_DURABLE_OFF, &bm));
	CHECK_OK(ruma_btree_create(bm, "bank", &tree));
	for (uint32_t a = 0; a < NACC; a++) {
		uint8_t key[4], v[VLEN];
		int64_t b = START;
		memset(v, (int)a, VLEN);
		memcpy(v + 16, &b, 8);
		acc_key(a, key);
		CHECK_OK(ruma_btree_insert(tree, key, 4, v, VLEN));
	}
	CHECK_OK(run_threads(writer, WRITERS, reader, READERS, 0, &fails, &stop));
	ruma_bm_stats bs;
	ruma_bm_get_stats(bm, &bs);
	printf("  %" PRIu64 " consistent snapshots, %" PRIu64 " pages evicted\n", reads_done,
	       bs.evictions);
	CHECK(bs.evictions > 0); /* the data is larger than the pool */
	CHECK_EQ(fails, 0u);
	CHECK(reads_done > 0);
	ruma_txn_mvcc_stats st;
	ruma_txn_mvcc_stat(&st);
	CHECK_EQ(st.versions, 0u);
	CHECK_EQ(st.snapshots, 0u);
	CHECK_OK(reader_round());
	ruma_btree_release(tree);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

TEST_BIND(t_bank, bank, RUMA_TXN_LOCKING)
TEST_BIND(t_bank_si, bank, RUMA_TXN_SNAPSHOT)

static const struct test_case cases[] = {
	{ "bank", t_bank },
	{ "bank_si", t_bank_si },
};

int main(int argc, char **argv)
{
	return test_main_fixture("btree", cases, TEST_N(cases), argc, argv, &wal_fixture);
}
