/*
 * test_kv.c — `ruma kv` (bench/kv): YCSB's generators (zipfian skew
 * against its formula, the scrambled generator's spread over the keys and
 * skew kept, latest favouring the newest keys, YCSB's FNV hash), the
 * latency histogram's buckets and percentiles, every built system's
 * adapter against a model (reads return what was written last, deletes,
 * scans forward and backward return the right keys in order: ruma always,
 * the peers when built with -DRUMA_PEERS=ON), each workload's operation
 * mix and scan lengths on a small run against ruma (each run ending with
 * --check: every key read back, the table scanned in order), values of
 * 5 000 and 70 000 bytes (BLOBs in ruma's store) through reads, updates,
 * read-modify-writes and scans, --check
 * finding a deleted key, result rows well formed, every peer built in
 * running workloads of each kind on two threads, the one-snapshot check of
 * scanfull and scanwhilewriting (fed inconsistent sequences; on every
 * built system a scan split over two transactions with a commit between
 * them fails it, naming the key and the stamps, and one split inside one
 * read transaction passes where the adapter's transactions are snapshots;
 * a row newer than the meta row stops a run), both workloads for a second
 * on ruma with entries/s and the version store back to its floor within
 * a second, SIGTERM ending a run
 * cleanly (exit 143), the cgroup's limit holding for page cache read
 * inside it, and option errors giving a clear message and exit
 * status 2 (among them values beyond the memory budget without --cgroup).
 */
#include "test.h"

#include "bench/common/result.h"
#include "bench/kv/cgroup.h"
#include "bench/kv/hist.h"
#include "bench/kv/kv.h"
#include "bench/kv/snapcheck.h"
#include "bench/kv/store_dir.h"
#include "bench/kv/worker.h"

#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

#define SAMPLES 200000u

static int t_fnv(void)
{
	/* FNV-1a of the 8 bytes, low first, as YCSB's Utils.fnvhash64 (Math.abs) */
	CHECK(ruma_kv_fnv(0) == 6284781860667377211ull);
	CHECK(ruma_kv_fnv(1) == 8517097267634966620ull);
	CHECK(ruma_kv_fnv(12345) == 1792800413050876852ull);
	char key[RUMA_KV_KEY_MAX];
	CHECK_EQ(ruma_kv_key(RUMA_KV_KEYS_YCSB, 0, key), 23);
	CHECK(!strcmp(key, "user6284781860667377211"));
	CHECK_EQ(ruma_kv_key(RUMA_KV_KEYS_DBBENCH, 42, key), 16);
	CHECK(!strcmp(key, "0000000000000042"));
	return TEST_PASS;
}

/* Zipfian over 1000 items: the first items' frequencies are 1/(i^0.99 zeta(n)). */
static int t_zipf_skew(void)
{
	static uint64_t count[1000];
	ruma_kv_zipf z;
	ruma_rng r;
	ruma_rng_seed(&r, test_seed);
	memset(count, 0, sizeof(count));
	ruma_kv_zipf_init(&z, 1000, RUMA_KV_ZIPF_THETA, 0);
	double zetan = ruma_kv_zeta(0, 1000, RUMA_KV_ZIPF_THETA, 0);
	CHECK(fabs(z.zetan - zetan) < 1e-9);
	for (unsigned i = 0; i < SAMPLES; i++) {
		uint64_t v = ruma_kv_zipf_next(&z, &r, 1000);
		CHECK(v < 1000);
		count[v]++;
	}
	/* items 0 and 1 are drawn exactly with their zipfian frequency */
	for (unsigned i = 0; i < 2; i++) {
		double want = SAMPLES / (pow(i + 1, RUMA_KV_ZIPF_THETA) * zetan);
		double got = (double)count[i];
		if (fabs(got - want) > 0.05 * want) {
			fprintf(stderr, "  item %u: %.0f drawn, %.0f expected\n", i, got, want);
			return TEST_FAIL;
		}
	}
	/* beyond them Gray's formula approximates the distribution function:
	 * P(v < k) = zeta(k) / zeta(n) within a few per cent */
	static const unsigned ks[] = { 10, 100, 500 };
	for (unsigned j = 0; j < 3; j++) {
		uint64_t below = 0;
		for (unsigned i = 0; i < ks[j]; i++)
			below += count[i];
		double want = ruma_kv_zeta(0, ks[j], RUMA_KV_ZIPF_THETA, 0) / zetan;
		double got = (double)below / SAMPLES;
		if (fabs(got - want) > 0.06 * want) {
			fprintf(stderr, "  P(v < %u) = %.4f, zipfian %.4f\n", ks[j], got, want);
			return TEST_FAIL;
		}
	}
	/* a larger item count extends zeta incrementally */
	ruma_kv_zipf_next(&z, &r, 2000);
	CHECK(fabs(z.zetan - ruma_kv_zeta(0, 2000, RUMA_KV_ZIPF_THETA, 0)) < 1e-9);
	return TEST_PASS;
}

/* Draws of a key chooser counted per key. */
struct draws {
	ruma_kv_chooser c;
	ruma_rng r;
	uint64_t count[1000];
};

/* SAMPLES draws below limit (at most 1000) counted into d->count, cleared
 * first; a draw not below limit fails. */
static int draws_run(struct draws *d, uint64_t limit)
{
	memset(d->count, 0, sizeof(d->count));
	for (unsigned i = 0; i < SAMPLES; i++) {
		uint64_t v = ruma_kv_chooser_next(&d->c, &d->r, limit);
		CHECK(v < limit);
		d->count[v]++;
	}
	return TEST_PASS;
}

/* A chooser of dist over 1000 keys, its generator seeded with test_seed +
 * salt, and its first SAMPLES draws (draws_run). */
static int draws_first(struct draws *d, ruma_kv_dist dist, uint64_t salt)
{
	ruma_rng_seed(&d->r, test_seed + salt);
	ruma_kv_chooser_init(&d->c, dist, 1000, 0);
	return draws_run(d, 1000);
}

/* Scrambled: the hot keys are spread over the key space, and stay hot. */
static int t_scrambled_spread(void)
{
	static struct draws d;
	const uint64_t *count = d.count;
	CHECK(draws_first(&d, RUMA_KV_ZIPFIAN, 1) == TEST_PASS);
	/* the hottest key: at least zipfian's first item, 1/zeta(1e10) = 3.8 % */
	uint64_t max = 0, upper_half_hot = 0, low_decile = 0;
	for (unsigned i = 0; i < 1000; i++) {
		max = count[i] > max ? count[i] : max;
		upper_half_hot += i >= 500 && count[i] > SAMPLES / 200;
		low_decile += i < 100 ? count[i] : 0;
	}
	CHECK(max > SAMPLES * 35 / 1000);
	CHECK(upper_half_hot >= 2);  /* hot keys are not all at the start */
	/* unscrambled zipfian puts 2/3 in the first 100 keys; scrambled about 10 % */
	CHECK(low_decile < SAMPLES / 4);
	unsigned zero = 0;
	for (unsigned i = 0; i < 1000; i++)
		zero += count[i] == 0;
	CHECK(zero < 500); /* spread: most keys drawn at least once */
	return TEST_PASS;
}

/* Latest: the newest key is the hottest, and the newest 10 % take most draws. */
static int t_latest(void)
{
	static struct draws d;
	const uint64_t *count = d.count;
	CHECK(draws_first(&d, RUMA_KV_LATEST, 2) == TEST_PASS);
	uint64_t newest = 0;
	for (unsigned i = 900; i < 1000; i++)
		newest += count[i];
	for (unsigned i = 0; i < 999; i++)
		CHECK(count[i] <= count[999]);
	CHECK(newest > SAMPLES / 2);
	/* after inserts the newest key moves with the limit */
	uint64_t at_new = 0;
	for (unsigned i = 0; i < 10000; i++)
		at_new += ruma_kv_chooser_next(&d.c, &d.r, 1100) == 1099;
	CHECK(at_new > 10000 / 20);
	/* uniform: flat */
	ruma_kv_chooser_init(&d.c, RUMA_KV_UNIFORM, 1000, 0);
	CHECK(draws_run(&d, 10) == TEST_PASS);
	for (unsigned i = 0; i < 10; i++)
		CHECK(count[i] > SAMPLES / 10 * 9 / 10 && count[i] < SAMPLES / 10 * 11 / 10);
	return TEST_PASS;
}

static int t_hist(void)
{
	/* buckets are contiguous, ordered, and hold their values within 1 % */
	for (uint64_t v = 0; v < 100000; v++) {
		unsigned b = ruma_kv_hist_bucket(v);
		CHECK(b < RUMA_KV_HIST_BUCKETS);
		CHECK(ruma_kv_hist_upper(b) >= v);
		CHECK(b == 0 || ruma_kv_hist_upper(b - 1) < v);
		CHECK((double)(ruma_kv_hist_upper(b) - v) <= 0.01 * (double)v + 1e-9);
	}
	CHECK(ruma_kv_hist_bucket(UINT64_MAX) == RUMA_KV_HIST_BUCKETS - 1);
	CHECK(ruma_kv_hist_upper(RUMA_KV_HIST_BUCKETS - 1) == UINT64_MAX);
	ruma_kv_hist *h = malloc(sizeof(*h)), *g = malloc(sizeof(*g));
	CHECK(h && g);
	ruma_kv_hist_reset(h);
	ruma_kv_hist_reset(g);
	CHECK_EQ(ruma_kv_hist_quantile(h, 0.5), 0);
	for (uint64_t v = 1; v <= 50000; v++)
		ruma_kv_hist_add(h, v);
	for (uint64_t v = 50001; v <= 100000; v++)
		ruma_kv_hist_add(g, v);
	ruma_kv_hist_merge(h, g);
	CHECK_EQ(h->count, 100000);
	CHECK_EQ(h->min, 1);
	CHECK_EQ(h->max, 100000);
	double p50 = (double)ruma_kv_hist_quantile(h, 0.5);
	double p99 = (double)ruma_kv_hist_quantile(h, 0.99);
	double p999 = (double)ruma_kv_hist_quantile(h, 0.999);
	CHECK(p50 >= 50000 && p50 <= 50000 * 1.01);
	CHECK(p99 >= 99000 && p99 <= 99000 * 1.01);
	CHECK(p999 >= 99900 && p999 <= 100000);
	CHECK_EQ(ruma_kv_hist_quantile(h, 1.0), 100000);
	free(h);
	free(g);
	return TEST_PASS;
}

/* ---- adapters against a model --------------------------------------------- */

#define MODEL_KEYS 300u
#define VSIZE 100u

struct model {
	bool present[MODEL_KEYS];
	unsigned char val[MODEL_KEYS][VSIZE];
};

struct scan_check {
	const struct model *m;
	int next;      /* the key number the next entry must have */
	int step;      /* +1 forward, -1 backward */
	int bad;
};

static void mkey(unsigned n, char *k)
{
	snprintf(k, 16, "k%05u", n);
}

/* The next present key number from n in direction step, or -1. */
static int model_next(const struct model *m, int n, int step)
{
	for (; n >= 0 && n < (int)MODEL_KEYS; n += step)
		if (m->present[n])
			return n;
	return -1;
}

static bool check_entry(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct scan_check *c = ctx;
	char want[16];
	if (c->next < 0) {
		c->bad++;
		return false;
	}
	mkey((unsigned)c->next, want);
	if (klen != strlen(want) || memcmp(key, want, klen) || vlen != VSIZE ||
	    memcmp(val, c->m->val[c->next], VSIZE))
		c->bad++;
	c->next = model_next(c->m, c->next + c->step, c->step);
	return true;
}

static void quiet_note(void *ctx, const char *setting, const char *text)
{
	(void)ctx;
	(void)setting;
	(void)text;
}

/* One transaction writing or deleting key n (in the model too). */
static int model_write(const ruma_kv_system *s, ruma_kv_thread *th, struct model *m, unsigned n,
		       bool del)
{
	char k[16];
	mkey(n, k);
	CHECK_OK(s->begin(th, RUMA_KV_WRITE | RUMA_KV_ONE));
	if (del) {
		int rc = s->del(th, k, strlen(k));
		/* a missing key: RUMA_ENOTFOUND, or 0 where a delete is a blind tombstone */
		CHECK(rc == 0 || (rc == RUMA_ENOTFOUND && !m->present[n]));
		m->present[n] = false;
	} else {
		for (unsigned i = 0; i < VSIZE; i++)
			m->val[n][i] = (unsigned char)ruma_rng_next(&test_rng);
		CHECK_OK(s->put(th, k, strlen(k), m->val[n], VSIZE));
		m->present[n] = true;
	}
	if (s->commit(th)) {
		fprintf(stderr, "  %s: commit: %s\n", s->name, th->err);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

static int model_reads(const ruma_kv_system *s, ruma_kv_thread *th, const struct model *m)
{
	char k[16];
	CHECK_OK(s->begin(th, 0));
	for (unsigned n = 0; n < MODEL_KEYS; n++) {
		const void *v;
		size_t vlen;
		mkey(n, k);
		int rc = s->get(th, k, strlen(k), &v, &vlen);
		CHECK_EQ(rc, m->present[n] ? 0 : RUMA_ENOTFOUND);
		if (!rc) {
			CHECK_EQ(vlen, VSIZE);
			CHECK(!memcmp(v, m->val[n], VSIZE));
		}
	}
	CHECK_OK(s->commit(th));
	return TEST_PASS;
}

/* A scan of up to len entries from key number from (-1: no key) in direction step. */
static int model_scan(const ruma_kv_system *s, ruma_kv_thread *th, const struct model *m,
		      int from, unsigned len, int step)
{
	char k[16];
	int start = from < 0 ? (step > 0 ? 0 : (int)MODEL_KEYS - 1) : from;
	struct scan_check c = { m, model_next(m, start, step), step, 0 };
	unsigned want = 0;
	for (int n = c.next; n >= 0 && want < len; n = model_next(m, n + step, step))
		want++;
	mkey((unsigned)(from < 0 ? 0 : from), k);
	CHECK_OK(s->begin(th, RUMA_KV_ONE));
	int64_t seen = s->scan(th, from < 0 ? NULL : k, strlen(k), len, step < 0, check_entry, &c);
	CHECK_OK(s->commit(th));
	if (seen != (int64_t)want || c.bad) {
		fprintf(stderr, "  %s: scan from %d, %u %s: %lld entries (%u expected), %d wrong\n",
			s->name, from, len, step > 0 ? "forward" : "backward", (long long)seen, want,
			c.bad);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

static int model_run(const ruma_kv_system *s, const char *path)
{
	struct model *m = calloc(1, sizeof(*m));
	ruma_kv_conf conf = { .dir = path, .memory = 32ull << 20, .sync = false, .threads = 1,
			      .records = MODEL_KEYS, .key_max = 16, .value_size = VSIZE,
			      .note = quiet_note };
	void *store;
	ruma_kv_thread *th;
	char err[256];
	CHECK(m);
	if (s->open(&conf, &store, err, sizeof(err))) {
		fprintf(stderr, "  %s: open: %s\n", s->name, err);
		return TEST_FAIL;
	}
	CHECK_OK(s->thread_open(store, &th, err, sizeof(err)));
	int r = model_reads(s, th, m); /* empty */
	for (unsigned i = 0; r == TEST_PASS && i < 4 * MODEL_KEYS; i++) {
		unsigned n = (unsigned)ruma_rng_below(&test_rng, MODEL_KEYS);
		r = model_write(s, th, m, n, ruma_rng_below(&test_rng, 4) == 0);
	}
	if (r == TEST_PASS)
		r = model_reads(s, th, m);
	for (unsigned i = 0; r == TEST_PASS && i < 200; i++) {
		int from = ruma_rng_below(&test_rng, 10) == 0
				   ? -1 : (int)ruma_rng_below(&test_rng, MODEL_KEYS);
		unsigned len = (unsigned)ruma_rng_below(&test_rng, 120);
		r = model_scan(s, th, m, from, len, ruma_rng_below(&test_rng, 2) ? 1 : -1);
	}
	s->thread_close(th);
	CHECK_OK(s->close(store, err, sizeof(err)));
	free(m);
	return r;
}

static int t_adapters_model(void)
{
	for (size_t i = 0; ruma_kv_systems[i]; i++) {
		const ruma_kv_system *s = ruma_kv_systems[i];
		char path[256], err[256];
		CHECK_OK(ruma_kv_store_dir(dir, s->name, path, sizeof(path), err, sizeof(err)));
		int r = model_run(s, path);
		CHECK_OK(ruma_kv_store_dir_remove(path));
		printf("    %s: %s\n", s->name, r == TEST_PASS ? "agrees with the model" : "FAILED");
		if (r != TEST_PASS)
			return r;
	}
	return TEST_PASS;
}

/* ---- runs of the driver ------------------------------------------------------ */

/* Values larger than a B-tree entry are BLOBs in ruma's store (db.h): the
 * driver runs reads, updates, read-modify-writes and scans over them, and
 * --check reads every key back. */
static int t_large_values(void)
{
	static const char *const workloads[] = { "a", "e", "f" };
	static const char *const sizes[] = { "5000", "70000" };
	for (size_t w = 0; w < TEST_N(workloads); w++) {
		for (size_t z = 0; z < TEST_N(sizes); z++) {
			char *argv[] = { NULL, "kv", "--workload", (char *)workloads[w],
					 "--value-size", (char *)sizes[z], "--records", "300",
					 "--memory-limit", "32M", "--threads", "2", "--ops", "200",
					 "--durability", "none", "--dir", dir, "--seed", "7",
					 "--check", NULL };
			char *out = NULL, *err = NULL;
			int st = test_run_cli(argv, &out, &err);
			if (st || !strstr(err, "check: "))
				fprintf(stderr, "  --workload %s --value-size %s: exit %d\n%s\n",
					workloads[w], sizes[z], st, err);
			CHECK_EQ(st, 0);
			CHECK(strstr(err, "check: ") != NULL);
			free(out);
			free(err);
		}
	}
	return TEST_PASS;
}

static ruma_result_row *rows;
static size_t nrows;

/* Run `ruma kv` on ruma with a small counted run; its result rows into rows. */
static int kv_run(const char *workload, const char *threads, const char *ops, char **err)
{
	char res[128];
	snprintf(res, sizeof(res), "%s/result.csv", dir);
	char *argv[] = { NULL, "kv", "--workload", (char *)workload, "--records", "2000",
			 "--memory-limit", "32M", "--threads", (char *)threads, "--ops",
			 (char *)ops, "--durability", "none", "--dir", dir, "--result", res,
			 "--seed", "7", "--check", NULL };
	char *out = NULL;
	int st = test_run_cli(argv, &out, err);
	if (st || !strstr(*err, "check: "))
		fprintf(stderr, "  ruma kv --workload %s: exit %d\n%s\n", workload, st, *err);
	if (!st && !strstr(*err, "check: "))
		st = -1;
	free(out);
	free(rows);
	rows = NULL;
	nrows = 0;
	if (!st && ruma_result_read(res, &rows, &nrows))
		return -1;
	return st;
}

/* The value of metric for operation op (phase run, ts all), NAN when absent. */
static double metric(const char *name, const char *op)
{
	char buf[64], ts[16];
	for (size_t i = 0; i < nrows; i++)
		if (!strcmp(rows[i].metric, name) &&
		    ruma_result_param(&rows[i], "op", buf, sizeof(buf)) && !strcmp(buf, op) &&
		    ruma_result_param(&rows[i], "ts", ts, sizeof(ts)) && !strcmp(ts, "all"))
			return rows[i].value;
	return NAN;
}

static int check_share(const char *wl, const char *op, double total, double want, double tol)
{
	double n = metric("count", op);
	double got = isnan(n) ? 0 : n / total;
	if (fabs(got - want) > tol) {
		fprintf(stderr, "  workload %s: %s %.3f of the operations, %.3f expected\n", wl, op,
			got, want);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

static int t_workload_mix(void)
{
	for (size_t w = 0; ruma_kv_workloads[w]; w++) {
		const ruma_kv_workload *wl = ruma_kv_workloads[w];
		/* a whole-table scan is 2000 entries: fewer of them */
		bool full = wl->pattern == RUMA_KV_SCANFULL;
		const unsigned ops = full ? 40 : 2000;
		char *err = NULL;
		CHECK_EQ(kv_run(wl->name, "2", full ? "20" : "1000", &err), 0);
		free(err);
		double total = 0;
		for (unsigned op = 0; op < RUMA_KV_NOPS; op++) {
			double n = metric("count", ruma_kv_op_name((ruma_kv_op)op));
			total += isnan(n) ? 0 : n;
		}
		double writer = wl->writer ? metric("count", "update") : 0;
		CHECK(total - writer == ops);
		for (unsigned op = 0; op < RUMA_KV_NOPS && !wl->writer; op++) {
			double want = wl->mix[op];
			/* 3 standard deviations of a share of 2000 draws, at least 1 % */
			double tol = fmax(0.01, 3 * sqrt(want * (1 - want) / ops));
			if (check_share(wl->name, ruma_kv_op_name((ruma_kv_op)op), total, want, tol))
				return TEST_FAIL;
		}
		if (wl->pattern == RUMA_KV_MIX && wl->max_scan) {
			/* uniform lengths 1..100: mean 50.5, sd 28.9, 1900 scans */
			double mean = metric("entries", "scan") / metric("count", "scan");
			CHECK(fabs(mean - 50.5) < 3);
		}
		printf("    %s: mix as defined\n", wl->name);
	}
	return TEST_PASS;
}

/* The rows of a run: per-second ops, throughput, latency percentiles in order, load. */
static int t_result_rows(void)
{
	char *err = NULL;
	CHECK_EQ(kv_run("b", "1", "3000", &err), 0);
	CHECK(strstr(err, "latency us") && strstr(err, "p99.9"));
	free(err);
	size_t per_second = 0;
	char buf[64];
	for (size_t i = 0; i < nrows; i++) {
		const ruma_result_row *r = &rows[i];
		CHECK(ruma_result_param(r, "system", buf, sizeof(buf)) && !strcmp(buf, "ruma"));
		CHECK(ruma_result_param(r, "workload", buf, sizeof(buf)) && !strcmp(buf, "b"));
		CHECK(ruma_result_param(r, "durability", buf, sizeof(buf)) && !strcmp(buf, "none"));
		CHECK(ruma_result_param(r, "phase", buf, sizeof(buf)));
		if (!strcmp(r->metric, "ops")) {
			CHECK(ruma_result_param(r, "ts", buf, sizeof(buf)) && strcmp(buf, "all"));
			per_second++;
		}
		CHECK(!strcmp(r->unit, "note") || isfinite(r->value));
	}
	CHECK(per_second >= 1);
	CHECK(metric("throughput", "all") > 0);
	CHECK_EQ(metric("count", "read") + metric("count", "update"), 3000);
	CHECK(metric("p50", "read") <= metric("p99", "read"));
	CHECK(metric("p99", "read") <= metric("p999", "read"));
	CHECK(metric("p999", "read") <= metric("max", "read"));
	for (size_t i = 0; i < nrows; i++)
		if (!strcmp(rows[i].metric, "load")) {
			CHECK(ruma_result_param(&rows[i], "phase", buf, sizeof(buf)));
			CHECK(!strcmp(buf, "load") && rows[i].value > 0);
			return TEST_PASS;
		}
	fprintf(stderr, "  no load row\n");
	return TEST_FAIL;
}

/* Every peer built in runs workloads of each kind through the driver on two
 * threads (a smoke test: the model test above checks their answers). */
static int t_peers_run(void)
{
	static const char *const wls[][2] = { { "a", "none" },   { "d", "none" },
					      { "e", "none" },   { "f", "none" },
					      { "readreverse", "none" },
					      { "readwhilewriting", "none" }, { "b", "sync" },
					      { "scanwhilewriting", "none" } };
	char res[128];
	unsigned peers = 0;
	snprintf(res, sizeof(res), "%s/result.csv", dir);
	for (size_t i = 0; ruma_kv_systems[i]; i++) {
		const char *sys = ruma_kv_systems[i]->name;
		if (!strcmp(sys, "ruma"))
			continue;
		peers++;
		for (size_t w = 0; w < TEST_N(wls); w++) {
			char *argv[] = { NULL, "kv", "--system", (char *)sys, "--workload",
					 (char *)wls[w][0], "--durability", (char *)wls[w][1],
					 "--records", "500", "--memory-limit", "32M", "--threads", "2",
					 "--ops", "100", "--dir", dir, "--result", res, "--quiet",
					 "--check", NULL };
			char *out = NULL, *err = NULL;
			int st = test_run_cli(argv, &out, &err);
			if (st)
				fprintf(stderr, "  %s %s: exit %d\n%s\n", sys, wls[w][0], st, err);
			CHECK_EQ(st, 0);
			CHECK(strstr(err, "ops/s") && strstr(err, "check: "));
			free(out);
			free(err);
		}
		printf("    %s: runs\n", sys);
	}
	if (!peers)
		SKIP("no peer built (configure with -DRUMA_PEERS=ON)");
	return TEST_PASS;
}

/* --check finds a key that is missing and says which. */
static int t_check_finds_missing(void)
{
	char *argv[] = { "kv", "--workload", "c", "--records", "10", "--value-size", "100", NULL };
	ruma_kv_opts o;
	char err[512], path[256];
	CHECK_OK(ruma_kv_parse(7, argv, NULL, &o, err, sizeof(err)));
	CHECK_OK(ruma_kv_store_dir(dir, "ruma", path, sizeof(path), err, sizeof(err)));
	ruma_kv_conf conf = { .dir = path, .memory = 32ull << 20, .threads = 1, .records = 10,
			      .key_max = 24, .value_size = 100, .note = quiet_note };
	ruma_kv_shared sh = { .o = &o };
	ruma_kv_worker w = { 0 };
	uint64_t entries = 0;
	CHECK_OK(o.sys->open(&conf, &sh.store, err, sizeof(err)));
	atomic_init(&sh.next_insert, 10);
	atomic_init(&sh.running, 1);
	CHECK_OK(ruma_kv_worker_init(&w, &sh, 0, 1));
	ruma_kv_load_main(&w);
	CHECK_EQ(atomic_load(&sh.err), 0);
	CHECK_OK(ruma_kv_verify(&w, &entries));
	CHECK_EQ(entries, 10);
	char key[RUMA_KV_KEY_MAX];
	size_t klen = ruma_kv_key(RUMA_KV_KEYS_YCSB, 5, key);
	CHECK_OK(o.sys->begin(w.th, RUMA_KV_WRITE));
	CHECK_OK(o.sys->del(w.th, key, klen));
	CHECK_OK(o.sys->commit(w.th));
	CHECK(ruma_kv_verify(&w, &entries) == -EIO);
	CHECK(strstr(w.th->err, "key number 5") && strstr(w.th->err, "not found"));
	ruma_kv_worker_fini(&w);
	CHECK_OK(o.sys->close(sh.store, err, sizeof(err)));
	CHECK_OK(ruma_kv_store_dir_remove(path));
	return TEST_PASS;
}

/* ---- the one-snapshot check of scanfull and scanwhilewriting ------------------ */

/* An entry fed to the checker: key number (-1: the meta row), the key
 * number its value holds, its stamp. */
struct sc_entry {
	int64_t key;
	uint64_t number, stamp;
};

#define META(st) { -1, RUMA_KV_META_NUMBER, st }

/* Feed n entries to a check of records keys (values of 16 bytes): the
 * status of its end, with the message in c. */
static int sc_feed(ruma_kv_snapcheck *c, uint64_t records, const struct sc_entry *e, size_t n)
{
	ruma_kv_snapcheck_start(c, records, 16);
	for (size_t i = 0; i < n; i++) {
		char key[RUMA_KV_KEY_MAX];
		unsigned char val[16];
		size_t klen = e[i].key < 0 ? RUMA_KV_META_KLEN
					   : ruma_kv_key(RUMA_KV_KEYS_DBBENCH, (uint64_t)e[i].key, key);
		if (e[i].key < 0)
			memcpy(key, RUMA_KV_META_KEY, RUMA_KV_META_KLEN);
		ruma_kv_stamp_value(val, e[i].number, e[i].stamp);
		if (!ruma_kv_snapcheck_entry(c, key, klen, val, sizeof(val)))
			break;
	}
	return ruma_kv_snapcheck_end(c);
}

/* The check fails, saying want. */
static int sc_refuses(uint64_t records, const struct sc_entry *e, size_t n, const char *want)
{
	ruma_kv_snapcheck c;
	CHECK_EQ(sc_feed(&c, records, e, n), -EIO);
	if (!strstr(c.msg, want)) {
		fprintf(stderr, "  check said '%s', expected '%s'\n", c.msg, want);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

#define REFUSES(records, want, ...)                                                     \
	do {                                                                            \
		static const struct sc_entry e_[] = { __VA_ARGS__ };                    \
		CHECK_EQ(sc_refuses(records, e_, TEST_N(e_), want), TEST_PASS);         \
	} while (0)

/* The checker: states of one snapshot pass; a scan that mixes states, a
 * key missing, repeated or foreign, a meta row missing fail, naming it. */
static int t_snapcheck(void)
{
	static const struct sc_entry loaded[] = { META(0), { 0, 0, 0 }, { 1, 1, 0 }, { 2, 2, 0 } };
	static const struct sc_entry written[] = { META(7), { 0, 0, 3 }, { 1, 1, 7 }, { 2, 2, 0 } };
	ruma_kv_snapcheck c;
	CHECK_OK(sc_feed(&c, 3, loaded, TEST_N(loaded)));
	CHECK_OK(sc_feed(&c, 3, written, TEST_N(written)));
	CHECK(c.meta == 7 && c.max == 7 && c.max_at == 1);
	/* the expected key carried over digits: 0 .. 1099 */
	struct sc_entry *many = calloc(1101, sizeof(*many));
	CHECK(many);
	many[0] = (struct sc_entry)META(4);
	for (unsigned i = 0; i < 1100; i++)
		many[i + 1] = (struct sc_entry){ i, i, i == 1009 ? 4 : i % 3 };
	int rc = sc_feed(&c, 1100, many, 1101);
	free(many);
	CHECK_OK(rc);
	REFUSES(3, "key \"0000000000000001\" has stamp 8, newer than the meta row's 7", META(7),
		{ 0, 0, 0 }, { 1, 1, 8 }, { 2, 2, 7 });
	REFUSES(3, "the meta row's stamp 9 is newer than every row's (the largest, 7, at key "
		"\"0000000000000002\")", META(9), { 0, 0, 0 }, { 1, 1, 3 }, { 2, 2, 7 });
	REFUSES(3, "stamp 2 is newer than every row's (all 0)", META(2), { 0, 0, 0 }, { 1, 1, 0 },
		{ 2, 2, 0 });
	REFUSES(3, "key number 1 \"0000000000000001\" missing", META(0), { 0, 0, 0 }, { 2, 2, 0 });
	REFUSES(3, "key \"0000000000000000\" out of order or seen twice", META(0), { 0, 0, 0 },
		{ 0, 0, 0 });
	REFUSES(3, "ended after 2 of 3 keys", META(0), { 0, 0, 0 }, { 1, 1, 0 });
	REFUSES(2, "after the last key number 1", META(0), { 0, 0, 0 }, { 1, 1, 0 }, { 2, 2, 0 });
	REFUSES(2, "not the meta row", { 0, 0, 0 }, { 1, 1, 0 });
	REFUSES(2, "its value was written for key number 5", META(0), { 0, 0, 0 }, { 1, 5, 0 });
	ruma_kv_snapcheck_start(&c, 2, 16); /* an empty table */
	CHECK_EQ(ruma_kv_snapcheck_end(&c), -EIO);
	CHECK(strstr(c.msg, "no meta row"));
	return TEST_PASS;
}

/* The writer of the store test: row n (and the meta row, unless alone)
 * with stamp, one transaction, on a thread of its own. */
struct sc_writer {
	const ruma_kv_system *s;
	ruma_kv_thread *th;
	uint64_t n, stamp;
	bool alone;
	int rc;
};

static void *sc_write(void *arg)
{
	struct sc_writer *x = arg;
	unsigned char val[VSIZE] = { 0 };
	char key[RUMA_KV_KEY_MAX];
	size_t klen = ruma_kv_key(RUMA_KV_KEYS_DBBENCH, x->n, key);
	int rc = x->s->begin(x->th, RUMA_KV_WRITE);
	ruma_kv_stamp_value(val, x->n, x->stamp);
	if (!rc)
		rc = x->s->put(x->th, key, klen, val, sizeof(val));
	ruma_kv_stamp_value(val, RUMA_KV_META_NUMBER, x->stamp);
	if (!rc && !x->alone)
		rc = x->s->put(x->th, RUMA_KV_META_KEY, RUMA_KV_META_KLEN, val, sizeof(val));
	if (rc)
		x->s->abort(x->th);
	else
		rc = x->s->commit(x->th);
	x->rc = rc;
	return NULL;
}

static int sc_commit(struct sc_writer *x, uint64_t n, uint64_t stamp, bool alone)
{
	pthread_t t;
	x->n = n;
	x->stamp = stamp;
	x->alone = alone;
	CHECK_EQ(pthread_create(&t, NULL, sc_write, x), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	if (x->rc) {
		fprintf(stderr, "  %s: writer: %s\n", x->s->name, x->th->err);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

static bool sc_visit(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	return ruma_kv_snapcheck_entry(ctx, key, klen, val, vlen);
}

/* A scan of the 200-key table split at key 100, the writer committing
 * key n with stamp between the halves: both halves in one read
 * transaction (one) or each in its own; the check's status in *st. */
static int sc_split(struct sc_writer *x, ruma_kv_thread *th, uint64_t n, uint64_t stamp, bool one,
		    ruma_kv_snapcheck *c, int *st)
{
	const ruma_kv_system *s = x->s;
	char key[RUMA_KV_KEY_MAX];
	size_t klen = ruma_kv_key(RUMA_KV_KEYS_DBBENCH, 100, key);
	ruma_kv_snapcheck_start(c, 200, VSIZE);
	CHECK_OK(s->begin(th, 0));
	CHECK_EQ(s->scan(th, NULL, 0, 101, false, sc_visit, c), 101); /* meta, 0 .. 99 */
	if (!one)
		CHECK_OK(s->commit(th));
	if (sc_commit(x, n, stamp, false))
		return TEST_FAIL;
	if (!one)
		CHECK_OK(s->begin(th, 0));
	CHECK(s->scan(th, key, klen, UINT32_MAX, false, sc_visit, c) >= 0);
	CHECK_OK(s->commit(th));
	*st = ruma_kv_snapcheck_end(c);
	return TEST_PASS;
}

/* Whether the adapter's read transaction is one snapshot over several
 * calls: RocksDB's and LevelDB's read the database (each scan an
 * iterator of its own snapshot), so a scan split in two is not one. */
static bool txn_is_snapshot(const ruma_kv_system *s)
{
	return strcmp(s->name, "rocksdb") && strcmp(s->name, "leveldb");
}

/* A stamped table of 200 keys on s: a scan split over two transactions
 * with a commit between them fails the check, naming the key and the
 * stamps; split inside one read transaction it passes; a row written
 * without its meta row fails the run's scan and --check. */
static int sc_store(const ruma_kv_system *s, const char *path)
{
	char *argv[] = { "kv", "--workload", "scanfull", "--records", "200", "--value-size", "100",
			 "--ops", "1", "--system", (char *)s->name, NULL };
	ruma_kv_opts o;
	char err[512];
	CHECK_OK(ruma_kv_parse(11, argv, NULL, &o, err, sizeof(err)));
	ruma_kv_conf conf = { .dir = path, .memory = 32ull << 20, .threads = 2, .records = 200,
			      .key_max = 24, .value_size = VSIZE, .note = quiet_note };
	struct ruma_kv_slot slots[2];
	ruma_kv_shared sh = { .o = &o, .ops = slots, .inserting = slots + 1 };
	ruma_kv_worker w = { 0 };
	struct sc_writer x = { .s = s };
	ruma_kv_snapcheck c;
	uint64_t entries = 0;
	int st;
	CHECK_OK(s->open(&conf, &sh.store, err, sizeof(err)));
	atomic_init(&sh.next_insert, 200);
	atomic_init(&sh.running, 1);
	atomic_init(&slots[0].v, 0);
	atomic_init(&slots[1].v, UINT64_MAX);
	CHECK_OK(ruma_kv_worker_init(&w, &sh, 0, 1));
	ruma_kv_load_main(&w);
	CHECK_EQ(atomic_load(&sh.err), 0);
	CHECK_OK(ruma_kv_verify(&w, &entries));
	CHECK_EQ(entries, 201);
	CHECK_OK(s->thread_open(sh.store, &x.th, err, sizeof(err)));
	if (sc_split(&x, w.th, 150, 1, false, &c, &st))
		return TEST_FAIL;
	CHECK_EQ(st, -EIO);
	CHECK(strstr(c.msg, "key \"0000000000000150\" has stamp 1, newer than the meta row's 0"));
	if (txn_is_snapshot(s)) {
		if (sc_split(&x, w.th, 160, 2, true, &c, &st))
			return TEST_FAIL;
		if (st)
			fprintf(stderr, "  %s: %s\n", s->name, c.msg);
		CHECK_OK(st);
	}
	/* the run: a row newer than the meta row stops it, naming both */
	if (sc_commit(&x, 170, 5, true))
		return TEST_FAIL;
	ruma_kv_run_main(&w);
	CHECK(atomic_load(&sh.err) == -EIO && strstr(sh.errmsg, "snapshot check: key "
		"\"0000000000000170\" has stamp 5, newer than the meta row's"));
	CHECK(ruma_kv_verify(&w, &entries) == -EIO);
	CHECK(strstr(w.th->err, "check: key \"0000000000000170\" has stamp 5"));
	s->thread_close(x.th);
	ruma_kv_worker_fini(&w);
	CHECK_OK(s->close(sh.store, err, sizeof(err)));
	return TEST_PASS;
}

static int t_snapcheck_store(void)
{
	for (size_t i = 0; ruma_kv_systems[i]; i++) {
		const ruma_kv_system *s = ruma_kv_systems[i];
		char path[256], err[256];
		CHECK_OK(ruma_kv_store_dir(dir, s->name, path, sizeof(path), err, sizeof(err)));
		int r = sc_store(s, path);
		CHECK_OK(ruma_kv_store_dir_remove(path));
		if (r != TEST_PASS)
			return r;
		printf("    %s: a scan across two transactions fails the check%s\n", s->name,
		       txn_is_snapshot(s) ? ", across one passes" : "");
	}
	return TEST_PASS;
}

/* scanfull and scanwhilewriting for a second on ruma, checked: entries/s
 * reported; with the writer, the version store back to its floor within
 * a second of the run's end. */
static int t_scan_runs(void)
{
	static const char *const wls[] = { "scanfull", "scanwhilewriting" };
	char res[128];
	snprintf(res, sizeof(res), "%s/result.csv", dir);
	for (size_t i = 0; i < TEST_N(wls); i++) {
		char *argv[] = { NULL, "kv", "--workload", (char *)wls[i], "--records", "2000",
				 "--memory-limit", "32M", "--runfor", "1", "--durability", "none",
				 "--dir", dir, "--result", res, "--quiet", "--check", NULL };
		char *out = NULL, *err = NULL;
		int st = test_run_cli(argv, &out, &err);
		if (st)
			fprintf(stderr, "  %s: exit %d\n%s\n", wls[i], st, err);
		CHECK_EQ(st, 0);
		CHECK(strstr(err, "entries/s") && strstr(err, "check: 2001 entries"));
		bool writer = i == 1;
		CHECK(!writer || strstr(err, "version store: peak"));
		free(out);
		free(err);
		free(rows);
		rows = NULL;
		nrows = 0;
		CHECK_OK(ruma_result_read(res, &rows, &nrows));
		double scans = metric("count", "scan"), entries = metric("entries", "scan");
		CHECK(scans >= 1 && entries == 2001 * scans && metric("entry_rate", "all") > 0);
		CHECK(writer ? metric("count", "update") >= 1 : isnan(metric("count", "update")));
		CHECK(writer != isnan(metric("versions_peak", "all")));
		if (writer) {
			CHECK_EQ(metric("versions_left", "all"), 0);
			CHECK(metric("versions_floor_ms", "all") < 1000);
		}
		printf("    %s: %.0f scans, checked\n", wls[i], scans);
	}
	return TEST_PASS;
}

/* ---- options ------------------------------------------------------------------ */

static int parse_err(const char *a1, const char *a2, const char *want)
{
	char *argv[] = { "kv", (char *)a1, (char *)a2, NULL };
	ruma_kv_opts o;
	char err[512];
	int rc = ruma_kv_parse(a2 ? 3 : 2, argv, NULL, &o, err, sizeof(err));
	return test_refused("kv", a1, a2, rc, err, want);
}

static int t_options(void)
{
	char *argv[] = { "kv", "--workload", "e", "--threads", "4", "--memory-limit", "128M",
			 "--durability", "none", "--value-size", "100", NULL };
	ruma_kv_opts o;
	char err[512];
	CHECK_OK(ruma_kv_parse(11, argv, NULL, &o, err, sizeof(err)));
	CHECK(!strcmp(o.wl->name, "e") && o.threads == 4 && o.memory == 128ull << 20);
	CHECK(o.durability == RUMA_KV_NONE && o.value_size == 100 && o.dist == RUMA_KV_ZIPFIAN);
	CHECK(!strcmp(o.sys->name, "ruma") && o.records == 1000000 && o.runfor == 10);
	CHECK(!parse_err("--threads", "0", "--threads 0: out of range"));
	CHECK(!parse_err("--threads", "x", "--threads 'x'"));
	CHECK(!parse_err("--workload", "g", "unknown (known: a, b, c"));
	CHECK(!parse_err("--system", "nosuch", "not built into this binary"));
	CHECK(!parse_err("--distribution", "pareto", "expected zipfian, uniform or latest"));
	CHECK(!parse_err("--durability", "maybe", "expected sync"));
	CHECK(!parse_err("--value-size", "4", "out of range"));
	CHECK(!parse_err("--memory-limit", "1K", "out of range"));
	CHECK(!parse_err("--records", NULL, "--records needs a value"));
	CHECK(!parse_err("--bogus", NULL, "unknown option '--bogus'"));
	CHECK(!parse_err("extra", NULL, "unexpected argument 'extra'"));
	/* scanfull's values hold a key number and a stamp */
	char *sargv[] = { "kv", "--workload", "scanfull", "--value-size", "15", NULL };
	CHECK(ruma_kv_parse(5, sargv, NULL, &o, err, sizeof(err)) == RUMA_EPARSE);
	CHECK(strstr(err, "--value-size 15: scanfull's values hold a key number and a stamp"));
	/* data beyond the memory budget: out of memory, refused without --cgroup */
	char *margv[] = { "kv", "--records", "10000", "--value-size", "2000", "--memory-limit",
			  "16M", NULL };
	CHECK(ruma_kv_parse(7, margv, NULL, &o, err, sizeof(err)) == RUMA_EPARSE);
	CHECK(strstr(err, "(19.07 MiB) exceed --memory-limit 16.00 MiB: an out-of-memory run needs --cgroup"));
	char *mcargv[] = { "kv", "--records", "10000", "--value-size", "2000", "--memory-limit",
			   "16M", "--cgroup", NULL };
	CHECK_OK(ruma_kv_parse(8, mcargv, NULL, &o, err, sizeof(err)));
	margv[6] = "20M"; /* 20 000 000 bytes of values fit in 20 MiB */
	CHECK_OK(ruma_kv_parse(7, margv, NULL, &o, err, sizeof(err)));
	/* the command: exit status 2 and the message on stderr */
	char *cargv[] = { NULL, "kv", "--threads", "0", NULL };
	char *out = NULL, *cerr = NULL;
	CHECK_EQ(test_run_cli(cargv, &out, &cerr), 2);
	CHECK(cerr && strstr(cerr, "ruma kv: --threads 0: out of range"));
	free(out);
	free(cerr);
	return TEST_PASS;
}

/* SIGTERM during the run: the report of what ran, the store closed and
 * removed, exit 143 (a run of 60 s stopped after its first per-second rows). */
static int t_sigterm(void)
{
	char opath[] = "/tmp/ruma-test-kvoXXXXXX", epath[] = "/tmp/ruma-test-kveXXXXXX";
	int ofd = mkstemp(opath), efd = mkstemp(epath);
	char *argv[] = { NULL, "kv", "--records", "2000", "--memory-limit", "32M", "--runfor",
			 "60", "--durability", "none", "--dir", dir, NULL };
	pid_t pid;
	CHECK(ofd >= 0 && efd >= 0);
	CHECK_OK(test_spawn_cli(argv, ofd, efd, &pid));
	char *out = NULL;
	for (int i = 0; i < 300 && !(out && strstr(out, "\n1,")); i++) {
		free(out);
		usleep(50000);
		out = test_slurp(opath);
	}
	bool ran = out && strstr(out, "\n1,");
	kill(pid, SIGTERM);
	int st = test_wait_status(pid);
	char *err = test_slurp(epath);
	close(ofd);
	close(efd);
	unlink(opath);
	unlink(epath);
	CHECK(ran);
	CHECK_EQ(st, 128 + SIGTERM);
	CHECK(err && strstr(err, "stopped by signal 15") && strstr(err, "latency us"));
	char path[128];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/kv-ruma", dir);
	CHECK(stat(path, &sb) != 0);
	free(out);
	free(err);
	return TEST_PASS;
}

/* A directory the driver did not make is never emptied; one it made is removed. */
static int t_store_dir(void)
{
	char path[256], err[256], foreign[128];
	snprintf(foreign, sizeof(foreign), "%s/kv-ruma", dir);
	CHECK(mkdir(foreign, 0755) == 0);
	CHECK(ruma_kv_store_dir(dir, "ruma", path, sizeof(path), err, sizeof(err)) == -EEXIST);
	CHECK(strstr(err, "was not made by ruma kv"));
	CHECK(rmdir(foreign) == 0);
	CHECK_OK(ruma_kv_store_dir(dir, "ruma", path, sizeof(path), err, sizeof(err)));
	CHECK_OK(ruma_kv_store_dir(dir, "ruma", path, sizeof(path), err, sizeof(err)));
	CHECK_OK(ruma_kv_store_dir_remove(path));
	struct stat st;
	CHECK(stat(path, &st) != 0);
	/* a --dir the run made is removed with the store; one that existed stays */
	char made[128];
	snprintf(made, sizeof(made), "%s/made", dir);
	char *argv[] = { NULL, "kv", "--records", "100", "--memory-limit", "32M", "--ops", "10",
			 "--durability", "none", "--dir", made, "--quiet", NULL };
	char *out = NULL, *msg = NULL;
	CHECK_EQ(test_run_cli(argv, &out, &msg), 0);
	free(out);
	free(msg);
	CHECK(stat(made, &st) != 0);
	CHECK(stat(dir, &st) == 0);
	return TEST_PASS;
}

/* The process's memory cgroup line of /proc/self/cgroup (v1), or "". */
static void memcg_line(char *buf, size_t len)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	char line[600];
	while (fgets(line, sizeof(line), f))
		if (strstr(line, ":memory:"))
			snprintf(buf, len, "%s", line);
	fclose(f);
}

/* --cgroup-limit: the run is charged to a child cgroup with that limit,
 * its peak reported, the process back where it was and the child gone
 * afterwards; where no memory cgroup can be made, the run is refused
 * (exit 2), never measured without the limit. */
static int t_cgroup(void)
{
	char res[128], before[600], after[600];
	snprintf(res, sizeof(res), "%s/result.csv", dir);
	char *argv[] = { NULL, "kv", "--workload", "c", "--records", "2000", "--memory-limit", "32M",
			 "--cgroup-limit", "96M", "--ops", "500", "--durability", "none", "--dir",
			 dir, "--result", res, "--quiet", NULL };
	char *out = NULL, *err = NULL;
	memcg_line(before, sizeof(before));
	int st = test_run_cli(argv, &out, &err);
	memcg_line(after, sizeof(after));
	free(out);
	if (st == 2 && strstr(err, "refusing to run without the memory limit")) {
		printf("    no memory cgroup here: %s", err);
		free(err);
		return TEST_SKIP;
	}
	CHECK_EQ(st, 0);
	char *at = strstr(err, "memory cgroup v"), child[600] = "";
	CHECK(at != NULL);
	CHECK_EQ(sscanf(at, "memory cgroup v%*d %599s", child), 1);
	free(err);
	struct stat sb;
	CHECK(stat(child, &sb) != 0 && errno == ENOENT); /* removed */
	CHECK(!strcmp(before, after)); /* back in its own cgroup */
	free(rows);
	rows = NULL;
	nrows = 0;
	CHECK_OK(ruma_result_read(res, &rows, &nrows));
	CHECK_EQ(metric("cgroup_limit", "all"), 96.0 * 1024 * 1024);
	double peak = metric("cgroup_peak", "all");
	CHECK(peak > 0 && peak <= 96.0 * 1024 * 1024);
	return TEST_PASS;
}

/* Bytes of a file made outside the cgroup and read inside it. */
#define HOLDS_FILE (96ull << 20)
#define HOLDS_LIMIT (32ull << 20)

static int write_fill(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	static char chunk[1 << 20];
	memset(chunk, 0x5a, sizeof(chunk));
	for (uint64_t at = 0; at < HOLDS_FILE; at += sizeof(chunk))
		CHECK_EQ(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
	CHECK_OK(fdatasync(fd));
	CHECK_OK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)); /* read from disk again */
	close(fd);
	return TEST_PASS;
}

/* The limit holds for the page cache a system reads through (LMDB, SQLite
 * and LevelDB do): 96 MiB read with read(2) inside a 32 MiB child are
 * charged to it (its peak above half the limit) and keep it within the
 * limit, the kernel reclaiming the cache as it reads. */
static int t_cgroup_holds(void)
{
	char path[128], err[256];
	snprintf(path, sizeof(path), "%s/cache-fill", dir);
	CHECK(write_fill(path) == TEST_PASS);
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	ruma_kv_cgroup cg = { 0 };
	if (ruma_kv_cgroup_enter(&cg, HOLDS_LIMIT, err, sizeof(err))) {
		close(fd);
		unlink(path);
		SKIP("%s", err);
	}
	uint64_t total = 0, peak, hits;
	for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;)
		total += (uint64_t)n;
	ruma_kv_cgroup_usage(&cg, &peak, &hits);
	int left = ruma_kv_cgroup_leave(&cg, err, sizeof(err));
	close(fd);
	unlink(path);
	CHECK_OK(left);
	CHECK_EQ(total, HOLDS_FILE);
	printf("    %" PRIu64 " MiB read through the page cache: peak %.1f MiB of %" PRIu64
	       " MiB (the limit hit %" PRIu64 " times, where the kernel counts it)\n",
	       total >> 20, peak / 1048576.0, (uint64_t)(HOLDS_LIMIT >> 20), hits);
	/* charged (more than half the limit used) and bounded (not the 96 MiB) */
	CHECK(peak > HOLDS_LIMIT / 2 && peak <= HOLDS_LIMIT);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "cgroup", t_cgroup },
	{ "cgroup_holds", t_cgroup_holds },
	{ "fnv", t_fnv },
	{ "zipf_skew", t_zipf_skew },
	{ "scrambled_spread", t_scrambled_spread },
	{ "latest", t_latest },
	{ "hist", t_hist },
	{ "adapters_model", t_adapters_model },
	{ "workload_mix", t_workload_mix },
	{ "large_values", t_large_values },
	{ "result_rows", t_result_rows },
	{ "peers_run", t_peers_run },
	{ "check_finds_missing", t_check_finds_missing },
	{ "snapcheck", t_snapcheck },
	{ "snapcheck_store", t_snapcheck_store },
	{ "scan_runs", t_scan_runs },
	{ "options", t_options },
	{ "sigterm", t_sigterm },
	{ "store_dir", t_store_dir },
};

int main(int argc, char **argv)
{
	snprintf(dir, sizeof(dir), "/tmp/ruma-test-kv-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	int st = test_main("kv", cases, TEST_N(cases), argc, argv);
	char res[128];
	snprintf(res, sizeof(res), "%s/result.csv", dir);
	unlink(res);
	rmdir(dir);
	free(rows);
	return st;
}
