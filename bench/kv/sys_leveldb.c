/*
 * sys_leveldb.c — LevelDB (libleveldb-dev) through its C API
 * (leveldb/c.h) behind the `ruma kv` adapter interface: one database in
 * the store directory; a transaction is a write batch applied at commit
 * (reads go to the database; an operation of this driver never reads its
 * own writes), scans are iterators.
 *
 * Configuration, as LevelDB's documentation (doc/index.md: Performance,
 * Cache, Filters, Compression) gives it: an LRU block cache of
 * --memory-limit, a 10-bit Bloom filter policy, compression off
 * (kNoCompression), write buffer min(64 MiB, memory / 4).  Durability
 * sync: WriteOptions.sync (the log is fsynced before a write returns);
 * none: the log is written, not synced.
 *
 * What it cannot honour: direct I/O (LevelDB has none: its files go
 * through the kernel's page cache) and a memory bound of --memory-limit
 * in full (the memtables and the table cache of open files are memory
 * beyond the block cache).
 */
#ifdef RUMA_KV_HAVE_LEVELDB
#include "bench/kv/kv.h"

#include <leveldb/c.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store {
	leveldb_t *db;
	leveldb_options_t *opt;
	leveldb_cache_t *cache;
	leveldb_filterpolicy_t *filter;
	leveldb_writeoptions_t *wo;
	leveldb_readoptions_t *ro;
};

struct thread {
	ruma_kv_thread base;
	struct store *s;
	leveldb_writebatch_t *batch;
	unsigned writes;  /* in the batch */
	char *got;        /* the last get's value (malloc'ed by LevelDB) */
};

static const char *ldb_version(void)
{
	static char v[32];
	snprintf(v, sizeof(v), "%d.%d", leveldb_major_version(), leveldb_minor_version());
	return v;
}

/* An error string of the C API as a failure (the string freed). */
static int ldb_fail(ruma_kv_thread *th, char *e, const char *what)
{
	int rc = ruma_kv_fail(th, -EIO, "leveldb %s: %s", what, e);
	leveldb_free(e);
	return rc;
}

static void free_store(struct store *s)
{
	if (s->db)
		leveldb_close(s->db);
	if (s->opt)
		leveldb_options_destroy(s->opt);
	if (s->cache)
		leveldb_cache_destroy(s->cache);
	if (s->filter)
		leveldb_filterpolicy_destroy(s->filter);
	if (s->wo)
		leveldb_writeoptions_destroy(s->wo);
	if (s->ro)
		leveldb_readoptions_destroy(s->ro);
	free(s);
}

static int ldb_open(const ruma_kv_conf *c, void **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	char *e = NULL;
	if (!s)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	s->opt = leveldb_options_create();
	s->cache = leveldb_cache_create_lru((size_t)c->memory);
	s->filter = leveldb_filterpolicy_create_bloom(10);
	leveldb_options_set_create_if_missing(s->opt, 1);
	leveldb_options_set_cache(s->opt, s->cache);
	leveldb_options_set_filter_policy(s->opt, s->filter);
	leveldb_options_set_compression(s->opt, leveldb_no_compression);
	uint64_t wb = c->memory / 4 < (64ull << 20) ? c->memory / 4 : 64ull << 20;
	leveldb_options_set_write_buffer_size(s->opt, (size_t)wb);
	s->db = leveldb_open(s->opt, c->dir, &e);
	if (!s->db) {
		ruma_kv_open_fail(err, errlen, -EIO, "%s: %s", c->dir, e);
		leveldb_free(e);
		free_store(s);
		return -EIO;
	}
	s->wo = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(s->wo, c->sync);
	s->ro = leveldb_readoptions_create();
	c->note(c->note_ctx, "direct_io", "LevelDB has no direct I/O: its files go through the "
		"kernel's page cache");
	c->note(c->note_ctx, "memory", "the memtables (min(64 MiB, memory/4) each) and the "
		"table cache of open files are memory beyond the block cache");
	*out = s;
	return 0;
}

static int ldb_close(void *p, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	free_store(p);
	return 0;
}

static int ldb_thread_open(void *p, ruma_kv_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t || !(t->batch = leveldb_writebatch_create())) {
		free(t);
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	}
	t->s = p;
	*out = &t->base;
	return 0;
}

static void drop_got(struct thread *t)
{
	leveldb_free(t->got);
	t->got = NULL;
}

static void ldb_thread_close(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	drop_got(t);
	leveldb_writebatch_destroy(t->batch);
	free(t);
}

static int ldb_begin(ruma_kv_thread *th, unsigned flags)
{
	struct thread *t = (struct thread *)th;
	(void)flags;
	leveldb_writebatch_clear(t->batch);
	t->writes = 0;
	return 0;
}

static int ldb_commit(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	char *e = NULL;
	drop_got(t);
	if (!t->writes)
		return 0;
	leveldb_write(t->s->db, t->s->wo, t->batch, &e);
	leveldb_writebatch_clear(t->batch);
	t->writes = 0;
	return e ? ldb_fail(th, e, "write") : 0;
}

static void ldb_abort(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	drop_got(t);
	leveldb_writebatch_clear(t->batch);
	t->writes = 0;
}

static int ldb_get(ruma_kv_thread *th, const void *key, size_t klen, const void **val,
		   size_t *vlen)
{
	struct thread *t = (struct thread *)th;
	char *e = NULL;
	drop_got(t);
	t->got = leveldb_get(t->s->db, t->s->ro, key, klen, vlen, &e);
	if (e)
		return ldb_fail(th, e, "get");
	if (!t->got)
		return RUMA_ENOTFOUND;
	*val = t->got;
	return 0;
}

static int ldb_put(ruma_kv_thread *th, const void *key, size_t klen, const void *val,
		   size_t vlen)
{
	struct thread *t = (struct thread *)th;
	leveldb_writebatch_put(t->batch, key, klen, val, vlen);
	t->writes++;
	return 0;
}

static int ldb_del(ruma_kv_thread *th, const void *key, size_t klen)
{
	struct thread *t = (struct thread *)th;
	leveldb_writebatch_delete(t->batch, key, klen);
	t->writes++;
	return 0;
}

/* The iterator at the scan's first entry (reverse: the last key <= key). */
static void scan_start(leveldb_iterator_t *it, const void *key, size_t klen, bool reverse)
{
	if (!key) {
		if (reverse)
			leveldb_iter_seek_to_last(it);
		else
			leveldb_iter_seek_to_first(it);
		return;
	}
	leveldb_iter_seek(it, key, klen);
	if (!reverse)
		return;
	if (!leveldb_iter_valid(it)) {
		leveldb_iter_seek_to_last(it);
		return;
	}
	size_t kl;
	const char *k = leveldb_iter_key(it, &kl);
	if (kl != klen || memcmp(k, key, klen))
		leveldb_iter_prev(it);
}

static int64_t ldb_scan(ruma_kv_thread *th, const void *key, size_t klen, unsigned n,
			bool reverse, ruma_kv_visit fn, void *ctx)
{
	struct thread *t = (struct thread *)th;
	leveldb_iterator_t *it = leveldb_create_iterator(t->s->db, t->s->ro);
	int64_t seen = 0;
	char *e = NULL;
	if (n)
		scan_start(it, key, klen, reverse);
	while (n && leveldb_iter_valid(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl), *v = leveldb_iter_value(it, &vl);
		seen++;
		if (!fn(ctx, k, kl, v, vl) || (unsigned)seen == n)
			break;
		if (reverse)
			leveldb_iter_prev(it);
		else
			leveldb_iter_next(it);
	}
	leveldb_iter_get_error(it, &e);
	leveldb_iter_destroy(it);
	return e ? ldb_fail(th, e, "scan") : seen;
}

const ruma_kv_system ruma_kv_sys_leveldb = {
	.name = "leveldb",
	.version = ldb_version,
	.open = ldb_open,
	.close = ldb_close,
	.thread_open = ldb_thread_open,
	.thread_close = ldb_thread_close,
	.begin = ldb_begin,
	.commit = ldb_commit,
	.abort = ldb_abort,
	.get = ldb_get,
	.put = ldb_put,
	.del = ldb_del,
	.scan = ldb_scan,
};
#else
/* LevelDB not built (-DRUMA_PEERS=OFF): this file compiles to nothing. */
typedef int ruma_kv_no_leveldb;
#endif
