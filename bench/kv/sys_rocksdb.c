/*
 * sys_rocksdb.c — RocksDB (librocksdb-dev) through its C API (rocksdb/c.h)
 * behind the `ruma kv` adapter interface: one database in the store
 * directory; a transaction is a write batch applied at commit (reads go
 * to the database; an operation of this driver never reads its own
 * writes), scans are iterators.
 *
 * Configuration, as RocksDB's wiki recommends (Setup Options and Basic
 * Tuning; Block Cache; Direct IO; Compression): a block-based table with
 * an LRU block cache of --memory-limit, index and filter blocks cached in
 * it (so that they count against it), a 10-bit full Bloom filter;
 * IncreaseParallelism over the machine's CPUs for flushes and compactions;
 * compression off (kNoCompression, every level); use_direct_reads and
 * use_direct_io_for_flush_and_compaction (dropped, with a note, where the
 * file system refuses O_DIRECT); write buffers of min(64 MiB,
 * memory / 4).  Durability sync: WriteOptions.sync (the WAL is fsynced
 * before a write returns); none: the WAL is written, not synced.
 *
 * What it cannot honour in full: the memtables (write buffers) are
 * memory outside the block cache (the C API of 7.8 has no
 * WriteBufferManager to charge them to it).
 */
#ifdef RUMA_KV_HAVE_ROCKSDB
#include "bench/kv/kv.h"

#include <rocksdb/c.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct store {
	rocksdb_t *db;
	rocksdb_options_t *opt;
	rocksdb_block_based_table_options_t *table;
	rocksdb_cache_t *cache;
	rocksdb_filterpolicy_t *filter;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;
};

struct thread {
	ruma_kv_thread base;
	struct store *s;
	rocksdb_writebatch_t *batch;
	rocksdb_pinnableslice_t *got; /* the last get's value, kept until the next call */
};

/* The version of the headers built against (the build reads rocksdb/version.h). */
static const char *rocksdb_version_text(void)
{
	return RUMA_KV_ROCKSDB_VERSION;
}

/* An error string of the C API as a failure (the string freed). */
static int rdb_fail(ruma_kv_thread *th, char *e, const char *what)
{
	int rc = ruma_kv_fail(th, -EIO, "rocksdb %s: %s", what, e);
	rocksdb_free(e);
	return rc;
}

static void set_options(struct store *s, const ruma_kv_conf *c, bool direct)
{
	s->opt = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(s->opt, 1);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	rocksdb_options_increase_parallelism(s->opt, cpus > 0 ? (int)cpus : 1);
	rocksdb_options_set_compression(s->opt, rocksdb_no_compression);
	rocksdb_options_set_bottommost_compression(s->opt, rocksdb_no_compression);
	uint64_t wb = c->memory / 4 < (64ull << 20) ? c->memory / 4 : 64ull << 20;
	rocksdb_options_set_write_buffer_size(s->opt, (size_t)wb);
	rocksdb_options_set_use_direct_reads(s->opt, direct);
	rocksdb_options_set_use_direct_io_for_flush_and_compaction(s->opt, direct);
	s->table = rocksdb_block_based_options_create();
	s->cache = rocksdb_cache_create_lru((size_t)c->memory);
	s->filter = rocksdb_filterpolicy_create_bloom_full(10);
	rocksdb_block_based_options_set_block_cache(s->table, s->cache);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(s->table, 1);
	rocksdb_block_based_options_set_filter_policy(s->table, s->filter);
	s->filter = NULL; /* the table options own it now */
	rocksdb_options_set_block_based_table_factory(s->opt, s->table);
}

static void free_options(struct store *s)
{
	if (s->opt)
		rocksdb_options_destroy(s->opt);
	if (s->table)
		rocksdb_block_based_options_destroy(s->table);
	if (s->cache)
		rocksdb_cache_destroy(s->cache);
	s->opt = NULL;
	s->table = NULL;
	s->cache = NULL;
}

/* Open with direct I/O, else (the file system refuses it) without, noted. */
static char *open_db(struct store *s, const ruma_kv_conf *c)
{
	char *e = NULL;
	set_options(s, c, true);
	s->db = rocksdb_open(s->opt, c->dir, &e);
	if (s->db)
		return NULL;
	char why[200];
	snprintf(why, sizeof(why), "the file system refused O_DIRECT (%s): buffered I/O", e);
	rocksdb_free(e);
	e = NULL;
	free_options(s);
	set_options(s, c, false);
	s->db = rocksdb_open(s->opt, c->dir, &e);
	if (s->db)
		c->note(c->note_ctx, "direct_io", why);
	return e;
}

static int rdb_open(const ruma_kv_conf *c, void **out, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	if (!s)
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	char *e = open_db(s, c);
	if (e) {
		ruma_kv_open_fail(err, errlen, -EIO, "%s: %s", c->dir, e);
		rocksdb_free(e);
		free_options(s);
		free(s);
		return -EIO;
	}
	s->wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(s->wo, c->sync);
	s->ro = rocksdb_readoptions_create();
	c->note(c->note_ctx, "memory", "the memtables (write buffers, up to 2 of "
		"min(64 MiB, memory/4)) are memory beyond the block cache: the C API has no "
		"WriteBufferManager to charge them to it");
	*out = s;
	return 0;
}

static int rdb_close(void *p, char *err, size_t errlen)
{
	struct store *s = p;
	rocksdb_close(s->db);
	rocksdb_writeoptions_destroy(s->wo);
	rocksdb_readoptions_destroy(s->ro);
	free_options(s);
	free(s);
	(void)err;
	(void)errlen;
	return 0;
}

static int rdb_thread_open(void *p, ruma_kv_thread **out, char *err, size_t errlen)
{
	struct thread *t = calloc(1, sizeof(*t));
	if (!t || !(t->batch = rocksdb_writebatch_create())) {
		free(t);
		return ruma_kv_open_fail(err, errlen, -ENOMEM, "out of memory");
	}
	t->s = p;
	*out = &t->base;
	return 0;
}

static void drop_got(struct thread *t)
{
	if (t->got)
		rocksdb_pinnableslice_destroy(t->got);
	t->got = NULL;
}

static void rdb_thread_close(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	drop_got(t);
	rocksdb_writebatch_destroy(t->batch);
	free(t);
}

static int rdb_begin(ruma_kv_thread *th, unsigned flags)
{
	struct thread *t = (struct thread *)th;
	(void)flags;
	rocksdb_writebatch_clear(t->batch);
	return 0;
}

static int rdb_commit(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	char *e = NULL;
	drop_got(t);
	if (!rocksdb_writebatch_count(t->batch))
		return 0;
	rocksdb_write(t->s->db, t->s->wo, t->batch, &e);
	rocksdb_writebatch_clear(t->batch);
	return e ? rdb_fail(th, e, "write") : 0;
}

static void rdb_abort(ruma_kv_thread *th)
{
	struct thread *t = (struct thread *)th;
	drop_got(t);
	rocksdb_writebatch_clear(t->batch);
}

static int rdb_get(ruma_kv_thread *th, const void *key, size_t klen, const void **val,
		   size_t *vlen)
{
	struct thread *t = (struct thread *)th;
	char *e = NULL;
	drop_got(t);
	t->got = rocksdb_get_pinned(t->s->db, t->s->ro, key, klen, &e);
	if (e)
		return rdb_fail(th, e, "get");
	if (!t->got)
		return RUMA_ENOTFOUND;
	*val = rocksdb_pinnableslice_value(t->got, vlen);
	return 0;
}

static int rdb_put(ruma_kv_thread *th, const void *key, size_t klen, const void *val,
		   size_t vlen)
{
	struct thread *t = (struct thread *)th;
	rocksdb_writebatch_put(t->batch, key, klen, val, vlen);
	return 0;
}

static int rdb_del(ruma_kv_thread *th, const void *key, size_t klen)
{
	struct thread *t = (struct thread *)th;
	rocksdb_writebatch_delete(t->batch, key, klen);
	return 0;
}

static void scan_start(rocksdb_iterator_t *it, const void *key, size_t klen, bool reverse)
{
	if (!key && reverse)
		rocksdb_iter_seek_to_last(it);
	else if (!key)
		rocksdb_iter_seek_to_first(it);
	else if (reverse)
		rocksdb_iter_seek_for_prev(it, key, klen);
	else
		rocksdb_iter_seek(it, key, klen);
}

static int64_t rdb_scan(ruma_kv_thread *th, const void *key, size_t klen, unsigned n,
			bool reverse, ruma_kv_visit fn, void *ctx)
{
	struct thread *t = (struct thread *)th;
	rocksdb_iterator_t *it = rocksdb_create_iterator(t->s->db, t->s->ro);
	int64_t seen = 0;
	char *e = NULL;
	if (n)
		scan_start(it, key, klen, reverse);
	while (n && rocksdb_iter_valid(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
		seen++;
		if (!fn(ctx, k, kl, v, vl) || (unsigned)seen == n)
			break;
		if (reverse)
			rocksdb_iter_prev(it);
		else
			rocksdb_iter_next(it);
	}
	rocksdb_iter_get_error(it, &e);
	rocksdb_iter_destroy(it);
	return e ? rdb_fail(th, e, "scan") : seen;
}

const ruma_kv_system ruma_kv_sys_rocksdb = {
	.name = "rocksdb",
	.version = rocksdb_version_text,
	.open = rdb_open,
	.close = rdb_close,
	.thread_open = rdb_thread_open,
	.thread_close = rdb_thread_close,
	.begin = rdb_begin,
	.commit = rdb_commit,
	.abort = rdb_abort,
	.get = rdb_get,
	.put = rdb_put,
	.del = rdb_del,
	.scan = rdb_scan,
};
#else
/* RocksDB not built (-DRUMA_PEERS=OFF): this file compiles to nothing. */
typedef int ruma_kv_no_rocksdb;
#endif
