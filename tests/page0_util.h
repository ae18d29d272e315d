/*
 * page0_util.h — rewrite a store's metadata (page 0: header, then the
 * first word of the free-space bitmap on the next page) with its checksum
 * recomputed, so that tests can craft damage the checksum does not catch.
 * Header-only; needs bm/bm_int.h for struct bm_meta_hdr.
 */
#ifndef RUMA_TEST_PAGE0_UTIL_H
#define RUMA_TEST_PAGE0_UTIL_H

#include <ruma/bm.h>

#include "bm/bm_int.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* FNV-1a, the checksum of the store's metadata (src/bm/store.c). */
static inline uint64_t page0_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Read the header of the store at path into *hdr and bitmap word 0 into *w0. */
static inline int page0_read(const char *path, struct bm_meta_hdr *hdr, uint64_t *w0)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	int r = pread(fd, hdr, sizeof(*hdr), 0) == (ssize_t)sizeof(*hdr) &&
				pread(fd, w0, 8, RUMA_BM_PAGE_SIZE) == 8
			? 0
			: -1;
	close(fd);
	return r;
}

/* Rewrite page 0 of the store at path from hdr and the bitmap word 0 (w0),
 * with its checksum recomputed. */
static inline int page0_craft(const char *path, struct bm_meta_hdr hdr, uint64_t w0)
{
	unsigned char page[2 * RUMA_BM_PAGE_SIZE];
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return -1;
	if (pread(fd, page, sizeof(page), 0) != (ssize_t)sizeof(page)) {
		close(fd);
		return -1;
	}
	memcpy(page + RUMA_BM_PAGE_SIZE, &w0, 8);
	size_t bits = (hdr.alloc_hw + 63) / 64 * 8;
	hdr.checksum = 0;
	hdr.checksum = page0_fnv1a(page0_fnv1a(0xcbf29ce484222325ull, &hdr, sizeof(hdr)),
				   page + RUMA_BM_PAGE_SIZE, bits);
	memcpy(page, &hdr, sizeof(hdr));
	int r = pwrite(fd, page, sizeof(page), 0) == (ssize_t)sizeof(page) ? 0 : -1;
	close(fd);
	return r;
}

#endif
