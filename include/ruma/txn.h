/*
 * txn.h — transactions over the B-trees of one store (part of the btree
 * module; design in docs/wal.md).
 *
 * A transaction groups B-tree operations on any trees of one store into one
 * atomic unit: ruma_txn_commit makes all of them durable together (on a
 * store with a log, durability SYNC: durable when commit returns; ASYNC, or
 * RUMA_TXN_ASYNC: commit returns at once and a crash may lose the last few
 * milliseconds of commits, each whole), ruma_txn_abort undoes all of them, and
 * a crash undoes every transaction that had not committed (recovery redoes
 * the log, then the first ruma_btree_open / ruma_btree_create of the store
 * undoes the unfinished transactions logically, newest change first).
 *
 * Isolation.  A read-only transaction (RUMA_TXN_RDONLY) reads one snapshot:
 * the committed state as of its begin, for point reads (ruma_txn_lookup)
 * and scans (ruma_txn_scan_asc / _desc) alike, in both directions, across
 * splits and merges.  It takes no row locks, never waits for a writer,
 * never conflicts, and no writer waits for it.  (Two short waits remain:
 * the version store's internal lock, held for microseconds and never
 * across I/O; and ruma_txn_commit, which waits until the synchronous
 * commits whose rows it read are durable, so that what it returned cannot
 * vanish in a crash.)  Rows changed by writers
 * that had not committed when it began are read from their before-images:
 * the running writer's undo, or, once that writer commits, the version
 * store its undo is moved to (only while a snapshot may need it: without
 * an open snapshot a commit frees its undo as before).  Versions are freed
 * as soon as the oldest snapshot that may need them ends; their memory is
 * bounded (ruma_txn_set_version_limit): beyond it the oldest versions are
 * dropped and every snapshot begun before them gets RUMA_ESNAPTOOOLD on
 * its next read (end it and retry).  Versions serve the snapshots of their
 * own store.  Design: docs/isolation.md.
 *
 * A read-write transaction (the default, RUMA_TXN_SNAPSHOT) runs under
 * snapshot isolation: its reads (point reads and scans) see its snapshot
 * plus its own writes and take no locks; each write locks its row (a row
 * held by another transaction: RUMA_ECONFLICT) and is RUMA_ECONFLICT too
 * when a transaction that committed after this one began changed the row
 * (first writer wins; abort and retry).  Snapshot isolation allows write
 * skew: two transactions that each read rows the other writes can both
 * commit (docs/isolation.md has the anomaly table).  While such a
 * transaction is open, every commit keeps its before-images for it.
 *
 * Read-write transactions begun with RUMA_TXN_LOCKING: strict two-phase
 * locking on rows.  Every row (tree, key) a transaction reads or
 * writes through these functions is locked exclusively until commit or
 * abort; a row locked by another transaction makes the call return
 * RUMA_ECONFLICT at once (no waiting, so no deadlock): the caller aborts
 * and retries the transaction.  Among such transactions this gives
 * serializable executions for point operations.  Not covered: their scans
 * (they take no row locks, so they can see phantoms and other
 * transactions' uncommitted changes), and plain ruma_btree_* calls made
 * outside transactions, which take no row locks (they read uncommitted
 * changes, a plain write to a row a transaction changed is overwritten by
 * that transaction's abort, and a snapshot sees a plain write as soon as
 * it is made).  Locks are kept in a
 * process-wide table keyed by a 64-bit hash of (store, tree, key): two rows
 * with the same hash conflict (rare, and only a spurious retry).
 *
 * Undo is logical: each change logs the row's previous value (or "absent")
 * before it is made; abort and recovery restore those values through the
 * normal B-tree operations, whose page changes are logged like any other
 * (redo-only compensation).  Without a log, transactions still lock and
 * abort, but nothing is durable beyond what the buffer manager writes.
 *
 * A transaction is used by one thread at a time.  Keys and values follow
 * btree.h's limits.  Every function returns 0 or a negative code; an
 * operation that fails leaves the transaction open (abort it).  A tree of
 * another store than the transaction's is -EINVAL (nothing changed); the
 * store cannot be closed while a transaction is open (ruma_bm_close:
 * -EBUSY).
 */
#ifndef RUMA_TXN_H
#define RUMA_TXN_H

#include <ruma/btree.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ruma_txn ruma_txn;

/* ruma_txn_begin flags. */
#define RUMA_TXN_ASYNC 1u  /* commit does not wait for the log to be durable */
#define RUMA_TXN_RDONLY 2u   /* read a snapshot; writes give -EACCES */
#define RUMA_TXN_SNAPSHOT 4u /* read-write under snapshot isolation: the
				default, named for clarity (see Isolation) */
#define RUMA_TXN_LOCKING 8u  /* read-write under strict two-phase locking
				instead (see Isolation) */

/* ruma_txn_begin — start a transaction on bm's trees (flags RUMA_TXN_ASYNC,
 * and RUMA_TXN_RDONLY, RUMA_TXN_SNAPSHOT (the default) or RUMA_TXN_LOCKING;
 * a snapshot is taken now unless RUMA_TXN_LOCKING).  -ENOMEM, -EINVAL
 * (unknown flags, RUMA_TXN_LOCKING with another mode); -EAGAIN when 4096
 * snapshots are open in the process at once. */
RUMA_API int ruma_txn_begin(ruma_bm *bm, unsigned flags, ruma_txn **out);

/*
 * ruma_txn_commit — log the commit, release the row locks, then wait for
 * durability (unless async) and free the transaction.  The locks go before
 * the commit is durable (early lock release, Johnson et al., PVLDB 2010),
 * so that a writer of the same rows runs while this commit is written and
 * shares its flush: safe, since one that sees these changes logs its own
 * commit after this one; and a transaction that wrote nothing waits at its
 * commit until the commits whose rows it read are durable (one that read
 * none of them does not wait).  When it returns 0 the commit is durable
 * (on a SYNC store).
 * On a log error the error is returned: the transaction's changes stay in
 * the trees in memory, but are not durable, and the store recovers without
 * them at its next open (the log is dead; close and reopen the store).
 */
RUMA_API int ruma_txn_commit(ruma_txn *x);

/*
 * ruma_txn_commit_nowait — commit without waiting for durability, for
 * callers that keep several commits in flight per thread (flush pipelining,
 * as in Aether, Johnson et al., PVLDB 2010): logs the commit, asks the log's
 * background flusher to make it durable, releases the row locks at once and
 * frees the transaction.  *durable_at gets the LSN the transaction is
 * durable at: acknowledge it once ruma_bm_log_durable(bm) >= *durable_at,
 * or wait with ruma_bm_log_flush(bm, *durable_at).  A read-only transaction
 * gets the log's current end (what it read may not be durable yet); 0 on a
 * store without a log.  Releasing the locks before the commit is durable is
 * safe: a transaction that sees these changes logs its own commit after this
 * one.  Errors as ruma_txn_commit (-EINVAL for NULL arguments).
 */
RUMA_API int ruma_txn_commit_nowait(ruma_txn *x, uint64_t *durable_at);

/* ruma_txn_abort — undo every change of the transaction (newest first),
 * release its locks and free it.  Returns 0 or the first error met while
 * undoing (the log or the store failing); the transaction is freed anyway. */
RUMA_API int ruma_txn_abort(ruma_txn *x);

/*
 * Operations inside a transaction: as the ruma_btree_* functions of the same
 * name, plus RUMA_ECONFLICT when another transaction holds the row.  With
 * x == NULL each is the plain auto-committed B-tree operation.  In a
 * read-only transaction the writes give -EACCES and ruma_txn_lookup reads
 * the snapshot (RUMA_ESNAPTOOOLD: see above).
 */
RUMA_API int ruma_txn_insert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			     const void *val, size_t vlen);
RUMA_API int ruma_txn_upsert(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			     const void *val, size_t vlen);
RUMA_API int ruma_txn_update(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			     void (*fn)(void *val, size_t vlen, void *ctx), void *ctx);
RUMA_API int ruma_txn_remove(ruma_txn *x, ruma_btree *t, const void *key, size_t klen);
RUMA_API int ruma_txn_lookup(ruma_txn *x, ruma_btree *t, const void *key, size_t klen,
			     void *buf, size_t cap, size_t *vlen);

/*
 * ruma_txn_lock — lock the row (t, key) as a write would, without changing
 * it, until x ends: RUMA_ECONFLICT when another transaction holds it, or,
 * under RUMA_TXN_SNAPSHOT, when a transaction that committed after x began
 * changed it.  The row need not exist (an insert of it by another
 * transaction then conflicts).  Under snapshot isolation, locking the rows
 * a decision rests on makes writers of them conflict, which rules out
 * write skew on those rows.  -EACCES in a read-only transaction, -EINVAL
 * with x NULL.
 */
RUMA_API int ruma_txn_lock(ruma_txn *x, ruma_btree *t, const void *key, size_t klen);

/*
 * ruma_txn_scan_asc / _desc — ruma_btree_scan_asc / _desc inside x.  In a
 * read-only or snapshot-isolation transaction the scan sees x's snapshot
 * (plus x's own writes).  fn follows the rules of ruma_btree_scan_fn (it
 * may run under a leaf's shared latch: it must not call into the tree).
 * With x NULL or a RUMA_TXN_LOCKING transaction it is the plain B-tree scan
 * (see "Isolation").  Returns what the B-tree scan returns, plus -ENOMEM
 * and RUMA_ESNAPTOOOLD.
 */
RUMA_API int ruma_txn_scan_asc(ruma_txn *x, ruma_btree *t, const void *start, size_t slen,
			       ruma_btree_scan_fn fn, void *ctx);
RUMA_API int ruma_txn_scan_desc(ruma_txn *x, ruma_btree *t, const void *start, size_t slen,
				ruma_btree_scan_fn fn, void *ctx);

/* The version store and the snapshots of the process (ruma_txn_mvcc_stat). */
typedef struct ruma_txn_mvcc_stats {
	uint64_t timestamp;       /* the last commit timestamp given */
	uint64_t snapshots;       /* read-only transactions open */
	uint64_t oldest_snapshot; /* the oldest one's start timestamp (0: none) */
	uint64_t versions;        /* before-images kept for them */
	uint64_t version_bytes;   /* memory those hold */
	uint64_t version_limit;   /* the bound (ruma_txn_set_version_limit) */
	uint64_t dropped;         /* commits whose versions were dropped at the bound */
	uint64_t too_old_below;   /* snapshots begun before this are too old */
} ruma_txn_mvcc_stats;

/* Default bound of the version store's memory. */
#define RUMA_TXN_VERSION_LIMIT (256ull << 20)

/* ruma_txn_mvcc_stat — the figures above (out must not be NULL). */
RUMA_API void ruma_txn_mvcc_stat(ruma_txn_mvcc_stats *out);

/* ruma_txn_set_version_limit — bound the version store of the process to
 * bytes (0: RUMA_TXN_VERSION_LIMIT); applies at once. */
RUMA_API void ruma_txn_set_version_limit(uint64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
