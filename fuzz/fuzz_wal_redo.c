/*
 * fuzz_wal_redo.c — libFuzzer harness: crash recovery of the buffer
 * manager (src/bm/recover.c) reading a log record an attacker wrote.
 *
 * Each input builds a small store with a log (fresh, SYNC, 64 pages of
 * address space), changes two pages whose owner names a hole (so the log
 * holds real full images with holes and DIFFs before the crafted record),
 * appends the crafted record to the store's log, makes it durable and
 * loses power (the os layer's simulation); then the store is opened again
 * and recovery reads the whole log.
 *
 * Input: byte 0 picks the record's type (low 2 bits: a page-change record
 * BM_WAL_MTR, META, EXTENT, START); the rest is its payload as it stands in
 * the log (for BM_WAL_MTR a sequence of entries: u8 kind, u64 page id,
 * body; the pages the harness changes are ids 2 and 3).
 *
 * With RUMA_FUZZ_VERBOSE set, each input's verdict and the manager's last
 * message go to stderr.
 *
 * Checked: no crash, sanitizer report or hang; the open returns 0 or
 * RUMA_ECORRUPT (anything else aborts, naming the message); after a
 * recovery that succeeded every data page can be latched and read and the
 * store closes cleanly.
 * Syscalls: the buffer manager's and the log's, on files under /tmp.
 */
#include "bm/bm_int.h"
#include "bm/mtr.h"
#include "os/os.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define H "fuzz_wal_redo"
#define D RUMA_BM_PAGE_DATA
#define VIRT_PAGES 64u
#define PREPARED 2u

static char path[64], logpath[80];
static char said[512]; /* the last message of the buffer manager */

static void keep(void *ctx, const char *line)
{
	(void)ctx;
	snprintf(said, sizeof said, "%s", line);
}

static void remove_files(void)
{
	unlink(path);
	unlink(logpath);
}

static void fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s: %s (last message: %s)\n", H, what, ruma_strerror(rc), said);
	abort();
}

/* The prepared pages' owner: the hole is named by the page's first 4
 * bytes (u16 off, u16 len). */
static bool header_hole(const void *page, unsigned *off, unsigned *len)
{
	uint16_t h[2];
	memcpy(h, page, sizeof h);
	*off = h[0];
	*len = h[1];
	return true;
}

static int open_store(bool fresh, ruma_bm_durability d, ruma_bm **bm)
{
	ruma_bm_config c;
	ruma_bm_config_default(&c);
	c.path = path;
	c.virt_bytes = VIRT_PAGES * RUMA_BM_PAGE_SIZE;
	c.phys_bytes = 32u * RUMA_BM_PAGE_SIZE;
	c.batch = 4;
	c.max_threads = 2;
	c.fresh = fresh;
	c.durability = d;
	c.write = RUMA_BM_WRITE_PWRITE; /* the power-loss simulation tracks pwrite */
	c.message = keep;
	return ruma_bm_open(&c, bm);
}

/* Page i of the prepared ones: a pattern with a hole of 1000 + 500 i bytes
 * at 200 + 300 i, then a small change after its image. */
static void prepare(ruma_bm *bm)
{
	for (unsigned i = 0; i < PREPARED; i++) {
		ruma_pid pid;
		void *p;
		int rc = ruma_bm_alloc(bm, &pid, &p);
		if (rc)
			fail("alloc", rc);
		uint16_t h[2] = { (uint16_t)(200 + 300 * i), (uint16_t)(1000 + 500 * i) };
		memset(p, (int)(0x31 + i), D);
		memcpy(p, h, sizeof h);
		ruma_bm_unfix_x(bm, pid);
		if ((rc = ruma_bm_fix_x(bm, pid, &p)))
			fail("fix", rc);
		memset((char *)p + D - 64, 0x5a, 32);
		ruma_bm_unfix_x(bm, pid);
	}
	int rc = ruma_bm_op_end(bm, 0);
	if (rc)
		fail("op_end", rc);
}

static const uint16_t types[4] = { BM_WAL_MTR, BM_WAL_META, BM_WAL_EXTENT, BM_WAL_START };

/* A store whose log ends with the crafted record, after a power loss. */
static void crash_with(uint16_t type, const uint8_t *payload, size_t len)
{
	ruma_bm *bm;
	int rc = open_store(true, RUMA_BM_DURABLE_SYNC, &bm);
	if (rc || (rc = ruma_bm_close(bm)))
		fail("creating the store", rc);
	if ((rc = ruma_os_powerloss_arm()))
		fail("arming the power loss", rc);
	if ((rc = open_store(false, RUMA_BM_DURABLE_SYNC, &bm)))
		fail("opening the store", rc);
	ruma_bm_set_page_hole(bm, header_hole);
	prepare(bm);
	uint64_t end;
	if (!(rc = ruma_wal_append(bm->wal, type, payload, len, NULL, &end)))
		rc = ruma_wal_flush(bm->wal, end);
	if (rc)
		fail("appending the record", rc);
	if ((rc = ruma_os_powerloss()))
		fail("power loss", rc);
	(void)ruma_bm_close(bm);
	ruma_os_powerloss_disarm();
}

/* After a recovery that succeeded: every allocated data page reads. */
static void read_pages(ruma_bm *bm)
{
	uint64_t hw = ruma_bm_high_water(bm);
	for (ruma_pid pid = bm->meta_pages; pid < hw; pid++) {
		void *p;
		if (ruma_bm_page_state_of(bm, pid) != RUMA_BM_PAGE_USED)
			continue;
		int rc = ruma_bm_fix_s(bm, pid, &p);
		if (rc == RUMA_ECORRUPT)
			continue; /* a page the crafted record left damaged on disk */
		if (rc)
			fail("reading a page", rc);
		volatile uint8_t sink = ((const uint8_t *)p)[D - 1];
		(void)sink;
		ruma_bm_unfix_s(bm, pid);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size - 1 > RUMA_WAL_MAX_PAYLOAD)
		return 0;
	if (!path[0]) {
		snprintf(path, sizeof path, "/tmp/ruma-fuzz-wal.%d", (int)getpid());
		snprintf(logpath, sizeof logpath, "%s.wal", path);
		atexit(remove_files);
	}
	crash_with(types[data[0] & 3u], data + 1, size - 1);
	ruma_bm *bm;
	said[0] = 0;
	int rc = open_store(false, RUMA_BM_DURABLE_OFF, &bm);
	if (getenv("RUMA_FUZZ_VERBOSE"))
		fprintf(stderr, "%s: type %u, %zu payload bytes: %s (%s)\n", H, types[data[0] & 3u],
			size - 1, rc ? ruma_strerror(rc) : "recovered", said);
	if (rc == RUMA_ECORRUPT)
		return 0;
	if (rc)
		fail("recovery", rc);
	read_pages(bm);
	if ((rc = ruma_bm_close(bm)))
		fail("closing the recovered store", rc);
	return 0;
}
