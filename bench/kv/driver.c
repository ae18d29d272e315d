/*
 * driver.c — one `ruma kv` run (kv.h): the store directory, the system's
 * store opened with the run's memory budget and durability, the load
 * phase (timed), the run phase on --threads threads (plus the writer of
 * readwhilewriting) with one CSV row per second, then the report: the
 * throughput, each operation's latency percentiles (p50, p99, p99.9 from
 * the merged per-thread histograms), conflicts retried, and what the
 * system could not honour; every figure also as a result row.
 *
 * Per-second rows: every thread publishes its count of operations after
 * each one (a relaxed store to its own cache line); the main thread wakes
 * at absolute one-second deadlines (clock_nanosleep, CLOCK_MONOTONIC) and
 * prints the difference of the sums.  With --ops it also wakes every 10 ms
 * to see whether the threads finished, and the last row covers the part
 * second they took.
 *
 * The version store (runs with a writer, systems with the adapter's
 * versions hook: ruma): its bytes sampled before the run (the floor), once
 * a second with the per-second rows and at the end of the run (the peak
 * is the largest sample), then, once every thread has ended (the writer
 * stopped, every scan's transaction over), every millisecond until they
 * are back at the floor or 5 s pass: the time from the end of the last
 * thread's last operation.  Other systems print "n/a".
 *
 * Stopping: SIGINT and SIGTERM (caught by worker.c while the run is on)
 * end the load or the run at the threads' next operation; the report of
 * what ran is printed, the store closed and its directory removed, and the
 * status is 128 + the signal (130, 143).  Threads start with both signals
 * blocked, so the main thread's sleep is the one they interrupt.
 *
 * The store directory: <dir>/kv-<system> (store_dir.c), removed after the
 * run, and <dir> too when the run created it (and it is empty then).
 *
 * Syscalls: clock_nanosleep, sigaction, pthread_sigmask, stat and rmdir
 * (--dir); the store directory's (store_dir.c).
 */
#include "bench/common/result.h"
#include "bench/kv/cgroup.h"
#include "bench/kv/store_dir.h"
#include "bench/kv/worker.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_NOTES 16

struct note {
	char setting[32];
	char text[200];
};

struct run {
	const ruma_kv_opts *o;
	ruma_kv_shared sh;
	ruma_kv_worker *w;
	unsigned nthreads;           /* workers, the writer included */
	ruma_outputs out;
	ruma_result *res;
	struct note notes[MAX_NOTES];
	unsigned nnotes;
	char dir[4096];
	bool made_parent;            /* --dir did not exist: removed at the end too */
	ruma_kv_cgroup cg;           /* --cgroup */
	bool versions;               /* the version store is sampled */
	uint64_t vfloor, vpeak;      /* its bytes before the run, its largest sample */
	uint64_t vleft;              /* bytes above the floor when the wait ended */
	double vwait_ms;             /* the wait: from the run's end to the floor (or 5 s) */
};

static void add_note(void *ctx, const char *setting, const char *text)
{
	struct run *r = ctx;
	if (r->nnotes == MAX_NOTES)
		return;
	struct note *n = &r->notes[r->nnotes++];
	snprintf(n->setting, sizeof(n->setting), "%s", setting);
	snprintf(n->text, sizeof(n->text), "%s", text);
}

/* The parameters every result row carries. */
static void set_params(struct run *r)
{
	const ruma_kv_opts *o = r->o;
	ruma_result *res = r->res;
	ruma_result_set(res, "system", o->sys->name);
	ruma_result_set(res, "workload", o->wl->name);
	ruma_result_setu(res, "threads", o->threads);
	ruma_result_set(res, "durability", r->sh.sync ? "sync" : "none");
	ruma_result_set(res, "distribution", ruma_kv_dist_name(o->dist));
	ruma_result_setu(res, "records", o->records);
	ruma_result_setu(res, "value_size", o->value_size);
	ruma_result_setu(res, "memory", o->memory);
}

/* The parameters that say what a row measures: the phase (load, run), the
 * second (ts; "all" for the whole phase) and the operation ("all": every
 * operation).  Every row has them, in this order. */
static void set_row(struct run *r, const char *phase, long long ts, const char *op)
{
	ruma_result_set(r->res, "phase", phase);
	if (ts < 0)
		ruma_result_set(r->res, "ts", "all");
	else
		ruma_result_setu(r->res, "ts", (unsigned long long)ts);
	ruma_result_set(r->res, "op", op);
}

static void report_config(struct run *r)
{
	const ruma_kv_opts *o = r->o;
	char mem[32];
	fprintf(stderr, "ruma kv: %s %s, workload %s (%s), %" PRIu64 " records of %" PRIu64
		" bytes, memory %s, %u thread%s%s, durability %s, %s requests, store in %s\n",
		o->sys->name, o->sys->version(), o->wl->name, o->wl->what, o->records,
		o->value_size, ruma_format_size(o->memory, mem, sizeof(mem)), o->threads,
		o->threads == 1 ? "" : "s", o->wl->writer ? " + 1 writer" : "",
		r->sh.sync ? "sync" : "none", ruma_kv_dist_name(o->dist), r->dir);
	set_params(r);
	set_row(r, "open", -1, "all");
	ruma_result_note(r->res, "version", o->sys->version());
	for (unsigned i = 0; i < r->nnotes; i++) {
		char text[240];
		fprintf(stderr, "ruma kv: %s cannot honour %s: %s\n", o->sys->name,
			r->notes[i].setting, r->notes[i].text);
		snprintf(text, sizeof(text), "%s: %s", r->notes[i].setting, r->notes[i].text);
		ruma_result_note(r->res, "unhonoured", text);
	}
}

static uint64_t ops_sum(const struct run *r)
{
	uint64_t s = 0;
	for (unsigned i = 0; i < r->o->threads; i++)
		s += atomic_load_explicit(&r->sh.ops[i].v, memory_order_relaxed);
	return s;
}

/* One sample of the version store's bytes into *bytes; false (and no
 * more sampling) where it fails. */
static bool versions_sample(struct run *r, uint64_t *bytes)
{
	if (!r->versions)
		return false;
	if (r->o->sys->versions(r->sh.store, bytes)) {
		fprintf(stderr, "ruma kv: %s: cannot read the version store's size; not sampled\n",
			r->o->sys->name);
		r->versions = false;
		return false;
	}
	if (*bytes > r->vpeak)
		r->vpeak = *bytes;
	return true;
}

/* Before the run: the floor, where there is a version store to sample. */
static void versions_start(struct run *r)
{
	r->versions = r->o->wl->writer && r->o->sys->versions;
	r->vpeak = 0;
	if (!versions_sample(r, &r->vfloor))
		r->vfloor = 0;
}

/* Sleep until t, or until a signal stops the run. */
static void sleep_until(const struct timespec *t)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR &&
	       !ruma_kv_stop_signal())
		;
}

/* The per-second rows until the run ends (--runfor, --ops, or a failure). */
static void per_second(struct run *r)
{
	const ruma_kv_opts *o = r->o;
	struct timespec next;
	uint64_t prev = 0, t0 = ruma_now_ns();
	clock_gettime(CLOCK_MONOTONIC, &next);
	if (!o->quiet)
		printf("ts,ops,system,workload,threads,durability\n");
	for (uint64_t ts = 0;; ts++) {
		next.tv_sec++;
		bool finished = false;
		for (;;) {
			struct timespec poll;
			clock_gettime(CLOCK_MONOTONIC, &poll);
			poll.tv_nsec += 10000000;
			if (poll.tv_nsec >= 1000000000) {
				poll.tv_sec++;
				poll.tv_nsec -= 1000000000;
			}
			bool last = poll.tv_sec > next.tv_sec ||
				    (poll.tv_sec == next.tv_sec && poll.tv_nsec >= next.tv_nsec);
			sleep_until(last ? &next : &poll);
			finished = atomic_load(&r->sh.running) <= (o->wl->writer ? 1u : 0u) ||
				   ruma_kv_stopping(&r->sh);
			if (last || finished)
				break;
		}
		uint64_t now = ops_sum(r);
		if (!o->quiet) {
			printf("%" PRIu64 ",%" PRIu64 ",%s,%s,%u,%s\n", ts, now - prev, o->sys->name,
			       o->wl->name, o->threads, r->sh.sync ? "sync" : "none");
			fflush(stdout); /* each second's row as it is measured */
		}
		set_row(r, "run", (long long)ts, "all");
		ruma_result_add(r->res, "ops", "ops/s", (double)(now - prev));
		prev = now;
		uint64_t bytes;
		(void)versions_sample(r, &bytes); /* for the peak */
		if (finished || (!o->ops && (ruma_now_ns() - t0) >= o->runfor * 1000000000ull))
			break;
	}
	fflush(stdout);
	atomic_store(&r->sh.stop, true);
}

static int run_threads(struct run *r, unsigned n, void *(*fn)(void *), bool timed)
{
	unsigned started = 0;
	sigset_t set, old;
	atomic_store(&r->sh.stop, false);
	atomic_store(&r->sh.running, n);
	/* the threads start with the stop signals blocked: the main thread gets them */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	for (; started < n; started++) {
		int e = pthread_create(&r->w[started].pt, NULL, fn, &r->w[started]);
		if (e) {
			atomic_fetch_sub(&r->sh.running, n - started);
			ruma_kv_worker_fail(&r->sh, -e, "cannot start thread %u: %s", started,
					    strerror(e));
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (timed && started == n)
		per_second(r);
	for (unsigned i = 0; i < started; i++)
		pthread_join(r->w[i].pt, NULL);
	return atomic_load(&r->sh.err);
}

/* The latency rows and lines of one operation (all threads' histograms merged). */
static void report_op(struct run *r, ruma_kv_op op, ruma_kv_hist *m)
{
	ruma_kv_hist_reset(m);
	for (unsigned i = 0; i < r->nthreads; i++)
		ruma_kv_hist_merge(m, &r->w[i].hist[op]);
	if (!m->count)
		return;
	double p50 = (double)ruma_kv_hist_quantile(m, 0.5) / 1e3;
	double p99 = (double)ruma_kv_hist_quantile(m, 0.99) / 1e3;
	double p999 = (double)ruma_kv_hist_quantile(m, 0.999) / 1e3;
	double mean = (double)m->sum / (double)m->count / 1e3;
	fprintf(stderr, "ruma kv: %-6s %10" PRIu64 " ops, latency us: mean %.2f p50 %.2f "
		"p99 %.2f p99.9 %.2f max %.2f\n", ruma_kv_op_name(op), m->count, mean, p50, p99,
		p999, (double)m->max / 1e3);
	set_row(r, "run", -1, ruma_kv_op_name(op));
	/* rows in seconds, the tidy format's unit of time (ruma plot prints them in us) */
	ruma_result_add(r->res, "count", "ops", (double)m->count);
	ruma_result_add(r->res, "mean", "s", mean / 1e6);
	ruma_result_add(r->res, "p50", "s", p50 / 1e6);
	ruma_result_add(r->res, "p99", "s", p99 / 1e6);
	ruma_result_add(r->res, "p999", "s", p999 / 1e6);
	ruma_result_add(r->res, "max", "s", (double)m->max / 1e9);
	if (op == RUMA_KV_SCAN) {
		uint64_t entries = 0;
		for (unsigned i = 0; i < r->nthreads; i++)
			entries += r->w[i].scanned;
		fprintf(stderr, "ruma kv: scans visited %" PRIu64 " entries, %.1f a scan\n",
			entries, (double)entries / (double)m->count);
		ruma_result_add(r->res, "entries", "entries", (double)entries);
	}
}

static void report(struct run *r, double secs)
{
	uint64_t total = ops_sum(r), retries = 0;
	ruma_kv_hist *m = malloc(sizeof(*m));
	for (unsigned i = 0; i < r->nthreads; i++)
		retries += r->w[i].retries;
	double tput = secs > 0 ? (double)total / secs : NAN;
	fprintf(stderr, "ruma kv: run %.2f s, %" PRIu64 " ops, %.0f ops/s, %" PRIu64
		" conflicts retried\n", secs, total, tput, retries);
	set_row(r, "run", -1, "all");
	ruma_result_add(r->res, "throughput", "ops/s", tput);
	ruma_result_add(r->res, "retries", "retries", (double)retries);
	if (r->o->wl->pattern == RUMA_KV_SCANFULL) {
		uint64_t entries = 0;
		for (unsigned i = 0; i < r->o->threads; i++)
			entries += r->w[i].scanned;
		double rate = secs > 0 ? (double)entries / secs : NAN;
		fprintf(stderr, "ruma kv: %.2f scans/s, %.0f entries/s (the meta row included), "
			"every scan one snapshot (checked)\n", tput, rate);
		/* "entry/s": a sweep keeps 7 characters of a unit */
		ruma_result_add(r->res, "entry_rate", "entry/s", rate);
	}
	for (unsigned op = 0; m && op < RUMA_KV_NOPS; op++)
		report_op(r, (ruma_kv_op)op, m);
	free(m);
}

/* After the run (every thread ended, the last at end_ns): the version
 * store sampled every millisecond until it is back at its floor or 5 s pass. */
static void versions_wait(struct run *r, uint64_t end_ns)
{
	uint64_t bytes = 0;
	struct timespec ms = { 0, 1000000 };
	while (versions_sample(r, &bytes) && bytes > r->vfloor &&
	       ruma_now_ns() - end_ns < 5000000000ull && !ruma_kv_stop_signal())
		nanosleep(&ms, NULL);
	r->vwait_ms = (double)(ruma_now_ns() - end_ns) / 1e6;
	r->vleft = bytes > r->vfloor ? bytes - r->vfloor : 0;
}

/* The version store's figures on stderr and as rows (runs with a writer). */
static void versions_report(struct run *r)
{
	if (!r->o->wl->writer)
		return;
	if (!r->o->sys->versions) {
		fprintf(stderr, "ruma kv: version store: n/a (%s reports none)\n", r->o->sys->name);
		return;
	}
	if (!r->versions)
		return;
	double wait_ms = r->vwait_ms;
	uint64_t left = r->vleft;
	if (left)
		fprintf(stderr, "ruma kv: version store: peak %" PRIu64 " bytes, NOT back to its floor "
			"of %" PRIu64 " bytes %.0f ms after the run: %" PRIu64 " bytes above it\n",
			r->vpeak, r->vfloor, wait_ms, left);
	else
		fprintf(stderr, "ruma kv: version store: peak %" PRIu64 " bytes, back to its floor of "
			"%" PRIu64 " bytes %.3f ms after the run\n", r->vpeak, r->vfloor, wait_ms);
	set_row(r, "run", -1, "all");
	ruma_result_add(r->res, "versions_peak", "bytes", (double)r->vpeak);
	ruma_result_add(r->res, "versions_floor", "bytes", (double)r->vfloor);
	ruma_result_add(r->res, "versions_floor_ms", "ms", wait_ms);
	ruma_result_add(r->res, "versions_left", "bytes", (double)left);
}

/* Open the store; 0, or 2 (cannot be used) with a message. */
static int open_store(struct run *r)
{
	const ruma_kv_opts *o = r->o;
	char err[512];
	struct stat st;
	r->made_parent = stat(o->dir, &st) != 0;
	int rc = ruma_kv_store_dir(o->dir, o->sys->name, r->dir, sizeof(r->dir), err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ruma kv: %s\n", err);
		return 2;
	}
	ruma_kv_conf c = {
		.dir = r->dir, .memory = o->memory, .sync = r->sh.sync, .threads = r->nthreads,
		.records = o->records, .key_max = RUMA_KV_KEY_MAX - 8,
		.value_size = (size_t)o->value_size, .note = add_note, .note_ctx = r,
	};
	if ((rc = o->sys->open(&c, &r->sh.store, err, sizeof(err)))) {
		fprintf(stderr, "ruma kv: %s: cannot open the store: %s\n", o->sys->name, err);
		return 2;
	}
	return 0;
}

static int setup(struct run *r)
{
	const ruma_kv_opts *o = r->o;
	r->nthreads = o->threads + (o->wl->writer ? 1u : 0u);
	r->sh.o = o;
	r->sh.sync = o->durability == RUMA_KV_SYNC || o->wl->force_sync;
	r->sh.inserting = aligned_alloc(64, r->nthreads * sizeof(struct ruma_kv_slot));
	r->sh.ops = aligned_alloc(64, r->nthreads * sizeof(struct ruma_kv_slot));
	r->w = calloc(r->nthreads, sizeof(*r->w));
	if (!r->sh.inserting || !r->sh.ops || !r->w) {
		fprintf(stderr, "ruma kv: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < r->nthreads; i++) {
		atomic_init(&r->sh.inserting[i].v, UINT64_MAX);
		atomic_init(&r->sh.ops[i].v, 0);
	}
	atomic_init(&r->sh.next_insert, o->wl->load ? o->records : 0);
	if (o->dist == RUMA_KV_LATEST) /* once for every thread: O(records) */
		r->sh.latest_zetan = ruma_kv_zeta(0, o->records ? o->records : 1,
						  RUMA_KV_ZIPF_THETA, 0);
	int st = open_store(r);
	if (st)
		return st;
	ruma_rng seeds;
	ruma_rng_seed(&seeds, o->seed);
	for (unsigned i = 0; i < r->nthreads; i++) {
		r->w[i].writer = i == o->threads;
		if (ruma_kv_worker_init(&r->w[i], &r->sh, i, ruma_rng_next(&seeds))) {
			fprintf(stderr, "ruma kv: %s\n", r->sh.errmsg);
			return 1;
		}
	}
	return 0;
}

/* The status of a run a signal stopped (after the store was closed). */
static int stopped(void)
{
	int sig = ruma_kv_stop_signal();
	fprintf(stderr, "ruma kv: stopped by signal %d; the store is closed and removed\n", sig);
	return 128 + sig;
}

/* --check: the table read back on the first thread's handle; 0 or 1. */
static int check(struct run *r)
{
	uint64_t entries = 0;
	double t0 = ruma_now_sec();
	int rc = ruma_kv_verify(&r->w[0], &entries);
	if (rc) {
		fprintf(stderr, "ruma kv: %s: %s\n", r->o->sys->name, r->w[0].th->err);
		return 1;
	}
	bool numbered = r->o->wl->load || r->o->wl->pattern == RUMA_KV_FILLSEQ;
	fprintf(stderr, "ruma kv: check: %" PRIu64 " entries in key order%s (%.2f s)\n", entries,
		numbered ? ", every key written read back" : " (random keys: not read back)",
		ruma_now_sec() - t0);
	return 0;
}

/* Load and run; 0, 1 with the failure on stderr, or 128 + a signal that stopped it. */
static int load_and_run(struct run *r)
{
	const ruma_kv_opts *o = r->o;
	if (o->wl->load) {
		double t0 = ruma_now_sec();
		if (run_threads(r, o->threads, ruma_kv_load_main, false))
			goto failed;
		if (ruma_kv_stop_signal())
			return stopped();
		double secs = ruma_now_sec() - t0;
		fprintf(stderr, "ruma kv: load %" PRIu64 " records in %.2f s\n", o->records, secs);
		set_row(r, "load", -1, "insert");
		ruma_result_add(r->res, "load", "s", secs);
		ruma_result_add(r->res, "load_rate", "ops/s", secs > 0 ? (double)o->records / secs
								       : NAN);
	}
	/* the run's time: from the start to the end of the last counted
	 * thread's last operation (not to the main thread's next wake-up) */
	versions_start(r);
	uint64_t t0 = ruma_now_ns(), end = t0, last = t0;
	if (run_threads(r, r->nthreads, ruma_kv_run_main, true))
		goto failed;
	for (unsigned i = 0; i < r->nthreads; i++) {
		end = i < o->threads && r->w[i].end_ns > end ? r->w[i].end_ns : end;
		last = r->w[i].end_ns > last ? r->w[i].end_ns : last;
	}
	if (r->versions)
		versions_wait(r, last);
	report(r, (double)(end - t0) / 1e9);
	versions_report(r);
	if (ruma_kv_stop_signal())
		return stopped();
	return o->check ? check(r) : 0;
failed:
	fprintf(stderr, "ruma kv: %s\n", r->sh.errmsg);
	return 1;
}

static int teardown(struct run *r, int st)
{
	char err[512];
	for (unsigned i = 0; r->w && i < r->nthreads; i++)
		ruma_kv_worker_fini(&r->w[i]);
	if (r->sh.store && r->o->sys->close(r->sh.store, err, sizeof(err))) {
		fprintf(stderr, "ruma kv: %s: close: %s\n", r->o->sys->name, err);
		st = st ? st : 1;
	}
	if (r->dir[0] && ruma_kv_store_dir_remove(r->dir))
		fprintf(stderr, "ruma kv: cannot remove %s\n", r->dir);
	else if (r->dir[0] && r->made_parent)
		(void)rmdir(r->o->dir); /* ours; left alone when another run uses it too */
	free(r->w);
	free(r->sh.inserting);
	free(r->sh.ops);
	if (ruma_outputs_close(&r->out))
		st = st ? st : 1;
	return st;
}

/* --cgroup: into the child before the store opens (its page cache and
 * pool are charged there); 0 or 2 (refused: no run without the limit). */
static int cgroup_enter(struct run *r)
{
	const ruma_kv_opts *o = r->o;
	if (!o->cgroup && !o->cgroup_limit)
		return 0;
	char err[700];
	uint64_t limit = o->cgroup_limit ? o->cgroup_limit : ruma_kv_cgroup_limit(o->memory);
	if (ruma_kv_cgroup_enter(&r->cg, limit, err, sizeof(err))) {
		fprintf(stderr, "ruma kv: --cgroup: %s; refusing to run without the memory limit\n",
			err);
		return 2;
	}
	char lim[32];
	fprintf(stderr, "ruma kv: memory cgroup v%d %s, limit %s (page cache included)\n",
		r->cg.version, r->cg.child, ruma_format_size(limit, lim, sizeof(lim)));
	return 0;
}

/* The cgroup's peak and limit hits as rows (before the outputs close). */
static void cgroup_report(struct run *r)
{
	if (!r->cg.entered)
		return;
	uint64_t peak, hits;
	ruma_kv_cgroup_usage(&r->cg, &peak, &hits);
	char p[32], l[32];
	fprintf(stderr, "ruma kv: memory cgroup peak %s of %s, %" PRIu64 " charges failed at the limit\n",
		ruma_format_size(peak, p, sizeof(p)), ruma_format_size(r->cg.limit, l, sizeof(l)),
		hits);
	set_row(r, "run", -1, "all");
	ruma_result_add(r->res, "cgroup_limit", "bytes", (double)r->cg.limit);
	ruma_result_add(r->res, "cgroup_peak", "bytes", (double)peak);
	ruma_result_add(r->res, "cgroup_limit_hits", "count", (double)hits);
}

/* Back out of the cgroup after the store is closed; 0 or 1. */
static int cgroup_leave(struct run *r)
{
	char err[700];
	if (!ruma_kv_cgroup_leave(&r->cg, err, sizeof(err)))
		return 0;
	fprintf(stderr, "ruma kv: --cgroup: %s\n", err);
	return 1;
}

int ruma_kv_run(const ruma_kv_opts *o)
{
	struct run *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "ruma kv: out of memory\n");
		return 1;
	}
	r->o = o;
	if (ruma_outputs_open(&r->out, "kv", NULL, o->result)) {
		free(r);
		return 2;
	}
	r->res = ruma_outputs_result(&r->out);
	struct sigaction old[2];
	ruma_kv_catch_signals(old);
	int st = cgroup_enter(r);
	if (!st)
		st = setup(r);
	if (!st) {
		report_config(r);
		st = load_and_run(r);
		cgroup_report(r);
	}
	st = teardown(r, st);
	if (cgroup_leave(r) && !st)
		st = 1;
	ruma_kv_restore_signals(old);
	free(r);
	return st;
}
