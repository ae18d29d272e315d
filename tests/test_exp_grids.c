/*
 * test_exp_grids.c — the sweep grids the benchmark documents give, at tiny
 * sizes, through the ruma binary: each produces the rows it is documented
 * to produce.
 *
 *   lists     values and variant names split at commas outside parentheses;
 *   micro     a grid over methods (one with commas in its parameters) gives
 *             a median [min-max] per phase, plus total and build;
 *   rwbench   one-size children (log=L, one partition count, one variant per
 *             child) give size-free metrics that `ruma plot` draws as one
 *             chart per metric with every variant a line;
 *   art       ruma's allocators and preloads beside an external peer (a fake
 *             program printing insert,n,Mops lines; it sees RUMA_SEED), with
 *             memory=1;
 *   vmcache   ruma beside an external peer printing vmcache's per-second CSV
 *             (mean after the first second), load_time=1, the peer's scratch
 *             directory removed at the end; the thread grid of
 *             docs/bench/vmcache.md beside a peer that, like the original
 *             vmcache, reads only its environment (BLOCK an existing file,
 *             THREADS, RNDREAD, PHYSGB, ...);
 *   kv        the grid of docs/bench/ycsb.md (workloads x threads on ruma's
 *             store) gives throughput, load and per-operation percentiles,
 *             compare reads throughput as higher-is-better and latency as
 *             lower-is-better, and plot draws them.
 */
#include "exp_util.h"

#include "tools/exp/exp.h"

#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <sys/stat.h>


/* run `ruma sweep ...` (argv without "sweep"), expect exit 0 and read the CSV */
static int sweep(char **args, const char *csv, ruma_exp_table *t)
{
	char *argv[48] = { NULL, (char *)"sweep" }, *err = NULL, e[RUMA_EXP_ERR];
	size_t n = 2;
	int rc;

	for (size_t i = 0; args[i] && n < 44; i++)
		argv[n++] = args[i];
	argv[n++] = (char *)"--out";
	argv[n++] = (char *)csv;
	argv[n++] = (char *)"--quiet";
	argv[n] = NULL;
	rc = test_run_cli(argv, NULL, &err);
	if (rc)
		fprintf(stderr, "%s", err ? err : "");
	free(err);
	CHECK_EQ(rc, 0);
	CHECK_OK(ruma_exp_table_read(csv, t, e, sizeof(e)));
	return TEST_PASS;
}

/* measured (not warm-up) ok rows of variant (NULL: any) and metric in t */
static size_t count(const ruma_exp_table *t, const char *variant, const char *metric)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n; i++)
		k += t->rows[i].ok && !t->rows[i].warmup && (!variant || !strcmp(t->rows[i].variant, variant)) &&
		     !strcmp(t->rows[i].metric, metric);
	return k;
}

/* an executable script at tpath(name) */
static int script(const char *name, const char *text)
{
	FILE *f = fopen(tpath(name), "w");

	CHECK(f);
	fputs(text, f);
	CHECK_EQ(fclose(f), 0);
	CHECK_EQ(chmod(tpath(name), 0755), 0);
	return TEST_PASS;
}

/* lists and variant names split at commas outside parentheses only */
static int t_commas_in_parentheses(void)
{
	ruma_exp_grid g;
	char err[RUMA_EXP_ERR], buf[128];

	ruma_exp_grid_init(&g);
	CHECK_OK(ruma_exp_grid_add(&g, "system", "micro", err, sizeof(err)));
	CHECK_OK(ruma_exp_grid_add(&g, "var", "method=1,10(64,0),12(64,1,0)", err, sizeof(err)));
	CHECK_EQ(g.vars[0].n, 3);
	CHECK(!strcmp(g.vars[0].values[1], "10(64,0)") && !strcmp(g.vars[0].values[2], "12(64,1,0)"));
	CHECK(ruma_exp_grid_add(&g, "var", "x=1,(2,", err, sizeof(err)) == 0); /* unbalanced: one value */
	CHECK_EQ(g.vars[1].n, 2);
	ruma_exp_partner("method=10(64,0),test=9", "method=12(64,1,0)", buf, sizeof(buf));
	CHECK(!strcmp(buf, "method=12(64,1,0),test=9"));
	CHECK(!strcmp(ruma_exp_next_comma("a(b,c),d") ? ruma_exp_next_comma("a(b,c),d") : "",
		      ",d"));
	return TEST_PASS;
}

static int t_micro_methods(void)
{
	ruma_exp_table t;
	char *out = NULL;

	CHECK_EQ(sweep((char *[]){ "micro", "--var", "method=1,10(64,0)", "--set", "test=9",
				   "--set", "build=1", "--size", "n=4096", "--reps", "3",
				   "--warmup", "1", NULL },
		       tpath("micro.csv"), &t),
		 TEST_PASS);
	CHECK_EQ(count(&t, "method=1", "read-seq-dst"), 3);
	CHECK_EQ(count(&t, "method=10(64,0)", "read-seq-dst"), 3);
	CHECK_EQ(count(&t, "method=10(64,0)", "total"), 3);
	CHECK_EQ(count(&t, "method=10(64,0)", "build"), 3);
	ruma_exp_table_free(&t);
	CHECK_EQ(test_run_cli((char *[]){ NULL, "compare", (char *)tpath("micro.csv"),
					  "--baseline", "method=1", "--metric", "read-seq-dst",
					  NULL },
			      &out, NULL),
		 0);
	CHECK(out && strstr(out, "method=10(64,0)") && strstr(out, "median [min-max]"));
	free(out);
	return TEST_PASS;
}

static int t_rwbench_plot(void)
{
	ruma_exp_table t;
	char *out = NULL;
	static const char *const vec_metrics[] = { "seconds", "ns_per_op", "all_seconds",
						   "all_ns_per_op", "mem_per_data" };

	CHECK_EQ(sweep((char *[]){ "rwbench", "--set", "bench=vector", "--var", "only=copy,rewired",
				   "--size", "log=10,11", "--reps", "2", "--warmup", "0", NULL },
		       tpath("vec.csv"), &t),
		 TEST_PASS);
	for (size_t m = 0; m < sizeof(vec_metrics) / sizeof(vec_metrics[0]); m++) {
		CHECK_EQ(count(&t, "only=copy", vec_metrics[m]), 2 * 2);
		CHECK_EQ(count(&t, "only=rewired", vec_metrics[m]), 2 * 2);
	}
	ruma_exp_table_free(&t);
	CHECK_EQ(sweep((char *[]){ "rwbench", "--set", "bench=partition", "--set", "n=4096",
				   "--var", "only=traditional,mapped", "--size", "partitions=4,16",
				   "--reps", "2", "--warmup", "0", NULL },
		       tpath("part.csv"), &t),
		 TEST_PASS);
	CHECK_EQ(count(&t, "only=mapped", "ns_per_op"), 2 * 2);
	CHECK_EQ(count(&t, NULL, "seconds"), 2 * 2 * 2);
	ruma_exp_table_free(&t);
	if (!ruma_exp_gnuplot_path())
		return TEST_PASS; /* the rows are what the charts are drawn from */
	CHECK_EQ(test_run_cli((char *[]){ NULL, "plot", (char *)tpath("vec.csv"), "--out",
					  (char *)tpath("plots"), NULL },
			      &out, NULL),
		 0);
	free(out);
	CHECK(access(tpath("plots/all/ns_per_op.png"), R_OK) == 0);
	CHECK(access(tpath("plots/all/mem_per_data.png"), R_OK) == 0);
	return TEST_PASS;
}

static int t_art_peer(void)
{
	ruma_exp_table t;
	char peer[600];

	CHECK_EQ(script("judy.sh", "#!/bin/sh\necho \"insert,$1,$RUMA_SEED\"\n"
				   "echo \"memory,insert,footprint=1\"\necho \"lookup,$1,2.5\"\n"),
		 TEST_PASS);
	snprintf(peer, sizeof(peer), "judyl=%s", tpath("judy.sh"));
	CHECK_EQ(sweep((char *[]){ "art", "--peer", peer, "--var", "impl=ruma,judyl", "--var",
				   "alloc=libc,pool", "--set", "preload=none", "--set", "seed=7",
				   "--set", "memory=1", "--set", "lookups=1000", "--size", "n=500",
				   "--reps", "2", "--warmup", "0", NULL },
		       tpath("art.csv"), &t),
		 TEST_PASS);
	CHECK_EQ(count(&t, "impl=judyl,alloc=libc", "insert"), 2);
	CHECK_EQ(count(&t, "impl=judyl,alloc=pool", "lookup"), 2);
	CHECK_EQ(count(&t, "impl=ruma,alloc=pool", "insert_index_bytes"), 2);
	CHECK_EQ(count(&t, "impl=ruma,alloc=libc", "insert_faults"), 2);
	for (size_t i = 0; i < t.n; i++)
		if (!strcmp(t.rows[i].variant, "impl=judyl,alloc=libc") &&
		    !strcmp(t.rows[i].metric, "insert"))
			CHECK(t.rows[i].value == 7); /* the peer saw the key seed */
	ruma_exp_table_free(&t);
	return TEST_PASS;
}

static int t_vmcache_peer(void)
{
	ruma_exp_table t;
	char peer[600];

	CHECK_EQ(script("lmdb.sh", "#!/bin/sh\nmkdir -p \"$1\" && touch \"$1/data.mdb\"\n"
				   "echo ts,tx,rmb,wmb,system,threads,datasize,workload,batch\n"
				   "echo 0,100,1.0,0.0,lmdb,$4,$2,rndread,0\n"
				   "echo 1,300,3.0,0.0,lmdb,$4,$2,rndread,0\n"
				   "echo 2,500,5.0,0.0,lmdb,$4,$2,rndread,0\n"),
		 TEST_PASS);
	snprintf(peer, sizeof(peer), "lmdb=%s", tpath("lmdb.sh"));
	CHECK_EQ(sweep((char *[]){ "vmcache", "--peer", peer, "--var", "impl=ruma,lmdb", "--set",
				   "datasize=2e4", "--set", "threads=1", "--set", "runfor=1",
				   "--set", "load_time=1", "--size", "physgb=0.01", "--reps", "2",
				   "--warmup", "0", NULL },
		       tpath("vm.csv"), &t),
		 TEST_PASS);
	CHECK_EQ(count(&t, "impl=lmdb", "tx"), 2);
	CHECK_EQ(count(&t, "impl=ruma", "tx"), 2);
	CHECK_EQ(count(&t, "impl=ruma", "load"), 2);
	CHECK_EQ(count(&t, "impl=lmdb", "load"), 0);
	for (size_t i = 0; i < t.n; i++)
		if (!strcmp(t.rows[i].variant, "impl=lmdb") && !strcmp(t.rows[i].metric, "tx"))
			CHECK(t.rows[i].value == 400); /* mean of the seconds after the first */
	ruma_exp_table_free(&t);
	DIR *d = opendir(tmpdir);
	CHECK(d);
	for (struct dirent *e; (e = readdir(d));)
		CHECK(strncmp(e->d_name, "ruma-sweep-", 11)); /* store and peer directory gone */
	closedir(d);
	return TEST_PASS;
}

/* The original vmcache takes no arguments, only variables: the fake one
 * fails unless BLOCK is an existing empty file and reports in tx what it got. */
static int t_vmcache_thread_grid(void)
{
	ruma_exp_table t;
	char peer[600];

	CHECK_EQ(script("orig.sh", "#!/bin/sh\n[ -f \"$BLOCK\" ] && [ ! -s \"$BLOCK\" ] || exit 3\n"
				   "echo 1 > \"$BLOCK\"\n"
				   "echo ts,tx,rmb,wmb,system,threads,datasize,workload,batch\n"
				   "echo 0,1,0,0,vmcache,$THREADS,$DATASIZE,rndread,64\n"
				   "echo 1,$((THREADS * 1000 + RNDREAD * 100 + PHYSGB * 10 + RUNFOR)),"
				   "0,0,vmcache,$THREADS,$DATASIZE,rndread,64\n"),
		 TEST_PASS);
	snprintf(peer, sizeof(peer), "orig=%s", tpath("orig.sh"));
	CHECK_EQ(sweep((char *[]){ "vmcache", "--peer", peer, "--var", "impl=ruma,orig", "--size",
				   "threads=1,2", "--set", "workload=rndread", "--set",
				   "datasize=2e4", "--set", "physgb=1", "--set", "virtgb=2",
				   "--set", "runfor=1", "--reps", "2", "--warmup", "0", NULL },
		       tpath("threads.csv"), &t),
		 TEST_PASS);
	CHECK_EQ(count(&t, "impl=ruma", "tx"), 4);
	CHECK_EQ(count(&t, "impl=orig", "tx"), 4);
	for (size_t i = 0; i < t.n; i++)
		if (!strcmp(t.rows[i].variant, "impl=orig") && !strcmp(t.rows[i].metric, "tx"))
			CHECK(t.rows[i].value == t.rows[i].size * 1000 + 100 + 10 + 1);
	ruma_exp_table_free(&t);
	return TEST_PASS;
}

static int t_kv_grid(void)
{
	ruma_exp_table t;
	char *out = NULL;

	CHECK_EQ(sweep((char *[]){ "kv", "--var", "workload=a,e", "--var", "threads=1,2", "--size",
				   "records=1000", "--set", "ops=200", "--set", "memory=32M", "--set",
				   "durability=none", "--reps", "2", "--warmup", "0", NULL },
		       tpath("kv.csv"), &t),
		 TEST_PASS);
	CHECK_EQ(count(&t, NULL, "throughput"), 4 * 2);
	CHECK_EQ(count(&t, NULL, "load"), 4 * 2);
	CHECK_EQ(count(&t, "workload=a,threads=2", "read_p99"), 2);
	CHECK_EQ(count(&t, "workload=a,threads=2", "update_p999"), 2);
	CHECK_EQ(count(&t, "workload=e,threads=1", "scan_p50"), 2);
	CHECK_EQ(count(&t, "workload=e,threads=1", "read_p50"), 0);
	ruma_exp_table_free(&t);
	CHECK_EQ(test_run_cli((char *[]){ NULL, "compare", (char *)tpath("kv.csv"), "--baseline",
					  "workload=a,threads=1", NULL },
			      &out, NULL),
		 0);
	CHECK(out && strstr(out, "throughput (ops/s, higher is better)"));
	CHECK(strstr(out, "read_p99 (s, lower is better)"));
	free(out);
	if (!ruma_exp_gnuplot_path())
		return TEST_PASS;
	CHECK_EQ(test_run_cli((char *[]){ NULL, "plot", (char *)tpath("kv.csv"), "--out",
					  (char *)tpath("kvplots"), NULL },
			      &out, NULL),
		 0);
	free(out);
	CHECK(access(tpath("kvplots/all/throughput.png"), R_OK) == 0);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "commas_in_parentheses", t_commas_in_parentheses },
	{ "micro_methods", t_micro_methods },
	{ "rwbench_plot", t_rwbench_plot },
	{ "art_peer", t_art_peer },
	{ "vmcache_peer", t_vmcache_peer },
	{ "vmcache_thread_grid", t_vmcache_thread_grid },
	{ "kv_grid", t_kv_grid },
};

int main(int argc, char **argv)
{
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_exp_grids_XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	setenv("TMPDIR", tmpdir, 1);
	rc = test_main("exp_grids", cases, TEST_N(cases), argc, argv);
	cleanup();
	return rc;
}
