/*
 * artbench.c — Leis's ART benchmark over an index operations table:
 * key generation (modes 0-2 as Leis's ART.cpp, with glibc's rand(); mode 3
 * full 64-bit keys from ruma's generator), the timed insert / lookup / erase phases
 * with the counter table per operation of Leis's PerfEvent
 * (github.com/viktorleis/perfevent), page faults and process memory after
 * each phase, repetitions and their summary.
 *
 * With cfg->batch = W > 0 the lookup phase goes through the index's
 * lookup_batch (W lookups in flight, ARTBENCH_BATCH_CHUNK keys per call),
 * still in key-array order and with every result checked.
 *
 * Invariants: every lookup and erase result is checked (a wrong one is
 * counted and makes the run return 1); after the erase phase the index
 * must be empty.  Numbers printed come from ruma_now_sec, the perf module's
 * counters and getrusage deltas, and /proc/self/smaps_rollup.
 * System calls: only through the perf module (perf_event_open, getrusage,
 * reading smaps_rollup) and the allocator backends.
 */
#include "bench/art/artbench.h"
#include "bench/common/rep.h"
#include "bench/common/result.h"

#include <ruma/art.h>
#include "core/perf_ext.h"
#include "core/core_ext.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- keys ------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A source of fresh random keys for make_distinct. */
typedef uint64_t (*key_source)(void *ctx);

/* Replace duplicate random keys (all but the first copy) by fresh keys from
 * next(ctx) until all are distinct. */
static int make_distinct(uint64_t *keys, size_t n, key_source next, void *ctx, size_t *replaced)
{
	uint64_t *sorted = malloc(n * sizeof(uint64_t));
	uint64_t *dup = NULL;
	bool *seen = NULL;
	int rc = 0;

	if (!sorted)
		return -ENOMEM;
	*replaced = 0;
	for (;;) {
		size_t ndup = 0;
		memcpy(sorted, keys, n * sizeof(uint64_t));
		qsort(sorted, n, sizeof(uint64_t), cmp_u64);
		/* Duplicated values, unique and sorted, compacted to the front. */
		for (size_t i = 1; i < n; i++)
			if (sorted[i] == sorted[i - 1] && (ndup == 0 || sorted[ndup - 1] != sorted[i]))
				sorted[ndup++] = sorted[i];
		if (!ndup)
			break;
		dup = sorted;
		seen = calloc(ndup, sizeof(bool));
		if (!seen) {
			rc = -ENOMEM;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			uint64_t *hit = bsearch(&keys[i], dup, ndup, sizeof(uint64_t), cmp_u64);
			if (!hit)
				continue;
			if (seen[hit - dup]) {
				keys[i] = next(ctx);
				(*replaced)++;
			}
			seen[hit - dup] = true;
		}
		free(seen);
	}
	free(sorted);
	return rc;
}

uint64_t artbench_leis_key(void)
{
	uint64_t hi = (uint64_t)rand();
	return hi << 32 | (uint64_t)rand();
}

static uint64_t leis_source(void *ctx)
{
	(void)ctx;
	return artbench_leis_key();
}

static uint64_t rng_source(void *ctx)
{
	return ruma_rng_next(ctx);
}

void artbench_leis_shuffle(uint64_t *keys, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		size_t j = (size_t)rand() % (i + 1);
		uint64_t x = keys[i];
		keys[i] = keys[j];
		keys[j] = x;
	}
}

int artbench_make_keys(int mode, size_t n, uint64_t seed, artbench_keys *out)
{
	ruma_rng rng;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (mode < ARTBENCH_DENSE_SORTED || mode > ARTBENCH_SPARSE64)
		return -EINVAL;
	out->keys = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!out->keys)
		return -ENOMEM;
	out->n = n;
	out->mode = mode;
	srand((unsigned)seed);
	switch (mode) {
	case ARTBENCH_DENSE_SORTED:
	case ARTBENCH_DENSE_SHUFFLED:
		for (size_t i = 0; i < n; i++)
			out->keys[i] = i + 1;
		if (mode == ARTBENCH_DENSE_SHUFFLED)
			artbench_leis_shuffle(out->keys, n);
		break;
	case ARTBENCH_SPARSE:
		for (size_t i = 0; i < n; i++)
			out->keys[i] = artbench_leis_key();
		rc = make_distinct(out->keys, n, leis_source, NULL, &out->duplicates_replaced);
		break;
	default:
		ruma_rng_seed(&rng, seed);
		for (size_t i = 0; i < n; i++)
			out->keys[i] = ruma_rng_next(&rng);
		out->tid_is_row = true;
		rc = make_distinct(out->keys, n, rng_source, &rng, &out->duplicates_replaced);
		break;
	}
	if (rc)
		artbench_free_keys(out);
	return rc;
}

void artbench_free_keys(artbench_keys *k)
{
	free(k->keys);
	k->keys = NULL;
}

uint64_t artbench_bytes_needed(int mode, uint64_t n)
{
	/* Bytes per key the tree takes from the allocators at n = 1e6
	 * (docs/bench/art.md: at most 13 for dense keys, 34 for random ones),
	 * with room for malloc's headers and for other indexes. */
	uint64_t per_key = mode <= ARTBENCH_DENSE_SHUFFLED ? 24 : 48;
	uint64_t keys = 8, check = mode >= ARTBENCH_SPARSE ? 8 : 0;

	if (n > UINT64_MAX / (keys + per_key + check))
		return UINT64_MAX;
	return n * (keys + (per_key > check ? per_key : check));
}

/* ---- the ART as an index ------------------------------------------------------ */

static void be_key(uint64_t k, uint8_t out[8])
{
	uint64_t be = __builtin_bswap64(k);
	memcpy(out, &be, 8);
}

/* load_key for row TIDs: the key of row tid is keys[tid]. */
static void row_load_key(uint64_t tid, uint8_t key[8], void *ctx)
{
	const uint64_t *keys = ctx;
	be_key(keys[tid], key);
}

/* Row TIDs (mode 3): a TID-mode tree whose keys come from keys[tid]. */
static int art_tid_open(void **self, const ruma_alloc *a, const artbench_keys *keys)
{
	ruma_art_options opt = { RUMA_ART_TID, a, row_load_key, keys->keys };
	return ruma_art_create(&opt, (ruma_art **)self);
}

static int art_tid_insert(void *self, uint64_t key, uint64_t tid)
{
	uint8_t kb[8];
	be_key(key, kb);
	return ruma_art_insert(self, kb, 8, tid, NULL);
}

static int art_tid_lookup(void *self, uint64_t key, uint64_t *tid)
{
	uint8_t kb[8];
	be_key(key, kb);
	return ruma_art_lookup(self, kb, 8, tid);
}

static int art_tid_erase(void *self, uint64_t key)
{
	uint8_t kb[8];
	be_key(key, kb);
	return ruma_art_delete(self, kb, 8, NULL);
}

/* Keys that are their own TIDs (modes 0-2): a u64 tree and its fast path. */
static int art_open(void **self, const ruma_alloc *a, const artbench_keys *keys)
{
	ruma_art_options opt = { RUMA_ART_U64, a, NULL, NULL };
	(void)keys;
	return ruma_art_create(&opt, (ruma_art **)self);
}

static int art_insert(void *self, uint64_t key, uint64_t tid)
{
	if (key != tid)
		return -EINVAL;
	int rc = ruma_art_u64_insert(self, key);
	return rc > 0 ? 0 : rc;
}

static int art_lookup(void *self, uint64_t key, uint64_t *tid)
{
	*tid = key;
	return ruma_art_u64_lookup(self, key);
}

static size_t art_lookup_batch(void *self, const uint64_t *keys, size_t n, unsigned width,
			       uint8_t *found)
{
	return ruma_art_u64_lookup_batch(self, keys, n, width, found);
}

static int art_erase(void *self, uint64_t key)
{
	return ruma_art_u64_delete(self, key);
}

static int art_insert_keys(void *self, const uint64_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = ruma_art_u64_insert(self, keys[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static uint64_t art_lookup_keys(void *self, const uint64_t *keys, size_t n)
{
	uint64_t missing = 0;

	for (size_t i = 0; i < n; i++)
		missing += ruma_art_u64_lookup(self, keys[i]) != 0;
	return missing;
}

static uint64_t art_erase_keys(void *self, const uint64_t *keys, size_t n)
{
	uint64_t missing = 0;

	for (size_t i = 0; i < n; i++)
		missing += ruma_art_u64_delete(self, keys[i]) != 0;
	return missing;
}

static uint64_t art_count(void *self)
{
	return ruma_art_size(self);
}

static uint64_t art_bytes(void *self)
{
	ruma_art_stats st;
	ruma_art_get_stats(self, &st);
	return st.node_bytes + st.leaf_bytes;
}

static void art_close(void *self)
{
	ruma_art_destroy(self);
}

const artbench_index artbench_art_tid_index = {
	.name = "art", .open = art_tid_open, .insert = art_tid_insert, .lookup = art_tid_lookup,
	.erase = art_tid_erase, .count = art_count, .bytes = art_bytes, .close = art_close,
};

const artbench_index artbench_art_index = {
	.name = "art", .open = art_open, .insert = art_insert, .lookup = art_lookup,
	.erase = art_erase, .count = art_count, .bytes = art_bytes, .close = art_close,
	.row_tids = &artbench_art_tid_index, .lookup_batch = art_lookup_batch,
	.insert_keys = art_insert_keys, .lookup_keys = art_lookup_keys,
	.erase_keys = art_erase_keys,
};

/* ---- one run ------------------------------------------------------------------------- */

enum { OP_INSERT, OP_LOOKUP, OP_ERASE, OP_COUNT };
static const char *const op_names[OP_COUNT] = { "insert", "lookup", "erase" };

struct run {
	const artbench_config *cfg;
	const artbench_index *idx;
	const artbench_keys *keys;
	ruma_perf *perf;
	const ruma_alloc *alloc; /* NULL for peers */
	FILE *out, *err;
	uint64_t wrong;
	ruma_result *res; /* rows for --result, NULL = none */
	char said[4][512]; /* the allocator's lines printed so far (one per source) */
	unsigned nsaid;
};

/* The allocator's message callback: each distinct line once per run on err,
 * as "ruma: <line>", however many instances the repetitions create, and as
 * a note row "alloc_source" of the result file (what `ruma sweep` keeps). */
static void alloc_message(void *ctx, const char *line)
{
	struct run *r = ctx;

	for (unsigned i = 0; i < r->nsaid; i++)
		if (strcmp(r->said[i], line) == 0)
			return;
	if (r->nsaid < sizeof(r->said) / sizeof(r->said[0]))
		snprintf(r->said[r->nsaid++], sizeof(r->said[0]), "%s", line);
	fprintf(r->err, "ruma: %s\n", line);
	ruma_result_note(r->res, "alloc_source", line);
}

/* One --result row "<op>_<what>" (what NULL: the op's Mops). */
static void add_row(struct run *r, int op, const char *what, const char *unit, double v)
{
	char metric[64];

	snprintf(metric, sizeof(metric), "%s%s%s", op_names[op], what ? "_" : "", what ? what : "");
	ruma_result_add(r->res, metric, unit, v);
}

/* The extra lines after the counter table: faults and memory. */
static void print_extras(struct run *r, int op, uint64_t ops, void *self)
{
	ruma_perf_sample s;
	ruma_perf_memory mem;

	ruma_perf_sample_get(r->perf, &s);
	fprintf(r->out, "faults,%s,minor=%" PRId64 ",major=%" PRId64 ",per_op=%.6f\n", op_names[op],
		s.rusage.minor_faults, s.rusage.major_faults,
		(double)(s.rusage.minor_faults + s.rusage.major_faults) / (double)(ops ? ops : 1));
	if (r->res)
		add_row(r, op, "faults", "faults",
			(double)(s.rusage.minor_faults + s.rusage.major_faults));
	int rc = ruma_perf_memory_read(&mem);
	if (rc) {
		fprintf(r->out, "memory,%s,n/a (%s)\n", op_names[op], ruma_strerror(rc));
		return;
	}
	uint64_t index_bytes = r->idx->bytes(self);
	double n = (double)(r->keys->n ? r->keys->n : 1);
	fprintf(r->out,
		"memory,%s,rss=%" PRIu64 ",anon_huge=%" PRIu64 ",private_hugetlb=%" PRIu64
		",footprint=%" PRIu64 ",index_bytes=%" PRIu64 ",bytes_per_key=%.2f",
		op_names[op], mem.rss, mem.anon_huge, mem.private_hugetlb, mem.rss + mem.private_hugetlb,
		index_bytes, (double)index_bytes / n);
	if (r->res) {
		add_row(r, op, "footprint", "bytes", (double)(mem.rss + mem.private_hugetlb));
		add_row(r, op, "index_bytes", "bytes", (double)index_bytes);
		add_row(r, op, "anon_huge", "bytes", (double)mem.anon_huge);
		add_row(r, op, "private_hugetlb", "bytes", (double)mem.private_hugetlb);
	}
	if (r->alloc) {
		ruma_alloc_stats as;
		ruma_alloc_get_stats(r->alloc, &as);
		fprintf(r->out,
			",alloc_mapped=%" PRIu64 ",mapped_per_key=%.2f,pages_2m=%" PRIu64
			",pages_thp=%" PRIu64,
			as.bytes_mapped, (double)as.bytes_mapped / n, as.pages_2m, as.pages_thp);
		if (r->res)
			add_row(r, op, "alloc_mapped", "bytes", (double)as.bytes_mapped);
	}
	fputc('\n', r->out);
}

static double report(struct run *r, int op, uint64_t ops, double sec, void *self)
{
	double mops = (double)ops / 1e6 / (sec > 0 ? sec : 1e-9);
	fprintf(r->out, "%s,%" PRIu64 ",%f\n", op_names[op], (uint64_t)r->keys->n, mops);
	if (r->res)
		add_row(r, op, NULL, "Mops", mops);
	ruma_perf_print(r->perf, r->out, ops);
	print_extras(r, op, ops, self);
	fflush(r->out);
	return mops;
}

static int phase_insert(struct run *r, void *self, double *mops)
{
	const artbench_keys *k = r->keys;
	int rc = 0;

	ruma_perf_start(r->perf);
	double t0 = ruma_now_sec();
	if (r->idx->insert_keys)
		rc = r->idx->insert_keys(self, k->keys, k->n);
	else
		for (size_t i = 0; i < k->n && !rc; i++)
			rc = r->idx->insert(self, k->keys[i], artbench_tid(k, i));
	double t1 = ruma_now_sec();
	ruma_perf_stop(r->perf);
	if (rc) {
		fprintf(r->err, "ruma art: insert failed: %s\n", ruma_strerror(rc));
		return rc;
	}
	if (r->idx->count(self) != k->n) {
		fprintf(r->err, "ruma art: %" PRIu64 " keys after inserting %zu distinct keys\n",
			r->idx->count(self), k->n);
		r->wrong++;
	}
	*mops = report(r, OP_INSERT, k->n, t1 - t0, self);
	return 0;
}

/* The key array looked up once, ARTBENCH_BATCH_CHUNK keys per lookup_batch
 * call; every key must be found (keys are their own TIDs).  Returns the wrong results. */
static uint64_t lookup_batched(struct run *r, void *self)
{
	const artbench_keys *k = r->keys;
	uint8_t found[ARTBENCH_BATCH_CHUNK];
	uint64_t wrong = 0;

	for (size_t i = 0; i < k->n; i += ARTBENCH_BATCH_CHUNK) {
		size_t m = k->n - i < ARTBENCH_BATCH_CHUNK ? k->n - i : ARTBENCH_BATCH_CHUNK;
		size_t hits = r->idx->lookup_batch(self, k->keys + i, m, r->cfg->batch, found), ones = 0;
		for (size_t j = 0; j < m; j++)
			ones += found[j] == 1;
		wrong += (m - ones) + (hits != ones); /* absent keys; a count unlike found[] */
	}
	return wrong;
}

static uint64_t lookup_single(struct run *r, void *self)
{
	const artbench_keys *k = r->keys;
	uint64_t wrong = 0;

	if (r->idx->lookup_keys)
		return r->idx->lookup_keys(self, k->keys, k->n);
	for (size_t i = 0; i < k->n; i++) {
		uint64_t tid;
		if (r->idx->lookup(self, k->keys[i], &tid) != 0 || tid != artbench_tid(k, i))
			wrong++;
	}
	return wrong;
}

static void phase_lookup(struct run *r, void *self, double *mops)
{
	const artbench_keys *k = r->keys;
	uint64_t repeat = r->cfg->lookups / k->n, wrong = 0;
	bool batched = r->cfg->batch && r->idx->lookup_batch;

	if (repeat == 0)
		repeat = 1;
	ruma_perf_start(r->perf);
	double t0 = ruma_now_sec();
	for (uint64_t rep = 0; rep < repeat; rep++)
		wrong += batched ? lookup_batched(r, self) : lookup_single(r, self);
	double t1 = ruma_now_sec();
	ruma_perf_stop(r->perf);
	if (wrong)
		fprintf(r->err, "ruma art: %" PRIu64 " wrong lookup results\n", wrong);
	r->wrong += wrong;
	*mops = report(r, OP_LOOKUP, k->n * repeat, t1 - t0, self);
}

static void phase_erase(struct run *r, void *self, double *mops)
{
	const artbench_keys *k = r->keys;
	uint64_t wrong = 0;

	ruma_perf_start(r->perf);
	double t0 = ruma_now_sec();
	if (r->idx->erase_keys)
		wrong = r->idx->erase_keys(self, k->keys, k->n);
	else
		for (size_t i = 0; i < k->n; i++)
			wrong += r->idx->erase(self, k->keys[i]) != 0;
	double t1 = ruma_now_sec();
	ruma_perf_stop(r->perf);
	if (wrong)
		fprintf(r->err, "ruma art: %" PRIu64 " erase calls did not find their key\n", wrong);
	if (r->idx->count(self) != 0 || r->idx->bytes(self) != 0) {
		fprintf(r->err, "ruma art: index not empty after erasing all keys (%" PRIu64 " keys, %" PRIu64
			" bytes)\n", r->idx->count(self), r->idx->bytes(self));
		wrong++;
	}
	r->wrong += wrong;
	*mops = report(r, OP_ERASE, k->n, t1 - t0, self);
}

/* One insert/lookup/erase cycle on a fresh allocator and index. */
static int one_rep(struct run *r, double mops[OP_COUNT])
{
	ruma_alloc a;
	void *self = NULL;
	int rc;

	r->alloc = NULL;
	if (r->cfg->alloc_name) {
		ruma_alloc_options ao = { .message = alloc_message, .message_ctx = r };
		rc = ruma_alloc_create_by_name(r->cfg->alloc_name, &ao, &a);
		if (rc) {
			fprintf(r->err, "ruma art: allocator '%s': %s\n", r->cfg->alloc_name,
				ruma_strerror(rc));
			return rc;
		}
		r->alloc = &a;
	}
	rc = r->idx->open(&self, r->alloc, r->keys);
	if (rc) {
		fprintf(r->err, "ruma art: cannot create the %s index: %s\n", r->idx->name,
			ruma_strerror(rc));
	} else {
		rc = phase_insert(r, self, &mops[OP_INSERT]);
		if (!rc) {
			phase_lookup(r, self, &mops[OP_LOOKUP]);
			phase_erase(r, self, &mops[OP_ERASE]);
		}
		r->idx->close(self);
	}
	if (r->alloc)
		ruma_alloc_destroy(&a);
	return rc;
}

/* One summary line per operation: median, min, max over the measured repetitions. */
static void print_summary(struct run *r, const ruma_rep_samples *mops)
{
	for (int op = 0; op < OP_COUNT; op++) {
		ruma_summary s;
		if (ruma_rep_summary(mops, (size_t)op, &s))
			continue;
		fprintf(r->out, "summary,%s,%" PRIu64 ",reps=%zu,median=%f,min=%f,max=%f\n", op_names[op],
			(uint64_t)r->keys->n, s.n, s.median, s.min, s.max);
	}
}

/* the repetitions: the first is a warm-up of the summary (its lines and rows stay) */
struct rep_run {
	struct run *r;
	ruma_rep_samples *mops;
	unsigned first; /* repetitions before this one are left out of the summary */
};

static int rep_turn(void *ctx, const ruma_rep_turn *turn)
{
	struct rep_run *p = ctx;
	double mops[OP_COUNT];
	int rc;

	if (p->r->res)
		(void)ruma_result_setu(p->r->res, "rep", turn->round + 1);
	rc = one_rep(p->r, mops);
	for (int op = 0; !rc && turn->round >= p->first && op < OP_COUNT; op++)
		ruma_rep_put(p->mops, (size_t)op, turn->round - p->first, mops[op]);
	return rc;
}

/* One stderr line naming the counters this machine lacks (printed as n/a). */
static void report_missing_counters(const ruma_perf *p, FILE *err)
{
	int missing = 0;
	for (int e = 0; e < RUMA_PERF_NEVENTS; e++) {
		if (ruma_perf_available(p, e))
			continue;
		fprintf(err, "%s%s (%s)", missing++ ? ", " : "ruma art: counters printed as n/a: ",
			ruma_perf_event_name(e), ruma_strerror(ruma_perf_error(p, e)));
	}
	if (missing)
		fputc('\n', err);
}

int artbench_measure(const artbench_config *cfg, const artbench_index *idx, FILE *out, FILE *err,
		     ruma_result *res)
{
	artbench_keys keys;
	struct run r = { .cfg = cfg, .idx = idx, .keys = &keys, .out = out, .err = err, .res = res };
	ruma_rep_samples mops;
	ruma_rep plan;
	unsigned first = cfg->reps > 1 ? 1 : 0;
	int rc;

	rc = artbench_make_keys(cfg->mode, cfg->n, cfg->seed, &keys);
	if (rc) {
		fprintf(err, "ruma art: cannot make %" PRIu64 " keys: %s\n", cfg->n, ruma_strerror(rc));
		return rc;
	}
	if (keys.duplicates_replaced)
		fprintf(err, "ruma art: %zu duplicate random keys replaced by further random keys\n",
			keys.duplicates_replaced);
	rc = ruma_rep_samples_init(&mops, OP_COUNT, cfg->reps - first);
	if (!rc && (rc = ruma_perf_create(&r.perf)) != 0)
		ruma_rep_samples_free(&mops);
	if (rc) {
		fprintf(err, "ruma art: %s\n", ruma_strerror(rc));
		artbench_free_keys(&keys);
		return rc;
	}
	if (keys.tid_is_row && idx->row_tids)
		r.idx = idx->row_tids;
	if (cfg->batch && r.idx->lookup_batch)
		fprintf(err, "ruma art: lookups batched, width %u, %d keys per call\n", cfg->batch,
			ARTBENCH_BATCH_CHUNK);
	else if (cfg->batch)
		fprintf(err, "ruma art: lookups not batched (the %s index of this key mode has no "
			"batched lookup)\n", r.idx->name);
	report_missing_counters(r.perf, err);
	ruma_rep_init(&plan, 1, 1, 0, cfg->reps, RUMA_REP_ROTATE, cfg->seed);
	rc = ruma_rep_run(&plan, rep_turn, &(struct rep_run){ &r, &mops, first });
	if (!rc && cfg->reps > 1)
		print_summary(&r, &mops);
	ruma_perf_destroy(r.perf);
	ruma_rep_samples_free(&mops);
	artbench_free_keys(&keys);
	if (rc)
		return rc;
	if (r.wrong) {
		fprintf(err, "ruma art: %" PRIu64 " wrong results\n", r.wrong);
		return 1;
	}
	return 0;
}
