/*
 * test_btree_txn.c — transactions (txn.h) on B-trees:
 *
 *   abort_nolog / abort_log  a transaction that inserts thousands of keys
 *                     (splits), updates, upserts and removes (merges) is
 *                     aborted: the tree equals its state before, key by key
 *                     and value by value, and the checker is clean
 *   conflict          a row held by one transaction gives RUMA_ECONFLICT to
 *                     another, which succeeds after the first commits
 *   commit_nowait     ruma_txn_commit_nowait releases the row locks at once,
 *                     gives increasing durable-at LSNs (a read-only
 *                     transaction the log's end), and a power loss after the
 *                     log was durable up to the k-th one keeps the first k
 *                     transactions whole
 *   commit_releases_early  a SYNC commit releases its row locks before
 *                     its record is durable (its fdatasync held in a hook:
 *                     another writer takes the row, a snapshot writer
 *                     older than the commit conflicts), a read-only
 *                     transaction that read it does not return from its
 *                     commit before it is durable, one that read another
 *                     row does not wait; a power loss keeps both writers'
 *                     commits
 *   sigkill           a forked child runs transactions of 1..30 (some 1..400)
 *                     changes
 *                     (SYNC) and is killed at a random instant: after
 *                     reopening, every committed transaction is there and
 *                     the one in flight is entirely present or entirely
 *                     absent; three rounds
 *   powerloss_open_txn  a large open transaction (in-place updates, then
 *                     upserts of every key; its pages evicted, so its
 *                     uncommitted changes reached the store) when the
 *                     power fails: recovery undoes all of it; the committed
 *                     ones stay
 *   checkpoint_open_txn  the same with checkpoints (ruma_bm_flush) while the
 *                     transaction is open and others commit
 *   undo_carried      a transaction's later undo records ride in the
 *                     records of the page changes they precede: in the log
 *                     after a power loss, one UNDO record of its own per
 *                     transaction and every other one carried; recovery
 *                     still undoes the open transaction whole
 *   misuse            a tree of another store given to a transaction is
 *                     -EINVAL and changes neither store; closing a store
 *                     with a transaction open is -EBUSY (nothing closed,
 *                     the change not made durable); after the abort the
 *                     store closes and the change is gone
 */
#include "wal_util.h"

#include <ruma/txn.h>
#include <ruma/wal.h>
#include "bm/bm_ext.h"
#include "bm/mtr.h"

#include "os/os.h"


#define KEYS 4000u
#define PS RUMA_BM_PAGE_SIZE


static int txn_op(ruma_txn *x, ruma_btree *t, uint32_t k, uint32_t ver)
{
	uint8_t key[4], val[256];
	key_of(k, key);
	if (!ver) {
		int r = ruma_txn_remove(x, t, key, 4);
		return r == RUMA_ENOTFOUND ? 0 : r;
	}
	return ruma_txn_upsert(x, t, key, 4, val, val_of(k, ver, val));
}

/* 0 if the tree holds exactly model (versions; 0 = absent). */
static int matches(ruma_btree *t, const uint32_t *model)
{
	uint8_t key[4], want[256], got[256];
	for (uint32_t k = 0; k < KEYS; k++) {
		size_t vlen = 0;
		key_of(k, key);
		int r = ruma_btree_lookup(t, key, 4, got, sizeof(got), &vlen);
		bool ok = model[k] ? r == 0 && vlen == val_of(k, model[k], want) && !memcmp(got, want, vlen)
				   : r == RUMA_ENOTFOUND;
		if (!ok)
			return (int)k + 1;
	}
	return 0;
}

static int make_tree(ruma_bm_durability d, ruma_bm **bm, ruma_btree **t)
{
	unlink(logpath);
	int r = open_store(true, d, bm);
	if (!r)
		r = ruma_btree_create(*bm, "t", t);
	return r;
}

/* A fresh SYNC store with tree "t", closed and reopened with the power-loss
 * simulation armed (its files tracked from the open on). */
static int open_armed(ruma_bm **bm, ruma_btree **t)
{
	int r = make_tree(RUMA_BM_DURABLE_SYNC, bm, t);
	if (r)
		return r;
	if ((r = close_tree(*bm, *t)) || (r = ruma_os_powerloss_arm()))
		return r;
	return open_tree(RUMA_BM_DURABLE_SYNC, bm, t, NULL);
}

static void add_one(void *val, size_t vlen, void *ctx)
{
	(void)ctx;
	if (vlen)
		((uint8_t *)val)[0]++;
}

static int abort_case(ruma_bm_durability d)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	memset(model, 0, sizeof(model));
	CHECK_OK(make_tree(d, &bm, &t));
	for (uint32_t k = 0; k < KEYS; k += 4) {
		CHECK_OK(txn_op(NULL, t, k, 1));
		model[k] = 1;
	}
	ruma_btree_stats before, after;
	CHECK_OK(ruma_btree_get_stats(t, &before));
	ruma_txn *x;
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x));
	for (uint32_t k = 0; k < KEYS; k++) /* every key: inserts split leaves */
		CHECK_OK(txn_op(x, t, k, 7));
	for (uint32_t k = 0; k < KEYS; k += 3) { /* in-place updates */
		uint8_t key[4];
		key_of(k, key);
		CHECK_OK(ruma_txn_update(x, t, key, 4, add_one, NULL));
	}
	for (uint32_t k = 0; k < KEYS; k++) /* remove nearly all: merges */
		if (k % 16)
			CHECK_OK(txn_op(x, t, k, 0));
	uint8_t key[4], val[8] = { 0 };
	key_of(KEYS + 5, key);
	CHECK_OK(ruma_txn_insert(x, t, key, 4, val, sizeof(val)));
	CHECK_EQ(ruma_txn_insert(x, t, key, 4, val, sizeof(val)), RUMA_EEXISTS);
	CHECK_OK(ruma_btree_get_stats(t, &after));
	CHECK(after.leaf_splits > before.leaf_splits && after.leaf_merges > before.leaf_merges);
	CHECK_OK(ruma_txn_abort(x));
	CHECK_EQ(matches(t, model), 0);
	CHECK_EQ(ruma_btree_lookup(t, key, 4, NULL, 0, NULL), RUMA_ENOTFOUND);
	CHECK_OK(ruma_btree_check(t, stdout));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

TEST_BIND(t_abort_nolog, abort_case, RUMA_BM_DURABLE_OFF)
TEST_BIND(t_abort_log, abort_case, RUMA_BM_DURABLE_SYNC)

static int t_conflict(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *a, *b;
	CHECK_OK(make_tree(RUMA_BM_DURABLE_SYNC, &bm, &t));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &a));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &b));
	CHECK_OK(txn_op(a, t, 5, 1));
	CHECK_EQ(txn_op(b, t, 5, 2), RUMA_ECONFLICT);
	uint8_t key[4];
	key_of(5, key);
	CHECK_EQ(ruma_txn_lookup(b, t, key, 4, NULL, 0, NULL), RUMA_ECONFLICT);
	CHECK_OK(txn_op(b, t, 6, 2)); /* other rows are free */
	CHECK_OK(ruma_txn_commit(a));
	CHECK_OK(ruma_txn_abort(b));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &b));
	CHECK_OK(txn_op(b, t, 5, 3));
	CHECK_OK(ruma_txn_commit(b));
	uint32_t model[KEYS] = { 0 };
	model[5] = 3;
	CHECK_EQ(matches(t, model), 0);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* Commits of 20 transactions: fdatasync calls of the log while they ran.
 * The background flusher (ASYNC) is set to 60 s, so it never runs here. */
static int commit_syncs(ruma_bm_durability d, uint64_t *syncs)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	unlink(logpath);
	ruma_bm_config_default(&c);
	c.path = path;
	c.virt_bytes = 8192ull * RUMA_BM_PAGE_SIZE;
	c.phys_bytes = 1024ull * RUMA_BM_PAGE_SIZE;
	c.fresh = true;
	c.write = RUMA_BM_WRITE_PWRITE;
	c.durability = d;
	c.wal_flush_ms = 60000;
	c.message = quiet;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_create(bm, "t", &t));
	CHECK_EQ(ruma_bm_durability_of(bm), d);
	uint64_t before = ruma_os_count(RUMA_SYS_FDATASYNC);
	for (uint32_t k = 0; k < 20; k++) {
		ruma_txn *x;
		CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x));
		CHECK_OK(txn_op(x, t, k, 1));
		CHECK_OK(ruma_txn_commit(x));
	}
	*syncs = ruma_os_count(RUMA_SYS_FDATASYNC) - before;
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* On an ASYNC store a commit returns without waiting for the log (txn.h);
 * on a SYNC store every commit waits (one fdatasync each, one thread). */
static int t_async_commit_does_not_wait(void)
{
	uint64_t sync_n = 0, async_n = 0;
	CHECK_EQ(commit_syncs(RUMA_BM_DURABLE_SYNC, &sync_n), TEST_PASS);
	CHECK_EQ(commit_syncs(RUMA_BM_DURABLE_ASYNC, &async_n), TEST_PASS);
	CHECK(sync_n >= 20);
	CHECK_EQ(async_n, 0);
	return TEST_PASS;
}

/* Pipelined commits (txn.h): early lock release, durable-at points, and
 * what a power loss keeps. */
static int t_commit_nowait(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	memset(model, 0, sizeof(model));
	CHECK_OK(open_armed(&bm, &t));
	CHECK_EQ(ruma_txn_commit_nowait(NULL, NULL), -EINVAL);
	uint64_t at[60], prev = 0;
	for (uint32_t n = 1; n <= 60; n++) {
		ruma_txn *x, *y;
		CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x));
		for (uint32_t k = n * 50; k < n * 50 + 20; k++)
			CHECK_OK(txn_op(x, t, k, n));
		CHECK_OK(ruma_txn_commit_nowait(x, &at[n - 1]));
		CHECK(at[n - 1] > prev);
		prev = at[n - 1];
		/* the locks are gone at once: another transaction takes the rows */
		CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &y));
		uint8_t key[4], val[256];
		key_of(n * 50, key);
		CHECK_OK(ruma_txn_lookup(y, t, key, 4, val, sizeof(val), NULL));
		uint64_t ro;
		CHECK_OK(ruma_txn_commit_nowait(y, &ro)); /* read-only: the log's end */
		CHECK(ro >= at[n - 1]);
	}
	const uint32_t keep = 40;
	CHECK_OK(ruma_bm_log_flush(bm, at[keep - 1]));
	CHECK(ruma_bm_log_durable(bm) >= at[keep - 1]);
	for (uint32_t n = 1; n <= keep; n++)
		for (uint32_t k = n * 50; k < n * 50 + 20; k++)
			model[k] = n;
	CHECK_OK(power_off(bm, t));

	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, NULL));
	/* the first `keep` are there; each later one entirely or not at all */
	for (uint32_t n = keep + 1; n <= 60; n++) {
		uint8_t key[4];
		key_of(n * 50, key);
		uint8_t val[256];
		bool there = ruma_btree_lookup(t, key, 4, val, sizeof(val), NULL) == 0;
		for (uint32_t k = n * 50; k < n * 50 + 20; k++)
			model[k] = there ? n : 0;
	}
	CHECK_EQ(matches(t, model), 0);
	CHECK_OK(ruma_btree_check(t, stdout));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* ---- crashes ------------------------------------------------------------------ */

struct side_op {
	uint32_t k, ver;
};
#define COMMITTED 0xffffffffu

/* Child: transactions of 1..30 changes; each written to the side file as
 * its ops, then {COMMITTED, n} after commit returned. */
static void child_run(uint64_t seed)
{
	struct child ch;
	child_open(&ch, seed);
	for (uint32_t n = 1;; n++) {
		ruma_txn *x;
		if (ruma_txn_begin(ch.bm, RUMA_TXN_LOCKING, &x))
			_exit(4);
		/* every 4th is large: eviction writes its pages, so its log
		 * reaches the file before it commits */
		unsigned ops = 1 + (unsigned)ruma_rng_below(&ch.rng, n % 4 ? 30 : 400);
		for (unsigned i = 0; i < ops; i++) {
			struct side_op o = { (uint32_t)ruma_rng_below(&ch.rng, KEYS), 0 };
			o.ver = ruma_rng_below(&ch.rng, 3) ? (uint32_t)(seed % 100u) * 1000000u + n : 0;
			if (write(ch.fd, &o, sizeof(o)) != sizeof(o) || txn_op(x, ch.t, o.k, o.ver))
				_exit(5);
		}
		if (!ruma_bm_logging(ch.bm) || ruma_txn_commit(x))
			_exit(6);
		struct side_op c = { COMMITTED, n };
		if (write(ch.fd, &c, sizeof(c)) != sizeof(c))
			_exit(7);
	}
}

/* Committed transactions into model; the one in flight into alt (a copy of
 * model with it applied). */
static int replay(uint32_t *model, uint32_t *alt)
{
	int fd = open(side, O_RDONLY);
	struct side_op o, pend[512];
	size_t np = 0;
	if (fd < 0)
		return -1;
	while (read(fd, &o, sizeof(o)) == sizeof(o)) {
		if (o.k == COMMITTED) {
			for (size_t i = 0; i < np; i++)
				model[pend[i].k] = pend[i].ver;
			np = 0;
		} else if (o.k < KEYS && np < 512) {
			pend[np++] = o;
		} else {
			close(fd);
			return -1;
		}
	}
	close(fd);
	memcpy(alt, model, KEYS * sizeof(*alt));
	for (size_t i = 0; i < np; i++)
		alt[pend[i].k] = pend[i].ver;
	return 0;
}

static int t_sigkill(void)
{
	static uint32_t model[KEYS], alt[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	memset(model, 0, sizeof(model));
	CHECK_OK(make_tree(RUMA_BM_DURABLE_SYNC, &bm, &t));
	CHECK_OK(close_tree(bm, t));
	uint64_t losers = 0;
	for (int round = 0; round < 3; round++) {
		unlink(side);
		CHECK(run_and_kill(child_run, test_seed + (uint64_t)round));
		CHECK_OK(replay(model, alt));
		ruma_bm_recovery rec;
		CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, &rec));
		CHECK(rec.ran);
		losers += rec.losers;
		CHECK_OK(ruma_btree_check(t, stdout));
		int m = matches(t, model), a = matches(t, alt);
		if (m && a)
			printf("  round %d: key %d differs from the committed state, key %d from it plus "
			       "the transaction in flight\n", round, m - 1, a - 1);
		CHECK(m == 0 || a == 0);
		if (m)
			memcpy(model, alt, sizeof(model));
		CHECK_OK(close_tree(bm, t));
	}
	/* a loser needs its log to reach the file before the kill: random here,
	 * certain in powerloss_open_txn */
	printf("  %llu transactions undone by recovery\n", (unsigned long long)losers);
	return TEST_PASS;
}

/* The power fails with open_txn unfinished; the files stay as it left them. */
static int power_fails(ruma_bm *bm, ruma_btree *t, ruma_txn *open_txn)
{
	CHECK_OK(ruma_os_powerloss());
	/* the "machine" is dead: nothing of this abort reaches the files; it
	 * only frees the transaction and its row locks */
	(void)ruma_txn_abort(open_txn);
	ruma_btree_release(t);
	(void)ruma_bm_close(bm);
	ruma_os_powerloss_disarm();
	return TEST_PASS;
}

/* Reopening after power_fails recovers the store, undoes the one loser
 * and leaves exactly model. */
static int recovers_one_loser(const uint32_t *model)
{
	ruma_bm *bm;
	ruma_btree *t;
	ruma_bm_recovery rec;
	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, &rec));
	CHECK(rec.ran);
	CHECK_EQ(rec.losers, 1u);
	CHECK_EQ(matches(t, model), 0);
	CHECK_OK(ruma_btree_check(t, stdout));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

static int lose_power_and_recover(ruma_bm *bm, ruma_btree *t, ruma_txn *open_txn,
				  const uint32_t *model)
{
	CHECK_EQ(power_fails(bm, t, open_txn), TEST_PASS);
	return recovers_one_loser(model);
}

static int t_powerloss_open_txn(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	memset(model, 0, sizeof(model));
	CHECK_OK(open_armed(&bm, &t));
	for (uint32_t n = 1; n <= 40; n++) { /* committed */
		ruma_txn *x;
		CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x));
		for (uint32_t i = 0; i < 10; i++) {
			uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
			CHECK_OK(txn_op(x, t, k, n));
			model[k] = n;
		}
		CHECK_OK(ruma_txn_commit(x));
	}
	ruma_txn *open_txn;
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &open_txn));
	for (uint32_t k = 0; k < KEYS; k++) /* in-place updates: patch undo */
		if (model[k]) {
			uint8_t key[4];
			key_of(k, key);
			CHECK_OK(ruma_txn_update(open_txn, t, key, 4, add_one, NULL));
		}
	for (uint32_t k = 0; k < KEYS; k++) /* far more pages than the pool */
		CHECK_OK(txn_op(open_txn, t, k, 999));
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	CHECK(st.writes > 0); /* uncommitted changes reached the store */
	CHECK_OK(ruma_bm_flush(bm)); /* and are synced there */
	CHECK_EQ(lose_power_and_recover(bm, t, open_txn, model), TEST_PASS);
	ruma_bm_recovery rec;
	/* undone for good: a clean reopen needs no recovery */
	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, &rec));
	CHECK(!rec.ran);
	CHECK_EQ(matches(t, model), 0);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* A transaction open across a checkpoint (which discards the log before the
 * oldest unfinished transaction only) is undone whole after a power loss. */
static int t_checkpoint_open_txn(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	memset(model, 0, sizeof(model));
	CHECK_OK(open_armed(&bm, &t));
	ruma_txn *open_txn, *x;
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &open_txn));
	for (uint32_t k = 0; k < KEYS; k += 2)
		CHECK_OK(txn_op(open_txn, t, k, 555));
	CHECK_OK(ruma_bm_flush(bm)); /* checkpoint with the transaction open */
	for (uint32_t k = 1; k < KEYS; k += 8) {
		CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x)); /* committed, interleaved */
		CHECK_OK(txn_op(x, t, k, 7));
		CHECK_OK(ruma_txn_commit(x));
		model[k] = 7;
		if (k % 1000 == 1)
			CHECK_OK(ruma_bm_flush(bm));
	}
	for (uint32_t k = 0; k < KEYS; k += 4)
		CHECK_OK(txn_op(open_txn, t, k, 0));
	CHECK_EQ(lose_power_and_recover(bm, t, open_txn, model), TEST_PASS);
	return TEST_PASS;
}

/* UNDO records of their own and UNDO entries carried by MTR records in
 * the log file. */
static int count_undo(uint64_t *own, uint64_t *carried)
{
	ruma_wal *w;
	ruma_wal_iter *it;
	ruma_wal_record rec;
	ruma_wal_config c = { .path = logpath, .message = quiet, .replay = true };
	*own = *carried = 0;
	CHECK_OK(ruma_wal_open(&c, &w));
	CHECK_OK(ruma_wal_iter_open(w, &it));
	while (ruma_wal_iter_next(it, &rec) == 1) {
		*own += rec.type == RUMA_BM_LOG_UNDO;
		*carried += rec.type == BM_WAL_MTR && rec.len &&
			    *(const uint8_t *)rec.payload == BM_MTR_UNDO;
	}
	ruma_wal_iter_close(it);
	CHECK_OK(ruma_wal_close(w));
	return TEST_PASS;
}

static int t_undo_carried(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	ruma_txn *x, *open_txn;
	memset(model, 0, sizeof(model));
	CHECK_OK(open_armed(&bm, &t));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x)); /* 30 inserts: 1 own, 29 carried */
	for (uint32_t k = 0; k < 30; k++) {
		CHECK_OK(txn_op(x, t, k, 1));
		model[k] = 1;
	}
	CHECK_OK(ruma_txn_commit(x));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &open_txn)); /* 40 changes: 1 own, 39 carried */
	for (uint32_t k = 0; k < 30; k++) {
		uint8_t key[4];
		key_of(k, key);
		CHECK_OK(ruma_txn_update(open_txn, t, key, 4, add_one, NULL));
	}
	for (uint32_t k = 100; k < 110; k++)
		CHECK_OK(txn_op(open_txn, t, k, 2));
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_LOCKING, &x)); /* its commit syncs the log: 1 own */
	CHECK_OK(txn_op(x, t, 200, 3));
	model[200] = 3;
	CHECK_OK(ruma_txn_commit(x));

	CHECK_EQ(power_fails(bm, t, open_txn), TEST_PASS);
	uint64_t own, carried;
	CHECK_EQ(count_undo(&own, &carried), TEST_PASS);
	printf("  undo records: %llu of their own, %llu carried\n", (unsigned long long)own,
	       (unsigned long long)carried);
	CHECK_EQ(own, 3u);
	CHECK_EQ(carried, 29u + 39u);
	return recovers_one_loser(model);
}

static int t_misuse(void)
{
	ruma_bm *a, *b;
	ruma_btree *ta, *tb;
	char other[200];
	uint8_t key[4] = { 1, 2, 3, 4 }, val[8] = { 0 };
	snprintf(other, sizeof(other), "%s/other", dir);
	CHECK_OK(open_store(true, RUMA_BM_DURABLE_SYNC, &a));
	CHECK_OK(ruma_btree_create(a, "t", &ta));
	ruma_bm_config c;
	ruma_bm_config_default(&c);
	c.path = other;
	c.virt_bytes = 1024ull * PS;
	c.phys_bytes = 64ull * PS;
	c.fresh = true;
	c.message = quiet;
	CHECK_OK(ruma_bm_open(&c, &b));
	CHECK_OK(ruma_btree_create(b, "t", &tb));
	ruma_txn *x;
	CHECK_OK(ruma_txn_begin(a, RUMA_TXN_LOCKING, &x));
	CHECK_EQ(ruma_txn_upsert(x, tb, key, 4, val, 8), -EINVAL);
	CHECK_EQ(ruma_txn_remove(x, tb, key, 4), -EINVAL);
	CHECK_EQ(ruma_txn_lookup(x, tb, key, 4, val, 8, NULL), -EINVAL);
	CHECK_EQ(ruma_btree_lookup(tb, key, 4, val, 8, NULL), RUMA_ENOTFOUND);
	CHECK_OK(ruma_txn_upsert(x, ta, key, 4, val, 8));
	CHECK_EQ(ruma_bm_close(a), -EBUSY); /* nothing closed */
	CHECK_OK(ruma_txn_abort(x));
	ruma_btree_release(ta);
	ruma_btree_release(tb);
	CHECK_OK(ruma_bm_close(a));
	CHECK_OK(ruma_bm_close(b));
	unlink(other);
	unlink(logpath);
	return TEST_PASS;
}

/* Early lock release at a SYNC commit: the committer's fdatasync is held in
 * a hook while another writer locks its row (a snapshot writer older than
 * the commit conflicts) and read-only transactions read it and another
 * row: the first does not return from its commit before the commit is
 * durable, the second does not wait. */
struct elr {
	ruma_bm *bm;
	ruma_btree *t;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool held, release, reader_done;
	int rc_writer, rc_reader;
	uint32_t reader_saw;
	uint32_t key; /* the row elr_reader reads */
};

static void elr_hold(void *ctx)
{
	struct elr *e = ctx;
	pthread_mutex_lock(&e->mu);
	e->held = true;
	pthread_cond_broadcast(&e->cv);
	while (!e->release)
		pthread_cond_wait(&e->cv, &e->mu);
	pthread_mutex_unlock(&e->mu);
}

static void *elr_writer(void *arg)
{
	struct elr *e = arg;
	ruma_txn *x;
	e->rc_writer = ruma_txn_begin(e->bm, RUMA_TXN_LOCKING, &x);
	if (!e->rc_writer && (e->rc_writer = txn_op(x, e->t, 7, 2)))
		(void)ruma_txn_abort(x);
	else if (!e->rc_writer)
		e->rc_writer = ruma_txn_commit(x); /* held in elr_hold */
	return NULL;
}

static void *elr_reader(void *arg)
{
	struct elr *e = arg;
	ruma_txn *x;
	uint8_t key[4], val[256], want[256];
	size_t vlen = 0;
	key_of(e->key, key);
	e->rc_reader = ruma_txn_begin(e->bm, RUMA_TXN_RDONLY, &x);
	if (e->rc_reader)
		return NULL;
	e->rc_reader = ruma_txn_lookup(x, e->t, key, 4, val, sizeof(val), &vlen);
	for (uint32_t v = 1; v <= 3 && !e->rc_reader; v++)
		if (vlen == val_of(e->key, v, want) && !memcmp(val, want, vlen))
			e->reader_saw = v;
	int r = ruma_txn_commit(x);
	if (!e->rc_reader)
		e->rc_reader = r;
	__atomic_store_n(&e->reader_done, true, __ATOMIC_RELEASE);
	return NULL;
}

static int t_commit_releases_early(void)
{
	static uint32_t model[KEYS];
	struct elr e = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	memset(model, 0, sizeof(model));
	CHECK_OK(open_armed(&e.bm, &e.t));
	ruma_txn *x;
	CHECK_OK(ruma_txn_begin(e.bm, RUMA_TXN_LOCKING, &x));
	CHECK_OK(txn_op(x, e.t, 7, 1));
	CHECK_OK(txn_op(x, e.t, 8, 1));
	CHECK_OK(ruma_txn_commit(x));

	/* a snapshot writer begun before the first commit */
	ruma_txn *z;
	CHECK_OK(ruma_txn_begin(e.bm, RUMA_TXN_SNAPSHOT, &z));
	ruma_os_inject_hook(RUMA_SYS_FDATASYNC, 1, elr_hold, &e);
	pthread_t w, r;
	CHECK_EQ(pthread_create(&w, NULL, elr_writer, &e), 0);
	pthread_mutex_lock(&e.mu);
	while (!e.held)
		pthread_cond_wait(&e.cv, &e.mu);
	pthread_mutex_unlock(&e.mu);
	/* the first commit is logged and not durable: its row is free, but
	 * not to the snapshot writer, whose snapshot predates it (first
	 * writer wins) */
	CHECK_EQ(txn_op(z, e.t, 7, 4), RUMA_ECONFLICT);
	CHECK_OK(ruma_txn_abort(z));
	ruma_txn *y;
	CHECK_OK(ruma_txn_begin(e.bm, RUMA_TXN_LOCKING, &y));
	CHECK_OK(txn_op(y, e.t, 7, 3));
	/* a reader of a row no pending commit wrote does not wait */
	e.key = 8;
	CHECK_EQ(pthread_create(&r, NULL, elr_reader, &e), 0);
	for (unsigned ms = 0; ms < 10000 && !__atomic_load_n(&e.reader_done, __ATOMIC_ACQUIRE); ms++)
		usleep(1000);
	bool other_row_done = __atomic_load_n(&e.reader_done, __ATOMIC_ACQUIRE);
	if (!other_row_done) { /* let the writer go, so that the test ends */
		pthread_mutex_lock(&e.mu);
		e.release = true;
		pthread_cond_broadcast(&e.cv);
		pthread_mutex_unlock(&e.mu);
	}
	CHECK_EQ(pthread_join(r, NULL), 0);
	CHECK(other_row_done);
	CHECK_OK(e.rc_reader);
	CHECK_EQ(e.reader_saw, 1u);
	/* a reader of the first commit's row waits for it at its commit */
	e.key = 7;
	e.reader_done = false;
	e.reader_saw = 0;
	CHECK_EQ(pthread_create(&r, NULL, elr_reader, &e), 0);
	usleep(50 * 1000);
	pthread_mutex_lock(&e.mu);
	bool early = __atomic_load_n(&e.reader_done, __ATOMIC_ACQUIRE);
	e.release = true;
	pthread_cond_broadcast(&e.cv);
	pthread_mutex_unlock(&e.mu);
	CHECK_EQ(pthread_join(w, NULL), 0);
	CHECK_EQ(pthread_join(r, NULL), 0);
	CHECK(!early);
	CHECK_OK(e.rc_writer);
	CHECK_OK(e.rc_reader);
	CHECK_EQ(e.reader_saw, 2u);
	CHECK_OK(ruma_txn_commit(y));
	ruma_os_inject_clear();
	CHECK_OK(power_off(e.bm, e.t));

	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &e.bm, &e.t, NULL));
	model[7] = 3;
	model[8] = 1;
	CHECK_EQ(matches(e.t, model), 0);
	CHECK_OK(close_tree(e.bm, e.t));
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "misuse", t_misuse },
	{ "abort_nolog", t_abort_nolog },
	{ "abort_log", t_abort_log },
	{ "conflict", t_conflict },
	{ "async_commit_does_not_wait", t_async_commit_does_not_wait },
	{ "commit_nowait", t_commit_nowait },
	{ "commit_releases_early", t_commit_releases_early },
	{ "sigkill", t_sigkill },
	{ "powerloss_open_txn", t_powerloss_open_txn },
	{ "checkpoint_open_txn", t_checkpoint_open_txn },
	{ "undo_carried", t_undo_carried },
};

int main(int argc, char **argv)
{
	return test_main_fixture("btree", cases, TEST_N(cases), argc, argv, &wal_fixture);
}
