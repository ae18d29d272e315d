/*
 * test_btree_crafted.c — B-tree pages crafted the way an attacker would:
 * a node changed in the store file and its trailer checksum recomputed,
 * so the damage passes the CRC (fuzz/store_craft.h).  Every operation
 * that reaches such a page must return RUMA_ECORRUPT naming the page —
 * never an out-of-bounds copy, a hang, a wrong key or "not found":
 *   - a leaf whose prefix_len does not match its fences;
 *   - a leaf holding a key shorter than its prefix;
 *   - data_offset pointing into the fence area, then an insert;
 *   - a leaf that is consistent on its own but reaches beyond its parent's
 *     separator, so that its split would put a duplicate separator into
 *     the parent;
 *   - a leaf with two slots out of key order: lookup, remove, scans, and a
 *     TPC-C Delivery-style loop that retries on "not found" must end.
 * The "resident" cases do the same damage in memory, to a page read into
 * the pool before the tree was opened (as recovery does, before the tree
 * can install its check of pages read from the file): the split, merge
 * and compaction paths must validate such a page and refuse it.
 * Each case runs in a forked child with alarm(): a crash or a hang fails
 * the case instead of the suite.
 */
#include "test.h"

#include "../fuzz/store_craft.h"

#define HANG_SECONDS 20u
#define DELIVERY_TRIES 1000u

static craft_store cs;
static char dir[64];
static unsigned victim; /* index of the damaged leaf in cs.leaf */

static int setup(void)
{
	if (cs.image)
		return craft_restore(&cs);
	strcpy(dir, "/tmp/ruma-btcrafted-XXXXXX");
	if (!mkdtemp(dir))
		return -errno;
	char path[96];
	snprintf(path, sizeof path, "%s/store", dir);
	int rc = craft_build(&cs, path);
	victim = cs.nleaf / 2;
	return rc ? rc : cs.nleaf >= 4 ? 0 : -EINVAL;
}

/* ---- the damage --------------------------------------------------------------------------- */

typedef void (*damage_fn)(node *n);

/* prefix_len one byte longer than the fences share (still within both). */
static void bad_prefix(node *n)
{
	n->prefix_len++;
}

/* The first key's stored suffix emptied: its full key is the prefix
 * alone, shorter than any key the fences allow (accounting kept exact). */
static void short_key(node *n)
{
	n->space_used = (uint16_t)(n->space_used - n->slot[0].klen);
	n->slot[0].klen = 0;
	n->slot[0].head = 0;
}

/* data_offset inside the lower fence. */
static void offset_in_fences(node *n)
{
	n->data_offset = (uint16_t)(n->lower_off + 1u);
}

/* Two slots exchanged: keys out of order (heads, accounting intact). */
static void swap_slots(node *n)
{
	node_slot a = n->slot[1];
	n->slot[1] = n->slot[n->count - 2u];
	n->slot[n->count - 2u] = a;
}

/* Damage the victim leaf in the file (CRC recomputed). */
static int damage_file(damage_fn fn)
{
	_Alignas(8) uint8_t page[CRAFT_PS];
	int rc = craft_page_read(&cs, cs.leaf[victim], page);
	if (rc)
		return rc;
	fn((node *)page);
	return craft_page_write(&cs, cs.leaf[victim], page);
}

/* Damage the victim leaf in memory (read without the tree's check). */
static int damage_resident(ruma_bm *bm, damage_fn fn)
{
	void *page;
	int rc = ruma_bm_fix_x(bm, cs.leaf[victim], &page);
	if (rc)
		return rc;
	fn(page);
	ruma_bm_unfix_x(bm, cs.leaf[victim]);
	return 0;
}

/* ---- what must hold ----------------------------------------------------------------------- */

/* The keys of the victim leaf, as built: multiples of 10 in [first, last]. */
static void victim_range(unsigned *first, unsigned *last)
{
	_Alignas(8) uint8_t page[CRAFT_PS];
	uint8_t k[NODE_KEYBUF];
	bool bad = false;
	const node *n = (const node *)page;
	*first = *last = 0;
	if (craft_page_read(&cs, cs.leaf[victim], page))
		return;
	unsigned len = node_full_key(n, 0, k, &bad);
	k[len] = 0;
	*first = (unsigned)strtoul((char *)k + 4, NULL, 10);
	len = node_full_key(n, n->count - 1u, k, &bad);
	k[len] = 0;
	*last = (unsigned)strtoul((char *)k + 4, NULL, 10);
}

static bool names_victim(ruma_btree *t)
{
	ruma_pid pid = 0;
	return ruma_btree_last_corruption(t, &pid) != NULL && pid == cs.leaf[victim];
}

/* Insert keys between the victim's keys until one fails: it must be
 * RUMA_ECORRUPT naming the victim (a split or compaction refused it) — by
 * then the leaf has overflowed many times over. */
static int inserts_refused(ruma_btree *t)
{
	unsigned first, last;
	victim_range(&first, &last);
	uint8_t k[16], v[CRAFT_VLEN] = { 0 };
	int rc = 0;
	for (unsigned i = first + 1; i < last && rc == 0; i++)
		if (i % 10)
			rc = ruma_btree_insert(t, k, craft_key(i, k), v, sizeof v);
	CHECK_EQ(rc, RUMA_ECORRUPT);
	CHECK(names_victim(t));
	return TEST_PASS;
}

/* Lookups, removes and scans of the victim's keys: RUMA_ECORRUPT. */
static int reads_refused(ruma_btree *t)
{
	unsigned first, last;
	victim_range(&first, &last);
	uint8_t k[16], v[CRAFT_VLEN];
	size_t klen = craft_key(last - 10, k), vlen = 0;
	CHECK_EQ(ruma_btree_lookup(t, k, klen, v, sizeof v, &vlen), RUMA_ECORRUPT);
	CHECK(names_victim(t));
	CHECK_EQ(ruma_btree_remove(t, k, klen), RUMA_ECORRUPT);
	return TEST_PASS;
}

/* A scan from key must return that key first or fail with RUMA_ECORRUPT. */
struct first_key {
	uint8_t key[NODE_KEYBUF];
	size_t len;
	bool seen;
};

static bool take_first(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	struct first_key *f = ctx;
	(void)val;
	(void)vlen;
	memcpy(f->key, key, klen);
	f->len = klen;
	f->seen = true;
	return false;
}

static int scan_starts_at(ruma_btree *t, const uint8_t *k, size_t klen, bool desc)
{
	struct first_key f = { .seen = false };
	int rc = desc ? ruma_btree_scan_desc(t, k, klen, take_first, &f)
		      : ruma_btree_scan_asc(t, k, klen, take_first, &f);
	if (rc == 0) {
		CHECK(f.seen);
		CHECK(f.len == klen && memcmp(f.key, k, klen) == 0);
		return TEST_PASS;
	}
	CHECK_EQ(rc, RUMA_ECORRUPT);
	return TEST_PASS;
}

/* TPC-C Delivery treats "not found" as "another delivery took it" and
 * tries the next candidate again: on a damaged leaf that must end. */
static int delivery_ends(ruma_btree *t, const uint8_t *k, size_t klen)
{
	int rc = RUMA_ENOTFOUND;
	for (unsigned tries = 0; rc == RUMA_ENOTFOUND && tries < DELIVERY_TRIES; tries++) {
		uint8_t v[CRAFT_VLEN];
		size_t vlen;
		rc = ruma_btree_lookup(t, k, klen, v, sizeof v, &vlen);
		if (rc == 0)
			rc = ruma_btree_remove(t, k, klen);
	}
	CHECK_EQ(rc, RUMA_ECORRUPT);
	return TEST_PASS;
}

/* ---- the cases ---------------------------------------------------------------------------- */

static int file_case(damage_fn fn, bool reads)
{
	ruma_bm *bm;
	ruma_btree *t;
	CHECK_EQ(damage_file(fn), 0);
	CHECK_EQ(craft_open(&cs, &bm, &t), 0);
	if (reads && reads_refused(t) != TEST_PASS)
		return TEST_FAIL;
	CHECK(inserts_refused(t) == TEST_PASS);
	char name[32];
	snprintf(name, sizeof name, "page %" PRIu64 ":", (uint64_t)cs.leaf[victim]);
	CHECK(strstr(cs.last_message, name) != NULL);
	_exit(0); /* the store is left as it is */
}

static int resident_case(damage_fn fn)
{
	ruma_bm *bm;
	ruma_btree *t;
	CHECK_EQ(craft_open_bm(&cs, &bm), 0);
	CHECK_EQ(damage_resident(bm, fn), 0);
	CHECK_EQ(ruma_btree_open(bm, "t", &t), 0);
	CHECK(inserts_refused(t) == TEST_PASS);
	_exit(0);
}

static int c_prefix(void) { return file_case(bad_prefix, true); }
static int c_short_key(void) { return file_case(short_key, true); }
static int c_offset(void) { return file_case(offset_in_fences, true); }
static int c_prefix_resident(void) { return resident_case(bad_prefix); }
static int c_short_key_resident(void) { return resident_case(short_key); }
static int c_offset_resident(void) { return resident_case(offset_in_fences); }
static int c_order_resident(void) { return resident_case(swap_slots); }

static int c_order(void)
{
	ruma_bm *bm;
	ruma_btree *t;
	_Alignas(8) uint8_t page[CRAFT_PS];
	uint8_t k[NODE_KEYBUF];
	bool bad = false;
	CHECK_EQ(craft_page_read(&cs, cs.leaf[victim], page), 0);
	const node *n = (const node *)page;
	size_t klen = node_full_key(n, n->count - 2u, k, &bad); /* moves to slot 1 */
	CHECK_EQ(damage_file(swap_slots), 0);
	CHECK_EQ(craft_open(&cs, &bm, &t), 0);
	CHECK(scan_starts_at(t, k, klen, false) == TEST_PASS);
	CHECK(scan_starts_at(t, k, klen, true) == TEST_PASS);
	CHECK(delivery_ends(t, k, klen) == TEST_PASS);
	CHECK(reads_refused(t) == TEST_PASS);
	CHECK(names_victim(t));
	_exit(0);
}

/*
 * The victim replaced by a leaf that is consistent on its own: lower fence
 * the victim's, upper fence the next leaf's, and three near-maximal
 * entries: a key k1 inside the victim's range, the parent's separator s
 * above the victim, and s + "\0".  An insert of another key of the
 * victim's range does not fit, and the split's separator between s and
 * s + "\0" is s itself — already in the parent.
 */
static int c_duplicate_separator(void)
{
	_Alignas(8) uint8_t orig[CRAFT_PS], next[CRAFT_PS], page[CRAFT_PS];
	const node *o = (const node *)orig, *nx = (const node *)next;
	node *n = (node *)page;
	CHECK_EQ(craft_page_read(&cs, cs.leaf[victim], orig), 0);
	CHECK_EQ(craft_page_read(&cs, cs.leaf[victim + 1], next), 0);
	unsigned slen = o->upper_len;
	uint8_t s[NODE_KEYBUF + 1], k1[16], v[1000];
	memcpy(s, node_upper_key(o), slen);
	memcpy(page, orig, CRAFT_PS); /* the trailer stays */
	node_init(n, 0, node_lower(o), o->lower_len,
		  node_upper_inf(nx) ? NULL : node_upper_key(nx), nx->upper_len);
	unsigned first, last;
	victim_range(&first, &last);
	size_t k1len = craft_key(first + 1, k1);
	memset(v, 'x', sizeof v);
	node_insert_at(n, 0, k1, k1len, v, sizeof v);
	node_insert_at(n, 1, s, slen, v, sizeof v);
	s[slen] = 0;
	node_insert_at(n, 2, s, slen + 1u, v, sizeof v);
	n->run = 0;
	CHECK(node_valid(n));
	CHECK_EQ(craft_page_write(&cs, cs.leaf[victim], page), 0);

	ruma_bm *bm;
	ruma_btree *t;
	CHECK_EQ(craft_open(&cs, &bm, &t), 0);
	uint8_t k[16];
	size_t klen = craft_key(first + 2, k);
	CHECK_EQ(ruma_btree_insert(t, k, klen, v, sizeof v), RUMA_ECORRUPT);
	CHECK(names_victim(t));
	_exit(0);
}

#define CASE(name, fn)                                          \
	static int t_##name(void)                               \
	{                                                       \
		CHECK_EQ(setup(), 0);                           \
		return test_in_child(fn, HANG_SECONDS);                            \
	}
CASE(prefix_mismatch, c_prefix)
CASE(key_shorter_than_prefix, c_short_key)
CASE(data_offset_in_fences, c_offset)
CASE(slots_out_of_order, c_order)
CASE(duplicate_separator, c_duplicate_separator)
CASE(prefix_mismatch_resident, c_prefix_resident)
CASE(key_shorter_than_prefix_resident, c_short_key_resident)
CASE(data_offset_in_fences_resident, c_offset_resident)
CASE(slots_out_of_order_resident, c_order_resident)

static int t_cleanup(void)
{
	if (cs.image) {
		unlink(cs.path);
		rmdir(dir);
		free(cs.image);
		cs.image = NULL;
	}
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "prefix_mismatch", t_prefix_mismatch },
	{ "key_shorter_than_prefix", t_key_shorter_than_prefix },
	{ "data_offset_in_fences", t_data_offset_in_fences },
	{ "slots_out_of_order", t_slots_out_of_order },
	{ "duplicate_separator", t_duplicate_separator },
	{ "prefix_mismatch_resident", t_prefix_mismatch_resident },
	{ "key_shorter_than_prefix_resident", t_key_shorter_than_prefix_resident },
	{ "data_offset_in_fences_resident", t_data_offset_in_fences_resident },
	{ "slots_out_of_order_resident", t_slots_out_of_order_resident },
	{ "cleanup", t_cleanup },
};

int main(int argc, char **argv)
{
	return test_main("btree_crafted", cases, TEST_N(cases), argc, argv);
}
