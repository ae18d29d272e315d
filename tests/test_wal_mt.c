/*
 * test_wal_mt.c — group commit: several threads append records and each
 * waits until its own record is durable; every record is found after
 * reopening, and the number of fdatasync calls (os counters) is below the
 * number of commits because one sync covers all commits that arrived while
 * the previous one was in flight.
 *
 * That last part must not depend on scheduling (one thread could otherwise
 * run all its commits before the others start, each with a sync of its
 * own): an os-layer hook holds the first fdatasync back until every thread
 * has appended its first record.  Each flush round syncs at least one new
 * record, and the round after the held one starts with those records all
 * appended, so one round carries two or more of them: fewer syncs than
 * commits, whatever the interleaving.
 *
 * Appending takes no lock (slots and one fetch_add, src/wal/wal.c):
 * `lockfree_ring` has threads append records of many sizes into a ring of
 * a few largest records, so that the ring wraps and fills all the time,
 * while they request flushes without waiting and one of them waits; after
 * reopening, every record is there once, whole, in each thread's order.
 */
#include "fixture.h"

#include <ruma/wal.h>

#include "os/os.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <unistd.h>

#define THREADS 4
#define COMMITS 200

static ruma_wal *wal;
static _Atomic int failures;
static _Atomic unsigned appended; /* threads past their first append */

/* Run at the first fdatasync: wait until every thread has a record in. */
static void hold_first_sync(void *ctx)
{
	(void)ctx;
	while (atomic_load(&appended) < THREADS)
		sched_yield();
}

static void *committer(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < COMMITS; i++) {
		uint32_t v[2] = { id, i };
		uint64_t end;
		int rc = ruma_wal_append(wal, 1, v, sizeof(v), NULL, &end);
		if (i == 0)
			atomic_fetch_add(&appended, 1); /* also on failure: never hold forever */
		if (rc || ruma_wal_flush(wal, end) || ruma_wal_durable(wal) < end)
			atomic_fetch_add(&failures, 1);
	}
	return NULL;
}

static int t_group_commit(void)
{
	ruma_wal_config c = { .path = test_store_path };
	CHECK_OK(ruma_wal_open(&c, &wal));
	uint64_t syncs0 = ruma_os_count(RUMA_SYS_FDATASYNC);
	ruma_os_inject_hook(RUMA_SYS_FDATASYNC, 1, hold_first_sync, NULL);
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, committer, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	uint64_t syncs = ruma_os_count(RUMA_SYS_FDATASYNC) - syncs0;
	ruma_os_inject_clear();
	CHECK_EQ(atomic_load(&failures), 0);
	ruma_wal_stats st;
	ruma_wal_get_stats(wal, &st);
	printf("  %u commits, %llu fdatasync calls, %llu flush rounds\n", THREADS * COMMITS,
	       (unsigned long long)syncs, (unsigned long long)st.flushes);
	CHECK(syncs < (uint64_t)THREADS * COMMITS);
	CHECK_OK(ruma_wal_close(wal));

	CHECK_OK(ruma_wal_open(&c, &wal));
	ruma_wal_iter *it;
	ruma_wal_record rec;
	uint32_t next[THREADS] = { 0 };
	CHECK_OK(ruma_wal_iter_open(wal, &it));
	unsigned n = 0;
	while (ruma_wal_iter_next(it, &rec) == 1) {
		uint32_t v[2];
		CHECK_EQ(rec.len, (uint32_t)sizeof(v));
		memcpy(v, rec.payload, sizeof(v));
		CHECK(v[0] < THREADS);
		CHECK_EQ(v[1], next[v[0]]); /* each thread's records in its order */
		next[v[0]]++;
		n++;
	}
	ruma_wal_iter_close(it);
	CHECK_EQ(n, (unsigned)(THREADS * COMMITS));
	CHECK_OK(ruma_wal_close(wal));
	return TEST_PASS;
}

/* Asynchronous commit: the background flusher makes records durable
 * without anyone asking. */
static int t_background_flusher(void)
{
	unlink(test_store_path);
	ruma_wal_config c = { .path = test_store_path, .flush_ms = 2 };
	CHECK_OK(ruma_wal_open(&c, &wal));
	uint64_t end;
	uint32_t v = 7;
	CHECK_OK(ruma_wal_append(wal, 1, &v, sizeof(v), NULL, &end));
	/* up to 60 s: a loaded machine may not schedule the flusher for a while */
	for (int i = 0; i < 60000 && ruma_wal_durable(wal) < end; i++)
		usleep(1000);
	CHECK(ruma_wal_durable(wal) >= end);
	CHECK_OK(ruma_wal_close(wal));
	return TEST_PASS;
}

#define RING_THREADS 4
#define RING_RECORDS 2000

/* Record i of thread id: a header {id, i, len} and len bytes of a pattern. */
static size_t ring_record(uint32_t id, uint32_t i, unsigned char *buf)
{
	uint32_t x = id * 7919u + i * 104729u;
	uint32_t len = x % 64 == 0 ? x % (RUMA_WAL_MAX_PAYLOAD / 4) : x % 2048;
	uint32_t h[3] = { id, i, len };
	memcpy(buf, h, sizeof(h));
	for (uint32_t k = 0; k < len; k++)
		buf[sizeof(h) + k] = (unsigned char)(id * 31u + i + k);
	return sizeof(h) + len;
}

static void *ring_appender(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	unsigned char *buf = malloc(RUMA_WAL_MAX_PAYLOAD);
	if (!buf) {
		atomic_fetch_add(&failures, 1);
		return NULL;
	}
	for (uint32_t i = 0; i < RING_RECORDS; i++) {
		uint64_t end;
		size_t n = ring_record(id, i, buf);
		int rc = ruma_wal_append(wal, 2, buf, n, NULL, &end);
		if (!rc)
			rc = id == 0 && i % 64 == 0 ? ruma_wal_flush(wal, end) : ruma_wal_request(wal, end);
		if (rc)
			atomic_fetch_add(&failures, 1);
	}
	free(buf);
	return NULL;
}

static int check_ring_record(const ruma_wal_record *rec, uint32_t *next, unsigned char *want)
{
	uint32_t h[3];
	CHECK(rec->len >= sizeof(h));
	memcpy(h, rec->payload, sizeof(h));
	CHECK(h[0] < RING_THREADS);
	CHECK_EQ(h[1], next[h[0]]); /* each thread's records once, in its order */
	size_t n = ring_record(h[0], h[1], want);
	CHECK_EQ((size_t)rec->len, n);
	CHECK(memcmp(rec->payload, want, n) == 0);
	next[h[0]]++;
	return TEST_PASS;
}

static int t_lockfree_ring(void)
{
	unlink(test_store_path);
	atomic_store(&failures, 0);
	/* the smallest ring the log allows: about two largest records */
	ruma_wal_config c = { .path = test_store_path, .buffer_bytes = 1 };
	CHECK_OK(ruma_wal_open(&c, &wal));
	pthread_t th[RING_THREADS];
	for (uintptr_t i = 0; i < RING_THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, ring_appender, (void *)i) == 0);
	for (int i = 0; i < RING_THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(atomic_load(&failures), 0);
	ruma_wal_stats st;
	ruma_wal_get_stats(wal, &st);
	CHECK_EQ(st.records, (uint64_t)RING_THREADS * RING_RECORDS);
	CHECK_OK(ruma_wal_close(wal));

	CHECK_OK(ruma_wal_open(&c, &wal));
	unsigned char *want = malloc(RUMA_WAL_MAX_PAYLOAD);
	CHECK(want != NULL);
	ruma_wal_iter *it;
	ruma_wal_record rec;
	uint32_t next[RING_THREADS] = { 0 };
	CHECK_OK(ruma_wal_iter_open(wal, &it));
	int r = TEST_PASS;
	while (r == TEST_PASS && ruma_wal_iter_next(it, &rec) == 1)
		r = check_ring_record(&rec, next, want);
	ruma_wal_iter_close(it);
	free(want);
	CHECK_EQ(r, TEST_PASS);
	for (int i = 0; i < RING_THREADS; i++)
		CHECK_EQ(next[i], (uint32_t)RING_RECORDS);
	CHECK_OK(ruma_wal_close(wal));
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "group_commit", t_group_commit },
	{ "background_flusher", t_background_flusher },
	{ "lockfree_ring", t_lockfree_ring },
};

int main(int argc, char **argv)
{
	return test_main_fixture("wal", cases, TEST_N(cases), argc, argv, &test_store_fixture);
}
