/*
 * test_db_mt.c — one store shared by threads (db.h's threading contract):
 * each thread opens the same table (created by whichever comes first),
 * commits transactions on its own keys and walks them with a cursor, while
 * the automatic checkpoint thread runs with small thresholds; afterwards
 * every committed entry is there and the checker passes, also after a
 * reopen.
 */
#include "test.h"

#include <ruma/db.h>

#include <pthread.h>
#include <unistd.h>

#define DB_TEST_NAME "dbmt"
#include "db_util.h"

#define THREADS 4u
#define TXNS 150u
#define PER_TXN 10u

static ruma_db *db;
static ruma_db_table *handles[THREADS];

static int one_txn(unsigned id, unsigned n)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	int rc = ruma_db_begin(db, n % 2 ? RUMA_DB_ASYNC : 0, &x);
	if (rc)
		return rc;
	rc = ruma_db_table_open(x, "shared", RUMA_DB_CREATE, &t);
	handles[id] = t;
	for (unsigned j = 0; !rc && j < PER_TXN; j++) {
		char kb[32];
		ruma_val k = { (size_t)snprintf(kb, sizeof(kb), "t%u-%06u", id, n * PER_TXN + j), kb };
		rc = ruma_db_put(x, t, &k, &k, 0);
	}
	/* walk this thread's keys written so far: all present, in order */
	ruma_db_cursor *c;
	char lo[32], up[32];
	ruma_val l = { (size_t)snprintf(lo, sizeof(lo), "t%u-", id), lo };
	ruma_val hi = { (size_t)snprintf(up, sizeof(up), "t%u.", id), up }; /* '.' follows '-' */
	unsigned seen = 0;
	if (!rc && !(rc = ruma_db_cursor_open(x, t, &c))) {
		ruma_val k;
		rc = ruma_db_cursor_set_upper(c, &hi);
		for (int r = rc ? rc : ruma_db_cursor_seek(c, &l); !r; r = ruma_db_cursor_next(c))
			seen += !ruma_db_cursor_get(c, &k, NULL);
		ruma_db_cursor_close(c);
		if (!rc && seen != (n + 1) * PER_TXN)
			rc = -EIO;
	}
	int end = rc ? ruma_db_abort(x) : ruma_db_commit(x);
	return rc ? rc : end;
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	for (unsigned n = 0; n < TXNS; n++) {
		int rc = one_txn(id, n);
		if (rc) {
			fprintf(stderr, "  thread %u txn %u: %s\n", id, n, ruma_strerror(rc));
			return (void *)1;
		}
	}
	return NULL;
}

static int t_threads(void)
{
	CHECK(!dirs());
	ruma_db_options o = db_test_opts(4u << 20);
	o.checkpoint_bytes = 256u << 10;
	o.checkpoint_ms = 50;
	CHECK_OK(ruma_db_open(path, &o, &db));
	pthread_t th[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		CHECK(!pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i));
	bool ok = true;
	for (unsigned i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(th[i], &r);
		ok = ok && !r;
	}
	CHECK(ok);
	for (unsigned i = 1; i < THREADS; i++)
		CHECK(handles[i] == handles[0]);
	/* the log grew past checkpoint_bytes: the checkpoint thread takes one at
	 * its next poll (every 100 ms), however fast the threads ran; up to 60 s
	 * on a loaded machine */
	ruma_db_stats s;
	CHECK_OK(ruma_db_stat(db, &s));
	for (int i = 0; i < 6000 && s.checkpoints == 0; i++) {
		usleep(10000);
		CHECK_OK(ruma_db_stat(db, &s));
	}
	CHECK(s.checkpoints > 0);
	CHECK_OK(db_reopen(&db, &o));
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_table_stats ts;
	CHECK_OK(db_begin_table(db, RUMA_DB_RDONLY, "shared", 0, &x, &t));
	CHECK_OK(ruma_db_table_stat(x, t, &ts));
	CHECK_EQ(ts.entries, THREADS * TXNS * PER_TXN);
	CHECK_OK(ruma_db_commit(x));
	return db_test_end(db);
}

static const struct test_case cases[] = {
	{ "threads", t_threads },
};

int main(int argc, char **argv)
{
	return test_main("db_mt", cases, TEST_N(cases), argc, argv);
}
