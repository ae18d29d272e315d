/*
 * db_int.h — the structures behind db.h, shared by scan.c (copying entries
 * out of a tree, the message helper), blob.c (large values), db.c (store,
 * transactions, tables, checkpoints) and cursor.c (cursors over one
 * B-tree), which call only downwards in that order.
 */
#ifndef RUMA_DB_INT_H
#define RUMA_DB_INT_H

#include <ruma/db.h>
#include <ruma/txn.h>

#include "btree/spot.h"
#include "core/counter.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

/* The store's own table of table names (keys: names; values: empty). */
#define DB_REGISTRY "ruma:tables"
#define DB_RESERVED_PREFIX "ruma:"
#define DB_RESERVED_PREFIX_END "ruma;" /* the first key after every reserved one */
/* A registry key "ruma:drop:<name>": the table name is being dropped
 * (ruma_db_table_drop; an open finishes what a crash interrupted). */
#define DB_DROP_PREFIX "ruma:drop:"
#define DB_REGISTRY_KEY_MAX (sizeof(DB_DROP_PREFIX) - 1 + RUMA_DB_MAX_NAME)

struct ruma_db_table {
	ruma_db *db;
	ruma_btree *bt;            /* NULL once dropped */
	/* the transaction that drops it, until it ends; set and cleared under
	 * db->mu, bt cleared before it (release), read without the lock
	 * (db_table_readable) */
	struct ruma_db_txn *dropping;
	struct ruma_db_table *drop_next; /* the dropping transaction's next table */
	struct ruma_db_table *next;
	/* the commit timestamp of a bulk load into it (load.c; UINT64_MAX
	 * while one installs its tree, 0: none): older snapshots may not read
	 * it, its entries having no versions */
	_Atomic uint64_t loaded_ts;
	char name[];
};

/* An extent: pages [first, first + pages). */
typedef struct db_ext_ref {
	uint64_t first, pages;
} db_ext_ref;

/* A growable array of extents. */
typedef struct db_ext_list {
	db_ext_ref *e;
	size_t n, cap;
} db_ext_list;

/* db_ext_add — append [first, first + pages) to l (blob.c).  -ENOMEM. */
int db_ext_add(db_ext_list *l, uint64_t first, uint64_t pages);

/* What a transaction holds of BLOBs (blob.c): the extents it allocated
 * (freed if it aborts), the extents of the values it replaced or removed
 * (freed after it commits, once no transaction that may read them is
 * left), the extents it pinned for ruma_db_get (unpinned when it ends),
 * the copies of multi-extent values it handed out, its open handles. */
typedef struct db_txn_blobs {
	db_ext_list alloc, old, pins;
	void **copies;
	size_t ncopies, capcopies;
	void *scratch;             /* RUMA_DB_NOFILL's value copy (page aligned) */
	size_t scratch_cap;
	struct ruma_db_blob *handles;
	bool wrote;                /* extents written: sync them before the commit */
} db_txn_blobs;

struct ruma_db_txn {
	ruma_db *db;
	ruma_txn *x;
	unsigned flags;            /* ruma_db_begin's flags */
	bool live;                 /* begun and not yet ended */
	uint64_t gen;              /* bumped when it ends: cursors check it */
	uint64_t writes;           /* puts and dels so far: cursors refill on change */
	uint64_t start_ts;         /* its snapshot's (UINT64_MAX: none; bt_txn_start_ts) */
	struct ruma_db_table *drops; /* tables it drops at commit */
	struct ruma_db_txn *next_free;
	struct ruma_db_txn *next_all; /* every object of the store, freed at close */
	_Atomic uint64_t seq;      /* the era it began in while live (0: ended): blob.c's frees */
	db_txn_blobs blobs;
	unsigned char buf[RUMA_BTREE_MAX_VALUE]; /* ruma_db_get's value */
};

/* Whether the transaction's BLOB reads fill the pool (not RUMA_DB_NOFILL). */
static inline bool db_txn_fills(const struct ruma_db_txn *txn)
{
	return !(txn->flags & RUMA_DB_NOFILL);
}

struct ruma_db {
	ruma_bm *bm;
	char *path;                /* the store file (copy.c) */
	uint64_t virt_bytes;       /* its reservation as opened (copy.c) */
	unsigned flags;            /* ruma_db_options.flags */
	uint64_t pool_bytes;
	uint64_t instance;         /* unique per open: a thread's spare transaction names it */
	pthread_mutex_t mu;        /* tables, txn pool */
	ruma_db_table *tables;
	ruma_db_table *dropped;    /* handles of dropped tables, freed at close */
	ruma_btree *registry;      /* NULL: none yet (a read-only open of a new store) */
	ruma_db_txn *free_txns;
	ruma_db_txn *all_txns;
	ruma_counter active;       /* transactions begun and not ended */
	/* automatic checkpoints */
	pthread_t ckpt_thread;
	bool ckpt_running;
	bool ckpt_stop;
	pthread_mutex_t ckpt_mu;
	pthread_cond_t ckpt_cond;
	uint64_t ckpt_bytes;       /* thresholds */
	uint64_t ckpt_ns;
	uint64_t ckpt_lsn;         /* log end at the last checkpoint */
	uint64_t checkpoints;
	/* held by each checkpoint of the thread and by ruma_db_copy for its
	 * whole copy, which needs page 0 to name its own checkpoint */
	pthread_mutex_t ckpt_run;
	bool full_said;            /* the store-full message was given */
	/* BLOBs (blob.c) */
	uint32_t blob_threshold;   /* values longer than this are BLOBs */
	_Atomic uint64_t txn_seq;  /* the era: raised by each commit that frees old extents */
	pthread_mutex_t blob_mu;   /* the deferred frees */
	struct db_deferred *deferred; /* old extents waiting for readers to end, oldest first */
	struct db_deferred **deferred_tail;
	_Atomic size_t ndeferred;
	pthread_cond_t blob_cv;    /* copying / blob_commits changed */
	bool copying;              /* ruma_db_copy runs: no BLOB commit, no free */
	unsigned blob_commits;     /* commits of transactions that wrote extents */
};

/* One entry copied out of the tree. */
typedef struct db_entry {
	uint16_t klen, vlen;
	unsigned char key[RUMA_DB_MAX_KEY];
	unsigned char val[RUMA_BTREE_MAX_VALUE];
} db_entry;

/* ---- scan.c ---- */

enum { DIR_ASC = 1, DIR_DESC = 2 };

/* One fill: collect up to cap entries beyond `skip` (when given) and below
 * the upper bound (when given). */
typedef struct fill_ctx {
	ruma_txn *x;      /* the scan's transaction (NULL: none; txn.h) */
	db_entry *out;
	unsigned n, cap;
	const void *skip;
	size_t skiplen;
	bool has_skip;
	const void *hi;
	size_t hilen;
	bool has_hi;
	int dir;
	bt_spot *spot;    /* where the last fill stopped, then this one (NULL: none; spot.h) */
} fill_ctx;

/* db_fill — fill f->out[0, f->cap) scanning bt in f->dir from start (slen
 * 0: from the tree's end) inside f->x (ruma_txn_scan_*: a read-only
 * transaction's snapshot); f->n gets the count.  0, RUMA_ENOTFOUND (none),
 * or the scan's error. */
int db_fill(ruma_btree *bt, fill_ctx *f, const void *start, size_t slen);

/* db_registry_next — the first registry key >= from (> from when skip; from
 * NULL: the first) into key (cap bytes, NUL-terminated).  0, RUMA_ENOTFOUND,
 * RUMA_ECORRUPT (a key too long or with a NUL byte), errors. */
int db_registry_next(ruma_db *db, const char *from, bool skip, char *key, size_t cap);

/* db_next_name — the first registered table name > after (NULL: the first
 * one) into name (RUMA_DB_MAX_NAME + 1 bytes), the store's own keys
 * (DB_RESERVED_PREFIX) passed over.  0, RUMA_ENOTFOUND, errors. */
int db_next_name(ruma_db *db, const char *after, char *name);

/* db_key_cmp — memcmp order with shorter prefixes first (btree.h). */
int db_key_cmp(const void *a, size_t alen, const void *b, size_t blen);

/* db_last_key — the largest key of bt into *e (RUMA_ENOTFOUND: empty). */
int db_last_key(ruma_btree *bt, db_entry *e);

/* db_report — one line through the store's message callback. */
void db_report(ruma_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* db_txn_unusable — -EINVAL for a NULL or ended txn (the latter reported). */
int db_txn_unusable(const ruma_db_txn *txn);

/* db_txn_usable — 0 if txn is a live transaction, else -EINVAL (reported). */
static inline int db_txn_usable(const ruma_db_txn *txn)
{
	return txn && txn->live ? 0 : db_txn_unusable(txn);
}

/* ---- blob.c ---- */

/* db_put_value — ruma_db_put's write of key -> val in t (checked, writable
 * txn): inline, or as a BLOB written to one extent; flags as ruma_db_put. */
int db_put_value(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, const ruma_val *val,
		 unsigned flags);

/* db_value_out — the stored bytes (len) of a row as the user's value into
 * *out: inline bytes in place (unescaped), a BLOB pinned or copied (valid
 * until txn ends).  RUMA_ECORRUPT for a malformed state, pin errors. */
int db_value_out(ruma_db_txn *txn, const void *stored, size_t len, ruma_val *out);

/* db_stored_form — the bytes key -> val is stored as in a leaf, into out
 * (RUMA_BTREE_MAX_VALUE bytes), *len long: the value inline (escaped when
 * its first byte is a mark), or the state of a BLOB written now to a new
 * extent, *ext (pages 0: none), which the caller frees if no leaf comes to
 * name it (also when this fails after allocating it).  A bulk load's
 * values (load.c).  RUMA_ETOOBIG, the extent's allocation and write errors. */
int db_stored_form(ruma_db *db, const ruma_val *key, const ruma_val *val, uint8_t *out,
		   size_t *len, db_ext_ref *ext);

/* The first byte from which a stored value is escaped (0xFE) or a BLOB
 * state (0xFF): below it, the stored bytes are the value (blob.c). */
#define DB_VALUE_MARKS 0xFEu

/* A value stored in the leaf as it is: below the BLOB threshold, fitting an
 * entry with its key, and not starting with a byte that needs escaping.
 * In a store that never held an extent such a put replaces no BLOB, so
 * ruma_db_put hands it to the transaction directly (else db_put_value). */
static inline bool db_stored_as_is(const ruma_db *db, const ruma_val *key, const ruma_val *val)
{
	return val->len <= db->blob_threshold && key->len + val->len <= RUMA_BTREE_MAX_ENTRY &&
	       (val->len == 0 || *(const unsigned char *)val->data < DB_VALUE_MARKS);
}

/* db_value_out with the common case inline: a plain inline value. */
static inline int db_value_out_fast(ruma_db_txn *txn, const void *stored, size_t len,
				    ruma_val *out)
{
	if (len == 0 || *(const unsigned char *)stored < DB_VALUE_MARKS) {
		*out = (ruma_val){ len, (void *)stored };
		return 0;
	}
	return db_value_out(txn, stored, len, out);
}

/* db_note_replaced — after a change of txn made when bt_txn_changes was
 * since: the extents of the BLOB it replaced or removed (if any) that
 * `now` (the new stored value, NULL: none) no longer names are freed after
 * the commit.  -ENOMEM. */
int db_note_replaced(ruma_db_txn *txn, size_t since, const void *now, size_t nowlen);

/* db_blobs_commit / db_blobs_end — a transaction's BLOBs around its end:
 * _commit before the commit closes open handles and syncs the extents
 * written (an error: abort instead); _end after it (committed or not)
 * frees or defers what it must, unpins, frees copies. */
int db_blobs_commit(ruma_db_txn *txn);
void db_blobs_end(ruma_db_txn *txn, bool committed);

/* db_blobs_copy_begin / _end — around ruma_db_copy's checkpoint and
 * copying: waits for the commits of transactions that wrote extents, and
 * holds new ones and every extent free until _end (so the copied log names
 * no extent written during the copy, and no page a copied state names is
 * reused while it is copied). */
void db_blobs_copy_begin(ruma_db *db);
void db_blobs_copy_end(ruma_db *db);

/* db_blobs_committed — after the commit that db_blobs_commit let through. */
void db_blobs_committed(ruma_db_txn *txn);

/* db_copy_hold / _release — around a record that names pages written
 * around the pool (a BLOB commit, a bulk load's install), until it is
 * durable: a hot backup (ruma_db_copy) never runs meanwhile. */
void db_copy_hold(ruma_db *db);
void db_copy_release(ruma_db *db);

/* db_blobs_reclaim — free the deferred extents no live transaction can
 * read any more (all: at close).  db_blobs_release frees txn's arrays. */
void db_blobs_reclaim(ruma_db *db, bool all);
void db_blobs_release(db_txn_blobs *b);

/* db_blobs_sweep — after recovery: free the extents nothing names
 * (allocated by transactions a crash cut off, or whose free the crash
 * lost), found by the store check.  db_blobs_check runs the store check
 * with the extents counted (ruma_db_check). */
int db_blobs_sweep(ruma_db *db);
int db_blobs_check(ruma_db *db, ruma_message_fn message, void *ctx, ruma_btree_store_check *out);

/* db_table_blobs — queue the extents of every BLOB of t for freeing after
 * txn commits (a table drop). */
int db_table_blobs(ruma_db_txn *txn, ruma_db_table *t);

/* ---- db.c ---- */

/* db_loaded_after — was t bulk-loaded after txn's snapshot began (or is a
 * load installing its tree)?  Then txn may not read t (RUMA_ESNAPTOOOLD):
 * asked before a read and again after it (load.c, "Visibility"). */
static inline bool db_loaded_after(const ruma_db_txn *txn, const ruma_db_table *t)
{
	return atomic_load_explicit(&t->loaded_ts, memory_order_acquire) > txn->start_ts;
}

/* db_table_readable — may txn read t?  0 with its tree in *bt; -EINVAL
 * when t was dropped or txn drops it; RUMA_ECONFLICT while another
 * transaction drops it.  No lock: dropping is read first (acquire), so a
 * cleared one implies a cleared bt.  A read asks db_loaded_after after
 * it, which is enough: a read that met a loaded tree then sees its mark. */
static inline int db_table_readable(const ruma_db_txn *txn, const ruma_db_table *t,
				    ruma_btree **bt)
{
	const ruma_db_txn *d = __atomic_load_n(&t->dropping, __ATOMIC_ACQUIRE);
	if (d)
		return d == txn ? -EINVAL : RUMA_ECONFLICT;
	*bt = __atomic_load_n(&t->bt, __ATOMIC_ACQUIRE);
	return *bt ? 0 : -EINVAL;
}

/* db_table_writable — may txn write t?  db_table_readable's answer, and
 * RUMA_ESNAPTOOOLD when t was bulk-loaded after txn's snapshot began. */
static inline int db_table_writable(const ruma_db_txn *txn, const ruma_db_table *t,
				    ruma_btree **bt)
{
	int rc = db_table_readable(txn, t, bt);
	if (!rc && RUMA_UNLIKELY(db_loaded_after(txn, t)))
		return RUMA_ESNAPTOOOLD;
	return rc;
}

#endif
