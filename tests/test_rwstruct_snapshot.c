/*
 * test_rwstruct_snapshot.c — the rewired copy-on-write of snapshot.h: one
 * pwrite and one mmap per run of pages made writable, no fault on the first
 * write after it, the source untouched, failures leave the snapshot reading
 * the source, copies freed in runs; and the shuffled view's default (shared,
 * as in the RUMA code base) against its private option.  The two-step
 * source (rwstruct_ext.h; open: memfd and ftruncate only; map: one mmap), the
 * flags of the one-call source, the two-step snapshot
 * (reserve: one mapping; build: one mmap per chunk), each view one mapping
 * with no table and no /proc read, populate by read faults, 2 MiB sources
 * reserving their pages at mmap, anonymous sources for the copy methods,
 * and a caller-given chunk order.
 */
#include "test.h"

#include <ruma/snapshot.h>
#include "rwstruct/rwstruct_ext.h"
#include <ruma/sysinfo.h>

#include "os/os.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096u
#define PAGES 40u

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* A 4 KiB source whose page p holds p + 1 in every word. */
static int make_src(ruma_snap_src **src)
{
	ruma_snap_src_options so = { .bytes = PAGES * PG, .flags = RUMA_SNAP_SRC_POPULATE };
	int rc = ruma_snap_src_create(&so, src);
	if (rc)
		return rc;
	uint64_t *w = ruma_snap_src_data(*src);
	for (size_t i = 0; i < PAGES * PG / 8; i++)
		w[i] = i / (PG / 8) + 1;
	return 0;
}

static bool page_reads(const void *base, size_t p, uint64_t v)
{
	const uint64_t *w = (const uint64_t *)((const uint8_t *)base + p * PG);
	for (size_t i = 0; i < PG / 8; i++)
		if (w[i] != v)
			return false;
	return true;
}

/* A REWIRED_COW snapshot; min_run as ruma_snap_options.rewire_min_pages (1: every page). */
static int rewired_min(ruma_snap_src *src, size_t min_run, ruma_snap **s)
{
	ruma_snap_options o;
	ruma_snap_options_default(&o);
	o.method = RUMA_SNAP_REWIRED_COW;
	o.rewire_min_pages = min_run;
	return ruma_snap_create(&o, src, s);
}

static int rewired(ruma_snap_src *src, ruma_snap **s)
{
	return rewired_min(src, 1, s);
}

static int t_runs(void)
{
	ruma_snap_src *src;
	ruma_snap *s;

	CHECK_OK(make_src(&src));
	CHECK_OK(rewired(src, &s));
	CHECK_OK(ruma_snap_page_writable(s, 5, NULL));
	CHECK_EQ(ruma_snap_pages_copied(s), 1);
	uint64_t pw = ruma_os_count(RUMA_SYS_PWRITE), mm = ruma_os_count(RUMA_SYS_MMAP);
	CHECK_OK(ruma_snap_make_writable(s, 0, 16)); /* runs [0, 5) and [6, 16) */
	CHECK_EQ(ruma_os_count(RUMA_SYS_PWRITE) - pw, 2);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP) - mm, 2);
	CHECK_EQ(ruma_snap_pages_copied(s), 16);
	uint8_t *d = ruma_snap_data(s);
	for (size_t p = 0; p < PAGES; p++)
		CHECK(page_reads(d, p, p + 1));
	/* the page tables are filled: writing the copies takes no fault */
	long f0 = minor_faults();
	for (size_t p = 0; p < 16; p++)
		((volatile uint64_t *)(d + p * PG))[7] = 1000 + p;
	CHECK_EQ(minor_faults() - f0, 0);
	const uint8_t *sd = ruma_snap_src_data(src);
	for (size_t p = 0; p < PAGES; p++)
		CHECK(page_reads(sd, p, p + 1));
	CHECK_EQ(ruma_snap_make_writable(s, PAGES - 1, 2), -EINVAL);
	CHECK_EQ(ruma_snap_make_writable(s, 0, 0), -EINVAL);
	/*
	 * The copies go back to the pool in runs: one hole punch per run of pool
	 * pages — pages 0-4 (pool pages q+1..q+5), 5 (q, copied first), 6-15.
	 */
	uint64_t fa = ruma_os_count(RUMA_SYS_FALLOCATE);
	ruma_snap_destroy(s);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FALLOCATE) - fa, 3);
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/* A failed copy or mapping: the snapshot reads the source there, and a retry works. */
static int t_inject(void)
{
	static const ruma_sys sys[] = { RUMA_SYS_PWRITE, RUMA_SYS_MMAP, RUMA_SYS_FTRUNCATE };
	ruma_snap_src *src;
	ruma_snap *s;

	CHECK_OK(make_src(&src));
	for (size_t k = 0; k < TEST_N(sys); k++) {
		CHECK_OK(rewired(src, &s));
		ruma_os_inject(sys[k], 1, ENOMEM, false);
		int rc = ruma_snap_write(s, 3 * PG + 8, "abc", 3);
		ruma_os_inject_clear();
		if (sys[k] != RUMA_SYS_FTRUNCATE) /* the pool may not have to grow */
			CHECK_EQ(rc, -ENOMEM);
		uint8_t *d = ruma_snap_data(s);
		if (rc) {
			CHECK_EQ(ruma_snap_pages_copied(s), 0);
			CHECK(page_reads(d, 3, 4));
		}
		CHECK_OK(ruma_snap_write(s, 3 * PG + 8, "abc", 3));
		CHECK(memcmp(d + 3 * PG + 8, "abc", 3) == 0);
		CHECK(page_reads(ruma_snap_src_data(src), 3, 4));
		ruma_snap_destroy(s);
	}
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/*
 * The default rewires runs of 16 pages or more and leaves shorter runs,
 * single pages and direct stores to the kernel's COW of the private view;
 * a rewired run copies what the view shows, so a store the kernel copied
 * before is kept.
 */
static int t_hybrid(void)
{
	ruma_snap_src *src;
	ruma_snap *s;
	void *a;

	CHECK_OK(make_src(&src));
	CHECK_OK(rewired_min(src, 0, &s));
	uint64_t *d = ruma_snap_data(s);
	uint64_t pw = ruma_os_count(RUMA_SYS_PWRITEV), mm = ruma_os_count(RUMA_SYS_MMAP);
	CHECK_OK(ruma_snap_page_writable(s, 5, &a));
	CHECK(a == (uint8_t *)d + 5 * PG);
	*(uint64_t *)a = 4242;
	d[20 * PG / 8 + 3] = 555; /* a direct store: no call, the kernel copies */
	CHECK_OK(ruma_snap_make_writable(s, 0, 4));
	CHECK_OK(ruma_snap_make_writable(s, 6, 10)); /* 10 < 16 pages: the kernel's */
	CHECK_EQ(ruma_os_count(RUMA_SYS_PWRITEV) - pw, 0);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP) - mm, 0);
	CHECK_EQ(ruma_snap_pages_copied(s), 15);
	/* 24 pages: rewired; page 20 from the view (pagemap: anonymous), the rest from the source */
	CHECK_OK(ruma_snap_make_writable(s, 16, PAGES - 16));
	CHECK_EQ(ruma_os_count(RUMA_SYS_PWRITEV) - pw, 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP) - mm, 1);
	CHECK_EQ(ruma_snap_pages_copied(s), PAGES - 1);
	CHECK_EQ(d[20 * PG / 8 + 3], 555);
	long f0 = minor_faults();
	for (size_t p = 16; p < PAGES; p++)
		d[p * PG / 8 + 7] = 1000 + p;
	CHECK_EQ(minor_faults() - f0, 0);
	for (size_t p = 0; p < PAGES; p++) {
		d[p * PG / 8 + 1] = 7 * p; /* every page writable, page 15 too */
		CHECK_EQ(d[p * PG / 8 + 2], p + 1);
	}
	CHECK_EQ(d[5 * PG / 8], 4242);
	const uint8_t *sd = ruma_snap_src_data(src);
	for (size_t p = 0; p < PAGES; p++)
		CHECK(page_reads(sd, p, p + 1));
	uint64_t fa = ruma_os_count(RUMA_SYS_FALLOCATE);
	ruma_snap_destroy(s);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FALLOCATE) - fa, 1); /* one run of pool pages */
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/*
 * A failed copy or mapping in the private view keeps a direct store made
 * before it; without /proc/self/pagemap (open or read failing) every page
 * is copied from the view, and the store is kept too.
 */
static int t_hybrid_inject(void)
{
	static const ruma_sys sys[] = { RUMA_SYS_PWRITEV, RUMA_SYS_MMAP, RUMA_SYS_OPEN,
					RUMA_SYS_PREAD };
	ruma_snap_src *src;
	ruma_snap *s;

	CHECK_OK(make_src(&src));
	for (size_t k = 0; k < TEST_N(sys); k++) {
		CHECK_OK(rewired_min(src, 4, &s));
		uint64_t *d = ruma_snap_data(s);
		d[2 * PG / 8 + 9] = 999;
		ruma_os_inject(sys[k], 1, ENOMEM, false);
		int rc = ruma_snap_make_writable(s, 0, 8);
		ruma_os_inject_clear();
		bool pagemap = sys[k] == RUMA_SYS_OPEN || sys[k] == RUMA_SYS_PREAD;
		CHECK_EQ(rc, pagemap ? 0 : -ENOMEM);
		CHECK_EQ(ruma_snap_pages_copied(s), pagemap ? 8 : 0);
		CHECK_EQ(d[2 * PG / 8 + 9], 999);
		for (size_t p = 0; p < 8; p++)
			CHECK_EQ(d[p * PG / 8 + 1], p + 1);
		if (!pagemap)
			CHECK_OK(ruma_snap_make_writable(s, 0, 8));
		CHECK_EQ(ruma_snap_pages_copied(s), 8);
		CHECK_EQ(d[2 * PG / 8 + 9], 999);
		CHECK(page_reads(ruma_snap_src_data(src), 2, 3));
		ruma_snap_destroy(s);
	}
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/*
 * A child made by fork reads its own page tables: a store it made (a kernel
 * copy in the child only) survives a rewired run there, although the parent
 * opened its /proc/self/pagemap before the fork.
 */
static int t_hybrid_fork(void)
{
	ruma_snap_src *src;
	ruma_snap *s;

	CHECK_OK(make_src(&src));
	CHECK_OK(rewired_min(src, 4, &s));
	CHECK_OK(ruma_snap_make_writable(s, 0, 8)); /* opens the parent's pagemap */
	uint64_t *d = ruma_snap_data(s);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		d[20 * PG / 8 + 3] = 555;
		int rc = ruma_snap_make_writable(s, 16, 8);
		_exit(rc == 0 && d[20 * PG / 8 + 3] == 555 ? 0 : 1);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(d[20 * PG / 8 + 3], 21);
	ruma_snap_destroy(s);
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/* SHUFFLE: a shared view by default (writes reach the source), private on request. */
static int t_shuffle_shared_default(void)
{
	ruma_snap_src *src;
	ruma_snap *s;
	ruma_snap_options o;
	size_t nchunks, cb;

	CHECK_OK(make_src(&src));
	for (int priv = 0; priv < 2; priv++) {
		ruma_snap_options_default(&o);
		CHECK(!o.private_view);
		o.method = RUMA_SNAP_SHUFFLE;
		o.pages_per_chunk = 4;
		o.private_view = priv;
		o.seed = ruma_rng_next(&test_rng);
		CHECK_OK(ruma_snap_create(&o, src, &s));
		const uint64_t *order = ruma_snap_chunk_order(s, &nchunks, &cb);
		CHECK_EQ(cb, 4 * PG);
		uint64_t *d = ruma_snap_data(s);
		size_t sp = order[2] * 4 + 1; /* the source page behind snapshot page 9 */
		CHECK(page_reads(d, 9, sp + 1));
		d[9 * PG / 8] = 777;
		uint64_t *sd = ruma_snap_src_data(src);
		CHECK_EQ(sd[sp * PG / 8], priv ? sp + 1 : 777);
		ruma_snap_destroy(s);
		sd[sp * PG / 8] = sp + 1;
	}
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}


/* Source: open makes the memfd and sizes it, map is one mmap; neither backs a page. */
static int t_source_two_steps(void)
{
	ruma_snap_src *src;
	ruma_snap *s;

	ruma_os_count_reset();
	ruma_snap_src_options so = { .bytes = PAGES * PG - 100 };
	CHECK_OK(ruma_snap_src_open(&so, &src));
	CHECK(ruma_snap_src_data(src) == NULL);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MEMFD_CREATE), 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FTRUNCATE), 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 0);
	CHECK_EQ(ruma_snap_reserve(NULL, src, &s), -EINVAL); /* not mapped yet */
	ruma_snap_src *bad = NULL;
	ruma_snap_src_options bad_o = { .bytes = PG, .flags = 0x80u };
	CHECK_EQ(ruma_snap_src_create(&bad_o, &bad), -EINVAL); /* no such flag */
	CHECK(bad == NULL);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 0);
	CHECK_OK(ruma_snap_src_map(src));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FALLOCATE) + ruma_os_count(RUMA_SYS_OPEN), 0);
	CHECK_EQ(ruma_snap_src_map(src), -EINVAL);
	uint64_t *w = ruma_snap_src_data(src);
	CHECK(w != NULL && w[0] == 0);
	w[PAGES * PG / 8 - 1] = 5; /* whole pages */
	ruma_snap_src_destroy(src);
	so.bytes = 0;
	CHECK_EQ(ruma_snap_src_open(&so, &src), -EINVAL);
	CHECK_EQ(ruma_snap_src_create(&so, &src), -EINVAL);
	bad_o.flags = RUMA_SNAP_SRC_ANON | RUMA_SNAP_SRC_POPULATE; /* populate maps a file */
	CHECK_EQ(ruma_snap_src_create(&bad_o, &bad), -EINVAL);
	bad_o.flags = RUMA_SNAP_SRC_ANON; /* the two steps are of a memfd source */
	CHECK_EQ(ruma_snap_src_open(&bad_o, &bad), -EINVAL);
	CHECK_EQ(ruma_snap_src_create(NULL, &bad), -EINVAL);
	return TEST_PASS;
}

/* COW: the whole snapshot is one mmap (no area, no table, no /proc read); writes stay private. */
static int t_cow_one_mapping(void)
{
	ruma_snap_src *src;
	ruma_snap *s;
	ruma_snap_options o;

	CHECK_OK(make_src(&src));
	for (int pop = 0; pop < 2; pop++) {
		ruma_snap_options_default(&o);
		o.populate = pop;
		ruma_os_count_reset();
		CHECK_OK(ruma_snap_create(&o, src, &s));
		CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 1);
		CHECK_EQ(ruma_os_count(RUMA_SYS_MADVISE), pop ? 1 : 0);
		CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN) + ruma_os_count(RUMA_SYS_READ), 0);
		uint8_t *d = ruma_snap_data(s);
		long f0 = minor_faults();
		for (size_t p = 0; p < PAGES; p++)
			CHECK(page_reads(d, p, p + 1));
		if (pop) /* populated by read faults: reading takes none */
			CHECK_EQ(minor_faults() - f0, 0);
		((uint64_t *)d)[3] = 99;
		CHECK(page_reads(ruma_snap_src_data(src), 0, 1));
		size_t nchunks, cb;
		const uint64_t *order = ruma_snap_chunk_order(s, &nchunks, &cb);
		CHECK(order != NULL);
		CHECK_EQ(nchunks, PAGES);
		CHECK_EQ(cb, PG);
		CHECK_EQ(order[PAGES - 1], PAGES - 1);
		ruma_snap_destroy(s);
	}
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/* SHUFFLE in two steps: reserve is one mapping, build one mmap per chunk (+ one populate). */
static int t_shuffle_reserve_build(void)
{
	ruma_snap_src *src;
	ruma_snap *s;
	ruma_snap_options o;
	uint64_t order[10];

	CHECK_OK(make_src(&src));
	for (size_t k = 0; k < 10; k++)
		order[k] = 9 - k;
	ruma_snap_options_default(&o);
	o.method = RUMA_SNAP_SHUFFLE;
	o.pages_per_chunk = 4;
	o.populate = true;
	o.order = order;
	ruma_os_count_reset();
	CHECK_OK(ruma_snap_reserve(&o, src, &s));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN), 0);
	CHECK_OK(ruma_snap_build(s));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 11);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MADVISE), 1);
	CHECK_OK(ruma_snap_build(s)); /* a second call does nothing */
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 11);
	size_t nchunks, cb;
	CHECK(ruma_snap_chunk_order(s, &nchunks, &cb) == order); /* borrowed */
	uint8_t *d = ruma_snap_data(s);
	long f0 = minor_faults();
	for (size_t p = 0; p < PAGES; p++)
		CHECK(page_reads(d, p, (9 - p / 4) * 4 + p % 4 + 1));
	CHECK_EQ(minor_faults() - f0, 0);
	ruma_snap_destroy(s);
	/* an order that is not a permutation of the chunks is refused */
	order[0] = 10;
	CHECK_EQ(ruma_snap_create(&o, src, &s), -EINVAL);
	CHECK(s == NULL);
	/* ... by the build: the reservation takes it without reading it */
	CHECK_OK(ruma_snap_reserve(&o, src, &s));
	CHECK_EQ(ruma_snap_build(s), -EINVAL);
	ruma_snap_destroy(s);
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/* Anonymous sources: the copy methods only; a given order is copied chunk by chunk. */
static int t_anon_source(void)
{
	ruma_snap_src *src;
	ruma_snap *s;
	ruma_snap_options o;
	uint64_t order[PAGES];

	ruma_snap_src_options so = { .bytes = PAGES * PG, .flags = RUMA_SNAP_SRC_ANON };
	CHECK_OK(ruma_snap_src_create(&so, &src));
	uint64_t *w = ruma_snap_src_data(src);
	for (size_t i = 0; i < PAGES * PG / 8; i++)
		w[i] = i / (PG / 8) + 1;
	CHECK_EQ(ruma_snap_src_map(src), -EINVAL);
	ruma_snap_options_default(&o); /* COW needs a file */
	CHECK_EQ(ruma_snap_create(&o, src, &s), -EINVAL);
	o.method = RUMA_SNAP_SHUFFLE;
	CHECK_EQ(ruma_snap_create(&o, src, &s), -EINVAL);
	for (size_t k = 0; k < PAGES; k++)
		order[k] = (k * 7) % PAGES;
	o.method = RUMA_SNAP_MEMCPY_SHUFFLE;
	o.order = order;
	o.init_dst = true;
	CHECK_OK(ruma_snap_reserve(&o, src, &s));
	uint8_t *d = ruma_snap_data(s);
	CHECK(page_reads(d, 1, 0)); /* reserved, not copied yet */
	CHECK_OK(ruma_snap_build(s));
	for (size_t p = 0; p < PAGES; p++)
		CHECK(page_reads(d, p, order[p] + 1));
	ruma_snap_destroy(s);
	o.method = RUMA_SNAP_MEMCPY;
	CHECK_OK(ruma_snap_create(&o, src, &s));
	CHECK(page_reads(ruma_snap_data(s), 7, 8));
	ruma_snap_destroy(s);
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/*
 * 2 MiB source: no page is backed before the mapping (no fallocate), and a
 * source larger than the huge-page pool fails at its mmap, which reserves the
 * pages, with RUMA_ENOHUGE — not at a later fault.
 */
static int t_huge_source_reserves(void)
{
	ruma_hugepage_pool pool;
	ruma_snap_src *src;

	if (ruma_sysinfo_huge_pool(2048, &pool) != 0)
		return TEST_SKIP;
	ruma_os_count_reset();
	ruma_snap_src_options so = {
		.bytes = (size_t)(pool.all.total + 16) * (2u << 20),
		.flags = RUMA_SNAP_SRC_HUGE,
	};
	int rc = ruma_snap_src_open(&so, &src);
	if (rc == RUMA_EUNSUPP)
		return TEST_SKIP;
	CHECK_OK(rc);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FALLOCATE), 0);
	rc = ruma_snap_src_map(src);
	ruma_snap_src_destroy(src);
	if (rc == 0) /* surplus huge pages (nr_overcommit_hugepages) covered it */
		return TEST_SKIP;
	CHECK_EQ(rc, RUMA_ENOHUGE);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FALLOCATE), 0);
	return TEST_PASS;
}

/*
 * Every mmap and madvise of a creation checked: the nth one failing makes
 * ruma_snap_create return its error with nothing made (*out NULL), for each
 * method, and a failed source mapping leaves an opened source to map again.
 */
static int t_create_inject(void)
{
	static const ruma_snap_method methods[] = { RUMA_SNAP_MEMCPY, RUMA_SNAP_COW,
						    RUMA_SNAP_SHUFFLE, RUMA_SNAP_MEMCPY_SHUFFLE,
						    RUMA_SNAP_REWIRED_COW };
	static const ruma_sys sys[] = { RUMA_SYS_MMAP, RUMA_SYS_MADVISE };
	ruma_snap_src *src;
	ruma_snap *s;
	ruma_snap_options o;

	CHECK_OK(make_src(&src));
	for (size_t m = 0; m < TEST_N(methods); m++)
		for (size_t k = 0; k < TEST_N(sys); k++)
			for (uint64_t nth = 1; nth <= 3; nth++) {
				ruma_snap_options_default(&o);
				o.method = methods[m];
				o.pages_per_chunk = 8;
				o.populate = true;
				uint64_t before = ruma_os_injected(sys[k]);
				ruma_os_inject(sys[k], nth, ENOMEM, false);
				int rc = ruma_snap_create(&o, src, &s);
				bool fired = ruma_os_injected(sys[k]) > before;
				ruma_os_inject_clear();
				if (fired) {
					CHECK(rc != 0);
					CHECK(s == NULL);
				} else {
					CHECK_OK(rc);
				}
				if (!rc) {
					size_t nc, cb;
					const uint64_t *ord = ruma_snap_chunk_order(s, &nc, &cb);
					size_t ppc = cb / PG, sp = ord[3 / ppc] * ppc + 3 % ppc;
					CHECK(page_reads(ruma_snap_data(s), 3, sp + 1));
					ruma_snap_destroy(s);
				}
			}
	ruma_snap_src_destroy(src);
	ruma_snap_src_options so = { .bytes = PAGES * PG, .flags = RUMA_SNAP_SRC_POPULATE };
	CHECK_OK(ruma_snap_src_open(&so, &src));
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, false);
	CHECK_EQ(ruma_snap_src_map(src), -ENOMEM);
	ruma_os_inject_clear();
	CHECK(ruma_snap_src_data(src) == NULL);
	CHECK_OK(ruma_snap_src_map(src));
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "runs", t_runs },
	{ "inject", t_inject },
	{ "hybrid", t_hybrid },
	{ "hybrid_inject", t_hybrid_inject },
	{ "hybrid_fork", t_hybrid_fork },
	{ "shuffle_shared_default", t_shuffle_shared_default },
	{ "source_two_steps", t_source_two_steps },
	{ "cow_one_mapping", t_cow_one_mapping },
	{ "shuffle_reserve_build", t_shuffle_reserve_build },
	{ "anon_source", t_anon_source },
	{ "huge_source_reserves", t_huge_source_reserves },
	{ "create_inject", t_create_inject },
};

int main(int argc, char **argv)
{
	return test_main("rwstruct_snapshot", cases, TEST_N(cases), argc, argv);
}
