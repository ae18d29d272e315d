/*
 * file.c — the OS layer's file and mapping calls and its power-loss
 * simulation for the drivers above the library (bench/, tools/), which do
 * not reach src/os directly: opening a file, its size, raw mappings,
 * arming and triggering the simulation.
 *
 * Invariants: every call is the OS layer's, so it is counted and can be
 * failed by injection exactly like the library's own.
 * Syscalls: open, pread, pwrite, fstat, ioctl(BLKGETSIZE64), mmap, munmap,
 * remap_file_pages, madvise through src/os.
 */
#include "core/core_ext.h"

#include "os/os.h"

#include <errno.h>

int ruma_file_open(const char *path, int flags, unsigned mode, int *fd)
{
	return ruma_os_open(path, flags, (mode_t)mode, fd);
}

int ruma_file_size(int fd, uint64_t *bytes, bool *is_blockdev)
{
	ruma_os_file_info fi;
	int rc = ruma_os_file_probe(fd, &fi);

	if (rc)
		return rc;
	if (!fi.is_regular && !fi.is_blockdev)
		return -EINVAL;
	*bytes = fi.bytes;
	if (is_blockdev)
		*is_blockdev = fi.is_blockdev;
	return 0;
}

int ruma_file_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	return ruma_os_pread_full(fd, buf, len, (off_t)off);
}

int ruma_file_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	return ruma_os_pwrite_full(fd, buf, len, (off_t)off);
}

int ruma_mmap(void *addr, size_t len, int prot, int flags, int fd, uint64_t off, void **out)
{
	return ruma_os_mmap(addr, len, prot, flags, fd, (off_t)off, out);
}

int ruma_munmap(void *addr, size_t len)
{
	return ruma_os_munmap(addr, len);
}

int ruma_remap_file_pages(void *addr, size_t size, size_t pgoff, int flags)
{
	return ruma_os_remap_file_pages(addr, size, pgoff, flags);
}

int ruma_madvise(void *addr, size_t len, int advice)
{
	return ruma_os_madvise(addr, len, advice);
}

int ruma_powerloss_arm(void)
{
	return ruma_os_powerloss_arm();
}

int ruma_powerloss_now(bool torn, uint64_t *torn_blocks)
{
	uint64_t n = 0;
	int rc = torn ? ruma_os_powerloss_torn(&n) : ruma_os_powerloss();

	if (torn_blocks)
		*torn_blocks += n;
	return rc;
}

bool ruma_powerloss_dead(void)
{
	return ruma_os_powerloss_dead();
}
