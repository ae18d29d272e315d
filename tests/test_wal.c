/*
 * test_wal.c — the write-ahead log file: records round-trip with their
 * LSNs, a flipped byte followed by valid records is refused (salvage ends
 * the log there and counts what it drops) while a torn tail is cut quietly,
 * reset empties the log and LSNs keep growing (never back), the ring wraps,
 * a simulated power loss keeps exactly the synced records, an injected
 * write / fdatasync failure makes flush fail and the log refuse further
 * records; a log of another owner, a missing or empty log that must exist,
 * a FIFO or /dev/null and a ring near SIZE_MAX are refused; a flush keeps the
 * file allocated ahead of the log (with written zeros when the log grows
 * slowly), a file cut at a record's end or one
 * flipped bit refused, and the path kept after open.
 */
#include "fixture.h"

#include <ruma/wal.h>

#include "os/os.h"

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>


static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

static char said[512];

static void keep(void *ctx, const char *line)
{
	(void)ctx;
	snprintf(said, sizeof(said), "%s", line);
}

static int open_log(ruma_wal **w, size_t ring)
{
	ruma_wal_config c = { .path = test_store_path, .buffer_bytes = ring, .message = quiet };
	return ruma_wal_open(&c, w);
}

/* Open keeping the consistent prefix of a damaged log (what is said in `said`). */
static int open_salvage(ruma_wal **w, bool replay)
{
	ruma_wal_config c = { .path = test_store_path, .message = keep, .salvage = true,
			      .replay = replay };
	said[0] = 0;
	return ruma_wal_open(&c, w);
}

/* Payload of record i: i repeated, length 1 + i % 300. */
static size_t fill(uint32_t i, unsigned char *buf)
{
	size_t n = 1 + i % 300;
	for (size_t k = 0; k < n; k++)
		buf[k] = (unsigned char)(i + k);
	return n;
}

/* Read the log back: *n gets how many records it holds (any payload), or
 * with match, how many matched fill() in order (a mismatch ends the count).
 * 0 or the iterator's error. */
static int walk_log(ruma_wal *w, uint32_t *n, bool match)
{
	ruma_wal_iter *it;
	ruma_wal_record rec;
	unsigned char want[400];
	int r = ruma_wal_iter_open(w, &it);
	if (r)
		return r;
	*n = 0;
	while ((r = ruma_wal_iter_next(it, &rec)) == 1) {
		size_t len = match ? fill(*n, want) : 0;
		if (match && (rec.type != (*n & 0xffff) || rec.len != len ||
			      memcmp(rec.payload, want, len)))
			break;
		(*n)++;
	}
	ruma_wal_iter_close(it);
	return r < 0 ? r : 0;
}

/* Read the log back; *n gets how many records matched fill() in order. */
static int read_back(ruma_wal *w, uint32_t *n)
{
	return walk_log(w, n, true);
}

/* XOR the log file's byte at off with mask; 0 or -1. */
static int flip_byte(off_t off, unsigned char mask)
{
	int fd = open(test_store_path, O_RDWR);
	unsigned char b;
	if (fd < 0)
		return -1;
	int r = -1;
	if (pread(fd, &b, 1, off) == 1) {
		b ^= mask;
		r = pwrite(fd, &b, 1, off) == 1 ? 0 : -1;
	}
	close(fd);
	return r;
}

/* Open the log, its end into *end (when not NULL), count its records
 * (read_back) into *got and close it: 0 or the first error. */
static int log_count(uint64_t *end, uint32_t *got)
{
	ruma_wal *w;
	int r = open_log(&w, 0);
	if (r)
		return r;
	if (end)
		*end = ruma_wal_end(w);
	r = read_back(w, got);
	int c = ruma_wal_close(w);
	return r ? r : c;
}

/* A fresh log (the file removed first), open in *w, holding records 0..n-1
 * of fill(); their LSNs go to lsn (when not NULL), the end to *end. */
static int log_fresh(ruma_wal **w, uint32_t n, uint64_t *lsn, uint64_t *end)
{
	unsigned char buf[400];
	unlink(test_store_path);
	int r = open_log(w, 0);
	for (uint32_t i = 0; r == 0 && i < n; i++)
		r = ruma_wal_append(*w, (uint16_t)i, buf, fill(i, buf), lsn ? &lsn[i] : NULL, end);
	return r;
}

static int t_roundtrip(void)
{
	ruma_wal *w;
	unsigned char buf[400];
	uint64_t lsn[100], end = 0;
	CHECK_OK(open_log(&w, 0));
	uint64_t start = ruma_wal_start(w);
	for (uint32_t i = 0; i < 100; i++) {
		size_t n = fill(i, buf);
		CHECK_OK(ruma_wal_append(w, (uint16_t)i, buf, n, &lsn[i], &end));
		CHECK(i == 0 ? lsn[i] == start : lsn[i] > lsn[i - 1]);
		CHECK_EQ(end - lsn[i], (uint64_t)((RUMA_WAL_HEADER + n + 7) & ~7u));
	}
	CHECK_OK(ruma_wal_flush(w, end));
	CHECK_EQ(ruma_wal_durable(w), end);
	CHECK_OK(ruma_wal_close(w));
	uint64_t found;
	uint32_t got;
	CHECK_OK(log_count(&found, &got));
	CHECK_EQ(found, end);
	CHECK_EQ(got, 100u);

	/* flip one payload byte of record 40: valid records follow it, so the
	 * log was damaged, not torn: refused, unless the prefix is salvaged */
	CHECK_OK(flip_byte((off_t)(4096 + (lsn[40] - start) + RUMA_WAL_HEADER), 0x10));
	CHECK_EQ(open_log(&w, 0), RUMA_ECORRUPT);
	CHECK_OK(open_salvage(&w, false));
	CHECK(strstr(said, "discarded 59 valid records"));
	CHECK_EQ(ruma_wal_end(w), lsn[40]);
	CHECK_OK(read_back(w, &got));
	CHECK_EQ(got, 40u);
	/* appends continue at the end found, over the damaged record */
	size_t n = fill(40, buf);
	uint64_t l;
	CHECK_OK(ruma_wal_append(w, 40, buf, n, &l, &end));
	CHECK_EQ(l, lsn[40]);
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(log_count(NULL, &got));
	CHECK_EQ(got, 41u);
	return TEST_PASS;
}

/* Replay (recovery): open does not read the log; reading it to the end finds
 * the end, every CRC checked (a flipped byte ends it there as in a normal
 * open); nothing can be appended before the reset, which starts the log
 * after that end. */
static int t_replay(void)
{
	ruma_wal *w;
	unsigned char buf[400];
	uint64_t lsn[60], end = 0;
	CHECK_OK(log_fresh(&w, 60, lsn, &end));
	CHECK_OK(ruma_wal_close(w));
	/* damage record 50 */
	CHECK_OK(flip_byte((off_t)(4096 + (lsn[50] - lsn[0]) + RUMA_WAL_HEADER + 1), 0x01));

	ruma_wal_config c = { .path = test_store_path, .message = quiet, .replay = true };
	uint64_t preads = ruma_os_count(RUMA_SYS_PREAD);
	CHECK_OK(ruma_wal_open(&c, &w));
	CHECK(ruma_os_count(RUMA_SYS_PREAD) - preads <= 1); /* the header only */
	CHECK_EQ(ruma_wal_end(w), lsn[0]);
	uint64_t l;
	CHECK_EQ(ruma_wal_append(w, 1, buf, 1, &l, &end), -EBUSY);
	uint32_t got;
	CHECK_EQ(read_back(w, &got), RUMA_ECORRUPT); /* valid records follow the damage */
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(open_salvage(&w, true));
	CHECK_OK(read_back(w, &got));
	CHECK_EQ(got, 50u);
	CHECK_EQ(ruma_wal_end(w), lsn[50]);
	CHECK(strstr(said, "discarded 9 valid records"));
	CHECK_EQ(ruma_wal_reset(w, lsn[50] - 8), -EINVAL); /* LSNs never go back */
	CHECK_EQ(ruma_wal_reset(w, UINT64_MAX), -EINVAL);
	CHECK_OK(ruma_wal_reset(w, ruma_wal_end(w)));
	CHECK_EQ(ruma_wal_start(w), lsn[50]);
	CHECK_OK(ruma_wal_append(w, 0, buf, fill(0, buf), &l, &end));
	CHECK_EQ(l, lsn[50]);
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(log_count(NULL, &got));
	CHECK_EQ(got, 1u);
	return TEST_PASS;
}

/* A log whose header names another format (a valid header otherwise) is
 * refused with both format numbers, not read as records. */
static int t_other_format(void)
{
	struct { uint64_t magic; uint32_t version, crc; uint64_t base, start, owner[2], ring, flags; } h;
	ruma_wal *w;
	CHECK_OK(open_log(&w, 0));
	CHECK_OK(ruma_wal_close(w));
	int fd = open(test_store_path, O_RDWR);
	CHECK(fd >= 0);
	CHECK(pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	h.version = 1;
	h.crc = 0;
	h.crc = ruma_crc32c(0, &h, sizeof(h));
	CHECK(pwrite(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	close(fd);
	ruma_wal_config c = { .path = test_store_path, .message = keep };
	said[0] = 0;
	CHECK_EQ(ruma_wal_open(&c, &w), RUMA_ECORRUPT);
	CHECK(strstr(said, "log format 1") && strstr(said, "format 4"));
	unlink(test_store_path);
	return TEST_PASS;
}

static int t_reset_and_wrap(void)
{
	ruma_wal *w;
	unsigned char buf[400];
	uint64_t end = 0;
	CHECK_OK(open_log(&w, 1)); /* smallest ring: appends wrap many times */
	for (uint32_t i = 0; i < 20; i++)
		CHECK_OK(ruma_wal_append(w, (uint16_t)i, buf, fill(i, buf), NULL, &end));
	CHECK_OK(ruma_wal_reset(w, end));
	CHECK(ruma_wal_start(w) >= end);
	uint64_t base = ruma_wal_start(w);
	CHECK_EQ(ruma_wal_end(w), base);
	/* 2.5 ring sizes of large records */
	static unsigned char big[RUMA_WAL_MAX_PAYLOAD];
	for (uint32_t i = 0; i < 5; i++) {
		memset(big, (int)i, sizeof(big));
		CHECK_OK(ruma_wal_append(w, 7, big, sizeof(big), NULL, &end));
	}
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(open_log(&w, 1));
	CHECK_EQ(ruma_wal_start(w), base);
	CHECK_EQ(ruma_wal_end(w), end);
	ruma_wal_iter *it;
	ruma_wal_record rec;
	CHECK_OK(ruma_wal_iter_open(w, &it));
	for (uint32_t i = 0; i < 5; i++) {
		CHECK_EQ(ruma_wal_iter_next(it, &rec), 1);
		CHECK_EQ(rec.len, (uint32_t)RUMA_WAL_MAX_PAYLOAD);
		const unsigned char *p = rec.payload;
		CHECK(p[0] == i && p[RUMA_WAL_MAX_PAYLOAD - 1] == i);
	}
	CHECK_EQ(ruma_wal_iter_next(it, &rec), 0);
	ruma_wal_iter_close(it);
	CHECK_OK(ruma_wal_close(w));
	return TEST_PASS;
}

static int t_powerloss(void)
{
	ruma_wal *w;
	unsigned char buf[400];
	uint64_t end = 0, synced = 0;
	CHECK_OK(ruma_os_powerloss_arm());
	CHECK_OK(open_log(&w, 0));
	for (uint32_t i = 0; i < 60; i++) {
		CHECK_OK(ruma_wal_append(w, (uint16_t)i, buf, fill(i, buf), NULL, &end));
		if (i == 29) {
			CHECK_OK(ruma_wal_flush(w, end));
			synced = end;
		}
	}
	/* written but not synced: the power loss takes it away */
	int fd = open(test_store_path, O_RDONLY);
	CHECK(fd >= 0);
	close(fd);
	CHECK_OK(ruma_os_powerloss());
	(void)ruma_wal_close(w); /* its writes and syncs go nowhere */
	ruma_os_powerloss_disarm();
	uint64_t found;
	uint32_t got;
	CHECK_OK(log_count(&found, &got));
	CHECK_EQ(found, synced);
	CHECK_EQ(got, 30u);
	return TEST_PASS;
}

static int t_io_errors(void)
{
	ruma_wal *w;
	unsigned char buf[400];
	uint64_t end = 0;
	CHECK_OK(open_log(&w, 0));
	CHECK_OK(ruma_wal_append(w, 0, buf, fill(0, buf), NULL, &end));
	CHECK_OK(ruma_wal_flush(w, end));
	uint64_t good = end;
	CHECK_OK(ruma_wal_append(w, 1, buf, fill(1, buf), NULL, &end));
	ruma_os_inject(RUMA_SYS_FDATASYNC, 1, EIO, false);
	CHECK_EQ(ruma_wal_flush(w, end), -EIO);
	ruma_os_inject_clear();
	CHECK_EQ(ruma_wal_durable(w), good);
	/* dead: no more appends or flushes */
	CHECK_EQ(ruma_wal_append(w, 2, buf, fill(2, buf), NULL, &end), -EIO);
	CHECK_EQ(ruma_wal_flush(w, end), -EIO);
	CHECK_EQ(ruma_wal_close(w), -EIO);

	CHECK_OK(open_log(&w, 0));
	CHECK_OK(ruma_wal_append(w, 2, buf, fill(2, buf), NULL, &end));
	ruma_os_inject(RUMA_SYS_PWRITEV, 1, ENOSPC, false); /* a round is one pwritev */
	CHECK_EQ(ruma_wal_flush(w, end), -ENOSPC);
	ruma_os_inject_clear();
	(void)ruma_wal_close(w);

	/* the size of the file is probed through the OS layer at open */
	ruma_os_inject(RUMA_SYS_FSTAT, 1, EIO, false);
	CHECK_EQ(open_log(&w, 0), -EIO);
	ruma_os_inject_clear();
	CHECK_OK(open_log(&w, 0));
	CHECK_OK(ruma_wal_close(w));
	return TEST_PASS;
}

/* A torn tail: the last records' sector never reached the disk (zeros)
 * while a later one of the same flush round did: cut quietly, no error. */
static int t_torn_tail(void)
{
	ruma_wal *w;
	uint64_t lsn[60], end = 0;
	CHECK_OK(log_fresh(&w, 60, lsn, &end));
	CHECK_OK(ruma_wal_close(w));
	off_t at = (off_t)(4096 + (lsn[40] - lsn[0]));
	at = (at + 511) / 512 * 512; /* a whole sector inside the last records */
	static const char zeros[512];
	int fd = open(test_store_path, O_RDWR);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, zeros, sizeof(zeros), at) == (ssize_t)sizeof(zeros));
	close(fd);
	uint32_t got;
	CHECK_OK(log_count(NULL, &got));
	CHECK(got >= 40 && got < 60);
	return TEST_PASS;
}

/* A flush keeps the file allocated past the log (allocation ahead): the file
 * reaches 2 MiB past the end, the bytes after the end read as zeros, a
 * reopen finds the same end and appends go on there; a failed fallocate
 * only turns the allocation ahead off. */
static int t_alloc_ahead(void)
{
	ruma_wal *w;
	unsigned char buf[400], block[4096], zero[4096] = { 0 };
	uint64_t end = 0;
	CHECK_OK(open_log(&w, 0));
	uint64_t start = ruma_wal_start(w);
	for (uint32_t i = 0; i < 50; i++)
		CHECK_OK(ruma_wal_append(w, (uint16_t)i, buf, fill(i, buf), NULL, &end));
	CHECK_OK(ruma_wal_flush(w, end));
	struct stat st;
	CHECK_EQ(stat(test_store_path, &st), 0);
	off_t log_end = (off_t)(4096 + (end - start));
	CHECK(st.st_size >= log_end + (2 << 20));
	int fd = open(test_store_path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, block, sizeof(block), log_end), (ssize_t)sizeof(block));
	close(fd);
	CHECK(memcmp(block, zero, sizeof(block)) == 0);
	CHECK_OK(ruma_wal_close(w));

	CHECK_OK(open_log(&w, 0));
	CHECK_EQ(ruma_wal_end(w), end);
	for (uint32_t i = 50; i < 100; i++)
		CHECK_OK(ruma_wal_append(w, (uint16_t)i, buf, fill(i, buf), NULL, &end));
	ruma_os_inject(RUMA_SYS_FALLOCATE, 1, ENOSPC, true);
	CHECK_OK(ruma_wal_flush(w, end));
	ruma_os_inject_clear();
	CHECK_OK(ruma_wal_close(w));
	uint32_t got;
	CHECK_OK(log_count(NULL, &got));
	CHECK_EQ(got, 100u);
	return TEST_PASS;
}

/* Whether [off, off + len) of the file at path lies in unwritten extents
 * (blocks reserved, never written): 1 yes, 0 no, -1 unknown (no FIEMAP). */
static int unwritten_at(const char *path, off_t off, off_t len)
{
	enum { EXTENTS = 8 };
	struct fiemap *q = calloc(1, sizeof(*q) + EXTENTS * sizeof(struct fiemap_extent));
	int fd = q ? open(path, O_RDONLY) : -1;
	int r = -1;
	if (fd >= 0) {
		*q = (struct fiemap){ .fm_start = (uint64_t)off, .fm_length = (uint64_t)len,
				      .fm_flags = FIEMAP_FLAG_SYNC, .fm_extent_count = EXTENTS };
		if (ioctl(fd, FS_IOC_FIEMAP, q) == 0 && q->fm_mapped_extents > 0) {
			r = 1;
			for (unsigned i = 0; i < q->fm_mapped_extents; i++)
				if (!(q->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN))
					r = 0;
		}
		close(fd);
	}
	free(q);
	return r;
}

/* Append records of 1 KiB until the log has grown by `bytes`, flushing
 * after every `per` bytes and then sleeping `pause_us`; *n counts them. */
static int grow_log(ruma_wal *w, uint64_t bytes, uint64_t per, unsigned pause_us, uint64_t *end,
		    uint32_t *n)
{
	unsigned char rec[1024] = { 7 };
	uint64_t from = ruma_wal_end(w), flushed = from;
	for (; ruma_wal_end(w) - from < bytes; ++*n) {
		CHECK_OK(ruma_wal_append(w, 1, rec, sizeof(rec), NULL, end));
		if (*end - flushed >= per || *end - from >= bytes) {
			CHECK_OK(ruma_wal_flush(w, *end));
			flushed = *end;
			usleep(pause_us);
		}
	}
	return TEST_PASS;
}

/* Whether the last `len` bytes of the log file lie in unwritten extents
 * (unwritten_at); *size is the file's size. */
static int tail_unwritten(off_t len, off_t *size)
{
	struct stat st;
	if (stat(test_store_path, &st))
		return -1;
	*size = st.st_size;
	return unwritten_at(test_store_path, st.st_size - len, len);
}

/* A log that grows slowly is extended with written zeros, a step at a
 * time, so that its rounds' fdatasync writes no block map; one that grows
 * fast keeps reserving blocks; a failed zero write falls back to reserving
 * them. */
static int t_zeros_ahead(void)
{
	ruma_wal *w;
	uint64_t end = 0;
	uint32_t n = 0, got;
	off_t size, before;
	CHECK_OK(open_log(&w, 0));
	uint64_t start = ruma_wal_start(w);
	CHECK_EQ(grow_log(w, 4096, 4096, 0, &end, &n), TEST_PASS); /* the first extension: reserved */
	if (tail_unwritten(4096, &size) != 1) {
		CHECK_OK(ruma_wal_close(w));
		return TEST_SKIP; /* no FIEMAP, or no unwritten extents on this file system */
	}
	/* slowly (16 KiB every 2 ms) past half of what is allocated ahead */
	CHECK_EQ(grow_log(w, (uint64_t)size / 2 + (64 << 10), 16 << 10, 2000, &end, &n), TEST_PASS);
	CHECK_EQ(tail_unwritten(64 << 10, &before), 0);
	CHECK(before > size);
	/* fast: 3 MiB in one round */
	CHECK_EQ(grow_log(w, 3u << 20, 3u << 20, 0, &end, &n), TEST_PASS);
	CHECK_EQ(tail_unwritten(1 << 20, &size), 1);
	CHECK(size >= (off_t)(4096 + (end - start)) + (2 << 20));
	/* slowly again, the zero write failing: reserved instead */
	before = size;
	ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, false);
	CHECK_EQ(grow_log(w, (uint64_t)size - (4096 + (end - start)) - (2 << 20) + (64 << 10),
			  16 << 10, 2000, &end, &n), TEST_PASS);
	ruma_os_inject_clear();
	CHECK_EQ(tail_unwritten(1 << 20, &size), 1);
	CHECK(size > before && size >= (off_t)(4096 + (end - start)) + (2 << 20));
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(open_log(&w, 0));
	CHECK_OK(walk_log(w, &got, false));
	CHECK_OK(ruma_wal_close(w));
	CHECK_EQ(got, n);
	return TEST_PASS;
}

/* The header names its owner: another owner is refused with a message, a
 * fresh open takes the file over; a log that must exist is not created. */
static int t_owner_and_must_exist(void)
{
	ruma_wal *w;
	ruma_wal_config c = { .path = test_store_path, .message = keep, .owner = { 1, 2 } };
	CHECK_OK(ruma_wal_open(&c, &w));
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(ruma_wal_open(&c, &w));
	CHECK_OK(ruma_wal_close(w));
	c.owner[1] = 3;
	said[0] = 0;
	CHECK_EQ(ruma_wal_open(&c, &w), RUMA_ECORRUPT);
	CHECK(strstr(said, "belongs to another store"));
	c.fresh = true;
	CHECK_OK(ruma_wal_open(&c, &w));
	CHECK_OK(ruma_wal_close(w));
	c.fresh = false;
	c.must_exist = true;
	CHECK_OK(ruma_wal_open(&c, &w));
	CHECK_OK(ruma_wal_close(w));
	unlink(test_store_path);
	CHECK_EQ(ruma_wal_open(&c, &w), -ENOENT);
	CHECK(access(test_store_path, F_OK) != 0); /* not created */
	int fd = open(test_store_path, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	close(fd);
	said[0] = 0;
	CHECK_EQ(ruma_wal_open(&c, &w), RUMA_ECORRUPT); /* empty */
	CHECK(strstr(said, "is empty"));
	unlink(test_store_path);
	return TEST_PASS;
}

/* Bad configurations: a FIFO or /dev/null as the log, a ring near SIZE_MAX. */
static int t_bad_config(void)
{
	ruma_wal *w;
	ruma_wal_config c = { .path = "/dev/null", .message = keep };
	said[0] = 0;
	CHECK_EQ(ruma_wal_open(&c, &w), -EINVAL);
	CHECK(strstr(said, "not a regular file"));
	char fifo[160];
	snprintf(fifo, sizeof(fifo), "%s/fifo", test_dir);
	CHECK_OK(mkfifo(fifo, 0644));
	c.path = fifo;
	said[0] = 0;
	CHECK_EQ(ruma_wal_open(&c, &w), -EINVAL);
	CHECK(strstr(said, "not a regular file"));
	unlink(fifo);
	c.path = test_store_path;
	c.buffer_bytes = SIZE_MAX - 100;
	CHECK_EQ(ruma_wal_open(&c, &w), -EINVAL);
	return TEST_PASS;
}

/* Open for replay and read to the end: the iterator's result, *n records. */
static int replay_count(uint32_t *n, bool salvage)
{
	ruma_wal *w;
	ruma_wal_config c = { .path = test_store_path, .message = keep, .replay = true,
			      .salvage = salvage };
	said[0] = 0;
	*n = 0;
	int r = ruma_wal_open(&c, &w);
	if (r)
		return r;
	r = walk_log(w, n, false);
	(void)ruma_wal_close(w);
	return r;
}

/* Write 60 fill() records; lsn[] gets their LSNs. */
static int write_60(uint64_t *lsn)
{
	ruma_wal *w;
	unsigned char buf[400];
	uint64_t end;
	unlink(test_store_path);
	int r = open_log(&w, 0);
	for (uint32_t i = 0; !r && i < 60; i++)
		r = ruma_wal_append(w, (uint16_t)i, buf, fill(i, buf), &lsn[i], &end);
	int r2 = ruma_wal_close(w);
	return r ? r : r2;
}

/* A log file cut exactly at a record's end: the file is always allocated
 * past its last record, so this is refused (salvage keeps the prefix); the
 * salvaged log is allocated ahead again at once, so a reopen is not taken
 * for a cut; a log whose allocation ahead failed says so in its header and
 * a file ending at a record is then accepted. */
static int t_cut_at_record_end(void)
{
	uint64_t lsn[60];
	uint32_t got;
	CHECK_OK(write_60(lsn));
	CHECK_OK(replay_count(&got, false));
	CHECK_EQ(got, 60u);
	CHECK_OK(truncate(test_store_path, (off_t)(4096 + (lsn[40] - lsn[0]))));
	CHECK_EQ(replay_count(&got, false), RUMA_ECORRUPT);
	CHECK(strstr(said, "the file was cut") && strstr(said, "salvage"));
	CHECK_EQ(got, 40u);
	ruma_wal *w;
	ruma_wal_config c = { .path = test_store_path, .message = keep };
	CHECK_EQ(ruma_wal_open(&c, &w), RUMA_ECORRUPT);
	CHECK_OK(open_salvage(&w, false));
	CHECK_OK(read_back(w, &got));
	CHECK_EQ(got, 40u);
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(replay_count(&got, false)); /* allocated ahead again by the salvaging open */
	CHECK_EQ(got, 40u);

	/* cut inside a record (its header whole, its payload short) */
	CHECK_OK(write_60(lsn));
	CHECK_OK(truncate(test_store_path, (off_t)(4096 + (lsn[30] - lsn[0]) + 30)));
	CHECK_EQ(replay_count(&got, false), RUMA_ECORRUPT);
	CHECK(strstr(said, "the file was cut"));
	CHECK_EQ(got, 30u);
	CHECK_OK(open_salvage(&w, false));
	CHECK_OK(ruma_wal_close(w));

	/* allocation ahead fails in a flush round: the header says so first */
	unsigned char buf[400];
	static unsigned char big[65536];
	uint64_t end = 0, cut = 0;
	CHECK_OK(open_log(&w, 0));
	ruma_os_inject(RUMA_SYS_FALLOCATE, 1, ENOSPC, true);
	for (uint32_t i = 0; (end - lsn[0]) < (3u << 20); i++) {
		CHECK_OK(ruma_wal_append(w, 9, big, 65536, NULL, &end));
		cut = i == 10 ? end : cut;
	}
	CHECK_OK(ruma_wal_flush(w, end));
	CHECK(ruma_os_injected(RUMA_SYS_FALLOCATE) > 0);
	ruma_os_inject_clear();
	CHECK_OK(ruma_wal_append(w, 1, buf, fill(1, buf), NULL, &end));
	CHECK_OK(ruma_wal_close(w));
	CHECK_OK(truncate(test_store_path, (off_t)(4096 + (cut - lsn[0]))));
	CHECK_OK(replay_count(&got, false));
	CHECK_EQ(got, 30u + 11u);
	return TEST_PASS;
}

/* Flip bit `bit` of the log file's byte at off; 0 or -1. */
static int flip_bit(off_t off, unsigned bit)
{
	return flip_byte(off, (unsigned char)(1u << bit));
}

/* One flipped bit in a record whose neighbourhood holds a zero sector (a
 * record of zeros, as a full image of a mostly empty page) inside the last
 * ring: the zero sector alone would read as a torn tail, but one bit
 * explains the checksum, so it is damage, refused (salvage keeps the
 * prefix) — in the payload, the header, the stored CRC, and in the last
 * record; a torn tail (a zeroed sector) is still cut quietly. */
static int t_flip_near_zero_sector(void)
{
	ruma_wal *w;
	unsigned char buf[400];
	static const unsigned char zeros[2000];
	uint64_t lsn[50], end = 0;
	uint32_t got;
	CHECK_OK(open_log(&w, 0));
	for (uint32_t i = 0; i < 50; i++) {
		bool z = i >= 40 && i < 45;
		CHECK_OK(ruma_wal_append(w, (uint16_t)i, z ? zeros : buf,
					 z ? sizeof(zeros) : fill(i, buf), &lsn[i], &end));
	}
	CHECK_OK(ruma_wal_close(w));
	off_t at40 = (off_t)(4096 + (lsn[40] - lsn[0]));
	off_t at49 = (off_t)(4096 + (lsn[49] - lsn[0]));
	/* payload bit of a record of zeros, then its LSN field, then its CRC */
	off_t offs[] = { at40 + RUMA_WAL_HEADER + 3, at40 + 9, at40 + 2 };
	for (size_t k = 0; k < 3; k++) {
		CHECK_OK(flip_bit(offs[k], 4));
		CHECK_EQ(replay_count(&got, false), RUMA_ECORRUPT);
		CHECK(strstr(said, "exactly one bit"));
		CHECK_OK(replay_count(&got, true));
		CHECK_EQ(got, 40u);
		CHECK_OK(flip_bit(offs[k], 4));
	}
	/* every covered bit of the last record (none follows it) */
	unsigned bytes = (unsigned)(end - lsn[49]);
	for (unsigned b = 4 * 8; b < 8 * bytes; b += 5) {
		if (b / 8 >= RUMA_WAL_HEADER + 1 + 49 % 300)
			break; /* padding: not covered by the CRC */
		CHECK_OK(flip_bit(at49 + b / 8, b % 8));
		CHECK_EQ(replay_count(&got, false), RUMA_ECORRUPT);
		CHECK_EQ(got, 49u);
		CHECK_OK(flip_bit(at49 + b / 8, b % 8));
	}
	CHECK_OK(replay_count(&got, false));
	CHECK_EQ(got, 50u);
	/* a torn write: the sector that holds record 47's start never landed */
	off_t s = (at40 + (off_t)(lsn[47] - lsn[40])) / 512 * 512;
	int fd = open(test_store_path, O_RDWR);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, zeros, 512, s) == 512);
	close(fd);
	CHECK_OK(replay_count(&got, false));
	CHECK(got >= 40 && got <= 47);
	return TEST_PASS;
}

/* The log keeps its own copy of the path: a message after open names the
 * log although the caller's buffer (a stack buffer of the buffer manager's)
 * holds something else by then. */
static int t_path_copied(void)
{
	char buf[128];
	ruma_wal *w;
	unsigned char b[8] = { 0 };
	uint64_t end;
	snprintf(buf, sizeof(buf), "%s", test_store_path);
	ruma_wal_config c = { .path = buf, .message = keep };
	CHECK_OK(ruma_wal_open(&c, &w));
	memset(buf, 'x', sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = 0;
	CHECK_OK(ruma_wal_append(w, 1, b, sizeof(b), NULL, &end));
	ruma_os_inject(RUMA_SYS_PWRITEV, 1, EIO, false);
	said[0] = 0;
	CHECK_EQ(ruma_wal_flush(w, end), -EIO);
	ruma_os_inject_clear();
	CHECK(strstr(said, test_store_path) && strstr(said, "writing the log failed"));
	(void)ruma_wal_close(w);
	return TEST_PASS;
}

/* A flush round rewrites the block that holds its start; torn by a power
 * loss, that block's old sector comes back: the bytes of the records before
 * the old end, then zeros, and no whole zero sector lies between the first
 * record that fails and the valid ones the round's later sectors carry.
 * That is a torn tail, cut quietly, not damage (the zeros where the failing
 * record's CRC and length should be show it was never written there). */
static int t_torn_block_rewrite(void)
{
	ruma_wal *w;
	unsigned char buf[400];
	uint64_t lsn0 = 0, old_end = 0, end = 0;
	CHECK_OK(open_log(&w, 0));
	uint32_t i = 0;
	for (; i < 7 || (old_end - lsn0 + 4096) % 512 < 64 || (old_end - lsn0 + 4096) % 512 > 400;
	     i++) {
		uint64_t at;
		CHECK_OK(ruma_wal_append(w, 1, buf, fill(i, buf), &at, &old_end));
		lsn0 = i ? lsn0 : at;
		CHECK(i < 200);
	}
	CHECK_OK(ruma_wal_flush(w, old_end)); /* round 1 ends mid-sector */
	uint32_t kept = i;
	for (; i < kept + 20; i++)
		CHECK_OK(ruma_wal_append(w, 1, buf, fill(i, buf), NULL, &end));
	CHECK_OK(ruma_wal_close(w));
	/* the old sector of the rewritten block: zeros after the old end */
	off_t at = (off_t)(4096 + (old_end - lsn0));
	int fd = open(test_store_path, O_WRONLY);
	CHECK(fd >= 0);
	static const char zeros[512];
	size_t n = (size_t)(512 - at % 512);
	CHECK(pwrite(fd, zeros, n, at) == (ssize_t)n);
	close(fd);
	uint32_t got;
	said[0] = 0;
	CHECK_OK(replay_count(&got, false));
	CHECK_EQ(got, kept);
	CHECK(strstr(said, "damaged") == NULL);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "torn_block_rewrite", t_torn_block_rewrite },
	{ "roundtrip_checksum", t_roundtrip },
	{ "other_format", t_other_format },
	{ "replay", t_replay },
	{ "reset_and_wrap", t_reset_and_wrap },
	{ "powerloss", t_powerloss },
	{ "io_errors", t_io_errors },
	{ "torn_tail", t_torn_tail },
	{ "owner_and_must_exist", t_owner_and_must_exist },
	{ "bad_config", t_bad_config },
	{ "alloc_ahead", t_alloc_ahead },
	{ "zeros_ahead", t_zeros_ahead },
	{ "cut_at_record_end", t_cut_at_record_end },
	{ "flip_near_zero_sector", t_flip_near_zero_sector },
	{ "path_copied", t_path_copied },
};

int main(int argc, char **argv)
{
	return test_main_fixture("wal", cases, TEST_N(cases), argc, argv, &test_store_fixture);
}
