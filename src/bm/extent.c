/*
 * extent.c — extents: runs of contiguous page ids for large values (BLOBs,
 * docs/blob.md), and their free-space index, writes, pinned reads and sync.
 *
 * An extent is n pages [first, first + n) whose bytes belong to the caller
 * whole: no trailer, so a value laid into it is contiguous in the file and
 * in the pool's virtual range (page pid lives at base + pid * 4 KiB).  The
 * caller protects an extent's bytes with a CRC-32C it keeps (the BLOB state,
 * src/db/blob.c); ruma_bm_extent_pin checks it whenever a page of the extent
 * came from the file.  Extent pages are written once, by the caller's
 * thread, around the pool: whole page-aligned pages straight from the
 * caller's buffer in large writes (one per 16 MiB: the kernel splits them
 * and keeps the device busy), other bytes through the thread's 4 MiB bounce
 * buffer (page aligned, so O_DIRECT works).  The pages do not enter the
 * pool (a resident copy of their previous life is dropped): filling pool
 * pages would cost a first touch of each and push the tree's pages out for
 * a value that is often not read soon.  They are never dirty in the pool:
 * eviction drops them, the cleaner and checkpoints never see them.  A pin
 * reads each run of missing pages with one read.  A copy out of an extent
 * may read around the pool instead (ruma_bm_extent_read without fill, or
 * an extent too large to pin): the whole extent from the file, straight
 * into the caller's aligned buffer or through the bounce buffer, its CRC
 * checked on the way; the file is as good a source as the pool, since the
 * pool never holds a dirty extent page.
 *
 * Free space.  Freed extent pages are marked free in a bitmap of their own
 * (ext_bits), which page 0's bitmap receives together with the single
 * pages' (so the checkers, the statistics and the next open know them),
 * and entered into an index of free runs: each run is in the list of its
 * size class (floor(log2(length)), 64 classes) and in two hash tables, by
 * its first page and by its end, so a freed run merges with free runs
 * right before and after it in O(1).  An allocation of n pages takes the
 * best fit among a bounded number of runs of n's own class, else among a
 * bounded number of runs of the larger classes (of two as long, the lower),
 * and gives the rest back; no bitmap scan.  When no run is long enough, a
 * free run that ends at the high-water mark is extended, so the file grows
 * only by the pages missing.  Free pages keep their disk space for reuse up
 * to a quarter of the pages in use (at least 16 MiB); beyond that a freed
 * extent of 1 MiB or more gives its space back to the file system (a hole
 * punched before its pages can be reused: punch), so the file's blocks
 * follow the live bytes down while overwrites under steady churn reuse
 * written space.  Single pages
 * (ruma_bm_alloc) keep their bitmap and never take a page of the extent
 * space, so runs stay whole.  The index is built at the first extent call
 * of a session from the free runs of at least EXT_INDEX_MIN pages of the
 * bitmap read at open, which move into the extent space; a run is checked
 * against ext_bits when chosen (split into its free pieces if need be).
 *
 * Durability: the log calls bm_extent_before_log_write before it writes
 * records to its file; when extent writes completed since the last sync,
 * it syncs the store first (ruma_bm_extent_sync, grouped), so a record
 * naming an extent (the layer above appends it after the extent's write
 * returned) is never durable before the extent, for synchronous and
 * asynchronous commits alike, without a sync of their own.
 *
 * Logging: an allocation and a free are one BM_WAL_EXTENT record each
 * (first, count), redone by recovery (recover.c), never undone: what an
 * unfinished transaction allocated is found and freed by the layer above
 * (a store check after recovery, src/db/blob.c).
 */
#include "bm/bm_int.h"
#include "bm/mtr.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define EXT_CLASSES 64u
#define EXT_FIT_PROBES 16u  /* runs of n's own class looked at for a best fit */
#define EXT_INDEX_MIN 4u    /* shorter free runs found at index build stay bitmap-only */
#define EXT_WRITE_MAX 4096u /* pages per write of whole aligned pages (16 MiB) */
#define EXT_BOUNCE_PAGES 1024u /* a thread's bounce buffer: partial writes, reads around (4 MiB) */
#define EXT_BOUNCE_ALIGN ((size_t)2 << 20) /* ... on huge pages */
#define EXT_PIECE_PAGES 256u /* a read around the pool goes in pieces of 1 MiB ... */
#define EXT_PIECES 16u      /* ... up to this many in flight on the thread's ring */
#define EXT_PUNCH_MIN 256u  /* a freed extent this long (1 MiB) may go back to the file system */
#define EXT_KEEP_MIN 4096u  /* free pages always kept for reuse (16 MiB) */

struct ext_run {
	uint64_t first, len;
	struct ext_run *prev, *next; /* in its class list */
};

/* Open-addressing map u64 -> run (key + 1 stored; 0 = empty). */
struct ext_map {
	uint64_t *key;
	struct ext_run **val;
	size_t cap, n;
};

struct bm_extents {
	struct ext_run *cls[EXT_CLASSES];
	struct ext_map by_first, by_end;
	uint64_t runs;
};

/* ---- the map ---------------------------------------------------------------- */

static size_t map_slot(const struct ext_map *m, uint64_t k)
{
	k *= 0x9e3779b97f4a7c15ull;
	return (size_t)(k ^ (k >> 31)) & (m->cap - 1);
}

static int map_grow(struct ext_map *m);

static int map_put(struct ext_map *m, uint64_t k, struct ext_run *v)
{
	if (2 * (m->n + 1) > m->cap && map_grow(m))
		return -ENOMEM;
	size_t i = map_slot(m, k);
	while (m->key[i])
		i = (i + 1) & (m->cap - 1);
	m->key[i] = k + 1;
	m->val[i] = v;
	m->n++;
	return 0;
}

static int map_grow(struct ext_map *m)
{
	struct ext_map old = *m;
	m->cap = old.cap ? old.cap * 2 : 256;
	m->key = calloc(m->cap, sizeof(*m->key));
	m->val = calloc(m->cap, sizeof(*m->val));
	if (!m->key || !m->val) {
		free(m->key);
		free(m->val);
		*m = old;
		return -ENOMEM;
	}
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.key[i])
			(void)map_put(m, old.key[i] - 1, old.val[i]);
	free(old.key);
	free(old.val);
	return 0;
}

static struct ext_run *map_get(const struct ext_map *m, uint64_t k)
{
	if (!m->cap)
		return NULL;
	for (size_t i = map_slot(m, k); m->key[i]; i = (i + 1) & (m->cap - 1))
		if (m->key[i] == k + 1)
			return m->val[i];
	return NULL;
}

/* Remove k (present), shifting the following cluster back (no tombstones). */
static void map_del(struct ext_map *m, uint64_t k)
{
	size_t i = map_slot(m, k);
	while (m->key[i] != k + 1)
		i = (i + 1) & (m->cap - 1);
	m->key[i] = 0;
	m->n--;
	for (size_t j = (i + 1) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = map_slot(m, m->key[j] - 1);
		bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
		if (movable) {
			m->key[i] = m->key[j];
			m->val[i] = m->val[j];
			m->key[j] = 0;
			i = j;
		}
	}
}

/* ---- the index (alloc_mu held) ------------------------------------------------ */

static unsigned class_of(uint64_t len)
{
	return 63u - (unsigned)__builtin_clzll(len);
}

static void run_unlink(struct bm_extents *x, struct ext_run *r)
{
	unsigned c = class_of(r->len);
	if (r->prev)
		r->prev->next = r->next;
	else
		x->cls[c] = r->next;
	if (r->next)
		r->next->prev = r->prev;
	map_del(&x->by_first, r->first);
	map_del(&x->by_end, r->first + r->len);
	x->runs--;
	free(r);
}

/* Enter [first, first + len) as one free run (its neighbours are not runs). */
static int run_add(struct bm_extents *x, uint64_t first, uint64_t len)
{
	struct ext_run *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (struct ext_run){ first, len, NULL, NULL };
	if (map_put(&x->by_first, first, r)) {
		free(r);
		return -ENOMEM;
	}
	if (map_put(&x->by_end, first + len, r)) {
		map_del(&x->by_first, first);
		free(r);
		return -ENOMEM;
	}
	unsigned c = class_of(len);
	r->next = x->cls[c];
	if (r->next)
		r->next->prev = r;
	x->cls[c] = r;
	x->runs++;
	return 0;
}

/* Enter a freed run, merged with the free runs that touch it.  Out of
 * memory the pages stay free in the bitmap only (reused page by page). */
static void run_free(struct bm_extents *x, uint64_t first, uint64_t len)
{
	struct ext_run *before = map_get(&x->by_end, first);
	struct ext_run *after = map_get(&x->by_first, first + len);
	if (before) {
		first = before->first;
		len += before->len;
		run_unlink(x, before);
	}
	if (after) {
		len += after->len;
		run_unlink(x, after);
	}
	(void)run_add(x, first, len);
}

/* Free in the extent space (ext_bits, built with the index). */
static bool bit_free(const ruma_bm *bm, uint64_t pid)
{
	return (bm->ext_bits[pid >> 6] >> (pid & 63)) & 1;
}

/* The length of the free prefix of [first, first + len) in the bitmap. */
static uint64_t free_prefix(const ruma_bm *bm, uint64_t first, uint64_t len)
{
	uint64_t i = 0;
	while (i < len) {
		uint64_t p = first + i;
		if ((p & 63) == 0 && len - i >= 64 && bm->ext_bits[p >> 6] == ~0ull) {
			i += 64;
			continue;
		}
		if (!bit_free(bm, p))
			break;
		i++;
	}
	return i;
}

/* Re-enter the still-free pieces of a run the bitmap no longer agrees with. */
static void run_resplit(struct bm_extents *x, ruma_bm *bm, uint64_t first, uint64_t len)
{
	uint64_t i = 0;
	while (i < len) {
		uint64_t f = free_prefix(bm, first + i, len - i);
		if (f)
			(void)run_add(x, first + i, f);
		i += f;
		while (i < len && !bit_free(bm, first + i))
			i++;
	}
}

/* A run r that the bitmap still holds whole, or NULL (r was split). */
static struct ext_run *run_checked(struct bm_extents *x, ruma_bm *bm, struct ext_run *r)
{
	if (free_prefix(bm, r->first, r->len) == r->len)
		return r;
	uint64_t first = r->first, len = r->len;
	run_unlink(x, r);
	run_resplit(x, bm, first, len);
	return NULL;
}

/* Best fit: the shorter run, and of two as long the lower one (address-
 * ordered, so the end of the file tends to stay free and can shrink). */
static bool fits_better(const struct ext_run *r, const struct ext_run *best)
{
	return !best || r->len < best->len || (r->len == best->len && r->first < best->first);
}

/* A run of at least n pages from the index, checked; NULL: none. */
static struct ext_run *run_find(struct bm_extents *x, ruma_bm *bm, uint64_t n)
{
	unsigned c = class_of(n);
	for (int again = 0; again < 4; again++) {
		struct ext_run *best = NULL;
		unsigned probes = 0;
		for (struct ext_run *r = x->cls[c]; r && probes < EXT_FIT_PROBES; r = r->next, probes++)
			if (r->len >= n && fits_better(r, best))
				best = r;
		for (unsigned k = c + 1; !best && k < EXT_CLASSES; k++)
			for (struct ext_run *r = x->cls[k]; r && probes < 2 * EXT_FIT_PROBES;
			     r = r->next, probes++)
				if (fits_better(r, best))
					best = r;
		if (!best)
			return NULL;
		struct ext_run *ok = run_checked(x, bm, best);
		if (ok && ok->len >= n)
			return ok;
	}
	return NULL;
}

/* The length of the free prefix of [first, first + len) in free_bits. */
static uint64_t page_free_prefix(const ruma_bm *bm, uint64_t first, uint64_t len)
{
	uint64_t i = 0;
	while (i < len && ((bm->free_bits[(first + i) >> 6] >> ((first + i) & 63)) & 1))
		i++;
	return i;
}

/* Move a run found free in the page bitmap into the extent space. */
static int run_adopt(ruma_bm *bm, struct bm_extents *x, uint64_t first, uint64_t len)
{
	int r = run_add(x, first, len);
	if (r)
		return r;
	for (uint64_t p = first; p < first + len; p++) {
		bm->free_bits[p >> 6] &= ~(1ull << (p & 63));
		bm->ext_bits[p >> 6] |= 1ull << (p & 63);
	}
	bm->free_count -= len;
	bm->ext_free_count += len;
	return 0;
}

/* The extent space at the first extent call of a session: the page
 * bitmap's free runs of EXT_INDEX_MIN pages and more (out of memory: what
 * is not moved stays reusable page by page). */
static int index_build(ruma_bm *bm)
{
	struct bm_extents *x = calloc(1, sizeof(*x));
	bm->ext_bits = calloc(bm->free_words, sizeof(uint64_t));
	if (!x || !bm->ext_bits) {
		free(x);
		free(bm->ext_bits);
		bm->ext_bits = NULL;
		return -ENOMEM;
	}
	uint64_t hw = atomic_load(&bm->alloc_hw);
	for (uint64_t p = bm->meta_pages; p < hw;) {
		uint64_t f = page_free_prefix(bm, p, hw - p);
		if (f >= EXT_INDEX_MIN && run_adopt(bm, x, p, f))
			break;
		p += f ? f : 1;
	}
	bm->ext = x;
	bm->ext_kept = bm->ext_free_count; /* holes made before are not known */
	return 0;
}

void bm_extent_index_free(ruma_bm *bm)
{
	struct bm_extents *x = bm->ext;
	if (!x)
		return;
	for (unsigned c = 0; c < EXT_CLASSES; c++)
		for (struct ext_run *r = x->cls[c], *nx; r; r = nx) {
			nx = r->next;
			free(r);
		}
	free(x->by_first.key);
	free(x->by_first.val);
	free(x->by_end.key);
	free(x->by_end.val);
	free(x);
	bm->ext = NULL;
	free(bm->ext_bits);
	bm->ext_bits = NULL;
}

/* ---- allocation and free --------------------------------------------------------- */

static void bits_take(ruma_bm *bm, uint64_t first, uint64_t n)
{
	for (uint64_t p = first; p < first + n; p++)
		bm->ext_bits[p >> 6] &= ~(1ull << (p & 63));
	bm->ext_free_count -= n;
}

/* n pages at the high-water mark (alloc_mu held). */
static int take_new(ruma_bm *bm, uint64_t n, ruma_pid *first)
{
	uint64_t hw = atomic_load(&bm->alloc_hw);
	if (n > bm->virt_pages - hw)
		return RUMA_EVIRTFULL;
	int r = bm_ensure_capacity(bm, hw + n);
	if (r)
		return r;
	for (uint64_t p = hw; p < hw + n; p++)
		atomic_store(&bm->state[p], bm_word(BM_EVICTED, 0, false));
	/* ready frames among them (ahead.c) now back pages not resident */
	uint64_t ready = RUMA_MIN(n, bm_ahead_ready(bm));
	atomic_fetch_sub(&bm->phys_used, ready);
	atomic_fetch_sub(&bm->ahead_held, ready);
	atomic_store(&bm->alloc_hw, hw + n);
	*first = hw;
	return 0;
}

static int log_extent(ruma_bm *bm, unsigned op, ruma_pid first, uint64_t n)
{
	if (!bm->wal)
		return 0;
	struct bm_wal_extent rec = { op, 0, first, n };
	int r = ruma_wal_append(bm->wal, BM_WAL_EXTENT, &rec, sizeof(rec), NULL, NULL);
	if (r) {
		int none = 0;
		(void)atomic_compare_exchange_strong(&bm->wal_err, &none, r);
	}
	return r;
}

/* The first n pages of a free run (alloc_mu held); the rest stays free. */
static void take_run(ruma_bm *bm, struct ext_run *run, uint64_t n, ruma_pid *first)
{
	*first = run->first;
	uint64_t rest = run->len - n, at = run->first + n;
	run_unlink(bm->ext, run);
	if (rest)
		(void)run_add(bm->ext, at, rest);
	bits_take(bm, *first, n);
}

/* n pages ending at the high-water mark: a free run that ends there is
 * extended by the pages still missing, so the file grows by those only
 * (alloc_mu held; called when no free run was found). */
static int take_tail(ruma_bm *bm, uint64_t n, ruma_pid *first)
{
	struct ext_run *tail = map_get(&bm->ext->by_end, atomic_load(&bm->alloc_hw));
	if (tail)
		tail = run_checked(bm->ext, bm, tail);
	if (!tail)
		return take_new(bm, n, first);
	if (tail->len >= n) {
		take_run(bm, tail, n, first);
		return 0;
	}
	ruma_pid more;
	int r = take_new(bm, n - tail->len, &more);
	if (r)
		return r;
	take_run(bm, tail, tail->len, first);
	return 0;
}

int ruma_bm_extent_alloc(ruma_bm *bm, uint64_t n, ruma_pid *first)
{
	if (!bm || !first || n == 0 || n > bm->virt_pages)
		return -EINVAL;
	if (bm->cfg.read_only)
		return -EACCES;
	int r = 0;
	pthread_mutex_lock(&bm->alloc_mu);
	bm_ahead_idle(bm); /* no id above the mark is being made ready until unlock */
	if (!bm->ext)
		r = index_build(bm);
	struct ext_run *run = r ? NULL : run_find(bm->ext, bm, n);
	if (run)
		take_run(bm, run, n, first);
	else if (!r)
		r = take_tail(bm, n, first);
	if (!r)
		atomic_store(&bm->ext_used, true);
	pthread_mutex_unlock(&bm->alloc_mu);
	if (!r)
		r = log_extent(bm, BM_EXTENT_ALLOC, *first, n);
	return r;
}

/* Give the disk space of a freed extent of at least EXT_PUNCH_MIN pages
 * back to the file system (a hole: the file keeps its size) when the free
 * pages that may keep theirs (ext_kept, an upper bound: an allocation may
 * take kept pages or holes) exceed a quarter of the pages in use, at least
 * EXT_KEEP_MIN.  alloc_mu is held, so no allocation can take the pages
 * before the hole is made; no state in the log or on disk refers to them
 * (the layer above frees an extent once the commit that replaced it is
 * durable and no reader is left, or one no commit ever named), so no
 * recovery reads them.  Where the file system cannot punch, the space
 * stays in the file, reused as before. */
static void punch(ruma_bm *bm, uint64_t first, uint64_t n)
{
	uint64_t hw = atomic_load(&bm->alloc_hw), nfree = bm->free_count + bm->ext_free_count;
	uint64_t used = hw > nfree ? hw - nfree : 0;
	bm->ext_kept = RUMA_MIN(bm->ext_kept + n, bm->ext_free_count + n);
	if (n < EXT_PUNCH_MIN || bm->is_blockdev || bm->punch_off ||
	    bm->ext_kept <= RUMA_MAX(used / 4, EXT_KEEP_MIN))
		return;
	int r = ruma_os_fallocate(bm->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)(first * RUMA_BM_PAGE_SIZE), (off_t)(n * RUMA_BM_PAGE_SIZE));
	if (!r) {
		bm->ext_kept -= n;
		return;
	}
	bm->punch_off = true;
	bm_say(&bm->cfg, "%s: freed extents keep their disk space: punching a hole failed: %s",
	       bm->path, ruma_strerror(r));
}

int ruma_bm_extent_free(ruma_bm *bm, ruma_pid first, uint64_t n)
{
	if (!bm || n == 0 || first < bm->meta_pages || first + n > atomic_load(&bm->alloc_hw) ||
	    first + n < first)
		return -EINVAL;
	if (bm->cfg.read_only)
		return -EACCES;
	int r = log_extent(bm, BM_EXTENT_FREE, first, n); /* before the bits can be seen */
	if (r)
		return r;
	pthread_mutex_lock(&bm->alloc_mu);
	if (!bm->ext)
		r = index_build(bm);
	for (uint64_t p = first; p < first + n; p++)
		if (((bm->free_bits[p >> 6] >> (p & 63)) & 1) || (!r && bit_free(bm, p))) {
			pthread_mutex_unlock(&bm->alloc_mu);
			bm_say(&bm->cfg, "extent [%" PRIu64 ", +%" PRIu64 ") freed twice (page %" PRIu64
				" is free)", first, n, p);
			return -EINVAL;
		}
	punch(bm, first, n);
	/* out of memory for the index: the pages are reused one by one */
	uint64_t *bits = r ? bm->free_bits : bm->ext_bits;
	for (uint64_t p = first; p < first + n; p++) {
		bits[p >> 6] |= 1ull << (p & 63);
		bm_written_set(bm, p, false);
	}
	if (r) {
		bm->free_count += n;
	} else {
		bm->ext_free_count += n;
		run_free(bm->ext, first, n);
	}
	pthread_mutex_unlock(&bm->alloc_mu);
	return 0;
}

bool ruma_bm_extents_used(ruma_bm *bm)
{
	return atomic_load(&bm->ext_used);
}

int bm_recover_extent(ruma_bm *bm, unsigned op, ruma_pid first, uint64_t n)
{
	if (n == 0 || first < bm->meta_pages || first + n > bm->virt_pages || first + n < first)
		return RUMA_ECORRUPT;
	atomic_store(&bm->ext_used, true);
	if (op == BM_EXTENT_ALLOC) { /* at open: no extent space yet, free_bits only */
		int r = bm_recover_alloc(bm, first + n - 1); /* the high-water mark */
		pthread_mutex_lock(&bm->alloc_mu);
		for (uint64_t p = first; !r && p + 1 < first + n; p++)
			if ((bm->free_bits[p >> 6] >> (p & 63)) & 1) {
				bm->free_bits[p >> 6] &= ~(1ull << (p & 63));
				bm->free_count--;
			}
		pthread_mutex_unlock(&bm->alloc_mu);
		/* the extent's bytes are in the file, checked against their CRC
		 * when read: no copy redo left of the pages' earlier lives (B-tree
		 * pages freed before) may stand in for them or be written over them */
		for (uint64_t p = first; !r && p < first + n; p++) {
			bm_discard_resident(bm, p);
			bm_written_set(bm, p, true); /* pages written around the pool */
		}
		return r;
	}
	if (op != BM_EXTENT_FREE)
		return RUMA_ECORRUPT;
	for (uint64_t p = first; p < first + n; p++)
		bm_recover_free(bm, p);
	return 0;
}

/* ---- writes ------------------------------------------------------------------------ */

/* The thread's bounce buffer (made at its first use, kept until the store
 * closes): EXT_BOUNCE_PAGES long, 2 MiB aligned, with huge pages advised.
 * A direct request from 2 MiB pages is a few segments where one from 4 KiB
 * pages is a segment per page, which costs the device path per segment. */
static char *bounce_of(struct bm_thread *t)
{
	void *p;
	size_t len = (size_t)EXT_BOUNCE_PAGES * RUMA_BM_PAGE_SIZE;
	if (!t->bounce && !posix_memalign(&p, EXT_BOUNCE_ALIGN, len)) {
		(void)ruma_os_madvise(p, len, MADV_HUGEPAGE); /* advice: refused, 4 KiB pages */
		t->bounce = p;
	}
	return t->bounce;
}

/* Write pages [pid, pid + k) from data (len bytes, the rest zero): straight
 * from data when it is whole aligned pages, else through the bounce buffer
 * (k at most EXT_BOUNCE_PAGES).  Any resident copy of the pages (of their
 * previous life) is dropped first: the file holds the bytes to trust. */
static int write_chunk(ruma_bm *bm, struct bm_thread *t, ruma_pid pid, uint64_t k,
		       const char *data, size_t len)
{
	const char *from = data;
	for (uint64_t i = 0; i < k; i++)
		bm_discard_resident(bm, pid + i);
	if (len != k * RUMA_BM_PAGE_SIZE || (uintptr_t)data % RUMA_BM_PAGE_SIZE) {
		char *b = bounce_of(t);
		if (!b)
			return -ENOMEM;
		memcpy(b, data, len);
		memset(b + len, 0, k * RUMA_BM_PAGE_SIZE - len);
		from = b;
	}
	int r = ruma_os_pwrite_full(bm->fd, from, k * RUMA_BM_PAGE_SIZE,
				    (off_t)(pid * RUMA_BM_PAGE_SIZE));
	if (r) {
		bm_say(&bm->cfg, "%s: writing extent pages [%" PRIu64 ", +%" PRIu64 "): %s",
		       bm->path, pid, k, ruma_strerror(r));
		return r;
	}
	atomic_fetch_add_explicit(&t->writes, k, memory_order_relaxed);
	atomic_fetch_add(&bm->ext_written, 1);
	return 0;
}

int ruma_bm_extent_write(ruma_bm *bm, ruma_pid pid, const void *data, size_t len)
{
	struct bm_thread *t;
	if (!bm || (!data && len) || pid < bm->meta_pages ||
	    pid + (len + RUMA_BM_PAGE_SIZE - 1) / RUMA_BM_PAGE_SIZE > atomic_load(&bm->alloc_hw))
		return -EINVAL;
	if (bm->cfg.read_only)
		return -EACCES;
	int r = bm_thread_get(bm, &t);
	const char *d = data;
	bool aligned = (uintptr_t)d % RUMA_BM_PAGE_SIZE == 0;
	while (!r && len) {
		/* whole aligned pages in large writes, the rest through the bounce */
		size_t whole = len - len % RUMA_BM_PAGE_SIZE;
		size_t part = aligned && whole
				      ? RUMA_MIN(whole, (size_t)EXT_WRITE_MAX * RUMA_BM_PAGE_SIZE)
				      : RUMA_MIN(len, (size_t)EXT_BOUNCE_PAGES * RUMA_BM_PAGE_SIZE);
		uint64_t k = (part + RUMA_BM_PAGE_SIZE - 1) / RUMA_BM_PAGE_SIZE;
		r = write_chunk(bm, t, pid, k, d, part);
		pid += k;
		d += part;
		len -= part;
	}
	return r;
}

int ruma_bm_pages_write(ruma_bm *bm, ruma_pid first, uint64_t n, void *pages)
{
	struct bm_thread *t;
	if (!bm || !pages || n == 0 || n > EXT_WRITE_MAX || first < bm->meta_pages ||
	    first + n > atomic_load(&bm->alloc_hw) || (uintptr_t)pages % RUMA_BM_PAGE_SIZE)
		return -EINVAL;
	if (bm->cfg.read_only)
		return -EACCES;
	int r = bm_thread_get(bm, &t);
	if (r)
		return r;
	char *p = pages;
	for (uint64_t i = 0; i < n; i++) {
		char *pg = p + i * RUMA_BM_PAGE_SIZE;
		bm_discard_resident(bm, first + i); /* a copy of an earlier life */
		bm_page_set_lsn(pg, 0); /* never logged: its first change logs an image */
		bm_page_seal(bm, first + i, pg);
	}
	r = ruma_os_pwrite_full(bm->fd, p, n * RUMA_BM_PAGE_SIZE, (off_t)(first * RUMA_BM_PAGE_SIZE));
	if (r) {
		bm_say(&bm->cfg, "%s: writing pages [%" PRIu64 ", +%" PRIu64 "): %s", bm->path, first,
		       n, ruma_strerror(r));
		return r;
	}
	for (uint64_t i = 0; i < n; i++)
		bm_written_set(bm, first + i, true); /* a fix reads it from the file */
	atomic_fetch_add_explicit(&t->writes, n, memory_order_relaxed);
	atomic_fetch_add(&bm->ext_written, 1);
	return 0;
}

int ruma_bm_extent_sync(ruma_bm *bm)
{
	uint64_t ticket = atomic_fetch_add(&bm->ext_sync_req, 1) + 1;
	pthread_mutex_lock(&bm->ext_sync_mu);
	while (bm->ext_sync_done < ticket && !bm->ext_sync_err) {
		if (bm->ext_syncing) {
			pthread_cond_wait(&bm->ext_sync_cv, &bm->ext_sync_mu);
			continue;
		}
		bm->ext_syncing = true;
		uint64_t target = atomic_load(&bm->ext_sync_req);
		uint64_t written = atomic_load(&bm->ext_written);
		pthread_mutex_unlock(&bm->ext_sync_mu);
		int r = ruma_os_fdatasync(bm->fd);
		pthread_mutex_lock(&bm->ext_sync_mu);
		bm->ext_syncing = false;
		if (!r && written > atomic_load(&bm->ext_synced))
			atomic_store(&bm->ext_synced, written);
		if (r) {
			bm_say(&bm->cfg, "%s: syncing extent writes: %s", bm->path, ruma_strerror(r));
			bm->ext_sync_err = r; /* sticky: what reached the disk is unknown */
		}
		bm->ext_sync_done = target;
		pthread_cond_broadcast(&bm->ext_sync_cv);
	}
	int r = bm->ext_sync_err;
	pthread_mutex_unlock(&bm->ext_sync_mu);
	return r;
}

int bm_extent_before_log_write(void *ctx)
{
	ruma_bm *bm = ctx;
	if (atomic_load(&bm->ext_written) == atomic_load(&bm->ext_synced))
		return 0; /* the common case: no extent written since the last sync */
	return ruma_bm_extent_sync(bm);
}

/* ---- pinned reads ---------------------------------------------------------------- */

/* Latch pid for a pin: shared when resident (true), or exclusively from
 * evicted for a read (*claimed; counted resident, not yet in the set). */
static int latch_pin(ruma_bm *bm, struct bm_thread *t, ruma_pid pid, bool *claimed)
{
	unsigned waits = 0;
	for (;;) {
		uint64_t w = atomic_load(&bm->state[pid]);
		unsigned s = bm_st(w);
		if (s == BM_EVICTED) {
			int r = bm_ensure_free(bm, t);
			if (r)
				return r;
			if (!atomic_compare_exchange_strong(&bm->state[pid], &w,
							    bm_word(BM_LOCKED, bm_ver(w), false)))
				continue;
			atomic_fetch_add(&bm->phys_used, 1);
			*claimed = true;
			return 0;
		}
		if (s != BM_LOCKED && bm_try_lock_s(bm, pid, w)) {
			*claimed = false;
			return 0;
		}
		if (s == BM_LOCKED || s >= BM_MAX_SHARED)
			bm_wait(bm, pid, w, &waits);
	}
}

/* Give up the latches of pages [0, got) of a pin (claimed ones dropped). */
static void pin_undo(ruma_bm *bm, ruma_pid first, uint64_t got, const uint8_t *claimed)
{
	for (uint64_t i = 0; i < got; i++) {
		if (claimed[i])
			bm_fault_abort(bm, first + i);
		else
			bm_unlock_s(bm, first + i);
	}
}

/* Read the claimed pages of [first, first + n) in runs. */
static int pin_read(ruma_bm *bm, struct bm_thread *t, ruma_pid first, uint64_t n,
		    const uint8_t *claimed, uint64_t *loaded)
{
	for (uint64_t i = 0; i < n;) {
		if (!claimed[i]) {
			i++;
			continue;
		}
		uint64_t j = i;
		while (j < n && claimed[j])
			j++;
		BM_IGNORE_WRITES_BEGIN();
		int r = ruma_os_pread_full(bm->fd, bm_page(bm, first + i),
					   (j - i) * RUMA_BM_PAGE_SIZE,
					   (off_t)((first + i) * RUMA_BM_PAGE_SIZE));
		BM_IGNORE_WRITES_END();
		if (r) {
			bm_say(&bm->cfg, "%s: reading extent pages [%" PRIu64 ", +%" PRIu64 "): %s",
				bm->path, first + i, j - i, ruma_strerror(r));
			return r;
		}
		*loaded += j - i;
		i = j;
	}
	atomic_fetch_add_explicit(&t->reads, *loaded, memory_order_relaxed);
	return 0;
}

int ruma_bm_extent_pin(ruma_bm *bm, ruma_pid first, uint64_t n, uint64_t bytes, uint32_t crc,
		       void **addr)
{
	struct bm_thread *t;
	if (!bm || !addr || n == 0 || bytes > n * RUMA_BM_PAGE_SIZE || first < bm->meta_pages ||
	    first + n > atomic_load(&bm->alloc_hw) || first + n < first)
		return -EINVAL;
	if (n > ruma_bm_extent_pin_max(bm))
		return -ENOMEM;
	uint8_t *claimed = malloc(n);
	if (!claimed)
		return -ENOMEM;
	int r = bm_thread_get(bm, &t);
	uint64_t got = 0, loaded = 0;
	while (!r && got < n) {
		bool c = false;
		r = latch_pin(bm, t, first + got, &c);
		claimed[got] = c;
		got += r == 0;
	}
	if (!r)
		r = pin_read(bm, t, first, n, claimed, &loaded);
	if (!r && loaded && ruma_crc32c(0, bm_page(bm, first), bytes) != crc) {
		bm_say(&bm->cfg, "%s: extent [%" PRIu64 ", +%" PRIu64 ") does not match its CRC-32C "
			"(%" PRIu64 " bytes at offset %" PRIu64 ")", bm->path, first, n, bytes,
			first * RUMA_BM_PAGE_SIZE);
		r = RUMA_ECORRUPT;
	}
	if (r) {
		pin_undo(bm, first, got, claimed);
		free(claimed);
		return r;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (!claimed[i])
			continue;
		bm_rs_insert(bm, first + i);
		uint64_t w = atomic_load(&bm->state[first + i]);
		atomic_store(&bm->state[first + i], bm_word(1, bm_ver(w), false));
		bm_wake(bm, first + i);
	}
	free(claimed);
	*addr = bm_page(bm, first);
	return 0;
}

void ruma_bm_extent_unpin(ruma_bm *bm, ruma_pid first, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		bm_unlock_s(bm, first + i);
}

void *ruma_bm_extent_addr(ruma_bm *bm, ruma_pid first)
{
	return bm_page(bm, first);
}

uint64_t ruma_bm_extent_pin_max(const ruma_bm *bm)
{
	return RUMA_MAX(bm->phys_pages / 2, 1);
}

bool ruma_bm_extent_resident(ruma_bm *bm, ruma_pid first, uint64_t n)
{
	if (first < bm->meta_pages || first + n > atomic_load(&bm->alloc_hw) || first + n < first)
		return false; /* not an extent: the read that follows says so */
	for (uint64_t i = 0; i < n; i++)
		if (bm_st(atomic_load_explicit(&bm->state[first + i], memory_order_relaxed)) ==
		    BM_EVICTED)
			return false;
	return true;
}

/* How many bytes from extent byte `at` read_around may read straight into
 * buf: whole pages that lie in [off, off + len) at a page-aligned address,
 * up to EXT_WRITE_MAX pages (the kernel keeps the device busy with the
 * pieces); 0 when none. */
static size_t direct_span(uint64_t at, uint64_t bytes, uint64_t off, size_t len, const void *buf)
{
	uint64_t end = RUMA_MIN(bytes, off + len);
	if (at < off || at >= end || ((uintptr_t)buf + (at - off)) % RUMA_BM_PAGE_SIZE)
		return 0;
	uint64_t whole = (end - at) / RUMA_BM_PAGE_SIZE * RUMA_BM_PAGE_SIZE;
	return (size_t)RUMA_MIN(whole, (uint64_t)EXT_WRITE_MAX * RUMA_BM_PAGE_SIZE);
}

/* The pieces of one read on the thread's ring: piece k is bytes
 * [k * PIECE, ...) of dst, read from file offset pos + k * PIECE. */
struct pieces {
	ruma_bm *bm;
	struct io_uring *ring;
	char *dst;
	size_t n, count;    /* bytes (whole pages); pieces */
	off_t pos;
	size_t queued, done; /* pieces queued; pieces finished (in order) */
	int res[EXT_PIECES]; /* per slot (piece % EXT_PIECES): 1 in flight, else its result */
};

static size_t piece_len(const struct pieces *p, size_t k)
{
	size_t piece = (size_t)EXT_PIECE_PAGES * RUMA_BM_PAGE_SIZE;
	return RUMA_MIN(piece, p->n - k * piece);
}

/* Queue pieces while slots are free (err: none). */
static void pieces_queue(struct pieces *p, int err)
{
	while (!err && p->queued < p->count && p->queued - p->done < EXT_PIECES) {
		size_t k = p->queued, at = k * EXT_PIECE_PAGES * RUMA_BM_PAGE_SIZE;
		if (ruma_os_uring_prep_read(p->ring, p->bm->fd, p->dst + at, (unsigned)piece_len(p, k),
					    (uint64_t)p->pos + at, k))
			return; /* the ring is full: the next submit makes room */
		p->res[k % EXT_PIECES] = 1;
		p->queued++;
	}
}

/* Collect what completed: a short piece is finished with a plain read. */
static void pieces_reap(struct pieces *p)
{
	uint64_t tag[EXT_PIECES];
	int res[EXT_PIECES];
	unsigned got = ruma_os_uring_reap(p->ring, tag, res, EXT_PIECES);
	for (unsigned i = 0; i < got; i++) {
		size_t k = (size_t)tag[i], len = piece_len(p, k);
		int v = res[i] < 0 ? res[i] : 0;
		if (res[i] >= 0 && (size_t)res[i] < len) {
			size_t at = k * EXT_PIECE_PAGES * RUMA_BM_PAGE_SIZE + (size_t)res[i];
			v = ruma_os_pread_full(p->bm->fd, p->dst + at, len - (size_t)res[i],
					       p->pos + (off_t)at);
		}
		p->res[k % EXT_PIECES] = v;
	}
}

/* Read n bytes (whole pages) at file offset pos into dst with up to
 * EXT_PIECES pieces in flight, and go on with the CRC *c over each piece as
 * soon as it and those before it arrived, so the checksum overlaps the
 * device's work.  Every piece queued has come back when it returns: 0, the
 * first error, or RUMA_EUNSUPP without a ring (nothing read). */
static int read_pieces(ruma_bm *bm, struct bm_thread *t, char *dst, size_t n, off_t pos,
		       uint32_t *c)
{
	int err = bm_thread_ring(bm, t);
	if (err)
		return err;
	struct pieces p = { .bm = bm, .ring = t->ring, .dst = dst, .n = n, .pos = pos,
			    .count = (n + (size_t)EXT_PIECE_PAGES * RUMA_BM_PAGE_SIZE - 1) /
				     ((size_t)EXT_PIECE_PAGES * RUMA_BM_PAGE_SIZE) };
	while (p.done < p.queued || (!err && p.done < p.count)) {
		pieces_queue(&p, err);
		if (p.done == p.queued)
			return -EBUSY; /* nothing could be queued: an idle ring is never full */
		int v = p.res[p.done % EXT_PIECES];
		if (v != 1) {
			if (!err && v)
				err = v;
			if (!err)
				*c = ruma_crc32c(*c, dst + p.done * EXT_PIECE_PAGES * RUMA_BM_PAGE_SIZE,
						 piece_len(&p, p.done));
			p.done++;
			continue;
		}
		int r = ruma_os_uring_submit_and_wait(p.ring, 1);
		if (r < 0) {
			bm_thread_ring_broken(t); /* what was in flight is finished or cancelled */
			return err ? err : r;
		}
		pieces_reap(&p);
	}
	return err;
}

/* Read `whole` bytes at file offset pos into `into` and go on with the CRC
 * *c over its first `part` bytes: in pieces on the ring when it is long
 * enough to overlap the two, else with one read. */
static int read_crc(ruma_bm *bm, struct bm_thread *t, char *into, size_t whole, size_t part,
		    off_t pos, uint32_t *c)
{
	if (part == whole && whole >= 2 * (size_t)EXT_PIECE_PAGES * RUMA_BM_PAGE_SIZE) {
		int r = read_pieces(bm, t, into, whole, pos, c);
		if (r != RUMA_EUNSUPP)
			return r;
	}
	int r = ruma_os_pread_full(bm->fd, into, whole, pos);
	if (!r)
		*c = ruma_crc32c(*c, into, part);
	return r;
}

/* Read the whole extent from the file around the pool (its bytes never
 * change once written), check its CRC, and copy out [off, off + len):
 * whole pages that fall page-aligned into buf are read straight into it
 * (in pieces on the ring, the CRC following them), the others through the
 * thread's bounce buffer.  Memory whose mapping stays (the caller's buffer,
 * the bounce) costs no first touch per page, which fresh pool pages do
 * (docs/bench/machine.md). */
static int read_around(ruma_bm *bm, ruma_pid first, uint64_t bytes, uint32_t crc, uint64_t off,
		       void *buf, size_t len)
{
	struct bm_thread *t;
	int r = bm_thread_get(bm, &t);
	char *bounce = r ? NULL : bounce_of(t);
	if (!bounce)
		return r ? r : -ENOMEM;
	uint32_t c = 0;
	for (uint64_t at = 0, part; at < bytes && !r; at += part) {
		size_t direct = direct_span(at, bytes, off, len, buf);
		part = direct ? direct
			      : RUMA_MIN((uint64_t)EXT_BOUNCE_PAGES * RUMA_BM_PAGE_SIZE, bytes - at);
		size_t whole = (size_t)(part + RUMA_BM_PAGE_SIZE - 1) / RUMA_BM_PAGE_SIZE *
			       RUMA_BM_PAGE_SIZE;
		char *into = direct ? (char *)buf + (at - off) : bounce;
		r = read_crc(bm, t, into, whole, (size_t)part,
			     (off_t)(first * RUMA_BM_PAGE_SIZE + at), &c);
		if (r) {
			bm_say(&bm->cfg, "%s: reading extent %" PRIu64 " at byte %" PRIu64 ": %s",
			       bm->path, first, at, ruma_strerror(r));
			break;
		}
		atomic_fetch_add_explicit(&t->reads, whole / RUMA_BM_PAGE_SIZE,
					  memory_order_relaxed);
		uint64_t lo = RUMA_MAX(at, off), hi = RUMA_MIN(at + part, off + len);
		if (!direct && lo < hi)
			memcpy((char *)buf + (lo - off), bounce + (lo - at), hi - lo);
	}
	if (!r && c != crc) {
		bm_say(&bm->cfg, "%s: extent at page %" PRIu64 " (%" PRIu64 " bytes) does not match "
			"its CRC-32C", bm->path, first, bytes);
		r = RUMA_ECORRUPT;
	}
	return r;
}

int ruma_bm_extent_read(ruma_bm *bm, ruma_pid first, uint64_t n, uint64_t bytes, uint32_t crc,
			uint64_t off, void *buf, size_t len, bool fill)
{
	if (!bm || (!buf && len) || off > bytes || len > bytes - off || n == 0 ||
	    bytes > n * RUMA_BM_PAGE_SIZE || first < bm->meta_pages ||
	    first + n > atomic_load(&bm->alloc_hw) || first + n < first)
		return -EINVAL;
	if (n > ruma_bm_extent_pin_max(bm) || (!fill && !ruma_bm_extent_resident(bm, first, n)))
		return read_around(bm, first, bytes, crc, off, buf, len);
	void *mem;
	int r = ruma_bm_extent_pin(bm, first, n, bytes, crc, &mem);
	if (r)
		return r;
	memcpy(buf, (const char *)mem + off, len);
	ruma_bm_extent_unpin(bm, first, n);
	return 0;
}
