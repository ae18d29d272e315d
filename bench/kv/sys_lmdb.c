/*
 * sys_lmdb.c — LMDB (Howard Chu, Symas; liblmdb-dev) behind the `ruma kv`
 * adapter interface: one environment in the store directory, its unnamed
 * database, a transaction per operation.
 *
 * Configuration, as LMDB's documentation (lmdb.h, mdb_env_open) gives it
 * for the case: MDB_NORDAHEAD (random access to a database larger than
 * memory: read-ahead only evicts useful pages); sync: the default, every
 * commit fsyncs the data and meta pages; none: MDB_NOSYNC (the OS writes
 * the pages back when it likes; a crash keeps the last durable commit, or
 * with a file system that does not keep write order, may corrupt the
 * database, as the documentation warns); the map (address space) 64 GiB
 * or four times the data, whichever is larger; max readers = the threads;
 * MDB_NOTLS (a read transaction belongs to its handle, not to the
 * thread).  Read transactions are reset and renewed (mdb_txn_reset/renew),
 * as the documentation advises for a thread that reads often.
 *
 * What LMDB cannot honour: a cache of --memory-limit (it has none: it
 * reads through its memory map and the kernel's page cache, which only a
 * memory cgroup bounds) and direct I/O (mmap).  It has no compression.
 */
#ifdef RUMA_KV_HAVE_LMDB
#include "bench/kv/kv.h"

#include <lmdb.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct store {
	MDB_env *env;
	MDB_dbi dbi;
};

struct thread {
	ruma_kv_thread base;
	struct store *s;
	MDB_txn *txn;   /* the running transaction */
	MDB_txn *rtxn;  /* this thread's read transaction, reset between uses */
	bool write;
};

static const char *lmdb_version(void)
{
	return mdb_version(NULL, NULL, NULL);
}

/* An LMDB code as ruma's: not found, or a failure with its text. */
static int lmdb_rc(ruma_kv_thread *th, int rc, const char *what)
{
	if (!rc)
		return 0;
	if (rc == MDB_NOTFOUND)
		return RUMA_ENOTFOUND;
	return ruma_kv_fail(th, rc > 0 ? -EIO : rc, "lmdb %s: %s", what, mdb_strerror(rc));
}

/* The map's size: address space only (the file grows as pages are used),
 * so it is sized far above the data: fills that run for long insert well
 * beyond --records, and a full map would end the run (MDB_MAP_FULL). */
static uint64_t map_size(const ruma_kv_conf *c)
{
	uint64_t data = c->records * (uint64_t)(c->key_max + c->value_size + 16);
	uint64_t want = 4 * data;
	return want < (64ull << 30) ? 64ull << 30 : want;
}

static int open_dbi(struct store *s, char *err, size_t errlen)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (!rc && (rc = mdb_dbi_open(txn, NULL, 0, &s->dbi)))
		mdb_txn_abort(txn);
	else if (!rc)
		rc = mdb_txn_commit(txn);
	return rc ? ruma_kv_open_fail(err, errlen, -EIO, "database: %s", mdb_strerror(rc)) : 0;
}

static int lmdb_open(const ruma_kv_conf *c, void **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	unsigned flags = MDB_NORDAHEAD | MDB_NOTLS | (c->sync ? 0 : MDB_NOSYNC);
	int rc;
	if (!s)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	if ((rc = mdb_env_create(&s->env))) {
		free(s);
		return ruma_kv_open_fail(err, errlen, -EIO, "mdb_env_create: %s", mdb_strerror(rc));
	}
	if ((rc = mdb_env_set_mapsize(s->env, (size_t)map_size(c))) ||
	    (rc = mdb_env_set_maxreaders(s->env, c->threads + 2)) ||
	    (rc = mdb_env_open(s->env, c->dir, flags, 0644))) {
		mdb_env_close(s->env);
		free(s);
		return ruma_kv_open_fail(err, errlen, -EIO, "%s: %s", c->dir, mdb_strerror(rc));
	}
	if ((rc = open_dbi(s, err, errlen))) {
		mdb_env_close(s->env);
		free(s);
		return rc;
	}
	c->note(c->note_ctx, "memory", "LMDB has no cache: it reads through its memory map, "
		"so the kernel's page cache holds what it reads (bounded only by a memory cgroup)");
	c->note(c->note_ctx, "direct_io", "LMDB does its I/O through mmap and write(); it has "
		"no direct I/O");
	*out = s;
	return 0;
}

static int lmdb_close(void *p, char *err, size_t errlen)
{
	struct store *s = p;
	int rc = mdb_env_sync(s->env, 1);
	mdb_env_close(s->env);
	free(s);
	return rc ? ruma_kv_open_fail(err, errlen, -EIO, "sync: %s", mdb_strerror(rc)) : 0;
}

static int lmdb_thread_open(void *p, ruma_kv_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	t->s = p;
	*out = &t->base;
	return 0;
}

static void lmdb_thread_close(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	if (t->rtxn)
		mdb_txn_abort(t->rtxn);
	free(t);
}

static int lmdb_begin(ruma_kv_thread *th, unsigned flags)
{
	struct thread *t = (struct thread *)th;
	int rc;
	t->write = flags & RUMA_KV_WRITE;
	if (t->write) {
		rc = mdb_txn_begin(t->s->env, NULL, 0, &t->txn);
	} else if (t->rtxn) {
		rc = mdb_txn_renew(t->rtxn);
		t->txn = rc ? NULL : t->rtxn;
	} else {
		rc = mdb_txn_begin(t->s->env, NULL, MDB_RDONLY, &t->rtxn);
		t->txn = rc ? NULL : t->rtxn;
	}
	if (rc)
		t->txn = NULL;
	return lmdb_rc(th, rc, "begin");
}

static int lmdb_commit(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	int rc = 0;
	if (t->write)
		rc = mdb_txn_commit(t->txn); /* frees the transaction, also when it fails */
	else
		mdb_txn_reset(t->txn);
	t->txn = NULL;
	return lmdb_rc(th, rc, "commit");
}

static void lmdb_abort(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	if (!t->txn)
		return;
	if (t->write)
		mdb_txn_abort(t->txn);
	else
		mdb_txn_reset(t->txn);
	t->txn = NULL;
}

static int lmdb_get(ruma_kv_thread *th, const void *key, size_t klen, const void **val,
		    size_t *vlen)
{
	struct thread *t = (struct thread *)th;
	MDB_val k = { klen, (void *)key }, v;
	int rc = mdb_get(t->txn, t->s->dbi, &k, &v);
	if (!rc) {
		*val = v.mv_data;
		*vlen = v.mv_size;
	}
	return lmdb_rc(th, rc, "get");
}

static int lmdb_put(ruma_kv_thread *th, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	struct thread *t = (struct thread *)th;
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	return lmdb_rc(th, mdb_put(t->txn, t->s->dbi, &k, &v, 0), "put");
}

static int lmdb_del(ruma_kv_thread *th, const void *key, size_t klen)
{
	struct thread *t = (struct thread *)th;
	MDB_val k = { klen, (void *)key };
	return lmdb_rc(th, mdb_del(t->txn, t->s->dbi, &k, NULL), "del");
}

/* The cursor at the scan's first entry (k, v filled): an LMDB code. */
static int scan_start(MDB_cursor *c, const void *key, size_t klen, bool reverse, MDB_val *k,
		      MDB_val *v)
{
	if (!key)
		return mdb_cursor_get(c, k, v, reverse ? MDB_LAST : MDB_FIRST);
	*k = (MDB_val){ klen, (void *)key };
	int rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
	if (!reverse)
		return rc;
	if (rc == MDB_NOTFOUND)
		return mdb_cursor_get(c, k, v, MDB_LAST);
	if (rc || (k->mv_size == klen && !memcmp(k->mv_data, key, klen)))
		return rc;
	return mdb_cursor_get(c, k, v, MDB_PREV);
}

static int64_t lmdb_scan(ruma_kv_thread *th, const void *key, size_t klen, unsigned n,
			 bool reverse, ruma_kv_visit fn, void *ctx)
{
	struct thread *t = (struct thread *)th;
	MDB_cursor *c;
	MDB_val k, v;
	int64_t seen = 0;
	int rc = mdb_cursor_open(t->txn, t->s->dbi, &c);
	if (rc)
		return lmdb_rc(th, rc, "cursor");
	for (rc = n ? scan_start(c, key, klen, reverse, &k, &v) : MDB_NOTFOUND; !rc;
	     rc = mdb_cursor_get(c, &k, &v, reverse ? MDB_PREV : MDB_NEXT)) {
		seen++;
		if (!fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size) || (unsigned)seen == n)
			break;
	}
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_rc(th, rc, "scan");
	return seen;
}

const ruma_kv_system ruma_kv_sys_lmdb = {
	.name = "lmdb",
	.version = lmdb_version,
	.open = lmdb_open,
	.close = lmdb_close,
	.thread_open = lmdb_thread_open,
	.thread_close = lmdb_thread_close,
	.begin = lmdb_begin,
	.commit = lmdb_commit,
	.abort = lmdb_abort,
	.get = lmdb_get,
	.put = lmdb_put,
	.del = lmdb_del,
	.scan = lmdb_scan,
};
#else
/* LMDB not built (-DRUMA_PEERS=OFF): this file compiles to nothing. */
typedef int ruma_kv_no_lmdb;
#endif
