/*
 * test_btree_si_hist_mt.c — randomized multi-threaded histories checked
 * against a replay (run under ThreadSanitizer by the `concurrent` label):
 *
 *   history_2pl / history_si  writer threads run transactions (two-phase
 *           locking, or snapshot isolation) that each take the next
 *           number C from a counter row and then insert, update in place,
 *           upsert or remove 1..4 of NROWS rows, writing C into what they
 *           write; some abort on purpose.  Each committed transaction is
 *           logged as (C, its changes).  Reader threads run read-only
 *           transactions that read the counter, scan all rows ascending
 *           and descending and read random rows.  Afterwards the log is
 *           replayed in counter order, and every snapshot must equal the
 *           replayed state after the commit its counter names: every read
 *           returns the value of the latest version committed before the
 *           snapshot began.  Each writer also reads, after its changes,
 *           the rows it changed and WPROBES random ones, and one in eight
 *           scans all rows: each committed writer's reads must equal the
 *           replay after its own commit (its snapshot, or under two-phase
 *           locking the state its locks held, plus its own writes).
 *   history_bounded  the same (two-phase locking) with a version store of
 *           8 KiB: snapshots whose versions were dropped get
 *           RUMA_ESNAPTOOOLD (and are not checked); the others still
 *           equal the replay.
 */
#include "wal_util.h"

#include <ruma/txn.h>

#include <pthread.h>

#define NROWS 600u
#define WRITERS 2
#define READERS 2
#define PROBES 16u
#define WPROBES 4u
#define MAXOPS 4u
#define MAXLOG 200000u
#define MAXSNAP 20000u
#define LOAD (1ull << 40) /* the loaded rows' value: no C reaches it; 0 is "absent" */

enum { OP_PUT, OP_BUMP, OP_DEL };

struct op {
	uint32_t k;
	uint8_t kind;
};

struct commit {
	uint64_t c;
	uint32_t n;
	struct op ops[MAXOPS];
	/* what the writer read after its changes: rows and values (0: absent),
	 * and with scanned, the count and hash of a scan of all rows */
	uint32_t nread;
	uint32_t read_k[MAXOPS + WPROBES];
	uint64_t read_v[MAXOPS + WPROBES];
	bool scanned;
	uint64_t count, hash;
};

struct snap {
	uint64_t c, count, hash;
	uint32_t probe_k[PROBES];
	uint64_t probe_v[PROBES]; /* 0: absent */
};

static ruma_bm *bm;
static ruma_btree *tree;
static unsigned wflags;
static int stop;
static uint64_t fails, too_old;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct commit *commits;
static size_t ncommits;
static struct snap *snaps;
static size_t nsnaps;

static void row_key(uint32_t k, uint8_t out[4])
{
	key_of(k, out); /* the counter is row 0; data rows 1..NROWS */
}

static void fail(const char *what, int r)
{
	fprintf(stderr, "  %s: %s\n", what, ruma_strerror(r));
	__atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED);
}

/* ---- writers ------------------------------------------------------------------------ */

static void set_c(void *val, size_t vlen, void *ctx)
{
	if (vlen >= 8)
		memcpy(val, ctx, 8);
}

/* One change of row k to C (or its removal); 0, RUMA_ECONFLICT, RUMA_ENOTFOUND. */
static int change(ruma_txn *x, uint32_t k, uint64_t c, uint8_t kind)
{
	uint8_t key[4], v[16];
	row_key(k, key);
	memcpy(v, &c, 8);
	memcpy(v + 8, &k, 4);
	memset(v + 12, 0x5a, 4);
	if (kind == OP_DEL)
		return ruma_txn_remove(x, tree, key, 4);
	if (kind == OP_BUMP)
		return ruma_txn_update(x, tree, key, 4, set_c, &c);
	return ruma_txn_upsert(x, tree, key, 4, v, sizeof(v));
}

static int read_back(ruma_txn *x, ruma_rng *rng, struct commit *cm);

/* One transaction; 0 when committed (logged), else why not. */
static int write_one(ruma_rng *rng)
{
	ruma_txn *x;
	uint8_t key[4];
	uint64_t c = 0;
	size_t n;
	int r = ruma_txn_begin(bm, wflags, &x);
	if (r)
		return r;
	row_key(0, key);
	r = ruma_txn_lookup(x, tree, key, 4, &c, 8, &n);
	c++;
	if (!r)
		r = ruma_txn_upsert(x, tree, key, 4, &c, 8);
	struct commit cm = { .c = c };
	unsigned want = 1 + (unsigned)ruma_rng_below(rng, MAXOPS);
	for (unsigned i = 0; i < want && !r; i++) {
		struct op o = { 1 + (uint32_t)ruma_rng_below(rng, NROWS),
				(uint8_t)ruma_rng_below(rng, 3) };
		r = change(x, o.k, c, o.kind);
		if (r == RUMA_ENOTFOUND) /* bump or remove of an absent row: no change */
			r = 0;
		else if (!r)
			cm.ops[cm.n++] = o;
	}
	if (!r)
		r = read_back(x, rng, &cm);
	if (r || ruma_rng_below(rng, 10) == 0) {
		int ar = ruma_txn_abort(x);
		return r ? r : ar ? ar : RUMA_ECONFLICT;
	}
	r = ruma_txn_commit(x);
	if (r) {
		fail("commit", r);
		return r;
	}
	pthread_mutex_lock(&log_mu);
	size_t at = ncommits < MAXLOG ? ncommits++ : MAXLOG;
	if (at < MAXLOG)
		commits[at] = cm;
	pthread_mutex_unlock(&log_mu);
	return at < MAXLOG ? 0 : -ENOSPC;
}

static void *writer(void *arg)
{
	ruma_rng rng;
	ruma_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int r = write_one(&rng);
		if (r == -ENOSPC)
			break;
		if (r && r != RUMA_ECONFLICT)
			fail("writer", r);
	}
	return NULL;
}

/* ---- readers ------------------------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint32_t k, uint64_t v)
{
	h ^= (uint64_t)k * 0x9e3779b97f4a7c15ull + v;
	return h * 0xff51afd7ed558ccdull ^ (h >> 29);
}

struct scan_sum {
	uint64_t count, hash;
	uint64_t vals[NROWS + 1];
	int64_t last;
	bool desc, bad;
};

static bool sum_row(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct scan_sum *s = ctx;
	uint32_t k = key_num(key);
	uint64_t c;
	if (k == 0) /* the counter row: a descending scan is done */
		return false;
	if (klen != 4 || vlen != 16 || (s->last >= 0 && (s->desc ? k >= s->last : k <= s->last)))
		s->bad = true;
	memcpy(&c, val, 8);
	s->last = k;
	if (k <= NROWS)
		s->vals[k] = c;
	s->count++;
	s->hash += mix(0, k, c); /* order-free: ascending and descending agree */
	return true;
}

/* The reads of one snapshot (x) into sn: 0, TOO_OLD, or TEST_FAIL. */
enum { TOO_OLD = 2 };

#define READ_OK(call)                                                       \
	do {                                                                \
		int r_ = (call);                                            \
		if (r_ == RUMA_ESNAPTOOOLD)                                 \
			return TOO_OLD;                                     \
		CHECK_OK(r_);                                               \
	} while (0)

static int read_snapshot(ruma_txn *x, ruma_rng *rng, struct snap *sn)
{
	uint8_t key[4], v[16];
	size_t n;
	row_key(0, key);
	READ_OK(ruma_txn_lookup(x, tree, key, 4, &sn->c, 8, &n));
	struct scan_sum up = { .last = -1 }, down = { .last = -1, .desc = true };
	row_key(1, key);
	READ_OK(ruma_txn_scan_asc(x, tree, key, 4, sum_row, &up));
	READ_OK(ruma_txn_scan_desc(x, tree, NULL, 0, sum_row, &down));
	for (unsigned i = 0; i < PROBES; i++) {
		uint32_t k = 1 + (uint32_t)ruma_rng_below(rng, NROWS);
		row_key(k, key);
		int r = ruma_txn_lookup(x, tree, key, 4, v, sizeof(v), &n);
		if (r == RUMA_ESNAPTOOOLD)
			return TOO_OLD;
		CHECK(r == 0 || r == RUMA_ENOTFOUND);
		sn->probe_k[i] = k;
		sn->probe_v[i] = 0;
		if (!r)
			memcpy(&sn->probe_v[i], v, 8);
	}
	CHECK(!up.bad && !down.bad);
	for (uint32_t k = 1; k <= NROWS; k++)
		if (up.vals[k] != down.vals[k])
			printf("  snapshot C=%" PRIu64 " row %u: ascending %" PRIu64
			       ", descending %" PRIu64 "\n", sn->c, k, up.vals[k], down.vals[k]);
	CHECK_EQ(up.count, down.count);
	CHECK_EQ(up.hash, down.hash);
	sn->count = up.count;
	sn->hash = up.hash;
	return 0;
}

/* A writer's reads after its changes into cm: its changed rows, WPROBES
 * random ones, and one time in eight a scan of all rows.  0 or the error
 * (RUMA_ECONFLICT under two-phase locking: a row another writer holds). */
static int read_back(ruma_txn *x, ruma_rng *rng, struct commit *cm)
{
	uint8_t key[4], v[16];
	size_t n;
	for (uint32_t i = 0; i < cm->n + WPROBES; i++) {
		uint32_t k = i < cm->n ? cm->ops[i].k : 1 + (uint32_t)ruma_rng_below(rng, NROWS);
		row_key(k, key);
		int r = ruma_txn_lookup(x, tree, key, 4, v, sizeof(v), &n);
		if (r && r != RUMA_ENOTFOUND)
			return r;
		cm->read_k[i] = k;
		cm->read_v[i] = 0;
		if (!r)
			memcpy(&cm->read_v[i], v, 8);
	}
	cm->nread = cm->n + WPROBES;
	if (ruma_rng_below(rng, 8))
		return 0;
	struct scan_sum *sum = calloc(1, sizeof(*sum));
	if (!sum)
		return -ENOMEM;
	sum->last = -1;
	row_key(1, key);
	int r = ruma_txn_scan_asc(x, tree, key, 4, sum_row, sum);
	if (!r && sum->bad)
		r = RUMA_ECORRUPT;
	cm->scanned = !r;
	cm->count = sum->count;
	cm->hash = sum->hash;
	free(sum);
	return r;
}

static int read_one(ruma_rng *rng, struct snap *sn)
{
	ruma_txn *x;
	CHECK_OK(ruma_txn_begin(bm, RUMA_TXN_RDONLY, &x));
	int r = read_snapshot(x, rng, sn);
	CHECK_OK(ruma_txn_commit(x));
	return r;
}

static void *reader(void *arg)
{
	ruma_rng rng;
	ruma_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct snap sn;
		int r = read_one(&rng, &sn);
		if (r == TOO_OLD) {
			__atomic_add_fetch(&too_old, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (r) {
			fail("reader", RUMA_ECORRUPT);
			break;
		}
		pthread_mutex_lock(&log_mu);
		if (nsnaps < MAXSNAP)
			snaps[nsnaps++] = sn;
		pthread_mutex_unlock(&log_mu);
	}
	return NULL;
}

/* ---- the replay ---------------------------------------------------------------------- */

static int by_c_commit(const void *a, const void *b)
{
	const struct commit *x = a, *y = b;
	return (x->c > y->c) - (x->c < y->c);
}

static int by_c_snap(const void *a, const void *b)
{
	const struct snap *x = a, *y = b;
	return (x->c > y->c) - (x->c < y->c);
}

static void apply(uint64_t *rows, const struct commit *cm)
{
	for (uint32_t i = 0; i < cm->n; i++) {
		uint64_t *v = &rows[cm->ops[i].k];
		if (cm->ops[i].kind == OP_DEL)
			*v = 0;
		else if (cm->ops[i].kind == OP_PUT || *v)
			*v = cm->c;
	}
}

/* The count of present rows and their order-free hash, as sum_row makes them. */
static void rows_sum(const uint64_t *rows, uint64_t *count, uint64_t *hash)
{
	*count = *hash = 0;
	for (uint32_t k = 1; k <= NROWS; k++)
		if (rows[k]) {
			++*count;
			*hash += mix(0, k, rows[k]);
		}
}

/* Each committed writer's reads equal the replay after its own commit. */
static int check_writers(void)
{
	uint64_t rows[NROWS + 1] = { 0 };
	size_t scans = 0;
	for (uint32_t k = 1; k <= NROWS; k += 2)
		rows[k] = LOAD;
	for (size_t i = 0; i < ncommits; i++) {
		const struct commit *cm = &commits[i];
		apply(rows, cm);
		for (uint32_t j = 0; j < cm->nread; j++)
			if (cm->read_v[j] != rows[cm->read_k[j]]) {
				printf("  writer C=%" PRIu64 " read row %u as %" PRIu64 ", the replay "
				       "has %" PRIu64 "\n", cm->c, cm->read_k[j], cm->read_v[j],
				       rows[cm->read_k[j]]);
				return TEST_FAIL;
			}
		if (!cm->scanned)
			continue;
		uint64_t count, hash;
		rows_sum(rows, &count, &hash);
		CHECK_EQ(cm->count, count);
		CHECK_EQ(cm->hash, hash);
		scans++;
	}
	printf("  %zu writers' reads checked against the replay (%zu with a full scan)\n",
	       ncommits, scans);
	return 0;
}

/* Every snapshot equals the replayed state after commit c. */
static int check_history(void)
{
	uint64_t rows[NROWS + 1] = { 0 };
	for (uint32_t k = 1; k <= NROWS; k += 2)
		rows[k] = LOAD; /* the load: odd rows */
	qsort(commits, ncommits, sizeof(*commits), by_c_commit);
	qsort(snaps, nsnaps, sizeof(*snaps), by_c_snap);
	for (size_t i = 0; i < ncommits; i++)
		CHECK_EQ(commits[i].c, i + 1); /* every C taken once, none lost */
	CHECK_OK(check_writers());
	size_t next = 0;
	for (size_t s = 0; s < nsnaps; s++) {
		const struct snap *sn = &snaps[s];
		while (next < ncommits && commits[next].c <= sn->c)
			apply(rows, &commits[next++]);
		uint64_t count, hash;
		rows_sum(rows, &count, &hash);
		CHECK_EQ(sn->count, count);
		CHECK_EQ(sn->hash, hash);
		for (unsigned i = 0; i < PROBES; i++)
			CHECK_EQ(sn->probe_v[i], rows[sn->probe_k[i]]);
	}
	printf("  %zu commits, %zu snapshots checked against the replay, %" PRIu64
	       " too old\n", ncommits, nsnaps, too_old);
	return 0;
}

static int history(unsigned flags, uint64_t version_limit)
{
	wflags = flags;
	stop = 0;
	fails = too_old = 0;
	ruma_txn_set_version_limit(version_limit);
	ncommits = nsnaps = 0;
	commits = calloc(MAXLOG, sizeof(*commits));
	snaps = calloc(MAXSNAP, sizeof(*snaps));
	CHECK(commits && snaps);
	unlink(logpath);
	CHECK_OK(open_store(true, RUMA_BM_DURABLE_OFF, &bm));
	CHECK_OK(ruma_btree_create(bm, "h", &tree));
	uint8_t key[4], v[16] = { 0 };
	uint64_t zero = 0, load = LOAD;
	row_key(0, key);
	CHECK_OK(ruma_btree_insert(tree, key, 4, &zero, 8));
	memcpy(v, &load, 8);
	for (uint32_t k = 1; k <= NROWS; k += 2) {
		row_key(k, key);
		CHECK_OK(ruma_btree_insert(tree, key, 4, v, sizeof(v)));
	}
	CHECK_OK(run_threads(writer, WRITERS, reader, READERS, (uintptr_t)test_seed + 100, &fails,
			     &stop));
	ruma_txn_set_version_limit(0);
	CHECK_EQ(fails, 0u);
	CHECK(ncommits > 0 && nsnaps + too_old > 0);
	int rc = check_history();
	free(commits);
	free(snaps);
	ruma_btree_release(tree);
	CHECK_OK(ruma_bm_close(bm));
	return rc ? TEST_FAIL : TEST_PASS;
}

TEST_BIND(t_history_2pl, history, RUMA_TXN_LOCKING, 0)
TEST_BIND(t_history_si, history, RUMA_TXN_SNAPSHOT, 0)

/* A version store of 8 KiB: old snapshots are cut off, never wrong. */
TEST_BIND(t_history_bounded, history, RUMA_TXN_LOCKING, 8192)

static const struct test_case cases[] = {
	{ "history_2pl", t_history_2pl },
	{ "history_si", t_history_si },
	{ "history_bounded", t_history_bounded },
};

int main(int argc, char **argv)
{
	return test_main_fixture("btree", cases, TEST_N(cases), argc, argv, &wal_fixture);
}
