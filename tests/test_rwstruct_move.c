/*
 * test_rwstruct_move.c — the structures on the page-move paths (anon.h):
 * mapped partitioning with one-page blocks over a low mapping budget (UFFD
 * keeps one kernel mapping, mremap stays within the budget, the memfd way
 * is refused with RUMA_EMAPLIMIT), a failing move during the final layout,
 * and random-placement pools with and without userfaultfd.
 */
#include "move_util.h"
#include "rewire/rewire_ext.h"
#include <ruma/partition.h>
#include <ruma/pool.h>
#include <ruma/sysinfo.h>

#include "os/os.h"

#define PG 4096u

/* ---- mapped partitioning with one-page blocks over a low mapping budget ---------------- */

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
	CHECK(test_same_u64s(a, b, n));
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
	{ "partition_uffd", t_partition_uffd },
	{ "partition_fallback", t_partition_fallback },
	{ "partition_inject", t_partition_inject },
	{ "pool_random", t_pool_random },
};

int main(int argc, char **argv)
{
	return test_main("rwstruct_move", cases, TEST_N(cases), argc, argv);
}
