/*
 * recover.c — crash recovery of a store that was open with a log and was
 * not closed cleanly (called from ruma_bm_open in bm_store_unclean's place).
 *
 * The log holds every change since the session's start or its last
 * checkpoint (page 0's redo LSN): page 0 was written then, and every page on
 * disk is at that state or newer, with its LSN in its trailer.  The log may
 * begin earlier (at page 0's undo LSN, the first record of the oldest
 * transaction unfinished at the checkpoint); records before the redo LSN
 * are read for their transaction records only.  Recovery reads the log in
 * order and, per record:
 *   ALLOC  the page is (re)born: allocation state updated, the page reset to
 *          zeros in memory (whatever is on disk is ignored: the log has all
 *          its changes since),
 *   FREE   the page goes back to the free-space bitmap, and the copy redo
 *          built of it is dropped unwritten (a freed page is never
 *          written back: an extent may own its bytes on disk),
 *   FPI    the page is set to the image (also repairs a page torn on disk),
 *   FPI_HOLE  the same, with zeros in the hole the image leaves out (its
 *          bounds checked against the page and the entry first),
 *   DIFF   (and DIFF_MOVE: its move first, then its ranges)
 *          applied when the page's LSN is older than the record (the page
 *          is read from disk and checksum-verified; a torn page cannot be
 *          met here: its first change after the epoch was an ALLOC or FPI
 *          that already replaced it in memory),
 *   META   the meta slot is set,
 *   EXTENT an extent's allocation or free (extent.c); an allocation drops
 *          any copy of its pages left in the pool, so they are read from
 *          the file and checked against the extent's CRC,
 *   UNDO / COMMIT / END (transactions, include/ruma/txn.h; an UNDO may also
 *          be carried at the front of an MTR record, read first): collected; the
 *          undo records of transactions with neither COMMIT nor END (the
 *          losers) are kept, newest first, for the layer above to undo
 *          logically (ruma_bm_undo_take) once redo is complete.
 * A pass over the log before redo collects its extent allocations: a page
 * change logged before an allocation that takes the page is not redone (the
 * page was freed first, and a rebuilt copy could be evicted over the
 * extent's bytes on disk); its allocation state still is.
 * An applied DIFF sets the page LSN to the record's end; ALLOC and FPI set
 * it to the record's start, so that a DIFF of the same page later in the
 * same record still applies.  Then, when the session goes on with a log
 * (SYNC or ASYNC, or losers to undo), the log is kept (ruma_wal_resume,
 * bm_wal_continue): page 0 keeps the last checkpoint as the redo start and
 * the redone pages stay dirty, to be written by eviction and checkpoints;
 * otherwise every page and the metadata are written and synced (a
 * checkpoint) and the log is emptied with LSNs continuing.  A crash during
 * recovery leaves the log and page 0 as they were, so recovery simply runs
 * again; the log was synced before the redo, so no page written meanwhile
 * is ahead of it.
 *
 * The log is opened for replay (no scan for its end at open: the redo pass
 * finds it) without its background flusher and is not written during the
 * redo; bm->wal stays NULL until it is kept, so the pages fixed here are not
 * logged.
 *
 * Syscalls: none of its own (the log's reads through src/wal; the pages'
 * I/O through the normal fault and flush paths); clock_gettime for timing.
 */
#include "bm/bm_int.h"
#include "bm/mtr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define D RUMA_BM_PAGE_DATA

static uint64_t now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Latch pid exclusively; with discard, ignore its image on disk (the caller
 * overwrites the whole page). */
static int latch(ruma_bm *bm, ruma_pid pid, bool discard, char **page)
{
	void *p;
	if (discard)
		bm_written_set(bm, pid, false);
	int r = ruma_bm_fix_x(bm, pid, &p);
	if (r == RUMA_ECORRUPT)
		bm_say(&bm->cfg,
			"%s: recovery: page %" PRIu64 " on disk is damaged and the log holds "
			"no full image of it",
			bm->path, pid);
	*page = p;
	return r;
}

static int apply_diff(ruma_bm *bm, ruma_pid pid, bool dead, const char *b, const char *end,
		      uint64_t lsn, bool moved, const char **next)
{
	uint16_t n, mv[3] = { 0, 0, 0 }; /* dst, src, len */
	if (moved) {
		if (end - b < (ptrdiff_t)BM_MTR_MOVE_HDR)
			return RUMA_ECORRUPT;
		memcpy(mv, b, sizeof(mv));
		if ((size_t)mv[0] + mv[2] > D || (size_t)mv[1] + mv[2] > D)
			return RUMA_ECORRUPT;
		b += BM_MTR_MOVE_HDR;
	}
	if (end - b < 2)
		return RUMA_ECORRUPT;
	memcpy(&n, b, 2);
	b += 2;
	const char *ranges = b;
	for (unsigned i = 0; i < n; i++) { /* bounds first: nothing half-applied */
		uint16_t off, len;
		if (end - b < 4)
			return RUMA_ECORRUPT;
		memcpy(&off, b, 2);
		memcpy(&len, b + 2, 2);
		if ((size_t)off + len > D || end - (b + 4) < len)
			return RUMA_ECORRUPT;
		b += 4 + len;
	}
	*next = b;
	if (dead)
		return 0;
	char *page;
	int r = latch(bm, pid, false, &page);
	if (r)
		return r;
	if (bm_page_lsn(page) < lsn) {
		memmove(page + mv[0], page + mv[1], mv[2]);
		for (const char *q = ranges; q < b;) {
			uint16_t off, len;
			memcpy(&off, q, 2);
			memcpy(&len, q + 2, 2);
			memcpy(page + off, q + 4, len);
			q += 4 + len;
		}
		bm_page_set_lsn(page, lsn);
		bm->recovery.pages_redone++;
	} else {
		bm->recovery.pages_skipped++;
	}
	ruma_bm_unfix_x(bm, pid);
	return 0;
}

/* A full image at b: the page's bytes outside the hole [hoff, hoff + hlen),
 * zeros inside (hlen 0: a whole page). */
static int apply_image(ruma_bm *bm, ruma_pid pid, bool dead, const char *b, unsigned hoff,
		       unsigned hlen, const ruma_wal_record *rec)
{
	char *page;
	int r;
	if (dead)
		return 0;
	if ((r = latch(bm, pid, true, &page)))
		return r;
	memcpy(page, b, hoff);
	memset(page + hoff, 0, hlen);
	memcpy(page + hoff + hlen, b + hoff, D - hoff - hlen);
	bm_page_set_lsn(page, rec->lsn);
	ruma_bm_unfix_x(bm, pid);
	bm->recovery.full_images++;
	return 0;
}

/* An FPI_HOLE entry at b: its hole inside the page, its bytes inside the
 * record. */
static int apply_holed_image(ruma_bm *bm, ruma_pid pid, bool dead, const char *b,
			     const char *end, const ruma_wal_record *rec, const char **next)
{
	uint16_t hoff, hlen;
	if (end - b < (ptrdiff_t)BM_MTR_HOLE_HDR)
		return RUMA_ECORRUPT;
	memcpy(&hoff, b, 2);
	memcpy(&hlen, b + 2, 2);
	b += BM_MTR_HOLE_HDR;
	if ((size_t)hoff + hlen > D || end - b < (ptrdiff_t)(D - hlen))
		return RUMA_ECORRUPT;
	*next = b + (D - hlen);
	return apply_image(bm, pid, dead, b, hoff, hlen, rec);
}

/* An entry kind this build does not know: a newer ruma's log, or damage. */
static int unknown_kind(ruma_bm *bm, unsigned kind, const ruma_wal_record *rec)
{
	bm_say(&bm->cfg,
		"%s.wal: record at LSN %" PRIu64 " holds a page change of kind %u, which this "
		"build does not know: a log written by a newer ruma (recover the store with it) "
		"or a damaged one",
		bm->path, rec->lsn, kind);
	return RUMA_ECORRUPT;
}

/* One entry of an MTR record; dead: an extent allocation later in the log
 * takes the page, so its bytes are not redone (allocation state only). */
static int apply_entry(ruma_bm *bm, unsigned kind, ruma_pid pid, bool dead, const char *b,
		       const char *end, const ruma_wal_record *rec, const char **next)
{
	char *page;
	int r;
	if (pid < bm->meta_pages || pid >= bm->virt_pages)
		return RUMA_ECORRUPT;
	switch (kind) {
	case BM_MTR_ALLOC:
		*next = b;
		bm->recovery.allocs++;
		if ((r = bm_recover_alloc(bm, pid)) || dead || (r = latch(bm, pid, true, &page)))
			return r;
		memset(page, 0, RUMA_BM_PAGE_SIZE);
		bm_page_set_lsn(page, rec->lsn); /* the record's DIFF for it still applies */
		ruma_bm_unfix_x(bm, pid);
		return 0;
	case BM_MTR_FREE:
		*next = b;
		bm->recovery.frees++;
		bm_recover_free(bm, pid);
		return 0;
	case BM_MTR_FPI:
		if (end - b < (ptrdiff_t)D)
			return RUMA_ECORRUPT;
		*next = b + D;
		return apply_image(bm, pid, dead, b, 0, 0, rec);
	case BM_MTR_FPI_HOLE:
		return apply_holed_image(bm, pid, dead, b, end, rec, next);
	case BM_MTR_DIFF:
	case BM_MTR_DIFF_MOVE:
		return apply_diff(bm, pid, dead, b, end, rec->end, kind == BM_MTR_DIFF_MOVE, next);
	default:
		return unknown_kind(bm, kind, rec);
	}
}

/* Transactions seen in the log: undo records, and ids that committed or
 * were rolled back completely. */
struct txns {
	ruma_bm_undo *undo;
	size_t n, cap;
	uint64_t *done;
	size_t ndone, capdone;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static int note_txn(struct txns *x, const ruma_wal_record *rec)
{
	uint64_t id;
	if (rec->len < 8)
		return RUMA_ECORRUPT;
	memcpy(&id, rec->payload, 8);
	if (!id)
		id = rec->lsn;
	if (rec->type != RUMA_BM_LOG_UNDO) {
		if (grow((void **)&x->done, &x->capdone, x->ndone + 1, sizeof(*x->done)))
			return -ENOMEM;
		x->done[x->ndone++] = id;
		return 0;
	}
	if (grow((void **)&x->undo, &x->cap, x->n + 1, sizeof(*x->undo)))
		return -ENOMEM;
	void *copy = malloc(rec->len - 8u + 1u);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, (const char *)rec->payload + 8, rec->len - 8u);
	x->undo[x->n++] = (ruma_bm_undo){ id, rec->lsn, rec->len - 8u, copy };
	return 0;
}

/* The UNDO entry an MTR record carries in front (mtr.c): noted as an UNDO
 * record at the MTR record's LSN; *b moves past it. */
static int note_carried_undo(struct txns *x, const ruma_wal_record *rec, const char **b)
{
	uint32_t n;
	if (rec->len < BM_MTR_UNDO_HDR)
		return RUMA_ECORRUPT;
	memcpy(&n, *b + 1, sizeof(n));
	if (n > rec->len - BM_MTR_UNDO_HDR)
		return RUMA_ECORRUPT;
	ruma_wal_record u = *rec;
	u.type = RUMA_BM_LOG_UNDO;
	u.len = n;
	u.payload = *b + BM_MTR_UNDO_HDR;
	*b += BM_MTR_UNDO_HDR + n;
	return note_txn(x, &u);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Keep the undo records of the losers, newest first, in bm->pending. */
static void pick_losers(ruma_bm *bm, struct txns *x)
{
	if (x->ndone)
		qsort(x->done, x->ndone, sizeof(*x->done), cmp_u64);
	size_t k = 0;
	/* newest first: reverse while filtering (the list is in log order) */
	for (size_t i = 0; i < x->n / 2; i++) {
		ruma_bm_undo t = x->undo[i];
		x->undo[i] = x->undo[x->n - 1 - i];
		x->undo[x->n - 1 - i] = t;
	}
	for (size_t i = 0; i < x->n; i++) {
		ruma_bm_undo u = x->undo[i];
		if (x->ndone && bsearch(&u.txn, x->done, x->ndone, sizeof(*x->done), cmp_u64)) {
			free((void *)u.payload);
			continue;
		}
		x->undo[k++] = u;
	}
	/* distinct loser ids (reusing the done array) */
	uint64_t *ids = k ? realloc(x->done, k * sizeof(*ids)) : NULL;
	if (ids) {
		for (size_t i = 0; i < k; i++)
			ids[i] = x->undo[i].txn;
		qsort(ids, k, sizeof(*ids), cmp_u64);
		for (size_t i = 0; i < k; i++)
			bm->recovery.losers += i == 0 || ids[i] != ids[i - 1];
		free(ids);
	} else {
		free(x->done);
	}
	bm->pending = x->undo;
	bm->npending = k;
	x->undo = NULL;
	x->done = NULL;
}

/* ---- extents allocated in the redo range ---------------------------------------- */

/* An extent allocation takes pages the B-tree freed earlier in the log (a
 * page's FREE is logged before its bit can be seen, so before any
 * allocation's record): every change logged for such a page before the
 * allocation is dead, and redoing it would build a copy in the pool that
 * eviction may write over the extent's bytes on disk before redo reaches
 * the free.  A pass before redo collects the allocations; redo skips the
 * page changes an allocation covering their page follows.  The page ids
 * are cut into disjoint segments [at[i], at[i + 1]), each with the LSN of
 * the latest allocation covering it (0: none). */
struct ext_redo {
	uint64_t *at;  /* segment boundaries, sorted, distinct */
	uint64_t *lsn; /* per segment */
	size_t nat;
};

struct ext_alloc {
	uint64_t first, end, lsn;
};

static int cmp_lsn_desc(const void *a, const void *b)
{
	uint64_t x = ((const struct ext_alloc *)a)->lsn, y = ((const struct ext_alloc *)b)->lsn;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The index of the last boundary <= pid (nat when pid is below them all). */
static size_t seg_of(const struct ext_redo *er, uint64_t pid)
{
	size_t lo = 0, hi = er->nat; /* first boundary > pid, in [lo, hi] */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (er->at[mid] <= pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : er->nat;
}

/* The next segment at or after i not yet given an LSN (path halving). */
static size_t seg_open(size_t *nx, size_t i)
{
	while (nx[i] != i) {
		nx[i] = nx[nx[i]];
		i = nx[i];
	}
	return i;
}

/* Give each segment the LSN of the latest allocation covering it: the
 * allocations newest first, each filling the segments still without one. */
static int ext_redo_build(struct ext_redo *er, struct ext_alloc *a, size_t n)
{
	er->at = malloc(2 * n * sizeof(*er->at));
	er->lsn = calloc(2 * n, sizeof(*er->lsn));
	size_t *nx = malloc((2 * n + 1) * sizeof(*nx));
	if (!er->at || !er->lsn || !nx) {
		free(nx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		er->at[2 * i] = a[i].first;
		er->at[2 * i + 1] = a[i].end;
	}
	qsort(er->at, 2 * n, sizeof(*er->at), cmp_u64);
	er->nat = 0;
	for (size_t i = 0; i < 2 * n; i++)
		if (!er->nat || er->at[er->nat - 1] != er->at[i])
			er->at[er->nat++] = er->at[i];
	for (size_t i = 0; i <= er->nat; i++)
		nx[i] = i;
	qsort(a, n, sizeof(*a), cmp_lsn_desc);
	for (size_t k = 0; k < n; k++) {
		size_t stop = seg_of(er, a[k].end);
		for (size_t i = seg_open(nx, seg_of(er, a[k].first)); i < stop; i = seg_open(nx, i)) {
			er->lsn[i] = a[k].lsn;
			nx[i] = i + 1;
		}
	}
	free(nx);
	return 0;
}

/* The LSN of the latest extent allocation in the redo range covering pid. */
static uint64_t ext_redo_lsn(const struct ext_redo *er, ruma_pid pid)
{
	size_t i = seg_of(er, pid); /* nat when below every boundary */
	return i + 1 < er->nat ? er->lsn[i] : 0;
}

static void ext_redo_free(struct ext_redo *er)
{
	free(er->at);
	free(er->lsn);
}

/* The pass before redo: the extent allocations at or after the redo LSN
 * (a malformed record is left to redo, which reports it). */
static int ext_redo_collect(ruma_bm *bm, ruma_wal *w, struct ext_redo *er)
{
	ruma_wal_iter *it;
	ruma_wal_record rec;
	struct ext_alloc *a = NULL;
	size_t n = 0, cap = 0;
	int r = ruma_wal_iter_open(w, &it);
	while (!r && (r = ruma_wal_iter_next(it, &rec)) == 1) {
		struct bm_wal_extent e;
		r = 0;
		if (rec.type != BM_WAL_EXTENT || rec.lsn < bm->meta_redo_lsn || rec.len != sizeof(e))
			continue;
		memcpy(&e, rec.payload, sizeof(e));
		if (e.op != BM_EXTENT_ALLOC || e.n == 0 || e.first + e.n < e.first)
			continue;
		if (grow((void **)&a, &cap, n + 1, sizeof(*a)))
			r = -ENOMEM;
		else
			a[n++] = (struct ext_alloc){ e.first, e.first + e.n, rec.lsn };
	}
	ruma_wal_iter_close(it);
	if (!r && n)
		r = ext_redo_build(er, a, n);
	free(a);
	return r;
}

static int apply_record(ruma_bm *bm, struct txns *x, const struct ext_redo *er,
			const ruma_wal_record *rec)
{
	const char *b = rec->payload, *end = b + rec->len;
	if (rec->type >= RUMA_BM_LOG_UNDO && rec->type <= RUMA_BM_LOG_END)
		return note_txn(x, rec);
	if (rec->type == BM_WAL_MTR && rec->len && *b == (char)BM_MTR_UNDO) {
		int r = note_carried_undo(x, rec, &b);
		if (r)
			return r;
	}
	if (rec->lsn < bm->meta_redo_lsn)
		return 0; /* before the last checkpoint: on disk already */
	if (rec->type == BM_WAL_START) { /* a session's start: nothing to redo */
		uint64_t id[3];
		if (rec->len != sizeof(id))
			return RUMA_ECORRUPT;
		memcpy(id, b, sizeof(id));
		return id[0] == bm->store_id[0] && id[1] == bm->store_id[1] ? 0 : RUMA_ECORRUPT;
	}
	if (rec->type == BM_WAL_META) {
		struct { uint32_t slot; uint32_t rsv; uint64_t value; } m;
		if (rec->len != sizeof(m))
			return RUMA_ECORRUPT;
		memcpy(&m, b, sizeof(m));
		if (m.slot >= RUMA_BM_META_SLOTS)
			return RUMA_ECORRUPT;
		atomic_store(&bm->meta_slots[m.slot], m.value);
		return 0;
	}
	if (rec->type == BM_WAL_EXTENT) {
		struct bm_wal_extent e;
		if (rec->len != sizeof(e))
			return RUMA_ECORRUPT;
		memcpy(&e, b, sizeof(e));
		bm->recovery.allocs += e.op == BM_EXTENT_ALLOC;
		bm->recovery.frees += e.op == BM_EXTENT_FREE;
		return bm_recover_extent(bm, e.op, e.first, e.n);
	}
	if (rec->type != BM_WAL_MTR)
		return RUMA_ECORRUPT;
	while (b < end) {
		ruma_pid pid;
		if (end - b < 9)
			return RUMA_ECORRUPT;
		unsigned kind = (unsigned char)*b;
		memcpy(&pid, b + 1, sizeof(pid));
		bool dead = rec->lsn < ext_redo_lsn(er, pid);
		int r = apply_entry(bm, kind, pid, dead, b + 9, end, rec, &b);
		if (r)
			return r;
	}
	return 0;
}

/* The session goes on with a log: keep the redone log (its records stay
 * until the session's first checkpoint writes the pages), so open need not
 * write the pool back first.  On failure the log is closed. */
static int finish_keeping_log(ruma_bm *bm, ruma_wal *w)
{
	unsigned flush_ms = bm->cfg.durability == RUMA_BM_DURABLE_ASYNC
				    ? (bm->cfg.wal_flush_ms ? bm->cfg.wal_flush_ms : 5u)
				    : 0u;
	int r = ruma_wal_resume(w, flush_ms);
	if (!r)
		r = bm_wal_continue(bm, w);
	if (r)
		(void)ruma_wal_close(w);
	return r;
}

/* The session goes on without a log: write and sync every page and the
 * metadata (a checkpoint), then empty the log, its LSNs continuing. */
static int finish_writing_back(ruma_bm *bm, ruma_wal *w, uint64_t end)
{
	/* page 0 names the LSN the emptied log continues from before the log is
	 * emptied: a crash in between finds the log holding what page 0 says */
	uint64_t from = RUMA_MAX(RUMA_MAX(end, bm->meta_next_lsn), ruma_wal_end(w));
	bm->meta_next_lsn = bm->ckpt_redo = bm->ckpt_undo = from;
	int r = bm_checkpoint(bm);
	if (!r)
		r = ruma_wal_reset(w, from);
	return r;
}

static void say_id(ruma_bm *bm, char *buf, size_t n)
{
	snprintf(buf, n, "%016" PRIx64 "%016" PRIx64, bm->store_id[0], bm->store_id[1]);
}

/* The log opened for recovery could not be: say which file the store needs. */
static int log_unreadable(ruma_bm *bm, int r)
{
	char id[40];
	say_id(bm, id, sizeof(id));
	if (r == -ENOENT) {
		bm_say(&bm->cfg,
			"%s was not closed cleanly and needs its log %s.wal (store id %s), which is "
			"missing: if the store was renamed, copied or linked, put its log next to it "
			"under that name (the log's header names the same id); without it the "
			"changes since the last checkpoint cannot be recovered (recreate the store "
			"to start over)",
			bm->path, bm->path, id);
		return RUMA_ECORRUPT;
	}
	bm_say(&bm->cfg, "%s was not closed cleanly and its log %s.wal (store id %s) cannot be "
		"used: %s", bm->path, bm->path, id, ruma_strerror(r));
	return r;
}

/* The log must hold what page 0 says was logged: from the last checkpoint's
 * undo start up to page 0's end LSN (made durable before page 0 was
 * written).  With salvage a shorter log is replayed with a message. */
static int log_covers(ruma_bm *bm, ruma_wal *w)
{
	uint64_t start = ruma_wal_start(w), end = ruma_wal_end(w);
	uint64_t need_from = RUMA_MIN(bm->meta_redo_lsn, bm->meta_undo_lsn);
	if (start <= need_from && end >= bm->meta_next_lsn)
		return 0;
	char id[40];
	say_id(bm, id, sizeof(id));
	bm_say(&bm->cfg,
		"%s.wal (store id %s) holds LSNs %" PRIu64 " to %" PRIu64 " but %s needs %" PRIu64
		" to %" PRIu64 ": the log was cut, emptied or replaced, and committed changes "
		"would be lost; %s",
		bm->path, id, start, end, bm->path, need_from, bm->meta_next_lsn,
		bm->cfg.salvage_log && start <= need_from
			? "salvage: replaying what it holds (the store may lack those changes)"
			: "put the store's own log back, or open with salvage_log to "
			  "accept the loss");
	return bm->cfg.salvage_log && start <= need_from ? 0 : RUMA_ECORRUPT;
}

int bm_recover(ruma_bm *bm)
{
	uint64_t t0 = now_usec();
	ruma_wal *w;
	ruma_wal_iter *it = NULL;
	ruma_wal_record rec;
	uint64_t end = 0;
	struct txns x = { 0 };
	struct ext_redo er = { 0 };
	int r = bm_wal_open(bm, &w);

	if (r)
		return log_unreadable(bm, r);
	memset(&bm->recovery, 0, sizeof(bm->recovery));
	bm->recovery.ran = true;
	r = ext_redo_collect(bm, w, &er);
	if (!r)
		r = ruma_wal_iter_open(w, &it);
	while (!r && (r = ruma_wal_iter_next(it, &rec)) == 1) {
		bm->recovery.records++;
		bm->recovery.log_bytes += rec.end - rec.lsn;
		end = rec.end;
		r = apply_record(bm, &x, &er, &rec);
		if (r == RUMA_ECORRUPT)
			bm_say(&bm->cfg, "%s.wal: record at LSN %" PRIu64 " does not fit the store",
				bm->path, rec.lsn);
	}
	if (it)
		ruma_wal_iter_discarded(it, &bm->recovery.discarded_records,
					&bm->recovery.discarded_bytes);
	ruma_wal_iter_close(it);
	ext_redo_free(&er);
	if (!r)
		r = log_covers(bm, w);
	if (!r)
		pick_losers(bm, &x);
	for (size_t i = 0; x.undo && i < x.n; i++)
		free((void *)x.undo[i].payload);
	free(x.undo);
	free(x.done);
	bool keep = !r && (bm->cfg.durability != RUMA_BM_DURABLE_OFF || bm->npending);
	if (keep) {
		r = finish_keeping_log(bm, w);
	} else {
		if (!r)
			r = finish_writing_back(bm, w, end);
		int r2 = ruma_wal_close(w);
		r = r ? r : r2;
	}
	bm->recovery.usec = now_usec() - t0;
	if (r) {
		bm_say(&bm->cfg, "%s: recovery failed: %s", bm->path, ruma_strerror(r));
		return r;
	}
	bm->needs_recovery = false;
	bm_say(&bm->cfg,
		"%s was not closed cleanly: recovered from its log in %.1f ms: %" PRIu64
		" records (%" PRIu64 " bytes), %" PRIu64 " page changes redone, %" PRIu64
		" already on disk, %" PRIu64 " full page images, %" PRIu64 " allocations, %" PRIu64
		" frees; %zu undo records of unfinished transactions left to undo; %s",
		bm->path, (double)bm->recovery.usec / 1000.0, bm->recovery.records,
		bm->recovery.log_bytes, bm->recovery.pages_redone, bm->recovery.pages_skipped,
		bm->recovery.full_images, bm->recovery.allocs, bm->recovery.frees, bm->npending,
		bm->wal ? "the log is kept until the first checkpoint writes the pages"
			: "every page written back, the log emptied");
	return 0;
}

void ruma_bm_get_recovery(ruma_bm *bm, ruma_bm_recovery *out)
{
	*out = bm->recovery;
}
