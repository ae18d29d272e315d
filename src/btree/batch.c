/*
 * batch.c — lookups with many page reads in flight per thread
 * (ruma_btree_lookup_batch).  The read-ahead of range scans is readahead.c.
 *
 * Batched lookups: up to `inflight` lookups are active at once, each a small
 * state machine over the optimistic descent of btree.c.  A lookup runs until
 * it finishes or meets a node that is not resident; then
 * ruma_bm_optimistic_async latches that page for the read (exactly as the
 * synchronous fault does), queues an io_uring read and the lookup parks —
 * it holds nothing else, since everything above was read optimistically.
 * The thread goes on with the other lookups; when none can run, it submits
 * all queued reads at once (one io_uring_enter) and collects completions.
 * A completed read makes its lookup restart from the root (the usual
 * optimistic restart: the versions it saw are stale anyway); a failed read
 * (errno, short read) is that lookup's result.  A lookup that meets a
 * latched page (another thread's write, or another parked lookup's read)
 * is retried after the next collection.  Values are copied and validated
 * before fn sees them, so fn gets exactly what a synchronous lookup gives.
 *
 * No system calls of its own (sched_yield while every active lookup waits
 * for a page another thread holds).
 */
#include "btree/btree_int.h"

#include <ruma/core.h>

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

/* A lookup restarted this often in one go yields its turn. */
#define STEP_RESTARTS 4u

enum { ST_READY, ST_PARKED, ST_BUSY };

struct active {
	size_t idx;   /* which lookup */
	uint8_t state;
};

struct batch {
	ruma_btree *t;
	const void *const *keys;
	const size_t *klens;
	ruma_btree_batch_fn fn;
	void *ctx;
	int *results;
	size_t vlen;
	uint8_t val[RUMA_BTREE_MAX_VALUE];
};

/* One attempt of lookup i from the root: 0 when finished (results[i] set),
 * RUMA_BM_PENDING (parked on a read tagged `slot`), RUMA_BM_BUSY or
 * RUMA_RESTART. */
static int attempt(struct batch *b, size_t i, uint64_t slot)
{
	ruma_btree *t = b->t;
	ruma_bm *bm = t->bm;
	const uint8_t *key = b->keys[i];
	size_t klen = b->klens[i];
	ruma_pid pid = t->root;
	uint64_t ver;
	void *page;
	int rc = ruma_bm_optimistic_async(bm, pid, slot, &ver, &page);
	bool has_parent = false;
	unsigned plevel = 0;

	while (rc == 0) {
		const node *n = page;
		if (!node_plausible(n) || (has_parent && n->level + 1u != plevel)) {
			rc = ruma_bm_validate(bm, pid, ver);
			rc = rc ? rc : RUMA_ECORRUPT;
			break;
		}
		bool found, bad = false;
		unsigned pos = node_lower_bound(n, key, klen, &found, &bad);
		if (node_is_leaf(n)) {
			unsigned vl = 0;
			if (found && !bad) {
				const uint8_t *v = node_value(n, pos, &vl, &bad);
				if (!bad && vl <= sizeof b->val)
					memcpy(b->val, v, vl);
			}
			if ((rc = ruma_bm_validate(bm, pid, ver)))
				break;
			if (bad || vl > sizeof b->val)
				b->results[i] = RUMA_ECORRUPT;
			else if (!found)
				b->results[i] = RUMA_ENOTFOUND;
			else
				b->results[i] = 0;
			b->vlen = vl;
			return 0;
		}
		ruma_pid child = node_child_at(n, pos, &bad);
		plevel = n->level;
		if (bad) {
			rc = ruma_bm_validate(bm, pid, ver);
			rc = rc ? rc : RUMA_ECORRUPT;
			break;
		}
		if ((rc = ruma_bm_validate(bm, pid, ver)))
			break;
		uint64_t cver;
		void *cpage;
		rc = ruma_bm_optimistic_async(bm, child, slot, &cver, &cpage);
		if (rc == -EINVAL)
			rc = RUMA_ECORRUPT; /* a validated pid outside the store */
		if (rc)
			break;
		if ((rc = ruma_bm_validate(bm, pid, ver)))
			break;
		has_parent = true;
		pid = child;
		ver = cver;
		page = cpage;
	}
	if (rc == RUMA_RESTART || rc == RUMA_BM_PENDING || rc == RUMA_BM_BUSY)
		return rc;
	b->results[i] = rc; /* an error of this lookup */
	return 0;
}

/* Run lookup i until it finishes, parks or waits for a latch. */
static int step(struct batch *b, size_t i, uint64_t slot)
{
	for (unsigned tries = 0;; tries++) {
		olc_enter();
		int rc = attempt(b, i, slot);
		olc_leave();
		if (rc == 0 && b->results[i] == 0 && b->fn)
			b->fn(i, b->val, b->vlen, b->ctx);
		if (rc != RUMA_RESTART)
			return rc;
		bt_count(&b->t->restarts);
		if (tries + 1 >= STEP_RESTARTS)
			return RUMA_BM_BUSY;
	}
}

/* The synchronous path for lookup i. */
static void lookup_one(struct batch *b, size_t i)
{
	size_t len = 0;
	int rc = ruma_btree_lookup(b->t, b->keys[i], b->klens[i], b->val, sizeof b->val, &len);
	if (rc == -ENOBUFS)
		rc = RUMA_ECORRUPT; /* a stored value is never above the maximum */
	b->results[i] = rc;
	if (rc == 0 && b->fn)
		b->fn(i, b->val, len, b->ctx);
}

/* Collect finished reads; the parked lookups they belong to become ready
 * (or finish with the read's error).  Returns how many woke. */
static unsigned collect(struct batch *b, struct active *act, unsigned nact, bool wait,
			unsigned *parked, size_t *done)
{
	ruma_bm_aio_done d[64];
	unsigned n = 0, woke = 0;
	int rc = ruma_bm_aio_reap(b->t->bm, wait, d, 64, &n);
	(void)rc; /* a failed submission is reported per read below */
	for (unsigned k = 0; k < n; k++) {
		uint64_t s = d[k].tag;
		if (s >= nact || act[s].state != ST_PARKED)
			continue;
		(*parked)--;
		woke++;
		if (d[k].result) {
			b->results[act[s].idx] = d[k].result;
			act[s].idx = SIZE_MAX; /* finished */
			(*done)++;
		} else {
			act[s].state = ST_READY;
		}
	}
	return woke;
}

int ruma_btree_lookup_batch(ruma_btree *t, size_t n, const void *const keys[],
			    const size_t klens[], unsigned inflight, ruma_btree_batch_fn fn,
			    void *ctx, int results[])
{
	if (!t || (n && (!keys || !klens || !results)))
		return -EINVAL;
	struct batch *b = malloc(sizeof *b);
	if (!b)
		return -ENOMEM;
	*b = (struct batch){ .t = t, .keys = keys, .klens = klens, .fn = fn, .ctx = ctx,
			     .results = results };
	size_t valid = 0; /* keys with a well-formed request (the rest are answered at once) */
	for (size_t i = 0; i < n; i++) {
		int rc = klens[i] == 0 || !keys[i] ? -EINVAL
			 : klens[i] > RUMA_BTREE_MAX_KEY ? RUMA_ETOOBIG
							 : 1;
		results[i] = rc;
		valid += rc == 1;
	}
	if (inflight > RUMA_BM_AIO_MAX)
		inflight = RUMA_BM_AIO_MAX;
	if (inflight <= 1 || valid <= 1) {
		for (size_t i = 0; i < n; i++)
			if (results[i] == 1)
				lookup_one(b, i);
		free(b);
		return 0;
	}
	struct active act[RUMA_BM_AIO_MAX];
	unsigned nact = 0, parked = 0;
	size_t next = 0, started = 0, done = 0;
	while (done < valid) {
		/* start lookups in the free places */
		for (unsigned s = 0; s < inflight && started < valid; s++) {
			if (s < nact && act[s].idx != SIZE_MAX)
				continue;
			while (results[next] != 1)
				next++;
			act[s] = (struct active){ .idx = next++, .state = ST_READY };
			started++;
			if (s >= nact)
				nact = s + 1;
		}
		/* run every ready or busy lookup until it parks or finishes */
		bool any_busy = false;
		for (unsigned s = 0; s < nact; s++) {
			if (act[s].idx == SIZE_MAX || act[s].state == ST_PARKED)
				continue;
			int rc = step(b, act[s].idx, s);
			if (rc == 0) {
				act[s].idx = SIZE_MAX;
				done++;
			} else if (rc == RUMA_BM_PENDING) {
				act[s].state = ST_PARKED;
				parked++;
			} else {
				act[s].state = ST_BUSY;
				any_busy = true;
			}
		}
		if (done == valid)
			break;
		/* submit the queued reads; block for one only when no new lookup
		 * can start (a lookup waiting for a latch may wait for one of
		 * this thread's own reads) */
		bool can_start = started < valid && started - done < inflight;
		unsigned woke = collect(b, act, nact, parked > 0 && !can_start, &parked, &done);
		if (any_busy && parked == 0 && woke == 0)
			sched_yield(); /* waiting for a latch another thread holds */
	}
	free(b);
	return 0;
}
