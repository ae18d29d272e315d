/*
 * test_db_load_mt.c — a bulk load ending while other threads read the
 * table: a reader's snapshot sees the table empty (begun before the end:
 * or RUMA_ESNAPTOOOLD once the load is in) or whole (begun after), never
 * loaded entries in a snapshot older than the load, also one held open
 * across the end; cursors too.  Run
 * under ThreadSanitizer by ./dev.sh test-tsan.
 */
#include "test.h"

#include <ruma/db.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define DB_TEST_NAME "db_load_mt"
#include "db_util.h"

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

static const struct test_case cases[] = {
	{ "readers", t_readers },
};

int main(int argc, char **argv)
{
	return test_main("db_load_mt", cases, TEST_N(cases), argc, argv);
}
