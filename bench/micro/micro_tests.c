/*
 * micro_tests.c — the test types of `ruma micro` (1-15, 18-23), which test
 * fits which method, and the verification against a reference.
 *
 * Every test is a timed phase that prints "seconds,field //total=N"; N is the
 * sum of the values the test read (or wrote), computed from the data itself.
 * Random tests draw their positions from ruma_rng seeded with the run seed
 * (fixed default, `--seed` to change), so a run is reproducible and the test
 * suite can compute the expected totals.
 *
 * Dependent-access tests (21-23) first turn the array into a cycle (untimed):
 * 21 and 22 a random cyclic permutation (every element points to the next one
 * of a shuffled order, so a full walk visits every element exactly once), 23
 * the sequential cycle i -> i+1.  The walk then reads pos = a[pos].
 *
 * Verification (--verify): the test is replayed, untimed and silently, on a
 * reference built in plain memory without rewiring (the values the method
 * promises, in the promised order); the totals and the final contents of the
 * arrays the test used must be equal.  Radix-sort tests always check that the
 * output is sorted and vector insertion always checks the vector contents.
 *
 * Syscalls: none (memory comes from malloc; methods own the mappings).
 */
#include "bench/micro/micro.h"

#include <ruma/partition.h>
#include <ruma/vector.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- the test table ---------------------------------------------------------- */

static const micro_test tests[] = {
	{ 1, "Read sequential x% src", 0, 1 },
	{ 2, "Read sequential x% dst", 0, 1 },
	{ 3, "Read x% random,uniform src", 0, 1 },
	{ 4, "Read x% random,uniform dst", 0, 1 },
	{ 5, "Write sequential x% src", 0, 1 },
	{ 6, "Write sequential x% dst", 0, 1 },
	{ 7, "Write x% random,uniform src", 0, 1 },
	{ 8, "Write x% random,uniform dst", 0, 1 },
	{ 9, "Read sequential all dst (two times)", 0, 0 },
	{ 10, "Read sequential all dst from several chunks", 0, 0 },
	{ 11, "Read sequential all dst and merge several chunks", 0, 0 },
	{ 12, "Radix-sort all dst", 0, 0 },
	{ 13, "Radix-sort all dst from several partitions (from consecutive memory region)", 0, 0 },
	{ 14, "Radix-sort all dst from several partitions (using an indirection)", 0, 0 },
	{ 15, "Vector insertion test", 0, 0 },
	{ 18, "Page fault test", 0, 1 },
	{ 19, "Read x% random,uniform dst through an indirection", 0, 1 },
	{ 20, "Write sequential all dst (two times)", 0, 0 },
	{ 21, "Read x% random,uniform dst with dependent access", 0, 1 },
	{ 22, "Read x% random,uniform dst with dependent access (mixed)", 0, 2 },
	{ 23, "Read sequential x% dst with dependent access", 0, 1 },
};

const micro_test *micro_test_find(int id)
{
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(tests); i++)
		if (tests[i].id == id)
			return &tests[i];
	return NULL;
}

static bool is_percent_test(int id)
{
	return (id >= 1 && id <= 8) || id == 19 || (id >= 21 && id <= 23);
}

int micro_test_set_params(const micro_test *t, const double *v, unsigned k, micro_params *p,
			  char *why, size_t whylen)
{
	p->percent = 100.0;
	p->test_huge = false;
	p->accesses = 5;
	if (k < t->min_params || k > t->max_params) {
		if (t->max_params == 0)
			snprintf(why, whylen, "test %d takes no parameter", t->id);
		else
			snprintf(why, whylen, "test %d takes at most %u parameter%s", t->id,
				 t->max_params, t->max_params > 1 ? "s" : "");
		return RUMA_EPARSE;
	}
	if (k == 0)
		return 0;
	if (is_percent_test(t->id)) {
		if (!(v[0] > 0.0 && v[0] <= 100.0)) {
			snprintf(why, whylen, "test %d: the percentage must be in (0, 100], got %g",
				 t->id, v[0]);
			return RUMA_EPARSE;
		}
		p->percent = v[0];
	}
	if (t->id == 22 && k == 2) {
		if (v[1] < 1 || v[1] > 1e6 || v[1] != (double)(uint64_t)v[1]) {
			snprintf(why, whylen, "test 22: accesses per start must be an integer in [1, 1000000]");
			return RUMA_EPARSE;
		}
		p->accesses = (uint64_t)v[1];
	}
	if (t->id == 18) {
		if (v[0] != 0.0 && v[0] != 1.0) {
			snprintf(why, whylen, "test 18: the parameter is huge = 0 or 1, got %g", v[0]);
			return RUMA_EPARSE;
		}
		p->test_huge = v[0] == 1.0;
	}
	return 0;
}

/* ---- which tests fit which method ----------------------------------------------------- */

#define T(x) (1u << (x))
#define SRC_TESTS (T(1) | T(3) | T(5) | T(7))
#define DST_TESTS (T(2) | T(4) | T(6) | T(8) | T(9) | T(18) | T(19) | T(20) | T(21) | T(22) | T(23))
#define PART_TESTS (T(10) | T(11) | T(12) | T(13) | T(14) | T(19))
#define ALLOC_TESTS (T(2) | T(4) | T(6) | T(9) | T(20) | T(21) | T(23))

/* Method 21 as the original: its partitions stay chains of blocks. */
static bool chained(const micro_method *m, const micro_params *p)
{
	return m->id == 17 || m->id == 44 || (m->id == 21 && !p->contiguous);
}

static uint32_t allowed_tests(const micro_method *m, const micro_params *p)
{
	if (chained(m, p))
		return SRC_TESTS | PART_TESTS; /* no contiguous destination */
	switch (m->id) {
	case 12: case 13: case 14: case 18: case 19: case 21:
		/* partitions laid out in one contiguous destination */
		return SRC_TESTS | PART_TESTS | T(2) | T(4) | T(6) | T(8) | T(9) | T(20);
	case 22: case 23: case 24: case 30: case 31: case 36: case 37: case 43:
		return T(15);
	case 20:
		return DST_TESTS; /* no single source array */
	case 32:
		return SRC_TESTS; /* the mapping is the source, as in the original */
	case 40: case 42:
		return ALLOC_TESTS;
	case 41:
		return T(2) | T(4) | T(20) | T(21);
	default:
		return SRC_TESTS | DST_TESTS;
	}
}

static const char *kind_desc(const micro_method *m, const micro_params *p)
{
	if (chained(m, p))
		return "partitions as chains of blocks (no contiguous destination array)";
	switch (m->id) {
	case 20:
		return "a contiguous destination array built from two pools (no single source array)";
	case 32:
		return "one mapping (a source array but no destination array)";
	case 40: case 42:
		return "a contiguous allocation (no source array)";
	case 41:
		return "pages behind a software indirection (no contiguous array, no source)";
	default:
		break;
	}
	switch (m->kind) {
	case MICRO_CONTIG: return "a contiguous destination array";
	case MICRO_PARTITIONED: return "partitions in one contiguous destination array";
	case MICRO_VECTOR: return "a vector";
	case MICRO_INDIRECT: return "pages behind a software indirection";
	}
	return "?";
}

static const char *test_need(int id)
{
	switch (id) {
	case 1: case 3: case 5: case 7: return "a source array";
	case 10: return "a destination made of several chunks (partitions or blocks)";
	case 11: return "several chunks to merge (partitions)";
	case 12: return "a destination array or partitions to sort";
	case 13: case 14: return "partitions";
	case 15: return "a vector to insert into";
	case 19: return "a destination array or partitions to index";
	default: return "a contiguous destination array";
	}
}

/* Pairs Rewiring_Microbench runs although the method's output does not fit
 * the test: what the original's numbers would measure, and what to run. */
static const struct {
	int method, test;
	const char *why;
} original_runs[] = {
	{ 32, 18,
	  "Rewiring_Microbench runs this pair, but with no destination its page fault test "
	  "writes the populated source mapping and reports it as write-seq-src: that is test 5 "
	  "(write sequential src), e.g. `ruma micro 32 5(100) ...`" },
	{ 17, 4,
	  "Rewiring_Microbench runs this pair by first merging the block chains into a new "
	  "array and reading that copy, not the partitions method 17 built: test 11 (merge, "
	  "then read) measures the merge and the read separately, tests 1 and 10 read the "
	  "chains, and methods 12 or 21(P,1) produce one contiguous output" },
};

const char *micro_combo_check(const micro_method *m, const micro_test *t, const micro_params *p,
			      char *buf, size_t len)
{
	if (allowed_tests(m, p) & T(t->id))
		return NULL;
	for (size_t i = 0; i < sizeof(original_runs) / sizeof(original_runs[0]); i++)
		if (original_runs[i].method == m->id && original_runs[i].test == t->id) {
			snprintf(buf, len, "method %d (%s) produces %s; test %d (%s) needs %s.  %s",
				 m->id, m->name, kind_desc(m, p), t->id, t->desc, test_need(t->id),
				 original_runs[i].why);
			return buf;
		}
	if (m->id >= 40 && m->id <= 42 && m->kind != MICRO_VECTOR)
		snprintf(buf, len,
			 "method %d (%s) produces %s; test %d (%s) is not part of the allocation "
			 "comparison (methods 40 and 42 support tests 2, 4, 6, 9, 20, 21, 23; method 41 "
			 "tests 2, 4, 20, 21)",
			 m->id, m->name, kind_desc(m, p), t->id, t->desc);
	else if (t->id == 10 && m->kind == MICRO_CONTIG)
		snprintf(buf, len,
			 "method %d (%s) produces %s; test 10 (%s) needs %s — use test 2 to read the "
			 "single array",
			 m->id, m->name, kind_desc(m, p), t->desc, test_need(10));
	else
		snprintf(buf, len, "method %d (%s) produces %s; test %d (%s) needs %s", m->id,
			 m->name, kind_desc(m, p), t->id, t->desc, test_need(t->id));
	return buf;
}

/* ---- views and kernels ------------------------------------------------------------------- */

/* Element access for the contiguous and the directory layouts. */
typedef struct view {
	uint64_t *a;     /* contiguous, or NULL */
	uint64_t **dir;  /* directory (when a == NULL) */
	unsigned shift;
	uint64_t mask;
	size_t n;
} view;

static inline uint64_t *at(const view *v, size_t i)
{
	return v->a ? &v->a[i] : &v->dir[i >> v->shift][i & v->mask];
}

static size_t count_of(size_t n, double percent)
{
	double m = (double)n * (percent / 100.0);
	size_t r = (size_t)m;

	return r > n ? n : r;
}

/*
 * The sum of a[0..n): four independent sums, so the loop is not bound by
 * one chain of additions (the compilers pair them into vector adds at -O2;
 * the original, built with -O3 -mavx, adds two words per step).
 */
static uint64_t sum_words(const uint64_t *a, size_t n)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;

	for (; i + 4 <= n; i += 4) {
		s0 += a[i];
		s1 += a[i + 1];
		s2 += a[i + 2];
		s3 += a[i + 3];
	}
	for (; i < n; i++)
		s0 += a[i];
	return s0 + s1 + s2 + s3;
}

static uint64_t read_seq(const view *v, size_t m)
{
	uint64_t total = 0;

	if (v->a)
		return sum_words(v->a, m);
	size_t per = (size_t)v->mask + 1;
	for (size_t pg = 0; pg * per < m; pg++)
		total += sum_words(v->dir[pg], RUMA_MIN(per, m - pg * per));
	return total;
}

static uint64_t read_rand(const view *v, size_t m, uint64_t seed)
{
	ruma_rng r;
	uint64_t total = 0;

	ruma_rng_seed(&r, seed);
	for (size_t i = 0; i < m; i++)
		total += *at(v, ruma_rng_below(&r, v->n));
	return total;
}

/* a[i] = top - i for i < m; the sum of the values written (four sums, as sum_words). */
static uint64_t fill_down(uint64_t *a, size_t m, uint64_t top)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;

	for (; i + 4 <= m; i += 4) {
		s0 += a[i] = top - i;
		s1 += a[i + 1] = top - i - 1;
		s2 += a[i + 2] = top - i - 2;
		s3 += a[i + 3] = top - i - 3;
	}
	for (; i < m; i++)
		s0 += a[i] = top - i;
	return s0 + s1 + s2 + s3;
}

static uint64_t write_seq(const view *v, size_t m)
{
	uint64_t total = 0, top = v->n - 1;

	if (v->a)
		return fill_down(v->a, m, top);
	size_t per = (size_t)v->mask + 1;
	for (size_t pg = 0; pg * per < m; pg++)
		total += fill_down(v->dir[pg], RUMA_MIN(per, m - pg * per), top - pg * per);
	return total;
}

static uint64_t write_rand(const view *v, size_t m, uint64_t seed)
{
	ruma_rng r;
	uint64_t total = 0, n = v->n;

	ruma_rng_seed(&r, seed);
	for (size_t i = 0; i < m; i++) {
		uint64_t idx = ruma_rng_below(&r, n);
		uint64_t x = n - 1 - idx;
		*at(v, idx) = x;
		total += x;
	}
	return total;
}

/* One write per page (4 KiB or 2 MiB stride) of the value already there. */
static uint64_t page_faults(const view *v, size_t stride_entries)
{
	uint64_t total = 0;

	for (size_t i = 0; i < v->n; i += stride_entries) {
		volatile uint64_t *e = at(v, i);
		uint64_t x = *e;
		*e = x;
		total += x;
	}
	return total;
}

/* Make the array a cycle: random (21, 22) or sequential (23). */
static int make_cycle(const view *v, bool random, uint64_t seed)
{
	size_t n = v->n;

	if (!random) {
		for (size_t i = 0; i < n; i++)
			*at(v, i) = (i + 1) % n;
		return 0;
	}
	uint64_t *idx = malloc(n * sizeof(*idx));
	ruma_rng r;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	ruma_rng_seed(&r, seed ^ 0x5bd1e995u);
	ruma_rng_shuffle_u64(&r, idx, n);
	for (size_t i = 0; i + 1 < n; i++)
		*at(v, idx[i]) = idx[i + 1];
	*at(v, idx[n - 1]) = idx[0];
	free(idx);
	return 0;
}

static uint64_t walk(const view *v, size_t m, uint64_t start)
{
	uint64_t total = 0, pos = start;

	if (v->a) {
		const uint64_t *a = v->a;
		for (size_t i = 0; i < m; i++) {
			pos = a[pos];
			total += pos;
		}
	} else {
		for (size_t i = 0; i < m; i++) {
			pos = *at(v, pos);
			total += pos;
		}
	}
	return total;
}

static uint64_t walk_mixed(const view *v, size_t m, uint64_t k, uint64_t seed)
{
	ruma_rng r;
	uint64_t total = 0;

	ruma_rng_seed(&r, seed);
	for (size_t i = 0; i < m; i++)
		total += walk(v, k, ruma_rng_below(&r, v->n));
	return total;
}

/* LSD radix sort, 8 bits per pass; passes where all keys share the digit are skipped. */
static int radix_sort(uint64_t *a, size_t n)
{
	uint64_t *tmp, *from = a, *to;
	uint64_t or_all = 0, and_all = ~0ull;

	if (n < 2)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	to = tmp;
	for (size_t i = 0; i < n; i++) {
		or_all |= a[i];
		and_all &= a[i];
	}
	for (unsigned sh = 0; sh < 64; sh += 8) {
		size_t cnt[256] = { 0 }, pos = 0;

		if ((((or_all ^ and_all) >> sh) & 0xff) == 0)
			continue; /* every key has the same digit here */
		for (size_t i = 0; i < n; i++)
			cnt[(from[i] >> sh) & 0xff]++;
		for (int d = 0; d < 256; d++) {
			size_t c = cnt[d];
			cnt[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			to[cnt[(from[i] >> sh) & 0xff]++] = from[i];
		uint64_t *t = from;
		from = to;
		to = t;
	}
	if (from != a)
		memcpy(a, from, n * sizeof(*a));
	free(tmp);
	return 0;
}

/* Sort the values behind an indirection (pointers to the elements) in place. */
static int radix_sort_indirect(uint64_t **ptr, size_t n)
{
	uint64_t *vals;
	int rc;

	if (n < 2)
		return 0;
	vals = malloc(n * sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		vals[i] = *ptr[i];
	rc = radix_sort(vals, n);
	if (rc == 0)
		for (size_t i = 0; i < n; i++)
			*ptr[i] = vals[i];
	free(vals);
	return rc;
}

static bool is_sorted(const uint64_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return false;
	return true;
}

static uint64_t sum(const uint64_t *a, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += a[i];
	return s;
}

/* ---- running one test on working data ------------------------------------------------------- */

/* What a test produced: up to two totals (tests 9 and 20 have two phases). */
typedef struct outcome {
	uint64_t total[2];
	int ntotals;
	bool sorted_ok;
} outcome;

typedef struct runner {
	micro_ctx *c;
	bool quiet; /* reference replay: no output, no timing into the fields */
	double saved_t0;
} runner;

static void begin(runner *r)
{
	if (!r->quiet)
		micro_phase_begin(r->c);
}

static void end_total(runner *r, micro_field f, uint64_t total, outcome *o)
{
	if (!r->quiet)
		micro_phase_end_total(r->c, f, total);
	if (o->ntotals < 2)
		o->total[o->ntotals++] = total;
}

static void end_plain(runner *r, micro_field f)
{
	if (!r->quiet)
		micro_phase_end(r->c, f);
}

static view dst_view(const micro_data *d)
{
	view v = { .a = d->dst, .dir = d->dir, .shift = d->page_shift, .n = d->n };

	v.mask = d->dir ? ((1ull << d->page_shift) - 1) : 0;
	return v;
}

static view src_view(const micro_data *d)
{
	view v = { .a = d->src, .n = d->n };
	return v;
}

/* Concatenate the segments into one new buffer (the "merge"). */
static uint64_t *merge_segments(const micro_data *d)
{
	uint64_t *out = malloc((d->n ? d->n : 1) * sizeof(*out));
	size_t off = 0;

	if (!out)
		return NULL;
	for (size_t s = 0; s < d->nseg; s++) {
		memcpy(out + off, d->seg_ptr[s], d->seg_len[s] * sizeof(*out));
		off += d->seg_len[s];
	}
	return out;
}

/* Pointers to every element, in partition order. */
static uint64_t **build_indirection(const micro_data *d)
{
	uint64_t **ind = malloc((d->n ? d->n : 1) * sizeof(*ind));
	size_t k = 0;

	if (!ind)
		return NULL;
	if (d->kind == MICRO_PARTITIONED) {
		for (size_t s = 0; s < d->nseg; s++)
			for (size_t j = 0; j < d->seg_len[s]; j++)
				ind[k++] = d->seg_ptr[s] + j;
	} else {
		view v = dst_view(d);
		for (size_t i = 0; i < d->n; i++)
			ind[i] = at(&v, i);
	}
	return ind;
}

/* dst itself, or (chunked partitions) a merged copy in *merged, timed as "merge". */
static uint64_t *contiguous_or_merged(runner *r, micro_data *d, uint64_t **merged)
{
	*merged = NULL;
	if (d->dst)
		return d->dst;
	begin(r);
	*merged = merge_segments(d);
	if (*merged)
		end_plain(r, MF_MERGE);
	return *merged;
}

static int run_sort_tests(runner *r, int id, micro_data *d, outcome *o)
{
	uint64_t *merged = NULL;
	int rc = 0;

	o->sorted_ok = true;
	if (id == 12 || id == 13) {
		uint64_t *a = contiguous_or_merged(r, d, &merged);
		if (!a)
			return -ENOMEM;
		begin(r);
		size_t off = 0;
		if (id == 12) {
			rc = radix_sort(a, d->n);
		} else {
			for (size_t p = 0; p < d->nparts && rc == 0; p++) {
				rc = radix_sort(a + off, d->hist[p]);
				off += d->hist[p];
			}
		}
		if (rc)
			goto out;
		end_total(r, MF_RADIX_SORT, sum(a, d->n), o);
		if (id == 12) {
			o->sorted_ok = is_sorted(a, d->n);
		} else {
			off = 0;
			for (size_t p = 0; p < d->nparts; p++) {
				o->sorted_ok &= is_sorted(a + off, d->hist[p]);
				off += d->hist[p];
			}
		}
	} else {
		begin(r);
		uint64_t **ind = build_indirection(d);
		if (!ind)
			return -ENOMEM;
		end_plain(r, MF_INDIRECTION);
		begin(r);
		size_t off = 0;
		for (size_t p = 0; p < d->nparts && rc == 0; p++) {
			rc = radix_sort_indirect(ind + off, d->hist[p]);
			off += d->hist[p];
		}
		uint64_t total = 0;
		for (size_t i = 0; i < d->n; i++)
			total += *ind[i];
		if (rc == 0)
			end_total(r, MF_RADIX_SORT, total, o);
		off = 0;
		for (size_t p = 0; p < d->nparts && rc == 0; p++) {
			for (size_t i = 1; i < d->hist[p]; i++)
				o->sorted_ok &= *ind[off + i - 1] <= *ind[off + i];
			off += d->hist[p];
		}
		free(ind);
	}
out:
	free(merged);
	return rc;
}

/*
 * Test 15, as the original's vector push-back test: n random 64-bit keys
 * (micro_urand64_fill, untimed), then the timed region is the push loop
 * alone — a push cursor (ruma_vec_cursor_push: the push position and limit
 * in registers, no call per element unless the vector grows).  The checksum
 * is the sum of the vector's contents, read after the clock stopped; the
 * contents are always compared with the keys.
 */
static int run_vector_test(runner *r, micro_data *d, outcome *o)
{
	ruma_vec *v = d->vec;
	uint64_t *keys = malloc((d->n ? d->n : 1) * sizeof(*keys)), total = 0;
	size_t n = d->n, i = 0;
	int rc = 0;
	double sec = 0;

	if (!keys)
		return -ENOMEM;
	micro_urand64_fill(keys, n, r->c->seed);
	if (!r->quiet)
		micro_phase_begin(r->c);
	ruma_vec_cursor cur = ruma_vec_cursor_begin(v);
	for (; i < n; i++)
		if (RUMA_UNLIKELY((rc = ruma_vec_cursor_push(v, &cur, keys[i])) != 0))
			break;
	ruma_vec_cursor_end(v, cur);
	if (!r->quiet)
		sec = micro_phase_stop(r->c, MF_VECTOR_INSERT);
	if (rc) {
		free(keys);
		return micro_fail("vector insertion", rc);
	}
	o->sorted_ok = ruma_vec_size(v) == n;
	for (i = 0; i < n && o->sorted_ok; i++) {
		uint64_t x = ruma_vec_get_u64(v, i);
		o->sorted_ok = x == keys[i];
		total += x;
	}
	d->vec_probe = n ? keys[n / 2] : 0;
	free(keys);
	if (!r->quiet)
		micro_phase_print_total(r->c, MF_VECTOR_INSERT, sec, total);
	if (o->ntotals < 2)
		o->total[o->ntotals++] = total;
	return 0;
}

/* Whether the method produced what test id reads: a contiguous
 * destination, a source array; 0 or exit status 1 after the message. */
static int check_inputs(int id, const micro_data *d)
{
	bool needs_dst = id == 2 || id == 4 || id == 6 || id == 8 || id == 9 || id == 18 ||
			 id == 20 || (id >= 21 && id <= 23);
	if (needs_dst && !d->dst && !d->dir) {
		fprintf(stderr, "ruma micro: the method produced no contiguous destination for test %d\n",
			id);
		return 1;
	}
	if ((id == 1 || id == 3 || id == 5 || id == 7) && !d->src) {
		fprintf(stderr, "ruma micro: the method produced no source array for test %d\n", id);
		return 1;
	}
	return 0;
}

/* Test 10: read the segments in place, one after the other. */
static void run_segments_test(runner *r, const micro_data *d, outcome *o)
{
	begin(r);
	uint64_t total = 0;
	for (size_t s = 0; s < d->nseg; s++)
		total += sum(d->seg_ptr[s], d->seg_len[s]);
	end_total(r, MF_READ_SEQ_DST, total, o);
}

/* Test 11: merge the segments into one array (timed), then read it. */
static int run_merge_test(runner *r, micro_data *d, outcome *o)
{
	begin(r);
	uint64_t *merged = merge_segments(d);
	if (!merged)
		return -ENOMEM;
	end_plain(r, MF_MERGE);
	begin(r);
	end_total(r, MF_READ_SEQ_DST, sum(merged, d->n), o);
	free(merged);
	return 0;
}

/* Test 19: build an indirection array (timed), then m random reads through it. */
static int run_indirection_test(runner *r, micro_data *d, size_t m, uint64_t seed, outcome *o)
{
	begin(r);
	uint64_t **ind = build_indirection(d);
	if (!ind)
		return -ENOMEM;
	end_plain(r, MF_INDIRECTION);
	ruma_rng g;
	uint64_t total = 0;
	ruma_rng_seed(&g, seed);
	begin(r);
	for (size_t i = 0; i < m; i++)
		total += *ind[ruma_rng_below(&g, d->n)];
	end_total(r, MF_READ_RAND_DST, total, o);
	free(ind);
	return 0;
}

/* Tests 21-23: a pointer cycle through the destination (random for 21
 * and 22, sequential for 23), walked m steps (22: mixed with accesses). */
static int run_cycle_test(runner *r, int id, const micro_params *p, view *dv, size_t m,
			  uint64_t seed, outcome *o)
{
	int rc = make_cycle(dv, id != 23, seed);
	if (rc)
		return rc;
	begin(r);
	if (id == 22)
		end_total(r, MF_READ_RAND_DST, walk_mixed(dv, m, p->accesses, seed), o);
	else
		end_total(r, id == 21 ? MF_READ_RAND_DST : MF_READ_SEQ_DST, walk(dv, m, 0), o);
	return 0;
}

static int run_test(runner *r, int id, const micro_params *p, micro_data *d, outcome *o)
{
	uint64_t seed = r->c->seed;
	view dv = dst_view(d), sv = src_view(d);
	size_t m = count_of(d->n, p->percent);

	memset(o, 0, sizeof(*o));
	o->sorted_ok = true;
	if (check_inputs(id, d))
		return 1;
	switch (id) {
	case 1: begin(r); end_total(r, MF_READ_SEQ_SRC, read_seq(&sv, m), o); break;
	case 2: begin(r); end_total(r, MF_READ_SEQ_DST, read_seq(&dv, m), o); break;
	case 3: begin(r); end_total(r, MF_READ_RAND_SRC, read_rand(&sv, m, seed), o); break;
	case 4: begin(r); end_total(r, MF_READ_RAND_DST, read_rand(&dv, m, seed), o); break;
	case 5: begin(r); end_total(r, MF_WRITE_SEQ_SRC, write_seq(&sv, m), o); break;
	case 6: begin(r); end_total(r, MF_WRITE_SEQ_DST, write_seq(&dv, m), o); break;
	case 7: begin(r); end_total(r, MF_WRITE_RAND_SRC, write_rand(&sv, m, seed), o); break;
	case 8: begin(r); end_total(r, MF_WRITE_RAND_DST, write_rand(&dv, m, seed), o); break;
	case 9:
		begin(r);
		end_total(r, MF_READ_SEQ_DST, read_seq(&dv, d->n), o);
		begin(r);
		end_total(r, MF_READ2_SEQ_DST, read_seq(&dv, d->n), o);
		break;
	case 20:
		begin(r);
		end_total(r, MF_WRITE_SEQ_DST, write_seq(&dv, d->n), o);
		begin(r);
		end_total(r, MF_WRITE2_SEQ_DST, write_seq(&dv, d->n), o);
		break;
	case 10: run_segments_test(r, d, o); break;
	case 11: return run_merge_test(r, d, o);
	case 12: case 13: case 14: return run_sort_tests(r, id, d, o);
	case 15: return run_vector_test(r, d, o);
	case 18:
		begin(r);
		end_total(r, MF_WRITE_SEQ_DST,
			  page_faults(&dv, (p->test_huge ? MICRO_HUGE_PAGE : MICRO_SMALL_PAGE) / 8), o);
		break;
	case 19: return run_indirection_test(r, d, m, seed, o);
	case 21: case 22: case 23: return run_cycle_test(r, id, p, &dv, m, seed, o);
	default:
		return -EINVAL;
	}
	return 0;
}

/* ---- the reference ---------------------------------------------------------------------------- */

typedef struct reference {
	micro_data d;
	uint64_t *src, *dst;
} reference;

static void ref_free(reference *ref)
{
	free(ref->src);
	free(ref->dst);
	micro_free_data_arrays(&ref->d);
}

/*
 * The values dst promises, in its order, computed without rewiring from the
 * method's input: src = 0..n-1, or the random keys of the partitioning
 * methods (drawn again from the same seed).
 */
static int ref_build(const micro_data *d, reference *ref)
{
	size_t n = d->n;

	memset(ref, 0, sizeof(*ref));
	ref->src = malloc((n ? n : 1) * sizeof(uint64_t));
	ref->dst = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!ref->src || !ref->dst)
		return -ENOMEM;
	if (d->random_keys)
		micro_urand64_fill(ref->src, n, d->key_seed);
	else
		for (size_t i = 0; i < n; i++)
			ref->src[i] = d->src_zero ? 0 : i;
	ref->d.random_keys = d->random_keys;
	ref->d.key_seed = d->key_seed;
	ref->d.part_shift = d->part_shift;
	ref->d.kind = d->kind == MICRO_INDIRECT ? MICRO_CONTIG : d->kind;
	ref->d.n = n;
	ref->d.src = ref->src;
	/* chunked partitions have no contiguous dst: the reference has none either */
	ref->d.dst = d->kind == MICRO_PARTITIONED && !d->dst ? NULL : ref->dst;
	if (d->chunk_perm) {
		/* dst chunk c holds source chunk perm[c] of the page-padded source */
		size_t ce = d->chunk_entries;
		for (size_t c = 0; c < d->nchunks_perm; c++) {
			for (size_t j = 0; j < ce; j++) {
				size_t di = c * ce + j, si = d->chunk_perm[c] * ce + j;
				if (di < n)
					ref->dst[di] = si < n ? si : 0;
			}
		}
	} else if (d->kind == MICRO_PARTITIONED) {
		uint32_t P = (uint32_t)d->nparts;
		size_t *start = calloc(P + 1, sizeof(size_t));
		ref->d.hist = calloc(P, sizeof(size_t));
		ref->d.seg_ptr = calloc(P, sizeof(uint64_t *));
		ref->d.seg_len = calloc(P, sizeof(size_t));
		ref->d.seg_part = calloc(P, sizeof(uint32_t));
		if (!start || !ref->d.hist || !ref->d.seg_ptr || !ref->d.seg_len || !ref->d.seg_part) {
			free(start);
			return -ENOMEM;
		}
		ruma_part_histogram(ref->src, n, d->part_shift, P, ref->d.hist);
		for (uint32_t p = 0; p < P; p++)
			start[p + 1] = start[p] + ref->d.hist[p];
		for (uint32_t p = 0; p < P; p++) {
			ref->d.seg_ptr[p] = ref->dst + start[p];
			ref->d.seg_len[p] = ref->d.hist[p];
			ref->d.seg_part[p] = p;
		}
		ref->d.nseg = P;
		ref->d.nparts = P;
		for (size_t i = 0; i < n; i++)
			ref->dst[start[ruma_part_of(ref->src[i], d->part_shift, P)]++] = ref->src[i];
		free(start);
	} else {
		for (size_t i = 0; i < n; i++)
			ref->dst[i] = d->dst_zero ? 0 : i;
	}
	return 0;
}

/* Compare the data's arrays with the reference's; first mismatch to stderr. */
static int compare(const micro_data *d, const reference *ref, int test_id)
{
	size_t n = d->n;
	bool dst_side = !(test_id == 1 || test_id == 3 || test_id == 5 || test_id == 7);

	if (d->kind == MICRO_PARTITIONED) {
		size_t k = 0;
		if (d->nparts != ref->d.nparts) {
			fprintf(stderr, "ruma micro: verification failed: %zu partitions, expected %zu\n",
				d->nparts, ref->d.nparts);
			return 1;
		}
		for (size_t p = 0; p < d->nparts; p++)
			if (d->hist[p] != ref->d.hist[p]) {
				fprintf(stderr,
					"ruma micro: verification failed: partition %zu holds %zu entries, "
					"expected %zu\n",
					p, d->hist[p], ref->d.hist[p]);
				return 1;
			}
		for (size_t s = 0; s < d->nseg; s++) {
			for (size_t j = 0; j < d->seg_len[s]; j++, k++) {
				if (k >= n || d->seg_ptr[s][j] != ref->dst[k]) {
					fprintf(stderr,
						"ruma micro: verification failed: partitioned entry %zu is "
						"%" PRIu64 ", expected %" PRIu64 "\n",
						k, d->seg_ptr[s][j], k < n ? ref->dst[k] : 0);
					return 1;
				}
			}
		}
		if (k != n) {
			fprintf(stderr, "ruma micro: verification failed: partitions hold %zu entries, expected %zu\n",
				k, n);
			return 1;
		}
		if (d->dst && d->nseg) {
			/* contiguous: the segments must lie back to back inside dst */
			const uint64_t *expect = d->dst;
			for (size_t s = 0; s < d->nseg; s++) {
				if (d->seg_ptr[s] != expect) {
					fprintf(stderr,
						"ruma micro: verification failed: partition segment %zu is not "
						"contiguous with the one before\n", s);
					return 1;
				}
				expect += d->seg_len[s];
			}
		}
	} else if (dst_side && (d->dst || d->dir)) {
		view v = dst_view(d);
		for (size_t i = 0; i < n; i++)
			if (*at(&v, i) != ref->dst[i]) {
				fprintf(stderr,
					"ruma micro: verification failed: dst[%zu] = %" PRIu64
					", expected %" PRIu64 "\n",
					i, *at(&v, i), ref->dst[i]);
				return 1;
			}
	}
	if (d->src && !(d->src_aliases_dst && dst_side)) {
		for (size_t i = 0; i < n; i++)
			if (d->src[i] != ref->src[i]) {
				fprintf(stderr,
					"ruma micro: verification failed: src[%zu] = %" PRIu64
					", expected %" PRIu64 "\n",
					i, d->src[i], ref->src[i]);
				return 1;
			}
	}
	return 0;
}

/* --corrupt: change one entry of what the test used, so verification must fail. */
static void corrupt_one(micro_data *d, int test_id)
{
	size_t i = d->n / 2;

	if (test_id == 1 || test_id == 3 || test_id == 5 || test_id == 7) {
		d->src[i] ^= 1ull << 40;
	} else if (d->kind == MICRO_VECTOR) {
		ruma_vec_set_u64(d->vec, i, ruma_vec_get_u64(d->vec, i) ^ (1ull << 40));
	} else if (d->kind == MICRO_PARTITIONED) {
		for (size_t s = 0; s < d->nseg; s++)
			if (d->seg_len[s]) {
				d->seg_ptr[s][0] ^= 1ull << 40;
				break;
			}
	} else {
		view v = dst_view(d);
		*at(&v, i) ^= 1ull << 40;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Partitions whose order inside a partition is not promised (the mapped
 * methods squeeze tails across partitions): every key must lie in the
 * partition its bits name, and the keys must be the input's keys (the same
 * multiset: both sorted and compared).  The reference then adopts the
 * method's order, so the replay of the test can be compared exactly.
 */
static int check_partition_sets(const micro_data *d, reference *ref)
{
	size_t n = d->n, k = 0;
	uint64_t *mine, *input;

	for (size_t s = 0; s < d->nseg; s++) {
		for (size_t j = 0; j < d->seg_len[s]; j++, k++) {
			uint64_t v = d->seg_ptr[s][j];
			if (k >= n || ruma_part_of(v, d->part_shift, (uint32_t)d->nparts) != d->seg_part[s]) {
				fprintf(stderr,
					"ruma micro: verification failed: key %" PRIu64
					" in partition %u (position %zu) is %s\n",
					v, d->seg_part[s], k, k >= n ? "beyond n keys" : "in the wrong partition");
				return 1;
			}
			ref->dst[k] = v;
		}
	}
	if (k != n) {
		fprintf(stderr, "ruma micro: verification failed: partitions hold %zu keys, expected %zu\n",
			k, n);
		return 1;
	}
	mine = malloc((n ? n : 1) * sizeof(*mine));
	input = malloc((n ? n : 1) * sizeof(*input));
	if (!mine || !input) {
		free(mine);
		free(input);
		return micro_fail("verification", -ENOMEM);
	}
	memcpy(mine, ref->dst, n * sizeof(*mine));
	memcpy(input, ref->src, n * sizeof(*input));
	qsort(mine, n, sizeof(*mine), cmp_u64);
	qsort(input, n, sizeof(*input), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (mine[i] != input[i]) {
			fprintf(stderr,
				"ruma micro: verification failed: the partitions do not hold the input "
				"keys (sorted position %zu: %" PRIu64 ", expected %" PRIu64 ")\n",
				i, mine[i], input[i]);
			free(mine);
			free(input);
			return 1;
		}
	free(mine);
	free(input);
	return 0;
}

/* Check what the method produced before the test runs (--verify). */
static int check_product(const micro_data *d, reference *ref)
{
	if (d->kind == MICRO_PARTITIONED && d->part_unordered) {
		int rc = check_partition_sets(d, ref);
		if (rc)
			return rc;
	}
	return compare(d, ref, 0);
}

int micro_test_run(micro_ctx *c, const micro_test *t, const micro_params *p, micro_data *d)
{
	runner r = { .c = c };
	outcome o, ro;
	reference ref;
	bool verify = c->verify && d->kind != MICRO_VECTOR;
	int rc;

	if (verify) {
		rc = ref_build(d, &ref);
		if (rc) {
			ref_free(&ref);
			return micro_fail("building the reference", rc);
		}
		rc = check_product(d, &ref);
		if (rc) {
			ref_free(&ref);
			return rc;
		}
	}
	printf("Starting tests:\n");
	rc = run_test(&r, t->id, p, d, &o);
	if (rc) {
		if (verify)
			ref_free(&ref);
		return rc < 0 ? micro_fail("test", rc) : rc;
	}
	if (c->corrupt && d->n) {
		corrupt_one(d, t->id);
		if (d->kind == MICRO_VECTOR)
			o.sorted_ok = ruma_vec_get_u64(d->vec, d->n / 2) == d->vec_probe;
	}
	if (!o.sorted_ok) {
		fprintf(stderr, "ruma micro: verification failed: %s\n",
			t->id == 15 ? "the vector does not hold the pushed keys in insertion order"
				    : "the radix sort output is not sorted");
		if (verify)
			ref_free(&ref);
		return 1;
	}
	if (!verify)
		return 0;
	runner rr = { .c = c, .quiet = true };
	rc = run_test(&rr, t->id, p, &ref.d, &ro);
	if (rc) {
		ref_free(&ref);
		return micro_fail("reference test", rc);
	}
	for (int i = 0; i < o.ntotals; i++)
		if (o.total[i] != ro.total[i]) {
			fprintf(stderr,
				"ruma micro: verification failed: total %" PRIu64
				" differs from the reference total %" PRIu64 "\n",
				o.total[i], ro.total[i]);
			ref_free(&ref);
			return 1;
		}
	rc = compare(d, &ref, t->id);
	ref_free(&ref);
	return rc;
}
