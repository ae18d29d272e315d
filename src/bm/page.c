/*
 * page.c — the trailer that protects every data page in the store.
 *
 * The last RUMA_BM_PAGE_TRAILER (32) bytes of each 4 KiB data page belong to
 * the buffer manager (callers own [0, RUMA_BM_PAGE_DATA) only):
 *
 *   offset 4064  u64 pid     the page id the image was written for
 *          4072  u64 lsn     LSN just after the last log record that changed
 *                            the page (0: never logged; see mtr.c)
 *          4080  u64 rsv     0
 *          4088  u32 tag     BM_PAGE_TAG: page format version
 *          4092  u32 crc     CRC-32C of bytes [0, 4092) of the page
 *
 * bm_page_seal fills the trailer just before the page is written (pwrite,
 * io_uring batch, flush and close all pass through bm_write_pages);
 * bm_page_verify checks it after every read of a page from the file.  A
 * flipped bit gives a CRC mismatch, an image written to (or copied onto) the
 * wrong offset a pid mismatch: both are RUMA_ECORRUPT with a message naming
 * the file, the page and what was expected and found — never a wrong page.
 * An image that passes is then given to the page owner's check
 * (ruma_bm_set_page_check: the B-tree validates the node's structure), so
 * a page crafted with a recomputed CRC is refused the same way.
 *
 * Invariants: the writer holds the page latched (shared), so its data bytes
 * cannot change while the CRC is computed.  Two threads may seal the same
 * page at once (eviction and flush both latch shared): they store the same
 * values, with relaxed atomic stores so the stores themselves do not race,
 * and the CRC is computed over the caller's bytes plus a local copy of the
 * trailer fields, never over trailer bytes another sealer is storing.
 *
 * No syscalls.
 */
#include "bm/bm_int.h"

#include <inttypes.h>
#include <string.h>

#define OFF_PID (RUMA_BM_PAGE_DATA + 0u)
#define OFF_LSN (RUMA_BM_PAGE_DATA + 8u)
#define OFF_RSV (RUMA_BM_PAGE_DATA + 16u)
#define OFF_TAG (RUMA_BM_PAGE_DATA + 24u)
#define OFF_CRC (RUMA_BM_PAGE_DATA + 28u)

_Static_assert(OFF_CRC + 4u == RUMA_BM_PAGE_SIZE, "the CRC is the last field of a page");
_Static_assert(RUMA_BM_PAGE_DATA % 8u == 0, "trailer fields are aligned");

struct trailer_head {
	uint64_t pid, lsn, rsv;
	uint32_t tag;
} __attribute__((packed));
_Static_assert(sizeof(struct trailer_head) == OFF_CRC - RUMA_BM_PAGE_DATA, "trailer head");

static uint32_t page_crc(const char *page, const struct trailer_head *th)
{
	uint32_t c = ruma_crc32c(0, page, RUMA_BM_PAGE_DATA);
	return ruma_crc32c(c, th, sizeof(*th));
}

uint64_t bm_page_lsn(const void *page)
{
	return __atomic_load_n((const uint64_t *)(const void *)((const char *)page + OFF_LSN),
			       __ATOMIC_RELAXED);
}

void bm_page_set_lsn(void *page, uint64_t lsn)
{
	__atomic_store_n((uint64_t *)(void *)((char *)page + OFF_LSN), lsn, __ATOMIC_RELAXED);
}

void bm_page_seal(ruma_bm *bm, ruma_pid pid, void *page)
{
	char *p = page;
	struct trailer_head th = { .pid = pid, .lsn = bm_page_lsn(p), .rsv = 0, .tag = BM_PAGE_TAG };
	uint32_t crc = page_crc(p, &th);

	(void)bm;
	__atomic_store_n((uint64_t *)(void *)(p + OFF_PID), th.pid, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(void *)(p + OFF_LSN), th.lsn, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(void *)(p + OFF_RSV), th.rsv, __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(void *)(p + OFF_TAG), th.tag, __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(void *)(p + OFF_CRC), crc, __ATOMIC_RELAXED);
}

static bool all_zero(const char *p)
{
	for (size_t i = 0; i < RUMA_BM_PAGE_SIZE; i++)
		if (p[i])
			return false;
	return true;
}

/* The page owner's check of the contents (ruma_bm_set_page_check); an
 * image read while none is installed is counted (bm_page_unchecked). */
static int check_contents(ruma_bm *bm, ruma_pid pid, const void *page)
{
	ruma_bm_page_check check = atomic_load_explicit(&bm->page_check, memory_order_acquire);
	if (!check)
		bm_page_unchecked(bm);
	const char *why = check ? check(page, bm->meta_pages,
					atomic_load_explicit(&bm->alloc_hw, memory_order_relaxed))
				: NULL;
	if (RUMA_UNLIKELY(why != NULL)) {
		bm_say(&bm->cfg, "%s: page %" PRIu64 ": %s: corrupt store", bm->path, pid, why);
		return RUMA_ECORRUPT;
	}
	return 0;
}

int bm_page_verify(ruma_bm *bm, ruma_pid pid, const void *page)
{
	const char *p = page;
	struct trailer_head th;
	uint32_t want;

	memcpy(&th, p + RUMA_BM_PAGE_DATA, sizeof(th));
	memcpy(&want, p + OFF_CRC, sizeof(want));
	uint32_t got = page_crc(p, &th);
	if (RUMA_UNLIKELY(got != want)) {
		if (all_zero(p))
			bm_say(&bm->cfg,
				"%s: page %" PRIu64 " at offset %" PRIu64 " holds only zeros "
				"(expected a page image with checksum; the write never reached "
				"the file): corrupt store",
				bm->path, pid, pid * (uint64_t)RUMA_BM_PAGE_SIZE);
		else
			bm_say(&bm->cfg,
				"%s: page %" PRIu64 " at offset %" PRIu64 ": checksum mismatch "
				"(stored crc32c 0x%08" PRIx32 ", computed 0x%08" PRIx32 "): "
				"corrupt store",
				bm->path, pid, pid * (uint64_t)RUMA_BM_PAGE_SIZE, want, got);
		return RUMA_ECORRUPT;
	}
	if (RUMA_UNLIKELY(th.tag != BM_PAGE_TAG)) {
		bm_say(&bm->cfg,
			"%s: page %" PRIu64 ": page format tag 0x%08" PRIx32 ", expected 0x%08" PRIx32
			": corrupt store",
			bm->path, pid, th.tag, (uint32_t)BM_PAGE_TAG);
		return RUMA_ECORRUPT;
	}
	if (RUMA_UNLIKELY(th.pid != pid)) {
		bm_say(&bm->cfg,
			"%s: page %" PRIu64 " holds the image of page %" PRIu64
			" (a misdirected or copied write): corrupt store",
			bm->path, pid, th.pid);
		return RUMA_ECORRUPT;
	}
	return check_contents(bm, pid, page);
}

bool ruma_bm_set_page_check(ruma_bm *bm, ruma_bm_page_check check)
{
	atomic_store_explicit(&bm->page_check, check, memory_order_seq_cst);
	return atomic_load_explicit(&bm->unchecked_in, memory_order_seq_cst) == 0;
}

void bm_page_unchecked(ruma_bm *bm)
{
	atomic_fetch_add_explicit(&bm->unchecked_in, 1, memory_order_seq_cst);
}
