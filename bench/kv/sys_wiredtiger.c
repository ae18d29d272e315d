/*
 * sys_wiredtiger.c — WiredTiger (libwiredtiger-dev) behind the `ruma kv`
 * adapter interface: a connection to the store directory, one table
 * "table:kv" of raw byte keys and values (key_format=u, value_format=u),
 * a session and a cursor per thread, a transaction per operation
 * (snapshot isolation; a write conflict is WT_ROLLBACK, retried): an
 * operation of one call (RUMA_KV_ONE) is the cursor call alone, which
 * WiredTiger commits by itself (auto-commit), as its users write it; a
 * scan (many cursor calls), read-modify-write and longer transactions
 * begin and commit explicitly.
 *
 * Configuration, as WiredTiger's documentation gives it (Tuning: cache
 * size, durability, direct I/O; Checkpoint and logging): cache_size
 * --memory-limit; the write-ahead log on (log=(enabled)); durability sync:
 * transaction_sync=(enabled=true,method=fsync), every commit flushes and
 * syncs the log; none: transaction_sync=(enabled=false), the log is
 * written, not synced; a checkpoint every 60 s (what MongoDB runs it with;
 * it bounds the log and recovery); direct_io=[data] (dropped, with a
 * note, where the file system refuses O_DIRECT); no block compressor.
 */
#ifdef RUMA_KV_HAVE_WIREDTIGER
#include "bench/kv/kv.h"

#include <wiredtiger.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE "table:kv"

struct store {
	WT_CONNECTION *conn;
};

struct thread {
	ruma_kv_thread base;
	WT_SESSION *session;
	WT_CURSOR *cur;
	bool explicit_txn;  /* begin_transaction ran: commit or rollback ends it */
};

static const char *wt_version(void)
{
	return wiredtiger_version(NULL, NULL, NULL);
}

/* A WiredTiger code as ruma's: not found, a conflict, or a failure. */
static int wt_rc(ruma_kv_thread *th, int rc, const char *what)
{
	if (!rc)
		return 0;
	if (rc == WT_NOTFOUND)
		return RUMA_ENOTFOUND;
	if (rc == WT_ROLLBACK)
		return RUMA_ECONFLICT;
	return ruma_kv_fail(th, rc > 0 ? -rc : -EIO, "wiredtiger %s: %s", what,
			    wiredtiger_strerror(rc));
}

static int open_conn(const ruma_kv_conf *c, bool direct, WT_CONNECTION **conn)
{
	char cfg[512];
	snprintf(cfg, sizeof(cfg),
		 "create,cache_size=%" PRIu64 ",session_max=%u,log=(enabled=true),"
		 "transaction_sync=(enabled=%s,method=fsync),checkpoint=(wait=60)%s",
		 c->memory, c->threads + 16, c->sync ? "true" : "false",
		 direct ? ",direct_io=[data]" : "");
	return wiredtiger_open(c->dir, NULL, cfg, conn);
}

static int create_table(WT_CONNECTION *conn, char *err, size_t errlen)
{
	WT_SESSION *s;
	int rc = conn->open_session(conn, NULL, NULL, &s);
	if (!rc) {
		rc = s->create(s, TABLE, "key_format=u,value_format=u");
		s->close(s, NULL);
	}
	return rc ? ruma_kv_open_fail(err, errlen, -EIO, "create %s: %s", TABLE,
				      wiredtiger_strerror(rc)) : 0;
}

static int wt_open(const ruma_kv_conf *c, void **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	if (!s)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	int rc = open_conn(c, true, &s->conn);
	if (rc) {
		char why[200];
		snprintf(why, sizeof(why), "the file system refused O_DIRECT (%s): buffered I/O",
			 wiredtiger_strerror(rc));
		if (!(rc = open_conn(c, false, &s->conn)))
			c->note(c->note_ctx, "direct_io", why);
	}
	if (rc) {
		free(s);
		return ruma_kv_open_fail(err, errlen, -EIO, "%s: %s", c->dir,
					 wiredtiger_strerror(rc));
	}
	if ((rc = create_table(s->conn, err, errlen))) {
		s->conn->close(s->conn, NULL);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int wt_close(void *p, char *err, size_t errlen)
{
	struct store *s = p;
	int rc = s->conn->close(s->conn, NULL);
	free(s);
	return rc ? ruma_kv_open_fail(err, errlen, -EIO, "close: %s", wiredtiger_strerror(rc)) : 0;
}

static int wt_thread_open(void *p, ruma_kv_thread **out, char *err, size_t errlen)
{
	struct store *s = p;
	struct thread *t = calloc(1, sizeof(*t));
	if (!t)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	int rc = s->conn->open_session(s->conn, NULL, "isolation=snapshot", &t->session);
	if (!rc && (rc = t->session->open_cursor(t->session, TABLE, NULL, NULL, &t->cur)))
		t->session->close(t->session, NULL);
	if (rc) {
		free(t);
		return ruma_kv_open_fail(err, errlen, -EIO, "session: %s", wiredtiger_strerror(rc));
	}
	*out = &t->base;
	return 0;
}

static void wt_thread_close(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	t->session->close(t->session, NULL); /* closes the cursor too */
	free(t);
}

/* One call: the cursor operation commits itself (WiredTiger's auto-commit);
 * else an explicit transaction. */
static int wt_begin(ruma_kv_thread *th, unsigned flags)
{
	struct thread *t = (struct thread *)th;
	t->explicit_txn = !(flags & RUMA_KV_ONE);
	if (!t->explicit_txn)
		return 0;
	int rc = wt_rc(th, t->session->begin_transaction(t->session, NULL), "begin");
	t->explicit_txn = !rc;
	return rc;
}

static int wt_commit(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	t->cur->reset(t->cur);
	if (!t->explicit_txn)
		return 0;
	t->explicit_txn = false;
	/* a commit that fails has rolled the transaction back */
	return wt_rc(th, t->session->commit_transaction(t->session, NULL), "commit");
}

static void wt_abort(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	t->cur->reset(t->cur);
	if (t->explicit_txn)
		(void)t->session->rollback_transaction(t->session, NULL);
	t->explicit_txn = false;
}

static int wt_get(ruma_kv_thread *th, const void *key, size_t klen, const void **val,
		  size_t *vlen)
{
	struct thread *t = (struct thread *)th;
	WT_ITEM k = { .data = key, .size = klen }, v;
	t->cur->set_key(t->cur, &k);
	int rc = t->cur->search(t->cur);
	if (!rc && !(rc = t->cur->get_value(t->cur, &v))) {
		*val = v.data;
		*vlen = v.size;
	}
	return wt_rc(th, rc, "get");
}

static int wt_put(ruma_kv_thread *th, const void *key, size_t klen, const void *val,
		  size_t vlen)
{
	struct thread *t = (struct thread *)th;
	WT_ITEM k = { .data = key, .size = klen }, v = { .data = val, .size = vlen };
	t->cur->set_key(t->cur, &k);
	t->cur->set_value(t->cur, &v);
	return wt_rc(th, t->cur->insert(t->cur), "put");
}

static int wt_del(ruma_kv_thread *th, const void *key, size_t klen)
{
	struct thread *t = (struct thread *)th;
	WT_ITEM k = { .data = key, .size = klen };
	t->cur->set_key(t->cur, &k);
	return wt_rc(th, t->cur->remove(t->cur), "del");
}

/* The cursor at the scan's first entry: a WiredTiger code. */
static int scan_start(WT_CURSOR *c, const void *key, size_t klen, bool reverse)
{
	c->reset(c);
	if (!key)
		return reverse ? c->prev(c) : c->next(c);
	WT_ITEM k = { .data = key, .size = klen };
	int exact;
	c->set_key(c, &k);
	int rc = c->search_near(c, &exact);
	if (rc)
		return rc;
	if (!reverse && exact < 0)
		return c->next(c);
	if (reverse && exact > 0)
		return c->prev(c);
	return 0;
}

static int64_t wt_scan(ruma_kv_thread *th, const void *key, size_t klen, unsigned n,
		       bool reverse, ruma_kv_visit fn, void *ctx)
{
	struct thread *t = (struct thread *)th;
	WT_CURSOR *c = t->cur;
	int64_t seen = 0;
	int rc;
	/* a scan is many cursor calls: it gets a transaction (one snapshot)
	 * even as a one-call operation */
	if (!t->explicit_txn) {
		if ((rc = t->session->begin_transaction(t->session, NULL)))
			return wt_rc(th, rc, "begin");
		t->explicit_txn = true;
	}
	for (rc = n ? scan_start(c, key, klen, reverse) : WT_NOTFOUND; !rc;
	     rc = reverse ? c->prev(c) : c->next(c)) {
		WT_ITEM k, v;
		if ((rc = c->get_key(c, &k)) || (rc = c->get_value(c, &v)))
			break;
		seen++;
		if (!fn(ctx, k.data, k.size, v.data, v.size) || (unsigned)seen == n)
			break;
	}
	c->reset(c);
	if (rc && rc != WT_NOTFOUND)
		return wt_rc(th, rc, "scan");
	return seen;
}

const ruma_kv_system ruma_kv_sys_wiredtiger = {
	.name = "wiredtiger",
	.version = wt_version,
	.open = wt_open,
	.close = wt_close,
	.thread_open = wt_thread_open,
	.thread_close = wt_thread_close,
	.begin = wt_begin,
	.commit = wt_commit,
	.abort = wt_abort,
	.get = wt_get,
	.put = wt_put,
	.del = wt_del,
	.scan = wt_scan,
};
#else
/* WiredTiger not built (-DRUMA_PEERS=OFF): this file compiles to nothing. */
typedef int ruma_kv_no_wiredtiger;
#endif
