/*
 * test_core_sysinfo.c — system information against /proc and /sys read
 * independently here, the probes (io_uring, perf, O_DIRECT) including
 * injected failures, a huge page reserve/restore round trip (root only,
 * always restored), and the `ruma doctor` command line (text, --json parsed
 * by a small validating JSON parser, bad arguments).
 */
#include "test.h"

#include <ruma/core.h>
#include "core/core_ext.h"
#include "core/sysinfo_ext.h"

#include "os/os.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>

/* ---- helpers ------------------------------------------------------------------ */

static int read_file_u64(const char *path, uint64_t *v)
{
	FILE *f = fopen(path, "r");
	unsigned long long x;
	int ok = f && fscanf(f, "%llu", &x) == 1;

	if (f)
		fclose(f);
	if (ok)
		*v = x;
	return ok ? 0 : -1;
}

/* The bracketed word of a THP file, read here with stdio. */
static int read_bracket(const char *path, char *out, size_t cap)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	char *got = fgets(line, sizeof(line), f);
	fclose(f);
	char *a = got ? strchr(line, '[') : NULL, *b = a ? strchr(a, ']') : NULL;
	if (!b)
		return -1;
	*b = '\0';
	snprintf(out, cap, "%s", a + 1);
	return 0;
}

/* ---- kernel, page size, vm ------------------------------------------------------ */

static int t_kernel(void)
{
	ruma_kernel_version v;
	struct utsname u;
	char prefix[48];

	CHECK_OK(ruma_sysinfo_kernel(&v));
	CHECK(uname(&u) == 0);
	CHECK(!strcmp(v.release, u.release));
	CHECK(v.major >= 3 && v.minor >= 0 && v.patch >= 0);
	snprintf(prefix, sizeof(prefix), "%d.%d", v.major, v.minor);
	CHECK(!strncmp(u.release, prefix, strlen(prefix)));
	CHECK(ruma_sysinfo_kernel_at_least(v.major, v.minor));
	CHECK(ruma_sysinfo_kernel_at_least(v.major - 1, 99));
	CHECK(ruma_sysinfo_kernel_at_least(3, 0));
	CHECK(!ruma_sysinfo_kernel_at_least(v.major, v.minor + 1));
	CHECK(!ruma_sysinfo_kernel_at_least(v.major + 1, 0));
	return TEST_PASS;
}

static int t_page_size(void)
{
	size_t ps = ruma_sysinfo_page_size();

	CHECK(ps >= 4096 && (ps & (ps - 1)) == 0);
	CHECK_EQ(ps, (size_t)sysconf(_SC_PAGESIZE));
	return TEST_PASS;
}

static int t_vm_sysctls(void)
{
	ruma_vm_info vm;
	uint64_t mmc, oc, ratio;

	CHECK_OK(ruma_sysinfo_vm(&vm));
	CHECK_EQ(read_file_u64("/proc/sys/vm/max_map_count", &mmc), 0);
	CHECK_EQ(read_file_u64("/proc/sys/vm/overcommit_memory", &oc), 0);
	CHECK_EQ(read_file_u64("/proc/sys/vm/overcommit_ratio", &ratio), 0);
	CHECK_EQ(vm.max_map_count, mmc);
	CHECK_EQ(vm.overcommit_memory, oc);
	CHECK_EQ(vm.overcommit_ratio, ratio);
	CHECK(vm.overcommit_memory <= 2);
	uint64_t v;
	CHECK_EQ(ruma_sysinfo_read_u64_file("/nonexistent/ruma", &v), -ENOENT);
	CHECK_EQ(ruma_sysinfo_read_u64_file("/proc/self/comm", &v), RUMA_EPARSE);
	return TEST_PASS;
}

static int t_thp(void)
{
	ruma_thp_info t;
	char want[64];
	int rc = ruma_sysinfo_thp(&t);

	if (rc == -ENOENT)
		SKIP("kernel without transparent huge pages");
	CHECK_OK(rc);
	CHECK_EQ(read_bracket("/sys/kernel/mm/transparent_hugepage/enabled", want, sizeof(want)),
		 0);
	CHECK(!strcmp(t.enabled, want));
	CHECK(!strcmp(t.enabled, "always") || !strcmp(t.enabled, "madvise") ||
	      !strcmp(t.enabled, "never"));
	if (read_bracket("/sys/kernel/mm/transparent_hugepage/defrag", want, sizeof(want)) == 0)
		CHECK(!strcmp(t.defrag, want));
	if (read_bracket("/sys/kernel/mm/transparent_hugepage/shmem_enabled", want,
			 sizeof(want)) == 0)
		CHECK(!strcmp(t.shmem_enabled, want));
	return TEST_PASS;
}

/* The mapping count follows mappings this test creates. */
static int t_map_count(void)
{
	uint64_t before, during, after;
	size_t ps = ruma_sysinfo_page_size();
	void *m;

	CHECK_OK(ruma_sysinfo_map_count(&before));
	CHECK(before > 3);
	CHECK_OK(ruma_os_mmap(NULL, 5 * ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &m));
	/* Different protections split the region: at least 2 more mappings. */
	CHECK_OK(ruma_os_mprotect((char *)m + ps, ps, PROT_READ | PROT_WRITE));
	CHECK_OK(ruma_os_mprotect((char *)m + 3 * ps, ps, PROT_READ | PROT_WRITE));
	CHECK_OK(ruma_sysinfo_map_count(&during));
	CHECK(during >= before + 3);
	CHECK_OK(ruma_os_munmap(m, 5 * ps));
	CHECK_OK(ruma_sysinfo_map_count(&after));
	CHECK(after + 3 <= during);
	return TEST_PASS;
}

/*
 * vm.max_map_count through the kept reader: the value /proc shows, one
 * pread and no open after the first call, and a change of the sysctl (as
 * root; restored) is seen by the next call.
 */
static int t_max_map_count_kept(void)
{
	uint64_t direct, kept, changed;

	CHECK_OK(ruma_sysinfo_read_u64_file("/proc/sys/vm/max_map_count", &direct));
	CHECK_OK(ruma_sysinfo_max_map_count(&kept));
	CHECK_EQ(kept, direct);
	ruma_os_count_reset();
	CHECK_OK(ruma_sysinfo_max_map_count(&kept));
	CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN), 0);
	CHECK_EQ(ruma_os_count(RUMA_SYS_PREAD), 1);
	if (geteuid() != 0)
		return TEST_PASS;
	CHECK_OK(ruma_sysinfo_write_u64_file("/proc/sys/vm/max_map_count", direct + 7));
	int rc = ruma_sysinfo_max_map_count(&changed);
	CHECK_OK(ruma_sysinfo_write_u64_file("/proc/sys/vm/max_map_count", direct));
	CHECK_OK(rc);
	CHECK_EQ(changed, direct + 7);
	ruma_os_inject(RUMA_SYS_PREAD, 1, EIO, false);
	CHECK_EQ(ruma_sysinfo_max_map_count(&kept), -EIO);
	ruma_os_inject_clear();
	CHECK_OK(ruma_sysinfo_max_map_count(&kept));
	CHECK_EQ(kept, direct);
	return TEST_PASS;
}

/* ---- huge pages -------------------------------------------------------------------- */

static int t_huge_sizes(void)
{
	uint64_t sizes[RUMA_SYSINFO_MAX_HUGE_SIZES], def;
	size_t n;
	int dirs = 0;

	CHECK_OK(ruma_sysinfo_huge_sizes(sizes, RUMA_ARRAY_SIZE(sizes), &n));
	DIR *d = opendir("/sys/kernel/mm/hugepages");
	if (!d) {
		CHECK_EQ(n, 0);
		SKIP("no hugetlb support");
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		dirs += !strncmp(e->d_name, "hugepages-", 10);
	closedir(d);
	CHECK_EQ(n, dirs);
	for (size_t i = 1; i < n; i++)
		CHECK(sizes[i - 1] < sizes[i]);
	CHECK_OK(ruma_sysinfo_default_huge_kb(&def));
	bool found = false;
	for (size_t i = 0; i < n; i++)
		found |= sizes[i] == def;
	CHECK(found);
	/* cap smaller than the number of sizes */
	CHECK_OK(ruma_sysinfo_huge_sizes(sizes, 1, &n));
	CHECK(n <= 1);
	return TEST_PASS;
}

static int t_numa_nodes(void)
{
	int nodes[RUMA_SYSINFO_MAX_NODES];
	size_t n;

	CHECK_OK(ruma_sysinfo_numa_nodes(nodes, RUMA_ARRAY_SIZE(nodes), &n));
	CHECK(n >= 1);
	for (size_t i = 1; i < n; i++)
		CHECK(nodes[i - 1] < nodes[i]);
	return TEST_PASS;
}

/* The sysfs listings are opened through the OS layer: one counted open, and
 * an injected failure gives the errno, or the documented answer for a
 * directory that is not there (no huge page sizes; node 0 alone). */
static int t_sysfs_dirs_through_os(void)
{
	uint64_t sizes[RUMA_SYSINFO_MAX_HUGE_SIZES];
	int nodes[RUMA_SYSINFO_MAX_NODES];
	size_t n = 99;

	uint64_t o0 = ruma_os_count(RUMA_SYS_OPEN);
	(void)ruma_sysinfo_huge_sizes(sizes, RUMA_ARRAY_SIZE(sizes), &n);
	CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN) - o0, 1);
	ruma_os_inject(RUMA_SYS_OPEN, 1, EACCES, false);
	CHECK_EQ(ruma_sysinfo_huge_sizes(sizes, RUMA_ARRAY_SIZE(sizes), &n), -EACCES);
	ruma_os_inject(RUMA_SYS_OPEN, 1, ENOENT, false);
	CHECK_OK(ruma_sysinfo_huge_sizes(sizes, RUMA_ARRAY_SIZE(sizes), &n));
	CHECK_EQ(n, 0);
	ruma_os_inject(RUMA_SYS_OPEN, 1, EACCES, false);
	CHECK_EQ(ruma_sysinfo_numa_nodes(nodes, RUMA_ARRAY_SIZE(nodes), &n), -EACCES);
	ruma_os_inject(RUMA_SYS_OPEN, 1, ENOENT, false);
	CHECK_OK(ruma_sysinfo_numa_nodes(nodes, RUMA_ARRAY_SIZE(nodes), &n));
	CHECK_EQ(n, 1);
	CHECK_EQ(nodes[0], 0);
	ruma_os_inject_clear();
	return TEST_PASS;
}

/*
 * Pool counts are consistent with each other and with /proc/meminfo.  Other
 * tests may change the pool concurrently, so a mismatch is retried a few times.
 */
static int pool_consistent(uint64_t def, ruma_hugepage_pool *p)
{
	uint64_t total, node_sum = 0, mi_total, mi_free;
	char line[128];

	if (ruma_sysinfo_huge_pool(def, p) != 0)
		return 0;
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	mi_total = mi_free = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		if (sscanf(line, "HugePages_Total: %llu", &v) == 1)
			mi_total = v;
		if (sscanf(line, "HugePages_Free: %llu", &v) == 1)
			mi_free = v;
	}
	fclose(f);
	if (ruma_sysinfo_read_nr_hugepages(def, -1, &total) != 0)
		return 0;
	for (size_t i = 0; i < p->nnodes; i++)
		node_sum += p->per_node[i].total;
	/* HugePages_Total counts surplus pages; nr_hugepages does not. */
	return total == p->all.total && node_sum == p->all.total &&
	       mi_total == p->all.total + p->all.surplus && mi_free == p->all.free;
}

static int t_huge_pool(void)
{
	uint64_t def;
	ruma_hugepage_pool *p = malloc(sizeof(*p));
	int ok = 0;

	CHECK(p != NULL);
	if (ruma_sysinfo_default_huge_kb(&def) != 0) {
		free(p);
		SKIP("no hugetlb support");
	}
	for (int attempt = 0; attempt < 10 && !ok; attempt++)
		ok = pool_consistent(def, p);
	CHECK(ok);
	CHECK(p->all.has_reserved);
	CHECK(p->all.free <= p->all.total + p->all.surplus);
	CHECK(p->all.reserved <= p->all.free);
	CHECK(p->nnodes >= 1);
	for (size_t i = 0; i < p->nnodes; i++) {
		uint64_t n;
		CHECK(!p->per_node[i].has_reserved);
		CHECK_OK(ruma_sysinfo_read_nr_hugepages(def, p->node[i], &n));
	}
	free(p);
	uint64_t n;
	CHECK_EQ(ruma_sysinfo_read_nr_hugepages(3, -1, &n), -ENOENT);
	CHECK_EQ(ruma_sysinfo_read_nr_hugepages(def, 100000, &n), -ENOENT);
	ruma_hugepage_pool q;
	CHECK_EQ(ruma_sysinfo_huge_pool(3, &q), -ENOENT);
	return TEST_PASS;
}

/* Raise the default pool by 2 pages and restore it (root only). */
static int t_huge_set_restore(void)
{
	uint64_t def, prev = 0, now = 0, back = 0;

	if (ruma_sysinfo_default_huge_kb(&def) != 0)
		SKIP("no hugetlb support");
	if (geteuid() != 0) {
		uint64_t cur;
		CHECK_OK(ruma_sysinfo_read_nr_hugepages(def, -1, &cur));
		int rc = ruma_sysinfo_set_nr_hugepages(def, cur + 1, NULL);
		CHECK(rc == -EACCES || rc == -EPERM);
		SKIP("not root: cannot change nr_hugepages");
	}
	CHECK_OK(ruma_sysinfo_read_nr_hugepages(def, -1, &prev));
	int rc = ruma_sysinfo_set_nr_hugepages(def, prev + 2, &back);
	if (rc == 0) {
		CHECK_OK(ruma_sysinfo_read_nr_hugepages(def, -1, &now));
		int restore = ruma_sysinfo_set_nr_hugepages(def, back, NULL);
		CHECK_OK(restore);
		CHECK_EQ(back, prev);
		CHECK(now >= prev + 2);
	} else {
		CHECK_EQ(rc, RUMA_ENOHUGE); /* nothing changed then */
		CHECK_EQ(back, prev);
	}
	CHECK_OK(ruma_sysinfo_read_nr_hugepages(def, -1, &now));
	CHECK_EQ(now, prev);
	if (rc)
		SKIP("kernel could not reserve 2 more huge pages (memory fragmented)");

	/* _ex reports what the kernel kept. */
	uint64_t p2 = 0, actual = 0;
	CHECK_OK(ruma_sysinfo_set_nr_hugepages_ex(def, prev + 1, &p2, &actual));
	CHECK_OK(ruma_sysinfo_set_nr_hugepages_ex(def, prev, NULL, NULL));
	CHECK_EQ(p2, prev);
	CHECK(actual <= prev + 1);
	CHECK_EQ(ruma_sysinfo_set_nr_hugepages(3, 1, NULL), -ENOENT);
	return TEST_PASS;
}

/*
 * Surplus pages (allocated beyond vm.nr_hugepages under
 * vm.nr_overcommit_hugepages) are not persistent: the sysfs nr_hugepages file
 * counts them, /proc/sys/vm/nr_hugepages (what the setter writes) does not.
 * Reader, pool counts and setter must agree while surplus pages exist, or a
 * caller's "read, raise, restore" turns surplus pages into persistent ones.
 */
static int t_huge_surplus(void)
{
	const char *oc_path = "/proc/sys/vm/nr_overcommit_hugepages";
	uint64_t def, oc = 0, persistent = 0, n = 0, prev = 0;
	ruma_hugepage_pool *p = malloc(sizeof(*p));

	CHECK(p != NULL);
	if (ruma_sysinfo_default_huge_kb(&def) != 0 || geteuid() != 0 ||
	    ruma_sysinfo_huge_pool(def, p) != 0 || p->all.free > 64 ||
	    read_file_u64(oc_path, &oc) != 0) {
		free(p);
		SKIP("needs root, hugetlb and at most 64 free persistent huge pages");
	}
	size_t len = (size_t)(p->all.free + 2) * (size_t)def * 1024;
	int oc_rc = ruma_sysinfo_write_u64_file(oc_path, p->all.surplus + 2);
	if (oc_rc)
		free(p);
	CHECK_OK(oc_rc);
	/* The reservation at mmap time allocates the surplus pages. */
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		       -1, 0);
	int ok = m != MAP_FAILED && read_file_u64("/proc/sys/vm/nr_hugepages", &persistent) == 0 &&
		 ruma_sysinfo_huge_pool(def, p) == 0 && p->all.surplus >= 2;
	uint64_t node_sum = 0;
	for (size_t i = 0; ok && i < p->nnodes; i++)
		node_sum += p->per_node[i].total;
	int read_rc = ruma_sysinfo_read_nr_hugepages(def, -1, &n);
	/* Writing the persistent count back must not adopt surplus pages. */
	int set_rc = ok ? ruma_sysinfo_set_nr_hugepages_ex(def, n, &prev, NULL) : 0;
	uint64_t after = 0;
	(void)read_file_u64("/proc/sys/vm/nr_hugepages", &after);
	if (m != MAP_FAILED)
		munmap(m, len);
	if (after != persistent)
		(void)ruma_sysinfo_write_u64_file("/proc/sys/vm/nr_hugepages", persistent);
	CHECK_OK(ruma_sysinfo_write_u64_file(oc_path, oc));
	uint64_t surplus = p->all.surplus, total = p->all.total;
	free(p);
	if (!ok)
		SKIP("the kernel gave no surplus huge pages (memory fragmented)");
	printf("    persistent %llu, surplus %llu\n", (unsigned long long)persistent,
	       (unsigned long long)surplus);
	CHECK_OK(read_rc);
	CHECK_EQ(n, persistent);
	CHECK_EQ(total, persistent);
	CHECK_EQ(node_sum, persistent);
	CHECK_OK(set_rc);
	CHECK_EQ(prev, persistent);
	CHECK_EQ(after, persistent);
	return TEST_PASS;
}

/* ---- probes --------------------------------------------------------------------------- */

static int t_probe_uring(void)
{
	int rc = ruma_sysinfo_probe_uring();

	CHECK(rc <= 0);
	ruma_os_inject(RUMA_SYS_IO_URING_SETUP, 1, ENOSYS, false);
	int inj = ruma_sysinfo_probe_uring();
	ruma_os_inject_clear();
	CHECK_EQ(inj, -ENOSYS);
	if (rc)
		SKIP("io_uring unavailable here: %s", ruma_strerror(rc));
	return TEST_PASS;
}

static int t_probe_perf(void)
{
	int hw = ruma_sysinfo_probe_perf_hw(), sw = ruma_sysinfo_probe_perf_sw();

	printf("    hardware cycles: %s, software task-clock: %s\n", hw ? ruma_strerror(hw) : "ok",
	       sw ? ruma_strerror(sw) : "ok");
	CHECK(hw <= 0 && sw <= 0);
	ruma_os_inject(RUMA_SYS_PERF_EVENT_OPEN, 1, ENOENT, false);
	int inj = ruma_sysinfo_probe_perf_sw();
	ruma_os_inject_clear();
	CHECK_EQ(inj, -ENOENT);
	return TEST_PASS;
}

/* No probe file may stay behind. */
static int leftover_probe_files(const char *dir)
{
	char prefix[64];
	int n = 0;
	DIR *d = opendir(dir);

	snprintf(prefix, sizeof(prefix), ".ruma-odirect-%ld-", (long)getpid());
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

/* Writes to /proc and /sys files go through the OS layer: counted, and an
 * injected failure of the open or the write reaches the caller (a regular
 * file stands in for the sysctl). */
static int t_write_file_through_os(void)
{
	char path[] = "/tmp/ruma-test-sysctlXXXXXX";
	int fd = mkstemp(path);
	uint64_t v = 0;

	CHECK(fd >= 0);
	close(fd);
	uint64_t w0 = ruma_os_count(RUMA_SYS_WRITE), o0 = ruma_os_count(RUMA_SYS_OPEN);
	CHECK_OK(ruma_sysinfo_write_u64_file(path, 12345));
	CHECK_EQ(ruma_os_count(RUMA_SYS_WRITE) - w0, 1);
	CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN) - o0, 1);
	CHECK_OK(ruma_sysinfo_read_u64_file(path, &v));
	CHECK_EQ(v, 12345);
	ruma_os_inject(RUMA_SYS_OPEN, 1, EACCES, false);
	CHECK_EQ(ruma_sysinfo_write_u64_file(path, 7), -EACCES);
	ruma_os_inject(RUMA_SYS_WRITE, 1, EINVAL, false);
	CHECK_EQ(ruma_sysinfo_write_file(path, "madvise"), -EINVAL);
	ruma_os_inject(RUMA_SYS_WRITE, 1, 0, false); /* the kernel takes half */
	CHECK_EQ(ruma_sysinfo_write_file(path, "madvise"), RUMA_ESHORTIO);
	ruma_os_inject(RUMA_SYS_READ, 1, EIO, false);
	CHECK_EQ(ruma_sysinfo_read_u64_file(path, &v), -EIO);
	ruma_os_inject_clear();
	CHECK_OK(ruma_sysinfo_write_u64_file(path, 54321));
	CHECK_OK(ruma_sysinfo_read_u64_file(path, &v));
	CHECK_EQ(v, 54321);
	unlink(path);
	return TEST_PASS;
}

/*
 * /proc/locks and /proc/<pid>/stat, status are read through the OS layer:
 * the lock this process holds is found with one counted open, and an
 * injected failure of the open or a read gives the caller that errno (the
 * flock holder) or the documented answer (a process whose /proc entry is
 * gone is exiting; one that cannot be read is not known to be).
 */
static int t_proc_reads_through_os(void)
{
	char path[] = "/tmp/ruma-test-flockXXXXXX", other[] = "/tmp/ruma-test-flockXXXXXX";
	int fd = mkstemp(path), fd2 = mkstemp(other), holder = 0;
	struct stat st, st2;

	CHECK(fd >= 0 && fd2 >= 0);
	CHECK(fstat(fd, &st) == 0 && fstat(fd2, &st2) == 0);
	CHECK_OK(ruma_os_lock_exclusive(fd));
	uint64_t o0 = ruma_os_count(RUMA_SYS_OPEN);
	CHECK_OK(ruma_sysinfo_flock_holder(st.st_dev, st.st_ino, &holder));
	CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN) - o0, 1);
	CHECK_EQ(holder, (int)getpid());
	CHECK_EQ(ruma_sysinfo_flock_holder(st2.st_dev, st2.st_ino, &holder), RUMA_ENOTFOUND);
	ruma_os_inject(RUMA_SYS_OPEN, 1, EACCES, false);
	CHECK_EQ(ruma_sysinfo_flock_holder(st.st_dev, st.st_ino, &holder), -EACCES);
	ruma_os_inject(RUMA_SYS_READ, 1, EIO, false);
	CHECK_EQ(ruma_sysinfo_flock_holder(st.st_dev, st.st_ino, &holder), -EIO);
	CHECK(!ruma_sysinfo_pid_exiting((int)getpid()));
	ruma_os_inject(RUMA_SYS_OPEN, 1, ENOENT, false);
	CHECK(ruma_sysinfo_pid_exiting((int)getpid())); /* no /proc entry: gone */
	ruma_os_inject(RUMA_SYS_OPEN, 1, EACCES, false);
	CHECK(!ruma_sysinfo_pid_exiting((int)getpid())); /* cannot be told */
	ruma_os_inject(RUMA_SYS_OPEN, 2, ENOENT, false); /* stat read, status gone */
	CHECK(!ruma_sysinfo_pid_exiting((int)getpid()));
	ruma_os_inject_clear();
	CHECK_OK(ruma_sysinfo_flock_holder(st.st_dev, st.st_ino, &holder));
	close(fd);
	close(fd2);
	unlink(path);
	unlink(other);
	return TEST_PASS;
}

/* The drivers' file calls go through the OS layer: counted, injectable. */
static int t_file_open_and_size(void)
{
	char path[] = "/tmp/ruma-test-fileXXXXXX";
	int fd = mkstemp(path), fd2;
	uint64_t bytes = 0;
	bool blk = true;

	CHECK(fd >= 0);
	CHECK(write(fd, "0123456789", 10) == 10);
	close(fd);
	uint64_t o0 = ruma_os_count(RUMA_SYS_OPEN);
	CHECK_OK(ruma_file_open(path, O_RDWR, 0, &fd2));
	CHECK_EQ(ruma_os_count(RUMA_SYS_OPEN) - o0, 1);
	CHECK_OK(ruma_file_size(fd2, &bytes, &blk));
	CHECK_EQ(bytes, 10);
	CHECK(!blk);
	char buf[4] = { 0 };
	CHECK_OK(ruma_file_pwrite_full(fd2, "ab", 2, 10));
	CHECK_OK(ruma_file_pread_full(fd2, buf, 3, 9));
	CHECK(memcmp(buf, "9ab", 3) == 0);
	CHECK_EQ(ruma_file_pread_full(fd2, buf, 4, 10), RUMA_ESHORTIO);
	ruma_os_inject(RUMA_SYS_PWRITE, 1, ENOSPC, false);
	CHECK_EQ(ruma_file_pwrite_full(fd2, "x", 1, 0), -ENOSPC);
	ruma_os_inject(RUMA_SYS_FSTAT, 1, EIO, false);
	CHECK_EQ(ruma_file_size(fd2, &bytes, NULL), -EIO);
	ruma_os_inject_clear();
	close(fd2);
	ruma_os_inject(RUMA_SYS_OPEN, 1, EACCES, false);
	CHECK_EQ(ruma_file_open(path, O_RDONLY, 0, &fd2), -EACCES);
	ruma_os_inject_clear();
	CHECK_OK(ruma_file_open("/dev/null", O_RDONLY, 0, &fd2));
	CHECK_EQ(ruma_file_size(fd2, &bytes, NULL), -EINVAL); /* a character device */
	close(fd2);
	CHECK(!ruma_powerloss_dead());
	unlink(path);
	return TEST_PASS;
}

static int t_probe_odirect(void)
{
	const char *step = "?";
	int rc = ruma_sysinfo_probe_odirect("/tmp", &step);

	CHECK_EQ(leftover_probe_files("/tmp"), 0);
	CHECK(rc == 0 ? !strcmp(step, "") : strcmp(step, "") != 0);

	CHECK_EQ(ruma_sysinfo_probe_odirect("/nonexistent-ruma-dir", &step), -ENOENT);
	CHECK(!strcmp(step, "open"));

	if (rc == -EINVAL)
		SKIP("/tmp refuses O_DIRECT (tmpfs on an old kernel?)");
	CHECK_OK(rc);
	ruma_os_inject(RUMA_SYS_PWRITE, 1, EIO, false);
	rc = ruma_sysinfo_probe_odirect("/tmp", &step);
	ruma_os_inject_clear();
	CHECK_EQ(rc, -EIO);
	CHECK(!strcmp(step, "pwrite"));
	CHECK_EQ(leftover_probe_files("/tmp"), 0);
	ruma_os_inject(RUMA_SYS_PREAD, 1, 0, false); /* injected end of file */
	rc = ruma_sysinfo_probe_odirect("/tmp", &step);
	ruma_os_inject_clear();
	CHECK_EQ(rc, RUMA_ESHORTIO);
	CHECK(!strcmp(step, "pread"));
	CHECK_EQ(leftover_probe_files("/tmp"), 0);
	return TEST_PASS;
}

/* ---- ruma doctor --------------------------------------------------------------------- */

/*
 * A validating JSON parser (RFC 8259 grammar, no semantic checks): returns a
 * pointer past the value, or NULL on a syntax error.
 */
static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL; /* also catches the terminating NUL */
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!p[i] || !strchr("0123456789abcdefABCDEF", p[i]))
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
	}
	return p + 1;
}

static const char *json_number(const char *p)
{
	const char *s = p;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		if (*++p < '0' || *p > '9')
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p > s ? p : NULL;
}

static const char *json_container(const char *p, int depth, char close, bool object)
{
	p = json_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (object) {
			p = json_string(p);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = json_value(p, depth + 1);
		if (!p)
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = json_ws(p);
	}
}

static const char *json_value(const char *p, int depth)
{
	if (depth > 64)
		return NULL;
	p = json_ws(p);
	switch (*p) {
	case '{': return json_container(p, depth, '}', true);
	case '[': return json_container(p, depth, ']', false);
	case '"': return json_string(p);
	case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
	default: return json_number(p);
	}
}

static bool json_valid_object(const char *s)
{
	s = json_ws(s);
	if (*s != '{')
		return false;
	const char *end = json_value(s, 0);
	return end && *json_ws(end) == '\0';
}

static int t_json_validator(void)
{
	CHECK(json_valid_object("{\"a\":[1,-2.5e3,true,null,{\"b\":\"x\\\"y\\u00e9\"}]}\n"));
	CHECK(!json_valid_object("{\"a\":1,}"));
	CHECK(!json_valid_object("{\"a\":\"unterminated}"));
	CHECK(!json_valid_object("{\"a\":\"bad \\q escape\"}"));
	CHECK(!json_valid_object("{\"a\":[1,2}"));
	CHECK(!json_valid_object("{\"a\":01}"));
	CHECK(!json_valid_object("{} {}"));
	return TEST_PASS;
}

static int t_doctor_text(void)
{
	char *argv[] = { "ruma", "doctor", NULL };
	char *out = NULL, *err = NULL;
	int st = test_run_cli(argv, &out, &err);

	CHECK(out != NULL && err != NULL);
	if (st != 0)
		fprintf(stderr, "  stderr: %s\n", err);
	CHECK_EQ(st, 0);
	const char *expect[] = { "hugepages", "vm.max_map_count", "vm.overcommit_memory",
				 "THP enabled", "perf task-clock", "perf cycles", "io_uring",
				 "O_DIRECT /tmp", "O_DIRECT .", "hugetlbfs", "MADV_POPULATE_WRITE",
				 "process_madvise", "MFD_HUGETLB", "remap_file_pages",
				 "summary:" };
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(expect); i++) {
		if (!strstr(out, expect[i]))
			fprintf(stderr, "  missing '%s'\n", expect[i]);
		CHECK(strstr(out, expect[i]) != NULL);
	}
	free(out);
	free(err);
	return TEST_PASS;
}

static int t_doctor_json(void)
{
	char *argv[] = { "ruma", "doctor", "--json", "--dir", "/tmp", NULL };
	char *out = NULL;
	int st = test_run_cli(argv, &out, NULL);

	CHECK_EQ(st, 0);
	CHECK(out != NULL);
	CHECK(json_valid_object(out));
	const char *keys[] = { "\"kernel\":{",   "\"release\":",   "\"page_size\":",
			       "\"vm\":{",       "\"max_map_count\":", "\"overcommit_memory\":",
			       "\"thp\":{",      "\"hugepages\":[", "\"perf\":[",
			       "\"event\":\"cycles\"", "\"event\":\"page-faults\"",
			       "\"checks\":[",   "\"status\":",    "\"fix\":",
			       "\"summary\":{",  "\"name\":\"O_DIRECT /tmp\"",
			       "\"name\":\"io_uring\"" };
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(keys); i++) {
		if (!strstr(out, keys[i]))
			fprintf(stderr, "  missing %s\n", keys[i]);
		CHECK(strstr(out, keys[i]) != NULL);
	}
	/* --dir given: the current directory is not probed. */
	CHECK(strstr(out, "\"name\":\"O_DIRECT .\"") == NULL);
	free(out);
	return TEST_PASS;
}

static int t_doctor_args(void)
{
	char *bad[] = { "ruma", "doctor", "--frobnicate", NULL };
	char *nodir[] = { "ruma", "doctor", "--dir", NULL };
	char *missing[] = { "ruma", "doctor", "--dir", "/nonexistent-ruma-dir", NULL };
	char *help[] = { "ruma", "doctor", "--help", NULL };
	char *err = NULL, *out = NULL;

	CHECK_EQ(test_run_cli(bad, NULL, &err), 2);
	CHECK(err && strstr(err, "--frobnicate"));
	free(err);
	CHECK_EQ(test_run_cli(nodir, NULL, NULL), 2);
	CHECK_EQ(test_run_cli(missing, NULL, &err), 2);
	CHECK(err && strstr(err, "/nonexistent-ruma-dir"));
	free(err);
	CHECK_EQ(test_run_cli(help, &out, NULL), 0);
	CHECK(out && strstr(out, "usage: ruma doctor"));
	free(out);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "kernel", t_kernel },
	{ "page_size", t_page_size },
	{ "vm_sysctls", t_vm_sysctls },
	{ "thp", t_thp },
	{ "map_count", t_map_count },
	{ "max_map_count_kept", t_max_map_count_kept },
	{ "huge_sizes", t_huge_sizes },
	{ "numa_nodes", t_numa_nodes },
	{ "sysfs_dirs_through_os", t_sysfs_dirs_through_os },
	{ "huge_pool", t_huge_pool },
	{ "huge_set_restore", t_huge_set_restore },
	{ "huge_surplus", t_huge_surplus },
	{ "probe_uring", t_probe_uring },
	{ "probe_perf", t_probe_perf },
	{ "probe_odirect", t_probe_odirect },
	{ "write_file_through_os", t_write_file_through_os },
	{ "proc_reads_through_os", t_proc_reads_through_os },
	{ "file_open_and_size", t_file_open_and_size },
	{ "json_validator", t_json_validator },
	{ "doctor_text", t_doctor_text },
	{ "doctor_json", t_doctor_json },
	{ "doctor_args", t_doctor_args },
};

int main(int argc, char **argv)
{
	return test_main("core_sysinfo", cases, TEST_N(cases), argc, argv);
}
