/*
 * bm.c — opening and closing the buffer manager; page allocation with the
 * persistent free-space bitmap; metadata slots; statistics.  The top of
 * src/bm: the metadata pages and checkpoints themselves are store.c's.
 *
 * Store layout (file or block device, page i at offset i * 4096):
 *   page 0              header: magic, format, page size, meta pages,
 *                       capacity (pids the bitmap covers), allocation
 *                       high-water mark, free count, checksum, meta slots,
 *                       durable flag, store id (random, made at creation;
 *                       the log's header names it), LSNs
 *   pages 1..meta-1     free-space bitmap (bit per pid, 1 = freed), written
 *                       up to the high-water mark
 *   pages meta..hw-1    data pages
 * The checksum (FNV-1a over the header with the checksum field zeroed, and
 * the written part of the bitmap) makes a damaged header RUMA_ECORRUPT.
 * Data pages carry their own trailer with a CRC-32C (page.c).
 *
 * Clean-shutdown state: page 0 holds state OPEN from the moment a store is
 * opened (written and fdatasync'ed before open returns, so before any data
 * page can be written) until a clean close has written and synced every
 * page and the metadata; only then is state CLEAN written and synced.  A
 * store found OPEN was not closed cleanly and goes to bm_store_unclean
 * (store.c).
 * The store file is locked (flock, exclusive) from open to close.
 *
 * Invariants: pids below meta_pages are never handed out; pids in
 * [meta_pages, hw) are either allocated or have their free bit set; a pid
 * whose "written" bit is clear has no image on disk and is never read (new
 * pages are zero, as in vmcache).  A regular file is grown with fallocate
 * (ftruncate where unsupported) before a page beyond its end is handed out,
 * so a full disk shows up as -ENOSPC from ruma_bm_alloc, not as a failed
 * write later; a block device refuses allocation past its size.
 *
 * Syscalls (through src/os): open, fstat + ioctl(BLKGETSIZE64) (the store's
 * kind and size), flock (store lock), pread (the first page, to tell a
 * store from other files), ftruncate (a forced fresh store),
 * mmap/munmap/mprotect/madvise (page memory, state array, resident set);
 * close and clock_gettime (mixed into a new store's id) directly.
 * Metadata writes and syncs are store.c's.
 */
#include "bm/bm_int.h"
#include "bm/mtr.h"

#include "os/os.h"

#include "core/sysinfo_ext.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>


/* ---- names ---------------------------------------------------------------- */

static const char *const wait_names[] = { "spin", "yield", "futex", "mutex" };
static const char *const evict_names[] = { "madvise", "process_madvise" };
static const char *const write_names[] = { "pwrite", "uring" };

const char *ruma_bm_wait_name(ruma_bm_wait w)
{
	return (unsigned)w < RUMA_ARRAY_SIZE(wait_names) ? wait_names[w] : "?";
}

const char *ruma_bm_evict_name(ruma_bm_evict e)
{
	return (unsigned)e < RUMA_ARRAY_SIZE(evict_names) ? evict_names[e] : "?";
}

const char *ruma_bm_write_name(ruma_bm_write w)
{
	return (unsigned)w < RUMA_ARRAY_SIZE(write_names) ? write_names[w] : "?";
}

static int parse_name(const char *s, const char *const *names, size_t n, int *out)
{
	if (!s)
		return RUMA_EPARSE;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i])) {
			*out = (int)i;
			return 0;
		}
	return RUMA_EPARSE;
}

int ruma_bm_wait_parse(const char *s, ruma_bm_wait *out)
{
	int v, r = parse_name(s, wait_names, RUMA_ARRAY_SIZE(wait_names), &v);
	if (!r)
		*out = (ruma_bm_wait)v;
	return r;
}

int ruma_bm_evict_parse(const char *s, ruma_bm_evict *out)
{
	int v, r = parse_name(s, evict_names, RUMA_ARRAY_SIZE(evict_names), &v);
	if (!r)
		*out = (ruma_bm_evict)v;
	return r;
}

int ruma_bm_write_parse(const char *s, ruma_bm_write *out)
{
	int v, r = parse_name(s, write_names, RUMA_ARRAY_SIZE(write_names), &v);
	if (!r)
		*out = (ruma_bm_write)v;
	return r;
}

void ruma_bm_config_default(ruma_bm_config *c)
{
	memset(c, 0, sizeof(*c));
	c->virt_bytes = 16ull << 30;
	c->phys_bytes = 4ull << 30;
	c->batch = 64;
	c->max_threads = 128;
	c->wait = RUMA_BM_WAIT_SPIN;
	c->evict = RUMA_BM_EVICT_PROCESS_MADVISE;
	c->write = RUMA_BM_WRITE_URING;
	c->reuse_pages = true;
	c->fresh = false;
	c->direct_io = true;
	c->cleaner = true;
	c->ready_ahead = true;
}

/* ---- helpers -------------------------------------------------------------- */

static void init_writer_preferring(pthread_rwlock_t *l)
{
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
#ifdef __GLIBC__
	(void)pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
	pthread_rwlock_init(l, &a);
	pthread_rwlockattr_destroy(&a);
}

static uint64_t next_pow2(uint64_t v)
{
	uint64_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static int map_anon(size_t len, void **out)
{
	return ruma_os_mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, out);
}

static void unmap(void *p, size_t len)
{
	if (p && len)
		(void)ruma_os_munmap(p, len);
}

static int check_config(const ruma_bm_config *c)
{
	const char *why = NULL;

	if (!c || !c->path || !*c->path)
		why = "no path given";
	else if (c->virt_bytes / RUMA_BM_PAGE_SIZE < 64)
		why = "virt_bytes is below 64 pages";
	else if (c->phys_bytes > c->virt_bytes)
		why = "phys_bytes exceeds virt_bytes";
	else if (c->phys_bytes / RUMA_BM_PAGE_SIZE < BM_MIN_PHYS_PAGES)
		why = "phys_bytes is below 16 pages";
	else if (c->batch == 0)
		why = "batch is 0";
	else if (c->batch > BM_MAX_BATCH)
		why = "batch exceeds 1024";
	else if (c->max_threads == 0 || c->max_threads > BM_MAX_THREADS_LIMIT)
		why = "max_threads must be 1..4096";
	else if ((unsigned)c->wait > RUMA_BM_WAIT_MUTEX || (unsigned)c->evict > RUMA_BM_EVICT_PROCESS_MADVISE ||
		 (unsigned)c->write > RUMA_BM_WRITE_URING)
		why = "unknown wait/evict/write option";
	else if (strlen(c->path) >= sizeof(((ruma_bm *)0)->path))
		why = "path too long";
	else if (c->read_only && c->fresh)
		why = "read_only and fresh together";
	if (!why)
		return 0;
	bm_say(c, "bad configuration: %s", why);
	return -EINVAL;
}

void ruma_bm_report(ruma_bm *bm, const char *line)
{
	bm_say(&bm->cfg, "%s", line);
}

/* ---- storage ---------------------------------------------------------------- */

/*
 * Take the store's exclusive lock (flock on this open file description), so
 * that no second opener — another process, or another ruma_bm_open in this
 * one — reads or truncates a store in use.  The lock goes with the
 * descriptor: it is released by close, or by the kernel when the process dies.
 */
/*
 * A lock can outlive its holder for a moment: a killed process's io_uring
 * keeps a reference to the file until the kernel has torn the ring down,
 * after the process is gone, and a killed process holds its files until
 * it has torn down its memory (a large pool takes a while).  So while the
 * holder is not a live process (dead, not listed in /proc/locks), retry for
 * up to LOCK_GRACE_MS, and while it is exiting for up to LOCK_EXIT_MS.
 */
#define LOCK_GRACE_MS 2000
#define LOCK_EXIT_MS 60000
/* A holder counts as alive once seen alive and not exiting this long (the
 * moment between a kill and the first sign of it in /proc is covered). */
#define LOCK_CONFIRM_MS 50

/* The lock's holder is a live process that is not exiting; *exiting says
 * whether it is on its way out. */
static bool holder_alive(ruma_bm *bm, int *holder, bool *exiting)
{
	*holder = 0;
	*exiting = false;
	if (ruma_sysinfo_flock_holder(bm->st_dev, bm->st_ino, holder) || *holder <= 0)
		return false;
	if (kill(*holder, 0) != 0 && errno != EPERM)
		return false;
	*exiting = ruma_sysinfo_pid_exiting(*holder);
	return !*exiting;
}

static int lock_store(ruma_bm *bm)
{
	int r = ruma_os_lock_exclusive(bm->fd);
	int holder = 0, alive_ms = 0;
	bool exiting = false;

	for (int waited = 0; r == RUMA_ELOCKED && waited < (exiting ? LOCK_EXIT_MS : LOCK_GRACE_MS);
	     waited += 10) {
		alive_ms = holder_alive(bm, &holder, &exiting) ? alive_ms + 10 : 0;
		if (alive_ms > LOCK_CONFIRM_MS)
			break;
		struct timespec ten_ms = { 0, 10 * 1000 * 1000 };
		nanosleep(&ten_ms, NULL);
		r = ruma_os_lock_exclusive(bm->fd);
	}
	if (r == RUMA_ELOCKED) {
		if (ruma_sysinfo_flock_holder(bm->st_dev, bm->st_ino, &holder) || holder <= 0)
			bm_say(&bm->cfg,
				"%s is in use: another process holds its lock (pid unknown); "
				"stop it first or use another store",
				bm->path);
		else if (holder == (int)getpid())
			bm_say(&bm->cfg,
				"%s is in use: it is already open in this process (pid %d); "
				"close it first or use another store",
				bm->path, holder);
		else
			bm_say(&bm->cfg,
				"%s is in use: process %d holds its lock; stop it first or use "
				"another store",
				bm->path, holder);
	} else if (r) {
		bm_say(&bm->cfg, "cannot lock %s: %s", bm->path, ruma_strerror(r));
	}
	return r;
}

/*
 * With fresh: refuse to truncate a regular file that has contents and is not
 * a ruma store (a mistyped path must not destroy someone's file), unless the
 * caller set force.  A ruma store of any format, or an all-zero first page,
 * may be recreated.
 */
static int check_overwritable(ruma_bm *bm)
{
	if (bm->is_blockdev || bm->file_reserved == 0 || bm->cfg.force)
		return 0;
	bool store = false;
	if (bm->file_reserved >= RUMA_BM_PAGE_SIZE) {
		unsigned char *p0 = aligned_alloc(RUMA_BM_PAGE_SIZE, RUMA_BM_PAGE_SIZE);
		if (!p0)
			return -ENOMEM;
		int r = ruma_os_pread_full(bm->fd, p0, RUMA_BM_PAGE_SIZE, 0);
		uint64_t magic;
		memcpy(&magic, p0, sizeof(magic));
		bool zero = true;
		for (size_t i = 0; i < RUMA_BM_PAGE_SIZE && zero; i++)
			zero = p0[i] == 0;
		free(p0);
		if (r)
			return r;
		store = magic == BM_MAGIC || zero;
	}
	if (store)
		return 0;
	bm_say(&bm->cfg,
		"%s exists (%" PRIu64 " bytes) and is not a ruma buffer-manager store: "
		"not overwritten; name another file, remove it, or set force to overwrite it",
		bm->path, bm->file_reserved);
	return RUMA_ENOTSTORE;
}

static int open_storage(ruma_bm *bm)
{
	int flags = bm->cfg.read_only ? O_RDONLY : O_RDWR | O_CREAT;
	ruma_os_file_info st;
	int r;

	r = ruma_os_open(bm->path, flags | (bm->cfg.direct_io ? O_DIRECT : 0), 0644, &bm->fd);
	if (r == -EINVAL && bm->cfg.direct_io) {
		bm_say(&bm->cfg,
			"note: %s: the file system refuses O_DIRECT; using buffered I/O",
			bm->path);
		r = ruma_os_open(bm->path, flags, 0644, &bm->fd);
	}
	if (r) {
		bm_say(&bm->cfg, "cannot open %s: %s", bm->path, ruma_strerror(r));
		bm->fd = -1;
		return r;
	}
	r = ruma_os_file_probe(bm->fd, &st);
	if (r)
		return r;
	bm->st_dev = st.dev;
	bm->st_ino = st.ino;
	if (st.is_blockdev || st.is_regular) {
		r = lock_store(bm);
		if (r)
			return r;
	}
	if (st.is_blockdev) {
		bm->is_blockdev = true;
		bm->dev_bytes = st.bytes;
	} else if (st.is_regular) {
		bm->file_reserved = st.bytes;
	} else {
		bm_say(&bm->cfg, "%s is neither a regular file nor a block device",
			bm->path);
		return -EINVAL;
	}
	return 0;
}

/* ---- open / close ------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A new store's identity: 128 bits mixed from both clocks in nanoseconds,
 * the file's device and inode, and addresses that address-space layout
 * randomisation varies per process; never 0. */
static void make_store_id(ruma_bm *bm)
{
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	uint64_t a = mix((uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
	a = mix(a ^ (uint64_t)(uintptr_t)bm ^ ((uint64_t)(uintptr_t)&rt << 17));
	uint64_t b = mix((uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec);
	b = mix(b ^ bm->st_ino ^ (bm->st_dev << 32) ^ bm->instance ^ a);
	bm->store_id[0] = a;
	bm->store_id[1] = b | 1;
}

static int new_store(ruma_bm *bm)
{
	make_store_id(bm);
	uint64_t cap = div_up(bm->virt_pages, 64) * 64;

	bm->meta_pages = 1 + div_up(cap / 8, RUMA_BM_PAGE_SIZE);
	bm->free_words = cap / 64;
	bm->free_bits = calloc(bm->free_words, sizeof(uint64_t));
	if (!bm->free_bits)
		return -ENOMEM;
	if (bm->meta_pages + 1 >= bm->virt_pages)
		return -EINVAL;
	atomic_store(&bm->alloc_hw, bm->meta_pages);
	bm->free_count = 0;
	if (!bm->is_blockdev && bm->cfg.fresh && bm->file_reserved) {
		int r = ruma_os_ftruncate(bm->fd, 0);
		if (r)
			return r;
		bm->file_reserved = 0;
	}
	pthread_mutex_lock(&bm->alloc_mu);
	int r = bm_ensure_capacity(bm, bm->meta_pages);
	pthread_mutex_unlock(&bm->alloc_mu);
	if (r)
		return r;
	/* empty: consistent; durable (with the truncation) before the log is
	 * emptied for the new id, so a crash in between never pairs the old
	 * page 0 with the new log */
	return bm_meta_write(bm, BM_STATE_CLEAN, true);
}

/* Record durably that the store is open, before any data page is written. */
static int mark_open(ruma_bm *bm)
{
	int r = bm_meta_write(bm, BM_STATE_OPEN, true);
	if (r) {
		bm_say(&bm->cfg, "%s: cannot record that the store is open: %s", bm->path,
			ruma_strerror(r));
		/* no data page was written: put the clean state back if we can */
		(void)bm_meta_write(bm, BM_STATE_CLEAN, true);
	}
	bm->marked_open = r == 0;
	return r;
}

static int map_memory(ruma_bm *bm)
{
	int r;
	void *p;

	bm->map_len = bm->virt_pages * (size_t)RUMA_BM_PAGE_SIZE + BM_GUARD_BYTES;
	r = map_anon(bm->map_len, &p);
	if (r) {
		bm_say(&bm->cfg,
			"cannot reserve %zu bytes of virtual memory: %s "
			"(lower virt_bytes, or check ulimit -v)",
			bm->map_len, ruma_strerror(r));
		bm->map_len = 0;
		return r;
	}
	bm->base = p;
	r = ruma_os_mprotect(bm->base + bm->map_len - BM_GUARD_BYTES, BM_GUARD_BYTES, PROT_READ);
	if (r)
		return r;
	r = ruma_os_madvise(bm->base, bm->map_len, MADV_NOHUGEPAGE);
	if (r)
		return r;

	bm->state_len = bm->virt_pages * sizeof(uint64_t);
	r = map_anon(bm->state_len, &p);
	if (r)
		return r;
	bm->state = p;
	uint64_t hw = atomic_load(&bm->alloc_hw);
	for (uint64_t i = 0; i < hw; i++)
		atomic_store_explicit(&bm->state[i], bm_word(BM_EVICTED, 0, false),
				      memory_order_relaxed);

	bm->written_len = div_up(bm->virt_pages, 64) * sizeof(uint64_t);
	r = map_anon(bm->written_len, &p);
	if (r)
		return r;
	bm->written = p;
	r = map_anon(bm->written_len, &p);
	if (r)
		return r;
	bm->wip = p;
	for (uint64_t pid = bm->meta_pages; pid < hw; pid++)
		if (!((bm->free_bits[pid >> 6] >> (pid & 63)) & 1))
			bm_written_set(bm, pid, true);

	/* room for the pool, the faults in flight on every thread, and slack */
	uint64_t slots = next_pow2(bm->phys_pages + bm->phys_pages / 2 + 2ull * bm->cfg.max_threads + 1);
	bm->rs_mask = slots - 1;
	bm->rs_len = slots * sizeof(uint64_t);
	r = map_anon(bm->rs_len, &p);
	if (r)
		return r;
	bm->rs = p;

	if (bm->cfg.wait == RUMA_BM_WAIT_MUTEX) {
		static const pthread_mutex_t m0 = PTHREAD_MUTEX_INITIALIZER;
		static const pthread_cond_t c0 = PTHREAD_COND_INITIALIZER;
		static const struct bm_pagemutex zero;
		bm->pmx_len = bm->virt_pages * sizeof(struct bm_pagemutex);
		r = map_anon(bm->pmx_len, &p);
		if (r)
			return r;
		bm->pmx = p;
		/* glibc's static initializers are all-zero bytes, so the fresh
		 * zero pages already hold valid mutexes and condvars; otherwise
		 * initialise each (touching the whole array). */
		if (memcmp(&m0, &zero.m, sizeof(m0)) || memcmp(&c0, &zero.c, sizeof(c0)))
			for (uint64_t i = 0; i < bm->virt_pages; i++) {
				pthread_mutex_init(&bm->pmx[i].m, NULL);
				pthread_cond_init(&bm->pmx[i].c, NULL);
			}
		char b1[32];
		bm_say(&bm->cfg,
			"note: mutex wait strategy: %zu bytes of mutex+condvar per page, "
			"%s of virtual memory for the side array (the state word is 8 bytes)",
			sizeof(struct bm_pagemutex), ruma_format_size(bm->pmx_len, b1, sizeof(b1)));
	}
	return 0;
}

/* Open the log for this session and empty it: LSNs go on above every LSN
 * the store has seen; the session's epoch starts there, with a START record
 * (the store's id and that LSN) made durable before page 0 records the
 * log's end: a log cut back to its header is then shorter than page 0 says,
 * and recovery refuses it instead of finding nothing to redo. */
static int wal_start(ruma_bm *bm)
{
	ruma_wal *w = NULL; /* stays NULL when the open fails */
	int r = bm_wal_open(bm, &w);
	if (!r)
		r = ruma_wal_reset(w, RUMA_MAX(bm->meta_next_lsn, ruma_wal_end(w)));
	if (!r) {
		uint64_t start[3] = { bm->store_id[0], bm->store_id[1], ruma_wal_start(w) }, end;
		r = ruma_wal_append(w, BM_WAL_START, start, sizeof(start), NULL, &end);
		if (!r)
			r = ruma_wal_flush(w, end);
	}
	bm->mtrs = r ? NULL : calloc(bm->cfg.max_threads, sizeof(*bm->mtrs));
	if (!r && !bm->mtrs)
		r = -ENOMEM;
	if (r) {
		bm_say(&bm->cfg, "%s: cannot start the log %s.wal: %s", bm->path, bm->path,
			ruma_strerror(r));
		(void)ruma_wal_close(w);
		return r;
	}
	atomic_store(&bm->wal_epoch, ruma_wal_start(w));
	bm->ckpt_redo = bm->ckpt_undo = ruma_wal_start(w);
	bm->wal = w;
	return bm_undo_relog(bm);
}

static void release_all(ruma_bm *bm)
{
	bm_cleaner_stop(bm);
	bm_ahead_stop(bm);
	(void)ruma_wal_close(bm->wal);
	bm_mtr_release_all(bm);
	ruma_bm_undo_free(bm->pending, bm->npending);
	if (bm->threads) {
		for (unsigned i = 0; i < bm->cfg.max_threads; i++)
			bm_thread_free(bm->threads[i]);
		free(bm->threads);
	}
	unmap(bm->pmx, bm->pmx_len);
	unmap(bm->rs, bm->rs_len);
	unmap(bm->written, bm->written_len);
	unmap(bm->wip, bm->written_len);
	unmap((void *)bm->state, bm->state_len);
	unmap(bm->base, bm->map_len);
	free(bm->free_bits);
	if (bm->fd >= 0)
		close(bm->fd);
	bm_extent_index_free(bm);
	pthread_mutex_destroy(&bm->ext_sync_mu);
	pthread_cond_destroy(&bm->ext_sync_cv);
	pthread_cond_destroy(&bm->ahead_done);
	pthread_mutex_destroy(&bm->alloc_mu);
	pthread_mutex_destroy(&bm->thr_mu);
	pthread_mutex_destroy(&bm->flush_mu);
	pthread_mutex_destroy(&bm->active_mu);
	pthread_rwlock_destroy(&bm->writeback_lock);
	free(bm->active);
	free(bm);
}

/* Without a cleaner the manager still works (the evicting threads write
 * every dirty victim themselves): say so and go on. */
static void start_cleaner(ruma_bm *bm)
{
	int r = bm_cleaner_start(bm);
	if (r)
		bm_say(&bm->cfg, "note: no page cleaner thread (%s): evicting threads write "
			"dirty pages themselves", ruma_strerror(r));
}

/* The set of unfinished transactions changes at every begin and commit,
 * in sections of a few stores: a waiter spins a moment before it sleeps
 * (glibc's adaptive mutex), since on two cores a sleep and its wake-up
 * cost more than the section. */
static void init_active_mu(pthread_mutex_t *mu)
{
	pthread_mutexattr_t a;
	if (pthread_mutexattr_init(&a) == 0) {
		(void)pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(mu, &a);
		pthread_mutexattr_destroy(&a);
		return;
	}
	pthread_mutex_init(mu, NULL);
}

/* A manager for c, storage not yet open; NULL when out of memory or
 * threads (*err says which). */
static ruma_bm *new_manager(const ruma_bm_config *c, int *err)
{
	ruma_bm *bm = aligned_alloc(_Alignof(ruma_bm), sizeof(*bm)); /* its cache lines */
	*err = -ENOMEM;
	if (!bm)
		return NULL;
	memset(bm, 0, sizeof(*bm));
	bm->cfg = *c;
	strcpy(bm->path, c->path);
	bm->cfg.path = bm->path;
	bm->fd = -1;
	bm->ops = (struct bm_ops){ .aio_step_self = bm_aio_step_self,
				   .aio_poll = bm_aio_poll,
				   .aio_settle = bm_aio_settle,
				   .aio_free = bm_aio_free,
				   .before_write = bm_mtr_before_write,
				   .before_log_write = bm_extent_before_log_write };
	pthread_mutex_init(&bm->alloc_mu, NULL);
	pthread_mutex_init(&bm->ext_sync_mu, NULL);
	pthread_cond_init(&bm->ext_sync_cv, NULL);
	pthread_cond_init(&bm->ahead_done, NULL);
	pthread_mutex_init(&bm->thr_mu, NULL);
	pthread_mutex_init(&bm->flush_mu, NULL);
	init_active_mu(&bm->active_mu);
	init_writer_preferring(&bm->writeback_lock);
	bm->virt_pages = c->virt_bytes / RUMA_BM_PAGE_SIZE;
	bm->phys_pages = c->phys_bytes / RUMA_BM_PAGE_SIZE;
	bm->hard_limit = bm->phys_pages;
	bm->soft_limit = bm->phys_pages - RUMA_MAX(1, bm->phys_pages / 20);
	bm->threads = calloc(c->max_threads, sizeof(*bm->threads));
	if (!bm->threads) {
		release_all(bm);
		return NULL;
	}
	int r = pthread_key_create(&bm->key, bm_thread_exit);
	if (r) {
		*err = -r;
		release_all(bm);
		return NULL;
	}
	static _Atomic uint64_t instances;
	bm->instance = atomic_fetch_add(&instances, 1) + 1;
	*err = 0;
	return bm;
}

/* A store found in the file: it must fit virt_bytes, and the device or
 * file must still hold every page it records. */
static int check_found_store(ruma_bm *bm)
{
	uint64_t hw = atomic_load(&bm->alloc_hw);
	uint64_t cap = bm->free_words * 64;

	if (hw > bm->virt_pages) {
		bm_say(&bm->cfg,
			"%s holds %" PRIu64 " pages but virt_bytes covers "
			"only %" PRIu64 "; raise virt_bytes",
			bm->path, hw, bm->virt_pages);
		return -EINVAL;
	}
	if (bm->virt_pages > cap)
		bm->virt_pages = cap;
	if (bm->is_blockdev && bm->dev_bytes < hw * RUMA_BM_PAGE_SIZE) {
		bm_say(&bm->cfg,
			"%s: the device has %" PRIu64 " bytes but the store "
			"holds %" PRIu64 "; it was truncated or replaced",
			bm->path, bm->dev_bytes, hw * RUMA_BM_PAGE_SIZE);
		return -ENOSPC;
	}
	if (!bm->is_blockdev && bm->file_reserved < hw * RUMA_BM_PAGE_SIZE) {
		bm_say(&bm->cfg,
			"%s: the file has %" PRIu64 " bytes but the store "
			"holds %" PRIu64 "; it was truncated",
			bm->path, bm->file_reserved, hw * RUMA_BM_PAGE_SIZE);
		return RUMA_ESHORTIO;
	}
	return 0;
}

/* The durability this session runs with: a store with transactions still
 * to undo, or one used with a log before (found), keeps a log. */
static void settle_durability(ruma_bm *bm, bool found)
{
	if (bm->cfg.durability == RUMA_BM_DURABLE_OFF && bm->npending) {
		bm_say(&bm->cfg, "note: %s: transactions cut off by the crash are still to be "
			"undone (when a tree is opened): this session keeps a log (durability sync)",
			bm->path);
		bm->cfg.durability = RUMA_BM_DURABLE_SYNC;
	}
	if (bm->cfg.durability == RUMA_BM_DURABLE_OFF && found && bm->meta_wal) {
		/* a session without its log would leave a durable store that a
		 * crash makes unrecoverable */
		bm_say(&bm->cfg, "note: %s is a durable store: it is always opened with its log "
			"(durability sync; set durability to async for asynchronous commits; to use "
			"it without a log, recreate it)", bm->path);
		bm->cfg.durability = RUMA_BM_DURABLE_SYNC;
	}
}

/* A read-only open takes the store as it is, or refuses it: nothing to
 * find, or a recovery to run, would need writes. */
static int check_readable_as_is(ruma_bm *bm, bool found)
{
	if (!found) {
		bm_say(&bm->cfg, "%s holds no store (a read-only open creates none)", bm->path);
		return RUMA_ENOTSTORE;
	}
	if (bm->needs_recovery) {
		bm_say(&bm->cfg, "%s was not closed cleanly: a read-only open does not recover it "
			"(recovery writes the store and its log)", bm->path);
		return RUMA_EUNCLEAN;
	}
	bm->cfg.durability = RUMA_BM_DURABLE_OFF; /* the log is left as it is */
	return 0;
}

/* Open the file, then find the store in it (or create it), map it, recover it. */
static int open_store(ruma_bm *bm)
{
	bool found = false;
	int r = open_storage(bm);

	if (!r && !bm->cfg.fresh)
		r = bm_meta_read(bm, &found);
	if (!r && bm->cfg.read_only)
		r = check_readable_as_is(bm, found);
	if (!r && bm->cfg.fresh)
		r = check_overwritable(bm);
	if (!r)
		r = found ? check_found_store(bm) : new_store(bm);
	if (!r && bm->phys_pages > bm->virt_pages)
		bm->phys_pages = bm->virt_pages;
	if (!r)
		r = map_memory(bm);
	if (r || bm->cfg.read_only)
		return r; /* read-only: never marked open, nothing written */
	if (bm->needs_recovery)
		r = bm_recover(bm);
	if (!r)
		settle_durability(bm, found);
	if (!r && bm->cfg.durability != RUMA_BM_DURABLE_OFF && !bm->wal)
		r = wal_start(bm); /* (recovery may have kept its log going) */
	if (!r)
		r = mark_open(bm);
	return r;
}

int ruma_bm_open(const ruma_bm_config *c, ruma_bm **out)
{
	int r = check_config(c);

	if (r)
		return r;
	ruma_bm *bm = new_manager(c, &r);
	if (!bm)
		return r;
	r = open_store(bm);
	if (r) {
		pthread_key_delete(bm->key);
		release_all(bm);
		return r;
	}
	bm_io_open(bm);
	if (bm->cfg.cleaner && !bm->cfg.read_only)
		start_cleaner(bm);
	if (bm->cfg.ready_ahead && !bm->cfg.read_only && bm_ahead_start(bm))
		bm_say(&bm->cfg, "note: no thread to make frames ready ahead of allocation: "
			"allocating threads fault them in themselves");
	*out = bm;
	return 0;
}

int ruma_bm_flush(ruma_bm *bm)
{
	if (bm->cfg.read_only)
		return 0; /* nothing can be dirty */
	pthread_mutex_lock(&bm->flush_mu);
	int err = bm->wal ? bm_wal_checkpoint(bm) : bm_checkpoint(bm);
	pthread_mutex_unlock(&bm->flush_mu);
	return err;
}

/*
 * Clean close: every page and the metadata written and synced first; only
 * then is page 0 rewritten with state CLEAN (and synced).  Any failure
 * before leaves the store marked open, so the next open refuses it instead
 * of trusting metadata that does not match the pages.
 */
/* What a clean close writes (a read-only manager has nothing to write):
 * every page and the metadata, synced, then state CLEAN and an empty log. */
static int write_back_and_mark_clean(ruma_bm *bm)
{
	bm_cleaner_stop(bm);
	pthread_mutex_lock(&bm->flush_mu);
	int err = bm_checkpoint(bm);
	bool losers = atomic_load(&bm->undo_outstanding);
	if (!err && losers)
		bm_say(&bm->cfg, "%s: transactions cut off by a crash were not undone yet (no "
			"tree was opened): the store stays marked open, the next open "
			"recovers them", bm->path);
	if (!err && bm->marked_open && !losers)
		err = bm_meta_write(bm, BM_STATE_CLEAN, true);
	if (!err && bm->wal && !losers) /* clean: the log is not needed */
		err = ruma_wal_reset(bm->wal, ruma_wal_end(bm->wal));
	pthread_mutex_unlock(&bm->flush_mu);
	if (err)
		bm_say(&bm->cfg,
			"%s: closing failed (%s); the store stays marked as not closed cleanly",
			bm->path, ruma_strerror(err));
	return err;
}

int ruma_bm_close(ruma_bm *bm)
{
	if (!bm)
		return 0;
	long open_txns = ruma_counter_sum(&bm->txns_open);
	if (open_txns > 0) {
		bm_say(&bm->cfg, "%s: %ld transaction(s) still open: commit or abort them, then "
			"close (nothing was closed)", bm->path, open_txns);
		return -EBUSY;
	}
	int err = bm->cfg.read_only ? 0 : write_back_and_mark_clean(bm);
	pthread_key_delete(bm->key);
	release_all(bm);
	return err;
}

void ruma_bm_txn_count(ruma_bm *bm, int delta)
{
	ruma_counter_add(&bm->txns_open, delta);
}

/* ---- allocation ---------------------------------------------------------------- */

static bool take_free_id(ruma_bm *bm, ruma_pid *pid)
{
	for (uint64_t n = 0; n < bm->free_words; n++) {
		uint64_t wi = (bm->free_hint + n) % bm->free_words;
		uint64_t w = bm->free_bits[wi];
		if (!w)
			continue;
		unsigned b = (unsigned)__builtin_ctzll(w);
		bm->free_bits[wi] = w & (w - 1);
		bm->free_hint = wi;
		bm->free_count--;
		*pid = wi * 64 + b;
		return true;
	}
	return false;
}

/* With a log: the new page enters the thread's mini-transaction (mtr.c). */
static int logged_alloc(ruma_bm *bm, ruma_pid pid)
{
	int r = bm_mtr_latched(bm, pid, true);
	if (r)
		(void)ruma_bm_free(bm, pid);
	return r;
}

/*
 * New page ids come in order from the high-water mark, and the first write
 * to each one's frame is a page fault that gets a zeroed page from the
 * kernel.  The thread of ahead.c makes them ready before they are taken,
 * within the pool's size; where it does not run, the id at every
 * BM_POPULATE_AHEAD-th position makes the frames
 * of the next BM_POPULATE_AHEAD ids in one call instead (ruma_os_populate_write;
 * pages already written keep their contents).  Measured on a 2-core VM: a
 * first write cost 14-15 us per page, one fault at a time, and 5.6-5.8 us
 * per page in batches of 64.  At most BM_POPULATE_AHEAD - 1 frames are
 * made before their ids are in use.  Best effort: a kernel without it
 * (before 5.14) is not asked again; any other failure (a memory limit)
 * leaves the faults to happen as before.
 */
#define BM_POPULATE_AHEAD 64u

/* A frame for pid, not made ready by ahead.c: without that thread, the
 * frames of the next BM_POPULATE_AHEAD ids at every BM_POPULATE_AHEAD-th
 * id; with it (it fell behind, or the pool has no room for ready frames)
 * pid's own frame only, so that no frame is made outside the pool's
 * count (0.8 + 5-6 us at the first store against 11-13 for a fault,
 * docs/bench/machine.md). */
static void populate_ahead(ruma_bm *bm, ruma_pid pid, bool thread)
{
	if (thread)
		bm_populate(bm, pid, 1);
	else if (pid % BM_POPULATE_AHEAD == 0)
		bm_populate(bm, pid, RUMA_MIN(BM_POPULATE_AHEAD, bm->virt_pages - pid));
}

/* The id at the high-water mark (alloc_mu held); *ready: see
 * bm_ahead_take. */
static int take_new_id(ruma_bm *bm, ruma_pid *pid, bool *ready)
{
	uint64_t hw = bm_ahead_take(bm, 1, ready);
	if (hw >= bm->virt_pages)
		return RUMA_EVIRTFULL;
	int r = bm_ensure_capacity(bm, hw + 1);
	if (r)
		return r;
	*pid = hw;
	atomic_store(&bm->alloc_hw, hw + 1);
	return 0;
}

int ruma_bm_alloc(ruma_bm *bm, ruma_pid *pid_out, void **page)
{
	struct bm_thread *t;
	ruma_pid pid = 0;
	bool reused = false, ready = false, self_populate = false;
	if (bm->cfg.read_only)
		return -EACCES;
	int r = bm_thread_get(bm, &t);

	if (!r)
		r = bm_ensure_free(bm, t);
	if (r)
		return r;
	pthread_mutex_lock(&bm->alloc_mu);
	if (bm->cfg.reuse_pages && bm->free_count)
		reused = take_free_id(bm, &pid);
	if (!reused) {
		r = take_new_id(bm, &pid, &ready);
		self_populate = !bm->ahead;
	}
	pthread_mutex_unlock(&bm->alloc_mu);
	if (r)
		return r;

	if (!reused) {
		if (!ready)
			populate_ahead(bm, pid, !self_populate);
		/* Nobody can know this pid yet: latch it directly. */
		atomic_store(&bm->state[pid], bm_word(BM_LOCKED, 0, true));
		if (ready) /* a ready frame is counted already */
			atomic_fetch_sub(&bm->ahead_held, 1);
		else
			atomic_fetch_add(&bm->phys_used, 1);
		bm_rs_insert(bm, pid);
		*pid_out = pid;
		*page = bm_page(bm, pid);
		return RUMA_UNLIKELY(bm->wal != NULL) ? logged_alloc(bm, pid) : 0;
	}
	unsigned n = 0;
	for (;;) {
		uint64_t w = atomic_load(&bm->state[pid]);
		unsigned s = bm_st(w);
		if (s == BM_EVICTED || s == BM_UNLOCKED || s == BM_MARKED) {
			if (!atomic_compare_exchange_strong(&bm->state[pid], &w,
							    bm_word(BM_LOCKED, bm_ver(w), true)))
				continue;
			if (s == BM_EVICTED) {
				atomic_fetch_add(&bm->phys_used, 1);
				bm_rs_insert(bm, pid);
			}
			break;
		}
		bm_wait(bm, pid, w, &n);
	}
	BM_IGNORE_WRITES_BEGIN();
	memset(bm_page(bm, pid), 0, RUMA_BM_PAGE_SIZE);
	BM_IGNORE_WRITES_END();
	*pid_out = pid;
	*page = bm_page(bm, pid);
	return RUMA_UNLIKELY(bm->wal != NULL) ? logged_alloc(bm, pid) : 0;
}

int ruma_bm_free(ruma_bm *bm, ruma_pid pid)
{
	if (bm->cfg.read_only)
		return -EACCES;
	if (pid < bm->meta_pages || pid >= atomic_load(&bm->alloc_hw))
		return -EINVAL;
	uint64_t w = atomic_load(&bm->state[pid]);
	if (bm_st(w) != BM_LOCKED)
		return -EINVAL;
	if (RUMA_UNLIKELY(bm->wal != NULL))
		bm_mtr_free(bm, pid); /* logged before the bit can be seen (meta_write) */
	bm_wip_wait(bm, pid); /* no earlier image may land after the page's next life's */
	pthread_mutex_lock(&bm->alloc_mu);
	uint64_t bit = 1ull << (pid & 63);
	if (bm->free_bits[pid >> 6] & bit) {
		pthread_mutex_unlock(&bm->alloc_mu);
		return -EINVAL;
	}
	bm_written_set(bm, pid, false);
	bm->free_bits[pid >> 6] |= bit;
	bm->free_count++;
	if ((pid >> 6) < bm->free_hint)
		bm->free_hint = pid >> 6;
	pthread_mutex_unlock(&bm->alloc_mu);
	/* clean: a freed page is never written back */
	atomic_store(&bm->state[pid], bm_word(BM_UNLOCKED, bm_ver(w) + 1, false));
	bm_wake(bm, pid);
	return 0;
}

ruma_bm_page_state ruma_bm_page_state_of(ruma_bm *bm, ruma_pid pid)
{
	if (pid < bm->meta_pages)
		return RUMA_BM_PAGE_META;
	pthread_mutex_lock(&bm->alloc_mu);
	ruma_bm_page_state st = RUMA_BM_PAGE_BEYOND;
	uint64_t bit = 1ull << (pid & 63);
	if (pid < atomic_load(&bm->alloc_hw))
		st = (bm->free_bits[pid >> 6] & bit) || (bm->ext_bits && (bm->ext_bits[pid >> 6] & bit))
			     ? RUMA_BM_PAGE_FREE
			     : RUMA_BM_PAGE_USED;
	pthread_mutex_unlock(&bm->alloc_mu);
	return st;
}

uint64_t ruma_bm_high_water(ruma_bm *bm)
{
	return atomic_load(&bm->alloc_hw);
}

/* ---- metadata slots and statistics ------------------------------------------------- */

int ruma_bm_meta_get(ruma_bm *bm, unsigned slot, uint64_t *value)
{
	if (slot >= RUMA_BM_META_SLOTS)
		return -EINVAL;
	*value = atomic_load(&bm->meta_slots[slot]);
	return 0;
}

int ruma_bm_meta_set(ruma_bm *bm, unsigned slot, uint64_t value)
{
	if (slot >= RUMA_BM_META_SLOTS)
		return -EINVAL;
	if (bm->cfg.read_only)
		return -EACCES;
	atomic_store(&bm->meta_slots[slot], value);
	return RUMA_UNLIKELY(bm->wal != NULL) ? bm_mtr_meta(bm, slot, value) : 0;
}

void ruma_bm_get_stats(const ruma_bm *bm, ruma_bm_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < bm->cfg.max_threads; i++) {
		const struct bm_thread *t = atomic_load_explicit(&bm->threads[i], memory_order_acquire);
		if (!t)
			continue;
		out->reads += atomic_load_explicit(&t->reads, memory_order_relaxed);
		out->writes += atomic_load_explicit(&t->writes, memory_order_relaxed);
		out->evictions += atomic_load_explicit(&t->evictions, memory_order_relaxed);
		out->aio_waits += atomic_load_explicit(&t->aio_waits, memory_order_relaxed);
		out->aio_wait_depth += atomic_load_explicit(&t->aio_wait_depth, memory_order_relaxed);
	}
	/* the free count first: it never exceeds the high-water mark read after it */
	uint64_t free_ids = atomic_load_explicit(&bm->free_count, memory_order_relaxed) +
			    atomic_load_explicit(&bm->ext_free_count, memory_order_relaxed);
	uint64_t hw = atomic_load(&bm->alloc_hw);
	out->pages_allocated = hw - free_ids;
	out->pages_free = free_ids;
	uint64_t used = atomic_load(&bm->phys_used), held = atomic_load(&bm->ahead_held);
	out->pages_resident = used > held ? used - held : 0;
	out->restarts = atomic_load(&bm->restarts);
	out->cleaned = bm_cleaner_writes(bm);
	out->writes += out->cleaned;
	out->state_bytes = bm->state_len + bm->pmx_len;
}
