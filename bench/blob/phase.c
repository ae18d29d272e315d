/*
 * phase.c — one phase of a `ruma blob` run (run.h): its stores, its
 * threads, its accounting and its report.
 *
 * Timing: a phase's time runs from before the first thread starts to after
 * the last one ends; each operation's latency is taken around the
 * system's call alone (an object's bytes are made before the clock
 * starts).  Accounting: the device counters (iostat.c) are read before the
 * phase and after it has been settled (the system's settle: everything
 * written made durable, and for cold reads dropped from memory), so the
 * bytes a store writes later than its commits (ruma's pages at a
 * checkpoint or a close) count towards the phase that caused them; the
 * settle is not timed.
 *
 * CSV columns (one row per phase): system, mode, op, size, threads,
 * durability, cache, objects, seconds, objects_per_s, mb_per_s (10^6
 * bytes), p50_us, p99_us, payload_bytes, proc_write_bytes, wa_proc,
 * dev_write_bytes, wa_dev, store_bytes, live_bytes, space_amp; a figure
 * not measured is empty (docs/bench/blob.md).
 *
 * Syscalls: pthread_create/join; mkdir (store_dir.c for removal).
 */
#include "bench/blob/run.h"
#include "bench/kv/store_dir.h"

#include <ruma/db.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int ruma_blob_store_fresh(ruma_blob_ctx *ctx, const char *name, void **store, char *path,
			  size_t len)
{
	const ruma_blob_opts *o = ctx->o;
	char err[512];
	if ((size_t)snprintf(path, len, "%s/%s", ctx->base, name) >= len) {
		fprintf(stderr, "ruma blob: %s/%s: path too long\n", ctx->base, name);
		return 2;
	}
	int rc = ruma_kv_store_dir_remove(path);
	if (rc || mkdir(path, 0755)) {
		fprintf(stderr, "ruma blob: cannot make %s: %s\n", path,
			strerror(rc ? -rc : errno));
		return 2;
	}
	ruma_blob_conf c = { .dir = path, .memory = o->memory, .sync = o->sync,
			      .huge_buffers = o->huge_buffers };
	if ((rc = o->sys->open(&c, store, err, sizeof(err)))) {
		fprintf(stderr, "ruma blob: %s: cannot open the store: %s\n", o->sys->name, err);
		return 2;
	}
	return 0;
}

int ruma_blob_store_close(ruma_blob_ctx *ctx, void *store)
{
	char err[512];
	if (!store || !ctx->o->sys->close(store, err, sizeof(err)))
		return 0;
	fprintf(stderr, "ruma blob: %s: close: %s\n", ctx->o->sys->name, err);
	return 1;
}

int ruma_blob_worker_fail(ruma_blob_worker *w, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->errmsg, sizeof(w->errmsg), fmt, ap);
	va_end(ap);
	w->err = code ? code : -EIO;
	return w->err;
}

int ruma_blob_buffer(void **buf, size_t *cap, size_t len, bool huge)
{
	void *p = NULL;
	if (len <= *cap && *buf)
		return 0;
	int rc = huge ? ruma_db_buffer_alloc(len ? len : 1, &p)
		      : (posix_memalign(&p, 4096, len ? len : 1) ? -ENOMEM : 0);
	if (rc)
		return -ENOMEM;
	ruma_blob_buffer_free(*buf, huge);
	*buf = p;
	*cap = len;
	return 0;
}

void ruma_blob_buffer_free(void *buf, bool huge)
{
	if (huge)
		ruma_db_buffer_free(buf);
	else
		free(buf);
}

int ruma_blob_worker_buf(ruma_blob_worker *w, size_t len)
{
	void *b = w->buf;
	if (ruma_blob_buffer(&b, &w->cap, len, w->ctx->o->huge_buffers))
		return ruma_blob_worker_fail(w, -ENOMEM, "out of memory for %zu bytes", len);
	w->buf = b;
	return 0;
}

static void *worker_main(void *arg)
{
	ruma_blob_worker *w = arg;
	char err[256];
	int rc = w->sys->thread_open(w->store, &w->th, err, sizeof(err));
	if (rc) {
		ruma_blob_worker_fail(w, rc, "thread %u: %s", w->tid, err);
		return NULL;
	}
	for (uint64_t i = w->tid; i < w->items && !w->err; i += w->nthreads)
		if ((rc = w->fn(w, i)) && !w->err)
			ruma_blob_worker_fail(w, rc, "%s", w->th->err);
	w->sys->thread_close(w->th);
	w->th = NULL;
	return NULL;
}

/* Start n workers; the ones started are joined.  0 or the first failure. */
static int start_join(ruma_blob_worker *w, unsigned n)
{
	unsigned started = 0;
	int rc = 0;
	for (; started < n; started++) {
		int e = pthread_create(&w[started].pt, NULL, worker_main, &w[started]);
		if (e) {
			fprintf(stderr, "ruma blob: cannot start thread %u: %s\n", started,
				strerror(e));
			rc = 1;
			break;
		}
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(w[i].pt, NULL);
	return rc;
}

/* Sum the workers into p; 0 or 1 with the first failure on stderr. */
static int collect(ruma_blob_worker *w, unsigned n, ruma_blob_phase *p)
{
	int st = 0;
	for (unsigned i = 0; i < n; i++) {
		if (w[i].err && !st) {
			fprintf(stderr, "ruma blob: %s: %s: %s\n", w[i].sys->name, p->op,
				w[i].errmsg);
			st = 1;
		}
		p->objects += w[i].done;
		p->payload += w[i].bytes;
		if (w[i].lat)
			ruma_kv_hist_merge(p->lat, w[i].lat);
		free(w[i].lat);
		ruma_blob_buffer_free(w[i].buf, w[i].ctx->o->huge_buffers);
	}
	return st;
}

int ruma_blob_phase_run(ruma_blob_ctx *ctx, void *store, unsigned nthreads, uint64_t items,
			int (*fn)(ruma_blob_worker *w, uint64_t item), void *arg,
			uint64_t seed, ruma_blob_phase *p)
{
	ruma_blob_worker *w = calloc(nthreads, sizeof(*w));
	ruma_rng seeds;
	if (!w) {
		fprintf(stderr, "ruma blob: out of memory\n");
		return 1;
	}
	ruma_rng_seed(&seeds, seed);
	int st = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		w[i] = (ruma_blob_worker){ .ctx = ctx, .sys = ctx->o->sys, .store = store, .tid = i,
					   .nthreads = nthreads, .fn = fn, .items = items,
					   .arg = arg };
		ruma_rng_seed(&w[i].rng, ruma_rng_next(&seeds));
		w[i].lat = malloc(sizeof(*w[i].lat));
		if (!w[i].lat) {
			fprintf(stderr, "ruma blob: out of memory\n");
			st = 1;
			break;
		}
		ruma_kv_hist_reset(w[i].lat);
	}
	uint64_t t0 = ruma_now_ns();
	if (!st)
		st = start_join(w, nthreads);
	p->secs += (double)(ruma_now_ns() - t0) / 1e9;
	int st2 = collect(w, nthreads, p);
	free(w);
	return st ? st : st2;
}

int ruma_blob_phase_begin(ruma_blob_ctx *ctx, ruma_blob_phase *p, const char *op, uint64_t size)
{
	memset(p, 0, sizeof(*p));
	p->op = op;
	p->size = size;
	p->lat = malloc(sizeof(*p->lat));
	if (!p->lat) {
		fprintf(stderr, "ruma blob: out of memory\n");
		return 1;
	}
	ruma_kv_hist_reset(p->lat);
	int rc = ruma_blob_io_read(ctx->dev_stat, &p->before);
	if (rc) {
		fprintf(stderr, "ruma blob: cannot read /proc/self/io: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}

int ruma_blob_phase_end(ruma_blob_ctx *ctx, void *store, const char *path, bool cold,
			ruma_blob_phase *p)
{
	char err[512];
	int rc = ctx->o->sys->settle(store, cold, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ruma blob: %s: settle: %s\n", ctx->o->sys->name, err);
		return 1;
	}
	if ((rc = ruma_blob_io_read(ctx->dev_stat, &p->after)) ||
	    (rc = ruma_blob_dir_bytes(path, &p->store_bytes))) {
		fprintf(stderr, "ruma blob: cannot read the counters or %s: %s\n", path,
			strerror(-rc));
		return 1;
	}
	return 0;
}

/* Ratios of the phase: NAN where there is nothing to divide by. */
struct figures {
	double ops_s, mb_s, p50, p99, wa_proc, wa_dev, space;
	uint64_t proc, dev;
};

static double ratio(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

static void figures(const ruma_blob_phase *p, struct figures *f)
{
	f->ops_s = ratio((double)p->objects, p->secs);
	f->mb_s = p->payload ? ratio((double)p->payload / 1e6, p->secs) : NAN;
	f->p50 = p->lat->count ? (double)ruma_kv_hist_quantile(p->lat, 0.5) / 1e3 : NAN;
	f->p99 = p->lat->count ? (double)ruma_kv_hist_quantile(p->lat, 0.99) / 1e3 : NAN;
	f->proc = p->after.proc_write - p->before.proc_write;
	f->dev = p->after.dev_write - p->before.dev_write;
	bool dev = p->before.dev_ok && p->after.dev_ok;
	f->wa_proc = p->writes ? ratio((double)f->proc, (double)p->payload) : NAN;
	f->wa_dev = p->writes && dev ? ratio((double)f->dev, (double)p->payload) : NAN;
	if (!dev)
		f->dev = 0;
	f->space = ratio((double)p->store_bytes, (double)p->live_bytes);
}

/* A number for the CSV: empty when not measured. */
static void num(double v, const char *fmt)
{
	putchar(',');
	if (isfinite(v))
		printf(fmt, v);
}

static void csv_row(ruma_blob_ctx *ctx, const ruma_blob_phase *p, const struct figures *f)
{
	const ruma_blob_opts *o = ctx->o;
	static const char *const modes[] = { "ops", "churn", "crash" };
	if (o->quiet)
		return;
	if (!ctx->csv_header) {
		printf("system,mode,op,size,threads,durability,cache,objects,seconds,"
		       "objects_per_s,mb_per_s,p50_us,p99_us,payload_bytes,proc_write_bytes,"
		       "wa_proc,dev_write_bytes,wa_dev,store_bytes,live_bytes,space_amp\n");
		ctx->csv_header = true;
	}
	printf("%s,%s,%s,%" PRIu64 ",%u,%s,%s,%" PRIu64, o->sys->name, modes[o->mode], p->op,
	       p->size, o->threads, o->sync ? "sync" : "none", o->cold ? "cold" : "warm",
	       p->objects);
	num(p->secs, "%.6f");
	num(f->ops_s, "%.2f");
	num(f->mb_s, "%.2f");
	num(f->p50, "%.1f");
	num(f->p99, "%.1f");
	printf(",%" PRIu64 ",%" PRIu64, p->payload, f->proc);
	num(f->wa_proc, "%.4f");
	num(p->before.dev_ok ? (double)f->dev : NAN, "%.0f");
	num(f->wa_dev, "%.4f");
	printf(",%" PRIu64 ",%" PRIu64, p->store_bytes, p->live_bytes);
	num(f->space, "%.4f");
	putchar('\n');
	fflush(stdout);
}

static void result_rows(ruma_blob_ctx *ctx, const ruma_blob_phase *p, const struct figures *f)
{
	ruma_result *r = ctx->res;
	ruma_result_set(r, "op", p->op);
	ruma_result_setu(r, "size", p->size);
	ruma_result_add(r, "objects", "objects", (double)p->objects);
	ruma_result_add(r, "seconds", "s", p->secs);
	ruma_result_add(r, "objects_per_s", "objects/s", f->ops_s);
	ruma_result_add(r, "mb_per_s", "MB/s", f->mb_s);
	ruma_result_add(r, "p50", "s", f->p50 / 1e6);
	ruma_result_add(r, "p99", "s", f->p99 / 1e6);
	ruma_result_add(r, "payload", "bytes", (double)p->payload);
	ruma_result_add(r, "proc_write", "bytes", (double)f->proc);
	ruma_result_add(r, "wa_proc", "ratio", f->wa_proc);
	ruma_result_add(r, "wa_dev", "ratio", f->wa_dev);
	ruma_result_add(r, "store_bytes", "bytes", (double)p->store_bytes);
	ruma_result_add(r, "live_bytes", "bytes", (double)p->live_bytes);
	ruma_result_add(r, "space_amp", "ratio", f->space);
}

/* A figure for the stderr line: "-" when not measured. */
static const char *fig(double v, const char *fmt, char *buf, size_t len)
{
	if (!isfinite(v))
		return "-";
	snprintf(buf, len, fmt, v);
	return buf;
}

void ruma_blob_report(ruma_blob_ctx *ctx, ruma_blob_phase *p)
{
	struct figures f;
	char sz[32], st[32], lv[32], mb[32], wp[32], wd[32];
	figures(p, &f);
	csv_row(ctx, p, &f);
	result_rows(ctx, p, &f);
	fprintf(stderr, "ruma blob: %-13s %-9s %8" PRIu64 " objects in %.3f s: %.1f/s, %s MB/s, "
		"p50 %.0f us, p99 %.0f us; written/payload %s (process) %s (device); "
		"store %s for %s live\n", p->op, ruma_format_size(p->size, sz, sizeof(sz)),
		p->objects, p->secs, f.ops_s, fig(f.mb_s, "%.1f", mb, sizeof(mb)), f.p50, f.p99,
		fig(f.wa_proc, "%.3f", wp, sizeof(wp)), fig(f.wa_dev, "%.3f", wd, sizeof(wd)),
		ruma_format_size(p->store_bytes, st, sizeof(st)),
		ruma_format_size(p->live_bytes, lv, sizeof(lv)));
	free(p->lat);
	p->lat = NULL;
}
