/*
 * mvcc.h — the version store behind snapshot reads (txn.h, docs/isolation.md):
 * the global timestamp, the registry of active snapshots, and the committed
 * before-images that active snapshots may still need, keyed by (store,
 * tree, key), plus the undo record layout txn.c and this file share.
 *
 * Called only by txn.c.  Process-wide state, like txn.c's row-lock table.
 */
#ifndef RUMA_BTREE_MVCC_H
#define RUMA_BTREE_MVCC_H

#include <ruma/btree.h>
#include <ruma/txn.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* What an undo entry restores (its kind). */
enum undo_kind {
	UNDO_ABSENT = 0, /* the row did not exist: remove it */
	UNDO_VALUE = 1,  /* put the old value back */
	UNDO_PATCH = 2,  /* an in-place update: write old bytes back at offsets */
};

/* One undo entry in memory: the row and what restores it. */
struct undo {
	ruma_pid root;
	uint16_t klen;
	uint8_t kind;
	uint32_t vlen;  /* bytes after the key */
	size_t at;      /* in the transaction's undo bytes: key, then the old value or the patch */
};

/* A row's value as a snapshot sees it, built by applying before-images
 * newest first onto the value read in place. */
struct mv_image {
	bool present;
	bool invalid;  /* a patch met an absent or shorter value: reread */
	uint32_t len;
	uint8_t val[RUMA_BTREE_MAX_VALUE];
};

/* mv_apply — apply one before-image (kind, data of len bytes) to img:
 * ABSENT and VALUE replace it, PATCH writes its old bytes back. */
void mv_apply(struct mv_image *img, unsigned kind, const uint8_t *data, size_t len);

/* A commit timestamp not yet known: the committer is between marking and
 * taking it (readers wait the few instructions until it is set). */
#define MV_PENDING UINT64_MAX

/* mv_clock_start — once per process, before the first transaction: start
 * the timestamp and the writers' floor at the wall clock's microseconds,
 * above every mark an earlier process left in the pages of a store (so
 * those leaves are clean; "Leaf marks" below). */
void mv_clock_start(void);

/* mv_commit_ts — the next commit timestamp (++global, seq_cst). */
uint64_t mv_commit_ts(void);

/* mv_snapshot_begin — register a snapshot of store bm as active in a slot
 * of the registry, then read the writers' floor and its start timestamp
 * (in that order, seq_cst).  -EAGAIN when all slots (4096) hold open
 * snapshots. */
int mv_snapshot_begin(ruma_bm *bm, uint64_t *start_ts, uint64_t *floor, unsigned *slot);

/*
 * Leaf marks (docs/isolation.md, "Clean leaves").  A transaction that
 * writes rows in place registers as a writer first (mv_writer_begin) and
 * stamps every leaf it changes with its mark (the timestamp read once it
 * was registered; bt_write_mark); a leaf keeps the largest mark, and
 * splits and merges carry it.  It unregisters once its rows are committed
 * (its versions handed over) or restored (mv_writer_end), which raises the
 * floor: a lower bound of the marks of the writers not finished.  A
 * snapshot reads the floor before its start: a leaf whose mark is below it
 * was last changed by writers that finished before the snapshot began, so
 * its rows are what the snapshot sees, read in place with no lock or
 * version check.  -EAGAIN when all slots (4096) hold writers.
 */
int mv_writer_begin(uint64_t *mark, unsigned *slot);
void mv_writer_end(unsigned slot);

/* mv_snapshot_end — unregister the snapshot of that slot and collect the
 * versions no active snapshot needs any more. */
void mv_snapshot_end(unsigned slot);

/* mv_needed — whether an active snapshot of bm started before commit_ts
 * (then the committer must hand its undo to the version store). */
bool mv_needed(ruma_bm *bm, uint64_t commit_ts);

/*
 * mv_handoff — copy a committing transaction's undo (the entries u[0, *n)
 * and their bytes, nbytes long) into one block as the versions of commit
 * timestamp cts on store bm.  The owner's count *n is set to 0 under
 * owner_mu once the block is stored, so a reader that reaches the undo
 * through the owner, and one that reaches it here, never both miss it (the
 * owner keeps its arrays for its next transaction).  Then collects what no
 * snapshot needs and drops the oldest versions beyond the memory bound
 * (the snapshots that needed them get RUMA_ESNAPTOOOLD).  On -ENOMEM *n is
 * 0 all the same and the snapshots that needed the undo are made too old.
 * `removed`: the transaction removed rows from the tree (counted in
 * mv_nremoved while the block is stored).
 */
int mv_handoff(ruma_bm *bm, uint64_t cts, pthread_mutex_t *owner_mu, const struct undo *u,
	       size_t *n, const uint8_t *bytes, size_t nbytes, bool removed);

/* mv_fail_row_alloc — make the nth allocation of a version-store row from
 * now on fail (a test of the store's out-of-memory path; 0: none fails). */
void mv_fail_row_alloc(unsigned nth);

/* The version count, the too-old bound and the stored blocks of
 * transactions that removed rows (mvcc.c), read inline by the fast paths
 * of snapshot reads and scans. */
extern uint64_t mv_nver, mv_forced, mv_nremoved;

/* mv_row_hash — 64 bits of (store, tree, key), mixed 8 bytes at a time:
 * the identity of a row's lock (txn.c) and of its version-filter bucket. */
static inline uint64_t mv_mix64(uint64_t h, uint64_t w)
{
	__uint128_t m = (__uint128_t)(h ^ w) * 0x9e3779b97f4a7c15ull;
	return (uint64_t)m ^ (uint64_t)(m >> 64);
}

static inline uint64_t mv_row_hash(const ruma_bm *bm, ruma_pid root, const void *key, size_t klen)
{
	const uint8_t *p = key, *end = p + klen;
	uint64_t h = mv_mix64((uint64_t)(uintptr_t)bm, root ^ ((uint64_t)klen << 56));
	uint64_t w;
	for (; end - p >= 8; p += 8) {
		memcpy(&w, p, 8);
		h = mv_mix64(h, w);
	}
	if (p < end) { /* the last 8 bytes, overlapping (the length is in h already) */
		if (klen >= 8) {
			memcpy(&w, end - 8, 8);
		} else {
			w = 0;
			memcpy(&w, p, klen);
		}
		h = mv_mix64(h, w);
	}
	return mv_mix64(h, 0x2545f4914f6cdd1dull);
}

/* The version filter: per bucket of row hashes, the newest commit timestamp
 * whose versions of a row of the bucket were stored (raised under the
 * store's lock before the committer releases its row locks, never lowered).
 * A snapshot begun at or after it needs no stored version of such a row, so
 * it reads the row in place without the version store's lock. */
#define MV_FILTER_BITS 16
extern uint64_t mv_filter[1u << MV_FILTER_BITS];

/* mv_filter_clear — no version of the row of hash h newer than start_ts is
 * stored (acquire: pairs with the release that raised the bucket). */
static inline bool mv_filter_clear(uint64_t h, uint64_t start_ts)
{
	return __atomic_load_n(&mv_filter[h >> (64 - MV_FILTER_BITS)], __ATOMIC_ACQUIRE) <= start_ts;
}

/* mv_no_removed — no stored version is of a row its transaction removed
 * from the tree (seq_cst): every row a snapshot may see is in the tree. */
static inline bool mv_no_removed(void)
{
	return __atomic_load_n(&mv_nremoved, __ATOMIC_SEQ_CST) == 0;
}

/* mv_empty — no version is stored (acquire): the fast path of a read. */
static inline bool mv_empty(void)
{
	return __atomic_load_n(&mv_nver, __ATOMIC_ACQUIRE) == 0;
}

/* mv_too_old — versions a snapshot begun at start_ts needed were dropped. */
static inline bool mv_too_old(uint64_t start_ts)
{
	return start_ts < __atomic_load_n(&mv_forced, __ATOMIC_ACQUIRE);
}

/*
 * mv_resolve — apply, newest first, every stored version of (bm, root, key)
 * committed after start_ts to img.  RUMA_ESNAPTOOOLD when such versions
 * were dropped.  Takes the store's lock: the caller, which has the row's
 * hash, asks mv_filter_clear first.
 */
int mv_resolve(ruma_bm *bm, ruma_pid root, const void *key, size_t klen, uint64_t start_ts,
	       struct mv_image *img);

/* mv_newer — 1 when (bm, root, key) has a stored version committed after
 * start_ts, 0 when not, RUMA_ESNAPTOOOLD when versions were dropped that
 * a snapshot begun at start_ts needed. */
int mv_newer(ruma_bm *bm, ruma_pid root, const void *key, size_t klen, uint64_t start_ts);

struct mv_row;

/* Called by mv_merge for each row with versions newer than the snapshot. */
typedef int (*mv_row_fn)(const void *key, size_t klen, const struct mv_row *row, void *ctx);

/*
 * mv_merge — under one read lock of the version store, call fn for every
 * row of (bm, root) in [lo, hi] (NULL bounds: open), in ascending key
 * order, that has a version committed after start_ts; fn may call
 * mv_row_apply on it (and take row locks' stripes and their holders'
 * mutexes: nothing that holds those waits for the store).  Stops at fn's
 * first nonzero result and returns it; RUMA_ESNAPTOOOLD when versions a
 * snapshot begun at start_ts needed were dropped.
 */
int mv_merge(ruma_bm *bm, ruma_pid root, const void *lo, size_t lolen, const void *hi,
	     size_t hilen, uint64_t start_ts, mv_row_fn fn, void *ctx);

/* mv_row_apply — apply row's versions committed after start_ts to img,
 * newest first (inside mv_merge's fn only). */
void mv_row_apply(const struct mv_row *row, uint64_t start_ts, struct mv_image *img);

/* mv_key_cmp — memcmp order with shorter prefixes first (btree.h). */
int mv_key_cmp(const void *a, size_t alen, const void *b, size_t blen);

/* mv_stats / mv_set_limit — see ruma_txn_mvcc_stat / ruma_txn_set_version_limit. */
void mv_stats(ruma_txn_mvcc_stats *out);
void mv_set_limit(uint64_t bytes);

#endif
