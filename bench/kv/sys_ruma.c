/*
 * sys_ruma.c — ruma's store behind the `ruma kv` adapter interface,
 * through the user API only (include/ruma/db.h, docs/db.md): one store
 * file <dir>/store (and its log <dir>/store.wal), one table "kv", a
 * transaction per operation.  Values of any --value-size: those above the
 * store's BLOB threshold are stored as BLOBs (db.h) through the same calls.
 *
 * Configuration: the buffer pool is --memory-limit (pool_bytes); the
 * store's defaults otherwise (O_DIRECT I/O, no compression: ruma has
 * none).  Durability sync: commits wait for the log (group commit);
 * none: RUMA_DB_ASYNC commits (the log is written by its flusher, never
 * waited for), so a crash keeps a prefix of the commits, as the peers'
 * unsynced modes do.  A row another transaction holds gives
 * RUMA_ECONFLICT (db.h: no waiting), which the driver retries.  The
 * version store's size is the process's (ruma_txn_mvcc_stat, txn.h: one
 * store for every open database).
 */
#include "bench/kv/kv.h"

#include <ruma/db.h>
#include <ruma/txn.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store {
	ruma_db *db;
	ruma_db_table *table;
	bool sync;
	const ruma_kv_conf *conf;  /* while opening: where notes go */
	_Atomic bool opening;
};

struct thread {
	ruma_kv_thread base;
	struct store *s;
	ruma_db_txn *txn;
	ruma_db_cursor *cur;
};

/* The library's messages go to stderr, prefixed like the driver's notes;
 * one saying that the file system refused O_DIRECT at open is also a note
 * of what could not be honoured. */
static void say(void *ctx, const char *line)
{
	struct store *s = ctx;
	fprintf(stderr, "ruma kv: ruma: %s\n", line);
	if (atomic_load(&s->opening) && strstr(line, "refuses O_DIRECT"))
		s->conf->note(s->conf->note_ctx, "direct_io", line);
}

static int open_table(struct store *s, char *err, size_t errlen)
{
	ruma_db_txn *txn;
	int rc = ruma_db_begin(s->db, 0, &txn);
	if (rc)
		return ruma_kv_open_fail(err, errlen, rc, "begin: %s", ruma_strerror(rc));
	rc = ruma_db_table_open(txn, "kv", RUMA_DB_CREATE, &s->table);
	int rc2 = rc ? ruma_db_abort(txn) : ruma_db_commit(txn);
	if (rc || rc2)
		return ruma_kv_open_fail(err, errlen, rc ? rc : rc2, "table kv: %s",
					 ruma_strerror(rc ? rc : rc2));
	return 0;
}

static int ruma_open(const ruma_kv_conf *c, void **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	char path[4096];
	if (!s)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	snprintf(path, sizeof(path), "%s/store", c->dir);
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.pool_bytes = c->memory;
	o.message = say;
	o.message_ctx = s;
	s->sync = c->sync;
	s->conf = c;
	atomic_store(&s->opening, true);
	int rc = ruma_db_open(path, &o, &s->db);
	atomic_store(&s->opening, false);
	if (rc) {
		free(s);
		return ruma_kv_open_fail(err, errlen, rc, "%s: %s", path, ruma_strerror(rc));
	}
	if ((rc = open_table(s, err, errlen))) {
		ruma_db_close(s->db);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int ruma_close(void *p, char *err, size_t errlen)
{
	struct store *s = p;
	int rc = ruma_db_close(s->db);
	free(s);
	return rc ? ruma_kv_open_fail(err, errlen, rc, "close: %s", ruma_strerror(rc)) : 0;
}

static int ruma_thread_open(void *p, ruma_kv_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	t->s = p;
	*out = &t->base;
	return 0;
}

static void ruma_thread_close(ruma_kv_thread *th)
{
	free(th);
}

static int ruma_begin(ruma_kv_thread *th, unsigned how)
{
	struct thread *t = (struct thread *)th;
	unsigned flags = (how & RUMA_KV_WRITE ? 0 : RUMA_DB_RDONLY) | (t->s->sync ? 0 : RUMA_DB_ASYNC);
	int rc = ruma_db_begin(t->s->db, flags, &t->txn);
	return rc ? ruma_kv_fail(th, rc, "begin: %s", ruma_strerror(rc)) : 0;
}

static int ruma_commit(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	int rc = ruma_db_commit(t->txn);
	t->txn = NULL;
	return rc ? ruma_kv_fail(th, rc, "commit: %s", ruma_strerror(rc)) : 0;
}

static void ruma_abort(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	if (t->txn)
		(void)ruma_db_abort(t->txn);
	t->txn = NULL;
}

/* A code the driver handles itself passes through; others get a message. */
static int result(ruma_kv_thread *th, int rc, const char *what)
{
	if (!rc || rc == RUMA_ENOTFOUND || rc == RUMA_ECONFLICT)
		return rc;
	return ruma_kv_fail(th, rc, "%s: %s", what, ruma_strerror(rc));
}

static int ruma_get(ruma_kv_thread *th, const void *key, size_t klen, const void **val,
		    size_t *vlen)
{
	struct thread *t = (struct thread *)th;
	ruma_val k = { klen, (void *)key }, v;
	int rc = ruma_db_get(t->txn, t->s->table, &k, &v);
	if (!rc) {
		*val = v.data;
		*vlen = v.len;
	}
	return result(th, rc, "get");
}

static int ruma_put(ruma_kv_thread *th, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	struct thread *t = (struct thread *)th;
	ruma_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	return result(th, ruma_db_put(t->txn, t->s->table, &k, &v, 0), "put");
}

static int ruma_del(ruma_kv_thread *th, const void *key, size_t klen)
{
	struct thread *t = (struct thread *)th;
	ruma_val k = { klen, (void *)key };
	return result(th, ruma_db_del(t->txn, t->s->table, &k), "del");
}

/* Position the cursor where a scan starts: 0, RUMA_ENOTFOUND (nothing there) or an error. */
static int scan_start(ruma_db_cursor *c, const void *key, size_t klen, bool reverse)
{
	if (!key)
		return reverse ? ruma_db_cursor_last(c) : ruma_db_cursor_first(c);
	ruma_val k = { klen, (void *)key };
	int rc = ruma_db_cursor_seek(c, &k);
	if (!reverse)
		return rc;
	if (rc == RUMA_ENOTFOUND)
		return ruma_db_cursor_last(c);
	if (rc)
		return rc;
	ruma_val at;
	if ((rc = ruma_db_cursor_get(c, &at, NULL)))
		return rc;
	bool same = at.len == klen && !memcmp(at.data, key, klen);
	return same ? 0 : ruma_db_cursor_prev(c);
}

static int64_t ruma_scan(ruma_kv_thread *th, const void *key, size_t klen, unsigned n,
			 bool reverse, ruma_kv_visit fn, void *ctx)
{
	struct thread *t = (struct thread *)th;
	ruma_db_cursor *c;
	int64_t seen = 0;
	int rc = ruma_db_cursor_open(t->txn, t->s->table, &c);
	if (rc)
		return ruma_kv_fail(th, rc, "cursor: %s", ruma_strerror(rc));
	for (rc = n ? scan_start(c, key, klen, reverse) : RUMA_ENOTFOUND; !rc;
	     rc = reverse ? ruma_db_cursor_prev(c) : ruma_db_cursor_next(c)) {
		ruma_val k, v;
		if ((rc = ruma_db_cursor_get(c, &k, &v)))
			break;
		seen++;
		if (!fn(ctx, k.data, k.len, v.data, v.len) || (unsigned)seen == n)
			break;
	}
	ruma_db_cursor_close(c);
	if (rc && rc != RUMA_ENOTFOUND)
		return ruma_kv_fail(th, rc, "scan: %s", ruma_strerror(rc));
	return seen;
}

/* The bytes the version store holds for the snapshots (the process's). */
static int ruma_versions(void *store, uint64_t *bytes)
{
	ruma_txn_mvcc_stats st;
	(void)store;
	ruma_txn_mvcc_stat(&st);
	*bytes = st.version_bytes;
	return 0;
}

const ruma_kv_system ruma_kv_sys_ruma = {
	.name = "ruma",
	.version = ruma_version,
	.open = ruma_open,
	.close = ruma_close,
	.thread_open = ruma_thread_open,
	.thread_close = ruma_thread_close,
	.begin = ruma_begin,
	.commit = ruma_commit,
	.abort = ruma_abort,
	.get = ruma_get,
	.put = ruma_put,
	.del = ruma_del,
	.scan = ruma_scan,
	.versions = ruma_versions,
};
