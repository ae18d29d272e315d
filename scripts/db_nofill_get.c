/*
 * db_nofill_get.c — cold reads of large values with ruma_db_get in a
 * RUMA_DB_NOFILL transaction (docs/blob.md): the value comes from the
 * store file around the buffer pool into the transaction's scratch buffer.
 *
 * `load` puts N values of MB MiB each (keys k00000, k00001, ...) into a new
 * store and closes it; `get` opens it (the pool empty, 64 MiB) and reads
 * every value once in one read-only NOFILL transaction, checks each value's
 * length and first and last bytes, and prints the gets per second.  Run
 * `get` of two builds interleaved on a quiet machine and compare medians.
 *
 *   gcc -O2 -std=c11 -Iinclude -o /tmp/db_nofill_get scripts/db_nofill_get.c \
 *       build/libruma.a -luring -lpthread -lm
 *   /tmp/db_nofill_get load STORE MB N
 *   /tmp/db_nofill_get get STORE MB N
 */
#define _GNU_SOURCE
#include <ruma/db.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "db_nofill_get: %s: %s\n", what, ruma_strerror(rc));
	return 1;
}

static ruma_val key_of(char buf[16], int i)
{
	snprintf(buf, 16, "k%05d", i);
	return (ruma_val){ strlen(buf), buf };
}

static int load(ruma_db *db, size_t size, int n)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	unsigned char *v = malloc(size);
	int rc = v ? ruma_db_begin(db, 0, &x) : -ENOMEM;
	if (rc)
		return fail("begin", rc);
	if ((rc = ruma_db_table_open(x, "b", RUMA_DB_CREATE, &t)))
		return fail("table", rc);
	for (int i = 0; i < n; i++) {
		char k[16];
		memset(v, i + 1, size);
		ruma_val kk = key_of(k, i), vv = { size, v };
		if ((rc = ruma_db_put(x, t, &kk, &vv, 0)))
			return fail("put", rc);
	}
	free(v);
	return (rc = ruma_db_commit(x)) ? fail("commit", rc) : 0;
}

static int get(ruma_db *db, size_t size, int n)
{
	ruma_db_txn *x;
	ruma_db_table *t;
	int rc = ruma_db_begin(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, &x);
	if (rc || (rc = ruma_db_table_open(x, "b", 0, &t)))
		return fail("begin", rc);
	double start = now();
	for (int i = 0; i < n; i++) {
		char k[16];
		ruma_val kk = key_of(k, i), v;
		if ((rc = ruma_db_get(x, t, &kk, &v)))
			return fail("get", rc);
		const unsigned char *b = v.data;
		if (v.len != size || b[0] != (unsigned char)(i + 1) || b[size - 1] != b[0]) {
			fprintf(stderr, "db_nofill_get: %s: wrong value\n", k);
			return 1;
		}
	}
	double secs = now() - start;
	(void)ruma_db_commit(x);
	printf("%d gets of %zu MiB: %.1f a second\n", n, size >> 20, n / secs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "load") && strcmp(argv[1], "get"))) {
		fprintf(stderr, "usage: db_nofill_get load|get STORE MB N\n");
		return 2;
	}
	size_t size = (size_t)strtoull(argv[3], NULL, 10) << 20;
	int n = atoi(argv[4]);
	if (size == 0 || n <= 0) {
		fprintf(stderr, "db_nofill_get: MB and N must be positive\n");
		return 2;
	}
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = 64u << 20;
	ruma_db *db;
	int rc = ruma_db_open(argv[2], &o, &db);
	if (rc)
		return fail(argv[2], rc);
	int st = argv[1][0] == 'l' ? load(db, size, n) : get(db, size, n);
	rc = ruma_db_close(db);
	return st ? st : rc ? fail("close", rc) : 0;
}
