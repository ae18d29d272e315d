/*
 * os.c — syscall wrappers with per-syscall call counters and fault injection.
 *
 * Invariants: a wrapper never leaves errno as its only report — it returns the
 * negative errno; an injected failure is decided before the kernel is entered,
 * so the caller sees exactly what a real failure would look like and no side
 * effect happened.  A hook armed in place of a failure (ruma_os_inject_hook)
 * runs at the same point, in the calling thread, and the call then
 * proceeds.  Counters and injection state are relaxed atomics on their own
 * cache lines: counting costs one uncontended add per syscall.
 *
 * Syscalls: all of those named in os.h, each exactly where its wrapper says.
 * mremap goes through syscall(2): glibc's variadic wrapper reads new_addr
 * only with MREMAP_FIXED, so MREMAP_DONTUNMAP alone would get a garbage
 * address.  userfaultfd is opened with UFFD_USER_MODE_ONLY (no kernel-mode
 * faults are ever handled, so no privilege is needed for that) and its
 * ioctls carry their own struct definitions where the uapi headers are older
 * than the running kernel (UFFDIO_MOVE, Linux 6.8).
 *
 * Simulated power loss (tests only; off unless ruma_os_powerloss_arm was
 * called — then one relaxed load per write/sync/open decides): tracked
 * files keep an undo list of the bytes each unsynced pwrite or pwritev overwrote,
 * read through a second, buffered descriptor (/proc/self/fd/N reopened, so
 * O_DIRECT alignment does not matter); a completed fsync/fdatasync of the
 * descriptor drops from the list the writes that had returned when it was
 * called — not those still under way then or made since, which a real sync
 * need not cover either (two threads' writes and syncs may overlap) — and
 * records the file's size at its call as the synced size.  The power loss
 * undoes the lists newest first and truncates to the synced size.  Every
 * change to a file (write, fallocate, ftruncate) passes a gate that the
 * power loss closes (pl_gate): it lands wholly before the power loss, and
 * is undone by it, or after it, and is dropped; never on a file already
 * put back, where a late write would leave a size no crash can leave.
 * Writes through io_uring are not tracked (tests of it write with
 * pwrite/pwritev).
 *
 * Syscalls: all of those named in os.h, each exactly where its wrapper says;
 * the power-loss simulation uses open/pread/pwrite/ftruncate/fsync/fstat/
 * close on its own descriptors directly.
 */
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct sys_slot {
	_Atomic uint64_t calls;
	_Atomic uint64_t injected;
	_Atomic uint64_t fire_at; /* call number (1-based) that fails; 0 = off */
	_Atomic int err;
	_Atomic bool sticky;
	_Atomic(ruma_os_hook_fn) hook; /* set: fire_at calls it instead of failing */
	void *_Atomic hook_ctx;
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct sys_slot) == 64, "one cache line per syscall");

static struct sys_slot slots[RUMA_SYS_COUNT_];

static const char *const sys_names[RUMA_SYS_COUNT_] = {
	[RUMA_SYS_MMAP] = "mmap",
	[RUMA_SYS_MUNMAP] = "munmap",
	[RUMA_SYS_MREMAP] = "mremap",
	[RUMA_SYS_MPROTECT] = "mprotect",
	[RUMA_SYS_MADVISE] = "madvise",
	[RUMA_SYS_PROCESS_MADVISE] = "process_madvise",
	[RUMA_SYS_MEMFD_CREATE] = "memfd_create",
	[RUMA_SYS_FTRUNCATE] = "ftruncate",
	[RUMA_SYS_FALLOCATE] = "fallocate",
	[RUMA_SYS_OPEN] = "open",
	[RUMA_SYS_PREAD] = "pread",
	[RUMA_SYS_PWRITE] = "pwrite",
	[RUMA_SYS_FSYNC] = "fsync",
	[RUMA_SYS_FDATASYNC] = "fdatasync",
	[RUMA_SYS_PWRITEV] = "pwritev",
	[RUMA_SYS_IO_URING_SETUP] = "io_uring_setup",
	[RUMA_SYS_IO_URING_ENTER] = "io_uring_enter",
	[RUMA_SYS_IO_URING_CQE] = "io_uring_cqe",
	[RUMA_SYS_FUTEX_WAIT] = "futex_wait",
	[RUMA_SYS_FUTEX_WAKE] = "futex_wake",
	[RUMA_SYS_PERF_EVENT_OPEN] = "perf_event_open",
	[RUMA_SYS_REMAP_FILE_PAGES] = "remap_file_pages",
	[RUMA_SYS_FLOCK] = "flock",
	[RUMA_SYS_USERFAULTFD] = "userfaultfd",
	[RUMA_SYS_UFFDIO_API] = "uffdio_api",
	[RUMA_SYS_UFFDIO_REGISTER] = "uffdio_register",
	[RUMA_SYS_UFFDIO_UNREGISTER] = "uffdio_unregister",
	[RUMA_SYS_UFFDIO_MOVE] = "uffdio_move",
	[RUMA_SYS_UFFDIO_COPY] = "uffdio_copy",
	[RUMA_SYS_READ] = "read",
	[RUMA_SYS_WRITE] = "write",
	[RUMA_SYS_FSTAT] = "fstat",
	[RUMA_SYS_BLKGETSIZE64] = "blkgetsize64",
	[RUMA_SYS_PERF_IOCTL] = "perf_ioctl",
	[RUMA_SYS_FADVISE] = "fadvise",
	[RUMA_SYS_POPULATE] = "populate",
};

const char *ruma_os_sys_name(ruma_sys s)
{
	return (unsigned)s < RUMA_SYS_COUNT_ ? sys_names[s] : "?";
}

uint64_t ruma_os_count(ruma_sys s)
{
	return atomic_load_explicit(&slots[s].calls, memory_order_relaxed);
}

void ruma_os_count_reset(void)
{
	for (int i = 0; i < RUMA_SYS_COUNT_; i++) {
		uint64_t was = atomic_exchange(&slots[i].calls, 0);
		uint64_t at = atomic_load(&slots[i].fire_at);
		/* an armed injection keeps its distance: the nth call from arming */
		if (at)
			atomic_store(&slots[i].fire_at, at > was ? at - was : 1);
	}
}

void ruma_os_inject(ruma_sys s, uint64_t nth, int err, bool sticky)
{
	uint64_t now = atomic_load(&slots[s].calls);

	atomic_store(&slots[s].hook, NULL);
	atomic_store(&slots[s].err, err);
	atomic_store(&slots[s].sticky, sticky);
	atomic_store(&slots[s].fire_at, nth ? now + nth : 0);
}

void ruma_os_inject_hook(ruma_sys s, uint64_t nth, ruma_os_hook_fn fn, void *ctx)
{
	uint64_t now = atomic_load(&slots[s].calls);

	atomic_store(&slots[s].hook_ctx, ctx);
	atomic_store(&slots[s].hook, fn);
	atomic_store(&slots[s].sticky, false);
	atomic_store(&slots[s].fire_at, nth && fn ? now + nth : 0);
}

void ruma_os_inject_clear(void)
{
	for (int i = 0; i < RUMA_SYS_COUNT_; i++)
		atomic_store(&slots[i].fire_at, 0);
}

uint64_t ruma_os_injected(ruma_sys s)
{
	return atomic_load(&slots[s].injected);
}

/*
 * Count one call of s; returns the injected negative errno (or, for an
 * injected err of 0, the special value 1 = "short transfer"), else 0.  An
 * armed hook runs here, in the caller's thread, and the call goes on (0).
 */
static int enter(ruma_sys s)
{
	struct sys_slot *sl = &slots[s];
	uint64_t n = atomic_fetch_add_explicit(&sl->calls, 1, memory_order_relaxed) + 1;
	uint64_t at = atomic_load_explicit(&sl->fire_at, memory_order_relaxed);

	if (RUMA_LIKELY(at == 0))
		return 0;
	if (n == at || (n > at && atomic_load(&sl->sticky))) {
		ruma_os_hook_fn hook = atomic_load(&sl->hook);
		if (hook) {
			hook(atomic_load(&sl->hook_ctx));
			return 0;
		}
		atomic_fetch_add(&sl->injected, 1);
		int e = atomic_load(&sl->err);
		return e ? -e : 1;
	}
	return 0;
}

static inline int fail_code(int inj)
{
	return inj == 1 ? -EIO : inj;
}

/* ---- simulated power loss ---------------------------------------------------- */

struct pl_save {
	off_t off;
	size_t len; /* bytes of old content saved (less than written past EOF) */
	char *old;
	uint64_t id;  /* pl_clock when the write began */
	uint64_t ret; /* pl_clock when it returned (UINT64_MAX: not yet) */
};

struct pl_file {
	int fd;        /* the caller's descriptor */
	int plain;     /* our buffered descriptor of the same file */
	off_t synced_size;
	uint64_t synced_at;  /* pl_clock at the call of the last sync that counted */
	struct pl_save *saves;
	size_t n, cap;
};

static _Atomic bool pl_on;
static bool pl_dead;
static pthread_mutex_t pl_mu = PTHREAD_MUTEX_INITIALIZER;
/* held shared by a change to a file from its undo record to its syscall's
 * return, exclusively by the power loss (writer-preferring: a stream of
 * writes cannot hold the power loss off) */
static pthread_rwlock_t pl_gate = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static struct pl_file *pl_files;
static size_t pl_nfiles;
static uint64_t pl_clock; /* orders writes and syncs (under pl_mu) */

static void pl_forget_saves(struct pl_file *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->saves[i].old);
	f->n = 0;
}

static struct pl_file *pl_find(int fd)
{
	for (size_t i = 0; i < pl_nfiles; i++)
		if (pl_files[i].fd == fd)
			return &pl_files[i];
	return NULL;
}

static off_t pl_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) ? 0 : st.st_size;
}

static void pl_track(int fd)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	pthread_mutex_lock(&pl_mu);
	struct pl_file *f = pl_find(fd);
	if (f) { /* descriptor number reused: the old file was closed */
		pl_forget_saves(f);
		free(f->saves);
		close(f->plain);
	} else {
		struct pl_file *nf = realloc(pl_files, (pl_nfiles + 1) * sizeof(*nf));
		if (!nf) {
			pthread_mutex_unlock(&pl_mu);
			return;
		}
		pl_files = nf;
		f = &pl_files[pl_nfiles++];
	}
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->plain = open(path, O_RDWR | O_CLOEXEC);
	f->synced_size = pl_size(fd);
	if (f->plain < 0)
		f->fd = -1; /* cannot track: leave it alone */
	pthread_mutex_unlock(&pl_mu);
}

/* Before a write of [off, off+len) to fd: save the old bytes, the save's
 * id in *id (0: none) for pl_after_write.  Returns true when the write must
 * be dropped (after the power loss). */
static bool pl_before_write(int fd, size_t len, off_t off, uint64_t *id)
{
	*id = 0;
	pthread_mutex_lock(&pl_mu);
	struct pl_file *f = pl_find(fd);
	bool drop = f && pl_dead;
	if (f && !pl_dead) {
		if (f->n == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 64;
			struct pl_save *ns = realloc(f->saves, cap * sizeof(*ns));
			if (ns) {
				f->saves = ns;
				f->cap = cap;
			}
		}
		char *old = malloc(len ? len : 1);
		if (f->n < f->cap && old) {
			ssize_t got = pread(f->plain, old, len, off);
			*id = ++pl_clock;
			f->saves[f->n++] = (struct pl_save){ off, got > 0 ? (size_t)got : 0, old, *id,
							     UINT64_MAX };
		} else {
			free(old);
		}
	}
	pthread_mutex_unlock(&pl_mu);
	return drop;
}

/* After the write whose save is `id` returned: a sync called from now on
 * covers it. */
static void pl_after_write(int fd, uint64_t id)
{
	if (!id)
		return;
	pthread_mutex_lock(&pl_mu);
	struct pl_file *f = pl_find(fd);
	for (size_t i = f ? f->n : 0; i-- > 0;)
		if (f->saves[i].id == id) {
			f->saves[i].ret = ++pl_clock;
			break;
		}
	pthread_mutex_unlock(&pl_mu);
}

/* Before a sync of fd: when it is called, and the file's size then. */
static uint64_t pl_sync_call(int fd, off_t *size)
{
	pthread_mutex_lock(&pl_mu);
	struct pl_file *f = pl_find(fd);
	*size = f ? pl_size(f->plain) : 0;
	uint64_t at = ++pl_clock;
	pthread_mutex_unlock(&pl_mu);
	return at;
}

/* After a successful sync of fd called at `at` (pl_sync_call), when the
 * file was `size` bytes: the writes that had returned by then survive. */
static void pl_synced(int fd, uint64_t at, off_t size)
{
	pthread_mutex_lock(&pl_mu);
	struct pl_file *f = pl_find(fd);
	if (f && !pl_dead && at > f->synced_at) {
		size_t k = 0;
		for (size_t i = 0; i < f->n; i++) {
			if (f->saves[i].ret < at)
				free(f->saves[i].old);
			else
				f->saves[k++] = f->saves[i];
		}
		f->n = k;
		f->synced_size = size;
		f->synced_at = at;
	}
	pthread_mutex_unlock(&pl_mu);
}

static bool pl_is_dead(int fd)
{
	pthread_mutex_lock(&pl_mu);
	bool dead = pl_dead && pl_find(fd);
	pthread_mutex_unlock(&pl_mu);
	return dead;
}

int ruma_os_powerloss_arm(void)
{
	pthread_mutex_lock(&pl_mu);
	pl_dead = false;
	pthread_mutex_unlock(&pl_mu);
	atomic_store(&pl_on, true);
	return 0;
}

int ruma_os_powerloss(void)
{
	return ruma_os_powerloss_torn(NULL);
}

int ruma_os_powerloss_torn(uint64_t *torn)
{
	int err = 0;
	pthread_rwlock_wrlock(&pl_gate);
	pthread_mutex_lock(&pl_mu);
	for (size_t i = 0; i < pl_nfiles; i++) {
		struct pl_file *f = &pl_files[i];
		if (f->fd < 0)
			continue;
		for (size_t k = f->n; k-- > 0;) {
			struct pl_save *sv = &f->saves[k];
			size_t from = 0;
			if (torn && sv->off % 4096 == 0 && sv->len >= 4096) {
				/* the first half of each 4 KiB block of the write made it */
				for (size_t b = 0; b + 4096 <= sv->len; b += 4096) {
					if (pwrite(f->plain, sv->old + b + 2048, 2048, sv->off + (off_t)(b + 2048)) != 2048 && !err)
						err = -EIO;
					(*torn)++;
				}
				from = sv->len - sv->len % 4096;
			}
			if (sv->len > from &&
			    pwrite(f->plain, sv->old + from, sv->len - from, sv->off + (off_t)from) !=
				    (ssize_t)(sv->len - from) && !err)
				err = -EIO;
		}
		pl_forget_saves(f);
		if (ftruncate(f->plain, f->synced_size) && !err)
			err = -errno;
		if (fsync(f->plain) && !err)
			err = -errno;
	}
	pl_dead = true;
	pthread_mutex_unlock(&pl_mu);
	pthread_rwlock_unlock(&pl_gate);
	return err;
}

bool ruma_os_powerloss_dead(void)
{
	pthread_mutex_lock(&pl_mu);
	bool dead = pl_dead;
	pthread_mutex_unlock(&pl_mu);
	return dead;
}

void ruma_os_powerloss_disarm(void)
{
	atomic_store(&pl_on, false);
	pthread_mutex_lock(&pl_mu);
	for (size_t i = 0; i < pl_nfiles; i++) {
		pl_forget_saves(&pl_files[i]);
		free(pl_files[i].saves);
		if (pl_files[i].fd >= 0)
			close(pl_files[i].plain);
	}
	free(pl_files);
	pl_files = NULL;
	pl_nfiles = 0;
	pl_dead = false;
	pthread_mutex_unlock(&pl_mu);
}

static inline bool pl_armed(void)
{
	return RUMA_UNLIKELY(atomic_load_explicit(&pl_on, memory_order_relaxed));
}

/* Pass the gate before a change to a file (pl_gate); true when passed. */
static bool pl_gate_enter(void)
{
	if (!pl_armed())
		return false;
	pthread_rwlock_rdlock(&pl_gate);
	return true;
}

static void pl_gate_leave(bool passed)
{
	if (passed)
		pthread_rwlock_unlock(&pl_gate);
}

int ruma_os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	int inj = enter(RUMA_SYS_MMAP);
	if (inj)
		return fail_code(inj);
	void *p = mmap(addr, len, prot, flags, fd, off);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

int ruma_os_munmap(void *addr, size_t len)
{
	int inj = enter(RUMA_SYS_MUNMAP);
	if (inj)
		return fail_code(inj);
	return munmap(addr, len) ? -errno : 0;
}

int ruma_os_mmap_aligned(size_t len, size_t alignment, int prot, int extra_flags, void **out)
{
	if (alignment < 4096 || len > SIZE_MAX - alignment)
		return -ENOMEM; /* span would wrap */
	size_t span = len + alignment - 4096;
	void *raw = NULL;
	int rc = ruma_os_mmap(NULL, span, prot, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0, &raw);
	if (rc)
		return rc;
	uintptr_t start = (uintptr_t)raw, aligned = (start + alignment - 1) & ~(uintptr_t)(alignment - 1);
	size_t head = aligned - start, tail = span - head - len;

	if (head && (rc = ruma_os_munmap(raw, head)) != 0) {
		ruma_os_munmap(raw, span);
		return rc;
	}
	if (tail && (rc = ruma_os_munmap((void *)(aligned + len), tail)) != 0) {
		ruma_os_munmap((void *)aligned, len + tail);
		return rc;
	}
	*out = (void *)aligned;
	return 0;
}

int ruma_os_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
		   void **out)
{
	int inj = enter(RUMA_SYS_MREMAP);
	if (inj)
		return fail_code(inj);
	/* raw syscall: glibc drops new_addr unless MREMAP_FIXED is set */
	long p = syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
	if (p == -1)
		return -errno;
	*out = (void *)p;
	return 0;
}

int ruma_os_mprotect(void *addr, size_t len, int prot)
{
	int inj = enter(RUMA_SYS_MPROTECT);
	if (inj)
		return fail_code(inj);
	return mprotect(addr, len, prot) ? -errno : 0;
}

int ruma_os_madvise(void *addr, size_t len, int advice)
{
	int inj = enter(RUMA_SYS_MADVISE);
	if (inj)
		return fail_code(inj);
	return madvise(addr, len, advice) ? -errno : 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 uapi; older headers lack it */
#endif

int ruma_os_populate_write(void *addr, size_t len)
{
	int inj = enter(RUMA_SYS_POPULATE);
	if (inj)
		return fail_code(inj);
	return madvise(addr, len, MADV_POPULATE_WRITE) ? -errno : 0;
}

/*
 * A pidfd for this process, opened once per process (pidfd_open, Linux 5.3).
 * The cache holds the pid it was opened for: a child of fork() inherits the
 * parent's pidfd, and advising through it would act on the parent.
 */
static int self_pidfd(void)
{
	static _Atomic uint64_t cached; /* pid << 32 | fd, 0 = none */
	uint64_t c = atomic_load(&cached);
	pid_t pid = getpid();

	if (c && (pid_t)(c >> 32) == pid)
		return (int)(uint32_t)c;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -errno;
	uint64_t mine = (uint64_t)(uint32_t)pid << 32 | (uint32_t)fd;
	if (!atomic_compare_exchange_strong(&cached, &c, mine)) {
		close(fd); /* another thread of this process won */
		return (int)(uint32_t)c;
	}
	return fd;
}

int ruma_os_process_madvise(const struct iovec *iov, size_t n, int advice, size_t *done)
{
	int inj = enter(RUMA_SYS_PROCESS_MADVISE);
	if (inj)
		return fail_code(inj);
	if (n > IOV_MAX)
		return -EINVAL;
	int pfd = self_pidfd();
	if (pfd < 0)
		return pfd;
	long r = syscall(SYS_process_madvise, pfd, iov, n, advice, 0u);
	if (r < 0)
		return -errno;
	if (done)
		*done = (size_t)r;
	return 0;
}

int ruma_os_remap_file_pages(void *addr, size_t size, size_t pgoff, int flags)
{
	int inj = enter(RUMA_SYS_REMAP_FILE_PAGES);
	if (inj)
		return fail_code(inj);
	return remap_file_pages(addr, size, 0, pgoff, flags) ? -errno : 0;
}

int ruma_os_memfd_create(const char *name, unsigned flags, int *fd)
{
	int inj = enter(RUMA_SYS_MEMFD_CREATE);
	if (inj)
		return fail_code(inj);
	int r = memfd_create(name, flags);
	if (r < 0)
		return -errno;
	*fd = r;
	return 0;
}

int ruma_os_ftruncate(int fd, off_t len)
{
	int inj = enter(RUMA_SYS_FTRUNCATE);
	if (inj)
		return fail_code(inj);
	bool gated = pl_gate_enter();
	int r = gated && pl_is_dead(fd) ? 0 : ftruncate(fd, len) ? -errno : 0;
	pl_gate_leave(gated);
	return r;
}

int ruma_os_fadvise(int fd, off_t off, off_t len, int advice)
{
	int inj = enter(RUMA_SYS_FADVISE);
	if (inj)
		return fail_code(inj);
	return -posix_fadvise(fd, off, len, advice);
}

int ruma_os_fallocate(int fd, int mode, off_t off, off_t len)
{
	int inj = enter(RUMA_SYS_FALLOCATE);
	if (inj)
		return fail_code(inj);
	bool gated = pl_gate_enter();
	int r = gated && pl_is_dead(fd) ? 0 : fallocate(fd, mode, off, len) ? -errno : 0;
	pl_gate_leave(gated);
	return r;
}

int ruma_os_open(const char *path, int flags, mode_t mode, int *fd)
{
	int inj = enter(RUMA_SYS_OPEN);
	if (inj)
		return fail_code(inj);
	int r = open(path, flags | O_CLOEXEC, mode);
	if (r < 0)
		return -errno;
	if (pl_armed() && (flags & (O_WRONLY | O_RDWR)))
		pl_track(r);
	*fd = r;
	return 0;
}

ssize_t ruma_os_read(int fd, void *buf, size_t len)
{
	int inj = enter(RUMA_SYS_READ);
	if (inj)
		return inj == 1 ? 0 : inj; /* injected end of file */
	ssize_t r;
	do
		r = read(fd, buf, len);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

ssize_t ruma_os_write(int fd, const void *buf, size_t len)
{
	int inj = enter(RUMA_SYS_WRITE);
	if (inj == 1)
		len /= 2; /* injected partial write */
	else if (inj)
		return inj;
	ssize_t r;
	do
		r = write(fd, buf, len);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int ruma_os_file_probe(int fd, ruma_os_file_info *out)
{
	struct stat st;
	int inj = enter(RUMA_SYS_FSTAT);

	if (inj)
		return fail_code(inj);
	if (fstat(fd, &st))
		return -errno;
	*out = (ruma_os_file_info){ .is_regular = S_ISREG(st.st_mode),
				    .is_blockdev = S_ISBLK(st.st_mode),
				    .allocated = (uint64_t)st.st_blocks * 512u,
				    .dev = (uint64_t)st.st_dev,
				    .ino = (uint64_t)st.st_ino };
	if (out->is_regular)
		out->bytes = (uint64_t)st.st_size;
	if (!out->is_blockdev)
		return 0;
	inj = enter(RUMA_SYS_BLKGETSIZE64);
	if (inj)
		return fail_code(inj);
	return ioctl(fd, BLKGETSIZE64, &out->bytes) ? -errno : 0;
}

/* fsync or fdatasync (sync) of fd, with the fault point `sys` and the
 * power-loss simulator's view (a dead file syncs nothing; a sync makes
 * what was written to it survive a simulated power loss). */
static int sync_fd(int fd, ruma_sys sys, int (*sync)(int))
{
	off_t size = 0;
	uint64_t at = pl_armed() ? pl_sync_call(fd, &size) : 0; /* the call: what it covers */
	int inj = enter(sys);
	if (inj)
		return fail_code(inj);
	if (pl_armed() && pl_is_dead(fd))
		return 0;
	if (sync(fd))
		return -errno;
	if (at)
		pl_synced(fd, at, size);
	return 0;
}

int ruma_os_fsync(int fd)
{
	return sync_fd(fd, RUMA_SYS_FSYNC, fsync);
}

/* One transfer of a _full loop: 1 = retry (EINTR), 0 = progress, else
 * the error to return (RUMA_ESHORTIO when nothing moved: end of file). */
static int full_status(ssize_t r)
{
	if (r == -EINTR)
		return 1;
	if (r < 0)
		return (int)r;
	return r == 0 ? RUMA_ESHORTIO : 0;
}

int ruma_os_fdatasync(int fd)
{
	return sync_fd(fd, RUMA_SYS_FDATASYNC, fdatasync);
}

int ruma_os_lock_exclusive(int fd)
{
	int inj = enter(RUMA_SYS_FLOCK);
	if (inj)
		return fail_code(inj);
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EINTR)
			continue;
		return errno == EWOULDBLOCK ? RUMA_ELOCKED : -errno;
	}
	return 0;
}

ssize_t ruma_os_pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	int inj = enter(RUMA_SYS_PWRITEV);
	if (inj)
		return inj == 1 ? 0 : inj; /* err 0 injects a zero-byte write */
	bool gated = pl_gate_enter();
	size_t len = 0;
	for (int i = 0; gated && i < n; i++)
		len += iov[i].iov_len;
	/* after the power loss: lost */
	uint64_t id = 0;
	ssize_t r = gated && pl_before_write(fd, len, off, &id) ? (ssize_t)len
								  : pwritev(fd, iov, n, off);
	r = r < 0 ? -errno : r;
	if (gated)
		pl_after_write(fd, id);
	pl_gate_leave(gated);
	return r;
}

int ruma_os_pwritev_full(int fd, const struct iovec *iov, int n, off_t off)
{
	struct iovec cur[IOV_MAX];
	int k = 0;

	if (n < 0 || n > IOV_MAX)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (iov[i].iov_len)
			cur[k++] = iov[i];
	struct iovec *v = cur;
	while (k > 0) {
		ssize_t r = ruma_os_pwritev(fd, v, k, off);
		int st = full_status(r);
		if (st == 1)
			continue;
		if (st)
			return st;
		off += r;
		/* drop the buffers written in full, trim the partial one */
		while (k > 0 && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++;
			k--;
		}
		if (k > 0) {
			v->iov_base = (char *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
	}
	return 0;
}

ssize_t ruma_os_pread(int fd, void *buf, size_t len, off_t off)
{
	int inj = enter(RUMA_SYS_PREAD);
	if (inj)
		return inj == 1 ? 0 : inj; /* err 0 injects end-of-file */
	if (pl_armed() && pl_is_dead(fd))
		return -EIO; /* after the power loss: the machine is gone */
	ssize_t r = pread(fd, buf, len, off);
	return r < 0 ? -errno : r;
}

ssize_t ruma_os_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	int inj = enter(RUMA_SYS_PWRITE);
	if (inj)
		return inj == 1 ? 0 : inj; /* err 0 injects a zero-byte write */
	bool gated = pl_gate_enter();
	/* after the power loss: lost */
	uint64_t id = 0;
	ssize_t r = gated && pl_before_write(fd, len, off, &id) ? (ssize_t)len
								  : pwrite(fd, buf, len, off);
	r = r < 0 ? -errno : r;
	if (gated)
		pl_after_write(fd, id);
	pl_gate_leave(gated);
	return r;
}

int ruma_os_pread_full(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t r = ruma_os_pread(fd, p, len, off);
		int st = full_status(r);
		if (st == 1)
			continue;
		if (st)
			return st;
		p += r;
		off += r;
		len -= (size_t)r;
	}
	return 0;
}

int ruma_os_pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t r = ruma_os_pwrite(fd, p, len, off);
		int st = full_status(r);
		if (st == 1)
			continue;
		if (st)
			return st;
		p += r;
		off += r;
		len -= (size_t)r;
	}
	return 0;
}

int ruma_os_futex_wait(uint32_t *addr, uint32_t val, const struct timespec *timeout)
{
	int inj = enter(RUMA_SYS_FUTEX_WAIT);
	if (inj)
		return fail_code(inj);
	long r = syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, timeout, NULL, 0);
	return r < 0 ? -errno : 0;
}

int ruma_os_futex_wake(uint32_t *addr, int n, int *woken)
{
	int inj = enter(RUMA_SYS_FUTEX_WAKE);
	if (inj)
		return fail_code(inj);
	long r = syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	if (r < 0)
		return -errno;
	if (woken)
		*woken = (int)r;
	return 0;
}

int ruma_os_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags, int *fd)
{
	int inj = enter(RUMA_SYS_PERF_EVENT_OPEN);
	if (inj)
		return fail_code(inj);
	long r = syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
	if (r < 0)
		return -errno;
	*fd = (int)r;
	return 0;
}

int ruma_os_perf_ioctl(int fd, unsigned long request)
{
	int inj = enter(RUMA_SYS_PERF_IOCTL);
	if (inj)
		return fail_code(inj);
	return ioctl(fd, request, 0) ? -errno : 0;
}

int ruma_os_uring_init(struct io_uring *ring, unsigned entries)
{
	int inj = enter(RUMA_SYS_IO_URING_SETUP);
	if (inj)
		return fail_code(inj);
	return io_uring_queue_init(entries, ring, 0); /* already a negative errno */
}

int ruma_os_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	int inj = enter(RUMA_SYS_IO_URING_ENTER);
	if (inj)
		return fail_code(inj);
	int r;
	do
		r = io_uring_submit_and_wait(ring, wait_nr);
	while (r == -EINTR);
	return r < 0 ? r : 0;
}

void ruma_os_uring_exit(struct io_uring *ring)
{
	io_uring_queue_exit(ring);
}

/* ---- userfaultfd: page moves ------------------------------------------------------ */

/* struct uffdio_move and its ioctl number (uapi headers before 6.8 lack them). */
struct os_uffdio_move {
	uint64_t dst, src, len, mode;
	int64_t move;
};
#define OS_UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct os_uffdio_move)

int ruma_os_userfaultfd(int *fd)
{
	int inj = enter(RUMA_SYS_USERFAULTFD);
	if (inj)
		return fail_code(inj);
	int flags = O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY;
	long r = syscall(SYS_userfaultfd, flags);
	if (r >= 0) {
		*fd = (int)r;
		return 0;
	}
	int err = -errno;
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return err;
	r = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
	close(dev);
	if (r < 0)
		return err;
	*fd = (int)r;
	return 0;
}

int ruma_os_uffdio_api(int fd, uint64_t want, uint64_t *got)
{
	int inj = enter(RUMA_SYS_UFFDIO_API);
	if (inj)
		return fail_code(inj);
	struct uffdio_api api = { .api = UFFD_API, .features = want };
	if (ioctl(fd, UFFDIO_API, &api))
		return -errno;
	if (got)
		*got = api.features;
	return 0;
}

int ruma_os_uffdio_register(int fd, void *addr, size_t len, uint64_t mode)
{
	int inj = enter(RUMA_SYS_UFFDIO_REGISTER);
	if (inj)
		return fail_code(inj);
	struct uffdio_register reg = { .range = { (uintptr_t)addr, len }, .mode = mode };
	return ioctl(fd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

int ruma_os_uffdio_unregister(int fd, void *addr, size_t len)
{
	int inj = enter(RUMA_SYS_UFFDIO_UNREGISTER);
	if (inj)
		return fail_code(inj);
	struct uffdio_range range = { (uintptr_t)addr, len };
	return ioctl(fd, UFFDIO_UNREGISTER, &range) ? -errno : 0;
}

int ruma_os_uffdio_move(int fd, void *dst, void *src, size_t len, uint64_t mode, size_t *moved)
{
	int inj = enter(RUMA_SYS_UFFDIO_MOVE);
	bool partial = inj == 1;

	*moved = 0;
	if (inj && !partial)
		return inj;
	if (partial) /* the first half (at least one page) only */
		len = len / 2 >= 4096 ? (len / 2) & ~(size_t)4095 : len;
	struct os_uffdio_move m = { (uintptr_t)dst, (uintptr_t)src, len, mode, 0 };
	int rc = ioctl(fd, OS_UFFDIO_MOVE, &m) ? -errno : 0;
	*moved = m.move > 0 ? (size_t)m.move : 0;
	if (!rc && partial)
		return -EAGAIN;
	return rc;
}

int ruma_os_uffdio_copy(int fd, void *dst, const void *src, size_t len, uint64_t mode,
			size_t *copied)
{
	int inj = enter(RUMA_SYS_UFFDIO_COPY);

	*copied = 0;
	if (inj)
		return fail_code(inj);
	struct uffdio_copy c = { (uintptr_t)dst, (uintptr_t)src, len, mode, 0 };
	int rc = ioctl(fd, UFFDIO_COPY, &c) ? -errno : 0;
	*copied = c.copy > 0 ? (size_t)c.copy : 0;
	return rc;
}

int ruma_os_uring_new(unsigned entries, struct io_uring **out)
{
	struct io_uring *ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	int r = ruma_os_uring_init(ring, entries);
	if (r) {
		free(ring);
		return r;
	}
	*out = ring;
	return 0;
}

void ruma_os_uring_free(struct io_uring *ring)
{
	if (!ring)
		return;
	io_uring_queue_exit(ring);
	free(ring);
}

unsigned ruma_os_uring_space(struct io_uring *ring)
{
	return io_uring_sq_space_left(ring);
}

int ruma_os_uring_prep_read(struct io_uring *ring, int fd, void *buf, unsigned len, uint64_t off,
			    uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, buf, len, off);
	io_uring_sqe_set_data64(sqe, data);
	return 0;
}

int ruma_os_uring_prep_write(struct io_uring *ring, int fd, const void *buf, unsigned len,
			     uint64_t off, uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_write(sqe, fd, buf, len, off);
	io_uring_sqe_set_data64(sqe, data);
	return 0;
}

int ruma_os_uring_prep_writev(struct io_uring *ring, int fd, const struct iovec *iov, unsigned n,
			      uint64_t off, uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_writev(sqe, fd, iov, n, off);
	io_uring_sqe_set_data64(sqe, data);
	return 0;
}

/* The result of one reaped completion, after its (counted) injection point. */
static int cqe_result(int res)
{
	int inj = enter(RUMA_SYS_IO_URING_CQE);

	if (RUMA_LIKELY(inj == 0))
		return res;
	if (inj == 1)
		return res > 0 ? res / 2 : res; /* a short transfer */
	return inj;
}

unsigned ruma_os_uring_reap(struct io_uring *ring, uint64_t *data, int *res, unsigned max)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	/* the ring only: io_uring_peek_cqe would enter the kernel (uncounted)
	 * to flush an overflowed completion queue */
	io_uring_for_each_cqe(ring, head, cqe) {
		if (n == max)
			break;
		data[n] = io_uring_cqe_get_data64(cqe);
		res[n] = cqe_result(cqe->res);
		n++;
	}
	io_uring_cq_advance(ring, n);
	return n;
}
