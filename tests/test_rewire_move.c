/*
 * test_rewire_move.c — anonymous areas and the page-move primitive
 * (anon.h: ruma_anon_*, ruma_move_probe): moved content, overlap, the
 * destination replaced, source holes, one kernel mapping whatever the
 * layout (UFFD), partial moves and failures by injection, the mremap
 * fallback when userfaultfd cannot be opened, and its mapping budget.
 */
#include "test.h"

#include "move_util.h"
#include "rewire/rewire_ext.h"
#include <ruma/anon.h>
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

/* A move's source and destination, n pages each on path; source page p
 * holds base + p. */
static int pair_open(uint64_t n, ruma_rewire_path path, uint64_t base, ruma_anon **s,
		     ruma_anon **d)
{
	CHECK_OK(ruma_anon_create(n, path, s));
	CHECK_OK(ruma_anon_create(n, path, d));
	for (uint64_t p = 0; p < n; p++)
		fill_page(*s, p, base + p);
	return TEST_PASS;
}

static void pair_close(ruma_anon *s, ruma_anon *d)
{
	ruma_anon_destroy(s);
	ruma_anon_destroy(d);
}

/* Pages [0, n) moved whole: the destination's page p holds base + p, the
 * source's is empty. */
static bool moved_all(const ruma_anon *d, const ruma_anon *s, uint64_t n, uint64_t base)
{
	for (uint64_t p = 0; p < n; p++)
		if (!page_is(d, p, base + p) || !page_is(s, p, 0))
			return false;
	return true;
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
	pair_close(s, d);
	return TEST_PASS;
}

static int t_content_uffd(void)
{
	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	return content_case(RUMA_REWIRE_UFFD);
}

TEST_BIND(t_content_mremap, content_case, RUMA_REWIRE_MREMAP)

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
	CHECK(pair_open(N, RUMA_REWIRE_UFFD, 1, &s, &d) == TEST_PASS);
	for (uint64_t p = 0; p < N; p++)
		perm[p] = p;
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
	pair_close(s, d);
	return TEST_PASS;
}

/* The kernel moves part of a range: the rest follows in a second call. */
static int t_inject_partial(void)
{
	ruma_anon *s, *d;
	ruma_anon_result r;

	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	CHECK(pair_open(16, RUMA_REWIRE_UFFD, 40, &s, &d) == TEST_PASS);
	ruma_os_inject(RUMA_SYS_UFFDIO_MOVE, 1, 0, false); /* partial: first half only */
	CHECK_OK(ruma_anon_move(d, 0, s, 0, 16, &r));
	ruma_os_inject_clear();
	CHECK_EQ(r.pages_done, 16);
	CHECK_EQ(r.calls, 2);
	CHECK(moved_all(d, s, 16, 40));
	pair_close(s, d);
	return TEST_PASS;
}

/* A failing call stops the batch: what moved is at the destination, the rest at the source. */
static int fail_case(ruma_rewire_path path, ruma_sys sys)
{
	ruma_move_pair pairs[12];
	ruma_anon *s, *d;
	ruma_anon_result r;

	CHECK(pair_open(32, path, 90, &s, &d) == TEST_PASS);
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
	pair_close(s, d);
	return TEST_PASS;
}

static int t_inject_fail_uffd(void)
{
	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	return fail_case(RUMA_REWIRE_UFFD, RUMA_SYS_UFFDIO_MOVE);
}

TEST_BIND(t_inject_fail_mremap, fail_case, RUMA_REWIRE_MREMAP, RUMA_SYS_MREMAP)

/* Pages shared with a forked child cannot move (-EBUSY): they are copied instead. */
static int t_busy_after_fork(void)
{
	ruma_anon *s, *d;
	ruma_anon_result r;
	int pipefd[2];

	if (!have_uffd())
		SKIP("UFFDIO_MOVE not available");
	CHECK(pair_open(8, RUMA_REWIRE_UFFD, 300, &s, &d) == TEST_PASS);
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
	CHECK(moved_all(d, s, 8, 300));
	pair_close(s, d);
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

TEST_BIND(t_fallback_enosys, fallback_case, ENOSYS, "no userfaultfd")
TEST_BIND(t_fallback_eperm, fallback_case, EPERM, "not permitted")

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
	pair_close(s, d);
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
};

int main(int argc, char **argv)
{
	return test_main("rewire_move", cases, TEST_N(cases), argc, argv);
}
