/*
 * test_vmcache.c — the `ruma vmcache` command: a tiny random-read run in
 * and out of memory (header, rows, exit 0, --check), --keep reusing the
 * loaded store, a damaged page caught by its checksum, flags winning over the
 * environment, bad configurations (PHYSGB above the available memory too),
 * the store across runs (kill -9 during the load and during a --keep run
 * refused on reopen; SIGTERM closing cleanly with exit 143; a second run on
 * a store in use refused; a non-store file not overwritten without --force;
 * no "loaded" marker when one loader thread failed);
 * bad configurations are refused with exit status 2 and a message;
 * ruma_vmcache_parse called directly (environment, flags winning, the
 * durability modes, refusals with their message); the free-space
 * pre-flight counts the space of a kept store and of its log; a kept store
 * whose catalog slot is lost is refused, not loaded again.
 */
#include "test.h"

#include "btree/btree_int.h"
#include "os/os.h"
#include "bench/vmcache/driver.h"
#include "bench/vmcache/workload.h"

#include <ruma/btree.h>

#include "page0_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char dir[64];
static char store[128];

static const char *const vars[] = { "BLOCK", "VIRTGB", "PHYSGB", "BATCH", "RUNFOR", "RNDREAD",
				    "THREADS", "DATASIZE", "EXMAP", "FORCE", "INFLIGHT" };

static void env_reset(void)
{
	for (size_t i = 0; i < TEST_N(vars); i++)
		unsetenv(vars[i]);
	test_setenv_list("BLOCK", store, "VIRTGB", "0.5", "PHYSGB", "0.01", "RNDREAD", "1", "RUNFOR",
			 "1", "DATASIZE", "20000", "THREADS", "2", (char *)NULL);
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

static int count_rows(const char *out)
{
	int rows = 0;
	for (const char *p = out; (p = strstr(p, ",ruma,")); p++)
		rows++;
	return rows;
}

/* Run `ruma vmcache a1 a2 a3 a4` (a NULL ends them) into r: its status. */
static int vm(test_cli *r, const char *a1, const char *a2, const char *a3, const char *a4)
{
	char *argv[8] = { NULL, (char *)"vmcache", (char *)a1, (char *)a2, (char *)a3, (char *)a4,
			  NULL };
	return test_cli_argv(r, argv);
}

static int t_tiny_run(void)
{
	test_cli r = { 0 };
	env_reset();
	vm(&r, "--check", NULL, NULL, NULL);
	CHECK(test_cli_ok(&r));
	CHECK(!strncmp(r.out, "ts,tx,rmb,wmb,system,threads,datasize,workload,batch\n", 53));
	CHECK(count_rows(r.out) >= 1);
	CHECK(strstr(r.out, "0,") == r.out + 53 || strstr(r.out, "\n0,"));
	CHECK(strstr(r.out, ",ruma,2,20000,rndread,64"));
	CHECK(strstr(r.err, "physgb:0.01"));
	CHECK(strstr(r.err, "space: "));
	CHECK(strstr(r.err, "rndread check: 20000 tuples"));
	test_cli_free(&r);
	return TEST_PASS;
}

static int t_out_of_memory(void)
{
	test_cli r = { 0 };
	env_reset();
	setenv("DATASIZE", "60000", 1);
	setenv("PHYSGB", "0.002", 1); /* 512 pages, data ~ 4000 pages */
	setenv("BATCH", "16", 1);
	vm(&r, "--wait", "futex", "--write", "uring");
	CHECK(test_cli_ok(&r));
	CHECK(count_rows(r.out) >= 1);
	CHECK(strstr(r.err, "wait:futex"));
	CHECK(strstr(r.err, " 0 failures"));
	CHECK(!strstr(r.err, " 0 pages read,")); /* it really read pages back */
	test_cli_free(&r);
	return TEST_PASS;
}

/* INFLIGHT=16: batched lookups out of memory, the same CSV, no failures. */
static int t_inflight(void)
{
	test_cli r = { 0 };
	env_reset();
	setenv("DATASIZE", "60000", 1);
	setenv("PHYSGB", "0.002", 1);
	setenv("INFLIGHT", "16", 1);
	vm(&r, "--check", NULL, NULL, NULL);
	unsetenv("INFLIGHT");
	CHECK(test_cli_ok(&r));
	CHECK(!strncmp(r.out, "ts,tx,rmb,wmb,system,threads,datasize,workload,batch\n", 53));
	CHECK(strstr(r.out, ",ruma,2,60000,rndread,64"));
	CHECK(strstr(r.err, "inflight:16"));
	CHECK(strstr(r.err, " 0 failures"));
	CHECK(!strstr(r.err, " 0 pages read,"));
	test_cli_free(&r);
	return TEST_PASS;
}

static int t_keep(void)
{
	test_cli r = { 0 };
	env_reset();
	setenv("DATASIZE", "5000", 1);
	CHECK_EQ(vm(&r, NULL, NULL, NULL, NULL), 0);
	CHECK_EQ(vm(&r, "--keep", "--check", NULL, NULL), 0);
	CHECK(strstr(r.err, "load: skipped"));
	CHECK(strstr(r.err, "rndread check: 5000 tuples"));
	setenv("DATASIZE", "6000", 1);
	CHECK_EQ(vm(&r, "--keep", NULL, NULL, NULL), 2);
	CHECK(strstr(r.err, "holds 5000 tuples"));
	test_cli_free(&r);
	return TEST_PASS;
}

/* A kept store whose catalog slot in page 0 was zeroed (checksum
 * recomputed) is refused (exit 1, "catalog is damaged"), not loaded again
 * on top of its pages; with the slot back, --keep --check passes. */
static int t_keep_damaged_catalog(void)
{
	test_cli r = { 0 };
	struct bm_meta_hdr h, saved;
	uint64_t w0;
	env_reset();
	setenv("DATASIZE", "5000", 1);
	CHECK_EQ(vm(&r, NULL, NULL, NULL, NULL), 0);
	CHECK_OK(page0_read(store, &h, &w0));
	saved = h;
	h.slots[RUMA_BTREE_META_SLOT] = 0;
	CHECK_OK(page0_craft(store, h, w0));
	CHECK_EQ(vm(&r, "--keep", NULL, NULL, NULL), 1);
	CHECK(strstr(r.err, "catalog is damaged") && !strstr(r.err, "\nload"));
	CHECK_OK(page0_craft(store, saved, w0));
	CHECK_EQ(vm(&r, "--keep", "--check", NULL, NULL), 0);
	CHECK(strstr(r.err, "load: skipped"));
	test_cli_free(&r);
	return TEST_PASS;
}

static int t_flags_win(void)
{
	test_cli r = { 0 };
	env_reset();
	setenv("THREADS", "0", 1); /* bad, but the flag overrides it */
	setenv("RNDREAD", "0", 1);
	CHECK_EQ(vm(&r, "--threads", "1", "--workload", "rndread"), 0);
	CHECK(strstr(r.out, ",ruma,1,20000,rndread,"));
	test_cli_free(&r);
	return TEST_PASS;
}

/* The value rndread stores for key k (same derivation as bench/vmcache/rndread.c). */
static void rnd_payload(uint64_t k, unsigned char out[120])
{
	uint64_t x = k * 0x9E3779B97F4A7C15ull + 0x1234567ull;
	for (unsigned i = 0; i < 15; i++) {
		uint64_t z = (x += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		z ^= z >> 31;
		memcpy(out + i * 8, &z, 8);
	}
}

/* A value damaged on disk is caught by the lookup check: exit status 1. */
static int t_wrong_data(void)
{
	test_cli r = { 0 };
	unsigned char want[120], page[4096];
	env_reset();
	setenv("DATASIZE", "2000", 1);
	setenv("THREADS", "1", 1);
	CHECK_EQ(vm(&r, NULL, NULL, NULL, NULL), 0);
	rnd_payload(7, want);
	int fd = open(store, O_RDWR);
	CHECK(fd >= 0);
	bool damaged = false;
	for (off_t off = 0; !damaged && pread(fd, page, sizeof(page), off) == (ssize_t)sizeof(page);
	     off += (off_t)sizeof(page)) {
		for (size_t i = 0; i + sizeof(want) <= sizeof(page); i++)
			if (!memcmp(page + i, want, sizeof(want))) {
				unsigned char b = page[i + 60] ^ 0xff;
				CHECK(pwrite(fd, &b, 1, off + (off_t)i + 60) == 1);
				damaged = true;
				break;
			}
	}
	close(fd);
	CHECK(damaged);
	int st = vm(&r, "--keep", NULL, NULL, NULL);
	/* the page checksum catches the flipped byte: an error, never a wrong value */
	CHECK_EQ(st, 1);
	CHECK(strstr(r.err, "checksum mismatch"));
	CHECK(!strstr(r.err, "wrong value"));
	test_cli_free(&r);
	return TEST_PASS;
}

/* ---- the store across runs: kill -9, SIGTERM, a second run, clobbering ---- */

struct bg {
	pid_t pid;
	char opath[160], epath[160];
};

/* Start `ruma vmcache a1 a2 a3` in the background, output in files. */
static int bg_start(struct bg *b, const char *a1, const char *a2, const char *a3)
{
	char *argv[8] = { NULL, (char *)"vmcache", (char *)a1, (char *)a2, (char *)a3, NULL };
	snprintf(b->opath, sizeof(b->opath), "%s/bg.out", dir);
	snprintf(b->epath, sizeof(b->epath), "%s/bg.err", dir);
	int ofd = open(b->opath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int efd = open(b->epath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int r = ofd >= 0 && efd >= 0 ? test_spawn_cli(argv, ofd, efd, &b->pid) : -1;
	if (ofd >= 0)
		close(ofd);
	if (efd >= 0)
		close(efd);
	return r;
}

/* Wait (at most 60 s) until the background run's stdout holds the CSV
 * header: the timed run has begun. */
static bool bg_running(struct bg *b)
{
	for (int i = 0; i < 6000; i++) {
		char *out = test_slurp(b->opath);
		bool yes = out && strstr(out, "ts,tx,");
		free(out);
		if (yes)
			return true;
		if (waitpid(b->pid, NULL, WNOHANG) == b->pid)
			return false;
		usleep(10000);
	}
	return false;
}

/* Page 0 of the store records that it is in use ("OPEN" in its state field). */
static bool store_marked_open(void)
{
	char hdr[4096];
	FILE *f = fopen(store, "rb");
	size_t n = f ? fread(hdr, 1, sizeof(hdr), f) : 0;

	if (f)
		fclose(f);
	return n == sizeof(hdr) && memmem(hdr, sizeof(hdr), "OPEN", 4) != NULL;
}

/* Wait until the store, marked open, has grown past bytes while the run loads
 * (the file is sized before it is marked: size alone is no sign of a load). */
static bool store_grown(struct bg *b, off_t bytes)
{
	for (int i = 0; i < 6000; i++) {
		struct stat st;
		if (stat(store, &st) == 0 && st.st_size >= bytes && store_marked_open())
			return true;
		if (waitpid(b->pid, NULL, WNOHANG) == b->pid)
			return false;
		usleep(10000);
	}
	return false;
}

static int expect_unclean(void)
{
	test_cli r = { 0 };
	int st = vm(&r, "--keep", NULL, NULL, NULL);
	if (st != 2 || !r.err || !strstr(r.err, "not closed cleanly"))
		fprintf(stderr, "  reopen: status %d, stderr: %s\n", st, r.err ? r.err : "");
	CHECK_EQ(st, 2);
	CHECK(strstr(r.err, "not closed cleanly") && strstr(r.err, "recreate"));
	test_cli_free(&r);
	return TEST_PASS;
}

/* kill -9 during the load of a fresh run and during a --keep run: the next
 * --keep run is refused (exit 2) instead of trusting stale metadata. */
static int t_kill9(void)
{
	struct bg b;
	test_cli r = { 0 };

	env_reset();
	setenv("DATASIZE", "400000", 1);
	setenv("RUNFOR", "60", 1);
	unlink(store); /* a store left by an earlier case would look grown at once */
	CHECK(bg_start(&b, NULL, NULL, NULL) == 0);
	bool loading = store_grown(&b, 8 << 20);
	kill(b.pid, SIGKILL);
	CHECK_EQ(test_wait_status(b.pid), 128 + SIGKILL);
	CHECK(loading);
	env_reset();
	setenv("DATASIZE", "400000", 1);
	if (expect_unclean() != TEST_PASS)
		return TEST_FAIL;

	env_reset();
	CHECK_EQ(vm(&r, NULL, NULL, NULL, NULL), 0);
	setenv("RUNFOR", "60", 1);
	CHECK(bg_start(&b, "--keep", NULL, NULL) == 0);
	bool running = bg_running(&b);
	kill(b.pid, SIGKILL);
	CHECK_EQ(test_wait_status(b.pid), 128 + SIGKILL);
	CHECK(running);
	env_reset();
	test_cli_free(&r);
	return expect_unclean();
}

/* SIGTERM stops a run with a clean close (exit 143) and the store is used
 * again; while it runs, a second run on the store is refused (exit 2) and
 * does not truncate it. */
static int t_sigterm_and_lock(void)
{
	struct bg b;
	test_cli r = { 0 };
	struct stat st0, st1;

	env_reset();
	CHECK_EQ(vm(&r, NULL, NULL, NULL, NULL), 0);
	setenv("RUNFOR", "60", 1);
	CHECK(bg_start(&b, "--keep", NULL, NULL) == 0);
	bool running = bg_running(&b);
	CHECK(stat(store, &st0) == 0);
	setenv("RUNFOR", "1", 1);
	int fresh = vm(&r, NULL, NULL, NULL, NULL);
	bool named = r.err && strstr(r.err, "in use") && strstr(r.err, "process ");
	int kept = vm(&r, "--keep", NULL, NULL, NULL);
	CHECK(stat(store, &st1) == 0);
	kill(b.pid, SIGTERM);
	CHECK_EQ(test_wait_status(b.pid), 128 + SIGTERM);
	CHECK(running);
	CHECK_EQ(fresh, 2);
	CHECK(named);
	CHECK_EQ(kept, 2);
	CHECK(st1.st_size >= st0.st_size);
	char *berr = test_slurp(b.epath);
	CHECK(berr && strstr(berr, "closed cleanly"));
	free(berr);
	CHECK_EQ(vm(&r, "--keep", "--check", NULL, NULL), 0);
	CHECK(strstr(r.err, "load: skipped") && strstr(r.err, "rndread check: 20000 tuples"));
	test_cli_free(&r);
	return TEST_PASS;
}

/* Without --keep, a file that is not a ruma store is not overwritten. */
static int t_not_clobbered(void)
{
	test_cli r = { 0 };
	char txt[160];
	const char text[] = "precious notes\n";

	snprintf(txt, sizeof(txt), "%s/notes.txt", dir);
	FILE *f = fopen(txt, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
	env_reset();
	setenv("BLOCK", txt, 1);
	CHECK_EQ(vm(&r, NULL, NULL, NULL, NULL), 2);
	CHECK(strstr(r.err, "not a ruma") && strstr(r.err, "--force"));
	char *now = test_slurp(txt);
	CHECK(now && !strcmp(now, text));
	free(now);
	CHECK_EQ(vm(&r, "--force", NULL, NULL, NULL), 0);
	unlink(txt);
	test_cli_free(&r);
	return TEST_PASS;
}

/*
 * The random-read loader: one of two load shares fails (an injected full
 * disk while the file grows), the other succeeded.  The driver then does not
 * call load_done, so the store must hold no "loaded" marker: the next --keep
 * setup refuses it as an unfinished load (the CLI says so once).
 */
static int t_partial_load(void)
{
	const ruma_vmcache_workload *wl = &ruma_vmcache_rndread_workload;
	ruma_bm_config c;
	ruma_vmcache_ctx ctx;

	ruma_bm_config_default(&c);
	c.path = store;
	c.virt_bytes = 64ull << 20;
	c.phys_bytes = 1ull << 20;
	c.max_threads = 4;
	c.fresh = true;
	c.message = quiet;
	memset(&ctx, 0, sizeof(ctx));
	ctx.datasize = 20000;
	ctx.threads = 2;
	CHECK_OK(ruma_bm_open(&c, &ctx.bm));
	CHECK_OK(wl->setup(&ctx));
	CHECK_OK(wl->load(&ctx, 0, 2));
	ruma_os_inject(RUMA_SYS_FALLOCATE, 1, ENOSPC, true);
	int r = wl->load(&ctx, 1, 2);
	ruma_os_inject_clear();
	CHECK_EQ(r, -ENOSPC);
	wl->teardown(&ctx);
	CHECK_OK(ruma_bm_close(ctx.bm));

	c.fresh = false;
	ctx.keep = true;
	CHECK_OK(ruma_bm_open(&c, &ctx.bm));
	r = wl->setup(&ctx);
	wl->teardown(&ctx);
	CHECK_OK(ruma_bm_close(ctx.bm));
	CHECK(!ctx.loaded);
	CHECK_EQ(r, RUMA_EBADCOMBO);
	/* the CLI says why once, without a generic "setup failed" after it */
	test_cli cli = { 0 };
	env_reset();
	setenv("VIRTGB", "0.0625", 1);
	CHECK_EQ(vm(&cli, "--keep", NULL, NULL, NULL), 2);
	CHECK(strstr(cli.err, "unfinished load") && !strstr(cli.err, "setup failed"));
	test_cli_free(&cli);
	return TEST_PASS;
}

static bool count_tree(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	(*(int *)ctx)++;
	return true;
}

/* A store holding a user's tree is not a benchmark's: --keep refuses it and
 * writes nothing into it (no rndread tree appears). */
static int t_foreign_tree(void)
{
	ruma_bm_config c;
	ruma_bm *bm;
	ruma_btree *t;
	test_cli r = { 0 };
	int trees = 0;

	ruma_bm_config_default(&c);
	c.path = store;
	c.virt_bytes = 64ull << 20;
	c.phys_bytes = 1ull << 20;
	c.fresh = true;
	c.message = quiet;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_create(bm, "users", &t));
	CHECK_OK(ruma_btree_insert(t, "alice", 5, "1", 1));
	ruma_btree_release(t);
	CHECK_OK(ruma_bm_close(bm));
	env_reset();
	CHECK_EQ(vm(&r, "--keep", NULL, NULL, NULL), 2);
	CHECK(strstr(r.err, "holds the tree 'users', which is not the rndread workload's"));
	c.fresh = false;
	CHECK_OK(ruma_bm_open(&c, &bm));
	CHECK_OK(ruma_btree_list(bm, count_tree, &trees));
	CHECK_EQ(trees, 1);
	CHECK_EQ(ruma_btree_open(bm, "rndread", &t), RUMA_ENOTFOUND);
	CHECK_OK(ruma_bm_close(bm));
	test_cli_free(&r);
	return TEST_PASS;
}

struct bad_case {
	const char *var, *val; /* environment change */
	const char *a1, *a2;   /* arguments */
	const char *msg;       /* expected in stderr */
};

static int t_bad_configs(void)
{
	char blocked[160];
	snprintf(blocked, sizeof(blocked), "%s/nonexistent/store", dir);
	const struct bad_case cases[] = {
		{ "PHYSGB", "1", NULL, NULL, "exceeds VIRTGB" },
		{ "PHYSGB", "junk", NULL, NULL, "PHYSGB=junk" },
		{ "PHYSGB", "1e-9", NULL, NULL, "PHYSGB=1e-09 is less than one 4 KiB page" },
		{ "VIRTGB", "1e-7", "--physgb=1e-9", NULL, "VIRTGB=1e-07 is less than one" },
		{ "THREADS", "0", NULL, NULL, "THREADS=0" },
		{ "THREADS", "129", NULL, NULL, "THREADS=129" },
		{ "RUNFOR", "-1", NULL, NULL, "RUNFOR=-1" }, /* 0 = load/check only */
		{ "RUNFOR", "abc", NULL, NULL, "RUNFOR=abc" },
		{ "BATCH", "0", NULL, NULL, "BATCH=0" },
		{ "INFLIGHT", "0", NULL, NULL, "INFLIGHT=0" },
		{ "INFLIGHT", "257", NULL, NULL, "INFLIGHT=257" },
		{ "DATASIZE", "0", NULL, NULL, "DATASIZE" },
		{ "EXMAP", "1", NULL, NULL, "exmap" },
		{ "BLOCK", blocked, NULL, NULL, "not writable" },
		{ "BLOCK", "/tmp", NULL, NULL, "neither a regular file" },
		{ "DATASIZE", "1e9", NULL, NULL, "raise VIRTGB" },
		{ NULL, NULL, "--workload", "foo", "unknown workload" },
		{ NULL, NULL, "--wait", "sleepy", "--wait=sleepy" },
		{ NULL, NULL, "--evict", "exmap", "--evict=exmap" },
		{ NULL, NULL, "--write", "aio", "--write=aio" },
		{ NULL, NULL, "--bogus", NULL, "unknown argument" },
		{ NULL, NULL, "--threads", NULL, "needs a value" },
		{ "RNDREAD", "0", NULL, NULL, "tpcc" },
		{ "VIRTGB", "300000", "--datasize", "1e12", "free space" },
		{ "VIRTGB", "300000", "--physgb=200000", NULL, "lower PHYSGB" },
		{ "FORCE", "maybe", NULL, NULL, "FORCE=maybe" },
	};
	for (size_t i = 0; i < TEST_N(cases); i++) {
		test_cli r = { 0 };
		env_reset();
		if (cases[i].var)
			setenv(cases[i].var, cases[i].val, 1);
		int st = vm(&r, cases[i].a1, cases[i].a2, NULL, NULL);
		bool ok = st == 2 && r.err && strstr(r.err, cases[i].msg);
		if (!strcmp(cases[i].msg, "tpcc") && st == 0)
			ok = true; /* once TPC-C is built in, RNDREAD=0 runs it */
		if (!ok)
			fprintf(stderr, "  case %zu (%s=%s %s %s): status %d, stderr: %s\n", i,
				cases[i].var ? cases[i].var : "-", cases[i].val ? cases[i].val : "-",
				cases[i].a1 ? cases[i].a1 : "", cases[i].a2 ? cases[i].a2 : "", st,
				r.err ? r.err : "(none)");
		test_cli_free(&r);
		CHECK(ok);
	}
	return TEST_PASS;
}

static int t_help(void)
{
	test_cli r = { 0 };
	CHECK_EQ(vm(&r, "--help", NULL, NULL, NULL), 0);
	CHECK(strstr(r.out, "PHYSGB"));
	CHECK(strstr(r.out, "--wait"));
	test_cli_free(&r);
	return TEST_PASS;
}

/* The scan workloads: ascending on a fresh store (loaded like rndread,
 * checked), then descending on the kept store, every tuple verified. */
static int t_scan_workloads(void)
{
	test_cli r = { 0 };
	env_reset();
	setenv("PHYSGB", "0.0025", 1); /* 640 pages, data ~ 900 pages */
	vm(&r, "--workload", "scan", "--check", NULL);
	CHECK(test_cli_ok(&r));
	CHECK(strstr(r.out, ",ruma,2,20000,scan,64"));
	CHECK(strstr(r.err, "rndread check: 20000 tuples"));
	CHECK(strstr(r.err, " 0 failures"));
	CHECK(!strstr(r.err, " 0 pages read,"));
	CHECK(!strstr(r.err, "INFLIGHT applies"));
	vm(&r, "--workload", "scandesc", "--keep", NULL);
	CHECK(test_cli_ok(&r));
	CHECK(strstr(r.err, "load: skipped"));
	CHECK(strstr(r.out, ",ruma,2,20000,scandesc,64"));
	CHECK(strstr(r.err, " 0 failures"));
	test_cli_free(&r);
	return TEST_PASS;
}

/* rndread --inflight 32 keeps several reads in flight per thread while it
 * waits (the synchronous path has exactly one).  How many depends on how
 * fast the device completes them: on a slow one the window fills to about
 * 32, on a fast, host-cached virtual disk completions arrive while the
 * window is still filling and the average while waiting is 8-12.  The bar
 * is set well above the synchronous path's 1 and below what any device
 * gives, so that it tests the mechanism, not the device's latency. */
static int t_inflight_depth(void)
{
	test_cli r = { 0 };
	env_reset();
	setenv("PHYSGB", "0.0025", 1); /* 640 pages of ~ 900: ~ 1 lookup in 4 reads */
	setenv("THREADS", "1", 1);
	vm(&r, "--inflight", "32", NULL, NULL);
	CHECK(test_cli_ok(&r));
	CHECK(strstr(r.err, " 0 failures"));
	const char *p = strstr(r.err, "waits for a completion, ");
	CHECK(p != NULL);
	double depth = strtod(p + strlen("waits for a completion, "), NULL);
	if (depth <= 4)
		fprintf(stderr, "%s\n", r.err);
	CHECK(depth > 4);
	test_cli_free(&r);
	return TEST_PASS;
}

/* The parser on its own: no process, no store. */
static int t_parse(void)
{
	ruma_vmcache_opts o;
	char err[512];
	char *env[] = { "BLOCK=/x/s", "PHYSGB=0.5", "VIRTGB=2", "THREADS=3", "RNDREAD=1",
			"DATASIZE=1e6", "RUMA_SEED=42", NULL };
	char *a0[] = { "vmcache", NULL };
	CHECK_OK(ruma_vmcache_parse(1, a0, env, &o, err, sizeof(err)));
	CHECK(!strcmp(o.bm.path, "/x/s") && o.physgb == 0.5 && o.virtgb == 2 && o.threads == 3);
	CHECK(o.bm.phys_bytes == 512ull << 20 && o.bm.virt_bytes == 2ull << 30 && o.bm.fresh);
	CHECK(o.bm.max_threads == 6 && o.bm.message == ruma_vmcache_say && o.tpcc_scale == 1);
	CHECK(!strcmp(o.wl->name, "rndread") && o.datasize == 1000000 && o.seed == 42);
	CHECK(o.bm.durability == RUMA_BM_DURABLE_OFF && o.commit_pipeline == 0 && !o.help);

	char *a1[] = { "vmcache", "--threads", "2", "--workload=tpcc", "--datasize", "1",
		       "--durable", "--keep", NULL };
	CHECK_OK(ruma_vmcache_parse(8, a1, env, &o, err, sizeof(err)));
	CHECK(o.threads == 2 && !strcmp(o.wl->name, "tpcc") && !o.bm.fresh);
	CHECK(o.bm.durability == RUMA_BM_DURABLE_SYNC && o.commit_pipeline == 0);
	char *a2[] = { "vmcache", "--datasize", "1", "--workload", "tpcc", "--durable=pipeline", NULL };
	CHECK_OK(ruma_vmcache_parse(6, a2, env, &o, err, sizeof(err)));
	CHECK(o.bm.durability == RUMA_BM_DURABLE_SYNC && o.commit_pipeline == RUMA_VMCACHE_COMMIT_PIPELINE);

	static const struct {
		char *arg, *want;
	} bad[] = {
		{ "--durable=maybe", "ruma vmcache: --durable=maybe: expected sync, pipeline or async" },
		{ "--physgb=3", "ruma vmcache: PHYSGB=3 exceeds VIRTGB=2" },
		{ "--threads=0", "ruma vmcache: THREADS=0: must be in 1.." },
		{ "--nope", "ruma vmcache: unknown argument '--nope' (see --help)" },
		{ "--seed", "ruma vmcache: --seed needs a value" },
	};
	for (size_t i = 0; i < TEST_N(bad); i++) {
		char *a[] = { "vmcache", bad[i].arg, NULL };
		CHECK_EQ(ruma_vmcache_parse(2, a, env, &o, err, sizeof(err)), RUMA_EPARSE);
		if (strncmp(err, bad[i].want, strlen(bad[i].want)))
			printf("  %s: got %s", bad[i].arg, err);
		CHECK(!strncmp(err, bad[i].want, strlen(bad[i].want)));
	}
	/* the TPC-C test knobs come through the parser, checked like the others */
	char *tenv[] = { "TPCC_SCALE=20", "TPCC_HOME=thread", NULL };
	CHECK_OK(ruma_vmcache_parse(1, a0, tenv, &o, err, sizeof(err)));
	CHECK(o.tpcc_scale == 20 && o.tpcc_home_thread && !strcmp(o.bm.path, "/tmp/bm"));
	static const struct {
		char *env, *want;
	} badenv[] = {
		{ "TPCC_SCALE=200", "ruma vmcache: TPCC_SCALE=200: must be in 1..100" },
		{ "TPCC_HOME=x", "ruma vmcache: TPCC_HOME=x: expected random or thread" },
	};
	for (size_t i = 0; i < TEST_N(badenv); i++) {
		char *e[] = { badenv[i].env, NULL };
		CHECK_EQ(ruma_vmcache_parse(1, a0, e, &o, err, sizeof(err)), RUMA_EPARSE);
		CHECK(!strncmp(err, badenv[i].want, strlen(badenv[i].want)));
	}
	char *ah[] = { "vmcache", "--help", "--nope", NULL };
	CHECK_OK(ruma_vmcache_parse(3, ah, env, &o, err, sizeof(err)));
	CHECK(o.help);
	return TEST_PASS;
}

/* The pre-flight's space: a kept store as large as the run needs is
 * enough on a full file system (reopened after its disk filled up); the
 * blocks of a store rewritten and of its log count as free. */
static int t_preflight_space(void)
{
	const uint64_t G = 1ull << 30, M = 1ull << 20;
	CHECK_EQ(ruma_vmcache_space(0, G, 300 * M, G, true, G), G);
	CHECK(ruma_vmcache_space(0, G / 2, 0, G / 2, true, G) < G); /* kept, but too small */
	CHECK(ruma_vmcache_space(0, G / 2, 600 * M, G / 2, false, G) >= G); /* the log's blocks */
	CHECK_EQ(ruma_vmcache_space(10 * M, 0, 0, 0, false, G), 10 * M);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "preflight_space", t_preflight_space },
	{ "keep_damaged_catalog", t_keep_damaged_catalog },
	{ "parse", t_parse },
	{ "tiny_run", t_tiny_run },   { "out_of_memory", t_out_of_memory },
	{ "keep", t_keep },           { "foreign_tree", t_foreign_tree },           { "flags_win", t_flags_win },
	{ "wrong_data", t_wrong_data }, { "inflight", t_inflight },
	{ "bad_configs", t_bad_configs }, { "help", t_help },
	{ "kill9", t_kill9 },         { "sigterm_and_lock", t_sigterm_and_lock },
	{ "not_clobbered", t_not_clobbered }, { "partial_load", t_partial_load },
	{ "scan_workloads", t_scan_workloads }, { "inflight_depth", t_inflight_depth },
};

int main(int argc, char **argv)
{
	strcpy(dir, "/tmp/ruma-test-vmcache-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(store, sizeof(store), "%s/store", dir);
	int r = test_main("vmcache", cases, TEST_N(cases), argc, argv);
	unlink(store);
	rmdir(dir);
	return r;
}
