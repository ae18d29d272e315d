/*
 * test_btree_wal.c — B-tree operations on a store with a write-ahead log:
 * every acknowledged operation survives a crash and nothing half-done does.
 *
 *   clean_reopen     SYNC store: splits and merges, clean close, reopen: no
 *                    recovery, contents equal the model
 *   sigkill          a forked child does random upserts/removes (SYNC) on a
 *                    store with a tiny pool (eviction writes pages at any
 *                    time) and is killed with SIGKILL at a random instant;
 *                    reopening recovers: every acknowledged operation is
 *                    there, the one in flight is whole or absent, the tree
 *                    checker is clean; three rounds, each child recovering
 *                    the previous round's crash itself first
 *   powerloss        the same in-process with the simulated power loss of
 *                    src/os (writes no fsync covered are gone)
 *   torn_page        the power fails while pages are being written: half of
 *                    each page write reaches the file (torn pages);
 *                    recovery rebuilds them from their full images
 *   crash_after_recovery  the power fails again in the session that
 *                    recovery kept its log for, before any checkpoint:
 *                    both sessions' operations survive
 *   log_io_error     an injected fdatasync failure of the log: the operation
 *                    fails, later ones fail, close fails; reopening recovers
 *                    a consistent tree with every operation acknowledged
 *                    before the failure
 *   async            ASYNC store: operations return before the log is
 *                    durable; after a power loss the tree is valid
 *   checkpoint_truncates  a checkpoint (ruma_bm_flush) gives the log's blocks
 *                    back; recovery after a later power loss reads only the
 *                    records after it
 *   log_missing      after a crash, a missing, empty, header-only or cut log
 *                    is refused (RUMA_ECORRUPT, the log named, not created)
 *                    and the store recovers fully once its log is back
 *   log_renamed      a store opened under another name (hard link) needs
 *                    its log under that name: refused with the id named,
 *                    recovered once the log is linked alongside
 *   log_foreign      another store's log in place of the store's own is
 *                    refused ("belongs to another store")
 *   log_damaged      a damaged record followed by valid ones is refused;
 *                    with salvage_log the prefix is replayed and the
 *                    discarded records counted
 *   log_cut_at_record the log file cut exactly at a record's end after page
 *                    0's next LSN (commits lost) is refused; salvage_log
 *                    replays what is left
 *   durable_keeps_log a durable store opened with durability OFF runs with
 *                    its log, so a crash of that session is recovered
 */
#include "wal_util.h"

#include <ruma/btree.h>
#include "bm/bm_ext.h"

#include "os/os.h"

#include <ruma/wal.h>

#include <sys/stat.h>


#define KEYS 3000u
#define PS RUMA_BM_PAGE_SIZE


/* One operation: ver 0 removes key k, else upserts version ver. */
static int do_op(ruma_btree *t, uint32_t k, uint32_t ver)
{
	uint8_t key[4], val[256];
	key_of(k, key);
	if (!ver) {
		int r = ruma_btree_remove(t, key, 4);
		return r == RUMA_ENOTFOUND ? 0 : r;
	}
	return ruma_btree_upsert(t, key, 4, val, val_of(k, ver, val), NULL);
}

/* Does the tree hold exactly model (versions, 0 = absent), except that key
 * `loose` may also hold version `alt`?  *saw gets what loose holds. */
static int tree_matches(ruma_btree *t, const uint32_t *model, uint32_t loose, uint32_t alt,
			uint32_t *saw)
{
	uint8_t key[4], want[256], got[256];
	for (uint32_t k = 0; k < KEYS; k++) {
		size_t vlen = 0;
		key_of(k, key);
		int r = ruma_btree_lookup(t, key, 4, got, sizeof(got), &vlen);
		uint32_t ver = model[k];
		bool ok = false;
		for (int pass = 0; pass < 2 && !ok; pass++) {
			uint32_t v = pass ? (k == loose ? alt : ver) : ver;
			if (v == 0)
				ok = r == RUMA_ENOTFOUND;
			else
				ok = r == 0 && vlen == val_of(k, v, want) && !memcmp(got, want, vlen);
			if (ok && k == loose && saw)
				*saw = v;
		}
		if (!ok) {
			printf("  key %u: lookup %d (len %zu, holds version %u), model version %u%s\n",
			       k, r, vlen, r == 0 && vlen ? (uint32_t)(uint8_t)(got[0] - k) : 0u, ver,
			       k == loose ? " (the key in flight)" : "");
			return TEST_FAIL;
		}
	}
	return TEST_PASS;
}

static int check_tree(ruma_btree *t)
{
	return ruma_btree_check(t, stdout) == 0 ? TEST_PASS : TEST_FAIL;
}

static int create_tree(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	unlink(logpath);
	int r = open_store(true, RUMA_BM_DURABLE_SYNC, &bm);
	if (r)
		return r;
	r = ruma_btree_create(bm, "t", &t);
	ruma_btree_release(t);
	int r2 = ruma_bm_close(bm);
	return r ? r : r2;
}

/* A fresh tree (create_tree) with model cleared, opened with durability d
 * (with the power-loss simulation armed when armed).  0 or the first error. */
static int open_fresh(ruma_bm_durability d, bool armed, uint32_t *model, ruma_bm **bm,
		      ruma_btree **t)
{
	memset(model, 0, KEYS * sizeof(*model));
	int rc = create_tree();
	if (rc == 0 && armed)
		rc = ruma_os_powerloss_arm();
	return rc ? rc : open_tree(d, bm, t, NULL);
}

static int t_clean_reopen(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	ruma_bm_recovery rec;
	CHECK_OK(open_fresh(RUMA_BM_DURABLE_SYNC, false, model, &bm, &t));
	for (uint32_t i = 0; i < 1500; i++) {
		uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
		CHECK_OK(do_op(t, k, i + 1));
		model[k] = i + 1;
	}
	for (uint32_t k = 0; k < KEYS; k++)
		if (k % 8) { /* empty most leaves: merges */
			CHECK_OK(do_op(t, k, 0));
			model[k] = 0;
		}
	ruma_btree_stats st;
	CHECK_OK(ruma_btree_get_stats(t, &st));
	CHECK(st.leaf_splits > 0 && st.leaf_merges > 0);
	CHECK_OK(close_tree(bm, t));
	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, &rec));
	CHECK(!rec.ran);
	CHECK_EQ(tree_matches(t, model, UINT32_MAX, 0, NULL), TEST_PASS);
	CHECK_EQ(check_tree(t), TEST_PASS);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* ---- SIGKILL ---------------------------------------------------------------------- */

struct intent {
	uint32_t k, ver;
};
#define DONE 0x454e4f44u

static void child_run(uint64_t seed)
{
	struct child ch;
	child_open(&ch, seed);
	for (uint32_t i = 1;; i++) {
		struct intent in = { (uint32_t)ruma_rng_below(&ch.rng, KEYS), 0 };
		in.ver = ruma_rng_below(&ch.rng, 3) == 0 ? 0 : (uint32_t)(seed % 1000u) * 100000u + i;
		uint32_t done = DONE;
		if (write(ch.fd, &in, sizeof(in)) != sizeof(in) || do_op(ch.t, in.k, in.ver) ||
		    write(ch.fd, &done, sizeof(done)) != sizeof(done))
			_exit(4);
	}
}

/* Replay the side file into model; the operation in flight (intent without
 * DONE) goes to *loose / *alt. */
static int replay_side(uint32_t *model, uint32_t *loose, uint32_t *alt)
{
	int fd = open(side, O_RDONLY);
	struct intent in;
	uint32_t done;
	*loose = UINT32_MAX;
	if (fd < 0)
		return -1;
	while (read(fd, &in, sizeof(in)) == sizeof(in)) {
		if (in.k >= KEYS) {
			close(fd);
			return -1;
		}
		if (read(fd, &done, sizeof(done)) != sizeof(done)) {
			*loose = in.k;
			*alt = in.ver;
			break;
		}
		model[in.k] = in.ver;
	}
	close(fd);
	return 0;
}

static int t_sigkill(void)
{
	static uint32_t model[KEYS];
	memset(model, 0, sizeof(model));
	CHECK_OK(create_tree());
	unlink(side);
	uint64_t redone = 0;
	for (int round = 0; round < 3; round++) {
		CHECK(run_and_kill(child_run, test_seed + (uint64_t)round));

		uint32_t loose, alt = 0, saw = 0;
		CHECK_OK(replay_side(model, &loose, &alt));
		ruma_bm *bm;
		ruma_btree *t;
		ruma_bm_recovery rec;
		CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, &rec));
		CHECK(rec.ran);
		redone += rec.pages_redone + rec.full_images;
		CHECK_EQ(tree_matches(t, model, loose, alt, &saw), TEST_PASS);
		CHECK_EQ(check_tree(t), TEST_PASS);
		if (loose != UINT32_MAX)
			model[loose] = saw;
		CHECK_OK(close_tree(bm, t));
		/* the next child starts from this state: forget the side file */
		unlink(side);
	}
	CHECK(redone > 0);
	return TEST_PASS;
}

/* ---- power loss ------------------------------------------------------------------------ */

/* Run n random operations (SYNC or ASYNC) on a fresh tree, then lose power. */
static int ops_then_powerloss(ruma_bm_durability d, uint32_t *model, unsigned n, uint64_t *torn)
{
	ruma_bm *bm;
	ruma_btree *t;
	CHECK_OK(open_fresh(d, true, model, &bm, &t));
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
		uint32_t ver = ruma_rng_below(&test_rng, 3) == 0 ? 0 : i;
		CHECK_OK(do_op(t, k, ver));
		model[k] = ver;
		if (i == n / 2)
			CHECK_OK(ruma_bm_flush(bm)); /* a checkpoint in the middle */
	}
	CHECK_OK(ruma_os_powerloss_torn(torn));
	ruma_btree_release(t);
	(void)ruma_bm_close(bm); /* nothing of it reaches the files */
	ruma_os_powerloss_disarm();
	return TEST_PASS;
}

static int reopen_and_match(const uint32_t *model, ruma_bm_recovery *rec)
{
	ruma_bm *bm;
	ruma_btree *t;
	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, rec));
	CHECK(rec->ran);
	CHECK_EQ(check_tree(t), TEST_PASS);
	if (model)
		CHECK_EQ(tree_matches(t, model, UINT32_MAX, 0, NULL), TEST_PASS);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

/* 1500 operations with durability d, a power loss, then the recovered tree
 * checked (and matched against the model when match). */
static int powerloss_case(ruma_bm_durability d, bool match, ruma_bm_recovery *rec)
{
	static uint32_t model[KEYS];
	CHECK_EQ(ops_then_powerloss(d, model, 1500, NULL), TEST_PASS);
	CHECK_EQ(reopen_and_match(match ? model : NULL, rec), TEST_PASS);
	return TEST_PASS;
}

static int t_powerloss(void)
{
	ruma_bm_recovery rec;
	CHECK_EQ(powerloss_case(RUMA_BM_DURABLE_SYNC, true, &rec), TEST_PASS);
	printf("  recovery: %llu records, %llu redone, %llu full images\n",
	       (unsigned long long)rec.records, (unsigned long long)rec.pages_redone,
	       (unsigned long long)rec.full_images);
	CHECK(rec.pages_redone + rec.full_images > 0);
	return TEST_PASS;
}

static int t_torn_page(void)
{
	static uint32_t model[KEYS];
	ruma_bm_recovery rec;
	uint64_t torn = 0;
	/* the power fails while pages written after the checkpoint are on
	 * their way: half of each such page reaches the file */
	CHECK_EQ(ops_then_powerloss(RUMA_BM_DURABLE_SYNC, model, 5000, &torn), TEST_PASS);
	printf("  %llu page writes torn\n", (unsigned long long)torn);
	CHECK(torn > 0);
	CHECK_EQ(reopen_and_match(model, &rec), TEST_PASS);
	CHECK(rec.full_images > 0);
	return TEST_PASS;
}

/* Recovery keeps the log when the store goes on with one: the pages it
 * redid stay dirty in the pool and the log is not emptied.  The power fails
 * again in that session, before any checkpoint, with torn page writes:
 * the next recovery redoes both sessions from the first one's checkpoint
 * and every acknowledged operation of both is there. */
static int t_crash_after_recovery(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	ruma_bm_recovery first, second;
	uint64_t torn = 0;
	CHECK_EQ(ops_then_powerloss(RUMA_BM_DURABLE_SYNC, model, 1500, NULL), TEST_PASS);
	CHECK_OK(ruma_os_powerloss_arm());
	CHECK_OK(open_tree(RUMA_BM_DURABLE_SYNC, &bm, &t, &first));
	CHECK(first.ran);
	CHECK_EQ(tree_matches(t, model, UINT32_MAX, 0, NULL), TEST_PASS);
	for (uint32_t i = 1; i <= 3000; i++) {
		uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
		uint32_t ver = ruma_rng_below(&test_rng, 3) == 0 ? 0 : 1000000u + i;
		CHECK_OK(do_op(t, k, ver));
		model[k] = ver;
	}
	CHECK_OK(ruma_os_powerloss_torn(&torn));
	ruma_btree_release(t);
	(void)ruma_bm_close(bm); /* nothing of it reaches the files */
	ruma_os_powerloss_disarm();
	printf("  second session: %llu page writes torn\n", (unsigned long long)torn);
	CHECK_EQ(reopen_and_match(model, &second), TEST_PASS);
	printf("  recoveries: %llu then %llu records\n", (unsigned long long)first.records,
	       (unsigned long long)second.records);
	CHECK(second.records > first.records); /* from the first checkpoint on */
	return TEST_PASS;
}

static int t_log_io_error(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	CHECK_OK(open_fresh(RUMA_BM_DURABLE_SYNC, false, model, &bm, &t));
	uint32_t i;
	for (i = 1; i <= 300; i++) {
		uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
		CHECK_OK(do_op(t, k, i));
		model[k] = i;
	}
	ruma_os_inject(RUMA_SYS_FDATASYNC, 1, EIO, false);
	uint32_t k = KEYS - 1;
	CHECK_EQ(do_op(t, k, i), -EIO);
	ruma_os_inject_clear();
	CHECK(do_op(t, 0, i + 1) != 0); /* the log is dead */
	ruma_btree_release(t);
	CHECK(ruma_bm_close(bm) != 0);
	ruma_bm_recovery rec;
	CHECK_OK(open_tree(RUMA_BM_DURABLE_OFF, &bm, &t, &rec));
	CHECK(rec.ran);
	CHECK_EQ(check_tree(t), TEST_PASS);
	/* the failed operations may or may not have reached the log's file */
	uint32_t saw;
	static uint32_t m2[KEYS];
	memcpy(m2, model, sizeof(m2));
	CHECK_EQ(tree_matches(t, m2, k, i, &saw), TEST_PASS);
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

static int crash_with_commits(uint32_t *model, unsigned n);

/* A log that cannot be opened (its header overwritten) makes opening a
 * store that needs it fail with the reason, not crash; a store closed
 * cleanly does not need its log: it opens with its tree intact (the log
 * emptied for it); a store created anew over a broken log opens. */
static int t_log_unreadable(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	static uint32_t model[KEYS];
	static const char junk[64] = "not a log header, not a log header, not a log header";
	CHECK_EQ(crash_with_commits(model, 50), TEST_PASS);
	int fd = open(logpath, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk));
	close(fd);
	CHECK_EQ(open_store(false, RUMA_BM_DURABLE_SYNC, &bm), RUMA_ECORRUPT);
	CHECK_OK(create_tree());
	fd = open(logpath, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk));
	close(fd);
	CHECK_OK(open_tree(RUMA_BM_DURABLE_SYNC, &bm, &t, NULL));
	CHECK_EQ(check_tree(t), TEST_PASS);
	CHECK_OK(close_tree(bm, t));
	/* a store created anew ignores whatever an old log file holds */
	fd = open(logpath, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk));
	close(fd);
	CHECK_OK(open_store(true, RUMA_BM_DURABLE_SYNC, &bm));
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

static int t_async(void)
{
	ruma_bm_recovery rec;
	return powerloss_case(RUMA_BM_DURABLE_ASYNC, false, &rec);
}

/* A checkpoint gives the log's blocks back, and recovery after a later
 * crash reads only what follows it. */
static int t_checkpoint_truncates(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	struct stat st;
	CHECK_OK(open_fresh(RUMA_BM_DURABLE_SYNC, true, model, &bm, &t));
	for (uint32_t i = 1; i <= 1000; i++) {
		uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
		CHECK_OK(do_op(t, k, i));
		model[k] = i;
	}
	CHECK(stat(logpath, &st) == 0);
	blkcnt_t before = st.st_blocks;
	CHECK_OK(ruma_bm_flush(bm));
	CHECK(stat(logpath, &st) == 0);
	printf("  log: %lld blocks before the checkpoint, %lld after\n", (long long)before,
	       (long long)st.st_blocks);
	CHECK(st.st_blocks < before);
	for (uint32_t i = 1001; i <= 1100; i++) {
		uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
		CHECK_OK(do_op(t, k, i));
		model[k] = i;
	}
	CHECK_OK(power_off(bm, t));
	ruma_bm_recovery rec;
	CHECK_EQ(reopen_and_match(model, &rec), TEST_PASS);
	CHECK(rec.records > 0 && rec.records < 300); /* ~100 operations, not 1100 */
	return TEST_PASS;
}

/* n random operations (SYNC) on a fresh tree without a checkpoint, then a
 * power loss: every commit since the session's start is in the log only.
 * What they left goes to model (when not NULL). */
static int crash_with_commits(uint32_t *model, unsigned n)
{
	static uint32_t unused[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	if (!model)
		model = unused;
	CHECK_OK(open_fresh(RUMA_BM_DURABLE_SYNC, true, model, &bm, &t));
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t k = (uint32_t)ruma_rng_below(&test_rng, KEYS);
		CHECK_OK(do_op(t, k, i));
		model[k] = i;
	}
	CHECK_OK(power_off(bm, t));
	return TEST_PASS;
}

static char said[4096]; /* the messages of the last open, one per line */

static void keep_line(void *ctx, const char *line)
{
	(void)ctx;
	size_t n = strlen(said);
	snprintf(said + n, sizeof(said) - n, "%s\n", line);
	quiet(NULL, line);
}

/* Open the store at p (durability OFF) keeping the last message in said. */
static int open_at(const char *p, bool salvage, ruma_bm **bm)
{
	ruma_bm_config c;
	store_config(&c, p);
	c.salvage_log = salvage;
	c.message = keep_line;
	said[0] = 0;
	return ruma_bm_open(&c, bm);
}

static int copy_file(const char *from, const char *to)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	return system(cmd) == 0 ? 0 : -1;
}

/* Damage the log (saved aside first) in one way, check the refusal, put it back. */
static int refused_then_restored(const char *how, off_t size)
{
	ruma_bm *bm;
	char saved[200];
	snprintf(saved, sizeof(saved), "%s/saved.wal", dir);
	CHECK_OK(copy_file(logpath, saved));
	if (size < 0)
		CHECK_OK(unlink(logpath));
	else
		CHECK_OK(truncate(logpath, size));
	CHECK_EQ(open_at(path, false, &bm), RUMA_ECORRUPT);
	printf("  %s: %s", how, said);
	CHECK(strstr(said, logpath));
	CHECK(!strstr(said, "--")); /* library fields, not command-line flags */
	if (size < 0)
		CHECK(access(logpath, F_OK) != 0); /* not created */
	CHECK_OK(rename(saved, logpath));
	return TEST_PASS;
}

static int t_log_missing(void)
{
	static uint32_t model[KEYS];
	ruma_bm_recovery rec;
	CHECK_EQ(crash_with_commits(model, 300), TEST_PASS);
	CHECK_EQ(refused_then_restored("missing", -1), TEST_PASS);
	CHECK_EQ(refused_then_restored("empty", 0), TEST_PASS);
	CHECK_EQ(refused_then_restored("header only", 4096), TEST_PASS);
	CHECK_EQ(refused_then_restored("cut in its first record", 4096 + 20), TEST_PASS);
	CHECK_EQ(reopen_and_match(model, &rec), TEST_PASS);
	return TEST_PASS;
}

static int t_log_renamed(void)
{
	static uint32_t model[KEYS];
	ruma_bm_recovery rec;
	char other[200], otherlog[220];
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(otherlog, sizeof(otherlog), "%s.wal", other);
	CHECK_EQ(crash_with_commits(model, 300), TEST_PASS);
	CHECK_OK(link(path, other));
	ruma_bm *bm;
	CHECK_EQ(open_at(other, false, &bm), RUMA_ECORRUPT);
	printf("  %s", said);
	CHECK(strstr(said, otherlog) && strstr(said, "store id") && strstr(said, "renamed"));
	CHECK(access(otherlog, F_OK) != 0);
	CHECK_OK(link(logpath, otherlog));
	CHECK_OK(unlink(logpath));
	CHECK_OK(unlink(path));
	CHECK_OK(open_at(other, false, &bm));
	ruma_btree *t;
	CHECK_OK(ruma_btree_open(bm, "t", &t));
	CHECK_EQ(tree_matches(t, model, UINT32_MAX, 0, NULL), TEST_PASS);
	CHECK_OK(close_tree(bm, t));
	CHECK_OK(rename(other, path));
	CHECK_OK(rename(otherlog, logpath));
	(void)rec;
	return TEST_PASS;
}

static int t_log_foreign(void)
{
	static uint32_t model[KEYS];
	char saved[200];
	snprintf(saved, sizeof(saved), "%s/foreign.wal", dir);
	CHECK_EQ(crash_with_commits(model, 100), TEST_PASS);
	CHECK_OK(copy_file(logpath, saved)); /* the log of a store that is then recreated */
	CHECK_EQ(crash_with_commits(model, 100), TEST_PASS);
	CHECK_OK(rename(saved, logpath));
	ruma_bm *bm;
	CHECK_EQ(open_at(path, false, &bm), RUMA_ECORRUPT);
	printf("  %s", said);
	CHECK(strstr(said, "belongs to another store") || strstr(said, "another store"));
	return TEST_PASS;
}

static int flip_log_byte(off_t off)
{
	int fd = open(logpath, O_RDWR);
	unsigned char b;
	int r = -1;
	if (fd >= 0 && pread(fd, &b, 1, off) == 1) {
		b ^= 0x40;
		r = pwrite(fd, &b, 1, off) == 1 ? 0 : -1;
	}
	if (fd >= 0)
		close(fd);
	return r;
}

/* Opening the store over its damaged log is refused (RUMA_ECORRUPT) with a
 * message (printed) that names want and also (when not NULL) and not
 * unwanted (when not NULL); then an open that salvages it succeeds. */
static int refused_then_salvaged(const char *want, const char *also, const char *unwanted,
				 ruma_bm **bm)
{
	CHECK_EQ(open_at(path, false, bm), RUMA_ECORRUPT);
	printf("  %s", said);
	CHECK(strstr(said, want) && (!also || strstr(said, also)) &&
	      (!unwanted || !strstr(said, unwanted)));
	CHECK_OK(open_at(path, true, bm)); /* accept the loss */
	return TEST_PASS;
}

static int t_log_damaged(void)
{
	ruma_bm *bm;
	ruma_bm_recovery rec;
	CHECK_EQ(crash_with_commits(NULL, 300), TEST_PASS);
	CHECK_OK(flip_log_byte(4096 + 30)); /* inside the first record (START) */
	CHECK_EQ(refused_then_salvaged("salvage", NULL, "--", &bm), TEST_PASS);
	ruma_bm_get_recovery(bm, &rec);
	printf("  salvage: %llu records (%llu bytes) discarded\n",
	       (unsigned long long)rec.discarded_records, (unsigned long long)rec.discarded_bytes);
	CHECK(rec.discarded_records > 0 && rec.discarded_bytes > 0);
	CHECK_OK(ruma_bm_close(bm));
	return TEST_PASS;
}

/* The file offset of the end of the log's 10th record from its end. */
static int tenth_last_end(off_t *off)
{
	ruma_wal *w;
	ruma_wal_iter *it;
	ruma_wal_record rec;
	uint64_t ends[10] = { 0 }, base = 0, n = 0;
	ruma_wal_config c = { .path = logpath, .message = quiet, .replay = true };
	CHECK_OK(ruma_wal_open(&c, &w));
	CHECK_OK(ruma_wal_iter_open(w, &it));
	while (ruma_wal_iter_next(it, &rec) == 1)
		ends[n++ % 10] = rec.end;
	ruma_wal_iter_close(it);
	CHECK_OK(ruma_wal_close(w));
	CHECK(n > 10);
	int fd = open(logpath, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(pread(fd, &base, sizeof(base), 16) == (ssize_t)sizeof(base)); /* header: base */
	close(fd);
	*off = (off_t)(4096 + (ends[n % 10] - base));
	return TEST_PASS;
}

static int t_log_cut_at_record(void)
{
	ruma_bm *bm;
	off_t cut;
	CHECK_EQ(crash_with_commits(NULL, 300), TEST_PASS);
	CHECK_EQ(tenth_last_end(&cut), TEST_PASS);
	CHECK_OK(truncate(logpath, cut));
	CHECK_EQ(refused_then_salvaged("was cut", "salvage", NULL, &bm), TEST_PASS);
	ruma_btree *t;
	CHECK_OK(ruma_btree_open(bm, "t", &t));
	CHECK_OK(ruma_btree_check(t, stdout));
	CHECK_OK(close_tree(bm, t));
	return TEST_PASS;
}

static int t_durable_keeps_log(void)
{
	static uint32_t model[KEYS];
	ruma_bm *bm;
	ruma_btree *t;
	ruma_bm_recovery rec;
	CHECK_OK(open_fresh(RUMA_BM_DURABLE_OFF, true, model, &bm, &t));
	CHECK(ruma_bm_logging(bm));
	for (uint32_t i = 1; i <= 200; i++) {
		CHECK_OK(do_op(t, i, i));
		model[i] = i;
	}
	CHECK_OK(power_off(bm, t));
	CHECK_EQ(reopen_and_match(model, &rec), TEST_PASS);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "clean_reopen", t_clean_reopen },
	{ "sigkill", t_sigkill },
	{ "powerloss", t_powerloss },
	{ "torn_page", t_torn_page },
	{ "crash_after_recovery", t_crash_after_recovery },
	{ "log_io_error", t_log_io_error },
	{ "log_unreadable", t_log_unreadable },
	{ "async", t_async },
	{ "checkpoint_truncates", t_checkpoint_truncates },
	{ "log_missing", t_log_missing },
	{ "log_renamed", t_log_renamed },
	{ "log_foreign", t_log_foreign },
	{ "log_damaged", t_log_damaged },
	{ "log_cut_at_record", t_log_cut_at_record },
	{ "durable_keeps_log", t_durable_keeps_log },
};

int main(int argc, char **argv)
{
	return test_main_fixture("btree", cases, TEST_N(cases), argc, argv, &wal_fixture);
}
