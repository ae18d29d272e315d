/*
 * driver.c — one `ruma blob` run (blob.h): the outputs, the run's store
 * directory <dir>/kv-blob-<system> (bench/kv/store_dir.c: made, marked,
 * removed after the run), the optional memory cgroup, and the ops mode:
 * for each size, on a fresh store, the phases put (new objects), get
 * (whole reads, cold or after an untimed read pass), overwrite (the same
 * objects, new contents of the same size) and delete, each reported by
 * phase.c.  Objects are split among the threads by number (object i to
 * thread i mod threads), so no two threads touch one object.
 *
 * Syscalls: stat and rmdir (--dir); the store directory's (store_dir.c).
 */
#include "bench/blob/run.h"
#include "bench/kv/store_dir.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The state the phases of one size share. */
struct ops {
	uint64_t size, version;
	bool verify;
};

static int do_put(ruma_blob_worker *w, uint64_t id)
{
	struct ops *s = w->arg;
	int rc = ruma_blob_worker_buf(w, (size_t)s->size);
	if (rc)
		return rc;
	ruma_blob_fill(w->buf, (size_t)s->size, id, s->version);
	uint64_t t0 = ruma_now_ns();
	rc = w->ctx->o->stream ? w->sys->put_stream(w->th, id, w->buf, (size_t)s->size,
						     (size_t)w->ctx->o->piece)
			       : w->sys->put(w->th, id, w->buf, (size_t)s->size);
	ruma_kv_hist_add(w->lat, ruma_now_ns() - t0);
	if (rc)
		return rc;
	w->done++;
	w->bytes += s->size;
	return 0;
}

static int do_get(ruma_blob_worker *w, uint64_t id)
{
	struct ops *s = w->arg;
	const void *data;
	size_t len;
	uint64_t version, t0 = ruma_now_ns();
	int rc = w->sys->get(w->th, id, &data, &len);
	ruma_kv_hist_add(w->lat, ruma_now_ns() - t0);
	if (rc == RUMA_ENOTFOUND)
		return ruma_blob_worker_fail(w, -EIO, "object %" PRIu64 " not found", id);
	if (rc)
		return rc;
	if (ruma_blob_verify(data, len, id, s->verify, &version, w->errmsg, sizeof(w->errmsg)))
		return ruma_blob_worker_fail(w, -EIO, "%s", w->errmsg);
	if (len != s->size || version != s->version)
		return ruma_blob_worker_fail(w, -EIO, "object %" PRIu64 ": version %" PRIu64 " of "
					     "%zu bytes read, %" PRIu64 " of %" PRIu64 " written",
					     id, version, len, s->version, s->size);
	w->done++;
	w->bytes += len;
	return 0;
}

static int do_del(ruma_blob_worker *w, uint64_t id)
{
	uint64_t t0 = ruma_now_ns();
	int rc = w->sys->del(w->th, id);
	ruma_kv_hist_add(w->lat, ruma_now_ns() - t0);
	if (rc == RUMA_ENOTFOUND)
		return ruma_blob_worker_fail(w, -EIO, "object %" PRIu64 " not found to delete", id);
	if (!rc)
		w->done++;
	return rc;
}

/* One phase of the ops mode: run, settle, report (when asked for). */
static int phase(ruma_blob_ctx *ctx, void *store, const char *path, ruma_blob_op op,
		 struct ops *s, uint64_t n, uint64_t live)
{
	static int (*const fns[])(ruma_blob_worker *, uint64_t) = { do_put, do_get, do_put,
								    do_del };
	const ruma_blob_opts *o = ctx->o;
	ruma_blob_phase p;
	if (ruma_blob_phase_begin(ctx, &p, ruma_blob_op_name(op), s->size))
		return 1;
	p.writes = op != RUMA_BLOB_GET;
	int st = ruma_blob_phase_run(ctx, store, o->threads, n, fns[op], s, o->seed + op, &p);
	if (!st)
		st = ruma_blob_phase_end(ctx, store, path, o->cold, &p);
	p.live_bytes = live;
	if (!st && (o->ops & (1u << op)))
		ruma_blob_report(ctx, &p);
	free(p.lat);
	return st;
}

/* The untimed read pass before warm reads. */
static int warm_up(ruma_blob_ctx *ctx, void *store, struct ops *s, uint64_t n)
{
	ruma_blob_phase p;
	if (ruma_blob_phase_begin(ctx, &p, "warm-up", s->size))
		return 1;
	int st = ruma_blob_phase_run(ctx, store, ctx->o->threads, n, do_get, s, 0, &p);
	free(p.lat);
	return st;
}

/* The phases of one size on a fresh store; the exit status. */
static int one_size(ruma_blob_ctx *ctx, uint64_t size)
{
	const ruma_blob_opts *o = ctx->o;
	uint64_t n = o->objects ? o->objects : (o->data / size ? o->data / size : 1);
	struct ops s = { .size = size, .version = 1, .verify = o->verify };
	char name[40], path[4200];
	void *store;
	snprintf(name, sizeof(name), "size-%" PRIu64, size);
	int st = ruma_blob_store_fresh(ctx, name, &store, path, sizeof(path));
	if (st)
		return st;
	if (!o->cold && n * size > o->memory)
		fprintf(stderr, "ruma blob: warm reads of %" PRIu64 " bytes with a pool or cache "
			"of %" PRIu64 ": partly cold\n", n * size, o->memory);
	st = phase(ctx, store, path, RUMA_BLOB_PUT, &s, n, n * size);
	if (!st && (o->ops & (1u << RUMA_BLOB_GET))) {
		if (!o->cold)
			st = warm_up(ctx, store, &s, n);
		if (!st)
			st = phase(ctx, store, path, RUMA_BLOB_GET, &s, n, n * size);
	}
	s.version = 2;
	if (!st && (o->ops & (1u << RUMA_BLOB_OVERWRITE)))
		st = phase(ctx, store, path, RUMA_BLOB_OVERWRITE, &s, n, n * size);
	if (!st && (o->ops & (1u << RUMA_BLOB_DELETE)))
		st = phase(ctx, store, path, RUMA_BLOB_DELETE, &s, n, 0);
	int st2 = ruma_blob_store_close(ctx, store);
	return st ? st : st2;
}

static int run_ops(ruma_blob_ctx *ctx)
{
	for (unsigned i = 0; i < ctx->o->nsizes; i++) {
		int st = one_size(ctx, ctx->o->sizes[i]);
		if (st)
			return st;
	}
	return 0;
}

static void report_config(ruma_blob_ctx *ctx)
{
	static const char *const modes[] = { "ops", "churn", "crash" };
	const ruma_blob_opts *o = ctx->o;
	char mem[32];
	fprintf(stderr, "ruma blob: %s (%s), mode %s, %u thread%s, durability %s, %s reads, "
		"%s buffers, memory %s, stores in %s; device bytes from %s\n", o->sys->name,
		o->sys->what, modes[o->mode], o->threads, o->threads == 1 ? "" : "s",
		o->sync ? "sync" : "none", o->cold ? "cold" : "warm",
		o->huge_buffers ? "huge" : "small", ruma_format_size(o->memory, mem, sizeof(mem)),
		ctx->base, ctx->dev_stat[0] ? ctx->dev_stat : "no block device (only "
		"/proc/self/io)");
	ruma_result_set(ctx->res, "system", o->sys->name);
	ruma_result_set(ctx->res, "mode", modes[o->mode]);
	ruma_result_setu(ctx->res, "threads", o->threads);
	ruma_result_set(ctx->res, "durability", o->sync ? "sync" : "none");
	ruma_result_set(ctx->res, "cache", o->cold ? "cold" : "warm");
	ruma_result_set(ctx->res, "buffers", o->huge_buffers ? "huge" : "small");
	ruma_result_setu(ctx->res, "memory", o->memory);
}

/* The run's directory and device; 0 or 2. */
static int setup(ruma_blob_ctx *ctx)
{
	const ruma_blob_opts *o = ctx->o;
	char err[512], tag[64];
	struct stat st;
	ctx->made_parent = stat(o->dir, &st) != 0;
	snprintf(tag, sizeof(tag), "blob-%s", o->sys->name);
	if (ruma_kv_store_dir(o->dir, tag, ctx->base, sizeof(ctx->base), err, sizeof(err))) {
		fprintf(stderr, "ruma blob: %s\n", err);
		return 2;
	}
	if (!ruma_blob_dev_stat(ctx->base, ctx->dev_stat, sizeof(ctx->dev_stat)))
		ctx->dev_stat[0] = '\0';
	report_config(ctx);
	return 0;
}

static void teardown(ruma_blob_ctx *ctx)
{
	if (ctx->keep)
		return;
	if (ctx->base[0] && ruma_kv_store_dir_remove(ctx->base))
		fprintf(stderr, "ruma blob: cannot remove %s\n", ctx->base);
	else if (ctx->base[0] && ctx->made_parent)
		(void)rmdir(ctx->o->dir); /* ours; left alone when another run uses it too */
}

/* --cgroup: into the child before any store opens; 0 or 2. */
static int cgroup_enter(ruma_blob_ctx *ctx)
{
	const ruma_blob_opts *o = ctx->o;
	if (!o->cgroup && !o->cgroup_limit)
		return 0;
	char err[700];
	uint64_t limit = o->cgroup_limit ? o->cgroup_limit : ruma_kv_cgroup_limit(o->memory);
	if (ruma_kv_cgroup_enter(&ctx->cg, limit, err, sizeof(err))) {
		fprintf(stderr, "ruma blob: --cgroup: %s; refusing to run without the memory "
			"limit\n", err);
		return 2;
	}
	return 0;
}

static int cgroup_leave(ruma_blob_ctx *ctx)
{
	char err[700];
	if (!ruma_kv_cgroup_leave(&ctx->cg, err, sizeof(err)))
		return 0;
	fprintf(stderr, "ruma blob: --cgroup: %s\n", err);
	return 1;
}

int ruma_blob_run(const ruma_blob_opts *o)
{
	ruma_blob_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		fprintf(stderr, "ruma blob: out of memory\n");
		return 1;
	}
	ctx->o = o;
	if (ruma_outputs_open(&ctx->out, "blob", NULL, o->result)) {
		free(ctx);
		return 2;
	}
	ctx->res = ruma_outputs_result(&ctx->out);
	int st = cgroup_enter(ctx);
	if (!st)
		st = setup(ctx);
	if (!st)
		st = o->mode == RUMA_BLOB_OPS ? run_ops(ctx) : o->mode == RUMA_BLOB_CHURN
			? ruma_blob_churn(ctx) : ruma_blob_crash(ctx);
	teardown(ctx);
	if (cgroup_leave(ctx) && !st)
		st = 1;
	if (ruma_outputs_close(&ctx->out) && !st)
		st = 1;
	free(ctx);
	return st;
}
