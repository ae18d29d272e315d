/*
 * sys_rows.c — `ruma-rows`: a large value as rows of ruma's store, the way
 * a store without BLOBs keeps one, and the design BLOBs in extents are
 * measured against: every payload byte goes through the log.
 *
 * Object id is the rows under the 12-byte keys id (8 bytes, big-endian)
 * and a chunk number (4 bytes, big-endian): chunk 0 holds the length (8
 * bytes), chunks 1..n the payload in slices of RUMA_BLOB_ROW bytes (1011:
 * the largest value that stays inline beside a 12-byte key).  A put,
 * an overwrite and a delete are each one transaction over all the rows (an
 * overwrite deletes the chunks the new length no longer needs); a get reads
 * the length and then the chunks with a cursor, copying them into the
 * thread's buffer.
 *
 * Syscalls: none of its own (the store's, through db.h).
 */
#include "bench/blob/rumadb.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define KEY 12u
/* The largest row that stays inline: an inline value whose first byte is
 * 0xFE or 0xFF is stored behind one escape byte (docs/blob.md), and key,
 * value and that byte must fit RUMA_BTREE_MAX_ENTRY; a longer row would be
 * a BLOB, which is what this system must not use. */
#define RUMA_BLOB_ROW (RUMA_BTREE_MAX_ENTRY - KEY - 1u)

struct thread {
	ruma_blob_thread base;
	ruma_blob_db *s;
	unsigned char *buf;
	size_t cap;
};

static void make_key(unsigned char key[KEY], uint64_t id, uint32_t chunk)
{
	for (unsigned i = 0; i < 8; i++)
		key[i] = (unsigned char)(id >> (56 - 8 * i));
	for (unsigned i = 0; i < 4; i++)
		key[8 + i] = (unsigned char)(chunk >> (24 - 8 * i));
}

static uint64_t chunks_of(uint64_t len)
{
	return (len + RUMA_BLOB_ROW - 1) / RUMA_BLOB_ROW;
}

static int rows_open(const ruma_blob_conf *c, void **out, char *err, size_t errlen)
{
	return ruma_blob_db_open(c, (ruma_blob_db **)out, err, errlen);
}

static int rows_close(void *p, char *err, size_t errlen)
{
	return ruma_blob_db_close(p, err, errlen);
}

static int rows_thread_open(void *p, ruma_blob_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t)
		return ruma_blob_open_fail(err, errlen, -ENOMEM, "out of memory");
	t->s = p;
	*out = &t->base;
	return 0;
}

static void rows_thread_close(ruma_blob_thread *th)
{
	struct thread *t = (struct thread *)th;
	if (t)
		ruma_blob_buffer_free(t->buf, t->s->conf.huge_buffers);
	free(t);
}

/* The length of object id (chunk 0) read in txn: 0, RUMA_ENOTFOUND or an error. */
static int read_len(struct thread *t, ruma_db_txn *txn, uint64_t id, uint64_t *len)
{
	unsigned char k[KEY];
	make_key(k, id, 0);
	ruma_val key = { KEY, k }, v;
	int rc = ruma_db_get(txn, t->s->table, &key, &v);
	if (rc == RUMA_ENOTFOUND)
		return rc;
	if (rc)
		return ruma_blob_fail(&t->base, rc, "object %" PRIu64 ": get: %s", id,
				      ruma_strerror(rc));
	if (v.len != 8)
		return ruma_blob_fail(&t->base, -EIO, "object %" PRIu64 ": a length row of %zu "
				      "bytes", id, v.len);
	memcpy(len, v.data, 8);
	return 0;
}

static int put_row(struct thread *t, ruma_db_txn *txn, uint64_t id, uint32_t chunk,
		   const void *data, size_t len)
{
	unsigned char k[KEY];
	make_key(k, id, chunk);
	ruma_val key = { KEY, k }, v = { len, (void *)data };
	int rc = ruma_db_put(txn, t->s->table, &key, &v, 0);
	return rc ? ruma_blob_fail(&t->base, rc, "object %" PRIu64 ": put of row %" PRIu32
				   ": %s", id, chunk, ruma_strerror(rc)) : 0;
}

/* Delete the rows chunk from .. to (inclusive) of object id. */
static int del_rows(struct thread *t, ruma_db_txn *txn, uint64_t id, uint64_t from, uint64_t to)
{
	unsigned char k[KEY];
	for (uint64_t c = from; c <= to; c++) {
		make_key(k, id, (uint32_t)c);
		ruma_val key = { KEY, k };
		int rc = ruma_db_del(txn, t->s->table, &key);
		if (rc)
			return ruma_blob_fail(&t->base, rc, "object %" PRIu64 ": delete of row %"
					      PRIu64 ": %s", id, c, ruma_strerror(rc));
	}
	return 0;
}

static int put_body(struct thread *t, ruma_db_txn *txn, uint64_t id, const void *data,
		    size_t len)
{
	uint64_t old = 0, l = len;
	int rc = read_len(t, txn, id, &old);
	if (rc && rc != RUMA_ENOTFOUND)
		return rc;
	if ((rc = put_row(t, txn, id, 0, &l, 8)))
		return rc;
	uint64_t n = chunks_of(len);
	for (uint64_t c = 0; c < n; c++) {
		size_t off = (size_t)(c * RUMA_BLOB_ROW);
		size_t k = len - off < RUMA_BLOB_ROW ? len - off : RUMA_BLOB_ROW;
		if ((rc = put_row(t, txn, id, (uint32_t)(c + 1), (const char *)data + off, k)))
			return rc;
	}
	return chunks_of(old) > n ? del_rows(t, txn, id, n + 1, chunks_of(old)) : 0;
}

static int too_big(ruma_blob_thread *th, uint64_t id, size_t len)
{
	if (chunks_of(len) < UINT32_MAX)
		return 0;
	return ruma_blob_fail(th, RUMA_ETOOBIG, "object %" PRIu64 ": %zu bytes: more rows than a "
			      "4-byte chunk number counts", id, len);
}

static int rows_put(ruma_blob_thread *th, uint64_t id, const void *data, size_t len)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	int rc = too_big(th, id, len);
	if (!rc)
		rc = ruma_blob_db_begin(t->s, th, 0, &txn);
	return rc ? rc : ruma_blob_db_end(th, txn, put_body(t, txn, id, data, len));
}

static int grow(struct thread *t, size_t len)
{
	void *b = t->buf;
	if (ruma_blob_buffer(&b, &t->cap, len, t->s->conf.huge_buffers))
		return ruma_blob_fail(&t->base, -ENOMEM, "out of memory for %zu bytes", len);
	t->buf = b;
	return 0;
}

/* The chunks of an object of len bytes, in order, into t->buf. */
static int read_chunks(struct thread *t, ruma_db_txn *txn, uint64_t id, uint64_t len)
{
	ruma_db_cursor *c;
	unsigned char k[KEY];
	int rc = ruma_db_cursor_open(txn, t->s->table, &c);
	if (rc)
		return ruma_blob_fail(&t->base, rc, "cursor: %s", ruma_strerror(rc));
	make_key(k, id, 1);
	ruma_val key = { KEY, k }, rk, v;
	uint64_t off = 0;
	for (rc = len ? ruma_db_cursor_seek(c, &key) : RUMA_ENOTFOUND; !rc && off < len;
	     rc = ruma_db_cursor_next(c)) {
		if ((rc = ruma_db_cursor_get(c, &rk, &v)))
			break;
		make_key(k, id, (uint32_t)(off / RUMA_BLOB_ROW + 1));
		size_t want = len - off < RUMA_BLOB_ROW ? (size_t)(len - off) : RUMA_BLOB_ROW;
		if (rk.len != KEY || memcmp(rk.data, k, KEY) || v.len != want) {
			rc = -EIO;
			break;
		}
		memcpy(t->buf + off, v.data, v.len);
		off += v.len;
	}
	ruma_db_cursor_close(c);
	if (off == len)
		return 0;
	return ruma_blob_fail(&t->base, rc && rc != -EIO ? rc : -EIO, "object %" PRIu64
			      ": %" PRIu64 " of %" PRIu64 " bytes found in its rows (%s)", id, off,
			      len, rc ? ruma_strerror(rc) : "a row missing");
}

static int rows_get(ruma_blob_thread *th, uint64_t id, const void **data, size_t *len)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	uint64_t l = 0;
	int rc = ruma_blob_db_begin(t->s, th, RUMA_DB_RDONLY, &txn);
	if (rc)
		return rc;
	if (!(rc = read_len(t, txn, id, &l)) && !(rc = grow(t, (size_t)l)))
		rc = read_chunks(t, txn, id, l);
	(void)ruma_db_abort(txn); /* a read-only transaction: nothing to commit */
	if (!rc) {
		*data = t->buf;
		*len = (size_t)l;
	}
	return rc;
}

static int del_body(struct thread *t, ruma_db_txn *txn, uint64_t id)
{
	uint64_t l;
	int rc = read_len(t, txn, id, &l);
	return rc ? rc : del_rows(t, txn, id, 0, chunks_of(l));
}

static int rows_del(ruma_blob_thread *th, uint64_t id)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	int rc = ruma_blob_db_begin(t->s, th, 0, &txn);
	return rc ? rc : ruma_blob_db_end(th, txn, del_body(t, txn, id));
}

static int rows_batch(ruma_blob_thread *th, size_t n, const uint64_t *ids,
		      const void *const *data, const size_t *lens)
{
	struct thread *t = (struct thread *)th;
	ruma_db_txn *txn;
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = data[i] ? too_big(th, ids[i], lens[i]) : 0;
	if (!rc)
		rc = ruma_blob_db_begin(t->s, th, 0, &txn);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < n; i++)
		rc = data[i] ? put_body(t, txn, ids[i], data[i], lens[i]) : del_body(t, txn, ids[i]);
	return ruma_blob_db_end(th, txn, rc);
}

static int rows_settle(void *p, bool cold, char *err, size_t errlen)
{
	(void)cold; /* a reopened store's pool is empty either way */
	return ruma_blob_db_settle(p, err, errlen);
}

static int rows_check(void *p, char *err, size_t errlen)
{
	return ruma_blob_db_check(p, err, errlen);
}

const ruma_blob_system ruma_blob_sys_rows = {
	.name = "ruma-rows",
	.what = "ruma's store, the value split into rows of at most 1 KB (through the log)",
	.open = rows_open,
	.close = rows_close,
	.thread_open = rows_thread_open,
	.thread_close = rows_thread_close,
	.put = rows_put,
	.batch = rows_batch,
	.get = rows_get,
	.del = rows_del,
	.settle = rows_settle,
	.check = rows_check,
};
