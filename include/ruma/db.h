/*
 * db.h — ruma as an embedded key/value store: one header to open a store,
 * read, write, scan and commit (a user's guide: docs/db.md).
 *
 * A thin layer over the buffer manager (bm.h), the B-tree (btree.h), the
 * write-ahead log and transactions (txn.h): a store is one file `path` plus
 * its log `<path>.wal`; a table is one B-tree of the store; every read and
 * write goes through a transaction.
 *
 * Threads: a ruma_db may be used by any number of threads at once; a
 * transaction (and its cursors) by one thread at a time.
 *
 * Isolation, exactly (what each transaction kind sees):
 *   - a RUMA_DB_RDONLY transaction reads one snapshot: the committed state
 *     as of ruma_db_begin, for ruma_db_get and cursors alike, in both
 *     directions.  It takes no row locks, never gets RUMA_ECONFLICT, never
 *     waits, and never makes a writer wait (txn.h, docs/isolation.md).  A
 *     snapshot kept open while writers commit holds their old versions in
 *     memory; beyond the version store's bound (ruma_txn_set_version_limit)
 *     the oldest snapshots get RUMA_ESNAPTOOOLD: end them and retry;
 *   - a read-write transaction (the default, RUMA_DB_SNAPSHOT) runs under
 *     snapshot isolation: it reads its snapshot plus its own writes, for
 *     ruma_db_get and cursors alike, without locks, so it never reads a row
 *     another transaction has not committed.  A write to a row that another
 *     transaction holds, or changed and committed after this one began,
 *     gives RUMA_ECONFLICT (first writer wins: abort and retry).  Snapshot
 *     isolation allows write skew (two transactions that each read what
 *     the other writes may both commit; ruma_db_lock prevents it on the
 *     rows locked); docs/isolation.md has the table.  Kept open past the
 *     version store's bound it gets RUMA_ESNAPTOOOLD, as a read-only one;
 *   - a RUMA_DB_LOCKING transaction runs under strict two-phase locking: a
 *     point read (ruma_db_get) or write (put, del) locks its row
 *     exclusively until commit or abort (txn.h, no waiting).  A row locked
 *     by another read-write transaction gives RUMA_ECONFLICT at once: abort
 *     and retry.  Its point operations are serializable (no write skew),
 *     and two such transactions that only read one row also conflict.  Its
 *     cursors take no row locks: a cursor sees the rows present when it
 *     steps, including uncommitted rows of other transactions, and
 *     phantoms; it sees its own transaction's writes.
 *
 * Durability: with the defaults every commit is durable when
 * ruma_db_commit returns (group commit: concurrent commits share one
 * fdatasync); RUMA_DB_ASYNC commits return at once and a crash may lose the
 * last few milliseconds of them, each whole.  A store killed at any moment
 * reopens with every committed transaction (recovery from the log).
 *
 * Checkpoints run on their own: a background thread checkpoints the store
 * when the log has grown by RUMA_DB_CHECKPOINT_BYTES since the last one, or
 * RUMA_DB_CHECKPOINT_MS after it when anything was logged since (both
 * settable in ruma_db_options; the thread looks every 100 ms).  A
 * checkpoint lets the log restart after the oldest unfinished transaction,
 * so under a steady load of short transactions the log stays near
 * RUMA_DB_CHECKPOINT_BYTES plus what is logged while one checkpoint runs
 * (a transaction kept open holds the log back).  A clean ruma_db_close
 * leaves an empty log.
 *
 * Every int function returns 0 or a negative code (ruma_strerror): -EINVAL for
 * NULL or malformed arguments and misuse (a transaction or cursor used
 * after it ended), -EACCES for a write in a read-only transaction or store,
 * RUMA_ENOTFOUND, RUMA_EEXISTS, RUMA_ETOOBIG, RUMA_ECONFLICT, and the
 * errors of the layers below.  What the caller should know is also given
 * as one line through the message callback (ruma_db_options.message).
 */
#ifndef RUMA_DB_H
#define RUMA_DB_H

#include <ruma/btree.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ruma_db ruma_db;
typedef struct ruma_db_txn ruma_db_txn;
typedef struct ruma_db_table ruma_db_table;
typedef struct ruma_db_cursor ruma_db_cursor;

/* A byte string: a key or a value (the order of LMDB's MDB_val). */
typedef struct ruma_val {
	size_t len;
	void *data;
} ruma_val;

/* Limits: a key has 1..RUMA_DB_MAX_KEY bytes, a value at most
 * RUMA_DB_MAX_VALUE (16 GiB; larger → RUMA_ETOOBIG).  A value of at most
 * ruma_db_options.blob_threshold bytes (default RUMA_DB_BLOB_THRESHOLD) is
 * kept inline in the B-tree's leaf, when key and value together fit
 * RUMA_BTREE_MAX_ENTRY; any other value is a BLOB: its bytes lie in runs of
 * contiguous pages of the store (extents) and the leaf holds a small BLOB
 * state naming them (docs/blob.md).  RUMA_DB_MAX_INLINE is the largest
 * value that can be inline (and the largest allowed threshold).  Table
 * names: 1..RUMA_DB_MAX_NAME bytes, not starting with "ruma:" (reserved
 * for the store's own tables). */
#define RUMA_DB_MAX_KEY RUMA_BTREE_MAX_KEY
#define RUMA_DB_MAX_VALUE (16ull << 30)
#define RUMA_DB_MAX_INLINE (RUMA_BTREE_MAX_VALUE - 1u)
#define RUMA_DB_BLOB_THRESHOLD RUMA_DB_MAX_INLINE
#define RUMA_DB_BLOB_THRESHOLD_MIN 64u
#define RUMA_DB_MAX_NAME RUMA_BTREE_MAX_NAME

/* Virtual reservation of a store created with the defaults: 256 GiB, the
 * most the store can ever hold (RUMA_EVIRTFULL beyond; set
 * ruma_db_options.advanced->virt_bytes at creation for more).  Only pages
 * in use take memory; the reservation costs address space, a latch word
 * per 4 KiB page (touched only where pages are used) and the store's
 * free-space bitmap, which the buffer manager reserves in the file for the
 * whole reservation at creation (1 bit per page: 8 MiB of disk for 256
 * GiB).  So it is sized far above what one small program stores, at a
 * fixed cost of a few MiB per store. */
#define RUMA_DB_DEFAULT_VIRT (256ull << 30)

/* Automatic checkpoint thresholds (see the header comment). */
#define RUMA_DB_CHECKPOINT_BYTES (64ull << 20)
#define RUMA_DB_CHECKPOINT_MS 30000u

/* ruma_db_options.flags */
#define RUMA_DB_READONLY 1u /* open for reading: every write gives -EACCES */
#define RUMA_DB_NOCREATE 2u /* a missing store is -ENOENT instead of created */
#define RUMA_DB_NOLOG 4u    /* no log: not durable; a store not closed cleanly
			       is refused (RUMA_EUNCLEAN) */

typedef struct ruma_db_options {
	unsigned flags;       /* RUMA_DB_READONLY | RUMA_DB_NOCREATE | RUMA_DB_NOLOG */
	uint64_t pool_bytes;  /* buffer pool (0: a quarter of the memory the
				 machine and the process's cgroup leave,
				 at least 16 MiB, at most 64 GiB) */
	/* One line per call (no newline), as ruma_bm_config.message; NULL:
	 * stderr with a "ruma: " prefix. */
	void (*message)(void *ctx, const char *line);
	void *message_ctx;
	/* Automatic checkpoint thresholds (0: RUMA_DB_CHECKPOINT_BYTES and
	 * RUMA_DB_CHECKPOINT_MS). */
	uint64_t checkpoint_bytes;
	unsigned checkpoint_ms;
	/* The buffer manager's research knobs (bm.h), NULL: their defaults.
	 * path, phys_bytes, durability, message and fresh are set by
	 * ruma_db_open from the fields above; virt_bytes 0 means
	 * RUMA_DB_DEFAULT_VIRT. */
	const ruma_bm_config *advanced;
	/* Values longer than this are stored as BLOBs (see Limits): 0 means
	 * RUMA_DB_BLOB_THRESHOLD; else RUMA_DB_BLOB_THRESHOLD_MIN ..
	 * RUMA_DB_MAX_INLINE (-EINVAL outside).  A setting of the open, not
	 * of the store: values already stored stay as they are. */
	uint32_t blob_threshold;
} ruma_db_options;

/* ruma_db_options_default — flags 0, pool 0 (sized at open), no callback,
 * default checkpoint thresholds, no advanced settings. */
RUMA_API void ruma_db_options_default(ruma_db_options *o);

/*
 * ruma_db_open — open the store at path (created if missing unless
 * RUMA_DB_NOCREATE), recovering it from its log if it was not closed
 * cleanly.  opt NULL: the defaults.  Errors: -EINVAL, -ENOENT (missing with
 * NOCREATE), RUMA_ELOCKED (in use), RUMA_ENOTSTORE, RUMA_ECORRUPT,
 * RUMA_EUNCLEAN (a NOLOG store not closed cleanly), -ENOMEM, I/O errors.
 * A read-only open of a clean store writes nothing, to the store or its
 * log: the file is opened for reading only (a store whose files the caller
 * may only read opens too), and a reader that ends without closing leaves
 * the store clean.  A read-only open of a store left unclean first recovers
 * it with an open that may write (that writes the store and empties its
 * log; finishes a drop a crash interrupted; in a store that held BLOBs it
 * also walks every table once to free the extents the crash left unnamed).
 * Every open takes the store's lock.
 */
RUMA_API int ruma_db_open(const char *path, const ruma_db_options *opt, ruma_db **out);

/*
 * ruma_db_close — stop the checkpoint thread, write everything, empty the
 * log and mark the store closed cleanly; free db and every table handle.
 * Every transaction must have ended (else -EBUSY and nothing is closed).
 * NULL is accepted (0).  Returns the first error met; the handle is freed
 * whenever the result is not -EBUSY.
 */
RUMA_API int ruma_db_close(ruma_db *db);

/* ruma_db_bm — the buffer manager under db (for bm.h's statistics). */
RUMA_API ruma_bm *ruma_db_bm(ruma_db *db);

/* ---- transactions ---------------------------------------------------------- */

#define RUMA_DB_RDONLY 1u   /* a read-only transaction: put/del give -EACCES */
#define RUMA_DB_ASYNC 2u    /* commit does not wait for the log to be durable */
#define RUMA_DB_SNAPSHOT 4u /* read-write under snapshot isolation: the
			       default, named for clarity (see Isolation) */
#define RUMA_DB_LOCKING 8u  /* read-write under strict two-phase locking on
			       rows instead (see Isolation) */
#define RUMA_DB_NOFILL 16u  /* reads of large values do not fill the
			       buffer pool (see ruma_db_blob_read) */

/*
 * ruma_db_begin — start a transaction (flags RUMA_DB_RDONLY, RUMA_DB_ASYNC,
 * RUMA_DB_NOFILL, and one of RUMA_DB_SNAPSHOT, the default, or
 * RUMA_DB_LOCKING).
 * A store opened RUMA_DB_READONLY gives read-only transactions whatever the
 * flags.  -EINVAL (unknown flags, RUMA_DB_SNAPSHOT with RUMA_DB_LOCKING),
 * -ENOMEM; -EAGAIN when 4096 transactions that read a snapshot (read-only
 * or snapshot isolation) are open in the process at once.
 */
RUMA_API int ruma_db_begin(ruma_db *db, unsigned flags, ruma_db_txn **out);

/*
 * ruma_db_commit / ruma_db_abort — end the transaction: commit makes its
 * writes durable together (txn.h), abort undoes them.  Either way the
 * transaction has ended: its handle stays allocated inside db (it is reused
 * by a later ruma_db_begin), and until then any call with it returns
 * -EINVAL.  Do not use it after it ended.  Cursors of the transaction stay
 * allocated but give -EINVAL until closed.  A commit that fails has ended
 * the transaction too (nothing of it is durable then: txn.h).
 */
RUMA_API int ruma_db_commit(ruma_db_txn *txn);
RUMA_API int ruma_db_abort(ruma_db_txn *txn);

/* ---- tables ------------------------------------------------------------------ */

#define RUMA_DB_CREATE 1u /* ruma_db_table_open: create the table if missing */

/*
 * ruma_db_table_open — the table `name` (RUMA_ENOTFOUND if missing and not
 * RUMA_DB_CREATE).  The handle is valid until ruma_db_close, in any
 * transaction of db; opening a name twice gives the same handle.  Creating
 * a table is immediate and durable: an abort of txn does not remove it.
 * -EACCES to create in a read-only transaction.
 */
RUMA_API int ruma_db_table_open(ruma_db_txn *txn, const char *name, unsigned flags,
				ruma_db_table **out);

/*
 * ruma_db_table_drop — drop the table t in txn: from now on txn no longer
 * sees it (calls with t or a cursor on it give -EINVAL, opening the name
 * RUMA_ENOTFOUND, creating it -EBUSY until the commit), other transactions
 * get RUMA_ECONFLICT for it; the commit removes it for good and frees every
 * page of its tree (ruma_db_commit returns the error of that, if any: the
 * commit itself is durable then, and the next open finishes the drop); an
 * abort brings it back as it was.  It needs txn to be the only open
 * transaction of the store when it is called (-EBUSY otherwise: others
 * could be using the table).  The handle t stays allocated until
 * ruma_db_close.  Crash-safe: the drop is recorded in the store's table
 * registry with the commit, the pages are freed one logged step at a time,
 * and an open of the store finishes a drop a crash interrupted (a read-only
 * open too, by its recovery).  -EACCES in a read-only
 * transaction, RUMA_ECORRUPT for a damaged tree.
 */
RUMA_API int ruma_db_table_drop(ruma_db_txn *txn, ruma_db_table *t);

/* ruma_db_table_name — the table's name (owned by the handle). */
RUMA_API const char *ruma_db_table_name(const ruma_db_table *t);

/*
 * ruma_db_table_list — call fn(name, ctx) for every table of the store, in
 * name order; fn returns false to stop.  Tables created by the B-tree API
 * directly are not listed.
 */
RUMA_API int ruma_db_table_list(ruma_db_txn *txn, bool (*fn)(const char *name, void *ctx),
				void *ctx);

/* ---- point operations ----------------------------------------------------- */

/*
 * ruma_db_get — the value of key in *val.  RUMA_ENOTFOUND if absent
 * (on any error *val holds nothing to use: its len may have changed).
 * RUMA_ESNAPTOOOLD in a snapshot older than a bulk load of t (below).
 * An inline value: val->data points into a buffer owned by the
 * transaction, valid until the next call on this transaction (or one of
 * its cursors) or its end.  A BLOB: val->data points to the whole value,
 * contiguous, valid until the transaction ends (commit or abort releases
 * it; later calls do not move it).  A BLOB of one extent (every BLOB put
 * whole) is not copied: the pointer is into the buffer pool, whose pages
 * stay pinned (shared) until the end of the transaction, read from the
 * store with a few large reads and checked against their CRC-32C first.
 * A BLOB of several extents (grown by appends) is handed back the same way
 * when its extents follow each other in the store, and otherwise copied
 * into memory the transaction owns.  In a RUMA_DB_NOFILL transaction every
 * BLOB is copied instead, into one buffer the transaction reuses: valid
 * until the next call on this transaction or one of its cursors, as an
 * inline value (so a scan holds one value at a time and pins nothing).
 * One to be pinned must fit in half the
 * buffer pool (with the transaction's other pins), else -ENOMEM: read it
 * with ruma_db_blob_read.  RUMA_ECORRUPT when its bytes on disk do not
 * match their checksum.
 */
RUMA_API int ruma_db_get(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, ruma_val *val);

#define RUMA_DB_NOOVERWRITE 1u /* put: RUMA_EEXISTS if the key is present */
#define RUMA_DB_APPEND 2u      /* put: the key must be larger than every key of
				  the table (else RUMA_EEXISTS): sorted loads */

/* ruma_db_put — store key → val (replacing an existing value unless
 * RUMA_DB_NOOVERWRITE).  val may be up to RUMA_DB_MAX_VALUE bytes
 * (RUMA_ETOOBIG beyond); a BLOB is written once, out of place, as one
 * extent, with a few large writes by the calling thread around the buffer
 * pool (a later get reads it from the file), and made durable with the
 * commit (never through the log).  A replaced or deleted BLOB's
 * extents are freed once the transaction committed and no snapshot can
 * read them any more; an abort frees the new ones. */
RUMA_API int ruma_db_put(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key,
			 const ruma_val *val, unsigned flags);

/* ruma_db_del — remove key.  RUMA_ENOTFOUND if absent. */
RUMA_API int ruma_db_del(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key);

/* ruma_db_lock — lock key's row as a write would, without changing it,
 * until the transaction ends (SELECT ... FOR UPDATE): RUMA_ECONFLICT when
 * another transaction holds it or, under snapshot isolation, changed it and
 * committed after this one began.  The key need not be present.  Lock the
 * rows a decision rests on to keep write skew off them; -EACCES in a
 * read-only transaction. */
RUMA_API int ruma_db_lock(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key);

/* ---- large values, streamed --------------------------------------------------
 *
 * A handle reads or writes one value piece by piece, for values too big to
 * hold in memory at once.  It belongs to its transaction and to the thread
 * using that transaction.  Commit or abort with handles still open closes
 * them first: ruma_db_commit stores what they appended (as
 * ruma_db_blob_close would; a failure there aborts the transaction and is
 * returned), ruma_db_abort discards it.  Either way the handles are freed.
 *
 *   ruma_db_blob *b;
 *   ruma_db_blob_create(txn, t, &key, total, &b);
 *   while ((n = read(fd, buf, sizeof buf)) > 0)
 *           ruma_db_blob_append(b, buf, n);
 *   ruma_db_blob_close(b);
 *   ruma_db_commit(txn);
 */
typedef struct ruma_db_blob ruma_db_blob;

/*
 * ruma_db_blob_create — a handle that writes a new value of key (replacing
 * the present one, if any, when it is closed).  size_hint: the value's
 * final size when known (it then gets exactly one extent and is read back
 * zero-copy), 0 when not (extents then grow in tiers).  -EACCES in a
 * read-only transaction, RUMA_ETOOBIG for a hint beyond RUMA_DB_MAX_VALUE,
 * -ENOMEM, -EINVAL, RUMA_ECONFLICT (the row is locked by another
 * transaction).
 */
RUMA_API int ruma_db_blob_create(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key,
				 uint64_t size_hint, ruma_db_blob **out);

/*
 * ruma_db_blob_open — a handle on the present value of key, of any size
 * (an inline value is read as a BLOB too): ruma_db_blob_read reads it; in a
 * read-write transaction ruma_db_blob_append adds to it (the bytes already
 * there are not rewritten).  RUMA_ENOTFOUND, RUMA_ECONFLICT, -ENOMEM.
 */
RUMA_API int ruma_db_blob_open(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key,
			       ruma_db_blob **out);

/*
 * ruma_db_blob_append — add len bytes of data at the end of the value.
 * The bytes go out to the store with large writes as whole pages fill and
 * at close.  -EACCES in a read-only transaction, RUMA_ETOOBIG when the
 * value would exceed RUMA_DB_MAX_VALUE, RUMA_EVIRTFULL when the store is
 * full, I/O errors (the handle is then unusable: -EIO for every later call
 * but close, which discards what was appended).
 */
RUMA_API int ruma_db_blob_append(ruma_db_blob *b, const void *data, size_t len);

/*
 * ruma_db_blob_read — copy up to len bytes of the value from offset off
 * into buf; *got gets how many (0 at or past the end).  Pages missing from
 * the buffer pool are read with large reads and checked against their
 * extent's CRC-32C (RUMA_ECORRUPT when they do not match); the pages are
 * not kept pinned.  Bytes appended through this handle are read too.
 * In a transaction begun with RUMA_DB_NOFILL, an extent with a page missing
 * from the pool is read around it, as a file read with O_DIRECT: the whole
 * extent from the file (its CRC covers all of it) straight into buf where
 * buf is 4096-byte aligned, else through a buffer the thread keeps; the
 * pool is left as it was, so a value read once pushes nothing out of it,
 * and a value read again is read from the file again.  An extent larger
 * than half the pool is always read so, and so is a BLOB that ruma_db_get
 * or a cursor copies in such a transaction.
 */
RUMA_API int ruma_db_blob_read(ruma_db_blob *b, uint64_t off, void *buf, size_t len,
			       size_t *got);

/* ruma_db_blob_size — the value's size now (appends included). */
RUMA_API uint64_t ruma_db_blob_size(const ruma_db_blob *b);

/*
 * ruma_db_buffer_alloc — memory to read large values into and write them
 * from: len bytes and more (rounded up to 2 MiB), 2 MiB aligned, with
 * transparent huge pages asked of the kernel.  Any memory works with every
 * call; with this one a direct read or write of a BLOB (ruma_db_put of an
 * aligned value, ruma_db_blob_read around the pool) hands the device one
 * segment per 2 MiB where memory of 4 KiB pages is one segment per page
 * (docs/blob.md, "Memory for large values").  Where the kernel gives no huge pages it is
 * ordinary aligned memory.  -EINVAL for len 0, -ENOMEM.  Free it with
 * ruma_db_buffer_free.
 */
RUMA_API int ruma_db_buffer_alloc(size_t len, void **out);

/* ruma_db_buffer_free — release memory of ruma_db_buffer_alloc (NULL: nothing). */
RUMA_API void ruma_db_buffer_free(void *buf);

/*
 * ruma_db_blob_close — finish the handle and free it: a handle that
 * appended writes its last pages and stores the value's new state in the
 * transaction (so a later ruma_db_get in it sees the value; the commit
 * makes it durable).  Returns the error of that (the transaction should
 * then be aborted).  NULL is accepted (0).
 */
RUMA_API int ruma_db_blob_close(ruma_db_blob *b);

/* ---- loading sorted entries ----------------------------------------------------------
 *
 * A bulk load fills an empty table from entries in ascending key order
 * (a dump, a sorted export, an index built elsewhere) several times faster
 * than puts: the table's B-tree is built bottom-up, its pages written once,
 * straight to the store file, never through the buffer pool or the log
 * (docs/db.md, "Loading sorted entries").  Example:
 *
 *     ruma_db_loader *ld;
 *     int rc = ruma_db_load_begin(db, "users", &ld);
 *     if (rc == 0) {
 *             while (rc == 0 && next_sorted(&k, &v))
 *                     rc = ruma_db_load_put(ld, &k, &v);
 *             if (rc == 0)
 *                     rc = ruma_db_load_end(ld, NULL);  // all of it, durably
 *             else
 *                     ruma_db_load_abort(ld);           // none of it
 *     }
 *
 * All or nothing: nothing is visible until ruma_db_load_end, which makes
 * the whole table visible at once, durable when it returns (with a log);
 * a crash before that leaves the table empty (recovery frees the pages
 * written).  Snapshots that began before the load ended get
 * RUMA_ESNAPTOOOLD for every read of the table (its entries have no older
 * versions); transactions begun afterwards see it like any other table.
 * The table must stay empty while it loads: a write by a transaction
 * makes ruma_db_load_end fail with -ENOTEMPTY (and the load is discarded).
 * A loader is used by one thread at a time; a store with one open cannot
 * be closed (-EBUSY), nor its tables dropped.  A store that was loaded
 * into counts as one that held large values (its recovery walks the
 * tables once to free what a crash left unnamed).
 */
typedef struct ruma_db_loader ruma_db_loader;

/* ruma_db_load_begin — a load into the table `name`, created if missing,
 * which must be empty (-ENOTEMPTY).  -EINVAL, -EACCES (read-only store),
 * RUMA_ECONFLICT (the table is being dropped), -ENOMEM, table-open errors. */
RUMA_API int ruma_db_load_begin(ruma_db *db, const char *name, ruma_db_loader **out);

/* ruma_db_load_put — the next entry: key above every key put so far
 * (RUMA_EEXISTS otherwise: the entry is refused, the load goes on), values
 * of any size as ruma_db_put (a large one is written as a BLOB at once);
 * -EINVAL and RUMA_ETOOBIG refuse the entry alone, as RUMA_EEXISTS.  Errors
 * from the store (RUMA_EVIRTFULL, -ENOMEM, I/O) stick: every later call
 * returns them, and ruma_db_load_end returns the error and discards the
 * load. */
RUMA_API int ruma_db_load_put(ruma_db_loader *ld, const ruma_val *key, const ruma_val *val);

/* ruma_db_load_end — write the last pages and make the table hold the
 * entries put (durable on return with a log); *entries (may be NULL) gets
 * their number.  Frees ld whatever the result; on an error nothing of the
 * load is in the table.  -ENOTEMPTY (the table was written meanwhile), the
 * load's sticky error, the log's error. */
RUMA_API int ruma_db_load_end(ruma_db_loader *ld, uint64_t *entries);

/* ruma_db_load_abort — discard the load (its pages are freed); frees ld.
 * NULL is accepted. */
RUMA_API void ruma_db_load_abort(ruma_db_loader *ld);

/* ---- cursors --------------------------------------------------------------------- */

/*
 * A cursor walks one table in key order inside one transaction.  It holds
 * no latch between calls: it keeps a copy of its current entry and a few
 * entries ahead, and finds its place again from the current key, so it
 * sees the transaction's own writes made between its steps.  Every
 * positioning call returns 0 (positioned), RUMA_ENOTFOUND (past the end:
 * the cursor is unpositioned) or an error.
 *
 * Bounded range [lo, hi): ruma_db_cursor_seek(c, lo); then, while the call
 * returned 0 and memcmp-order(key, hi) < 0, use the entry and call
 * ruma_db_cursor_next; or set an upper bound with
 * ruma_db_cursor_set_upper, after which entries >= hi are past the end.
 */
RUMA_API int ruma_db_cursor_open(ruma_db_txn *txn, ruma_db_table *t, ruma_db_cursor **out);
/* ruma_db_cursor_close — free the cursor (also after its transaction ended).
 * NULL is accepted. */
RUMA_API void ruma_db_cursor_close(ruma_db_cursor *c);

/* ruma_db_cursor_set_upper — hi (copied; NULL: none): next/seek/first stop
 * before the first key >= hi, last/prev start below it. */
RUMA_API int ruma_db_cursor_set_upper(ruma_db_cursor *c, const ruma_val *hi);

/* ruma_db_cursor_first / _last — to the first / last key. */
RUMA_API int ruma_db_cursor_first(ruma_db_cursor *c);
RUMA_API int ruma_db_cursor_last(ruma_db_cursor *c);
/* ruma_db_cursor_seek — to the first key >= key. */
RUMA_API int ruma_db_cursor_seek(ruma_db_cursor *c, const ruma_val *key);
/* ruma_db_cursor_next / _prev — to the next larger / smaller key than the
 * current one (-EINVAL when unpositioned). */
RUMA_API int ruma_db_cursor_next(ruma_db_cursor *c);
RUMA_API int ruma_db_cursor_prev(ruma_db_cursor *c);

/* ruma_db_cursor_get — the current entry (key and/or val may be NULL);
 * both point into the cursor, valid until its next call; a BLOB value is
 * handed back as ruma_db_get does (valid until the transaction ends, or
 * under RUMA_DB_NOFILL until the next call; same errors).  -EINVAL when
 * unpositioned. */
RUMA_API int ruma_db_cursor_get(ruma_db_cursor *c, ruma_val *key, ruma_val *val);

/* ruma_db_cursor_del — delete the current entry.  The cursor stays at its
 * key: next/prev go on from there, and ruma_db_cursor_get (or a second
 * del) gives RUMA_ENOTFOUND until then. */
RUMA_API int ruma_db_cursor_del(ruma_db_cursor *c);

/* ---- hot backup ------------------------------------------------------------------ */

/*
 * ruma_db_copy — a consistent copy of the open store db at dest (and its
 * log dest.wal), made while other threads go on reading, writing and
 * committing (a hot backup, as LMDB's mdb_copy or a RocksDB checkpoint).
 * flags: 0 (none defined yet).
 *
 * Guaranteed: when it returns 0, dest is a store closed cleanly (empty log,
 * no recovery at its next open), durable (files and directory synced), that
 * passes ruma_db_check and holds exactly
 * the transactions committed up to one moment during the call: every
 * transaction whose commit returned before the call began (RUMA_DB_ASYNC
 * ones too), then a prefix of those committed during the call, each whole;
 * nothing of a transaction not committed by then.  Tables dropped during
 * the call are whole or gone.
 *
 * How: a checkpoint, then the store file copied page by page while writers
 * go on (a page may be copied torn or newer than the checkpoint), then the
 * log from the checkpoint's undo start to its durable end (forced past the
 * last page copied: the log is durable up to every page's LSN before the
 * page is written), then dest opened once, which redoes the copied log over
 * the copied pages (full page images repair torn ones) and undoes the
 * transactions not committed in it, and closed.  Writers are not stopped;
 * the automatic checkpoint waits for the copy (the log grows meanwhile),
 * and the caller must not call ruma_bm_flush on ruma_db_bm(db) during it.
 * The opening of dest takes memory for its own buffer pool (64 MiB at
 * most) and reads the log written during the copy; its messages (its
 * recovery's) reach the message callback only when it fails.
 *
 * Large values: while the copy runs, the commits of transactions that
 * wrote BLOBs wait for it (their extents must not change under the copy),
 * and replaced BLOBs' extents are freed after it.
 *
 * dest must not exist, nor dest.wal (-EEXIST); on an error nothing is left
 * at either path.  Errors: -EINVAL (NULL, empty dest, flags), -ENOTSUP (a
 * store without a log, RUMA_DB_NOLOG, or opened RUMA_DB_READONLY: copy its
 * file while no one has it open), -EEXIST, the checkpoint's, I/O errors, and
 * those of opening the copy.  Threads: any thread, with db open until it
 * returns; concurrent copies of one store run one after the other.
 */
RUMA_API int ruma_db_copy(ruma_db *db, const char *dest, unsigned flags);

/* ---- statistics and checking ----------------------------------------------- */

typedef struct ruma_db_table_stats {
	uint64_t entries;
	uint64_t pages;   /* inner + leaf nodes */
	unsigned depth;   /* levels, 1 = the root is a leaf */
	uint64_t bytes;   /* bytes occupied in its nodes */
} ruma_db_table_stats;

/* ruma_db_table_stat — walk the table (shared latches). */
RUMA_API int ruma_db_table_stat(ruma_db_txn *txn, ruma_db_table *t, ruma_db_table_stats *out);

typedef struct ruma_db_stats {
	uint64_t tables;
	uint64_t pages;          /* page ids in use, metadata included */
	uint64_t pages_free;     /* freed ids available for reuse */
	uint64_t pages_resident;
	uint64_t pool_bytes;     /* the buffer pool's size */
	uint64_t log_bytes;      /* logged since the last automatic checkpoint
				    (or the open) */
	uint64_t checkpoints;    /* automatic checkpoints since open */
} ruma_db_stats;

/* ruma_db_stat — figures of the whole store. */
RUMA_API int ruma_db_stat(ruma_db *db, ruma_db_stats *out);

/*
 * ruma_db_check — run the B-tree checker on every table (and the store's
 * own table list), then, when they pass, the store check
 * (ruma_btree_check_store: every page reached once, none free, none
 * leaked), which adds the line "db check: store: <n> pages reached, <n>
 * free, <n> leaked"; problems through the message callback.  0 when
 * healthy, RUMA_ECORRUPT, or an error.  Run it while no writer is active.
 */
RUMA_API int ruma_db_check(ruma_db *db);

#ifdef __cplusplus
}
#endif
#endif
