/*
 * churn.c — `ruma blob --mode churn` (blob.h): what a store looks like
 * after a long life of overwrites and deletes.
 *
 * --churn-ops operations fall on object ids 0 .. --churn-keys - 1 (thread
 * t takes the ids t mod threads): an id without an object gets one; an id
 * with one is overwritten or deleted, each with probability 1/2.  Sizes are
 * log-uniform in [--min-size, --max-size] (100 B to 10 MB by default).
 * The phase is reported as op "churn" (size 0: mixed), with the store's
 * disk space against the live bytes after it and against the most live
 * bytes it held.  Then --probes
 * puts of --probe-size bytes (new ids, one thread) are timed on the
 * churned store ("probe-churned") and on a fresh store ("probe-fresh");
 * the ratio of their median latencies is the figure the goal names.
 *
 * Syscalls: none of its own.
 */
#include "bench/blob/run.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

struct churn {
	uint64_t *size;     /* per id: the object's size, 0 = none */
	_Atomic uint64_t live, peak; /* the live bytes, and their most */
	double lmin, lmax;  /* log of the size bounds */
	uint64_t keys;
	uint64_t probe_size;
};

static uint64_t draw_size(ruma_blob_worker *w, const struct churn *c)
{
	double l = c->lmin + ruma_rng_double(&w->rng) * (c->lmax - c->lmin);
	uint64_t v = (uint64_t)llround(exp(l));
	return v ? v : 1;
}

/* Count delta (two's complement) into the live bytes. */
static void live_add(struct churn *c, uint64_t delta)
{
	uint64_t now = atomic_fetch_add(&c->live, delta) + delta;
	uint64_t peak = atomic_load(&c->peak);
	while (now > peak && !atomic_compare_exchange_weak(&c->peak, &peak, now))
		;
}

static int churn_put(ruma_blob_worker *w, struct churn *c, uint64_t id, uint64_t size,
		     uint64_t version)
{
	int rc = ruma_blob_worker_buf(w, (size_t)size);
	if (rc)
		return rc;
	ruma_blob_fill(w->buf, (size_t)size, id, version);
	uint64_t t0 = ruma_now_ns();
	rc = w->sys->put(w->th, id, w->buf, (size_t)size);
	ruma_kv_hist_add(w->lat, ruma_now_ns() - t0);
	if (rc)
		return rc;
	live_add(c, size - c->size[id]);
	c->size[id] = size;
	w->done++;
	w->bytes += size;
	return 0;
}

static int churn_del(ruma_blob_worker *w, struct churn *c, uint64_t id)
{
	uint64_t t0 = ruma_now_ns();
	int rc = w->sys->del(w->th, id);
	ruma_kv_hist_add(w->lat, ruma_now_ns() - t0);
	if (rc)
		return rc == RUMA_ENOTFOUND ? ruma_blob_worker_fail(w, -EIO, "object %" PRIu64
								    " not found to delete", id)
					    : rc;
	live_add(c, 0 - c->size[id]);
	c->size[id] = 0;
	w->done++;
	return 0;
}

static int do_churn(ruma_blob_worker *w, uint64_t item)
{
	struct churn *c = w->arg;
	uint64_t mine = (c->keys - w->tid + w->nthreads - 1) / w->nthreads;
	uint64_t id = w->tid + w->nthreads * ruma_rng_below(&w->rng, mine);
	if (c->size[id] && ruma_rng_below(&w->rng, 2))
		return churn_del(w, c, id);
	return churn_put(w, c, id, draw_size(w, c), item + 1);
}

static int do_probe(ruma_blob_worker *w, uint64_t item)
{
	struct churn *c = w->arg;
	int rc = ruma_blob_worker_buf(w, (size_t)c->probe_size);
	if (rc)
		return rc;
	uint64_t id = c->keys + item;
	ruma_blob_fill(w->buf, (size_t)c->probe_size, id, 1);
	uint64_t t0 = ruma_now_ns();
	rc = w->sys->put(w->th, id, w->buf, (size_t)c->probe_size);
	ruma_kv_hist_add(w->lat, ruma_now_ns() - t0);
	if (!rc) {
		w->done++;
		w->bytes += c->probe_size;
	}
	return rc;
}

/* The probes on store (reported as op); their median latency into *p50 (ns). */
static int probes(ruma_blob_ctx *ctx, void *store, const char *path, const char *op,
		  struct churn *c, uint64_t live, double *p50)
{
	ruma_blob_phase p;
	if (ruma_blob_phase_begin(ctx, &p, op, c->probe_size))
		return 1;
	p.writes = true;
	int st = ruma_blob_phase_run(ctx, store, 1, ctx->o->probes, do_probe, c, ctx->o->seed, &p);
	if (!st)
		st = ruma_blob_phase_end(ctx, store, path, false, &p);
	p.live_bytes = live + p.payload;
	*p50 = p.lat->count ? (double)ruma_kv_hist_quantile(p.lat, 0.5) : NAN;
	if (!st)
		ruma_blob_report(ctx, &p);
	free(p.lat);
	return st;
}

/* The churn phase on store; the live bytes after it into *live. */
static int churn_phase(ruma_blob_ctx *ctx, void *store, const char *path, struct churn *c,
		       uint64_t *live)
{
	const ruma_blob_opts *o = ctx->o;
	ruma_blob_phase p;
	if (ruma_blob_phase_begin(ctx, &p, "churn", 0))
		return 1;
	p.writes = true;
	int st = ruma_blob_phase_run(ctx, store, o->threads, o->churn_ops, do_churn, c, o->seed,
				     &p);
	if (!st)
		st = ruma_blob_phase_end(ctx, store, path, false, &p);
	*live = atomic_load(&c->live);
	p.live_bytes = *live;
	if (!st) {
		char sz[32], pk[32];
		ruma_blob_report(ctx, &p);
		uint64_t peak = atomic_load(&c->peak);
		fprintf(stderr, "ruma blob: churn: store %s, %.2fx the most live bytes it held (%s)\n",
			ruma_format_size(p.store_bytes, sz, sizeof(sz)),
			peak ? (double)p.store_bytes / (double)peak : NAN,
			ruma_format_size(peak, pk, sizeof(pk)));
	}
	free(p.lat);
	return st;
}

/* Churn, probe, probe a fresh store; the exit status. */
static int churn_run(ruma_blob_ctx *ctx, struct churn *c)
{
	char path[4200], fresh[4200];
	void *store, *store2;
	uint64_t live;
	double churned, clean;
	int st = ruma_blob_store_fresh(ctx, "churn", &store, path, sizeof(path));
	if (st)
		return st;
	st = churn_phase(ctx, store, path, c, &live);
	if (!st)
		st = probes(ctx, store, path, "probe-churned", c, live, &churned);
	int st2 = ruma_blob_store_close(ctx, store);
	st = st ? st : st2;
	if (st || (st = ruma_blob_store_fresh(ctx, "fresh", &store2, fresh, sizeof(fresh))))
		return st;
	st = probes(ctx, store2, fresh, "probe-fresh", c, 0, &clean);
	st2 = ruma_blob_store_close(ctx, store2);
	if (st || st2)
		return st ? st : st2;
	char sz[32];
	double r = churned / clean;
	fprintf(stderr, "ruma blob: churn: a put of %s takes %.2fx its time on a fresh store "
		"(median of %u)\n", ruma_format_size(c->probe_size, sz, sizeof(sz)), r,
		ctx->o->probes);
	ruma_result_set(ctx->res, "op", "churn");
	ruma_result_setu(ctx->res, "size", c->probe_size);
	ruma_result_add(ctx->res, "probe_ratio", "ratio", r);
	return 0;
}

int ruma_blob_churn(ruma_blob_ctx *ctx)
{
	const ruma_blob_opts *o = ctx->o;
	if (o->churn_keys < o->threads) {
		fprintf(stderr, "ruma blob: --churn-keys %" PRIu64 ": at least one key per thread "
			"(--threads %u)\n", o->churn_keys, o->threads);
		return 2;
	}
	struct churn c = {
		.size = calloc(o->churn_keys, sizeof(uint64_t)),
		.lmin = log((double)o->min_size), .lmax = log((double)o->max_size),
		.keys = o->churn_keys, .probe_size = o->probe_size,
	};
	int st = 1;
	if (!c.size)
		fprintf(stderr, "ruma blob: out of memory for %" PRIu64 " keys\n", o->churn_keys);
	else
		st = churn_run(ctx, &c);
	free(c.size);
	return st;
}
