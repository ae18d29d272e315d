/*
 * db.c — the store as a user sees it (include/ruma/db.h): open and close
 * with sizes chosen for the user, transactions (a pool of handles so that a
 * handle used after it ended is recognised, not a use after free), tables
 * (B-trees of the store, listed in the store's own table "ruma:tables"),
 * point operations on ruma_val, statistics, checking, and the automatic
 * checkpoint thread.  No engine of its own: everything is a call into
 * btree.h, txn.h and bm.h.
 */
#include "db/db_int.h"
#include "bm/bm_ext.h"
#include "btree/drop.h"
#include "btree/blobref.h"

#include <ruma/core.h>
#include "core/core_ext.h"
#include <ruma/sysinfo.h>
#include <os/os.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DB_POOL_MIN (16ull << 20)
#define DB_POOL_MAX (64ull << 30)
#define DB_CKPT_POLL_MS 100u

/* A message before the store exists: the caller's callback or stderr. */
static void open_report(const ruma_db_options *o, const char *path, const char *what)
{
	char line[512];
	snprintf(line, sizeof(line), "db %s: %s", path ? path : "(null)", what);
	if (o->message)
		o->message(o->message_ctx, line);
	else
		fprintf(stderr, "ruma: %s\n", line);
}

void ruma_db_options_default(ruma_db_options *o)
{
	memset(o, 0, sizeof(*o));
}

/* ---- automatic checkpoints -------------------------------------------------- */

/* Checkpoint when the log grew by the size threshold, or the time threshold
 * passed with something logged since the last checkpoint.  After a failed
 * checkpoint the next try waits for the time threshold (one message per
 * try, not one per poll). */
static void ckpt_maybe(ruma_db *db, uint64_t *last_ns, bool *failed)
{
	uint64_t end = ruma_bm_log_end(db->bm), now = ruma_now_ns();
	uint64_t grown = end - db->ckpt_lsn;
	bool waited = now - *last_ns >= db->ckpt_ns;
	bool due = *failed ? waited : grown >= db->ckpt_bytes || (grown && waited);
	if (!due)
		return;
	if (pthread_mutex_trylock(&db->ckpt_run))
		return; /* ruma_db_copy runs: checkpoint after it */
	*last_ns = now;
	int rc = ruma_bm_flush(db->bm);
	pthread_mutex_unlock(&db->ckpt_run);
	*failed = rc != 0;
	if (rc) {
		db_report(db, "db: automatic checkpoint failed: %s", ruma_strerror(rc));
		return;
	}
	__atomic_store_n(&db->ckpt_lsn, end, __ATOMIC_RELAXED);
	__atomic_add_fetch(&db->checkpoints, 1, __ATOMIC_RELAXED);
}

static void *ckpt_main(void *arg)
{
	ruma_db *db = arg;
	uint64_t last_ns = ruma_now_ns();
	bool failed = false;
	pthread_mutex_lock(&db->ckpt_mu);
	while (!db->ckpt_stop) {
		struct timespec ts;
		ruma_deadline_after_ns(DB_CKPT_POLL_MS * 1000000ull, &ts);
		pthread_cond_timedwait(&db->ckpt_cond, &db->ckpt_mu, &ts);
		if (db->ckpt_stop)
			break;
		pthread_mutex_unlock(&db->ckpt_mu);
		ckpt_maybe(db, &last_ns, &failed);
		pthread_mutex_lock(&db->ckpt_mu);
	}
	pthread_mutex_unlock(&db->ckpt_mu);
	return NULL;
}

static int ckpt_start(ruma_db *db)
{
	int rc = pthread_create(&db->ckpt_thread, NULL, ckpt_main, db);
	if (rc) {
		db_report(db, "db: cannot start the checkpoint thread: %s", strerror(rc));
		return -rc;
	}
	db->ckpt_running = true;
	return 0;
}

static void ckpt_stop(ruma_db *db)
{
	if (!db->ckpt_running)
		return;
	pthread_mutex_lock(&db->ckpt_mu);
	db->ckpt_stop = true;
	pthread_cond_signal(&db->ckpt_cond);
	pthread_mutex_unlock(&db->ckpt_mu);
	pthread_join(db->ckpt_thread, NULL);
	db->ckpt_running = false;
}

/* ---- open and close ------------------------------------------------------------ */

static uint64_t default_pool(void)
{
	ruma_mem_avail m;
	uint64_t pool = 0;
	if (!ruma_sysinfo_mem_available(&m))
		pool = m.bytes / 4;
	pool = RUMA_MAX(pool, DB_POOL_MIN);
	return RUMA_MIN(pool, DB_POOL_MAX);
}

static bool file_exists(const char *path)
{
	int fd;
	if (ruma_os_open(path, O_RDONLY | O_CLOEXEC, 0, &fd))
		return false;
	close(fd);
	return true;
}

static int check_options(const char *path, const ruma_db_options *o)
{
	const unsigned known = RUMA_DB_READONLY | RUMA_DB_NOCREATE | RUMA_DB_NOLOG;
	if (!path || !*path) {
		open_report(o, path, "no path given");
		return -EINVAL;
	}
	if (o->flags & ~known) {
		open_report(o, path, "unknown bits in ruma_db_options.flags");
		return -EINVAL;
	}
	if ((o->flags & (RUMA_DB_READONLY | RUMA_DB_NOCREATE)) && !file_exists(path)) {
		open_report(o, path, "no such store (ruma_db_options.flags forbid creating it)");
		return -ENOENT;
	}
	if (o->blob_threshold &&
	    (o->blob_threshold < RUMA_DB_BLOB_THRESHOLD_MIN || o->blob_threshold > RUMA_DB_MAX_INLINE)) {
		open_report(o, path, "ruma_db_options.blob_threshold outside "
				     "RUMA_DB_BLOB_THRESHOLD_MIN..RUMA_DB_MAX_INLINE");
		return -EINVAL;
	}
	return 0;
}

static void bm_config_for(const char *path, const ruma_db_options *o, ruma_bm_config *c)
{
	if (o->advanced)
		*c = *o->advanced;
	else
		ruma_bm_config_default(c);
	c->path = path;
	if (!o->advanced || !c->virt_bytes)
		c->virt_bytes = RUMA_DB_DEFAULT_VIRT;
	c->phys_bytes = o->pool_bytes ? o->pool_bytes : default_pool();
	c->phys_bytes = RUMA_MIN(c->phys_bytes, c->virt_bytes);
	c->durability = (o->flags & RUMA_DB_NOLOG) ? RUMA_BM_DURABLE_OFF : RUMA_BM_DURABLE_SYNC;
	c->read_only = (o->flags & RUMA_DB_READONLY) != 0;
	c->fresh = false;
	c->message = o->message;
	c->message_ctx = o->message_ctx;
}

static int open_registry(ruma_db *db)
{
	int rc = ruma_btree_open(db->bm, DB_REGISTRY, &db->registry);
	if (rc == RUMA_ENOTFOUND && !(db->flags & RUMA_DB_READONLY))
		rc = ruma_btree_create(db->bm, DB_REGISTRY, &db->registry);
	if (rc == RUMA_ENOTFOUND) {
		db->registry = NULL;
		rc = 0;
	}
	return rc;
}

/* Finish dropping the table name, whose marker DB_DROP_PREFIX name is in
 * the registry: its registry entry, its tree (bt_drop_tree), then the
 * marker.  Each step is idempotent, so a crash anywhere leaves the marker
 * and the next open finishes (drop_resume). */
static int drop_finish(ruma_db *db, const char *name)
{
	char mark[DB_REGISTRY_KEY_MAX + 1];
	int n = snprintf(mark, sizeof(mark), "%s%s", DB_DROP_PREFIX, name);
	int rc = ruma_btree_remove(db->registry, name, strlen(name));
	if (rc == 0 || rc == RUMA_ENOTFOUND)
		rc = bt_drop_tree(db->bm, name);
	if (rc == 0 || rc == RUMA_ENOTFOUND)
		rc = ruma_btree_remove(db->registry, mark, (size_t)n);
	return rc == RUMA_ENOTFOUND ? 0 : rc;
}

/* Drops a crash interrupted: every marker left in the registry (a store
 * opened read-only is refused: its tree is half freed). */
static int drop_resume(ruma_db *db)
{
	char key[DB_REGISTRY_KEY_MAX + 1];
	size_t np = strlen(DB_DROP_PREFIX);
	int rc;
	while (!(rc = db_registry_next(db, DB_DROP_PREFIX, false, key, sizeof(key))) &&
	       !strncmp(key, DB_DROP_PREFIX, np)) {
		if (db->flags & RUMA_DB_READONLY) {
			db_report(db, "db: the drop of table %s was interrupted by a crash and is "
				  "finished by the next open that may write (not RUMA_DB_READONLY)",
				  key + np);
			return RUMA_EUNCLEAN;
		}
		db_report(db, "db: finishing the drop of table %s, which a crash interrupted",
			  key + np);
		if ((rc = drop_finish(db, key + np)))
			return rc;
	}
	return rc == RUMA_ENOTFOUND ? 0 : rc;
}

/* Numbers the opens of stores (ruma_db.instance; 0 is none). */
static _Atomic uint64_t db_instances;

static void db_free(ruma_db *db)
{
	for (ruma_db_table *t = db->tables, *n; t; t = n) {
		n = t->next;
		ruma_btree_release(t->bt);
		free(t);
	}
	for (ruma_db_table *t = db->dropped, *n; t; t = n) {
		n = t->next;
		free(t);
	}
	for (ruma_db_txn *x = db->all_txns, *n; x; x = n) {
		n = x->next_all;
		db_blobs_release(&x->blobs);
		free(x);
	}
	pthread_mutex_destroy(&db->blob_mu);
	pthread_cond_destroy(&db->blob_cv);
	ruma_btree_release(db->registry);
	free(db->path);
	pthread_mutex_destroy(&db->mu);
	pthread_mutex_destroy(&db->ckpt_run);
	pthread_mutex_destroy(&db->ckpt_mu);
	pthread_cond_destroy(&db->ckpt_cond);
	free(db);
}

/* Did the open recover the store from its log (a crash)? */
static bool recovered(ruma_db *db)
{
	ruma_bm_recovery r;
	ruma_bm_get_recovery(db->bm, &r);
	return r.ran;
}

/* The buffer manager for c.  A read-only open of a store a crash left
 * unclean first opens it as a whole with writes allowed, which recovers it
 * (recovery writes the store, empties its log and frees what the crash
 * left unnamed) and closes it cleanly; then opens it read-only as it is. */
static int open_bm(const char *path, const ruma_db_options *opt, ruma_bm_config *c,
		   ruma_bm **out)
{
	int rc = ruma_bm_open(c, out);
	if (rc != RUMA_EUNCLEAN || !c->read_only)
		return rc;
	ruma_db_options w = *opt;
	w.flags &= ~RUMA_DB_READONLY;
	ruma_db *db;
	if ((rc = ruma_db_open(path, &w, &db)) || (rc = ruma_db_close(db)))
		return rc;
	return ruma_bm_open(c, out);
}

int ruma_db_open(const char *path, const ruma_db_options *opt, ruma_db **out)
{
	ruma_db_options defaults;
	if (!opt) {
		ruma_db_options_default(&defaults);
		opt = &defaults;
	}
	if (!out)
		return -EINVAL;
	*out = NULL;
	int rc = check_options(path, opt);
	if (rc)
		return rc;
	ruma_db *db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->instance = atomic_fetch_add(&db_instances, 1) + 1;
	pthread_mutex_init(&db->mu, NULL);
	pthread_mutex_init(&db->ckpt_mu, NULL);
	pthread_mutex_init(&db->ckpt_run, NULL);
	pthread_cond_init(&db->ckpt_cond, NULL);
	pthread_mutex_init(&db->blob_mu, NULL);
	pthread_cond_init(&db->blob_cv, NULL);
	db->deferred_tail = &db->deferred;
	db->blob_threshold = opt->blob_threshold ? opt->blob_threshold : RUMA_DB_BLOB_THRESHOLD;
	db->flags = opt->flags;
	if (!(db->path = strdup(path))) {
		db_free(db);
		return -ENOMEM;
	}
	db->ckpt_bytes = opt->checkpoint_bytes ? opt->checkpoint_bytes : RUMA_DB_CHECKPOINT_BYTES;
	db->ckpt_ns = (opt->checkpoint_ms ? opt->checkpoint_ms : RUMA_DB_CHECKPOINT_MS) * 1000000ull;
	ruma_bm_config c;
	bm_config_for(path, opt, &c);
	db->pool_bytes = c.phys_bytes;
	db->virt_bytes = c.virt_bytes;
	if ((rc = open_bm(path, opt, &c, &db->bm))) {
		db_free(db);
		return rc;
	}
	db->ckpt_lsn = ruma_bm_log_end(db->bm); /* 0 without a log */
	rc = open_registry(db);
	if (!rc && db->registry)
		rc = drop_resume(db);
	if (!rc && db->registry && recovered(db) && ruma_bm_extents_used(db->bm))
		rc = db_blobs_sweep(db); /* a repair, as recovery (read-only opens too) */
	if (!rc && ruma_bm_logging(db->bm) && !(db->flags & RUMA_DB_READONLY))
		rc = ckpt_start(db);
	if (rc) {
		ruma_bm *bm = db->bm;
		ckpt_stop(db);
		db_free(db);
		ruma_bm_close(bm);
		return rc;
	}
	*out = db;
	return 0;
}

int ruma_db_close(ruma_db *db)
{
	if (!db)
		return 0;
	long active = ruma_counter_sum(&db->active);
	if (active) {
		db_report(db, "db: close with %ld transaction(s) not ended", active);
		return -EBUSY;
	}
	ckpt_stop(db);
	db_blobs_reclaim(db, true);
	ruma_bm *bm = db->bm;
	db_free(db);
	return ruma_bm_close(bm);
}

ruma_bm *ruma_db_bm(ruma_db *db)
{
	return db ? db->bm : NULL;
}

/* ---- transactions -------------------------------------------------------------- */

/*
 * Transaction objects: each thread keeps the one it ended last for its next
 * begin on the same store (a transaction per operation then takes no lock
 * here); the rest wait in the store's free list.  Every object is also on
 * the store's all_txns list, which close frees, so a spare of a closed store
 * is never touched again: its instance number no longer matches any open.
 */
static _Thread_local struct {
	uint64_t instance;
	ruma_db_txn *txn;
} spare_txn;

static ruma_db_txn *txn_take(ruma_db *db)
{
	ruma_db_txn *x = spare_txn.txn;
	if (x && spare_txn.instance == db->instance) {
		spare_txn.txn = NULL;
		return x;
	}
	pthread_mutex_lock(&db->mu);
	x = db->free_txns;
	if (x)
		db->free_txns = x->next_free;
	pthread_mutex_unlock(&db->mu);
	if (x)
		return x;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->db = db;
	pthread_mutex_lock(&db->mu);
	x->next_all = db->all_txns;
	db->all_txns = x;
	pthread_mutex_unlock(&db->mu);
	return x;
}

static void txn_put(ruma_db_txn *txn)
{
	ruma_db *db = txn->db;
	if (!spare_txn.txn || spare_txn.instance != db->instance) {
		spare_txn.txn = txn; /* another store's spare stays on its all list */
		spare_txn.instance = db->instance;
		return;
	}
	pthread_mutex_lock(&db->mu);
	txn->next_free = db->free_txns;
	db->free_txns = txn;
	pthread_mutex_unlock(&db->mu);
}

/* End txn: back to the pool, its cursors and stale pointers see !live. */
static void txn_end(ruma_db_txn *txn)
{
	txn->live = false;
	atomic_store(&txn->seq, 0);
	txn->x = NULL;
	txn->gen++;
	ruma_counter_add(&txn->db->active, -1);
	txn_put(txn);
}

int ruma_db_begin(ruma_db *db, unsigned flags, ruma_db_txn **out)
{
	if (!db || !out || (flags & ~(RUMA_DB_RDONLY | RUMA_DB_ASYNC | RUMA_DB_SNAPSHOT | RUMA_DB_LOCKING |
			       RUMA_DB_NOFILL)) ||
	    (flags & (RUMA_DB_SNAPSHOT | RUMA_DB_LOCKING)) == (RUMA_DB_SNAPSHOT | RUMA_DB_LOCKING))
		return -EINVAL;
	if (db->flags & RUMA_DB_READONLY)
		flags |= RUMA_DB_RDONLY;
	ruma_db_txn *txn = txn_take(db);
	if (!txn)
		return -ENOMEM;
	unsigned xf = ((flags & RUMA_DB_ASYNC) ? RUMA_TXN_ASYNC : 0) |
		      ((flags & RUMA_DB_RDONLY) ? RUMA_TXN_RDONLY :
		       (flags & RUMA_DB_LOCKING) ? RUMA_TXN_LOCKING : RUMA_TXN_SNAPSHOT);
	int rc = ruma_txn_begin(db->bm, xf, &txn->x);
	if (rc) {
		txn_put(txn);
		return rc;
	}
	ruma_counter_add(&db->active, 1);
	txn->start_ts = bt_txn_start_ts(txn->x);
	/* the era this transaction began in (blob.c: old extents are freed
	 * once every transaction of an era before their free has ended); 1
	 * first, so that a reclaimer scanning in between waits for it.  A
	 * load, not an increment: begins write no shared line */
	atomic_store(&txn->seq, 1);
	atomic_store(&txn->seq, atomic_load(&db->txn_seq) + 1);
	txn->flags = flags;
	txn->writes = 0;
	txn->drops = NULL;
	txn->live = true;
	*out = txn;
	return 0;
}

/* Carry out or give up txn's drops as it ends (below, with the tables). */
static int drops_end(ruma_db_txn *txn, bool committed);

int ruma_db_commit(ruma_db_txn *txn)
{
	int rc = db_txn_usable(txn);
	if (rc)
		return rc;
	ruma_db *db = txn->db;
	rc = db_blobs_commit(txn);
	if (rc) { /* its values could not be written: nothing of it commits */
		(void)ruma_txn_abort(txn->x);
		db_blobs_end(txn, false);
		(void)drops_end(txn, false);
		txn_end(txn);
		db_blobs_reclaim(db, false);
		return rc;
	}
	rc = ruma_txn_commit(txn->x);
	db_blobs_committed(txn);
	db_blobs_end(txn, rc == 0);
	int rc2 = drops_end(txn, rc == 0);
	txn_end(txn);
	db_blobs_reclaim(db, false);
	return rc ? rc : rc2;
}

int ruma_db_abort(ruma_db_txn *txn)
{
	int rc = db_txn_usable(txn);
	if (rc)
		return rc;
	ruma_db *db = txn->db;
	rc = ruma_txn_abort(txn->x);
	db_blobs_end(txn, false);
	(void)drops_end(txn, false);
	txn_end(txn);
	db_blobs_reclaim(db, false);
	return rc;
}

static int txn_writable(ruma_db_txn *txn)
{
	if (txn->flags & RUMA_DB_RDONLY) {
		db_report(txn->db, "db: write in a read-only transaction");
		return -EACCES;
	}
	return 0;
}

/* ---- tables ------------------------------------------------------------------------ */

static ruma_db_table *table_find(ruma_db *db, const char *name)
{
	for (ruma_db_table *t = db->tables; t; t = t->next)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

static int table_check_name(ruma_db *db, const char *name)
{
	size_t len = name ? strlen(name) : 0;
	if (!len || len > RUMA_DB_MAX_NAME ||
	    !strncmp(name, DB_RESERVED_PREFIX, strlen(DB_RESERVED_PREFIX))) {
		db_report(db, "db: bad table name (1..%u bytes, not starting with \"%s\")",
			  RUMA_DB_MAX_NAME, DB_RESERVED_PREFIX);
		return -EINVAL;
	}
	return 0;
}

/* The tree of name, created (and registered) when create allows. */
static int table_tree(ruma_db_txn *txn, const char *name, bool create, ruma_btree **bt)
{
	ruma_db *db = txn->db;
	int rc = ruma_btree_open(db->bm, name, bt);
	if (rc != RUMA_ENOTFOUND || !create)
		return rc;
	if ((rc = txn_writable(txn)))
		return rc;
	if (!db->registry)
		return -EACCES;
	if ((rc = ruma_btree_create(db->bm, name, bt)))
		return rc;
	rc = ruma_btree_upsert(db->registry, name, strlen(name), "", 0, NULL);
	if (rc) {
		ruma_btree_release(*bt);
		*bt = NULL;
	}
	return rc;
}

int ruma_db_table_open(ruma_db_txn *txn, const char *name, unsigned flags, ruma_db_table **out)
{
	int rc = db_txn_usable(txn);
	if (rc || !out || (flags & ~RUMA_DB_CREATE))
		return rc ? rc : -EINVAL;
	ruma_db *db = txn->db;
	if ((rc = table_check_name(db, name)))
		return rc;
	pthread_mutex_lock(&db->mu);
	ruma_db_table *t = table_find(db, name);
	if (t && t->dropping == txn) /* dropped by txn: created anew after its commit */
		rc = (flags & RUMA_DB_CREATE) ? -EBUSY : RUMA_ENOTFOUND;
	else if (t && t->dropping)
		rc = RUMA_ECONFLICT;
	if (!t && !rc) {
		ruma_btree *bt = NULL;
		rc = table_tree(txn, name, flags & RUMA_DB_CREATE, &bt);
		size_t len = strlen(name) + 1;
		if (!rc && !(t = malloc(sizeof(*t) + len))) {
			ruma_btree_release(bt);
			rc = -ENOMEM;
		}
		if (!rc) {
			*t = (ruma_db_table){ .db = db, .bt = bt, .next = db->tables };
			memcpy(t->name, name, len);
			db->tables = t;
		}
	}
	pthread_mutex_unlock(&db->mu);
	if (!rc)
		*out = t;
	return rc;
}

const char *ruma_db_table_name(const ruma_db_table *t)
{
	return t ? t->name : NULL;
}

/* Whether t may be read (write: written) in txn: a live transaction of
 * its store, a table not dropped; RUMA_ECONFLICT while another
 * transaction drops it; RUMA_ESNAPTOOOLD for a write to a table loaded
 * after txn began.  *bt: the table's tree. */
static int table_usable(ruma_db_txn *txn, ruma_db_table *t, bool write, ruma_btree **bt)
{
	int rc = db_txn_usable(txn);
	if (rc || !t || t->db != txn->db)
		return rc ? rc : -EINVAL;
	rc = db_table_readable(txn, t, bt);
	if (!rc && write && RUMA_UNLIKELY(db_loaded_after(txn, t)))
		return RUMA_ESNAPTOOOLD;
	if (rc)
		db_report(txn->db, "db: table %s %s", t->name,
			  rc == -EINVAL ? "used after it was dropped"
					: "is being dropped by another transaction");
	return rc;
}

/* Move t from the open tables to the dropped ones (db->mu held). */
static void table_retire(ruma_db *db, ruma_db_table *t)
{
	for (ruma_db_table **p = &db->tables; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	ruma_btree *bt = t->bt;
	__atomic_store_n(&t->bt, NULL, __ATOMIC_RELEASE); /* before dropping is cleared */
	ruma_btree_release(bt);
	t->next = db->dropped;
	db->dropped = t;
}

/* txn ended (committed: its drops are carried out, else given up).  The
 * first error of a drop; an open finishes a drop that failed here. */
static int drops_end(ruma_db_txn *txn, bool committed)
{
	ruma_db *db = txn->db;
	int rc = 0;
	if (!txn->drops) /* set by this transaction's thread only: no lock to look */
		return 0;
	pthread_mutex_lock(&db->mu);
	for (ruma_db_table *t = txn->drops, *n; t; t = n) {
		n = t->drop_next;
		t->drop_next = NULL;
		if (committed) {
			int r = drop_finish(db, t->name);
			rc = rc ? rc : r;
			table_retire(db, t);
		}
		__atomic_store_n(&t->dropping, NULL, __ATOMIC_RELEASE);
	}
	txn->drops = NULL;
	pthread_mutex_unlock(&db->mu);
	return rc;
}

int ruma_db_table_drop(ruma_db_txn *txn, ruma_db_table *t)
{
	ruma_btree *bt;
	int rc = table_usable(txn, t, false, &bt);
	if (!rc)
		rc = txn_writable(txn);
	if (rc)
		return rc;
	ruma_db *db = txn->db;
	char mark[DB_REGISTRY_KEY_MAX + 1];
	int n = snprintf(mark, sizeof(mark), "%s%s", DB_DROP_PREFIX, t->name);
	pthread_mutex_lock(&db->mu);
	if (ruma_counter_sum(&db->active) > 1) {
		db_report(db, "db: dropping table %s needs the only open transaction of the store",
			  t->name);
		rc = -EBUSY;
	}
	if (!rc) /* its BLOBs' extents go once the drop committed */
		rc = db_table_blobs(txn, t);
	if (!rc) /* the drop's record, durable with the commit, undone with an abort */
		rc = ruma_txn_upsert(txn->x, db->registry, mark, (size_t)n, "", 0);
	if (!rc)
		rc = ruma_txn_remove(txn->x, db->registry, t->name, strlen(t->name));
	if (rc == RUMA_ENOTFOUND) /* a tree of the B-tree API, not registered */
		rc = 0;
	if (!rc) {
		__atomic_store_n(&t->dropping, txn, __ATOMIC_RELEASE);
		t->drop_next = txn->drops;
		txn->drops = t;
	}
	pthread_mutex_unlock(&db->mu);
	return rc;
}

int ruma_db_table_list(ruma_db_txn *txn, bool (*fn)(const char *name, void *ctx), void *ctx)
{
	int rc = db_txn_usable(txn);
	if (rc || !fn)
		return rc ? rc : -EINVAL;
	char name[RUMA_DB_MAX_NAME + 1];
	const char *after = NULL;
	while (!(rc = db_next_name(txn->db, after, name))) {
		if (!fn(name, ctx))
			return 0;
		after = name;
	}
	return rc == RUMA_ENOTFOUND ? 0 : rc;
}

/* ---- point operations -------------------------------------------------------- */

static int op_usable(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, bool write,
		     ruma_btree **bt)
{
	int rc = table_usable(txn, t, write, bt);
	if (rc)
		return rc;
	if (!key || (!key->data && key->len))
		return -EINVAL;
	return 0;
}

int ruma_db_get(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, ruma_val *val)
{
	ruma_btree *bt;
	int rc = op_usable(txn, t, key, false, &bt);
	if (rc || !val)
		return rc ? rc : -EINVAL;
	/* the length straight into val: no stack slot for it */
	rc = ruma_txn_lookup(txn->x, bt, key->data, key->len, txn->buf, sizeof(txn->buf), &val->len);
	if (RUMA_UNLIKELY(db_loaded_after(txn, t))) /* a load installed before or meanwhile */
		return RUMA_ESNAPTOOOLD;
	return rc ? rc : db_value_out_fast(txn, txn->buf, val->len, val);
}

static int put_append(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, const ruma_val *val)
{
	db_entry last;
	int rc = db_last_key(t->bt, &last);
	if (!rc && db_key_cmp(key->data, key->len, last.key, last.klen) <= 0)
		return RUMA_EEXISTS;
	if (rc && rc != RUMA_ENOTFOUND)
		return rc;
	return db_put_value(txn, t, key, val, RUMA_DB_NOOVERWRITE);
}

int ruma_db_put(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, const ruma_val *val,
		unsigned flags)
{
	ruma_btree *bt;
	int rc = op_usable(txn, t, key, true, &bt);
	if (rc || !val || (!val->data && val->len) ||
	    (flags & ~(RUMA_DB_NOOVERWRITE | RUMA_DB_APPEND)))
		return rc ? rc : -EINVAL;
	if ((rc = txn_writable(txn)))
		return rc;
	txn->writes++;
	if (flags & RUMA_DB_APPEND)
		rc = put_append(txn, t, key, val);
	else if (db_stored_as_is(txn->db, key, val) && !ruma_bm_extents_used(txn->db->bm))
		rc = (flags & RUMA_DB_NOOVERWRITE)
			     ? ruma_txn_insert(txn->x, bt, key->data, key->len, val->data, val->len)
			     : ruma_txn_upsert(txn->x, bt, key->data, key->len, val->data, val->len);
	else
		rc = db_put_value(txn, t, key, val, flags);
	if (rc == RUMA_EVIRTFULL && !__atomic_exchange_n(&txn->db->full_said, true, __ATOMIC_RELAXED))
		db_report(txn->db, "db: the store is full: its virtual reservation is used up "
				   "(ruma_db_options.advanced->virt_bytes; best set when the store "
				   "is created, which sizes its free-space bitmap)");
	return rc;
}

int ruma_db_del(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key)
{
	ruma_btree *bt;
	int rc = op_usable(txn, t, key, true, &bt);
	if (rc)
		return rc;
	if ((rc = txn_writable(txn)))
		return rc;
	txn->writes++;
	size_t since = bt_txn_changes(txn->x);
	rc = ruma_txn_remove(txn->x, bt, key->data, key->len);
	return rc ? rc : db_note_replaced(txn, since, NULL, 0);
}

int ruma_db_lock(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key)
{
	ruma_btree *bt;
	int rc = op_usable(txn, t, key, true, &bt);
	if (!rc)
		rc = txn_writable(txn);
	return rc ? rc : ruma_txn_lock(txn->x, bt, key->data, key->len);
}

/* ---- statistics and checking ------------------------------------------------- */

int ruma_db_table_stat(ruma_db_txn *txn, ruma_db_table *t, ruma_db_table_stats *out)
{
	ruma_btree *bt;
	int rc = table_usable(txn, t, false, &bt);
	if (rc || !out)
		return rc ? rc : -EINVAL;
	ruma_btree_stats s;
	if ((rc = ruma_btree_get_stats(bt, &s)))
		return rc;
	*out = (ruma_db_table_stats){ .entries = s.entries,
				     .pages = s.inner_nodes + s.leaf_nodes,
				     .depth = s.height,
				     .bytes = s.bytes_used };
	return 0;
}

int ruma_db_stat(ruma_db *db, ruma_db_stats *out)
{
	if (!db || !out)
		return -EINVAL;
	ruma_bm_stats s;
	ruma_bm_get_stats(db->bm, &s);
	memset(out, 0, sizeof(*out));
	char name[RUMA_DB_MAX_NAME + 1];
	const char *after = NULL;
	int rc;
	while (!(rc = db_next_name(db, after, name))) {
		out->tables++;
		after = name;
	}
	if (rc != RUMA_ENOTFOUND)
		return rc;
	out->pages = s.pages_allocated;
	out->pages_free = s.pages_free;
	out->pages_resident = s.pages_resident;
	out->pool_bytes = db->pool_bytes;
	if (ruma_bm_logging(db->bm))
		out->log_bytes = ruma_bm_log_end(db->bm) -
				 __atomic_load_n(&db->ckpt_lsn, __ATOMIC_RELAXED);
	out->checkpoints = __atomic_load_n(&db->checkpoints, __ATOMIC_RELAXED);
	return 0;
}

static void check_line(void *ctx, const char *line)
{
	ruma_db *db = ctx;
	db_report(db, "db check: %s", line);
}

static int check_tree(ruma_db *db, const char *name)
{
	ruma_btree *bt;
	int rc = ruma_btree_open(db->bm, name, &bt);
	if (rc) {
		db_report(db, "db check: table %s: %s", name, ruma_strerror(rc));
		return rc == RUMA_ENOTFOUND ? RUMA_ECORRUPT : rc;
	}
	rc = ruma_btree_check_msg(bt, check_line, db);
	if (rc)
		db_report(db, "db check: table %s: %s", name, ruma_strerror(rc));
	ruma_btree_release(bt);
	return rc;
}

/* The whole store: every page reached from the catalog once, none of them
 * free, none allocated and unreached; one line with the counts. */
static int check_store(ruma_db *db)
{
	ruma_btree_store_check c;
	int rc = db_blobs_check(db, check_line, db, &c);
	if (rc == 0 || rc == RUMA_ECORRUPT)
		db_report(db,
			  "db check: store: %" PRIu64 " pages reached, %" PRIu64 " free, %" PRIu64
			  " leaked",
			  c.pages_reached, c.pages_free, c.pages_leaked);
	return rc;
}

int ruma_db_check(ruma_db *db)
{
	if (!db)
		return -EINVAL;
	if (!db->registry)
		return 0;
	int first = check_tree(db, DB_REGISTRY);
	if (first)
		return first;
	char name[RUMA_DB_MAX_NAME + 1];
	const char *after = NULL;
	int rc;
	while (!(rc = db_next_name(db, after, name))) {
		int r = check_tree(db, name);
		if (r && !first)
			first = r;
		after = name;
	}
	if (rc != RUMA_ENOTFOUND && !first)
		first = rc;
	return first ? first : check_store(db);
}
