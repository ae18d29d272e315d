/*
 * wal.c — the write-ahead log file: records, the shared ring, group commit,
 * reading back.
 *
 * File layout: page 0 is a header {magic, version, CRC-32C, base LSN, start
 * LSN, owner id, ring}; the record with LSN L sits at file offset
 * 4096 + (L - base).  base is the LSN the log continues from (set by
 * ruma_wal_reset: the owner's checkpoint), owner the 128-bit identity of
 * the store the log belongs to (cfg.owner; a log of another owner is
 * refused), ring the largest ring of a session that wrote the log (the most
 * one flush round can write: what a crash can tear).
 * The log's records begin at start >= base: ruma_wal_discard_before moves
 * start forward (header rewritten and synced first) and punches the blocks
 * before it out of the file (fallocate PUNCH_HOLE), so offsets never move.
 * A record is
 *   u32 crc   CRC-32C of the payload, continued over the rest of the
 *             header (so the payload's part is computed before the
 *             appender takes the log's mutex; only 20 bytes inside it)
 *   u32 len   bytes of the whole record incl. header, padded to 8
 *   u64 lsn   its own LSN (a stale or misplaced record cannot pass)
 *   u16 type, u16 0, u32 payload length
 * followed by the payload.  The log ends at the first record that fails.
 * A failing record followed by a valid one further than one ring from it,
 * or with no zero sector before the next valid one, was damaged after it
 * was written (a crash tears at most the last flush round, and leaves
 * zeros where a write did not land), and so was one whose CRC one flipped
 * bit explains (a torn write is not one bit) or a file that ends exactly at
 * a record's end while its header says it is allocated ahead (a crash
 * leaves it longer): the iterator reports RUMA_ECORRUPT, or with
 * cfg.salvage ends the log there and counts what it discards.
 *
 * Ring: records [written, end) live in ring[(lsn - base) % cap].  Appending
 * takes no lock: an appender claims a slot (an idle one of WAL_SLOTS,
 * CAS from WAL_IDLE to the end it saw), reserves its bytes with one
 * fetch_add on end, publishes its LSN in the slot, copies header and
 * payload into the ring and sets the slot idle again.  A flush round
 * writes [written, complete) where complete = min(end, every busy slot):
 * the prefix whose appenders have all finished.  (Reading end first and
 * the slots after it, seq_cst, a round cannot miss an appender below the
 * end it read: that appender's slot claim preceded its fetch_add.)  Only
 * an appender that finds the ring full takes mu, to wait (or write
 * itself).  One flusher at a time (flushing = true) takes [written,
 * complete) as it is at that moment, writes it with mu released —
 * appenders go on filling the ring behind it — fdatasyncs, then advances
 * written = durable and wakes every waiter.  Waiters whose LSN is not
 * covered start the next round, which then carries all of them: group
 * commit.  When the last round ended with threads waiting, the next
 * leader first waits up to WAL_GATHER_NS for another thread to ask
 * (gather), so that two committers share rounds instead of alternating.
 *
 * The background flusher (started with the log when flush_ms is set, or at
 * the first ruma_wal_request) runs a round whenever [durable, want) is not
 * empty — ruma_wal_request raises want without waiting, so a thread can go on
 * while its commit is written (flush pipelining) — and, with flush_ms, every
 * flush_ms for whatever was appended.  A round that ends with want still
 * ahead wakes it again, so requests made during a round are carried by the
 * next one; its rounds start at most once per WAL_ROUND_GAP_NS, since
 * nobody waits for them (a thread that waits flushes itself).
 *
 * Direct I/O: the file is opened with O_DIRECT where the file system allows
 * it (else buffered, same code): a round writes the whole 4 KiB blocks that
 * hold [written, end) straight from the ring, so the log's bytes are not
 * copied into the page cache.  The first block is rewritten with the bytes
 * it already holds (the ring keeps the block of `written`: appenders count
 * the ring's tail from the start of that block).  The last block is copied
 * under mu into a buffer of its own, with zeros after `end`, so the write
 * never reads ring bytes an appender is filling; the next round rewrites
 * that block.  Reads go through a second, read-only, buffered descriptor.
 *
 * Allocation ahead: a round first keeps the file allocated up to 4 MiB past
 * what it writes (alloc_ahead: fallocate, or written zeros while the log
 * grows slowly), so that its fdatasync finds no size change and no block to
 * allocate: those change once per refill (about every 2 MiB of log, or
 * 64 KiB while zeros are written), not at every sync.  The header's flags
 * record it
 * (WAL_HDR_AHEAD, cleared before a failed allocation lets a write reach the
 * file's end), so a file ending at a record's end reads as cut.
 *
 * Replay (cfg.replay, crash recovery): open does not scan the log; the
 * recovery's iterator, which checks every CRC itself, finds the end, the
 * iterator hints the kernel to read its next window ahead
 * (POSIX_FADV_WILLNEED) while records are applied; then ruma_wal_reset
 * empties the log after that end, or ruma_wal_resume lets appends continue
 * there.  Nothing can be appended before either.
 *
 * Invariants: base <= written = durable <= complete <= end; end - tail(written) <= cap
 * (an appender past that waits before it copies);
 * err != 0 is sticky (a dead log accepts nothing).
 *
 * Syscalls (src/os): open, pread, pwrite (the header, zeros ahead), pwritev (a round: one call), fdatasync,
 * ftruncate, fallocate (allocation ahead,
 * hole punching), fadvise, fstat
 * (the file's size); close directly.  Thread: the optional background flusher (pthread).
 */
#include <ruma/wal.h>
#include <ruma/core.h>
#include "core/core_ext.h"

#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WAL_MAGIC 0x314c4157414d5552ull /* "RUMAWAL1" */
#define WAL_VERSION 4u /* 2: record CRC over payload, then header; 3: owner id, ring; 4: flags */
#define WAL_HDR_BYTES 4096u
#define WAL_BLOCK 4096u /* direct I/O unit: file offsets, lengths, ring alignment */
#define WAL_ROUND_GAP_NS 1000000u /* the flusher's rounds for requests: at most one per ms */
#define WAL_DEFAULT_RING (8u << 20)
#define WAL_MAX_RING ((size_t)1 << 40)
/* The file is kept allocated this far beyond the end of a flush round
 * (alloc_ahead). */
#define WAL_ALLOC_AHEAD (4u << 20)
/* A log that grew by fewer bytes than its nanoseconds / WAL_ZERO_NS_PER_BYTE
 * since the last refill (slower than about 40 MiB/s: its syncs, not its
 * bandwidth, bound it) is extended with written zeros, WAL_ZERO_STEP at a
 * time (extend_ahead). */
#define WAL_ZERO_NS_PER_BYTE 24u
#define WAL_ZERO_STEP (64u << 10)
/* Appender slots (lock-free appending, above); an appender finding none
 * idle yields and tries again. */
#define WAL_SLOTS 64u
#define WAL_IDLE UINT64_MAX
/* file_hdr.flags: the file is always longer than its last record (allocation
 * ahead is on), so a file that ends at or inside a record was cut. */
#define WAL_HDR_AHEAD 1u
/* CRC-32C's reflected polynomial: the CRC change a flip of a message's last bit makes */
#define WAL_CRC32C_POLY 0x82f63b78u

struct file_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t crc; /* of the struct with crc = 0 */
	uint64_t base;
	uint64_t start; /* first record (>= base) */
	uint64_t owner[2]; /* the store the log belongs to (0, 0: none named) */
	uint64_t ring;  /* largest ring of a session that wrote the log */
	uint64_t flags; /* WAL_HDR_AHEAD */
};

struct rec_hdr {
	uint32_t crc;
	uint32_t len;
	uint64_t lsn;
	uint16_t type;
	uint16_t rsv;
	uint32_t plen;
};
_Static_assert(sizeof(struct rec_hdr) == RUMA_WAL_HEADER, "record header size");

/* One appender's place in the log while it copies its record; a cache line
 * each, so appenders on different slots share nothing but `end`. */
struct wal_slot {
	_Atomic uint64_t at;      /* WAL_IDLE, or a LSN at or below the record's */
	_Atomic uint64_t records; /* appended through this slot (owner adds) */
	_Atomic uint64_t bytes;
	char pad[64 - 3 * sizeof(uint64_t)];
};

struct ruma_wal {
	ruma_wal_config cfg;     /* cfg.path points at path */
	char *path;              /* the caller's path, copied: it may be gone after open */
	int fd;                  /* writes (O_DIRECT where possible) */
	int rfd;                 /* reads: buffered, read-only */
	bool direct;             /* fd has O_DIRECT */
	char *hdr;               /* a block-aligned page for the header */
	char *tail;              /* direct I/O: the last block of a flush round */
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* a flush round ended */
	pthread_cond_t kick;     /* wakes the background flusher */
	char *ring;
	size_t cap;
	uint64_t base;           /* LSN at file offset WAL_HDR_BYTES */
	uint64_t start;          /* LSN of the first record kept */
	_Atomic uint64_t end;    /* next LSN: reserved by appenders (fetch_add) */
	uint64_t verified;       /* records below this LSN passed their CRC when open read the log */
	uint64_t hdr_ring;       /* the header's ring: max of the file's and this session's */
	bool replaying;          /* opened with cfg.replay and not reset yet: end unknown */
	uint64_t replay_end;     /* replaying: the end an iterator found */
	_Atomic uint64_t durable; /* == written; written under mu, read without it by ruma_wal_durable */
	_Atomic unsigned in_flush; /* threads inside ruma_wal_flush (gather) */
	bool contended;          /* the last round ended with other threads waiting (under mu) */
	_Atomic uint64_t want;   /* the flusher makes [durable, want) durable (ruma_wal_request);
				  * raised without mu, lowered never */
	_Atomic bool idle;       /* the flusher waits for a kick (set and cleared under mu) */
	uint64_t round_ns;       /* when the flusher's last round started (ruma_now_ns) */
	bool flushing;
	_Atomic int err;         /* set under mu, read by appenders without it */
	bool stop;
	_Atomic bool has_flusher; /* set under mu, read by requests without it */
	pthread_t flusher;
	uint64_t alloc_to;       /* the file is allocated up to this offset (alloc_ahead) */
	uint64_t alloc_ns;       /* when it was last extended (ruma_now_ns; 0: never) */
	uint64_t alloc_upto;     /* the log's file offset it was extended for then */
	bool no_alloc_ahead;     /* alloc_ahead failed or the file is not a regular file */
	bool hdr_ahead;          /* the header on disk has WAL_HDR_AHEAD */
	/* changed under mu (by a plain add: one writer at a time), read without it */
	struct {
		_Atomic uint64_t flushes, waits;
	} st;
	struct wal_slot slots[WAL_SLOTS] __attribute__((aligned(64)));
};

/* The end of the log as far as it is known (mu held): while replaying, what
 * an iterator found (w->end stays at the start, so that close writes
 * nothing). */
static uint64_t known_end(const ruma_wal *w)
{
	return w->replaying ? w->replay_end : w->end;
}

/* st.x += n by the holder of mu. */
#define STAT_ADD(w, x, n)                                                                        \
	atomic_store_explicit(&(w)->st.x,                                                       \
			      atomic_load_explicit(&(w)->st.x, memory_order_relaxed) + (n),    \
			      memory_order_relaxed)

/* The iterator reads the log through a window of WAL_READ_WINDOW bytes (at
 * least one largest record): one pread per window instead of two per record. */
#define WAL_READ_WINDOW ((size_t)8 << 20)
_Static_assert(WAL_READ_WINDOW >= RUMA_WAL_HEADER + RUMA_WAL_MAX_PAYLOAD + 8,
	       "a window holds the largest record");

struct ruma_wal_iter {
	ruma_wal *w;
	uint64_t lsn;
	char *buf;      /* the window: log bytes [at, at + have) */
	uint64_t at;
	size_t have;
	uint64_t verified; /* w->verified when the iterator was opened */
	bool ended;        /* the end was found (and what follows it examined) */
	uint64_t dropped_records, dropped_bytes; /* salvage: discarded after the end */
};

#define say(c, ...) ruma_say((c)->message, (c)->message_ctx, "ruma wal", __VA_ARGS__)

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* A record's CRC from its payload's CRC (ruma_crc32c(0, payload, plen)). */
static uint32_t rec_crc_from(const struct rec_hdr *h, uint32_t payload_crc)
{
	return ruma_crc32c(payload_crc, (const char *)h + 4, sizeof(*h) - 4);
}

static uint32_t rec_crc(const struct rec_hdr *h, const void *payload)
{
	return rec_crc_from(h, ruma_crc32c(0, payload, h->plen));
}

static off_t file_off(const ruma_wal *w, uint64_t lsn)
{
	return (off_t)(WAL_HDR_BYTES + (lsn - w->base));
}

/* The start of the file block that holds lsn (as an LSN). */
static uint64_t block_start(const ruma_wal *w, uint64_t lsn)
{
	return lsn - (lsn - w->base) % WAL_BLOCK;
}

/* The oldest ring byte still needed: the block of `written` (rewritten by
 * the next round). */
static uint64_t ring_tail(const ruma_wal *w)
{
	return block_start(w, w->durable);
}

/* ---- header ---------------------------------------------------------------- */

static int write_header(ruma_wal *w, uint64_t base, uint64_t start)
{
	w->hdr_ring = RUMA_MAX(w->hdr_ring, (uint64_t)w->cap);
	struct file_hdr h = { .magic = WAL_MAGIC, .version = WAL_VERSION, .crc = 0, .base = base,
			      .start = start, .owner = { w->cfg.owner[0], w->cfg.owner[1] },
			      .ring = w->hdr_ring, .flags = w->no_alloc_ahead ? 0 : WAL_HDR_AHEAD };
	h.crc = ruma_crc32c(0, &h, sizeof(h));
	memset(w->hdr, 0, WAL_HDR_BYTES);
	memcpy(w->hdr, &h, sizeof(h));
	int r = ruma_os_pwrite_full(w->fd, w->hdr, WAL_HDR_BYTES, 0);
	if (!r)
		w->hdr_ahead = !w->no_alloc_ahead;
	return r;
}

/* Allocation ahead is off from now on: a header that still says it is on is
 * rewritten (and synced) first, so that a file ending at a record's end is
 * never taken for a cut log.  mu held (or the log not shared yet). */
static int ahead_off(ruma_wal *w)
{
	w->no_alloc_ahead = true;
	if (!w->hdr_ahead)
		return 0;
	int r = write_header(w, w->base, w->start);
	return r ? r : ruma_os_fdatasync(w->fd);
}

/* The size of the log file (0 for what is not a regular file, as st_size). */
static int file_bytes(int fd, uint64_t *bytes)
{
	ruma_os_file_info info;
	int r = ruma_os_file_probe(fd, &info);
	if (r)
		return r;
	*bytes = info.is_regular ? info.bytes : 0;
	return 0;
}

/*
 * Extend the file up to WAL_ALLOC_AHEAD past offset upto; false where that
 * fails (alloc_ahead).  Blocks reserved with fallocate (mode 0) are
 * unwritten extents: the first write into each changes the file's block
 * map, and the fdatasync after it writes that too, one more device round
 * trip per sync (ext4).  So a log that grows slowly — where each round
 * carries a few commits and its sync is their whole cost — is extended
 * with written zeros instead, and a round's fdatasync is then a cache
 * flush alone.  The zeros go WAL_ZERO_STEP at a time, just enough to keep
 * WAL_ALLOC_AHEAD / 2 ahead, so that no round waits for more than one
 * short write of them; a refill past that reserves.  A fast log keeps
 * fallocate: zeros would double the bytes it sends to the device.  Both
 * read as zeros.
 */
static bool extend_ahead(ruma_wal *w, uint64_t upto)
{
	static _Alignas(WAL_BLOCK) const char zeros[WAL_ZERO_STEP];
	ruma_os_file_info info;
	uint64_t goal = (upto + WAL_ALLOC_AHEAD + WAL_BLOCK - 1) / WAL_BLOCK * WAL_BLOCK,
		 now = ruma_now_ns();
	if (ruma_os_file_probe(w->fd, &info) || !info.is_regular)
		return false;
	bool slow = w->alloc_ns && upto >= w->alloc_upto &&
		    (upto - w->alloc_upto) * WAL_ZERO_NS_PER_BYTE < now - w->alloc_ns;
	uint64_t need = upto + WAL_ALLOC_AHEAD / 2 + WAL_BLOCK;
	if (slow && info.bytes % WAL_BLOCK == 0 && need <= info.bytes + WAL_ZERO_STEP &&
	    !ruma_os_pwrite_full(w->fd, zeros, WAL_ZERO_STEP, (off_t)info.bytes)) {
		goal = info.bytes + WAL_ZERO_STEP;
	} else if (goal > info.bytes &&
		   ruma_os_fallocate(w->fd, 0, (off_t)info.bytes, (off_t)(goal - info.bytes))) {
		return false;
	}
	w->alloc_to = RUMA_MAX(goal, info.bytes);
	w->alloc_ns = now;
	w->alloc_upto = upto;
	return true;
}

static int read_header(ruma_wal *w, bool *empty)
{
	struct file_hdr h;
	uint64_t bytes;
	*empty = false;
	int r = file_bytes(w->fd, &bytes);
	if (r)
		return r;
	if (bytes == 0 && w->cfg.must_exist) {
		say(&w->cfg, "the log %s is empty: it holds none of the records the store needs",
		    w->cfg.path);
		return RUMA_ECORRUPT;
	}
	if (bytes == 0) {
		*empty = true;
		return 0;
	}
	r = ruma_os_pread_full(w->rfd, &h, sizeof(h), 0);
	if (r == RUMA_ESHORTIO)
		r = RUMA_ECORRUPT;
	if (r)
		return r;
	uint32_t want = h.crc;
	h.crc = 0;
	if (h.magic != WAL_MAGIC || ruma_crc32c(0, &h, sizeof(h)) != want) {
		say(&w->cfg, "%s is not a ruma write-ahead log (bad header)", w->cfg.path);
		return RUMA_ECORRUPT;
	}
	if (h.version != WAL_VERSION) {
		say(&w->cfg, "%s: log format %u, this build reads format %u: recover the store "
		    "with the ruma that wrote it", w->cfg.path, h.version, WAL_VERSION);
		return RUMA_ECORRUPT;
	}
	if (h.start < h.base || (h.start - h.base) % 8 || h.start > RUMA_WAL_LSN_MAX) {
		say(&w->cfg, "%s: bad log header (start before base, or beyond the LSN limit)",
		    w->cfg.path);
		return RUMA_ECORRUPT;
	}
	bool named = w->cfg.owner[0] || w->cfg.owner[1];
	if (named && (h.owner[0] != w->cfg.owner[0] || h.owner[1] != w->cfg.owner[1])) {
		say(&w->cfg, "log %s belongs to another store (its id %016llx%016llx, this store's "
		    "%016llx%016llx): put this store's own log under that name, or move that one away",
		    w->cfg.path, (unsigned long long)h.owner[0], (unsigned long long)h.owner[1],
		    (unsigned long long)w->cfg.owner[0], (unsigned long long)w->cfg.owner[1]);
		return RUMA_ECORRUPT;
	}
	w->base = h.base;
	w->start = h.start;
	w->hdr_ring = h.ring;
	w->hdr_ahead = h.flags & WAL_HDR_AHEAD;
	return 0;
}

/* ---- reading ------------------------------------------------------------------ */

int ruma_wal_iter_open(ruma_wal *w, ruma_wal_iter **out)
{
	ruma_wal_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->w = w;
	it->lsn = it->at = w->start;
	it->verified = w->verified;
	it->buf = malloc(WAL_READ_WINDOW);
	if (!it->buf) {
		free(it);
		return -ENOMEM;
	}
	*out = it;
	return 0;
}

void ruma_wal_iter_close(ruma_wal_iter *it)
{
	if (it) {
		free(it->buf);
		free(it);
	}
}

/* Make log bytes [lsn, lsn + n) readable in the window: *p points at them,
 * or NULL when the file ends first.  Returns 0 or an I/O error. */
static int window_get(ruma_wal_iter *it, uint64_t lsn, size_t n, const char **p)
{
	*p = NULL;
	if (lsn < it->at || lsn + n > it->at + it->have) {
		it->at = lsn;
		it->have = 0;
		while (it->have < WAL_READ_WINDOW) {
			ssize_t k = ruma_os_pread(it->w->rfd, it->buf + it->have,
						  WAL_READ_WINDOW - it->have,
						  file_off(it->w, lsn) + (off_t)it->have);
			if (k < 0)
				return (int)k;
			if (k == 0)
				break; /* end of file */
			it->have += (size_t)k;
		}
		/* the kernel reads the next window while this one is used (a
		 * hint: its failure changes nothing) */
		(void)ruma_os_fadvise(it->w->rfd, file_off(it->w, lsn) + (off_t)it->have,
				      (off_t)WAL_READ_WINDOW, POSIX_FADV_WILLNEED);
	}
	if (lsn + n <= it->at + it->have)
		*p = it->buf + (lsn - it->at);
	return 0;
}

static int iter_step(ruma_wal_iter *it, ruma_wal_record *rec)
{
	struct rec_hdr h;
	const char *p;
	int r = window_get(it, it->lsn, sizeof(h), &p);
	if (r || !p)
		return r;
	memcpy(&h, p, sizeof(h));
	if (h.lsn != it->lsn || h.plen > RUMA_WAL_MAX_PAYLOAD || h.len != pad8(sizeof(h) + h.plen))
		return 0;
	r = window_get(it, it->lsn, sizeof(h) + h.plen, &p);
	if (r || !p)
		return r;
	const char *payload = p + sizeof(h);
	/* what open's scan checked is not checked again (recovery reads the log twice) */
	if (h.lsn + h.len > it->verified && rec_crc(&h, payload) != h.crc)
		return 0;
	rec->lsn = h.lsn;
	rec->end = h.lsn + h.len;
	rec->type = h.type;
	rec->len = h.plen;
	rec->payload = payload;
	it->lsn = rec->end;
	return 1;
}

/* Is there a whole record with a valid CRC at lsn?  *len gets its length
 * (0: none).  Returns 0 or an I/O error. */
static int valid_at(ruma_wal_iter *it, uint64_t lsn, uint32_t *len)
{
	struct rec_hdr h;
	const char *p;
	*len = 0;
	int r = window_get(it, lsn, sizeof(h), &p);
	if (r || !p)
		return r;
	memcpy(&h, p, sizeof(h));
	if (h.lsn != lsn || h.plen > RUMA_WAL_MAX_PAYLOAD || h.len != pad8(sizeof(h) + h.plen))
		return 0;
	r = window_get(it, lsn, sizeof(h) + h.plen, &p);
	if (r || !p)
		return r;
	if (rec_crc(&h, p + sizeof(h)) == h.crc)
		*len = h.len;
	return 0;
}

/* Is one of the 512-byte sectors (aligned in the file) that overlap LSNs
 * [from, to) all zeros?  What a crash leaves of a write that did not reach
 * the disk reads as zeros (the log grows into holes; the block a round
 * rewrites first holds the same bytes before the round's start). */
static int zero_sector(ruma_wal_iter *it, uint64_t from, uint64_t to, bool *zero)
{
	static const char zeros[512];
	uint64_t s = from - (uint64_t)file_off(it->w, from) % 512;
	*zero = false;
	for (; s < to && !*zero; s += 512) {
		const char *p;
		int r = window_get(it, s, 512, &p);
		if (r || !p)
			return r;
		*zero = !memcmp(p, zeros, 512);
	}
	return 0;
}

/* Was nothing ever written at lsn: its CRC and length words zero?  A record
 * that reached the file has a length of at least its header, so a flipped
 * bit cannot leave these zero.  A flush round rewrites the block that holds
 * its start; torn, that block's old sectors come back, and those hold zeros
 * after the old end, but share their first bytes with records before it:
 * no whole zero sector need lie between the failing record and the valid
 * ones after it. */
static int never_written(ruma_wal_iter *it, uint64_t lsn, bool *unwritten)
{
	static const char zeros[8];
	const char *p;
	int r = window_get(it, lsn, sizeof(zeros), &p);
	if (!r)
		*unwritten = p && !memcmp(p, zeros, sizeof(zeros));
	return r;
}

/* Does a header fit a record at lsn (own LSN, length and payload length)? */
static bool hdr_fits(const struct rec_hdr *h, uint64_t lsn)
{
	return h->lsn == lsn && h->plen <= RUMA_WAL_MAX_PAYLOAD && h->len == pad8(sizeof(*h) + h->plen);
}

/* Is s the CRC change that one flipped bit among the last `bits` bits of a
 * message makes?  CRC-32C is linear: the change a flipped bit makes depends
 * only on how many bits follow it — the polynomial for the last bit, one
 * more register step (a shift, the polynomial xored in when a one leaves)
 * per bit further from the end.  O(bits). */
static bool one_bit_syndrome(uint32_t s, uint64_t bits)
{
	uint32_t d = WAL_CRC32C_POLY;
	for (uint64_t k = 0; k < bits; k++) {
		if (d == s)
			return true;
		d = d & 1 ? (d >> 1) ^ WAL_CRC32C_POLY : d >> 1;
	}
	return false;
}

/* Does the record at lsn (wholly in the file) fail its CRC in a way exactly
 * one flipped bit explains?  With its header as it is: its CRC is checked
 * against the CRC changes of single-bit errors in what it covers (payload,
 * then the header after the CRC) and in the stored CRC itself.  Then each
 * single flip of the header's covered bits that leaves a header that fits
 * (a flipped length or LSN) is tried against the CRC.  *flip gets the
 * record's length (0: no one-bit explanation).  A torn write leaves sectors
 * of old bytes or zeros, not one bit: it passes with the odds of a 32-bit
 * match among the record's bits (2^-17 for a 4 KiB record, 2^-9 for
 * the largest): the open then refuses, and salvage cuts it as torn.
 * Returns 0 or an I/O error. */
static int one_bit_flip(ruma_wal_iter *it, uint64_t lsn, uint32_t *flip)
{
	struct rec_hdr h, t;
	const char *p;
	*flip = 0;
	int r = window_get(it, lsn, sizeof(h), &p);
	if (r || !p)
		return r;
	memcpy(&h, p, sizeof(h));
	if (hdr_fits(&h, lsn)) {
		if ((r = window_get(it, lsn, h.len, &p)) || !p)
			return r;
		uint32_t s = rec_crc(&h, p + sizeof(h)) ^ h.crc;
		if (__builtin_popcount(s) == 1 ||
		    one_bit_syndrome(s, 8 * ((uint64_t)h.plen + sizeof(h) - 4))) {
			*flip = h.len;
			return 0;
		}
	}
	for (unsigned bit = 32; bit < 8 * sizeof(h) && !*flip; bit++) {
		t = h;
		((unsigned char *)&t)[bit / 8] ^= (unsigned char)(1u << bit % 8);
		if (!hdr_fits(&t, lsn))
			continue;
		if ((r = window_get(it, lsn, t.len, &p)))
			return r;
		*flip = p && rec_crc(&t, p + sizeof(t)) == t.crc ? t.len : 0;
	}
	return 0;
}

/* How the end of a log shows that it was damaged after it was written. */
enum damage { DAMAGE_RECORDS, DAMAGE_CUT, DAMAGE_BIT };

/* Say what examine_rest found; RUMA_ECORRUPT, or 0 with cfg.salvage (the
 * log then ends at bad). */
static int report_damage(ruma_wal_iter *it, uint64_t bad, enum damage d, uint64_t last)
{
	const ruma_wal_config *c = &it->w->cfg;
	unsigned long long b = bad, n = it->dropped_records, bytes = it->dropped_bytes;
	char what[320];
	if (d == DAMAGE_RECORDS)
		snprintf(what, sizeof(what), "the record at LSN %llu is damaged, and %llu valid "
			 "records follow it (up to LSN %llu): the log was damaged after it was "
			 "written, not cut by a crash", b, n, (unsigned long long)last);
	else if (d == DAMAGE_CUT)
		snprintf(what, sizeof(what), "the file ends at or inside the record at LSN %llu, "
			 "but a log is allocated a block past its last record: the file was cut "
			 "after it was written", b);
	else
		snprintf(what, sizeof(what), "the record at LSN %llu differs from its checksum by "
			 "exactly one bit: it was damaged after it was written (a torn write is "
			 "never one bit)", b);
	if (!c->salvage) {
		say(c, "%s: %s; nothing is replayed from LSN %llu on (to keep the records before "
		    "it, open with salvage: ruma_wal_config.salvage, ruma_bm_config.salvage_log)",
		    c->path, what, b);
		return RUMA_ECORRUPT;
	}
	say(c, "%s: %s; salvage: the log ends at LSN %llu; discarded %llu valid records after it "
	    "(%llu bytes)", c->path, what, b, n, bytes);
	return 0;
}

/* Valid records after bad: how many, the first's LSN and the last's end
 * (examine_rest). */
struct rest {
	uint64_t records, first, last, file_end;
};

static int scan_rest(ruma_wal_iter *it, uint64_t bad, struct rest *o)
{
	ruma_wal *w = it->w;
	uint64_t bytes;
	int r = file_bytes(w->rfd, &bytes);
	if (r)
		return r;
	memset(o, 0, sizeof(*o));
	o->file_end = w->base + (bytes > WAL_HDR_BYTES ? bytes - WAL_HDR_BYTES : 0);
	for (uint64_t at = bad + 8; at + RUMA_WAL_HEADER <= o->file_end;) {
		uint32_t len;
		if ((r = valid_at(it, at, &len)))
			return r;
		o->first = len && !o->records ? at : o->first;
		o->records += len != 0;
		o->last = len ? at + len : o->last;
		at += len ? len : 8;
	}
	return 0;
}

/* The log ends at bad: look at what follows in the file.  Valid records
 * after bad are the rest of a flush round torn by a crash (never
 * acknowledged: cut quietly) only when they end no further than one ring
 * past bad and the gap before the first of them holds a zero sector (what
 * did not reach the disk).  A torn record is never one flipped bit, and a
 * file allocated ahead (WAL_HDR_AHEAD) never ends less than a block past
 * its last record after a crash: ending at or inside one, it was cut.  Otherwise the log was damaged after it
 * was written: RUMA_ECORRUPT, or with cfg.salvage the end stays at bad and
 * what is discarded is counted and reported. */
static int examine_rest(ruma_wal_iter *it, uint64_t bad)
{
	ruma_wal *w = it->w;
	struct rest o;
	int r = scan_rest(it, bad, &o);
	if (r)
		return r;
	uint64_t ring = w->hdr_ring ? w->hdr_ring : w->cap;
	bool torn = true;
	uint32_t flip = 0;
	if (o.records && o.last - bad <= ring && (r = zero_sector(it, bad, o.first, &torn)))
		return r;
	if (o.records && o.last - bad <= ring && !torn && (r = never_written(it, bad, &torn)))
		return r;
	bool damaged = o.records && !(o.last - bad <= ring && torn);
	/* allocated ahead, the file is always a block longer than what was
	 * written (flush_round): ending sooner, at or inside a record, it was cut */
	bool cut = !o.records && w->hdr_ahead && bad > w->start && o.file_end < bad + WAL_BLOCK;
	if (!damaged && !cut && (r = one_bit_flip(it, bad, &flip)))
		return r;
	if (!damaged && !cut && !flip)
		return 0;
	it->dropped_records = o.records;
	it->dropped_bytes = o.records ? o.file_end - bad : flip;
	return report_damage(it, bad, damaged ? DAMAGE_RECORDS : cut ? DAMAGE_CUT : DAMAGE_BIT,
			     o.last);
}

void ruma_wal_iter_discarded(const ruma_wal_iter *it, uint64_t *records, uint64_t *bytes)
{
	*records = it->dropped_records;
	*bytes = it->dropped_bytes;
}

int ruma_wal_iter_next(ruma_wal_iter *it, ruma_wal_record *rec)
{
	int r = iter_step(it, rec);
	if (r == 0 && !it->ended) {
		it->ended = true;
		r = examine_rest(it, it->lsn);
	}
	if (r == 0 && it->w->replaying && it->lsn > it->w->replay_end)
		it->w->replay_end = it->lsn; /* the end of the log, found by reading it */
	return r;
}

/* Cut what follows the end (a torn record and anything after it), so that
 * records appended from here can never make stale bytes behind them look
 * like a continuation of the log: zeroed in place (a hole punched, the size
 * kept), so that the file stays longer than its last record; where holes
 * cannot be punched, truncated, allocation ahead off first.  Then the file
 * is allocated ahead of the end (or allocation ahead turned off) and
 * synced: a crash from here on finds the file longer than its records. */
static int cut_after_end(ruma_wal *w)
{
	uint64_t bytes, end = (uint64_t)file_off(w, w->end);
	int r = file_bytes(w->fd, &bytes);
	if (!r && bytes > end) {
		r = ruma_os_fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)end,
				      (off_t)(bytes - end));
		if (r == -EOPNOTSUPP && !(r = ahead_off(w)))
			r = ruma_os_ftruncate(w->fd, (off_t)end);
	}
	if (!r && !w->no_alloc_ahead && !extend_ahead(w, end))
		r = ahead_off(w);
	return r ? r : ruma_os_fdatasync(w->fd);
}

static int find_end(ruma_wal *w)
{
	ruma_wal_iter *it;
	ruma_wal_record rec;
	int r = ruma_wal_iter_open(w, &it);
	if (r)
		return r;
	while ((r = ruma_wal_iter_next(it, &rec)) == 1)
		;
	w->end = w->verified = it->lsn;
	ruma_wal_iter_close(it);
	return r ? r : cut_after_end(w);
}

/* ---- flushing ------------------------------------------------------------------ */

/* The ring's bytes [from, to) as at most two pieces (where the ring
 * wraps) into v; returns how many. */
static int ring_pieces(ruma_wal *w, uint64_t from, uint64_t to, struct iovec *v)
{
	int n = 0;
	for (uint64_t at = from; at < to; n++) {
		size_t off = (size_t)((at - w->base) % w->cap);
		size_t len = (size_t)RUMA_MIN(to - at, (uint64_t)(w->cap - off));
		v[n] = (struct iovec){ w->ring + off, len };
		at += len;
	}
	return n;
}

/* Buffered I/O: the ring's bytes [from, to) in one pwritev.  mu not held. */
static int write_range(ruma_wal *w, uint64_t from, uint64_t to)
{
	struct iovec v[2];
	int n = ring_pieces(w, from, to, v);
	return n ? ruma_os_pwritev_full(w->fd, v, n, file_off(w, from)) : 0;
}

/* Direct I/O: [from, to) as whole blocks in one pwritev (one request to
 * the device, not one per piece) — those before the block of `to` straight
 * from the ring (appenders write only at `to` and beyond), that one from
 * w->tail, copied under mu with zeros after `to`.  mu not held. */
static int write_blocks(ruma_wal *w, uint64_t from, uint64_t to)
{
	struct iovec v[3];
	uint64_t first = block_start(w, from), last = block_start(w, to);
	int n = ring_pieces(w, first, last, v);
	if (last < to)
		v[n++] = (struct iovec){ w->tail, WAL_BLOCK };
	return n ? ruma_os_pwritev_full(w->fd, v, n, file_off(w, first)) : 0;
}

/*
 * alloc_ahead — before a round writes the file up to offset `upto`, keep
 * the file allocated (fallocate, mode 0: blocks reserved, size extended)
 * up to WAL_ALLOC_AHEAD beyond it, refilled when less than half of that is
 * left, so that the round's fdatasync finds no new file size and no block
 * to allocate: those metadata changes happen once per refill, not at every
 * sync (extend_ahead: where the log grows slowly, the blocks are written
 * with zeros, so that not even the first write into each block changes the
 * block map).  Only past the file's end, where no record lies: the blocks
 * read as zeros, and a reader stops at the first bytes that are not a
 * record.  Called with mu not held by the flushing thread only.  A failure
 * (a file system without fallocate, a full disk) only turns it off (the
 * header's WAL_HDR_AHEAD cleared first): rounds then extend the file as
 * before, and a full disk fails their writes.  So while the header says it
 * is on, every write lands at least WAL_ALLOC_AHEAD / 2 before the file's
 * end, and a crash never leaves the file ending where a record ends.
 * Returns 0, or the error of the header write that turns allocation ahead
 * off after a failure (ahead_off, under mu).
 */
static int alloc_ahead(ruma_wal *w, uint64_t upto)
{
	if (w->no_alloc_ahead || upto + WAL_ALLOC_AHEAD / 2 <= w->alloc_to || extend_ahead(w, upto))
		return 0;
	pthread_mutex_lock(&w->mu);
	int r = ahead_off(w);
	pthread_mutex_unlock(&w->mu);
	return r;
}

/* The end of what is appended completely: the reserved end, or the lowest
 * LSN an appender still copies at.  end is read before the slots (both
 * seq_cst): an appender below that end claimed its slot before it reserved
 * (the comment atop the file). */
static uint64_t complete_end(ruma_wal *w)
{
	uint64_t to = atomic_load(&w->end);
	for (unsigned i = 0; i < WAL_SLOTS; i++) {
		uint64_t at = atomic_load(&w->slots[i].at);
		if (at < to)
			to = at;
	}
	return to;
}

/* One flush round for everything appended completely so far.  Called and
 * returns with mu held and flushing set by the caller.  With nothing
 * complete to write (appenders still copying) it yields instead. */
static void flush_round(ruma_wal *w)
{
	uint64_t from = w->durable, to = complete_end(w);
	if (to <= from) {
		pthread_mutex_unlock(&w->mu);
		sched_yield();
		pthread_mutex_lock(&w->mu);
		w->flushing = false;
		pthread_cond_broadcast(&w->cv);
		return;
	}
	if (w->direct) {
		uint64_t last = block_start(w, to);
		memcpy(w->tail, w->ring + (last - w->base) % w->cap, to - last);
		memset(w->tail + (to - last), 0, WAL_BLOCK - (to - last));
	}
	pthread_mutex_unlock(&w->mu);
	int r = w->cfg.before_write ? w->cfg.before_write(w->cfg.before_write_ctx) : 0;
	if (!r)
		r = alloc_ahead(w, (uint64_t)file_off(w, to));
	/* a file allocated ahead never ends where a record ends */
	RUMA_ASSERT(r || w->no_alloc_ahead || (uint64_t)file_off(w, to) + WAL_BLOCK < w->alloc_to);
	if (!r)
		r = w->direct ? write_blocks(w, from, to) : write_range(w, from, to);
	if (!r)
		r = ruma_os_fdatasync(w->fd);
	pthread_mutex_lock(&w->mu);
	if (r && !w->err) {
		w->err = r;
		say(&w->cfg, "%s: writing the log failed (%s); the log accepts no more records",
		    w->cfg.path, ruma_strerror(r));
	}
	if (!r)
		w->durable = to;
	STAT_ADD(w, flushes, 1);
	w->flushing = false;
	pthread_cond_broadcast(&w->cv);
	if (w->has_flusher && w->want > w->durable && !w->err)
		pthread_cond_signal(&w->kick);
}

/* A leader waits this long for a second committer (gather). */
#define WAL_GATHER_NS 40000u

/* Before a round, when the last one ended with other threads waiting for
 * durability: wait (mu released, so appenders and arriving waiters go on)
 * until another thread asks for durability, whose commit record is then
 * appended, or WAL_GATHER_NS passed.  Without it, two committing threads
 * alternate: each wakes from the round that carried its commit, builds its
 * next one while the other's round has already started, and waits a whole
 * round for it: one commit per fdatasync.  The wait yields the processor
 * rather than spinning: the thread it waits for was often woken onto this
 * very processor (by the round's broadcast) and can only build its commit
 * while this one steps aside; a spinning leader kept it off until the
 * wait ran out, and rounds carried 1.1 commits instead of 2 (fillsync, 2
 * threads on 2 cores).  One thread never waits here.  Called by the
 * leader with mu held and flushing set. */
static void gather(ruma_wal *w)
{
	if (!w->contended || atomic_load(&w->in_flush) > 1)
		return;
	pthread_mutex_unlock(&w->mu);
	uint64_t until = ruma_now_ns() + WAL_GATHER_NS;
	while (atomic_load(&w->in_flush) <= 1 && ruma_now_ns() < until)
		sched_yield();
	pthread_mutex_lock(&w->mu);
}

int ruma_wal_flush(ruma_wal *w, uint64_t upto)
{
	atomic_fetch_add(&w->in_flush, 1);
	pthread_mutex_lock(&w->mu);
	if (upto > w->end)
		upto = w->end;
	bool waited = false;
	while (w->durable < upto && !w->err) {
		waited = true;
		if (w->flushing) {
			pthread_cond_wait(&w->cv, &w->mu);
			continue;
		}
		w->flushing = true;
		gather(w);
		flush_round(w);
		w->contended = atomic_load(&w->in_flush) > 1;
	}
	atomic_fetch_sub(&w->in_flush, 1);
	if (waited)
		STAT_ADD(w, waits, 1);
	int r = w->durable >= upto ? 0 : w->err;
	pthread_mutex_unlock(&w->mu);
	return r;
}

/* A round is due: wanted records not durable yet, and nobody flushing.
 * mu held. */
static bool flusher_has_work(ruma_wal *w)
{
	return !w->flushing && !w->err &&
	       w->durable < RUMA_MIN(atomic_load(&w->want), atomic_load(&w->end));
}

/* want = max(want, upto), without mu. */
static void raise_want(ruma_wal *w, uint64_t upto)
{
	uint64_t cur = atomic_load(&w->want);
	while (cur < upto && !atomic_compare_exchange_weak(&w->want, &cur, upto))
		;
}

/* Wait for a kick, or (with flush_ms) until the period is over: then every
 * record appended so far is wanted durable.  mu held. */
static void flusher_wait(ruma_wal *w)
{
	/* idle before want is read again (both seq_cst): a request raising want
	 * after that read sees idle and kicks (ruma_wal_request) */
	atomic_store(&w->idle, true);
	if (!flusher_has_work(w) && !w->stop) {
		if (!w->cfg.flush_ms) {
			pthread_cond_wait(&w->kick, &w->mu);
		} else {
			struct timespec ts;
			ruma_deadline_after_ns((uint64_t)w->cfg.flush_ms * 1000000u, &ts);
			if (pthread_cond_timedwait(&w->kick, &w->mu, &ts) == ETIMEDOUT)
				raise_want(w, atomic_load(&w->end));
		}
	}
	atomic_store(&w->idle, false);
}

/* Rounds for requests start at most every WAL_ROUND_GAP_NS: a request does
 * not wait, so a short delay costs nothing and lets one write + fdatasync
 * carry more commits.  Returns true after waiting (mu released meanwhile).
 * A thread that waits (ruma_wal_flush) never goes through this. */
static bool wait_round_gap(ruma_wal *w)
{
	uint64_t now = ruma_now_ns(), at = w->round_ns + WAL_ROUND_GAP_NS;
	if (now >= at)
		return false;
	struct timespec ts;
	ruma_deadline_after_ns(at - now, &ts);
	(void)pthread_cond_timedwait(&w->kick, &w->mu, &ts);
	return true;
}

static void *flusher_main(void *arg)
{
	ruma_wal *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		if (flusher_has_work(w)) {
			if (wait_round_gap(w))
				continue;
			w->flushing = true;
			w->round_ns = ruma_now_ns();
			flush_round(w);
			continue;
		}
		flusher_wait(w);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Start the background flusher (mu held). */
static int flusher_start(ruma_wal *w)
{
	if (atomic_load(&w->has_flusher))
		return 0;
	int r = -pthread_create(&w->flusher, NULL, flusher_main, w);
	atomic_store(&w->has_flusher, r == 0);
	return r;
}

/* Without mu once the flusher runs: raise want, then kick the flusher only
 * if it is idle (flusher_wait: one of the two sees the other's store).  A
 * busy flusher comes back for want by itself after its round. */
int ruma_wal_request(ruma_wal *w, uint64_t upto)
{
	int r = atomic_load(&w->err);
	uint64_t end = atomic_load(&w->end);
	if (upto > end)
		upto = end;
	if (r || w->durable >= upto)
		return r;
	if (RUMA_UNLIKELY(!atomic_load(&w->has_flusher))) {
		pthread_mutex_lock(&w->mu);
		r = flusher_start(w);
		pthread_mutex_unlock(&w->mu);
		if (r)
			return r;
	}
	raise_want(w, upto);
	if (atomic_load(&w->idle)) {
		pthread_mutex_lock(&w->mu);
		pthread_cond_signal(&w->kick);
		pthread_mutex_unlock(&w->mu);
	}
	return 0;
}

/* ---- appending -------------------------------------------------------------------- */

static void ring_copy(ruma_wal *w, uint64_t lsn, const void *src, size_t n)
{
	const char *p = src;
	while (n) {
		size_t at = (size_t)((lsn - w->base) % w->cap);
		size_t k = RUMA_MIN(n, w->cap - at);
		memcpy(w->ring + at, p, k);
		p += k;
		lsn += k;
		n -= k;
	}
}

/* This thread's first slot to try: threads spread over the slots. */
static unsigned slot_hint(void)
{
	static _Atomic unsigned next;
	static _Thread_local unsigned hint; /* slot + 1; 0: not chosen yet */
	if (RUMA_UNLIKELY(!hint))
		hint = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % WAL_SLOTS + 1;
	return hint - 1;
}

/* Claim an idle slot, publishing an LSN at or below the record this
 * appender is about to reserve. */
static struct wal_slot *slot_claim(ruma_wal *w)
{
	unsigned i = slot_hint();
	for (;;) {
		for (unsigned k = 0; k < WAL_SLOTS; k++, i = (i + 1) % WAL_SLOTS) {
			uint64_t idle = WAL_IDLE;
			if (atomic_compare_exchange_strong(&w->slots[i].at, &idle, atomic_load(&w->end)))
				return &w->slots[i];
		}
		sched_yield(); /* more appenders than slots at this moment */
	}
}

/* The ring has no room up to `need` (the end of a reserved record): wait
 * for the flushing thread, or write a round ourselves.  The caller's slot
 * holds its record's LSN, so a round can always free the room it needs
 * (cap exceeds the largest record by a block, ruma_wal_open). */
static int wait_room(ruma_wal *w, uint64_t need)
{
	pthread_mutex_lock(&w->mu);
	while (!w->err && need - ring_tail(w) > w->cap) {
		if (w->flushing) {
			pthread_cond_wait(&w->cv, &w->mu);
			continue;
		}
		w->flushing = true;
		flush_round(w);
	}
	int r = w->err;
	pthread_mutex_unlock(&w->mu);
	return r;
}

static void ring_put(ruma_wal *w, const struct rec_hdr *h, const void *payload, size_t len)
{
	static const char zeros[8];
	size_t at = (size_t)((h->lsn - w->base) % w->cap);
	if (RUMA_LIKELY(at + h->len <= w->cap)) { /* no wrap: the common case */
		char *o = w->ring + at;
		memcpy(o, h, sizeof(*h));
		memcpy(o + sizeof(*h), payload, len);
		memset(o + sizeof(*h) + len, 0, h->len - sizeof(*h) - len);
	} else {
		ring_copy(w, h->lsn, h, sizeof(*h));
		ring_copy(w, h->lsn + sizeof(*h), payload, len);
		ring_copy(w, h->lsn + sizeof(*h) + len, zeros, h->len - sizeof(*h) - len);
	}
}

int ruma_wal_append(ruma_wal *w, uint16_t type, const void *payload, size_t len, uint64_t *lsn,
		    uint64_t *end)
{
	if (len > RUMA_WAL_MAX_PAYLOAD || (len && !payload))
		return -EINVAL;
	int r = atomic_load_explicit(&w->err, memory_order_relaxed);
	if (RUMA_UNLIKELY(r || w->replaying))
		return r ? r : -EBUSY;
	struct rec_hdr h = { .len = (uint32_t)pad8(sizeof(h) + len), .type = type,
			     .plen = (uint32_t)len };
	uint32_t payload_crc = ruma_crc32c(0, payload, len);
	struct wal_slot *s = slot_claim(w);
	h.lsn = atomic_fetch_add(&w->end, h.len);
	/* exact: a round may write up to it (a round that reads the claimed
	 * value instead stops lower: release is enough) */
	atomic_store_explicit(&s->at, h.lsn, memory_order_release);
	if (RUMA_UNLIKELY(h.lsn + h.len - ring_tail(w) > w->cap) &&
	    (r = wait_room(w, h.lsn + h.len)) != 0) {
		/* the log is dead: its reserved bytes are never written */
		atomic_store(&s->at, WAL_IDLE);
		return r;
	}
	h.crc = rec_crc_from(&h, payload_crc);
	ring_put(w, &h, payload, len);
	atomic_store_explicit(&s->records, atomic_load_explicit(&s->records, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_store_explicit(&s->bytes, atomic_load_explicit(&s->bytes, memory_order_relaxed) + h.len,
			      memory_order_relaxed);
	/* releases the copy to the flushing thread; a release store, not a
	 * seq_cst exchange that drains the store buffer the copy just filled */
	atomic_store_explicit(&s->at, WAL_IDLE, memory_order_release);
	if (lsn)
		*lsn = h.lsn;
	if (end)
		*end = h.lsn + h.len;
	return 0;
}

/* ---- open / reset / close ------------------------------------------------------------ */

uint64_t ruma_wal_start(ruma_wal *w)
{
	pthread_mutex_lock(&w->mu);
	uint64_t v = w->start;
	pthread_mutex_unlock(&w->mu);
	return v;
}

uint64_t ruma_wal_end(ruma_wal *w)
{
	pthread_mutex_lock(&w->mu);
	uint64_t v = known_end(w);
	pthread_mutex_unlock(&w->mu);
	return v;
}

uint64_t ruma_wal_durable(ruma_wal *w)
{
	return atomic_load_explicit(&w->durable, memory_order_acquire);
}

int ruma_wal_reset(ruma_wal *w, uint64_t base)
{
	pthread_mutex_lock(&w->mu);
	if (base < known_end(w) || base > RUMA_WAL_LSN_MAX) {
		say(&w->cfg, "%s: reset to LSN %llu refused: LSNs only grow (the log ends at %llu) "
		    "and stay below 2^62", w->cfg.path, (unsigned long long)base,
		    (unsigned long long)known_end(w));
		pthread_mutex_unlock(&w->mu);
		return -EINVAL;
	}
	uint64_t b = pad8(base);
	int r = w->err ? w->err : ruma_os_ftruncate(w->fd, WAL_HDR_BYTES);
	if (!r)
		r = write_header(w, b, b);
	if (!r)
		r = ruma_os_fdatasync(w->fd);
	if (!r) {
		w->base = w->start = b;
		w->end = b;
		w->durable = b;
		w->replaying = false;
		w->alloc_to = 0; /* the file is the header alone: the next round allocates */
	} else if (!w->err) {
		w->err = r;
	}
	pthread_mutex_unlock(&w->mu);
	return r;
}

int ruma_wal_discard_before(ruma_wal *w, uint64_t lsn)
{
	pthread_mutex_lock(&w->mu);
	int r = w->err;
	if (!r && (lsn < w->start || lsn > w->durable || (lsn - w->base) % 8))
		r = -EINVAL;
	if (!r && lsn > w->start) {
		r = write_header(w, w->base, lsn);
		if (!r)
			r = ruma_os_fdatasync(w->fd);
		if (!r) {
			w->start = lsn;
			off_t upto = file_off(w, lsn) & ~(off_t)(WAL_HDR_BYTES - 1);
			if (upto > (off_t)WAL_HDR_BYTES) {
				int p = ruma_os_fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
							  WAL_HDR_BYTES, upto - (off_t)WAL_HDR_BYTES);
				/* a file system without hole punching keeps the bytes */
				r = p == -EOPNOTSUPP ? 0 : p;
			}
		}
	}
	pthread_mutex_unlock(&w->mu);
	return r;
}

static void wal_free(ruma_wal *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->rfd >= 0)
		close(w->rfd);
	free(w->ring);
	free(w->hdr);
	free(w->tail);
	free(w->path);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	pthread_cond_destroy(&w->kick);
	free(w);
}

/* Put the bytes of the file's last block before the end into the ring: the
 * first round rewrites that block whole. */
static int load_tail(ruma_wal *w)
{
	uint64_t from = block_start(w, w->end);
	if (from == w->end)
		return 0;
	int r = ruma_os_pread_full(w->rfd, w->ring + (from - w->base) % w->cap, w->end - from,
				   file_off(w, from));
	return r == RUMA_ESHORTIO ? RUMA_ECORRUPT : r;
}

int ruma_wal_resume(ruma_wal *w, unsigned flush_ms)
{
	pthread_mutex_lock(&w->mu);
	int r = w->err ? w->err : w->replaying ? 0 : -EINVAL;
	if (!r) {
		w->end = w->verified = w->replay_end;
		r = cut_after_end(w);
	}
	if (!r)
		r = load_tail(w);
	if (!r && w->hdr_ring < w->cap) /* this session's rounds may be longer */
		r = write_header(w, w->base, w->start);
	if (!r) {
		w->replaying = false;
		w->want = w->end;
		atomic_store(&w->durable, w->end);
		w->cfg.flush_ms = flush_ms;
		if (flush_ms)
			r = flusher_start(w);
	}
	if (r && r != -EINVAL && !w->err)
		w->err = r;
	pthread_mutex_unlock(&w->mu);
	return r;
}

/* A log is a regular file: a FIFO, a device or /dev/null cannot keep records
 * to be read back. */
static int check_regular(ruma_wal *w)
{
	ruma_os_file_info info;
	int r = ruma_os_file_probe(w->fd, &info);
	if (r || info.is_regular)
		return r;
	say(&w->cfg, "the log %s is not a regular file (a FIFO, a device or /dev/null cannot hold "
	    "a log): name a regular file", w->cfg.path);
	return -EINVAL;
}

/* The ring, the header page and the tail block (block-aligned) and both
 * descriptors. */
static int open_files(ruma_wal *w)
{
	void *ring = NULL, *hdr = NULL, *tail = NULL;
	if (posix_memalign(&ring, WAL_BLOCK, w->cap) || posix_memalign(&hdr, WAL_BLOCK, WAL_HDR_BYTES) ||
	    posix_memalign(&tail, WAL_BLOCK, WAL_BLOCK)) {
		free(ring);
		free(hdr);
		return -ENOMEM;
	}
	w->ring = ring;
	w->hdr = hdr;
	w->tail = tail;
	const char *path = w->cfg.path;
	int create = w->cfg.must_exist ? 0 : O_CREAT;
	int r = ruma_os_open(path, O_RDWR | create | O_DIRECT, 0644, &w->fd);
	w->direct = r == 0;
	if (r == -EINVAL) /* no direct I/O on this file system (or not a file) */
		r = ruma_os_open(path, O_RDWR | create, 0644, &w->fd);
	if (!r)
		r = ruma_os_open(path, O_RDONLY, 0, &w->rfd);
	if (r && !(r == -ENOENT && w->cfg.must_exist)) /* (the owner says what is missing) */
		say(&w->cfg, "cannot open the log %s: %s", path, ruma_strerror(r));
	return r ? r : check_regular(w);
}

int ruma_wal_open(const ruma_wal_config *c, ruma_wal **out)
{
	if (!c || !c->path || !*c->path)
		return -EINVAL;
	if (c->buffer_bytes > WAL_MAX_RING) {
		say(c, "%s: a ring of %zu bytes is beyond the limit of 1 TiB", c->path,
		    c->buffer_bytes);
		return -EINVAL;
	}
	size_t cap = c->buffer_bytes ? c->buffer_bytes : WAL_DEFAULT_RING;
	if (cap < 2 * (RUMA_WAL_HEADER + (size_t)RUMA_WAL_MAX_PAYLOAD + 8) + WAL_BLOCK)
		cap = 2 * (RUMA_WAL_HEADER + (size_t)RUMA_WAL_MAX_PAYLOAD + 8) + WAL_BLOCK;
	cap = (cap + WAL_BLOCK - 1) / WAL_BLOCK * WAL_BLOCK;
	ruma_wal *w = aligned_alloc(64, sizeof(*w)); /* the slots' cache lines */
	if (!w)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	if (!(w->path = strdup(c->path))) {
		free(w);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < WAL_SLOTS; i++)
		atomic_init(&w->slots[i].at, WAL_IDLE);
	w->cfg = *c;
	w->cfg.path = w->path;
	w->fd = w->rfd = -1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_cond_init(&w->kick, NULL);
	w->cap = cap;
	int r = open_files(w);
	bool empty = false;
	if (!r && c->fresh)
		r = ruma_os_ftruncate(w->fd, 0);
	if (!r)
		r = read_header(w, &empty);
	if (!r && empty) {
		w->base = w->start = 0;
		r = write_header(w, 0, 0);
		if (!r)
			r = ruma_os_fdatasync(w->fd);
	}
	if (!r && c->replay) {
		w->end = w->replay_end = w->start; /* the iterator finds the end */
		w->replaying = true;
		/* what the file holds is durable before it is replayed, so that
		 * no page written during recovery gets ahead of the log */
		r = ruma_os_fdatasync(w->fd);
	} else {
		if (!r)
			r = find_end(w);
		if (!r)
			r = load_tail(w);
	}
	if (!r) {
		w->want = w->end;
		w->durable = w->end;
		if (c->flush_ms)
			r = flusher_start(w);
	}
	if (r) {
		w->cfg.path = NULL;
		wal_free(w);
		return r;
	}
	*out = w;
	return 0;
}

int ruma_wal_close(ruma_wal *w)
{
	if (!w)
		return 0;
	int r = ruma_wal_flush(w, UINT64_MAX);
	if (w->has_flusher) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->kick);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->flusher, NULL);
	}
	wal_free(w);
	return r;
}

void ruma_wal_get_stats(const ruma_wal *w, ruma_wal_stats *out)
{
	out->records = out->bytes = 0;
	for (unsigned i = 0; i < WAL_SLOTS; i++) {
		out->records += atomic_load_explicit(&w->slots[i].records, memory_order_relaxed);
		out->bytes += atomic_load_explicit(&w->slots[i].bytes, memory_order_relaxed);
	}
	out->flushes = atomic_load_explicit(&w->st.flushes, memory_order_relaxed);
	out->waits = atomic_load_explicit(&w->st.waits, memory_order_relaxed);
}
