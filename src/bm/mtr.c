/*
 * mtr.c — mini-transactions: physical redo logging of page changes, the
 * WAL rule, and the log's place in a session (docs/wal.md).
 *
 * With a log (bm->wal set), every exclusive latch a thread takes
 * (ruma_bm_fix_x, ruma_bm_upgrade_x, ruma_bm_alloc) enters the thread's
 * mini-transaction with a copy of the page's bytes at that moment.  When the
 * thread releases one of its exclusive latches (ruma_bm_unfix_x,
 * ruma_bm_free), the changes of ALL the pages it holds exclusively are
 * logged as ONE record: per page its changed byte ranges (or a full image,
 * see below), "allocated" for new pages and "freed" for the page being
 * freed.  Then every logged page gets the record's end LSN in its trailer,
 * and the copies of the pages still held are refreshed.  Only then is the
 * latch released.  So
 *   - the records of one page are in the log in the order of its changes
 *     (a page is logged before anybody else can latch it), and
 *   - a structure change that latches all its pages before changing any and
 *     finishes them before releasing the first (B-tree splits and merges
 *     do) is one record: atomic in the log.
 * A page whose LSN is older than this session's log start gets a full image
 * instead of a diff at its first change (PostgreSQL's full_page_writes):
 * recovery can rebuild a page torn by a crash mid-write from it.
 *
 * Holes: a full image leaves out one run of bytes that do not matter, as
 * PostgreSQL's images leave out pd_lower..pd_upper.  The page's owner says
 * where it is (ruma_bm_set_page_hole: for a B-tree node the gap between its
 * slot array and its heap, about half of each page a split writes), asked
 * at the moment the image is built, from the page's own header.  Asking the
 * owner was chosen over finding the longest run of zero bytes: the owner
 * knows it in a few loads whatever the gap holds, where a scan would read
 * 4 KiB per image and would need every writer of the gap (compaction,
 * splits, removals leaving a stale slot behind) to zero it first.  The
 * price is a contract: the hole holds nothing its owner needs (node.c: a
 * node writes a slot or heap byte before it reads it, and its checks read
 * only the header, the slots and the heap).  When the image is logged, the
 * hole of the page in memory is zeroed too, so the page stays equal, byte
 * for byte, to what recovery builds from the image; a later DIFF, which
 * names only what changed (or was declared) since, then applies to the
 * redone page exactly as it did to the page in memory, also where a writer
 * that is compared with a copy writes a hole byte with the value it held.
 * The encoding is the smaller one: a page whose DIFF comes to more than the
 * image without its hole is logged as that image.
 *
 * Unlogged bytes: a declaring writer may name bytes whose change needs no
 * redo (ruma_bm_wrote_unlogged: a B-tree leaf's mark, meaningful only in
 * the process that wrote it).  They are left out of the record, and the
 * write check's copy takes them at once, so a page rebuilt by recovery may
 * differ from the page in memory there and nowhere else; no move covers
 * them, and later records name absolute ranges, so that difference never
 * spreads.
 *
 * Declared moves: a writer that shifts part of a page (a B-tree node's slot
 * array, to make room for an entry or close the gap of a removed one) names
 * the shift with ruma_bm_moved.  When it is the page's first write since
 * its last record, the record says "move len bytes from src to dst" in six
 * bytes and redo repeats the memmove on the page as that record left it,
 * which is the page the writer moved; a shift of half a page of slots no
 * longer costs its bytes in the log.  A move after other writes to the page
 * is logged as the bytes it wrote (their order would matter).
 *
 * Declared writes: inside ruma_bm_op_declare ... ruma_bm_op_end, the pages
 * the thread latches exclusively are not copied; their writer names every
 * byte range it writes (ruma_bm_wrote) and the record logs those ranges'
 * current bytes — the same DIFF entries, without the copy at the latch and
 * the comparison at the release.  A missed range would be a change the log
 * does not know, so builds with RUMA_ASSERT on still take the copy and check
 * that every changed byte lies inside a declared range.
 *
 * WAL rule: bm_mtr_before_write, on every page write path, makes the log
 * durable up to the largest page LSN of the images to write first; after a log error
 * no page is written any more (the store on disk stays at its last
 * recoverable state).
 *
 * Record payload (type BM_WAL_MTR): a sequence of entries
 *   u8 kind, u64 pid, then  ALLOC/FREE: nothing;  FPI: RUMA_BM_PAGE_DATA bytes;
 *   DIFF: u16 n, n x { u16 off, u16 len, len bytes };
 *   DIFF_MOVE: u16 dst, u16 src, u16 len, then a DIFF body: the page's
 *   bytes [src, src + len) moved to dst (memmove), then the ranges;
 *   FPI_HOLE: u16 off, u16 len, the RUMA_BM_PAGE_DATA - len bytes outside
 *   [off, off + len).
 * A new kind needs no new log format: a log without it reads as before,
 * and a build that does not know it refuses the record with a message.
 * Type BM_WAL_META: u32 slot, u64 value (ruma_bm_meta_set).
 *
 * Carried undo: a transaction's later UNDO records (ruma_bm_log) made
 * inside a declaring operation are not appended at once.  The record is
 * kept as an UNDO entry at the start of the thread's record buffer, and
 * the operation's next page-change record carries it in front of the page
 * entries: one append (one slot, one LSN claim, one pair of checksums) for
 * the undo and the change it makes undoable, where a transaction's update
 * took two.  The undo still precedes the change in the log, now inside the
 * same record, and recovery reads it as it reads an UNDO record.  When no
 * page change follows, ruma_bm_op_end (or the thread's next record of a
 * layer above) appends it as an UNDO record of its own.
 *
 * No syscalls of its own (the log does its I/O in src/wal).
 */
#include "bm/bm_int.h"
#include "bm/declare.h"
#include "bm/mtr.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define D RUMA_BM_PAGE_DATA

/* Declared ranges kept per page; more than this (or a range of half a page)
 * logs the whole page. */
#define MTR_RANGES 16u
/* Declared ranges this close are merged into one. */
#define MTR_RANGE_GAP 16u
/* A DIFF body this long or longer asks the owner for the page's hole: an
 * image without it may be smaller (a node's image is at least its header). */
#define MTR_HOLE_ASK 128u

struct mtr_page {
	ruma_pid pid;
	bool fresh;    /* allocated in this mtr: log ALLOC */
	bool declared; /* the writer declares its writes: ranges, no diff */
	bool whole;    /* declared: the whole page was (or may have been) written */
	uint8_t nr;    /* declared ranges, sorted and disjoint */
	uint16_t r_off[MTR_RANGES], r_end[MTR_RANGES];
	uint16_t mv_dst, mv_src, mv_len; /* declared: a move before the ranges (len 0: none) */
	char *page;    /* bm_page(pid) */
	char *before;  /* the copy (not taken for declared pages without RUMA_ASSERT) */
};

struct bm_mtr {
	unsigned n;
	struct mtr_page p[BM_MTR_MAX];
	char *slab;       /* BM_MTR_MAX before-images */
	char *rec;        /* record being built */
	size_t carried;   /* bytes of the carried UNDO entry at rec's start (0: none) */
	uint64_t last_end; /* end LSN of this thread's last record (0: none pending) */
	int err;          /* first log error of the current operation */
	bool defer;       /* inside a transaction: op_end does not wait */
	_Atomic bool logging; /* between its full-image decisions and its append */
};

/* The calling thread's mini-transaction while it declares its writes
 * (ruma_bm_op_declare .. ruma_bm_op_end), else NULL: ruma_bm_wrote needs
 * no store argument, so the B-tree's node functions can call it.  Both
 * thread-locals of this file use the initial-exec model (a plain %fs load,
 * no __tls_get_addr call); together they take 24 bytes of the static TLS
 * space glibc keeps for libraries loaded later with dlopen. */
__thread __attribute__((tls_model("initial-exec"))) struct bm_mtr *bm_declaring_mtr;

#ifdef NDEBUG
#define MTR_CHECK_DECLARED 0
#else
#define MTR_CHECK_DECLARED 1
#endif

/* The calling thread's mini-transaction of the store it used last: a
 * thread keeps its slot (and so its bm_mtr) until it exits, and instance
 * numbers are never reused, so a hit is always right. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	uint64_t instance;
	struct bm_mtr *m;
} mtr_cached;

static struct bm_mtr *mtr_get(ruma_bm *bm)
{
	if (RUMA_LIKELY(mtr_cached.instance == bm->instance))
		return mtr_cached.m;
	struct bm_thread *t;
	if (bm_thread_get(bm, &t))
		return NULL;
	struct bm_mtr *m = bm->mtrs[t->idx];
	if (RUMA_LIKELY(m != NULL)) {
		mtr_cached.instance = bm->instance;
		mtr_cached.m = m;
		return m;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->slab = malloc((size_t)BM_MTR_MAX * D);
	m->rec = malloc(BM_MTR_REC_MAX);
	if (!m->slab || !m->rec) {
		free(m->slab);
		free(m->rec);
		free(m);
		return NULL;
	}
	for (unsigned i = 0; i < BM_MTR_MAX; i++)
		m->p[i].before = m->slab + (size_t)i * D;
	__atomic_store_n(&bm->mtrs[t->idx], m, __ATOMIC_RELEASE); /* a checkpoint reads it */
	return m;
}

/*
 * A logger's full-image decisions and its append happen while no checkpoint
 * moves the redo start (wal_epoch), without a lock shared by the loggers:
 * each announces itself in its own mtr (logging, seq_cst) and then checks
 * ckpt_moving; a checkpoint sets ckpt_moving and then waits until no mtr is
 * logging.  Of the two stores one comes first, so either the logger sees
 * the checkpoint (and steps back until it is done) or the checkpoint sees
 * the logger (and waits for its append).
 */
static void log_enter(ruma_bm *bm, struct bm_mtr *m)
{
	for (;;) {
		atomic_store(&m->logging, true);
		if (RUMA_LIKELY(!atomic_load(&bm->ckpt_moving)))
			return;
		atomic_store(&m->logging, false);
		while (atomic_load(&bm->ckpt_moving))
			sched_yield();
	}
}

static void log_leave(struct bm_mtr *m)
{
	atomic_store_explicit(&m->logging, false, memory_order_release);
}

/* Stop new loggers and wait for those inside (bm_wal_checkpoint). */
static void loggers_hold(ruma_bm *bm)
{
	atomic_store(&bm->ckpt_moving, true);
	for (unsigned i = 0; i < bm->cfg.max_threads; i++) {
		struct bm_mtr *m = __atomic_load_n(&bm->mtrs[i], __ATOMIC_ACQUIRE);
		while (m && atomic_load(&m->logging))
			sched_yield();
	}
}

int bm_mtr_latched(ruma_bm *bm, ruma_pid pid, bool fresh)
{
	struct bm_mtr *m = mtr_get(bm);
	if (!m)
		return -ENOMEM;
	if (m->n == BM_MTR_MAX) {
		bm_say(&bm->cfg, "one operation latched more than %u pages exclusively "
			"(the mini-transaction limit)", BM_MTR_MAX);
		return -E2BIG;
	}
	struct mtr_page *e = &m->p[m->n++];
	e->pid = pid;
	e->fresh = fresh;
	e->page = bm_page(bm, pid);
	e->declared = bm_declaring_mtr == m;
	e->whole = false;
	e->nr = 0;
	e->mv_len = 0;
	if (!e->declared || MTR_CHECK_DECLARED)
		memcpy(e->before, e->page, D);
	return 0;
}

/* ---- declared writes ------------------------------------------------------------ */

void ruma_bm_op_declare(ruma_bm *bm)
{
	struct bm_mtr *m = bm->wal ? mtr_get(bm) : NULL;
	if (m)
		bm_declaring_mtr = m;
}

/* Add [off, end) to e's sorted, disjoint ranges, merging neighbours closer
 * than MTR_RANGE_GAP; too many ranges make the page whole.  Writers mostly
 * name bytes next to or after the last range, so that case comes first. */
static void add_range(struct mtr_page *e, unsigned off, unsigned end)
{
	unsigned n = e->nr, i, j;

	if (n && off <= e->r_end[n - 1] + MTR_RANGE_GAP && end + MTR_RANGE_GAP >= e->r_off[n - 1] &&
	    (n == 1 || off > e->r_end[n - 2] + MTR_RANGE_GAP)) {
		e->r_off[n - 1] = (uint16_t)RUMA_MIN(off, e->r_off[n - 1]);
		e->r_end[n - 1] = (uint16_t)RUMA_MAX(end, e->r_end[n - 1]);
		return;
	}
	for (i = 0; i < n && e->r_end[i] + MTR_RANGE_GAP < off; i++)
		;
	for (j = i; j < n && e->r_off[j] <= end + MTR_RANGE_GAP; j++) {
		off = RUMA_MIN(off, e->r_off[j]);
		end = RUMA_MAX(end, e->r_end[j]);
	}
	if (j == i) { /* a new range at i */
		if (n == MTR_RANGES) {
			e->whole = true;
			return;
		}
		for (unsigned k = n; k > i; k--) {
			e->r_off[k] = e->r_off[k - 1];
			e->r_end[k] = e->r_end[k - 1];
		}
		e->nr = (uint8_t)(n + 1);
	} else { /* ranges i..j-1 become one at i */
		for (unsigned k = j; k < n; k++) {
			e->r_off[i + 1 + k - j] = e->r_off[k];
			e->r_end[i + 1 + k - j] = e->r_end[k];
		}
		e->nr = (uint8_t)(n - (j - i - 1));
	}
	e->r_off[i] = (uint16_t)off;
	e->r_end[i] = (uint16_t)end;
}

/* The entry of m whose page holds the byte at p, or NULL. */
static inline struct mtr_page *page_at(struct bm_mtr *m, const char *p)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct mtr_page *e = &m->p[i];
		if (p >= e->page && p < e->page + D)
			return e;
	}
	return NULL;
}

/* Whether [p, p + len) lies inside e's page. */
static bool inside_page(const struct mtr_page *e, const char *p, size_t len)
{
	return p >= e->page && p < e->page + D && len <= (size_t)(e->page + D - p);
}

void ruma_bm_wrote(const void *p, size_t len)
{
	struct bm_mtr *m = bm_declaring_mtr;
	if (RUMA_LIKELY(!m) || !len)
		return;
	const char *c = p;
	struct mtr_page *e = page_at(m, c);
	/* none: not a page of this mini-transaction (a private copy), nothing to log */
	if (!e || !e->declared || e->whole)
		return;
	size_t off = (size_t)(c - e->page);
	size_t end = off + len > D ? D : off + len;
	if (end - off >= D / 2)
		e->whole = true;
	else
		add_range(e, (unsigned)off, (unsigned)end);
}

void ruma_bm_wrote_unlogged(const void *p, size_t len)
{
	struct bm_mtr *m = bm_declaring_mtr;
	if (RUMA_LIKELY(!m) || !MTR_CHECK_DECLARED)
		return;
	struct mtr_page *e = page_at(m, p);
	if (e && e->declared && e->before && inside_page(e, p, len))
		memcpy(e->before + ((const char *)p - e->page), p, len);
}

/* Moves shorter than this are logged as the bytes they wrote. */
#define MTR_MOVE_MIN 32u

void ruma_bm_moved(const void *dst, const void *src, size_t len)
{
	struct bm_mtr *m = bm_declaring_mtr;
	if (RUMA_LIKELY(!m) || !len)
		return;
	struct mtr_page *e = page_at(m, dst);
	/* only as the page's first write since its last record: redo moves
	 * the bytes of the page as that record left it */
	if (e && e->declared && !e->whole && !e->nr && !e->mv_len && len >= MTR_MOVE_MIN &&
	    inside_page(e, dst, len) && inside_page(e, src, len)) {
		e->mv_dst = (uint16_t)((const char *)dst - e->page);
		e->mv_src = (uint16_t)((const char *)src - e->page);
		e->mv_len = (uint16_t)len;
		return;
	}
	ruma_bm_wrote(dst, len);
}

static char *put_head(char *o, unsigned kind, ruma_pid pid)
{
	*o++ = (char)kind;
	memcpy(o, &pid, sizeof(pid));
	return o + sizeof(pid);
}

#define SKIP_BLOCK 64u
#define SKIP_CHUNK 512u /* equal chunks are skipped by libc's memcmp (wide vectors) */

/* The first offset >= i, rounded down to SKIP_BLOCK, whose block of
 * SKIP_BLOCK bytes differs, or the start of the last partial block (the
 * caller compares it word by word), or D: most of a page is unchanged, and
 * this passes over it 64 bytes per step (SSE2 on x86-64, words elsewhere). */
static size_t next_changed_block(const char *a, const char *b, size_t i)
{
	for (i -= i % SKIP_BLOCK; i + SKIP_BLOCK <= D; i += SKIP_BLOCK) {
		if (i % SKIP_CHUNK == 0 && i + SKIP_CHUNK <= D && !memcmp(a + i, b + i, SKIP_CHUNK)) {
			i += SKIP_CHUNK - SKIP_BLOCK;
			continue;
		}
#ifdef __SSE2__
		__m128i e0 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + i)),
					    _mm_loadu_si128((const __m128i *)(b + i)));
		__m128i e1 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + i + 16)),
					    _mm_loadu_si128((const __m128i *)(b + i + 16)));
		__m128i e2 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + i + 32)),
					    _mm_loadu_si128((const __m128i *)(b + i + 32)));
		__m128i e3 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + i + 48)),
					    _mm_loadu_si128((const __m128i *)(b + i + 48)));
		__m128i all = _mm_and_si128(_mm_and_si128(e0, e1), _mm_and_si128(e2, e3));
		if (_mm_movemask_epi8(all) != 0xffff)
			return i;
#else
		uint64_t x = 0;
		for (size_t k = 0; k < SKIP_BLOCK; k += 8) {
			uint64_t u, v;
			memcpy(&u, a + i + k, 8);
			memcpy(&v, b + i + k, 8);
			x |= u ^ v;
		}
		if (x)
			return i;
#endif
	}
	return i;
}

/* One range of a DIFF entry body: u16 off, u16 len, then the page's bytes. */
static char *put_range(char *o, uint16_t off, uint16_t len, const char *page)
{
	memcpy(o, &off, 2);
	memcpy(o + 2, &len, 2);
	memcpy(o + 4, page + off, len);
	return o + 4 + len;
}

/* Encode the changed ranges of now vs before at o as a DIFF entry body
 * (after the head); returns the end, or NULL when nothing changed, or o
 * itself when the diff would be larger than half a page (use a full image). */
static char *put_diff(char *o, const char *before, const char *now)
{
	char *cnt = o;
	uint16_t n = 0;
	size_t bytes = 0;
	o += sizeof(uint16_t);
	for (size_t i = next_changed_block(before, now, 0); i < D;) {
		if (!memcmp(before + i, now + i, 8)) {
			i += 8;
			if (i % SKIP_BLOCK == 0)
				i = next_changed_block(before, now, i);
			continue;
		}
		size_t start = i, last = i + 8;
		for (i += 8; i < D; i += 8) {
			if (memcmp(before + i, now + i, 8))
				last = i + 8;
			else if (i - last >= 16)
				break;
		}
		uint16_t off = (uint16_t)start, len = (uint16_t)(last - start);
		bytes += len + 4u;
		if (bytes > D / 2)
			return cnt;
		o = put_range(o, off, len, now);
		n++;
		i = last;
	}
	if (!n)
		return NULL;
	memcpy(cnt, &n, sizeof(n));
	return o;
}

/* A DIFF entry body of e's declared ranges with the page's current bytes;
 * NULL when nothing was declared, o itself when the ranges come to more
 * than half a page (use a full image). */
static char *put_declared(char *o, const struct mtr_page *e)
{
	if (e->whole)
		return o;
	if (!e->nr && !e->mv_len)
		return NULL;
	char *body = o;
	if (e->mv_len) { /* BM_MTR_DIFF_MOVE */
		memcpy(o, &e->mv_dst, 2);
		memcpy(o + 2, &e->mv_src, 2);
		memcpy(o + 4, &e->mv_len, 2);
		o += BM_MTR_MOVE_HDR;
	}
	char *cnt = o;
	uint16_t n = e->nr;
	size_t bytes = 0;
	o += sizeof(uint16_t);
	for (unsigned k = 0; k < e->nr; k++) {
		uint16_t off = e->r_off[k], len = (uint16_t)(e->r_end[k] - e->r_off[k]);
		bytes += len + 4u;
		if (bytes > D / 2)
			return body;
		o = put_range(o, off, len, e->page);
	}
	memcpy(cnt, &n, sizeof(n));
	return o;
}

void ruma_bm_set_page_hole(ruma_bm *bm, ruma_bm_page_hole hole)
{
	atomic_store_explicit(&bm->page_hole, hole, memory_order_release);
}

/* The hole the page's owner names in page (0 when none, or one not inside
 * the page, or one too short to save anything). */
static unsigned page_hole(ruma_bm *bm, const char *page, unsigned *off)
{
	ruma_bm_page_hole hole = atomic_load_explicit(&bm->page_hole, memory_order_acquire);
	unsigned o = 0, len = 0;
	if (!hole || !hole(page, &o, &len) || o > D || len > D - o || len <= BM_MTR_HOLE_HDR)
		return 0;
	*off = o;
	return len;
}

/* A full image entry of page at o: FPI_HOLE without [hoff, hoff + hlen)
 * when hlen is not 0, else FPI; returns its end. */
static char *put_image(char *o, ruma_pid pid, const char *page, unsigned hoff, unsigned hlen)
{
	if (!hlen) {
		o = put_head(o, BM_MTR_FPI, pid);
		memcpy(o, page, D);
		return o + D;
	}
	uint16_t off = (uint16_t)hoff, len = (uint16_t)hlen;
	o = put_head(o, BM_MTR_FPI_HOLE, pid);
	memcpy(o, &off, 2);
	memcpy(o + 2, &len, 2);
	o += BM_MTR_HOLE_HDR;
	memcpy(o, page, hoff);
	memcpy(o + hoff, page + hoff + hlen, D - hoff - hlen);
	return o + D - hlen;
}

/* With RUMA_ASSERT on: every byte of a declared page that changed since the
 * copy, after the declared move, lies inside a declared range. */
static void check_declared(ruma_bm *bm, const struct mtr_page *e)
{
	if (!MTR_CHECK_DECLARED || e->whole)
		return;
	char moved[D];
	memcpy(moved, e->before, D);
	memmove(moved + e->mv_dst, moved + e->mv_src, e->mv_len);
	unsigned k = 0;
	for (unsigned i = 0; i < D; i++) {
		while (k < e->nr && e->r_end[k] <= i)
			k++;
		bool inside = k < e->nr && e->r_off[k] <= i;
		if (!inside && moved[i] != e->page[i]) {
			bm_say(&bm->cfg, "page %llu: byte %u written but not declared",
			       (unsigned long long)e->pid, i);
			RUMA_ASSERT(!"a declared page was written outside its declared ranges");
		}
	}
}

static void note_error(ruma_bm *bm, struct bm_mtr *m, int r)
{
	int none = 0;
	if (!m->err)
		m->err = r;
	(void)atomic_compare_exchange_strong(&bm->wal_err, &none, r);
}

/* After a DIFF entry body was logged: make the before-image equal to the
 * page again by copying just the ranges it names. */
static void refresh_ranges(char *before, const char *body)
{
	uint16_t n;
	memcpy(&n, body, 2);
	body += 2;
	for (uint16_t k = 0; k < n; k++) {
		uint16_t off, len;
		memcpy(&off, body, 2);
		memcpy(&len, body + 2, 2);
		memcpy(before + off, body + 4, len);
		body += 4u + len;
	}
}

/* Log the changes of every page in m as one record; `freed` (or UINT64_MAX)
 * is the page being freed. */
static void log_group(ruma_bm *bm, struct bm_mtr *m, ruma_pid freed)
{
	char *o = m->rec + m->carried; /* after a carried UNDO entry */
	const char *logged[BM_MTR_MAX]; /* per page: its DIFF body, the page (full image), NULL */
	/* entered across the full-image decision and the append: a checkpoint
	 * cannot move the redo start in between (log_enter) */
	log_enter(bm, m);
	uint64_t epoch = atomic_load(&bm->wal_epoch);
	for (unsigned i = 0; i < m->n; i++) {
		struct mtr_page *e = &m->p[i];
		const char *page = bm_page(bm, e->pid);
		logged[i] = NULL;
		if (e->fresh)
			o = put_head(o, BM_MTR_ALLOC, e->pid);
		if (e->pid == freed) {
			o = put_head(o, BM_MTR_FREE, e->pid);
			continue;
		}
		char *body = o + 1 + sizeof(ruma_pid);
		char *end;
		if (e->declared) {
			check_declared(bm, e);
			end = put_declared(body, e);
		} else {
			end = put_diff(body, e->before, page);
		}
		if (!end)
			continue; /* unchanged */
		/* a page LSN is the END of its last record: <= epoch means its
		 * last change was before the redo start */
		bool image = end == body || (!e->fresh && bm_page_lsn(page) <= epoch);
		unsigned hoff = 0, hlen = 0;
		if (image || (size_t)(end - body) >= MTR_HOLE_ASK) {
			hlen = page_hole(bm, page, &hoff);
			/* the smaller encoding: an image without its hole */
			image = image || (hlen && (size_t)(end - body) > BM_MTR_HOLE_HDR + D - hlen);
		}
		if (image) {
			/* the hole becomes the zeros recovery writes there: the page
			 * stays equal to its redo, byte for byte */
			memset(bm_page(bm, e->pid) + hoff, 0, hlen);
			o = put_image(o, e->pid, page, hoff, hlen);
			logged[i] = page;
		} else {
			/* a move is only ever declared (ruma_bm_moved) */
			(void)put_head(o, e->mv_len ? BM_MTR_DIFF_MOVE : BM_MTR_DIFF, e->pid);
			o = end;
			logged[i] = body;
		}
	}
	if (o == m->rec) {
		log_leave(m);
		return;
	}
	RUMA_ASSERT((size_t)(o - m->rec) <= BM_MTR_REC_MAX);
	uint64_t end;
	int r = ruma_wal_append(bm->wal, BM_WAL_MTR, m->rec, (size_t)(o - m->rec), NULL, &end);
	log_leave(m);
	m->carried = 0;
	if (r) {
		note_error(bm, m, r);
		return;
	}
	m->last_end = end;
	for (unsigned i = 0; i < m->n; i++) {
		struct mtr_page *e = &m->p[i];
		e->fresh = false;
		if (!logged[i])
			continue;
		char *page = bm_page(bm, e->pid);
		bm_page_set_lsn(page, end);
		bool moved = e->mv_len != 0;
		if (e->declared) {
			e->whole = false;
			e->nr = 0;
			e->mv_len = 0;
			if (!MTR_CHECK_DECLARED)
				continue;
		}
		if (logged[i] == page || moved)
			memcpy(e->before, page, D);
		else
			refresh_ranges(e->before, logged[i]);
		RUMA_ASSERT(memcmp(e->before, page, D) == 0);
	}
}

static void forget(struct bm_mtr *m, ruma_pid pid)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->p[i].pid == pid) {
			if (i + 1 < m->n) { /* swap with the last (keeping its before buffer) */
				struct mtr_page tmp = m->p[i];
				m->p[i] = m->p[m->n - 1];
				m->p[m->n - 1] = tmp;
			}
			m->n--;
			return;
		}
}

void bm_mtr_release(ruma_bm *bm, ruma_pid pid)
{
	struct bm_mtr *m = mtr_get(bm);
	if (!m)
		return; /* cannot happen: bm_mtr_latched made it */
	log_group(bm, m, UINT64_MAX);
	forget(m, pid);
}

void bm_mtr_free(ruma_bm *bm, ruma_pid pid)
{
	struct bm_mtr *m = mtr_get(bm);
	if (!m)
		return;
	log_group(bm, m, pid);
	forget(m, pid);
}

int bm_mtr_before_write(ruma_bm *bm, uint64_t lsn)
{
	int e = atomic_load(&bm->wal_err);
	if (e)
		return e;
	return lsn ? ruma_wal_flush(bm->wal, lsn) : 0;
}

int bm_mtr_meta(ruma_bm *bm, unsigned slot, uint64_t value)
{
	struct { uint32_t slot; uint32_t rsv; uint64_t value; } rec = { slot, 0, value };
	uint64_t end;
	int r = ruma_wal_append(bm->wal, BM_WAL_META, &rec, sizeof(rec), NULL, &end);
	if (!r && bm->cfg.durability == RUMA_BM_DURABLE_SYNC)
		r = ruma_wal_flush(bm->wal, end);
	return r;
}

/* Append m's carried UNDO entry as an UNDO record of its own: no page
 * change came to carry it. */
static int append_carried(ruma_bm *bm, struct bm_mtr *m)
{
	size_t n = m->carried;
	m->carried = 0;
	uint64_t end;
	int r = ruma_wal_append(bm->wal, RUMA_BM_LOG_UNDO, m->rec + BM_MTR_UNDO_HDR,
				n - BM_MTR_UNDO_HDR, NULL, &end);
	if (r) {
		note_error(bm, m, r);
		return r;
	}
	m->last_end = end;
	return 0;
}

/* Keep a later UNDO record of a transaction for the calling thread's next
 * page-change record of bm: true when kept (in a declaring operation of bm,
 * not too long), false when the caller appends it itself. */
static bool carry_undo(ruma_bm *bm, const void *payload, size_t len)
{
	struct bm_mtr *m = bm_declaring_mtr;
	if (!m || len > BM_MTR_UNDO_MAX || m != mtr_get(bm) || m->n == 0)
		return false;
	if (m->carried && append_carried(bm, m))
		return false; /* the log is dead: the caller's append reports it */
	uint32_t n = (uint32_t)len;
	m->rec[0] = (char)BM_MTR_UNDO;
	memcpy(m->rec + 1, &n, sizeof(n));
	memcpy(m->rec + BM_MTR_UNDO_HDR, payload, len);
	m->carried = BM_MTR_UNDO_HDR + len;
	return true;
}

int ruma_bm_op_end(ruma_bm *bm, int rc)
{
	if (RUMA_LIKELY(!bm->wal))
		return rc;
	struct bm_mtr *m = mtr_get(bm);
	if (!m)
		return rc ? rc : -ENOMEM;
	RUMA_ASSERT(m->n == 0);
	if (m->carried)
		(void)append_carried(bm, m); /* an error is in m->err */
	bm_declaring_mtr = NULL;
	int err = m->err;
	m->err = 0;
	if (m->defer)
		return err ? err : rc;
	if (!err && m->last_end && bm->cfg.durability == RUMA_BM_DURABLE_SYNC)
		err = ruma_wal_flush(bm->wal, m->last_end);
	if (!err && m->last_end)
		err = atomic_load(&bm->wal_err);
	m->last_end = 0;
	return err ? err : rc;
}

void ruma_bm_op_defer(ruma_bm *bm, bool on)
{
	struct bm_mtr *m = bm->wal ? mtr_get(bm) : NULL;
	if (m) {
		m->defer = on;
		m->last_end = 0;
	}
}

/* ---- records of the layers above ------------------------------------------------ */

/* The set of unfinished transactions (active_mu held): id and first LSN. */
static int active_add(ruma_bm *bm, uint64_t id, uint64_t first)
{
	for (size_t i = 0; i < bm->nactive; i++)
		if (bm->active[i].id == id)
			return 0;
	if (bm->nactive == bm->capactive) {
		size_t cap = bm->capactive ? bm->capactive * 2 : 64;
		struct bm_active *a = realloc(bm->active, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		bm->active = a;
		bm->capactive = cap;
	}
	bm->active[bm->nactive++] = (struct bm_active){ id, first };
	return 0;
}

static void active_remove(ruma_bm *bm, uint64_t id)
{
	for (size_t i = 0; i < bm->nactive; i++)
		if (bm->active[i].id == id) {
			bm->active[i] = bm->active[--bm->nactive];
			return;
		}
}

/*
 * Fuzzy checkpoint (ruma_bm_flush with a log; flush_mu held).  Writers go on.
 *  1. with the loggers held (loggers_hold): B = end of the log, the redo start
 *     becomes B (a page older than B gets a full image at its next change),
 *     A = first LSN of the oldest unfinished transaction (or B);
 *  2. every dirty page is written (the WAL rule makes the log durable
 *     first): afterwards every change before B is on disk;
 *     and synced;
 *  3. page 0 gets redo start B and undo start A (with the allocation state,
 *     after the log is durable), fdatasync;
 *  4. the log before A is discarded.
 * Recovery reads the log from A: transaction records from A, page changes
 * only from B.  A crash before step 3 completes leaves page 0 naming the
 * previous checkpoint, whose log is still there.
 */
int bm_wal_checkpoint(ruma_bm *bm)
{
	loggers_hold(bm);
	uint64_t b = ruma_wal_end(bm->wal);
	pthread_mutex_lock(&bm->active_mu);
	uint64_t a = b;
	for (size_t i = 0; i < bm->nactive; i++)
		a = RUMA_MIN(a, bm->active[i].first);
	pthread_mutex_unlock(&bm->active_mu);
	atomic_store(&bm->wal_epoch, b);
	atomic_store(&bm->ckpt_moving, false);
	int r = bm_flush_and_sync(bm);
	if (r)
		return r; /* page 0 still names the previous checkpoint */
	bm->ckpt_redo = b;
	bm->ckpt_undo = a;
	r = bm_checkpoint_meta(bm);
	if (!r)
		r = ruma_wal_discard_before(bm->wal, a);
	return r;
}

bool ruma_bm_logging(ruma_bm *bm)
{
	return bm->wal != NULL;
}

ruma_bm_durability ruma_bm_durability_of(ruma_bm *bm)
{
	if (!bm->wal)
		return RUMA_BM_DURABLE_OFF;
	return bm->cfg.durability == RUMA_BM_DURABLE_ASYNC ? RUMA_BM_DURABLE_ASYNC
							   : RUMA_BM_DURABLE_SYNC;
}

int ruma_bm_log(ruma_bm *bm, uint16_t type, const void *payload, size_t len, uint64_t *lsn,
		uint64_t *end)
{
	if (!bm->wal || type < RUMA_BM_LOG_UNDO || type > RUMA_BM_LOG_END || len < 8)
		return -EINVAL;
	int e = atomic_load(&bm->wal_err);
	if (e)
		return e;
	uint64_t id, at;
	memcpy(&id, payload, sizeof(id));
	struct bm_mtr *m = bm_declaring_mtr;
	if (type == RUMA_BM_LOG_UNDO && id != 0 && !lsn && !end && carry_undo(bm, payload, len))
		return 0;
	if (m && m->carried && m == mtr_get(bm) && (e = append_carried(bm, m)) != 0)
		return e; /* records stay in the order they were made */
	if (type == RUMA_BM_LOG_UNDO && id != 0) {
		/* a later change of a transaction: the set of unfinished ones
		 * stays as it is */
		int r = ruma_wal_append(bm->wal, type, payload, len, lsn, end);
		if (r) {
			int none = 0;
			(void)atomic_compare_exchange_strong(&bm->wal_err, &none, r);
		}
		return r;
	}
	pthread_mutex_lock(&bm->active_mu); /* the set changes in log order */
	int r = ruma_wal_append(bm->wal, type, payload, len, &at, end);
	if (r) {
		int none = 0;
		(void)atomic_compare_exchange_strong(&bm->wal_err, &none, r);
	} else if (type == RUMA_BM_LOG_UNDO && id == 0) {
		r = active_add(bm, at, at);
	} else if (type != RUMA_BM_LOG_UNDO) {
		active_remove(bm, id);
	}
	pthread_mutex_unlock(&bm->active_mu);
	if (lsn)
		*lsn = at;
	return r;
}

int ruma_bm_log_flush(ruma_bm *bm, uint64_t end)
{
	if (!bm->wal)
		return -EINVAL;
	int r = ruma_wal_flush(bm->wal, end);
	return r ? r : atomic_load(&bm->wal_err);
}

int ruma_bm_log_request(ruma_bm *bm, uint64_t end)
{
	if (!bm->wal)
		return -EINVAL;
	int r = atomic_load(&bm->wal_err);
	return r ? r : ruma_wal_request(bm->wal, end);
}

uint64_t ruma_bm_log_durable(ruma_bm *bm)
{
	return bm->wal ? ruma_wal_durable(bm->wal) : 0;
}

uint64_t ruma_bm_log_end(ruma_bm *bm)
{
	return bm->wal ? ruma_wal_end(bm->wal) : 0;
}

/* Go on with the log recovery has just redone (ruma_wal_resume'd): this
 * session appends to it, the last checkpoint's redo and undo LSNs stay as
 * page 0 has them (a crash before the next checkpoint redoes from there
 * again), pages older than that redo LSN get a full image on their next
 * change, and the losers count as unfinished transactions (a loser's id is
 * the LSN of its first record) until their undo ends them, so that no
 * checkpoint discards their records. */
int bm_wal_continue(ruma_bm *bm, struct ruma_wal *w)
{
	bm->mtrs = calloc(bm->cfg.max_threads, sizeof(*bm->mtrs));
	if (!bm->mtrs)
		return -ENOMEM;
	atomic_store(&bm->wal_epoch, bm->meta_redo_lsn);
	int r = 0;
	pthread_mutex_lock(&bm->active_mu);
	for (size_t i = bm->npending; i-- > 0 && !r;)
		r = active_add(bm, bm->pending[i].txn, bm->pending[i].txn);
	pthread_mutex_unlock(&bm->active_mu);
	if (r)
		return r;
	bm->wal = w;
	if (bm->npending)
		atomic_store(&bm->undo_outstanding, true);
	return 0;
}

/* Carry the losers' undo records into this session's log (oldest first, so
 * the next recovery lists them newest first again), durably. */
int bm_undo_relog(ruma_bm *bm)
{
	uint64_t end = 0, at;
	char *buf = malloc(RUMA_WAL_MAX_PAYLOAD);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	for (size_t i = bm->npending; i-- > 0 && !r;) {
		ruma_bm_undo *u = &bm->pending[i];
		memcpy(buf, &u->txn, 8);
		memcpy(buf + 8, u->payload, u->len);
		r = ruma_wal_append(bm->wal, RUMA_BM_LOG_UNDO, buf, 8u + u->len, &at, &end);
		if (!r) {
			pthread_mutex_lock(&bm->active_mu);
			r = active_add(bm, u->txn, at);
			pthread_mutex_unlock(&bm->active_mu);
		}
	}
	free(buf);
	if (!r && end)
		r = ruma_wal_flush(bm->wal, end);
	if (!r && bm->npending)
		atomic_store(&bm->undo_outstanding, true);
	return r;
}

void ruma_bm_undo_take(ruma_bm *bm, ruma_bm_undo **list, size_t *n)
{
	*list = bm->pending;
	*n = bm->npending;
	bm->pending = NULL;
	bm->npending = 0;
}

void ruma_bm_undo_free(ruma_bm_undo *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((void *)list[i].payload);
	free(list);
}

void ruma_bm_undo_done(ruma_bm *bm)
{
	atomic_store(&bm->undo_outstanding, false);
}

int bm_wal_open(ruma_bm *bm, struct ruma_wal **out)
{
	char path[sizeof(bm->path) + 8];
	snprintf(path, sizeof(path), "%s.wal", bm->path);
	ruma_wal_config c = {
		.path = path,
		.flush_ms = bm->cfg.durability == RUMA_BM_DURABLE_ASYNC && !bm->needs_recovery
				    ? (bm->cfg.wal_flush_ms ? bm->cfg.wal_flush_ms : 5u)
				    : 0u,
		.message = bm->cfg.message,
		.message_ctx = bm->cfg.message_ctx,
		/* a store created anew or closed cleanly: what its log file holds is
		 * not needed (an older incarnation's log is emptied, not refused) */
		.fresh = bm->cfg.fresh || !bm->needs_recovery,
		.replay = bm->needs_recovery, /* read once by recovery, then emptied or resumed */
		.owner = { bm->store_id[0], bm->store_id[1] }, /* a log of another store is refused */
		.must_exist = bm->needs_recovery, /* never created empty in place of the needed one */
		.salvage = bm->cfg.salvage_log,
		/* extents are durable before a record naming them can be (extent.c) */
		.before_write = bm->ops.before_log_write,
		.before_write_ctx = bm,
	};
	return ruma_wal_open(&c, out);
}

void bm_mtr_release_all(ruma_bm *bm)
{
	if (!bm->mtrs)
		return;
	for (unsigned i = 0; i < bm->cfg.max_threads; i++)
		if (bm->mtrs[i]) {
			free(bm->mtrs[i]->slab);
			free(bm->mtrs[i]->rec);
			free(bm->mtrs[i]);
		}
	free(bm->mtrs);
	bm->mtrs = NULL;
}
