/*
 * mvcc.c — the version store of snapshot isolation (mvcc.h; design in
 * docs/isolation.md).
 *
 * Timestamps: one process-wide counter.  A snapshot registers itself in
 * a slot of the registry (seq_cst) and then reads the counter as its
 * start; a committer raises the counter (seq_cst) and then asks whether a
 * registered snapshot started before it.  Either the committer sees the
 * snapshot, or the snapshot's read of the counter comes after the raise in
 * the single seq_cst order and the snapshot sees the commit as done: no
 * snapshot that needs a version can miss it.  The registry is an array of
 * cache-line slots, as LMDB's reader table: a thread keeps reusing its
 * slot, so beginning and ending a snapshot writes no line another thread
 * writes (a committer only reads the slots, up to the highest ever used).
 *
 * Versions are undo chains as in HyPer (Neumann, Mühlbauer, Kemper, SIGMOD
 * 2015): a committing writer's undo (kept in memory for abort anyway) is
 * copied here as one block tagged with its commit timestamp, and each of
 * its entries is linked into the chain of its row, newest first.  Rows are
 * found through a skip list ordered by (store, tree, key), so scans can
 * list the rows with versions in a key range.  A hand-off only appends its
 * block and raises the version filter's buckets of its rows; the first
 * reader that needs the chains (a read whose bucket was raised after its
 * snapshot began, or a snapshot scan) links every block handed off since,
 * in hand-off order.  Most blocks are needed by no reader (a short
 * snapshot beside a writer of other rows) and are freed never linked.
 *
 * Versions serve the snapshots of their own store only: blocks are freed
 * oldest first, each once no active snapshot of its store began before its
 * commit (checked at every snapshot end and every hand-off, in time
 * proportional to what is freed), so the store empties as soon as the
 * snapshots that needed it end.  Beyond the memory bound (process-wide)
 * the oldest blocks are dropped and `forced` rises to their timestamp: a
 * snapshot begun before it gets RUMA_ESNAPTOOOLD on its next read instead
 * of a wrong answer (Oracle's "snapshot too old").
 *
 * Locking: vs_mu (a reader-writer lock) guards the skip list and blocks
 * (readers take it for writing while blocks wait to be linked); the
 * registry takes no lock (a slot is claimed by CAS).  A holder of
 * vs_mu never blocks (memory it unlinks is freed after the unlock), so a
 * thread that finds it taken spins briefly before it sleeps.
 */
#include "btree/mvcc.h"
#include "core/spin.h"

#include <ruma/core.h>

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MV_LEVELS 16
#define MV_DEFAULT_LIMIT RUMA_TXN_VERSION_LIMIT

/* One version: a before-image of one row, inside its block, in its row's
 * chain (newest first, linked both ways so the oldest goes in O(1)). */
struct mv_ver {
	const struct mv_block *blk;
	const struct undo *u;
	struct mv_row *row;
	struct mv_ver *older, *newer;
};

/* A committed transaction's undo, moved here at its commit. */
struct mv_block {
	ruma_bm *bm;
	uint64_t cts;
	struct undo *u;
	size_t n;
	uint8_t *bytes;
	size_t size; /* bytes charged against the bound */
	struct mv_ver *vers;
	struct mv_block *next;
	size_t cap; /* bytes of the allocation (block_alloc) */
	bool removed; /* its transaction removed rows from the tree */
	bool linked;  /* its versions are in their rows' chains (link_pending) */
};

/* One row with versions in the skip list: its `levels` level pointers,
 * then its key's klen bytes (row_key), in one allocation sized to them. */
struct mv_row {
	ruma_bm *bm;
	ruma_pid root;
	struct mv_ver *newest;
	uint16_t klen;
	uint8_t levels;
	struct mv_row *next[];
};

static inline const uint8_t *row_key(const struct mv_row *r)
{
	return (const uint8_t *)&r->next[r->levels];
}

/* The timestamp and the writers' floor share a cache line: a snapshot's
 * begin reads both, and a writer's commit writes both. */
static struct {
	_Alignas(64) uint64_t ts;
	uint64_t floor; /* a lower bound of every unfinished writer's mark */
} clock_;
#define global_ts clock_.ts
/* The registry of active snapshots.  A slot's ts is REG_FREE, REG_CLAIMED
 * (taken, its store not yet written: its start will be later than any
 * commit that sees this), 0 (registered, start not yet read: it needs
 * every version) or the start timestamp. */
#define REG_SLOTS 4096u
#define REG_FREE UINT64_MAX
#define REG_CLAIMED (UINT64_MAX - 1)
struct reg_slot {
	_Alignas(64) uint64_t ts;
	ruma_bm *bm;
};
static struct reg_slot reg[REG_SLOTS] = { [0 ... REG_SLOTS - 1] = { REG_FREE, NULL } };
static unsigned reg_hw; /* slots [0, reg_hw) have been used */
static _Thread_local unsigned reg_mine = UINT32_MAX; /* this thread's last slot */
/* The registry of unfinished writers, slots as above (bm unused): ts is
 * the writer's mark. */
static struct reg_slot wreg[REG_SLOTS] = { [0 ... REG_SLOTS - 1] = { REG_FREE, NULL } };
static unsigned wreg_hw;
static _Thread_local unsigned wreg_mine = UINT32_MAX;

static pthread_rwlock_t vs_mu = PTHREAD_RWLOCK_INITIALIZER;
/* The skip list's head: level pointers only (a union, so that the head
 * has room for MV_LEVELS of them). */
static union {
	struct mv_row r;
	char room[sizeof(struct mv_row) + MV_LEVELS * sizeof(struct mv_row *)];
} vs_head = { .r = { .levels = MV_LEVELS } };
#define vs_head_row (vs_head.r)
static int vs_top = 1; /* levels [0, vs_top) may hold rows: searches start there */
/* Blocks in hand-off order, oldest first (nearly commit order: a row's
 * versions come in commit order, as its lock passes from one to the next). */
static struct mv_block *vs_oldest, *vs_newest;
/* The oldest block whose versions are not linked into their rows yet; it
 * and every block after it are unlinked (NULL: all are linked). */
static struct mv_block *vs_unlinked;
/* vs_oldest's commit timestamp (UINT64_MAX: none), read without vs_mu. */
static uint64_t vs_oldest_cts = UINT64_MAX;
uint64_t mv_nver, mv_forced, mv_nremoved;
uint64_t mv_filter[1u << MV_FILTER_BITS];
static uint64_t vs_bytes, vs_dropped;
static uint64_t vs_limit = MV_DEFAULT_LIMIT;
static uint64_t vs_rng = 0x9e3779b97f4a7c15ull;

/* vs_mu's holders run for a short while and never block while they hold
 * it (frees wait until after the unlock): a thread that finds it taken
 * tries again for a moment before it sleeps in the kernel, since a sleep
 * and its wake-up cost more than the wait. */
#define VS_SPINS 200u

static void vs_lock(int (*try)(pthread_rwlock_t *), int (*wait)(pthread_rwlock_t *))
{
	for (unsigned i = 0; i < VS_SPINS; i++) {
		if (!try(&vs_mu))
			return;
		ruma_cpu_relax();
	}
	(void)wait(&vs_mu);
}

static void vs_wrlock(void)
{
	vs_lock(pthread_rwlock_trywrlock, pthread_rwlock_wrlock);
}

static void vs_rdlock(void)
{
	vs_lock(pthread_rwlock_tryrdlock, pthread_rwlock_rdlock);
}

int mv_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

void mv_apply(struct mv_image *img, unsigned kind, const uint8_t *data, size_t len)
{
	if (kind == UNDO_ABSENT) {
		img->present = false;
		img->invalid = false;
		return;
	}
	if (kind == UNDO_VALUE) {
		img->present = true;
		img->invalid = false;
		img->len = (uint32_t)len;
		memcpy(img->val, data, len);
		return;
	}
	const uint8_t *p = data, *end = data + len;
	while (p < end && !img->invalid) {
		uint16_t off, n;
		if (!img->present || end - p < 4) {
			img->invalid = true;
			break;
		}
		memcpy(&off, p, 2);
		memcpy(&n, p + 2, 2);
		p += 4;
		if ((size_t)(end - p) < n || (size_t)off + n > img->len) {
			img->invalid = true;
			break;
		}
		memcpy(img->val + off, p, n);
		p += n;
	}
}

/* ---- timestamps and the snapshot registry ------------------------------------ */

void mv_clock_start(void)
{
	struct timespec now;
	uint64_t us = 1;
	if (clock_gettime(CLOCK_REALTIME, &now) == 0 && now.tv_sec > 0)
		us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
	__atomic_store_n(&global_ts, us, __ATOMIC_SEQ_CST);
	__atomic_store_n(&clock_.floor, us, __ATOMIC_SEQ_CST);
}

uint64_t mv_commit_ts(void)
{
	return __atomic_add_fetch(&global_ts, 1, __ATOMIC_SEQ_CST);
}

/* Claim slot i of r (REG_FREE -> REG_CLAIMED). */
static bool reg_claim(struct reg_slot *r, unsigned i)
{
	uint64_t free_ts = REG_FREE;
	return __atomic_compare_exchange_n(&r[i].ts, &free_ts, REG_CLAIMED, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* A free slot of r (slots [0, *hw) used so far), claimed: this thread's own
 * (*mine) first, then any used one, then a new one; REG_SLOTS when every
 * slot is taken. */
static unsigned reg_take(struct reg_slot *r, unsigned *hw_at, unsigned *mine)
{
	if (*mine < REG_SLOTS && reg_claim(r, *mine))
		return *mine;
	unsigned hw = __atomic_load_n(hw_at, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < hw; i++)
		if (reg_claim(r, i))
			return *mine = i;
	for (unsigned i = hw; i < REG_SLOTS; i++)
		if (reg_claim(r, i)) {
			unsigned h = __atomic_load_n(hw_at, __ATOMIC_RELAXED);
			while (h < i + 1 && !__atomic_compare_exchange_n(hw_at, &h, i + 1, false,
									 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				;
			return *mine = i;
		}
	return REG_SLOTS;
}

int mv_snapshot_begin(ruma_bm *bm, uint64_t *start_ts, uint64_t *floor, unsigned *slot)
{
	unsigned i = reg_take(reg, &reg_hw, &reg_mine);
	if (i == REG_SLOTS)
		return -EAGAIN;
	__atomic_store_n(&reg[i].bm, bm, __ATOMIC_RELAXED);
	__atomic_store_n(&reg[i].ts, 0, __ATOMIC_SEQ_CST); /* registered, before the reads */
	*floor = __atomic_load_n(&clock_.floor, __ATOMIC_SEQ_CST); /* before the start */
	uint64_t s = __atomic_load_n(&global_ts, __ATOMIC_SEQ_CST);
	__atomic_store_n(&reg[i].ts, s, __ATOMIC_RELEASE);
	*start_ts = s;
	*slot = i;
	return 0;
}

/* The oldest timestamp registered in r (UINT64_MAX: none; 0 for one being
 * read); seq_cst loads (see collect). */
static uint64_t reg_min(const struct reg_slot *r, const unsigned *hw_at)
{
	uint64_t m = UINT64_MAX;
	unsigned hw = __atomic_load_n(hw_at, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < hw; i++) {
		uint64_t t = __atomic_load_n(&r[i].ts, __ATOMIC_SEQ_CST);
		if (t < REG_CLAIMED)
			m = RUMA_MIN(m, t);
	}
	return m;
}

/* The oldest registered snapshot's start. */
static uint64_t reg_oldest(void)
{
	return reg_min(reg, &reg_hw);
}

int mv_writer_begin(uint64_t *mark, unsigned *slot)
{
	unsigned i = reg_take(wreg, &wreg_hw, &wreg_mine);
	if (i == REG_SLOTS)
		return -EAGAIN;
	__atomic_store_n(&wreg[i].ts, 0, __ATOMIC_SEQ_CST); /* registered, before the read */
	uint64_t s = __atomic_load_n(&global_ts, __ATOMIC_SEQ_CST);
	__atomic_store_n(&wreg[i].ts, s, __ATOMIC_RELEASE);
	*mark = s;
	*slot = i;
	return 0;
}

/*
 * The floor: any value computed here stays a lower bound of the mark of
 * every writer unfinished at any later time.  A writer registered while the
 * slots are read counts (its mark, or 0 while its mark is read); one that
 * claims a slot after it was read reads its mark after the timestamp read
 * first here.  So the floor only rises, to the largest value computed.
 */
void mv_writer_end(unsigned slot)
{
	__atomic_store_n(&wreg[slot].ts, REG_FREE, __ATOMIC_SEQ_CST);
	uint64_t now = __atomic_load_n(&global_ts, __ATOMIC_SEQ_CST);
	uint64_t oldest = reg_min(wreg, &wreg_hw); /* once: RUMA_MIN evaluates twice */
	uint64_t m = RUMA_MIN(now, oldest);
	uint64_t f = __atomic_load_n(&clock_.floor, __ATOMIC_RELAXED);
	while (f < m && !__atomic_compare_exchange_n(&clock_.floor, &f, m, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_RELAXED))
		;
}

/* Whether a registered snapshot of bm began before cts.  A snapshot that
 * registers later starts at or after the counter, which is past every
 * commit already made: it needs none of their versions. */
static bool reg_needed(const ruma_bm *bm, uint64_t cts)
{
	unsigned hw = __atomic_load_n(&reg_hw, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < hw; i++) {
		uint64_t t = __atomic_load_n(&reg[i].ts, __ATOMIC_SEQ_CST);
		if (t < cts && t < REG_CLAIMED && __atomic_load_n(&reg[i].bm, __ATOMIC_RELAXED) == bm)
			return true;
	}
	return false;
}

bool mv_needed(ruma_bm *bm, uint64_t commit_ts)
{
	return reg_needed(bm, commit_ts);
}

/* ---- the skip list ------------------------------------------------------------ */

static int row_cmp(const struct mv_row *r, ruma_bm *bm, ruma_pid root, const void *key,
		   size_t klen)
{
	if (r->bm != bm)
		return (uintptr_t)r->bm < (uintptr_t)bm ? -1 : 1;
	if (r->root != root)
		return r->root < root ? -1 : 1;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* most steps of a search are decided by the first 8 bytes */
	if (r->klen >= 8 && klen >= 8) {
		uint64_t a, b;
		memcpy(&a, row_key(r), 8);
		memcpy(&b, key, 8);
		if (a != b)
			return __builtin_bswap64(a) < __builtin_bswap64(b) ? -1 : 1;
	}
#endif
	return mv_key_cmp(row_key(r), r->klen, key, klen);
}

/* The last row before (bm, root, key) at each level into prev; vs_mu held. */
static struct mv_row *row_find(ruma_bm *bm, ruma_pid root, const void *key, size_t klen,
			       struct mv_row **prev)
{
	struct mv_row *x = &vs_head_row;
	if (prev)
		for (int l = vs_top; l < MV_LEVELS; l++)
			prev[l] = x;
	for (int l = vs_top - 1; l >= 0; l--) {
		while (x->next[l] && row_cmp(x->next[l], bm, root, key, klen) < 0)
			x = x->next[l];
		if (prev)
			prev[l] = x;
	}
	return x->next[0];
}

static bool row_is(const struct mv_row *r, ruma_bm *bm, ruma_pid root, const void *key,
		   size_t klen)
{
	return r && row_cmp(r, bm, root, key, klen) == 0;
}

/*
 * Freed blocks and rows are kept for the next hand-offs, under a lock of
 * their own: a snapshot's end frees a burst of them, more than glibc keeps
 * per thread, and the next commits beside a snapshot would take malloc's
 * slow path for each (and a block of one 1 KB row is past the sizes it
 * caches at all).  Kept: up to MV_RECYCLE blocks of at most MV_RECYCLE_MAX
 * bytes, allocations rounded up to MV_BLOCK_ROUND bytes so that blocks of
 * nearby sizes take each other's place; up to MV_RECYCLE_ROWS rows of
 * MV_ROW_SMALL bytes, the size every row with a short key and few levels
 * is given.  At most 640 KiB in all.
 */
#define MV_RECYCLE 64u
#define MV_RECYCLE_MAX ((size_t)8 << 10)
#define MV_BLOCK_ROUND 256u
#define MV_RECYCLE_ROWS 1024u
#define MV_ROW_SMALL 128u

/* A kept allocation: its first words hold the link and its size. */
struct mv_free {
	struct mv_free *next;
	size_t cap;
};

/* A bounded list of kept allocations. */
struct mv_bin {
	struct mv_free *head;
	unsigned n, max;
};

static ruma_spin recycle_mu; /* both bins */
static struct mv_bin block_bin = { NULL, 0, MV_RECYCLE };
static struct mv_bin row_bin = { NULL, 0, MV_RECYCLE_ROWS };

/* A kept allocation of at least `bytes` (its size into *cap), or NULL. */
static void *bin_take(struct mv_bin *bin, size_t bytes, size_t *cap)
{
	struct mv_free *e = NULL;
	ruma_spin_lock(&recycle_mu);
	for (struct mv_free **f = &bin->head; *f; f = &(*f)->next)
		if ((*f)->cap >= bytes) {
			e = *f;
			*f = e->next;
			bin->n--;
			*cap = e->cap;
			break;
		}
	ruma_spin_unlock(&recycle_mu);
	return e;
}

/* Keep p (cap bytes) in bin when there is room, else free it. */
static void bin_put(struct mv_bin *bin, void *p, size_t cap)
{
	ruma_spin_lock(&recycle_mu);
	bool keep = bin->n < bin->max;
	if (keep) {
		struct mv_free *e = p;
		e->next = bin->head;
		e->cap = cap;
		bin->head = e;
		bin->n++;
	}
	ruma_spin_unlock(&recycle_mu);
	if (!keep)
		free(p);
}

/* A block of at least `bytes`: a kept one, or a new allocation. */
static struct mv_block *block_alloc(size_t bytes)
{
	size_t cap = 0;
	struct mv_block *b = bytes <= MV_RECYCLE_MAX ? bin_take(&block_bin, bytes, &cap) : NULL;
	if (!b) {
		cap = (bytes + MV_BLOCK_ROUND - 1) / MV_BLOCK_ROUND * MV_BLOCK_ROUND;
		if (!(b = malloc(cap)))
			return NULL;
	}
	b->cap = cap;
	return b;
}

/* Its versions, undo entries and bytes are in the block's allocation. */
static void block_release(struct mv_block *b)
{
	if (b->cap <= MV_RECYCLE_MAX)
		bin_put(&block_bin, b, b->cap);
	else
		free(b);
}

static size_t row_bytes(const struct mv_row *r)
{
	return offsetof(struct mv_row, next) + r->levels * sizeof(r->next[0]) + r->klen;
}

/* Row allocations to go before one fails (mv_fail_row_alloc; 0: none). */
static unsigned row_fail_in;

void mv_fail_row_alloc(unsigned nth)
{
	__atomic_store_n(&row_fail_in, nth, __ATOMIC_RELAXED);
}

/* A row of `bytes` (MV_ROW_SMALL when they fit: a kept one, if any). */
static struct mv_row *row_alloc(size_t bytes)
{
	if (RUMA_UNLIKELY(__atomic_load_n(&row_fail_in, __ATOMIC_RELAXED)) &&
	    __atomic_sub_fetch(&row_fail_in, 1, __ATOMIC_RELAXED) == 0)
		return NULL;
	if (bytes > MV_ROW_SMALL)
		return malloc(bytes);
	size_t cap;
	struct mv_row *r = bin_take(&row_bin, MV_ROW_SMALL, &cap);
	return r ? r : malloc(MV_ROW_SMALL);
}

static void row_release(struct mv_row *r)
{
	if (row_bytes(r) <= MV_ROW_SMALL)
		bin_put(&row_bin, r, MV_ROW_SMALL);
	else
		free(r);
}

/* The row of (bm, root, key), created if missing; vs_mu held for writing. */
static struct mv_row *row_get(ruma_bm *bm, ruma_pid root, const uint8_t *key, size_t klen)
{
	struct mv_row *prev[MV_LEVELS];
	struct mv_row *r = row_find(bm, root, key, klen, prev);
	if (row_is(r, bm, root, key, klen))
		return r;
	int lv = 1;
	vs_rng = vs_rng * 6364136223846793005ull + 1442695040888963407ull;
	for (uint64_t b = vs_rng >> 33; lv < MV_LEVELS && (b & 3) == 0; b >>= 2)
		lv++;
	r = row_alloc(offsetof(struct mv_row, next) + (size_t)lv * sizeof(r->next[0]) + klen);
	if (!r)
		return NULL;
	r->bm = bm;
	r->root = root;
	r->newest = NULL;
	r->klen = (uint16_t)klen;
	r->levels = (uint8_t)lv;
	memcpy(&r->next[lv], key, klen); /* row_key */
	if (lv > vs_top)
		vs_top = lv; /* prev[l] is the head for the levels above the old top */
	for (int l = 0; l < lv; l++) {
		r->next[l] = prev[l]->next[l];
		prev[l]->next[l] = r;
	}
	return r;
}

/* Memory unlinked under vs_mu and freed once it is released: free() may
 * wait for the lock of the malloc arena of the thread that allocated it,
 * and nobody should wait for vs_mu meanwhile. */
struct mv_garbage {
	struct mv_row *rows;     /* through next[0] */
	struct mv_block *blocks; /* through next */
};

static void garbage_free(struct mv_garbage *g)
{
	while (g->rows) {
		struct mv_row *r = g->rows;
		g->rows = r->next[0];
		row_release(r);
	}
	while (g->blocks) {
		struct mv_block *b = g->blocks;
		g->blocks = b->next;
		block_release(b);
	}
}

/* Unlink a row without versions into g; vs_mu held for writing. */
static void row_drop(struct mv_row *r, struct mv_garbage *g)
{
	struct mv_row *prev[MV_LEVELS];
	row_find(r->bm, r->root, row_key(r), r->klen, prev);
	for (int l = 0; l < r->levels; l++)
		if (prev[l]->next[l] == r)
			prev[l]->next[l] = r->next[l];
	r->next[0] = g->rows;
	g->rows = r;
}

/* ---- blocks ------------------------------------------------------------------------ */

/* Unlink the first n of b's versions from their rows (rows left without
 * versions go into g); vs_mu held for writing. */
static void vers_unlink(struct mv_block *b, size_t n, struct mv_garbage *g)
{
	for (size_t i = 0; i < n; i++) {
		struct mv_ver *v = &b->vers[i];
		struct mv_row *r = v->row;
		if (v->newer)
			v->newer->older = v->older;
		else
			r->newest = v->older;
		if (v->older)
			v->older->newer = v->newer;
		if (!r->newest)
			row_drop(r, g);
	}
}

/* Take b's versions out of the store (from their rows too, when linked),
 * then b, into g; vs_mu held for writing. */
static void block_unlink(struct mv_block *b, struct mv_garbage *g)
{
	if (b->linked)
		vers_unlink(b, b->n, g);
	__atomic_sub_fetch(&mv_nver, b->n, __ATOMIC_RELEASE);
	vs_bytes -= b->size;
	if (b->removed)
		__atomic_sub_fetch(&mv_nremoved, 1, __ATOMIC_SEQ_CST);
	b->next = g->blocks;
	g->blocks = b;
}

/* Take the oldest block off the list; vs_mu held for writing. */
static struct mv_block *pop_oldest(void)
{
	struct mv_block *b = vs_oldest;
	vs_oldest = b->next;
	if (vs_unlinked == b)
		vs_unlinked = b->next;
	if (!vs_oldest)
		vs_newest = NULL;
	__atomic_store_n(&vs_oldest_cts, vs_oldest ? vs_oldest->cts : UINT64_MAX, __ATOMIC_SEQ_CST);
	return b;
}

/* Free the oldest blocks while no active snapshot of their store needs
 * them (a block the oldest one holds back waits for the next collection:
 * the snapshot that needs the oldest needs nearly all after it); vs_mu
 * held for writing. */
static void collect_locked(struct mv_garbage *g)
{
	while (vs_oldest && !reg_needed(vs_oldest->bm, vs_oldest->cts))
		block_unlink(pop_oldest(), g);
}

/* Versions of cts could not be kept: snapshots begun before it are too old
 * from now on; vs_mu held for writing. */
static void force_locked(uint64_t cts)
{
	if (cts > mv_forced)
		__atomic_store_n(&mv_forced, cts, __ATOMIC_RELEASE);
	vs_dropped++;
}

/* Drop the oldest blocks until the store fits its bound, raising `forced`
 * to their timestamps; vs_mu held for writing. */
static void enforce_limit_locked(struct mv_garbage *g)
{
	if (vs_bytes > vs_limit) /* first what collect may have left (see collect) */
		collect_locked(g);
	while (vs_bytes > vs_limit && vs_oldest) {
		struct mv_block *b = pop_oldest();
		force_locked(b->cts);
		block_unlink(b, g);
	}
}

/* Free the blocks no active snapshot needs.  Without a lock it returns at
 * once when none is stored, or when a snapshot begun before the oldest
 * block is open (of any store: that snapshot's end collects).  seq_cst
 * against the writers of both: a snapshot's end (its slot, then mv_nver)
 * and a hand-off (mv_nver, then the slots) cannot both miss the other. */
static void collect(void)
{
	if (!__atomic_load_n(&mv_nver, __ATOMIC_SEQ_CST) ||
	    reg_oldest() < __atomic_load_n(&vs_oldest_cts, __ATOMIC_SEQ_CST))
		return;
	struct mv_garbage g = { NULL, NULL };
	vs_wrlock();
	collect_locked(&g);
	pthread_rwlock_unlock(&vs_mu);
	garbage_free(&g);
}

void mv_snapshot_end(unsigned slot)
{
	__atomic_store_n(&reg[slot].ts, REG_FREE, __ATOMIC_SEQ_CST);
	collect();
}

/* Raise the filter bucket of hash h to cts (vs_mu held for writing, so
 * raises do not race; the release pairs with mv_filter_clear). */
static void filter_raise(uint64_t h, uint64_t cts)
{
	uint64_t *f = &mv_filter[h >> (64 - MV_FILTER_BITS)];
	if (*f < cts)
		__atomic_store_n(f, cts, __ATOMIC_RELEASE);
}

/* Link block b's entries into their rows (oldest entry first, so the
 * newest ends at the head); vs_mu held for writing.  -ENOMEM when a row
 * could not be made: the entries linked so far are unlinked again. */
static int block_link(struct mv_block *b, struct mv_garbage *g)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct undo *u = &b->u[i];
		struct mv_row *r = row_get(b->bm, u->root, b->bytes + u->at, u->klen);
		if (!r) {
			vers_unlink(b, i, g);
			return -ENOMEM;
		}
		struct mv_ver *v = &b->vers[i];
		*v = (struct mv_ver){ b, u, r, r->newest, NULL };
		if (r->newest)
			r->newest->newer = v;
		r->newest = v;
	}
	b->linked = true;
	return 0;
}

/* Link every block handed off since the last reader needed the chains,
 * in hand-off order; vs_mu held for writing.  A block that cannot be
 * linked stays stored without versions, and the snapshots begun before it
 * are too old from now on. */
static void link_pending(struct mv_garbage *g)
{
	for (struct mv_block *b = vs_unlinked; b; b = b->next)
		if (block_link(b, g))
			force_locked(b->cts);
	vs_unlinked = NULL;
}

/* Raise the filter bucket of each of b's rows to b's commit timestamp;
 * vs_mu held for writing. */
static void filter_raise_all(const struct mv_block *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct undo *u = &b->u[i];
		filter_raise(mv_row_hash(b->bm, u->root, b->bytes + u->at, u->klen), b->cts);
	}
}

/* The owner's undo is the store's now: empty it for readers that look
 * through the owner (its arrays stay the owner's, for its next
 * transaction). */
static void detach(pthread_mutex_t *mu, size_t *n)
{
	pthread_mutex_lock(mu);
	__atomic_store_n(n, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(mu);
}

/* A block of cts holding copies of u[0, n) and bytes[0, nbytes), with its
 * versions, in one allocation (one block_release ends it). */
static struct mv_block *block_new(ruma_bm *bm, uint64_t cts, const struct undo *u, size_t n,
				  const uint8_t *bytes, size_t nbytes)
{
	size_t vers = n * sizeof(struct mv_ver), undo = n * sizeof(*u);
	struct mv_block *b = block_alloc(sizeof(*b) + vers + undo + nbytes);
	if (!b)
		return NULL;
	struct mv_ver *v = (struct mv_ver *)(b + 1);
	struct undo *uc = (struct undo *)((char *)v + vers);
	uint8_t *bc = (uint8_t *)uc + undo;
	memcpy(uc, u, undo);
	memcpy(bc, bytes, nbytes);
	size_t cap = b->cap;
	*b = (struct mv_block){ bm, cts, uc, n, bc, nbytes + undo, v, NULL, cap, false, false };
	return b;
}

int mv_handoff(ruma_bm *bm, uint64_t cts, pthread_mutex_t *owner_mu, const struct undo *u,
	       size_t *n, const uint8_t *bytes, size_t nbytes, bool removed)
{
	struct mv_block *b = block_new(bm, cts, u, *n, bytes, nbytes);
	struct mv_garbage g = { NULL, NULL };
	vs_wrlock();
	if (!b) {
		force_locked(cts);
		detach(owner_mu, n);
		pthread_rwlock_unlock(&vs_mu);
		return -ENOMEM;
	}
	b->removed = removed;
	if (removed) /* before its versions can be seen, and before it leaves the deleters */
		__atomic_add_fetch(&mv_nremoved, 1, __ATOMIC_SEQ_CST);
	vs_bytes += b->size;
	filter_raise_all(b);
	/* one count for the block: readers that see it see every filter
	 * bucket raised before it, and the block in the list (vs_mu) */
	__atomic_add_fetch(&mv_nver, b->n, __ATOMIC_SEQ_CST);
	if (vs_newest) {
		vs_newest->next = b;
	} else {
		vs_oldest = b;
		__atomic_store_n(&vs_oldest_cts, b->cts, __ATOMIC_SEQ_CST);
	}
	vs_newest = b;
	if (!vs_unlinked)
		vs_unlinked = b;
	detach(owner_mu, n);
	enforce_limit_locked(&g);
	pthread_rwlock_unlock(&vs_mu);
	garbage_free(&g);
	collect();
	return 0;
}

/* Take vs_mu to read the rows' chains: for reading when every stored block
 * is linked, else for writing, after linking the rest (their garbage into
 * g, for after the unlock). */
static void vs_lock_chains(struct mv_garbage *g)
{
	vs_rdlock();
	if (!vs_unlinked)
		return;
	pthread_rwlock_unlock(&vs_mu);
	vs_wrlock();
	link_pending(g);
}

/* ---- reading ------------------------------------------------------------------------ */

/* The number of versions of (bm, root, key) committed after start_ts,
 * applied to img newest first when img is not NULL; RUMA_ESNAPTOOOLD. */
static int newer_versions(ruma_bm *bm, ruma_pid root, const void *key, size_t klen,
			  uint64_t start_ts, struct mv_image *img)
{
	struct mv_garbage g = { NULL, NULL };
	vs_lock_chains(&g);
	int rc = 0;
	if (start_ts < mv_forced) {
		rc = RUMA_ESNAPTOOOLD;
	} else {
		struct mv_row *r = row_find(bm, root, key, klen, NULL);
		const struct mv_ver *v = row_is(r, bm, root, key, klen) ? r->newest : NULL;
		for (; v && v->blk->cts > start_ts; v = v->older, rc++)
			if (img) {
				const uint8_t *k = v->blk->bytes + v->u->at;
				mv_apply(img, v->u->kind, k + v->u->klen, v->u->vlen);
			}
	}
	pthread_rwlock_unlock(&vs_mu);
	garbage_free(&g);
	return rc;
}

int mv_resolve(ruma_bm *bm, ruma_pid root, const void *key, size_t klen, uint64_t start_ts,
	       struct mv_image *img)
{
	int rc = newer_versions(bm, root, key, klen, start_ts, img);
	return rc < 0 ? rc : 0;
}

int mv_newer(ruma_bm *bm, ruma_pid root, const void *key, size_t klen, uint64_t start_ts)
{
	if (mv_empty() || mv_filter_clear(mv_row_hash(bm, root, key, klen), start_ts))
		return mv_too_old(start_ts) ? RUMA_ESNAPTOOOLD : 0;
	int rc = newer_versions(bm, root, key, klen, start_ts, NULL);
	return rc < 0 ? rc : rc > 0;
}

void mv_row_apply(const struct mv_row *r, uint64_t start_ts, struct mv_image *img)
{
	for (const struct mv_ver *v = r->newest; v && v->blk->cts > start_ts; v = v->older) {
		const uint8_t *k = v->blk->bytes + v->u->at;
		mv_apply(img, v->u->kind, k + v->u->klen, v->u->vlen);
	}
}

int mv_merge(ruma_bm *bm, ruma_pid root, const void *lo, size_t lolen, const void *hi,
	     size_t hilen, uint64_t start_ts, mv_row_fn fn, void *ctx)
{
	int rc = 0;
	struct mv_garbage g = { NULL, NULL };
	vs_lock_chains(&g);
	if (start_ts < mv_forced)
		rc = RUMA_ESNAPTOOOLD;
	struct mv_row *r = rc ? NULL : row_find(bm, root, lo ? lo : "", lo ? lolen : 0, NULL);
	for (; r && r->bm == bm && r->root == root && !rc; r = r->next[0]) {
		if (hi && mv_key_cmp(row_key(r), r->klen, hi, hilen) > 0)
			break;
		if (r->newest && r->newest->blk->cts > start_ts)
			rc = fn(row_key(r), r->klen, r, ctx);
	}
	pthread_rwlock_unlock(&vs_mu);
	garbage_free(&g);
	return rc;
}

void mv_stats(ruma_txn_mvcc_stats *out)
{
	out->snapshots = 0;
	unsigned hw = __atomic_load_n(&reg_hw, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < hw; i++)
		out->snapshots += __atomic_load_n(&reg[i].ts, __ATOMIC_ACQUIRE) < REG_CLAIMED;
	out->oldest_snapshot = reg_oldest();
	vs_rdlock();
	out->versions = mv_nver;
	out->version_bytes = vs_bytes;
	out->version_limit = vs_limit;
	out->too_old_below = mv_forced;
	out->dropped = vs_dropped;
	pthread_rwlock_unlock(&vs_mu);
	out->timestamp = __atomic_load_n(&global_ts, __ATOMIC_SEQ_CST);
	if (out->oldest_snapshot == UINT64_MAX)
		out->oldest_snapshot = 0;
}

void mv_set_limit(uint64_t bytes)
{
	struct mv_garbage g = { NULL, NULL };
	vs_wrlock();
	vs_limit = bytes ? bytes : MV_DEFAULT_LIMIT;
	enforce_limit_locked(&g);
	pthread_rwlock_unlock(&vs_mu);
	garbage_free(&g);
}
