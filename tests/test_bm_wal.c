/*
 * test_bm_wal.c — the buffer manager's log entries that carry full page
 * images with a hole (src/bm/mtr.c, src/bm/recover.c), without a B-tree.
 *
 * The pages here belong to a made-up owner whose hole is named by the
 * page's first 4 bytes (u16 off, u16 len), installed with
 * ruma_bm_set_page_hole.  A case changes pages of a store opened SYNC
 * under the simulated power loss (os.h), loses power and reopens: the
 * redone pages must equal what was logged outside their holes and be
 * zero inside, as the pages in memory were made when their images were
 * logged.  A declared move (ruma_bm_moved) is logged as the move when it
 * is the page's first write since its last record, as its bytes after
 * another write, and redone either way.  Bytes named unlogged
 * (ruma_bm_wrote_unlogged) stay out of the record: the redone page holds
 * what its image held there.  Crafted records (appended to the
 * store's log directly) check that recovery refuses a hole or a move
 * outside the page, an entry shorter than its image or its move, and an
 * entry kind it does not know, with a message.
 */
#include "fixture.h"

#include "bm/bm_int.h"
#include "bm/mtr.h"
#include "os/os.h"

#include <string.h>

#define D RUMA_BM_PAGE_DATA

static char said[2048]; /* the buffer manager's messages of the last open */

static void keep_line(void *ctx, const char *line)
{
	(void)ctx;
	size_t n = strlen(said);
	snprintf(said + n, sizeof(said) - n, "%s\n", line);
	if (getenv("RUMA_TEST_VERBOSE"))
		printf("  [bm] %s\n", line);
}

/* The test owner's hole: named by the page's first 4 bytes. */
static bool header_hole(const void *page, unsigned *off, unsigned *len)
{
	uint16_t h[2];
	memcpy(h, page, sizeof(h));
	*off = h[0];
	*len = h[1];
	return h[1] != 0;
}

static void set_hole(char *page, unsigned off, unsigned len)
{
	uint16_t h[2] = { (uint16_t)off, (uint16_t)len };
	memcpy(page, h, sizeof(h));
}

/* Open the case's store (not fresh) with durability d; messages into said. */
static int open_store(ruma_bm_durability d, ruma_bm **bm)
{
	ruma_bm_config c;
	test_bm_config(&c, test_store_path, 1024, 64);
	c.fresh = false;
	c.durability = d;
	c.write = RUMA_BM_WRITE_PWRITE; /* the power-loss simulation tracks pwrite */
	c.message = keep_line;
	said[0] = 0;
	return ruma_bm_open(&c, bm);
}

/* A fresh empty store with a log, closed; then the power-loss simulation
 * armed and the store opened SYNC with the test owner's holes. */
static int open_armed(ruma_bm **bm)
{
	ruma_bm_config c;
	test_bm_config(&c, test_store_path, 1024, 64);
	c.durability = RUMA_BM_DURABLE_SYNC;
	c.message = keep_line;
	CHECK_OK(ruma_bm_open(&c, bm));
	CHECK_OK(ruma_bm_close(*bm));
	CHECK_OK(ruma_os_powerloss_arm());
	CHECK_OK(open_store(RUMA_BM_DURABLE_SYNC, bm));
	ruma_bm_set_page_hole(*bm, header_hole);
	return TEST_PASS;
}

/* Lose power now: nothing more of bm reaches the files. */
static int power_off(ruma_bm *bm)
{
	int rc = ruma_os_powerloss();
	(void)ruma_bm_close(bm);
	ruma_os_powerloss_disarm();
	return rc;
}

/* The log bytes one exclusive change of pid makes: fill runs
 * [from[i], to[i]) with byte v[i] (and set its hole first when hlen is
 * not 0), release, make it durable.  The page as logged goes to copy. */
struct change {
	unsigned hoff, hlen;
	unsigned n;
	unsigned from[4], to[4];
	uint8_t v[4];
};

static int change_page(ruma_bm *bm, ruma_pid pid, const struct change *ch, char *copy,
		       uint64_t *bytes)
{
	void *p;
	uint64_t before = ruma_bm_log_end(bm);
	CHECK_OK(ruma_bm_fix_x(bm, pid, &p));
	for (unsigned i = 0; i < ch->n; i++)
		memset((char *)p + ch->from[i], ch->v[i], ch->to[i] - ch->from[i]);
	if (ch->hlen)
		set_hole(p, ch->hoff, ch->hlen);
	memcpy(copy, p, D);
	ruma_bm_unfix_x(bm, pid);
	CHECK_OK(ruma_bm_op_end(bm, 0));
	*bytes = ruma_bm_log_end(bm) - before;
	return TEST_PASS;
}

/* pid after recovery equals want outside [hoff, hoff + hlen), zeros inside. */
static int page_is(ruma_bm *bm, ruma_pid pid, const char *want, unsigned hoff, unsigned hlen)
{
	void *p;
	CHECK_OK(ruma_bm_fix_s(bm, pid, &p));
	const char *page = p;
	int ok = !memcmp(page, want, hoff) &&
		 !memcmp(page + hoff + hlen, want + hoff + hlen, D - hoff - hlen);
	for (unsigned i = hoff; ok && i < hoff + hlen; i++)
		ok = page[i] == 0;
	ruma_bm_unfix_s(bm, pid);
	CHECK(ok);
	return TEST_PASS;
}

/* Lose power, reopen (recovery runs) and check pid as page_is does; the
 * recovery's figures go to rec when it is not NULL. */
static int redone_is(ruma_bm *bm, ruma_pid pid, const char *want, unsigned hoff, unsigned hlen,
		     ruma_bm_recovery *rec)
{
	CHECK_OK(power_off(bm));
	CHECK_OK(open_store(RUMA_BM_DURABLE_OFF, &bm));
	if (rec)
		ruma_bm_get_recovery(bm, rec);
	CHECK_EQ(page_is(bm, pid, want, hoff, hlen), TEST_PASS);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* A fresh store (open_armed) with one new page pid filled whole, 0xab in
 * its hole [1000, 3000), logged as an image (*bytes of log). */
static int holed_page(ruma_bm **bm, ruma_pid *pid, uint64_t *bytes)
{
	static char copy[D];
	void *p;
	CHECK_EQ(open_armed(bm), TEST_PASS);
	CHECK_OK(ruma_bm_alloc(*bm, pid, &p));
	ruma_bm_unfix_x(*bm, *pid);
	struct change c = { 1000, 2000, 3, { 0, 1000, 3000 }, { 1000, 3000, D }, { 0x11, 0xab, 0x22 } };
	return change_page(*bm, *pid, &c, copy, bytes);
}

/*
 * A page filled whole, with a hole of 2000 bytes, is logged as an image
 * without the hole; a small change after it as a DIFF; a change of 1500
 * bytes that leaves a hole of 3800 as the smaller image again.  After the
 * power loss the store is redone from those three records.
 */
static int t_hole_round_trip(void)
{
	ruma_bm *bm;
	ruma_pid pid;
	static char second[D], third[D];
	uint64_t b1, b2, b3;
	CHECK_EQ(holed_page(&bm, &pid, &b1), TEST_PASS);
	printf("  image of a page with a 2000-byte hole: %llu log bytes\n", (unsigned long long)b1);
	CHECK(b1 < D - 2000 + 100);
	/* 100 bytes written at the hole's start: the hole shrinks to [1100, 3000) */
	struct change c2 = { 1100, 1900, 1, { 1000 }, { 1100 }, { 0x33 } };
	CHECK_EQ(change_page(bm, pid, &c2, second, &b2), TEST_PASS);
	CHECK(b2 < 200);
	/* 1500 bytes written inside a new hole [100, 3900): a DIFF (under half a
	 * page) would be larger than the image without that hole */
	struct change c3 = { 100, 3800, 1, { 2000 }, { 3500 }, { 0x44 } };
	CHECK_EQ(change_page(bm, pid, &c3, third, &b3), TEST_PASS);
	printf("  a 1500-byte change leaving a 3800-byte hole: %llu log bytes\n",
	       (unsigned long long)b3);
	CHECK(b3 < D - 3800 + 100);
	ruma_bm_recovery rec;
	CHECK_EQ(redone_is(bm, pid, third, 100, 3800, &rec), TEST_PASS);
	CHECK(rec.ran);
	CHECK_EQ(rec.full_images, 2);
	return TEST_PASS;
}

/*
 * A writer compared with a copy (no declared writes) that writes into a
 * former hole the bytes the hole held before its image was logged: the
 * image zeroed the hole in memory, so the comparison sees the change and
 * logs it, and the redone page has those bytes.
 */
static int t_hole_rewritten_same_bytes(void)
{
	ruma_bm *bm;
	ruma_pid pid;
	void *p;
	static char second[D];
	uint64_t bytes;
	CHECK_EQ(holed_page(&bm, &pid, &bytes), TEST_PASS);
	CHECK_OK(ruma_bm_fix_s(bm, pid, &p));
	bool zeroed = ((const char *)p)[1000] == 0 && ((const char *)p)[2999] == 0;
	ruma_bm_unfix_s(bm, pid);
	CHECK(zeroed);
	/* 0xab again into [1000, 1100), now outside the hole [1100, 3000) */
	struct change c2 = { 1100, 1900, 1, { 1000 }, { 1100 }, { 0xab } };
	CHECK_EQ(change_page(bm, pid, &c2, second, &bytes), TEST_PASS);
	return redone_is(bm, pid, second, 1100, 1900, NULL);
}

/* An owner's hole outside the page is not used: the image is whole. */
static int t_hole_outside_ignored(void)
{
	ruma_bm *bm;
	ruma_pid pid;
	void *p;
	static char want[D];
	uint64_t bytes;
	CHECK_EQ(open_armed(&bm), TEST_PASS);
	CHECK_OK(ruma_bm_alloc(bm, &pid, &p));
	ruma_bm_unfix_x(bm, pid);
	struct change c = { D - 100, 200, 1, { 0 }, { D }, { 0x5a } };
	CHECK_EQ(change_page(bm, pid, &c, want, &bytes), TEST_PASS);
	CHECK(bytes > D);
	return redone_is(bm, pid, want, 0, 0, NULL);
}

/* ---- declared moves -------------------------------------------------------------- */

/* One declaring operation on pid: move [src, src + len) to dst, then fill
 * [from, to) with v, each named as its writer names it; the page as logged
 * goes to copy, the log bytes it made to *bytes.  fill_first: the fill
 * comes before the move. */
struct move_change {
	unsigned dst, src, len, from, to;
	uint8_t v;
	bool fill_first;
};

static void fill(char *p, const struct move_change *mc)
{
	memset(p + mc->from, mc->v, mc->to - mc->from);
	ruma_bm_wrote(p + mc->from, mc->to - mc->from);
}

static int move_page(ruma_bm *bm, ruma_pid pid, const struct move_change *mc, char *copy,
		     uint64_t *bytes)
{
	void *v;
	uint64_t before = ruma_bm_log_end(bm);
	ruma_bm_op_declare(bm);
	CHECK_OK(ruma_bm_fix_x(bm, pid, &v));
	char *p = v;
	if (mc->fill_first)
		fill(p, mc);
	memmove(p + mc->dst, p + mc->src, mc->len);
	ruma_bm_moved(p + mc->dst, p + mc->src, mc->len);
	if (!mc->fill_first)
		fill(p, mc);
	memcpy(copy, p, D);
	ruma_bm_unfix_x(bm, pid);
	CHECK_OK(ruma_bm_op_end(bm, 0));
	*bytes = ruma_bm_log_end(bm) - before;
	return TEST_PASS;
}

/*
 * A move of 3000 bytes as the page's first write since its image is logged
 * in a few bytes (the move, then the range written after it); a move after
 * another write is logged as the bytes it wrote.  Both are redone after a
 * power loss.
 */
static int t_move_round_trip(void)
{
	ruma_bm *bm;
	ruma_pid pid;
	static char first[D], second[D];
	uint64_t b0, b1, b2;
	CHECK_EQ(holed_page(&bm, &pid, &b0), TEST_PASS);
	struct move_change m1 = { 200, 100, 3000, 150, 160, 0x55, false };
	CHECK_EQ(move_page(bm, pid, &m1, first, &b1), TEST_PASS);
	printf("  a 3000-byte move, then 10 bytes: %llu log bytes\n", (unsigned long long)b1);
	CHECK(b1 < 100);
	struct move_change m2 = { 300, 400, 2000, 3900, 3910, 0x66, true };
	CHECK_EQ(move_page(bm, pid, &m2, second, &b2), TEST_PASS);
	printf("  10 bytes, then a 2000-byte move: %llu log bytes\n", (unsigned long long)b2);
	CHECK(b2 > 2000);
	return redone_is(bm, pid, second, 0, 0, NULL);
}

/*
 * Bytes named with ruma_bm_wrote_unlogged stay out of the record and pass
 * the write check of builds with RUMA_ASSERT; after a power loss the page
 * holds the logged change and, where the unlogged bytes were, what its
 * image held.
 */
static int t_unlogged_bytes(void)
{
	ruma_bm *bm;
	ruma_pid pid;
	uint64_t b0;
	static char want[D];
	void *v;
	CHECK_EQ(holed_page(&bm, &pid, &b0), TEST_PASS);
	ruma_bm_op_declare(bm);
	CHECK_OK(ruma_bm_fix_x(bm, pid, &v));
	char *p = v;
	memcpy(want, p, D);
	memset(p + 100, 0x5a, 8);
	ruma_bm_wrote_unlogged(p + 100, 8);
	memset(p + 3500, 0x6b, 10);
	ruma_bm_wrote(p + 3500, 10);
	memset(want + 3500, 0x6b, 10);
	ruma_bm_unfix_x(bm, pid);
	CHECK_OK(ruma_bm_op_end(bm, 0));
	return redone_is(bm, pid, want, 0, 0, NULL);
}

/* ---- crafted entries ----------------------------------------------------------- */

/* A store that needs recovery, whose log ends with one BM_WAL_MTR record of
 * one entry: kind, a data page's pid, then body (len bytes).  Then the
 * store is opened: its result. */
static int recover_crafted(unsigned kind, const void *body, size_t len)
{
	ruma_bm *bm;
	ruma_pid pid;
	void *p;
	static char rec[16 + 2 * D];
	CHECK_EQ(open_armed(&bm), TEST_PASS);
	CHECK_OK(ruma_bm_alloc(bm, &pid, &p));
	ruma_bm_unfix_x(bm, pid);
	CHECK_OK(ruma_bm_op_end(bm, 0));
	rec[0] = (char)kind;
	memcpy(rec + 1, &pid, sizeof(pid));
	memcpy(rec + 9, body, len);
	uint64_t end;
	CHECK_OK(ruma_wal_append(bm->wal, BM_WAL_MTR, rec, 9 + len, NULL, &end));
	CHECK_OK(ruma_wal_flush(bm->wal, end));
	CHECK_OK(power_off(bm));
	int rc = open_store(RUMA_BM_DURABLE_OFF, &bm);
	if (rc == 0)
		CHECK_OK(ruma_bm_close(bm));
	return rc;
}

/* An FPI_HOLE body: hole (off, len), then `bytes` image bytes of 0x77. */
static size_t holed_body(char *b, unsigned off, unsigned len, size_t bytes)
{
	uint16_t h[2] = { (uint16_t)off, (uint16_t)len };
	memcpy(b, h, sizeof(h));
	memset(b + 4, 0x77, bytes);
	return 4 + bytes;
}

static int t_bad_hole_refused(void)
{
	static char b[2 * D];
	/* the well-formed entry is redone (the refusals below are its bounds) */
	CHECK_OK(recover_crafted(BM_MTR_FPI_HOLE, b, holed_body(b, 500, 1000, D - 1000)));
	/* a hole past the page's end */
	CHECK_EQ(recover_crafted(BM_MTR_FPI_HOLE, b, holed_body(b, 3500, 1000, D - 1000)),
		 RUMA_ECORRUPT);
	CHECK_HAS(said, "does not fit the store");
	CHECK_EQ(recover_crafted(BM_MTR_FPI_HOLE, b, holed_body(b, 0xffff, 0xffff, 16)),
		 RUMA_ECORRUPT);
	/* the record ends inside the image */
	CHECK_EQ(recover_crafted(BM_MTR_FPI_HOLE, b, holed_body(b, 500, 1000, D - 1001)),
		 RUMA_ECORRUPT);
	/* the record ends inside the hole's header */
	CHECK_EQ(recover_crafted(BM_MTR_FPI_HOLE, b, 3), RUMA_ECORRUPT);
	return TEST_PASS;
}

/* A DIFF_MOVE body: the move, then a DIFF of no range. */
static size_t move_body(char *b, unsigned dst, unsigned src, unsigned len)
{
	uint16_t h[4] = { (uint16_t)dst, (uint16_t)src, (uint16_t)len, 0 };
	memcpy(b, h, sizeof(h));
	return sizeof(h);
}

static int t_bad_move_refused(void)
{
	char b[8];
	CHECK_OK(recover_crafted(BM_MTR_DIFF_MOVE, b, move_body(b, 100, 0, 500)));
	/* a destination or a source past the page's end */
	CHECK_EQ(recover_crafted(BM_MTR_DIFF_MOVE, b, move_body(b, D - 499, 0, 500)), RUMA_ECORRUPT);
	CHECK_EQ(recover_crafted(BM_MTR_DIFF_MOVE, b, move_body(b, 0, 0xffff, 0xffff)),
		 RUMA_ECORRUPT);
	/* the record ends inside the move or before the DIFF's count */
	CHECK_EQ(recover_crafted(BM_MTR_DIFF_MOVE, b, 4), RUMA_ECORRUPT);
	CHECK_EQ(recover_crafted(BM_MTR_DIFF_MOVE, b, 6), RUMA_ECORRUPT);
	return TEST_PASS;
}

static int t_unknown_kind_refused(void)
{
	static char b[64];
	CHECK_EQ(recover_crafted(9, b, sizeof(b)), RUMA_ECORRUPT);
	printf("  %s", said);
	CHECK_HAS(said, "kind 9", "does not know");
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "hole_round_trip", t_hole_round_trip },
	{ "hole_rewritten_same_bytes", t_hole_rewritten_same_bytes },
	{ "hole_outside_ignored", t_hole_outside_ignored },
	{ "bad_hole_refused", t_bad_hole_refused },
	{ "move_round_trip", t_move_round_trip },
	{ "unlogged_bytes", t_unlogged_bytes },
	{ "bad_move_refused", t_bad_move_refused },
	{ "unknown_kind_refused", t_unknown_kind_refused },
};

int main(int argc, char **argv)
{
	return test_main_fixture("bm_wal", cases, TEST_N(cases), argc, argv,
				 &test_store_fixture);
}
