/*
 * db_commit.c — group-commit throughput through db.h against the same
 * transactions made with txn.h directly.
 *
 * T threads each commit one put of a 100-byte value to a random key per
 * transaction, durably (the commit returns once the log is on the disk),
 * for S seconds, into one store with the default options.  The `db`
 * variant uses ruma_db_begin / ruma_db_put / ruma_db_commit; the `txn`
 * variant makes the same calls one layer down (ruma_txn_begin,
 * ruma_txn_upsert, ruma_txn_commit on a tree of the same store).  Prints
 * one line: variant, threads, seconds, commits, commits per second,
 * conflicts retried.  Run the two variants interleaved on a quiet machine
 * and compare the medians (docs/db.md, "Cost").
 *
 *   gcc -O2 -std=c11 -Iinclude -o /tmp/db_commit scripts/db_commit.c \
 *       build/libruma_m_{db,btree,bm,wal,core,os}.a -luring -lpthread -lm
 *   /tmp/db_commit db|txn THREADS SECONDS [STORE]
 */
#define _GNU_SOURCE
#include <ruma/db.h>
#include <ruma/txn.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEYS 100000u
#define MAX_THREADS 64

struct run {
	bool via_db;
	ruma_db *db;
	ruma_db_table *table;
	ruma_btree *tree;
	atomic_bool stop;
	atomic_int failed;
};

struct worker {
	struct run *r;
	pthread_t th;
	unsigned seed;
	unsigned long commits, retries;
};

static void key_of(unsigned i, char *k)
{
	snprintf(k, 16, "k%011u", i);
}

/* One transaction of one put; 0, RUMA_ECONFLICT (retry) or an error. */
static int put_db(struct run *r, char *k, char *v)
{
	ruma_db_txn *x;
	ruma_val kv = { 12, k }, vv = { 100, v };
	int rc = ruma_db_begin(r->db, 0, &x);
	if (rc)
		return rc;
	if ((rc = ruma_db_put(x, r->table, &kv, &vv, 0))) {
		ruma_db_abort(x);
		return rc;
	}
	return ruma_db_commit(x);
}

static int put_txn(struct run *r, const char *k, const char *v)
{
	ruma_txn *x;
	int rc = ruma_txn_begin(ruma_db_bm(r->db), 0, &x);
	if (rc)
		return rc;
	if ((rc = ruma_txn_upsert(x, r->tree, k, 12, v, 100))) {
		ruma_txn_abort(x);
		return rc;
	}
	return ruma_txn_commit(x);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	char k[16], v[100];
	memset(v, 'v', sizeof(v));
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		w->seed = w->seed * 1103515245u + 12345u;
		key_of((w->seed >> 8) % KEYS, k);
		int rc = r->via_db ? put_db(r, k, v) : put_txn(r, k, v);
		if (rc == RUMA_ECONFLICT) {
			w->retries++;
			continue;
		}
		if (rc) {
			fprintf(stderr, "db_commit: %s\n", ruma_strerror(rc));
			atomic_store(&r->failed, 1);
			break;
		}
		w->commits++;
	}
	return NULL;
}

static int setup(struct run *r, const char *path)
{
	char wal[4096];
	snprintf(wal, sizeof(wal), "%s.wal", path);
	unlink(path);
	unlink(wal);
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = 256u << 20;
	int rc = ruma_db_open(path, &o, &r->db);
	ruma_db_txn *x;
	if (!rc)
		rc = ruma_db_begin(r->db, 0, &x);
	if (!rc) {
		rc = ruma_db_table_open(x, "t", RUMA_DB_CREATE, &r->table);
		rc = rc ? rc : ruma_db_commit(x);
	}
	if (!rc && !r->via_db)
		rc = ruma_btree_open(ruma_db_bm(r->db), "t", &r->tree);
	if (rc)
		fprintf(stderr, "db_commit: %s: %s\n", path, ruma_strerror(rc));
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "db") && strcmp(argv[1], "txn"))) {
		fprintf(stderr, "usage: db_commit db|txn THREADS SECONDS [STORE]\n");
		return 2;
	}
	unsigned threads = (unsigned)atoi(argv[2]), secs = (unsigned)atoi(argv[3]);
	const char *path = argc > 4 ? argv[4] : "/tmp/db_commit.store";
	if (!threads || threads > MAX_THREADS || !secs) {
		fprintf(stderr, "db_commit: 1..%d threads, seconds > 0\n", MAX_THREADS);
		return 2;
	}
	struct run r = { .via_db = !strcmp(argv[1], "db") };
	if (setup(&r, path))
		return 1;
	struct worker w[MAX_THREADS] = { 0 };
	for (unsigned i = 0; i < threads; i++) {
		w[i].r = &r;
		w[i].seed = 7u + i;
		if (pthread_create(&w[i].th, NULL, work, &w[i])) {
			fprintf(stderr, "db_commit: cannot start a thread\n");
			return 1;
		}
	}
	sleep(secs);
	atomic_store(&r.stop, true);
	unsigned long commits = 0, retries = 0;
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		commits += w[i].commits;
		retries += w[i].retries;
	}
	if (r.tree)
		ruma_btree_release(r.tree);
	int rc = ruma_db_close(r.db);
	printf("%s,%u,%u,%lu,%.0f,%lu\n", argv[1], threads, secs, commits,
	       (double)commits / secs, retries);
	char wal[4096];
	snprintf(wal, sizeof(wal), "%s.wal", path);
	unlink(path);
	unlink(wal);
	return rc || atomic_load(&r.failed) ? 1 : 0;
}
