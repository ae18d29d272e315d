/*
 * test_rewire_move.c — anonymous areas and the page-move primitive
 * (area.h: ruma_anon_*, ruma_move_probe): moved content, overlap, the
 * destination replaced, source holes, one kernel mapping whatever the
 * layout (UFFD), partial moves and failures by injection, the mremap
 * fallback when userfaultfd cannot be opened, and its mapping budget.
 */
#include "test.h"

#include <ruma/area.h>
#include "rewire/rewire_ext.h"
#include <ruma/partition.h>
#include <ruma/pool.h>
#include <ruma/sysinfo.h>

#include "os/os.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define PG 4096u

/* Page p of a holds `tag` in every word. */
static void fill_page(ruma_anon *a, uint64_t p, uint64_t tag)
{
	uint64_t *w = ruma_anon_addr(a, p);
	for (size_t i = 0; i < PG / 8; i++)
		w[i] = tag;
}

static bool page_is(const ruma_anon *a, uint64_t p, uint64_t tag)
{
	const uint64_t *w = ruma_anon_addr(a, p);
	for (size_t i = 0; i < PG / 8; i++)
		if (w[i] != tag)
			return false;
	return true;
}

/* Lines of /proc/self/maps overlapping [base, base + len). */
static long kernel_maps(const void *base, size_t len)
{
	char *maps = test_slurp("/proc/self/maps");
	uintptr_t lo = (uintptr_t)base, hi = lo + len;
	long n = 0;

	if (!maps)
		return -1;
	for (char *line = maps; *line;) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo)
			n++;
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	free(maps);
	return n;
}

static bool have_uffd(void)
{
	ruma_rewire_path p;
	ruma_move_probe(&p, NULL);
	return p == RUMA_REWIRE_UFFD;
}

static int t_probe(void)
{
	ruma_rewire_path p;
	const char *why = NULL;

	CHECK_OK(ruma_move_probe(&p, &why));
	CHECK(p == RUMA_REWIRE_UFFD || p == RUMA_REWIRE_MREMAP);
	CHECK(why != NULL);
	CHECK((p == RUMA_REWIRE_UFFD) == (why[0] == 0));
	printf("    move path: %s%s%s\n", ruma_rewire_path_name(p), why[0] ? " — " : "", why);
	CHECK(strcmp(ruma_rewire_path_name(RUMA_REWIRE_UFFD), "uffd-move") == 0);
	return TEST_PASS;
}

/* Move [8, 40) of src to [16, 48) of dst; the destination pages held data before. */
static int content_case(ruma_rewire_path path)
{
	ruma_anon *s, *d;
	ruma_anon_result r;

	CHECK_OK(ruma_anon_create(64, path, &s));
	CHECK_OK(ruma_anon_create(64, path, &d));
	CHECK_EQ(ruma_anon_path(s), path);
	for (uint64_t p = 0; p < 64; p++) {
		fill_page(s, p, 1000 + p);
		if (p % 3 == 0)
			fill_page(d, p, 7); /* old destination data, to be replaced */
	}
	CHECK_OK(ruma_anon_discard(s, 20, 1)); /* a source hole */
	CHECK_OK(ruma_anon_move(d, 16, s, 8, 32, &r));
	CHECK_EQ(r.pages_done, 32);
	for (uint64_t p = 0; p < 64; p++) {
		bool moved = p >= 16 && p < 48;
		if (moved)
			CHECK(page_is(d, p, p == 28 ? 0 : 1000 + p - 8));
		else
			CHECK(page_is(d, p, p % 3 == 0 ? 7 : 0));
		CHECK(page_is(s, p, p >= 8 && p < 40 ? 0 : 1000 + p));
	}
	if (path == RUMA_REWIRE_UFFD) {
		CHECK_EQ(kernel_maps(ruma_anon_base(d), 64 * PG), 1);
		CHECK_EQ(ruma_anon_map_estimate(d), 1);
	} else {
		CHECK(ruma_anon_map_estimate(d) >= 3);
	}
	ruma_anon_destroy(s);
	ruma_anon_destroy(d);
	return TEST_PASS;
}

static int t_content_uffd(void)
{
	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	return content_case(RUMA_REWIRE_UFFD);
}

static int t_content_mremap(void)
{
	return content_case(RUMA_REWIRE_MREMAP);
}

/* Overlapping moves inside one area, both directions. */
static int t_overlap(void)
{
	ruma_anon *a;
	ruma_anon_result r;

	CHECK_OK(ruma_anon_create(64, RUMA_REWIRE_AUTO, &a));
	CHECK_EQ(ruma_anon_pages(a), 64);
	for (uint64_t p = 0; p < 32; p++)
		fill_page(a, p, 500 + p);
	CHECK_OK(ruma_anon_move(a, 8, a, 0, 32, &r)); /* up by 8 */
	CHECK_EQ(r.pages_done, 32);
	for (uint64_t p = 0; p < 64; p++)
		CHECK(page_is(a, p, p >= 8 && p < 40 ? 500 + p - 8 : 0));
	CHECK_OK(ruma_anon_move(a, 3, a, 8, 32, &r)); /* down by 5 */
	for (uint64_t p = 0; p < 64; p++)
		CHECK(page_is(a, p, p >= 3 && p < 35 ? 500 + p - 3 : 0));
	CHECK_OK(ruma_anon_move(a, 3, a, 3, 32, NULL)); /* onto itself: nothing to do */
	CHECK(page_is(a, 3, 500));
	CHECK_EQ(ruma_anon_move(a, 40, a, 30, 30, NULL), -EINVAL); /* past the end */
	CHECK_EQ(ruma_anon_move(a, 0, a, 1, 0, NULL), -EINVAL);
	ruma_anon_destroy(a);
	return TEST_PASS;
}

/* A random permutation, one page per run: still one mapping (UFFD). */
static int t_batch_random(void)
{
	enum { N = 512 };
	ruma_move_pair pairs[N];
	uint64_t perm[N];
	ruma_anon *s, *d;
	ruma_anon_result r;

	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	CHECK_OK(ruma_anon_create(N, RUMA_REWIRE_UFFD, &s));
	CHECK_OK(ruma_anon_create(N, RUMA_REWIRE_UFFD, &d));
	for (uint64_t p = 0; p < N; p++) {
		fill_page(s, p, p + 1);
		perm[p] = p;
	}
	ruma_rng_shuffle_u64(&test_rng, perm, N);
	for (uint64_t i = 0; i < N; i++)
		pairs[i] = (ruma_move_pair){ i, perm[i] };
	uint64_t before = ruma_os_count(RUMA_SYS_UFFDIO_MOVE);
	CHECK_OK(ruma_anon_move_batch(d, s, pairs, N, &r));
	CHECK_EQ(r.pages_done, N);
	CHECK(r.calls >= N - 16 && r.calls <= N); /* a few neighbours may be contiguous */
	CHECK_EQ(ruma_os_count(RUMA_SYS_UFFDIO_MOVE) - before, r.calls);
	for (uint64_t i = 0; i < N; i++)
		CHECK(page_is(d, i, perm[i] + 1));
	CHECK_EQ(kernel_maps(ruma_anon_base(d), N * PG), 1);
	CHECK_EQ(kernel_maps(ruma_anon_base(s), N * PG), 1);
	ruma_anon_destroy(s);
	ruma_anon_destroy(d);
	return TEST_PASS;
}

/* The kernel moves part of a range: the rest follows in a second call. */
static int t_inject_partial(void)
{
	ruma_anon *s, *d;
	ruma_anon_result r;

	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	CHECK_OK(ruma_anon_create(16, RUMA_REWIRE_UFFD, &s));
	CHECK_OK(ruma_anon_create(16, RUMA_REWIRE_UFFD, &d));
	for (uint64_t p = 0; p < 16; p++)
		fill_page(s, p, 40 + p);
	ruma_os_inject(RUMA_SYS_UFFDIO_MOVE, 1, 0, false); /* partial: first half only */
	CHECK_OK(ruma_anon_move(d, 0, s, 0, 16, &r));
	ruma_os_inject_clear();
	CHECK_EQ(r.pages_done, 16);
	CHECK_EQ(r.calls, 2);
	for (uint64_t p = 0; p < 16; p++) {
		CHECK(page_is(d, p, 40 + p));
		CHECK(page_is(s, p, 0));
	}
	ruma_anon_destroy(s);
	ruma_anon_destroy(d);
	return TEST_PASS;
}

/* A failing call stops the batch: what moved is at the destination, the rest at the source. */
static int fail_case(ruma_rewire_path path, ruma_sys sys)
{
	ruma_move_pair pairs[12];
	ruma_anon *s, *d;
	ruma_anon_result r;

	CHECK_OK(ruma_anon_create(32, path, &s));
	CHECK_OK(ruma_anon_create(32, path, &d));
	for (uint64_t p = 0; p < 32; p++)
		fill_page(s, p, 90 + p);
	for (uint64_t i = 0; i < 12; i++) /* runs: [0,4) [4,8) [8,12), reversed sources */
		pairs[i] = (ruma_move_pair){ i, (2 - i / 4) * 4 + i % 4 };
	ruma_os_inject(sys, 2, EIO, false);
	CHECK_EQ(ruma_anon_move_batch(d, s, pairs, 12, &r), -EIO);
	ruma_os_inject_clear();
	CHECK_EQ(r.pages_done, 4);
	for (uint64_t i = 0; i < 12; i++) {
		uint64_t sp = pairs[i].src;
		CHECK(page_is(d, i, i < 4 ? 90 + sp : 0));
		CHECK(page_is(s, sp, i < 4 ? 0 : 90 + sp));
	}
	/* the rest can be moved afterwards */
	CHECK_OK(ruma_anon_move_batch(d, s, pairs + 4, 8, &r));
	for (uint64_t i = 0; i < 12; i++)
		CHECK(page_is(d, i, 90 + pairs[i].src));
	ruma_anon_destroy(s);
	ruma_anon_destroy(d);
	return TEST_PASS;
}

static int t_inject_fail_uffd(void)
{
	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	return fail_case(RUMA_REWIRE_UFFD, RUMA_SYS_UFFDIO_MOVE);
}

static int t_inject_fail_mremap(void)
{
	return fail_case(RUMA_REWIRE_MREMAP, RUMA_SYS_MREMAP);
}

/* Pages shared with a forked child cannot move (-EBUSY): they are copied instead. */
static int t_busy_after_fork(void)
{
	ruma_anon *s, *d;
	ruma_anon_result r;
	int pipefd[2];

	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	CHECK_OK(ruma_anon_create(8, RUMA_REWIRE_UFFD, &s));
	CHECK_OK(ruma_anon_create(8, RUMA_REWIRE_UFFD, &d));
	for (uint64_t p = 0; p < 8; p++)
		fill_page(s, p, 300 + p);
	CHECK(pipe(pipefd) == 0);
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) { /* hold the pages shared until the parent is done */
		char c;
		close(pipefd[1]);
		_exit(read(pipefd[0], &c, 1) < 0);
	}
	close(pipefd[0]);
	CHECK_OK(ruma_anon_move(d, 0, s, 0, 8, &r));
	close(pipefd[1]);
	int st;
	CHECK(waitpid(child, &st, 0) == child);
	CHECK_EQ(r.pages_done, 8);
	CHECK_EQ(r.pages_copied, 8);
	for (uint64_t p = 0; p < 8; p++) {
		CHECK(page_is(d, p, 300 + p));
		CHECK(page_is(s, p, 0));
	}
	ruma_anon_destroy(s);
	ruma_anon_destroy(d);
	return TEST_PASS;
}

/* userfaultfd cannot be opened: the probe says so and moves use mremap. */
static int fallback_case(int err, const char *expect)
{
	ruma_rewire_path p;
	const char *why;
	ruma_anon *a;

	ruma_move_probe_reset();
	ruma_os_inject(RUMA_SYS_USERFAULTFD, 1, err, true);
	CHECK_OK(ruma_move_probe(&p, &why));
	CHECK_EQ(p, RUMA_REWIRE_MREMAP);
	CHECK(strstr(why, expect) != NULL);
	CHECK_EQ(ruma_anon_create(8, RUMA_REWIRE_UFFD, &a), RUMA_EUNSUPP);
	CHECK_OK(ruma_anon_create(8, RUMA_REWIRE_AUTO, &a));
	CHECK_EQ(ruma_anon_path(a), RUMA_REWIRE_MREMAP);
	fill_page(a, 0, 3);
	CHECK_OK(ruma_anon_move(a, 5, a, 0, 1, NULL));
	CHECK(page_is(a, 5, 3));
	CHECK(page_is(a, 0, 0));
	ruma_anon_destroy(a);
	ruma_os_inject_clear();
	ruma_move_probe_reset();
	return TEST_PASS;
}

static int t_fallback_enosys(void)
{
	return fallback_case(ENOSYS, "no userfaultfd");
}

static int t_fallback_eperm(void)
{
	return fallback_case(EPERM, "not permitted");
}

/* The mremap fallback counts two mappings per run and refuses a batch over budget. */
static int t_mremap_budget(void)
{
	ruma_move_pair pairs[8];
	ruma_anon *s, *d;
	ruma_anon_result r;

	CHECK_OK(ruma_anon_create(16, RUMA_REWIRE_MREMAP, &s));
	CHECK_OK(ruma_anon_create(16, RUMA_REWIRE_MREMAP, &d));
	for (uint64_t i = 0; i < 8; i++) {
		fill_page(s, i, 60 + i);
		pairs[i] = (ruma_move_pair){ 2 * i, i }; /* 8 runs of one page */
	}
	ruma_anon_set_map_budget(d, 10);
	uint64_t before = ruma_os_count(RUMA_SYS_MREMAP);
	CHECK_EQ(ruma_anon_move_batch(d, s, pairs, 8, &r), RUMA_EMAPLIMIT);
	CHECK_EQ(r.pages_done, 0);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MREMAP), before);
	ruma_anon_set_map_budget(d, 17);
	CHECK_OK(ruma_anon_move_batch(d, s, pairs, 8, &r));
	CHECK_EQ(r.calls, 8);
	for (uint64_t i = 0; i < 8; i++)
		CHECK(page_is(d, 2 * i, 60 + i));
	CHECK(kernel_maps(ruma_anon_base(d), 16 * PG) <= (long)ruma_anon_map_estimate(d));
	ruma_anon_destroy(s);
	ruma_anon_destroy(d);
	return TEST_PASS;
}

static int t_invalid(void)
{
	ruma_anon *a, *b;

	CHECK_EQ(ruma_anon_create(0, RUMA_REWIRE_AUTO, &a), -EINVAL);
	CHECK_EQ(ruma_anon_create(4, RUMA_REWIRE_MMAP, &a), -EINVAL);
	CHECK_OK(ruma_anon_create(4, RUMA_REWIRE_MREMAP, &a));
	CHECK_EQ(ruma_anon_discard(a, 3, 2), -EINVAL);
	if (have_uffd()) {
		CHECK_OK(ruma_anon_create(4, RUMA_REWIRE_UFFD, &b));
		CHECK_EQ(ruma_anon_move(b, 0, a, 0, 1, NULL), -EINVAL); /* paths differ */
		ruma_anon_destroy(b);
	}
	ruma_move_pair bad = { 4, 0 };
	CHECK_EQ(ruma_anon_move_batch(a, a, &bad, 1, NULL), -EINVAL);
	ruma_anon_destroy(a);
	return TEST_PASS;
}


/* ---- mapped partitioning with one-page blocks over a low mapping budget ---------------- */

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Every key where its partition says, and the output a permutation of the input. */
static int verify_partition(const uint64_t *keys, size_t n, const ruma_part_options *o,
			    const ruma_part_result *r)
{
	uint64_t *a = malloc(n * 8), *b = malloc(n * 8);
	size_t got = 0;

	CHECK(a && b);
	CHECK_EQ(r->start[o->partitions], n);
	for (size_t c = 0; c < r->nchunks; c++) {
		const ruma_part_chunk *ch = &r->chunks[c];
		for (size_t i = 0; i < ch->n; i++) {
			CHECK_EQ(ruma_part_of(ch->keys[i], o->shift, o->partitions), ch->part);
			CHECK(got < n);
			a[got++] = ch->keys[i];
		}
	}
	CHECK_EQ(got, n);
	if (r->data)
		CHECK(memcmp(a, r->data, n * 8) == 0); /* the chunks are the contiguous output */
	memcpy(b, keys, n * 8);
	qsort(a, n, 8, cmp_u64);
	qsort(b, n, 8, cmp_u64);
	CHECK(memcmp(a, b, n * 8) == 0);
	free(a);
	free(b);
	return TEST_PASS;
}

static uint64_t *random_keys(size_t n)
{
	uint64_t *k = malloc(n * 8);
	for (size_t i = 0; k && i < n; i++)
		k[i] = ruma_rng_next(&test_rng);
	return k;
}

/* 1024 pages of keys, one-page blocks, 256 mappings allowed. */
#define PART_N ((size_t)1 << 19)
#define PART_BUDGET 256u

static ruma_part_method part_method = RUMA_PART_MAPPED;

static int part_case(const uint64_t *keys, ruma_rewire_path path, bool swwc, bool contiguous,
		     ruma_rewire_path expect, int expect_rc)
{
	ruma_part_options o;
	ruma_part_result *r = NULL;

	ruma_part_options_default(&o);
	o.method = part_method;
	o.partitions = 64;
	o.pages_per_block = 1;
	o.map_budget = PART_BUDGET;
	o.path = path;
	o.swwc = swwc;
	o.contiguous = contiguous;
	int rc = ruma_part_run(keys, PART_N, &o, &r);
	if (expect_rc) {
		CHECK_EQ(rc, expect_rc);
		CHECK(r == NULL);
		return TEST_PASS;
	}
	CHECK_OK(rc);
	CHECK_EQ(r->path, expect);
	CHECK_EQ(r->data != NULL, contiguous);
	CHECK_EQ(verify_partition(keys, PART_N, &o, r), TEST_PASS);
	if (contiguous && expect == RUMA_REWIRE_UFFD) {
		CHECK_EQ(kernel_maps(r->data, PART_N * 8), 1);
		/* runs, not pages: about one per partition (MAPPED) or per 64-page extent */
		CHECK(r->rewires <= 2 * o.partitions + 1 + (o.method == RUMA_PART_MAPPED ? 0 : 16));
	}
	if (contiguous && expect == RUMA_REWIRE_MREMAP)
		CHECK(kernel_maps(r->data, PART_N * 8) <= PART_BUDGET);
	ruma_part_result_free(r);
	return TEST_PASS;
}

static int t_partition_uffd(void)
{
	uint64_t *keys = random_keys(PART_N);

	CHECK(keys);
	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	for (int m = 0; m < 2; m++) {
		part_method = m ? RUMA_PART_MAPPED_CHAINS : RUMA_PART_MAPPED;
		for (int swwc = 0; swwc < 2; swwc++)
			for (int contig = 0; contig < 2; contig++)
				CHECK_EQ(part_case(keys, RUMA_REWIRE_AUTO, swwc, contig,
						   RUMA_REWIRE_UFFD, 0), TEST_PASS);
		/* the memfd rewiring needs about one mapping per block: over the budget */
		CHECK_EQ(part_case(keys, RUMA_REWIRE_MMAP, false, true, 0, RUMA_EMAPLIMIT),
			 TEST_PASS);
	}
	part_method = RUMA_PART_MAPPED;
	free(keys);
	return TEST_PASS;
}

/* Without userfaultfd: mremap while its mappings fit, else the memfd way and a clear error. */
static int t_partition_fallback(void)
{
	uint64_t *keys = random_keys(PART_N);

	CHECK(keys);
	ruma_move_probe_reset();
	ruma_os_inject(RUMA_SYS_USERFAULTFD, 1, ENOSYS, true);
	CHECK_EQ(part_case(keys, RUMA_REWIRE_AUTO, false, true, RUMA_REWIRE_MREMAP, 0), TEST_PASS);
	CHECK_EQ(part_case(keys, RUMA_REWIRE_AUTO, true, false, RUMA_REWIRE_MREMAP, 0), TEST_PASS);
	CHECK_EQ(part_case(keys, RUMA_REWIRE_UFFD, false, true, 0, RUMA_EUNSUPP), TEST_PASS);
	/* CHAINS: 2 x (64 partitions + 1024 / 64 extents) runs do not fit 256: the memfd way */
	part_method = RUMA_PART_MAPPED_CHAINS;
	CHECK_EQ(part_case(keys, RUMA_REWIRE_AUTO, false, true, 0, RUMA_EMAPLIMIT), TEST_PASS);
	part_method = RUMA_PART_MAPPED;
	ruma_os_inject_clear();
	ruma_move_probe_reset();
	free(keys);
	return TEST_PASS;
}

/* A failing move during the final layout: a clear error, nothing leaked. */
static int t_partition_inject(void)
{
	uint64_t *keys = random_keys(PART_N);
	ruma_part_options o;
	ruma_part_result *r = NULL;
	uint64_t before, after;

	CHECK(keys);
	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	ruma_part_options_default(&o);
	o.method = RUMA_PART_MAPPED;
	CHECK_OK(ruma_sysinfo_map_count(&before));
	for (uint64_t nth = 1; nth <= 3; nth++) {
		ruma_os_inject(RUMA_SYS_UFFDIO_MOVE, nth, EIO, false);
		CHECK_EQ(ruma_part_run(keys, PART_N, &o, &r), -EIO);
		ruma_os_inject_clear();
		CHECK(r == NULL);
	}
	ruma_os_inject(RUMA_SYS_UFFDIO_MOVE, 2, 0, false); /* a partial move is completed */
	CHECK_OK(ruma_part_run(keys, PART_N, &o, &r));
	ruma_os_inject_clear();
	CHECK_EQ(verify_partition(keys, PART_N, &o, r), TEST_PASS);
	ruma_part_result_free(r);
	CHECK_OK(ruma_sysinfo_map_count(&after));
	if (!test_sanitized()) /* the sanitizer's allocator maps memory of its own */
		CHECK_EQ(after, before);
	free(keys);
	return TEST_PASS;
}

/* ---- random-placement pools ------------------------------------------------------------ */

static int t_pool_random(void)
{
	ruma_pool_options o;
	ruma_pool *p;
	uint64_t before, after;

	ruma_pool_options_default(&o);
	o.random = true;
	o.map_budget = 100; /* 2000 pages in random order: over budget for the memfd way */
	o.seed = ruma_rng_next(&test_rng);
	CHECK_OK(ruma_sysinfo_map_count(&before));
	if (have_uffd()) {
		CHECK_OK(ruma_pool_create(&o, 2000 * PG, &p));
		CHECK_EQ(ruma_pool_path(p), RUMA_REWIRE_UFFD);
		CHECK_EQ(ruma_pool_mappings(p), 1);
		CHECK_EQ(kernel_maps(ruma_pool_base(p), 2000 * PG), 1);
		for (size_t i = 0; i < 2000; i++)
			*(uint64_t *)ruma_pool_page(p, i) = i + 1;
		for (size_t i = 0; i < 2000; i++)
			CHECK_EQ(*(uint64_t *)ruma_pool_page(p, i), i + 1);
		ruma_pool_destroy(p);
	}
	/* without userfaultfd: the memfd way, refused with a clear error */
	ruma_move_probe_reset();
	ruma_os_inject(RUMA_SYS_USERFAULTFD, 1, EPERM, true);
	CHECK_EQ(ruma_pool_create(&o, 2000 * PG, &p), RUMA_EMAPLIMIT);
	o.map_budget = 0;
	CHECK_OK(ruma_pool_create(&o, 2000 * PG, &p));
	CHECK_EQ(ruma_pool_path(p), RUMA_REWIRE_MMAP);
	CHECK(ruma_pool_mappings(p) > 1000);
	ruma_pool_destroy(p);
	ruma_os_inject_clear();
	ruma_move_probe_reset();
	CHECK_OK(ruma_sysinfo_map_count(&after));
	if (!test_sanitized()) /* the sanitizer's allocator maps memory of its own */
		CHECK_EQ(after, before);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "probe", t_probe },
	{ "content_uffd", t_content_uffd },
	{ "content_mremap", t_content_mremap },
	{ "overlap", t_overlap },
	{ "batch_random", t_batch_random },
	{ "inject_partial", t_inject_partial },
	{ "inject_fail_uffd", t_inject_fail_uffd },
	{ "inject_fail_mremap", t_inject_fail_mremap },
	{ "busy_after_fork", t_busy_after_fork },
	{ "fallback_enosys", t_fallback_enosys },
	{ "fallback_eperm", t_fallback_eperm },
	{ "mremap_budget", t_mremap_budget },
	{ "invalid", t_invalid },
	{ "partition_uffd", t_partition_uffd },
	{ "partition_fallback", t_partition_fallback },
	{ "partition_inject", t_partition_inject },
	{ "pool_random", t_pool_random },
};

int main(int argc, char **argv)
{
	return test_main("rewire_move", cases, TEST_N(cases), argc, argv);
}
