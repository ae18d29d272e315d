/*
 * test_benchcommon.c — the pieces the benchmark drivers share: the option
 * table parser (kinds, ranges, "--x=v", missing values, unknown options,
 * positionals, stop options, the environment's seed), the result rows
 * (header, parameter order, quoting, note rows, round trip through the
 * reader, rows that are not written, a full disk) and the repetition engine
 * (every round a permutation, warm-up turns flagged, the same seed giving
 * the same orders, median/min/max and per-round ratios on known samples).
 */
#include "bench/common/opt.h"
#include "bench/common/rep.h"
#include "bench/common/result.h"
#include "core/core_ext.h"
#include "test.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct topts {
	bool flag, help;
	uint64_t u64, bytes;
	unsigned uint;
	size_t sz;
	const char *str, *name, *mode;
} topts;

static int parse_name(const char *v, void *opts)
{
	if (strcmp(v, "good"))
		return -EINVAL;
	((topts *)opts)->name = v;
	return 0;
}

#define O(f) offsetof(topts, f)
static const ruma_opt table[] = {
	{ "--flag", RUMA_OPT_FLAG, O(flag), 0, 0, NULL, NULL, 0 },
	{ "--help", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "--u64", RUMA_OPT_U64, O(u64), 0, UINT64_MAX, NULL, NULL, 0 },
	{ "--uint", RUMA_OPT_UINT, O(uint), 1, 10, "1..10", NULL, 0 },
	{ "--sz", RUMA_OPT_SIZET, O(sz), 0, 100, NULL, NULL, 0 },
	{ "--bytes", RUMA_OPT_BYTES, O(bytes), 1, (uint64_t)1 << 40, NULL, NULL, 0 },
	{ "--str", RUMA_OPT_STR, O(str), 0, 0, NULL, NULL, RUMA_OPT_NONEMPTY },
	{ "--name", RUMA_OPT_FUNC, 0, 0, 0, NULL, parse_name, 0 },
	{ "--mode", RUMA_OPT_STR, O(mode), 0, 0, NULL, NULL, RUMA_OPT_BARE },
};

/* Parse the NULL-terminated list of arguments after argv[0]. */
static int parse(topts *o, ruma_opt_error *e, const char **pos, int *npos, ...)
{
	TEST_VA_ARGV(argv, argc, "cmd", npos);
	memset(o, 0, sizeof(*o));
	return ruma_opt_parse(table, TEST_N(table), argc, argv, 1, o, pos, 2, npos, e);
}

static int t_opt_kinds(void)
{
	const char *pos[2];
	ruma_opt_error e;
	int npos;
	topts o;

	CHECK_OK(parse(&o, &e, pos, &npos, "--flag", "a", "--u64", "1e6", "--uint=7", "--sz", "3",
		       "--bytes", "2M", "--str", "x", "--name", "good", "b", NULL));
	CHECK(o.flag && o.u64 == 1000000 && o.uint == 7 && o.sz == 3);
	CHECK(o.bytes == (2u << 20) && !strcmp(o.str, "x") && !strcmp(o.name, "good"));
	CHECK_EQ(npos, 2);
	CHECK(!strcmp(pos[0], "a") && !strcmp(pos[1], "b"));
	CHECK_OK(parse(&o, &e, pos, &npos, "--bytes", "4096", NULL));
	CHECK_EQ(o.bytes, 4096);
	/* RUMA_OPT_BARE: a bare --mode stores ruma_opt_bare, the next argument is its own */
	CHECK_OK(parse(&o, &e, pos, &npos, "--mode", "--flag", NULL));
	CHECK(o.mode == ruma_opt_bare && o.flag);
	CHECK_OK(parse(&o, &e, pos, &npos, "--mode", "a", "--mode=fast", NULL));
	CHECK(!strcmp(o.mode, "fast") && npos == 1 && !strcmp(pos[0], "a"));
	return TEST_PASS;
}

/* Names parse to their index in the table; a message lists them. */
static int t_opt_enum(void)
{
	static const char *const names[] = { "shuffle", "roundrobin", "fixed" };
	char buf[64];

	CHECK_EQ(ruma_opt_enum("shuffle", names, TEST_N(names)), 0);
	CHECK_EQ(ruma_opt_enum("fixed", names, TEST_N(names)), 2);
	CHECK_EQ(ruma_opt_enum("Shuffle", names, TEST_N(names)), -1);
	CHECK_EQ(ruma_opt_enum("", names, TEST_N(names)), -1);
	CHECK(!strcmp(ruma_opt_enum_list(names, 3, buf, sizeof(buf)), "shuffle, roundrobin or fixed"));
	CHECK(!strcmp(ruma_opt_enum_list(names, 2, buf, sizeof(buf)), "shuffle or roundrobin"));
	CHECK(!strcmp(ruma_opt_enum_list(names, 1, buf, sizeof(buf)), "shuffle"));
	CHECK(!strcmp(ruma_opt_enum_list(names, 3, buf, 9), "shuffle,"));
	return TEST_PASS;
}

static int t_opt_errors(void)
{
	const char *pos[2];
	ruma_opt_error e;
	int npos;
	topts o;

	CHECK(parse(&o, &e, pos, &npos, "--uint", "11", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_RANGE && !strcmp(e.opt->name, "--uint") &&
	      !strcmp(e.value, "11") && !strcmp(e.opt->help, "1..10"));
	CHECK_EQ(o.uint, 0); /* nothing stored for a failing argument */
	CHECK(parse(&o, &e, pos, &npos, "--uint", "0", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_RANGE);
	CHECK(parse(&o, &e, pos, &npos, "--u64", "x", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_BADVALUE && e.rc != 0);
	CHECK(parse(&o, &e, pos, &npos, "--u64", "99999999999999999999999", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_BADVALUE && e.rc == -ERANGE);
	CHECK(parse(&o, &e, pos, &npos, "--sz", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_MISSING && e.value == NULL && !strcmp(e.arg, "--sz"));
	CHECK(parse(&o, &e, pos, &npos, "--nope", "1", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_UNKNOWN && !strcmp(e.arg, "--nope") && e.index == 1);
	CHECK(parse(&o, &e, pos, &npos, "--flag=1", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_UNKNOWN);
	CHECK(parse(&o, &e, pos, &npos, "a", "b", "c", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_TOOMANY && !strcmp(e.arg, "c"));
	CHECK(parse(&o, &e, pos, &npos, "--str", "", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_BADVALUE);
	CHECK(parse(&o, &e, pos, &npos, "--name", "bad", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_BADVALUE && e.rc == -EINVAL);
	/* a stop option ends the pass before a later error */
	CHECK(parse(&o, &e, pos, &npos, "--help", "--nope", NULL) == RUMA_EPARSE);
	CHECK(e.status == RUMA_OPT_STOPPED && o.help);
	CHECK(ruma_opt_find(table, TEST_N(table), "--uint=3") == &table[3]);
	CHECK(ruma_opt_find(table, TEST_N(table), "--ui") == NULL);
	return TEST_PASS;
}

static int t_opt_env(void)
{
	char *env[] = { (char *)"A=1", (char *)"RUMA_SEED=77", NULL };
	char *bad[] = { (char *)"RUMA_SEEDX=5", (char *)"RUMA_SEED=x", NULL };

	CHECK(!strcmp(ruma_opt_getenv(env, "A"), "1"));
	CHECK(ruma_opt_getenv(env, "RUMA") == NULL);
	CHECK(ruma_opt_getenv(NULL, "A") == NULL);
	CHECK_EQ(ruma_opt_env_seed(env), 77);
	(void)ruma_opt_env_seed(bad); /* invalid: falls back to the default, no crash */
	return TEST_PASS;
}

/* A result file under a fresh temporary name, and what is read back. */
struct tmp_result {
	char path[32];
	ruma_result r;
	ruma_result_row *rows;
	size_t n;
};

/* t->r open on a new file /tmp/test_benchcommon_XXXXXX (its name in t->path). */
static int open_tmp_result(struct tmp_result *t)
{
	strcpy(t->path, "/tmp/test_benchcommon_XXXXXX");
	int fd = mkstemp(t->path);

	CHECK(fd >= 0);
	close(fd);
	CHECK_OK(ruma_result_open(&t->r, t->path));
	return TEST_PASS;
}

static int t_result_round_trip(void)
{
	struct tmp_result t;
	char buf[64];

	CHECK_EQ(open_tmp_result(&t), TEST_PASS);
	CHECK_OK(ruma_result_set(&t.r, "n", "1000"));
	CHECK_OK(ruma_result_setu(&t.r, "rep", 1));
	CHECK(ruma_result_set(&t.r, "bad key", "1") == -EINVAL);
	CHECK(ruma_result_set(&t.r, "k", "a;b") == -EINVAL);
	ruma_result_add(&t.r, "insert", "Mops", 21.5);
	ruma_result_add(&t.r, "skipped", "s", NAN); /* not measured: no row */
	CHECK_OK(ruma_result_setu(&t.r, "rep", 2)); /* keeps its place after n */
	CHECK_OK(ruma_result_set(&t.r, "label", "x,\"y\""));
	ruma_result_add(&t.r, "a,b", "s", 0.1);
	CHECK_OK(ruma_result_close(&t.r));
	CHECK_OK(ruma_result_read(t.path, &t.rows, &t.n));
	CHECK_EQ(t.n, 2);
	CHECK(!strcmp(t.rows[0].metric, "insert") && !strcmp(t.rows[0].unit, "Mops"));
	CHECK(t.rows[0].value == 21.5 && !strcmp(t.rows[0].params, "n=1000;rep=1"));
	CHECK(!strcmp(t.rows[1].metric, "a,b") && t.rows[1].value == 0.1);
	CHECK(!strcmp(t.rows[1].params, "n=1000;rep=2;label=x,\"y\""));
	CHECK(!strcmp(ruma_result_param(&t.rows[1], "label", buf, sizeof(buf)), "x,\"y\""));
	CHECK(!strcmp(ruma_result_param(&t.rows[1], "rep", buf, sizeof(buf)), "2"));
	CHECK(ruma_result_param(&t.rows[1], "re", buf, sizeof(buf)) == NULL);
	free(t.rows);
	/* not a result file */
	FILE *f = fopen(t.path, "w");
	CHECK(f != NULL);
	fputs("metric,unit,value,params\nx,s,notanumber,\n", f);
	fclose(f);
	CHECK(ruma_result_read(t.path, &t.rows, &t.n) == RUMA_EPARSE && t.rows == NULL &&
	      t.n == 0);
	unlink(t.path);
	CHECK(ruma_result_read(t.path, &t.rows, &t.n) == -ENOENT);
	return TEST_PASS;
}

static int t_result_closed_and_full(void)
{
	ruma_result r;

	/* no path: every call is a no-op; NULL too */
	CHECK_OK(ruma_result_open(&r, NULL));
	CHECK_OK(ruma_result_set(&r, "k", "v"));
	ruma_result_add(&r, "m", "s", 1);
	CHECK_OK(ruma_result_close(&r));
	CHECK_OK(ruma_result_set(NULL, "k", "v"));
	ruma_result_add(NULL, "m", "s", 1);
	CHECK(ruma_result_open(&r, "/nonexistent-dir/x.csv") == -ENOENT);
	/* a full disk is an error at close, not a silent loss */
	CHECK_OK(ruma_result_open(&r, "/dev/full"));
	for (int i = 0; i < 1000; i++)
		ruma_result_add(&r, "m", "s", i);
	CHECK(ruma_result_close(&r) < 0);
	return TEST_PASS;
}

/* A note row carries text with ';' and '%' through the params column. */
static int t_result_note(void)
{
	struct tmp_result t;
	char buf[256];

	CHECK_EQ(open_tmp_result(&t), TEST_PASS);
	CHECK_OK(ruma_result_setu(&t.r, "rep", 1));
	CHECK_OK(ruma_result_set(&t.r, "pct", "50%"));
	ruma_result_note(&t.r, "alloc_source", "pages from THP (failed: ENOMEM; 100% sure)\n");
	ruma_result_add(&t.r, "insert", "Mops", 2.5);
	CHECK_OK(ruma_result_close(&t.r));
	CHECK_OK(ruma_result_read(t.path, &t.rows, &t.n));
	unlink(t.path);
	CHECK_EQ(t.n, 2);
	CHECK(!strcmp(t.rows[0].metric, "alloc_source") && !strcmp(t.rows[0].unit, "note"));
	CHECK(t.rows[0].value == 1);
	CHECK(!strcmp(ruma_result_param(&t.rows[0], "note", buf, sizeof(buf)),
		      "pages from THP (failed: ENOMEM; 100% sure)"));
	CHECK(!strcmp(ruma_result_param(&t.rows[0], "rep", buf, sizeof(buf)), "1"));
	CHECK(!strcmp(ruma_result_param(&t.rows[1], "pct", buf, sizeof(buf)), "50%"));
	CHECK(ruma_result_param(&t.rows[1], "note", buf, sizeof(buf)) == NULL);
	free(t.rows);
	ruma_result_note(NULL, "m", "x"); /* no file: nothing */
	return TEST_PASS;
}

/* every round of a plan is a permutation of the variants */
static bool is_permutation(const uint64_t *order, size_t n)
{
	bool seen[16] = { false };

	for (size_t j = 0; j < n; j++) {
		if (order[j] >= n || seen[order[j]])
			return false;
		seen[order[j]] = true;
	}
	return true;
}

static int t_rep_orders(void)
{
	uint64_t a[7], b[7], first[7];
	ruma_rep x, y;
	bool differs = false;

	ruma_rep_init(&x, 7, 1, 1, 20, RUMA_REP_SHUFFLE, 99);
	ruma_rep_init(&y, 7, 1, 1, 20, RUMA_REP_SHUFFLE, 99);
	for (unsigned round = 0; round < 21; round++) {
		ruma_rep_next_order(&x, round, a);
		ruma_rep_next_order(&y, round, b);
		CHECK(is_permutation(a, 7));
		CHECK(!memcmp(a, b, sizeof(a))); /* same seed, same order */
		if (round == 0)
			memcpy(first, a, sizeof(a));
		else
			differs |= memcmp(a, first, sizeof(a)) != 0;
	}
	CHECK(differs); /* drawn anew per round */
	ruma_rep_init(&y, 7, 1, 1, 20, RUMA_REP_SHUFFLE, 100);
	ruma_rep_init(&x, 7, 1, 1, 20, RUMA_REP_SHUFFLE, 99);
	differs = false;
	for (unsigned round = 0; round < 5; round++) {
		ruma_rep_next_order(&x, round, a);
		ruma_rep_next_order(&y, round, b);
		differs |= memcmp(a, b, sizeof(a)) != 0;
	}
	CHECK(differs); /* another seed, other orders */
	ruma_rep_init(&x, 4, 1, 0, 3, RUMA_REP_ROTATE, 1);
	ruma_rep_next_order(&x, 2, a);
	CHECK(a[0] == 2 && a[1] == 3 && a[2] == 0 && a[3] == 1);
	return TEST_PASS;
}

/* what a run saw: the turns in order */
struct turns {
	ruma_rep_turn t[64];
	size_t n;
	ruma_rep_samples *s;
	int stop_at; /* fail the turn with this index (-1: never) */
};

static int record_turn(void *ctx, const ruma_rep_turn *turn)
{
	struct turns *r = ctx;

	if ((int)r->n == r->stop_at)
		return -EIO;
	r->t[r->n++] = *turn;
	if (!turn->warmup) /* the variant's value: 10 * variant + rep, a warm-up would be 1000 */
		ruma_rep_put(r->s, turn->group * 3 + turn->variant, turn->rep,
			     10.0 * (double)turn->variant + turn->rep);
	else
		ruma_rep_put(r->s, turn->group * 3 + turn->variant, 0, 1000);
	return 0;
}

static int t_rep_run(void)
{
	ruma_rep_samples s;
	struct turns r = { .n = 0, .s = &s, .stop_at = -1 };
	ruma_rep plan;
	ruma_summary sum;
	unsigned per_round[2 + 4][2] = { { 0 } };

	CHECK_OK(ruma_rep_samples_init(&s, 3 * 2, 4));
	ruma_rep_init(&plan, 3, 2, 2, 4, RUMA_REP_SHUFFLE, 5);
	CHECK_OK(ruma_rep_run(&plan, record_turn, &r));
	CHECK_EQ(r.n, (2 + 4) * 2 * 3);
	for (size_t i = 0; i < r.n; i++) {
		const ruma_rep_turn *t = &r.t[i];
		CHECK(t->round == i / 6 && t->group == (i / 3) % 2); /* rounds, then groups */
		CHECK(t->warmup == (t->round < 2));
		if (!t->warmup)
			CHECK_EQ(t->rep, t->round - 2);
		per_round[t->round][t->group] |= 1u << t->variant;
	}
	for (size_t k = 0; k < 6; k++)
		CHECK(per_round[k][0] == 7 && per_round[k][1] == 7); /* each variant once per group */
	/* warm-up values were overwritten by measured round 0: none is left */
	CHECK_OK(ruma_rep_summary(&s, 2, &sum));
	CHECK(sum.n == 4 && sum.min == 20 && sum.max == 23 && sum.median == 21.5);
	/* cell 1 against cell 2, per round: (10 + r) / (20 + r) */
	CHECK_OK(ruma_rep_ratio_summary(&s, 1, 2, &sum));
	CHECK(sum.n == 4 && fabs(sum.min - 0.5) < 1e-12 && fabs(sum.max - 13.0 / 23) < 1e-12);
	CHECK(fabs(sum.median - (11.0 / 21 + 12.0 / 22) / 2) < 1e-12);
	ruma_rep_samples_free(&s);
	/* a failing turn stops the run and is returned */
	CHECK_OK(ruma_rep_samples_init(&s, 6, 4));
	r.n = 0;
	r.stop_at = 5;
	ruma_rep_init(&plan, 3, 2, 2, 4, RUMA_REP_SHUFFLE, 5);
	CHECK(ruma_rep_run(&plan, record_turn, &r) == -EIO && r.n == 5);
	ruma_rep_samples_free(&s);
	return TEST_PASS;
}

/* Summaries on known samples; missing values and empty cells. */
static int t_rep_summary(void)
{
	ruma_rep_samples s;
	ruma_summary sum;

	CHECK_OK(ruma_rep_samples_init(&s, 2, 5));
	CHECK(ruma_rep_summary(&s, 0, &sum) == -ENOENT);
	const double v[5] = { 3, 1, 4, 1, 5 };
	for (size_t r = 0; r < 5; r++)
		ruma_rep_put(&s, 0, r, v[r]);
	ruma_rep_put(&s, 1, 1, 2);
	ruma_rep_put(&s, 1, 4, 10);
	ruma_rep_put(&s, 7, 0, 1); /* out of range: ignored */
	CHECK(isnan(ruma_rep_get(&s, 7, 0)) && isnan(ruma_rep_get(&s, 1, 0)));
	CHECK_OK(ruma_rep_summary(&s, 0, &sum));
	CHECK(sum.n == 5 && sum.median == 3 && sum.min == 1 && sum.max == 5);
	CHECK_OK(ruma_rep_ratio_summary(&s, 1, 0, &sum)); /* rounds 1 and 4 only */
	CHECK(sum.n == 2 && sum.min == 2 && sum.max == 2);
	ruma_rep_samples_free(&s);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "opt_kinds", t_opt_kinds },
	{ "opt_errors", t_opt_errors }, { "opt_enum", t_opt_enum },
	{ "opt_env", t_opt_env },
	{ "result_round_trip", t_result_round_trip },
	{ "result_closed_and_full", t_result_closed_and_full },
	{ "result_note", t_result_note },
	{ "rep_orders", t_rep_orders },
	{ "rep_run", t_rep_run },
	{ "rep_summary", t_rep_summary },
};

int main(int argc, char **argv)
{
	return test_main("benchcommon", cases, TEST_N(cases), argc, argv);
}
