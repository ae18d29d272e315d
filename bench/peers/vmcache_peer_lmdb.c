/*
 * vmcache_peer_lmdb.c — LMDB peer of `ruma vmcache` random reads: the same
 * keys (8-byte big-endian 0..n-1) and 120-byte payloads (the same
 * derivation as bench/vmcache/rndread.c), loaded in one write transaction
 * per 100k keys (MDB_APPEND, ascending), then uniform random lookups for
 * RUNFOR seconds on THREADS threads, each verified.  Output: the same CSV
 * as `ruma vmcache` with system "lmdb"; rmb/wmb come from /proc/self/io
 * (read_bytes/write_bytes: storage I/O of the process, page cache hits are
 * not counted).  LMDB runs through the page cache and is not limited to a
 * buffer-pool size.
 *
 * Not part of the ruma binary (it needs -llmdb); the CMake option RUMA_PEERS
 * builds it as <build>/vmcache_peer_lmdb, or by hand:
 *     cc -O2 -std=c11 -D_GNU_SOURCE bench/peers/vmcache_peer_lmdb.c -o peer_lmdb -llmdb -lpthread
 * Run:
 *     ./peer_lmdb DIR DATASIZE RUNFOR THREADS [MAPGB]     (DIR is created/emptied)
 * or as a peer of a sweep, which passes exactly DIR DATASIZE RUNFOR THREADS:
 *     ruma sweep vmcache --peer lmdb=build/vmcache_peer_lmdb --var impl=ruma,lmdb ...
 * Exit: 0 ok, 1 failure (wrong lookups, LMDB error), 2 bad arguments.
 */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD 120

static MDB_env *env;
static MDB_dbi dbi;
static uint64_t n_keys;
static _Atomic bool stop;
static _Atomic uint64_t failures;

struct slot {
	_Atomic uint64_t tx;
	char pad[56];
} __attribute__((aligned(64)));
static struct slot *slots;

static void encode_key(uint64_t k, unsigned char out[8])
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (unsigned char)k;
		k >>= 8;
	}
}

static void make_payload(uint64_t k, unsigned char out[PAYLOAD])
{
	uint64_t x = k * 0x9E3779B97F4A7C15ull + 0x1234567ull;
	for (unsigned i = 0; i < PAYLOAD / 8; i++) {
		uint64_t z = (x += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		z ^= z >> 31;
		memcpy(out + i * 8, &z, 8);
	}
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "lmdb peer: %s: %s\n", what, mdb_strerror(rc));
		exit(1);
	}
	return 0;
}

static void *reader(void *arg)
{
	unsigned tid = (unsigned)(uintptr_t)arg;
	uint64_t seed = 0x1234 + tid * 7919, done = 0;
	unsigned char kb[8], want[PAYLOAD];
	MDB_txn *txn;

	check(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), "txn_begin");
	mdb_txn_reset(txn);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t k = rng_next(&seed) % n_keys;
		MDB_val key = { 8, kb }, val;
		encode_key(k, kb);
		check(mdb_txn_renew(txn), "txn_renew");
		int rc = mdb_get(txn, dbi, &key, &val);
		make_payload(k, want);
		if (rc || val.mv_size != PAYLOAD || memcmp(val.mv_data, want, PAYLOAD))
			atomic_fetch_add(&failures, 1);
		mdb_txn_reset(txn);
		atomic_store_explicit(&slots[tid].tx, ++done, memory_order_relaxed);
	}
	mdb_txn_abort(txn);
	return NULL;
}

static void proc_io(uint64_t *rb, uint64_t *wb)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	*rb = *wb = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "read_bytes: %" SCNu64, rb);
		sscanf(line, "write_bytes: %" SCNu64, wb);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s DIR DATASIZE RUNFOR THREADS [MAPGB]\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	n_keys = (uint64_t)strtod(argv[2], NULL);
	unsigned runfor = (unsigned)atoi(argv[3]);
	unsigned threads = (unsigned)atoi(argv[4]);
	double mapgb = argc > 5 ? strtod(argv[5], NULL) : 16;
	if (!n_keys || !runfor || !threads || threads > 128 || mapgb <= 0) {
		fprintf(stderr, "lmdb peer: bad arguments\n");
		return 2;
	}
	char p[4096];
	mkdir(dir, 0755);
	snprintf(p, sizeof(p), "%s/data.mdb", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lock.mdb", dir);
	unlink(p);

	check(mdb_env_create(&env), "env_create");
	check(mdb_env_set_mapsize(env, (size_t)(mapgb * 1073741824.0)), "set_mapsize");
	check(mdb_env_set_maxreaders(env, 256), "set_maxreaders");
	check(mdb_env_open(env, dir, MDB_NOSYNC | MDB_NORDAHEAD, 0644), "env_open");
	fprintf(stderr, "lmdb peer dir:%s datasize:%" PRIu64 " threads:%u runfor:%u\n", dir, n_keys,
		threads, runfor);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	MDB_txn *txn;
	unsigned char kb[8], vb[PAYLOAD];
	for (uint64_t k = 0; k < n_keys;) {
		check(mdb_txn_begin(env, NULL, 0, &txn), "txn_begin");
		if (k == 0)
			check(mdb_dbi_open(txn, NULL, 0, &dbi), "dbi_open");
		for (uint64_t end = k + 100000 < n_keys ? k + 100000 : n_keys; k < end; k++) {
			MDB_val key = { 8, kb }, val = { PAYLOAD, vb };
			encode_key(k, kb);
			make_payload(k, vb);
			check(mdb_put(txn, dbi, &key, &val, MDB_APPEND), "put");
		}
		check(mdb_txn_commit(txn), "commit");
	}
	check(mdb_env_sync(env, 1), "sync");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	MDB_stat st;
	mdb_env_stat(env, &st);
	uint64_t pages = st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
	fprintf(stderr, "load: %.2f s; space: %.3f GB (%" PRIu64 " pages of %u bytes)\n",
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
		(double)pages * st.ms_psize / 1073741824.0, pages, st.ms_psize);

	slots = aligned_alloc(64, sizeof(*slots) * threads);
	memset(slots, 0, sizeof(*slots) * threads);
	pthread_t th[128];
	printf("ts,tx,rmb,wmb,system,threads,datasize,workload,batch\n");
	fflush(stdout);
	uint64_t prb, pwb, rb, wb, prev = 0;
	proc_io(&prb, &pwb);
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (unsigned i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)i);
	for (unsigned s = 0; s < runfor; s++) {
		next.tv_sec += 1;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		uint64_t tx = 0;
		for (unsigned i = 0; i < threads; i++)
			tx += atomic_load_explicit(&slots[i].tx, memory_order_relaxed);
		proc_io(&rb, &wb);
		printf("%u,%" PRIu64 ",%.3f,%.3f,lmdb,%u,%" PRIu64 ",rndread,0\n", s, tx - prev,
		       (double)(rb - prb) / 1048576.0, (double)(wb - pwb) / 1048576.0, threads, n_keys);
		fflush(stdout);
		prev = tx;
		prb = rb;
		pwb = wb;
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	mdb_env_close(env);
	uint64_t f = atomic_load(&failures);
	fprintf(stderr, "run: %" PRIu64 " failures\n", f);
	return f ? 1 : 0;
}
