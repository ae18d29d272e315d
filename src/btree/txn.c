/*
 * txn.c — transactions: row locks (2PL, no-wait, released at commit before
 * the commit is durable), logical undo
 * (in memory for abort, in the log for crash recovery), commit, snapshot
 * reads.  See txn.h, docs/wal.md and docs/isolation.md.
 *
 * Per change: lock the row, then log an UNDO record {tree root, key, kind,
 * bytes} (first record of the transaction: its LSN becomes the transaction
 * id) and keep the same in memory, then make the change with the normal
 * B-tree operation while the thread's ruma_bm_op_end does not wait
 * (ruma_bm_op_defer).  Inserts and upserts take the undo from the leaf
 * itself, latched, right before the entry is written (bt_put's hook:
 * "absent" or the value replaced); in-place updates take it inside the
 * update callback as a patch of the bytes the caller's function changed;
 * removals look the row up first.  Either way the UNDO record is appended
 * before the leaf's change is logged (when its latch is released), so any
 * durable prefix holding the change also holds how to undo it.  Commit logs
 * COMMIT {id}, releases the locks and then waits for the record (on a SYNC
 * store, unless RUMA_TXN_ASYNC; an ASYNC store's background flusher makes
 * it durable a few milliseconds later); abort restores newest first and
 * logs END {id}.  Both commits release the locks before the record is
 * durable (early lock release): a transaction that then sees these changes
 * commits later in the same log, so it is never durable without them; a
 * read-only one waits for the commits whose rows it read (ruma_txn_commit,
 * "commit" below) or is given the point it must wait for
 * (ruma_txn_commit_nowait: the log's end).
 * Restoring is idempotent (upsert the old value / write the patch's old
 * bytes / remove), so undoing again after a crash in the middle of an abort
 * or of a recovery undo is right.
 *
 * Row locks: a process-wide table of LOCK_STRIPES stripes, each a mutex and
 * a small array of (hash, owner); a row held by another owner is
 * RUMA_ECONFLICT immediately, unless that owner committed and only waits to
 * be durable (early lock release): the row is then locked beside its entry.
 *
 * Snapshots (docs/isolation.md): read-only transactions, and read-write ones
 * under RUMA_TXN_SNAPSHOT, read the row in place, then the before-images
 * of its lock holder, then the version store (mvcc.c), where a commit moves
 * its undo while a snapshot begun before it is open ("snapshot reads" and
 * "snapshot scans" below).  A snapshot writer's write is a conflict when
 * the version store holds a newer version of the row (first writer wins).
 *
 * Recovery undo (bt_txn_recover, called by ruma_btree_open/create): takes
 * the losers' undo records from the buffer manager (newest first), restores
 * them, logs END for each loser, flushes the log and tells the buffer manager
 * it may mark the store clean again.  One global mutex serialises it.
 *
 * No syscalls (the log's I/O is in src/wal, reached through bm.h).
 */
#include "btree/btree_int.h"
#include "btree/mvcc.h"
#include "btree/blobref.h"
#include "btree/spot.h"
#include "core/spin.h"

#include <ruma/txn.h>
#include <ruma/core.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define LOCK_STRIPES 256u

/* A stripe's lock is a spin word (core/spin.h): its sections scan a short
 * array; the one lock taken inside one (a holder's mu, resolve_lock) is
 * never held by anyone waiting for a stripe.  A stripe is one cache line,
 * its first STRIPE_INLINE entries in it: taking a row lock touches no
 * other line (most stripes hold none or one lock at a time), and no
 * stripe shares its line with another. */
#define STRIPE_INLINE 2u
struct lock_entry {
	uint64_t h;
	ruma_txn *owner;
};
struct lock_stripe {
	_Alignas(64) ruma_spin mu;
	uint32_t n;   /* entries: inl[], then more[] */
	uint32_t cap; /* of more */
	uint64_t aborts; /* aborts that held a row of the stripe (snapshot reads) */
	struct lock_entry *more;
	struct lock_entry inl[STRIPE_INLINE];
};
_Static_assert(sizeof(struct lock_stripe) == 64, "a stripe is one cache line");

/* Entry i of a stripe (mu held). */
static inline struct lock_entry *stripe_at(struct lock_stripe *s, uint32_t i)
{
	return i < STRIPE_INLINE ? &s->inl[i] : &s->more[i - STRIPE_INLINE];
}

/* Add an entry to a stripe (mu held): 0 or -ENOMEM. */
static int stripe_add(struct lock_stripe *s, uint64_t h, ruma_txn *owner)
{
	uint32_t n = s->n;
	if (n >= STRIPE_INLINE && n - STRIPE_INLINE == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		struct lock_entry *m = realloc(s->more, (size_t)cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		s->more = m;
		s->cap = cap;
	}
	*stripe_at(s, n) = (struct lock_entry){ h, owner };
	__atomic_store_n(&s->n, n + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Take owner's entry of hash h out of a stripe (mu held): the last entry
 * takes its place. */
static void stripe_remove(struct lock_stripe *s, uint64_t h, const ruma_txn *owner)
{
	for (uint32_t i = 0; i < s->n; i++) {
		struct lock_entry *e = stripe_at(s, i);
		if (e->h == h && e->owner == owner) {
			*e = *stripe_at(s, s->n - 1);
			__atomic_store_n(&s->n, s->n - 1, __ATOMIC_RELEASE);
			return;
		}
	}
}

static struct lock_stripe stripes[LOCK_STRIPES];
static pthread_once_t txn_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t recover_mu = PTHREAD_MUTEX_INITIALIZER;

struct ruma_txn {
	ruma_bm *bm;
	unsigned flags;
	uint64_t id; /* 0 until the first UNDO record is logged */
	uint64_t start_ts; /* a snapshot's (RUMA_TXN_RDONLY, RUMA_TXN_SNAPSHOT) */
	bool registered;   /* start_ts is in the registry of active snapshots ... */
	unsigned reg_slot; /* ... in this slot */
	uint64_t floor;    /* the writers' floor as the snapshot began (mvcc.h) */
	bool writer;       /* registered as a writer (it wrote rows in place) ... */
	unsigned wslot;    /* ... in this slot ... */
	uint64_t wmark;    /* ... with this mark */
	uint64_t cts;      /* 0 while running, MV_PENDING, then the commit timestamp */
	/* Early lock release (SYNC commits, "commit" below): released is the
	 * log position this committed transaction is durable at, set before
	 * its commit is published; its rows stay in the lock table until it
	 * is durable, free for writers once published.  Both read under the
	 * row's stripe lock. */
	uint64_t released;
	bool published;    /* publish_commit is done: its versions are linked */
	uint64_t dep;      /* the largest `released` beside which it locked a row */
	uint64_t seen;     /* the largest log position of a commit it read (own thread) */
	uint64_t *locks;
	size_t nlocks, caplocks;
	/* Snapshot readers read the undo of a row's lock holder: they hold mu
	 * (and the row's stripe); the owner takes mu only to move the arrays
	 * (growth, hand-off) and publishes nundo with a release store. */
	pthread_mutex_t mu;
	struct undo *undo;
	size_t nundo, capundo;
	uint8_t *bytes; /* the undo entries' keys and data, back to back */
	size_t nbytes, capbytes;
	bool deleter;   /* in the deleters list (it removed a row) */
	struct ruma_txn *dprev, *dnext;
};

/* Transactions that removed rows, for snapshot scans (a removed row is
 * gone from the tree, so a scan learns of it only here or in the version
 * store); del_aborts counts their aborts, so a snapshot scan that may have
 * missed a row an abort then put back looks again. */
static pthread_mutex_t del_mu = PTHREAD_MUTEX_INITIALIZER;
static ruma_txn *deleters;
static uint64_t del_aborts;

/* Undo record payload after the id: this header, key, then the old value
 * (UNDO_VALUE) or the patch (UNDO_PATCH): a sequence of
 * { u16 off, u16 len, len old bytes }. */
struct undo_hdr {
	uint64_t root;
	uint16_t klen;
	uint8_t kind;
	uint8_t rsv;
	uint32_t vlen;
};

/* The row's lock identity (mv_row_hash: a collision only makes two rows
 * share a lock, a needless conflict). */
static inline uint64_t row_hash(const ruma_btree *t, const void *key, size_t klen)
{
	return mv_row_hash(t->bm, t->root, key, klen);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Whether o's rows are free for other writers (stripe lock held): o has
 * committed and only waits to be durable.  Its commit must be published,
 * versions linked included: a snapshot writer's first-writer-wins check
 * (lock_key) looks for them once it holds the row. */
static bool row_free(const ruma_txn *o)
{
	return __atomic_load_n(&o->published, __ATOMIC_ACQUIRE);
}

/* Lock the row exclusively for x: 0, or RUMA_ECONFLICT, -ENOMEM; -EINVAL for
 * a tree of another store than the transaction's. */
static int row_lock(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen)
{
	if (!t || t->bm != x->bm)
		return -EINVAL;
	uint64_t h = row_hash(t, key, klen);
	struct lock_stripe *s = &stripes[h % LOCK_STRIPES];
	int r = 0;
	if (grow((void **)&x->locks, &x->caplocks, x->nlocks + 1, sizeof(*x->locks)))
		return -ENOMEM;
	ruma_spin_lock(&s->mu);
	/* besides x's own entry or another holder's, the row may have entries
	 * of published commits waiting to be durable: x locks it beside them
	 * and inherits the log position they wait for */
	uint64_t dep = 0;
	for (uint32_t i = 0; i < s->n && r == 0; i++) {
		const struct lock_entry *e = stripe_at(s, i);
		if (e->h != h)
			continue;
		if (e->owner == x)
			r = 1;
		else if (!row_free(e->owner))
			r = RUMA_ECONFLICT;
		else
			dep = RUMA_MAX(dep, __atomic_load_n(&e->owner->released, __ATOMIC_ACQUIRE));
	}
	if (r == 0 && !(r = stripe_add(s, h, x))) {
		x->locks[x->nlocks++] = h;
		if (dep > __atomic_load_n(&x->dep, __ATOMIC_RELAXED))
			__atomic_store_n(&x->dep, dep, __ATOMIC_RELAXED);
	}
	ruma_spin_unlock(&s->mu);
	return r == 1 ? 0 : r;
}

/* Release x's row locks.  After an abort that changed rows, each stripe's
 * abort count is raised before its lock goes: a snapshot read that may
 * have seen an undone change then reads again (see "snapshot reads"). */
static void unlock_all(ruma_txn *x, bool aborted)
{
	for (size_t k = 0; k < x->nlocks; k++) {
		uint64_t h = x->locks[k];
		struct lock_stripe *s = &stripes[h % LOCK_STRIPES];
		ruma_spin_lock(&s->mu);
		if (aborted)
			__atomic_add_fetch(&s->aborts, 1, __ATOMIC_SEQ_CST);
		stripe_remove(s, h, x);
		ruma_spin_unlock(&s->mu);
	}
	x->nlocks = 0;
}

static void deleters_leave(ruma_txn *x)
{
	if (!x->deleter)
		return;
	pthread_mutex_lock(&del_mu);
	if (x->dprev)
		x->dprev->dnext = x->dnext;
	else
		__atomic_store_n(&deleters, x->dnext, __ATOMIC_RELEASE);
	if (x->dnext)
		x->dnext->dprev = x->dprev;
	pthread_mutex_unlock(&del_mu);
	x->deleter = false;
}

static void deleters_join(ruma_txn *x)
{
	if (x->deleter)
		return;
	pthread_mutex_lock(&del_mu);
	x->dprev = NULL;
	x->dnext = deleters;
	if (deleters)
		deleters->dprev = x;
	__atomic_store_n(&deleters, x, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&del_mu);
	x->deleter = true;
}

/* The transaction reads no more: unregister its snapshot. */
static void snapshot_end(ruma_txn *x)
{
	if (x->registered)
		mv_snapshot_end(x->reg_slot);
	x->registered = false;
}

/* Whether x reads a snapshot (read-only, or read-write under SI). */
static inline bool reads_snapshot(const ruma_txn *x)
{
	return x->flags & (RUMA_TXN_RDONLY | RUMA_TXN_SNAPSHOT);
}

/*
 * Each thread keeps the object of its last transaction, with its arrays
 * (up to TXN_SPARE_BYTES of them), for its next one: a transaction per
 * operation (db.h's get, YCSB) then costs no calloc, no mutex setup and no
 * regrowth of its undo arrays.  Nobody else can hold a pointer to it by
 * then: readers reach a transaction only through its row locks, which
 * unlock_all removed.  A thread-specific key frees it when the thread
 * ends: its value, set once per thread, is the address of the thread's
 * spare slot, so keeping and taking a spare writes no key.
 */
#define TXN_SPARE_BYTES ((size_t)64 << 10)
static pthread_key_t spare_key;
static _Thread_local ruma_txn *spare;
static _Thread_local bool spare_keyed; /* spare_key holds &spare */

static void spare_free(void *p)
{
	ruma_txn *x = p;
	pthread_mutex_destroy(&x->mu);
	free(x->bytes);
	free(x->undo);
	free(x->locks);
	free(x);
}

/* At thread end: the spare left in the thread's slot. */
static void spare_slot_free(void *slot)
{
	ruma_txn **s = slot;
	if (*s)
		spare_free(*s);
	*s = NULL;
}

static bool spare_key_ok;

static void txn_init_once(void)
{
	/* without the key no spare is kept */
	spare_key_ok = pthread_key_create(&spare_key, spare_slot_free) == 0;
	mv_clock_start();
}

/* Can this thread keep a spare (its slot known to the key)? */
static bool spare_slot_keyed(void)
{
	if (!spare_keyed && spare_key_ok)
		spare_keyed = pthread_setspecific(spare_key, &spare) == 0;
	return spare_keyed;
}

/* A cleared transaction object: the thread's spare or a new one. */
static ruma_txn *txn_alloc(void)
{
	ruma_txn *x = spare;
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (x)
			pthread_mutex_init(&x->mu, NULL);
		return x;
	}
	spare = NULL;
	/* the arrays and the mutex stay (the version store copies what it
	 * keeps) */
	uint64_t *locks = x->locks;
	struct undo *undo = x->undo;
	uint8_t *bytes = x->bytes;
	size_t caplocks = locks ? x->caplocks : 0, capundo = undo ? x->capundo : 0;
	size_t capbytes = bytes ? x->capbytes : 0;
	memset(x, 0, offsetof(ruma_txn, mu));
	x->locks = locks;
	x->caplocks = caplocks;
	x->undo = undo;
	x->capundo = capundo;
	x->bytes = bytes;
	x->capbytes = capbytes;
	x->nundo = x->nbytes = 0;
	x->deleter = false;
	x->dprev = x->dnext = NULL;
	return x;
}

static void txn_free(ruma_txn *x)
{
	deleters_leave(x);
	snapshot_end(x);
	if (x->writer) /* its rows are committed or restored: the floor may rise */
		mv_writer_end(x->wslot);
	ruma_bm_txn_count(x->bm, -1);
	size_t held = x->capbytes + x->capundo * sizeof(*x->undo) + x->caplocks * sizeof(*x->locks);
	if (!spare && held <= TXN_SPARE_BYTES && spare_slot_keyed()) {
		spare = x;
		return;
	}
	spare_free(x);
}

int ruma_txn_begin(ruma_bm *bm, unsigned flags, ruma_txn **out)
{
	const unsigned modes = RUMA_TXN_RDONLY | RUMA_TXN_SNAPSHOT | RUMA_TXN_LOCKING;
	if (!bm || !out || (flags & ~(RUMA_TXN_ASYNC | modes)) ||
	    ((flags & RUMA_TXN_LOCKING) && (flags & modes) != RUMA_TXN_LOCKING))
		return -EINVAL;
	if (!(flags & modes)) /* snapshot isolation unless asked otherwise */
		flags |= RUMA_TXN_SNAPSHOT;
	pthread_once(&txn_once, txn_init_once);
	ruma_txn *x = txn_alloc();
	if (!x)
		return -ENOMEM;
	int r = (flags & (RUMA_TXN_RDONLY | RUMA_TXN_SNAPSHOT))
			? mv_snapshot_begin(bm, &x->start_ts, &x->floor, &x->reg_slot) : 0;
	if (r) {
		spare_free(x);
		return r;
	}
	x->registered = flags & (RUMA_TXN_RDONLY | RUMA_TXN_SNAPSHOT);
	x->bm = bm;
	x->flags = flags;
	ruma_bm_txn_count(bm, 1);
	*out = x;
	return 0;
}

struct patch {
	const uint8_t *p;
	size_t len;
	int err;
};

/* Write a patch's old bytes back into the value (ruma_btree_update callback). */
static void patch_apply(void *val, size_t vlen, void *ctx)
{
	struct patch *pt = ctx;
	const uint8_t *p = pt->p, *end = pt->p + pt->len;
	while (p < end) {
		uint16_t off, len;
		if (end - p < 4) {
			pt->err = RUMA_ECORRUPT;
			return;
		}
		memcpy(&off, p, 2);
		memcpy(&len, p + 2, 2);
		p += 4;
		if ((size_t)(end - p) < len || (size_t)off + len > vlen) {
			pt->err = RUMA_ECORRUPT;
			return;
		}
		memcpy((uint8_t *)val + off, p, len);
		p += len;
	}
}

/* Restore one row (abort and recovery).  Idempotent: a patch writes the old
 * bytes whether or not the update had reached the row. */
static int restore(ruma_btree *t, const uint8_t *key, size_t klen, unsigned kind,
		   const uint8_t *val, size_t vlen)
{
	if (kind == UNDO_VALUE)
		return ruma_btree_upsert(t, key, klen, val, vlen, NULL);
	if (kind == UNDO_PATCH) {
		struct patch pt = { val, vlen, 0 };
		int r = ruma_btree_update(t, key, klen, patch_apply, &pt);
		return r ? r : pt.err;
	}
	int r = ruma_btree_remove(t, key, klen);
	return r == RUMA_ENOTFOUND ? 0 : r;
}

/* Log (with a log) and keep one undo entry: kind, then `len` bytes of old
 * value or patch.  The entry is built once in the transaction's undo bytes
 * as the whole record payload (id, header, key, data); the undo entry
 * points at its key. */
static int record_undo(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen,
		       unsigned kind, const uint8_t *data, size_t len)
{
	const size_t head = 8 + sizeof(struct undo_hdr);
	if (x->nundo + 1 > x->capundo || x->nbytes + head + klen + len > x->capbytes) {
		pthread_mutex_lock(&x->mu); /* a snapshot reader may be reading them */
		int r = grow((void **)&x->undo, &x->capundo, x->nundo + 1, sizeof(*x->undo)) ||
			grow((void **)&x->bytes, &x->capbytes, x->nbytes + head + klen + len, 1);
		pthread_mutex_unlock(&x->mu);
		if (r)
			return -ENOMEM;
	}
	uint8_t *rec = x->bytes + x->nbytes;
	struct undo_hdr h = { t->root, (uint16_t)klen, (uint8_t)kind, 0, (uint32_t)len };
	memcpy(rec, &x->id, 8);
	memcpy(rec + 8, &h, sizeof(h));
	memcpy(rec + head, key, klen);
	if (len) /* "absent" has no data (NULL) */
		memcpy(rec + head + klen, data, len);
	if (ruma_bm_logging(x->bm)) {
		/* the first record's LSN names the transaction; a later one may
		 * ride in the record of the page change it precedes (mtr.c) */
		uint64_t lsn;
		int r = ruma_bm_log(x->bm, RUMA_BM_LOG_UNDO, rec, head + klen + len,
				    x->id ? NULL : &lsn, NULL);
		if (r)
			return r;
		if (!x->id)
			x->id = lsn;
	}
	x->undo[x->nundo] = (struct undo){ t->root, (uint16_t)klen, (uint8_t)kind, (uint32_t)len,
					   x->nbytes + head };
	__atomic_store_n(&x->nundo, x->nundo + 1, __ATOMIC_RELEASE);
	x->nbytes += head + klen + len;
	return 0;
}

static int lock_key(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen)
{
	if (x->flags & RUMA_TXN_RDONLY)
		return -EACCES;
	if (klen == 0 || klen > RUMA_BTREE_MAX_KEY)
		return klen ? RUMA_ETOOBIG : -EINVAL;
	int r = row_lock(x, t, key, klen);
	if (!r && (x->flags & RUMA_TXN_SNAPSHOT)) {
		/* first writer wins: a version committed since x began is a
		 * conflict.  Every commit since then kept its versions (x is an
		 * active snapshot), and the row's last writer linked them before
		 * it released the lock x now holds. */
		r = mv_newer(t->bm, t->root, key, klen, x->start_ts);
		r = r > 0 ? RUMA_ECONFLICT : r;
	}
	if (!r && !x->writer) { /* before its first write in place */
		r = mv_writer_begin(&x->wmark, &x->wslot);
		x->writer = r == 0;
	}
	if (!r)
		bt_write_mark = x->wmark; /* the write that follows stamps its leaf */
	return r;
}

/* Lock the row, take its before-image, log and keep the undo entry. */
static int prepare_change(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			  bool *present)
{
	uint8_t old[RUMA_BTREE_MAX_VALUE];
	size_t vlen = 0;
	int r = lock_key(x, t, key, klen);
	if (r)
		return r;
	r = ruma_btree_lookup(t, key, klen, old, sizeof(old), &vlen);
	if (r && r != RUMA_ENOTFOUND)
		return r;
	*present = r == 0;
	return record_undo(x, t, key, klen, *present ? UNDO_VALUE : UNDO_ABSENT, old,
			   *present ? vlen : 0);
}

/* An in-place update inside a transaction: the B-tree calls this with the
 * row latched; it runs the caller's function on the value and logs, before
 * the page change can be logged, a patch of the bytes it changed (no
 * separate lookup for the before-image). */
struct capture {
	ruma_txn *x;
	const ruma_btree *t;
	const void *key;
	size_t klen;
	void (*fn)(void *val, size_t vlen, void *ctx);
	void *ctx;
	int err;
};

/* Whether the 8-byte words (the last one possibly shorter) at i differ. */
static bool word_differs(const uint8_t *a, const uint8_t *b, size_t i, size_t n)
{
	if (n - i >= 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		return x != y;
	}
	return memcmp(a + i, b + i, n - i) != 0;
}

/* The first multiple of 8 at or after i (itself a multiple of 8) where the
 * words of a and b differ, or n or more: 16 bytes per step with SSE2. */
static size_t next_differing_word(const uint8_t *a, const uint8_t *b, size_t i, size_t n)
{
#ifdef __SSE2__
	for (; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(a + i));
		__m128i y = _mm_loadu_si128((const __m128i *)(b + i));
		unsigned eq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y));
		if (eq != 0xffffu)
			return (eq & 0xffu) != 0xffu ? i : i + 8;
	}
#endif
	for (; i < n; i += 8)
		if (word_differs(a, b, i, n))
			return i;
	return n;
}

/* The changed ranges of now against old, in 8-byte words (ranges closer
 * than 16 bytes merged), as a patch of old bytes; returns its length.  Each
 * range is also named for the page's redo record (ruma_bm_wrote). */
static size_t make_patch(const uint8_t *old, uint8_t *now, size_t n, uint8_t *out)
{
	size_t o = 0;
	for (size_t i = next_differing_word(old, now, 0, n); i < n;
	     i = next_differing_word(old, now, i, n)) {
		size_t start = i, last = RUMA_MIN(i + 8, n);
		for (i += 8; i < n && i - last < 16; i += 8)
			if (word_differs(old, now, i, n))
				last = RUMA_MIN(i + 8, n);
		uint16_t off = (uint16_t)start, len = (uint16_t)(last - start);
		ruma_bm_wrote(now + start, len);
		memcpy(out + o, &off, 2);
		memcpy(out + o + 2, &len, 2);
		memcpy(out + o + 4, old + start, len);
		o += 4u + len;
		i = last;
	}
	return o;
}

static void capture_update(void *val, size_t vlen, void *ctx)
{
	struct capture *c = ctx;
	uint8_t old[RUMA_BTREE_MAX_VALUE], patch[RUMA_BTREE_MAX_VALUE * 2 + 4];
	memcpy(old, val, vlen);
	c->fn(val, vlen, c->ctx);
	size_t n = make_patch(old, val, vlen, patch);
	bool small = n < vlen;
	c->err = record_undo(c->x, c->t, c->key, c->klen, small ? UNDO_PATCH : UNDO_VALUE,
			     small ? patch : old, small ? n : vlen);
	if (c->err)
		memcpy(val, old, vlen); /* no undo: no change */
}

static int txn_update(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
		      void (*fn)(void *val, size_t vlen, void *ctx), void *ctx)
{
	int r = lock_key(x, t, key, klen);
	if (r)
		return r;
	struct capture c = { x, t, key, klen, fn, ctx, 0 };
	ruma_bm_op_defer(x->bm, true);
	r = bt_update(t, key, klen, capture_update, &c, true);
	ruma_bm_op_defer(x->bm, false);
	return r ? r : c.err;
}

/* An insert or upsert inside a transaction: the B-tree calls this with the
 * leaf latched, right before it writes the entry, so the undo (absent, or
 * the value replaced) comes from the leaf itself, with no lookup first. */
struct put_capture {
	ruma_txn *x;
	const ruma_btree *t;
	const void *key;
	size_t klen;
};

static int capture_put(void *ctx, bool found, const void *old, size_t old_len)
{
	struct put_capture *c = ctx;
	return record_undo(c->x, c->t, c->key, c->klen, found ? UNDO_VALUE : UNDO_ABSENT, old,
			   found ? old_len : 0);
}

static int txn_put(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		   size_t vlen, bool insert_only)
{
	int r = lock_key(x, t, key, klen);
	if (r)
		return r;
	struct put_capture c = { x, t, key, klen };
	ruma_bm_op_defer(x->bm, true);
	r = bt_put(t, key, klen, val, vlen, insert_only, capture_put, &c);
	ruma_bm_op_defer(x->bm, false);
	return r;
}

int ruma_txn_insert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	if (!x)
		return ruma_btree_insert(t, key, klen, val, vlen);
	return txn_put(x, t, key, klen, val, vlen, true);
}

int ruma_txn_upsert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	if (!x)
		return ruma_btree_upsert(t, key, klen, val, vlen, NULL);
	return txn_put(x, t, key, klen, val, vlen, false);
}

int ruma_txn_update(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
		    void (*fn)(void *val, size_t vlen, void *ctx), void *ctx)
{
	if (!x)
		return ruma_btree_update(t, key, klen, fn, ctx);
	if (!fn)
		return -EINVAL;
	return txn_update(x, t, key, klen, fn, ctx);
}

int ruma_txn_lock(ruma_txn *x, ruma_btree *t, const void *key, size_t klen)
{
	if (!x || (!key && klen))
		return -EINVAL;
	return lock_key(x, t, key, klen);
}

int ruma_txn_remove(ruma_txn *x, ruma_btree *t, const void *key, size_t klen)
{
	if (!x)
		return ruma_btree_remove(t, key, klen);
	bool present = false;
	int r = prepare_change(x, t, key, klen, &present);
	if (r || !present)
		return r ? r : RUMA_ENOTFOUND; /* unchanged; the undo is a no-op */
	deleters_join(x);
	ruma_bm_op_defer(x->bm, true);
	r = ruma_btree_remove(t, key, klen);
	ruma_bm_op_defer(x->bm, false);
	return r;
}

/* ---- snapshot reads ------------------------------------------------------------ */

/*
 * A snapshot read of a row (Neumann et al., SIGMOD 2015: the newest value in
 * place, older ones reached through undo):
 *   1. read the row in place (value or absent);
 *   2. if another transaction holds the row's lock and had not committed
 *      when the snapshot began, apply its before-images, newest first;
 *   3. apply the version store's versions of the row committed after the
 *      snapshot began, newest first.
 * The order is what makes it right.  A writer changes a row only while it
 * holds the row's lock and after its undo entry is published, and at
 * commit it links its undo into the version store before it releases its
 * locks.  So a change seen in step 1 is still found in step 2 (its writer
 * still holds the lock) or in step 3 (it committed in between: its versions
 * were linked before the lock went); were the version store asked first, a
 * writer committing between the two checks would be missed.  Applying one
 * writer's before-images twice (found both ways while it hands them over)
 * gives the same image, and a patch applied onto a newer value than the
 * one it was made for writes back every byte that changed since.  The one
 * change neither place holds is one an abort undid between step 1 and
 * step 2: the abort count of the row's stripe of the lock table (raised by
 * the abort before it releases the row's lock), read before step 1 and
 * after step 3, catches it and the read is repeated; so is a patch that
 * met an absent or shorter value (its row was replaced since step 1).
 * Step 3 is skipped, without the version store's lock, when the row's
 * bucket of the version filter (mvcc.h) holds no commit after the snapshot
 * began: the committer raises it as it links its versions, before its
 * locks go.
 */

/* Whether the committer `o` had not committed when a snapshot begun at
 * start began (a commit timestamp being taken is waited for: a few
 * instructions of the committer). */
static bool running_at(const ruma_txn *o, uint64_t start)
{
	uint64_t c;
	for (unsigned spins = 0;
	     (c = __atomic_load_n(&o->cts, __ATOMIC_SEQ_CST)) == MV_PENDING; spins++)
		if (spins > 64)
			sched_yield();
	return c == 0 || c > start;
}

/* Apply o's before-images of the row, newest first (o->mu held). */
static void apply_owner(ruma_txn *o, const ruma_btree *t, const void *key, size_t klen,
			struct mv_image *img)
{
	pthread_mutex_lock(&o->mu);
	for (size_t i = __atomic_load_n(&o->nundo, __ATOMIC_ACQUIRE); i-- > 0;) {
		const struct undo *u = &o->undo[i];
		const uint8_t *k = o->bytes + u->at;
		if (u->root == t->root && u->klen == klen && !memcmp(k, key, klen))
			mv_apply(img, u->kind, k + klen, u->vlen);
	}
	pthread_mutex_unlock(&o->mu);
}

/* Step 2 of a snapshot read (see above) for the row of hash h. */
static void resolve_lock(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen,
			 uint64_t h, struct mv_image *img)
{
	struct lock_stripe *s = &stripes[h % LOCK_STRIPES];
	if (!__atomic_load_n(&s->n, __ATOMIC_ACQUIRE))
		return;
	ruma_spin_lock(&s->mu);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct lock_entry *e = stripe_at(s, i);
		if (e->h != h || e->owner == x)
			continue;
		/* the row's value, in place or from its before-images, may be a
		 * commit not durable yet: this one, or one its holder locked the
		 * row beside */
		uint64_t at = RUMA_MAX(__atomic_load_n(&e->owner->released, __ATOMIC_ACQUIRE),
				       __atomic_load_n(&e->owner->dep, __ATOMIC_RELAXED));
		x->seen = RUMA_MAX(x->seen, at);
		/* the holder; a published commit has nothing left to apply for
		 * a snapshot it is running at (its undo went to the version
		 * store, which such a snapshot made it keep) */
		if (running_at(e->owner, x->start_ts))
			apply_owner(e->owner, t, key, klen, img);
	}
	ruma_spin_unlock(&s->mu);
}

/* Steps 2 and 3 onto img (step 1's result) for the row of hash h.  0,
 * RUMA_ERESTART (read again), RUMA_ESNAPTOOOLD. */
static int resolve(ruma_txn *x, const ruma_btree *t, const void *key, size_t klen,
		   uint64_t h, struct mv_image *img)
{
	resolve_lock(x, t, key, klen, h, img);
	int r = mv_empty() || mv_filter_clear(h, x->start_ts)
			? (mv_too_old(x->start_ts) ? RUMA_ESNAPTOOOLD : 0)
			: mv_resolve(t->bm, t->root, key, klen, x->start_ts, img);
	return r ? r : img->invalid ? RUMA_ERESTART : 0;
}

/* Copy a resolved image out as ruma_btree_lookup would. */
static int image_out(const struct mv_image *img, void *buf, size_t cap, size_t *vlen)
{
	if (!img->present)
		return RUMA_ENOTFOUND;
	if (vlen)
		*vlen = img->len;
	if (img->len > cap)
		return -ENOBUFS;
	if (img->len)
		memcpy(buf, img->val, img->len);
	return 0;
}

/* The abort count of the row's stripe (see unlock_all). */
static inline uint64_t stripe_aborts(uint64_t h)
{
	return __atomic_load_n(&stripes[h % LOCK_STRIPES].aborts, __ATOMIC_SEQ_CST);
}

/* One snapshot read through an image: RUMA_ERESTART to read again. */
static int snap_lookup_slow(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			    uint64_t h, void *buf, size_t cap, size_t *vlen)
{
	struct mv_image img;
	size_t len = 0;
	uint64_t a0 = stripe_aborts(h);
	int r = ruma_btree_lookup(t, key, klen, img.val, sizeof(img.val), &len);
	if (r && r != RUMA_ENOTFOUND)
		return r;
	img.present = r == 0;
	img.invalid = false;
	img.len = (uint32_t)len;
	r = resolve(x, t, key, klen, h, &img);
	if (!r && stripe_aborts(h) != a0)
		r = RUMA_ERESTART;
	return r ? r : image_out(&img, buf, cap, vlen);
}

/* A snapshot's point read.  Fastest path: the row's leaf is clean (its
 * mark below the snapshot's floor, mvcc.h): the row in place, or its
 * absence, is the snapshot's.  Fast path: nothing holds a lock in the
 * row's stripe, no version is stored and no abort of the stripe ran: the
 * row in place is the snapshot's (the same argument as above, with steps
 * 2 and 3 empty). */
static int snap_lookup(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
		       void *buf, size_t cap, size_t *vlen)
{
	if (klen == 0 || klen > RUMA_BTREE_MAX_KEY)
		return klen ? RUMA_ETOOBIG : -EINVAL;
	uint64_t mark = UINT64_MAX;
	int r = bt_lookup_mark(t, key, klen, buf, cap, vlen, &mark);
	if (r && r != RUMA_ENOTFOUND && r != -ENOBUFS)
		return r;
	if (mark < x->floor) /* as below: a snapshot made too old is told so */
		return mv_too_old(x->start_ts) ? RUMA_ESNAPTOOOLD : r;
	uint64_t h = row_hash(t, key, klen);
	const struct lock_stripe *s = &stripes[h % LOCK_STRIPES];
	uint64_t a0 = __atomic_load_n(&s->aborts, __ATOMIC_SEQ_CST);
	r = ruma_btree_lookup(t, key, klen, buf, cap, vlen); /* again: a0 first */
	if (r && r != RUMA_ENOTFOUND && r != -ENOBUFS)
		return r;
	if (!__atomic_load_n(&s->n, __ATOMIC_SEQ_CST) &&
	    (mv_empty() || mv_filter_clear(h, x->start_ts)) &&
	    __atomic_load_n(&s->aborts, __ATOMIC_SEQ_CST) == a0)
		return mv_too_old(x->start_ts) ? RUMA_ESNAPTOOOLD : r;
	do
		r = snap_lookup_slow(x, t, key, klen, h, buf, cap, vlen);
	while (r == RUMA_ERESTART);
	return r;
}

int ruma_txn_lookup(ruma_txn *x, ruma_btree *t, const void *key, size_t klen, void *buf,
		    size_t cap, size_t *vlen)
{
	if (x && reads_snapshot(x)) {
		if (!t || t->bm != x->bm)
			return -EINVAL;
		return snap_lookup(x, t, key, klen, buf, cap, vlen);
	}
	if (x) {
		if (klen == 0 || klen > RUMA_BTREE_MAX_KEY)
			return klen ? RUMA_ETOOBIG : -EINVAL;
		int r = row_lock(x, t, key, klen);
		if (r)
			return r;
	}
	return ruma_btree_lookup(t, key, klen, buf, cap, vlen);
}

/* ---- snapshot scans ------------------------------------------------------------- */

/*
 * A snapshot scan goes in batches.  Each batch copies up to `batch`
 * entries (SNAP_BATCH_FIRST, doubled per batch up to SNAP_BATCH_MAX) out
 * of the tree in place from the scan's position (the B-tree scan), which
 * covers the key range from the position to the last entry copied (or to
 * the tree's end); adds the rows of that range the tree lacks but the
 * snapshot may hold that running transactions removed; does step 2 of a
 * point read for every row, then step 3 for the whole range at once
 * (mv_merge: the version store's rows of the range, in order, under one
 * read lock, adding rows removed by committed transactions, with their
 * step 2 first); and, when no abort undid what it read (batch_unaborted)
 * and no row must be read again, calls fn on the rows present in the
 * snapshot, in order, with no latch held.  Else the batch is made again.
 */
#define SNAP_BATCH_FIRST 8u /* a short scan (a cursor's step) copies little */
#define SNAP_BATCH_MAX 64u

struct snap_row {
	bool in_place;
	uint16_t klen;
	uint64_t h;      /* row_hash */
	uint64_t aborts; /* its stripe's abort count when copied in place */
	struct mv_image img;
	uint8_t key[RUMA_BTREE_MAX_KEY];
};

struct snap_scan {
	ruma_txn *x;
	ruma_btree *t;
	bool desc;
	struct snap_row *rows;
	size_t n, cap, in_place, batch;
	bool oom;
	/* the position: rows beyond pos (or from it, when pos_incl) remain */
	bool has_pos, pos_incl;
	uint16_t poslen;
	uint8_t pos[RUMA_BTREE_MAX_KEY];
	/* the batch's far end (last row copied in place); none: the tree's end */
	bool has_end;
	uint16_t endlen;
	uint8_t end[RUMA_BTREE_MAX_KEY];
};

static struct snap_row *snap_add(struct snap_scan *sc, const void *key, size_t klen)
{
	if (grow((void **)&sc->rows, &sc->cap, sc->n + 1, sizeof(*sc->rows)))
		return NULL;
	struct snap_row *r = &sc->rows[sc->n++];
	r->klen = (uint16_t)klen;
	r->h = row_hash(sc->t, key, klen);
	memcpy(r->key, key, klen);
	r->in_place = false;
	r->img.present = r->img.invalid = false;
	r->img.len = 0;
	return r;
}

/* Whether key lies beyond the position and not past the batch's end. */
static bool snap_in_range(const struct snap_scan *sc, const void *key, size_t klen)
{
	int dir = sc->desc ? -1 : 1;
	if (sc->has_pos) {
		int c = mv_key_cmp(key, klen, sc->pos, sc->poslen) * dir;
		if (c < 0 || (c == 0 && !sc->pos_incl))
			return false;
	}
	return !sc->has_end || mv_key_cmp(key, klen, sc->end, sc->endlen) * dir <= 0;
}

static bool snap_copy(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct snap_scan *sc = ctx;
	if (!snap_in_range(sc, key, klen))
		return true; /* the position itself */
	struct snap_row *r = snap_add(sc, key, klen);
	if (!r) {
		sc->oom = true;
		return false;
	}
	r->in_place = true;
	r->aborts = stripe_aborts(r->h); /* under the leaf's latch: see snap_batch */
	r->img.present = true;
	r->img.len = (uint32_t)vlen;
	memcpy(r->img.val, val, vlen);
	return ++sc->in_place < sc->batch;
}

/* The batch's row of key, or NULL: a binary search of the rows copied in
 * place (in scan order), then a look at the rows added after them. */
static struct snap_row *snap_find(struct snap_scan *sc, const void *key, size_t klen)
{
	size_t lo = 0, hi = sc->in_place;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = mv_key_cmp(sc->rows[mid].key, sc->rows[mid].klen, key, klen);
		if (c == 0)
			return &sc->rows[mid];
		if ((c < 0) != sc->desc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = sc->in_place; i < sc->n; i++)
		if (sc->rows[i].klen == klen && !memcmp(sc->rows[i].key, key, klen))
			return &sc->rows[i];
	return NULL;
}

/* Add key as a row of the batch unless it is there already. */
static int snap_candidate(struct snap_scan *sc, const void *key, size_t klen)
{
	if (!snap_in_range(sc, key, klen) || snap_find(sc, key, klen))
		return 0;
	return snap_add(sc, key, klen) ? 0 : -ENOMEM;
}

/* mv_merge's callback: apply the row's versions to its batch row; a row
 * the batch lacks (removed since the snapshot began) is added, and its
 * step 2 done first. */
static int snap_versions(const void *key, size_t klen, const struct mv_row *row, void *ctx)
{
	struct snap_scan *sc = ctx;
	if (!snap_in_range(sc, key, klen))
		return 0;
	struct snap_row *r = snap_find(sc, key, klen);
	if (!r) {
		if (!(r = snap_add(sc, key, klen)))
			return -ENOMEM;
		resolve_lock(sc->x, sc->t, key, klen, r->h, &r->img);
	}
	mv_row_apply(row, sc->x->start_ts, &r->img);
	return 0;
}

/* The rows of the batch's range removed by running transactions. */
static int snap_removed(struct snap_scan *sc)
{
	int r = 0;
	pthread_mutex_lock(&del_mu);
	for (ruma_txn *d = deleters; d && !r; d = d->dnext) {
		if (d == sc->x || d->bm != sc->t->bm)
			continue;
		pthread_mutex_lock(&d->mu);
		for (size_t i = 0; i < __atomic_load_n(&d->nundo, __ATOMIC_ACQUIRE) && !r; i++)
			if (d->undo[i].root == sc->t->root)
				r = snap_candidate(sc, d->bytes + d->undo[i].at, d->undo[i].klen);
		pthread_mutex_unlock(&d->mu);
	}
	pthread_mutex_unlock(&del_mu);
	return r;
}

static int snap_order(const void *a, const void *b)
{
	const struct snap_row *x = a, *y = b;
	return mv_key_cmp(x->key, x->klen, y->key, y->klen);
}

static int snap_order_desc(const void *a, const void *b)
{
	return snap_order(b, a);
}

/*
 * Whether no abort undid what the batch read: a row copied in place under
 * its leaf's latch (no abort could restore it then) whose stripe saw no
 * abort since, and no remover aborted since the batch began (a row it
 * removed and then put back may be missing from the copy).
 */
static bool batch_unaborted(const struct snap_scan *sc, uint64_t d0)
{
	if (__atomic_load_n(&del_aborts, __ATOMIC_SEQ_CST) != d0)
		return false;
	for (size_t i = 0; i < sc->n; i++)
		if (sc->rows[i].in_place && stripe_aborts(sc->rows[i].h) != sc->rows[i].aborts)
			return false;
	return true;
}

/* Make one batch: 0, RUMA_ERESTART (make it again) or an error. */
static int snap_batch(struct snap_scan *sc)
{
	sc->n = sc->in_place = 0;
	sc->has_end = false;
	if (sc->cap < sc->batch) { /* nothing to keep: a fresh array, no copy */
		free(sc->rows);
		sc->cap = 0;
		if (!(sc->rows = malloc(sc->batch * sizeof(*sc->rows))))
			return -ENOMEM;
		sc->cap = sc->batch;
	}
	uint64_t d0 = __atomic_load_n(&del_aborts, __ATOMIC_SEQ_CST);
	const void *from = sc->has_pos ? sc->pos : NULL;
	size_t flen = sc->has_pos ? sc->poslen : 0;
	int r = sc->desc ? ruma_btree_scan_desc(sc->t, from, flen, snap_copy, sc)
			 : ruma_btree_scan_asc(sc->t, from, flen, snap_copy, sc);
	if (!r && sc->oom)
		r = -ENOMEM;
	if (r)
		return r;
	if (sc->in_place == sc->batch) {
		const struct snap_row *last = &sc->rows[sc->n - 1];
		sc->has_end = true;
		sc->endlen = last->klen;
		memcpy(sc->end, last->key, last->klen);
	}
	r = snap_removed(sc);
	for (size_t i = 0; i < sc->n && !r; i++) /* step 2 of every row */
		resolve_lock(sc->x, sc->t, sc->rows[i].key, sc->rows[i].klen, sc->rows[i].h,
			     &sc->rows[i].img);
	if (!r && !mv_empty()) { /* step 3, after step 2 of every row */
		const void *lo = sc->desc ? (sc->has_end ? sc->end : NULL) : from;
		size_t lolen = sc->desc ? (sc->has_end ? sc->endlen : 0) : flen;
		const void *hi = sc->desc ? from : (sc->has_end ? sc->end : NULL);
		size_t hilen = sc->desc ? flen : (sc->has_end ? sc->endlen : 0);
		r = mv_merge(sc->t->bm, sc->t->root, lo, lolen, hi, hilen, sc->x->start_ts,
			     snap_versions, sc);
	} else if (!r && mv_too_old(sc->x->start_ts)) {
		r = RUMA_ESNAPTOOOLD;
	}
	for (size_t i = 0; i < sc->n && !r; i++)
		if (sc->rows[i].img.invalid)
			r = RUMA_ERESTART;
	if (!r && !batch_unaborted(sc, d0))
		r = RUMA_ERESTART;
	if (!r && sc->n > sc->in_place) /* the rows copied in place are in order */
		qsort(sc->rows, sc->n, sizeof(*sc->rows), sc->desc ? snap_order_desc : snap_order);
	return r;
}

/* Call fn on the batch's rows present in the snapshot; false: fn stopped. */
static bool snap_emit(const struct snap_scan *sc, ruma_btree_scan_fn fn, void *ctx)
{
	for (size_t i = 0; i < sc->n; i++) {
		const struct snap_row *r = &sc->rows[i];
		if (r->img.present && !fn(r->key, r->klen, r->img.val, r->img.len, ctx))
			return false;
	}
	return true;
}

/*
 * The streaming path of a snapshot scan: while no transaction that removed
 * rows is running, the version store holds no versions of a transaction
 * that removed rows, no such transaction aborted since the scan began and
 * the snapshot is not too old, no row can be missing from the tree, and
 * each row read in place needs only steps 2 and 3 of a point read (its
 * lock holder's before-images, then the versions stored for it when the
 * version filter says a commit after the snapshot changed it), done in the
 * scan's callback under the leaf's shared latch, step 3 after step 2 (a
 * holder that committed in between has linked its versions and raised the
 * filter); the conditions are checked after that.  Under that latch no
 * abort can restore the row between the steps (restoring needs the
 * latch).  A row removed before the scan passed its place was removed by a
 * transaction that joined the deleters list first, so the check made at
 * the next row (or at the end) sees it, or, once that transaction ended,
 * its stored versions (counted before it left the list) or the count of
 * their aborts.  Then the scan goes on in batches from the last row given
 * to fn.
 */
struct snap_stream {
	struct snap_scan *sc;
	ruma_btree_scan_fn fn;
	void *ctx;
	uint64_t mark; /* the current leaf's (bt_scan_from) */
	uint64_t a0;
	bool fallback, stopped;
	struct mv_image img;
};

static bool stream_ok(const struct snap_stream *st)
{
	return !__atomic_load_n(&deleters, __ATOMIC_ACQUIRE) && mv_no_removed() &&
	       __atomic_load_n(&del_aborts, __ATOMIC_SEQ_CST) == st->a0 &&
	       !mv_too_old(st->sc->x->start_ts);
}

/* Start an image of the row read in place (val, vlen) for steps 2 and 3. */
static void stream_image(struct mv_image *img, const void *val, size_t vlen)
{
	img->present = true;
	img->invalid = false;
	img->len = (uint32_t)vlen;
	memcpy(img->val, val, vlen);
}

static bool stream_one(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct snap_stream *st = ctx;
	struct snap_scan *sc = st->sc;
	bool imaged = false;
	if (st->mark < sc->x->floor) /* a clean leaf: its rows are as the snapshot sees them */
		goto checked;
	uint64_t h = row_hash(sc->t, key, klen);
	if (__atomic_load_n(&stripes[h % LOCK_STRIPES].n, __ATOMIC_SEQ_CST)) {
		stream_image(&st->img, val, vlen);
		imaged = true;
		resolve_lock(sc->x, sc->t, key, klen, h, &st->img);
	}
	/* step 3, after step 2: a holder that committed meanwhile has linked
	 * its versions and raised the row's filter bucket */
	if (!mv_empty() && !mv_filter_clear(h, sc->x->start_ts)) {
		if (!imaged)
			stream_image(&st->img, val, vlen);
		imaged = true;
		if (mv_resolve(sc->t->bm, sc->t->root, key, klen, sc->x->start_ts, &st->img))
			st->img.invalid = true; /* too old: the batches say so */
	}
checked:;
	bool present = !imaged || st->img.present;
	if (imaged) {
		val = st->img.val;
		vlen = st->img.len;
	}
	if (st->img.invalid || !stream_ok(st)) {
		st->fallback = true;
		return false;
	}
	sc->has_pos = true;
	sc->pos_incl = false;
	sc->poslen = (uint16_t)klen;
	memcpy(sc->pos, key, klen);
	if (present && !st->fn(key, klen, val, vlen, st->ctx)) {
		st->stopped = true;
		return false;
	}
	return true;
}

/* The streaming path: 0 with *done when the scan is complete (or fn
 * stopped it), else the batches go on from sc's position.  *spot (NULL:
 * none) is where to go on from and then where fn stopped (spot.h); not
 * valid unless fn itself stopped the scan. */
static int snap_stream_run(struct snap_scan *sc, ruma_btree_scan_fn fn, void *ctx, bt_spot *spot,
			   bool *done)
{
	struct snap_stream stream, *st = &stream; /* on the stack: one per fill */
	st->sc = sc;
	st->fn = fn;
	st->ctx = ctx;
	st->a0 = __atomic_load_n(&del_aborts, __ATOMIC_SEQ_CST);
	st->fallback = st->stopped = false;
	st->img.invalid = false;
	const void *from = sc->has_pos ? sc->pos : NULL;
	size_t flen = sc->has_pos ? sc->poslen : 0;
	int r = bt_scan_from(sc->t, sc->desc, from, flen, spot, &st->mark, stream_one, st);
	if (spot && !st->stopped)
		spot->valid = false; /* a stop for the batches, not by fn */
	*done = !r && (st->stopped || (!st->fallback && stream_ok(st)));
	return r;
}

static int snap_scan(ruma_txn *x, ruma_btree *t, bool desc, const void *start,
		     size_t slen, bt_spot *spot, ruma_btree_scan_fn fn, void *ctx)
{
	int bad = !t || t->bm != x->bm || !fn ? -EINVAL
		  : slen > RUMA_BTREE_MAX_KEY ? RUMA_ETOOBIG : 0;
	if (bad) {
		if (spot) /* else the streaming path sets it */
			spot->valid = false;
		return bad;
	}
	struct snap_scan sc; /* field by field: its two key buffers need no zeroing */
	sc.x = x;
	sc.t = t;
	sc.desc = desc;
	sc.rows = NULL;
	sc.n = sc.cap = sc.in_place = 0;
	sc.batch = SNAP_BATCH_FIRST;
	sc.oom = false;
	sc.has_pos = slen > 0;
	sc.pos_incl = true;
	sc.poslen = (uint16_t)slen;
	sc.has_end = false;
	sc.endlen = 0;
	if (slen)
		memcpy(sc.pos, start, slen);
	bool done = false;
	int r = snap_stream_run(&sc, fn, ctx, spot, &done);
	while (!r && !done) {
		r = snap_batch(&sc);
		if (r == RUMA_ERESTART) {
			r = 0;
			continue;
		}
		if (r || !snap_emit(&sc, fn, ctx) || !sc.has_end)
			break;
		sc.batch = RUMA_MIN(sc.batch * 2, SNAP_BATCH_MAX);
		sc.has_pos = true;
		sc.pos_incl = false;
		sc.poslen = sc.endlen;
		memcpy(sc.pos, sc.end, sc.endlen);
	}
	free(sc.rows);
	return r;
}

int txn_scan_from(ruma_txn *x, ruma_btree *t, bool desc, const void *start, size_t slen,
		  bt_spot *spot, ruma_btree_scan_fn fn, void *ctx)
{
	if (x && reads_snapshot(x))
		return snap_scan(x, t, desc, start, slen, spot, fn, ctx);
	return bt_scan_from(t, desc, start, slen, spot, NULL, fn, ctx);
}

int ruma_txn_scan_asc(ruma_txn *x, ruma_btree *t, const void *start, size_t slen,
		      ruma_btree_scan_fn fn, void *ctx)
{
	return txn_scan_from(x, t, false, start, slen, NULL, fn, ctx);
}

int ruma_txn_scan_desc(ruma_txn *x, ruma_btree *t, const void *start, size_t slen,
		       ruma_btree_scan_fn fn, void *ctx)
{
	return txn_scan_from(x, t, true, start, slen, NULL, fn, ctx);
}

/*
 * Give the commit its timestamp and, while a snapshot begun before it is
 * open, move its undo to the version store: before the row locks go (see
 * "snapshot reads").  The timestamp is marked pending first, so a snapshot
 * reader that finds the commit not begun knows its timestamp will be later
 * than its own start.
 */
static void publish_commit(ruma_txn *x)
{
	snapshot_end(x); /* its own snapshot needs none of its versions */
	if (!x->nundo)
		return;
	__atomic_store_n(&x->cts, MV_PENDING, __ATOMIC_SEQ_CST);
	uint64_t c = mv_commit_ts();
	__atomic_store_n(&x->cts, c, __ATOMIC_SEQ_CST);
	if (mv_needed(x->bm, c)) /* -ENOMEM: made the snapshots that needed it too old */
		(void)mv_handoff(x->bm, c, &x->mu, x->undo, &x->nundo, x->bytes, x->nbytes,
				 x->deleter);
}

static int log_id(ruma_bm *bm, uint16_t type, uint64_t id, uint64_t *end)
{
	return ruma_bm_log(bm, type, &id, sizeof(id), NULL, end);
}

/*
 * Commit.  Without a wait (no log, ASYNC, RUMA_TXN_ASYNC): log COMMIT,
 * publish, release the row locks.  A SYNC commit releases them early
 * instead (as in Aether, Johnson et al., PVLDB 2010): `released` is set to
 * its record's end, the commit is published (its versions linked), then
 * `published` frees its rows for writers while it waits for the record, so
 * the next transaction on a hot row shares the flush round instead of
 * being turned away until it ends.  Such a writer logs its own COMMIT
 * later, so it is never durable without this one; a snapshot writer older
 * than this commit still conflicts (lock_key: first writer wins).  Its
 * entries stay in the lock table until the wait is over, so whoever meets
 * one of its rows learns the log position it depends on: a writer locking
 * the row beside it (row_lock: `dep`), a snapshot reader reading it
 * (resolve_lock: `seen`).  A transaction that logged nothing waits for
 * those at its commit, so nothing it read can be lost once its commit
 * returned; one that met no such row does not wait.
 */
int ruma_txn_commit(ruma_txn *x)
{
	if (!x)
		return -EINVAL;
	ruma_bm *bm = x->bm;
	int r = 0;
	uint64_t end = 0;
	bool wait = false;
	if (x->id) {
		r = log_id(bm, RUMA_BM_LOG_COMMIT, x->id, &end);
		wait = !r && !(x->flags & RUMA_TXN_ASYNC) &&
		       ruma_bm_durability_of(bm) == RUMA_BM_DURABLE_SYNC;
		if (wait)
			__atomic_store_n(&x->released, end, __ATOMIC_RELEASE);
	} else {
		/* nonzero only beside SYNC commits that released their rows */
		end = RUMA_MAX(__atomic_load_n(&x->dep, __ATOMIC_RELAXED), x->seen);
		wait = end && !(x->flags & RUMA_TXN_ASYNC);
	}
	publish_commit(x);
	if (wait && x->id) /* its rows are free for writers from now on */
		__atomic_store_n(&x->published, true, __ATOMIC_RELEASE);
	if (wait && end > ruma_bm_log_durable(bm))
		r = ruma_bm_log_flush(bm, end);
	unlock_all(x, false);
	txn_free(x);
	return r;
}

int ruma_txn_commit_nowait(ruma_txn *x, uint64_t *durable_at)
{
	if (!x || !durable_at)
		return -EINVAL;
	int r = 0;
	uint64_t end = 0;
	if (x->id)
		r = log_id(x->bm, RUMA_BM_LOG_COMMIT, x->id, &end);
	else
		end = ruma_bm_log_end(x->bm); /* what it read may not be durable yet */
	if (!r && end && ruma_bm_logging(x->bm))
		r = ruma_bm_log_request(x->bm, end);
	*durable_at = end;
	publish_commit(x);
	unlock_all(x, false);
	txn_free(x);
	return r;
}

int ruma_txn_abort(ruma_txn *x)
{
	if (!x)
		return -EINVAL;
	int err = 0;
	ruma_btree t = { .bm = x->bm };
	ruma_bm_op_defer(x->bm, true);
	for (size_t i = x->nundo; i-- > 0;) {
		struct undo *u = &x->undo[i];
		t.root = u->root;
		const uint8_t *b = x->bytes + u->at;
		int r = restore(&t, b, u->klen, u->kind, b + u->klen, u->vlen);
		err = err ? err : r;
	}
	ruma_bm_op_defer(x->bm, false);
	if (!err && x->id) {
		uint64_t end;
		err = log_id(x->bm, RUMA_BM_LOG_END, x->id, &end);
	}
	if (x->deleter) /* before it leaves the list: see "snapshot scans" */
		__atomic_add_fetch(&del_aborts, 1, __ATOMIC_SEQ_CST);
	unlock_all(x, x->nundo > 0);
	txn_free(x);
	return err;
}

/* Undo the transactions a crash cut off (see the file comment). */
int bt_txn_recover(ruma_bm *bm)
{
	ruma_bm_undo *list;
	size_t n;
	int err = 0;
	pthread_mutex_lock(&recover_mu);
	ruma_bm_undo_take(bm, &list, &n);
	ruma_btree t = { .bm = bm };
	for (size_t i = 0; i < n && !err; i++) {
		struct undo_hdr h;
		const uint8_t *p = list[i].payload;
		if (list[i].len < sizeof(h)) {
			err = RUMA_ECORRUPT;
			break;
		}
		memcpy(&h, p, sizeof(h));
		if (list[i].len != sizeof(h) + h.klen + h.vlen || h.klen == 0 || h.kind > UNDO_PATCH) {
			err = RUMA_ECORRUPT;
			break;
		}
		t.root = h.root;
		err = restore(&t, p + sizeof(h), h.klen, h.kind, p + sizeof(h) + h.klen, h.vlen);
	}
	uint64_t end = 0;
	for (size_t i = 0; i < n && !err; i++) {
		bool first = true;
		for (size_t k = 0; k < i && first; k++)
			first = list[k].txn != list[i].txn;
		if (first)
			err = log_id(bm, RUMA_BM_LOG_END, list[i].txn, &end);
	}
	if (!err && end)
		err = ruma_bm_log_flush(bm, end);
	if (!err && n)
		ruma_bm_undo_done(bm);
	ruma_bm_undo_free(list, n);
	pthread_mutex_unlock(&recover_mu);
	return err;
}

void ruma_txn_mvcc_stat(ruma_txn_mvcc_stats *out)
{
	if (out)
		mv_stats(out);
}

void ruma_txn_set_version_limit(uint64_t bytes)
{
	mv_set_limit(bytes);
}

size_t bt_txn_changes(const ruma_txn *x)
{
	return x ? x->nundo : 0;
}

uint64_t bt_txn_start_ts(const ruma_txn *x)
{
	return x->registered ? x->start_ts : UINT64_MAX;
}

int bt_txn_replaced(const ruma_txn *x, size_t since, const void **old, size_t *len)
{
	if (!x || x->nundo <= since)
		return 0;
	const struct undo *u = &x->undo[x->nundo - 1];
	if (u->kind != UNDO_VALUE)
		return 0;
	*old = x->bytes + u->at + u->klen;
	*len = u->vlen;
	return 1;
}
