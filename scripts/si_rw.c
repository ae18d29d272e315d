/*
 * si_rw.c — a snapshot reader beside a writer, and each alone, through
 * db.h: what snapshot isolation costs the two when neither waits for the
 * other.
 *
 * The store holds N rows of 1000 bytes (keys "k" and 11 digits) in one
 * table, in memory.  The writer overwrites a uniform random row per
 * transaction (asynchronous commits); the reader reads a uniform random row
 * per read-only transaction.  Mode `r` runs the reader alone, `w` the
 * writer alone, `rw` both; each for S seconds after the load.  With
 * `nolog` the store has no log (RUMA_DB_NOLOG: no log writer and no
 * checkpoints run beside the two threads), which shows the isolation's own
 * cost on a machine with fewer cores than threads.  Prints one line: mode,
 * log, seconds, reads/s, writes/s, conflicts retried.
 *
 *   gcc -O2 -std=c11 -Iinclude -o /tmp/si_rw scripts/si_rw.c \
 *       build/libruma_m_{db,btree,bm,wal,core,os}.a -luring -lpthread -lm
 *   /tmp/si_rw r|w|rw log|nolog SECONDS [ROWS] [STORE]
 */
#define _GNU_SOURCE
#include <ruma/db.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VALUE 1000u
#define LOAD_BATCH 1000u

struct run {
	ruma_db *db;
	ruma_db_table *table;
	unsigned rows;
	atomic_bool stop;
	atomic_int failed;
};

struct worker {
	struct run *r;
	pthread_t th;
	bool writer;
	unsigned seed;
	unsigned long ops, retries;
};

static void key_of(unsigned i, char *k)
{
	snprintf(k, 16, "k%011u", i);
}

/* One transaction: a read-only get, or an overwrite. */
static int one_op(struct run *r, bool writer, unsigned i, char *v)
{
	char k[16];
	key_of(i, k);
	ruma_val kv = { 12, k }, vv = { VALUE, v }, got;
	ruma_db_txn *x;
	int rc = ruma_db_begin(r->db, writer ? RUMA_DB_ASYNC : RUMA_DB_RDONLY, &x);
	if (rc)
		return rc;
	rc = writer ? ruma_db_put(x, r->table, &kv, &vv, 0) : ruma_db_get(x, r->table, &kv, &got);
	if (!rc && !writer && (got.len != VALUE || memcmp(got.data, k, 12)))
		rc = RUMA_ECORRUPT;
	if (rc) {
		ruma_db_abort(x);
		return rc;
	}
	return ruma_db_commit(x);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	char v[VALUE];
	memset(v, 'v', sizeof(v));
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		w->seed = w->seed * 1103515245u + 12345u;
		unsigned i = (w->seed >> 4) % r->rows;
		key_of(i, v); /* every value starts with its key */
		int rc = one_op(r, w->writer, i, v);
		if (rc == RUMA_ECONFLICT) {
			w->retries++;
			continue;
		}
		if (rc) {
			fprintf(stderr, "si_rw: %s: %s\n", w->writer ? "write" : "read",
				ruma_strerror(rc));
			atomic_store(&r->failed, 1);
			break;
		}
		w->ops++;
	}
	return NULL;
}

static int load(struct run *r)
{
	char k[16], v[VALUE];
	memset(v, 'v', sizeof(v));
	int rc = 0;
	for (unsigned i = 0; i < r->rows && !rc; i += LOAD_BATCH) {
		ruma_db_txn *x;
		if ((rc = ruma_db_begin(r->db, RUMA_DB_ASYNC, &x)))
			break;
		for (unsigned j = i; j < i + LOAD_BATCH && j < r->rows && !rc; j++) {
			key_of(j, k);
			key_of(j, v);
			ruma_val kv = { 12, k }, vv = { VALUE, v };
			rc = ruma_db_put(x, r->table, &kv, &vv, 0);
		}
		rc = rc ? (ruma_db_abort(x), rc) : ruma_db_commit(x);
	}
	return rc;
}

static int setup(struct run *r, const char *path, bool nolog)
{
	char wal[4096];
	snprintf(wal, sizeof(wal), "%s.wal", path);
	unlink(path);
	unlink(wal);
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = (uint64_t)r->rows * 2 * 4096 + (64u << 20);
	if (nolog)
		o.flags |= RUMA_DB_NOLOG;
	int rc = ruma_db_open(path, &o, &r->db);
	ruma_db_txn *x;
	if (!rc)
		rc = ruma_db_begin(r->db, 0, &x);
	if (!rc) {
		rc = ruma_db_table_open(x, "t", RUMA_DB_CREATE, &r->table);
		rc = rc ? (ruma_db_abort(x), rc) : ruma_db_commit(x);
	}
	if (!rc)
		rc = load(r);
	if (rc)
		fprintf(stderr, "si_rw: %s: %s\n", path, ruma_strerror(rc));
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "r") && strcmp(argv[1], "w") && strcmp(argv[1], "rw")) ||
	    (strcmp(argv[2], "log") && strcmp(argv[2], "nolog"))) {
		fprintf(stderr, "usage: si_rw r|w|rw log|nolog SECONDS [ROWS] [STORE]\n");
		return 2;
	}
	unsigned secs = (unsigned)atoi(argv[3]);
	struct run r = { .rows = argc > 4 ? (unsigned)atoi(argv[4]) : 200000u };
	const char *path = argc > 5 ? argv[5] : "/tmp/si_rw.store";
	if (!secs || !r.rows) {
		fprintf(stderr, "si_rw: seconds and rows > 0\n");
		return 2;
	}
	if (setup(&r, path, !strcmp(argv[2], "nolog")))
		return 1;
	bool reader = strchr(argv[1], 'r'), writer = strchr(argv[1], 'w');
	struct worker w[2] = { { .r = &r, .writer = false, .seed = 7 },
			       { .r = &r, .writer = true, .seed = 11 } };
	for (int i = 0; i < 2; i++) {
		if ((i == 0 && !reader) || (i == 1 && !writer))
			continue;
		if (pthread_create(&w[i].th, NULL, work, &w[i])) {
			fprintf(stderr, "si_rw: cannot start a thread\n");
			return 1;
		}
	}
	sleep(secs);
	atomic_store(&r.stop, true);
	for (int i = 0; i < 2; i++)
		if ((i == 0 && reader) || (i == 1 && writer))
			pthread_join(w[i].th, NULL);
	int rc = ruma_db_close(r.db);
	printf("%s,%s,%u,%.0f,%.0f,%lu\n", argv[1], argv[2], secs, (double)w[0].ops / secs,
	       (double)w[1].ops / secs, w[0].retries + w[1].retries);
	char wal[4096];
	snprintf(wal, sizeof(wal), "%s.wal", path);
	unlink(path);
	unlink(wal);
	return rc || atomic_load(&r.failed) ? 1 : 0;
}
