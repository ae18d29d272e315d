/*
 * test_os.c — the OS layer: call counting, fault injection (nth call, sticky,
 * the injected call never reaching the kernel, a hook run at the nth call),
 * short transfers, futex, memfd, the store lock (flock) and fdatasync, and
 * the simulated power loss against a write in flight and a write that
 * returns while a sync runs.
 */
#include "test.h"
#include "os/os.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int t_count_mmap(void)
{
	void *p;
	uint64_t before = ruma_os_count(RUMA_SYS_MMAP);

	CHECK_OK(ruma_os_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			      0, &p));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), before + 1);
	CHECK_OK(ruma_os_munmap(p, 4096));
	ruma_os_count_reset();
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP), 0);
	return TEST_PASS;
}

static int t_inject_nth(void)
{
	void *p[3];

	ruma_os_inject(RUMA_SYS_MMAP, 2, ENOMEM, false);
	CHECK_OK(ruma_os_mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &p[0]));
	CHECK_EQ(ruma_os_mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &p[1]),
		 -ENOMEM);
	CHECK_OK(ruma_os_mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &p[2]));
	CHECK_EQ(ruma_os_injected(RUMA_SYS_MMAP), 1);
	ruma_os_inject_clear();
	CHECK_OK(ruma_os_munmap(p[0], 4096));
	CHECK_OK(ruma_os_munmap(p[2], 4096));
	/* a counter reset after arming does not move the injected call */
	CHECK(ruma_os_count(RUMA_SYS_MUNMAP) >= 2); /* the two above */
	ruma_os_inject(RUMA_SYS_MUNMAP, 1, EBUSY, false);
	ruma_os_count_reset();
	CHECK_EQ(ruma_os_munmap(NULL, 0), -EBUSY);
	ruma_os_inject_clear();
	return TEST_PASS;
}

static int t_inject_sticky(void)
{
	int fd;

	CHECK_OK(ruma_os_memfd_create("t", MFD_CLOEXEC, &fd));
	ruma_os_inject(RUMA_SYS_FTRUNCATE, 1, ENOSPC, true);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(ruma_os_ftruncate(fd, 8192), -ENOSPC);
	ruma_os_inject_clear();
	CHECK_OK(ruma_os_ftruncate(fd, 8192));
	close(fd);
	return TEST_PASS;
}

static int t_pread_short_and_error(void)
{
	int fd;
	char buf[8192];

	CHECK_OK(ruma_os_memfd_create("t", MFD_CLOEXEC, &fd));
	CHECK_OK(ruma_os_ftruncate(fd, 4096));
	memset(buf, 7, sizeof(buf));
	CHECK_OK(ruma_os_pwrite_full(fd, buf, 4096, 0));
	CHECK_OK(ruma_os_pread_full(fd, buf, 4096, 0));
	/* reading past the end is a short read, reported, not a zero page */
	CHECK_EQ(ruma_os_pread_full(fd, buf, 8192, 0), RUMA_ESHORTIO);
	ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	CHECK_EQ(ruma_os_pread_full(fd, buf, 4096, 0), -EIO);
	ruma_os_inject(RUMA_SYS_PREAD, 1, 0, false); /* injected end-of-file */
	CHECK_EQ(ruma_os_pread_full(fd, buf, 4096, 0), RUMA_ESHORTIO);
	ruma_os_inject(RUMA_SYS_PWRITE, 1, ENOSPC, false);
	CHECK_EQ(ruma_os_pwrite_full(fd, buf, 4096, 0), -ENOSPC);
	ruma_os_inject_clear();
	close(fd);
	return TEST_PASS;
}

/* pwritev_full writes every buffer (in order, at consecutive offsets). */
static int t_pwritev(void)
{
	int fd;
	static char a[4096], b[4096], c[4096], got[3 * 4096];
	struct iovec iov[3] = { { a, sizeof a }, { b, sizeof b }, { c, sizeof c } };

	memset(a, 1, sizeof a);
	memset(b, 2, sizeof b);
	memset(c, 3, sizeof c);
	CHECK_OK(ruma_os_memfd_create("v", MFD_CLOEXEC, &fd));
	uint64_t n0 = ruma_os_count(RUMA_SYS_PWRITEV);
	CHECK_OK(ruma_os_pwritev_full(fd, iov, 3, 4096));
	CHECK_EQ(ruma_os_count(RUMA_SYS_PWRITEV), n0 + 1);
	CHECK_OK(ruma_os_pread_full(fd, got, sizeof got, 4096));
	CHECK(got[0] == 1 && got[4096] == 2 && got[8191] == 2 && got[8192] == 3);
	ruma_os_inject(RUMA_SYS_PWRITEV, 1, EIO, false);
	CHECK_EQ(ruma_os_pwritev_full(fd, iov, 3, 0), -EIO);
	ruma_os_inject(RUMA_SYS_PWRITEV, 1, 0, false); /* nothing written */
	CHECK_EQ(ruma_os_pwritev_full(fd, iov, 3, 0), RUMA_ESHORTIO);
	ruma_os_inject_clear();
	CHECK_OK(ruma_os_fdatasync(fd));
	close(fd);
	return TEST_PASS;
}

/* io_uring through the wrappers: a read's completion is counted, and an
 * injection rewrites it (errno, or a short transfer). */
static int t_uring_completions(void)
{
	struct io_uring *ring;
	int fd;
	static char page[4096] __attribute__((aligned(4096)));
	uint64_t tag;
	int res;

	int r = ruma_os_uring_new(8, &ring);
	if (r)
		SKIP("io_uring unavailable: %s", ruma_strerror(r));
	CHECK_OK(ruma_os_memfd_create("u", MFD_CLOEXEC, &fd));
	memset(page, 9, sizeof page);
	CHECK_OK(ruma_os_pwrite_full(fd, page, sizeof page, 0));
	int want[3] = { 4096, -EIO, 2048 };
	int inject[3] = { -1, EIO, 0 };
	for (int i = 0; i < 3; i++) {
		if (inject[i] >= 0)
			ruma_os_inject(RUMA_SYS_IO_URING_CQE, 1, inject[i], false);
		uint64_t c0 = ruma_os_count(RUMA_SYS_IO_URING_CQE);
		CHECK_OK(ruma_os_uring_prep_read(ring, fd, page, sizeof page, 0, 40 + (uint64_t)i));
		CHECK_OK(ruma_os_uring_submit_and_wait(ring, 1));
		CHECK_EQ(ruma_os_uring_reap(ring, &tag, &res, 1), 1);
		CHECK_EQ(tag, 40 + (uint64_t)i);
		CHECK_EQ(res, want[i]);
		CHECK_EQ(ruma_os_count(RUMA_SYS_IO_URING_CQE), c0 + 1);
		CHECK_EQ(ruma_os_uring_reap(ring, &tag, &res, 1), 0);
	}
	ruma_os_inject_clear();
	ruma_os_uring_free(ring);
	close(fd);
	return TEST_PASS;
}

static int t_open_error(void)
{
	int fd;

	CHECK_EQ(ruma_os_open("/nonexistent/dir/file", O_RDONLY, 0, &fd), -ENOENT);
	return TEST_PASS;
}

static _Atomic uint32_t futex_word;

static void *futex_waker(void *arg)
{
	(void)arg;
	usleep(20000);
	atomic_store(&futex_word, 1);
	ruma_os_futex_wake((uint32_t *)&futex_word, 1, NULL);
	return NULL;
}

static int t_futex(void)
{
	pthread_t th;

	atomic_store(&futex_word, 0);
	/* value mismatch returns at once */
	CHECK_EQ(ruma_os_futex_wait((uint32_t *)&futex_word, 5, NULL), -EAGAIN);
	CHECK(pthread_create(&th, NULL, futex_waker, NULL) == 0);
	while (atomic_load(&futex_word) == 0) {
		int r = ruma_os_futex_wait((uint32_t *)&futex_word, 0, NULL);
		CHECK(r == 0 || r == -EAGAIN || r == -EINTR);
	}
	pthread_join(th, NULL);
	return TEST_PASS;
}

static int t_madvise_and_process_madvise(void)
{
	void *p;
	struct iovec iov;
	size_t done = 0;

	CHECK_OK(ruma_os_mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			      0, &p));
	memset(p, 1, 8192);
	CHECK_OK(ruma_os_madvise(p, 4096, MADV_DONTNEED));
	CHECK(((char *)p)[0] == 0 && ((char *)p)[4096] == 1);
	iov.iov_base = (char *)p + 4096;
	iov.iov_len = 4096;
	int r = ruma_os_process_madvise(&iov, 1, MADV_DONTNEED, &done);
	if (r == 0) {
		CHECK_EQ(done, 4096);
		CHECK(((char *)p)[4096] == 0);
	} else {
		/* older kernels refuse MADV_DONTNEED for process_madvise */
		CHECK(r == -EINVAL || r == -ENOSYS || r == -EPERM);
	}
	CHECK_OK(ruma_os_munmap(p, 8192));
	CHECK_EQ(ruma_os_munmap((void *)1, 4096), -EINVAL);
	return TEST_PASS;
}

/* In the child: advise a page only the child has; 0 when it reached the child. */
static int child_advise_own_page(void)
{
	void *p;
	struct iovec iov;
	size_t done = 0;

	if (ruma_os_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			 &p))
		return 2;
	memset(p, 1, 4096);
	iov.iov_base = p;
	iov.iov_len = 4096;
	if (ruma_os_process_madvise(&iov, 1, MADV_DONTNEED, &done))
		return 3; /* e.g. advised the parent through its pidfd */
	return done == 4096 && ((char *)p)[0] == 0 ? 0 : 4;
}

/* A forked child must not reuse the parent's cached pidfd. */
static int t_process_madvise_after_fork(void)
{
	void *p;
	struct iovec iov;
	size_t done;
	int status;

	CHECK_OK(ruma_os_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			      0, &p));
	iov.iov_base = p;
	iov.iov_len = 4096;
	int r = ruma_os_process_madvise(&iov, 1, MADV_DONTNEED, &done); /* caches the pidfd */
	CHECK_OK(ruma_os_munmap(p, 4096));
	if (r)
		SKIP("process_madvise(MADV_DONTNEED) on the own process refused: %s",
		     ruma_strerror(r));
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child_advise_own_page());
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	return TEST_PASS;
}

static int t_sys_names(void)
{
	for (int s = 0; s < RUMA_SYS_COUNT_; s++)
		CHECK(ruma_os_sys_name((ruma_sys)s) && strcmp(ruma_os_sys_name((ruma_sys)s), "?"));
	return TEST_PASS;
}

/* flock through the OS layer: exclusive per open file description; counted,
 * injectable; fdatasync likewise. */
static int t_lock_and_fdatasync(void)
{
	char path[] = "/tmp/ruma-test-lockXXXXXX";
	int fd = mkstemp(path), fd2;

	CHECK(fd >= 0);
	CHECK_OK(ruma_os_open(path, O_RDWR, 0, &fd2));
	uint64_t before = ruma_os_count(RUMA_SYS_FLOCK);
	CHECK_OK(ruma_os_lock_exclusive(fd));
	CHECK_OK(ruma_os_lock_exclusive(fd)); /* the holder may take it again */
	CHECK_EQ(ruma_os_lock_exclusive(fd2), RUMA_ELOCKED); /* another description */
	CHECK_EQ(ruma_os_count(RUMA_SYS_FLOCK), before + 3);
	ruma_os_inject(RUMA_SYS_FLOCK, 1, ENOLCK, false);
	CHECK_EQ(ruma_os_lock_exclusive(fd), -ENOLCK);
	CHECK_EQ(ruma_os_injected(RUMA_SYS_FLOCK), 1);
	close(fd);
	CHECK_OK(ruma_os_lock_exclusive(fd2)); /* released with its last descriptor */
	CHECK_OK(ruma_os_fdatasync(fd2));
	ruma_os_inject(RUMA_SYS_FDATASYNC, 1, EIO, false);
	CHECK_EQ(ruma_os_fdatasync(fd2), -EIO);
	CHECK_OK(ruma_os_fdatasync(fd2));
	ruma_os_inject_clear();
	close(fd2);
	unlink(path);
	return TEST_PASS;
}

/* A write in flight when the simulated power loss strikes must land wholly
 * before the loss (and be undone) or not at all, never on the file already
 * put back.  The test's own pwrite() stands in for libc's (the OS layer
 * calls it by name): armed, it holds the write back after the simulator
 * saved what it overwrites, until the power loss has run or 300 ms passed,
 * then writes with the raw syscall. */
static atomic_bool pwrite_held;

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	if (atomic_exchange(&pwrite_held, false))
		for (int ms = 0; ms < 300 && !ruma_os_powerloss_dead(); ms++)
			usleep(1000);
	return syscall(SYS_pwrite64, fd, buf, len, off);
}

static void *pl_race_loss(void *p)
{
	(void)p;
	usleep(20000); /* the write is held by then */
	return (void *)(intptr_t)ruma_os_powerloss();
}

/* A new empty file at path (a mkstemp template), opened through the OS
 * layer with the power-loss simulation armed. */
static int pl_open_temp(char *path, int *fd)
{
	int t = mkstemp(path);
	if (t < 0)
		return -errno;
	close(t);
	int r = ruma_os_powerloss_arm();
	return r ? r : ruma_os_open(path, O_RDWR, 0, fd);
}

static int t_powerloss_write_in_flight(void)
{
	char path[] = "/tmp/ruma-test-plraceXXXXXX", block[4096];
	int fd;
	memset(block, 0x5a, sizeof(block));
	CHECK_OK(pl_open_temp(path, &fd));
	pthread_t loss;
	void *lost;
	atomic_store(&pwrite_held, true);
	CHECK_EQ(pthread_create(&loss, NULL, pl_race_loss, NULL), 0);
	CHECK_EQ(ruma_os_pwrite(fd, block, sizeof(block), 0), sizeof(block));
	CHECK_EQ(pthread_join(loss, &lost), 0);
	CHECK(lost == NULL);
	CHECK(ruma_os_powerloss_dead());
	struct stat st;
	CHECK_EQ(fstat(fd, &st), 0);
	ruma_os_powerloss_disarm();
	close(fd);
	unlink(path);
	CHECK_EQ(st.st_size, 0); /* as last synced: empty */
	return TEST_PASS;
}

struct late_write {
	int fd;
	int r;
};

/* Run inside an fdatasync, after its call: a write that returns then. */
static void write_late(void *ctx)
{
	struct late_write *lw = ctx;
	char block[4096];
	memset(block, 0xb2, sizeof(block));
	ssize_t n = ruma_os_pwrite(lw->fd, block, sizeof(block), sizeof(block));
	lw->r = n == (ssize_t)sizeof(block) ? 0 : -EIO;
}

/* A sync covers the writes that returned before it was called, not one that
 * returned while it ran (another thread's, here the hook's): the simulated
 * power loss keeps the first write and undoes the second. */
static int t_powerloss_sync_covers_returned(void)
{
	char path[] = "/tmp/ruma-test-plsyncXXXXXX", block[4096], back[4096];
	int fd;
	memset(block, 0x5a, sizeof(block));
	CHECK_OK(pl_open_temp(path, &fd));
	CHECK_EQ(ruma_os_pwrite(fd, block, sizeof(block), 0), sizeof(block));
	struct late_write lw = { fd, -1 };
	ruma_os_inject_hook(RUMA_SYS_FDATASYNC, 1, write_late, &lw);
	CHECK_OK(ruma_os_fdatasync(fd));
	ruma_os_inject_clear();
	CHECK_OK(lw.r);
	CHECK_OK(ruma_os_powerloss());
	struct stat st;
	CHECK_EQ(fstat(fd, &st), 0);
	ssize_t got = pread(fd, back, sizeof(back), 0);
	ruma_os_powerloss_disarm();
	close(fd);
	unlink(path);
	CHECK_EQ(st.st_size, sizeof(block)); /* the late write's block is gone */
	CHECK_EQ(got, sizeof(back));
	CHECK(memcmp(back, block, sizeof(block)) == 0);
	return TEST_PASS;
}

static void count_hook(void *ctx)
{
	(*(int *)ctx)++;
}

/* A hook armed at the nth call runs once, at that call, which then goes to
 * the kernel and succeeds; arming a failure replaces the hook. */
static int t_inject_hook(void)
{
	char path[] = "/tmp/ruma-test-hookXXXXXX";
	int fd = mkstemp(path), ran = 0;

	CHECK(fd >= 0);
	uint64_t before = ruma_os_count(RUMA_SYS_FDATASYNC);
	uint64_t injected = ruma_os_injected(RUMA_SYS_FDATASYNC);
	ruma_os_inject_hook(RUMA_SYS_FDATASYNC, 2, count_hook, &ran);
	CHECK_OK(ruma_os_fdatasync(fd));
	CHECK_EQ(ran, 0);
	CHECK_OK(ruma_os_fdatasync(fd));
	CHECK_EQ(ran, 1);
	CHECK_OK(ruma_os_fdatasync(fd)); /* once only */
	CHECK_EQ(ran, 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_FDATASYNC), before + 3);
	CHECK_EQ(ruma_os_injected(RUMA_SYS_FDATASYNC), injected);
	ruma_os_inject_hook(RUMA_SYS_FDATASYNC, 1, count_hook, &ran);
	ruma_os_inject(RUMA_SYS_FDATASYNC, 1, EIO, false);
	CHECK_EQ(ruma_os_fdatasync(fd), -EIO);
	CHECK_EQ(ran, 1);
	ruma_os_inject_hook(RUMA_SYS_FDATASYNC, 1, count_hook, &ran);
	ruma_os_inject_clear();
	CHECK_OK(ruma_os_fdatasync(fd));
	CHECK_EQ(ran, 1);
	close(fd);
	unlink(path);
	return TEST_PASS;
}

/* read/write at the file position and the file probe: counted, injectable. */
static int t_read_write_probe(void)
{
	int fd;
	char buf[16] = { 0 };
	ruma_os_file_info fi;

	CHECK_OK(ruma_os_memfd_create("rw", MFD_CLOEXEC, &fd));
	uint64_t w0 = ruma_os_count(RUMA_SYS_WRITE), r0 = ruma_os_count(RUMA_SYS_READ);
	CHECK_EQ(ruma_os_write(fd, "abcdef", 6), 6);
	ruma_os_inject(RUMA_SYS_WRITE, 1, 0, false); /* half of it */
	CHECK_EQ(ruma_os_write(fd, "ghij", 4), 2);
	ruma_os_inject(RUMA_SYS_WRITE, 1, ENOSPC, false);
	CHECK_EQ(ruma_os_write(fd, "x", 1), -ENOSPC);
	CHECK_EQ(ruma_os_count(RUMA_SYS_WRITE) - w0, 3);
	CHECK_OK(ruma_os_file_probe(fd, &fi));
	CHECK(fi.is_regular && !fi.is_blockdev);
	CHECK_EQ(fi.bytes, 8);
	CHECK(fi.allocated >= fi.bytes); /* one page of shmem */
	ruma_os_inject(RUMA_SYS_FSTAT, 1, EIO, false);
	CHECK_EQ(ruma_os_file_probe(fd, &fi), -EIO);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	CHECK_EQ(ruma_os_read(fd, buf, sizeof(buf)), 8);
	CHECK(memcmp(buf, "abcdefgh", 8) == 0);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	ruma_os_inject(RUMA_SYS_READ, 1, 0, false); /* injected end of file */
	CHECK_EQ(ruma_os_read(fd, buf, sizeof(buf)), 0);
	ruma_os_inject(RUMA_SYS_READ, 1, EIO, false);
	CHECK_EQ(ruma_os_read(fd, buf, sizeof(buf)), -EIO);
	CHECK_EQ(ruma_os_count(RUMA_SYS_READ) - r0, 3);
	ruma_os_inject_clear();
	close(fd);
	/* a block device where one is visible: its size through BLKGETSIZE64 */
	if (ruma_os_open("/dev/loop0", O_RDONLY, 0, &fd) == 0) {
		if (ruma_os_file_probe(fd, &fi) == 0)
			CHECK(fi.is_blockdev && !fi.is_regular);
		ruma_os_inject(RUMA_SYS_BLKGETSIZE64, 1, ENOTTY, false);
		if (fi.is_blockdev)
			CHECK_EQ(ruma_os_file_probe(fd, &fi), -ENOTTY);
		ruma_os_inject_clear();
		close(fd);
	}
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "count_mmap", t_count_mmap },
	{ "inject_nth", t_inject_nth },
	{ "inject_sticky", t_inject_sticky },
	{ "pread_short_and_error", t_pread_short_and_error },
	{ "pwritev", t_pwritev },
	{ "uring_completions", t_uring_completions },
	{ "open_error", t_open_error },
	{ "futex", t_futex },
	{ "madvise", t_madvise_and_process_madvise },
	{ "process_madvise_after_fork", t_process_madvise_after_fork },
	{ "sys_names", t_sys_names },
	{ "lock_and_fdatasync", t_lock_and_fdatasync },
	{ "inject_hook", t_inject_hook },
	{ "powerloss_write_in_flight", t_powerloss_write_in_flight },
	{ "powerloss_sync_covers_returned", t_powerloss_sync_covers_returned },
	{ "read_write_probe", t_read_write_probe },
};

int main(int argc, char **argv)
{
	return test_main("os", cases, TEST_N(cases), argc, argv);
}
