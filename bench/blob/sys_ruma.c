/*
 * sys_ruma.c — `ruma`: large values as BLOBs of ruma's store (db.h, issue
 * 35): a put is ruma_db_put of the whole value (one extent, written once,
 * out of place, never into the log), a streaming put
 * ruma_db_blob_create with the size as its hint and ruma_db_blob_append
 * of the pieces, an append ruma_db_blob_open and ruma_db_blob_append;
 * each one transaction.  A get is ruma_db_get in a read-only transaction
 * kept open until the thread's next call: the pointer it hands back is
 * valid until then (no copy for a value of one extent).
 *
 * `ruma-read` is the same store read as a file is: a get is
 * ruma_db_blob_read of the whole value into a page-aligned buffer the
 * thread keeps, in a read-only RUMA_DB_NOFILL transaction, so a value whose
 * pages are not in the pool is read around it (as O_DIRECT would) and one
 * that is there is copied from it.
 *
 * Object id is the key of 8 bytes, big-endian, in table "blob".
 *
 * Syscalls: none of its own (the store's, through db.h).
 */
#include "bench/blob/rumadb.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct thread {
	ruma_blob_thread base;
	ruma_blob_db *s;
	ruma_db_txn *reading; /* the last get's transaction, ended at the next call */
	void *buf;            /* ruma-read's buffer (ruma_blob_buffer) */
	size_t cap;
};

static void make_key(unsigned char key[8], uint64_t id)
{
	for (unsigned i = 0; i < 8; i++)
		key[i] = (unsigned char)(id >> (56 - 8 * i));
}

static int b_open(const ruma_blob_conf *c, void **out, char *err, size_t errlen)
{
	return ruma_blob_db_open(c, (ruma_blob_db **)out, err, errlen);
}

static int b_close(void *p, char *err, size_t errlen)
{
	return ruma_blob_db_close(p, err, errlen);
}

static int b_thread_open(void *p, ruma_blob_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t)
		return ruma_blob_open_fail(err, errlen, -ENOMEM, "out of memory");
	t->s = p;
	*out = &t->base;
	return 0;
}

/* End the last get's transaction. */
static void end_read(struct thread *t)
{
	if (t->reading)
		(void)ruma_db_abort(t->reading);
	t->reading = NULL;
}

static void b_thread_close(ruma_blob_thread *th)
{
	struct thread *t = (struct thread *)th;
	if (t) {
		end_read(t);
		ruma_blob_buffer_free(t->buf, t->s->conf.huge_buffers);
	}
	free(t);
}

static int fail(ruma_blob_thread *th, int rc, const char *what, uint64_t id)
{
	if (!rc || rc == RUMA_ENOTFOUND)
		return rc;
	return ruma_blob_fail(th, rc, "object %" PRIu64 ": %s: %s", id, what, ruma_strerror(rc));
}

/* The last get ended, id's key made, a transaction begun. */
static int begin(struct thread *t, uint64_t id, unsigned char k[8], ruma_db_txn **txn)
{
	end_read(t);
	make_key(k, id);
	return ruma_blob_db_begin(t->s, &t->base, 0, txn);
}

static int b_put(ruma_blob_thread *th, uint64_t id, const void *data, size_t len)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	unsigned char k[8];
	ruma_val key = { 8, k }, v = { len, (void *)data };
	int rc = begin(t, id, k, &txn);
	if (rc)
		return rc;
	rc = fail(th, ruma_db_put(txn, t->s->table, &key, &v, 0), "put", id);
	return ruma_blob_db_end(th, txn, rc);
}

/* Append data in pieces of piece bytes to b, then close it. */
static int feed(ruma_blob_thread *th, ruma_db_blob *b, uint64_t id, const void *data,
		size_t len, size_t piece)
{
	int rc = 0;
	for (size_t off = 0; !rc && off < len; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		rc = fail(th, ruma_db_blob_append(b, (const char *)data + off, n), "append", id);
	}
	int rc2 = fail(th, ruma_db_blob_close(b), "blob close", id);
	return rc ? rc : rc2;
}

/* A handle on object id (a new value of size hint len, or the present one
 * when append) fed data in pieces, in one transaction. */
static int stream(ruma_blob_thread *th, uint64_t id, bool append, const void *data, size_t len,
		  size_t piece)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	ruma_db_blob *b;
	unsigned char k[8];
	ruma_val key = { 8, k };
	int rc = begin(t, id, k, &txn);
	if (rc)
		return rc;
	rc = append ? fail(th, ruma_db_blob_open(txn, t->s->table, &key, &b), "blob open", id)
		    : fail(th, ruma_db_blob_create(txn, t->s->table, &key, len, &b), "blob create",
			   id);
	if (!rc)
		rc = feed(th, b, id, data, len, piece ? piece : (len ? len : 1));
	return ruma_blob_db_end(th, txn, rc);
}

static int b_put_stream(ruma_blob_thread *th, uint64_t id, const void *data, size_t len,
			size_t piece)
{
	return stream(th, id, false, data, len, piece);
}

static int b_append(ruma_blob_thread *th, uint64_t id, const void *data, size_t len)
{
	return stream(th, id, true, data, len, len);
}

static int b_batch(ruma_blob_thread *th, size_t n, const uint64_t *ids, const void *const *data,
		   const size_t *lens)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	unsigned char k[8];
	ruma_val key = { 8, k };
	int rc = begin(t, ids[0], k, &txn);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++) {
		ruma_val v = { lens[i], (void *)data[i] };
		make_key(k, ids[i]);
		rc = data[i] ? fail(th, ruma_db_put(txn, t->s->table, &key, &v, 0), "put", ids[i])
			     : fail(th, ruma_db_del(txn, t->s->table, &key), "delete", ids[i]);
	}
	return ruma_blob_db_end(th, txn, rc);
}

static int b_get(ruma_blob_thread *th, uint64_t id, const void **data, size_t *len)
{
	struct thread *t = (struct thread *)th;
	unsigned char k[8];
	end_read(t);
	make_key(k, id);
	ruma_val key = { 8, k }, v;
	int rc = ruma_blob_db_begin(t->s, th, RUMA_DB_RDONLY, &t->reading);
	if (rc)
		return rc;
	rc = fail(th, ruma_db_get(t->reading, t->s->table, &key, &v), "get", id);
	if (rc) {
		end_read(t);
		return rc;
	}
	*data = v.data;
	*len = v.len;
	return 0;
}

/* The thread's buffer, at least len bytes (contents not kept). */
static int buffer(struct thread *t, size_t len)
{
	return ruma_blob_buffer(&t->buf, &t->cap, len, t->s->conf.huge_buffers);
}

static int read_whole(struct thread *t, const ruma_val *key, uint64_t id, const void **data,
		      size_t *len)
{
	ruma_db_blob *b;
	int rc = fail(&t->base, ruma_db_blob_open(t->reading, t->s->table, key, &b), "blob open",
		      id);
	if (rc)
		return rc;
	size_t size = (size_t)ruma_db_blob_size(b), got = 0;
	rc = buffer(t, size ? size : 1);
	rc = rc ? ruma_blob_fail(&t->base, rc, "object %" PRIu64 ": out of memory", id)
		: fail(&t->base, ruma_db_blob_read(b, 0, t->buf, size, &got), "read", id);
	int rc2 = fail(&t->base, ruma_db_blob_close(b), "blob close", id);
	if (!rc && got != size)
		rc = ruma_blob_fail(&t->base, -EIO, "object %" PRIu64 ": %zu of %zu bytes read",
				    id, got, size);
	*data = t->buf;
	*len = size;
	return rc ? rc : rc2;
}

static int b_get_read(ruma_blob_thread *th, uint64_t id, const void **data, size_t *len)
{
	struct thread *t = (struct thread *)th;
	unsigned char k[8];
	end_read(t);
	make_key(k, id);
	ruma_val key = { 8, k };
	int rc = ruma_blob_db_begin(t->s, th, RUMA_DB_RDONLY | RUMA_DB_NOFILL, &t->reading);
	if (!rc)
		rc = read_whole(t, &key, id, data, len);
	end_read(t);
	return rc;
}

static int b_del(ruma_blob_thread *th, uint64_t id)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	unsigned char k[8];
	ruma_val key = { 8, k };
	int rc = begin(t, id, k, &txn);
	if (rc)
		return rc;
	rc = fail(th, ruma_db_del(txn, t->s->table, &key), "delete", id);
	return ruma_blob_db_end(th, txn, rc);
}

/* The store closed and reopened (its pool empty), then its B-tree read
 * back: the objects are cold, their index is not (see rumadb.h). */
static int b_settle(void *p, bool cold, char *err, size_t errlen)
{
	int rc = ruma_blob_db_settle(p, err, errlen);
	return rc || !cold ? rc : ruma_blob_db_load_index(p, err, errlen);
}

static int b_check(void *p, char *err, size_t errlen)
{
	return ruma_blob_db_check(p, err, errlen);
}

const ruma_blob_system ruma_blob_sys_ruma = {
	.name = "ruma",
	.what = "ruma's store, BLOBs in extents (db.h: written once, never through the log)",
	.open = b_open,
	.close = b_close,
	.thread_open = b_thread_open,
	.thread_close = b_thread_close,
	.put = b_put,
	.put_stream = b_put_stream,
	.append = b_append,
	.batch = b_batch,
	.get = b_get,
	.del = b_del,
	.settle = b_settle,
	.check = b_check,
};

const ruma_blob_system ruma_blob_sys_ruma_read = {
	.name = "ruma-read",
	.what = "ruma's store, gets copied into the thread's buffer by ruma_db_blob_read "
		"without filling the pool (RUMA_DB_NOFILL)",
	.open = b_open,
	.close = b_close,
	.thread_open = b_thread_open,
	.thread_close = b_thread_close,
	.put = b_put,
	.put_stream = b_put_stream,
	.append = b_append,
	.batch = b_batch,
	.get = b_get_read,
	.del = b_del,
	.settle = b_settle,
	.check = b_check,
};
