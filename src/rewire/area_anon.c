/*
 * area_anon.c — anonymous areas whose 4 KiB pages are moved between places
 * (area.h, "anonymous areas and page moves"), and the run-time choice of
 * the move mechanism.
 *
 * Why: memfd rewiring (area.c) gives every discontinuity of a layout its own
 * kernel mapping, so one-page granularity stops at vm.max_map_count.  Moving
 * page-table entries between private anonymous regions with UFFDIO_MOVE
 * keeps one VMA per region whatever the layout; mremap(MREMAP_DONTUNMAP) is
 * the fallback and costs up to two mappings per moved run.
 *
 * Invariants:
 *   - an area is one private anonymous PROT_READ|PROT_WRITE mapping of
 *     `pages` pages that it owns for its whole life; a move never leaves a
 *     hole in it (UFFDIO_MOVE leaves the source VMA in place, mremap with
 *     MREMAP_DONTUNMAP keeps the source mapped, both empty);
 *   - after a move of k pages the destination holds what the source held
 *     (a source hole becomes a destination hole) and the source reads zero;
 *     a failure stops after a whole number of pages, reported in pages_done;
 *   - UFFD areas are registered (write-protect mode, nothing ever
 *     write-protected) with the userfaultfd of the process that created
 *     them; they move only in that process (after fork the child's copy is
 *     not registered and its descriptor would act on the parent).
 *   - maps is an upper bound of the area's VMAs (1 + 2 per mremap run moved
 *     in), counted in the process-wide estimate of area.c.
 *
 * Syscalls (through the OS layer): userfaultfd (or /dev/userfaultfd) and
 * UFFDIO_API once per process for the probe; mmap/munmap of the area and of
 * the probe's two pages; madvise(MADV_NOHUGEPAGE) so the kernel never has to
 * split a huge page to move one 4 KiB page, madvise(MADV_DONTNEED) to empty a
 * destination, madvise(MADV_POPULATE_WRITE) to populate; UFFDIO_REGISTER per area; UFFDIO_MOVE per run (mode
 * ALLOW_SRC_HOLES is not used: a source hole is reported by -ENOENT and the
 * destination page is then emptied, so the destination always ends up equal
 * to the source); mremap (MAYMOVE|FIXED|DONTUNMAP) per run on the fallback.
 */
#include <ruma/anon.h>
#include "rewire/area_internal.h"
#include "rewire/rewire_ext.h"
#include <ruma/sysinfo.h>

#include "os/os.h"

#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ANON_SHIFT 12
#define ANON_PAGE ((size_t)1 << ANON_SHIFT)
#define ANON_PAGE_LIMIT ((uint64_t)1 << 36)
#define MOVE_RETRIES 64 /* -EAGAIN without progress before giving up */

struct ruma_anon {
	uint8_t *base;
	uint64_t pages;
	ruma_rewire_path path;
	int uffd;
	pid_t pid;
	uint64_t maps, budget, max_map_count;
};

static const char *const path_names[] = {
	[RUMA_REWIRE_AUTO] = "auto",
	[RUMA_REWIRE_MMAP] = "mmap",
	[RUMA_REWIRE_UFFD] = "uffd-move",
	[RUMA_REWIRE_MREMAP] = "mremap",
};

const char *ruma_rewire_path_name(ruma_rewire_path p)
{
	return (unsigned)p <= RUMA_REWIRE_MREMAP ? path_names[p] : "?";
}

/* ---- the probe (once per process) ------------------------------------------------ */

static struct {
	_Atomic uint64_t state; /* pid << 32 | 1 + path (0: not probed) */
	_Atomic int fd;
	const char *_Atomic why;
} probe;

/* Move one page inside a private two-page region: proves registration and the ioctl work. */
static int probe_move(int fd)
{
	void *m;
	int rc = ruma_os_mmap(NULL, 2 * ANON_PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &m);
	if (rc)
		return -ENOMEM; /* says nothing about userfaultfd */
	uint8_t *p = m;
	size_t moved = 0;
	p[0] = 0x5a;
	rc = ruma_os_uffdio_register(fd, p, 2 * ANON_PAGE, UFFDIO_REGISTER_MODE_WP);
	if (!rc)
		rc = ruma_os_uffdio_move(fd, p + ANON_PAGE, p, ANON_PAGE, 0, &moved);
	if (!rc && (moved != ANON_PAGE || p[ANON_PAGE] != 0x5a || p[0] != 0))
		rc = -EIO;
	(void)ruma_os_munmap(m, 2 * ANON_PAGE);
	return rc;
}

static const char *open_failure(int rc)
{
	if (rc == -ENOSYS)
		return "the kernel has no userfaultfd (CONFIG_USERFAULTFD)";
	if (rc == -EPERM || rc == -EACCES)
		return "userfaultfd is not permitted (vm.unprivileged_userfaultfd = 0 and "
		       "no access to /dev/userfaultfd)";
	return "userfaultfd could not be opened";
}

static ruma_rewire_path probe_once(int *fd_out, const char **why, bool *transient)
{
	uint64_t got = 0;
	int fd = -1, rc = ruma_os_userfaultfd(&fd);

	if (rc) {
		*why = open_failure(rc);
		return RUMA_REWIRE_MREMAP;
	}
	rc = ruma_os_uffdio_api(fd, RUMA_UFFD_FEATURE_MOVE, &got);
	if (!rc && !(got & RUMA_UFFD_FEATURE_MOVE))
		rc = -EINVAL;
	if (rc) {
		*why = "the kernel has no UFFDIO_MOVE (Linux < 6.8)";
	} else if ((rc = probe_move(fd)) != 0) {
		*why = "UFFDIO_MOVE refused on private anonymous memory (write-protect "
		       "registration or the move failed)";
		*transient = rc == -ENOMEM; /* no memory for the test pages: ask again later */
	}
	if (rc) {
		close(fd);
		return RUMA_REWIRE_MREMAP;
	}
	*why = "";
	*fd_out = fd;
	return RUMA_REWIRE_UFFD;
}

int ruma_move_probe(ruma_rewire_path *path, const char **why)
{
	uint64_t st = atomic_load(&probe.state);
	pid_t pid = getpid();

	if (!st || (pid_t)(st >> 32) != pid) {
		/*
		 * A descriptor of an earlier probe stays open: areas registered with
		 * it still move through it (and a forked child's copy of the
		 * parent's descriptor is simply left unused).
		 */
		const char *w = "";
		int fd = -1;
		bool transient = false;
		ruma_rewire_path p = probe_once(&fd, &w, &transient);
		if (transient) {
			*path = p;
			if (why)
				*why = w;
			return 0;
		}
		atomic_store(&probe.fd, fd);
		atomic_store(&probe.why, w);
		st = (uint64_t)(uint32_t)pid << 32 | (1u + (unsigned)p);
		atomic_store(&probe.state, st);
	}
	*path = (ruma_rewire_path)((st & 0xffffffffu) - 1);
	if (why)
		*why = atomic_load(&probe.why);
	return 0;
}

void ruma_move_probe_reset(void)
{
	atomic_store(&probe.state, 0);
}

/* ---- areas -------------------------------------------------------------------------- */

int ruma_anon_create(uint64_t pages, ruma_rewire_path path, ruma_anon **out)
{
	ruma_rewire_path avail;
	void *m;
	int rc;

	*out = NULL;
	if (pages == 0 || pages > ANON_PAGE_LIMIT)
		return -EINVAL;
	if (path != RUMA_REWIRE_AUTO && path != RUMA_REWIRE_UFFD && path != RUMA_REWIRE_MREMAP)
		return -EINVAL;
	ruma_move_probe(&avail, NULL);
	if (path == RUMA_REWIRE_AUTO)
		path = avail;
	if (path == RUMA_REWIRE_UFFD && avail != RUMA_REWIRE_UFFD)
		return RUMA_EUNSUPP;
	ruma_anon *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	*a = (ruma_anon){ .pages = pages, .path = path, .uffd = -1, .pid = getpid(), .maps = 1,
			  .budget = UINT64_MAX };
	if (ruma_sysinfo_max_map_count(&a->max_map_count))
		a->max_map_count = 65530;
	size_t len = (size_t)pages << ANON_SHIFT;
	rc = ruma_os_mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m);
	if (rc) {
		free(a);
		return rc;
	}
	a->base = m;
	rc = ruma_os_madvise(m, len, MADV_NOHUGEPAGE);
	if (rc == -EINVAL) /* kernel without THP: nothing to split */
		rc = 0;
	if (!rc && path == RUMA_REWIRE_UFFD) {
		a->uffd = atomic_load(&probe.fd);
		rc = ruma_os_uffdio_register(a->uffd, m, len, UFFDIO_REGISTER_MODE_WP);
	}
	if (!rc)
		rc = area_maps_claim(a->max_map_count, a->maps);
	if (rc) {
		(void)ruma_os_munmap(m, len);
		free(a);
		return rc;
	}
	*out = a;
	return 0;
}

void ruma_anon_destroy(ruma_anon *a)
{
	if (!a)
		return;
	(void)ruma_os_munmap(a->base, (size_t)a->pages << ANON_SHIFT);
	area_maps_release(a->maps);
	free(a);
}

void *ruma_anon_base(const ruma_anon *a)
{
	return a->base;
}

void *ruma_anon_addr(const ruma_anon *a, uint64_t page)
{
	return a->base + ((size_t)page << ANON_SHIFT);
}

uint64_t ruma_anon_pages(const ruma_anon *a)
{
	return a->pages;
}

ruma_rewire_path ruma_anon_path(const ruma_anon *a)
{
	return a->path;
}

void ruma_anon_set_map_budget(ruma_anon *a, uint64_t budget)
{
	a->budget = budget;
}

uint64_t ruma_anon_map_estimate(const ruma_anon *a)
{
	return a->maps;
}

int ruma_anon_discard(ruma_anon *a, uint64_t page, uint64_t n)
{
	if (n == 0 || page >= a->pages || n > a->pages - page)
		return -EINVAL;
	return ruma_os_madvise(ruma_anon_addr(a, page), (size_t)n << ANON_SHIFT, MADV_DONTNEED);
}

int ruma_anon_populate(ruma_anon *a, uint64_t page, uint64_t n)
{
	if (n == 0 || page >= a->pages || n > a->pages - page)
		return -EINVAL;
	uint8_t *p = ruma_anon_addr(a, page);
	int rc = ruma_os_madvise(p, (size_t)n << ANON_SHIFT, MADV_POPULATE_WRITE);
	if (rc != -EINVAL)
		return rc;
	for (uint64_t i = 0; i < n; i++) /* kernel before 5.14 */
		__atomic_fetch_or((uint64_t *)(p + (i << ANON_SHIFT)), 0, __ATOMIC_RELAXED);
	return 0;
}

/* ---- moving one run (ranges do not overlap) ------------------------------------------ */

/* The kernel would not move this page (-EBUSY): copy it and empty the source. */
static int copy_page(uint8_t *dst, uint8_t *src)
{
	memcpy(dst, src, ANON_PAGE);
	return ruma_os_madvise(src, ANON_PAGE, MADV_DONTNEED);
}

static int uffd_run(ruma_anon *d, uint8_t *dst, uint8_t *src, size_t len, ruma_anon_result *r)
{
	bool emptied = false;
	int idle = 0;

	while (len) {
		size_t moved = 0;
		int rc = ruma_os_uffdio_move(d->uffd, dst, src, len, 0, &moved);
		moved &= ~(ANON_PAGE - 1);
		if (moved) {
			r->calls++;
			r->pages_done += moved >> ANON_SHIFT;
			dst += moved;
			src += moved;
			len -= moved;
			idle = 0;
		}
		if (rc == 0 || len == 0)
			continue;
		if (rc == -EAGAIN && ++idle < MOVE_RETRIES)
			continue;
		if (rc == -EEXIST && !emptied) { /* the destination held data: discard it once */
			rc = ruma_os_madvise(dst, len, MADV_DONTNEED);
			emptied = true;
		} else if (rc == -ENOENT) { /* a source hole: the destination page becomes one */
			rc = ruma_os_madvise(dst, ANON_PAGE, MADV_DONTNEED);
			if (!rc)
				goto next_page;
		} else if (rc == -EBUSY) {
			rc = copy_page(dst, src);
			if (!rc) {
				r->pages_copied++;
				goto next_page;
			}
		}
		if (rc)
			return rc;
		continue;
next_page:
		r->pages_done++;
		dst += ANON_PAGE;
		src += ANON_PAGE;
		len -= ANON_PAGE;
	}
	return 0;
}

/* Mappings a batch of `runs` mremap runs may add, checked against both budgets. */
static int mremap_budget(ruma_anon *d, uint64_t runs)
{
	uint64_t add = 2 * runs;

	if (d->maps + add > d->budget)
		return RUMA_EMAPLIMIT;
	int rc = area_maps_claim(d->max_map_count, add);
	if (!rc)
		d->maps += add;
	return rc;
}

static int mremap_run(ruma_anon *d, uint8_t *dst, uint8_t *src, size_t len, ruma_anon_result *r)
{
	void *got;
	int rc = ruma_os_mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
				dst, &got);

	if (rc == -EFAULT && len > ANON_PAGE) {
		/* the source run spans mappings created by earlier moves: halve it */
		size_t half = (len / 2) & ~(ANON_PAGE - 1);
		rc = mremap_run(d, dst, src, half, r);
		return rc ? rc : mremap_run(d, dst + half, src + half, len - half, r);
	}
	if (rc)
		return ruma_area_map_error(rc, false);
	r->calls++;
	r->pages_done += len >> ANON_SHIFT;
	return 0;
}

static int move_run(ruma_anon *d, uint64_t dp, ruma_anon *s, uint64_t sp, uint64_t n,
		    ruma_anon_result *r)
{
	uint8_t *dst = ruma_anon_addr(d, dp), *src = ruma_anon_addr(s, sp);
	size_t len = (size_t)n << ANON_SHIFT;

	if (d->path == RUMA_REWIRE_UFFD)
		return uffd_run(d, dst, src, len, r);
	return mremap_run(d, dst, src, len, r);
}

static bool range_ok(const ruma_anon *a, uint64_t p, uint64_t n)
{
	return n > 0 && p < a->pages && n <= a->pages - p;
}

static int move_check(const ruma_anon *d, const ruma_anon *s)
{
	if (d->path != s->path)
		return -EINVAL;
	if (d->path == RUMA_REWIRE_UFFD && d->pid != getpid())
		return -EINVAL; /* registered in the parent: its descriptor acts on the parent */
	return 0;
}

/* Pieces a span [sp, sp + n) -> [dp, dp + n) is moved in (more than one when it overlaps itself). */
static uint64_t span_piece(const ruma_anon *d, uint64_t dp, const ruma_anon *s, uint64_t sp,
			   uint64_t n)
{
	if (d != s)
		return n;
	return RUMA_MIN(n, dp > sp ? dp - sp : sp - dp);
}

/* Move one span; overlapping spans go in pieces no longer than the distance, in memmove order. */
static int move_span(ruma_anon *d, uint64_t dp, ruma_anon *s, uint64_t sp, uint64_t n,
		     ruma_anon_result *r)
{
	uint64_t piece = span_piece(d, dp, s, sp, n), npieces = (n + piece - 1) / piece;
	int rc = 0;

	for (uint64_t k = 0; !rc && k < npieces; k++) {
		uint64_t i = d == s && dp > sp ? npieces - 1 - k : k; /* backward when moving up */
		uint64_t off = i * piece;
		rc = move_run(d, dp + off, s, sp + off, RUMA_MIN(piece, n - off), r);
	}
	return rc;
}

static uint64_t span_pieces(const ruma_anon *d, uint64_t dp, const ruma_anon *s, uint64_t sp,
			    uint64_t n)
{
	uint64_t piece = span_piece(d, dp, s, sp, n);
	return (n + piece - 1) / piece;
}

int ruma_anon_move(ruma_anon *dst, uint64_t dpage, ruma_anon *src, uint64_t spage, uint64_t n,
		   ruma_anon_result *res)
{
	ruma_anon_result r = { 0 };
	int rc = move_check(dst, src);

	if (res)
		*res = r;
	if (!rc && (!range_ok(dst, dpage, n) || !range_ok(src, spage, n)))
		rc = -EINVAL;
	if (rc || (dst == src && dpage == spage))
		return rc;
	if (dst->path == RUMA_REWIRE_MREMAP)
		rc = mremap_budget(dst, span_pieces(dst, dpage, src, spage, n));
	if (!rc)
		rc = move_span(dst, dpage, src, spage, n, &r);
	if (res)
		*res = r;
	return rc;
}

/* Pairs from i on that form one run (both page numbers contiguous). */
static size_t pair_run(const ruma_move_pair *pairs, size_t i, size_t n)
{
	size_t k = 1;

	while (i + k < n && pairs[i + k].dst == pairs[i].dst + k &&
	       pairs[i + k].src == pairs[i].src + k)
		k++;
	return k;
}

int ruma_anon_move_batch(ruma_anon *dst, ruma_anon *src, const ruma_move_pair *pairs, size_t n,
			 ruma_anon_result *res)
{
	ruma_anon_result r = { 0 };
	int rc = move_check(dst, src);
	uint64_t runs = 0;

	if (res)
		*res = r;
	for (size_t i = 0; !rc && i < n; i++)
		if (pairs[i].dst >= dst->pages || pairs[i].src >= src->pages)
			rc = -EINVAL;
	for (size_t i = 0; !rc && i < n;) {
		size_t k = pair_run(pairs, i, n);
		runs += span_pieces(dst, pairs[i].dst, src, pairs[i].src, k);
		i += k;
	}
	if (!rc && dst->path == RUMA_REWIRE_MREMAP)
		rc = mremap_budget(dst, runs);
	for (size_t i = 0; !rc && i < n;) {
		size_t k = pair_run(pairs, i, n);
		if (pairs[i].dst != pairs[i].src || dst != src)
			rc = move_span(dst, pairs[i].dst, src, pairs[i].src, k, &r);
		else
			r.pages_done += k; /* a page moved onto itself */
		i += k;
	}
	if (res)
		*res = r;
	return rc;
}
