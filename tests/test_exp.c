/*
 * test_exp.c — experiments: grid parsing and validation, parsing of each
 * system's output, the CSV reader, the comparison statistics on synthetic
 * data (verdicts, geometric mean instead of sums), and end to end through the
 * ruma binary: sweep -> exact rows, compare -> a verdict per variant, plot ->
 * valid PNG files, resume after truncation and after SIGINT, bad grids
 * rejected with exit 2, an external peer program measured beside ruma,
 * `ruma demo --quick`.
 */
#include "exp_util.h"

#include "tools/exp/exp.h"

#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>



/* ---- library-level ------------------------------------------------------ */

static int t_grid(void)
{
	ruma_exp_grid g;
	char err[RUMA_EXP_ERR];
	struct ruma_exp_run *runs;
	size_t n;

	ruma_exp_grid_init(&g);
	CHECK(ruma_exp_grid_add(&g, "system", "nosuch", err, sizeof(err)) != 0);
	CHECK(strstr(err, "unknown system"));
	CHECK_OK(ruma_exp_grid_add(&g, "system", "art", err, sizeof(err)));
	CHECK(ruma_exp_grid_add(&g, "var", "alloc=", err, sizeof(err)) != 0);
	CHECK(ruma_exp_grid_add(&g, "var", "alloc=libc,,huge", err, sizeof(err)) != 0);
	CHECK(ruma_exp_grid_add(&g, "size", "n=1e3,abc", err, sizeof(err)) != 0);
	CHECK(ruma_exp_grid_add(&g, "reps", "0", err, sizeof(err)) != 0);
	CHECK_OK(ruma_exp_grid_add(&g, "var", "alloc=libc,huge", err, sizeof(err)));
	CHECK(ruma_exp_grid_check(&g, err, sizeof(err)) != 0); /* no size */
	CHECK_OK(ruma_exp_grid_add(&g, "size", "n=1e3,2000,1.5K", err, sizeof(err)));
	CHECK_EQ(g.nsizes, 3);
	CHECK(!strcmp(g.sizes[0], "1000") && !strcmp(g.sizes[2], "1536"));
	CHECK_OK(ruma_exp_grid_check(&g, err, sizeof(err)));
	CHECK_OK(ruma_exp_grid_add(&g, "var", "bogus=1,2", err, sizeof(err)));
	CHECK(ruma_exp_grid_check(&g, err, sizeof(err)) != 0);
	CHECK(strstr(err, "bogus"));
	g.nvars = 1;
	CHECK_OK(ruma_exp_grid_add(&g, "reps", "3", err, sizeof(err)));
	CHECK_OK(ruma_exp_grid_add(&g, "warmup", "1", err, sizeof(err)));
	CHECK_OK(ruma_exp_plan(&g, &runs, &n));
	CHECK_EQ(n, 2 * 3 * 4);
	/* every (variant, size, rep, warmup) exactly once; warm-ups first */
	for (size_t i = 0; i < n; i++) {
		CHECK(runs[i].warmup == (i < 6));
		for (size_t j = 0; j < i; j++)
			CHECK(!(runs[i].variant == runs[j].variant && runs[i].size == runs[j].size &&
				runs[i].rep == runs[j].rep && runs[i].warmup == runs[j].warmup));
	}
	free(runs);
	/* micro needs method, test and n */
	ruma_exp_grid_init(&g);
	CHECK_OK(ruma_exp_grid_add(&g, "system", "micro", err, sizeof(err)));
	CHECK_OK(ruma_exp_grid_add(&g, "size", "n=1e4", err, sizeof(err)));
	CHECK(ruma_exp_grid_check(&g, err, sizeof(err)) != 0);
	CHECK(strstr(err, "method"));
	/* a list longer than one value's buffer keeps its name and every value */
	ruma_exp_grid_init(&g);
	CHECK_OK(ruma_exp_grid_add(&g, "system", "art", err, sizeof(err)));
	CHECK_OK(ruma_exp_grid_add(&g, "var",
				   "alloc=libc,pool,mempool,huge,huge-thp,huge-4k,"
				   "a-value-that-makes-the-whole-list-longer-than-96-bytes",
				   err, sizeof(err)));
	CHECK(!strcmp(g.vars[0].name, "alloc"));
	CHECK_EQ(g.vars[0].n, 7);
	CHECK(!strcmp(g.vars[0].values[0], "libc") && !strcmp(g.vars[0].values[5], "huge-4k"));
	CHECK_OK(ruma_exp_grid_add(&g, "set", "lookups=1000", err, sizeof(err)));
	CHECK(!strcmp(g.sets[g.nsets - 1].key, "lookups"));
	return TEST_PASS;
}

static int t_grid_file(void)
{
	ruma_exp_grid g;
	char err[RUMA_EXP_ERR];
	FILE *f = fopen(tpath("g.grid"), "w");

	CHECK(f);
	fprintf(f, "# a grid\nsystem = vmcache\nvar.wait = spin,futex\nsize.datasize=1e4\n"
		   "set.runfor=1\nreps=2\nwarmup=0\n");
	fclose(f);
	ruma_exp_grid_init(&g);
	CHECK_OK(ruma_exp_grid_load(&g, tpath("g.grid"), err, sizeof(err)));
	CHECK_OK(ruma_exp_grid_check(&g, err, sizeof(err)));
	CHECK_EQ(g.system, RUMA_EXP_VMCACHE);
	CHECK_EQ(g.vars[0].n, 2);
	CHECK_EQ(g.reps, 2);
	/* vmcache sweeps default to rndread (datasize counts tuples there) */
	CHECK_EQ(g.nsets, 2);
	CHECK(!strcmp(g.sets[1].key, "workload") && !strcmp(g.sets[1].value, "rndread"));
	f = fopen(tpath("bad.grid"), "w");
	CHECK(f);
	fprintf(f, "system=art\nnonsense\n");
	fclose(f);
	ruma_exp_grid_init(&g);
	CHECK(ruma_exp_grid_load(&g, tpath("bad.grid"), err, sizeof(err)) != 0);
	CHECK(strstr(err, ":2:"));
	/* a directory is a read error, not an empty grid or table */
	ruma_exp_grid_init(&g);
	CHECK_EQ(ruma_exp_grid_load(&g, tmpdir, err, sizeof(err)), -EISDIR);
	CHECK(strstr(err, "directory"));
	ruma_exp_table t;
	CHECK_EQ(ruma_exp_table_read(tmpdir, &t, err, sizeof(err)), -EISDIR);
	CHECK(strstr(err, "directory"));
	return TEST_PASS;
}

static int t_parse(void)
{
	struct ruma_exp_result r;
	/* rows as `ruma vmcache --result` writes them, one set per second */
	const ruma_result_row vm[] = {
		{ "tx", "tx/s", 100, "workload=rndread;ts=0" },
		{ "rmb", "MiB/s", 1.0, "workload=rndread;ts=0" },
		{ "wmb", "MiB/s", 0.5, "workload=rndread;ts=0" },
		{ "tx", "tx/s", 200, "workload=rndread;ts=1" },
		{ "rmb", "MiB/s", 2.0, "workload=rndread;ts=1" },
		{ "wmb", "MiB/s", 0.0, "workload=rndread;ts=1" },
		{ "tx", "tx/s", 400, "workload=rndread;ts=2" },
		{ "rmb", "MiB/s", 4.0, "workload=rndread;ts=2" },
		{ "wmb", "MiB/s", 1.0, "workload=rndread;ts=2" },
	};
	/* result rows as `ruma art --result` and `ruma micro --result` write them */
	const ruma_result_row art[] = {
		{ "insert", "Mops", 21.5, "n=1000;mode=1;rep=1" },
		{ "insert_faults", "faults", 3, "n=1000;mode=1;rep=1" },
		{ "lookup", "Mops", 12.25, "n=1000;mode=1;rep=1" },
		{ "erase", "Mops", 27.0, "n=1000;mode=1;rep=1" },
		{ "alloc_source", "note", 1,
		  "n=1000;mode=1;rep=1;note=huge allocator: pages from 4 KiB pages (no huge pages%3B "
		  "really)" },
	};
	const ruma_result_row micro[] = {
		{ "vector-insert", "s", 0.5, "method=22;runs=3;rep=1" },
		{ "shm-dst", "s", 0.25, "method=22;runs=3;rep=1" },
		{ "vector-insert", "s", 0.7, "method=22;runs=3;rep=2" },
		{ "shm-dst", "s", 0.25, "method=22;runs=3;rep=2" },
		{ "vector-insert", "s", 0.6, "method=22;runs=3;rep=3" },
		{ "shm-dst", "s", 0.25, "method=22;runs=3;rep=3" },
	};

	memset(&r, 0, sizeof(r));
	ruma_exp_read_rows(RUMA_EXP_VMCACHE, vm, TEST_N(vm), &r);
	CHECK(r.ok && r.nm == 3);
	CHECK(!strcmp(r.m[0].name, "tx") && fabs(r.m[0].value - 300) < 1e-9); /* first second dropped */
	CHECK(fabs(r.m[1].value - 3.0) < 1e-9 && !strcmp(r.m[1].unit, "MiB/s"));
	memset(&r, 0, sizeof(r));
	ruma_exp_read_rows(RUMA_EXP_VMCACHE, vm, 3, &r);
	CHECK(r.ok && fabs(r.m[0].value - 100) < 1e-9); /* one-second run keeps its row */
	memset(&r, 0, sizeof(r));
	ruma_exp_read_rows(RUMA_EXP_ART, art, TEST_N(art), &r);
	CHECK(r.ok && r.nm == 3);
	CHECK(!strcmp(r.m[1].name, "lookup") && fabs(r.m[1].value - 12.25) < 1e-9);
	/* the note comes from the note row, decoded, not from the child's stderr */
	CHECK(!strcmp(r.note, "huge allocator: pages from 4 KiB pages (no huge pages; really)"));
	memset(&r, 0, sizeof(r));
	ruma_exp_read_rows(RUMA_EXP_MICRO, micro, TEST_N(micro), &r);
	CHECK(r.ok);
	CHECK_EQ(r.nm, 3); /* vector-insert, shm-dst, total (malloc-src took no time) */
	CHECK(!strcmp(r.m[0].name, "vector-insert") && fabs(r.m[0].value - 0.6) < 1e-9);
	CHECK(!strcmp(r.m[2].name, "total") && fabs(r.m[2].value - 0.85) < 1e-9);
	memset(&r, 0, sizeof(r));
	ruma_exp_read_rows(RUMA_EXP_ART, NULL, 0, &r);
	CHECK(!r.ok && !strcmp(r.status, "no-output"));
	return TEST_PASS;
}

/* The rewire and rwbench adapters: means per metric name over the child's reps. */
static int t_read_rows_rewiring(void)
{
	const ruma_result_row rewire[] = {
		{ "page_random", "s", 0.25, "page_size=4096;pages=64;rep=1" },
		{ "page_random_ns_per_page", "ns/page", 9, "page_size=4096;pages=64;rep=1" },
		{ "page_random", "s", 0.75, "page_size=4096;pages=64;rep=2" },
		{ "page_random", "s", 2.0, "page_size=2097152;pages=2;rep=1" },
	};
	const ruma_result_row rwbench[] = {
		{ "rewired", "s", 1.0, "bytes=1048576;phase=alloc;rep=1" },
		{ "rewired", "s", 3.0, "bytes=1048576;phase=alloc;rep=2" },
		{ "mapped", "s", 0.5, "partitions=16;pages_per_block=1;n=100;rep=1" },
		{ "copy", "s", 0.125, "n=1024;rep=1" },
		{ "copy_peak", "bytes", 4096, "n=1024;rep=1" },
	};
	struct ruma_exp_result r;

	memset(&r, 0, sizeof(r));
	ruma_exp_read_rows(RUMA_EXP_REWIRE, rewire, TEST_N(rewire), &r);
	CHECK(r.ok);
	CHECK_EQ(r.nm, 2); /* seconds only: page_random (4 KiB), page_random_2m */
	CHECK(!strcmp(r.m[0].name, "page_random") && fabs(r.m[0].value - 0.5) < 1e-12);
	CHECK(!strcmp(r.m[1].name, "page_random_2m") && !strcmp(r.m[1].unit, "s"));
	memset(&r, 0, sizeof(r));
	ruma_exp_read_rows(RUMA_EXP_RWBENCH, rwbench, TEST_N(rwbench), &r);
	CHECK(r.ok);
	CHECK_EQ(r.nm, 3);
	CHECK(!strcmp(r.m[0].name, "rewired_alloc") && fabs(r.m[0].value - 2.0) < 1e-12);
	CHECK(!strcmp(r.m[1].name, "mapped_p16") && !strcmp(r.m[2].name, "copy_n1024"));
	CHECK_EQ(ruma_exp_system_find("rwbench"), RUMA_EXP_RWBENCH);
	CHECK(!strcmp(ruma_exp_system_required(RUMA_EXP_RWBENCH)[0], "bench"));
	return TEST_PASS;
}

/* Labels and number formats of tables, legends and axes (label.c). */
static int t_labels(void)
{
	static const struct {
		double v;
		const char *unit, *want;
	} fmt[] = {
		{ 38860, "tx/s", "38.9k" }, { 1234567, "tx/s", "1.23M" }, { 512, "Mops", "512" },
		{ 7.4149, "Mops", "7.41" }, { 0.0025, "MiB/s", "0.0025" }, { 0, "tx/s", "0" },
		{ 0.00251, "s", "2.51 ms" }, { 1.25, "s", "1.25 s" }, { 0.00084, "s", "840 us" },
		{ NAN, "s", "-" },
	};
	char buf[128];

	for (size_t i = 0; i < TEST_N(fmt); i++) {
		ruma_exp_fmt_value(fmt[i].v, fmt[i].unit, buf, sizeof(buf));
		if (strcmp(buf, fmt[i].want))
			fprintf(stderr, "  %g %s: '%s', want '%s'\n", fmt[i].v, fmt[i].unit, buf,
				fmt[i].want);
		CHECK(!strcmp(buf, fmt[i].want));
	}
	ruma_exp_variant_label("method=22", buf, sizeof(buf));
	CHECK(!strcmp(buf, "rewired vector"));
	ruma_exp_variant_label("method=12(64,1,0),alloc=huge", buf, sizeof(buf));
	/* a micro method by its name, its parameters kept; pairs joined by ", " */
	CHECK(strstr(buf, "12(64,1,0): ") == buf && strstr(buf, ", huge-page allocator"));
	ruma_exp_variant_label("colour=red", buf, sizeof(buf));
	CHECK(!strcmp(buf, "colour=red"));
	ruma_exp_size_label("vmcache", "physgb", buf, sizeof(buf));
	CHECK(!strcmp(buf, "buffer pool (PHYSGB), GiB"));
	ruma_exp_metric_label("tx", "tx/s", buf, sizeof(buf));
	CHECK(!strcmp(buf, "throughput (tx), transactions per second (tx/s)"));
	return TEST_PASS;
}

static int t_csv_split(void)
{
	char line[] = "a,\"b,c\",\"say \"\"hi\"\"\",,end";
	char *f[8];

	CHECK_EQ(ruma_exp_csv_split(line, f, 8), 5);
	CHECK(!strcmp(f[0], "a") && !strcmp(f[1], "b,c") && !strcmp(f[2], "say \"hi\""));
	CHECK(!strcmp(f[3], "") && !strcmp(f[4], "end"));
	return TEST_PASS;
}

/* a synthetic sweep CSV: variant x size x rep values */
static int write_synthetic(const char *path)
{
	FILE *f = fopen(path, "w");
	/* per size: base values, "fast" = 2x at size 1 and 0.5x at size 1000 */
	static const double base[2][3] = { { 1.0, 1.02, 0.98 }, { 1000, 1010, 990 } };
	static const double mult[2] = { 2.0, 0.5 };
	static const double jitter[3] = { 1.0, 1.005, 0.995 };

	if (!f)
		return -1;
	fprintf(f, "system,variant,x,size_param,size,rep,warmup,seed,metric,unit,value,status,note\n");
	for (int s = 0; s < 2; s++)
		for (int rep = 1; rep <= 3; rep++) {
			double sz = s ? 1000 : 1;
			fprintf(f, "art,x=base,base,n,%g,%d,0,1,insert,Mops,%.17g,ok,\n", sz, rep,
				base[s][rep - 1]);
			fprintf(f, "art,x=odd,odd,n,%g,%d,0,1,insert,Mops,%.17g,ok,\n", sz, rep,
				base[s][rep - 1] * mult[s]);
			fprintf(f, "art,x=same,same,n,%g,%d,0,1,insert,Mops,%.17g,ok,\n", sz, rep,
				base[s][(rep + 1) % 3] * jitter[rep - 1]);
			fprintf(f, "art,x=fast,fast,n,%g,%d,0,1,insert,Mops,%.17g,ok,\n", sz, rep,
				base[s][rep - 1] * 3);
			fprintf(f, "art,x=fast,fast,n,%g,%d,0,1,t,s,%.17g,ok,\n", sz, rep,
				base[s][rep - 1] / 3);
			fprintf(f, "art,x=base,base,n,%g,%d,0,1,t,s,%.17g,ok,\n", sz, rep,
				base[s][rep - 1]);
		}
	/* a warm-up row that would change the result if it were used */
	fprintf(f, "art,x=fast,fast,n,1,1,1,1,insert,Mops,1e9,ok,\n");
	fprintf(f, "art,x=fast,fast,n,1,4,0,1,,,,exit=1,boom\n");
	return fclose(f);
}

static const struct ruma_exp_cmp *find_cmp(const ruma_exp_cmp_list *l, const char *variant,
					   const char *metric, int overall, double size)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->c[i].variant, variant) && !strcmp(l->c[i].metric, metric) &&
		    l->c[i].overall == overall && (overall || l->c[i].size == size))
			return &l->c[i];
	return NULL;
}

static int t_compare_synthetic(void)
{
	ruma_exp_table t;
	ruma_exp_cmp_list l;
	char err[RUMA_EXP_ERR];
	const struct ruma_exp_cmp *c;

	CHECK_OK(write_synthetic(tpath("syn.csv")));
	CHECK_OK(ruma_exp_table_read(tpath("syn.csv"), &t, err, sizeof(err)));
	CHECK_EQ(t.n, 2 * 3 * 6 + 2);
	CHECK(ruma_exp_compare(&t, "x=nosuch", NULL, 2000, 1, &l, err, sizeof(err)) != 0);
	CHECK(ruma_exp_compare(&t, "y=base", NULL, 2000, 1, &l, err, sizeof(err)) != 0);
	CHECK(strstr(err, "no variable 'y'"));
	/* the same check for `ruma plot --baseline` */
	CHECK_EQ(ruma_exp_check_baseline(&t, "y=base", err, sizeof(err)), -EINVAL);
	CHECK_EQ(ruma_exp_check_baseline(&t, "x=nosuch", err, sizeof(err)), -EINVAL);
	CHECK_OK(ruma_exp_check_baseline(&t, "x=base", err, sizeof(err)));
	CHECK_OK(ruma_exp_compare(&t, "x=base", NULL, 2000, 1, &l, err, sizeof(err)));
	c = find_cmp(&l, "x=fast", "insert", 0, 1);
	CHECK(c && fabs(c->ratio - 3.0) < 1e-9 && !strcmp(c->verdict, "faster"));
	CHECK(c->lo > 1 && c->hi >= c->ratio);
	CHECK_EQ(c->v.n, 3); /* the warm-up and the failed row are ignored */
	c = find_cmp(&l, "x=fast", "t", 0, 1000);
	CHECK(c && fabs(c->ratio - 1.0 / 3) < 1e-9 && !strcmp(c->verdict, "faster"));
	c = find_cmp(&l, "x=same", "insert", 0, 1000);
	CHECK(c && !strcmp(c->verdict, "no difference beyond the noise"));
	/* 2x at one size and 0.5x at the other: the geometric mean is 1, a sum over
	 * sizes would call it 0.5 (dominated by the large size) */
	c = find_cmp(&l, "x=odd", "insert", 1, 0);
	CHECK(c && fabs(c->ratio - 1.0) < 1e-9);
	CHECK(!strcmp(find_cmp(&l, "x=odd", "insert", 0, 1)->verdict, "faster"));
	CHECK(!strcmp(find_cmp(&l, "x=odd", "insert", 0, 1000)->verdict, "slower"));
	ruma_exp_cmp_free(&l);
	/* deterministic for a seed, and per metric independent of the others */
	{
		ruma_exp_cmp_list a, b;
		CHECK_OK(ruma_exp_compare(&t, "x=base", "insert", 500, 7, &a, err, sizeof(err)));
		CHECK_OK(ruma_exp_compare(&t, "x=base", NULL, 500, 7, &b, err, sizeof(err)));
		c = find_cmp(&b, "x=same", "insert", 1, 0);
		CHECK(c && c->lo == find_cmp(&a, "x=same", "insert", 1, 0)->lo);
		ruma_exp_cmp_free(&a);
		ruma_exp_cmp_free(&b);
	}
	ruma_exp_table_free(&t);
	return TEST_PASS;
}

/* A row repeated (a CSV concatenated from two sweeps) must not count as a further
 * repetition: with the extra 3.0 the median of x=fast would move. */
static int t_compare_duplicate_rows(void)
{
	ruma_exp_table t;
	char err[RUMA_EXP_ERR] = "";
	FILE *f;

	CHECK_OK(write_synthetic(tpath("dup.csv")));
	f = fopen(tpath("dup.csv"), "a");
	CHECK(f != NULL);
	fprintf(f, "art,x=fast,fast,n,1,2,0,1,insert,Mops,3.0,ok,\n");
	CHECK_OK(fclose(f));
	CHECK_EQ(ruma_exp_table_read(tpath("dup.csv"), &t, err, sizeof(err)), RUMA_EPARSE);
	CHECK(strstr(err, ":40 duplicates line 11") != NULL);
	CHECK(strstr(err, "rep 2") && strstr(err, "metric insert"));
	/* the same repetition as a warm-up row, or at another size, is not a duplicate */
	CHECK_OK(write_synthetic(tpath("dup.csv")));
	f = fopen(tpath("dup.csv"), "a");
	CHECK(f != NULL);
	fprintf(f, "art,x=fast,fast,n,1,2,1,1,insert,Mops,3.0,ok,\n");
	fprintf(f, "art,x=fast,fast,n,2,2,0,1,insert,Mops,3.0,ok,\n");
	CHECK_OK(fclose(f));
	CHECK_OK(ruma_exp_table_read(tpath("dup.csv"), &t, err, sizeof(err)));
	CHECK_EQ(t.n, 2 * 3 * 6 + 4);
	ruma_exp_table_free(&t);
	return TEST_PASS;
}

/* ---- through the binary ------------------------------------------------- */

/* A measured value that is NaN or negative: compare and plot refuse the CSV
 * (exit 2, the line and the metric named) instead of dropping the metric and
 * exiting 0, or handing the value to gnuplot. */
static int t_cli_nan_negative(void)
{
	static const char *const bad[] = { "nan", "-3.5", "inf" };

	for (size_t i = 0; i < TEST_N(bad); i++) {
		char *err = NULL;
		FILE *f;

		CHECK_OK(write_synthetic(tpath("nanneg.csv")));
		f = fopen(tpath("nanneg.csv"), "a");
		CHECK(f != NULL);
		fprintf(f, "art,x=fast,fast,n,2,1,0,1,lookup,Mops,%s,ok,\n", bad[i]);
		CHECK_OK(fclose(f));
		int rc = test_run_cli((char *[]){ NULL, "compare", (char *)tpath("nanneg.csv"),
						  "--baseline", "x=base", NULL },
				      NULL, &err);
		CHECK_EQ(rc, 2);
		CHECK(err && strstr(err, "nanneg.csv:40: metric lookup of x=fast has the value") &&
		      strstr(err, bad[i]));
		free(err);
		err = NULL;
		rc = test_run_cli((char *[]){ NULL, "plot", (char *)tpath("nanneg.csv"), "--out",
					      (char *)tpath("badplot"), NULL },
				  NULL, &err);
		CHECK_EQ(rc, 2);
		CHECK(err && strstr(err, "metric lookup of x=fast"));
		free(err);
		CHECK(access(tpath("badplot"), F_OK) != 0); /* nothing drawn */
	}
	return TEST_PASS;
}

/* rows of a sweep CSV: checks each measurement key (variant,size,rep,warmup,metric)
 * is unique; returns the number of data rows or -1 */
static long csv_rows_unique(const char *path, long *warm)
{
	ruma_exp_table t;
	char err[RUMA_EXP_ERR];
	long n;

	if (ruma_exp_table_read(path, &t, err, sizeof(err))) {
		fprintf(stderr, "  %s\n", err);
		return -1;
	}
	*warm = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct ruma_exp_row *a = &t.rows[i];

		*warm += a->warmup;
		if (!a->ok) {
			fprintf(stderr, "  failed row: %s %s\n", a->variant, a->note);
			ruma_exp_table_free(&t);
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			const struct ruma_exp_row *b = &t.rows[j];
			if (!strcmp(a->variant, b->variant) && a->size == b->size &&
			    a->rep == b->rep && a->warmup == b->warmup && !strcmp(a->metric, b->metric)) {
				fprintf(stderr, "  duplicate row %s n=%g rep %ld\n", a->variant,
					a->size, a->rep);
				ruma_exp_table_free(&t);
				return -1;
			}
		}
	}
	n = (long)t.n;
	ruma_exp_table_free(&t);
	return n;
}

#define ART_GRID(out, reps)                                                                 \
	(char *[]) { NULL, "sweep", "art", "--var", "alloc=libc,huge", "--size", "n=1000,2000", \
		     "--set", "mode=1", "--set", "lookups=1e4", "--reps", reps, "--warmup", "1", \
		     "--out", (char *)(out), "--quiet", NULL, NULL }

static int png_ok(const char *path)
{
	unsigned char h[24];
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	FILE *f = fopen(path, "rb");
	size_t n;
	uint32_t w, hgt;

	if (!f)
		return 0;
	n = fread(h, 1, sizeof(h), f);
	fclose(f);
	if (n != sizeof(h) || memcmp(h, sig, 8) || memcmp(h + 12, "IHDR", 4))
		return 0;
	w = (uint32_t)h[16] << 24 | (uint32_t)h[17] << 16 | (uint32_t)h[18] << 8 | h[19];
	hgt = (uint32_t)h[20] << 24 | (uint32_t)h[21] << 16 | (uint32_t)h[22] << 8 | h[23];
	return w > 0 && hgt > 0;
}

static int t_cli_end_to_end(void)
{
	char *out = NULL, *err = NULL;
	long warm, rows;
	int rc;

	rc = test_run_cli(ART_GRID(tpath("art.csv"), "3"), NULL, &err);
	if (rc)
		fprintf(stderr, "%s", err ? err : "");
	free(err);
	CHECK_EQ(rc, 0);
	/* 2 allocators x 2 sizes x (3 reps + 1 warm-up) runs x 3 metrics */
	rows = csv_rows_unique(tpath("art.csv"), &warm);
	CHECK_EQ(rows, 2 * 2 * 4 * 3);
	CHECK_EQ(warm, 2 * 2 * 1 * 3);
	/* an existing output is not overwritten without --resume/--force */
	CHECK_EQ(test_run_cli(ART_GRID(tpath("art.csv"), "3"), NULL, &err), 2);
	CHECK(err && strstr(err, "--resume"));
	free(err);

	rc = test_run_cli((char *[]){ NULL, "compare", (char *)tpath("art.csv"), "--baseline",
				      "alloc=libc", NULL },
			  &out, &err);
	CHECK_EQ(rc, 0);
	CHECK(out);
	for (const char *m = "insert\0lookup\0erase\0"; *m; m += strlen(m) + 1) {
		char head[64];
		const char *p;
		int verdicts = 0;

		snprintf(head, sizeof(head), "%s (Mops, higher is better)", m);
		p = strstr(out, head);
		CHECK(p);
		/* per size and overall: one line each for alloc=huge with a verdict */
		for (int k = 0; k < 3; k++) {
			const char *nl;
			p = strstr(p, "alloc=huge");
			CHECK(p);
			nl = strchr(p, '\n');
			CHECK(nl);
			verdicts += (strstr(p, "faster") && strstr(p, "faster") < nl) ||
				    (strstr(p, "slower") && strstr(p, "slower") < nl) ||
				    (strstr(p, "noise") && strstr(p, "noise") < nl);
			p = nl;
		}
		CHECK_EQ(verdicts, 3);
	}
	CHECK(strstr(out, "overall (geo. mean)"));
	free(out);
	free(err);
	rc = test_run_cli((char *[]){ NULL, "compare", (char *)tpath("art.csv"), "--baseline",
				      "alloc=libc", "--csv", "--metric", "lookup", NULL },
			  &out, NULL);
	CHECK_EQ(rc, 0);
	CHECK(!strncmp(out, "metric,unit,variant,baseline", 28));
	CHECK(strstr(out, "\nlookup,Mops,alloc=huge,alloc=libc,n,overall,"));
	free(out);
	CHECK_EQ(test_run_cli((char *[]){ NULL, "compare", (char *)tpath("art.csv"), "--baseline",
					  "alloc=nosuch", NULL },
			      NULL, NULL),
		 2);

	if (!ruma_exp_gnuplot_path()) {
		CHECK_EQ(test_run_cli((char *[]){ NULL, "plot", (char *)tpath("art.csv"), "--out",
						  (char *)tpath("plots"), NULL },
				      NULL, NULL),
			 1);
		SKIP("gnuplot is not installed: plot checked only for its refusal");
	}
	rc = test_run_cli((char *[]){ NULL, "plot", (char *)tpath("art.csv"), "--out",
				      (char *)tpath("plots"), "--baseline", "alloc=libc", NULL },
			  &out, &err);
	if (rc)
		fprintf(stderr, "%s", err ? err : "");
	CHECK_EQ(rc, 0);
	free(out);
	free(err);
	for (const char *m = "insert\0lookup\0erase\0"; *m; m += strlen(m) + 1) {
		char p[300];

		snprintf(p, sizeof(p), "plots/all/%s.png", m);
		CHECK(png_ok(tpath(p)));
		snprintf(p, sizeof(p), "plots/ratio/%s.png", m);
		CHECK(png_ok(tpath(p)));
	}
	return TEST_PASS;
}

/* The charts of a comparison: a ratio chart per metric (each variant / its
 * baseline, with the interval), none for a metric that is all zeros, the
 * variants by their labels (legend and compare's CSV), values spanning more
 * than 10x on a log axis. */
static int t_plot_charts(void)
{
	char *out = NULL, *gp;
	FILE *f;

	CHECK_OK(write_synthetic(tpath("charts.csv")));
	f = fopen(tpath("charts.csv"), "a");
	CHECK(f != NULL);
	for (int rep = 1; rep <= 3; rep++)
		for (int s = 0; s < 2; s++) {
			fprintf(f, "art,x=base,base,n,%d,%d,0,1,zero,MiB/s,0,ok,\n", s ? 1000 : 1, rep);
			fprintf(f, "art,x=fast,fast,n,%d,%d,0,1,zero,MiB/s,0,ok,\n", s ? 1000 : 1, rep);
		}
	CHECK_OK(fclose(f));
	CHECK_EQ(test_run_cli((char *[]){ NULL, "compare", (char *)tpath("charts.csv"), "--baseline",
					  "x=base", "--csv", NULL },
			      &out, NULL),
		 0);
	CHECK(strstr(out, ",verdict,variant_label,baseline_label\n"));
	free(out);
	out = NULL;
	if (!ruma_exp_gnuplot_path())
		SKIP("gnuplot is not installed");
	CHECK_EQ(test_run_cli((char *[]){ NULL, "plot", (char *)tpath("charts.csv"), "--out",
					  (char *)tpath("charts"), "--baseline", "x=base", NULL },
			      &out, NULL),
		 0);
	CHECK(strstr(out, "no chart of zero: every median is 0"));
	free(out);
	CHECK(png_ok(tpath("charts/all/insert.png")) && png_ok(tpath("charts/ratio/insert.png")));
	CHECK(png_ok(tpath("charts/ratio/t.png")));
	CHECK(access(tpath("charts/all/zero.png"), F_OK) != 0);
	CHECK(access(tpath("charts/ratio/zero.png"), F_OK) != 0);
	CHECK(access(tpath("charts/vs_baseline"), F_OK) != 0);
	gp = test_slurp(tpath("charts/plot.gp"));
	CHECK(gp != NULL);
	/* insert spans 1..3000 Mops: a log y axis; the ratio chart's line at 1 */
	CHECK(strstr(gp, "set logscale y") && strstr(gp, "first 1 nohead"));
	CHECK(strstr(gp, "data/ratio_insert__x_fast.dat"));
	free(gp);
	return TEST_PASS;
}

/* keep the header, the first k measurements (3 rows each for art) and
 * `partial` rows of the next one */
static int truncate_csv(const char *path, int k, int partial)
{
	char *all = test_slurp(path), *p;
	FILE *f;
	int lines = 0;

	if (!all)
		return -1;
	for (p = all; *p && lines < 1 + 3 * k + partial; p++)
		lines += *p == '\n';
	*p = '\0';
	f = fopen(path, "w");
	if (!f) {
		free(all);
		return -1;
	}
	fputs(all, f);
	free(all);
	/* and a cut-off line, as a crash mid-write leaves */
	fputs("art,alloc=libc,libc,1,1e4,n,10", f);
	return fclose(f);
}

/* A sweep of rwbench: the children's result rows become the CSV's metrics. */
static int t_cli_rwbench_rows(void)
{
	char *err = NULL, *csv;
	int rc = test_run_cli((char *[]){ NULL, "sweep", "rwbench", "--set", "bench=pool", "--var",
					  "only=rewired,mmap", "--size", "n=1M", "--reps", "1",
					  "--warmup", "0", "--quiet", "--force", "--out",
					  (char *)tpath("rwb.csv"), NULL },
			      NULL, &err);

	if (rc)
		fprintf(stderr, "%s", err ? err : "");
	free(err);
	CHECK_EQ(rc, 0);
	csv = test_slurp(tpath("rwb.csv"));
	CHECK(csv);
	CHECK(strstr(csv, ",rewired_alloc,s,") && strstr(csv, ",mmap_free,s,"));
	CHECK(!strstr(csv, "no-output"));
	free(csv);
	return TEST_PASS;
}

static int t_cli_resume_truncated(void)
{
	long warm;
	char *err = NULL;
	int rc;

	CHECK_EQ(test_run_cli(ART_GRID(tpath("res.csv"), "2"), NULL, NULL), 0);
	CHECK_EQ(csv_rows_unique(tpath("res.csv"), &warm), 2 * 2 * 3 * 3);
	/* cut at a measurement boundary, then inside a measurement */
	for (int partial = 0; partial < 3; partial += 2) {
		CHECK_OK(truncate_csv(tpath("res.csv"), 5, partial));
		{
			char **argv = ART_GRID(tpath("res.csv"), "2");
			argv[18] = "--resume";
			rc = test_run_cli(argv, NULL, &err);
		}
		if (rc)
			fprintf(stderr, "%s", err ? err : "");
		free(err);
		err = NULL;
		CHECK_EQ(rc, 0);
		CHECK_EQ(csv_rows_unique(tpath("res.csv"), &warm), 2 * 2 * 3 * 3);
		CHECK_EQ(warm, 2 * 2 * 3);
	}
	/* resuming a complete sweep runs nothing */
	{
		char **argv = ART_GRID(tpath("res.csv"), "2");
		char *before = test_slurp(tpath("res.csv")), *after;

		argv[18] = "--resume";
		CHECK_EQ(test_run_cli(argv, NULL, NULL), 0);
		after = test_slurp(tpath("res.csv"));
		CHECK(before && after && !strcmp(before, after));
		free(before);
		free(after);
	}
	return TEST_PASS;
}

/* Append what can be read from fd to *buf (*len bytes, NUL-terminated) until
 * it contains what (what == NULL: until end of file).  0 when found, -1 not. */
static int read_until(int fd, char **buf, size_t *len, const char *what)
{
	char chunk[256];

	for (;;) {
		if (what && *buf && strstr(*buf, what))
			return 0;
		ssize_t got = read(fd, chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return what ? -1 : 0;
		char *nb = realloc(*buf, *len + (size_t)got + 1);
		if (!nb)
			return -1;
		memcpy(nb + *len, chunk, (size_t)got);
		*len += (size_t)got;
		nb[*len] = '\0';
		*buf = nb;
	}
}

static long count_lines(const char *s)
{
	long n = 0;

	for (; s && (s = strchr(s, '\n')); s++)
		n++;
	return n;
}

/* SIGINT in the middle of a sweep, then --resume completes it.  The sweep's
 * stderr is a pipe of one page that the test stops reading after the third
 * run's progress line: the sweep can then write at most a page more (each
 * progress line is at least PROGRESS_MIN bytes) and blocks before its last
 * run, so the interrupt lands mid-sweep on every machine, however slow or
 * fast — no sleep decides it. */
#define INT_REPS 30
#define INT_RUNS (2 * 2 * INT_REPS)
#define PROGRESS_MIN 40 /* "sweep: k/120 alloc=libc n=2000 rep r: ok" */
static int t_cli_interrupt_resume(void)
{
	const char *csv = tpath("int.csv");
	char reps[16];
	char *argv[] = { RUMA_BIN, "sweep", "art", "--var", "alloc=libc,huge", "--size",
			 "n=2000,3000", "--set", "lookups=3e6", "--reps", reps, "--warmup", "0",
			 "--out", (char *)csv, NULL, NULL };
	int fds[2], devnull;
	pid_t pid;
	long warm, rows;
	char *err = NULL;
	size_t len = 0;

	snprintf(reps, sizeof(reps), "%d", INT_REPS);
	CHECK_EQ(pipe2(fds, O_CLOEXEC), 0);
	int cap = fcntl(fds[1], F_SETPIPE_SZ, 4096);
	CHECK(cap > 0);
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	CHECK(devnull >= 0);
	CHECK_EQ(test_spawn_cli(argv, devnull, fds[1], &pid), 0);
	close(fds[1]);
	close(devnull);
	/* three runs done: rows to resume from; then stop reading */
	char third[32];
	snprintf(third, sizeof(third), "sweep: 3/%d ", INT_RUNS);
	int started = read_until(fds[0], &err, &len, third);
	long seen = count_lines(err);
	/* the premise: what the sweep can still write does not hold all runs */
	if (!started && seen + cap / PROGRESS_MIN + 1 >= INT_RUNS)
		fprintf(stderr, "  %d runs fit in the pipe (%d bytes) after %ld lines: grid too small\n",
			INT_RUNS, cap, seen);
	CHECK_EQ(kill(pid, SIGINT), 0);
	int drained = read_until(fds[0], &err, &len, NULL);
	close(fds[0]);
	int status = test_wait_status(pid);
	if (status != 1 || !started)
		fprintf(stderr, "  sweep: exit %d, stderr:\n%s\n", status, err ? err : "");
	CHECK_EQ(started, 0);
	CHECK(seen + cap / PROGRESS_MIN + 1 < INT_RUNS);
	CHECK_EQ(drained, 0);
	CHECK_EQ(status, 1);
	CHECK(strstr(err, "interrupted after"));
	CHECK(strstr(err, "resume with: ruma sweep art"));
	CHECK(strstr(err, "--resume"));
	free(err);
	rows = csv_rows_unique(csv, &warm);
	CHECK(rows >= 3 * 3 && rows < INT_RUNS * 3);
	argv[15] = "--resume";
	CHECK_EQ(test_run_cli(argv, NULL, NULL), 0);
	CHECK_EQ(csv_rows_unique(csv, &warm), INT_RUNS * 3);
	CHECK_EQ(warm, 0);
	return TEST_PASS;
}

static int expect_bad(char **argv, const char *msg)
{
	char *err = NULL;
	int rc = test_run_cli(argv, NULL, &err);

	if (rc != 2 || !err || !strstr(err, msg)) {
		fprintf(stderr, "  %s: exit %d, stderr: %s\n", argv[2] ? argv[2] : "", rc,
			err ? err : "");
		free(err);
		return 0;
	}
	free(err);
	return 1;
}

static int t_cli_bad_grids(void)
{
	const char *o = tpath("bad.csv");

	CHECK(expect_bad((char *[]){ NULL, "sweep", "nosuch", "--size", "n=1", "--out",
				     (char *)o, NULL },
			 "unknown system"));
	CHECK(expect_bad((char *[]){ NULL, "sweep", "art", "--var", "colour=red", "--size", "n=1e3",
				     "--out", (char *)o, NULL },
			 "no variable 'colour'"));
	CHECK(expect_bad((char *[]){ NULL, "sweep", "art", "--var", "alloc=", "--size", "n=1e3",
				     "--out", (char *)o, NULL },
			 "empty value"));
	CHECK(expect_bad((char *[]){ NULL, "sweep", "art", "--size", "n=1e3", "--reps", "0",
				     "--out", (char *)o, NULL },
			 "--reps"));
	CHECK(expect_bad((char *[]){ NULL, "sweep", "art", "--size", "n=lots", "--out", (char *)o,
				     NULL },
			 "not a number"));
	CHECK(expect_bad((char *[]){ NULL, "sweep", "art", "--var", "alloc=libc", "--out",
				     (char *)o, NULL },
			 "no --size"));
	CHECK(expect_bad((char *[]){ NULL, "sweep", "micro", "--size", "n=1e3", "--out", (char *)o,
				     NULL },
			 "needs 'method'"));
	CHECK(expect_bad((char *[]){ NULL, "sweep", "art", "--size", "n=1e3", NULL }, "--out"));
	CHECK(expect_bad((char *[]){ NULL, "compare", (char *)tpath("nonexistent.csv"), NULL },
			 "cannot read"));
	CHECK(expect_bad((char *[]){ NULL, "compare", tmpdir, NULL }, "directory"));
	CHECK(access(o, F_OK) != 0); /* nothing ran, nothing written */
	/* --resume from something unreadable stops before running anything */
	char *err = NULL;
	int rc = test_run_cli((char *[]){ NULL, "sweep", "art", "--size", "n=1e3", "--resume",
					  "--out", tmpdir, NULL },
			      NULL, &err);
	int named = err && strstr(err, "cannot resume") && strstr(err, "directory");
	free(err);
	CHECK_EQ(rc, 1);
	CHECK(named);
	return TEST_PASS;
}

/* a child that fails is a failed measurement, not a crash of the sweep */
static int t_cli_failed_child(void)
{
	char *err = NULL;
	ruma_exp_table t;
	char e[RUMA_EXP_ERR];
	int rc;

	/* a store in a folder that does not exist: `ruma vmcache` parses the
	 * arguments (the sweep's check passes) and refuses the run (exit 2) */
	char ok_store[256], block[300];
	size_t good = 0, bad = 0;
	snprintf(ok_store, sizeof(ok_store), "%s", tpath("ok.store"));
	snprintf(block, sizeof(block), "block=%s,/nonexistent/x/store", ok_store);
	rc = test_run_cli((char *[]){ NULL, "sweep", "vmcache", "--var", block, "--size",
				      "datasize=1000", "--set", "runfor=1", "--set", "physgb=0.01",
				      "--set", "virtgb=0.1", "--reps", "1", "--warmup", "0", "--out",
				      (char *)tpath("fail.csv"), NULL },
			  NULL, &err);
	CHECK_EQ(rc, 1);
	CHECK(err && strstr(err, "1 measurement(s) failed"));
	free(err);
	CHECK_OK(ruma_exp_table_read(tpath("fail.csv"), &t, e, sizeof(e)));
	for (size_t i = 0; i < t.n; i++) {
		bool failed = !strcmp(t.rows[i].variant, "block=/nonexistent/x/store");
		good += !failed && t.rows[i].ok;
		bad += failed && !t.rows[i].ok && t.rows[i].note[0] &&
		       !strcmp(t.rows[i].status, "exit=2");
	}
	CHECK(good > 0 && bad == 1 && good + bad == t.n);
	ruma_exp_table_free(&t);
	/* a run that outlives --timeout is killed and recorded as "timeout" */
	rc = test_run_cli((char *[]){ NULL, "sweep", "vmcache", "--size", "datasize=1000", "--set",
				      "runfor=60", "--set", "physgb=0.01", "--set", "virtgb=0.1",
				      "--timeout", "1", "--reps", "1", "--warmup", "0", "--out",
				      (char *)tpath("timeout.csv"), "--quiet", NULL },
			  NULL, NULL);
	CHECK_EQ(rc, 1);
	{
		char *csv = test_slurp(tpath("timeout.csv"));
		CHECK(csv && strstr(csv, ",timeout,"));
		free(csv);
	}
	return TEST_PASS;
}

/* an external program as a peer: impl=NAME runs PATH <n> <mode>, its
 * NAME,N,VALUE lines are metrics, interleaved with ruma's own runs */
static int t_cli_peer(void)
{
	const char *script = tpath("peer.sh");
	FILE *f = fopen(script, "w");
	struct ruma_exp_result r;
	ruma_exp_table t;
	char e[RUMA_EXP_ERR], peer[600], *err = NULL;
	int rc, fake = 0, ruma = 0;

	CHECK(f);
	fprintf(f, "#!/bin/sh\necho \"insert,$1,10.5\"\necho \"Error opening counter\"\n"
		   "echo \"lookup,$1,2e1\"\necho\necho \"erase,$1,$2\"\n");
	CHECK_EQ(fclose(f), 0);
	CHECK_EQ(chmod(script, 0755), 0);
	snprintf(peer, sizeof(peer), "fake=%s", script);
	rc = test_run_cli((char *[]){ NULL, "sweep", "art", "--peer", peer, "--var", "impl=ruma,fake",
				      "--size", "n=500", "--set", "mode=2", "--set", "seed=1", "--set",
				      "lookups=1e3", "--reps", "3", "--warmup", "0", "--out",
				      (char *)tpath("peer.csv"), "--quiet", NULL },
			  NULL, &err);
	if (rc)
		fprintf(stderr, "%s", err ? err : "");
	free(err);
	CHECK_EQ(rc, 0);
	CHECK_OK(ruma_exp_table_read(tpath("peer.csv"), &t, e, sizeof(e)));
	for (size_t i = 0; i < t.n; i++) {
		const struct ruma_exp_row *w = &t.rows[i];
		CHECK(w->ok);
		if (!strcmp(w->variant, "impl=fake")) {
			fake++;
			CHECK(!strcmp(w->unit, "Mops"));
			CHECK(w->value == (!strcmp(w->metric, "insert") ? 10.5 :
					   !strcmp(w->metric, "lookup") ? 20 : 2));
		} else {
			ruma++;
		}
	}
	ruma_exp_table_free(&t);
	CHECK_EQ(fake, 3 * 3);
	CHECK_EQ(ruma, 3 * 3);
	rc = test_run_cli((char *[]){ NULL, "compare", (char *)tpath("peer.csv"), "--baseline",
				      "impl=fake", NULL },
			  NULL, NULL);
	CHECK_EQ(rc, 0);
	/* an impl that names nothing, a peer that cannot run: bad grids */
	rc = test_run_cli((char *[]){ NULL, "sweep", "art", "--var", "impl=ruma,leis", "--size",
				      "n=500", "--out", (char *)tpath("bad.csv"), NULL },
			  NULL, &err);
	CHECK_EQ(rc, 2);
	CHECK(err && strstr(err, "--peer leis="));
	free(err);
	rc = test_run_cli((char *[]){ NULL, "sweep", "art", "--peer", "x=/nonexistent/prog", "--var",
				      "impl=x", "--size", "n=500", "--out", (char *)tpath("bad.csv"),
				      NULL },
			  NULL, &err);
	CHECK_EQ(rc, 2);
	CHECK(err && strstr(err, "cannot execute"));
	free(err);
	CHECK_EQ(test_run_cli((char *[]){ NULL, "sweep", "art", "--peer", "ruma=/bin/true", "--size",
					  "n=5", "--out", (char *)tpath("bad.csv"), NULL },
			      NULL, NULL),
		 2);
	/* the generic parser: only NAME,number,number lines */
	ruma_exp_parse_metric_lines("a,1,2\nb c,1,2\nd,x,3\ne,1,2,3\nf,1e3,0.5\n\n", "Mops", &r);
	CHECK(r.ok);
	CHECK_EQ(r.nm, 2);
	CHECK(!strcmp(r.m[0].name, "a") && r.m[0].value == 2 && !strcmp(r.m[1].name, "f"));
	ruma_exp_parse_metric_lines("nothing here\n", "Mops", &r);
	CHECK(!r.ok);
	return TEST_PASS;
}

static int t_cli_demo_quick(void)
{
	char *out = NULL, *err = NULL;
	const char *dir = tpath("demo");
	char sum[300];
	int rc = test_run_cli((char *[]){ NULL, "demo", "--quick", "--out", (char *)dir, NULL },
			      &out, &err);

	if (rc)
		fprintf(stderr, "%s\n%s", out ? out : "", err ? err : "");
	CHECK_EQ(rc, 0);
	CHECK(out && strstr(out, dir));
	CHECK(strstr(out, "== vector") && strstr(out, "== art") && strstr(out, "== vmcache"));
	CHECK(strstr(out, "huge allocator"));
	snprintf(sum, sizeof(sum), "%s/summary.txt", dir);
	CHECK(access(sum, R_OK) == 0);
	snprintf(sum, sizeof(sum), "%s/art.csv", dir);
	CHECK(access(sum, R_OK) == 0);
	free(out);
	free(err);
	CHECK_EQ(test_run_cli((char *[]){ NULL, "demo", "--bogus", NULL }, NULL, NULL), 2);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "grid", t_grid },
	{ "grid_file", t_grid_file },
	{ "parse_outputs", t_parse },
	{ "read_rows_rewiring", t_read_rows_rewiring },
	{ "cli_rwbench_rows", t_cli_rwbench_rows },
	{ "csv_split", t_csv_split },
	{ "compare_synthetic", t_compare_synthetic },
	{ "compare_duplicate_rows", t_compare_duplicate_rows },
	{ "cli_nan_negative", t_cli_nan_negative },
	{ "labels", t_labels },
	{ "plot_charts", t_plot_charts },
	{ "cli_sweep_compare_plot", t_cli_end_to_end },
	{ "cli_resume_truncated", t_cli_resume_truncated },
	{ "cli_interrupt_resume", t_cli_interrupt_resume },
	{ "cli_bad_grids", t_cli_bad_grids },
	{ "cli_failed_child", t_cli_failed_child },
	{ "cli_peer", t_cli_peer },
	{ "cli_demo_quick", t_cli_demo_quick },
};

int main(int argc, char **argv)
{
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ruma-test-exp-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = test_main("exp", cases, TEST_N(cases), argc, argv);
	cleanup();
	return rc;
}
