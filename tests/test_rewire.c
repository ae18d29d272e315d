/*
 * test_rewire.c — the rewiring core with 4 KiB pages: the physical page pool
 * (allocation model, reuse, hole punching, ENOHUGE) and virtual areas
 * (aliasing, one mmap per run, populate, mremap moves, private views,
 * injected failures, the mapping budget and the kernel's own limit).
 * Every area test ends with ruma_area_check: the translation table must
 * match /proc/self/maps.
 */
#include <ruma/area.h>
#include <ruma/anon.h>
#include <ruma/sysinfo.h>

#include "os/os.h"
#include "test.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define PS RUMA_PAGE_4K


static uint64_t marker(uint64_t ppage)
{
	return 0x5eed000000000000ull ^ (ppage * 0x9e3779b97f4a7c15ull);
}

/* Write marker(p) at the start of physical pages [0, n) through the file. */
static int write_markers(ruma_phys *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t m = marker(i);
		int rc = ruma_os_pwrite_full(ruma_phys_fd(p), &m, sizeof(m),
					     (off_t)ruma_phys_offset(p, i));
		if (rc)
			return rc;
	}
	return 0;
}

static uint64_t read_word(ruma_area *a, uint64_t v)
{
	return *(volatile uint64_t *)ruma_area_addr(a, v);
}

/* Every mapped page of the area shows the marker of its physical page. */
static int check_contents(ruma_area *a)
{
	for (uint64_t v = 0; v < ruma_area_pages(a); v++) {
		uint64_t pp;
		CHECK_OK(ruma_area_translate(a, v, NULL, &pp, NULL));
		if (pp != RUMA_AREA_NONE && read_word(a, v) != marker(pp)) {
			fprintf(stderr, "  vpage %" PRIu64 " -> ppage %" PRIu64 ": wrong data\n", v, pp);
			return TEST_FAIL;
		}
	}
	return TEST_PASS;
}

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* A pool with n allocated pages 0..n-1 carrying markers. */
static int pool_with_pages(ruma_phys **p, uint64_t n)
{
	uint64_t first;
	int rc = ruma_phys_create(&(ruma_phys_options){ .page_size = PS }, p);
	if (!rc)
		rc = ruma_phys_alloc(*p, n, &first);
	if (!rc && first != 0)
		rc = -EINVAL;
	if (!rc)
		rc = write_markers(*p, n);
	return rc;
}

/* ---- phys ------------------------------------------------------------------- */

static int t_phys_basic(void)
{
	ruma_phys *p;
	ruma_phys_stats st;
	uint64_t a, b;

	CHECK_EQ(ruma_phys_create(&(ruma_phys_options){ .page_size = 12345 }, &p), -EINVAL);
	CHECK_EQ(ruma_phys_create(&(ruma_phys_options){ .flags = 1u << 7 }, &p), -EINVAL);
	CHECK_OK(ruma_phys_create(NULL, &p)); /* the defaults: 4 KiB pages */
	CHECK_EQ(ruma_phys_page_size(p), RUMA_PAGE_4K);
	CHECK(!ruma_phys_is_huge(p));
	ruma_phys_destroy(p);
	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = PS }, &p));
	CHECK(ruma_phys_fd(p) >= 0);
	CHECK_EQ(ruma_phys_page_size(p), PS);
	CHECK(!ruma_phys_is_huge(p));
	CHECK_EQ(ruma_phys_alloc(p, 0, &a), -EINVAL);
	CHECK_OK(ruma_phys_alloc(p, 10, &a));
	CHECK_OK(ruma_phys_alloc(p, 5, &b));
	CHECK_EQ(a, 0);
	CHECK_EQ(b, 10);
	CHECK(ruma_phys_file_pages(p) >= 15);
	CHECK_OK(ruma_phys_get_stats(p, &st));
	CHECK_EQ(st.pages_in_use, 15);
	CHECK_EQ(st.high_water, 15);
	CHECK_EQ(st.file_size, ruma_phys_file_pages(p) * PS);
	CHECK_EQ(ruma_phys_free(p, 3, 4), 0);
	CHECK_EQ(ruma_phys_free(p, 3, 1), -EINVAL);  /* double free */
	CHECK_EQ(ruma_phys_free(p, 14, 2), -EINVAL); /* beyond what was handed out */
	CHECK_OK(ruma_phys_alloc(p, 2, &a));         /* reuse, lowest first */
	CHECK_EQ(a, 3);
	CHECK_OK(ruma_phys_alloc(p, 3, &a)); /* 5,6 left free: too small, from the end */
	CHECK_EQ(a, 15);
	CHECK_OK(ruma_phys_get_stats(p, &st));
	CHECK_EQ(st.pages_in_use, 15 - 4 + 2 + 3);
	CHECK_EQ(st.free_extents, 1);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_phys_max_pages(void)
{
	ruma_phys *p;
	ruma_phys_options o = { .page_size = PS, .max_pages = 8 };
	uint64_t a;

	CHECK_OK(ruma_phys_create(&o, &p));
	CHECK_OK(ruma_phys_alloc(p, 6, &a));
	CHECK_EQ(ruma_phys_alloc(p, 3, &a), -ENOSPC);
	CHECK_OK(ruma_phys_alloc(p, 2, &a));
	CHECK_EQ(ruma_phys_file_pages(p), 8);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* Model: one bool per page; random alloc / alloc_runs / free, compared op by op. */
struct model {
	bool used[4096];
	uint64_t in_use;
};

static int model_take(struct model *m, uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++) {
		CHECK(i < 4096);
		CHECK(!m->used[i]);
		m->used[i] = true;
	}
	m->in_use += n;
	return TEST_PASS;
}

/* Find an allocated run in the model to free: start at a random used page. */
static bool model_pick(struct model *m, uint64_t hw, uint64_t *first, uint64_t *n)
{
	if (m->in_use == 0)
		return false;
	uint64_t s = ruma_rng_below(&test_rng, hw);
	while (!m->used[s])
		s = (s + 1) % hw;
	uint64_t k = 1, want = 1 + ruma_rng_below(&test_rng, 8);
	while (k < want && s + k < hw && m->used[s + k])
		k++;
	*first = s;
	*n = k;
	return true;
}

static int model_check(ruma_phys *p, struct model *m, uint64_t hw)
{
	ruma_phys_stats st;
	CHECK_OK(ruma_phys_get_stats(p, &st));
	CHECK_EQ(st.pages_in_use, m->in_use);
	for (uint64_t i = 0; i < hw + 4 && i < 4096; i++)
		CHECK_EQ(ruma_phys_is_allocated(p, i), m->used[i]);
	return TEST_PASS;
}

static int t_phys_model(void)
{
	static struct model m;
	ruma_phys *p;
	ruma_phys_options o = { .page_size = PS, .flags = RUMA_PHYS_NO_PUNCH };
	uint64_t hw = 1;

	memset(&m, 0, sizeof(m));
	CHECK_OK(ruma_phys_create(&o, &p));
	for (int op = 0; op < 3000; op++) {
		uint64_t r = ruma_rng_below(&test_rng, 10), first, n = 1 + ruma_rng_below(&test_rng, 12);
		if (r < 4 && m.in_use < 3000) {
			CHECK_OK(ruma_phys_alloc(p, n, &first));
			CHECK_EQ(model_take(&m, first, n), TEST_PASS);
			hw = RUMA_MAX(hw, first + n);
		} else if (r < 6 && m.in_use < 3000) {
			ruma_phys_run runs[3];
			size_t nr;
			CHECK_OK(ruma_phys_alloc_runs(p, n, runs, 3, &nr));
			uint64_t sum = 0;
			for (size_t i = 0; i < nr; i++) {
				CHECK(i == 0 || runs[i].first > runs[i - 1].first);
				CHECK_EQ(model_take(&m, runs[i].first, runs[i].n), TEST_PASS);
				sum += runs[i].n;
				hw = RUMA_MAX(hw, runs[i].first + runs[i].n);
			}
			CHECK_EQ(sum, n);
		} else if (model_pick(&m, hw, &first, &n)) {
			CHECK_OK(ruma_phys_free(p, first, n));
			for (uint64_t i = first; i < first + n; i++)
				m.used[i] = false;
			m.in_use -= n;
			CHECK_EQ(ruma_phys_free(p, first, 1), -EINVAL);
		}
		if (op % 100 == 0)
			CHECK_EQ(model_check(p, &m, hw), TEST_PASS);
	}
	CHECK_EQ(model_check(p, &m, hw), TEST_PASS);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_phys_alloc_runs(void)
{
	ruma_phys *p;
	ruma_phys_run runs[4];
	size_t nr;
	uint64_t a;

	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = PS }, &p));
	CHECK_OK(ruma_phys_alloc(p, 20, &a));
	CHECK_OK(ruma_phys_free(p, 2, 2));   /* free: 2-3, 6-8, 12 */
	CHECK_OK(ruma_phys_free(p, 6, 3));
	CHECK_OK(ruma_phys_free(p, 12, 1));
	CHECK_OK(ruma_phys_alloc_runs(p, 3, runs, 4, &nr)); /* 6-8 fits: one run */
	CHECK_EQ(nr, 1);
	CHECK_EQ(runs[0].first, 6);
	CHECK_OK(ruma_phys_alloc_runs(p, 5, runs, 2, &nr)); /* 2-3, then 3 from the end */
	CHECK_EQ(nr, 2);
	CHECK_EQ(runs[0].first, 2);
	CHECK_EQ(runs[0].n, 2);
	CHECK_EQ(runs[1].first, 20);
	CHECK_EQ(runs[1].n, 3);
	CHECK_EQ(ruma_phys_alloc_runs(p, 1, runs, 0, &nr), -EINVAL);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_phys_punch(void)
{
	ruma_phys *p;
	ruma_phys_stats st0, st1;
	uint64_t first;
	struct stat fs0, fs1;

	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = PS,
							 .flags = RUMA_PHYS_PREPOPULATE },
				  &p));
	CHECK_OK(ruma_phys_alloc(p, 256, &first));
	CHECK_OK(write_markers(p, 256));
	CHECK_OK(ruma_phys_get_stats(p, &st0));
	CHECK(fstat(ruma_phys_fd(p), &fs0) == 0);
	CHECK(st0.bytes_resident >= 256 * PS);
	uint64_t falloc = ruma_os_count(RUMA_SYS_FALLOCATE);
	CHECK_OK(ruma_phys_free(p, 0, 200));
	CHECK_EQ(ruma_os_count(RUMA_SYS_FALLOCATE) - falloc, 1);
	CHECK_OK(ruma_phys_get_stats(p, &st1));
	CHECK(fstat(ruma_phys_fd(p), &fs1) == 0);
	CHECK_EQ(st1.punches, 1);
	CHECK(fs1.st_blocks < fs0.st_blocks);
	CHECK(st0.bytes_resident - st1.bytes_resident >= 200 * PS);
	/* reused pages come back zeroed */
	CHECK_OK(ruma_phys_alloc(p, 1, &first));
	CHECK_EQ(first, 0);
	uint64_t w = 1;
	CHECK_OK(ruma_os_pread_full(ruma_phys_fd(p), &w, sizeof(w), 0));
	CHECK_EQ(w, 0);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_phys_enohuge(void)
{
	ruma_phys *p = NULL;

	CHECK(strstr(ruma_strerror(RUMA_ENOHUGE), "nr_hugepages") != NULL);
	/* the creation probe's reserving mmap finds no huge page */
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, false);
	int rc = ruma_phys_create(&(ruma_phys_options){ .page_size = RUMA_PAGE_2M }, &p);
	ruma_os_inject_clear();
	if (rc == RUMA_EUNSUPP)
		SKIP("kernel without hugetlb memfd");
	CHECK_EQ(rc, RUMA_ENOHUGE);
	CHECK(p == NULL);
	/* an allocation with prepopulate that meets ENOMEM: nothing stays allocated */
	rc = ruma_phys_create(&(ruma_phys_options){ .page_size = RUMA_PAGE_2M,
						    .flags = RUMA_PHYS_PREPOPULATE },
			      &p);
	if (rc == RUMA_ENOHUGE)
		return TEST_PASS; /* no free huge page on this machine: the real thing */
	CHECK_OK(rc);
	uint64_t first;
	ruma_os_inject(RUMA_SYS_FALLOCATE, 1, ENOMEM, false);
	rc = ruma_phys_alloc(p, 1, &first);
	ruma_os_inject_clear();
	CHECK_EQ(rc, RUMA_ENOHUGE);
	CHECK(!ruma_phys_is_allocated(p, 0));
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* ---- areas ---------------------------------------------------------------------- */

static int t_area_basic(void)
{
	ruma_area *a;
	ruma_phys *p;
	uint64_t pp;
	unsigned fl;
	ruma_phys *who;

	CHECK_EQ(ruma_area_create(8192, 4, &a), -EINVAL);
	CHECK_EQ(ruma_area_create(PS, 0, &a), -EINVAL);
	CHECK_OK(ruma_area_create(PS, 64, &a));
	CHECK(((uintptr_t)ruma_area_base(a) & (PS - 1)) == 0);
	CHECK_EQ(ruma_area_pages(a), 64);
	CHECK_EQ(ruma_area_page_size(a), PS);
	CHECK_EQ(ruma_area_map_estimate(a), 1);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_OK(pool_with_pages(&p, 16));
	CHECK_EQ(ruma_area_map_run(a, 60, p, 0, 8, 0, NULL), -EINVAL);  /* beyond the area */
	CHECK_EQ(ruma_area_map_run(a, 0, p, 10, 100, 0, NULL), -EINVAL); /* beyond the file */
	CHECK_OK(ruma_area_map_run(a, 4, p, 0, 16, 0, NULL));
	CHECK_EQ(ruma_area_map_estimate(a), 3);
	CHECK_OK(ruma_area_translate(a, 5, &who, &pp, &fl));
	CHECK(who == p);
	CHECK_EQ(pp, 1);
	CHECK_EQ(fl, 0);
	CHECK_OK(ruma_area_translate(a, 3, &who, &pp, NULL));
	CHECK_EQ(pp, RUMA_AREA_NONE);
	CHECK(who == NULL);
	CHECK_EQ(ruma_area_translate(a, 64, NULL, &pp, NULL), -EINVAL);
	CHECK_EQ(check_contents(a), TEST_PASS);
	CHECK_OK(ruma_area_unmap(a, 8, 4));
	CHECK_OK(ruma_area_translate(a, 9, NULL, &pp, NULL));
	CHECK_EQ(pp, RUMA_AREA_NONE);
	CHECK_EQ(ruma_area_map_estimate(a), 5);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	uint64_t km;
	CHECK_OK(ruma_area_kernel_maps(a, &km));
	CHECK_EQ(km, ruma_area_map_estimate(a));
	CHECK_OK(ruma_area_unmap(a, 0, 64));
	CHECK_EQ(ruma_area_map_estimate(a), 1);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static void keep_line(void *ctx, const char *line)
{
	snprintf(ctx, 160, "%s", line);
}

/* A mapping changed behind the area's back: the check finds it and says
 * which page through the caller's callback; without one it is silent. */
static int t_area_check_reports(void)
{
	ruma_area *a;
	ruma_phys *p;
	char said[160] = "";
	void *q;

	CHECK_OK(ruma_area_create(PS, 16, &a));
	CHECK_OK(pool_with_pages(&p, 8));
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, 8, 0, NULL));
	CHECK_OK(ruma_area_check(a, keep_line, said));
	CHECK_EQ(said[0], 0);
	q = mmap(ruma_area_addr(a, 5), PS, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(q == ruma_area_addr(a, 5));
	CHECK_EQ(ruma_area_check(a, NULL, NULL), RUMA_ECORRUPT);
	CHECK_EQ(ruma_area_check(a, keep_line, said), RUMA_ECORRUPT);
	CHECK(strstr(said, "virtual page 5: ") == said);
	/* the pools' inode numbers and sizes come from the OS layer's probe */
	ruma_os_inject(RUMA_SYS_FSTAT, 1, EIO, false);
	CHECK_EQ(ruma_area_check(a, NULL, NULL), -EIO);
	ruma_phys_stats ps;
	ruma_os_inject(RUMA_SYS_FSTAT, 1, EIO, false);
	CHECK_EQ(ruma_phys_get_stats(p, &ps), -EIO);
	ruma_os_inject_clear();
	CHECK_OK(ruma_phys_get_stats(p, &ps));
	CHECK(ps.file_size >= 8 * PS && ps.bytes_resident > 0);
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* A refused map_run must not register its pool: slots are limited. */
static int t_refused_map_takes_no_slot(void)
{
	enum { N = RUMA_AREA_MAX_POOLS + 1 };
	ruma_phys *pools[N] = { 0 };
	ruma_area *a;
	int rc = TEST_PASS;

	CHECK_OK(ruma_area_create(PS, 1024, &a)); /* larger than the pools' files */
	for (unsigned i = 0; i < N && rc == TEST_PASS; i++) {
		if (pool_with_pages(&pools[i], 1) ||
		    ruma_area_map_run(a, 0, pools[i], 0, ruma_phys_file_pages(pools[i]) + 1, 0,
				      NULL) != -EINVAL)
			rc = TEST_FAIL;
	}
	if (rc == TEST_PASS && ruma_area_map_run(a, 0, pools[N - 1], 0, 1, 0, NULL) != 0)
		rc = TEST_FAIL; /* -ENOSPC when the refused calls took the slots */
	if (rc == TEST_PASS && ruma_area_check(a, test_say, "ruma_area_check") != 0)
		rc = TEST_FAIL;
	ruma_area_destroy(a);
	for (unsigned i = 0; i < N; i++)
		ruma_phys_destroy(pools[i]);
	CHECK_EQ(rc, TEST_PASS);
	return TEST_PASS;
}

static int t_area_alias(void)
{
	ruma_area *a;
	ruma_phys *p;
	ruma_area_result r;

	CHECK_OK(ruma_area_create(PS, 32, &a));
	CHECK_OK(pool_with_pages(&p, 8));
	CHECK_OK(ruma_area_map_run(a, 0, p, 3, 1, 0, NULL));
	CHECK_OK(ruma_area_map_run(a, 7, p, 3, 1, 0, NULL));
	uint64_t *x = ruma_area_addr(a, 0), *y = ruma_area_addr(a, 7);
	CHECK_EQ(*y, marker(3));
	x[100] = 0xfeedface;
	CHECK_EQ(((volatile uint64_t *)y)[100], 0xfeedface);
	/* alias a whole run elsewhere, including an unmapped page */
	CHECK_OK(ruma_area_map_run(a, 10, p, 4, 4, 0, NULL));
	CHECK_OK(ruma_area_alias(a, 20, 9, 6, 0, &r));
	CHECK_EQ(r.runs, 3); /* none, 4..7, none */
	uint64_t pp;
	CHECK_OK(ruma_area_translate(a, 21, NULL, &pp, NULL));
	CHECK_EQ(pp, 4);
	CHECK_OK(ruma_area_translate(a, 20, NULL, &pp, NULL));
	CHECK_EQ(pp, RUMA_AREA_NONE);
	*(volatile uint64_t *)ruma_area_addr(a, 22) = 42;
	CHECK_EQ(read_word(a, 11), 42);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* Runs in a pairing sorted by virtual page. */
static size_t count_runs(const uint64_t *ppage_of_v, const bool *in, size_t n)
{
	size_t runs = 0;
	for (size_t v = 0; v < n; v++)
		if (in[v] && !(v > 0 && in[v - 1] && ppage_of_v[v] == ppage_of_v[v - 1] + 1))
			runs++;
	return runs;
}

/* Wire the pairing perm (v -> perm[v] for in[v]) given in shuffled order; check one mmap per run. */
static int batch_case(ruma_area *a, ruma_phys *p, const uint64_t *perm, const bool *in, size_t n)
{
	ruma_rewire_pair *pairs = malloc(n * sizeof(*pairs));
	size_t k = 0;
	ruma_area_result r;

	CHECK(pairs);
	for (size_t v = 0; v < n; v++)
		if (in[v])
			pairs[k++] = (ruma_rewire_pair){ v, perm[v] };
	for (size_t i = k; i > 1; i--) { /* the input order does not matter */
		size_t j = ruma_rng_below(&test_rng, i);
		ruma_rewire_pair t = pairs[i - 1];
		pairs[i - 1] = pairs[j];
		pairs[j] = t;
	}
	size_t want = count_runs(perm, in, n);
	uint64_t before = ruma_os_count(RUMA_SYS_MMAP);
	int rc = ruma_area_rewire_batch(a, p, pairs, k, 0, &r);
	uint64_t calls = ruma_os_count(RUMA_SYS_MMAP) - before;
	free(pairs);
	CHECK_OK(rc);
	CHECK_EQ(calls, want);
	CHECK_EQ(r.runs, want);
	CHECK_EQ(r.pages_done, k);
	for (size_t v = 0; v < n; v++) {
		uint64_t pp;
		CHECK_OK(ruma_area_translate(a, v, NULL, &pp, NULL));
		if (in[v])
			CHECK_EQ(pp, perm[v]);
	}
	CHECK_EQ(check_contents(a), TEST_PASS);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	uint64_t km;
	CHECK_OK(ruma_area_kernel_maps(a, &km));
	CHECK_EQ(km, ruma_area_map_estimate(a));
	return TEST_PASS;
}

static int t_batch_runs(void)
{
	enum { N = 512 };
	static uint64_t perm[N];
	static bool in[N];
	ruma_area *a;
	ruma_phys *p;

	CHECK_OK(ruma_area_create(PS, N, &a));
	CHECK_OK(pool_with_pages(&p, N));
	for (size_t v = 0; v < N; v++) { /* sorted: one run */
		perm[v] = v;
		in[v] = true;
	}
	CHECK_EQ(batch_case(a, p, perm, in, N), TEST_PASS);
	CHECK_EQ(ruma_area_map_estimate(a), 1);
	for (size_t v = 0; v < N; v++) /* reversed: one run per page */
		perm[v] = N - 1 - v;
	CHECK_EQ(batch_case(a, p, perm, in, N), TEST_PASS);
	CHECK_EQ(ruma_area_map_estimate(a), N);
	for (size_t v = 0; v < N; v++) /* random permutation */
		perm[v] = v;
	ruma_rng_shuffle_u64(&test_rng, perm, N);
	CHECK_EQ(batch_case(a, p, perm, in, N), TEST_PASS);
	uint64_t blocks[N / 16]; /* shuffled blocks of 16 contiguous pages */
	for (size_t i = 0; i < N / 16; i++)
		blocks[i] = i;
	ruma_rng_shuffle_u64(&test_rng, blocks, N / 16);
	for (size_t i = 0; i < N; i++)
		perm[i] = blocks[i / 16] * 16 + i % 16;
	CHECK_EQ(batch_case(a, p, perm, in, N), TEST_PASS);
	for (size_t v = 0; v < N; v++) /* a random subset of a random pairing */
		in[v] = ruma_rng_below(&test_rng, 3) != 0;
	ruma_rng_shuffle_u64(&test_rng, perm, N);
	CHECK_EQ(batch_case(a, p, perm, in, N), TEST_PASS);
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_batch_invalid(void)
{
	ruma_area *a;
	ruma_phys *p;
	ruma_rewire_pair dup[3] = { { 1, 1 }, { 0, 0 }, { 1, 2 } };
	ruma_rewire_pair out[2] = { { 0, 0 }, { 99, 1 } };

	CHECK_OK(ruma_area_create(PS, 16, &a));
	CHECK_OK(pool_with_pages(&p, 4));
	uint64_t before = ruma_os_count(RUMA_SYS_MMAP);
	CHECK_EQ(ruma_area_rewire_batch(a, p, dup, 3, 0, NULL), -EINVAL);
	CHECK_EQ(ruma_area_rewire_batch(a, p, out, 2, 0, NULL), -EINVAL);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), before);
	CHECK_OK(ruma_area_rewire_batch(a, p, NULL, 0, 0, NULL));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* Populate both ways: afterwards reading every page takes (almost) no fault. */
static int populate_case(ruma_populate_method want, unsigned flags, bool inject_einval)
{
	enum { N = 256 };
	ruma_area *a;
	ruma_phys *p;
	ruma_populate_method how;

	CHECK_OK(ruma_area_create(PS, N, &a));
	CHECK_OK(pool_with_pages(&p, N));
	if (inject_einval)
		ruma_os_inject(RUMA_SYS_MADVISE, 1, EINVAL, true);
	uint64_t madv = ruma_os_count(RUMA_SYS_MADVISE);
	int rc = ruma_area_map_run(a, 0, p, 0, N, flags | RUMA_AREA_POPULATE, &how);
	ruma_os_inject_clear();
	CHECK_OK(rc);
	CHECK_EQ(how, want);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MADVISE) - madv,
		 (want == RUMA_POPULATE_MADVISE || inject_einval) ? 1 : 0);
	long f0 = minor_faults();
	uint64_t sum = 0;
	for (uint64_t v = 0; v < N; v++)
		sum += read_word(a, v);
	long faults = minor_faults() - f0;
	CHECK(sum != 0);
	CHECK(faults < N / 4);
	CHECK_EQ(check_contents(a), TEST_PASS);
	/* ruma_area_populate skips unmapped pages */
	CHECK_OK(ruma_area_unmap(a, 10, 10));
	if (inject_einval)
		ruma_os_inject(RUMA_SYS_MADVISE, 1, EINVAL, true);
	madv = ruma_os_count(RUMA_SYS_MADVISE);
	uint64_t pmadv = ruma_os_count(RUMA_SYS_PROCESS_MADVISE);
	rc = ruma_area_populate(a, 0, N, flags, &how);
	ruma_os_inject_clear();
	CHECK_OK(rc);
	madv = ruma_os_count(RUMA_SYS_MADVISE) - madv;
	pmadv = ruma_os_count(RUMA_SYS_PROCESS_MADVISE) - pmadv;
	if (want == RUMA_POPULATE_MADVISE && how == RUMA_POPULATE_PROCESS_MADVISE) {
		CHECK_EQ(pmadv, 1); /* both stretches in one call */
		CHECK_EQ(madv, 0);
	} else {
		CHECK_EQ(how, want);
		CHECK_EQ(madv, want == RUMA_POPULATE_MADVISE ? 2 : 0);
	}
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_populate_madvise(void)
{
	ruma_area *a;
	ruma_phys *p;
	CHECK_OK(ruma_area_create(PS, 1, &a));
	CHECK_OK(pool_with_pages(&p, 1));
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, 1, 0, NULL));
	int rc = ruma_os_madvise(ruma_area_base(a), PS, MADV_POPULATE_WRITE);
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	if (rc == -EINVAL)
		SKIP("kernel without MADV_POPULATE_WRITE (< 5.14)");
	return populate_case(RUMA_POPULATE_MADVISE, 0, false);
}

static int t_populate_touch(void)
{
	CHECK_EQ(populate_case(RUMA_POPULATE_TOUCH, RUMA_AREA_POP_TOUCH, false), TEST_PASS);
	/* a kernel without MADV_POPULATE_* answers EINVAL: fall back to touching */
	return populate_case(RUMA_POPULATE_TOUCH, 0, true);
}

/* Many separate stretches: one process_madvise per 1024 of them, else one madvise each. */
static int t_populate_vectored(void)
{
	enum { N = 4096 };
	static ruma_rewire_pair pairs[N / 2];
	ruma_area *a;
	ruma_phys *p;
	ruma_area_result r;

	CHECK_OK(ruma_area_create(PS, N, &a));
	CHECK_OK(pool_with_pages(&p, N / 2));
	struct iovec probe = { ruma_area_base(a), PS };
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, 1, 0, NULL));
	size_t done;
	int prc = ruma_os_process_madvise(&probe, 1, MADV_POPULATE_WRITE, &done);
	CHECK_OK(ruma_area_unmap(a, 0, 1));
	for (size_t i = 0; i < N / 2; i++) /* every other virtual page: 2048 stretches */
		pairs[i] = (ruma_rewire_pair){ 2 * i, i };
	for (int round = 0; round < 2; round++) {
		bool fallback = round == 1 || prc != 0;
		if (round == 1)
			ruma_os_inject(RUMA_SYS_PROCESS_MADVISE, 1, EINVAL, false);
		uint64_t madv = ruma_os_count(RUMA_SYS_MADVISE);
		uint64_t pmadv = ruma_os_count(RUMA_SYS_PROCESS_MADVISE);
		int rc = ruma_area_rewire_batch(a, p, pairs, N / 2, RUMA_AREA_POPULATE, &r);
		ruma_os_inject_clear();
		CHECK_OK(rc);
		madv = ruma_os_count(RUMA_SYS_MADVISE) - madv;
		pmadv = ruma_os_count(RUMA_SYS_PROCESS_MADVISE) - pmadv;
		if (fallback) {
			CHECK_EQ(r.populate, RUMA_POPULATE_MADVISE);
			CHECK_EQ(madv, N / 2);
		} else {
			CHECK_EQ(r.populate, RUMA_POPULATE_PROCESS_MADVISE);
			CHECK_EQ(pmadv, 2);
			CHECK_EQ(madv, 0);
		}
		long f0 = minor_faults();
		for (size_t i = 0; i < N / 2; i++)
			CHECK_EQ(read_word(a, 2 * i), marker(i));
		if (!test_sanitized())
			CHECK(minor_faults() - f0 < N / 16);
		CHECK_OK(ruma_area_unmap(a, 0, N));
	}
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	if (prc != 0)
		SKIP("process_madvise(MADV_POPULATE_WRITE) on the own process: %s (kernel < 6.13?)",
		     ruma_strerror(prc));
	return TEST_PASS;
}

static int t_move(void)
{
	enum { N = 64 };
	ruma_area *a;
	ruma_phys *p;
	ruma_area_result r;
	uint64_t pp;

	CHECK_OK(ruma_area_create(PS, 4 * N, &a));
	CHECK_OK(pool_with_pages(&p, N));
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, N, RUMA_AREA_POPULATE, NULL));
	uint64_t mremaps = ruma_os_count(RUMA_SYS_MREMAP);
	CHECK_OK(ruma_area_move(a, 0, 2 * N, N, &r));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MREMAP) - mremaps, 1);
	CHECK_EQ(r.pages_done, N);
	long f0 = minor_faults();
	for (uint64_t v = 2 * N; v < 3 * N; v++)
		CHECK_EQ(read_word(a, v), marker(v - 2 * N));
	CHECK(minor_faults() - f0 < N / 4); /* the page-table entries moved along */
	CHECK_OK(ruma_area_translate(a, 0, NULL, &pp, NULL));
	CHECK_EQ(pp, RUMA_AREA_NONE);
	CHECK_OK(ruma_area_translate(a, 2 * N + 5, NULL, &pp, NULL));
	CHECK_EQ(pp, 5);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	/* overlapping moves in both directions, over a split run */
	CHECK_OK(ruma_area_map_run(a, 2 * N + 10, p, 40, 3, 0, NULL));
	CHECK_OK(ruma_area_move(a, 2 * N, 2 * N + 5, N, &r));
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_EQ(check_contents(a), TEST_PASS);
	CHECK_OK(ruma_area_move(a, 2 * N + 5, 2 * N - 7, N, &r));
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_EQ(check_contents(a), TEST_PASS);
	CHECK_OK(ruma_area_translate(a, 2 * N - 7 + 12, NULL, &pp, NULL));
	CHECK_EQ(pp, 42);
	CHECK_EQ(ruma_area_move(a, 0, 10, 4, NULL), -EINVAL); /* source unmapped */
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_private_view(void)
{
	ruma_area *a;
	ruma_phys *p;
	unsigned fl;
	uint64_t pp;

	CHECK_OK(ruma_area_create(PS, 16, &a));
	CHECK_OK(pool_with_pages(&p, 4));
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, 4, 0, NULL));
	CHECK_OK(ruma_area_map_run(a, 8, p, 0, 4, RUMA_AREA_PRIVATE | RUMA_AREA_POPULATE, NULL));
	CHECK_OK(ruma_area_translate(a, 9, NULL, &pp, &fl));
	CHECK_EQ(fl, RUMA_AREA_PRIVATE);
	CHECK_EQ(read_word(a, 9), marker(1));
	*(volatile uint64_t *)ruma_area_addr(a, 9) = 7; /* copy-on-write */
	CHECK_EQ(read_word(a, 1), marker(1));
	CHECK_EQ(read_word(a, 9), 7);
	*(volatile uint64_t *)ruma_area_addr(a, 2) = 9; /* a shared write before the COW */
	CHECK_EQ(read_word(a, 10), 9);
	CHECK_OK(ruma_area_map_run(a, 12, p, 0, 1, RUMA_AREA_RDONLY, NULL));
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* An mmap failing in the middle of a batch: earlier runs stay, the failing one is reset. */
static int t_inject_batch(void)
{
	enum { N = 128 };
	ruma_area *a;
	ruma_phys *p;
	ruma_rewire_pair pairs[N];
	ruma_area_result r;
	uint64_t pp;

	CHECK_OK(ruma_area_create(PS, N, &a));
	CHECK_OK(pool_with_pages(&p, N));
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, N, 0, NULL)); /* previous state: identity */
	for (size_t v = 0; v < N; v++)                      /* new: reversed, one run per page */
		pairs[v] = (ruma_rewire_pair){ v, N - 1 - v };
	uint64_t fail_at = 1 + ruma_rng_below(&test_rng, N);
	ruma_os_inject(RUMA_SYS_MMAP, fail_at, EPERM, false);
	int rc = ruma_area_rewire_batch(a, p, pairs, N, 0, &r);
	ruma_os_inject_clear();
	CHECK_EQ(rc, -EPERM);
	CHECK_EQ(r.runs, fail_at - 1);
	CHECK_EQ(r.pages_done, fail_at - 1);
	for (uint64_t v = 0; v < N; v++) {
		CHECK_OK(ruma_area_translate(a, v, NULL, &pp, NULL));
		if (v < fail_at - 1)
			CHECK_EQ(pp, N - 1 - v);
		else if (v == fail_at - 1)
			CHECK_EQ(pp, RUMA_AREA_NONE);
		else
			CHECK_EQ(pp, v);
	}
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_EQ(check_contents(a), TEST_PASS);
	/* a failing move: nothing claimed that is not mapped */
	ruma_os_inject(RUMA_SYS_MREMAP, 1, ENOMEM, false);
	bool tail_hit = fail_at - 1 >= N - 8; /* the move source must be fully mapped */
	rc = ruma_area_move(a, tail_hit ? 8 : N - 8, tail_hit ? 32 : 0, 8, NULL);
	ruma_os_inject_clear();
	CHECK_EQ(rc, -ENOMEM);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_EQ(check_contents(a), TEST_PASS);
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_budget(void)
{
	enum { N = 64 };
	ruma_area *a;
	ruma_phys *p;
	ruma_rewire_pair pairs[N];
	ruma_area_result r;

	CHECK(strstr(ruma_strerror(RUMA_EMAPLIMIT), "max_map_count") != NULL);
	CHECK_OK(ruma_area_create(PS, N, &a));
	CHECK_OK(pool_with_pages(&p, N));
	ruma_area_set_map_budget(a, 10);
	for (size_t v = 0; v < N; v++)
		pairs[v] = (ruma_rewire_pair){ v, N - 1 - v };
	uint64_t before = ruma_os_count(RUMA_SYS_MMAP);
	int rc = ruma_area_rewire_batch(a, p, pairs, N, 0, &r);
	CHECK_EQ(rc, RUMA_EMAPLIMIT);
	CHECK(ruma_area_map_estimate(a) <= 10);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP) - before, r.runs); /* refused before the kernel */
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	/* merging calls stay allowed at the limit */
	CHECK_OK(ruma_area_unmap(a, 0, N));
	CHECK_EQ(ruma_area_map_estimate(a), 1);
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, N, 0, NULL));
	ruma_area_set_map_budget(a, UINT64_MAX);
	CHECK_OK(ruma_area_rewire_batch(a, p, pairs, N, 0, &r));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/*
 * The kernel's own limit: fill the process with mappings up to
 * vm.max_map_count (mprotect splits a large reservation), then a rewire that
 * needs new mappings must fail with RUMA_EMAPLIMIT, not a bare ENOMEM.
 */
static int t_kernel_map_limit(void)
{
	uint64_t max, now;
	ruma_area *a;
	ruma_phys *p;

	if (test_sanitized())
		SKIP("sanitizer runtimes need mappings of their own at the limit");
	CHECK_OK(ruma_sysinfo_max_map_count(&max));
	CHECK_OK(ruma_sysinfo_map_count(&now));
	if (max > 300000)
		SKIP("vm.max_map_count %" PRIu64 " is too large to reach quickly", max);
	CHECK_OK(ruma_area_create(PS, 64, &a));
	CHECK_OK(pool_with_pages(&p, 64));
	size_t pieces = (size_t)(max - now) / 2 + 8, len = 2 * pieces * PS;
	void *filler;
	CHECK_OK(ruma_os_mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			      -1, 0, &filler));
	for (size_t i = 0; i < pieces; i++)
		if (ruma_os_mprotect((char *)filler + (2 * i + 1) * PS, PS, PROT_READ))
			break; /* at the limit */
	int rc = 0;
	for (uint64_t v = 1; v < 64 && rc == 0; v += 2)
		rc = ruma_area_map_run(a, v, p, 63 - v, 1, 0, NULL);
	ruma_os_munmap(filler, len);
	CHECK_EQ(rc, RUMA_EMAPLIMIT);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_EQ(check_contents(a), TEST_PASS);
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_process_budget(void)
{
	ruma_area *a;
	ruma_area_stats st;
	uint64_t max;

	CHECK_OK(ruma_sysinfo_max_map_count(&max));
	CHECK_OK(ruma_area_create(PS, 4, &a));
	ruma_area_get_stats(a, &st);
	CHECK_EQ(st.max_map_count, max);
	CHECK_EQ(st.map_budget, UINT64_MAX);
	CHECK_EQ(st.pages_mapped, 0);
	ruma_area_destroy(a);
	return TEST_PASS;
}

/*
 * Wiring a fresh area with one run over all its pages writes no table: no
 * page faults beyond a few for the area itself (a 32768-page table is 64
 * pages), no read of vm.max_map_count (one run adds no mapping), and the
 * entries read through as before until the first change.
 */
static int t_whole_run_unwritten(void)
{
	const uint64_t n = 32768;
	ruma_phys *p;
	ruma_area *a;
	uint64_t first, pp;

	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = PS }, &p));
	CHECK_OK(ruma_phys_alloc(p, n, &first));
	long before = minor_faults();
	ruma_os_count_reset();
	CHECK_OK(ruma_area_create(PS, n, &a));
	CHECK_OK(ruma_area_map_run(a, 0, p, first, n, 0, NULL));
	long faults = minor_faults() - before;
	CHECK(faults < 16);
	/* the table, the reservation and the run; no /proc read for the budget */
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 3);
	CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN), 0);
	CHECK_EQ(ruma_area_map_estimate(a), 1);
	for (uint64_t v = 0; v < n; v += 4097) {
		CHECK_OK(ruma_area_translate(a, v, NULL, &pp, NULL));
		CHECK_EQ(pp, first + v);
	}
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_OK(ruma_area_unmap(a, 100, 1)); /* the first change writes the table out */
	CHECK_EQ(ruma_area_map_estimate(a), 3);
	CHECK_OK(ruma_area_translate(a, 100, NULL, &pp, NULL));
	CHECK_EQ(pp, RUMA_AREA_NONE);
	CHECK_OK(ruma_area_translate(a, 101, NULL, &pp, NULL));
	CHECK_EQ(pp, first + 101);
	CHECK_OK(ruma_area_translate(a, n - 1, NULL, &pp, NULL));
	CHECK_EQ(pp, first + n - 1);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/*
 * An area created wired is one mmap of the pool run (no reservation), reads
 * the pool's pages, and behaves as any area afterwards; failures leave
 * nothing behind.
 */
static int t_create_mapped(void)
{
	ruma_phys *p;
	ruma_area *a;
	uint64_t maps0, maps1, pp;

	CHECK_OK(pool_with_pages(&p, 64));
	CHECK_OK(ruma_sysinfo_map_count(&maps0));
	ruma_os_count_reset();
	CHECK_OK(ruma_area_create_mapped(p, 8, 32, 0, &a, NULL));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 1);
	CHECK_EQ(ruma_area_pages(a), 32);
	CHECK_EQ(ruma_area_map_estimate(a), 1);
	CHECK_OK(ruma_area_translate(a, 31, NULL, &pp, NULL));
	CHECK_EQ(pp, 8 + 31);
	CHECK_EQ(check_contents(a), TEST_PASS);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	CHECK_OK(ruma_area_unmap(a, 3, 1));
	CHECK_OK(ruma_area_map_run(a, 4, p, 60, 2, 0, NULL));
	CHECK_EQ(ruma_area_map_estimate(a), 4);
	CHECK_EQ(check_contents(a), TEST_PASS);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);

	ruma_populate_method how;
	CHECK_OK(ruma_area_create_mapped(p, 0, 64, RUMA_AREA_POPULATE, &a, &how));
	CHECK(how != RUMA_POPULATE_NONE);
	CHECK_EQ(check_contents(a), TEST_PASS);
	ruma_area_destroy(a);

	CHECK_EQ(ruma_area_create_mapped(p, 40, 32, 0, &a, NULL), -EINVAL); /* past the pool */
	CHECK(a == NULL);
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, false);
	int rc = ruma_area_create_mapped(p, 0, 16, 0, &a, NULL);
	ruma_os_inject_clear();
	CHECK(rc != 0 && a == NULL);
	ruma_os_inject(RUMA_SYS_MADVISE, 1, EIO, false);
	rc = ruma_area_create_mapped(p, 0, 16, RUMA_AREA_POPULATE, &a, NULL);
	ruma_os_inject_clear();
	CHECK(rc == -EIO && a == NULL);
	CHECK_OK(ruma_sysinfo_map_count(&maps1));
	CHECK_EQ(maps1, maps0);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;
	for (; s && *s; s++)
		n += *s == c;
	return n;
}

static int t_cli(void)
{
	char *out = NULL, *err = NULL;
	char *bad1[] = { NULL, "rewire", "--pages", "0", NULL };
	char *bad2[] = { NULL, "rewire", "--reps", "x", NULL };
	char *bad3[] = { NULL, "rewire", "--bogus", NULL };
	char *big[] = { NULL, "rewire", "--pages", "4000000", NULL };
	char *ok[] = { NULL, "rewire", "--pages", "64", "--reps", "2", "--no-huge", NULL };

	int st = test_run_cli(bad1, NULL, NULL);
	if (st == -1)
		SKIP("the ruma binary was not built (%s)", RUMA_BIN);
	CHECK_EQ(st, 2);
	CHECK_EQ(test_run_cli(bad2, NULL, NULL), 2);
	CHECK_EQ(test_run_cli(bad3, NULL, NULL), 2);
	CHECK_EQ(test_run_cli(big, NULL, &err), 2); /* more mappings than vm.max_map_count */
	CHECK(err && strstr(err, "max_map_count"));
	free(err);
	CHECK_EQ(test_run_cli(ok, &out, &err), 0);
	CHECK(out && !strncmp(out, "variant,page_size,pages,rep,seconds,ns_per_page\n", 48));
	/* header + 9 rows per measured rep, plus the anonymous moves: 2 with UFFDIO_MOVE, 1 without */
	ruma_rewire_path path;
	ruma_move_probe(&path, NULL);
	CHECK_EQ(count_char(out, '\n'), 1 + 2 * (9 + (path == RUMA_REWIRE_UFFD ? 2 : 1)));
	CHECK(strstr(out, path == RUMA_REWIRE_UFFD ? "uffd_move_random,4096,64,1," : "mremap_move_run,4096,64,1,"));
	CHECK(strstr(out, "page_random,4096,64,1,") != NULL);
	CHECK(err && strstr(err, "batch_contig") && strstr(err, "median"));
	CHECK(strstr(err, "skipped (--no-huge)") != NULL);
	free(out);
	free(err);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "phys_basic", t_phys_basic },
	{ "phys_max_pages", t_phys_max_pages },
	{ "phys_model", t_phys_model },
	{ "phys_alloc_runs", t_phys_alloc_runs },
	{ "phys_punch", t_phys_punch },
	{ "phys_enohuge", t_phys_enohuge },
	{ "area_basic", t_area_basic },
	{ "area_check_reports", t_area_check_reports },
	{ "refused_map_takes_no_slot", t_refused_map_takes_no_slot },
	{ "area_alias", t_area_alias },
	{ "batch_runs", t_batch_runs },
	{ "batch_invalid", t_batch_invalid },
	{ "populate_madvise", t_populate_madvise },
	{ "populate_touch", t_populate_touch },
	{ "populate_vectored", t_populate_vectored },
	{ "move", t_move },
	{ "private_view", t_private_view },
	{ "inject_batch", t_inject_batch },
	{ "budget", t_budget },
	{ "kernel_map_limit", t_kernel_map_limit },
	{ "process_budget", t_process_budget },
	{ "whole_run_unwritten", t_whole_run_unwritten },
	{ "create_mapped", t_create_mapped },
	{ "cli", t_cli },
};

int main(int argc, char **argv)
{
	return test_main("rewire", cases, TEST_N(cases), argc, argv);
}
