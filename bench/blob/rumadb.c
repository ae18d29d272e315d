/*
 * rumadb.c — ruma's store as the BLOB adapters open it (rumadb.h).
 *
 * The pool is --memory-limit; with a simulated power loss armed (crash
 * mode) the buffer manager writes with pwrite, which the simulation
 * tracks (it does not track io_uring).  Durability sync: commits wait for
 * the log; none: RUMA_DB_ASYNC commits.
 *
 * Syscalls: none of its own (the store's, through db.h).
 */
#include "bench/blob/rumadb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(void *ctx, const char *line)
{
	ruma_blob_db *s = ctx;
	snprintf(s->last, sizeof(s->last), "%s", line);
	if (s->conf.say)
		s->conf.say(s->conf.say_ctx, line);
	else
		fprintf(stderr, "ruma blob: ruma: %s\n", line);
}

static int open_db(ruma_blob_db *s, char *err, size_t errlen)
{
	ruma_db_options o;
	ruma_bm_config bm;
	ruma_db_options_default(&o);
	o.pool_bytes = s->conf.memory;
	o.message = say;
	o.message_ctx = s;
	if (s->conf.powerloss) {
		ruma_bm_config_default(&bm);
		bm.write = RUMA_BM_WRITE_PWRITE;
		o.advanced = &bm;
	}
	int rc = ruma_db_open(s->path, &o, &s->db);
	if (rc)
		return ruma_blob_open_fail(err, errlen, rc, "%s: %s", s->path, ruma_strerror(rc));
	ruma_db_txn *txn;
	if ((rc = ruma_db_begin(s->db, 0, &txn)))
		return ruma_blob_open_fail(err, errlen, rc, "begin: %s", ruma_strerror(rc));
	rc = ruma_db_table_open(txn, "blob", RUMA_DB_CREATE, &s->table);
	int rc2 = rc ? ruma_db_abort(txn) : ruma_db_commit(txn);
	if (rc || rc2)
		return ruma_blob_open_fail(err, errlen, rc ? rc : rc2, "table blob: %s",
					   ruma_strerror(rc ? rc : rc2));
	return 0;
}

int ruma_blob_db_open(const ruma_blob_conf *c, ruma_blob_db **out, char *err, size_t errlen)
{
	ruma_blob_db *s = calloc(1, sizeof(*s));
	if (!s)
		return ruma_blob_open_fail(err, errlen, -ENOMEM, "out of memory");
	s->conf = *c;
	snprintf(s->path, sizeof(s->path), "%s/store", c->dir);
	int rc = open_db(s, err, errlen);
	if (rc) {
		ruma_db_close(s->db);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int ruma_blob_db_close(ruma_blob_db *s, char *err, size_t errlen)
{
	if (!s)
		return 0;
	int rc = ruma_db_close(s->db);
	free(s);
	return rc ? ruma_blob_open_fail(err, errlen, rc, "close: %s", ruma_strerror(rc)) : 0;
}

int ruma_blob_db_settle(ruma_blob_db *s, char *err, size_t errlen)
{
	int rc = ruma_db_close(s->db);
	s->db = NULL;
	s->table = NULL;
	if (rc)
		return ruma_blob_open_fail(err, errlen, rc, "close: %s", ruma_strerror(rc));
	return open_db(s, err, errlen);
}

/* Visit every key of the table (no value: a BLOB's bytes stay on disk). */
static int walk_keys(ruma_db_txn *x, ruma_db_table *t)
{
	ruma_db_cursor *c;
	int rc = ruma_db_cursor_open(x, t, &c);
	if (rc)
		return rc;
	ruma_val k;
	for (rc = ruma_db_cursor_first(c); !rc; rc = ruma_db_cursor_next(c))
		if ((rc = ruma_db_cursor_get(c, &k, NULL)))
			break;
	ruma_db_cursor_close(c);
	return rc == RUMA_ENOTFOUND ? 0 : rc;
}

int ruma_blob_db_load_index(ruma_blob_db *s, char *err, size_t errlen)
{
	ruma_db_txn *x;
	int rc = ruma_db_begin(s->db, RUMA_DB_RDONLY, &x);
	if (!rc) {
		rc = walk_keys(x, s->table);
		(void)ruma_db_abort(x);
	}
	return rc ? ruma_blob_open_fail(err, errlen, rc, "reading the keys: %s",
					ruma_strerror(rc)) : 0;
}

int ruma_blob_db_check(ruma_blob_db *s, char *err, size_t errlen)
{
	s->last[0] = '\0';
	int rc = ruma_db_check(s->db);
	return rc ? ruma_blob_open_fail(err, errlen, rc, "store check: %s (%s)",
					ruma_strerror(rc), s->last) : 0;
}

int ruma_blob_db_begin(ruma_blob_db *s, ruma_blob_thread *th, unsigned flags, ruma_db_txn **txn)
{
	int rc = ruma_db_begin(s->db, flags | (s->conf.sync ? 0 : RUMA_DB_ASYNC), txn);
	return rc ? ruma_blob_fail(th, rc, "begin: %s", ruma_strerror(rc)) : 0;
}

int ruma_blob_db_end(ruma_blob_thread *th, ruma_db_txn *txn, int rc)
{
	if (rc) {
		(void)ruma_db_abort(txn);
		return rc;
	}
	rc = ruma_db_commit(txn);
	return rc ? ruma_blob_fail(th, rc, "commit: %s", ruma_strerror(rc)) : 0;
}
