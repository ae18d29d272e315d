/*
 * test_blobbench.c — `ruma blob` (bench/blob): object contents (a filled
 * object verifies, any changed byte is caught, appends of an object's own
 * stream equal the object put whole, the content checksum), every
 * system's adapter against a model (each get returns the last put byte
 * for byte, through overwrites to other sizes, deletes, appends and a
 * settle: ruma, ruma-read, ruma-rows and files),
 * the accounting (a known write moves /proc/self/io by its size, the
 * files system writes exactly its payload, the store directory's size),
 * a tiny run of each mode with well-formed CSV and result rows, the crash
 * mode surviving kills and power losses (with transactions over several
 * objects too) and catching a system that loses committed objects or
 * leaves such a transaction half done, `ruma sweep blob` turning phases into metrics (and
 * refusing the crash mode), and option errors giving a clear message and exit
 * status 2.
 */
#include "test.h"

#include "bench/blob/blob.h"
#include "bench/common/result.h"
#include "bench/kv/store_dir.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>

static char dir[64];

/* ---- contents ------------------------------------------------------------------ */

static int t_contents(void)
{
	size_t len = 100003;
	unsigned char *a = malloc(len), *b = malloc(len);
	char why[320];
	uint64_t v = 0;
	CHECK(a && b);
	ruma_blob_fill(a, len, 7, 3);
	CHECK_OK(ruma_blob_verify(a, len, 7, true, &v, why, sizeof(why)));
	CHECK_EQ(v, 3);
	CHECK_EQ(ruma_blob_crc(7, 3, len), ruma_crc32c(0, a, len));
	/* an object of another id, or one changed byte, is caught */
	CHECK(ruma_blob_verify(a, len, 8, false, NULL, why, sizeof(why)) == -EIO);
	CHECK(strstr(why, "object 8"));
	a[len / 2] ^= 1;
	CHECK_OK(ruma_blob_verify(a, len, 7, false, NULL, why, sizeof(why))); /* header only */
	CHECK(ruma_blob_verify(a, len, 7, true, NULL, why, sizeof(why)) == -EIO);
	CHECK(strstr(why, "differ"));
	a[len / 2] ^= 1;
	/* pieces at odd offsets make the same bytes */
	for (size_t off = 0; off < len;) {
		size_t n = 1 + (size_t)ruma_rng_below(&test_rng, 4099);
		n = n < len - off ? n : len - off;
		ruma_blob_fill_range(b + off, off, n, 7, 3);
		off += n;
	}
	CHECK(!memcmp(a, b, len));
	free(a);
	free(b);
	return TEST_PASS;
}

/* ---- adapters against a model ---------------------------------------------------- */

#define KEYS 12u
#define MODEL_MAX (8u << 20) /* larger than any object the model test makes */

struct model {
	uint64_t version[KEYS], size[KEYS];
};

static int open_system(const ruma_blob_system *s, const char *sub, void **store, char *path)
{
	char err[512];
	snprintf(path, 256, "%s/%s", dir, sub);
	mkdir(path, 0755);
	ruma_blob_conf c = { .dir = path, .memory = 64u << 20, .sync = true };
	int rc = s->open(&c, store, err, sizeof(err));
	if (rc)
		fprintf(stderr, "  open %s: %s\n", s->name, err);
	return rc;
}

/* Every id read back against the model: the bytes of the version it last
 * got, at its length (want: room for the largest object). */
static int check_all(const ruma_blob_system *s, ruma_blob_thread *th, const struct model *m,
		     unsigned char *want)
{
	for (uint64_t id = 0; id < KEYS; id++) {
		const void *data;
		size_t len;
		int rc = s->get(th, id, &data, &len);
		if (!m->version[id]) {
			CHECK_EQ(rc, RUMA_ENOTFOUND);
			continue;
		}
		if (rc)
			fprintf(stderr, "  %s get %" PRIu64 ": %s\n", s->name, id, th->err);
		CHECK_OK(rc);
		CHECK_EQ(len, m->size[id]);
		ruma_blob_fill(want, len, id, m->version[id]);
		if (memcmp(data, want, len))
			fprintf(stderr, "  %s: object %" PRIu64 " of %zu bytes differs from version %"
				PRIu64 "\n", s->name, id, len, m->version[id]);
		CHECK(!memcmp(data, want, len));
	}
	return TEST_PASS;
}

/* One random operation of the model test. */
static int model_op(const ruma_blob_system *s, ruma_blob_thread *th, struct model *m,
		    unsigned char *buf, uint64_t version)
{
	uint64_t id = ruma_rng_below(&test_rng, KEYS);
	unsigned pick = (unsigned)ruma_rng_below(&test_rng, 4);
	uint64_t size = 1 + ruma_rng_below(&test_rng, 5000) *
				(ruma_rng_below(&test_rng, 4) ? 1 : 50);
	if (pick == 0) {
		int rc = s->del(th, id);
		CHECK_EQ(rc, m->version[id] ? 0 : RUMA_ENOTFOUND);
		m->version[id] = 0;
		return TEST_PASS;
	}
	if (pick == 1 && s->append && m->version[id] && m->size[id] + size <= MODEL_MAX) {
		ruma_blob_fill_range(buf, m->size[id], (size_t)size, id, m->version[id]);
		CHECK_OK(s->append(th, id, buf, (size_t)size));
		m->size[id] += size;
		return TEST_PASS;
	}
	ruma_blob_fill(buf, (size_t)size, id, version);
	bool stream = pick == 2 && s->put_stream;
	CHECK_OK(stream ? s->put_stream(th, id, buf, (size_t)size, 1 + (size_t)size / 3)
			: s->put(th, id, buf, (size_t)size));
	m->version[id] = version;
	m->size[id] = size;
	return TEST_PASS;
}

/* The model test of one system: random operations, reads after each
 * batch, a settle and a reopen in between. */
static int model_system(const ruma_blob_system *s)
{
	char path[256], err[512];
	void *store;
	ruma_blob_thread *th;
	struct model m;
	unsigned char *buf = malloc(300000), *want = malloc(MODEL_MAX);
	memset(&m, 0, sizeof(m));
	CHECK(buf && want);
	CHECK_OK(open_system(s, s->name, &store, path));
	CHECK_OK(s->thread_open(store, &th, err, sizeof(err)));
	for (uint64_t i = 1; i <= 120; i++) {
		CHECK(model_op(s, th, &m, buf, i) == TEST_PASS);
		if (i % 30)
			continue;
		CHECK(check_all(s, th, &m, want) == TEST_PASS);
		s->thread_close(th);
		CHECK_OK(s->settle(store, i % 60 == 0, err, sizeof(err)));
		CHECK_OK(s->thread_open(store, &th, err, sizeof(err)));
		CHECK(check_all(s, th, &m, want) == TEST_PASS);
	}
	s->thread_close(th);
	if (s->check)
		CHECK_OK(s->check(store, err, sizeof(err)));
	CHECK_OK(s->close(store, err, sizeof(err)));
	free(buf);
	free(want);
	return TEST_PASS;
}

static int t_adapters_model(void)
{
	for (size_t i = 0; ruma_blob_systems[i]; i++) {
		CHECK(model_system(ruma_blob_systems[i]) == TEST_PASS);
		printf("    %s: every get returned the last put\n", ruma_blob_systems[i]->name);
	}
	return TEST_PASS;
}

/* ---- accounting ------------------------------------------------------------------ */

static int t_io_accounting(void)
{
	char path[256], dev[128];
	ruma_blob_io a, b;
	snprintf(path, sizeof(path), "%s/known", dir);
	unsigned char *buf = calloc(1, 1 << 20);
	CHECK(buf);
	bool has_dev = ruma_blob_dev_stat(dir, dev, sizeof(dev));
	CHECK_OK(ruma_blob_io_read(has_dev ? dev : NULL, &a));
	CHECK_EQ(a.dev_ok, has_dev);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, buf, 1 << 20), 1 << 20);
	CHECK_OK(fdatasync(fd));
	close(fd);
	CHECK_OK(ruma_blob_io_read(has_dev ? dev : NULL, &b));
	uint64_t d = b.proc_write - a.proc_write;
	if (d == 0)
		SKIP("/proc/self/io counts no writes here");
	CHECK(d >= 1u << 20 && d < (1u << 20) + (64u << 10));
	if (has_dev)
		CHECK(b.dev_write - a.dev_write >= 1u << 20);
	uint64_t bytes;
	CHECK_OK(ruma_blob_dir_bytes(dir, &bytes));
	CHECK(bytes >= 1u << 20);
	unlink(path);
	free(buf);
	return TEST_PASS;
}

/* ---- runs through the CLI ----------------------------------------------------------- */

static ruma_result_row *rows;
static size_t nrows;

/* The value of metric for op (and size, unless NULL) in the rows read
 * last; NAN when absent. */
static double metric_of(const char *name, const char *op, const char *size)
{
	char buf[64], sz[32];
	for (size_t i = 0; i < nrows; i++)
		if (!strcmp(rows[i].metric, name) &&
		    ruma_result_param(&rows[i], "op", buf, sizeof(buf)) && !strcmp(buf, op) &&
		    (!size || (ruma_result_param(&rows[i], "size", sz, sizeof(sz)) &&
			       !strcmp(sz, size))))
			return rows[i].value;
	return NAN;
}

static double metric(const char *name, const char *op)
{
	return metric_of(name, op, NULL);
}

/* Run `ruma blob` with the arguments (NULL-terminated) and --result; the
 * exit status, stdout and stderr (caller frees), the rows read. */
static int run_blob(char **out, char **err, ...)
{
	char *argv[48], res[128];
	va_list ap;
	va_start(ap, err);
	int argc = test_argv(argv + 1, 40, "blob", ap) + 1;
	va_end(ap);
	argv[0] = NULL; /* test_run_cli puts the binary there */
	snprintf(res, sizeof(res), "%s/result.csv", dir);
	char *extra[] = { "--dir", dir, "--seed", "7", "--result", res };
	for (size_t i = 0; i < TEST_N(extra); i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	int st = test_run_cli(argv, out, err);
	free(rows);
	rows = NULL;
	nrows = 0;
	if (st == 0 && ruma_result_read(res, &rows, &nrows))
		return -1;
	return st;
}

/* Every CSV line has the header's columns; the ops column in order. */
static int csv_ok(const char *out, const char *const *ops, size_t nops)
{
	const char *line = out;
	size_t cols = 0, row = 0;
	CHECK(!strncmp(out, "system,mode,op,size,", 20));
	for (const char *p = out; *p && *p != '\n'; p++)
		cols += *p == ',';
	while ((line = strchr(line, '\n')) && line[1]) {
		line++;
		size_t c = 0;
		for (const char *p = line; *p && *p != '\n'; p++)
			c += *p == ',';
		CHECK_EQ(c, cols);
		const char *op = strchr(strchr(line, ',') + 1, ',') + 1;
		CHECK(row < nops && !strncmp(op, ops[row], strlen(ops[row])));
		row++;
	}
	CHECK_EQ(row, nops);
	return TEST_PASS;
}

static int t_ops_run(void)
{
	static const char *const ops[] = { "put", "get", "overwrite", "delete",
					   "put", "get", "overwrite", "delete" };
	static const char *const systems[] = { "ruma-rows", "files", "ruma", "ruma-read" };
	for (size_t i = 0; i < TEST_N(systems); i++) {
		char *out = NULL, *err = NULL;
		/* both kinds of buffer, each system with one */
		int st = run_blob(&out, &err, "--system", systems[i], "--sizes", "33000,100K",
				  "--objects", "5", "--threads", "2", "--verify", "--buffers",
				  i % 2 ? "small" : "huge", NULL);
		if (st)
			fprintf(stderr, "  %s: status %d: %s\n", systems[i], st, err);
		CHECK_EQ(st, 0);
		CHECK(csv_ok(out, ops, TEST_N(ops)) == TEST_PASS);
		CHECK_EQ(metric("objects", "get"), 5);
		CHECK(metric("p50", "put") <= metric("p99", "put"));
		CHECK_EQ(metric("live_bytes", "put"), 5 * 33000);
		CHECK(metric("store_bytes", "put") >= 5 * 33000);
		/*
		 * files write their payload of whole pages (102400 = 25 x 4 KiB), each
		 * page once on a quiet machine.  /proc/self/io counts a page each time
		 * it is dirtied, and under write-back pressure from other processes the
		 * kernel may clean a page between two copies into it, so it is written
		 * (and counted) twice: 1.008 and 1.032 seen beside a large `dd`.
		 */
		double wa = metric_of("wa_proc", "put", "102400");
		printf("    %s: put %.3f bytes written per payload byte\n", systems[i], wa);
		CHECK(wa >= 1.0);
		if (!strcmp(systems[i], "files"))
			CHECK(wa < 1.25);
		free(out);
		free(err);
	}
	return TEST_PASS;
}

static int t_churn_run(void)
{
	static const char *const ops[] = { "churn", "probe-churned", "probe-fresh" };
	char *out = NULL, *err = NULL;
	int st = run_blob(&out, &err, "--system", "ruma-rows", "--mode", "churn", "--churn-ops",
			  "60", "--churn-keys", "10", "--max-size", "40K", "--probe-size", "50K",
			  "--probes", "3", "--threads", "2", "--durability", "none", NULL);
	if (st)
		fprintf(stderr, "  status %d: %s\n", st, err);
	CHECK_EQ(st, 0);
	CHECK(csv_ok(out, ops, TEST_N(ops)) == TEST_PASS);
	CHECK_EQ(metric("objects", "churn"), 60);
	CHECK(metric("probe_ratio", "churn") > 0);
	CHECK(strstr(err, "its time on a fresh store"));
	free(out);
	free(err);
	return TEST_PASS;
}

/* A few kills and power losses of a system that has a crash mode, with
 * transactions of up to batch objects among the operations. */
static int crash_system(const char *sys, const char *kills, const char *losses, const char *batch)
{
	char *out = NULL, *err = NULL, want[64];
	int st = run_blob(&out, &err, "--system", sys, "--mode", "crash", "--kills", kills,
			  "--powerloss", losses, "--churn-keys", "12", "--max-size", "64K",
			  "--max-run", "300", "--batch", batch, NULL);
	if (st)
		fprintf(stderr, "  %s: status %d: %s\n", sys, st, err);
	CHECK_EQ(st, 0);
	snprintf(want, sizeof(want), "%s kills and %s power losses survived", kills, losses);
	CHECK(strstr(err, want));
	CHECK_EQ(metric("rounds", "crash"), atoi(kills) + atoi(losses));
	CHECK(metric("committed", "crash") > 0);
	printf("    %s: %.0f committed operations checked through %d crashes\n", sys,
	       metric("committed", "crash"), atoi(kills) + atoi(losses));
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_crash_run(void)
{
	CHECK(crash_system("ruma", "3", "2", "0") == TEST_PASS);
	CHECK(crash_system("ruma", "2", "1", "8") == TEST_PASS);
	CHECK(crash_system("ruma-rows", "2", "1", "8") == TEST_PASS);
	return TEST_PASS;
}

/* `ruma sweep blob`: each system's phases become <op>_<metric> rows; a crash
 * run is refused before anything runs. */
static int t_sweep(void)
{
	char out[128], sdir[128], *err = NULL;
	snprintf(out, sizeof(out), "%s/sweep.csv", dir);
	snprintf(sdir, sizeof(sdir), "dir=%s", dir);
	char *argv[] = { NULL, "sweep", "blob", "--var", "store=ruma-rows,files", "--size",
			 "size=40K", "--set", "objects=3", "--set", "ops=put,get", "--set", sdir,
			 "--reps", "1", "--warmup", "0", "--quiet", "--force", "--out", out, NULL };
	int st = test_run_cli(argv, NULL, &err);
	if (st)
		fprintf(stderr, "  status %d: %s\n", st, err);
	CHECK_EQ(st, 0);
	free(err);
	char *csv = test_slurp(out);
	CHECK(csv);
	CHECK(strstr(csv, "blob,store=ruma-rows,ruma-rows,") && strstr(csv, "blob,store=files,files,"));
	CHECK(strstr(csv, ",put_objects_per_s,") && strstr(csv, ",get_p50,s,"));
	CHECK(strstr(csv, ",put_wa_proc,ratio,") && strstr(csv, ",put_space_amp,ratio,"));
	CHECK(!strstr(csv, ",failed,"));
	free(csv);
	char *crash[] = { NULL, "sweep", "blob", "--var", "store=ruma-rows,files", "--size",
			  "size=40K", "--set", "mode=crash", "--force", "--out", out, NULL };
	CHECK_EQ(test_run_cli(crash, NULL, &err), 2);
	CHECK(err && strstr(err, "a test, not a measurement"));
	free(err);
	unlink(out);
	return TEST_PASS;
}

/* ---- the crash oracle catches a lost object ------------------------------------------ */

static ruma_blob_system liar;
static unsigned liar_puts;

/* ruma-rows, except that every second put says it committed and stores
 * nothing (and a delete of what is not there says it deleted it). */
static int liar_put(ruma_blob_thread *th, uint64_t id, const void *data, size_t len)
{
	if (++liar_puts % 2 == 0)
		return 0;
	return ruma_blob_find_system("ruma-rows")->put(th, id, data, len);
}

static int liar_del(ruma_blob_thread *th, uint64_t id)
{
	int rc = ruma_blob_find_system("ruma-rows")->del(th, id);
	return rc == RUMA_ENOTFOUND ? 0 : rc;
}

/* The crash mode of argv (NULL-terminated) run in this process with the
 * system of the options replaced by liar as patch makes it; it must exit 1
 * with want in its messages (stderr goes to a file of the run). */
static int crash_caught(char **argv, void (*patch)(ruma_blob_system *s), const char *want)
{
	ruma_blob_opts o;
	char err[512], path[128];
	int argc = 0;
	while (argv[argc])
		argc++;
	CHECK_OK(ruma_blob_parse(argc, argv, NULL, &o, err, sizeof(err)));
	liar = *o.sys;
	patch(&liar);
	o.sys = &liar;
	snprintf(path, sizeof(path), "%s/liar.err", dir);
	CHECK(freopen(path, "w", stderr));
	int st = ruma_blob_run(&o);
	fflush(stderr);
	char *text = test_slurp(path);
	CHECK(text);
	if (st != 1 || !strstr(text, want))
		fprintf(stdout, "  stderr of the run: %s\n", text);
	CHECK_EQ(st, 1);
	CHECK(strstr(text, want));
	free(text);
	return TEST_PASS;
}

static void patch_liar(ruma_blob_system *s)
{
	s->put = liar_put;
	s->del = liar_del;
}

static int crash_liar(void)
{
	char *argv[] = { "blob", "--system", "ruma-rows", "--mode", "crash", "--kills", "2",
			 "--powerloss", "0", "--churn-keys", "6", "--max-size", "8K", "--max-run",
			 "500", "--dir", dir, "--quiet", NULL };
	return crash_caught(argv, patch_liar, "; committed: version");
}

static int t_crash_catches_loss(void)
{
	return test_in_child(crash_liar, 120);
}

/* ruma-rows, except that a transaction over several objects commits each
 * object on its own: a kill in its middle leaves part of it. */
static int split_batch(ruma_blob_thread *th, size_t n, const uint64_t *ids,
		       const void *const *data, const size_t *lens)
{
	const ruma_blob_system *r = ruma_blob_find_system("ruma-rows");
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = data[i] ? r->put(th, ids[i], data[i], lens[i]) : r->del(th, ids[i]);
	return rc;
}

static void patch_split(ruma_blob_system *s)
{
	s->batch = split_batch;
}

static int crash_split(void)
{
	char *argv[] = { "blob", "--system", "ruma-rows", "--mode", "crash", "--kills", "6",
			 "--powerloss", "0", "--batch", "300", "--churn-keys", "400", "--max-size",
			 "2K", "--max-run", "500", "--dir", dir, "--quiet", NULL };
	return crash_caught(argv, patch_split, "of the transaction in flight hold its new state");
}

/* A transaction over several objects found half done after a crash is caught. */
static int t_crash_catches_partial(void)
{
	return test_in_child(crash_split, 120);
}

/* ---- options ------------------------------------------------------------------------ */

static int parse_err(const char *a1, const char *a2, const char *want)
{
	char *argv[] = { "blob", (char *)a1, (char *)a2, NULL };
	ruma_blob_opts o;
	char err[512];
	int rc = ruma_blob_parse(a2 ? 3 : 2, argv, NULL, &o, err, sizeof(err));
	return test_refused("blob", a1, a2, rc, err, want);
}

static int t_options(void)
{
	char *argv[] = { "blob", "--system", "files", "--sizes", "1K,2M", "--ops", "get,put",
			 "--durability", "none", "--cache", "warm", "--threads", "2",
			 "--buffers", "small", NULL };
	ruma_blob_opts o;
	char err[512];
	CHECK_OK(ruma_blob_parse((int)TEST_N(argv) - 1, argv, NULL, &o, err, sizeof(err)));
	CHECK(!strcmp(o.sys->name, "files"));
	CHECK_EQ(o.nsizes, 2);
	CHECK_EQ(o.sizes[1], 2u << 20);
	CHECK_EQ(o.ops, (1u << RUMA_BLOB_PUT) | (1u << RUMA_BLOB_GET));
	CHECK(!o.sync && !o.cold && o.threads == 2 && !o.huge_buffers);
	char *defaults[] = { "blob", NULL };
	CHECK_OK(ruma_blob_parse(1, defaults, NULL, &o, err, sizeof(err)));
	CHECK(!strcmp(o.sys->name, "ruma") && o.sync && o.cold && o.nsizes == 3 && o.huge_buffers);
	CHECK(parse_err("--system", "nosuch", "unknown (built: ruma, ruma-read, ruma-rows, files)") ==
	      TEST_PASS);
	CHECK(parse_err("--sizes", "1K,x", "'x' is no size") == TEST_PASS);
	CHECK(parse_err("--sizes", "2G", "1 byte .. 1 GiB") == TEST_PASS);
	CHECK(parse_err("--ops", "put,read", "'read' is no operation") == TEST_PASS);
	CHECK(parse_err("--mode", "fast", "expected ops, churn or crash") == TEST_PASS);
	CHECK(parse_err("--durability", "maybe", "expected sync or none") == TEST_PASS);
	CHECK(parse_err("--buffers", "big", "expected huge or small") == TEST_PASS);
	CHECK(parse_err("--threads", "0", "out of range") == TEST_PASS);
	CHECK(parse_err("--bogus", NULL, "unknown option '--bogus'") == TEST_PASS);
	char *stream[] = { "blob", "--system", "files", "--put-mode", "stream", NULL };
	CHECK(ruma_blob_parse(5, stream, NULL, &o, err, sizeof(err)) == RUMA_EPARSE);
	CHECK(strstr(err, "files has no streaming interface"));
	char *batch[] = { "blob", "--system", "files", "--batch", "4", NULL };
	CHECK(ruma_blob_parse(5, batch, NULL, &o, err, sizeof(err)) == RUMA_EPARSE);
	CHECK(strstr(err, "files has no transaction over several objects"));
	char *crash[] = { "blob", "--system", "files", "--mode", "crash", NULL };
	CHECK(ruma_blob_parse(5, crash, NULL, &o, err, sizeof(err)) == RUMA_EPARSE);
	CHECK(strstr(err, "cannot be crash-tested"));
	/* through the binary: the message on stderr, exit status 2 */
	char *cli[] = { NULL, "blob", "--sizes", "0", NULL };
	char *e = NULL;
	CHECK_EQ(test_run_cli(cli, NULL, &e), 2);
	CHECK(e && strstr(e, "ruma blob: --sizes '0'"));
	free(e);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "contents", t_contents },
	{ "adapters_model", t_adapters_model },
	{ "io_accounting", t_io_accounting },
	{ "ops_run", t_ops_run },
	{ "churn_run", t_churn_run },
	{ "crash_run", t_crash_run },
	{ "crash_catches_loss", t_crash_catches_loss },
	{ "crash_catches_partial", t_crash_catches_partial },
	{ "sweep", t_sweep },
	{ "options", t_options },
};

int main(int argc, char **argv)
{
	snprintf(dir, sizeof(dir), "/tmp/ruma-test-blob-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	int st = test_main("blobbench", cases, TEST_N(cases), argc, argv);
	if (ruma_kv_store_dir_remove(dir)) /* what the cases left (stores, result file) */
		fprintf(stderr, "cannot remove %s\n", dir);
	free(rows);
	return st;
}
