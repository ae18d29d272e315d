/*
 * store.c — the store's metadata pages (header + allocation bitmap: build,
 * write, read and verify), its capacity (growing a file, the size of a
 * block device) and the checkpoints made of them, plus the allocation
 * state rebuilt by recovery.  Below mtr.c, recover.c and bm.c, which call
 * it; it calls only evict.c (bm_flush_pages) in this module.
 *
 * Invariants: the metadata is written whole (header + bitmap, FNV-1a
 * checksum over both) at offset 0; a free bit that reaches the store was
 * logged first (the log is flushed before the write when there is one);
 * the file grows before a page beyond its end is handed out.
 *
 * Syscalls (through src/os): pread/pwrite of the metadata, fdatasync and
 * fsync, fallocate (ftruncate where unsupported).
 */
#include "bm/bm_int.h"

#include "os/os.h"

#include <ruma/wal.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ---- metadata ------------------------------------------------------------- */

static uint64_t bitmap_bytes_written(uint64_t hw)
{
	return div_up(hw, 64) * 8;
}

/* Serialize header + bitmap into buf (meta_pages pages); returns bytes to write. */
static size_t meta_build(ruma_bm *bm, unsigned char *buf, uint32_t state)
{
	struct bm_meta_hdr h;
	uint64_t hw = atomic_load(&bm->alloc_hw);
	size_t bm_bytes = bitmap_bytes_written(hw);

	memset(&h, 0, sizeof(h));
	h.magic = BM_MAGIC;
	h.format = BM_FORMAT;
	h.page_size = RUMA_BM_PAGE_SIZE;
	h.meta_pages = bm->meta_pages;
	h.capacity = bm->free_words * 64;
	h.alloc_hw = hw;
	h.free_count = bm->free_count + bm->ext_free_count;
	h.flags = atomic_load(&bm->ext_used) ? BM_META_EXTENTS : 0;
	for (unsigned i = 0; i < RUMA_BM_META_SLOTS; i++)
		h.slots[i] = atomic_load(&bm->meta_slots[i]);
	h.state = state;
	h.page_data = RUMA_BM_PAGE_DATA;
	h.wal = bm->wal != NULL || bm->needs_recovery;
	h.next_lsn = bm->wal ? ruma_wal_end(bm->wal) : bm->meta_next_lsn;
	h.redo_lsn = bm->ckpt_redo;
	h.undo_lsn = bm->ckpt_undo;
	h.id[0] = bm->store_id[0];
	h.id[1] = bm->store_id[1];
	memset(buf, 0, RUMA_BM_PAGE_SIZE);
	memcpy(buf + RUMA_BM_PAGE_SIZE, bm->free_bits, bm_bytes);
	if (bm->ext_bits) { /* the extent space's free pages (extent.c) */
		uint64_t *w = (uint64_t *)(buf + RUMA_BM_PAGE_SIZE);
		for (size_t i = 0; i < bm_bytes / 8; i++)
			w[i] |= bm->ext_bits[i];
	}
	uint64_t sum = fnv1a(0xcbf29ce484222325ull, &h, sizeof(h));
	h.checksum = fnv1a(sum, buf + RUMA_BM_PAGE_SIZE, bm_bytes);
	memcpy(buf, &h, sizeof(h));
	size_t total = RUMA_BM_PAGE_SIZE + div_up(bm_bytes, RUMA_BM_PAGE_SIZE) * RUMA_BM_PAGE_SIZE;
	memset(buf + RUMA_BM_PAGE_SIZE + bm_bytes, 0, total - RUMA_BM_PAGE_SIZE - bm_bytes);
	return total;
}

/* Write header + bitmap with the given state; with sync, fdatasync after. */
int bm_meta_write(ruma_bm *bm, uint32_t state, bool sync)
{
	size_t len = bm->meta_pages * (size_t)RUMA_BM_PAGE_SIZE;
	unsigned char *buf = aligned_alloc(RUMA_BM_PAGE_SIZE, len);

	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&bm->alloc_mu);
	size_t n = meta_build(bm, buf, state);
	pthread_mutex_unlock(&bm->alloc_mu);
	/* a free bit set in buf was logged before it was set: make that durable
	 * before the bitmap reaches the store (mtr.c) */
	int r = bm->wal ? ruma_wal_flush(bm->wal, UINT64_MAX) : 0;
	if (!r)
		r = ruma_os_pwrite_full(bm->fd, buf, n, 0);
	free(buf);
	if (!r && sync)
		r = ruma_os_fdatasync(bm->fd);
	return r;
}

/*
 * bm_store_unclean — the store's page 0 says it was not closed cleanly: a
 * process had it open and stopped (crash, kill -9, power loss) without the
 * final write of pages + metadata.  Evicted pages may have been written
 * after the last metadata, so the metadata cannot be trusted.
 *
 * This is the one place that decides what happens to such a store.  A store
 * that was open with a log is recovered (recover.c, run by ruma_bm_open once
 * the memory is mapped); one without is refused.
 */
static int bm_store_unclean(ruma_bm *bm)
{
	if (bm->meta_wal) {
		bm->needs_recovery = true;
		return 0;
	}
	bm_say(&bm->cfg,
		"%s was not closed cleanly (the process using it stopped without closing "
		"it): its pages may be newer than its metadata, so it cannot be trusted; "
		"recreate it (open it with fresh set).  A store used with a "
		"write-ahead log (durability sync or async) is recovered instead",
		bm->path);
	return RUMA_EUNCLEAN;
}

/* What to do with a file that is not a store (c->fresh alone refuses it). */
#define NOT_STORE_ADVICE \
	": not opened; name another file, or set fresh and force to overwrite it"

/* The counters and the free-space bitmap of a header whose checksum holds
 * (a crafted page 0 can hold any values): LSNs ordered and below the limit,
 * an identity, no free bit for a metadata page or beyond the high-water
 * mark, the free count equal to the bits set. */
static int meta_check(ruma_bm *bm, const struct bm_meta_hdr *h, const unsigned char *bits)
{
	const char *bad = NULL;
	uint64_t set = 0, w;
	for (uint64_t i = 0; i < div_up(h->alloc_hw, 64) && !bad; i++) {
		memcpy(&w, bits + i * 8, 8);
		uint64_t first = i * 64;
		if (first < h->meta_pages) /* the metadata pages are never free */
			w &= h->meta_pages - first >= 64 ? 0 : ~0ull << (h->meta_pages - first);
		if (first + 64 > h->alloc_hw) /* nor pages not allocated yet */
			w &= (1ull << (h->alloc_hw - first)) - 1;
		uint64_t raw;
		memcpy(&raw, bits + i * 8, 8);
		if (w != raw)
			bad = "a metadata page or a page beyond the high-water mark is marked free";
		set += (uint64_t)__builtin_popcountll(w);
	}
	if (!bad && set != h->free_count)
		bad = "the free count differs from the free-space bitmap";
	if (!bad && (h->next_lsn > RUMA_WAL_LSN_MAX || h->redo_lsn > h->next_lsn ||
		     h->undo_lsn > h->redo_lsn))
		bad = "its LSNs are out of order or beyond the limit of 2^62";
	if (!bad && !h->id[0] && !h->id[1])
		bad = "it has no identity";
	if (!bad)
		return 0;
	bm_say(&bm->cfg, "%s: page 0 is damaged (%s): the store cannot be trusted", bm->path, bad);
	return RUMA_ECORRUPT;
}

/* Page 0's header into *h; 1 when the store is empty (a new file, or an
 * all-zero page 0), 0 when read, or RUMA_ENOTSTORE / an I/O error. */
static int read_header(ruma_bm *bm, struct bm_meta_hdr *h)
{
	unsigned char *p0 = aligned_alloc(RUMA_BM_PAGE_SIZE, RUMA_BM_PAGE_SIZE);

	if (!p0)
		return -ENOMEM;
	int r = ruma_os_pread_full(bm->fd, p0, RUMA_BM_PAGE_SIZE, 0);
	if (r == RUMA_ESHORTIO && !bm->is_blockdev && bm->file_reserved == 0) {
		free(p0);
		return 1; /* a new, empty file */
	}
	if (r == RUMA_ESHORTIO) {
		free(p0);
		bm_say(&bm->cfg, "%s is not a ruma store (shorter than a page)%s", bm->path,
		       NOT_STORE_ADVICE);
		return RUMA_ENOTSTORE;
	}
	if (r) {
		free(p0);
		return r;
	}
	bool zero = true;
	for (size_t i = 0; i < RUMA_BM_PAGE_SIZE && zero; i++)
		zero = p0[i] == 0;
	memcpy(h, p0, sizeof(*h));
	free(p0);
	return zero ? 1 : 0;
}

/* A header that is a ruma store of this format with consistent sizes: 0,
 * RUMA_ENOTSTORE or RUMA_ECORRUPT (with a message). */
static int header_check(ruma_bm *bm, const struct bm_meta_hdr *h)
{
	if (h->magic == BM_MAGIC && h->format != BM_FORMAT) {
		bm_say(&bm->cfg,
			"%s is a ruma store of format %" PRIu32 "; this version reads format %u "
			"(a store identity that its log must carry was added: an older store "
			"cannot be matched with its log); recreate it "
			"(open it with fresh set)",
			bm->path, h->format, BM_FORMAT);
		return RUMA_ENOTSTORE;
	}
	if (h->magic != BM_MAGIC) {
		bm_say(&bm->cfg, "%s is not a ruma store (no ruma magic in its first page)%s",
		       bm->path, NOT_STORE_ADVICE);
		return RUMA_ENOTSTORE;
	}
	if (h->page_size != RUMA_BM_PAGE_SIZE ||
	    h->page_data != RUMA_BM_PAGE_DATA ||
	    (h->state != BM_STATE_CLEAN && h->state != BM_STATE_OPEN) ||
	    h->meta_pages < 1 || h->capacity == 0 || h->capacity % 64 ||
	    h->meta_pages != 1 + div_up(h->capacity / 8, RUMA_BM_PAGE_SIZE) ||
	    h->alloc_hw < h->meta_pages || h->alloc_hw > h->capacity || h->free_count > h->alloc_hw) {
		bm_say(&bm->cfg,
			"%s is a ruma store whose header (page 0) is damaged: its contents "
			"cannot be found; open it with fresh set to recreate it empty",
			bm->path);
		return RUMA_ECORRUPT;
	}
	return 0;
}

/* The free-space bitmap written after page 0 (bm_bytes of it) into *out
 * (NULL when empty), its checksum together with the header's checked, then
 * its contents (meta_check): 0, RUMA_ECORRUPT or an I/O error. */
static int read_bitmap(ruma_bm *bm, struct bm_meta_hdr *h, size_t bm_bytes, unsigned char **out)
{
	size_t len = div_up(bm_bytes, RUMA_BM_PAGE_SIZE) * RUMA_BM_PAGE_SIZE;
	unsigned char *bits = len ? aligned_alloc(RUMA_BM_PAGE_SIZE, len) : NULL;
	int r;

	*out = NULL;
	if (len && !bits)
		return -ENOMEM;
	if (len && (r = ruma_os_pread_full(bm->fd, bits, len, RUMA_BM_PAGE_SIZE))) {
		free(bits);
		return r == RUMA_ESHORTIO ? RUMA_ECORRUPT : r;
	}
	uint64_t want = h->checksum;
	h->checksum = 0;
	uint64_t sum = fnv1a(fnv1a(0xcbf29ce484222325ull, h, sizeof(*h)), bits, bm_bytes);
	if (sum != want) {
		free(bits);
		bm_say(&bm->cfg, "%s: metadata checksum mismatch (corrupt store)",
			bm->path);
		return RUMA_ECORRUPT;
	}
	r = meta_check(bm, h, bits);
	if (r) {
		free(bits);
		return r;
	}
	*out = bits;
	return 0;
}

/* The manager's allocation state, slots, LSNs and identity from a checked header. */
static void adopt_header(ruma_bm *bm, const struct bm_meta_hdr *h)
{
	atomic_store(&bm->alloc_hw, h->alloc_hw);
	atomic_store(&bm->ext_used, (h->flags & BM_META_EXTENTS) != 0);
	bm->free_count = h->free_count;
	for (unsigned i = 0; i < RUMA_BM_META_SLOTS; i++)
		atomic_store(&bm->meta_slots[i], h->slots[i]);
	bm->meta_wal = h->wal == 1;
	bm->meta_next_lsn = h->next_lsn;
	bm->meta_redo_lsn = h->redo_lsn;
	bm->meta_undo_lsn = h->undo_lsn;
	bm->ckpt_redo = h->redo_lsn;
	bm->ckpt_undo = h->undo_lsn;
	bm->store_id[0] = h->id[0];
	bm->store_id[1] = h->id[1];
}

/*
 * Read an existing store's metadata.  Returns 0 with *found = false when the
 * store is empty (short or all-zero page 0), RUMA_ECORRUPT, or I/O errors.
 */
int bm_meta_read(ruma_bm *bm, bool *found)
{
	struct bm_meta_hdr h;
	unsigned char *bits;

	*found = false;
	int r = read_header(bm, &h);
	if (r)
		return r == 1 ? 0 : r;
	if ((r = header_check(bm, &h)))
		return r;
	size_t bm_bytes = bitmap_bytes_written(h.alloc_hw);
	if ((r = read_bitmap(bm, &h, bm_bytes, &bits)))
		return r;
	bm->meta_pages = h.meta_pages;
	bm->free_words = h.capacity / 64;
	bm->free_bits = calloc(bm->free_words, sizeof(uint64_t));
	if (!bm->free_bits) {
		free(bits);
		return -ENOMEM;
	}
	if (bm_bytes)
		memcpy(bm->free_bits, bits, bm_bytes);
	free(bits);
	adopt_header(bm, &h);
	*found = true;
	return h.state == BM_STATE_CLEAN ? 0 : bm_store_unclean(bm);
}

/* ---- capacity ---------------------------------------------------------------- */

/* Make sure the store can hold pages [0, pages).  Called with alloc_mu held. */
int bm_ensure_capacity(ruma_bm *bm, uint64_t pages)
{
	uint64_t need = pages * RUMA_BM_PAGE_SIZE;

	if (bm->is_blockdev) {
		if (need <= bm->dev_bytes)
			return 0;
		bm_say(&bm->cfg,
			"%s: block device of %" PRIu64 " bytes is full "
			"(the store needs %" PRIu64 "); use a larger device",
			bm->path, bm->dev_bytes, need);
		return -ENOSPC;
	}
	if (need <= bm->file_reserved)
		return 0;
	uint64_t step = RUMA_MIN(RUMA_MAX(bm->file_reserved / 16, BM_GROW_MIN), BM_GROW_MAX);
	uint64_t target = RUMA_MAX(need, bm->file_reserved + step);
	uint64_t cap = bm->virt_pages * (uint64_t)RUMA_BM_PAGE_SIZE;
	if (target > cap)
		target = RUMA_MAX(cap, need);
	int r = ruma_os_fallocate(bm->fd, 0, (off_t)bm->file_reserved,
				  (off_t)(target - bm->file_reserved));
	if (r == -EOPNOTSUPP || r == -ENOSYS)
		r = ruma_os_ftruncate(bm->fd, (off_t)target);
	if (r == -ENOSPC || r == -EFBIG || r == -EDQUOT) {
		bm_say(&bm->cfg,
			"%s: cannot grow the file to %" PRIu64 " bytes: %s "
			"(free space on its file system, or use a smaller data set)",
			bm->path, target, ruma_strerror(r));
		return r == -EFBIG ? -EFBIG : -ENOSPC;
	}
	if (r)
		return r;
	bm->file_reserved = target;
	return 0;
}

/* Write every dirty page and the metadata (state OPEN), fsync. */
int bm_checkpoint(ruma_bm *bm)
{
	int err = bm_flush_pages(bm);
	int r = bm_meta_write(bm, BM_STATE_OPEN, false);
	err = err ? err : r;
	r = ruma_os_fdatasync(bm->fd);
	return err ? err : r;
}

int bm_flush_and_sync(ruma_bm *bm)
{
	int err = bm_flush_pages(bm);
	int r = ruma_os_fsync(bm->fd);
	return err ? err : r;
}

int bm_checkpoint_meta(ruma_bm *bm)
{
	return bm_meta_write(bm, BM_STATE_OPEN, true);
}

/* ---- recovery of the allocation state (recover.c) ------------------------------------ */

int bm_recover_alloc(ruma_bm *bm, ruma_pid pid)
{
	int r = 0;
	uint64_t bit = 1ull << (pid & 63);
	pthread_mutex_lock(&bm->alloc_mu);
	uint64_t hw = atomic_load(&bm->alloc_hw);
	if (pid >= hw) {
		r = bm_ensure_capacity(bm, pid + 1);
		for (uint64_t p = hw; !r && p <= pid; p++) {
			atomic_store(&bm->state[p], bm_word(BM_EVICTED, 0, false));
			if (p < pid) { /* not (yet) seen allocated: free */
				bm->free_bits[p >> 6] |= 1ull << (p & 63);
				bm->free_count++;
			}
		}
		if (!r)
			atomic_store(&bm->alloc_hw, pid + 1);
	} else if (bm->free_bits[pid >> 6] & bit) {
		bm->free_bits[pid >> 6] &= ~bit;
		bm->free_count--;
	}
	pthread_mutex_unlock(&bm->alloc_mu);
	return r;
}

void bm_recover_free(ruma_bm *bm, ruma_pid pid)
{
	uint64_t bit = 1ull << (pid & 63);
	pthread_mutex_lock(&bm->alloc_mu);
	if (pid < atomic_load(&bm->alloc_hw) && !(bm->free_bits[pid >> 6] & bit)) {
		bm->free_bits[pid >> 6] |= bit;
		bm->free_count++;
	}
	bm_written_set(bm, pid, false);
	bool known = pid < atomic_load(&bm->alloc_hw);
	pthread_mutex_unlock(&bm->alloc_mu);
	/* a freed page is never written back (ruma_bm_free): the copy redo
	 * built must not reach the file, where an extent may take the page */
	if (known)
		bm_discard_resident(bm, pid);
}

