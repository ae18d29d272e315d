/*
 * test_bm_mt.c — multi-threaded stress of the buffer manager: threads mix
 * optimistic reads, shared reads, exclusive increments (direct and by
 * upgrading an optimistic read) of per-page counters, and allocation / free
 * of private scratch pages, with a pool much smaller than the data so that
 * eviction runs all the time.  Run for every wait strategy and eviction
 * mode (write path alternating); at the end the counters must sum to the
 * increments performed and every page must hold its own id.  And threads
 * allocating fresh pages (and extents) beside the thread that makes their
 * frames ready ahead (ahead.c): every page zeroed, then its own.
 * Page words read optimistically are accessed with relaxed atomics, as the
 * optimistic protocol requires (the data may change under the reader).
 */
#include "fixture.h"

#include <ruma/bm.h>

#include "bm/bm_ext.h"
#include "bm/bm_int.h"

#include <pthread.h>

#define NCOUNTERS 160
#define NHOT 4
#define LAST_WORD (RUMA_BM_PAGE_DATA / 8 - 1) /* the trailer after it is the bm's */
#define MAXSCRATCH 24

static char dir[64];
static char path[128];
static ruma_pid counters[NCOUNTERS];
static ruma_bm *g_bm;
static unsigned g_ops;

struct worker {
	pthread_t th;
	uint64_t seed;
	uint64_t increments;
	uint64_t bad;
	int err;
};

static inline uint64_t ld(const void *page, unsigned word)
{
	return __atomic_load_n((const uint64_t *)page + word, __ATOMIC_RELAXED);
}

static inline void st(void *page, unsigned word, uint64_t v)
{
	__atomic_store_n((uint64_t *)page + word, v, __ATOMIC_RELAXED);
}

static ruma_pid pick(ruma_rng *r)
{
	if (ruma_rng_below(r, 2) == 0)
		return counters[ruma_rng_below(r, NHOT)];
	return counters[ruma_rng_below(r, NCOUNTERS)];
}

static void *run(void *arg)
{
	struct worker *w = arg;
	ruma_rng r;
	ruma_pid scratch[MAXSCRATCH];
	unsigned nscratch = 0;
	void *p;
	uint64_t v;
	int e;

	ruma_rng_seed(&r, w->seed);
	for (unsigned op = 0; op < g_ops && !w->err; op++) {
		unsigned what = (unsigned)ruma_rng_below(&r, 100);
		ruma_pid pid = pick(&r);
		if (what < 40) { /* optimistic read */
			for (;;) {
				if ((e = ruma_bm_optimistic(g_bm, pid, &v, &p))) {
					w->err = e;
					break;
				}
				uint64_t id = ld(p, 1);
				if (ruma_bm_validate(g_bm, pid, v) == 0) {
					w->bad += id != pid;
					break;
				}
			}
		} else if (what < 50) { /* shared read */
			if ((e = ruma_bm_fix_s(g_bm, pid, &p))) {
				w->err = e;
				break;
			}
			w->bad += ld(p, 1) != pid;
			ruma_bm_unfix_s(g_bm, pid);
		} else if (what < 75) { /* exclusive increment */
			if ((e = ruma_bm_fix_x(g_bm, pid, &p))) {
				w->err = e;
				break;
			}
			st(p, 0, ld(p, 0) + 1);
			ruma_bm_unfix_x(g_bm, pid);
			w->increments++;
		} else if (what < 88) { /* optimistic read, then upgrade */
			for (;;) {
				if ((e = ruma_bm_optimistic(g_bm, pid, &v, &p))) {
					w->err = e;
					break;
				}
				if (ruma_bm_upgrade_x(g_bm, pid, v) == 0) {
					st(p, 0, ld(p, 0) + 1);
					ruma_bm_unfix_x(g_bm, pid);
					w->increments++;
					break;
				}
			}
		} else if (what < 94 && nscratch < MAXSCRATCH) { /* alloc */
			ruma_pid np;
			if ((e = ruma_bm_alloc(g_bm, &np, &p))) {
				w->err = e;
				break;
			}
			w->bad += ld(p, 0) != 0 || ld(p, LAST_WORD) != 0;
			st(p, 0, np);
			st(p, LAST_WORD, ~np);
			ruma_bm_unfix_x(g_bm, np);
			scratch[nscratch++] = np;
		} else if (nscratch > 0) { /* check and free a scratch page */
			unsigned i = (unsigned)ruma_rng_below(&r, nscratch);
			ruma_pid sp = scratch[i];
			if ((e = ruma_bm_fix_x(g_bm, sp, &p))) {
				w->err = e;
				break;
			}
			w->bad += ld(p, 0) != sp || ld(p, LAST_WORD) != ~sp;
			if ((e = ruma_bm_free(g_bm, sp))) {
				w->err = e;
				break;
			}
			scratch[i] = scratch[--nscratch];
		}
	}
	return NULL;
}

static int stress(ruma_bm_wait wait, ruma_bm_evict evict, ruma_bm_write wr, unsigned nthreads)
{
	ruma_bm_config c;
	struct worker ws[4];
	void *p;

	test_bm_config(&c, path, 8192, 48);
	c.wait = wait;
	c.evict = evict;
	c.write = wr;
	CHECK_OK(ruma_bm_open(&c, &g_bm));
	for (unsigned i = 0; i < NCOUNTERS; i++) {
		CHECK_OK(ruma_bm_alloc(g_bm, &counters[i], &p));
		st(p, 1, counters[i]);
		ruma_bm_unfix_x(g_bm, counters[i]);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		ws[t] = (struct worker){ .seed = ruma_rng_next(&test_rng) };
		CHECK(pthread_create(&ws[t].th, NULL, run, &ws[t]) == 0);
	}
	uint64_t incs = 0, bad = 0;
	int err = 0;
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(ws[t].th, NULL);
		incs += ws[t].increments;
		bad += ws[t].bad;
		err = err ? err : ws[t].err;
	}
	if (err)
		fprintf(stderr, "  worker error: %s\n", ruma_strerror(err));
	CHECK_OK(err);
	CHECK_EQ(bad, 0);
	uint64_t sum = 0;
	for (unsigned i = 0; i < NCOUNTERS; i++) {
		CHECK_OK(ruma_bm_fix_s(g_bm, counters[i], &p));
		sum += ld(p, 0);
		CHECK_EQ(ld(p, 1), counters[i]);
		ruma_bm_unfix_s(g_bm, counters[i]);
	}
	ruma_bm_stats s;
	ruma_bm_get_stats(g_bm, &s);
	CHECK_OK(ruma_bm_close(g_bm));
	CHECK_EQ(sum, incs);
	CHECK(s.evictions > 0);
	CHECK(s.pages_resident <= 48);
	printf("    %-6s %-15s %-6s: %" PRIu64 " increments, %" PRIu64 " evictions, %" PRIu64
	       " reads, %" PRIu64 " restarts\n",
	       ruma_bm_wait_name(wait), ruma_bm_evict_name(evict), ruma_bm_write_name(wr), incs,
	       s.evictions, s.reads, s.restarts);
	return TEST_PASS;
}

#define CASE(fn, w, e, wr)                      \
	static int fn(void)                     \
	{                                       \
		return stress(w, e, wr, 3);     \
	}
CASE(t_spin_madvise, RUMA_BM_WAIT_SPIN, RUMA_BM_EVICT_MADVISE, RUMA_BM_WRITE_PWRITE)
CASE(t_spin_pmadvise, RUMA_BM_WAIT_SPIN, RUMA_BM_EVICT_PROCESS_MADVISE, RUMA_BM_WRITE_URING)
CASE(t_yield_madvise, RUMA_BM_WAIT_YIELD, RUMA_BM_EVICT_MADVISE, RUMA_BM_WRITE_URING)
CASE(t_yield_pmadvise, RUMA_BM_WAIT_YIELD, RUMA_BM_EVICT_PROCESS_MADVISE, RUMA_BM_WRITE_PWRITE)
CASE(t_futex_madvise, RUMA_BM_WAIT_FUTEX, RUMA_BM_EVICT_MADVISE, RUMA_BM_WRITE_PWRITE)
CASE(t_futex_pmadvise, RUMA_BM_WAIT_FUTEX, RUMA_BM_EVICT_PROCESS_MADVISE, RUMA_BM_WRITE_URING)
CASE(t_mutex_madvise, RUMA_BM_WAIT_MUTEX, RUMA_BM_EVICT_MADVISE, RUMA_BM_WRITE_URING)
CASE(t_mutex_pmadvise, RUMA_BM_WAIT_MUTEX, RUMA_BM_EVICT_PROCESS_MADVISE, RUMA_BM_WRITE_PWRITE)

/*
 * Fresh ids beside the thread of ahead.c: threads allocate new pages (each
 * must read as zeros, then keep the id written into it) and one of them
 * also takes extents among the ids the thread makes ready.
 */
#define FRESH_PER_THREAD 1500
#define FRESH_EXT_EVERY 100

struct fresher {
	pthread_t th;
	bool extents;
	ruma_pid pids[FRESH_PER_THREAD];
	uint64_t bad;
	int err;
};

static void *fresh_run(void *arg)
{
	struct fresher *f = arg;
	for (unsigned i = 0; i < FRESH_PER_THREAD && !f->err; i++) {
		void *p;
		if ((f->err = ruma_bm_alloc(g_bm, &f->pids[i], &p)))
			break;
		f->bad += ld(p, 0) != 0 || ld(p, LAST_WORD) != 0;
		st(p, 0, f->pids[i]);
		st(p, LAST_WORD, ~f->pids[i]);
		ruma_bm_unfix_x(g_bm, f->pids[i]);
		ruma_pid e;
		if (f->extents && i % FRESH_EXT_EVERY == 0 && !(f->err = ruma_bm_extent_alloc(g_bm, 5, &e)))
			f->err = ruma_bm_extent_free(g_bm, e, 5);
	}
	return NULL;
}

static int t_fresh_ahead(void)
{
	ruma_bm_config c;
	static struct fresher fs[3];
	test_bm_config(&c, path, 16384, 8192);
	CHECK_OK(ruma_bm_open(&c, &g_bm));
	for (unsigned t = 0; t < 3; t++) {
		fs[t] = (struct fresher){ .extents = t == 0 };
		CHECK(pthread_create(&fs[t].th, NULL, fresh_run, &fs[t]) == 0);
	}
	int err = 0;
	uint64_t bad = 0;
	for (unsigned t = 0; t < 3; t++) {
		pthread_join(fs[t].th, NULL);
		err = err ? err : fs[t].err;
		bad += fs[t].bad;
	}
	CHECK_OK(err);
	CHECK_EQ(bad, 0);
	for (unsigned t = 0; t < 3; t++)
		for (unsigned i = 0; i < FRESH_PER_THREAD; i++) {
			void *p;
			ruma_pid pid = fs[t].pids[i];
			CHECK_OK(ruma_bm_fix_s(g_bm, pid, &p));
			bad += ld(p, 0) != pid || ld(p, LAST_WORD) != ~pid;
			ruma_bm_unfix_s(g_bm, pid);
		}
	CHECK_EQ(bad, 0);
	uint64_t made = atomic_load(&g_bm->ahead_made);
	printf("    %u fresh pages, %" PRIu64 " of their frames made ready ahead\n",
	       3 * FRESH_PER_THREAD, made);
	CHECK(made > 0);
	CHECK_OK(ruma_bm_close(g_bm));
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "fresh_ahead", t_fresh_ahead },
	{ "spin_madvise", t_spin_madvise },     { "spin_process_madvise", t_spin_pmadvise },
	{ "yield_madvise", t_yield_madvise },   { "yield_process_madvise", t_yield_pmadvise },
	{ "futex_madvise", t_futex_madvise },   { "futex_process_madvise", t_futex_pmadvise },
	{ "mutex_madvise", t_mutex_madvise },   { "mutex_process_madvise", t_mutex_pmadvise },
};

int main(int argc, char **argv)
{
	g_ops = test_sanitized() ? 4000 : 20000;
	strcpy(dir, "/tmp/ruma-test-bmmt-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/store", dir);
	int r = test_main("bm_mt", cases, TEST_N(cases), argc, argv);
	unlink(path);
	rmdir(dir);
	return r;
}
