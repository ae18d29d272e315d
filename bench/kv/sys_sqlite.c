/*
 * sys_sqlite.c — SQLite (libsqlite3-dev) behind the `ruma kv` adapter
 * interface: the database <dir>/kv.db in WAL mode with one table
 * kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID (a clustered B-tree on the
 * key, as the other stores keep their entries); one connection per
 * thread, every statement prepared once per connection.
 *
 * Configuration, as SQLite's documentation gives it (wal.html,
 * pragma.html, withoutrowid.html, threadsafe.html): journal_mode=WAL;
 * synchronous=FULL for durability sync (in WAL mode FULL syncs the WAL at
 * every commit; NORMAL would not make commits durable), OFF for none;
 * each connection's page cache (cache_size) the thread's share of
 * --memory-limit; mmap_size=0 (reads through the page cache SQLite
 * sizes, not the kernel's map); connections opened SQLITE_OPEN_NOMUTEX
 * (each is used by one thread).  Writing transactions start with BEGIN
 * IMMEDIATE (they take the write lock at once, so two writers never
 * deadlock upgrading a read lock); a busy database is waited for by the
 * busy handler (busy_timeout) and, if still busy, retried by the driver.
 * A transaction of one call (RUMA_KV_ONE: a read, an update, an insert, a
 * scan) is that one statement in autocommit mode, as a user of SQLite
 * writes it; read-modify-write and longer transactions use BEGIN ... COMMIT.
 *
 * What it cannot honour: direct I/O (SQLite has none: its files go
 * through the kernel's page cache, bounded only by a memory cgroup) and
 * one cache of --memory-limit (each connection has its own; they are given
 * equal shares).  It has no compression.
 */
#ifdef RUMA_KV_HAVE_SQLITE
#include "bench/kv/kv.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_MS 10000

struct store {
	char path[4200];
	bool sync;
	long cache_kib;  /* per connection */
};

enum { ST_BEGIN_R, ST_BEGIN_W, ST_COMMIT, ST_ROLLBACK, ST_GET, ST_PUT, ST_DEL, ST_FROM, ST_FIRST,
       ST_BACK_FROM, ST_LAST, ST_N };

static const char *const sql[ST_N] = {
	[ST_BEGIN_R] = "BEGIN",
	[ST_BEGIN_W] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_GET] = "SELECT v FROM kv WHERE k = ?1",
	[ST_PUT] = ("INSERT INTO kv(k, v) VALUES(?1, ?2) ON CONFLICT(k) DO UPDATE SET v = "
		    "excluded.v"),
	[ST_DEL] = "DELETE FROM kv WHERE k = ?1",
	[ST_FROM] = "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2",
	[ST_FIRST] = "SELECT k, v FROM kv ORDER BY k LIMIT ?2",
	[ST_BACK_FROM] = "SELECT k, v FROM kv WHERE k <= ?1 ORDER BY k DESC LIMIT ?2",
	[ST_LAST] = "SELECT k, v FROM kv ORDER BY k DESC LIMIT ?2",
};

struct thread {
	ruma_kv_thread base;
	sqlite3 *db;
	sqlite3_stmt *st[ST_N];
	sqlite3_stmt *got;  /* the statement whose row the last get returned */
	bool in_txn;        /* BEGIN ran: COMMIT or ROLLBACK ends it */
};

static const char *sqlite_version(void)
{
	return sqlite3_libversion();
}

/* A result of SQLite as ruma's: busy/locked is a conflict (retried). */
static int sq_fail(struct thread *t, int rc, const char *what)
{
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		return RUMA_ECONFLICT;
	return ruma_kv_fail(&t->base, -EIO, "sqlite %s: %s", what, sqlite3_errmsg(t->db));
}

static int exec(sqlite3 *db, const char *text, char *err, size_t errlen)
{
	char *e = NULL;
	if (sqlite3_exec(db, text, NULL, NULL, &e) == SQLITE_OK)
		return 0;
	ruma_kv_open_fail(err, errlen, -EIO, "%s: %s", text, e ? e : sqlite3_errmsg(db));
	sqlite3_free(e);
	return -EIO;
}

/* A connection with the run's settings. */
static int connect(const struct store *s, sqlite3 **db, char *err, size_t errlen)
{
	char pragmas[256];
	int rc = sqlite3_open_v2(s->path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				 SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		ruma_kv_open_fail(err, errlen, -EIO, "%s: %s", s->path,
				  *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
		sqlite3_close(*db);
		*db = NULL;
		return -EIO;
	}
	sqlite3_busy_timeout(*db, BUSY_MS);
	snprintf(pragmas, sizeof(pragmas), "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; "
		 "PRAGMA cache_size=-%ld; PRAGMA mmap_size=0;", s->sync ? "FULL" : "OFF",
		 s->cache_kib);
	if ((rc = exec(*db, pragmas, err, errlen))) {
		sqlite3_close(*db);
		*db = NULL;
	}
	return rc;
}

static int sq_open(const ruma_kv_conf *c, void **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	sqlite3 *db;
	if (!s)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	snprintf(s->path, sizeof(s->path), "%s/kv.db", c->dir);
	s->sync = c->sync;
	s->cache_kib = (long)(c->memory / (c->threads ? c->threads : 1) / 1024);
	int rc = connect(s, &db, err, errlen);
	if (!rc)
		rc = exec(db, "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) "
			  "WITHOUT ROWID", err, errlen);
	sqlite3_close(db);
	if (rc) {
		free(s);
		return rc;
	}
	c->note(c->note_ctx, "direct_io", "SQLite has no direct I/O: its files go through the "
		"kernel's page cache");
	if (c->threads > 1)
		c->note(c->note_ctx, "memory", "each connection (one per thread) has its own page "
			"cache: each gets memory / threads");
	*out = s;
	return 0;
}

static int sq_close(void *p, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	free(p);
	return 0;
}

static void sq_thread_close(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	for (int i = 0; i < ST_N; i++)
		sqlite3_finalize(t->st[i]);
	sqlite3_close(t->db);
	free(t);
}

static int sq_thread_open(void *p, ruma_kv_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	int rc = connect(p, &t->db, err, errlen);
	for (int i = 0; !rc && i < ST_N; i++)
		if (sqlite3_prepare_v3(t->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &t->st[i],
				       NULL) != SQLITE_OK)
			rc = ruma_kv_open_fail(err, errlen, -EIO, "prepare %s: %s", sql[i],
					       sqlite3_errmsg(t->db));
	if (rc) {
		sq_thread_close(&t->base);
		return rc;
	}
	*out = &t->base;
	return 0;
}

/* Run a statement without result rows. */
static int step_done(struct thread *t, int which)
{
	sqlite3_stmt *st = t->st[which];
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : sq_fail(t, rc, sql[which]);
}

static void release_got(struct thread *t)
{
	if (t->got)
		sqlite3_reset(t->got);
	t->got = NULL;
}

/* One call: its statement is the transaction (autocommit); else BEGIN. */
static int sq_begin(ruma_kv_thread *th, unsigned flags)
{
	struct thread *t = (struct thread *)th;
	if (flags & RUMA_KV_ONE) {
		t->in_txn = false;
		return 0;
	}
	int rc = step_done(t, flags & RUMA_KV_WRITE ? ST_BEGIN_W : ST_BEGIN_R);
	t->in_txn = !rc;
	return rc;
}

static void sq_abort(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	release_got(t);
	if (t->in_txn && !sqlite3_get_autocommit(t->db))
		(void)step_done(t, ST_ROLLBACK);
	t->in_txn = false;
}

static int sq_commit(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	release_got(t);
	if (!t->in_txn)
		return 0; /* one statement in autocommit mode: committed when it ran */
	int rc = step_done(t, ST_COMMIT);
	if (rc)
		sq_abort(th);
	t->in_txn = false;
	return rc;
}

static int sq_get(ruma_kv_thread *th, const void *key, size_t klen, const void **val,
		  size_t *vlen)
{
	struct thread *t = (struct thread *)th;
	sqlite3_stmt *st = t->st[ST_GET];
	release_got(t);
	sqlite3_bind_blob(st, 1, key, (int)klen, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*val = sqlite3_column_blob(st, 0);
		*vlen = (size_t)sqlite3_column_bytes(st, 0);
		t->got = st; /* the value lives until the statement is reset */
		return 0;
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? RUMA_ENOTFOUND : sq_fail(t, rc, "get");
}

static int sq_put(ruma_kv_thread *th, const void *key, size_t klen, const void *val,
		  size_t vlen)
{
	struct thread *t = (struct thread *)th;
	release_got(t);
	sqlite3_bind_blob(t->st[ST_PUT], 1, key, (int)klen, SQLITE_STATIC);
	sqlite3_bind_blob(t->st[ST_PUT], 2, val, (int)vlen, SQLITE_STATIC);
	return step_done(t, ST_PUT);
}

static int sq_del(ruma_kv_thread *th, const void *key, size_t klen)
{
	struct thread *t = (struct thread *)th;
	release_got(t);
	sqlite3_bind_blob(t->st[ST_DEL], 1, key, (int)klen, SQLITE_STATIC);
	int rc = step_done(t, ST_DEL);
	return rc ? rc : sqlite3_changes(t->db) ? 0 : RUMA_ENOTFOUND;
}

static int64_t sq_scan(ruma_kv_thread *th, const void *key, size_t klen, unsigned n,
		       bool reverse, ruma_kv_visit fn, void *ctx)
{
	struct thread *t = (struct thread *)th;
	int which = key ? (reverse ? ST_BACK_FROM : ST_FROM) : (reverse ? ST_LAST : ST_FIRST);
	sqlite3_stmt *st = t->st[which];
	int64_t seen = 0;
	int rc;
	release_got(t);
	if (key)
		sqlite3_bind_blob(st, 1, key, (int)klen, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		seen++;
		if (!fn(ctx, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
			sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1))) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? seen : sq_fail(t, rc, "scan");
}

const ruma_kv_system ruma_kv_sys_sqlite = {
	.name = "sqlite",
	.version = sqlite_version,
	.open = sq_open,
	.close = sq_close,
	.thread_open = sq_thread_open,
	.thread_close = sq_thread_close,
	.begin = sq_begin,
	.commit = sq_commit,
	.abort = sq_abort,
	.get = sq_get,
	.put = sq_put,
	.del = sq_del,
	.scan = sq_scan,
};
#else
/* SQLite not built (-DRUMA_PEERS=OFF): this file compiles to nothing. */
typedef int ruma_kv_no_sqlite;
#endif
