/*
 * snapshot.h — copies and copy-on-write snapshots of an array in a memfd.
 *
 * The source (ruma_snap_src) is an array of `bytes` bytes whose memory is a
 * run of pages of a physical page pool (phys.h: a memfd, 4 KiB or 2 MiB
 * pages), mapped MAP_SHARED with one mmap (or, for the copy methods only,
 * anonymous memory: RUMA_SNAP_SRC_ANON).  A snapshot (ruma_snap) is
 * a second array of the same size made from the source by one method:
 *
 *   MEMCPY          (1)    a fresh anonymous buffer, memcpy of the source.
 *   COW             (2-5)  a MAP_PRIVATE mapping of the source's memfd range:
 *                          the kernel copies a page lazily on the first write
 *                          to the snapshot; the source stays intact.
 *   SHUFFLE         (6-9)  the snapshot is built chunk by chunk (a chunk is
 *                          pages_per_chunk pages): snapshot chunk i maps
 *                          source chunk order[i] (a random permutation), one
 *                          mmap per chunk.  By default MAP_SHARED, as in the
 *                          RUMA code base: the snapshot is a shuffled view
 *                          of the source's pages, and a write to it is a
 *                          write to the source (no copy).  With
 *                          opts.private_view the chunks are MAP_PRIVATE:
 *                          writes stay in the snapshot (kernel COW, each
 *                          first write to a page copies it).  Only full
 *                          chunks are permuted: a shorter last chunk stays
 *                          last.  With pages_per_chunk >= pages, the order
 *                          is the identity.
 *   MEMCPY_SHUFFLE  (10/11) the same permutation, built with memcpy per chunk
 *                          into a fresh buffer (init_dst: touch it first).
 *   REWIRED_COW     ("rewired CoW" of the paper) the snapshot maps the
 *                          source's physical pages.  ruma_snap_make_writable
 *                          / ruma_snap_write copy a run of at least
 *                          rewire_min_pages pages (default 16) into fresh
 *                          pool pages and rewire the snapshot pages to them
 *                          (read-write, page tables filled): one mmap per
 *                          run and, per 64 pages, one pread of
 *                          /proc/self/pagemap and one pwritev (a shared
 *                          view: one pwrite; 2 MiB: UFFDIO_COPY).  Shorter runs,
 *                          single pages (ruma_snap_page_writable) and direct
 *                          stores are copied by the kernel at their first
 *                          write (the view is MAP_PRIVATE), since one
 *                          mapping change costs more than that copy.
 *                          rewire_min_pages 1 (and any 2 MiB source):
 *                          every page made writable is rewired, and the
 *                          view is MAP_SHARED and read-only.  The source
 *                          pages are never changed (docs/structures.md has
 *                          numbers).  The private view is writable, so
 *                          under vm.overcommit_memory 2 its size counts
 *                          against the commit limit.
 *
 * populate: fill the page tables of the snapshot at creation (MAP_POPULATE
 * or MADV_POPULATE_*), so the first read takes no fault.  huge comes from the
 * source (a 2 MiB source gives 2 MiB snapshots; chunks are then 2 MiB pages).
 *
 * Snapshots must be destroyed before their source.  Not thread-safe.
 * Errors: -EINVAL, -ENOMEM, RUMA_ENOHUGE (raise vm.nr_hugepages),
 * RUMA_EMAPLIMIT (more chunks than vm.max_map_count allows: use more pages
 * per chunk), or the negative errno of the failing call.  Nothing is leaked
 * on error.
 */
#ifndef RUMA_SNAPSHOT_H
#define RUMA_SNAPSHOT_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ruma_snap_src ruma_snap_src;
typedef struct ruma_snap ruma_snap;

typedef enum ruma_snap_method {
	RUMA_SNAP_MEMCPY = 0,
	RUMA_SNAP_COW,
	RUMA_SNAP_SHUFFLE,
	RUMA_SNAP_MEMCPY_SHUFFLE,
	RUMA_SNAP_REWIRED_COW,
	RUMA_SNAP_METHOD_COUNT_
} ruma_snap_method;

/* Flags of ruma_snap_src_options. */
#define RUMA_SNAP_SRC_HUGE 1u     /* 2 MiB pages (a hugetlb memfd; MAP_HUGETLB with ANON) */
#define RUMA_SNAP_SRC_POPULATE 2u /* MAP_POPULATE: back every page, fill the page tables */
#define RUMA_SNAP_SRC_ANON 4u     /* anonymous private memory, no file: copy methods only */

/* What ruma_snap_src_create makes: `bytes` bytes (> 0) with RUMA_SNAP_SRC_* flags. */
typedef struct ruma_snap_src_options {
	size_t bytes;
	unsigned flags;
} ruma_snap_src_options;

/*
 * ruma_snap_src_create — a zeroed source of o->bytes bytes (rounded up to
 * whole pages of 4 KiB, or 2 MiB with RUMA_SNAP_SRC_HUGE), mapped and ready
 * to write; the caller owns *out.  By default the source is a run of pages
 * of a new memfd pool, mapped MAP_SHARED with one mmap (memfd_create, and
 * ftruncate for 4 KiB pages; no page is backed until written, or at once
 * with RUMA_SNAP_SRC_POPULATE).  A 2 MiB source reserves its huge pages at
 * creation, so a shortage fails here with RUMA_ENOHUGE, not at a later
 * fault.  With RUMA_SNAP_SRC_ANON the source is anonymous private memory
 * (as malloc of a large block gives), which only the copy methods (MEMCPY,
 * MEMCPY_SHUFFLE) take.
 * Returns 0, -EINVAL (o or out NULL, bytes 0, an unknown flag, POPULATE
 * with ANON), -ENOMEM, RUMA_ENOHUGE, RUMA_EMAPLIMIT, RUMA_EUNSUPP, or an
 * errno; on error *out is NULL and nothing is left.
 */
RUMA_API int ruma_snap_src_create(const ruma_snap_src_options *o, ruma_snap_src **out);

/* ruma_snap_src_destroy — unmap and release the source (NULL ignored). */
RUMA_API void ruma_snap_src_destroy(ruma_snap_src *s);

/* ruma_snap_src_data — the source array (writable, contiguous, page aligned). */
RUMA_API void *ruma_snap_src_data(ruma_snap_src *s);
/* ruma_snap_src_bytes — requested size; ruma_snap_src_page_size — 4 KiB or 2 MiB. */
RUMA_API size_t ruma_snap_src_bytes(const ruma_snap_src *s);
RUMA_API size_t ruma_snap_src_page_size(const ruma_snap_src *s);

typedef struct ruma_snap_options {
	ruma_snap_method method;
	size_t pages_per_chunk; /* SHUFFLE / MEMCPY_SHUFFLE: chunk size in pages (default 1) */
	bool populate;          /* fill page tables of the snapshot at creation */
	bool init_dst;          /* MEMCPY / MEMCPY_SHUFFLE: touch the destination before copying */
	uint64_t seed;          /* permutation seed for the shuffled methods */
	bool private_view;      /* SHUFFLE: MAP_PRIVATE chunks (kernel COW) instead of MAP_SHARED */
	/*
	 * SHUFFLE / MEMCPY_SHUFFLE: the chunk order to use instead of one drawn
	 * from seed (NULL): order[k] is the source chunk of snapshot chunk k, for
	 * every chunk; a shorter last chunk must stay last.  Borrowed: it must
	 * stay valid and unchanged until the snapshot is destroyed.
	 */
	const uint64_t *order;
	/*
	 * REWIRED_COW with 4 KiB pages: the shortest run of pages, made writable
	 * in one call, that is copied into fresh pool pages and rewired (one
	 * mmap per run).  Shorter runs, single pages and direct
	 * stores into ruma_snap_data are copied by the kernel on their first
	 * write (the view is MAP_PRIVATE), because one change of the mapping
	 * costs more than the kernel's copy of a page.  0: the default, 16.
	 * 1: every page made writable is rewired, and the view is read-only and
	 * shared (a direct store faults).  2 MiB sources always behave as 1: a
	 * private hugetlb view would reserve huge pages for a second copy.
	 */
	size_t rewire_min_pages;
	/*
	 * COW, and SHUFFLE with private_view: map the private view
	 * MAP_NORESERVE, as the RUMA code base maps its 2 MiB view.  Over 2 MiB
	 * pages the view then reserves no huge pages for its copies, and a
	 * copy-on-write fault that finds no free huge page gets SIGBUS instead
	 * of the view failing with RUMA_ENOHUGE when it is made; over 4 KiB
	 * pages the view is not charged to the commit limit
	 * (vm.overcommit_memory 2).  Default false: reserved.
	 */
	bool noreserve;
} ruma_snap_options;

/*
 * ruma_snap_options_default — COW, 1 page per chunk, no populate, seed 1,
 * shared shuffled views, rewire_min_pages 0 (REWIRED_COW rewires runs of 16
 * pages or more).
 */
RUMA_API void ruma_snap_options_default(ruma_snap_options *o);

/*
 * ruma_snap_create — a snapshot of src as o describes; the caller owns *out.
 * The same as ruma_snap_reserve followed by ruma_snap_build.
 * Returns as described at the top of this file (and -EINVAL for a source
 * not mapped yet, or a view method on an anonymous source).
 */
RUMA_API int ruma_snap_create(const ruma_snap_options *o, ruma_snap_src *src, ruma_snap **out);

/*
 * ruma_snap_reserve — the first half of ruma_snap_create: the snapshot's
 * memory, not yet filled.  MEMCPY / MEMCPY_SHUFFLE: the destination buffer
 * (one anonymous mmap; zeroed with init_dst).  COW: the whole snapshot (one
 * MAP_PRIVATE mmap of the source's file range).  SHUFFLE: one mapping of
 * the source's range (MAP_SHARED, or MAP_PRIVATE for private_view), in
 * source order.  REWIRED_COW: the whole snapshot.  *out is usable only
 * after ruma_snap_build (ruma_snap_destroy at any time).
 * Returns as ruma_snap_create.
 */
RUMA_API int ruma_snap_reserve(const ruma_snap_options *o, ruma_snap_src *src, ruma_snap **out);

/*
 * ruma_snap_build — the second half: MEMCPY / MEMCPY_SHUFFLE copy the
 * source (chunk by chunk in the snapshot's order), SHUFFLE maps every chunk
 * over the reserved range (one mmap each), and with populate COW and
 * SHUFFLE fill the page tables with read faults (MADV_POPULATE_READ: pages
 * stay shared with the source until written).  A second call does nothing.
 * Returns 0, -EINVAL (s NULL, or a caller's order with a chunk out of range
 * or a shorter last chunk moved; checked here, not by ruma_snap_reserve),
 * RUMA_EMAPLIMIT, RUMA_ENOHUGE, or an errno of mmap/madvise (destroy the
 * snapshot then).
 */
RUMA_API int ruma_snap_build(ruma_snap *s);

/* ruma_snap_destroy — unmap and release the snapshot and its private pages (NULL ignored). */
RUMA_API void ruma_snap_destroy(ruma_snap *s);

/*
 * ruma_snap_data — the snapshot as one contiguous array of
 * ruma_snap_src_bytes(src) bytes.  It may be written directly (the source
 * does not see it), except for REWIRED_COW with rewire_min_pages 1 or 2 MiB
 * pages: there a page is read-only until it was made writable (a direct
 * write to a shared page faults with SIGSEGV).
 */
RUMA_API void *ruma_snap_data(ruma_snap *s);
RUMA_API size_t ruma_snap_bytes(const ruma_snap *s);
RUMA_API ruma_snap_method ruma_snap_method_of(const ruma_snap *s);

/*
 * ruma_snap_chunk_order — the permutation of a shuffled snapshot: snapshot
 * chunk i holds source chunk order[i]; *nchunks and *chunk_bytes receive
 * the chunk count and size (the last chunk may be shorter).  For unshuffled
 * methods the identity with one chunk per page (made on the first call;
 * NULL when that allocation fails).  Owned by the snapshot (or, when given
 * in ruma_snap_options.order, by the caller).
 */
RUMA_API const uint64_t *ruma_snap_chunk_order(const ruma_snap *s, size_t *nchunks,
					       size_t *chunk_bytes);

/*
 * ruma_snap_page_writable — make snapshot page `page` writable and return
 * its address in *addr.  The same as ruma_snap_make_writable of one page:
 * REWIRED_COW with rewire_min_pages 1 or 2 MiB pages copies the page into
 * a fresh pool page on the first call and rewires the snapshot page to it
 * (4 KiB: one pwrite and one mmap; 2 MiB: one mmap and UFFDIO_COPY, or a
 * memcpy without userfaultfd); with a larger rewire_min_pages the kernel
 * copies it at the first write (no system call here).  Later calls and
 * other methods: just the address.  Returns 0, -EINVAL (page out of range),
 * -ENOMEM, RUMA_ENOHUGE, or an errno of the rewire (the snapshot is then
 * unchanged).
 */
RUMA_API int ruma_snap_page_writable(ruma_snap *s, size_t page, void **addr);

/*
 * ruma_snap_make_writable — make snapshot pages [first, first + n) writable.
 * REWIRED_COW: every maximal run of pages not made writable before gets
 * private copies: a run of at least rewire_min_pages pages in fresh pool
 * pages, with one mmap (filled as the REWIRED_COW description above says),
 * a shorter run from the kernel at each page's first write.  Pages made
 * writable before are left alone.  Other methods: nothing to do.
 * Returns 0, -EINVAL (range, n == 0), -ENOMEM, -ENOSPC, RUMA_ENOHUGE,
 * RUMA_EMAPLIMIT, or an errno of pwrite/pwritev/mmap; runs copied before
 * the failing one stay copied, the failing run reads what it read before
 * (direct stores into it included) — unless the kernel also refuses to map
 * those pages back and to wire the copies there, when they may read the
 * source or not be mapped at all.
 */
RUMA_API int ruma_snap_make_writable(ruma_snap *s, size_t first, size_t n);

/*
 * ruma_snap_write — copy len bytes from buf to snapshot offset off, making
 * every touched page writable first (all of them at once, see
 * ruma_snap_make_writable).
 * Returns 0, -EINVAL (range outside the snapshot), or an error as above.
 */
RUMA_API int ruma_snap_write(ruma_snap *s, size_t off, const void *buf, size_t len);

/*
 * ruma_snap_pages_copied — pages made writable so far by REWIRED_COW, in
 * pool pages or left to the kernel's copy (0 for other methods; direct
 * stores are not counted).
 */
RUMA_API uint64_t ruma_snap_pages_copied(const ruma_snap *s);

/* ruma_snap_method_name — "memcpy", "cow", "shuffle", "memcpy-shuffle", "rewired-cow". */
RUMA_API const char *ruma_snap_method_name(ruma_snap_method m);
/* ruma_snap_method_parse — inverse of ruma_snap_method_name.  0 or RUMA_EPARSE. */
RUMA_API int ruma_snap_method_parse(const char *s, ruma_snap_method *out);

#ifdef __cplusplus
}
#endif
#endif
