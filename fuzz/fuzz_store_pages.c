/*
 * fuzz_store_pages.c — libFuzzer harness: the B-tree on a store file whose
 * pages an attacker crafted, checksums recomputed so that the damage passes
 * the page trailer (fuzz/store_craft.h).
 *
 * Once per process a small store is built deterministically (400 keys in
 * one tree: a root at level 1 over a dozen and more leaves) and its file
 * image kept.  Each input restores that image, mutates tree pages, reseals
 * them and opens the store with a pool of CRAFT_FUZZ_POOL pages, so pages
 * are evicted and read back (synchronously and by the scans' read-ahead).
 *
 * Input: byte 0 = number of mutations (low 4 bits) and the mode (bit 4:
 * the tree pages are read into the pool before the tree is opened, so the
 * tree's check of pages read from the file never sees them and its
 * rewrites must validate them, as after recovery); then 6 bytes each:
 * page (0 = the root, i = leaf i - 1), kind, and four argument bytes.
 * Kinds, field by field and at random: set or add to a header field
 * (magic, level, flags, count, space_used, data_offset, prefix_len, the
 * fences' offsets and lengths, run, upper), set or add to a slot field
 * (head, off, klen, vlen), set a fence byte, set any byte, swap two slots,
 * set a hint head, copy another tree page over this one.  Then one byte
 * picks the leaf whose keys (and the gaps between them) the operations
 * use, key numbers base + 0..255.  The rest of the input is operations, 2
 * bytes each (at most MAX_OPS): lookup, insert, upsert, remove, update,
 * scans both ways (at most SCAN_LIMIT keys), the checker, and a bulk insert
 * of BULK keys (splits and compactions of the leaf).
 *
 * Checked: no crash, sanitizer report or hang (every operation is bounded;
 * libFuzzer's -timeout catches the rest); every result is one a store can
 * give (0, not found, exists, -ENOBUFS, RUMA_ECORRUPT), anything else
 * aborts.  An input without mutations must see no RUMA_ECORRUPT and a
 * passing check (the validation refuses no valid page).
 * Syscalls: the buffer manager's, and the file I/O of store_craft.h.
 */
#include "fuzz_model.h"
#include "store_craft.h"

#include <inttypes.h>
#include <stddef.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define H "fuzz_store_pages"
#define CRAFT_FUZZ_POOL 24u
#define MAX_OPS 64u
#define SCAN_LIMIT 64u
#define NPAGES (CRAFT_MAX_LEAVES + 1u)
#define BULK 24u

static craft_store cs;
static bool built;
static ruma_pid tree_page[NPAGES];
static unsigned ntree;
static unsigned leaf_first[CRAFT_MAX_LEAVES]; /* number of each leaf's first key, as built */

static void remove_store(void)
{
	unlink(cs.path);
}

/* The number in the first key of leaf pid as built ("key-%06u"). */
static unsigned first_key_number(ruma_pid pid)
{
	_Alignas(8) uint8_t page[CRAFT_PS];
	uint8_t k[NODE_KEYBUF + 1];
	bool bad = false;
	if (craft_page_read(&cs, pid, page) || ((node *)page)->count == 0)
		return 0;
	unsigned len = node_full_key((node *)page, 0, k, &bad);
	k[bad ? 0 : len] = 0;
	return len > 4 && !bad ? (unsigned)strtoul((char *)k + 4, NULL, 10) : 0;
}

static void build_once(void)
{
	if (built)
		return;
	char path[64];
	snprintf(path, sizeof path, "/tmp/ruma-fuzz-store.%d", (int)getpid());
	int rc = craft_build(&cs, path);
	if (rc) {
		fprintf(stderr, "%s: building the store failed: %s (%s)\n", H, ruma_strerror(rc),
			cs.last_message);
		abort();
	}
	atexit(remove_store);
	cs.pool_pages = CRAFT_FUZZ_POOL;
	tree_page[ntree++] = cs.root;
	for (unsigned i = 0; i < cs.nleaf; i++) {
		tree_page[ntree++] = cs.leaf[i];
		leaf_first[i] = first_key_number(cs.leaf[i]);
	}
	built = true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	build_once();
	return 0;
}

/* ---- mutations ----------------------------------------------------------------------- */

/* The header fields, by offset and width. */
static const struct { uint8_t off, width; } hdr_field[] = {
	{ offsetof(node, magic), 4 },       { offsetof(node, level), 1 },
	{ offsetof(node, flags), 1 },       { offsetof(node, count), 2 },
	{ offsetof(node, space_used), 2 },  { offsetof(node, data_offset), 2 },
	{ offsetof(node, prefix_len), 2 },  { offsetof(node, lower_off), 2 },
	{ offsetof(node, lower_len), 2 },   { offsetof(node, upper_off), 2 },
	{ offsetof(node, upper_len), 2 },   { offsetof(node, run), 2 },
	{ offsetof(node, upper), 8 },
};
#define NFIELDS (sizeof hdr_field / sizeof hdr_field[0])

/* The slot fields: head, off, klen, vlen. */
static const struct { uint8_t off, width; } slot_field[] = {
	{ offsetof(node_slot, head), 4 }, { offsetof(node_slot, off), 2 },
	{ offsetof(node_slot, klen), 2 }, { offsetof(node_slot, vlen), 2 },
};

/* Set (add: add to) the little-endian field of width bytes at p. */
static void field_change(uint8_t *p, unsigned width, uint64_t v, bool add)
{
	uint64_t x = 0;
	memcpy(&x, p, width);
	x = add ? x + v : v;
	memcpy(p, &x, width);
}

/* A slot index of n (one past the count included), clamped to the page. */
static unsigned slot_of(const node *n, uint8_t a)
{
	unsigned count = n->count < NODE_MAX_COUNT ? n->count : NODE_MAX_COUNT - 1u;
	return a % (count + 1u);
}

static void mutate(uint8_t *page, const uint8_t *pages, unsigned kind, const uint8_t a[4])
{
	node *n = (node *)page;
	uint64_t v16 = (uint64_t)a[2] | (uint64_t)a[3] << 8;
	int64_t delta = (int8_t)a[1];
	switch (kind % 10) {
	case 0:
	case 1: {
		unsigned f = a[0] % NFIELDS;
		field_change(page + hdr_field[f].off, hdr_field[f].width,
			     kind % 10 ? (uint64_t)delta : v16, kind % 10 != 0);
		break;
	}
	case 2:
	case 3: {
		unsigned f = a[1] % 4u;
		uint8_t *s = (uint8_t *)&n->slot[slot_of(n, a[0])];
		field_change(s + slot_field[f].off, slot_field[f].width,
			     kind % 10 == 3 ? (uint64_t)(int64_t)(int8_t)a[2] : v16, kind % 10 == 3);
		break;
	}
	case 4: { /* a fence byte */
		unsigned off = a[0] & 1 ? n->upper_off : n->lower_off;
		unsigned len = a[0] & 1 ? n->upper_len : n->lower_len;
		if (len && off < NODE_PAGE)
			page[(off + a[1] % len) % NODE_PAGE] = a[2];
		break;
	}
	case 5:
		page[(a[0] | (unsigned)a[1] << 8) % NODE_PAGE] = a[2];
		break;
	case 6: { /* swap two slots */
		node_slot x = n->slot[slot_of(n, a[0])];
		n->slot[slot_of(n, a[0])] = n->slot[slot_of(n, a[1])];
		n->slot[slot_of(n, a[1])] = x;
		break;
	}
	case 7:
		n->hint[a[0] % NODE_HINTS] = (uint32_t)v16 << (a[1] % 17u);
		break;
	case 8: /* another tree page's contents (its trailer stays this page's) */
		memcpy(page, pages + (size_t)(a[0] % ntree) * CRAFT_PS, NODE_PAGE);
		break;
	default: /* a run of random bytes */
		for (unsigned i = 0; i < 8u; i++)
			page[((a[0] | (unsigned)a[1] << 8) + i) % NODE_PAGE] ^= (uint8_t)(a[2] + i * a[3]);
		break;
	}
}

/* Apply m mutations from the input to the tree pages and write the
 * changed ones (resealed) to the file; returns how many pages changed. */
static unsigned craft_pages(fz_in *in, unsigned m)
{
	static _Alignas(8) uint8_t pages[NPAGES][CRAFT_PS];
	for (unsigned i = 0; i < ntree; i++)
		if (craft_page_read(&cs, tree_page[i], pages[i]))
			abort();
	unsigned changed = 0;
	for (unsigned i = 0; i < m; i++) {
		unsigned which = fz_u8(in) % ntree, kind = fz_u8(in);
		uint8_t a[4];
		fz_bytes(in, a, sizeof a);
		mutate(pages[which], &pages[0][0], kind, a);
	}
	for (unsigned i = 0; i < ntree; i++) {
		if (memcmp(pages[i], cs.image + tree_page[i] * CRAFT_PS, NODE_PAGE) == 0)
			continue;
		changed++;
		if (craft_page_write(&cs, tree_page[i], pages[i]))
			abort();
	}
	return changed;
}

/* ---- operations ---------------------------------------------------------------------- */

typedef struct run {
	ruma_btree *t;
	bool damaged; /* some page differs from the built store */
	unsigned seen;
	unsigned base; /* keys are base + 0..255: inside one leaf's range and its neighbours' */
} run;

static void expect(const run *r, int rc, const char *op)
{
	bool ok = rc == 0 || rc == RUMA_ENOTFOUND || rc == RUMA_EEXISTS || rc == -ENOBUFS ||
		  (rc == RUMA_ECORRUPT && r->damaged);
	if (!ok) {
		fprintf(stderr, "%s: %s returned %d (%s)%s; last message: %s\n", H, op, rc,
			ruma_strerror(rc), r->damaged ? "" : " on an undamaged store",
			cs.last_message);
		abort();
	}
}

static bool count_keys(const void *key, size_t klen, const void *val, size_t vlen, void *ctx)
{
	run *r = ctx;
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	return ++r->seen < SCAN_LIMIT;
}

static void bump(void *val, size_t vlen, void *ctx)
{
	(void)ctx;
	if (vlen)
		((uint8_t *)val)[0]++;
}

/* Insert BULK keys from key number i on (splits and compactions of the
 * leaf under them). */
static void bulk_insert(run *r, unsigned i, uint8_t arg)
{
	uint8_t k[16], v[CRAFT_VLEN];
	memset(v, arg, sizeof v);
	for (unsigned j = 0; j < BULK; j++) {
		int rc = ruma_btree_insert(r->t, k, craft_key(i + j, k), v, sizeof v);
		expect(r, rc, "bulk insert");
		if (rc == RUMA_ECORRUPT)
			return;
	}
}

static void one_op(run *r, uint8_t op, uint8_t arg)
{
	uint8_t k[16], v[CRAFT_VLEN];
	unsigned i = r->base + arg;
	size_t klen = craft_key(i, k), vlen = 0;
	memset(v, arg, sizeof v);
	if (op >= 0xf0) {
		bulk_insert(r, i, arg);
		return;
	}
	switch (op % 8u) {
	case 0:
		expect(r, ruma_btree_lookup(r->t, k, klen, v, sizeof v, &vlen), "lookup");
		break;
	case 1:
		expect(r, ruma_btree_insert(r->t, k, klen, v, arg % CRAFT_VLEN), "insert");
		break;
	case 2:
		expect(r, ruma_btree_upsert(r->t, k, klen, v, sizeof v, NULL), "upsert");
		break;
	case 3:
		expect(r, ruma_btree_remove(r->t, k, klen), "remove");
		break;
	case 4:
		expect(r, ruma_btree_update(r->t, k, klen, bump, NULL), "update");
		break;
	case 5:
		r->seen = 0;
		expect(r, ruma_btree_scan_asc(r->t, k, op & 8 ? klen : 0, count_keys, r), "scan_asc");
		break;
	case 6:
		r->seen = 0;
		expect(r, ruma_btree_scan_desc(r->t, k, op & 8 ? klen : 0, count_keys, r), "scan_desc");
		break;
	default:
		expect(r, ruma_btree_check_msg(r->t, NULL, NULL), "check");
		break;
	}
}

/* Open the store and the tree; unchecked: read the tree pages first. */
static int open_store(ruma_bm **bm, ruma_btree **t, bool unchecked)
{
	if (!unchecked)
		return craft_open(&cs, bm, t);
	int rc = craft_open_bm(&cs, bm);
	if (rc)
		return rc;
	for (unsigned i = 0; i < ntree; i++) {
		void *page;
		if (ruma_bm_fix_s(*bm, tree_page[i], &page) == 0)
			ruma_bm_unfix_s(*bm, tree_page[i]);
	}
	if ((rc = ruma_btree_open(*bm, "t", t)))
		ruma_bm_close(*bm);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	build_once();
	fz_in in = { data, size };
	if (craft_restore(&cs))
		abort();
	cs.messages = 0;
	cs.last_message[0] = 0;
	uint8_t mode = fz_u8(&in);
	run r = { .damaged = craft_pages(&in, mode & 15u) > 0 };
	uint8_t focus = fz_u8(&in);
	r.base = leaf_first[focus % cs.nleaf] + (focus >= 128 ? 128u : 0u);
	ruma_bm *bm;
	int rc = open_store(&bm, &r.t, (mode & 16) != 0);
	if (rc) {
		expect(&r, rc, "open"); /* the catalog's pages are not mutated */
		return 0;
	}
	for (unsigned i = 0; i < MAX_OPS && !fz_empty(&in); i++) {
		uint8_t op = fz_u8(&in);
		one_op(&r, op, fz_u8(&in));
	}
	expect(&r, ruma_btree_check_msg(r.t, NULL, NULL), "final check");
	ruma_btree_release(r.t);
	rc = ruma_bm_close(bm);
	if (rc && !r.damaged)
		expect(&r, rc, "close");
	if (getenv("RUMA_FUZZ_VERBOSE"))
		fprintf(stderr, "%s: %s, %u messages, last: %s\n", H,
			r.damaged ? "damaged" : "intact", cs.messages, cs.last_message);
	return 0;
}
