/*
 * rewirebench.c — measures what rewiring costs: one mmap per page vs one per
 * run, populate vs first touch, 4 KiB vs 2 MiB pages, an mremap move vs
 * rewiring plus refaulting, and moving anonymous pages (UFFDIO_MOVE) one by
 * one or as a run.  See rewirebench.h for the variants.
 *
 * Invariants: every number printed is a measured wall-clock time
 * (CLOCK_MONOTONIC around the operation only; area creation and teardown are
 * outside the timed region).  The repetitions run on the repetition engine
 * (common/rep.h): repetition 0 is a warm-up and is discarded; within a
 * repetition all variants of all page sizes run once, in a random order
 * drawn per repetition (so no variant always follows the same one).  nr_hugepages is changed only with
 * --reserve-huge and is restored before returning (also after SIGINT/SIGTERM,
 * which end the run early).
 *
 * Syscalls: none directly — the rewiring library (mmap, mremap, madvise,
 * fallocate, memfd_create) and core/sysinfo (huge page counts, nr_hugepages).
 */
#include "bench/rewire/rewirebench.h"

#include "bench/common/rep.h"

#include <ruma/area.h>
#include <ruma/anon.h>
#include "core/sysinfo_ext.h"
#include "core/core_ext.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARIANT_ROWS 2 /* a variant yields at most two measurements */

struct set {
	size_t ps;
	uint64_t pages;
	ruma_phys *pool;
	uint64_t *perm;            /* random permutation of [0, pages) */
	ruma_rewire_pair *pairs;
	ruma_rng *rng;
};

struct meas {
	const char *variant;
	double sec;
};

struct row {
	const char *variant;
	size_t ps;
	uint64_t pages;
	double ns_per_page;
};

struct results {
	struct row *rows;
	size_t n, cap;
	ruma_csv csv;
	ruma_result *res; /* --result rows, NULL = none */
};

typedef int (*variant_fn)(struct set *s, struct meas *m, size_t *nm);

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* ---- helpers ------------------------------------------------------------------- */

/* One write per page of [from, from + n). */
static void touch_range(ruma_area *a, uint64_t from, uint64_t n)
{
	for (uint64_t v = from; v < from + n; v++)
		*(volatile uint64_t *)ruma_area_addr(a, v) = v;
}

static void fill_pairs(struct set *s, bool random, bool shuffle_input)
{
	for (uint64_t v = 0; v < s->pages; v++)
		s->pairs[v] = (ruma_rewire_pair){ v, random ? s->perm[v] : v };
	for (uint64_t i = s->pages; shuffle_input && i > 1; i--) {
		uint64_t j = ruma_rng_below(s->rng, i);
		ruma_rewire_pair t = s->pairs[i - 1];
		s->pairs[i - 1] = s->pairs[j];
		s->pairs[j] = t;
	}
}

/* An area of `factor` times the set's pages, randomly wired when asked. */
static int area_for(struct set *s, uint64_t factor, bool wire_random, ruma_area **a)
{
	int rc = ruma_area_create(s->ps, s->pages * factor, a);
	if (rc || !wire_random)
		return rc;
	fill_pairs(s, true, false);
	rc = ruma_area_rewire_batch(*a, s->pool, s->pairs, s->pages, 0, NULL);
	if (rc)
		ruma_area_destroy(*a);
	return rc;
}

static int one(struct meas *m, size_t *nm, const char *name, double sec)
{
	m[0] = (struct meas){ name, sec };
	*nm = 1;
	return 0;
}

/* ---- variants ------------------------------------------------------------------ */

static int page_by_page(struct set *s, bool random, double *sec)
{
	ruma_area *a;
	int rc = area_for(s, 1, false, &a);
	if (rc)
		return rc;
	double t0 = ruma_now_sec();
	for (uint64_t v = 0; v < s->pages && !rc; v++)
		rc = ruma_area_map_run(a, v, s->pool, random ? s->perm[v] : v, 1, 0, NULL);
	*sec = ruma_now_sec() - t0;
	ruma_area_destroy(a);
	return rc;
}

static int v_page_random(struct set *s, struct meas *m, size_t *nm)
{
	double sec;
	int rc = page_by_page(s, true, &sec);
	return rc ? rc : one(m, nm, "page_random", sec);
}

static int v_page_contig(struct set *s, struct meas *m, size_t *nm)
{
	double sec;
	int rc = page_by_page(s, false, &sec);
	return rc ? rc : one(m, nm, "page_contig", sec);
}

static int batch(struct set *s, bool random, double *sec)
{
	ruma_area *a;
	int rc = area_for(s, 1, false, &a);
	if (rc)
		return rc;
	fill_pairs(s, random, true); /* unsorted input: the sort is part of the cost */
	double t0 = ruma_now_sec();
	rc = ruma_area_rewire_batch(a, s->pool, s->pairs, s->pages, 0, NULL);
	*sec = ruma_now_sec() - t0;
	ruma_area_destroy(a);
	return rc;
}

static int v_batch_random(struct set *s, struct meas *m, size_t *nm)
{
	double sec;
	int rc = batch(s, true, &sec);
	return rc ? rc : one(m, nm, "batch_random", sec);
}

static int v_batch_contig(struct set *s, struct meas *m, size_t *nm)
{
	double sec;
	int rc = batch(s, false, &sec);
	return rc ? rc : one(m, nm, "batch_contig", sec);
}

static const char *populate_name(ruma_populate_method how)
{
	switch (how) {
	case RUMA_POPULATE_MADVISE:
		return "populate_madvise";
	case RUMA_POPULATE_PROCESS_MADVISE:
		return "populate_process_madvise";
	default:
		return "populate_touch";
	}
}

static int v_populate(struct set *s, struct meas *m, size_t *nm)
{
	ruma_area *a;
	ruma_populate_method how;
	int rc = area_for(s, 1, true, &a);
	if (rc)
		return rc;
	double t0 = ruma_now_sec();
	rc = ruma_area_populate(a, 0, s->pages, 0, &how);
	double t1 = ruma_now_sec();
	if (!rc)
		touch_range(a, 0, s->pages);
	double t2 = ruma_now_sec();
	ruma_area_destroy(a);
	if (rc)
		return rc;
	m[0] = (struct meas){ populate_name(how), t1 - t0 };
	m[1] = (struct meas){ "touch_after_populate", t2 - t1 };
	*nm = 2;
	return 0;
}

static int v_first_touch(struct set *s, struct meas *m, size_t *nm)
{
	ruma_area *a;
	int rc = area_for(s, 1, true, &a);
	if (rc)
		return rc;
	double t0 = ruma_now_sec();
	touch_range(a, 0, s->pages);
	double sec = ruma_now_sec() - t0;
	ruma_area_destroy(a);
	return one(m, nm, "first_touch", sec);
}

/* A populated run of all pool pages at virtual pages [0, pages) of a 2x area. */
static int populated_run(struct set *s, ruma_area **a)
{
	int rc = area_for(s, 2, false, a);
	if (!rc)
		rc = ruma_area_map_run(*a, 0, s->pool, 0, s->pages, RUMA_AREA_POPULATE, NULL);
	if (rc)
		ruma_area_destroy(*a);
	return rc;
}

static int v_move_mremap(struct set *s, struct meas *m, size_t *nm)
{
	ruma_area *a;
	int rc = populated_run(s, &a);
	if (rc)
		return rc;
	double t0 = ruma_now_sec();
	rc = ruma_area_move(a, 0, s->pages, s->pages, NULL);
	if (!rc)
		touch_range(a, s->pages, s->pages);
	double sec = ruma_now_sec() - t0;
	ruma_area_destroy(a);
	return rc ? rc : one(m, nm, "move_mremap", sec);
}

static int v_move_rewire(struct set *s, struct meas *m, size_t *nm)
{
	ruma_area *a;
	int rc = populated_run(s, &a);
	if (rc)
		return rc;
	double t0 = ruma_now_sec();
	rc = ruma_area_map_run(a, s->pages, s->pool, 0, s->pages, 0, NULL);
	if (!rc)
		rc = ruma_area_unmap(a, 0, s->pages);
	if (!rc)
		touch_range(a, s->pages, s->pages);
	double sec = ruma_now_sec() - t0;
	ruma_area_destroy(a);
	return rc ? rc : one(m, nm, "move_rewire_refault", sec);
}

/*
 * Moving anonymous pages (4 KiB only): a populated staging area's pages go
 * to a fresh area, in random order (one call per page) or as one run, on
 * the path the probe found (UFFDIO_MOVE, else mremap); then touching them.
 * Creation and populating are outside the timed region.
 */
static int anon_move(struct set *s, bool random, double *sec)
{
	ruma_anon *src = NULL, *dst = NULL;
	ruma_move_pair *pairs = malloc(s->pages * sizeof(*pairs));
	int rc = pairs ? 0 : -ENOMEM;

	if (!rc)
		rc = ruma_anon_create(s->pages, RUMA_REWIRE_AUTO, &src);
	if (!rc)
		rc = ruma_anon_create(s->pages, ruma_anon_path(src), &dst);
	if (!rc)
		rc = ruma_anon_populate(src, 0, s->pages);
	for (uint64_t v = 0; !rc && v < s->pages; v++)
		pairs[v] = (ruma_move_pair){ v, random ? s->perm[v] : v };
	if (!rc) {
		double t0 = ruma_now_sec();
		rc = ruma_anon_move_batch(dst, src, pairs, s->pages, NULL);
		for (uint64_t v = 0; !rc && v < s->pages; v++)
			*(volatile uint64_t *)ruma_anon_addr(dst, v) = v;
		*sec = ruma_now_sec() - t0;
	}
	ruma_anon_destroy(src);
	ruma_anon_destroy(dst);
	free(pairs);
	return rc;
}

static int v_anon_move(struct set *s, struct meas *m, size_t *nm, bool random)
{
	ruma_rewire_path path;
	double sec;

	ruma_move_probe(&path, NULL);
	if (s->ps != RUMA_PAGE_4K || (random && path != RUMA_REWIRE_UFFD))
		return 0; /* hugetlb pages do not move; mremap would map every page */
	int rc = anon_move(s, random, &sec);
	if (rc)
		return rc;
	if (path == RUMA_REWIRE_UFFD)
		return one(m, nm, random ? "uffd_move_random" : "uffd_move_run", sec);
	return one(m, nm, "mremap_move_run", sec);
}

static int v_anon_move_random(struct set *s, struct meas *m, size_t *nm)
{
	return v_anon_move(s, m, nm, true);
}

static int v_anon_move_run(struct set *s, struct meas *m, size_t *nm)
{
	return v_anon_move(s, m, nm, false);
}

static const variant_fn variants[] = {
	v_page_random, v_page_contig, v_batch_random,	  v_batch_contig,  v_populate,
	v_first_touch, v_move_mremap, v_move_rewire,	  v_anon_move_random, v_anon_move_run,
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* ---- sets (one per page size) ----------------------------------------------------- */

static int set_open(struct set *s, size_t ps, uint64_t pages, ruma_rng *rng)
{
	uint64_t first;

	memset(s, 0, sizeof(*s));
	s->ps = ps;
	s->pages = pages;
	s->rng = rng;
	s->perm = malloc(pages * sizeof(*s->perm));
	s->pairs = malloc(pages * sizeof(*s->pairs));
	if (!s->perm || !s->pairs)
		return -ENOMEM;
	for (uint64_t i = 0; i < pages; i++)
		s->perm[i] = i;
	ruma_rng_shuffle_u64(rng, s->perm, pages);
	ruma_phys_options po = { .page_size = ps, .flags = RUMA_PHYS_PREPOPULATE };
	int rc = ruma_phys_create(&po, &s->pool);
	if (!rc)
		rc = ruma_phys_alloc(s->pool, pages, &first);
	return rc;
}

static void set_close(struct set *s)
{
	ruma_phys_destroy(s->pool);
	free(s->perm);
	free(s->pairs);
}

/* ---- results -------------------------------------------------------------------- */

static int record(struct results *r, const struct set *s, const struct meas *m, unsigned rep)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct row *nr = realloc(r->rows, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		r->rows = nr;
		r->cap = cap;
	}
	double ns = m->sec * 1e9 / (double)s->pages;
	r->rows[r->n++] = (struct row){ m->variant, s->ps, s->pages, ns };
	ruma_csv_str(&r->csv, m->variant);
	ruma_csv_u64(&r->csv, s->ps);
	ruma_csv_u64(&r->csv, s->pages);
	ruma_csv_u64(&r->csv, rep);
	ruma_csv_dbl(&r->csv, m->sec);
	ruma_csv_dbl(&r->csv, ns);
	if (r->res) {
		char metric[64];
		(void)ruma_result_setu(r->res, "page_size", s->ps);
		(void)ruma_result_setu(r->res, "pages", s->pages);
		(void)ruma_result_setu(r->res, "rep", rep);
		ruma_result_add(r->res, m->variant, "s", m->sec);
		snprintf(metric, sizeof(metric), "%s_ns_per_page", m->variant);
		ruma_result_add(r->res, metric, "ns/page", ns);
	}
	return ruma_csv_end(&r->csv);
}

/* Median ns/page of (variant, ps); 0 when absent. */
static double median_of(const struct results *r, const char *variant, size_t ps,
			ruma_summary *sum)
{
	double *v = malloc((r->n + 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->rows[i].ps == ps && !strcmp(r->rows[i].variant, variant))
			v[k++] = r->rows[i].ns_per_page;
	ruma_summary s = { 0 };
	ruma_summarize(v, k, &s);
	free(v);
	if (sum)
		*sum = s;
	return s.median;
}

/* Summary order: the variants as listed in rewirebench.h. */
static const char *const summary_order[] = {
	"page_random",	    "page_contig",	    "batch_random",
	"batch_contig",	    "populate_madvise",	    "populate_process_madvise",
	"populate_touch",
	"touch_after_populate", "first_touch",	    "move_mremap",
	"move_rewire_refault",	"uffd_move_random",   "uffd_move_run",
	"mremap_move_run",
};

static void print_ratio(const struct results *r, const char *what, const char *a, size_t psa,
			const char *b, size_t psb, double scale)
{
	double x = median_of(r, a, psa, NULL), y = median_of(r, b, psb, NULL);
	if (x > 0 && y > 0)
		fprintf(stderr, "  %-58s %8.2fx\n", what, x / y * scale);
}

static void print_summary(const struct results *r)
{
	fprintf(stderr, "\n%-22s %5s %7s %5s %14s %12s %12s\n", "variant", "page", "pages", "reps",
		"median ns/page", "min", "max");
	for (size_t p = 0; p < 2; p++) {
		size_t ps = p ? RUMA_PAGE_2M : RUMA_PAGE_4K;
		for (size_t i = 0; i < sizeof(summary_order) / sizeof(summary_order[0]); i++) {
			ruma_summary s;
			median_of(r, summary_order[i], ps, &s);
			if (s.n == 0)
				continue;
			uint64_t pages = 0;
			for (size_t j = 0; j < r->n && !pages; j++)
				if (r->rows[j].ps == ps)
					pages = r->rows[j].pages;
			fprintf(stderr, "%-22s %5s %7" PRIu64 " %5zu %14.1f %12.1f %12.1f\n",
				summary_order[i], p ? "2MiB" : "4KiB", pages, s.n, s.median, s.min,
				s.max);
		}
	}
	const size_t k4 = RUMA_PAGE_4K, m2 = RUMA_PAGE_2M;
	fprintf(stderr, "\nratios of medians (same run):\n");
	print_ratio(r, "page_random / batch_contig (per-page vs one mmap), 4KiB", "page_random", k4,
		    "batch_contig", k4, 1);
	print_ratio(r, "page_random / page_contig, 4KiB", "page_random", k4, "page_contig", k4, 1);
	print_ratio(r, "batch_random / batch_contig, 4KiB", "batch_random", k4, "batch_contig", k4, 1);
	print_ratio(r, "first_touch / populate_madvise, 4KiB", "first_touch", k4, "populate_madvise",
		    k4, 1);
	print_ratio(r, "move_rewire_refault / move_mremap, 4KiB", "move_rewire_refault", k4,
		    "move_mremap", k4, 1);
	print_ratio(r, "page_random / uffd_move_random (mmap vs move per page), 4KiB", "page_random",
		    k4, "uffd_move_random", k4, 1);
	print_ratio(r, "first_touch / uffd_move_run, 4KiB", "first_touch", k4, "uffd_move_run", k4, 1);
	print_ratio(r, "first_touch per byte: 4KiB / 2MiB", "first_touch", k4, "first_touch", m2,
		    (double)m2 / (double)k4);
	print_ratio(r, "page_random per byte: 4KiB / 2MiB", "page_random", k4, "page_random", m2,
		    (double)m2 / (double)k4);
}

/* ---- huge pages ------------------------------------------------------------------- */

static uint64_t huge_available(void)
{
	ruma_hugepage_pool p;
	if (ruma_sysinfo_huge_pool(2048, &p))
		return 0;
	return p.all.free > p.all.reserved ? p.all.free - p.all.reserved : 0;
}

/* How many 2 MiB pages to use (0: skip the set, with a note on stderr). */
static uint64_t huge_pages_for(const ruma_rewirebench_opts *o)
{
	uint64_t want = RUMA_MAX(o->pages * RUMA_PAGE_4K / RUMA_PAGE_2M, 1), have;

	if (o->no_huge) {
		fprintf(stderr, "# 2 MiB pages: skipped (--no-huge)\n");
		return 0;
	}
	have = huge_available();
	if (have == 0) {
		fprintf(stderr, "# 2 MiB pages: skipped — no free huge pages (HugePages_Free - "
				"HugePages_Rsvd is 0); use --reserve-huge N or raise vm.nr_hugepages\n");
		return 0;
	}
	if (have < want)
		fprintf(stderr, "# 2 MiB pages: only %" PRIu64 " free, measuring %" PRIu64
				" instead of %" PRIu64 " (the same bytes as the 4 KiB set)\n",
			have, have, want);
	return RUMA_MIN(have, want);
}

/* ---- the run ---------------------------------------------------------------------- */

/* the state of a run, for its turns */
struct bench_run {
	struct set *sets;
	struct results *r;
};

/* One turn: (set, variant) job `variant` once; its rows kept when measured. */
static int run_job(void *ctx, const ruma_rep_turn *turn)
{
	struct bench_run *b = ctx;
	struct set *s = &b->sets[turn->variant / NVARIANTS];
	struct meas m[MAX_VARIANT_ROWS];
	size_t nm = 0;
	int rc;

	if (stop_requested)
		return -EINTR;
	rc = variants[turn->variant % NVARIANTS](s, m, &nm);
	for (size_t i = 0; !rc && !turn->warmup && i < nm; i++)
		rc = record(b->r, s, &m[i], turn->rep + 1);
	return rc;
}

static int check_map_budget(uint64_t pages)
{
	uint64_t max;
	if (ruma_sysinfo_max_map_count(&max) == 0 && pages + 2 * RUMA_AREA_MAP_MARGIN > max) {
		fprintf(stderr, "rewire: --pages %" PRIu64 " needs about as many mappings, above "
				"vm.max_map_count %" PRIu64 " minus a margin of %u; raise it with "
				"sysctl -w vm.max_map_count=16777216 or use fewer pages\n",
			pages, max, 2 * RUMA_AREA_MAP_MARGIN);
		return RUMA_EMAPLIMIT;
	}
	return 0;
}

static int run_sets(const ruma_rewirebench_opts *o, ruma_rng *rng, struct results *r)
{
	struct set sets[2];
	size_t nsets = 0;
	uint64_t huge = huge_pages_for(o);
	int rc = set_open(&sets[nsets++], RUMA_PAGE_4K, o->pages, rng);

	if (!rc && huge) {
		rc = set_open(&sets[nsets++], RUMA_PAGE_2M, huge, rng);
		if (rc == RUMA_ENOHUGE) { /* taken by someone else meanwhile */
			fprintf(stderr, "# 2 MiB pages: skipped — %s\n", ruma_strerror(rc));
			set_close(&sets[--nsets]);
			rc = 0;
		}
	}
	if (!rc) { /* every (set, variant) job once per repetition, in a fresh random order */
		struct bench_run b = { sets, r };
		ruma_rep plan;
		ruma_rep_init(&plan, nsets * NVARIANTS, 1, 1, o->reps, RUMA_REP_SHUFFLE,
			      ruma_rng_next(rng));
		rc = ruma_rep_run(&plan, run_job, &b);
		if (!rc && stop_requested)
			rc = -EINTR;
	}
	for (size_t i = 0; i < nsets; i++)
		set_close(&sets[i]);
	return rc;
}

int ruma_rewirebench_measure(const ruma_rewirebench_opts *o)
{
	struct results r = { .res = o->res };
	ruma_rng rng;
	uint64_t prev_nr = 0;
	bool reserved = false;
	int rc = check_map_budget(o->pages);

	if (rc)
		return rc;
	ruma_rng_seed(&rng, o->seed);
	ruma_csv_init(&r.csv, o->csv);
	ruma_csv_header(&r.csv, (const char *const[]){ "variant", "page_size", "pages", "rep",
							"seconds", "ns_per_page", NULL });
	if (o->reserve_huge) {
		uint64_t cur = 0, actual = 0;
		rc = ruma_sysinfo_read_nr_hugepages(2048, -1, &cur);
		if (!rc)
			rc = ruma_sysinfo_set_nr_hugepages_ex(2048, cur + o->reserve_huge, &prev_nr,
							      &actual);
		if (rc)
			return rc;
		reserved = true;
		fprintf(stderr, "# nr_hugepages %" PRIu64 " -> %" PRIu64 " for this run\n", prev_nr,
			actual);
	}
	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	fprintf(stderr, "# seed %" PRIu64 ", %u measured reps + 1 warm-up, variants interleaved\n",
		o->seed, o->reps);
	rc = run_sets(o, &rng, &r);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (reserved) {
		int rr = ruma_sysinfo_set_nr_hugepages_ex(2048, prev_nr, NULL, NULL);
		fprintf(stderr, "# nr_hugepages restored to %" PRIu64 "%s\n", prev_nr,
			rr ? " FAILED" : "");
	}
	if (!rc)
		print_summary(&r);
	free(r.rows);
	return rc;
}
