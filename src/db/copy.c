/*
 * copy.c — ruma_db_copy (include/ruma/db.h): a hot backup of an open store
 * while writers go on, as ARIES' fuzzy archive dump (Mohan et al., "ARIES",
 * TODS 1992, section 10) built from the store's own checkpoint and log:
 *
 *   1. a checkpoint (ruma_bm_flush): page 0 names redo start B and undo
 *      start A; every change before B is on disk; a page changed after B
 *      logs a full image at its first change (docs/wal.md).  No other
 *      checkpoint may run until step 3 ends (db->ckpt_run), so page 0 keeps
 *      naming this one and the log keeps every record from A;
 *   2. the store file copied as it is (holes kept as holes): each page is
 *      at its checkpoint state or newer, perhaps torn by a write meeting
 *      the read, which only a page changed after B can be;
 *   3. the log forced durable to its end, then copied from its header's
 *      start to that durable end E.  A page reaches the file only once the
 *      log is durable up to its LSN (the WAL rule), so E covers every page
 *      copied in step 2, and every commit acknowledged before the call.
 *      The copy gets room after E (a hole), so that its end reads as a
 *      torn tail, never as a file cut at a record's end;
 *   4. the copy opened once (recovery: redo from B repairs torn pages with
 *      their full images and brings every page to E; the transactions not
 *      committed by E are undone) and closed: a clean store, empty log.
 *
 * The log file's header fields used here (magic, version, base, start at
 * offsets 0, 8, 16, 24; a record with LSN L at file offset 4096 + L - base)
 * are its format 4, documented in docs/wal.md.
 */
#include "db/db_int.h"
#include "bm/bm_ext.h"

#include <ruma/core.h>
#include <os/os.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)
#define LOG_HDR_BYTES 4096u
#define LOG_MAGIC 0x314c4157414d5552ull /* "RUMAWAL1" */
#define LOG_VERSION 4u
/* Room left after the copied log's last record (read as zeros). */
#define LOG_ROOM (4u << 20)
/* The copy's buffer pool while it is opened to finish it. */
#define COPY_POOL (64ull << 20)

/* One file of the copy: source and destination paths and descriptors. */
typedef struct copy_file {
	char src[4096], dst[4096];
	int in, out;
	bool created; /* dst was created by this copy */
} copy_file;

static int file_paths(copy_file *f, const char *src, const char *dst, const char *suffix)
{
	f->in = f->out = -1;
	f->created = false;
	int a = snprintf(f->src, sizeof(f->src), "%s%s", src, suffix);
	int b = snprintf(f->dst, sizeof(f->dst), "%s%s", dst, suffix);
	return a < 0 || b < 0 || (size_t)a >= sizeof(f->src) || (size_t)b >= sizeof(f->dst)
		       ? -ENAMETOOLONG
		       : 0;
}

/* Create f->dst (it must not exist) and open f->src for reading. */
static int file_open(ruma_db *db, copy_file *f)
{
	int rc = ruma_os_open(f->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644, &f->out);
	if (rc) {
		f->out = -1;
		db_report(db, "db copy: cannot create %s: %s", f->dst, ruma_strerror(rc));
		return rc;
	}
	f->created = true;
	if ((rc = ruma_os_open(f->src, O_RDONLY | O_CLOEXEC, 0, &f->in))) {
		f->in = -1;
		db_report(db, "db copy: cannot open %s: %s", f->src, ruma_strerror(rc));
	}
	return rc;
}

/* Close both descriptors; sync the copy first when sync. */
static int file_close(copy_file *f, bool sync)
{
	int rc = 0;
	if (f->out >= 0 && sync)
		rc = ruma_os_fsync(f->out);
	if (f->out >= 0)
		close(f->out);
	if (f->in >= 0)
		close(f->in);
	f->in = f->out = -1;
	return rc;
}

/* Remove what this copy created of f. */
static void file_remove(copy_file *f)
{
	if (f->created)
		unlink(f->dst);
}

/* Copy bytes [off, end) of f, in chunks. */
static int copy_range(copy_file *f, unsigned char *buf, off_t off, off_t end)
{
	while (off < end) {
		size_t n = (size_t)RUMA_MIN((off_t)COPY_CHUNK, end - off);
		int rc = ruma_os_pread_full(f->in, buf, n, off);
		if (!rc)
			rc = ruma_os_pwrite_full(f->out, buf, n, off);
		if (rc)
			return rc;
		off += (off_t)n;
	}
	return 0;
}

/* Copy the data of f->in below size, holes left as holes; the copy gets
 * that size. */
static int copy_sparse(copy_file *f, unsigned char *buf, off_t size)
{
	off_t off = 0;
	while (off < size) {
		off_t data = lseek(f->in, off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* only a hole up to the end */
		off_t hole = data < 0 ? -1 : lseek(f->in, data, SEEK_HOLE);
		if (data < 0 || hole < 0)
			return -errno;
		int rc = copy_range(f, buf, data, RUMA_MIN(hole, size));
		if (rc)
			return rc;
		off = hole;
	}
	return ruma_os_ftruncate(f->out, size);
}

/* Step 2: the store file, up to its size after the checkpoint (pages
 * allocated later are rebuilt from the log: their ALLOC resets them). */
static int copy_store(ruma_db *db, copy_file *f, unsigned char *buf)
{
	ruma_os_file_info fi;
	int rc = ruma_os_file_probe(f->in, &fi);
	if (!rc)
		rc = copy_sparse(f, buf, (off_t)fi.bytes);
	if (rc)
		db_report(db, "db copy: copying %s to %s: %s", f->src, f->dst, ruma_strerror(rc));
	return rc;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Step 3: the log's header, then its records from start to the durable
 * end, at their offsets; room after them. */
static int copy_log(ruma_db *db, copy_file *f, unsigned char *buf)
{
	int rc = ruma_bm_log_flush(db->bm, ruma_bm_log_end(db->bm));
	uint64_t end = ruma_bm_log_durable(db->bm);
	if (!rc)
		rc = ruma_os_pread_full(f->in, buf, LOG_HDR_BYTES, 0);
	if (rc) {
		db_report(db, "db copy: reading the log %s: %s", f->src, ruma_strerror(rc));
		return rc;
	}
	uint32_t version;
	memcpy(&version, buf + 8, sizeof(version));
	uint64_t base = get_u64(buf + 16), start = get_u64(buf + 24);
	if (get_u64(buf) != LOG_MAGIC || version != LOG_VERSION || start < base || end < start) {
		db_report(db, "db copy: the log %s has a header this copy does not know "
			  "(format %u, start %" PRIu64 ", durable end %" PRIu64 ")",
			  f->src, version, start, end);
		return -ENOTSUP;
	}
	off_t from = (off_t)(LOG_HDR_BYTES + (start - base));
	off_t to = (off_t)(LOG_HDR_BYTES + (end - base));
	rc = ruma_os_pwrite_full(f->out, buf, LOG_HDR_BYTES, 0);
	if (!rc)
		rc = copy_range(f, buf, from, to);
	if (!rc)
		rc = ruma_os_ftruncate(f->out, to + (off_t)LOG_ROOM);
	if (rc)
		db_report(db, "db copy: copying %s to %s: %s", f->src, f->dst, ruma_strerror(rc));
	return rc;
}

/* Steps 1 to 3, no other checkpoint meanwhile. */
static int copy_files(ruma_db *db, copy_file *store, copy_file *log)
{
	unsigned char *buf = malloc(COPY_CHUNK);
	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&db->ckpt_run);
	int rc = ruma_bm_flush(db->bm);
	if (rc)
		db_report(db, "db copy: the checkpoint failed: %s", ruma_strerror(rc));
	if (!rc)
		rc = copy_store(db, store, buf);
	if (!rc)
		rc = copy_log(db, log, buf);
	pthread_mutex_unlock(&db->ckpt_run);
	free(buf);
	return rc;
}

/* The messages of finishing the copy, kept until it is known whether it
 * worked: its recovery is the copy's normal course, not news for the
 * user; the lines of a failure go to the store's callback. */
#define COPY_LINES 8
typedef struct copy_said {
	char lines[COPY_LINES][256];
	unsigned n;
} copy_said;

static void copy_message(void *ctx, const char *line)
{
	copy_said *s = ctx;
	snprintf(s->lines[s->n % COPY_LINES], sizeof(s->lines[0]), "%s", line);
	s->n++;
}

/* Step 4: open the copy (recovery) and close it (clean, empty log). */
static int copy_finish(ruma_db *db, const char *dest)
{
	ruma_db_options o;
	ruma_db_options_default(&o);
	o.flags = RUMA_DB_NOCREATE;
	o.pool_bytes = RUMA_MIN(COPY_POOL, db->pool_bytes);
	ruma_bm_config adv; /* a reservation as large as the store's */
	ruma_bm_config_default(&adv);
	adv.virt_bytes = db->virt_bytes;
	o.advanced = &adv;
	copy_said said = { .n = 0 };
	o.message = copy_message;
	o.message_ctx = &said;
	ruma_db *c;
	int rc = ruma_db_open(dest, &o, &c);
	if (!rc)
		rc = ruma_db_close(c);
	if (!rc)
		return 0;
	for (unsigned i = said.n > COPY_LINES ? said.n - COPY_LINES : 0; i < said.n; i++)
		db_report(db, "db copy: %s", said.lines[i % COPY_LINES]);
	db_report(db, "db copy: the copy %s does not open: %s", dest, ruma_strerror(rc));
	return rc;
}

/* Make the copy's names durable: fsync the directory holding dest. */
static int sync_dir(ruma_db *db, const char *dest)
{
	char buf[4096];
	int fd, rc;
	snprintf(buf, sizeof(buf), "%s", dest);
	const char *d = dirname(buf);
	if (!(rc = ruma_os_open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, &fd))) {
		rc = ruma_os_fsync(fd);
		close(fd);
	}
	if (rc)
		db_report(db, "db copy: cannot sync the directory %s: %s", d, ruma_strerror(rc));
	return rc;
}

/* Whether db can be copied while open: a log, writable. */
static int copy_supported(ruma_db *db)
{
	if (db->flags & RUMA_DB_READONLY) { /* (read-only: the log is not opened) */
		db_report(db, "db copy: a store opened RUMA_DB_READONLY cannot take the "
			      "checkpoint a copy starts with: open it for writing");
		return -ENOTSUP;
	}
	if (!ruma_bm_logging(db->bm)) {
		db_report(db, "db copy: a store without a log (RUMA_DB_NOLOG) cannot be copied "
			      "while open: close it and copy its file");
		return -ENOTSUP;
	}
	return 0;
}

int ruma_db_copy(ruma_db *db, const char *dest, unsigned flags)
{
	if (!db || !dest || !*dest || flags)
		return -EINVAL;
	int rc = copy_supported(db);
	if (rc)
		return rc;
	copy_file store, log;
	if ((rc = file_paths(&store, db->path, dest, "")) ||
	    (rc = file_paths(&log, db->path, dest, ".wal"))) {
		db_report(db, "db copy: path too long: %s", dest);
		return rc;
	}
	rc = file_open(db, &store);
	if (!rc)
		rc = file_open(db, &log);
	if (!rc) {
		db_blobs_copy_begin(db);
		rc = copy_files(db, &store, &log);
		db_blobs_copy_end(db);
	}
	int r1 = file_close(&store, !rc), r2 = file_close(&log, !rc);
	rc = rc ? rc : r1 ? r1 : r2;
	if (!rc)
		rc = copy_finish(db, dest);
	if (!rc)
		rc = sync_dir(db, dest);
	if (rc) {
		file_remove(&store);
		file_remove(&log);
	}
	return rc;
}
