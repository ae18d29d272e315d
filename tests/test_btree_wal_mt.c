/*
 * test_btree_wal_mt.c — several threads change one tree of a SYNC store
 * while another thread takes checkpoints (ruma_bm_flush) in a loop; then the
 * power fails.  Each operation is durable when it returns (the count of
 * fdatasync calls is printed, not asserted: the checkpointer's syncs make it
 * depend on scheduling; test_wal_mt asserts group commit's count).  After
 * recovery every acknowledged operation is there (each thread's one
 * operation in flight at the power loss is whole or absent) and the tree
 * checker is clean.
 */
#include "wal_util.h"

#include "os/os.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 3
#define OPS 300
#define KEYS_PER 400u

static ruma_btree *tree;
static ruma_bm *store;
static uint32_t model[THREADS][KEYS_PER];
static _Atomic bool stop;
static _Atomic int failures;

struct worker {
	unsigned id;
	uint64_t seed;
};

static void *writer(void *arg)
{
	struct worker *w = arg;
	ruma_rng rng;
	ruma_rng_seed(&rng, w->seed);
	for (uint32_t i = 1; i <= OPS; i++) {
		uint32_t slot = (uint32_t)ruma_rng_below(&rng, KEYS_PER);
		uint32_t k = w->id * KEYS_PER + slot;
		uint8_t key[4], val[256];
		key_of(k, key);
		if (ruma_btree_upsert(tree, key, 4, val, val_of(k, i, val), NULL)) {
			atomic_fetch_add(&failures, 1);
			break;
		}
		model[w->id][slot] = i; /* acknowledged: durable */
	}
	return NULL;
}

static void *checkpointer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		if (ruma_bm_flush(store))
			atomic_fetch_add(&failures, 1);
	return NULL;
}

static int t_concurrent_powerloss(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	CHECK_OK(open_store(true, RUMA_BM_DURABLE_SYNC, &bm));
	CHECK_OK(ruma_btree_create(bm, "t", &t));
	CHECK_OK(close_tree(bm, t));

	CHECK_OK(ruma_os_powerloss_arm());
	CHECK_OK(open_store(false, RUMA_BM_DURABLE_SYNC, &store));
	CHECK_OK(ruma_btree_open(store, "t", &tree));
	uint64_t syncs0 = ruma_os_count(RUMA_SYS_FDATASYNC);
	pthread_t th[THREADS], ck;
	struct worker w[THREADS];
	CHECK(pthread_create(&ck, NULL, checkpointer, NULL) == 0);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ i, test_seed + i };
		CHECK(pthread_create(&th[i], NULL, writer, &w[i]) == 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop, true);
	pthread_join(ck, NULL);
	uint64_t syncs = ruma_os_count(RUMA_SYS_FDATASYNC) - syncs0;
	CHECK_EQ(atomic_load(&failures), 0);
	printf("  %u operations, %llu fdatasync calls (log and checkpoints)\n", THREADS * OPS,
	       (unsigned long long)syncs);
	CHECK_OK(power_off(store, tree));

	ruma_bm_recovery rec;
	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, &rec));
	CHECK(rec.ran);
	CHECK_OK(ruma_btree_check(t, stdout));
	for (unsigned i = 0; i < THREADS; i++)
		for (uint32_t slot = 0; slot < KEYS_PER; slot++) {
			uint32_t k = i * KEYS_PER + slot, ver = model[i][slot];
			uint8_t key[4], want[256], got[256];
			size_t vlen = 0;
			key_of(k, key);
			int r = ruma_btree_lookup(t, key, 4, got, sizeof(got), &vlen);
			if (ver == 0)
				CHECK_EQ(r, RUMA_ENOTFOUND);
			else
				CHECK(r == 0 && vlen == val_of(k, ver, want) && !memcmp(got, want, vlen));
		}
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "concurrent_powerloss", t_concurrent_powerloss },
};

int main(int argc, char **argv)
{
	return test_main_fixture("btree", cases, TEST_N(cases), argc, argv, &wal_fixture);
}
