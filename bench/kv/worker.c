/*
 * worker.c — one thread of a `ruma kv` run (worker.h).
 *
 * Every operation is one transaction: begin (saying whether it writes),
 * the calls, commit.  RUMA_ECONFLICT from any of them aborts and runs the
 * same operation again on the same key after a sched_yield (counted as a
 * retry; its latency includes the retries).  A read checks what it found: a value of
 * --value-size bytes whose first 8 bytes are the key number it was written
 * for, so that no system is measured returning less; the bytes are copied
 * out, as a client reading the record does.  Values are --value-size
 * bytes: the key number and a slice of a per-thread random buffer.
 *
 * Inserts take the next key number from a shared counter and publish it
 * in their slot until done; reads choose below the smallest number still
 * being inserted, so they only ask for keys that exist (YCSB's
 * acknowledged counter).
 *
 * scanfull and scanwhilewriting: a run thread's operation is one scan of
 * the whole table, every entry checked (snapcheck.h); their writer puts a
 * row and the meta row with the next stamp in one transaction (never a
 * one-call transaction, so that both commit together), and publishes the
 * stamp once it has committed.
 *
 * --check reads every numbered key back and scans the table in order, a
 * quarter of the cache's worth of values per transaction (a store may hold
 * a large value's pages until its transaction ends).
 *
 * SIGINT and SIGTERM, caught while a run is on (one-shot: a second one
 * kills), only record their number; every thread stops at its next
 * operation (the load at its next transaction).
 */
#include "bench/kv/worker.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int stop_signal;

static void on_stop_signal(int sig)
{
	atomic_store(&stop_signal, sig);
}

void ruma_kv_catch_signals(struct sigaction old[2])
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

void ruma_kv_restore_signals(const struct sigaction old[2])
{
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
}

int ruma_kv_stop_signal(void)
{
	return atomic_load(&stop_signal);
}

bool ruma_kv_stopping(const ruma_kv_shared *sh)
{
	return atomic_load_explicit(&sh->stop, memory_order_relaxed) ||
	       atomic_load_explicit(&stop_signal, memory_order_relaxed);
}

void ruma_kv_worker_fail(ruma_kv_shared *sh, int code, const char *fmt, ...)
{
	int zero = 0;
	if (atomic_compare_exchange_strong(&sh->err, &zero, code ? code : -EIO)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(sh->errmsg, sizeof(sh->errmsg), fmt, ap);
		va_end(ap);
	}
	atomic_store(&sh->stop, true);
}

int ruma_kv_worker_init(ruma_kv_worker *w, ruma_kv_shared *sh, unsigned tid, uint64_t seed)
{
	const ruma_kv_opts *o = sh->o;
	size_t vs = (size_t)o->value_size;
	char err[256];

	w->sh = sh;
	w->tid = tid;
	ruma_rng_seed(&w->rng, seed);
	ruma_kv_chooser_init(&w->chooser, o->dist, o->records ? o->records : 1, sh->latest_zetan);
	w->val = malloc(vs);
	w->readbuf = malloc(vs + 1);
	w->rand = malloc(2 * vs);
	w->hist = malloc(RUMA_KV_NOPS * sizeof(*w->hist));
	if (!w->val || !w->readbuf || !w->rand || !w->hist) {
		ruma_kv_worker_fail(sh, -ENOMEM, "thread %u: out of memory", tid);
		return -ENOMEM;
	}
	for (size_t i = 0; i < 2 * vs; i++)
		w->rand[i] = (unsigned char)ruma_rng_next(&w->rng);
	for (unsigned i = 0; i < RUMA_KV_NOPS; i++)
		ruma_kv_hist_reset(&w->hist[i]);
	int rc = o->sys->thread_open(sh->store, &w->th, err, sizeof(err));
	if (rc)
		ruma_kv_worker_fail(sh, rc, "%s: thread %u: %s", o->sys->name, tid, err);
	return rc;
}

void ruma_kv_worker_fini(ruma_kv_worker *w)
{
	if (w->th)
		w->sh->o->sys->thread_close(w->th);
	free(w->val);
	free(w->readbuf);
	free(w->rand);
	free(w->hist);
	w->th = NULL;
	w->val = w->readbuf = w->rand = NULL;
	w->hist = NULL;
}

/* The value written for key number n. */
static void make_value(ruma_kv_worker *w, uint64_t n)
{
	size_t vs = (size_t)w->sh->o->value_size;
	memcpy(w->val, w->rand + ruma_rng_below(&w->rng, vs), vs);
	memcpy(w->val, &n, vs < 8 ? vs : 8);
}

/* A value read for key number n: copied out, checked. */
static int check_value(ruma_kv_worker *w, uint64_t n, const void *v, size_t len)
{
	size_t vs = (size_t)w->sh->o->value_size;
	if (len != vs)
		return ruma_kv_fail(w->th, -EIO, "key number %" PRIu64 ": a value of %zu bytes, "
				    "%zu written", n, len, vs);
	memcpy(w->readbuf, v, len);
	if (memcmp(w->readbuf, &n, vs < 8 ? vs : 8))
		return ruma_kv_fail(w->th, -EIO, "key number %" PRIu64 ": the value read was "
				    "written for another key", n);
	return 0;
}

/* A scan's visitor: the value copied out, as a read does. */
static bool touch(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	ruma_kv_worker *w = ctx;
	(void)key;
	size_t vs = (size_t)w->sh->o->value_size;
	memcpy(w->readbuf, val, vlen < vs ? vlen : vs);
	w->touched += klen + vlen;
	return true;
}

/* A whole-table scan's visitor: copied out and checked. */
static bool touch_checked(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	ruma_kv_worker *w = ctx;
	touch(ctx, key, klen, val, vlen);
	return ruma_kv_snapcheck_entry(&w->chk, key, klen, val, vlen);
}

/* A visitor that only checks (the check after the run). */
static bool snap_entry(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	return ruma_kv_snapcheck_entry(ctx, key, klen, val, vlen);
}

/* The keys reads may ask for: [0, limit). */
static uint64_t read_limit(const ruma_kv_shared *sh)
{
	uint64_t limit = atomic_load(&sh->next_insert);
	unsigned n = sh->o->threads + (sh->o->wl->writer ? 1u : 0u);
	for (unsigned i = 0; i < n; i++) {
		uint64_t p = atomic_load(&sh->inserting[i].v);
		if (p < limit)
			limit = p;
	}
	return limit ? limit : 1;
}

struct op {
	ruma_kv_op kind;
	uint64_t n;        /* key number */
	unsigned len;      /* scan length */
	bool reverse;
	bool whole;        /* scan: the whole table, checked (scanfull) */
	uint64_t stamp;    /* update: a stamped write with this stamp (0: plain) */
	int64_t seen;      /* scan: entries visited */
};

/* The meta row with stamp (the value buffer reused: put copies it). */
static int put_meta(ruma_kv_worker *w, uint64_t stamp)
{
	ruma_kv_stamp_value(w->val, RUMA_KV_META_NUMBER, stamp);
	return w->sh->o->sys->put(w->th, RUMA_KV_META_KEY, RUMA_KV_META_KLEN, w->val,
				  (size_t)w->sh->o->value_size);
}

/* The writer's stamped write: row n and the meta row, both stamped. */
static int put_stamped(ruma_kv_worker *w, const struct op *op, const char *key, size_t klen)
{
	make_value(w, op->n);
	ruma_kv_stamp_value(w->val, op->n, op->stamp);
	int rc = w->sh->o->sys->put(w->th, key, klen, w->val, (size_t)w->sh->o->value_size);
	return rc ? rc : put_meta(w, op->stamp);
}

/* One whole-table scan, checked to be one snapshot. */
static int scan_whole(ruma_kv_worker *w, struct op *op)
{
	const ruma_kv_opts *o = w->sh->o;
	ruma_kv_snapcheck_start(&w->chk, o->records, o->value_size);
	op->seen = o->sys->scan(w->th, NULL, 0, UINT32_MAX, false, touch_checked, w);
	if (op->seen < 0)
		return (int)op->seen;
	int rc = ruma_kv_snapcheck_end(&w->chk);
	return rc ? ruma_kv_fail(w->th, rc, "snapshot check: %s", w->chk.msg) : 0;
}

/* One try of op inside a transaction that begin started. */
static int attempt_body(ruma_kv_worker *w, struct op *op, const char *key, size_t klen)
{
	const ruma_kv_system *s = w->sh->o->sys;
	const void *v;
	size_t vlen;
	int rc;

	switch (op->kind) {
	case RUMA_KV_READ:
	case RUMA_KV_RMW:
		rc = s->get(w->th, key, klen, &v, &vlen);
		if (rc == RUMA_ENOTFOUND)
			return ruma_kv_fail(w->th, -EIO, "key number %" PRIu64 " (%.*s) not found",
					    op->n, (int)klen, key);
		if (rc || (rc = check_value(w, op->n, v, vlen)) || op->kind == RUMA_KV_READ)
			return rc;
		make_value(w, op->n);
		return s->put(w->th, key, klen, w->val, (size_t)w->sh->o->value_size);
	case RUMA_KV_UPDATE:
	case RUMA_KV_INSERT:
		if (op->stamp)
			return put_stamped(w, op, key, klen);
		make_value(w, op->n);
		return s->put(w->th, key, klen, w->val, (size_t)w->sh->o->value_size);
	default:
		if (op->whole)
			return scan_whole(w, op);
		op->seen = s->scan(w->th, key, klen, op->len, op->reverse, touch, w);
		return op->seen < 0 ? (int)op->seen : 0;
	}
}

/* op as one transaction, retried on conflicts. */
static int run_op(ruma_kv_worker *w, struct op *op)
{
	const ruma_kv_system *s = w->sh->o->sys;
	char key[RUMA_KV_KEY_MAX];
	size_t klen = ruma_kv_key(w->sh->o->wl->keys, op->n, key);
	bool write = op->kind != RUMA_KV_READ && op->kind != RUMA_KV_SCAN;
	bool one = op->kind != RUMA_KV_RMW && !op->stamp;
	unsigned flags = (write ? RUMA_KV_WRITE : 0) | (one ? RUMA_KV_ONE : 0);

	for (;;) {
		int rc = s->begin(w->th, flags);
		if (!rc)
			rc = attempt_body(w, op, key, klen);
		if (!rc)
			rc = s->commit(w->th);
		else
			s->abort(w->th);
		if (rc != RUMA_ECONFLICT)
			return rc;
		w->retries++;
		sched_yield(); /* let the holder finish (it may be waiting for the CPU) */
	}
}

/* Claim the next key number for an insert (published before it is taken). */
static uint64_t insert_claim(ruma_kv_worker *w)
{
	ruma_kv_shared *sh = w->sh;
	atomic_store(&sh->inserting[w->tid].v, atomic_load(&sh->next_insert));
	uint64_t n = atomic_fetch_add(&sh->next_insert, 1);
	atomic_store(&sh->inserting[w->tid].v, n);
	return n;
}

/* The next operation of the thread's workload. */
static void next_op(ruma_kv_worker *w, struct op *op)
{
	const ruma_kv_opts *o = w->sh->o;
	const ruma_kv_workload *wl = o->wl;
	*op = (struct op){ .kind = RUMA_KV_READ };
	if (w->writer || wl->pattern == RUMA_KV_FILLRANDOM) {
		op->kind = RUMA_KV_UPDATE;
		op->n = ruma_rng_below(&w->rng, o->records ? o->records : 1);
		if (w->writer && ruma_kv_stamped(wl))
			op->stamp = atomic_load(&w->sh->stamp) + 1;
		return;
	}
	if (wl->pattern == RUMA_KV_SCANFULL) {
		op->kind = RUMA_KV_SCAN;
		op->whole = true;
		op->len = UINT32_MAX;
		return;
	}
	if (wl->pattern == RUMA_KV_FILLSEQ) {
		op->kind = RUMA_KV_INSERT;
		return;
	}
	if (wl->pattern == RUMA_KV_READSEQ || wl->pattern == RUMA_KV_READREVERSE) {
		op->kind = RUMA_KV_SCAN;
		op->reverse = wl->pattern == RUMA_KV_READREVERSE;
		op->len = wl->max_scan;
		op->n = w->seq;
		return;
	}
	double u = ruma_rng_double(&w->rng), acc = 0;
	for (unsigned k = 0; k < RUMA_KV_NOPS; k++) {
		if (wl->mix[k] <= 0)
			continue;
		op->kind = (ruma_kv_op)k; /* the last one taken also when rounding leaves u above the sum */
		acc += wl->mix[k];
		if (u < acc)
			break;
	}
	if (op->kind == RUMA_KV_INSERT)
		return;
	op->n = ruma_kv_chooser_next(&w->chooser, &w->rng, read_limit(w->sh));
	if (op->kind == RUMA_KV_SCAN)
		op->len = 1 + (unsigned)ruma_rng_below(&w->rng, wl->max_scan);
}

/* readseq/readreverse: the next scan starts after the entries this one saw
 * (the first key number again at the end of the table). */
static void advance_seq(ruma_kv_worker *w, const struct op *op)
{
	uint64_t records = w->sh->o->records;
	if (!op->reverse)
		w->seq = op->seen < op->len ? 0 : w->seq + (uint64_t)op->seen;
	else
		w->seq = (uint64_t)op->seen < op->len || w->seq < (uint64_t)op->seen
				 ? records - 1 : w->seq - (uint64_t)op->seen;
}

/* One operation of the run: chosen, run, timed, counted; 0 or an error. */
static int one_op(ruma_kv_worker *w, uint64_t *done)
{
	struct op op;
	next_op(w, &op);
	uint64_t t0 = ruma_now_ns();
	if (op.kind == RUMA_KV_INSERT)
		op.n = insert_claim(w);
	int rc = run_op(w, &op);
	if (op.kind == RUMA_KV_INSERT)
		atomic_store(&w->sh->inserting[w->tid].v, UINT64_MAX);
	ruma_kv_hist_add(&w->hist[op.kind], ruma_now_ns() - t0);
	if (rc)
		return rc;
	if (op.stamp)
		atomic_store(&w->sh->stamp, op.stamp); /* committed: the next write takes the next */
	if (op.kind == RUMA_KV_SCAN)
		w->scanned += (uint64_t)op.seen;
	bool seq = w->sh->o->wl->pattern == RUMA_KV_READSEQ ||
		   w->sh->o->wl->pattern == RUMA_KV_READREVERSE;
	if (seq)
		advance_seq(w, &op);
	*done += seq ? (uint64_t)op.seen : 1;
	return 0;
}

void *ruma_kv_run_main(void *arg)
{
	ruma_kv_worker *w = arg;
	ruma_kv_shared *sh = w->sh;
	const ruma_kv_opts *o = sh->o;
	uint64_t done = 0, count = 0;

	if (!w->writer && (o->wl->pattern == RUMA_KV_READSEQ ||
			   o->wl->pattern == RUMA_KV_READREVERSE))
		w->seq = o->records / o->threads * w->tid;
	while (!ruma_kv_stopping(sh)) {
		if (!w->writer && o->ops && count == o->ops)
			break;
		int rc = one_op(w, &done);
		if (rc) {
			ruma_kv_worker_fail(sh, rc, "%s: thread %u: %s", o->sys->name, w->tid,
					    w->th->err);
			break;
		}
		count++;
		if (!w->writer)
			atomic_store_explicit(&sh->ops[w->tid].v, done, memory_order_relaxed);
	}
	w->end_ns = ruma_now_ns();
	atomic_fetch_sub(&sh->running, 1);
	return NULL;
}

/* Insert key numbers [from, to) stepping by step, batch of them a transaction. */
static int load_range(ruma_kv_worker *w, uint64_t from, uint64_t to, uint64_t step)
{
	const ruma_kv_opts *o = w->sh->o;
	const ruma_kv_system *s = o->sys;
	char key[RUMA_KV_KEY_MAX];
	uint64_t n = from;

	while (n < to && !ruma_kv_stopping(w->sh)) {
		uint64_t first = n;
		int rc = s->begin(w->th, RUMA_KV_WRITE);
		for (uint64_t i = 0; !rc && i < o->load_batch && n < to; i++, n += step) {
			make_value(w, n);
			if (ruma_kv_stamped(o->wl))
				ruma_kv_stamp_value(w->val, n, 0);
			rc = s->put(w->th, key, ruma_kv_key(o->wl->keys, n, key), w->val,
				    (size_t)o->value_size);
		}
		if (rc)
			s->abort(w->th);
		else
			rc = s->commit(w->th);
		if (rc == RUMA_ECONFLICT) {
			w->retries++;
			n = first;
			sched_yield();
		} else if (rc) {
			return rc;
		}
	}
	return 0;
}

/* Read key numbers [from, to) back, one read transaction for all of them. */
static int verify_gets(ruma_kv_worker *w, uint64_t from, uint64_t to)
{
	const ruma_kv_system *s = w->sh->o->sys;
	char key[RUMA_KV_KEY_MAX];
	int rc = s->begin(w->th, 0);
	for (uint64_t n = from; !rc && n < to; n++) {
		const void *v;
		size_t vlen, klen = ruma_kv_key(w->sh->o->wl->keys, n, key);
		rc = s->get(w->th, key, klen, &v, &vlen);
		if (rc == RUMA_ENOTFOUND)
			rc = ruma_kv_fail(w->th, -EIO, "check: key number %" PRIu64 " (%.*s) not "
					  "found", n, (int)klen, key);
		if (!rc)
			rc = check_value(w, n, v, vlen);
	}
	if (rc)
		s->abort(w->th);
	return rc ? rc : s->commit(w->th);
}

/* The whole-table scan of the check: order and sizes. */
struct verify_scan {
	ruma_kv_worker *w;
	char last[RUMA_KV_KEY_MAX * 8];
	size_t last_len;
	uint64_t seen;
	bool resume; /* a piece starts at last: skip it once */
	const char *bad;
};

static bool verify_entry(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct verify_scan *c = ctx;
	size_t m = klen < c->last_len ? klen : c->last_len;
	int cmp = memcmp(key, c->last, m);
	bool again = c->resume && cmp == 0 && klen == c->last_len;
	c->resume = false;
	if (again)
		return true;
	if (c->seen && (cmp < 0 || (cmp == 0 && klen <= c->last_len)))
		c->bad = "keys out of order";
	else if (vlen != (size_t)c->w->sh->o->value_size)
		c->bad = "a value of another size";
	else if (klen > sizeof(c->last))
		c->bad = "a key longer than any written";
	if (c->bad)
		return false;
	memcpy(c->last, key, klen);
	c->last_len = klen;
	c->seen++;
	return true;
}

/* Up to n entries from key (NULL: the first) through fn in one read
 * transaction: the entries seen or an error. */
static int64_t scan_piece(ruma_kv_worker *w, const void *key, size_t klen, unsigned n,
			  ruma_kv_visit fn, void *ctx)
{
	const ruma_kv_system *s = w->sh->o->sys;
	int rc = s->begin(w->th, RUMA_KV_ONE);
	int64_t seen = rc ? rc : s->scan(w->th, key, klen, n, false, fn, ctx);
	if (seen < 0) {
		s->abort(w->th);
		return seen;
	}
	rc = s->commit(w->th);
	return rc ? rc : seen;
}

/* The whole table through fn in one read transaction: the entries seen or an error. */
static int64_t scan_table(ruma_kv_worker *w, ruma_kv_visit fn, void *ctx)
{
	return scan_piece(w, NULL, 0, UINT32_MAX, fn, ctx);
}

/* Values a check reads in one transaction: a quarter of the cache's worth
 * (a store may hold a large value's pages until its transaction ends), at
 * least one, at most 1000. */
static uint64_t verify_batch(const ruma_kv_opts *o)
{
	uint64_t n = o->memory / 4 / (o->value_size ? o->value_size : 1);
	return n < 1 ? 1 : n > 1000 ? 1000 : n;
}

/* The table scanned in order in pieces of `per` entries, each in its own
 * transaction (the check runs alone: no writer between them), each from
 * the key the last one ended at. */
static int64_t verify_scan_all(ruma_kv_worker *w, struct verify_scan *c, unsigned per)
{
	int64_t got = scan_piece(w, NULL, 0, per, verify_entry, c);
	while (got > 0 && !c->bad && (uint64_t)got == per) {
		c->resume = true;
		got = scan_piece(w, c->last, c->last_len, per + 1, verify_entry, c);
		if (got > 0)
			got--; /* the key it started at */
	}
	return got < 0 ? got : (int64_t)c->seen;
}

/* The check's scan of a stamped table: one snapshot, the writer's last stamp in the meta row. */
static int verify_stamped(ruma_kv_worker *w, uint64_t *entries)
{
	const ruma_kv_opts *o = w->sh->o;
	ruma_kv_snapcheck_start(&w->chk, o->records, o->value_size);
	int64_t seen = scan_table(w, snap_entry, &w->chk);
	if (seen < 0)
		return (int)seen;
	*entries = (uint64_t)seen;
	int rc = ruma_kv_snapcheck_end(&w->chk);
	if (rc)
		return ruma_kv_fail(w->th, rc, "check: %s", w->chk.msg);
	uint64_t stamp = atomic_load(&w->sh->stamp);
	if (w->chk.meta != stamp)
		return ruma_kv_fail(w->th, -EIO, "check: the meta row holds stamp %" PRIu64 ", the "
				    "writer's last commit stamp %" PRIu64, w->chk.meta, stamp);
	return 0;
}

int ruma_kv_verify(ruma_kv_worker *w, uint64_t *entries)
{
	const ruma_kv_workload *wl = w->sh->o->wl;
	uint64_t keys = atomic_load(&w->sh->next_insert);
	bool numbered = wl->load || wl->pattern == RUMA_KV_FILLSEQ;
	uint64_t per = verify_batch(w->sh->o);
	int rc = 0;
	for (uint64_t n = 0; numbered && !rc && n < keys; n += per)
		rc = verify_gets(w, n, n + per < keys ? n + per : keys);
	if (rc)
		return rc;
	if (ruma_kv_stamped(wl))
		return verify_stamped(w, entries);
	struct verify_scan c = { .w = w };
	int64_t seen = verify_scan_all(w, &c, (unsigned)per);
	if (seen < 0)
		return (int)seen;
	*entries = c.seen;
	if (c.bad)
		return ruma_kv_fail(w->th, -EIO, "check: the table scan found %s after %" PRIu64
				    " entries", c.bad, c.seen);
	if (numbered && c.seen != keys)
		return ruma_kv_fail(w->th, -EIO, "check: the table scan found %" PRIu64 " entries, "
				    "%" PRIu64 " keys were written", c.seen, keys);
	return 0;
}

/* The meta row of a stamped table, stamp 0, in a transaction of its own. */
static int load_meta(ruma_kv_worker *w)
{
	const ruma_kv_system *s = w->sh->o->sys;
	for (;;) {
		int rc = s->begin(w->th, RUMA_KV_WRITE);
		if (!rc)
			rc = put_meta(w, 0);
		if (rc)
			s->abort(w->th);
		else
			rc = s->commit(w->th);
		if (rc != RUMA_ECONFLICT)
			return rc;
		w->retries++;
		sched_yield();
	}
}

void *ruma_kv_load_main(void *arg)
{
	ruma_kv_worker *w = arg;
	const ruma_kv_opts *o = w->sh->o;
	int rc = load_range(w, w->tid, o->records, o->threads);
	if (!rc && w->tid == 0 && ruma_kv_stamped(o->wl) && !ruma_kv_stopping(w->sh))
		rc = load_meta(w);
	if (rc)
		ruma_kv_worker_fail(w->sh, rc, "%s: load, thread %u: %s", o->sys->name, w->tid,
				    w->th->err);
	atomic_fetch_sub(&w->sh->running, 1);
	return NULL;
}
