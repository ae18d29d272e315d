/*
 * driver.c — runs one `ruma vmcache` benchmark.
 *
 * Order: refuse bad configurations (space on the device or file system,
 * VIRTGB too small, BLOCK not writable) with exit status 2; open the buffer
 * manager (fresh unless --keep); workload setup; parallel load on THREADS
 * threads; "space:" on stderr; the CSV header and one row per second for
 * RUNFOR seconds on stdout; "space:" again; --check; close (flushes).
 *
 * Per-second values: every worker publishes its running transaction count
 * after each operation (a relaxed store to its own cache line); the main
 * thread wakes at absolute one-second deadlines (clock_nanosleep on
 * CLOCK_MONOTONIC) and prints the difference of the sums, and of the buffer
 * manager's page read/write counters, since the previous row.
 *
 * Stopping: SIGINT and SIGTERM are caught for the whole run by a handler
 * that only stores the signal number (an atomic, async-signal-safe).  Worker
 * threads start with both signals blocked, so the main thread receives them:
 * its sleep returns EINTR and it stops the workers; loaders poll
 * ruma_vmcache_interrupted and return -EINTR.  Then
 * the store is closed cleanly (every page and the metadata written and
 * synced) and the driver returns 128 + the signal (130, 143), or 1 when the
 * close failed.  The handler is one-shot (SA_RESETHAND): a second signal
 * kills at once, leaving a store that the next open refuses as not closed
 * cleanly.
 *
 * Durable runs (--durable): the store opens with a log (a store not closed
 * cleanly is recovered by ruma_bm_open, which reports it; the unfinished
 * transactions are undone by the workload's setup, timed here); loader
 * threads do not wait for the log per operation (ruma_bm_op_defer); a
 * background thread takes a fuzzy checkpoint (ruma_bm_flush) every
 * --checkpoint seconds during load and run.  --commit-log opens the file the
 * workload records commits in, before the power-loss simulation is armed so
 * that it is never rolled back.  RUMA_POWER_LOSS_AFTER_MS (tests): the
 * simulation of src/os is armed before the store opens (write-back forced to
 * pwrite: io_uring writes are not tracked), and a thread calls
 * ruma_powerloss_now at that instant and _exit()s with
 * RUMA_VMCACHE_POWERLOSS_STATUS — whatever was running, load, run,
 * checkpoint, eviction or close.
 *
 * Syscalls: stat/statvfs/access/fstat, clock_nanosleep, sigaction,
 * pthread_sigmask; the device and commit log through ruma_file_open and
 * ruma_file_size (the library's OS layer).
 */
#include "bench/common/result.h"
#include "bench/vmcache/driver.h"

#include <ruma/btree.h>
#include "bm/bm_ext.h"
#include "core/core_ext.h"
#include <ruma/sysinfo.h>

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

struct tx_slot {
	_Atomic uint64_t tx;
	char pad[64 - sizeof(uint64_t)];
};

struct run {
	const ruma_vmcache_opts *o;
	ruma_vmcache_ctx ctx;
	struct tx_slot *slots;
	_Atomic bool stop;
	_Atomic int err;
	double load_sec; /* seconds the load took, NAN when the store held the data */
};

struct worker_arg {
	struct run *run;
	unsigned tid;
	pthread_t th;
};

static _Atomic int stop_signal;

bool ruma_vmcache_interrupted(void)
{
	return atomic_load_explicit(&stop_signal, memory_order_relaxed) != 0;
}

static void on_stop_signal(int sig)
{
	atomic_store(&stop_signal, sig);
}

/* Catch SIGINT/SIGTERM (one-shot) until restore_signals; old[] keeps what was there. */
static void catch_signals(struct sigaction old[2])
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	atomic_store(&stop_signal, 0);
	sigaction(SIGINT, &sa, &old[0]);
	sigaction(SIGTERM, &sa, &old[1]);
}

static void restore_signals(const struct sigaction old[2])
{
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
}

/* Threads created between these two calls start with SIGINT/SIGTERM blocked,
 * so the signal goes to the main thread (its sleep returns EINTR at once). */
static void block_stop_signals(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

static void unblock_stop_signals(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void set_err(struct run *r, int e)
{
	int zero = 0;
	atomic_compare_exchange_strong(&r->err, &zero, e);
	atomic_store(&r->stop, true);
}

static void *load_main(void *p)
{
	struct worker_arg *a = p;
	struct run *r = a->run;
	/* With a log: no wait for durability per loaded row; the workload's
	 * load_done (or the close) makes the load durable at once. */
	ruma_bm_op_defer(r->ctx.bm, true);
	int e = r->o->wl->load(&r->ctx, a->tid, r->o->threads);
	ruma_bm_op_defer(r->ctx.bm, false);
	if (e)
		set_err(r, e);
	return NULL;
}

static void *run_main(void *p)
{
	struct worker_arg *a = p;
	struct run *r = a->run;
	const ruma_vmcache_workload *wl = r->o->wl;
	void *ts = NULL;
	uint64_t done = 0;
	int e = wl->thread_init ? wl->thread_init(&r->ctx, a->tid, &ts) : 0;

	if (e) {
		set_err(r, e);
		return NULL;
	}
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		int64_t n = wl->run_one(&r->ctx, ts);
		if (n < 0) {
			set_err(r, (int)n);
			break;
		}
		done += (uint64_t)n;
		atomic_store_explicit(&r->slots[a->tid].tx, done, memory_order_relaxed);
	}
	e = wl->thread_fini ? wl->thread_fini(&r->ctx, ts) : 0;
	if (e)
		set_err(r, e);
	return NULL;
}

static int run_threads(struct run *r, void *(*fn)(void *))
{
	unsigned n = r->o->threads;
	struct worker_arg *a = calloc(n, sizeof(*a));
	unsigned started = 0;

	sigset_t old;
	if (!a)
		return -ENOMEM;
	block_stop_signals(&old);
	for (; started < n; started++) {
		a[started] = (struct worker_arg){ .run = r, .tid = started };
		int e = pthread_create(&a[started].th, NULL, fn, &a[started]);
		if (e) {
			set_err(r, -e);
			break;
		}
	}
	unblock_stop_signals(&old);
	for (unsigned i = 0; i < started; i++)
		pthread_join(a[i].th, NULL);
	free(a);
	return atomic_load(&r->err);
}

static void print_space(ruma_bm *bm)
{
	ruma_bm_stats st;
	ruma_bm_get_stats(bm, &st);
	fprintf(stderr, "space: %.3f GB (%" PRIu64 " pages of 4 KiB allocated, %" PRIu64
			" free for reuse, %" PRIu64 " resident)\n",
		(double)st.pages_allocated * RUMA_BM_PAGE_SIZE / GIB, st.pages_allocated,
		st.pages_free, st.pages_resident);
}

/* ---- durable runs: checkpoints, recovery report, simulated power loss ---- */

/* Sleep ms milliseconds in steps of at most 20 ms; false when *stop was set. */
static bool nap_unless(_Atomic bool *stop, uint64_t ms)
{
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	uint64_t ns = (uint64_t)next.tv_nsec + ms * 1000000ull;
	next.tv_sec += (time_t)(ns / 1000000000ull);
	next.tv_nsec = (long)(ns % 1000000000ull);
	for (;;) {
		if (atomic_load(stop))
			return false;
		struct timespec now, step;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec >= next.tv_nsec))
			return true;
		step = now;
		step.tv_nsec += 20000000l;
		if (step.tv_nsec >= 1000000000l) {
			step.tv_sec++;
			step.tv_nsec -= 1000000000l;
		}
		if (step.tv_sec > next.tv_sec ||
		    (step.tv_sec == next.tv_sec && step.tv_nsec > next.tv_nsec))
			step = next;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &step, NULL);
	}
}

/* A background thread (checkpoints or the power loss) and its stop flag. */
struct bg_thread {
	struct run *run;
	pthread_t th;
	bool started;
	_Atomic bool stop;
	uint64_t count; /* checkpoints taken */
};

/* Every checkpoint_secs: ruma_bm_flush, a fuzzy checkpoint that lets the
 * workers go on and truncates the log (docs/wal.md). */
static void *checkpoint_main(void *p)
{
	struct bg_thread *b = p;
	struct run *r = b->run;
	uint64_t ms = (uint64_t)(r->o->checkpoint_secs * 1000.0);
	while (nap_unless(&b->stop, ms ? ms : 1)) {
		int e = ruma_bm_flush(r->ctx.bm);
		if (e) {
			fprintf(stderr, "vmcache: checkpoint failed: %s\n", ruma_strerror(e));
			set_err(r, e);
			return NULL;
		}
		b->count++;
	}
	return NULL;
}

/* At powerloss_ms: put every tracked file back to its synced state and end
 * the process at once, as a machine losing power would. */
static void *powerloss_main(void *p)
{
	struct bg_thread *b = p;
	if (!nap_unless(&b->stop, b->run->o->powerloss_ms))
		return NULL;
	uint64_t torn = 0;
	int e = ruma_powerloss_now(b->run->o->powerloss_torn, &torn);
	fprintf(stderr, "vmcache: simulated power loss after %" PRIu64 " ms (%" PRIu64
			" torn pages)%s%s\n",
		b->run->o->powerloss_ms, torn, e ? ": restoring the files failed: " : "",
		e ? ruma_strerror(e) : "");
	fflush(stderr);
	_exit(RUMA_VMCACHE_POWERLOSS_STATUS);
}

static int bg_start(struct bg_thread *b, struct run *r, void *(*fn)(void *))
{
	sigset_t old;
	b->run = r;
	atomic_store(&b->stop, false);
	block_stop_signals(&old);
	int e = pthread_create(&b->th, NULL, fn, b);
	unblock_stop_signals(&old);
	b->started = e == 0;
	return -e;
}

static void bg_stop(struct bg_thread *b)
{
	if (!b->started)
		return;
	atomic_store(&b->stop, true);
	pthread_join(b->th, NULL);
	b->started = false;
}

/* --commit-log: open (truncated unless --keep) before the power-loss
 * simulation is armed, so that it is never rolled back: it records what the
 * clients were told. */
static int open_commit_log(const ruma_vmcache_opts *o, ruma_vmcache_ctx *ctx)
{
	uint64_t size = 0;
	ctx->commit_fd = -1;
	if (!o->commit_log)
		return 0;
	int fd, r = ruma_file_open(o->commit_log,
				   O_RDWR | O_CREAT | O_CLOEXEC | (!o->bm.fresh ? 0 : O_TRUNC), 0644, &fd);
	if (!r && (r = ruma_file_size(fd, &size, NULL)))
		close(fd);
	if (r) {
		fprintf(stderr, "vmcache: --commit-log %s: %s\n", o->commit_log, ruma_strerror(r));
		return 2;
	}
	ctx->commit_fd = fd;
	atomic_store(&ctx->commit_off, size);
	return 0;
}

/* The buffer pool must fit in the memory this process can get (MemAvailable,
 * and the cgroup limit where one is set): else the run ends in an OOM kill
 * with no message.  0 or exit status 2. */
static int check_memory(const ruma_vmcache_opts *o)
{
	ruma_mem_avail m;
	char b1[32], b2[32];
	uint64_t pool = o->bm.phys_bytes;

	if (ruma_sysinfo_mem_available(&m) || m.bytes == 0 || pool <= m.bytes)
		return 0;
	fprintf(stderr, "vmcache: PHYSGB=%g (%s) is more memory than this process can get: %s (%s)",
		o->physgb, ruma_format_size(pool, b1, sizeof(b1)),
		ruma_format_size(m.bytes, b2, sizeof(b2)), m.limited_by);
	fprintf(stderr, "; lower PHYSGB\n");
	return 2;
}

uint64_t ruma_vmcache_space(uint64_t fs_free, uint64_t store_disk, uint64_t log_disk,
			    uint64_t store_size, bool keep, uint64_t need)
{
	if (keep && store_size >= need)
		return need;
	return fs_free + store_disk + log_disk;
}

/* The blocks the file at path holds on disk (0 when it does not exist). */
static uint64_t disk_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Space and permission checks before anything is written; 0 or exit status 2. */
static int preflight(const ruma_vmcache_opts *o, uint64_t need)
{
	struct stat st;
	char b1[32], b2[32];
	bool exists = stat(o->bm.path, &st) == 0;
	int status_mem;

	if (need > o->bm.virt_bytes) {
		fprintf(stderr,
			"vmcache: VIRTGB=%g is too small for DATASIZE=%" PRIu64 " of %s "
			"(needs about %s); raise VIRTGB\n",
			o->virtgb, o->datasize, o->wl->name, ruma_format_size(need, b1, sizeof(b1)));
		return 2;
	}
	if ((status_mem = check_memory(o)))
		return status_mem;
	if (exists && S_ISBLK(st.st_mode)) {
		int fd;
		uint64_t size = 0;
		int r = ruma_file_open(o->bm.path, O_RDWR, 0, &fd);
		if (r) {
			fprintf(stderr, "vmcache: BLOCK=%s is not writable: %s\n", o->bm.path,
				ruma_strerror(r));
			return 2;
		}
		r = ruma_file_size(fd, &size, NULL);
		close(fd);
		if (r) {
			fprintf(stderr, "vmcache: BLOCK=%s: cannot get the device size: %s\n",
				o->bm.path, ruma_strerror(r));
			return 2;
		}
		if (size < need) {
			fprintf(stderr,
				"vmcache: BLOCK=%s has %s but DATASIZE=%" PRIu64 " of %s needs about "
				"%s; use a larger device or a smaller DATASIZE\n",
				o->bm.path, ruma_format_size(size, b1, sizeof(b1)), o->datasize,
				o->wl->name, ruma_format_size(need, b2, sizeof(b2)));
			return 2;
		}
		return 0;
	}
	if (exists && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "vmcache: BLOCK=%s is neither a regular file nor a block device\n",
			o->bm.path);
		return 2;
	}
	char *copy = strdup(o->bm.path);
	if (!copy)
		return 2;
	const char *dir = dirname(copy);
	int ok = exists ? access(o->bm.path, R_OK | W_OK) : access(dir, W_OK | X_OK);
	if (ok) {
		fprintf(stderr, "vmcache: BLOCK=%s is not writable: %s\n",
			exists ? o->bm.path : dir, strerror(errno));
		free(copy);
		return 2;
	}
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0) {
		char log[PATH_MAX];
		snprintf(log, sizeof(log), "%s.wal", o->bm.path);
		uint64_t avail = ruma_vmcache_space(
			(uint64_t)vfs.f_bavail * vfs.f_frsize, exists ? (uint64_t)st.st_blocks * 512 : 0,
			exists ? disk_bytes(log) : 0, exists ? (uint64_t)st.st_size : 0, !o->bm.fresh, need);
		if (avail < need) {
			fprintf(stderr,
				"vmcache: the file system of BLOCK=%s has %s free but DATASIZE=%" PRIu64
				" of %s needs about %s; free space or use a smaller DATASIZE\n",
				o->bm.path, ruma_format_size(avail, b1, sizeof(b1)), o->datasize,
				o->wl->name, ruma_format_size(need, b2, sizeof(b2)));
			free(copy);
			return 2;
		}
	}
	free(copy);
	return 0;
}

static bool config_error(int r)
{
	return r == -EINVAL || r == -EACCES || r == -ENOENT || r == -EPERM || r == -EROFS ||
	       r == -ENOSPC || r == -EISDIR || r == RUMA_ECORRUPT || r == RUMA_ESHORTIO ||
	       r == RUMA_EBADCOMBO || r == RUMA_ELOCKED || r == RUMA_EUNCLEAN ||
	       r == RUMA_ENOTSTORE;
}

/* --result: the rows of the measured phase, with the run's parameters. */
static int open_result(const ruma_vmcache_opts *o, ruma_result *res)
{
	int r = ruma_result_open(res, o->result);
	if (r) {
		fprintf(stderr, "vmcache: cannot write %s: %s\n", o->result, ruma_strerror(r));
		return r;
	}
	if ((r = ruma_result_set(res, "system", "ruma")) ||
	    (r = ruma_result_set(res, "workload", o->wl->name)) ||
	    (r = ruma_result_setu(res, "threads", o->threads)) ||
	    (r = ruma_result_setu(res, "datasize", o->datasize)) ||
	    (r = ruma_result_setu(res, "batch", o->bm.batch)))
		(void)ruma_result_close(res);
	return r;
}

/* One second of the run: the CSV row and (--result) its rows. */
static void report_second(const ruma_vmcache_opts *o, ruma_result *res, uint64_t s, uint64_t tx,
			  double rmb, double wmb)
{
	printf("%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,ruma,%u,%" PRIu64 ",%s,%u\n", s, tx, rmb, wmb,
	       o->threads, o->datasize, o->wl->name, o->bm.batch);
	fflush(stdout);
	(void)ruma_result_setu(res, "ts", s);
	ruma_result_add(res, "tx", "tx/s", (double)tx);
	ruma_result_add(res, "rmb", "MiB/s", rmb);
	ruma_result_add(res, "wmb", "MiB/s", wmb);
}

static int timed_run(struct run *run, ruma_bm *bm)
{
	const ruma_vmcache_opts *o = run->o;
	struct timespec next;
	uint64_t prev_tx = 0;
	ruma_bm_stats prev, cur;
	ruma_result res;
	int r = open_result(o, &res);
	if (r)
		return r;
	ruma_result_add(&res, "load", "s", run->load_sec); /* no row when not loaded */
	struct worker_arg *a = calloc(o->threads, sizeof(*a));
	unsigned started = 0;

	if (!a) {
		(void)ruma_result_close(&res);
		return -ENOMEM;
	}
	printf("ts,tx,rmb,wmb,system,threads,datasize,workload,batch\n");
	fflush(stdout);
	ruma_bm_get_stats(bm, &prev);
	clock_gettime(CLOCK_MONOTONIC, &next);
	sigset_t old;
	block_stop_signals(&old);
	for (; started < o->threads; started++) {
		a[started] = (struct worker_arg){ .run = run, .tid = started };
		int e = pthread_create(&a[started].th, NULL, run_main, &a[started]);
		if (e) {
			set_err(run, -e);
			break;
		}
	}
	unblock_stop_signals(&old);
	uint64_t s = 0;
	for (; s < o->runfor && !atomic_load(&run->stop); s++) {
		next.tv_sec += 1;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR &&
		       !ruma_vmcache_interrupted())
			;
		if (ruma_vmcache_interrupted())
			break;
		uint64_t tx = 0;
		for (unsigned i = 0; i < o->threads; i++)
			tx += atomic_load_explicit(&run->slots[i].tx, memory_order_relaxed);
		ruma_bm_get_stats(bm, &cur);
		double rmb = (double)(cur.reads - prev.reads) * RUMA_BM_PAGE_SIZE / (1024.0 * 1024.0);
		double wmb = (double)(cur.writes - prev.writes) * RUMA_BM_PAGE_SIZE / (1024.0 * 1024.0);
		report_second(o, &res, s, tx - prev_tx, rmb, wmb);
		prev_tx = tx;
		prev = cur;
	}
	atomic_store(&run->stop, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(a[i].th, NULL);
	uint64_t total = 0;
	for (unsigned i = 0; i < o->threads; i++)
		total += atomic_load(&run->slots[i].tx);
	ruma_bm_get_stats(bm, &cur);
	fprintf(stderr,
		"run: %" PRIu64 " tx in %" PRIu64 " s, %" PRIu64 " pages read, %" PRIu64
		" written (%" PRIu64 " by the cleaner), %" PRIu64 " evicted, %" PRIu64
		" restarts, %" PRIu64 " failures\n",
		total, s, cur.reads, cur.writes, cur.cleaned, cur.evictions, cur.restarts,
		atomic_load(&run->ctx.failures));
	free(a);
	r = ruma_result_close(&res);
	if (r)
		fprintf(stderr, "vmcache: cannot write %s: %s\n", o->result, ruma_strerror(r));
	int e = atomic_load(&run->err);
	return e ? e : r;
}

static const char *durability_name(const ruma_vmcache_opts *o)
{
	switch (o->bm.durability) {
	case RUMA_BM_DURABLE_SYNC:
		return o->commit_pipeline ? "pipeline" : "sync";
	case RUMA_BM_DURABLE_ASYNC:
		return "async";
	default:
		return "off";
	}
}

/* the first tree of the store the workload does not own (ruma_btree_list) */
struct foreign_tree {
	const ruma_vmcache_workload *wl;
	char name[64];
	bool found;
};

static bool find_foreign(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct foreign_tree *f = ctx;

	(void)val;
	(void)vlen;
	if (f->wl->owns_tree(key, klen))
		return true;
	snprintf(f->name, sizeof(f->name), "%.*s", (int)(klen < 60 ? klen : 60), (const char *)key);
	f->found = true;
	return false;
}

/* --keep: a store holding a tree that is not the workload's is someone's
 * data, not a benchmark's: refused (2) before anything is written. */
static int refuse_foreign_trees(const ruma_vmcache_opts *o, ruma_bm *bm)
{
	struct foreign_tree f = { .wl = o->wl };
	int r;

	if (!o->wl->owns_tree)
		return 0;
	if ((r = ruma_btree_list(bm, find_foreign, &f))) {
		fprintf(stderr, "vmcache: cannot list the trees of %s: %s\n", o->bm.path,
			ruma_strerror(r));
		return 1;
	}
	if (!f.found)
		return 0;
	fprintf(stderr,
		"vmcache: the kept store %s holds the tree '%s', which is not the %s workload's: "
		"a benchmark does not write into a store with other data; name another BLOCK "
		"(a run without --keep would recreate %s and lose that data)\n",
		o->bm.path, f.name, o->wl->name, o->bm.path);
	return 2;
}

/* --check: the workload's own check (every tuple), then the store check
 * (every page reached from the catalog once, none free, none leaked). */
static int run_check(struct run *run, ruma_bm *bm)
{
	int r = run->o->wl->check(&run->ctx);
	if (r)
		return r;
	ruma_btree_store_check c;
	r = ruma_btree_check_store(bm, ruma_btree_check_to_file, stderr, &c);
	if (r == 0 || r == RUMA_ECORRUPT)
		fprintf(stderr,
			"btree check: store: %" PRIu64 " trees, %" PRIu64 " pages reached, %" PRIu64
			" free, %" PRIu64 " leaked\n",
			c.trees, c.pages_reached, c.pages_free, c.pages_leaked);
	return r;
}

/* The configuration line on stderr (and the note on INFLIGHT where it does not apply). */
static void print_banner(const ruma_vmcache_opts *o)
{
	if (o->inflight > 1 && strcmp(o->wl->name, "rndread") && strncmp(o->wl->name, "scan", 4))
		fprintf(stderr, "ruma vmcache: note: INFLIGHT applies to rndread lookups and scan "
				"read-ahead; %s runs its transactions with synchronous reads\n",
			o->wl->name);
	fprintf(stderr,
		"vmcache blk:%s virtgb:%g physgb:%g exmap:0 batch:%u threads:%u datasize:%" PRIu64
		" workload:%s runfor:%" PRIu64 " wait:%s evict:%s write:%s inflight:%u reuse:%d "
		"cleaner:%d keep:%d seed:%" PRIu64 " durable:%s\n",
		o->bm.path, o->virtgb, o->physgb, o->bm.batch, o->threads, o->datasize, o->wl->name,
		o->runfor, ruma_bm_wait_name(o->bm.wait), ruma_bm_evict_name(o->bm.evict),
		ruma_bm_write_name(o->bm.write), o->inflight ? o->inflight : 1, o->bm.reuse_pages,
		o->bm.cleaner, !o->bm.fresh, o->seed, durability_name(o));
}

/* The simulated power loss (tests): write-back by pwrite, which the
 * simulation tracks (io_uring writes it does not). */
static void arm_powerloss(const ruma_vmcache_opts *o, ruma_bm_config *c)
{
	if (!o->powerloss_ms)
		return;
	if (c->write == RUMA_BM_WRITE_URING)
		fprintf(stderr, "vmcache: simulated power loss armed: write-back uses "
				"pwrite (the simulation does not track io_uring writes)\n");
	c->write = RUMA_BM_WRITE_PWRITE;
	ruma_powerloss_arm();
}

/* Open the store (after the power-loss thread, when armed, has started);
 * 0 or the exit status, with everything opened so far released. */
static int open_store(struct run *run, struct bg_thread *ploss, ruma_bm **bm)
{
	const ruma_vmcache_opts *o = run->o;
	ruma_bm_config c = o->bm;

	arm_powerloss(o, &c);
	if (o->powerloss_ms && bg_start(ploss, run, powerloss_main)) {
		fprintf(stderr, "vmcache: cannot start the power-loss thread\n");
		return 1;
	}
	int r = ruma_bm_open(&c, bm);
	if (!r)
		return 0;
	fprintf(stderr, "vmcache: cannot open the buffer manager on %s: %s\n", o->bm.path,
		ruma_strerror(r));
	bg_stop(ploss);
	if (run->ctx.commit_fd >= 0)
		close(run->ctx.commit_fd);
	return config_error(r) ? 2 : 1;
}

/* The workload's context and per-thread slots, then its setup (which may
 * find the data of a kept store, or undo the transactions a crash cut
 * off), then the checkpoint thread; 0 or the exit status. */
static int setup_workload(struct run *run, ruma_bm *bm, struct bg_thread *ckpt)
{
	const ruma_vmcache_opts *o = run->o;
	int r;

	run->ctx.bm = bm;
	run->ctx.datasize = o->datasize;
	run->ctx.threads = o->threads;
	run->ctx.inflight = o->inflight ? o->inflight : 1;
	run->ctx.seed = o->seed;
	run->ctx.keep = !o->bm.fresh;
	run->ctx.commit_pipeline = o->commit_pipeline;
	run->ctx.tpcc_scale = o->tpcc_scale;
	run->ctx.tpcc_home_thread = o->tpcc_home_thread;
	run->ctx.tpcc_txn = o->tpcc_txn;
	run->slots = aligned_alloc(64, sizeof(struct tx_slot) * o->threads);
	if (!run->slots)
		return 1;
	memset(run->slots, 0, sizeof(struct tx_slot) * o->threads);
	if (!o->bm.fresh && (r = refuse_foreign_trees(o, bm)))
		return r;
	double t_setup = ruma_now_sec();
	r = o->wl->setup(&run->ctx);
	if (r) {
		if (r != RUMA_EBADCOMBO) /* a refused store: setup said why */
			fprintf(stderr, "vmcache: %s setup failed: %s\n", o->wl->name,
				ruma_strerror(r));
		return r == RUMA_EBADCOMBO ? 2 : 1;
	}
	ruma_bm_recovery rec;
	ruma_bm_get_recovery(bm, &rec);
	if (rec.losers)
		fprintf(stderr, "recovery: %" PRIu64 " unfinished transactions undone in %.1f ms\n",
			rec.losers, (ruma_now_sec() - t_setup) * 1000.0);
	if (ruma_bm_logging(bm) && o->checkpoint_secs > 0 &&
	    (r = bg_start(ckpt, run, checkpoint_main))) {
		fprintf(stderr, "vmcache: cannot start the checkpoint thread: %s\n",
			ruma_strerror(r));
		return 1;
	}
	return 0;
}

/* --check after the load (when) or after the run: 0 or exit status 1. */
static int check_after(struct run *run, ruma_bm *bm, const char *when)
{
	int r = run_check(run, bm);
	if (!r)
		return 0;
	fprintf(stderr, "vmcache: check %s failed: %s\n", when, ruma_strerror(r));
	return 1;
}

/* The parallel load (unless the kept store holds the data), the space it
 * took and --check; 0 or exit status 1. */
static int load_data(struct run *run, ruma_bm *bm)
{
	const ruma_vmcache_opts *o = run->o;

	if (!run->ctx.loaded) {
		double t0 = ruma_now_sec();
		int r = run_threads(run, load_main);
		if (!r && o->wl->load_done)
			r = o->wl->load_done(&run->ctx);
		if (r) {
			fprintf(stderr, "vmcache: loading failed: %s%s\n", ruma_strerror(r),
				r == RUMA_EVIRTFULL ? " [ruma vmcache: virt_bytes = VIRTGB]" : "");
			return 1;
		}
		/* A load reported done is durable, whatever the commit mode (an
		 * asynchronous one has not waited for its last records). */
		if (ruma_bm_logging(bm) && (r = ruma_bm_log_flush(bm, ruma_bm_log_end(bm)))) {
			fprintf(stderr, "vmcache: making the load durable failed: %s\n",
				ruma_strerror(r));
			return 1;
		}
		run->load_sec = ruma_now_sec() - t0;
		/* After a simulated power loss the process runs on until the
		 * power-loss thread ends it, but its syncs no longer make anything
		 * durable: a load that ends then did not end on the simulated
		 * machine, and saying so would mislead the crash test. */
		if (!ruma_powerloss_dead())
			fprintf(stderr, "load: DATASIZE=%" PRIu64 " of %s in %.2f s on %u threads\n",
				o->datasize, o->wl->name, run->load_sec, o->threads);
	} else {
		fprintf(stderr, "load: skipped, the kept store already holds the data\n");
	}
	print_space(bm);
	if (o->check && o->wl->check)
		return check_after(run, bm, "after load");
	return 0;
}

/* The timed run (RUNFOR seconds, one row per second), the space it took,
 * wrong results and --check; the exit status. */
static int measure(struct run *run, ruma_bm *bm, struct bg_thread *ckpt)
{
	const ruma_vmcache_opts *o = run->o;
	int status = 0;

	if (ruma_vmcache_interrupted() || o->runfor == 0)
		return 0;
	int r = timed_run(run, bm);
	bg_stop(ckpt);
	if (r) {
		fprintf(stderr, "vmcache: the run stopped: %s\n", ruma_strerror(r));
		status = 1;
	}
	print_space(bm);
	uint64_t failures = atomic_load(&run->ctx.failures);
	if (failures) {
		fprintf(stderr, "vmcache: %" PRIu64 " operations returned wrong or missing data\n",
			failures);
		status = 1;
	}
	if (o->check && o->wl->check && !r && !ruma_vmcache_interrupted() &&
	    check_after(run, bm, "after the run"))
		status = 1;
	return status;
}

/* Stop the background threads, tear the workload down and close the store;
 * the exit status (status, unless the close failed or a signal stopped the run). */
static int finish(struct run *run, ruma_bm *bm, struct bg_thread *ckpt, struct bg_thread *ploss,
		  const struct sigaction old_sig[2], int status)
{
	const ruma_vmcache_opts *o = run->o;

	bg_stop(ckpt);
	if (ckpt->count)
		fprintf(stderr, "checkpoints: %" PRIu64 " taken (every %g s)\n", ckpt->count,
			o->checkpoint_secs);
	if (o->wl->teardown)
		o->wl->teardown(&run->ctx);
	free(run->slots);
	int r = ruma_bm_close(bm);
	bg_stop(ploss);
	if (run->ctx.commit_fd >= 0)
		close(run->ctx.commit_fd);
	int sig = atomic_load(&stop_signal);
	restore_signals(old_sig);
	if (r) {
		fprintf(stderr, "vmcache: closing the store failed: %s\n", ruma_strerror(r));
		return 1;
	}
	if (sig) {
		fprintf(stderr, "vmcache: stopped by signal %d (%s); the store was closed cleanly\n",
			sig, strsignal(sig));
		return 128 + sig;
	}
	return status;
}

int ruma_vmcache_run(const ruma_vmcache_opts *o)
{
	ruma_bm *bm = NULL;
	int status;
	struct run run = { .o = o, .load_sec = NAN };
	struct bg_thread ckpt = { 0 }, ploss = { 0 };
	struct sigaction old_sig[2];

	print_banner(o);
	if ((status = preflight(o, o->wl->space_estimate(o->datasize))) ||
	    (status = open_commit_log(o, &run.ctx)) || (status = open_store(&run, &ploss, &bm)))
		return status;
	catch_signals(old_sig);
	if (!(status = setup_workload(&run, bm, &ckpt)) && !(status = load_data(&run, bm)))
		status = measure(&run, bm, &ckpt);
	return finish(&run, bm, &ckpt, &ploss, old_sig, status);
}
