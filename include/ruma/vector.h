/*
 * vector.h — growable arrays, one API over five growth strategies.
 *
 * RUMA_VEC_REWIRED   physical pages come from a memfd page pool (phys.h) and
 *                    are wired into a large reserved virtual area (area.h).
 *                    Growing wires more pages behind the last one: the
 *                    elements never move and are never copied.  4 KiB or
 *                    2 MiB pages; optional prepopulation (page tables of
 *                    newly wired pages are filled at wiring time, so the
 *                    first write takes no page fault).
 * RUMA_VEC_COPY      std::vector: capacity doubles, a fresh malloc'ed buffer
 *                    receives a memcpy of the old one.
 * RUMA_VEC_REALLOC   glibc realloc with doubling capacity (glibc itself may
 *                    move large blocks with mremap).
 * RUMA_VEC_MREMAP    an anonymous private mapping grown with
 *                    mremap(MREMAP_MAYMOVE), doubling; the kernel moves page
 *                    table entries, not data.  With huge, MAP_HUGETLB.
 * RUMA_VEC_INDIRECT  software indirection: a directory of fixed-size pages
 *                    (4 KiB or 2 MiB, allocated in slabs of 1, 2, 4, ...
 *                    pages up to 2 MiB); growth adds pages and, when the
 *                    directory is full, copies only the directory.  There is
 *                    no contiguous data pointer: ruma_vec_data returns NULL and
 *                    element access goes through the directory.
 *
 * Elements are elem_size bytes (default 8, i.e. uint64_t); the _u64 helpers
 * require elem_size == 8.  Pointers returned by ruma_vec_data / ruma_vec_at /
 * ruma_vec_page stay valid until the next call that grows or shrinks the
 * vector (for REWIRED they stay valid across growth, too: the area never
 * moves; ruma_vec_stable_addresses tells).
 *
 * A vector is not thread-safe; use one per thread or lock around it.
 * Errors: -EINVAL (bad option or index), -ENOMEM (also: a size beyond
 * max_bytes), -EOVERFLOW (an element count whose byte size does not fit in
 * size_t), RUMA_ENOHUGE (2 MiB pages requested but none free: raise
 * vm.nr_hugepages), RUMA_EMAPLIMIT, RUMA_EVIRTFULL (the rewired vector
 * outgrew its reservation: raise max_bytes).  Every size is checked before
 * anything is allocated; a failed growth leaves the vector with its old size
 * and contents.
 *
 * Hot paths: ruma_vec_push_u64, ruma_vec_get_u64 and ruma_vec_set_u64 are
 * inline functions over the public head of the vector (ruma_vec_head: the
 * data pointer, capacity and the current push run), so a push is a compare
 * of two pointers, the element's store and an increment of the push
 * pointer; growth, and every access the head cannot serve, calls the
 * out-of-line functions (*_slow).  Loops that push many elements can use a
 * push cursor (ruma_vec_cursor, below), which keeps the push position in a
 * register instead of storing it into the vector on every element.  The
 * exported symbols ruma_vec_push_u64 / _get_u64 / _set_u64 stay in the
 * library for callers built with RUMA_VEC_NO_INLINE defined.  The layout of
 * ruma_vec_head is part of the ABI: code compiled with the inline paths
 * must be rebuilt when it changes.
 */
#ifndef RUMA_VECTOR_H
#define RUMA_VECTOR_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ruma_vec_kind {
	RUMA_VEC_REWIRED = 0,
	RUMA_VEC_COPY,
	RUMA_VEC_REALLOC,
	RUMA_VEC_MREMAP,
	RUMA_VEC_INDIRECT,
	RUMA_VEC_KIND_COUNT_
} ruma_vec_kind;

typedef struct ruma_vec_options {
	ruma_vec_kind kind;
	size_t elem_size;        /* bytes per element; 0 means 8 */
	bool huge;               /* 2 MiB pages (REWIRED, MREMAP, INDIRECT); -EINVAL for COPY/REALLOC */
	bool prepopulate;        /* REWIRED/MREMAP: fill page tables of new pages when they are added;
				    INDIRECT: fault every new page in when it is allocated */
	size_t initial_capacity; /* elements to reserve at creation (0: one page / 16 elements) */
	/*
	 * Largest size in bytes the vector may reach; growth beyond it fails
	 * before allocating (RUMA_EVIRTFULL for REWIRED, -ENOMEM otherwise).
	 * REWIRED reserves this much address space.  0: 64 GiB for REWIRED,
	 * the machine's RAM + swap for the other kinds.
	 */
	size_t max_bytes;
	/*
	 * REWIRED: pool pages to allocate and back at creation, in bytes
	 * (rounded up to pages; 0: none).  Growth up to this size wires pages
	 * of the pool (one mapping per growth step) instead of allocating
	 * them, so the cost of the memory itself is paid at creation, as in
	 * the original RUMA rewired vector, which fills its pool file first.
	 */
	size_t pool_bytes;
	/*
	 * Contiguous kinds on 4 KiB pages (REWIRED, COPY, REALLOC, MREMAP):
	 * bytes of page tables filled ahead of the end by the push path, with
	 * one MADV_POPULATE_WRITE per window, instead of one page fault per
	 * 4 KiB page on the first store; a copying growth also fills the page
	 * tables of the part it copies before the copy.  At most one window
	 * beyond the size is populated.  REWIRED populates only the pages of
	 * its pool (pool_bytes), which already have memory: for a fresh memfd
	 * page the populate costs as much as the fault it saves.
	 * 0: RUMA_VEC_POPULATE_AHEAD_DEFAULT;
	 * RUMA_VEC_POPULATE_AHEAD_OFF: fault pages in on first touch.  Ignored
	 * with prepopulate (everything is populated when added), for 2 MiB
	 * pages and for INDIRECT.  A kernel without MADV_POPULATE_WRITE (before
	 * 5.14) turns it off at the first window.
	 */
	size_t populate_ahead;
} ruma_vec_options;

#define RUMA_VEC_POPULATE_AHEAD_DEFAULT ((size_t)2 << 20)
#define RUMA_VEC_POPULATE_AHEAD_OFF ((size_t)-1)

typedef struct ruma_vec ruma_vec;

/*
 * ruma_vec_head — the first bytes of every vector, public so that the hot
 * element operations can be inline.  Read-only for users: only the library
 * writes it.  Invariants: data[0 .. cap) are the elements of a contiguous
 * kind (data == NULL for INDIRECT, whose elements are reached through its
 * directory).  The push run is the free slots the inline push may fill
 * without the library: push_pos is the address of element `size`,
 * push_limit the end of the run (cap for the contiguous kinds, the end of
 * the current page for INDIRECT), push_pos <= push_limit; run_start and
 * run_first are push_pos and the size when the run began, so
 *     size = run_first + (push_pos - run_start)
 * (ruma_vec_head_size).  push_pos == push_limit (both NULL for
 * elem_size != 8) sends the next push to the out-of-line path.  The run is
 * kept in pointers, not in a size_t count, so that an element store (a
 * uint64_t) cannot alias it: a push loop keeps push_pos and push_limit in
 * registers and each push is a compare, the element's store and an
 * increment (plus the store of push_pos, off the loop's dependency chain).
 */
typedef struct ruma_vec_head {
	unsigned char *data;
	size_t cap;
	uint64_t *push_pos;
	uint64_t *push_limit;
	uint64_t *run_start;
	size_t run_first;
} ruma_vec_head;

/* ruma_vec_head_of — the public head of v. */
static inline const ruma_vec_head *ruma_vec_head_of(const ruma_vec *v)
{
	return (const ruma_vec_head *)(const void *)v;
}

/* ruma_vec_head_size — the number of elements of the vector with head h (== ruma_vec_size). */
static inline size_t ruma_vec_head_size(const ruma_vec_head *h)
{
	return h->run_first + (size_t)((uintptr_t)h->push_pos - (uintptr_t)h->run_start) / sizeof(uint64_t);
}

/* ruma_vec_options_default — kind REWIRED, 8-byte elements, 4 KiB pages, no prepopulation. */
RUMA_API void ruma_vec_options_default(ruma_vec_options *o);

/*
 * ruma_vec_create — a new, empty vector as o describes (o NULL: defaults).
 * The caller owns *out and releases it with ruma_vec_destroy.
 * Returns 0, -EINVAL, -ENOMEM, RUMA_ENOHUGE, RUMA_EMAPLIMIT.
 */
RUMA_API int ruma_vec_create(const ruma_vec_options *o, ruma_vec **out);

/* ruma_vec_destroy — release all memory and mappings (NULL is ignored). */
RUMA_API void ruma_vec_destroy(ruma_vec *v);

/* ruma_vec_push — append one element (elem_size bytes copied from elem). */
RUMA_API int ruma_vec_push(ruma_vec *v, const void *elem);
/*
 * ruma_vec_push_u64_slow — append x (elem_size must be 8, else -EINVAL),
 * growing when full: the out-of-line path of ruma_vec_push_u64, and a
 * complete push on its own.
 */
RUMA_API int ruma_vec_push_u64_slow(ruma_vec *v, uint64_t x);
/* ruma_vec_push_many — append n elements from elems (contiguous, n*elem_size bytes). */
RUMA_API int ruma_vec_push_many(ruma_vec *v, const void *elems, size_t n);

/*
 * ruma_vec_insert — insert one element before position pos (0 <= pos <= size),
 * shifting the tail up by one element (memmove within the mapping; for
 * INDIRECT a page-by-page shift).  -EINVAL when pos > size.
 */
RUMA_API int ruma_vec_insert(ruma_vec *v, size_t pos, const void *elem);
RUMA_API int ruma_vec_insert_u64(ruma_vec *v, size_t pos, uint64_t x);

/* ruma_vec_get / ruma_vec_set — copy element i out / in.  -EINVAL when i >= size. */
RUMA_API int ruma_vec_get(const ruma_vec *v, size_t i, void *out);
RUMA_API int ruma_vec_set(ruma_vec *v, size_t i, const void *elem);

/*
 * ruma_vec_get_u64_slow / ruma_vec_set_u64_slow — element i of an 8-byte
 * element vector through the directory or the data pointer (out of line;
 * the inline ruma_vec_get_u64 / ruma_vec_set_u64 call them for INDIRECT).
 * i must be < size (checked with RUMA_ASSERT only).
 */
RUMA_API uint64_t ruma_vec_get_u64_slow(const ruma_vec *v, size_t i);
RUMA_API void ruma_vec_set_u64_slow(ruma_vec *v, size_t i, uint64_t x);

#ifdef RUMA_VEC_NO_INLINE
/* The out-of-line forms of the three inline functions below (same contracts). */
RUMA_API int ruma_vec_push_u64(ruma_vec *v, uint64_t x);
RUMA_API uint64_t ruma_vec_get_u64(const ruma_vec *v, size_t i);
RUMA_API void ruma_vec_set_u64(ruma_vec *v, size_t i, uint64_t x);
#else
/*
 * ruma_vec_push_u64 — append x (elem_size must be 8, else -EINVAL).  Inline:
 * a store into the push run; growth and the INDIRECT page change go to
 * ruma_vec_push_u64_slow.  Returns 0 or the growth's error.
 */
static inline int ruma_vec_push_u64(ruma_vec *v, uint64_t x)
{
	ruma_vec_head *h = (ruma_vec_head *)(void *)v;
	uint64_t *p = h->push_pos;

	if (RUMA_LIKELY(p != h->push_limit)) {
		*p = x;
		h->push_pos = p + 1;
		return 0;
	}
	return ruma_vec_push_u64_slow(v, x);
}

/*
 * ruma_vec_get_u64 / ruma_vec_set_u64 — element i of a vector of 8-byte
 * elements; i must be < size (not checked).  Inline for the contiguous
 * kinds, out of line through the directory for INDIRECT.
 */
static inline uint64_t ruma_vec_get_u64(const ruma_vec *v, size_t i)
{
	const ruma_vec_head *h = ruma_vec_head_of(v);

	if (RUMA_LIKELY(h->data != NULL))
		return ((const uint64_t *)(const void *)h->data)[i];
	return ruma_vec_get_u64_slow(v, i);
}

static inline void ruma_vec_set_u64(ruma_vec *v, size_t i, uint64_t x)
{
	const ruma_vec_head *h = ruma_vec_head_of(v);

	if (RUMA_LIKELY(h->data != NULL))
		((uint64_t *)(void *)h->data)[i] = x;
	else
		ruma_vec_set_u64_slow(v, i, x);
}
#endif

/*
 * ruma_vec_cursor — a push cursor: a copy of the vector's push run in the
 * caller's local variables, for loops that push many elements one at a
 * time.  ruma_vec_push_u64 writes the push position back into the vector
 * on every element (the loop cannot keep it in a register: the growth call
 * may change it); a cursor is a local value that only the out-of-line
 * growth step receives and returns by value, so the compiler keeps pos and
 * limit in registers and a push is a compare, the element's store and an
 * increment.
 *
 *     ruma_vec_cursor c = ruma_vec_cursor_begin(v);
 *     for (i = 0; i < n; i++)
 *             if ((rc = ruma_vec_cursor_push(v, &c, keys[i])) != 0)
 *                     break;
 *     ruma_vec_cursor_end(v, c);
 *
 * Between begin and end the cursor owns the vector's end: call no other
 * function on v (its size does not count the cursor's pushes until
 * ruma_vec_cursor_end); the elements themselves may be read through
 * ruma_vec_data / the pointers pushed to.  A failed push leaves the cursor
 * usable: end it, and the vector holds every element pushed before the
 * failure.  elem_size must be 8.
 */
typedef struct ruma_vec_cursor {
	uint64_t *pos;   /* where the next element goes */
	uint64_t *limit; /* end of the run: pos == limit calls the growth step */
} ruma_vec_cursor;

/* ruma_vec_cursor_begin — a cursor at the end of v (v's current push run). */
static inline ruma_vec_cursor ruma_vec_cursor_begin(const ruma_vec *v)
{
	const ruma_vec_head *h = ruma_vec_head_of(v);
	ruma_vec_cursor c = { h->push_pos, h->push_limit };

	return c;
}

/*
 * ruma_vec_cursor_push_slow — the cursor's out-of-line step, when c is at
 * its limit: the cursor's pushes are folded into v's size, x is pushed with
 * ruma_vec_push_u64_slow (growing v), and the cursor of the new push run is
 * returned.  *rc always receives 0 or the push's error (-EINVAL for
 * elem_size != 8, the growth's error; then the returned cursor is the
 * unchanged run of c's pushes).
 */
RUMA_API ruma_vec_cursor ruma_vec_cursor_push_slow(ruma_vec *v, ruma_vec_cursor c, uint64_t x,
						   int *rc);

/* ruma_vec_cursor_push — append x through the cursor *c.  0 or the growth's error. */
static inline int ruma_vec_cursor_push(ruma_vec *v, ruma_vec_cursor *c, uint64_t x)
{
	int rc;

	if (RUMA_LIKELY(c->pos != c->limit)) {
		*c->pos++ = x;
		return 0;
	}
	*c = ruma_vec_cursor_push_slow(v, *c, x, &rc);
	return rc;
}

/* ruma_vec_cursor_end — hand v's end back: its size counts every push of c. */
static inline void ruma_vec_cursor_end(ruma_vec *v, ruma_vec_cursor c)
{
	((ruma_vec_head *)(void *)v)->push_pos = c.pos;
}

/* ruma_vec_at — address of element i (i < capacity), through the directory for INDIRECT. */
RUMA_API void *ruma_vec_at(const ruma_vec *v, size_t i);

/* ruma_vec_size / ruma_vec_capacity — elements stored / storable without growing. */
RUMA_API size_t ruma_vec_size(const ruma_vec *v);
RUMA_API size_t ruma_vec_capacity(const ruma_vec *v);
RUMA_API size_t ruma_vec_elem_size(const ruma_vec *v);
RUMA_API ruma_vec_kind ruma_vec_kind_of(const ruma_vec *v);

/*
 * ruma_vec_data — the contiguous element array, or NULL for INDIRECT (and
 * for an empty COPY/REALLOC/MREMAP vector with no buffer yet).
 */
RUMA_API void *ruma_vec_data(ruma_vec *v);

/*
 * ruma_vec_page_bytes / ruma_vec_page — the vector seen as pages: page p
 * holds elements [p*per_page, (p+1)*per_page) with per_page =
 * page_bytes / elem_size.  For INDIRECT these are the directory pages
 * (4 KiB or 2 MiB); for the contiguous kinds the page size used for growth
 * (4 KiB or 2 MiB) and ruma_vec_page(v, p) == data + p*page_bytes.
 * ruma_vec_page returns NULL for p beyond the allocated pages.
 */
RUMA_API size_t ruma_vec_page_bytes(const ruma_vec *v);
RUMA_API void *ruma_vec_page(const ruma_vec *v, size_t p);

/* ruma_vec_stable_addresses — true when growth never moves elements (REWIRED, INDIRECT). */
RUMA_API bool ruma_vec_stable_addresses(const ruma_vec *v);

/* ruma_vec_reserve — grow the capacity to at least n elements. */
RUMA_API int ruma_vec_reserve(ruma_vec *v, size_t n);

/*
 * ruma_vec_shrink — set the size to n (n <= size, else -EINVAL) and release
 * the memory beyond it: REWIRED unwires and frees the pages past the new
 * end (the freed pool pages are punched out of the memfd); MREMAP shrinks
 * the mapping; INDIRECT frees the page slabs that lie wholly beyond the new
 * end; COPY/REALLOC move into a buffer of the new size.  Capacity afterwards
 * is n rounded up to a page (INDIRECT: to the end of the last kept slab;
 * COPY/REALLOC: n).  Returns 0 or a negative error (the contents up to n
 * stay).
 */
RUMA_API int ruma_vec_shrink(ruma_vec *v, size_t n);

/* ruma_vec_clear — size 0, memory kept. */
RUMA_API void ruma_vec_clear(ruma_vec *v);

/* Counters of one vector since creation. */
typedef struct ruma_vec_stats {
	uint64_t grows;        /* growth steps */
	uint64_t bytes_copied; /* bytes copied by growth (0 for REWIRED/MREMAP) */
	uint64_t bytes_mapped; /* bytes of memory currently held (capacity + directory) */
} ruma_vec_stats;

/* ruma_vec_get_stats — the counters of v into *out. */
RUMA_API void ruma_vec_get_stats(const ruma_vec *v, ruma_vec_stats *out);

/* ruma_vec_kind_name — "rewired", "copy", "realloc", "mremap", "indirect". */
RUMA_API const char *ruma_vec_kind_name(ruma_vec_kind k);

/* ruma_vec_kind_parse — the inverse of ruma_vec_kind_name.  0 or RUMA_EPARSE. */
RUMA_API int ruma_vec_kind_parse(const char *s, ruma_vec_kind *out);

#ifdef __cplusplus
}
#endif
#endif
