/*
 * test_db_load_mt.c — a bulk load ending while other threads read the
 * table: a reader's snapshot sees the table empty (begun before the end:
 * or RUMA_ESNAPTOOOLD once the load is in) or whole (begun after), never
 * loaded entries in a snapshot older than the load, also one held open
 * across the end; cursors too.  A hot backup taken during a load holds
 * the table empty or whole.  Run
 * under ThreadSanitizer by ./dev.sh test-tsan.
 */
#include "test.h"

#include <ruma/db.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define DB_TEST_NAME "db_load_mt"
#include "db_util.h"
#include "os/os.h"

#define ENTRIES 20000u
#define READERS 2

static atomic_bool ending; /* ruma_db_load_end called */
static atomic_bool loaded; /* ruma_db_load_end returned */
static atomic_bool stop;

struct reader {
	ruma_db *db;
	unsigned seen_empty, seen_whole, refused;
	int fail; /* a line number */
};

static void key_of(uint32_t i, char *b)
{
	snprintf(b, 16, "k%09u", i);
}

/* One snapshot's look at table t: a get and a cursor's first entry; with
 * hold, only once the load ended (or the run stops). */
static int look(struct reader *r, uint32_t i, bool hold)
{
	bool before = !atomic_load(&ending); /* begun before the end began */
	bool after = atomic_load(&loaded);   /* begun after it returned */
	ruma_db_txn *x;
	ruma_db_table *t;
	if (db_begin_table(r->db, RUMA_DB_RDONLY, "t", 0, &x, &t))
		return __LINE__;
	while (hold && !atomic_load(&loaded) && !atomic_load(&stop))
		sched_yield();
	char kb[16];
	key_of(i, kb);
	ruma_val k = sv(kb), v;
	int rc = ruma_db_get(x, t, &k, &v);
	ruma_db_cursor *c;
	int crc = ruma_db_cursor_open(x, t, &c);
	if (!crc) {
		crc = ruma_db_cursor_first(c);
		ruma_db_cursor_close(c);
	}
	(void)ruma_db_commit(x);
	if (rc == 0 && (v.len != strlen(kb) || memcmp(v.data, kb, v.len)))
		return __LINE__;
	if (rc == 0 && crc == 0)
		r->seen_whole++;
	else if (rc == RUMA_ENOTFOUND && crc == RUMA_ENOTFOUND)
		r->seen_empty++;
	else if (rc == RUMA_ESNAPTOOOLD || crc == RUMA_ESNAPTOOOLD)
		r->refused++;
	else if (!(rc == 0 && crc == RUMA_ESNAPTOOOLD)) /* installed between the two */
		return __LINE__;
	if (after && rc != 0)
		return __LINE__; /* begun after the end: the table is whole */
	if (before && (rc == 0 || crc == 0))
		return __LINE__; /* an older snapshot: never an entry */
	return 0;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t s = (uint64_t)(uintptr_t)r * 2654435761u;
	while (!atomic_load(&stop) && !r->fail) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		r->fail = look(r, (uint32_t)(s >> 33) % ENTRIES, (s >> 20) % 64 == 0);
	}
	return NULL;
}

static int t_readers(void)
{
	CHECK(!dirs());
	ruma_db_options o = db_test_opts(16u << 20);
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	ruma_db_loader *ld;
	CHECK_OK(ruma_db_load_begin(db, "t", &ld));
	atomic_store(&ending, false);
	atomic_store(&loaded, false);
	atomic_store(&stop, false);
	struct reader rs[READERS] = { { 0 } };
	pthread_t th[READERS];
	for (int i = 0; i < READERS; i++) {
		rs[i].db = db;
		CHECK(!pthread_create(&th[i], NULL, reader_main, &rs[i]));
	}
	for (uint32_t i = 0; i < ENTRIES; i++) {
		char kb[16];
		key_of(i, kb);
		ruma_val k = sv(kb);
		CHECK_OK(ruma_db_load_put(ld, &k, &k));
	}
	atomic_store(&ending, true);
	CHECK_OK(ruma_db_load_end(ld, NULL));
	atomic_store(&loaded, true);
	usleep(100000);
	atomic_store(&stop, true);
	unsigned empty = 0, whole = 0, refused = 0;
	for (int i = 0; i < READERS; i++) {
		pthread_join(th[i], NULL);
		if (rs[i].fail)
			printf("  reader %d: unexpected result at line %d\n", i, rs[i].fail);
		CHECK_EQ(rs[i].fail, 0);
		empty += rs[i].seen_empty;
		whole += rs[i].seen_whole;
		refused += rs[i].refused;
	}
	printf("  snapshots: %u saw it empty, %u whole, %u were refused\n", empty, whole, refused);
	CHECK(empty > 0 && whole > 0);
	return db_test_end(db);
}

/* ---- a hot backup during a load ---------------------------------------------------- */

struct copier {
	ruma_db *db;
	char dest[220];
	int rc;
};

static void *copier_main(void *arg)
{
	struct copier *c = arg;
	c->rc = ruma_db_copy(c->db, c->dest, 0);
	return NULL;
}

/* Entries of the copy's table t: 0 or `whole`; the copy passes its check. */
static int copy_holds(const char *dest, uint64_t whole)
{
	ruma_db_options o = db_test_opts(16u << 20);
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_open(dest, &o, &db));
	CHECK_OK(ruma_db_check(db));
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "t", 0, &x, &t));
	ruma_db_table_stats st;
	CHECK_OK(ruma_db_table_stat(x, t, &st));
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(db));
	CHECK(st.entries == 0 || st.entries == whole);
	return TEST_PASS;
}

/* ruma_db_copy started at different points of a load with BLOBs: every
 * copy opens cleanly, passes its check, and holds the table empty or
 * whole, never pages the copied log names but the copied file lacks. */
static int t_copy(void)
{
	static uint8_t big[6000];
	CHECK(!dirs());
	ruma_db_options o = db_test_opts(16u << 20);
	for (unsigned round = 0; round < 8; round++) {
		ruma_db *db;
		unlink(path);
		unlink(logpath);
		CHECK_OK(ruma_db_open(path, &o, &db));
		ruma_db_loader *ld;
		CHECK_OK(ruma_db_load_begin(db, "t", &ld));
		struct copier c = { .db = db };
		snprintf(c.dest, sizeof(c.dest), "%s/copy%u", dir, round);
		pthread_t th;
		uint32_t start_at = round * ENTRIES / 7 + (round == 7);
		for (uint32_t i = 0; i < ENTRIES; i++) {
			if (i == start_at)
				CHECK(!pthread_create(&th, NULL, copier_main, &c));
			char kb[16];
			key_of(i, kb);
			ruma_val k = sv(kb), v = i % 500 == 7 ? (ruma_val){ sizeof(big), big } : k;
			CHECK_OK(ruma_db_load_put(ld, &k, &v));
		}
		if (start_at >= ENTRIES)
			CHECK(!pthread_create(&th, NULL, copier_main, &c));
		CHECK_OK(ruma_db_load_end(ld, NULL));
		pthread_join(th, NULL);
		CHECK_OK(c.rc);
		CHECK_OK(ruma_db_close(db));
		CHECK_EQ(copy_holds(c.dest, ENTRIES), TEST_PASS);
		char wal[240];
		snprintf(wal, sizeof(wal), "%s.wal", c.dest);
		unlink(c.dest);
		unlink(wal);
	}
	dirs_remove();
	return TEST_PASS;
}

/* The copy held between its file and its log (a hook on its ftruncate of
 * the copied file); meanwhile a load ends in another thread.  Its end must
 * wait for the copy: a copied log naming the load's root change over a
 * copied file without the load's pages is a damaged copy. */
static atomic_bool copy_paused, copy_go, end_done;

static void hold_copy(void *ctx)
{
	(void)ctx;
	atomic_store(&copy_paused, true);
	for (int i = 0; i < 300 && !atomic_load(&copy_go); i++)
		usleep(1000);
}

struct ender {
	ruma_db_loader *ld;
	int rc;
};

static void *ender_main(void *arg)
{
	struct ender *e = arg;
	e->rc = ruma_db_load_end(e->ld, NULL);
	atomic_store(&end_done, true);
	return NULL;
}

static int t_copy_waits(void)
{
	CHECK(!dirs());
	ruma_db_options o = db_test_opts(16u << 20);
	ruma_db *db;
	CHECK_OK(ruma_db_open(path, &o, &db));
	struct ender e = { .rc = 1 };
	CHECK_OK(ruma_db_load_begin(db, "t", &e.ld));
	for (uint32_t i = 0; i < ENTRIES; i++) {
		char kb[16];
		key_of(i, kb);
		ruma_val k = sv(kb);
		CHECK_OK(ruma_db_load_put(e.ld, &k, &k));
	}
	atomic_store(&copy_paused, false);
	atomic_store(&copy_go, false);
	atomic_store(&end_done, false);
	struct copier c = { .db = db };
	snprintf(c.dest, sizeof(c.dest), "%s/copy", dir);
	ruma_os_inject_hook(RUMA_SYS_FTRUNCATE, 1, hold_copy, NULL);
	pthread_t cth, eth;
	CHECK(!pthread_create(&cth, NULL, copier_main, &c));
	while (!atomic_load(&copy_paused))
		usleep(1000);
	CHECK(!pthread_create(&eth, NULL, ender_main, &e));
	usleep(200000); /* time enough for an end that does not wait */
	bool ended_during_copy = atomic_load(&end_done);
	atomic_store(&copy_go, true);
	pthread_join(cth, NULL);
	pthread_join(eth, NULL);
	ruma_os_inject_clear();
	CHECK(!ended_during_copy);
	CHECK_OK(c.rc);
	CHECK_OK(e.rc);
	CHECK_EQ(copy_holds(c.dest, ENTRIES), TEST_PASS);
	char wal[240];
	snprintf(wal, sizeof(wal), "%s.wal", c.dest);
	unlink(c.dest);
	unlink(wal);
	return db_test_end(db);
}

static const struct test_case cases[] = {
	{ "readers", t_readers },
	{ "copy", t_copy },
	{ "copy_waits", t_copy_waits },
};

int main(int argc, char **argv)
{
	return test_main("db_load_mt", cases, TEST_N(cases), argc, argv);
}
