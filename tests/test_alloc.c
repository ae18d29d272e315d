/*
 * test_alloc.c — the allocator backends (libc, pool, mempool, huge and its
 * THP / 4 KiB variants): alignment of every returned pointer, no overlap and
 * intact contents over long random alloc/free sequences checked against a
 * model, reuse of freed memory, page return of the huge backend, the huge
 * page source's fallback with and without reserved huge pages, injected mmap
 * failures, statistics and creation by name.
 */
#include "fixture.h"
#include "alloc/alloc_internal.h"
#include "alloc/alloc_fast.h"
#include "os/os.h"

#include <ruma/alloc.h>

#include <sys/mman.h>

static const char *const backends[] = { "libc", "pool", "mempool", "huge", "huge-thp", "huge-4k" };
#define NBACKENDS TEST_N(backends)


/* Bytes mapped according to the page counters of a huge instance. */
static uint64_t pages_bytes(const ruma_alloc_stats *st)
{
	return (st->pages_2m + st->pages_thp) * RUMA_PAGE_2M + st->pages_4k * RUMA_PAGE_4K;
}

/* ---- size classes ----------------------------------------------------------------- */

static int t_classes(void)
{
	for (size_t s = 1; s <= RUMA_CLASS_MAX; s++) {
		unsigned c = ruma_class_of(s);
		CHECK(c < RUMA_CLASS_COUNT);
		CHECK(ruma_class_size(c) >= s);
		CHECK(c == 0 || ruma_class_size(c - 1) < s);
	}
	for (size_t align = 1; align <= RUMA_ALLOC_MAX_ALIGN; align *= 2)
		for (size_t s = 1; s <= RUMA_CLASS_MAX - align; s += 7) {
			size_t cs = ruma_class_size(ruma_class_of(ruma_round_up(s, align)));
			CHECK_EQ(cs % align, 0);
		}
	CHECK_EQ(ruma_class_size(RUMA_CLASS_COUNT - 1), RUMA_CLASS_MAX);
	return TEST_PASS;
}

/* ---- creation ----------------------------------------------------------------------- */

static int t_by_name(void)
{
	ruma_alloc a;
	ruma_alloc_kind k;

	CHECK_EQ(ruma_alloc_create_by_name("jemalloc", NULL, &a), RUMA_EPARSE);
	CHECK_EQ(ruma_alloc_create_by_name("", NULL, &a), RUMA_EPARSE);
	CHECK_EQ(ruma_alloc_create_by_name(NULL, NULL, &a), RUMA_EPARSE);
	CHECK_EQ(ruma_alloc_kind_by_name("Huge", &k), RUMA_EPARSE);
	CHECK_EQ(ruma_alloc_create((ruma_alloc_kind)42, &a), -EINVAL);
	CHECK_EQ(ruma_alloc_create_huge(RUMA_HUGE_SRC_NONE, NULL, &a), -EINVAL);
	for (size_t i = 0; i < NBACKENDS; i++) {
		CHECK_OK(ruma_alloc_create_by_name(backends[i], NULL, &a));
		CHECK(strcmp(a.name, backends[i]) == 0);
		CHECK_OK(ruma_alloc_kind_by_name(backends[i], &k));
		CHECK(strncmp(ruma_alloc_kind_name(k), backends[i], strlen(ruma_alloc_kind_name(k))) ==
		      0);
		CHECK_EQ(ruma_alloc_huge_source(&a), RUMA_HUGE_SRC_NONE);
		ruma_alloc_destroy(&a);
		ruma_alloc_destroy(&a); /* a second destroy is harmless */
	}
	CHECK(strcmp(ruma_alloc_huge_source_name(RUMA_HUGE_SRC_THP), "thp") == 0);
	CHECK(strcmp(ruma_alloc_kind_name((ruma_alloc_kind)9), "?") == 0);
	return TEST_PASS;
}

/* ---- contract details: align limits, size 0, free(NULL) ----------------------------- */

static int t_edge_cases(void)
{
	for (size_t i = 0; i < NBACKENDS; i++) {
		ruma_alloc a;
		CHECK_OK(ruma_alloc_create_by_name(backends[i], NULL, &a));
		CHECK(ruma_alloc_alloc(&a, 16, 3) == NULL);
		CHECK(ruma_alloc_alloc(&a, 16, 24) == NULL);
		CHECK(ruma_alloc_alloc(&a, 16, RUMA_ALLOC_MAX_ALIGN * 2) == NULL);
		void *z1 = ruma_alloc_alloc(&a, 0, 0), *z2 = ruma_alloc_alloc(&a, 0, 0);
		CHECK(z1 && z2 && z1 != z2);
		ruma_alloc_free(&a, NULL, 0);
		ruma_alloc_free(&a, NULL, 123456);
		ruma_alloc_free(&a, z1, 0);
		ruma_alloc_free(&a, z2, 0);
		void *p = ruma_alloc_alloc(&a, 100, 0);
		CHECK(p && ((uintptr_t)p & 15) == 0);
		ruma_alloc_free(&a, p, 100);
		ruma_alloc_stats st;
		ruma_alloc_get_stats(&a, &st);
		CHECK_EQ(st.bytes_live, 0);
		CHECK_EQ(st.allocs, 3);
		CHECK_EQ(st.frees, 3);
		/* sizes whose page round-up wraps must fail, not map a few bytes
		 * (libc is glibc's malloc, which ASan would abort on instead) */
		for (size_t k = 0; k < 3 && strcmp(backends[i], "libc"); k++) {
			size_t big = k == 0 ? SIZE_MAX : k == 1 ? SIZE_MAX - 4096 : SIZE_MAX / 2 + 1;
			CHECK(ruma_alloc_alloc(&a, big, 0) == NULL);
		}
		ruma_alloc_destroy(&a);
	}
	return TEST_PASS;
}

/* ---- alignment ----------------------------------------------------------------------- */

static int t_alignment(void)
{
	enum { MAXSIZE = 4096 };
	void **ptr = calloc(MAXSIZE + 1, sizeof(*ptr));
	CHECK(ptr);
	for (size_t i = 0; i < NBACKENDS; i++) {
		ruma_alloc a;
		CHECK_OK(ruma_alloc_create_by_name(backends[i], NULL, &a));
		for (size_t align = 8; align <= RUMA_ALLOC_MAX_ALIGN; align *= 2) {
			for (size_t s = 1; s <= MAXSIZE; s++) {
				unsigned char *p = ruma_alloc_alloc(&a, s, align);
				if (!p || ((uintptr_t)p & (align - 1))) {
					fprintf(stderr, "  %s: size %zu align %zu -> %p\n", backends[i], s,
						align, (void *)p);
					free(ptr);
					return TEST_FAIL;
				}
				p[0] = (unsigned char)s;
				p[s - 1] = (unsigned char)(s >> 3);
				ptr[s] = p;
			}
			for (size_t s = 1; s <= MAXSIZE; s++) {
				unsigned char *p = ptr[s];
				CHECK(p[s - 1] == (unsigned char)(s >> 3));
				CHECK(s == 1 || p[0] == (unsigned char)s);
				ruma_alloc_free(&a, p, s);
			}
		}
		/* large objects are page aligned, so any align up to the maximum holds */
		for (size_t s = 40000; s < 3 * RUMA_MIB; s = s * 3 + 1) {
			void *p = ruma_alloc_alloc(&a, s, RUMA_ALLOC_MAX_ALIGN);
			CHECK(p && ((uintptr_t)p & (RUMA_ALLOC_MAX_ALIGN - 1)) == 0);
			memset(p, 0x5a, s);
			ruma_alloc_free(&a, p, s);
		}
		CHECK_EQ(test_alloc_live(&a), 0);
		ruma_alloc_destroy(&a);
	}
	free(ptr);
	return TEST_PASS;
}

/* ---- random alloc/free against a model ---------------------------------------------------- */

typedef struct obj {
	unsigned char *p;
	size_t size;
	uint64_t tag;
} obj;

static uint64_t pattern_word(uint64_t tag, size_t i)
{
	return (tag + i) * 0x9e3779b97f4a7c15ull ^ (tag >> 7);
}

/*
 * The words of an object that carry its pattern: all of them up to 64 KiB;
 * above, the first and last 4 KiB and one word per 4 KiB page in between
 * (large objects have their own mappings; sampling keeps the test fast).
 */
static bool patterned(size_t size, size_t word)
{
	size_t off = word * 8;
	return size <= 65536 || off < 4096 || off + 4096 >= size || off % 4096 == 0;
}

/* Fill the object with its tag's pattern: whole words, then the tail bytes. */
static void fill(const obj *o)
{
	size_t words = o->size / 8;
	for (size_t i = 0; i < words; i++) {
		if (!patterned(o->size, i)) {
			i += 4096 / 8 - 2;
			continue;
		}
		uint64_t w = pattern_word(o->tag, i);
		memcpy(o->p + 8 * i, &w, 8);
	}
	for (size_t i = words * 8; i < o->size; i++)
		o->p[i] = (unsigned char)(o->tag + i);
}

static bool intact(const obj *o)
{
	size_t words = o->size / 8;
	for (size_t i = 0; i < words; i++) {
		if (!patterned(o->size, i)) {
			i += 4096 / 8 - 2;
			continue;
		}
		uint64_t w;
		memcpy(&w, o->p + 8 * i, 8);
		if (w != pattern_word(o->tag, i))
			return false;
	}
	for (size_t i = words * 8; i < o->size; i++)
		if (o->p[i] != (unsigned char)(o->tag + i))
			return false;
	return true;
}

static size_t random_size(void)
{
	static const size_t art_nodes[] = { 56, 160, 656, 2064 };
	uint64_t r = ruma_rng_below(&test_rng, 1000);

	if (r < 400) /* the ART's node sizes */
		return art_nodes[ruma_rng_below(&test_rng, 4)];
	if (r < 850)
		return (size_t)ruma_rng_below(&test_rng, 300) + 1;
	if (r < 980)
		return (size_t)ruma_rng_below(&test_rng, 20000);
	if (r < 995) /* across the backends' large-object thresholds (16, 32, 64 KiB) */
		return (size_t)ruma_rng_below(&test_rng, 70000) + 10000;
	if (r < 998)
		return (size_t)ruma_rng_below(&test_rng, 1 << 20) + 70000;
	return (size_t)ruma_rng_below(&test_rng, 3 << 20) + (2 << 20);
}

static size_t random_align(void)
{
	uint64_t r = ruma_rng_below(&test_rng, 10);
	if (r < 5)
		return 0;
	return (size_t)1 << (3 + ruma_rng_below(&test_rng, 10)); /* 8 .. 4096 */
}

static int cmp_obj_addr(const void *x, const void *y)
{
	uintptr_t a = (uintptr_t)((const obj *)x)->p, b = (uintptr_t)((const obj *)y)->p;
	return a < b ? -1 : a > b;
}

/* No two live objects overlap (sorted by address, each ends before the next). */
static bool disjoint(const obj *live, size_t n)
{
	obj *s = malloc(n * sizeof(*s) + 1);
	bool ok = s != NULL;
	size_t m = 0;

	for (size_t i = 0; ok && i < n; i++)
		if (live[i].p)
			s[m++] = live[i];
	if (ok)
		qsort(s, m, sizeof(*s), cmp_obj_addr);
	for (size_t i = 1; ok && i < m; i++)
		ok = s[i - 1].p + (s[i - 1].size ? s[i - 1].size : 1) <= s[i].p;
	free(s);
	return ok;
}

static int model_run(const char *name, size_t ops, size_t slots)
{
	ruma_alloc a;
	obj *live = calloc(slots, sizeof(*live));
	uint64_t model_bytes = 0, model_count = 0, tag = 1;

	CHECK(live);
	CHECK_OK(ruma_alloc_create_by_name(name, NULL, &a));
	for (size_t op = 0; op < ops; op++) {
		obj *o = &live[ruma_rng_below(&test_rng, slots)];
		if (o->p) {
			if (!intact(o)) {
				fprintf(stderr, "  %s: op %zu: object %p size %zu corrupted\n", name, op,
					(void *)o->p, o->size);
				return TEST_FAIL;
			}
			ruma_alloc_free(&a, o->p, o->size);
			model_bytes -= o->size;
			model_count--;
			o->p = NULL;
			continue;
		}
		o->size = random_size();
		size_t align = random_align();
		o->p = ruma_alloc_alloc(&a, o->size, align);
		CHECK(o->p != NULL);
		CHECK(align == 0 || ((uintptr_t)o->p & (align - 1)) == 0);
		o->tag = tag++;
		fill(o);
		model_bytes += o->size;
		model_count++;
		if (op % 4096 == 0) {
			ruma_alloc_stats st;
			ruma_alloc_get_stats(&a, &st);
			CHECK_EQ(st.bytes_live, model_bytes);
			CHECK_EQ(st.allocs - st.frees, model_count);
			CHECK(st.bytes_mapped >= st.bytes_live);
			if (strncmp(name, "huge", 4) == 0)
				CHECK_EQ(pages_bytes(&st), st.bytes_mapped);
			CHECK(disjoint(live, slots));
		}
	}
	CHECK(disjoint(live, slots));
	for (size_t i = 0; i < slots; i++) {
		if (!live[i].p)
			continue;
		CHECK(intact(&live[i]));
		ruma_alloc_free(&a, live[i].p, live[i].size);
	}
	ruma_alloc_stats st;
	ruma_alloc_get_stats(&a, &st);
	CHECK_EQ(st.bytes_live, 0);
	CHECK_EQ(st.allocs, st.frees);
	if (strncmp(name, "huge", 4) == 0) {
		CHECK(st.bytes_mapped <= RUMA_PAGE_2M); /* at most the cached empty page */
		CHECK_EQ(pages_bytes(&st), st.bytes_mapped);
	}
	ruma_alloc_destroy(&a);
	free(live);
	return TEST_PASS;
}

static int t_model(void)
{
	size_t ops = test_sanitized() ? 40000 : 200000;

	for (size_t i = 0; i < NBACKENDS; i++) {
		double t0 = ruma_now_sec();
		int r = model_run(backends[i], ops, 3000);
		fprintf(stderr, "  model %-8s %.2fs\n", backends[i], ruma_now_sec() - t0);
		if (r != TEST_PASS) {
			fprintf(stderr, "  backend %s failed\n", backends[i]);
			return r;
		}
	}
	return TEST_PASS;
}

/* ---- reuse ------------------------------------------------------------------------------ */

static int cmp_ptr(const void *x, const void *y)
{
	uintptr_t a = (uintptr_t)*(void *const *)x, b = (uintptr_t)*(void *const *)y;
	return a < b ? -1 : a > b;
}

static int t_reuse(void)
{
	static const size_t sizes[] = { 1, 16, 56, 100, 160, 656, 2064, 5000, 16384, 30000 };
	enum { N = 1000 };
	void **first = malloc(N * sizeof(void *)), **second = malloc(N * sizeof(void *));
	CHECK(first && second);

	for (size_t b = 1; b < NBACKENDS; b++) { /* every backend but libc */
		ruma_alloc a;
		CHECK_OK(ruma_alloc_create_by_name(backends[b], NULL, &a));
		for (size_t k = 0; k < TEST_N(sizes); k++) {
			size_t s = sizes[k];
			if (s > 16384 && strcmp(backends[b], "pool") == 0)
				continue; /* the pool maps these directly */
			void *keep = ruma_alloc_alloc(&a, s, 0);
			void *p = ruma_alloc_alloc(&a, s, 0);
			CHECK(keep && p);
			ruma_alloc_free(&a, p, s);
			void *q = ruma_alloc_alloc(&a, s, 0);
			if (q != p) {
				fprintf(stderr, "  %s: size %zu: freed %p, got %p\n", backends[b], s, p, q);
				return TEST_FAIL;
			}
			ruma_alloc_free(&a, q, s);
			ruma_alloc_free(&a, keep, s);

			/* a freed batch is handed out again without new memory */
			for (int i = 0; i < N; i++)
				CHECK((first[i] = ruma_alloc_alloc(&a, s, 0)) != NULL);
			ruma_alloc_stats st1, st2;
			ruma_alloc_get_stats(&a, &st1);
			for (int i = 0; i < N; i++)
				ruma_alloc_free(&a, first[i], s);
			for (int i = 0; i < N; i++)
				CHECK((second[i] = ruma_alloc_alloc(&a, s, 0)) != NULL);
			ruma_alloc_get_stats(&a, &st2);
			CHECK_EQ(st2.bytes_mapped, st1.bytes_mapped);
			qsort(first, N, sizeof(void *), cmp_ptr);
			qsort(second, N, sizeof(void *), cmp_ptr);
			CHECK(memcmp(first, second, N * sizeof(void *)) == 0);
			for (int i = 0; i < N; i++)
				ruma_alloc_free(&a, second[i], s);
		}
		ruma_alloc_destroy(&a);
	}
	free(first);
	free(second);
	return TEST_PASS;
}

/* ---- huge: page return -------------------------------------------------------------------- */

static int t_huge_page_return(void)
{
	enum { N = 6000 }; /* 6000 * ~2.5 KiB: about 7 pages of 2 MiB */
	static const size_t sizes[] = { 2064, 656, 160, 56, 9000 };
	void **p = malloc(N * sizeof(void *));
	size_t *sz = malloc(N * sizeof(size_t));
	ruma_alloc a;
	ruma_alloc_stats st;

	CHECK(p && sz);
	CHECK_OK(ruma_alloc_create(RUMA_ALLOC_HUGE, &a));
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			sz[i] = sizes[ruma_rng_below(&test_rng, TEST_N(sizes))];
			CHECK((p[i] = ruma_alloc_alloc(&a, sz[i], 0)) != NULL);
			memset(p[i], i & 0xff, sz[i]);
		}
		ruma_alloc_get_stats(&a, &st);
		CHECK(st.bytes_mapped >= 4 * RUMA_PAGE_2M);
		CHECK_EQ(pages_bytes(&st), st.bytes_mapped);
		/* free in random order */
		for (int i = N - 1; i > 0; i--) {
			int j = (int)ruma_rng_below(&test_rng, (uint64_t)i + 1);
			void *tp = p[i];
			size_t ts = sz[i];
			p[i] = p[j], sz[i] = sz[j], p[j] = tp, sz[j] = ts;
		}
		for (int i = 0; i < N; i++) {
			CHECK(((unsigned char *)p[i])[0] == ((unsigned char *)p[i])[sz[i] - 1]);
			ruma_alloc_free(&a, p[i], sz[i]);
		}
		ruma_alloc_get_stats(&a, &st);
		CHECK_EQ(st.bytes_live, 0);
		CHECK(st.bytes_mapped <= RUMA_PAGE_2M);
		CHECK_EQ(pages_bytes(&st), st.bytes_mapped);
	}
	/* large objects: their own mapping, returned on free */
	uint64_t before = st.bytes_mapped;
	void *big = ruma_alloc_alloc(&a, 3 * RUMA_MIB, 0);
	void *mid = ruma_alloc_alloc(&a, 100000, 0);
	CHECK(big && mid);
	ruma_alloc_get_stats(&a, &st);
	CHECK_EQ(st.bytes_mapped, before + 4 * RUMA_MIB + ruma_round_up(100000, RUMA_PAGE_4K));
	ruma_alloc_free(&a, big, 3 * RUMA_MIB);
	ruma_alloc_free(&a, mid, 100000);
	ruma_alloc_get_stats(&a, &st);
	CHECK_EQ(st.bytes_mapped, before);
	ruma_alloc_destroy(&a);
	free(p);
	free(sz);
	return TEST_PASS;
}

/* ---- huge: page source fallback ------------------------------------------------------------ */

#define GRAB_MAX 2048

/* Map every free 2 MiB huge page of the system (one mapping each). */
static size_t grab_hugetlb(void **grabbed)
{
	size_t n = 0;

	while (n < GRAB_MAX &&
	       ruma_os_mmap(NULL, RUMA_PAGE_2M, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0, &grabbed[n]) == 0)
		n++;
	return n;
}

static void release_hugetlb(void **grabbed, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ruma_os_munmap(grabbed[i], RUMA_PAGE_2M);
}

static long test_read_long(const char *path);

static int t_huge_none_reserved(void)
{
	if (test_read_long("/proc/sys/vm/nr_overcommit_hugepages") > 0)
		SKIP("vm.nr_overcommit_hugepages > 0: surplus huge pages cannot be exhausted safely");
	ruma_alloc a;
	int rc = TEST_PASS;
	CHECK_OK(ruma_alloc_create(RUMA_ALLOC_HUGE, &a));
	void **grabbed = malloc(GRAB_MAX * sizeof(void *));
	CHECK(grabbed);
	size_t n = grab_hugetlb(grabbed);
	if (n == GRAB_MAX) {
		release_hugetlb(grabbed, n);
		free(grabbed);
		ruma_alloc_destroy(&a);
		SKIP("more than %d free huge pages; cannot exhaust them", GRAB_MAX);
	}
	void *p = ruma_alloc_alloc(&a, 2064, 0);
	void *big = ruma_alloc_alloc(&a, 4 * RUMA_MIB, 0);
	ruma_alloc_stats st;
	ruma_alloc_get_stats(&a, &st);
	ruma_huge_source src = ruma_alloc_huge_source(&a);
	/* give the pages back at once: other processes may be waiting for them */
	release_hugetlb(grabbed, n);
	free(grabbed);
	fprintf(stderr, "  (%zu free huge pages held; source %s)\n", n,
		ruma_alloc_huge_source_name(src));
	if (!p || !big || st.pages_2m != 0 ||
	    (src != RUMA_HUGE_SRC_THP && src != RUMA_HUGE_SRC_4K) ||
	    st.pages_thp + st.pages_4k == 0) {
		fprintf(stderr, "  FAIL: p=%p big=%p pages_2m=%llu source=%s\n", p, big,
			(unsigned long long)st.pages_2m, ruma_alloc_huge_source_name(src));
		rc = TEST_FAIL;
	}
	if (p) {
		memset(p, 1, 2064);
		ruma_alloc_free(&a, p, 2064);
	}
	if (big) {
		memset(big, 1, 4 * RUMA_MIB);
		ruma_alloc_free(&a, big, 4 * RUMA_MIB);
	}
	ruma_alloc_destroy(&a);
	return rc;
}




static const char nr_path[] = "/proc/sys/vm/nr_hugepages";

/* Allocate with reserved pages raised by 4; the caller restores nr_hugepages. */
static int huge_reserved_body(void)
{
	ruma_alloc a;
	ruma_alloc_stats st;

	CHECK_OK(ruma_alloc_create(RUMA_ALLOC_HUGE, &a));
	void *p = ruma_alloc_alloc(&a, 656, 0);
	CHECK(p);
	memset(p, 7, 656);
	ruma_alloc_get_stats(&a, &st);
	ruma_huge_source src = ruma_alloc_huge_source(&a);
	int rc = TEST_PASS;
	if (src != RUMA_HUGE_SRC_HUGETLB || st.pages_2m != 1) {
		long free_pages = test_meminfo("HugePages_Free");
		fprintf(stderr, "  source %s, pages_2m %llu, HugePages_Free %ld\n",
			ruma_alloc_huge_source_name(src), (unsigned long long)st.pages_2m,
			free_pages);
		/* another process may have taken the pages we reserved */
		rc = free_pages == 0 ? TEST_SKIP : TEST_FAIL;
	}
	ruma_alloc_free(&a, p, 656);
	ruma_alloc_destroy(&a);
	return rc;
}

static int t_huge_reserved(void)
{
	long before = test_read_long(nr_path);

	if (before < 0 || access(nr_path, W_OK) != 0)
		SKIP("cannot write %s (needs root)", nr_path);
	if (!test_write_long(nr_path, before + 4)) {
		test_write_long(nr_path, before);
		SKIP("cannot raise %s", nr_path);
	}
	int rc;
	if (test_read_long(nr_path) < before + 4) {
		fprintf(stderr, "  skip: the kernel could not reserve 4 more huge pages\n");
		rc = TEST_SKIP;
	} else {
		rc = huge_reserved_body();
	}
	bool restored = test_write_long(nr_path, before) && test_read_long(nr_path) == before;
	if (!restored)
		fprintf(stderr, "  FAIL: could not restore %s to %ld\n", nr_path, before);
	return restored ? rc : TEST_FAIL;
}

/* ---- injected mmap failures ------------------------------------------------------------------ */

static int t_inject_huge_fallback(void)
{
	ruma_alloc a;

	CHECK_OK(ruma_alloc_create(RUMA_ALLOC_HUGE, &a));
	uint64_t inj = ruma_os_injected(RUMA_SYS_MMAP);
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, false); /* the hugetlb attempt fails */
	uint64_t calls = ruma_os_count(RUMA_SYS_MMAP);
	void *big = ruma_alloc_alloc(&a, 2 * RUMA_MIB, 0);
	ruma_os_inject_clear();
	CHECK(big);
	CHECK_EQ(ruma_os_injected(RUMA_SYS_MMAP), inj + 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), calls + 2); /* hugetlb (failed), then THP/4K */
	CHECK(ruma_alloc_huge_source(&a) != RUMA_HUGE_SRC_HUGETLB);
	memset(big, 3, 2 * RUMA_MIB);

	/* back-off: the next 8 page requests skip the hugetlb attempt */
	void *more[8];
	calls = ruma_os_count(RUMA_SYS_MMAP);
	for (int i = 0; i < 8; i++)
		CHECK((more[i] = ruma_alloc_alloc(&a, 2 * RUMA_MIB, 0)) != NULL);
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), calls + 8);
	for (int i = 0; i < 8; i++)
		ruma_alloc_free(&a, more[i], 2 * RUMA_MIB);
	ruma_alloc_free(&a, big, 2 * RUMA_MIB);

	/* a failure of the THP mapping falls through to 4 KiB pages */
	ruma_alloc b;
	CHECK_OK(ruma_alloc_create_huge(RUMA_HUGE_SRC_THP, NULL, &b));
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, false);
	void *q = ruma_alloc_alloc(&b, 100, 0);
	ruma_os_inject_clear();
	CHECK(q);
	CHECK_EQ(ruma_alloc_huge_source(&b), RUMA_HUGE_SRC_4K);
	ruma_alloc_stats st;
	ruma_alloc_get_stats(&b, &st);
	CHECK_EQ(st.pages_4k, 512);
	ruma_alloc_free(&b, q, 100);
	ruma_alloc_destroy(&b);
	ruma_alloc_destroy(&a);
	return TEST_PASS;
}

struct said {
	char line[4][512];
	int n;
};

static void keep_lines(void *ctx, const char *line)
{
	struct said *m = ctx;
	if (m->n < 4)
		snprintf(m->line[m->n], sizeof(m->line[0]), "%s", line);
	m->n++;
}

/* The huge backend reports its page source through the instance's
 * callback, once per source and instance; without one it is silent. */
static int t_huge_messages(void)
{
	struct said m = { .n = 0 };
	ruma_alloc_options o = { .message = keep_lines, .message_ctx = &m };
	ruma_alloc a, b;

	CHECK_OK(ruma_alloc_create_by_name("huge-4k", &o, &a));
	void *p = ruma_alloc_alloc(&a, 100, 0), *q = ruma_alloc_alloc(&a, 3 * RUMA_MIB, 0);
	CHECK(p && q);
	CHECK_EQ(m.n, 1); /* two mappings from one source: one line */
	CHECK(strcmp(m.line[0], "huge allocator: pages from 4 KiB pages (requested)") == 0);
	ruma_alloc_free(&a, q, 3 * RUMA_MIB);
	ruma_alloc_free(&a, p, 100);
	ruma_alloc_destroy(&a);

	CHECK_OK(ruma_alloc_create_huge(RUMA_HUGE_SRC_4K, &o, &b));
	CHECK((p = ruma_alloc_alloc(&b, 100, 0)) != NULL);
	CHECK_EQ(m.n, 2); /* a new instance says it again */
	ruma_alloc_free(&b, p, 100);
	ruma_alloc_destroy(&b);

	CHECK_OK(ruma_alloc_create_by_name("huge-4k", NULL, &a)); /* no callback: silent */
	CHECK((p = ruma_alloc_alloc(&a, 100, 0)) != NULL);
	CHECK_EQ(m.n, 2);
	ruma_alloc_free(&a, p, 100);
	ruma_alloc_destroy(&a);
	ruma_alloc_options quiet;
	ruma_alloc_options_default(&quiet); /* the defaults: no callback either */
	CHECK_OK(ruma_alloc_create_huge(RUMA_HUGE_SRC_4K, &quiet, &b));
	CHECK((p = ruma_alloc_alloc(&b, 100, 0)) != NULL);
	CHECK_EQ(m.n, 2);
	ruma_alloc_free(&b, p, 100);
	ruma_alloc_destroy(&b);
	CHECK_EQ(ruma_alloc_create_by_name("nope", &o, &a), RUMA_EPARSE);
	return TEST_PASS;
}

static int t_inject_sticky(void)
{
	static const size_t sizes[] = { 100, 2064, 40000, 3 << 20 };

	for (size_t b = 1; b < NBACKENDS; b++) { /* libc does not map through src/os */
		ruma_alloc a;
		ruma_alloc_stats st;
		CHECK_OK(ruma_alloc_create_by_name(backends[b], NULL, &a));
		void *keep = ruma_alloc_alloc(&a, 300, 0);
		CHECK(keep);
		memset(keep, 9, 300);
		/* exhaust what the instance already holds for class 2064 */
		ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, true);
		void *held[2048];
		size_t nheld = 0;
		while (nheld < 2048 && (held[nheld] = ruma_alloc_alloc(&a, 2064, 0)) != NULL)
			nheld++;
		for (size_t k = 0; k < TEST_N(sizes); k++)
			if (sizes[k] != 2064 && sizes[k] != 100)
				CHECK(ruma_alloc_alloc(&a, sizes[k], 0) == NULL);
		CHECK(nheld < 2048);
		ruma_os_inject_clear();
		ruma_alloc_get_stats(&a, &st);
		CHECK_EQ(st.bytes_live, 300 + nheld * 2064);
		/* usable again: every size works, the old object is intact */
		for (size_t k = 0; k < TEST_N(sizes); k++) {
			void *p = ruma_alloc_alloc(&a, sizes[k], 0);
			CHECK(p);
			memset(p, 1, sizes[k]);
			ruma_alloc_free(&a, p, sizes[k]);
		}
		for (size_t i = 0; i < 300; i++)
			CHECK(((unsigned char *)keep)[i] == 9);
		for (size_t i = 0; i < nheld; i++)
			ruma_alloc_free(&a, held[i], 2064);
		ruma_alloc_free(&a, keep, 300);
		ruma_alloc_get_stats(&a, &st);
		CHECK_EQ(st.bytes_live, 0);
		CHECK_EQ(st.allocs, st.frees);
		ruma_alloc_destroy(&a);

		/* a fresh instance: the very first alloc fails cleanly */
		CHECK_OK(ruma_alloc_create_by_name(backends[b], NULL, &a));
		ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, true);
		CHECK(ruma_alloc_alloc(&a, 64, 0) == NULL);
		ruma_os_inject_clear();
		void *p = ruma_alloc_alloc(&a, 64, 0);
		CHECK(p);
		ruma_alloc_free(&a, p, 64);
		ruma_alloc_get_stats(&a, &st);
		CHECK_EQ(st.bytes_live, 0);
		CHECK_EQ(st.allocs, 1);
		ruma_alloc_destroy(&a);
	}
	return TEST_PASS;
}

/* Under ASan, freed pool objects are poisoned and handed-out ones are not. */
static int t_asan_poison(void)
{
#if RUMA_ASAN
	for (size_t b = 1; b < NBACKENDS; b++) {
		ruma_alloc a;
		CHECK_OK(ruma_alloc_create_by_name(backends[b], NULL, &a));
		char *keep = ruma_alloc_alloc(&a, 656, 0);
		char *p = ruma_alloc_alloc(&a, 656, 0);
		CHECK(keep && p);
		CHECK(!__asan_region_is_poisoned(p, 656));
		ruma_alloc_free(&a, p, 656);
		CHECK(__asan_address_is_poisoned(p + 8));
		CHECK(__asan_address_is_poisoned(p + 600));
		char *q = ruma_alloc_alloc(&a, 656, 0);
		CHECK(q == p);
		CHECK(!__asan_region_is_poisoned(q, 656));
		ruma_alloc_free(&a, q, 656);
		ruma_alloc_free(&a, keep, 656);
		ruma_alloc_destroy(&a);
	}
	return TEST_PASS;
#else
	SKIP("not built with AddressSanitizer");
#endif
}

/* The kind of each backend is recognised; allocating through the direct
 * path gives the same statistics as through the vtable; a user vtable is
 * called as such. */
static void *counting_alloc(void *ctx, size_t size, size_t align)
{
	(void)align;
	++*(int *)ctx;
	return malloc(size);
}

static void counting_free(void *ctx, void *p, size_t size)
{
	(void)size;
	++*(int *)ctx;
	free(p);
}

static int t_fast_kind(void)
{
	static const struct {
		const char *name;
		int kind;
	} k[] = { { "libc", RUMA_ALLOC_FAST_LIBC }, { "pool", RUMA_ALLOC_FAST_POOL },
		  { "mempool", RUMA_ALLOC_FAST_MEMPOOL }, { "huge-4k", RUMA_ALLOC_FAST_HUGE } };

	for (size_t i = 0; i < TEST_N(k); i++) {
		ruma_alloc a;
		ruma_alloc_stats st;
		CHECK_OK(ruma_alloc_create_by_name(k[i].name, NULL, &a));
		CHECK_EQ(ruma_alloc_fast_kind(&a), k[i].kind);
		void *p = ruma_alloc_fast_alloc(k[i].kind, &a, 656, 8);
		void *q = ruma_alloc_alloc(&a, 56, 8);
		CHECK(p && q && ((uintptr_t)p & 7) == 0);
		memset(p, 1, 656);
		ruma_alloc_get_stats(&a, &st);
		CHECK_EQ(st.bytes_live, 656 + 56);
		CHECK_EQ(st.allocs, 2);
		ruma_alloc_fast_free(k[i].kind, &a, q, 56);
		ruma_alloc_free(&a, p, 656);
		ruma_alloc_get_stats(&a, &st);
		CHECK_EQ(st.bytes_live, 0);
		CHECK_EQ(st.frees, 2);
		ruma_alloc_destroy(&a);
	}
	int calls = 0;
	ruma_alloc user = { counting_alloc, counting_free, NULL, NULL, &calls, "user" };
	CHECK_EQ(ruma_alloc_fast_kind(&user), RUMA_ALLOC_FAST_VTABLE);
	CHECK_EQ(ruma_alloc_fast_kind(NULL), RUMA_ALLOC_FAST_VTABLE);
	void *p = ruma_alloc_fast_alloc(RUMA_ALLOC_FAST_VTABLE, &user, 16, 8);
	CHECK(p);
	ruma_alloc_fast_free(RUMA_ALLOC_FAST_VTABLE, &user, p, 16);
	CHECK_EQ(calls, 2);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "classes", t_classes },
	{ "by_name", t_by_name },
	{ "edge_cases", t_edge_cases },
	{ "alignment", t_alignment },
	{ "model", t_model },
	{ "reuse", t_reuse },
	{ "huge_page_return", t_huge_page_return },
	{ "huge_none_reserved", t_huge_none_reserved },
	{ "huge_reserved", t_huge_reserved },
	{ "inject_huge_fallback", t_inject_huge_fallback },
	{ "inject_sticky", t_inject_sticky },
	{ "huge_messages", t_huge_messages },
	{ "asan_poison", t_asan_poison },
	{ "fast_kind", t_fast_kind },
};

int main(int argc, char **argv)
{
	return test_main("alloc", cases, TEST_N(cases), argc, argv);
}
