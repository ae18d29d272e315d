/*
 * blob.c — large values (BLOBs) of the store (docs/blob.md), after Nguyen
 * and Leis, "Why Files If You Have a DBMS?" (ICDE 2024).
 *
 * A row's stored bytes (the B-tree leaf's value) are one of:
 *   - the value itself, when its first byte is neither 0xFE nor 0xFF;
 *   - 0xFE then the value: an inline value starting with 0xFE or 0xFF;
 *   - 0xFF 'B' then a BLOB state: u8 version (1), u8 extent count, u16 0,
 *     u32 0, u64 size, then per extent {u64 first page, u32 pages,
 *     u32 CRC-32C of its bytes, u64 bytes}.  The value is the extents'
 *     bytes one after the other.
 * A value put whole gets one extent of exactly its size; a value grown by a
 * handle gets extents of growing size (16, 32, 64 ... pages: tiers), the
 * last one trimmed to its bytes at close (the tail extent), or one extent
 * when the size hint was exact.  An extent's bytes are written once (src/bm
 * extent.c: large page-aligned writes from the pool) before the state that
 * names them is logged, synced with the commit (group sync) and never
 * rewritten: an append that continues a committed value starts a new
 * extent (and, when the state holds all the extents it can, first copies
 * its newest extents into one: merge_tail).  So the log carries the state,
 * never the payload, and redoing the state is the whole recovery.
 *
 * Freeing: a transaction's own new extents are freed if it aborts; the
 * extents of a value it replaced or removed are freed once it committed
 * (durably) and every transaction that was running at that moment ended
 * (the deferred list: a snapshot, a cursor or a locked reader may still
 * read them).  A crash loses what was in flight: after recovery,
 * db_blobs_sweep runs the store check and frees every allocated run that
 * no tree and no BLOB state reaches.
 *
 * Reads: ruma_db_get of a one-extent BLOB pins the extent's pages (shared
 * latches until the transaction ends) and hands back the pool's address;
 * so does a BLOB whose extents follow each other in the store (each full
 * but the last); any other BLOB of several extents is copied into memory
 * the transaction owns.
 */
#include "db/db_int.h"
#include "btree/blobref.h"
#include "bm/bm_ext.h"
#include "os/os.h"
#include <ruma/core.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOB_TAG 0xFFu
#define BLOB_ESC 0xFEu
_Static_assert(BLOB_ESC == DB_VALUE_MARKS && BLOB_TAG > BLOB_ESC, "db_value_out_fast");
#define BLOB_MARK 0x42u /* 'B' */
#define BLOB_VERSION 1u
#define BLOB_HDR 16u
#define BLOB_EXT 24u
/* Extents per state: the state with the longest key fits an entry. */
#define BLOB_MAX_EXTENTS ((RUMA_BTREE_MAX_ENTRY - RUMA_DB_MAX_KEY - 2u - BLOB_HDR) / BLOB_EXT)
#define BLOB_FIRST_TIER 16u    /* pages of a handle's first extent without a hint */
#define BLOB_STAGE (256u * RUMA_BM_PAGE_SIZE) /* a handle's write buffer */
#define PG RUMA_BM_PAGE_SIZE
#define DB_BUFFER_ALIGN ((size_t)2 << 20) /* ruma_db_buffer_alloc: a huge page */
#define DB_SCRATCH_HUGE (1u << 20)  /* a scratch buffer this long or longer: ruma_db_buffer_alloc */
#define DB_SCRATCH_KEEP (16u << 20) /* a larger scratch buffer is freed as its transaction ends */

_Static_assert(BLOB_MAX_EXTENTS >= 24, "a state holds enough tiers for RUMA_DB_MAX_VALUE");

typedef struct blob_ext {
	uint64_t first;
	uint32_t pages;
	uint32_t crc;
	uint64_t bytes;
} blob_ext;

typedef struct blob_state {
	uint64_t size;
	unsigned n;
	blob_ext e[BLOB_MAX_EXTENTS];
} blob_state;

/* ---- the stored form -------------------------------------------------------------- */

static bool is_blob(const void *v, size_t len)
{
	const uint8_t *b = v;
	return len >= 2 && b[0] == BLOB_TAG && b[1] == BLOB_MARK;
}

static size_t state_len(unsigned n)
{
	return 2u + BLOB_HDR + (size_t)n * BLOB_EXT;
}

static size_t state_encode(const blob_state *s, uint8_t *out)
{
	out[0] = BLOB_TAG;
	out[1] = BLOB_MARK;
	uint8_t *h = out + 2;
	memset(h, 0, BLOB_HDR);
	h[0] = BLOB_VERSION;
	h[1] = (uint8_t)s->n;
	memcpy(h + 8, &s->size, 8);
	for (unsigned i = 0; i < s->n; i++) {
		uint8_t *e = out + 2 + BLOB_HDR + (size_t)i * BLOB_EXT;
		memcpy(e, &s->e[i].first, 8);
		memcpy(e + 8, &s->e[i].pages, 4);
		memcpy(e + 12, &s->e[i].crc, 4);
		memcpy(e + 16, &s->e[i].bytes, 8);
	}
	return state_len(s->n);
}

/* Decode and check a state: sizes add up, extents hold their bytes. */
static int state_decode(const void *v, size_t len, blob_state *s)
{
	const uint8_t *b = v;
	if (len < 2 + BLOB_HDR || b[2] != BLOB_VERSION || b[3] > BLOB_MAX_EXTENTS ||
	    len != state_len(b[3]))
		return RUMA_ECORRUPT;
	s->n = b[3];
	memcpy(&s->size, b + 2 + 8, 8);
	uint64_t sum = 0;
	for (unsigned i = 0; i < s->n; i++) {
		const uint8_t *e = b + 2 + BLOB_HDR + (size_t)i * BLOB_EXT;
		blob_ext *x = &s->e[i];
		memcpy(&x->first, e, 8);
		memcpy(&x->pages, e + 8, 4);
		memcpy(&x->crc, e + 12, 4);
		memcpy(&x->bytes, e + 16, 8);
		if (x->pages == 0 || x->bytes > (uint64_t)x->pages * PG ||
		    x->first + x->pages < x->first)
			return RUMA_ECORRUPT;
		sum += x->bytes;
	}
	return sum == s->size && s->size <= RUMA_DB_MAX_VALUE ? 0 : RUMA_ECORRUPT;
}

/* A row's state for reading: well formed, its extents inside the store. */
static int state_read(ruma_db *db, const void *v, size_t len, blob_state *s)
{
	int r = is_blob(v, len) ? state_decode(v, len, s) : RUMA_ECORRUPT;
	uint64_t hw = ruma_bm_high_water(db->bm);
	for (unsigned i = 0; !r && i < s->n; i++)
		if (s->e[i].first + s->e[i].pages > hw)
			r = RUMA_ECORRUPT;
	if (r)
		db_report(db, "db: a stored value of %zu bytes is a malformed BLOB state (or names "
			      "pages beyond the store's end)", len);
	return r;
}

/* ---- lists ------------------------------------------------------------------------ */

int db_ext_add(db_ext_list *l, uint64_t first, uint64_t pages)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		db_ext_ref *e = realloc(l->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		l->e = e;
		l->cap = cap;
	}
	l->e[l->n++] = (db_ext_ref){ first, pages };
	return 0;
}

/* Forget the entry of first (the last one naming it). */
static void list_del(db_ext_list *l, uint64_t first)
{
	for (size_t i = l->n; i-- > 0;)
		if (l->e[i].first == first) {
			l->e[i] = l->e[--l->n];
			return;
		}
}

static db_ext_ref *list_find(db_ext_list *l, uint64_t first)
{
	for (size_t i = l->n; i-- > 0;)
		if (l->e[i].first == first)
			return &l->e[i];
	return NULL;
}

static void free_extents(ruma_db *db, const db_ext_ref *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = ruma_bm_extent_free(db->bm, e[i].first, e[i].pages);
		if (r)
			db_report(db, "db: freeing extent [%" PRIu64 ", +%" PRIu64 "): %s",
				  e[i].first, e[i].pages, ruma_strerror(r));
	}
}

void db_blobs_release(db_txn_blobs *b)
{
	free(b->alloc.e);
	free(b->old.e);
	free(b->pins.e);
	free(b->copies);
	free(b->scratch);
	memset(b, 0, sizeof(*b));
}

/* ---- writing one extent ------------------------------------------------------------- */

/* A new extent of `pages` pages; a full store is said. */
static int extent_alloc(ruma_db *db, uint64_t pages, uint64_t *first)
{
	int r = ruma_bm_extent_alloc(db->bm, pages, first);
	if (r == RUMA_EVIRTFULL)
		db_report(db, "db: the store is full: no run of %" PRIu64 " free pages", pages);
	return r;
}

/* A new extent of `pages` pages for txn (freed if it aborts). */
static int extent_new(ruma_db_txn *txn, uint64_t pages, uint64_t *first)
{
	int r = extent_alloc(txn->db, pages, first);
	if (r)
		return r;
	r = db_ext_add(&txn->blobs.alloc, *first, pages);
	if (r)
		(void)ruma_bm_extent_free(txn->db->bm, *first, pages);
	return r;
}

/* Give back an extent txn allocated and no state names. */
static void extent_drop(ruma_db_txn *txn, uint64_t first, uint64_t pages)
{
	list_del(&txn->blobs.alloc, first);
	free_extents(txn->db, &(db_ext_ref){ first, pages }, 1);
}

/* ---- put and get -------------------------------------------------------------------- */

static int put_stored(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, const void *v,
		      size_t len, unsigned flags)
{
	if (flags & RUMA_DB_NOOVERWRITE)
		return ruma_txn_insert(txn->x, t->bt, key->data, key->len, v, len);
	/* a store that never held an extent replaces no BLOB (the row lock
	 * orders this after the allocation of any extent the old value names) */
	if (!ruma_bm_extents_used(txn->db->bm))
		return ruma_txn_upsert(txn->x, t->bt, key->data, key->len, v, len);
	size_t since = bt_txn_changes(txn->x);
	int rc = ruma_txn_upsert(txn->x, t->bt, key->data, key->len, v, len);
	if (!rc)
		rc = db_note_replaced(txn, since, v, len);
	return rc;
}

static bool fits_inline(const ruma_db *db, size_t klen, size_t vlen, bool escaped)
{
	size_t stored = vlen + (escaped ? 1u : 0u);
	return vlen <= db->blob_threshold && klen + stored <= RUMA_BTREE_MAX_ENTRY;
}

int db_put_value(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, const ruma_val *val,
		 unsigned flags)
{
	if (val->len > RUMA_DB_MAX_VALUE)
		return RUMA_ETOOBIG;
	if (key->len > RUMA_DB_MAX_KEY)
		return RUMA_ETOOBIG;
	bool esc = val->len && *(const uint8_t *)val->data >= BLOB_ESC;
	if (!esc && fits_inline(txn->db, key->len, val->len, false))
		return put_stored(txn, t, key, val->data, val->len, flags); /* as it is: no copy */
	uint8_t buf[RUMA_BTREE_MAX_VALUE];
	size_t len;
	db_ext_ref e;
	int rc = db_stored_form(txn->db, key, val, buf, &len, &e);
	if (e.pages) { /* a BLOB: its extent is freed if txn aborts */
		txn->blobs.wrote = true;
		int kr = db_ext_add(&txn->blobs.alloc, e.first, e.pages);
		if (kr) {
			free_extents(txn->db, &e, 1);
			return kr;
		}
	}
	if (!rc)
		rc = put_stored(txn, t, key, buf, len, flags);
	if (rc && e.pages)
		extent_drop(txn, e.first, e.pages);
	return rc;
}

int db_stored_form(ruma_db *db, const ruma_val *key, const ruma_val *val, uint8_t *out,
		   size_t *len, db_ext_ref *ext)
{
	ext->pages = 0;
	if (val->len > RUMA_DB_MAX_VALUE || key->len > RUMA_DB_MAX_KEY)
		return RUMA_ETOOBIG;
	bool esc = val->len && *(const uint8_t *)val->data >= BLOB_ESC;
	if (fits_inline(db, key->len, val->len, esc)) {
		out[0] = BLOB_ESC;
		if (val->len)
			memcpy(out + esc, val->data, val->len);
		*len = val->len + esc;
		return 0;
	}
	blob_state s = { .size = val->len, .n = 1 };
	uint64_t pages = (val->len + PG - 1) / PG, first;
	int rc = extent_alloc(db, pages, &first);
	if (rc)
		return rc;
	*ext = (db_ext_ref){ first, pages };
	s.e[0] = (blob_ext){ first, (uint32_t)pages, ruma_crc32c(0, val->data, val->len), val->len };
	*len = state_encode(&s, out);
	return ruma_bm_extent_write(db->bm, first, val->data, val->len);
}

/* Pin a one-extent value (once per transaction and extent). */
static int pin_one(ruma_db_txn *txn, const blob_ext *e, void **addr)
{
	ruma_bm *bm = txn->db->bm;
	db_ext_ref *have = list_find(&txn->blobs.pins, e->first);
	if (have && have->pages == e->pages) {
		*addr = ruma_bm_extent_addr(bm, e->first);
		return 0;
	}
	uint64_t pinned = e->pages;
	for (size_t i = 0; i < txn->blobs.pins.n; i++)
		pinned += txn->blobs.pins.e[i].pages;
	if (pinned > ruma_bm_extent_pin_max(bm)) {
		db_report(txn->db, "db: a value of %" PRIu64 " bytes does not fit in half the buffer "
				   "pool with the values this transaction holds: read it with "
				   "ruma_db_blob_read", e->bytes);
		return -ENOMEM;
	}
	int r = db_ext_add(&txn->blobs.pins, e->first, e->pages);
	if (r)
		return r;
	r = ruma_bm_extent_pin(bm, e->first, e->pages, e->bytes, e->crc, addr);
	if (r)
		txn->blobs.pins.n--;
	return r;
}

/* The extents' bytes one after the other into dst (size bytes). */
static int read_all(ruma_db_txn *txn, const blob_state *s, uint64_t off, void *dst, size_t len)
{
	uint64_t at = 0;
	for (unsigned i = 0; i < s->n && len; i++) {
		const blob_ext *e = &s->e[i];
		if (off < at + e->bytes) {
			uint64_t in = off - at;
			size_t part = (size_t)RUMA_MIN((uint64_t)len, e->bytes - in);
			int r = ruma_bm_extent_read(txn->db->bm, e->first, e->pages, e->bytes, e->crc,
						    in, dst, part, db_txn_fills(txn));
			if (r)
				return r;
			dst = (char *)dst + part;
			off += part;
			len -= part;
		}
		at += e->bytes;
	}
	return 0;
}

static int copy_out(ruma_db_txn *txn, const blob_state *s, ruma_val *out)
{
	db_txn_blobs *b = &txn->blobs;
	if (b->ncopies == b->capcopies) {
		size_t cap = b->capcopies ? 2 * b->capcopies : 4;
		void **c = realloc(b->copies, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		b->copies = c;
		b->capcopies = cap;
	}
	void *mem = malloc(s->size);
	if (!mem)
		return -ENOMEM;
	int r = read_all(txn, s, 0, mem, s->size);
	if (r) {
		free(mem);
		return r;
	}
	b->copies[b->ncopies++] = mem;
	*out = (ruma_val){ s->size, mem };
	return 0;
}

/* Extents that follow each other in the store, each full but the last, are
 * one contiguous range of the pool: pinned each, handed out as one (a value
 * appended in tiers to a store that allocated nothing else meanwhile). */
static bool adjacent(ruma_db *db, const blob_state *s)
{
	uint64_t pages = s->e[s->n - 1].pages;
	for (unsigned i = 0; i + 1 < s->n; i++) {
		const blob_ext *e = &s->e[i];
		if (e->bytes != (uint64_t)e->pages * PG || e->first + e->pages != s->e[i + 1].first)
			return false;
		pages += e->pages;
	}
	return pages <= ruma_bm_extent_pin_max(db->bm);
}

/* RUMA_DB_NOFILL: the value into the transaction's scratch buffer, read
 * around the pool where its pages are missing; valid until the next call
 * (the buffer is reused), so a scan's memory stays one value. */
static int copy_scratch(ruma_db_txn *txn, const blob_state *s, ruma_val *out)
{
	db_txn_blobs *b = &txn->blobs;
	if (s->size > b->scratch_cap) {
		/* page aligned: a read around the pool goes straight into it; from
		 * 1 MiB on huge pages, which it reaches in fewer segments */
		void *mem;
		int r = s->size >= DB_SCRATCH_HUGE ? ruma_db_buffer_alloc(s->size, &mem)
			: posix_memalign(&mem, PG, s->size) ? -ENOMEM : 0;
		if (r)
			return r;
		free(b->scratch); /* ruma_db_buffer_free is free */
		b->scratch = mem;
		b->scratch_cap = s->size;
	}
	int r = read_all(txn, s, 0, b->scratch, s->size);
	*out = (ruma_val){ s->size, b->scratch };
	return r;
}

int db_value_out(ruma_db_txn *txn, const void *stored, size_t len, ruma_val *out)
{
	const uint8_t *b = stored;
	if (len == 0 || b[0] < BLOB_ESC) {
		*out = (ruma_val){ len, (void *)stored };
		return 0;
	}
	if (b[0] == BLOB_ESC) {
		*out = (ruma_val){ len - 1, (void *)(b + 1) };
		return 0;
	}
	blob_state s;
	int r = state_read(txn->db, stored, len, &s);
	if (r)
		return r;
	if (s.n == 0) {
		*out = (ruma_val){ 0, (void *)stored };
		return 0;
	}
	if (!db_txn_fills(txn))
		return copy_scratch(txn, &s, out);
	if (s.n > 1 && !adjacent(txn->db, &s))
		return copy_out(txn, &s, out);
	void *addr = NULL, *a;
	for (unsigned i = 0; i < s.n; i++) {
		r = pin_one(txn, &s.e[i], &a);
		if (r)
			return r; /* the pins taken stay until the transaction ends */
		addr = i ? addr : a;
	}
	*out = (ruma_val){ s.size, addr };
	return 0;
}

/* ---- replaced values, commit, abort ------------------------------------------------- */

static bool state_names(const blob_state *s, uint64_t first)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i].first == first)
			return true;
	return false;
}

int db_note_replaced(ruma_db_txn *txn, size_t since, const void *now, size_t nowlen)
{
	const void *old;
	size_t len;
	if (bt_txn_replaced(txn->x, since, &old, &len) != 1 || !is_blob(old, len))
		return 0;
	blob_state o, n = { 0 };
	if (state_decode(old, len, &o)) {
		db_report(txn->db, "db: the replaced value is a malformed BLOB state: its extents "
				   "are not freed");
		return 0;
	}
	if (now && is_blob(now, nowlen) && state_decode(now, nowlen, &n))
		n.n = 0;
	for (unsigned i = 0; i < o.n; i++) {
		if (state_names(&n, o.e[i].first))
			continue; /* the new value keeps it (an append) */
		int r = db_ext_add(&txn->blobs.old, o.e[i].first, o.e[i].pages);
		if (r)
			return r;
	}
	return 0;
}

struct db_deferred {
	uint64_t stamp;   /* the era its transaction's commit closed: every
			     transaction with a seq up to it may read them */
	uint64_t lsn;     /* the log's end then: durable before the free */
	db_ext_list ext;
	struct db_deferred *next;
};

static void handles_discard(ruma_db_txn *txn);
static int handles_close(ruma_db_txn *txn);

int db_blobs_commit(ruma_db_txn *txn)
{
	ruma_db *db = txn->db;
	int r = handles_close(txn);
	if (r || !txn->blobs.wrote)
		return r;
	db_copy_hold(db);
	/* the extents are synced by the log before the commit's record can
	 * reach its file (bm: the log's before_write hook) */
	return 0;
}

void db_blobs_committed(ruma_db_txn *txn)
{
	if (txn->blobs.wrote)
		db_copy_release(txn->db);
}

void db_copy_hold(ruma_db *db)
{
	pthread_mutex_lock(&db->blob_mu);
	while (db->copying)
		pthread_cond_wait(&db->blob_cv, &db->blob_mu);
	db->blob_commits++;
	pthread_mutex_unlock(&db->blob_mu);
}

void db_copy_release(ruma_db *db)
{
	pthread_mutex_lock(&db->blob_mu);
	db->blob_commits--;
	pthread_cond_broadcast(&db->blob_cv);
	pthread_mutex_unlock(&db->blob_mu);
}

void db_blobs_copy_begin(ruma_db *db)
{
	pthread_mutex_lock(&db->blob_mu);
	while (db->copying) /* copies run one after the other anyway */
		pthread_cond_wait(&db->blob_cv, &db->blob_mu);
	db->copying = true;
	while (db->blob_commits)
		pthread_cond_wait(&db->blob_cv, &db->blob_mu);
	pthread_mutex_unlock(&db->blob_mu);
}

void db_blobs_copy_end(ruma_db *db)
{
	pthread_mutex_lock(&db->blob_mu);
	db->copying = false;
	pthread_cond_broadcast(&db->blob_cv);
	pthread_mutex_unlock(&db->blob_mu);
}

/* Queue the extents txn replaced for freeing once its readers are gone. */
static void defer_old(ruma_db_txn *txn)
{
	ruma_db *db = txn->db;
	struct db_deferred *d = malloc(sizeof(*d));
	if (!d) { /* freed at the next recovery's sweep, or leaked until then */
		db_report(db, "db: out of memory: %zu replaced extent(s) stay allocated",
			  txn->blobs.old.n);
		txn->blobs.old.n = 0;
		return;
	}
	d->stamp = atomic_fetch_add(&db->txn_seq, 1) + 1; /* later begins: seq > stamp */
	d->lsn = ruma_bm_logging(db->bm) ? ruma_bm_log_end(db->bm) : 0;
	d->ext = txn->blobs.old;
	d->next = NULL;
	txn->blobs.old = (db_ext_list){ 0 };
	pthread_mutex_lock(&db->blob_mu);
	*db->deferred_tail = d;
	db->deferred_tail = &d->next;
	atomic_fetch_add(&db->ndeferred, 1);
	pthread_mutex_unlock(&db->blob_mu);
}

void db_blobs_end(ruma_db_txn *txn, bool committed)
{
	db_txn_blobs *b = &txn->blobs;
	handles_discard(txn);
	for (size_t i = 0; i < b->pins.n; i++)
		ruma_bm_extent_unpin(txn->db->bm, b->pins.e[i].first, b->pins.e[i].pages);
	b->pins.n = 0;
	for (size_t i = 0; i < b->ncopies; i++)
		free(b->copies[i]);
	b->ncopies = 0;
	if (b->scratch_cap > DB_SCRATCH_KEEP) { /* kept for the next transaction when small */
		free(b->scratch);
		b->scratch = NULL;
		b->scratch_cap = 0;
	}
	if (committed && b->old.n)
		defer_old(txn);
	if (!committed)
		free_extents(txn->db, b->alloc.e, b->alloc.n);
	b->alloc.n = 0;
	b->old.n = 0;
	b->wrote = false;
}

/* The smallest seq of a live transaction (UINT64_MAX: none). */
static uint64_t oldest_live(ruma_db *db)
{
	uint64_t m = UINT64_MAX;
	pthread_mutex_lock(&db->mu);
	for (ruma_db_txn *x = db->all_txns; x; x = x->next_all) {
		uint64_t s = atomic_load(&x->seq);
		if (s && s < m)
			m = s;
	}
	pthread_mutex_unlock(&db->mu);
	return m;
}

void db_blobs_reclaim(ruma_db *db, bool all)
{
	if (!atomic_load_explicit(&db->ndeferred, memory_order_relaxed))
		return;
	uint64_t oldest = all ? UINT64_MAX : oldest_live(db);
	pthread_mutex_lock(&db->blob_mu);
	while (!db->copying && db->deferred && db->deferred->stamp < oldest) {
		struct db_deferred *d = db->deferred;
		/* the commit that replaced them must be durable first */
		int r = d->lsn ? ruma_bm_log_flush(db->bm, d->lsn) : 0;
		if (r)
			break; /* the log is dead: recovery's sweep frees them */
		db->deferred = d->next;
		if (!db->deferred)
			db->deferred_tail = &db->deferred;
		atomic_fetch_sub(&db->ndeferred, 1);
		free_extents(db, d->ext.e, d->ext.n);
		free(d->ext.e);
		free(d);
	}
	pthread_mutex_unlock(&db->blob_mu);
}

/* ---- the store check and the sweep after recovery -------------------------------------- */

static int value_runs(const void *val, size_t vlen, void *ctx,
		      int (*add)(void *actx, ruma_pid first, uint64_t n), void *actx)
{
	(void)ctx;
	if (!is_blob(val, vlen))
		return 0;
	blob_state s;
	if (state_decode(val, vlen, &s))
		return RUMA_ECORRUPT;
	for (unsigned i = 0; i < s.n; i++) {
		int r = add(actx, s.e[i].first, s.e[i].pages);
		if (r)
			return 0; /* the walk stops with add's error */
	}
	return 0;
}

int db_blobs_check(ruma_db *db, ruma_message_fn message, void *ctx, ruma_btree_store_check *out)
{
	return bt_check_store_runs(db->bm, message, ctx, out, value_runs, NULL, NULL, NULL);
}

static void sweep_leak(void *ctx, ruma_pid first, uint64_t n)
{
	db_ext_list *l = ctx;
	(void)db_ext_add(l, first, n);
}

/* The store check's lines during the sweep, held back: pages that only
 * unfinished transactions allocated are expected after a crash, and are
 * reported as freed, not as problems; damage is reported with its lines. */
#define SWEEP_LINES 8u
struct sweep_msgs {
	unsigned n, more;
	char line[SWEEP_LINES][256];
};

static void sweep_line(void *ctx, const char *line)
{
	struct sweep_msgs *m = ctx;
	if (m->n < SWEEP_LINES)
		snprintf(m->line[m->n++], sizeof(m->line[0]), "%s", line);
	else
		m->more++;
}

static void sweep_damage(ruma_db *db, const struct sweep_msgs *m)
{
	for (unsigned i = 0; i < m->n; i++)
		db_report(db, "db: recovery: %s", m->line[i]);
	if (m->more)
		db_report(db, "db: recovery: (%u more lines)", m->more);
	db_report(db, "db: recovery: the store check found damage (above): nothing freed");
}

int db_blobs_sweep(ruma_db *db)
{
	db_ext_list leaks = { 0 };
	ruma_btree_store_check c;
	struct sweep_msgs *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	int rc = bt_check_store_runs(db->bm, sweep_line, m, &c, value_runs, NULL, sweep_leak,
				     &leaks);
	if (rc == RUMA_ECORRUPT && c.pages_leaked && !c.reached_unallocated && leaks.n) {
		free_extents(db, leaks.e, leaks.n);
		db_report(db, "db: recovery: freed %" PRIu64 " page(s) in %zu run(s) that nothing "
			      "names (allocated by unfinished transactions)", c.pages_leaked, leaks.n);
		rc = 0;
	} else if (rc == RUMA_ECORRUPT) {
		sweep_damage(db, m);
		rc = 0;
	}
	free(m);
	free(leaks.e);
	return rc;
}

/* ---- a table's BLOBs (drop) ------------------------------------------------------------- */

struct table_scan {
	db_ext_list *l;
	int rc;
};

static int table_add(void *actx, ruma_pid first, uint64_t n)
{
	struct table_scan *s = actx;
	s->rc = db_ext_add(s->l, first, n);
	return s->rc;
}

static bool table_value(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	(void)key, (void)klen;
	struct table_scan *s = ctx;
	(void)value_runs(val, vlen, NULL, table_add, s);
	return s->rc == 0;
}

int db_table_blobs(ruma_db_txn *txn, ruma_db_table *t)
{
	struct table_scan s = { &txn->blobs.old, 0 };
	int rc = ruma_btree_scan_asc(t->bt, NULL, 0, table_value, &s);
	return rc ? rc : s.rc;
}

/* ---- handles ------------------------------------------------------------------------ */

struct ruma_db_blob {
	ruma_db_txn *txn;
	ruma_db_table *t;
	struct ruma_db_blob *next;   /* in txn->blobs.handles */
	uint16_t klen;
	bool writable;
	bool dirty;                  /* appended: close stores the state */
	int err;                     /* a failed write: the handle is dead */
	blob_state st;               /* the finished extents */
	unsigned kept;               /* st.e[0, kept) were the value's when opened */
	uint8_t *inl;                /* an inline value opened (not yet moved into extents) */
	size_t inl_len;
	uint64_t hint;               /* the size expected (0: unknown) */
	unsigned tier;               /* extents allocated without a hint */
	/* the extent being filled: cur_done bytes written out, staged after them */
	bool has_cur;
	uint64_t cur_first, cur_pages, cur_done;
	uint32_t cur_crc;
	char *stage;                 /* BLOB_STAGE bytes, page aligned */
	size_t staged;
	uint8_t key[RUMA_DB_MAX_KEY];
};

static uint64_t blob_total(const ruma_db_blob *b)
{
	return b->st.size + b->inl_len + (b->has_cur ? b->cur_done + b->staged : 0);
}

static int blob_new(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, ruma_db_blob **out)
{
	ruma_db_blob *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->txn = txn;
	b->t = t;
	b->klen = (uint16_t)key->len;
	memcpy(b->key, key->data, key->len);
	b->writable = !(txn->flags & RUMA_DB_RDONLY);
	b->next = txn->blobs.handles;
	txn->blobs.handles = b;
	*out = b;
	return 0;
}

static void blob_unlink(ruma_db_blob *b)
{
	for (ruma_db_blob **p = &b->txn->blobs.handles; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			break;
		}
	free(b->stage);
	free(b->inl);
	free(b);
}

static int handle_args(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, ruma_db_blob **out)
{
	int rc = db_txn_usable(txn);
	if (rc)
		return rc;
	if (!t || t->db != txn->db || !key || !key->data || !key->len || !out)
		return -EINVAL;
	if (key->len > RUMA_DB_MAX_KEY)
		return RUMA_ETOOBIG;
	ruma_btree *bt;
	return db_table_writable(txn, t, &bt);
}

int ruma_db_blob_create(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key,
			uint64_t size_hint, ruma_db_blob **out)
{
	int rc = handle_args(txn, t, key, out);
	if (rc)
		return rc;
	if (txn->flags & RUMA_DB_RDONLY) {
		db_report(txn->db, "db: ruma_db_blob_create in a read-only transaction");
		return -EACCES;
	}
	if (size_hint > RUMA_DB_MAX_VALUE)
		return RUMA_ETOOBIG;
	/* lock the row now: a conflict shows before any byte is appended */
	if ((rc = ruma_txn_lock(txn->x, t->bt, key->data, key->len)))
		return rc;
	ruma_db_blob *b;
	if ((rc = blob_new(txn, t, key, &b)))
		return rc;
	b->hint = size_hint;
	b->dirty = true; /* even empty, it replaces the value */
	*out = b;
	return 0;
}

int ruma_db_blob_open(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, ruma_db_blob **out)
{
	int rc = handle_args(txn, t, key, out);
	if (rc)
		return rc;
	size_t len;
	uint8_t v[RUMA_BTREE_MAX_VALUE];
	rc = ruma_txn_lookup(txn->x, t->bt, key->data, key->len, v, sizeof(v), &len);
	if (rc)
		return rc;
	blob_state s = { 0 };
	ruma_val inl = { 0, NULL };
	if (is_blob(v, len)) {
		if ((rc = state_read(txn->db, v, len, &s)))
			return rc;
	} else if ((rc = db_value_out(txn, v, len, &inl))) {
		return rc;
	}
	ruma_db_blob *b;
	if ((rc = blob_new(txn, t, key, &b)))
		return rc;
	b->st = s;
	b->kept = s.n;
	if (inl.len) {
		b->inl = malloc(inl.len);
		if (!b->inl) {
			blob_unlink(b);
			return -ENOMEM;
		}
		memcpy(b->inl, inl.data, inl.len);
		b->inl_len = inl.len;
	}
	*out = b;
	return 0;
}

uint64_t ruma_db_blob_size(const ruma_db_blob *b)
{
	return b ? blob_total(b) : 0;
}

int ruma_db_buffer_alloc(size_t len, void **out)
{
	void *p;
	if (!out || len == 0 || len > SIZE_MAX - DB_BUFFER_ALIGN)
		return -EINVAL;
	size_t span = (len + DB_BUFFER_ALIGN - 1) / DB_BUFFER_ALIGN * DB_BUFFER_ALIGN;
	if (posix_memalign(&p, DB_BUFFER_ALIGN, span))
		return -ENOMEM;
	(void)ruma_os_madvise(p, span, MADV_HUGEPAGE); /* advice only: refused, 4 KiB pages */
	*out = p;
	return 0;
}

void ruma_db_buffer_free(void *buf)
{
	free(buf);
}

/* The current extent is full or the handle closes: enter it into the state. */
static int extent_finish(ruma_db_blob *b)
{
	if (b->st.n == BLOB_MAX_EXTENTS)
		return RUMA_ETOOBIG;
	b->st.e[b->st.n++] = (blob_ext){ b->cur_first, (uint32_t)b->cur_pages, b->cur_crc,
					 b->cur_done };
	b->st.size += b->cur_done;
	b->has_cur = false;
	return 0;
}

/* Write the staged bytes (the whole pages of them, or all with `last`). */
static int stage_flush(ruma_db_blob *b, bool last)
{
	size_t n = last ? b->staged : b->staged / PG * PG;
	if (!n)
		return 0;
	ruma_db_txn *txn = b->txn;
	int r = ruma_bm_extent_write(txn->db->bm, b->cur_first + b->cur_done / PG, b->stage, n);
	txn->blobs.wrote = true;
	if (r)
		return r;
	b->cur_crc = ruma_crc32c(b->cur_crc, b->stage, n);
	b->cur_done += n;
	memmove(b->stage, b->stage + n, b->staged - n);
	b->staged -= n;
	return 0;
}

/*
 * The first extent of the newest ones that merge_tail copies into one:
 * the oldest e[j] that is no larger than the extents after it together
 * (the last two when none is).  So the extents kept before j each hold
 * more than all later ones, their sizes at least double towards the
 * oldest and their count stays logarithmic in the value's size; a byte is
 * copied again only into an extent at least twice as large as its last.
 */
static unsigned merge_from(const blob_state *s)
{
	uint64_t after = 0;
	unsigned j = s->n - 1;
	for (unsigned i = s->n; i-- > 0;) {
		if (i < s->n - 1 && s->e[i].bytes <= after)
			j = i;
		after += s->e[i].bytes;
	}
	return RUMA_MIN(j, s->n - 2);
}

/* Copy st.e[j, n) one after the other into the current extent (through
 * the stage; the last partial page stays staged). */
static int copy_extents(ruma_db_blob *b, const blob_state *old, unsigned j)
{
	uint64_t off = 0, end = old->size;
	for (unsigned i = 0; i < j; i++)
		off += old->e[i].bytes;
	while (off < end) {
		size_t part = (size_t)RUMA_MIN((uint64_t)(BLOB_STAGE - b->staged), end - off);
		int r = read_all(b->txn, old, off, b->stage + b->staged, part);
		if (r)
			return r;
		b->staged += part;
		off += part;
		if ((r = stage_flush(b, false)))
			return r;
	}
	return 0;
}

/*
 * A handle whose state holds the most extents it can (appends in many
 * sessions each leave a tail extent) copies its newest extents into one
 * new extent with as much room again, which becomes the current one.  The
 * extents this handle made are given back at once; those of the value it
 * opened stay as they are until the new state replaces it (then they are
 * freed like any replaced extent).
 */
static int merge_tail(ruma_db_blob *b)
{
	blob_state *old = malloc(sizeof(*old));
	if (!old)
		return -ENOMEM;
	*old = b->st;
	unsigned j = merge_from(old);
	uint64_t bytes = old->size;
	for (unsigned i = 0; i < j; i++)
		bytes -= old->e[i].bytes;
	uint64_t room = RUMA_DB_MAX_VALUE - old->size;
	uint64_t pages = (bytes + RUMA_MIN(bytes, room) + PG - 1) / PG;
	int r = extent_new(b->txn, RUMA_MAX(pages, 1u), &b->cur_first);
	if (!r) {
		b->has_cur = true;
		b->cur_pages = RUMA_MAX(pages, 1u);
		b->cur_done = 0;
		b->cur_crc = 0;
		b->st.n = j;
		b->st.size = old->size - bytes;
		r = copy_extents(b, old, j);
		if (r) {
			extent_drop(b->txn, b->cur_first, b->cur_pages);
			b->has_cur = false;
			b->staged = 0;
			b->st = *old;
		}
	}
	if (!r) {
		for (unsigned i = RUMA_MAX(j, b->kept); i < old->n; i++)
			extent_drop(b->txn, old->e[i].first, old->e[i].pages);
		b->kept = RUMA_MIN(b->kept, j);
	}
	free(old);
	return r;
}

/* Start the next extent: the hint's rest, or the next tier (after merging
 * the newest extents when the state is full). */
static int extent_start(ruma_db_blob *b)
{
	if (b->st.n == BLOB_MAX_EXTENTS) {
		int r = merge_tail(b);
		if (r || b->has_cur)
			return r;
	}
	uint64_t have = blob_total(b), pages;
	if (b->hint > have)
		pages = (b->hint - have + PG - 1) / PG;
	else
		pages = (uint64_t)BLOB_FIRST_TIER << RUMA_MIN(b->tier++, 20u);
	pages = RUMA_MIN(pages, (RUMA_DB_MAX_VALUE - have + PG - 1) / PG);
	int r = extent_new(b->txn, pages, &b->cur_first);
	if (r)
		return r;
	b->has_cur = true;
	b->cur_pages = pages;
	b->cur_done = 0;
	b->cur_crc = 0;
	return 0;
}

static int append_bytes(ruma_db_blob *b, const char *d, size_t len)
{
	while (len) {
		int r = 0;
		if (!b->has_cur && (r = extent_start(b)))
			return r;
		uint64_t room = b->cur_pages * PG - b->cur_done - b->staged;
		size_t part = (size_t)RUMA_MIN((uint64_t)RUMA_MIN(len, BLOB_STAGE - b->staged), room);
		memcpy(b->stage + b->staged, d, part);
		b->staged += part;
		d += part;
		len -= part;
		bool full = b->cur_done + b->staged == b->cur_pages * PG;
		if (full || b->staged == BLOB_STAGE)
			r = stage_flush(b, full);
		if (!r && full)
			r = extent_finish(b);
		if (r)
			return r;
	}
	return 0;
}

static int blob_usable(const ruma_db_blob *b)
{
	if (!b)
		return -EINVAL;
	if (b->err)
		return -EIO;
	return 0;
}

int ruma_db_blob_append(ruma_db_blob *b, const void *data, size_t len)
{
	int r = blob_usable(b);
	if (r || (!data && len))
		return r ? r : -EINVAL;
	if (!b->writable) {
		db_report(b->txn->db, "db: ruma_db_blob_append in a read-only transaction");
		return -EACCES;
	}
	if (len > RUMA_DB_MAX_VALUE - blob_total(b))
		return RUMA_ETOOBIG;
	if (!b->stage && !(b->stage = aligned_alloc(PG, BLOB_STAGE)))
		return -ENOMEM;
	b->dirty = true;
	if (b->inl) { /* an inline value opened: it becomes the BLOB's first bytes */
		uint8_t *inl = b->inl;
		size_t n = b->inl_len;
		b->inl = NULL;
		b->inl_len = 0;
		r = append_bytes(b, (const char *)inl, n);
		free(inl);
	}
	if (!r)
		r = append_bytes(b, data, len);
	if (r && r != RUMA_ETOOBIG)
		b->err = r;
	return r;
}

/* Copy [off, off + len) of the bytes still in the handle: the current
 * extent's written part, then the stage. */
static int read_current(ruma_db_blob *b, uint64_t off, char *buf, size_t len)
{
	if (off < b->cur_done) {
		size_t part = (size_t)RUMA_MIN((uint64_t)len, b->cur_done - off);
		int r = ruma_bm_extent_read(b->txn->db->bm, b->cur_first, (b->cur_done + PG - 1) / PG,
					    b->cur_done, b->cur_crc, off, buf, part,
					    db_txn_fills(b->txn));
		if (r)
			return r;
		buf += part;
		off += part;
		len -= part;
	}
	if (len)
		memcpy(buf, b->stage + (off - b->cur_done), len);
	return 0;
}

int ruma_db_blob_read(ruma_db_blob *b, uint64_t off, void *buf, size_t len, size_t *got)
{
	int r = blob_usable(b);
	if (r || (!buf && len) || !got)
		return r ? r : -EINVAL;
	*got = 0;
	uint64_t total = blob_total(b);
	if (off >= total)
		return 0;
	len = (size_t)RUMA_MIN((uint64_t)len, total - off);
	if (b->inl) {
		memcpy(buf, b->inl + off, len);
		*got = len;
		return 0;
	}
	size_t done = 0;
	if (off < b->st.size) {
		done = (size_t)RUMA_MIN((uint64_t)len, b->st.size - off);
		if ((r = read_all(b->txn, &b->st, off, buf, done)))
			return r;
	}
	if (done < len)
		r = read_current(b, off + done - b->st.size, (char *)buf + done, len - done);
	if (!r)
		*got = len;
	return r;
}

/* Trim the current extent to its bytes (the tail extent) and finish it. */
static int tail_finish(ruma_db_blob *b)
{
	int r = stage_flush(b, true);
	if (r)
		return r;
	uint64_t used = (b->cur_done + PG - 1) / PG;
	if (used == 0) { /* nothing went into it */
		extent_drop(b->txn, b->cur_first, b->cur_pages);
		b->has_cur = false;
		return 0;
	}
	if (used < b->cur_pages) {
		db_ext_ref *a = list_find(&b->txn->blobs.alloc, b->cur_first);
		int f = ruma_bm_extent_free(b->txn->db->bm, b->cur_first + used,
					    b->cur_pages - used);
		if (!f) {
			if (a)
				a->pages = used;
			b->cur_pages = used;
		}
	}
	return extent_finish(b);
}

/* Store the handle's value as the row's new one. */
static int blob_store(ruma_db_blob *b)
{
	int r = b->has_cur ? tail_finish(b) : 0;
	if (r)
		return r;
	uint8_t enc[2 + BLOB_HDR + BLOB_MAX_EXTENTS * BLOB_EXT];
	size_t len = state_encode(&b->st, enc);
	ruma_val key = { b->klen, b->key };
	return put_stored(b->txn, b->t, &key, enc, len, 0);
}

/* A handle that fails to store its value gives back the extents it made. */
static void blob_discard(ruma_db_blob *b)
{
	if (b->has_cur)
		extent_drop(b->txn, b->cur_first, b->cur_pages);
	for (unsigned i = b->kept; i < b->st.n; i++)
		extent_drop(b->txn, b->st.e[i].first, b->st.e[i].pages);
	b->has_cur = false;
	b->st.n = b->kept;
}

int ruma_db_blob_close(ruma_db_blob *b)
{
	if (!b)
		return 0;
	int r = b->err ? -EIO : 0;
	if (!r && b->dirty && b->writable)
		r = blob_store(b);
	if (r)
		blob_discard(b);
	blob_unlink(b);
	return r;
}

/* Commit: close every open handle (the first error is returned). */
static int handles_close(ruma_db_txn *txn)
{
	int first = 0;
	while (txn->blobs.handles) {
		int r = ruma_db_blob_close(txn->blobs.handles);
		first = first ? first : r;
	}
	return first;
}

/* Abort (or after a commit's error): drop every open handle; the extents
 * they allocated are in the transaction's list. */
static void handles_discard(ruma_db_txn *txn)
{
	while (txn->blobs.handles)
		blob_unlink(txn->blobs.handles);
}
