/*
 * wal.h — a write-ahead log file with group commit (docs/wal.md).
 *
 * The log is one file of records.  A record's log sequence number (LSN) is
 * its byte position in the log's history: the file holds the records from
 * ruma_wal_start (at file offset 4096, after a header page) to ruma_wal_end,
 * and LSNs only grow, also across ruma_wal_reset (which empties the file and
 * continues numbering where it stopped).  Each record carries its own LSN,
 * type, length and a CRC-32C, so a record torn by a crash, or any bytes
 * past the last complete record, end the log when it is read back.
 *
 * Appending copies a record into one shared in-memory ring (short critical
 * section under one mutex); nothing reaches the file until some thread asks
 * for durability (ruma_wal_flush) or the background flusher runs.  Group
 * commit: one thread at a time writes everything appended so far and
 * fdatasyncs it; every thread that asks for durability while that write is in
 * flight waits for it and, if its record came later, is covered by the next
 * single write + fdatasync, made for all of them together.
 *
 * Errors: a failed write or fdatasync makes the log dead (the kernel may
 * have dropped the pages it could not write, so nothing after them can be
 * trusted): every later append and flush returns that first error.
 * All functions are thread-safe.
 */
#ifndef RUMA_WAL_H
#define RUMA_WAL_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ruma_wal ruma_wal;

/* Bytes of a record's header (crc, length, lsn, type, payload length). */
#define RUMA_WAL_HEADER 24u
/* Largest payload of one record. */
#define RUMA_WAL_MAX_PAYLOAD (1u << 20)
/* LSNs stay below this (2^62): a reset or a header beyond it is refused. */
#define RUMA_WAL_LSN_MAX (1ull << 62)

typedef struct ruma_wal_config {
	const char *path;      /* the log file, a regular file (created if missing);
				  copied by ruma_wal_open */
	size_t buffer_bytes;   /* in-memory ring (0 = 8 MiB; at least 2 records of the largest
				  size, at most 1 TiB: more is -EINVAL) */
	unsigned flush_ms;     /* background flusher period in ms (0 = no periodic flush;
				  a flusher is still started by ruma_wal_request) */
	void (*message)(void *ctx, const char *line); /* as ruma_bm_config.message (NULL = stderr) */
	void *message_ctx;
	bool fresh;            /* discard what an existing file holds (the log of a store
				  being created anew): it is emptied before it is read */
	bool replay;           /* opened to be read once and then emptied (crash
				  recovery): open does not read the log to find its
				  end; an iterator finds it (ruma_wal_end is the end
				  of the records an iterator read to the end), and
				  ruma_wal_append fails with -EBUSY until
				  ruma_wal_reset */
	uint64_t owner[2];     /* identity of the owner (a store's id; 0, 0 = none): written
				  in the header; an existing log whose header names
				  another owner is refused (RUMA_ECORRUPT), unless fresh */
	bool must_exist;       /* the log is needed (recovery): not created when missing
				  (-ENOENT, no message: the caller names what is
				  missing), an empty file is RUMA_ECORRUPT */
	bool salvage;          /* a damaged or cut log (ruma_wal_open) ends at the
				  damage (what is discarded is reported and counted by
				  ruma_wal_iter_discarded) instead of RUMA_ECORRUPT */
	/* Called (NULL: nothing) before every write of records to the file, by
	 * the writing thread with no lock of the log held: what the records
	 * refer to outside the log is made durable first (a store's extents,
	 * docs/blob.md).  Nonzero: the write fails with it, as an I/O error. */
	int (*before_write)(void *ctx);
	void *before_write_ctx;
} ruma_wal_config;

/*
 * ruma_wal_open — open (or create) the log at c->path and find its end: the
 * records from its start up to the first one that is incomplete or fails its
 * checksum.  Whatever follows that end in the file is cut off (truncate +
 * fdatasync): those bytes were never durable as a whole, and appends
 * continue at that end.  With c->replay none of this happens at open (the
 * file is only synced, so that what is replayed is durable): the first
 * iterator read to the end finds the end, and ruma_wal_reset starts the log
 * anew after it or ruma_wal_resume continues it (crash recovery reads the
 * log once instead of twice).
 * A record that fails its checks but is followed in the file by a valid
 * record ending more than one ring (the largest ring a writer of the file
 * had) after it, or with no all-zero 512-byte sector before the next valid
 * record, was damaged after it was written: a crash tears at most the last
 * flush round and leaves zeros where a write did not land.  So was a
 * failing record whose CRC exactly one flipped bit explains (a torn write is
 * not one bit), and a file that ends exactly where a record ends while its
 * header says the file is allocated past the log (a crash leaves it longer:
 * it was cut).  That is RUMA_ECORRUPT with a message, unless c->salvage (see
 * ruma_wal_iter_next).
 * Errors: -EINVAL (bad config, a ring above 1 TiB, a path that is not a
 * regular file), -ENOENT (c->must_exist and no file), RUMA_ECORRUPT (not a
 * log: bad header, a log of another format or another owner, empty with
 * c->must_exist, damaged), I/O errors, -ENOMEM.  Release with
 * ruma_wal_close.
 */
RUMA_API int ruma_wal_open(const ruma_wal_config *c, ruma_wal **out);

/* ruma_wal_close — flush and sync what was appended, stop the flusher,
 * close the file and free.  Returns the first error met (NULL accepted). */
RUMA_API int ruma_wal_close(ruma_wal *w);

/*
 * ruma_wal_append — add one record (type: the caller's, payload len bytes,
 * len <= RUMA_WAL_MAX_PAYLOAD) to the log.  *lsn (may be NULL) gets the
 * record's LSN, *end (may be NULL) the LSN just after it: the value to pass
 * to ruma_wal_flush to make this record durable.  Not durable on return.
 * Waits (and writes) when the ring is full.  Errors: -EINVAL, the log's
 * first I/O error.
 */
RUMA_API int ruma_wal_append(ruma_wal *w, uint16_t type, const void *payload, size_t len,
			     uint64_t *lsn, uint64_t *end);

/*
 * ruma_wal_flush — return when every record before `upto` is durable
 * (written and fdatasync'ed), joining a write in flight or making the next
 * one for every record appended so far (group commit).  upto beyond the end
 * is clamped to the end.  Returns 0 or the log's first I/O error.
 */
RUMA_API int ruma_wal_flush(ruma_wal *w, uint64_t upto);

/*
 * ruma_wal_request — ask for every record before `upto` to become durable
 * without waiting: the background flusher (started now if the log has
 * none) writes and syncs it, grouped with every other request made
 * meanwhile.  Poll ruma_wal_durable, or wait with ruma_wal_flush.  Returns 0,
 * the log's first I/O error, or an error starting the flusher thread.
 */
RUMA_API int ruma_wal_request(ruma_wal *w, uint64_t upto);

/* LSN of the first record kept / just after the last one appended /
 * up to which the log is durable. */
RUMA_API uint64_t ruma_wal_start(ruma_wal *w);
RUMA_API uint64_t ruma_wal_end(ruma_wal *w);
RUMA_API uint64_t ruma_wal_durable(ruma_wal *w);

/*
 * ruma_wal_reset — empty the log: the file keeps only its header, and the
 * next record gets LSN base (rounded up to 8): the log continues from base.
 * Durable on return (header written, file truncated, fdatasync).  No append
 * may run concurrently.  Returns 0, -EINVAL (base below ruma_wal_end: LSNs
 * never go back; or above RUMA_WAL_LSN_MAX) or an I/O error.
 */
RUMA_API int ruma_wal_reset(ruma_wal *w, uint64_t base);

/*
 * ruma_wal_resume — end the replay of a log opened with c->replay without
 * emptying it: appends continue after the end that an iterator found
 * (what follows that end in the file is cut; everything up to it was made
 * durable when the log was opened), and the background flusher runs every flush_ms
 * (0 = none).  Crash recovery uses it to keep the log it has redone, so the
 * pages need not be written back before the store is used again.
 * Errors: -EINVAL (not replaying), I/O errors (the log is then dead).
 */
RUMA_API int ruma_wal_resume(ruma_wal *w, unsigned flush_ms);

/*
 * ruma_wal_discard_before — the records before lsn (a record boundary at or
 * below ruma_wal_durable) are no longer needed: the log now starts at lsn
 * (header rewritten, fdatasync) and the file blocks before it are given
 * back to the file system (hole punching; kept where unsupported).
 * Returns 0, -EINVAL, or an I/O error.
 */
RUMA_API int ruma_wal_discard_before(ruma_wal *w, uint64_t lsn);

/* One record read back by ruma_wal_iter_next; payload points into the
 * iterator's buffer, valid until the next call. */
typedef struct ruma_wal_record {
	uint64_t lsn, end;
	uint16_t type;
	uint32_t len;
	const void *payload;
} ruma_wal_record;

typedef struct ruma_wal_iter ruma_wal_iter;

/* ruma_wal_iter_open — read the records in the file from its start, in
 * order (the file as written so far: flush first to see recent appends).
 * Returns 0 or -ENOMEM; release *out with ruma_wal_iter_close. */
RUMA_API int ruma_wal_iter_open(ruma_wal *w, ruma_wal_iter **out);
/* ruma_wal_iter_next — 1 with the next record in *rec, 0 at the end of the
 * log, or an I/O error.  At the end, what follows in the file is examined:
 * damage as described at ruma_wal_open is RUMA_ECORRUPT (message through
 * cfg.message), or with cfg.salvage the end (0) and a message saying how
 * many records and bytes are discarded. */
RUMA_API int ruma_wal_iter_next(ruma_wal_iter *it, ruma_wal_record *rec);
/* ruma_wal_iter_discarded — the valid records and the bytes after the end
 * that a salvaging iterator discarded (0, 0 when the end was a torn tail). */
RUMA_API void ruma_wal_iter_discarded(const ruma_wal_iter *it, uint64_t *records,
				      uint64_t *bytes);
/* ruma_wal_iter_close — free the iterator (NULL accepted). */
RUMA_API void ruma_wal_iter_close(ruma_wal_iter *it);

typedef struct ruma_wal_stats {
	uint64_t records;   /* appended since open */
	uint64_t bytes;     /* appended since open, headers included */
	uint64_t flushes;   /* write + fdatasync rounds */
	uint64_t waits;     /* ruma_wal_flush calls that had to wait for a sync */
} ruma_wal_stats;

/* ruma_wal_get_stats — the counters, each read on its own without the log's
 * mutex (approximate while records are appended). */
RUMA_API void ruma_wal_get_stats(const ruma_wal *w, ruma_wal_stats *out);

#ifdef __cplusplus
}
#endif
#endif
