/*
 * test_rwstruct.c — the data structures built on rewiring: vectors,
 * partitioning, snapshots and allocation pools.  Every result is compared
 * with a reference computed without rewiring (a plain array model, a sort,
 * a histogram, a memcpy'ed copy).  Huge-page parts reserve 16 more 2 MiB
 * pages while they run when they may (and restore vm.nr_hugepages), and
 * skip when no 2 MiB page is free.
 */
#include "test.h"
#include "os/os.h"

#include <ruma/area.h>
#include <ruma/partition.h>
#include <ruma/pool.h>
#include <ruma/snapshot.h>
#include "core/sanitizer.h"
#include "core/sysinfo_ext.h"
#include "rwstruct/rwstruct_ext.h"
#include <ruma/vector.h>

#include <linux/memfd.h>
#include <sys/mman.h>


/*
 * Mappings that only ruma structures make here: memfd mappings and PROT_NONE
 * reservations (glibc's own mmaps come and go with its allocation policy,
 * so the total count is not a stable leak check).
 */
#if RUMA_ASAN
static const bool count_reservations = false; /* the sanitizer maps PROT_NONE regions itself */
#else
static const bool count_reservations = true;
#endif

static uint64_t count_maps(bool reservations)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "/memfd:") != NULL || (reservations && strstr(line, " ---p "));
	fclose(f);
	return n;
}

static uint64_t maps_now(void)
{
	return count_maps(count_reservations);
}

/* Kernel mappings of memfds (the rewired structures' pool pages). */
static uint64_t memfd_maps(void)
{
	return count_maps(false);
}

/* ---- vectors ------------------------------------------------------------------ */

/* Random push / insert / set / shrink against a plain array model. */
static int vec_model_run(ruma_vec_kind kind, bool huge, bool prepop, size_t ops)
{
	ruma_vec_options o;
	ruma_vec *v;
	size_t cap = 1024, n = 0;
	uint64_t *model = malloc(cap * sizeof(*model));
	int rc;

	CHECK(model);
	ruma_vec_options_default(&o);
	o.kind = kind;
	o.huge = huge;
	o.prepopulate = prepop;
	o.max_bytes = (size_t)1 << 30;
	o.initial_capacity = huge ? 1 : 0; /* a lack of huge pages shows at creation */
	rc = ruma_vec_create(&o, &v);
	if (rc == RUMA_ENOHUGE) {
		free(model);
		SKIP("%s huge: no free 2 MiB pages", ruma_vec_kind_name(kind));
	}
	CHECK_OK(rc);
	if (huge) { /* more than one 2 MiB page before the random operations */
		size_t pre = RUMA_PAGE_2M / 8 + 1000;
		while (cap < pre + 1024)
			cap *= 2;
		model = realloc(model, cap * sizeof(*model));
		CHECK(model);
		for (size_t i = 0; i < pre; i++) {
			model[i] = i * 11;
			CHECK_OK(ruma_vec_push_u64(v, i * 11));
		}
		n = pre;
	}
	for (size_t op = 0; op < ops; op++) {
		uint64_t r = ruma_rng_below(&test_rng, 100), x = ruma_rng_next(&test_rng);
		if (n + 600 > cap) {
			cap *= 2;
			model = realloc(model, cap * sizeof(*model));
			CHECK(model);
		}
		if (r < 60) { /* bursts of pushes cross pages */
			size_t k = 1 + ruma_rng_below(&test_rng, 300);
			for (size_t i = 0; i < k; i++) {
				CHECK_OK(ruma_vec_push_u64(v, x + i));
				model[n++] = x + i;
			}
		} else if (r < 80) {
			size_t pos = ruma_rng_below(&test_rng, n + 1);
			CHECK_OK(ruma_vec_insert_u64(v, pos, x));
			memmove(model + pos + 1, model + pos, (n - pos) * sizeof(*model));
			model[pos] = x;
			n++;
		} else if (r < 90 && n) {
			size_t i = ruma_rng_below(&test_rng, n);
			ruma_vec_set_u64(v, i, x);
			model[i] = x;
		} else if (r < 95) {
			size_t nn = n ? ruma_rng_below(&test_rng, n + 1) : 0;
			CHECK_OK(ruma_vec_shrink(v, nn));
			n = nn;
			CHECK(ruma_vec_capacity(v) >= n);
		} else {
			uint64_t tmp[37];
			for (size_t i = 0; i < 37; i++)
				tmp[i] = x ^ i;
			CHECK_OK(ruma_vec_push_many(v, tmp, 37));
			memcpy(model + n, tmp, sizeof(tmp));
			n += 37;
		}
		CHECK_EQ(ruma_vec_size(v), n);
	}
	uint64_t *data = ruma_vec_data(v);
	CHECK(kind == RUMA_VEC_INDIRECT ? data == NULL : (data != NULL || n == 0));
	for (size_t i = 0; i < n; i++) {
		uint64_t got;
		CHECK_OK(ruma_vec_get(v, i, &got));
		if (got != model[i] || ruma_vec_get_u64(v, i) != model[i] || (data && data[i] != model[i])) {
			fprintf(stderr, "  %s: element %zu differs\n", ruma_vec_kind_name(kind), i);
			return TEST_FAIL;
		}
	}
	/* pages view agrees with element access */
	size_t per_page = ruma_vec_page_bytes(v) / 8;
	for (size_t i = 0; i < n; i += 97) {
		uint64_t *pg = ruma_vec_page(v, i / per_page);
		CHECK(pg && pg[i % per_page] == model[i]);
	}
	CHECK_EQ(ruma_vec_get(v, n, &(uint64_t){ 0 }), -EINVAL);
	CHECK_EQ(ruma_vec_insert_u64(v, n + 1, 1), -EINVAL);
	ruma_vec_destroy(v);
	free(model);
	return TEST_PASS;
}

static int t_vec_model_4k(void)
{
	size_t ops = test_sanitized() ? 300 : 1500;
	for (int k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
		int r = vec_model_run((ruma_vec_kind)k, false, false, ops);
		if (r)
			return r;
	}
	CHECK_EQ(vec_model_run(RUMA_VEC_REWIRED, false, true, ops), TEST_PASS);
	CHECK_EQ(vec_model_run(RUMA_VEC_MREMAP, false, true, ops), TEST_PASS);
	return TEST_PASS;
}

static int t_vec_model_2m(void)
{
	int skipped = 0;
	ruma_vec_kind kinds[] = { RUMA_VEC_REWIRED, RUMA_VEC_MREMAP, RUMA_VEC_INDIRECT };
	for (size_t k = 0; k < TEST_N(kinds); k++) {
		int r = vec_model_run(kinds[k], true, k == 0, 400);
		if (r == TEST_SKIP)
			skipped++;
		else if (r)
			return r;
	}
	return skipped == (int)TEST_N(kinds) ? TEST_SKIP : TEST_PASS;
}

/* Elements of 24 bytes: growth and insertion keep whole elements. */
static int t_vec_generic_elem(void)
{
	struct e24 { uint64_t a, b, c; };
	for (int k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
		ruma_vec_options o;
		ruma_vec *v;
		ruma_vec_options_default(&o);
		o.kind = (ruma_vec_kind)k;
		o.elem_size = sizeof(struct e24);
		o.max_bytes = 64 << 20;
		CHECK_OK(ruma_vec_create(&o, &v));
		CHECK_EQ(ruma_vec_push_u64(v, 1), -EINVAL);
		for (uint64_t i = 0; i < 3000; i++) {
			struct e24 e = { i, i * 3, ~i };
			if (i % 10 == 9)
				CHECK_OK(ruma_vec_insert(v, 0, &e));
			else
				CHECK_OK(ruma_vec_push(v, &e));
		}
		size_t head = 0, tail = 0;
		for (size_t i = 0; i < 3000; i++) {
			struct e24 e;
			CHECK_OK(ruma_vec_get(v, i, &e));
			CHECK(e.b == e.a * 3 && e.c == ~e.a);
			if (i < 300) { /* inserted at 0: reverse order of 9, 19, ... */
				CHECK_EQ(e.a, 2999 - 10 * head);
				head++;
			} else {
				CHECK_EQ(e.a % 10 != 9, 1);
				tail++;
			}
		}
		CHECK_EQ(head + tail, 3000);
		ruma_vec_destroy(v);
	}
	return TEST_PASS;
}

/* A failing mmap during growth of the rewired vector: error, old state kept. */
static int t_vec_inject_growth(void)
{
	ruma_vec_options o;
	ruma_vec *v;
	size_t n = 0;
	int rc = 0;

	ruma_vec_options_default(&o);
	o.max_bytes = 256 << 20;
	CHECK_OK(ruma_vec_create(&o, &v));
	for (uint64_t i = 0; i < 5000; i++)
		CHECK_OK(ruma_vec_push_u64(v, i * 7));
	n = ruma_vec_size(v);
	size_t cap = ruma_vec_capacity(v);
	for (uint64_t i = n; i < cap; i++)
		CHECK_OK(ruma_vec_push_u64(v, i * 7));
	n = cap;
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, false);
	rc = ruma_vec_push_u64(v, 12345);
	ruma_os_inject_clear();
	CHECK(rc != 0);
	CHECK_EQ(ruma_vec_size(v), n);
	CHECK_EQ(ruma_vec_capacity(v), cap);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(ruma_vec_get_u64(v, i), i * 7);
	/* sticky failure: every growth attempt fails, nothing changes */
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, true);
	CHECK(ruma_vec_reserve(v, n * 4) != 0);
	ruma_os_inject_clear();
	CHECK_EQ(ruma_vec_size(v), n);
	/* and it works again afterwards */
	CHECK_OK(ruma_vec_push_u64(v, 12345));
	CHECK_EQ(ruma_vec_get_u64(v, n), 12345);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(ruma_vec_get_u64(v, i), i * 7);
	ruma_vec_destroy(v);

	/* the mremap vector too */
	o.kind = RUMA_VEC_MREMAP;
	CHECK_OK(ruma_vec_create(&o, &v));
	for (uint64_t i = 0; i < 512; i++)
		CHECK_OK(ruma_vec_push_u64(v, i));
	ruma_os_inject(RUMA_SYS_MREMAP, 1, ENOMEM, false);
	CHECK_EQ(ruma_vec_push_u64(v, 512), -ENOMEM);
	ruma_os_inject_clear();
	CHECK_EQ(ruma_vec_size(v), 512);
	for (size_t i = 0; i < 512; i++)
		CHECK_EQ(ruma_vec_get_u64(v, i), i);
	ruma_vec_destroy(v);
	return TEST_PASS;
}

/*
 * The exported out-of-line forms of the inline hot paths, reached by their
 * symbol names (the header makes the same names inline).
 */
extern int ool_push_u64(ruma_vec *v, uint64_t x) __asm__("ruma_vec_push_u64");
extern uint64_t ool_get_u64(const ruma_vec *v, size_t i) __asm__("ruma_vec_get_u64");
extern void ool_set_u64(ruma_vec *v, size_t i, uint64_t x) __asm__("ruma_vec_set_u64");

/*
 * The head agrees with the accessor functions.  An empty push run before
 * the capacity is reached is allowed only with populate-ahead (`windowed`):
 * the run then ends at the end of a populated window.
 */
static bool head_consistent_run(ruma_vec *v, bool windowed)
{
	const ruma_vec_head *h = ruma_vec_head_of(v);
	size_t size = ruma_vec_head_size(h);

	return size == ruma_vec_size(v) && h->cap == ruma_vec_capacity(v) &&
	       (void *)h->data == ruma_vec_data(v) && h->push_pos <= h->push_limit &&
	       h->run_start <= h->push_pos && size <= h->cap &&
	       (h->push_pos == h->push_limit || (void *)h->push_pos == ruma_vec_at(v, size)) &&
	       (h->push_pos != h->push_limit || size == h->cap || ruma_vec_elem_size(v) != 8 ||
		ruma_vec_kind_of(v) == RUMA_VEC_INDIRECT || windowed);
}

static bool head_consistent(ruma_vec *v)
{
	return head_consistent_run(v, false);
}

/*
 * Inline push/get/set and the push cursor against the exported
 * out-of-line functions: two vectors of one kind get the same operations —
 * one through the inline paths, one through the library's symbols — mixed
 * with the calls that move
 * the push run (push_many, insert, shrink, clear, reserve).
 */
static int vec_inline_run(ruma_vec_kind kind, bool huge, size_t populate_ahead)
{
	bool windowed = populate_ahead != RUMA_VEC_POPULATE_AHEAD_OFF;
	ruma_vec_options o;
	ruma_vec *a, *b;
	int rc;

	ruma_vec_options_default(&o);
	o.kind = kind;
	o.huge = huge;
	o.populate_ahead = populate_ahead;
	o.max_bytes = (size_t)1 << 30;
	rc = ruma_vec_create(&o, &a);
	if (rc == RUMA_ENOHUGE)
		return TEST_SKIP;
	CHECK_OK(rc);
	CHECK_OK(ruma_vec_create(&o, &b));
	for (int round = 0; round < 40; round++) {
		uint64_t r = ruma_rng_below(&test_rng, 100), x = ruma_rng_next(&test_rng);
		size_t n = ruma_vec_size(a);
		if (r < 35) {
			size_t k = 1 + ruma_rng_below(&test_rng, 5000);
			for (size_t i = 0; i < k; i++) {
				CHECK_OK(ruma_vec_push_u64(a, x + i));
				CHECK_OK(ool_push_u64(b, x + i));
			}
		} else if (r < 50) {
			size_t k = ruma_rng_below(&test_rng, 20000);
			ruma_vec_cursor c = ruma_vec_cursor_begin(a);
			for (size_t i = 0; i < k; i++)
				CHECK_OK(ruma_vec_cursor_push(a, &c, x ^ i));
			ruma_vec_cursor_end(a, c);
			for (size_t i = 0; i < k; i++)
				CHECK_OK(ool_push_u64(b, x ^ i));
		} else if (r < 60) {
			uint64_t tmp[300];
			size_t k = ruma_rng_below(&test_rng, 300);
			for (size_t i = 0; i < k; i++)
				tmp[i] = x * i;
			CHECK_OK(ruma_vec_push_many(a, tmp, k));
			CHECK_OK(ruma_vec_push_many(b, tmp, k));
		} else if (r < 70) {
			size_t pos = ruma_rng_below(&test_rng, n + 1);
			CHECK_OK(ruma_vec_insert_u64(a, pos, x));
			CHECK_OK(ruma_vec_insert_u64(b, pos, x));
		} else if (r < 80 && n) {
			for (int j = 0; j < 100; j++) {
				size_t i = ruma_rng_below(&test_rng, n);
				ruma_vec_set_u64(a, i, x + (uint64_t)j);
				ool_set_u64(b, i, x + (uint64_t)j);
			}
		} else if (r < 88) {
			size_t nn = ruma_rng_below(&test_rng, n + 1);
			CHECK_OK(ruma_vec_shrink(a, nn));
			CHECK_OK(ruma_vec_shrink(b, nn));
		} else if (r < 92) {
			ruma_vec_clear(a);
			ruma_vec_clear(b);
		} else {
			size_t want = n + ruma_rng_below(&test_rng, 20000);
			CHECK_OK(ruma_vec_reserve(a, want));
			CHECK_OK(ruma_vec_reserve(b, want));
		}
		CHECK(head_consistent_run(a, windowed) && head_consistent_run(b, windowed));
		CHECK_EQ(ruma_vec_size(a), ruma_vec_size(b));
		for (size_t i = 0; i < ruma_vec_size(a); i++) {
			uint64_t ea, eb;
			CHECK_OK(ruma_vec_get(a, i, &ea));
			CHECK_OK(ruma_vec_get(b, i, &eb));
			if (ea != eb || ruma_vec_get_u64(a, i) != ea || ool_get_u64(b, i) != eb ||
			    ruma_vec_get_u64_slow(a, i) != ea) {
				fprintf(stderr, "  %s%s: element %zu differs (round %d)\n",
					ruma_vec_kind_name(kind), huge ? " huge" : "", i, round);
				return TEST_FAIL;
			}
		}
	}
	ruma_vec_destroy(a);
	ruma_vec_destroy(b);
	return TEST_PASS;
}

static int t_vec_inline_paths(void)
{
	/* without populate-ahead, and with 32 KiB windows, so that runs end often */
	static const size_t windows[] = { RUMA_VEC_POPULATE_AHEAD_OFF, (size_t)32 << 10 };
	for (unsigned w = 0; w < 2; w++)
		for (unsigned k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
			int rc = vec_inline_run((ruma_vec_kind)k, false, windows[w]);
			if (rc != TEST_PASS)
				return rc;
		}
	/* 8-byte pushes into a 16-byte element vector take the out-of-line path and fail */
	ruma_vec_options o;
	ruma_vec *v;
	ruma_vec_options_default(&o);
	o.elem_size = 16;
	CHECK_OK(ruma_vec_create(&o, &v));
	CHECK_EQ(ruma_vec_push_u64(v, 1), -EINVAL);
	CHECK_EQ(ool_push_u64(v, 1), -EINVAL);
	ruma_vec_cursor c = ruma_vec_cursor_begin(v);
	CHECK_EQ(ruma_vec_cursor_push(v, &c, 1), -EINVAL);
	ruma_vec_cursor_end(v, c);
	CHECK_EQ(ruma_vec_size(v), 0);
	ruma_vec_destroy(v);
	return TEST_PASS;
}

/*
 * A push cursor whose growth fails: the push returns the error, and once
 * the cursor is ended the vector holds exactly the elements pushed before
 * it (for every kind, at a 64 KiB limit), keeps accepting pushes within its
 * capacity after a shrink, and its head agrees with the accessors.
 */
static int t_vec_cursor_growth_failure(void)
{
	for (unsigned k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
		ruma_vec_options o;
		ruma_vec *v;
		size_t pushed = 0;
		int rc = 0;

		ruma_vec_options_default(&o);
		o.kind = (ruma_vec_kind)k;
		o.max_bytes = (size_t)64 << 10;
		CHECK_OK(ruma_vec_create(&o, &v));
		ruma_vec_cursor c = ruma_vec_cursor_begin(v);
		while (pushed < 100000 && (rc = ruma_vec_cursor_push(v, &c, pushed * 3)) == 0)
			pushed++;
		ruma_vec_cursor_end(v, c);
		CHECK(rc == RUMA_EVIRTFULL || rc == -ENOMEM);
		CHECK_EQ(pushed, ((size_t)64 << 10) / 8);
		CHECK_EQ(ruma_vec_size(v), pushed);
		CHECK(head_consistent(v));
		for (size_t i = 0; i < pushed; i++)
			CHECK_EQ(ruma_vec_get_u64(v, i), i * 3);
		CHECK_OK(ruma_vec_shrink(v, 10));
		c = ruma_vec_cursor_begin(v);
		CHECK_OK(ruma_vec_cursor_push(v, &c, 7));
		ruma_vec_cursor_end(v, c);
		CHECK_EQ(ruma_vec_size(v), 11);
		CHECK_EQ(ruma_vec_get_u64(v, 10), 7);
		CHECK(head_consistent(v));
		ruma_vec_destroy(v);
	}
	return TEST_PASS;
}

/* Push n elements i * 5 through a cursor; 0 or the first push's error. */
static int push_seq(ruma_vec *v, size_t n)
{
	ruma_vec_cursor c = ruma_vec_cursor_begin(v);
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++)
		rc = ruma_vec_cursor_push(v, &c, i * 5);
	ruma_vec_cursor_end(v, c);
	return rc;
}

/*
 * Populate-ahead: the contiguous kinds (REWIRED over its pool) fill the
 * page tables ahead of the push end with one madvise per window (3 MiB of
 * pushes: at least two windows of 2 MiB), none when it is off or beyond a
 * rewired vector's pool; a failed populate (injected, as
 * a kernel without MADV_POPULATE_WRITE would answer) turns it off for good
 * and the pushes go on, every element in place.
 */
static int t_vec_populate_ahead(void)
{
	static const ruma_vec_kind kinds[] = { RUMA_VEC_REWIRED, RUMA_VEC_COPY, RUMA_VEC_REALLOC,
					       RUMA_VEC_MREMAP };
	const size_t n = ((size_t)3 << 20) / 8 + 1;

	for (unsigned k = 0; k < 4; k++)
		for (int mode = 0; mode < 3; mode++) {
			ruma_vec_options o;
			ruma_vec *v;

			ruma_vec_options_default(&o);
			o.kind = kinds[k];
			o.populate_ahead = mode == 1 ? RUMA_VEC_POPULATE_AHEAD_OFF : 0;
			if (kinds[k] == RUMA_VEC_REWIRED)
				o.pool_bytes = n * 8; /* REWIRED populates its pool's pages only */
			CHECK_OK(ruma_vec_create(&o, &v));
			ruma_os_count_reset();
			if (mode == 2)
				ruma_os_inject(RUMA_SYS_MADVISE, 1, EINVAL, false);
			CHECK_OK(push_seq(v, n));
			ruma_os_inject_clear();
			uint64_t calls = ruma_os_count(RUMA_SYS_MADVISE);
			if (mode == 0)
				CHECK(calls >= 2);
			else
				CHECK_EQ(calls, (uint64_t)(mode == 1 ? 0 : 1));
			CHECK_EQ(ruma_vec_size(v), n);
			CHECK(head_consistent_run(v, true));
			for (size_t i = 0; i < n; i++)
				CHECK_EQ(ruma_vec_get_u64(v, i), i * 5);
			ruma_vec_destroy(v);
		}
	/* a rewired vector without a pool: fresh memfd pages fault in, no populate */
	ruma_vec_options o;
	ruma_vec *v;
	ruma_vec_options_default(&o);
	CHECK_OK(ruma_vec_create(&o, &v));
	ruma_os_count_reset();
	CHECK_OK(push_seq(v, n));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MADVISE), 0);
	ruma_vec_destroy(v);
	return TEST_PASS;
}

static int t_vec_inline_paths_2m(void)
{
	int rc = vec_inline_run(RUMA_VEC_REWIRED, true, 0);

	if (rc == TEST_SKIP)
		SKIP("no free 2 MiB pages");
	return rc;
}

/*
 * Sizes that cannot be held fail cleanly before anything is allocated: a
 * byte count that overflows size_t (-EOVERFLOW), a request beyond the
 * rewired reservation (RUMA_EVIRTFULL) or beyond RAM + swap (-ENOMEM).
 * The vector keeps its size and contents.
 */
static int t_vec_size_limits(void)
{
	uint64_t e[4] = { 1, 2, 3, 4 };

	for (unsigned k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
		ruma_vec_options o;
		ruma_vec *v;
		ruma_vec_options_default(&o);
		o.kind = (ruma_vec_kind)k;
		CHECK_OK(ruma_vec_create(&o, &v));
		CHECK_OK(ruma_vec_push_many(v, e, 4));
		size_t cap = ruma_vec_capacity(v);
		int rc = ruma_vec_push_many(v, e, SIZE_MAX / 8);
		if (rc == 0) {
			fprintf(stderr, "  %s: push_many(SIZE_MAX / 8) returned 0 (size %zu)\n",
				ruma_vec_kind_name(o.kind), ruma_vec_size(v));
			return TEST_FAIL;
		}
		CHECK(rc == -EOVERFLOW || rc == -ENOMEM || rc == RUMA_EVIRTFULL);
		CHECK_EQ(ruma_vec_push_many(v, e, SIZE_MAX - 2), -EOVERFLOW);
		CHECK_EQ(ruma_vec_reserve(v, SIZE_MAX), -EOVERFLOW);
		CHECK_EQ(ruma_vec_reserve(v, SIZE_MAX / 8 + 1), -EOVERFLOW);
		rc = ruma_vec_reserve(v, (size_t)1e15);
		CHECK_EQ(rc, o.kind == RUMA_VEC_REWIRED ? RUMA_EVIRTFULL : -ENOMEM);
		CHECK_EQ(ruma_vec_size(v), 4);
		CHECK_EQ(ruma_vec_capacity(v), cap);
		CHECK(head_consistent(v));
		for (size_t i = 0; i < 4; i++)
			CHECK_EQ(ruma_vec_get_u64(v, i), e[i]);
		CHECK_OK(ruma_vec_push_u64(v, 5));
		CHECK_EQ(ruma_vec_get_u64(v, 4), 5);
		ruma_vec_destroy(v);

		/* an explicit limit, and creation with a capacity beyond it */
		o.max_bytes = 1 << 20;
		CHECK_OK(ruma_vec_create(&o, &v));
		CHECK_OK(ruma_vec_reserve(v, (1 << 20) / 8));
		CHECK_EQ(ruma_vec_reserve(v, (1 << 20) / 8 + 1),
			 o.kind == RUMA_VEC_REWIRED ? RUMA_EVIRTFULL : -ENOMEM);
		ruma_vec_destroy(v);
		o.initial_capacity = SIZE_MAX / 4;
		v = (ruma_vec *)&o;
		CHECK_EQ(ruma_vec_create(&o, &v), -EOVERFLOW);
		CHECK(v == NULL);
	}
	return TEST_PASS;
}

/*
 * A rewired vector with a pool filled at creation: growth inside the pool
 * wires its pages in order, growth beyond it allocates more; shrinking
 * keeps the pool pages for regrowth.  Contents survive all of it.
 */
static int t_vec_rewired_pool(void)
{
	uint64_t before = maps_now();
	ruma_vec_options o;
	ruma_vec *v;
	ruma_vec_stats st;

	ruma_vec_options_default(&o);
	o.pool_bytes = 1 << 20;
	o.max_bytes = 64 << 20;
	uint64_t memfd_before = memfd_maps();
	CHECK_OK(ruma_vec_create(&o, &v));
	CHECK_EQ(ruma_vec_capacity(v), 0);
	CHECK_EQ(memfd_maps(), memfd_before); /* the pool is filled, then unwired */
	for (uint64_t i = 0; i < 100000; i++) /* 800 KB: inside the pool */
		CHECK_OK(ruma_vec_push_u64(v, i * 3));
	/* every growth step wired the pool's next pages behind the last: one kernel mapping */
	CHECK_EQ(memfd_maps(), memfd_before + 1);
	for (uint64_t i = 100000; i < 400000; i++) /* beyond it */
		CHECK_OK(ruma_vec_push_u64(v, i * 3));
	ruma_vec_get_stats(v, &st);
	CHECK_EQ(st.bytes_copied, 0);
	CHECK_OK(ruma_vec_shrink(v, 5000));
	for (uint64_t i = 5000; i < 300000; i++)
		CHECK_OK(ruma_vec_push_u64(v, i * 3));
	for (uint64_t i = 0; i < 300000; i++)
		CHECK_EQ(ruma_vec_get_u64(v, i), i * 3);
	ruma_vec_destroy(v);
	CHECK_EQ(maps_now(), before);
	o.pool_bytes = 128 << 20; /* larger than the reservation */
	CHECK_EQ(ruma_vec_create(&o, &v), RUMA_EVIRTFULL);
	return TEST_PASS;
}

/* The rewired vector never copies and keeps its address; destroy leaves no mapping. */
static int t_vec_rewired_properties(void)
{
	uint64_t before = maps_now();
	ruma_vec *v;
	ruma_vec_stats st;

	CHECK_OK(ruma_vec_create(NULL, &v));
	CHECK_OK(ruma_vec_push_u64(v, 0));
	void *d0 = ruma_vec_data(v);
	for (uint64_t i = 1; i < 200000; i++)
		CHECK_OK(ruma_vec_push_u64(v, i));
	CHECK(ruma_vec_data(v) == d0);
	ruma_vec_get_stats(v, &st);
	CHECK_EQ(st.bytes_copied, 0);
	CHECK(st.grows > 5);
	CHECK_OK(ruma_vec_shrink(v, 1000));
	CHECK(ruma_vec_capacity(v) < 2000);
	for (uint64_t i = 0; i < 1000; i++)
		CHECK_EQ(ruma_vec_get_u64(v, i), i);
	for (uint64_t i = 1000; i < 50000; i++)
		CHECK_OK(ruma_vec_push_u64(v, i));
	for (uint64_t i = 0; i < 50000; i++)
		CHECK_EQ(ruma_vec_get_u64(v, i), i);
	ruma_vec_destroy(v);
	CHECK_EQ(maps_now(), before);

	ruma_vec_kind k;
	CHECK_OK(ruma_vec_kind_parse("indirect", &k));
	CHECK_EQ(k, RUMA_VEC_INDIRECT);
	CHECK_EQ(ruma_vec_kind_parse("nope", &k), RUMA_EPARSE);
	ruma_vec_options o;
	ruma_vec_options_default(&o);
	o.kind = RUMA_VEC_COPY;
	o.huge = true;
	CHECK_EQ(ruma_vec_create(&o, &v), -EINVAL);
	return TEST_PASS;
}

/* Every kind's name parses back to it; an unknown name is RUMA_EPARSE. */
static int t_enum_names(void)
{
	for (int k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
		ruma_vec_kind got;
		CHECK_OK(ruma_vec_kind_parse(ruma_vec_kind_name((ruma_vec_kind)k), &got));
		CHECK_EQ(got, k);
	}
	for (int k = 0; k < RUMA_POOL_KIND_COUNT_; k++) {
		ruma_pool_kind got;
		CHECK_OK(ruma_pool_kind_parse(ruma_pool_kind_name((ruma_pool_kind)k), &got));
		CHECK_EQ(got, k);
	}
	for (int m = 0; m < RUMA_SNAP_METHOD_COUNT_; m++) {
		ruma_snap_method got;
		CHECK_OK(ruma_snap_method_parse(ruma_snap_method_name((ruma_snap_method)m), &got));
		CHECK_EQ(got, m);
	}
	for (int m = 0; m < RUMA_PART_METHOD_COUNT_; m++) {
		ruma_part_method got;
		CHECK_OK(ruma_part_method_parse(ruma_part_method_name((ruma_part_method)m), &got));
		CHECK_EQ(got, m);
	}
	ruma_pool_kind pk;
	ruma_snap_method sm;
	ruma_part_method pm;
	CHECK_EQ(ruma_pool_kind_parse("nope", &pk), RUMA_EPARSE);
	CHECK_EQ(ruma_snap_method_parse("nope", &sm), RUMA_EPARSE);
	CHECK_EQ(ruma_part_method_parse("nope", &pm), RUMA_EPARSE);
	return TEST_PASS;
}

/* ruma_vec_set / ruma_vec_get of every kind, and which kinds keep their
 * element addresses across growth. */
static int t_vec_set_stable(void)
{
	for (int k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
		ruma_vec_options o;
		ruma_vec *v;
		uint64_t x = 0;

		ruma_vec_options_default(&o);
		o.kind = (ruma_vec_kind)k;
		CHECK_OK(ruma_vec_create(&o, &v));
		for (uint64_t i = 0; i < 10; i++)
			CHECK_OK(ruma_vec_push(v, &i));
		uint64_t y = 777;
		CHECK_OK(ruma_vec_set(v, 3, &y));
		CHECK_OK(ruma_vec_get(v, 3, &x));
		CHECK_EQ(x, 777);
		CHECK_OK(ruma_vec_get(v, 4, &x));
		CHECK_EQ(x, 4);
		CHECK_EQ(ruma_vec_set(v, 10, &y), -EINVAL);
		CHECK_EQ(ruma_vec_stable_addresses(v), k == RUMA_VEC_REWIRED || k == RUMA_VEC_INDIRECT);
		ruma_vec_destroy(v);
	}
	return TEST_PASS;
}

/* ---- partitioning ------------------------------------------------------------------ */

/*
 * ruma_part_histogram against a count key by key with ruma_part_of: every
 * power-of-two P up to 2^16, shifts that take the top bits (no mask), the
 * low bits and bits in between, key counts that are not a multiple of 4.
 */
static int t_part_histogram(void)
{
	enum { N = 4099 };
	uint64_t *keys = malloc(N * sizeof(*keys));
	size_t *hist = malloc(((size_t)1 << 16) * sizeof(*hist));
	size_t *want = malloc(((size_t)1 << 16) * sizeof(*want));

	CHECK(keys && hist && want);
	for (size_t i = 0; i < N; i++)
		keys[i] = ruma_rng_next(&test_rng);
	keys[0] = UINT64_MAX;
	keys[1] = 0;
	for (unsigned bits = 0; bits <= 16; bits++) {
		uint32_t P = 1u << bits;
		unsigned shifts[] = { 0, 3, 64 - bits - 1, 64 - bits, 63 };
		for (size_t s = 0; s < TEST_N(shifts); s++) {
			unsigned shift = shifts[s] > 63 ? 63 : shifts[s];
			for (size_t n = N - 3; n <= N; n++) {
				memset(want, 0, P * sizeof(*want));
				for (size_t i = 0; i < n; i++)
					want[ruma_part_of(keys[i], shift, P)]++;
				memset(hist, 0xA5, P * sizeof(*hist));
				ruma_part_histogram(keys, n, shift, P, hist);
				CHECK(!memcmp(hist, want, P * sizeof(*hist)));
			}
		}
	}
	free(keys);
	free(hist);
	free(want);
	return TEST_PASS;
}

/* Verify a result against the input: permutation, partition membership, sizes. */
static int check_partition(const uint64_t *keys, size_t n, const ruma_part_options *o,
			   const ruma_part_result *r)
{
	uint32_t P = o->partitions;
	size_t *hist = calloc(P, sizeof(*hist));
	uint64_t *a = malloc((n ? n : 1) * 8), *b = malloc((n ? n : 1) * 8);
	size_t got = 0;

	CHECK(hist && a && b);
	ruma_part_histogram(keys, n, o->shift, P, hist);
	CHECK_EQ(r->n, n);
	CHECK_EQ(r->start[0], 0);
	for (uint32_t p = 0; p < P; p++)
		CHECK_EQ(r->start[p + 1] - r->start[p], hist[p]);
	CHECK_EQ(r->start[P], n);
	/* chunks: partition order, membership */
	uint32_t prev = 0;
	size_t *seen = calloc(P, sizeof(*seen));
	CHECK(seen);
	for (size_t c = 0; c < r->nchunks; c++) {
		const ruma_part_chunk *ch = &r->chunks[c];
		CHECK(ch->part >= prev);
		prev = ch->part;
		for (size_t i = 0; i < ch->n; i++) {
			CHECK_EQ(ruma_part_of(ch->keys[i], o->shift, P), ch->part);
			CHECK(got < n);
			b[got++] = ch->keys[i];
		}
		seen[ch->part] += ch->n;
	}
	CHECK_EQ(got, n);
	for (uint32_t p = 0; p < P; p++)
		CHECK_EQ(seen[p], hist[p]);
	if (r->data) {
		/* contiguous: partition p is data[start[p], start[p+1]) */
		for (uint32_t p = 0; p < P; p++)
			for (size_t i = r->start[p]; i < r->start[p + 1]; i++)
				CHECK_EQ(ruma_part_of(r->data[i], o->shift, P), p);
		memcpy(b, r->data, n * 8);
	}
	memcpy(a, keys, n * 8);
	CHECK(test_same_u64s(a, b, n));
	free(seen);
	free(hist);
	free(a);
	free(b);
	return TEST_PASS;
}

static size_t part_extent_pages; /* extent_pages for part_one */
static bool part_prefault; /* part_one: prefault_dst also without swwc */

/* The phases a run reported, in order (ruma_part_run_phased). */
static int part_phases[8], part_nphases;

static void record_phase(void *ctx, ruma_part_phase ended)
{
	(void)ctx;
	if (part_nphases < 8)
		part_phases[part_nphases++] = (int)ended;
}

/* Default options with the method, partitions and the three switches the tests vary. */
static void part_options(ruma_part_options *o, ruma_part_method m, uint32_t P, bool swwc, bool huge,
			 bool contiguous)
{
	ruma_part_options_default(o);
	o->method = m;
	o->partitions = P;
	o->swwc = swwc;
	o->huge = huge;
	o->contiguous = contiguous;
}

static int part_one(const uint64_t *keys, size_t n, ruma_part_method m, uint32_t P,
		    unsigned shift, size_t ppb, bool swwc, bool huge, bool contiguous)
{
	ruma_part_options o;
	ruma_part_result *r;
	int rc;

	part_options(&o, m, P, swwc, huge, contiguous);
	o.shift = shift;
	o.pages_per_block = ppb;
	part_nphases = 0;
	o.prefault_dst = swwc || part_prefault;
	o.populate = !swwc;
	o.extent_pages = part_extent_pages;
	rc = ruma_part_run_phased(keys, n, &o, record_phase, NULL, &r);
	if (huge && rc == RUMA_ENOHUGE)
		return TEST_SKIP;
	if (rc) {
		fprintf(stderr, "  %s P=%u ppb=%zu swwc=%d huge=%d n=%zu: %s\n",
			ruma_part_method_name(m), P, ppb, swwc, huge, n, ruma_strerror(rc));
		return TEST_FAIL;
	}
	bool want_data = (m == RUMA_PART_TRADITIONAL) ||
			 (contiguous && (m == RUMA_PART_MAPPED || m == RUMA_PART_MAPPED_CHAINS ||
					 (m == RUMA_PART_MAPPED_ADAPTIVE && !huge)));
	if (n && want_data != (r->data != NULL)) {
		fprintf(stderr, "  %s: data %p, expected %s\n", ruma_part_method_name(m),
			(void *)r->data, want_data ? "contiguous" : "chunks");
		return TEST_FAIL;
	}
	int v = check_partition(keys, n, &o, r);
	if (v) {
		fprintf(stderr, "  ^ %s P=%u ppb=%zu swwc=%d huge=%d n=%zu shift=%u\n",
			ruma_part_method_name(m), P, ppb, swwc, huge, n, shift);
		return v;
	}
	ruma_part_result_free(r);
	return TEST_PASS;
}

static int t_partition_all_methods(void)
{
	size_t n = test_sanitized() ? 20000 : 150000;
	uint64_t *keys = malloc(n * 8);
	uint64_t before = maps_now();

	CHECK(keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = ruma_rng_next(&test_rng);
	uint32_t Ps[] = { 1, 2, 16, 128 };
	for (int m = 0; m < RUMA_PART_METHOD_COUNT_; m++)
		for (size_t pi = 0; pi < TEST_N(Ps); pi++)
			for (int swwc = 0; swwc < 2; swwc++) {
				size_t ppb = 1 + (pi % 3);
				CHECK_EQ(part_one(keys, n, (ruma_part_method)m, Ps[pi], 0, ppb, swwc,
						  false, true), TEST_PASS);
			}
	/* chunks instead of a contiguous output */
	for (int m = RUMA_PART_MAPPED; m <= RUMA_PART_MAPPED_ADAPTIVE; m++)
		CHECK_EQ(part_one(keys, n, (ruma_part_method)m, 16, 0, 2, false, false, false),
			 TEST_PASS);
	/* blocks carved from reserved extents */
	for (size_t ext = 1; ext <= 64; ext *= 8) {
		part_extent_pages = ext;
		for (int m = RUMA_PART_MAPPED; m <= RUMA_PART_MAPPED_ADAPTIVE; m++)
			for (int swwc = 0; swwc < 2; swwc++)
				CHECK_EQ(part_one(keys, n, (ruma_part_method)m, 16, 0, 2, swwc, false,
						  swwc == 0), TEST_PASS);
	}
	part_extent_pages = 0;
	/* prefaulted output / block pool; the phases each method reports, in order */
	part_prefault = true;
	for (int swwc = 0; swwc < 2; swwc++) {
		CHECK_EQ(part_one(keys, n, RUMA_PART_TRADITIONAL_CHAINS, 16, 0, 1 + swwc, swwc, false,
				  true), TEST_PASS);
		CHECK_EQ(part_nphases, 2);
		CHECK(part_phases[0] == RUMA_PART_PHASE_ALLOC && part_phases[1] == RUMA_PART_PHASE_PREFAULT);
		CHECK_EQ(part_one(keys, n, RUMA_PART_TRADITIONAL, 16, 0, 1, swwc, false, true), TEST_PASS);
		CHECK_EQ(part_nphases, 3);
		CHECK(part_phases[0] == RUMA_PART_PHASE_HISTOGRAM && part_phases[1] == RUMA_PART_PHASE_ALLOC &&
		      part_phases[2] == RUMA_PART_PHASE_PREFAULT);
	}
	part_prefault = false;
	CHECK_EQ(part_one(keys, n, RUMA_PART_MREMAP, 16, 0, 1, false, false, true), TEST_PASS);
	CHECK(part_nphases == 1 && part_phases[0] == RUMA_PART_PHASE_ALLOC);
	CHECK_EQ(part_one(keys, n, RUMA_PART_MAPPED, 16, 0, 1, false, false, true), TEST_PASS);
	int opened = part_nphases > 0 && part_phases[0] == RUMA_PART_PHASE_OPEN; /* memfd path */
	CHECK_EQ(part_nphases, 2 + opened);
	CHECK(part_phases[opened] == RUMA_PART_PHASE_ALLOC &&
	      part_phases[opened + 1] == RUMA_PART_PHASE_PASS);
	/* memfd pools: their creation is a phase of its own, before the work areas */
	CHECK_EQ(part_one(keys, n, RUMA_PART_MAPPED_ADAPTIVE, 16, 0, 1, false, false, true), TEST_PASS);
	CHECK_EQ(part_nphases, 3);
	CHECK(part_phases[0] == RUMA_PART_PHASE_OPEN && part_phases[1] == RUMA_PART_PHASE_ALLOC &&
	      part_phases[2] == RUMA_PART_PHASE_PASS);
	/* high radix bits via shift */
	CHECK_EQ(part_one(keys, n, RUMA_PART_MAPPED_CHAINS, 64, 58, 1, false, false, true), TEST_PASS);
	CHECK_EQ(part_one(keys, n, RUMA_PART_TRADITIONAL, 64, 58, 1, true, false, true), TEST_PASS);
	free(keys);
	CHECK_EQ(maps_now(), before);
	return TEST_PASS;
}

/* Skewed and tiny inputs: empty partitions, one huge partition, n = 0 and 1. */
static int t_partition_edge_cases(void)
{
	size_t n = 20000;
	uint64_t *keys = malloc(n * 8);

	CHECK(keys);
	for (size_t i = 0; i < n; i++) /* 90% into partition 3, the rest spread over 5 */
		keys[i] = ruma_rng_below(&test_rng, 10) ? 3 + 16 * i : ruma_rng_below(&test_rng, 5) * 7;
	for (int m = 0; m < RUMA_PART_METHOD_COUNT_; m++)
		for (int swwc = 0; swwc < 2; swwc++) {
			CHECK_EQ(part_one(keys, n, (ruma_part_method)m, 16, 0, 1, swwc, false, true),
				 TEST_PASS);
			CHECK_EQ(part_one(keys, 0, (ruma_part_method)m, 16, 0, 1, swwc, false, true),
				 TEST_PASS);
			CHECK_EQ(part_one(keys, 1, (ruma_part_method)m, 16, 0, 1, swwc, false, true),
				 TEST_PASS);
			/* sizes around page multiples: 511, 512, 513 keys per partition */
			for (size_t k = 511; k <= 513; k++) {
				uint64_t *kk = malloc(k * 4 * 8);
				CHECK(kk);
				for (size_t i = 0; i < k * 4; i++)
					kk[i] = i;
				CHECK_EQ(part_one(kk, k * 4, (ruma_part_method)m, 4, 0, 1, swwc, false,
						  true), TEST_PASS);
				free(kk);
			}
		}
	/* invalid options */
	ruma_part_options o;
	ruma_part_result *r;
	ruma_part_options_default(&o);
	o.partitions = 12;
	CHECK_EQ(ruma_part_run(keys, n, &o, &r), -EINVAL);
	o.partitions = 16;
	o.shift = 64;
	CHECK_EQ(ruma_part_run(keys, n, &o, &r), -EINVAL);
	o.shift = 0;
	o.method = RUMA_PART_MAPPED_CHAINS;
	o.pages_per_block = 0;
	CHECK_EQ(ruma_part_run(keys, n, &o, &r), -EINVAL);
	free(keys);
	return TEST_PASS;
}

/* Adaptive block sizes need enough input for 2 MiB blocks. */
static int t_partition_adaptive_large(void)
{
	size_t n = test_sanitized() ? ((size_t)1 << 18) : ((size_t)1 << 20);
	uint64_t *keys = malloc(n * 8);
	ruma_part_options o;
	ruma_part_result *r;

	CHECK(keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = ruma_rng_next(&test_rng);
	ruma_part_options_default(&o);
	o.method = RUMA_PART_MAPPED_ADAPTIVE;
	o.partitions = 2;
	CHECK_OK(ruma_part_run(keys, n, &o, &r));
	CHECK_EQ(check_partition(keys, n, &o, r), TEST_PASS);
	CHECK(r->data != NULL);
	ruma_part_result_free(r);
	free(keys);
	return TEST_PASS;
}

static int t_partition_huge(void)
{
	size_t n = (size_t)1 << 19; /* 4 MiB: 2 partitions fit in the reserved huge pages */
	uint64_t *keys = malloc(n * 8);
	int skipped = 0, ran = 0;

	CHECK(keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = ruma_rng_next(&test_rng);
	ruma_part_method ms[] = { RUMA_PART_TRADITIONAL, RUMA_PART_MAPPED, RUMA_PART_MAPPED_CHAINS,
				  RUMA_PART_MAPPED_ADAPTIVE, RUMA_PART_MREMAP };
	for (size_t i = 0; i < TEST_N(ms); i++) {
		int r = part_one(keys, i == 3 ? n : n / 4, ms[i], 2, 0, 1, false, true, true);
		if (r == TEST_SKIP)
			skipped++;
		else if (r)
			return r;
		else
			ran++;
	}
	free(keys);
	if (!ran)
		SKIP("no free 2 MiB huge pages (%d variants skipped)", skipped);
	return TEST_PASS;
}

/*
 * MREMAP with huge grows its regions in 2 MiB steps of ordinary memory: a
 * partition of 4 MiB needs its region grown twice (Linux refuses to expand
 * a hugetlb mapping, so MAP_HUGETLB regions failed here with EINVAL), and
 * no huge page is needed.
 */
static int t_partition_mremap_huge_growth(void)
{
	size_t n = (size_t)1 << 20; /* 8 MiB of keys: 4 MiB per partition */
	uint64_t *keys = malloc(n * 8);

	CHECK(keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = ruma_rng_next(&test_rng);
	for (int swwc = 0; swwc <= 1; swwc++) {
		int r = part_one(keys, n, RUMA_PART_MREMAP, 2, 0, 1, swwc, true, false);
		CHECK_EQ(r, TEST_PASS);
	}
	free(keys);
	return TEST_PASS;
}

/* The os layer's mmap count when each phase ended (ctx: uint64_t[5], by phase value). */
static void count_maps_at_phase(void *ctx, ruma_part_phase ended)
{
	if ((unsigned)ended <= RUMA_PART_PHASE_OPEN)
		((uint64_t *)ctx)[ended] = ruma_os_count(RUMA_SYS_MMAP);
}

/*
 * ADAPTIVE opens every partition's first block before the pass, as the
 * original: with P x 2 MiB of keys spread evenly, the first blocks (2 MiB,
 * side by side in the work area) are wired with one mmap during setup and
 * the pass, which fills them exactly, maps nothing.
 */
static int t_partition_adaptive_first_blocks(void)
{
	const uint32_t P = 4;
	size_t n = (size_t)P * (RUMA_PAGE_2M / 8);
	uint64_t *keys = malloc(n * 8), at[5] = { 0 };
	ruma_part_options o;
	ruma_part_result *r;

	CHECK(keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = (i % P) | (i << 8);
	part_options(&o, RUMA_PART_MAPPED_ADAPTIVE, P, true, false, false);
	CHECK_OK(ruma_part_run_phased(keys, n, &o, count_maps_at_phase, at, &r));
	CHECK_EQ(at[RUMA_PART_PHASE_PASS], at[RUMA_PART_PHASE_ALLOC]);
	CHECK_EQ(r->nchunks, (size_t)P);
	for (size_t k = 0; k < r->nchunks; k++) {
		CHECK_EQ(r->chunks[k].n, n / P);
		for (size_t j = 0; j < r->chunks[k].n; j++)
			CHECK_EQ(r->chunks[k].keys[j], keys[j * P + r->chunks[k].part]);
	}
	ruma_part_result_free(r);
	free(keys);
	return TEST_PASS;
}

/*
 * Hold all free 2 MiB huge pages but `left`: a shared hugetlb mapping
 * without MAP_NORESERVE reserves its pages when made (nothing is faulted or
 * zeroed), so the pages stay free but can no longer be reserved by anyone
 * else.  Returns the memfd (-1: not possible here); *map and *bytes for
 * hog_release.
 */
static int hog_huge(long left, void **map, size_t *bytes)
{
	long avail = test_meminfo("HugePages_Free") - test_meminfo("HugePages_Rsvd");
	int fd;

	*map = NULL;
	*bytes = 0;
	if (avail < left)
		return -1;
	fd = memfd_create("ruma-test-hog", MFD_CLOEXEC | MFD_HUGETLB | MFD_HUGE_2MB);
	if (fd < 0)
		return -1;
	*bytes = (size_t)(avail - left) * RUMA_PAGE_2M;
	if (*bytes && (ftruncate(fd, (off_t)*bytes) ||
		       (*map = mmap(NULL, *bytes, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void hog_release(int fd, void *map, size_t bytes)
{
	if (map)
		munmap(map, bytes);
	close(fd);
}

/*
 * Too few free huge pages: every huge-page method fails cleanly with
 * RUMA_ENOHUGE (at creation with none left, during the pass with one left),
 * never by SIGBUS on a page fault.
 */
static int t_partition_huge_shortage(void)
{
	size_t n = (size_t)1 << 21; /* 16 MiB of keys: 8 huge pages and more per method */
	uint64_t *keys = malloc(n * 8);
	/* not MREMAP: its regions are ordinary memory (2 MiB steps) */
	ruma_part_method ms[] = { RUMA_PART_TRADITIONAL, RUMA_PART_MAPPED, RUMA_PART_MAPPED_CHAINS,
				  RUMA_PART_MAPPED_ADAPTIVE };
	int checked = 0;

	CHECK(keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = ruma_rng_next(&test_rng);
	for (long left = 0; left <= 1; left++)
		for (size_t i = 0; i < TEST_N(ms); i++) {
			ruma_part_options o;
			ruma_part_result *r = NULL;
			void *map;
			size_t bytes;
			part_options(&o, ms[i], 4, false, true, ms[i] != RUMA_PART_MAPPED_ADAPTIVE);
			int fd = hog_huge(left, &map, &bytes);
			if (fd < 0)
				continue;
			long before = test_meminfo("HugePages_Free") - test_meminfo("HugePages_Rsvd");
			int rc = ruma_part_run(keys, n, &o, &r);
			long after = test_meminfo("HugePages_Free") - test_meminfo("HugePages_Rsvd");
			hog_release(fd, map, bytes);
			if (rc == 0) {
				ruma_part_result_free(r);
				if (after > before || before > left)
					continue; /* another process freed huge pages meanwhile */
			}
			if (rc == RUMA_EUNSUPP)
				continue;
			if (rc != RUMA_ENOHUGE)
				fprintf(stderr, "  %s with %ld huge page(s) left: %s\n",
					ruma_part_method_name(ms[i]), left, ruma_strerror(rc));
			CHECK_EQ(rc, RUMA_ENOHUGE);
			checked++;
		}
	free(keys);
	if (!checked)
		SKIP("could not hold the free huge pages");
	return TEST_PASS;
}

/* ---- snapshots -------------------------------------------------------------------- */

/* SHUFFLE with MAP_PRIVATE chunks (false: the shared default). */
static bool snap_private_view;

/* What a write to a shared shuffled view does to the source: ref follows it. */
static void shared_write(uint8_t *ref, size_t bytes, const uint64_t *order, size_t cb, size_t off,
			 const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		size_t x = off + i, soff = order[x / cb] * cb + x % cb;
		if (soff < bytes)
			ref[soff] = buf[i];
	}
}

static int snap_case(bool huge, ruma_snap_method m, size_t ppc, bool populate)
{
	size_t page = huge ? RUMA_PAGE_2M : RUMA_PAGE_4K;
	size_t bytes = huge ? 2 * page : 37 * page + 1000;
	ruma_snap_src *src;
	ruma_snap *s;
	ruma_snap_options o;
	int rc;

	ruma_snap_src_options so = {
		.bytes = bytes,
		.flags = (huge ? RUMA_SNAP_SRC_HUGE : 0) | (populate ? RUMA_SNAP_SRC_POPULATE : 0),
	};
	rc = ruma_snap_src_create(&so, &src);
	if (rc == RUMA_ENOHUGE)
		return TEST_SKIP;
	CHECK_OK(rc);
	uint8_t *sd = ruma_snap_src_data(src);
	for (size_t i = 0; i < bytes; i++)
		sd[i] = (uint8_t)(i * 31 + (i >> 12));
	uint8_t *ref = malloc(bytes);
	CHECK(ref);
	memcpy(ref, sd, bytes);
	ruma_snap_options_default(&o);
	o.method = m;
	o.pages_per_chunk = ppc;
	o.populate = populate;
	o.init_dst = populate;
	o.seed = ruma_rng_next(&test_rng);
	o.private_view = snap_private_view;
	rc = ruma_snap_create(&o, src, &s);
	if (rc == RUMA_ENOHUGE) {
		ruma_snap_src_destroy(src);
		free(ref);
		return TEST_SKIP;
	}
	CHECK_OK(rc);
	CHECK_EQ(ruma_snap_method_of(s), m);
	uint8_t *d = ruma_snap_data(s);
	size_t nchunks, cb;
	const uint64_t *order = ruma_snap_chunk_order(s, &nchunks, &cb);
	/* snapshot == source permuted by the chunk order (identity when unshuffled) */
	for (size_t k = 0; k < nchunks; k++) {
		size_t off = k * cb, soff = order[k] * cb;
		size_t len = RUMA_MIN(cb, bytes - RUMA_MIN(bytes, soff));
		if (soff >= bytes)
			continue;
		CHECK(off + len <= bytes + cb);
		if (memcmp(d + off, ref + soff, RUMA_MIN(len, bytes - off))) {
			fprintf(stderr, "  %s: chunk %zu differs\n", ruma_snap_method_name(m), k);
			return TEST_FAIL;
		}
	}
	if (m == RUMA_SNAP_SHUFFLE || m == RUMA_SNAP_MEMCPY_SHUFFLE) {
		/* a permutation of 0..nchunks-1 */
		uint8_t *hit = calloc(nchunks, 1);
		CHECK(hit);
		for (size_t k = 0; k < nchunks; k++) {
			CHECK(order[k] < nchunks && !hit[order[k]]);
			hit[order[k]] = 1;
		}
		free(hit);
	}
	/* writes to the snapshot leave the source unchanged (a shared shuffled view: reach it) */
	uint8_t junk[5000];
	memset(junk, 0xAB, sizeof(junk));
	size_t woff = bytes / 3, wlen = RUMA_MIN(sizeof(junk), bytes - woff);
	CHECK_OK(ruma_snap_write(s, woff, junk, wlen));
	CHECK_OK(ruma_snap_write(s, 0, junk, 10));
	if (m == RUMA_SNAP_SHUFFLE && !o.private_view) {
		shared_write(ref, bytes, order, cb, woff, junk, wlen);
		shared_write(ref, bytes, order, cb, 0, junk, 10);
	}
	CHECK(memcmp(sd, ref, bytes) == 0);
	CHECK(memcmp(d + woff, junk, RUMA_MIN(sizeof(junk), bytes - woff)) == 0);
	CHECK(d[0] == 0xAB && d[9] == 0xAB);
	if (m == RUMA_SNAP_REWIRED_COW) {
		CHECK(ruma_snap_pages_copied(s) >= (huge ? 1u : 2u));
		/* an untouched page still reads the source */
		size_t last = (bytes - 1) / page;
		if (last * page > woff + sizeof(junk))
			CHECK(d[last * page] == ref[last * page]);
		void *pa;
		CHECK_OK(ruma_snap_page_writable(s, 1, &pa));
		CHECK(pa == d + page);
		((uint8_t *)pa)[5] = 0xCD;
		CHECK(sd[page + 5] == ref[page + 5]);
		CHECK_EQ(ruma_snap_write(s, bytes, junk, 1), -EINVAL);
	}
	ruma_snap_destroy(s);
	/* the source is intact after the snapshot is gone */
	CHECK(memcmp(sd, ref, bytes) == 0);
	ruma_snap_src_destroy(src);
	free(ref);
	return TEST_PASS;
}

static int t_snapshot_4k(void)
{
	uint64_t before = maps_now();
	for (int m = 0; m < RUMA_SNAP_METHOD_COUNT_; m++)
		for (int pop = 0; pop < 4; pop++) {
			size_t ppcs[] = { 1, 4, 64 };
			snap_private_view = pop >= 2;
			for (size_t i = 0; i < TEST_N(ppcs); i++) {
				int r = snap_case(false, (ruma_snap_method)m, ppcs[i], pop & 1);
				if (r) {
					fprintf(stderr, "  ^ method %s ppc %zu populate %d private %d\n",
						ruma_snap_method_name((ruma_snap_method)m), ppcs[i],
						pop & 1, snap_private_view);
					snap_private_view = false;
					return r;
				}
			}
		}
	snap_private_view = false;
	CHECK_EQ(maps_now(), before);
	return TEST_PASS;
}

static int t_snapshot_2m(void)
{
	int ran = 0;
	for (int m = 0; m < RUMA_SNAP_METHOD_COUNT_; m++) {
		int r = snap_case(true, (ruma_snap_method)m, 1, m % 2);
		if (r == TEST_PASS)
			ran++;
		else if (r != TEST_SKIP)
			return r;
	}
	if (!ran)
		SKIP("no free 2 MiB huge pages");
	return TEST_PASS;
}

/* ---- pools ------------------------------------------------------------------------ */

static int pool_case(ruma_pool_kind k, bool huge, bool random, bool populate, size_t bytes)
{
	ruma_pool_options o;
	ruma_pool *p;
	int rc;

	ruma_pool_options_default(&o);
	o.kind = k;
	o.huge = huge;
	o.random = random;
	o.populate = populate;
	o.seed = ruma_rng_next(&test_rng);
	rc = ruma_pool_create(&o, bytes, &p);
	if (huge && rc == RUMA_ENOHUGE)
		return TEST_SKIP;
	CHECK_OK(rc);
	size_t n = ruma_pool_pages(p), ps = ruma_pool_page_size(p);
	CHECK_EQ(n, (bytes + ps - 1) / ps);
	CHECK_EQ(ruma_pool_bytes(p), n * ps);
	CHECK(ruma_pool_page(p, n) == NULL);
	/* write a distinct pattern to every page, then read all back */
	for (size_t i = 0; i < n; i++) {
		uint64_t *pg = ruma_pool_page(p, i);
		CHECK(pg);
		pg[0] = i * 2654435761u + 1;
		pg[ps / 8 - 1] = ~(uint64_t)i;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t *pg = ruma_pool_page(p, i);
		CHECK_EQ(pg[0], i * 2654435761u + 1);
		CHECK_EQ(pg[ps / 8 - 1], ~(uint64_t)i);
	}
	uint8_t *base = ruma_pool_base(p);
	if (k == RUMA_POOL_INDIRECT) {
		CHECK(base == NULL);
		CHECK(ruma_pool_directory(p) != NULL);
		uint8_t *first = ruma_pool_page(p, 0); /* sequential: one chunk, pages in order */
		for (size_t i = 0; !random && i < n; i++)
			CHECK(ruma_pool_page(p, i) == first + i * ps);
	} else {
		CHECK(base != NULL);
		for (size_t i = 0; i < n; i++)
			CHECK(ruma_pool_page(p, i) == base + i * ps);
	}
	/* memfd rewiring: a mapping per page; pages moved: one mapping for the pool */
	if (k == RUMA_POOL_REWIRED && random && n > 8)
		CHECK(ruma_pool_path(p) == RUMA_REWIRE_UFFD ? ruma_pool_mappings(p) == 1
							     : ruma_pool_mappings(p) > n / 2);
	ruma_pool_destroy(p);
	return TEST_PASS;
}

static int t_pools(void)
{
	uint64_t before = maps_now();
	for (int k = 0; k < RUMA_POOL_KIND_COUNT_; k++)
		for (int random = 0; random < 2; random++)
			for (int pop = 0; pop < 2; pop++)
				CHECK_EQ(pool_case((ruma_pool_kind)k, false, random, pop, 3000 * 4096 + 5),
					 TEST_PASS);
	CHECK_EQ(maps_now(), before);
	int ran = 0;
	for (int k = 0; k < RUMA_POOL_KIND_COUNT_; k++) {
		int r = pool_case((ruma_pool_kind)k, true, k == 0, true, RUMA_PAGE_2M);
		if (r == TEST_PASS)
			ran++;
		else if (r != TEST_SKIP)
			return r;
	}
	if (!ran)
		fprintf(stderr, "  note: huge-page pools skipped (no free 2 MiB pages)\n");
	return TEST_PASS;
}

static int t_pool_map_budget(void)
{
	ruma_pool_options o;
	ruma_pool *p;
	uint64_t before = maps_now();

	ruma_pool_options_default(&o);
	o.random = true;
	o.path = RUMA_REWIRE_MMAP; /* the memfd rewiring: one mapping per page */
	o.map_budget = 100;
	CHECK_EQ(ruma_pool_create(&o, 2000 * 4096, &p), RUMA_EMAPLIMIT);
	CHECK_EQ(maps_now(), before);
	o.map_budget = 5000;
	CHECK_OK(ruma_pool_create(&o, 2000 * 4096, &p));
	CHECK(ruma_pool_mappings(p) > 1000);
	ruma_pool_destroy(p);
	/* sequential placement fits any budget: one mapping */
	o.random = false;
	o.map_budget = 1;
	CHECK_OK(ruma_pool_create(&o, 2000 * 4096, &p));
	CHECK_EQ(ruma_pool_mappings(p), 1);
	ruma_pool_destroy(p);
	CHECK_EQ(maps_now(), before);
	return TEST_PASS;
}

/*
 * Fail the nth mmap / fallocate / ftruncate / memfd_create / mremap /
 * UFFDIO_MOVE / UFFDIO_REGISTER / pwrite of every structure's construction for n = 1, 2, ...: each call either succeeds
 * with correct contents or returns the error, and no mapping or memfd is
 * left behind (ASan checks the heap).
 */
static int t_inject_everywhere(void)
{
	static const ruma_sys sys[] = { RUMA_SYS_MMAP,	       RUMA_SYS_FALLOCATE,
					RUMA_SYS_FTRUNCATE,    RUMA_SYS_MEMFD_CREATE,
					RUMA_SYS_MREMAP,       RUMA_SYS_UFFDIO_MOVE,
					RUMA_SYS_UFFDIO_REGISTER, RUMA_SYS_PWRITE };
	size_t n = 20000;
	uint64_t *keys = malloc(n * 8), before = maps_now();
	int total_failures = 0;

	CHECK(keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = ruma_rng_next(&test_rng);
	for (size_t si = 0; si < TEST_N(sys); si++)
		for (uint64_t nth = 1; nth <= 12; nth++) {
			int failures = 0;
			/* partitioning, every method */
			for (int m = 0; m < RUMA_PART_METHOD_COUNT_; m++) {
				ruma_part_options o;
				ruma_part_result *r = NULL;
				ruma_part_options_default(&o);
				o.method = (ruma_part_method)m;
				o.partitions = 8;
				o.extent_pages = m == RUMA_PART_MAPPED ? 2 : 0;
				ruma_os_inject(sys[si], nth, ENOMEM, false);
				int rc = ruma_part_run(keys, n, &o, &r);
				ruma_os_inject_clear();
				if (rc) {
					CHECK(rc < 0 && r == NULL);
					failures++;
					continue;
				}
				CHECK_EQ(check_partition(keys, n, &o, r), TEST_PASS);
				ruma_part_result_free(r);
			}
			/* snapshots, every method */
			for (int m = 0; m < RUMA_SNAP_METHOD_COUNT_; m++) {
				ruma_snap_src *src = NULL;
				ruma_snap *s = NULL;
				ruma_snap_options o;
				ruma_snap_options_default(&o);
				o.method = (ruma_snap_method)m;
				o.pages_per_chunk = 2;
				ruma_os_inject(sys[si], nth, ENOMEM, false);
				ruma_snap_src_options so = { .bytes = 40 * 4096 };
				int rc = ruma_snap_src_create(&so, &src);
				if (!rc)
					rc = ruma_snap_create(&o, src, &s);
				if (!rc)
					rc = ruma_snap_write(s, 5 * 4096 + 7, "xyz", 3);
				ruma_os_inject_clear();
				if (rc)
					failures++;
				else
					CHECK(memcmp((char *)ruma_snap_data(s) + 5 * 4096 + 7, "xyz", 3) == 0);
				ruma_snap_destroy(s);
				ruma_snap_src_destroy(src);
			}
			/* pools */
			for (int k = 0; k < RUMA_POOL_KIND_COUNT_; k++) {
				ruma_pool_options o;
				ruma_pool *p = NULL;
				ruma_pool_options_default(&o);
				o.kind = (ruma_pool_kind)k;
				o.random = true;
				ruma_os_inject(sys[si], nth, ENOMEM, false);
				int rc = ruma_pool_create(&o, 64 * 4096, &p);
				ruma_os_inject_clear();
				if (rc) {
					CHECK(p == NULL);
					failures++;
					continue;
				}
				for (size_t i = 0; i < ruma_pool_pages(p); i++)
					*(uint64_t *)ruma_pool_page(p, i) = i;
				ruma_pool_destroy(p);
			}
			/* vectors: failure during growth keeps the contents */
			for (int k = 0; k < RUMA_VEC_KIND_COUNT_; k++) {
				ruma_vec *v = NULL;
				ruma_vec_options o;
				ruma_vec_options_default(&o);
				o.kind = (ruma_vec_kind)k;
				o.max_bytes = 64 << 20;
				if (ruma_vec_create(&o, &v)) /* created before the injection */
					return TEST_FAIL;
				ruma_os_inject(sys[si], nth, ENOMEM, false);
				size_t got = 0;
				for (uint64_t i = 0; i < 20000; i++) {
					if (ruma_vec_push_u64(v, i))
						break;
					got++;
				}
				ruma_os_inject_clear();
				CHECK_EQ(ruma_vec_size(v), got);
				for (size_t i = 0; i < got; i++)
					CHECK_EQ(ruma_vec_get_u64(v, i), i);
				failures += got < 20000;
				ruma_vec_destroy(v);
			}
			CHECK_EQ(maps_now(), before);
			total_failures += failures;
		}
	free(keys);
	CHECK(total_failures > 100); /* the injections did hit */
	CHECK_EQ(maps_now(), before);
	return TEST_PASS;
}

/* `ruma rwbench`: bad usage exits 2 with a message; a tiny run gives CSV rows. */
static int t_rwbench_cli(void)
{
	char *out = NULL, *err = NULL;
	char *bad1[] = { "", "rwbench", "bogus", NULL };
	char *bad2[] = { "", "rwbench", "partition", "--partitions", "12", NULL };
	char *bad3[] = { "", "rwbench", "vector", "--min-log", "12", "--max-log", "11", NULL };
	char *ok1[] = { "", "rwbench", "vector", "--min-log", "10", "--max-log", "11", "--reps", "1",
			"--only", "rewired,copy,indirect-4k", NULL };
	char *ok2[] = { "", "rwbench", "partition", "--n", "5000", "--reps", "1", "--partitions", "4",
			"--only", "traditional,mapped-chains,mapped-ext", NULL };

	CHECK_EQ(test_run_cli(bad1, NULL, &err), 2);
	CHECK(err && strstr(err, "unknown benchmark"));
	free(err);
	CHECK_EQ(test_run_cli(bad2, NULL, &err), 2);
	CHECK(err && strstr(err, "--partitions"));
	free(err);
	CHECK_EQ(test_run_cli(bad3, NULL, NULL), 2);
	CHECK_EQ(test_run_cli(ok1, &out, &err), 0);
	CHECK(out && strstr(out, "vector,rewired,1024,1,") && strstr(out, "vector,copy,2048,1,"));
	CHECK(err && strstr(err, "median"));
	free(out);
	free(err);
	CHECK_EQ(test_run_cli(ok2, &out, NULL), 0);
	CHECK(out && strstr(out, "partition,mapped-ext,4,"));
	free(out);
	return TEST_PASS;
}

/*
 * Run a huge-page test with 16 more 2 MiB pages reserved when we may (root),
 * putting the previous vm.nr_hugepages back afterwards; without the right or
 * the memory the test runs with what is free (and skips if nothing is).
 */
static int with_huge(int (*fn)(void))
{
	uint64_t cur = 0, prev = 0, actual = 0;
	bool raised = !ruma_sysinfo_read_nr_hugepages(2048, -1, &cur) &&
		      !ruma_sysinfo_set_nr_hugepages_ex(2048, cur + 16, &prev, &actual);
	int r = fn();
	if (raised)
		(void)ruma_sysinfo_set_nr_hugepages_ex(2048, prev, NULL, NULL);
	return r;
}

TEST_BIND(t_vec_model_2m_h, with_huge, t_vec_model_2m)
TEST_BIND(t_vec_inline_paths_2m_h, with_huge, t_vec_inline_paths_2m)
TEST_BIND(t_partition_huge_h, with_huge, t_partition_huge)
TEST_BIND(t_snapshot_2m_h, with_huge, t_snapshot_2m)
TEST_BIND(t_pools_h, with_huge, t_pools)

static const struct test_case cases[] = {
	{ "vec_model_4k", t_vec_model_4k },
	{ "vec_model_2m", t_vec_model_2m_h },
	{ "vec_generic_elem", t_vec_generic_elem },
	{ "vec_inject_growth", t_vec_inject_growth },
	{ "vec_rewired_properties", t_vec_rewired_properties },
	{ "vec_set_stable", t_vec_set_stable },
	{ "enum_names", t_enum_names },
	{ "vec_inline_paths", t_vec_inline_paths },
	{ "vec_inline_paths_2m", t_vec_inline_paths_2m_h },
	{ "vec_cursor_growth_failure", t_vec_cursor_growth_failure },
	{ "vec_populate_ahead", t_vec_populate_ahead },
	{ "part_histogram", t_part_histogram },
	{ "vec_size_limits", t_vec_size_limits },
	{ "vec_rewired_pool", t_vec_rewired_pool },
	{ "partition_all_methods", t_partition_all_methods },
	{ "partition_edge_cases", t_partition_edge_cases },
	{ "partition_adaptive_large", t_partition_adaptive_large },
	{ "partition_huge", t_partition_huge_h },
	{ "partition_huge_shortage", t_partition_huge_shortage },
	{ "partition_adaptive_first_blocks", t_partition_adaptive_first_blocks },
	{ "partition_mremap_huge_growth", t_partition_mremap_huge_growth },
	{ "snapshot_4k", t_snapshot_4k },
	{ "snapshot_2m", t_snapshot_2m_h },
	{ "pools", t_pools_h },
	{ "pool_map_budget", t_pool_map_budget },
	{ "inject_everywhere", t_inject_everywhere },
	{ "rwbench_cli", t_rwbench_cli },
};

int main(int argc, char **argv)
{
	return test_main("rwstruct", cases, TEST_N(cases), argc, argv);
}
