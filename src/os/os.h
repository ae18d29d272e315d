/*
 * os.h — the operating-system layer.  This is the ONLY code in ruma that issues
 * mmap, munmap, mremap, mprotect, madvise, process_madvise, memfd_create,
 * ftruncate, fallocate, fadvise, open, read, write, pread, pwrite, pwritev, fsync,
 * fdatasync, flock, fstat, ioctl(BLKGETSIZE64), io_uring, futex,
 * perf_event_open and its ioctls, remap_file_pages, userfaultfd and its ioctls.
 *
 * Every wrapper
 *   - returns 0 (or a byte count for pread/pwrite) or a negative errno,
 *   - counts its calls per syscall (ruma_os_count), so tests can prove e.g.
 *     that a batch rewire issued exactly one mmap per contiguous run,
 *   - honours fault injection (ruma_os_inject): a test can make the Nth
 *     call of a given syscall fail with a chosen errno, without the kernel
 *     ever seeing it, or run a hook of its own just before that call
 *     (ruma_os_inject_hook) to hold it back.
 * Counters and injection points are process-wide atomics, safe from any thread.
 */
#ifndef RUMA_OS_OS_H
#define RUMA_OS_OS_H

#include <ruma/ruma.h>

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

typedef enum ruma_sys {
	RUMA_SYS_MMAP,
	RUMA_SYS_MUNMAP,
	RUMA_SYS_MREMAP,
	RUMA_SYS_MPROTECT,
	RUMA_SYS_MADVISE,
	RUMA_SYS_PROCESS_MADVISE,
	RUMA_SYS_MEMFD_CREATE,
	RUMA_SYS_FTRUNCATE,
	RUMA_SYS_FALLOCATE,
	RUMA_SYS_OPEN,
	RUMA_SYS_PREAD,
	RUMA_SYS_PWRITE,
	RUMA_SYS_FSYNC,
	RUMA_SYS_FDATASYNC,
	RUMA_SYS_PWRITEV,
	RUMA_SYS_IO_URING_SETUP,
	RUMA_SYS_IO_URING_ENTER,
	RUMA_SYS_IO_URING_CQE, /* one io_uring completion reaped (no syscall) */
	RUMA_SYS_FUTEX_WAIT,
	RUMA_SYS_FUTEX_WAKE,
	RUMA_SYS_PERF_EVENT_OPEN,
	RUMA_SYS_REMAP_FILE_PAGES,
	RUMA_SYS_FLOCK,
	/* userfaultfd page moves (ruma_os_userfaultfd ... ruma_os_uffdio_move) */
	RUMA_SYS_USERFAULTFD,
	RUMA_SYS_UFFDIO_API,
	RUMA_SYS_UFFDIO_REGISTER,
	RUMA_SYS_UFFDIO_UNREGISTER,
	RUMA_SYS_UFFDIO_MOVE,
	RUMA_SYS_UFFDIO_COPY,
	/* end of the userfaultfd block */
	RUMA_SYS_READ,         /* read(2) of a /proc, /sys or counter descriptor */
	RUMA_SYS_WRITE,        /* write(2) to a /proc or /sys file */
	RUMA_SYS_FSTAT,        /* fstat(2) of a store or file (ruma_os_file_probe) */
	RUMA_SYS_BLKGETSIZE64, /* ioctl(BLKGETSIZE64) of a block device */
	RUMA_SYS_PERF_IOCTL,   /* ioctl(PERF_EVENT_IOC_*) of a perf counter */
	RUMA_SYS_FADVISE,      /* posix_fadvise(2): read-ahead hints */
	RUMA_SYS_POPULATE,     /* madvise(MADV_POPULATE_WRITE): frames made ahead */
	RUMA_SYS_COUNT_
} ruma_sys;

/* ruma_os_sys_name — "mmap", "pread", ... for messages and tables. */
const char *ruma_os_sys_name(ruma_sys s);

/* ---- call counting ------------------------------------------------------ */

/* ruma_os_count — calls of s since start or the last reset (failed calls included). */
uint64_t ruma_os_count(ruma_sys s);

/* ruma_os_count_reset — set every counter to zero (armed injections still
 * fire at the call they were armed for). */
void ruma_os_count_reset(void);

/* ---- fault injection ------------------------------------------------------ */

/*
 * ruma_os_inject — make the nth call of s from now on (nth = 1: the next one)
 * fail with -err (err is a positive errno, e.g. ENOMEM).  With sticky, that
 * call and every later one fail until ruma_os_inject_clear.  The failed call
 * is counted but does not reach the kernel.  One injection per syscall is
 * armed at a time; arming again replaces it.
 */
void ruma_os_inject(ruma_sys s, uint64_t nth, int err, bool sticky);

/* A hook run at a chosen call (ruma_os_inject_hook). */
typedef void (*ruma_os_hook_fn)(void *ctx);

/*
 * ruma_os_inject_hook — at the nth call of s from now on (nth = 1: the next
 * one), call fn(ctx) in the calling thread before that call goes on to the
 * kernel as usual: it does not fail and is not counted by ruma_os_injected.
 * A test holds a call back this way until other threads have reached a
 * point, which makes an interleaving deterministic.  Fires once.  Shares the
 * one injection of s with ruma_os_inject (arming either replaces the other);
 * ruma_os_inject_clear disarms it.
 */
void ruma_os_inject_hook(ruma_sys s, uint64_t nth, ruma_os_hook_fn fn, void *ctx);

/* ruma_os_inject_clear — disarm every injection (hooks included). */
void ruma_os_inject_clear(void);

/* ruma_os_injected — how many calls of s failed by injection so far. */
uint64_t ruma_os_injected(ruma_sys s);

/* ---- memory mapping ------------------------------------------------------- */

/* mmap(2); the mapping address comes back in *out. */
int ruma_os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out);
int ruma_os_munmap(void *addr, size_t len);
/*
 * A private anonymous mapping of len bytes with protection prot, starting at
 * a multiple of alignment (a power of two, at least 4 KiB): one mmap of the
 * span, the head and tail beyond the aligned part unmapped.  extra_flags are
 * added to MAP_PRIVATE | MAP_ANONYMOUS.  0 or a negative errno (nothing
 * stays mapped).
 */
int ruma_os_mmap_aligned(size_t len, size_t alignment, int prot, int extra_flags, void **out);
/* mremap(2); new_addr is used only with MREMAP_FIXED. */
int ruma_os_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
		   void **out);
int ruma_os_mprotect(void *addr, size_t len, int prot);
int ruma_os_madvise(void *addr, size_t len, int advice);
/* madvise(MADV_POPULATE_WRITE) (Linux 5.14): make the private anonymous
 * pages of [addr, addr+len) present and writable in one call, the frames
 * that the first writes would otherwise fault in one at a time; pages
 * already present keep their contents.  -EINVAL where the kernel lacks it. */
int ruma_os_populate_write(void *addr, size_t len);
/*
 * process_madvise(2) on this process over n ranges (n <= IOV_MAX); *done gets
 * the number of bytes advised.  -EINVAL/-ENOSYS when the kernel refuses
 * (before 6.13 only some advice values are accepted for the own process).
 */
int ruma_os_process_madvise(const struct iovec *iov, size_t n, int advice, size_t *done);
/* remap_file_pages(2) (deprecated; emulated with VMAs since Linux 4.0). */
int ruma_os_remap_file_pages(void *addr, size_t size, size_t pgoff, int flags);

/* ---- files ------------------------------------------------------------------ */

/* memfd_create(2); the new descriptor comes back in *fd. */
int ruma_os_memfd_create(const char *name, unsigned flags, int *fd);
int ruma_os_ftruncate(int fd, off_t len);
int ruma_os_fallocate(int fd, int mode, off_t off, off_t len);
/* posix_fadvise(fd, off, len, advice): 0 or the negative error (it returns
 * the error, not errno). */
int ruma_os_fadvise(int fd, off_t off, off_t len, int advice);
/* open(2); the descriptor comes back in *fd. */
int ruma_os_open(const char *path, int flags, mode_t mode, int *fd);
int ruma_os_fsync(int fd);
/* fdatasync(2): file data and the metadata needed to read it back. */
int ruma_os_fdatasync(int fd);
/*
 * ruma_os_lock_exclusive — flock(fd, LOCK_EX | LOCK_NB): an exclusive lock
 * held by fd's open file description (so a second open of the same file in
 * this process conflicts too, and a forked child shares it), released when
 * the last descriptor of that description is closed.  Works on regular files
 * and block devices.  Returns 0, RUMA_ELOCKED when another open file
 * description holds a lock, or a negative errno.  Never blocks.
 */
int ruma_os_lock_exclusive(int fd);
/* One pwritev(2): bytes written (>= 0) or a negative errno. */
ssize_t ruma_os_pwritev(int fd, const struct iovec *iov, int n, off_t off);
/*
 * One read(2) / write(2) at the file position (for /proc and /sys files and
 * perf counters, whose contents are not addressed by offset), retried after
 * EINTR: bytes transferred (>= 0) or a negative errno.  An injected err of
 * 0 is an empty read (end of file) / a write of half the bytes.
 */
ssize_t ruma_os_read(int fd, void *buf, size_t len);
ssize_t ruma_os_write(int fd, const void *buf, size_t len);
/* What ruma_os_file_probe learns about a descriptor. */
typedef struct ruma_os_file_info {
	bool is_regular;  /* a regular file: bytes is its size */
	bool is_blockdev; /* a block device: bytes is the device size */
	uint64_t bytes;   /* 0 for anything else */
	uint64_t allocated; /* bytes of storage behind it (st_blocks * 512) */
	uint64_t dev, ino;
} ruma_os_file_info;
/*
 * ruma_os_file_probe — fstat(2) of fd and, for a block device,
 * ioctl(BLKGETSIZE64): the kind, size, device and inode into *out.
 * Returns 0 or the negative errno of the call that failed (counted as
 * RUMA_SYS_FSTAT and RUMA_SYS_BLKGETSIZE64, each injectable).
 */
int ruma_os_file_probe(int fd, ruma_os_file_info *out);
/* pwritev until every byte of the n buffers is written (EINTR and partial
 * writes retried); 0, a negative errno, or RUMA_ESHORTIO. */
int ruma_os_pwritev_full(int fd, const struct iovec *iov, int n, off_t off);
/* One pread(2)/pwrite(2): bytes transferred (>= 0) or a negative errno. */
ssize_t ruma_os_pread(int fd, void *buf, size_t len, off_t off);
ssize_t ruma_os_pwrite(int fd, const void *buf, size_t len, off_t off);
/*
 * Transfer exactly len bytes, retrying after EINTR and partial transfers.
 * Returns 0, a negative errno, or RUMA_ESHORTIO when the file ends first.
 */
int ruma_os_pread_full(int fd, void *buf, size_t len, off_t off);
int ruma_os_pwrite_full(int fd, const void *buf, size_t len, off_t off);

/* ---- futex ------------------------------------------------------------------- */

/*
 * Wait while *addr == val (private futex).  timeout may be NULL.  Returns 0
 * when woken, -EAGAIN when *addr != val, -ETIMEDOUT, -EINTR.
 */
int ruma_os_futex_wait(uint32_t *addr, uint32_t val, const struct timespec *timeout);
/* Wake up to n waiters on addr; *woken (may be NULL) gets how many. */
int ruma_os_futex_wake(uint32_t *addr, int n, int *woken);

/* ---- perf events --------------------------------------------------------------- */

struct perf_event_attr;
/* perf_event_open(2); the descriptor comes back in *fd. */
int ruma_os_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags, int *fd);

/* ioctl(fd, PERF_EVENT_IOC_RESET / _ENABLE / _DISABLE, 0) of a counter
 * opened with ruma_os_perf_event_open; 0 or a negative errno. */
int ruma_os_perf_ioctl(int fd, unsigned long request);

/* ---- io_uring (liburing) ------------------------------------------------------- */

/*
 * Callers outside src/os never touch liburing: they hold an opaque ring
 * (ruma_os_uring_new), queue reads and writes (ruma_os_uring_prep_*, no
 * syscall), submit (one io_uring_enter, counted as RUMA_SYS_IO_URING_ENTER)
 * and reap completions (ruma_os_uring_reap: each reaped completion counts as
 * RUMA_SYS_IO_URING_CQE, and an injection there rewrites that completion's
 * result: a positive err makes it -err, err 0 halves the byte count — a
 * short transfer).  Only ruma_os_uring_new and ruma_os_uring_submit_and_wait
 * may enter the kernel; reaping reads the shared completion ring and never
 * does (a completion the kernel could not post because the ring was full —
 * not possible while no more than the ring's entries are in flight — is
 * posted by the next submit_and_wait, which then enters with GETEVENTS).
 */
struct io_uring;
/* io_uring_queue_init with entries slots. */
int ruma_os_uring_init(struct io_uring *ring, unsigned entries);
/* io_uring_submit_and_wait: submit what is queued and wait for wait_nr completions. */
int ruma_os_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr);
void ruma_os_uring_exit(struct io_uring *ring);

/* ---- userfaultfd: page moves (Linux >= 6.8 for UFFDIO_MOVE) ----------------- */

/* UFFD_FEATURE_MOVE and the UFFDIO_MOVE modes (older uapi headers lack them). */
#define RUMA_UFFD_FEATURE_MOVE ((uint64_t)1 << 16)
#define RUMA_UFFDIO_MOVE_DONTWAKE ((uint64_t)1 << 0)
#define RUMA_UFFDIO_MOVE_ALLOW_SRC_HOLES ((uint64_t)1 << 1)

/*
 * A new userfaultfd (O_CLOEXEC|O_NONBLOCK, user-mode faults only) in *fd:
 * the userfaultfd(2) syscall, and when that is refused (EPERM with
 * vm.unprivileged_userfaultfd = 0, ENOSYS) the ioctl USERFAULTFD_IOC_NEW on
 * /dev/userfaultfd (Linux >= 5.11).  Counted as one call; an injected
 * failure skips both.  Returns 0 or the negative errno of the syscall.
 */
int ruma_os_userfaultfd(int *fd);
/*
 * UFFDIO_API handshake asking for the features `want`; *got (may be NULL)
 * receives what the kernel offers.  -EINVAL when the kernel lacks a wanted
 * feature (the descriptor is then unusable: close it).
 */
int ruma_os_uffdio_api(int fd, uint64_t want, uint64_t *got);
/* UFFDIO_REGISTER of [addr, addr + len) with mode UFFDIO_REGISTER_MODE_*. */
int ruma_os_uffdio_register(int fd, void *addr, size_t len, uint64_t mode);
/* UFFDIO_UNREGISTER of [addr, addr + len). */
int ruma_os_uffdio_unregister(int fd, void *addr, size_t len);
/*
 * UFFDIO_MOVE of len bytes from src to dst (RUMA_UFFDIO_MOVE_* mode bits).
 * *moved receives the bytes moved, also on failure (the kernel moves page by
 * page and reports a partial move with -EAGAIN or the error that stopped it).
 * Injection: err != 0 fails before the kernel with *moved = 0; err 0
 * injects a partial move: only the first half of the range (at least one
 * page) reaches the kernel and the call returns -EAGAIN.
 */
int ruma_os_uffdio_move(int fd, void *dst, void *src, size_t len, uint64_t mode, size_t *moved);
/*
 * UFFDIO_COPY of len bytes from src into the missing pages at dst (a range
 * registered with UFFDIO_REGISTER_MODE_MISSING): the kernel allocates each
 * page, copies into it and maps it, with no zeroing and no fault.
 * *copied receives the bytes copied, also on failure (a partial copy comes
 * back as -EAGAIN or the error that stopped it).  An injected failure
 * fails before the kernel with *copied = 0.
 */
int ruma_os_uffdio_copy(int fd, void *dst, const void *src, size_t len, uint64_t mode,
			size_t *copied);
/* A heap-allocated ring of `entries` slots (counted as io_uring_setup);
 * -ENOMEM, or the setup error (-ENOSYS, -EPERM: io_uring refused). */
int ruma_os_uring_new(unsigned entries, struct io_uring **out);
/* Tear the ring down (waits for or cancels what is in flight) and free it. */
void ruma_os_uring_free(struct io_uring *ring);
/* Free submission slots (what can be queued before the next submit). */
unsigned ruma_os_uring_space(struct io_uring *ring);
/* Queue one read / write of len bytes at off, tagged with data; -EBUSY
 * when the submission queue is full (submit first).  No syscall. */
int ruma_os_uring_prep_read(struct io_uring *ring, int fd, void *buf, unsigned len, uint64_t off,
			    uint64_t data);
int ruma_os_uring_prep_write(struct io_uring *ring, int fd, const void *buf, unsigned len,
			     uint64_t off, uint64_t data);
/* Queue one vectored write of iov[0, n) at off (the iovecs must stay valid
 * until its completion is reaped); -EBUSY as above.  No syscall. */
int ruma_os_uring_prep_writev(struct io_uring *ring, int fd, const struct iovec *iov, unsigned n,
			      uint64_t off, uint64_t data);
/* Reap up to max completions already posted in the ring (never a
 * syscall): tags into data[], results (bytes or negative errno) into
 * res[]; returns how many. */
unsigned ruma_os_uring_reap(struct io_uring *ring, uint64_t *data, int *res, unsigned max);

/* ---- simulated power loss (tests) ------------------------------------------------ */

/*
 * ruma_os_powerloss_arm — from now on, every file opened writable through
 * ruma_os_open is tracked: before each pwrite to it the os layer saves the
 * bytes the write overwrites (and the file's size), and an fsync or
 * fdatasync of that descriptor forgets what it saved (the writes are
 * durable now).  ruma_os_powerloss then puts every tracked file back to
 * what the completed syncs covered — the state a machine that lost power
 * would find — and from then on drops every write and sync to those
 * descriptors and fails every read with -EIO (the machine "is dead": its
 * process may still free its handles, nothing more reaches the files and
 * nothing stale is read back into memory).  ruma_os_powerloss_disarm ends the simulation and forgets the
 * tracked descriptors.  Process-wide; meant for one test at a time.
 * Returns 0 or -ENOMEM.
 */
int ruma_os_powerloss_arm(void);
/* ruma_os_powerloss — restore the tracked files to their synced state (see
 * above); returns 0 or the first I/O error met while restoring. */
int ruma_os_powerloss(void);
/* ruma_os_powerloss_torn — the same, but of every unsynced write of whole
 * 4 KiB blocks the first half of each block reached the file (torn pages);
 * *torn (counted up) gets how many blocks were torn. */
int ruma_os_powerloss_torn(uint64_t *torn);
void ruma_os_powerloss_disarm(void);
/* ruma_os_powerloss_dead — true once ruma_os_powerloss(_torn) ran (until
 * disarm).  A sync that completed before a call that returns false is
 * covered by the simulated machine's state; after true, nothing is. */
bool ruma_os_powerloss_dead(void);

#endif
