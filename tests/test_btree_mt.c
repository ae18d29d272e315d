/*
 * test_btree_mt.c — concurrent B-tree operations on a buffer pool much
 * smaller than the data (eviction runs all the time), for every wait
 * strategy and eviction mode.
 *
 * Each thread owns a private key range (inserts, upserts, removes, lookups
 * checked exactly against its own model), all threads increment shared
 * counters through ruma_btree_update (the sums must match), and all threads
 * upsert/remove/look up an overlapping range whose values are derived from
 * their keys (every value read must match its key).  Scans run throughout
 * and must see strictly ascending/descending keys with consistent values.
 * At the end the contents must equal what the operations imply and
 * ruma_btree_check must pass.
 */
#include "fixture.h"

#include <ruma/btree.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define PS RUMA_BM_PAGE_SIZE
#define THREADS 4
#define PRIVATE 1500
#define COUNTERS 32
#define OVERLAP 400


typedef struct shared {
	ruma_bm *bm;
	ruma_btree *t;
	_Atomic int same_name_created;
	unsigned ops;
	_Atomic int failures;
	char first_failure[256];
	pthread_mutex_t mu;
} shared;

typedef struct worker {
	shared *sh;
	unsigned id;
	uint64_t seed;
	bool present[PRIVATE];
	uint16_t version[PRIVATE];
	uint64_t increments[COUNTERS];
} worker;

static void fail(shared *sh, const char *what, int rc, unsigned line)
{
	if (atomic_fetch_add(&sh->failures, 1) == 0) {
		pthread_mutex_lock(&sh->mu);
		snprintf(sh->first_failure, sizeof sh->first_failure, "line %u: %s: %d (%s)", line,
			 what, rc, ruma_strerror(rc));
		pthread_mutex_unlock(&sh->mu);
	}
}

#define EXPECT(sh, cond, what, rc)                          \
	do {                                                \
		if (!(cond)) {                              \
			fail((sh), (what), (rc), __LINE__); \
			return;                             \
		}                                           \
	} while (0)

static size_t private_key(uint8_t *k, unsigned id, unsigned n)
{
	return (size_t)snprintf((char *)k, 32, "p%u/%05u", id, n);
}

/* value of a private key: id, n, version, then filler of a length that
 * depends on the version (so values grow and shrink) */
static size_t private_val(uint8_t *v, unsigned id, unsigned n, unsigned ver)
{
	size_t len = 8 + (ver * 37u + n) % 180u;
	memset(v, (int)(id * 31 + ver), len);
	memcpy(v, &n, 4);
	uint16_t a = (uint16_t)id, b = (uint16_t)ver;
	memcpy(v + 4, &a, 2);
	memcpy(v + 6, &b, 2);
	return len;
}

static size_t overlap_key(uint8_t *k, unsigned n)
{
	return (size_t)snprintf((char *)k, 32, "o/%04u/%s", n, n % 3 ? "x" : "a-longer-suffix");
}

/* an overlapping value is the key repeated to a length chosen by the writer */
static size_t overlap_val(uint8_t *v, const uint8_t *k, size_t kl, size_t len)
{
	for (size_t i = 0; i < len; i++)
		v[i] = k[i % kl];
	return len;
}

static bool overlap_ok(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	for (size_t i = 0; i < vl; i++)
		if (v[i] != k[i % kl])
			return false;
	return true;
}

static void add_one(void *val, size_t vlen, void *ctx)
{
	uint64_t x;
	if (vlen != sizeof x)
		return;
	memcpy(&x, val, sizeof x);
	x++;
	memcpy(val, &x, sizeof x);
	(*(unsigned *)ctx)++;
}

/* A scan's key after prev (plen bytes) breaks its order: not after it
 * ascending, not before it descending. */
static bool out_of_order(const uint8_t *prev, size_t plen, const void *key, size_t klen, bool desc)
{
	size_t m = klen < plen ? klen : plen;
	int c = memcmp(prev, key, m);
	if (!c)
		c = (plen > klen) - (plen < klen);
	return desc ? c <= 0 : c >= 0;
}

typedef struct scan_state {
	uint8_t prev[RUMA_BTREE_MAX_KEY];
	size_t plen;
	bool desc, bad;
	unsigned seen, limit;
} scan_state;

static bool scan_cb(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	scan_state *s = ctx;
	const uint8_t *k = key;
	if (s->seen && out_of_order(s->prev, s->plen, k, klen, s->desc))
		s->bad = true;
	if (klen > 2 && k[0] == 'o' && k[1] == '/' && !overlap_ok(k, klen, val, vlen))
		s->bad = true;
	memcpy(s->prev, k, klen);
	s->plen = klen;
	return ++s->seen < s->limit && !s->bad;
}

static void private_op(worker *w, ruma_rng *r)
{
	shared *sh = w->sh;
	uint8_t k[32], v[256], buf[RUMA_BTREE_MAX_VALUE];
	unsigned n = (unsigned)ruma_rng_below(r, PRIVATE);
	size_t kl = private_key(k, w->id, n);
	unsigned op = (unsigned)ruma_rng_below(r, 10);
	int rc;
	if (op < 4) {
		unsigned ver = w->version[n] + 1u;
		size_t vl = private_val(v, w->id, n, ver);
		if (op < 2) {
			rc = ruma_btree_insert(sh->t, k, kl, v, vl);
			EXPECT(sh, rc == (w->present[n] ? RUMA_EEXISTS : 0), "private insert", rc);
			if (rc == 0) {
				w->present[n] = true;
				w->version[n] = (uint16_t)ver;
			}
		} else {
			bool replaced;
			rc = ruma_btree_upsert(sh->t, k, kl, v, vl, &replaced);
			EXPECT(sh, rc == 0 && replaced == w->present[n], "private upsert", rc);
			w->present[n] = true;
			w->version[n] = (uint16_t)ver;
		}
	} else if (op < 7) {
		rc = ruma_btree_remove(sh->t, k, kl);
		EXPECT(sh, rc == (w->present[n] ? 0 : RUMA_ENOTFOUND), "private remove", rc);
		w->present[n] = false;
	} else {
		size_t vl = 0;
		rc = ruma_btree_lookup(sh->t, k, kl, buf, sizeof buf, &vl);
		EXPECT(sh, rc == (w->present[n] ? 0 : RUMA_ENOTFOUND), "private lookup", rc);
		if (rc == 0) {
			size_t el = private_val(v, w->id, n, w->version[n]);
			EXPECT(sh, vl == el && memcmp(v, buf, el) == 0, "private value", 0);
		}
	}
}

static void shared_op(worker *w, ruma_rng *r)
{
	shared *sh = w->sh;
	uint8_t k[RUMA_BTREE_MAX_KEY], v[256], buf[RUMA_BTREE_MAX_VALUE];
	unsigned op = (unsigned)ruma_rng_below(r, 10);
	int rc;
	if (op < 3) {
		unsigned c = (unsigned)ruma_rng_below(r, COUNTERS), calls = 0;
		size_t kl = (size_t)snprintf((char *)k, sizeof k, "c/%02u", c);
		rc = ruma_btree_update(sh->t, k, kl, add_one, &calls);
		EXPECT(sh, rc == 0 && calls == 1, "counter update", rc);
		w->increments[c]++;
	} else if (op < 8) {
		unsigned n = (unsigned)ruma_rng_below(r, OVERLAP);
		size_t kl = overlap_key(k, n);
		if (op < 5) {
			size_t vl = overlap_val(v, k, kl, ruma_rng_below(r, 200));
			rc = ruma_btree_upsert(sh->t, k, kl, v, vl, NULL);
			EXPECT(sh, rc == 0, "overlap upsert", rc);
		} else if (op < 6) {
			rc = ruma_btree_remove(sh->t, k, kl);
			EXPECT(sh, rc == 0 || rc == RUMA_ENOTFOUND, "overlap remove", rc);
		} else {
			size_t vl = 0;
			rc = ruma_btree_lookup(sh->t, k, kl, buf, sizeof buf, &vl);
			EXPECT(sh, rc == 0 || rc == RUMA_ENOTFOUND, "overlap lookup", rc);
			EXPECT(sh, rc || overlap_ok(k, kl, buf, vl), "overlap value", 0);
		}
	} else {
		scan_state s = { .desc = op == 9, .limit = 1 + (unsigned)ruma_rng_below(r, 120) };
		const char *starts[] = { "", "c/", "o/0200", "p1/00700", "p3/", "zzz" };
		const char *st = starts[ruma_rng_below(r, TEST_N(starts))];
		rc = s.desc ? ruma_btree_scan_desc(sh->t, st, strlen(st), scan_cb, &s)
			    : ruma_btree_scan_asc(sh->t, st, strlen(st), scan_cb, &s);
		EXPECT(sh, rc == 0 && !s.bad, "scan", rc);
	}
}

/* Trees created concurrently through the catalog: one per thread, and one
 * name all threads try (exactly one may succeed). */
static void catalog_ops(worker *w)
{
	shared *sh = w->sh;
	char name[32];
	ruma_btree *t;
	snprintf(name, sizeof name, "thread-%u", w->id);
	int rc = ruma_btree_create(sh->bm, name, &t);
	EXPECT(sh, rc == 0, "create own tree", rc);
	for (unsigned i = 0; i < 300 && rc == 0; i++) {
		uint8_t k[16];
		size_t kl = (size_t)snprintf((char *)k, sizeof k, "%05u", i);
		rc = ruma_btree_insert(t, k, kl, &i, sizeof i);
	}
	ruma_btree_release(t);
	EXPECT(sh, rc == 0, "insert into own tree", rc);
	rc = ruma_btree_create(sh->bm, "same-name", &t);
	EXPECT(sh, rc == 0 || rc == RUMA_EEXISTS, "create same name", rc);
	if (rc == 0) {
		atomic_fetch_add(&sh->same_name_created, 1);
		ruma_btree_release(t);
	}
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	ruma_rng r;
	ruma_rng_seed(&r, w->seed);
	catalog_ops(w);
	for (unsigned i = 0; i < w->sh->ops && atomic_load(&w->sh->failures) == 0; i++) {
		if (ruma_rng_below(&r, 2))
			private_op(w, &r);
		else
			shared_op(w, &r);
	}
	return NULL;
}

static int verify(shared *sh, worker *ws)
{
	uint8_t k[64], v[256], buf[RUMA_BTREE_MAX_VALUE];
	for (unsigned id = 0; id < THREADS; id++) {
		worker *w = &ws[id];
		for (unsigned n = 0; n < PRIVATE; n++) {
			size_t kl = private_key(k, id, n), vl = 0;
			int rc = ruma_btree_lookup(sh->t, k, kl, buf, sizeof buf, &vl);
			CHECK_EQ(rc, w->present[n] ? 0 : RUMA_ENOTFOUND);
			if (rc == 0) {
				size_t el = private_val(v, id, n, w->version[n]);
				CHECK(vl == el && memcmp(v, buf, el) == 0);
			}
		}
	}
	for (unsigned c = 0; c < COUNTERS; c++) {
		uint64_t want = 0, got = 0;
		for (unsigned id = 0; id < THREADS; id++)
			want += ws[id].increments[c];
		size_t kl = (size_t)snprintf((char *)k, sizeof k, "c/%02u", c), vl = 0;
		CHECK_OK(ruma_btree_lookup(sh->t, k, kl, &got, sizeof got, &vl));
		CHECK_EQ(vl, sizeof got);
		CHECK_EQ(got, want);
	}
	for (unsigned n = 0; n < OVERLAP; n++) {
		size_t kl = overlap_key(k, n), vl = 0;
		int rc = ruma_btree_lookup(sh->t, k, kl, buf, sizeof buf, &vl);
		CHECK(rc == 0 || rc == RUMA_ENOTFOUND);
		CHECK(rc || overlap_ok(k, kl, buf, vl));
	}
	scan_state s = { .limit = ~0u };
	CHECK_OK(ruma_btree_scan_asc(sh->t, NULL, 0, scan_cb, &s));
	CHECK(!s.bad);
	CHECK_OK(ruma_btree_check(sh->t, stderr));
	CHECK_EQ(atomic_load(&sh->same_name_created), 1);
	for (unsigned id = 0; id < THREADS; id++) {
		char name[32];
		ruma_btree *t;
		snprintf(name, sizeof name, "thread-%u", id);
		CHECK_OK(ruma_btree_open(sh->bm, name, &t));
		ruma_btree_stats st;
		CHECK_OK(ruma_btree_get_stats(t, &st));
		CHECK_EQ(st.entries, 300);
		CHECK_OK(ruma_btree_check(t, stderr));
		ruma_btree_release(t);
	}
	return TEST_PASS;
}

/* The store of the concurrent cases at path: test_bm_config's with virt and
 * phys pages, room for the workers and two more threads, wait and evict. */
static void mt_config(ruma_bm_config *c, const char *path, uint64_t virt, uint64_t phys,
		      ruma_bm_wait wait, ruma_bm_evict evict)
{
	test_bm_config(c, path, virt, phys);
	c->max_threads = THREADS + 2;
	c->wait = wait;
	c->evict = evict;
}

static int run_config(ruma_bm_wait wait, ruma_bm_evict evict, ruma_bm_write write, unsigned ops)
{
	char dir[64], path[128];
	CHECK(!test_dir_make(dir, sizeof(dir), "btree-mt", TEST_PATH(path, "store"), NULL));
	ruma_bm_config c;
	mt_config(&c, path, 1u << 14, test_sanitized() ? 24 : 64, wait, evict);
	c.write = write;
	ruma_bm *bm;
	int rc = ruma_bm_open(&c, &bm);
	if (rc == RUMA_EUNSUPP) {
		test_dir_remove(dir);
		fprintf(stderr, "  %s/%s/%s: not supported here, skipped\n",
			ruma_bm_wait_name(wait), ruma_bm_evict_name(evict), ruma_bm_write_name(write));
		return TEST_PASS;
	}
	CHECK_OK(rc);
	static shared sh;
	memset(&sh, 0, sizeof sh);
	sh.bm = bm;
	pthread_mutex_init(&sh.mu, NULL);
	sh.ops = ops;
	CHECK_OK(ruma_btree_create(bm, "mt", &sh.t));
	for (unsigned i = 0; i < COUNTERS; i++) {
		uint8_t k[16];
		uint64_t zero = 0;
		size_t kl = (size_t)snprintf((char *)k, sizeof k, "c/%02u", i);
		CHECK_OK(ruma_btree_insert(sh.t, k, kl, &zero, sizeof zero));
	}
	static worker ws[THREADS];
	pthread_t th[THREADS];
	memset(ws, 0, sizeof ws);
	for (unsigned i = 0; i < THREADS; i++) {
		ws[i].sh = &sh;
		ws[i].id = i;
		ws[i].seed = ruma_rng_next(&test_rng);
		CHECK(pthread_create(&th[i], NULL, worker_main, &ws[i]) == 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	if (atomic_load(&sh.failures)) {
		fprintf(stderr, "  %s/%s: %s\n", ruma_bm_wait_name(wait), ruma_bm_evict_name(evict),
			sh.first_failure);
		return TEST_FAIL;
	}
	int v = verify(&sh, ws);
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(sh.t, &st));
	ruma_bm_stats bs;
	ruma_bm_get_stats(bm, &bs);
	fprintf(stderr,
		"  %s/%s/%s: %" PRIu64 " entries, height %u, splits %" PRIu64 ", merges %" PRIu64
		"/%" PRIu64 ", restarts %" PRIu64 ", evictions %" PRIu64 "\n",
		ruma_bm_wait_name(wait), ruma_bm_evict_name(evict), ruma_bm_write_name(write),
		st.entries, st.height,
		st.leaf_splits + st.inner_splits, st.leaf_merges, st.inner_merges, st.restarts,
		bs.evictions);
	CHECK(bs.evictions > 0);
	ruma_btree_release(sh.t);
	CHECK_OK(ruma_bm_close(bm));
	pthread_mutex_destroy(&sh.mu);
	test_dir_remove(dir);
	return v;
}

static int t_all_configs(void)
{
	unsigned ops = test_sanitized() ? 1500 : 12000;
	const ruma_bm_wait waits[] = { RUMA_BM_WAIT_SPIN, RUMA_BM_WAIT_YIELD, RUMA_BM_WAIT_FUTEX,
				       RUMA_BM_WAIT_MUTEX };
	const ruma_bm_evict evicts[] = { RUMA_BM_EVICT_MADVISE, RUMA_BM_EVICT_PROCESS_MADVISE };
	for (unsigned w = 0; w < TEST_N(waits); w++)
		for (unsigned e = 0; e < TEST_N(evicts); e++)
			/* the io_uring write path rides along with process_madvise */
			if (run_config(waits[w], evicts[e],
				       e ? RUMA_BM_WRITE_URING : RUMA_BM_WRITE_PWRITE,
				       ops) != TEST_PASS)
				return TEST_FAIL;
	return TEST_PASS;
}

/* ---- concurrent growth and shrinking: splits, leaf and inner merges, root collapse ---- */

typedef struct gs_worker {
	ruma_btree *t;
	unsigned id, keys;
	uint64_t seed;
	_Atomic int *failures;
	_Atomic unsigned *phase_done;
} gs_worker;

static size_t gs_key(uint8_t *k, unsigned id, unsigned i)
{
	/* a scrambled head spreads the threads' keys over the whole tree */
	uint32_t h = (i * 2654435761u) ^ (id * 0x9e3779b9u);
	return (size_t)snprintf((char *)k, 64, "%08x/%u/%06u", h, id, i);
}

static size_t gs_val(uint8_t *v, unsigned id, unsigned i)
{
	size_t len = 60 + (i * 7u + id) % 120u;
	for (size_t j = 0; j < len; j++)
		v[j] = (uint8_t)(i + id + j);
	return len;
}

/* A full scan during phase 2 must see every kept key (i % 50 == 0, present
 * for the whole scan) exactly once, in order. */
typedef struct keep_scan {
	uint8_t prev[64];
	size_t plen;
	bool desc, bad;
	unsigned kept;
} keep_scan;

static bool keep_cb(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	keep_scan *s = ctx;
	char buf[64];
	unsigned h, id, i;
	if (klen >= sizeof buf) {
		s->bad = true;
		return false;
	}
	if (s->plen && out_of_order(s->prev, s->plen, key, klen, s->desc))
		s->bad = true;
	memcpy(s->prev, key, klen);
	s->plen = klen;
	memcpy(buf, key, klen);
	buf[klen] = 0;
	if (sscanf(buf, "%8x/%u/%u", &h, &id, &i) == 3 && i % 50 == 0)
		s->kept++;
	return !s->bad;
}

/* phase 1: insert all keys; phase 2: remove all but every 50th, in random
 * order; readers' lookups of other threads' keys run throughout, and full
 * scans in phase 2 */
static void *gs_main(void *arg)
{
	gs_worker *w = arg;
	ruma_rng r;
	ruma_rng_seed(&r, w->seed);
	uint8_t k[64], v[256], buf[RUMA_BTREE_MAX_VALUE];
	unsigned *order = malloc(w->keys * sizeof *order);
	if (!order) {
		atomic_fetch_add(w->failures, 1);
		return NULL;
	}
	for (unsigned i = 0; i < w->keys; i++)
		order[i] = i;
	for (unsigned phase = 0; phase < 2 && !atomic_load(w->failures); phase++) {
		for (unsigned i = w->keys - 1; i > 0; i--) {
			unsigned j = (unsigned)ruma_rng_below(&r, i + 1), x = order[i];
			order[i] = order[j];
			order[j] = x;
		}
		for (unsigned n = 0; n < w->keys; n++) {
			unsigned i = order[n];
			size_t kl = gs_key(k, w->id, i);
			int rc = 0;
			if (phase == 0)
				rc = ruma_btree_insert(w->t, k, kl, v, gs_val(v, w->id, i));
			else if (i % 50)
				rc = ruma_btree_remove(w->t, k, kl);
			if (rc == 0 && n % 4 == 0) {
				/* a lookup of some other thread's key that must exist */
				unsigned other = (unsigned)ruma_rng_below(&r, THREADS), oi = 50 * (unsigned)ruma_rng_below(&r, w->keys / 50);
				size_t vl = 0;
				kl = gs_key(k, other, oi);
				rc = ruma_btree_lookup(w->t, k, kl, buf, sizeof buf, &vl);
				if (rc == RUMA_ENOTFOUND && phase == 0)
					rc = 0; /* not inserted yet */
				else if (rc == 0 && (vl != gs_val(v, other, oi) || memcmp(v, buf, vl)))
					rc = RUMA_ECORRUPT;
			}
			if (rc == 0 && phase == 1 && n % 500 == 250) {
				keep_scan ks = { .desc = n % 1000 == 250 };
				rc = ks.desc ? ruma_btree_scan_desc(w->t, NULL, 0, keep_cb, &ks)
					     : ruma_btree_scan_asc(w->t, NULL, 0, keep_cb, &ks);
				if (rc == 0 && (ks.bad || ks.kept != THREADS * ((w->keys + 49) / 50))) {
					fprintf(stderr, "  scan saw %u kept keys (bad order %d)\n", ks.kept, ks.bad);
					rc = RUMA_ECORRUPT;
				}
			}
			if (rc) {
				fprintf(stderr, "  thread %u phase %u: %s\n", w->id, phase, ruma_strerror(rc));
				atomic_fetch_add(w->failures, 1);
				break;
			}
		}
		/* wait for everybody to finish the phase */
		atomic_fetch_add(w->phase_done, 1);
		while (atomic_load(w->phase_done) < (phase + 1) * THREADS && !atomic_load(w->failures))
			sched_yield();
	}
	free(order);
	return NULL;
}

static int grow_shrink(ruma_bm_wait wait, ruma_bm_evict evict)
{
	char dir[64], path[128];
	CHECK(!test_dir_make(dir, sizeof(dir), "btree-mt", TEST_PATH(path, "store"), NULL));
	ruma_bm_config c;
	mt_config(&c, path, 1u << 15, 128, wait, evict);
	ruma_bm *bm;
	CHECK_OK(ruma_bm_open(&c, &bm));
	ruma_btree *t;
	CHECK_OK(ruma_btree_create(bm, "grow-shrink", &t));
	_Atomic int failures = 0;
	_Atomic unsigned phase_done = 0;
	gs_worker ws[THREADS];
	pthread_t th[THREADS];
	unsigned keys = test_sanitized() ? 1500 : 5000;
	for (unsigned i = 0; i < THREADS; i++) {
		ws[i] = (gs_worker){ t, i, keys, ruma_rng_next(&test_rng), &failures, &phase_done };
		CHECK(pthread_create(&th[i], NULL, gs_main, &ws[i]) == 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(atomic_load(&failures), 0);
	CHECK_OK(ruma_btree_check(t, stderr));
	uint8_t k[64], v[256], buf[RUMA_BTREE_MAX_VALUE];
	for (unsigned id = 0; id < THREADS; id++)
		for (unsigned i = 0; i < keys; i++) {
			size_t kl = gs_key(k, id, i), vl = 0;
			int rc = ruma_btree_lookup(t, k, kl, buf, sizeof buf, &vl);
			CHECK_EQ(rc, i % 50 ? RUMA_ENOTFOUND : 0);
			if (rc == 0)
				CHECK(vl == gs_val(v, id, i) && memcmp(v, buf, vl) == 0);
		}
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	fprintf(stderr,
		"  grow/shrink %s/%s: %" PRIu64 " entries, height %u; splits %" PRIu64 "/%" PRIu64
		", merges %" PRIu64 "/%" PRIu64 ", root splits %" PRIu64 ", collapses %" PRIu64
		", restarts %" PRIu64 "\n",
		ruma_bm_wait_name(wait), ruma_bm_evict_name(evict), st.entries, st.height,
		st.leaf_splits, st.inner_splits, st.leaf_merges, st.inner_merges, st.root_splits,
		st.root_collapses, st.restarts);
	CHECK_EQ(st.entries, THREADS * ((keys + 49) / 50));
	CHECK(st.root_splits >= 2);
	CHECK(st.leaf_merges > 0);
	CHECK(st.inner_merges > 0);
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	test_dir_remove(dir);
	return TEST_PASS;
}

static int t_grow_shrink(void)
{
	if (grow_shrink(RUMA_BM_WAIT_SPIN, RUMA_BM_EVICT_MADVISE) != TEST_PASS)
		return TEST_FAIL;
	return grow_shrink(RUMA_BM_WAIT_FUTEX, RUMA_BM_EVICT_PROCESS_MADVISE);
}

static const struct test_case cases[] = {
	{ "all_configs", t_all_configs },
	{ "grow_shrink", t_grow_shrink },
};

int main(int argc, char **argv)
{
	return test_main("btree_mt", cases, TEST_N(cases), argc, argv);
}
