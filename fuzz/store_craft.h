/*
 * store_craft.h — a small B-tree store built deterministically in a file,
 * and what an attacker needs to damage its pages so that the damage passes
 * the page checksum: read a page image from the file, change it, recompute
 * its trailer CRC-32C (the layout of src/bm/page.c: CRC-32C of bytes
 * [0, 4092) at offset 4092), write it back.  Used by the crafted-page
 * tests (tests/test_btree_crafted.c) and the crafted-store fuzzer
 * (fuzz/fuzz_store_pages.c).  Header only, test tooling.
 *
 * The store: CRAFT_NKEYS keys "key-%06u" (multiples of 10, so keys between
 * them can be inserted) with CRAFT_VLEN-byte values in one tree named
 * "t": a root at level 1 over a dozen and more leaves.  craft_build makes
 * it, closes the store cleanly and keeps the file's bytes, so each
 * scenario or input starts from the same image (craft_restore).
 * Plain file I/O (open/pread/pwrite): this is test tooling, not library
 * code.
 */
#ifndef RUMA_STORE_CRAFT_H
#define RUMA_STORE_CRAFT_H

#include <ruma/bm.h>
#include <ruma/btree.h>
#include <ruma/core.h>

#include "btree/node.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CRAFT_NKEYS 400u
#define CRAFT_VLEN 100u
#define CRAFT_MAX_LEAVES 64u
#define CRAFT_PS RUMA_BM_PAGE_SIZE

typedef struct craft_store {
	char path[128];
	uint8_t *image; /* the file as closed after the build */
	size_t image_len;
	ruma_pid root;
	ruma_pid leaf[CRAFT_MAX_LEAVES]; /* in key order */
	unsigned nleaf;
	char last_message[256]; /* the last line of the message callback */
	unsigned messages;
	unsigned pool_pages; /* buffer pool of craft_open (0: every page fits) */
} craft_store;

static inline size_t craft_key(unsigned i, uint8_t *k)
{
	return (size_t)snprintf((char *)k, 16, "key-%06u", i);
}

static inline void craft_message(void *ctx, const char *line)
{
	craft_store *s = ctx;
	snprintf(s->last_message, sizeof s->last_message, "%s", line);
	s->messages++;
}

/* A small store at s->path whose pool holds every page; fresh: empty. */
static inline void craft_config(craft_store *s, ruma_bm_config *c, bool fresh)
{
	ruma_bm_config_default(c);
	c->path = s->path;
	c->virt_bytes = (uint64_t)1024 * CRAFT_PS;
	c->phys_bytes = (uint64_t)(s->pool_pages ? s->pool_pages : 512u) * CRAFT_PS;
	c->batch = 8;
	c->max_threads = 4;
	c->fresh = fresh;
	c->force = fresh;
	c->message = craft_message;
	c->message_ctx = s;
	c->cleaner = false; /* nothing written behind the caller's back */
}

/* Open the store (no tree yet: no page check installed). */
static inline int craft_open_bm(craft_store *s, ruma_bm **bm)
{
	ruma_bm_config c;
	craft_config(s, &c, false);
	return ruma_bm_open(&c, bm);
}

/* Open the store and its tree "t". */
static inline int craft_open(craft_store *s, ruma_bm **bm, ruma_btree **t)
{
	int rc = craft_open_bm(s, bm);
	if (rc)
		return rc;
	if ((rc = ruma_btree_open(*bm, "t", t)))
		ruma_bm_close(*bm);
	return rc;
}

/* The leaves under the root (level 1), in key order. */
static inline int craft_list_leaves(craft_store *s, ruma_bm *bm)
{
	void *page;
	int rc = ruma_bm_fix_s(bm, s->root, &page);
	if (rc)
		return rc;
	const node *n = page;
	bool bad = n->level != 1 || n->count + 1u > CRAFT_MAX_LEAVES;
	for (unsigned i = 0; !bad && i <= n->count; i++)
		s->leaf[s->nleaf++] = node_child_at(n, i, &bad);
	ruma_bm_unfix_s(bm, s->root);
	return bad ? RUMA_ECORRUPT : 0;
}

static inline int craft_read_file(craft_store *s)
{
	int fd = open(s->path, O_RDONLY);
	if (fd < 0)
		return -errno;
	off_t len = lseek(fd, 0, SEEK_END);
	s->image_len = len > 0 ? (size_t)len : 0;
	s->image = malloc(s->image_len ? s->image_len : 1);
	ssize_t got = s->image ? pread(fd, s->image, s->image_len, 0) : -1;
	close(fd);
	return got == (ssize_t)s->image_len ? 0 : -EIO;
}

/* Build the store at path (a file that may exist) and keep its image. */
static inline int craft_build(craft_store *s, const char *path)
{
	memset(s, 0, sizeof *s);
	snprintf(s->path, sizeof s->path, "%s", path);
	ruma_bm_config c;
	craft_config(s, &c, true);
	ruma_bm *bm;
	ruma_btree *t;
	int rc = ruma_bm_open(&c, &bm);
	if (rc)
		return rc;
	rc = ruma_btree_create(bm, "t", &t);
	uint8_t k[16], v[CRAFT_VLEN];
	memset(v, 'v', sizeof v);
	for (unsigned i = 0; i < CRAFT_NKEYS && rc == 0; i++)
		rc = ruma_btree_insert(t, k, craft_key(i * 10u, k), v, sizeof v);
	if (rc == 0) {
		s->root = ruma_btree_root(t);
		rc = craft_list_leaves(s, bm);
	}
	if (t)
		ruma_btree_release(t);
	int rc2 = ruma_bm_close(bm);
	if (rc == 0)
		rc = rc2 ? rc2 : craft_read_file(s);
	return rc;
}

/* Put the built image back into the file. */
static inline int craft_restore(const craft_store *s)
{
	int fd = open(s->path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	ssize_t put = pwrite(fd, s->image, s->image_len, 0);
	close(fd);
	return put == (ssize_t)s->image_len ? 0 : -EIO;
}

/* Recompute the trailer CRC of a page image (src/bm/page.c's layout). */
static inline void craft_reseal(uint8_t *page)
{
	uint32_t crc = ruma_crc32c(0, page, CRAFT_PS - 4u);
	memcpy(page + CRAFT_PS - 4u, &crc, sizeof crc);
}

static inline int craft_page_io(const craft_store *s, ruma_pid pid, uint8_t *page, bool write)
{
	int fd = open(s->path, write ? O_WRONLY : O_RDONLY);
	if (fd < 0)
		return -errno;
	off_t off = (off_t)(pid * CRAFT_PS);
	ssize_t n = write ? pwrite(fd, page, CRAFT_PS, off) : pread(fd, page, CRAFT_PS, off);
	close(fd);
	return n == (ssize_t)CRAFT_PS ? 0 : -EIO;
}

/* Read page pid of the file (as the built image has it). */
static inline int craft_page_read(const craft_store *s, ruma_pid pid, uint8_t *page)
{
	if ((pid + 1) * CRAFT_PS > s->image_len)
		return -EINVAL;
	memcpy(page, s->image + pid * CRAFT_PS, CRAFT_PS);
	return 0;
}

/* Reseal page and write it to the file as page pid. */
static inline int craft_page_write(const craft_store *s, ruma_pid pid, uint8_t *page)
{
	craft_reseal(page);
	return craft_page_io(s, pid, page, true);
}

#endif
