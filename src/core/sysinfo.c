/*
 * sysinfo.c — machine facts for ruma doctor and for tests: kernel version,
 * huge page pools per size and NUMA node, THP modes, vm sysctls, the mapping
 * count, the memory left by MemAvailable and the memory cgroup, flock
 * holders, and probes that really try io_uring, perf counters and O_DIRECT.
 *
 * Invariants: nothing is cached and no global state is kept; every value is
 * read from /proc or /sys at call time.  Probes undo what they create (ring,
 * counter descriptor, temporary file) on every path.
 *
 * Syscalls: open/read/write of /proc and /sys files (/proc/locks and
 * /proc/<pid>/stat and status too) through sysfile.c, and so through the
 * OS layer (counted, injectable), sysfs directories too (their entries read
 * with readdir);
 * uname and sysconf; io_uring setup, perf_event_open, open(O_DIRECT),
 * pread and pwrite go through the OS layer (src/os) so they are counted and
 * can be failed by injection; close and unlink of the probe file directly.
 */
#include "core/sysinfo_ext.h"

#include "core/perf_open.h"
#include "core/sysfile.h"
#include "os/os.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <liburing.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define HUGE_SYS_DIR "/sys/kernel/mm/hugepages"
#define NODE_SYS_DIR "/sys/devices/system/node"
#define THP_SYS_DIR "/sys/kernel/mm/transparent_hugepage"

/* ---- small file helpers ------------------------------------------------------ */

/* Parse one unsigned decimal number at the start of buf. */
static int parse_u64_text(const char *buf, uint64_t *v)
{
	char *end;

	if (buf[0] < '0' || buf[0] > '9')
		return RUMA_EPARSE;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 10);
	if (errno)
		return -errno;
	*v = (uint64_t)x;
	return 0;
}

int ruma_sysinfo_read_u64_file(const char *path, uint64_t *v)
{
	char buf[64];
	int rc = ruma_sysfile_read(path, buf, sizeof(buf));

	return rc ? rc : parse_u64_text(buf, v);
}

int ruma_sysinfo_max_map_count(uint64_t *v)
{
	static ruma_sysfile_kept kept;
	char buf[64];
	int rc = ruma_sysfile_read_kept(&kept, "/proc/sys/vm/max_map_count", buf, sizeof(buf));

	return rc ? rc : parse_u64_text(buf, v);
}

int ruma_sysinfo_write_u64_file(const char *path, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	return ruma_sysfile_write(path, buf);
}

int ruma_sysinfo_write_file(const char *path, const char *text)
{
	return ruma_sysfile_write(path, text);
}

/* ---- kernel and page size ------------------------------------------------------ */

/* Parse the leading "a.b.c" of a release string; missing parts stay 0. */
static void parse_release(const char *s, ruma_kernel_version *out)
{
	int *part[3] = { &out->major, &out->minor, &out->patch };

	out->major = out->minor = out->patch = 0;
	for (int i = 0; i < 3; i++) {
		if (*s < '0' || *s > '9')
			return;
		long v = 0;
		while (*s >= '0' && *s <= '9' && v < 1000000)
			v = v * 10 + (*s++ - '0');
		*part[i] = (int)v;
		if (*s != '.')
			return;
		s++;
	}
}

int ruma_sysinfo_kernel(ruma_kernel_version *out)
{
	struct utsname u;

	if (uname(&u) != 0)
		return -errno;
	snprintf(out->release, sizeof(out->release), "%s", u.release);
	parse_release(u.release, out);
	return 0;
}

bool ruma_sysinfo_kernel_at_least(int major, int minor)
{
	ruma_kernel_version v;

	if (ruma_sysinfo_kernel(&v) != 0)
		return false;
	return v.major > major || (v.major == major && v.minor >= minor);
}

size_t ruma_sysinfo_page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

/* ---- huge page pools ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* "hugepages-2048kB" -> 2048; false for other names. */
static bool parse_huge_dir_name(const char *name, uint64_t *kb)
{
	char *end;

	if (strncmp(name, "hugepages-", 10) != 0 || name[10] < '0' || name[10] > '9')
		return false;
	*kb = strtoull(name + 10, &end, 10);
	return strcmp(end, "kB") == 0 && *kb > 0;
}

/* What a directory listing collects: up to cap values, k so far. */
typedef struct entry_list {
	void *v;
	size_t cap, k;
} entry_list;

static void add_huge_size(void *ctx, const char *name)
{
	entry_list *l = ctx;
	uint64_t kb;
	if (l->k < l->cap && parse_huge_dir_name(name, &kb))
		((uint64_t *)l->v)[l->k++] = kb;
}

int ruma_sysinfo_huge_sizes(uint64_t *sizes_kb, size_t cap, size_t *n)
{
	entry_list l = { .v = sizes_kb, .cap = cap, .k = 0 };
	int rc = ruma_sysfile_each_entry(HUGE_SYS_DIR, add_huge_size, &l);

	*n = 0;
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	qsort(sizes_kb, l.k, sizeof(*sizes_kb), cmp_u64);
	*n = l.k;
	return 0;
}

int ruma_sysinfo_default_huge_kb(uint64_t *size_kb)
{
	char buf[8192];
	int rc = ruma_sysfile_read("/proc/meminfo", buf, sizeof(buf));

	if (rc)
		return rc;
	const char *p = strstr(buf, "Hugepagesize:");
	if (!p)
		return -ENOENT;
	unsigned long long kb = strtoull(p + strlen("Hugepagesize:"), NULL, 10);
	if (kb == 0)
		return -ENOENT;
	*size_kb = kb;
	return 0;
}

/* "node12" -> 12; false for other names (has_cpu, online, ...). */
static bool parse_node_name(const char *name, int *id)
{
	if (strncmp(name, "node", 4) != 0 || name[4] == '\0')
		return false;
	long v = 0;
	for (const char *p = name + 4; *p; p++) {
		if (*p < '0' || *p > '9' || v > 1000000)
			return false;
		v = v * 10 + (*p - '0');
	}
	*id = (int)v;
	return true;
}

static void add_node(void *ctx, const char *name)
{
	entry_list *l = ctx;
	int id;
	if (l->k < l->cap && parse_node_name(name, &id))
		((int *)l->v)[l->k++] = id;
}

int ruma_sysinfo_numa_nodes(int *nodes, size_t cap, size_t *n)
{
	entry_list l = { .v = nodes, .cap = cap, .k = 0 };
	int rc = ruma_sysfile_each_entry(NODE_SYS_DIR, add_node, &l);

	*n = 0;
	if (rc) {
		if (rc != -ENOENT)
			return rc;
		if (cap > 0) {
			nodes[0] = 0;
			*n = 1;
		}
		return 0;
	}
	qsort(nodes, l.k, sizeof(*nodes), cmp_int);
	*n = l.k;
	return 0;
}

/* Directory of the pool of size_kb: system-wide (node < 0) or of one node. */
static int pool_dir(uint64_t size_kb, int node, char *buf, size_t cap)
{
	int len = node < 0
		? snprintf(buf, cap, HUGE_SYS_DIR "/hugepages-%" PRIu64 "kB", size_kb)
		: snprintf(buf, cap, NODE_SYS_DIR "/node%d/hugepages/hugepages-%" PRIu64 "kB", node,
			   size_kb);
	return len < 0 || (size_t)len >= cap ? -ENAMETOOLONG : 0;
}

static int pool_value(const char *dir, const char *file, uint64_t *v)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return ruma_sysinfo_read_u64_file(path, v);
}

/*
 * Persistent pages of a pool directory.  The sysfs nr_hugepages counts the
 * surplus pages too (the kernel's nr_huge_pages); the persistent count, the
 * one /proc/sys/vm/nr_hugepages shows and a write sets, is that minus
 * surplus_hugepages.  The two files are read apart, so a racing change can
 * leave surplus above the total for an instant: clamp at 0.
 */
static int pool_persistent(const char *dir, uint64_t *persistent, uint64_t *surplus)
{
	uint64_t nr = 0, sur = 0;
	int rc = pool_value(dir, "nr_hugepages", &nr);

	if (rc == 0)
		rc = pool_value(dir, "surplus_hugepages", &sur);
	if (rc)
		return rc;
	*persistent = nr > sur ? nr - sur : 0;
	if (surplus)
		*surplus = sur;
	return 0;
}

static int read_counts(uint64_t size_kb, int node, ruma_hugepage_counts *c)
{
	char dir[256];
	int rc = pool_dir(size_kb, node, dir, sizeof(dir));

	memset(c, 0, sizeof(*c));
	if (rc == 0)
		rc = pool_persistent(dir, &c->total, &c->surplus);
	if (rc == 0)
		rc = pool_value(dir, "free_hugepages", &c->free);
	if (rc == 0 && node < 0) {
		rc = pool_value(dir, "resv_hugepages", &c->reserved);
		c->has_reserved = rc == 0;
	}
	return rc;
}

int ruma_sysinfo_huge_pool(uint64_t size_kb, ruma_hugepage_pool *out)
{
	int nodes[RUMA_SYSINFO_MAX_NODES];
	size_t nn = 0;

	memset(out, 0, sizeof(*out));
	out->size_kb = size_kb;
	int rc = read_counts(size_kb, -1, &out->all);
	if (rc)
		return rc;
	rc = ruma_sysinfo_numa_nodes(nodes, RUMA_SYSINFO_MAX_NODES, &nn);
	if (rc)
		return rc;
	for (size_t i = 0; i < nn; i++) {
		/* A node without this pool directory (no memory) is left out. */
		if (read_counts(size_kb, nodes[i], &out->per_node[out->nnodes]) != 0)
			continue;
		out->node[out->nnodes++] = nodes[i];
	}
	return 0;
}

int ruma_sysinfo_read_nr_hugepages(uint64_t size_kb, int node, uint64_t *n)
{
	char dir[256];
	int rc = pool_dir(size_kb, node, dir, sizeof(dir));

	return rc ? rc : pool_persistent(dir, n, NULL);
}

/* The file that sets the persistent pool of size_kb. */
static int nr_hugepages_path(uint64_t size_kb, char *buf, size_t cap)
{
	uint64_t def = 0;

	if (ruma_sysinfo_default_huge_kb(&def) == 0 && def == size_kb) {
		snprintf(buf, cap, "/proc/sys/vm/nr_hugepages");
		return 0;
	}
	int rc = pool_dir(size_kb, -1, buf, cap);
	if (rc == 0 && strlen(buf) + sizeof("/nr_hugepages") > cap)
		rc = -ENAMETOOLONG;
	if (rc == 0)
		strcat(buf, "/nr_hugepages");
	return rc;
}

/*
 * The persistent count before and after the write comes from the pool's
 * sysfs directory (nr_hugepages - surplus_hugepages) for every size: the
 * sysfs nr_hugepages file that sets a non-default size counts surplus pages
 * when read back.
 */
int ruma_sysinfo_set_nr_hugepages_ex(uint64_t size_kb, uint64_t n, uint64_t *previous,
				     uint64_t *actual)
{
	char path[320];
	uint64_t prev, now;
	int rc = nr_hugepages_path(size_kb, path, sizeof(path));

	if (rc == 0)
		rc = ruma_sysinfo_read_nr_hugepages(size_kb, -1, &prev);
	if (rc)
		return rc;
	if (previous)
		*previous = prev;
	rc = ruma_sysinfo_write_u64_file(path, n);
	if (rc)
		return rc;
	rc = ruma_sysinfo_read_nr_hugepages(size_kb, -1, &now);
	if (rc)
		return rc;
	if (actual)
		*actual = now;
	return 0;
}

int ruma_sysinfo_set_nr_hugepages(uint64_t size_kb, uint64_t n, uint64_t *previous)
{
	uint64_t prev = 0, now = 0;
	int rc = ruma_sysinfo_set_nr_hugepages_ex(size_kb, n, &prev, &now);

	if (rc)
		return rc;
	if (previous)
		*previous = prev;
	if (now < n) {
		/* The kernel found too little contiguous memory: undo. */
		ruma_sysinfo_set_nr_hugepages_ex(size_kb, prev, NULL, NULL);
		return RUMA_ENOHUGE;
	}
	return 0;
}

/* ---- THP and vm sysctls -------------------------------------------------------- */

/* The bracketed word of a THP mode file ("always [madvise] never" -> "madvise"). */
static int read_bracketed(const char *file, char *out, size_t cap)
{
	char path[256], buf[256];

	out[0] = '\0';
	snprintf(path, sizeof(path), THP_SYS_DIR "/%s", file);
	int rc = ruma_sysfile_read(path, buf, sizeof(buf));
	if (rc)
		return rc;
	const char *open_b = strchr(buf, '['), *close_b = open_b ? strchr(open_b, ']') : NULL;
	if (!close_b)
		return RUMA_EPARSE;
	size_t len = (size_t)(close_b - open_b - 1);
	if (len >= cap)
		len = cap - 1;
	memcpy(out, open_b + 1, len);
	out[len] = '\0';
	return 0;
}

int ruma_sysinfo_thp(ruma_thp_info *out)
{
	memset(out, 0, sizeof(*out));
	int rc = read_bracketed("enabled", out->enabled, sizeof(out->enabled));
	if (rc)
		return rc;
	/* defrag and shmem_enabled are optional (older kernels, no shmem THP). */
	read_bracketed("defrag", out->defrag, sizeof(out->defrag));
	read_bracketed("shmem_enabled", out->shmem_enabled, sizeof(out->shmem_enabled));
	return 0;
}

int ruma_sysinfo_vm(ruma_vm_info *out)
{
	int rc = ruma_sysinfo_read_u64_file("/proc/sys/vm/max_map_count", &out->max_map_count);
	if (rc == 0)
		rc = ruma_sysinfo_read_u64_file("/proc/sys/vm/overcommit_memory",
						&out->overcommit_memory);
	if (rc == 0)
		rc = ruma_sysinfo_read_u64_file("/proc/sys/vm/overcommit_ratio",
						&out->overcommit_ratio);
	return rc;
}

int ruma_sysinfo_map_count(uint64_t *n)
{
	return ruma_sysfile_count_lines("/proc/self/maps", n);
}

/* ---- probes ------------------------------------------------------------------------- */

int ruma_sysinfo_probe_uring(void)
{
	struct io_uring ring;
	int rc = ruma_os_uring_init(&ring, 2);

	if (rc == 0)
		ruma_os_uring_exit(&ring);
	return rc;
}

static int probe_perf(uint32_t type, uint64_t config)
{
	int fd = -1;
	bool user_only;
	int rc = ruma_perf_open_counter(type, config, &fd, &user_only);

	if (rc == 0)
		close(fd);
	return rc;
}

int ruma_sysinfo_probe_perf_hw(void)
{
	return probe_perf(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
}

int ruma_sysinfo_probe_perf_sw(void)
{
	return probe_perf(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
}

enum { ODIRECT_BLOCK = 4096 };

/* Write one aligned block through fd, read it back and compare. */
static int odirect_roundtrip(int fd, const char **step)
{
	unsigned char *wbuf = NULL, *rbuf = NULL;
	int rc = 0;

	if (posix_memalign((void **)&wbuf, ODIRECT_BLOCK, ODIRECT_BLOCK) != 0 ||
	    posix_memalign((void **)&rbuf, ODIRECT_BLOCK, ODIRECT_BLOCK) != 0) {
		*step = "alloc";
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ODIRECT_BLOCK; i++)
		wbuf[i] = (unsigned char)(i * 131u + 7u);
	memset(rbuf, 0, ODIRECT_BLOCK);
	ssize_t r = ruma_os_pwrite(fd, wbuf, ODIRECT_BLOCK, 0);
	if (r != ODIRECT_BLOCK) {
		*step = "pwrite";
		rc = r < 0 ? (int)r : RUMA_ESHORTIO;
		goto out;
	}
	r = ruma_os_pread(fd, rbuf, ODIRECT_BLOCK, 0);
	if (r != ODIRECT_BLOCK) {
		*step = "pread";
		rc = r < 0 ? (int)r : RUMA_ESHORTIO;
		goto out;
	}
	if (memcmp(wbuf, rbuf, ODIRECT_BLOCK) != 0) {
		*step = "compare";
		rc = RUMA_ECORRUPT;
	}
out:
	free(wbuf);
	free(rbuf);
	return rc;
}

int ruma_sysinfo_probe_odirect(const char *dir, const char **step)
{
	char path[4096];
	const char *failed = "";
	int fd = -1, rc;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	int len = snprintf(path, sizeof(path), "%s/.ruma-odirect-%ld-%ld", dir, (long)getpid(),
			   (long)ts.tv_nsec);
	if (len < 0 || (size_t)len >= sizeof(path)) {
		failed = "open";
		rc = -ENAMETOOLONG;
		goto out;
	}
	rc = ruma_os_open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600, &fd);
	if (rc) {
		failed = "open";
		goto out;
	}
	rc = odirect_roundtrip(fd, &failed);
	close(fd);
	unlink(path);
out:
	if (step)
		*step = failed;
	return rc;
}

/* ---- available memory ------------------------------------------------------- */

/* MemAvailable of /proc/meminfo in bytes (0 when unknown). */
static uint64_t meminfo_available(void)
{
	char buf[8192];
	const char *p;

	if (ruma_sysfile_read("/proc/meminfo", buf, sizeof(buf)) != 0 ||
	    !(p = strstr(buf, "MemAvailable:")))
		return 0;
	return (uint64_t)strtoull(p + strlen("MemAvailable:"), NULL, 10) * 1024;
}

/* limit - usage of the cgroup directory dir (files named limit and usage);
 * UINT64_MAX when it sets no limit or cannot be read. */
static uint64_t cgroup_room(const char *dir, const char *limit, const char *usage)
{
	char path[PATH_MAX], buf[64];
	uint64_t lim, use;

	snprintf(path, sizeof(path), "%s/%s", dir, limit);
	if (ruma_sysfile_read(path, buf, sizeof(buf)) != 0 || !strncmp(buf, "max", 3))
		return UINT64_MAX;
	lim = strtoull(buf, NULL, 10);
	snprintf(path, sizeof(path), "%s/%s", dir, usage);
	if (ruma_sysinfo_read_u64_file(path, &use) != 0)
		return UINT64_MAX;
	/* cgroup v1 writes "no limit" as a huge page-rounded number */
	if (lim >= (UINT64_C(1) << 62))
		return UINT64_MAX;
	return lim > use ? lim - use : 0;
}

/* The tightest room of the cgroup at rel (e.g. "/a/b") and its ancestors
 * below mount. */
static uint64_t cgroup_path_room(const char *mount, const char *rel, const char *limit,
				 const char *usage)
{
	char dir[PATH_MAX];
	uint64_t room = UINT64_MAX;

	snprintf(dir, sizeof(dir), "%s%s", mount, rel);
	for (;;) {
		size_t l = strlen(dir);
		while (l > strlen(mount) && dir[l - 1] == '/')
			dir[--l] = '\0';
		uint64_t r = cgroup_room(dir, limit, usage);
		if (r < room)
			room = r;
		char *slash = strrchr(dir, '/');
		if (l <= strlen(mount) || !slash || slash < dir + strlen(mount))
			break;
		*slash = '\0';
	}
	return room;
}

/* memory.max - memory.current (v2) or limit_in_bytes - usage_in_bytes (v1)
 * of this process's memory cgroup and its ancestors; UINT64_MAX = none. */
static uint64_t cgroup_available(void)
{
	char buf[4096], line[PATH_MAX];
	uint64_t room = UINT64_MAX;
	const char *p = buf;

	if (ruma_sysfile_read("/proc/self/cgroup", buf, sizeof(buf)) != 0)
		return UINT64_MAX;
	while (*p) {
		size_t l = strcspn(p, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)l, p);
		p += l + (p[l] == '\n');
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		uint64_t r = UINT64_MAX;
		if (!strncmp(line, "0:", 2) && c1[1] == '\0')
			r = cgroup_path_room("/sys/fs/cgroup", c2 + 1, "memory.max", "memory.current");
		else if (!strcmp(c1 + 1, "memory"))
			r = cgroup_path_room("/sys/fs/cgroup/memory", c2 + 1, "memory.limit_in_bytes",
					     "memory.usage_in_bytes");
		if (r < room)
			room = r;
	}
	return room;
}

int ruma_sysinfo_mem_available(ruma_mem_avail *out)
{
	out->meminfo = meminfo_available();
	out->cgroup = cgroup_available();
	if (out->cgroup != UINT64_MAX && (!out->meminfo || out->cgroup < out->meminfo)) {
		out->bytes = out->cgroup;
		out->limited_by = "cgroup memory limit";
	} else {
		out->bytes = out->meminfo;
		out->limited_by = out->meminfo ? "MemAvailable" : "unknown";
	}
	return 0;
}

/* ---- lock holders ---------------------------------------------------------- */

/* The file a flock holder is looked for, and the holder once found. */
typedef struct flock_query {
	uint64_t dev, ino;
	int pid;
} flock_query;

/* One line of /proc/locks: 1 (stop) when it is a FLOCK on q's file. */
static int flock_line(void *ctx, const char *line)
{
	flock_query *q = ctx;
	char kind[16], mode[16];
	unsigned maj, min;
	unsigned long long in;
	int p;
	/* "1: FLOCK  ADVISORY  WRITE 1234 fe:00:10953114 0 EOF" */
	const char *s = strchr(line, ':');
	if (!s || sscanf(s + 1, "%15s %*s %15s %d %x:%x:%llu", kind, mode, &p, &maj, &min, &in) != 6)
		return 0;
	if (strcmp(kind, "FLOCK") || p <= 0 || in != q->ino || maj != major((dev_t)q->dev) ||
	    min != minor((dev_t)q->dev))
		return 0;
	q->pid = p;
	return 1;
}

int ruma_sysinfo_flock_holder(uint64_t dev, uint64_t ino, int *pid)
{
	flock_query q = { .dev = dev, .ino = ino, .pid = 0 };
	int rc = ruma_sysfile_each_line("/proc/locks", flock_line, &q);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return RUMA_ENOTFOUND;
	*pid = q.pid;
	return 0;
}

#define PF_EXITING_FLAG 0x00000004u /* task->flags: in do_exit (include/linux/sched.h) */

/* SIGKILL pending for the process (SigPnd of its main thread, or ShdPnd):
 * it is killed but has not begun to exit yet. */
/* One line of /proc/<pid>/status: 1 (stop) when it shows SIGKILL pending. */
static int sigkill_line(void *ctx, const char *line)
{
	unsigned long long mask;
	(void)ctx;
	return (sscanf(line, "SigPnd: %llx", &mask) == 1 || sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
	       (mask & (1ull << (SIGKILL - 1)));
}

static bool sigkill_pending(int pid)
{
	char path[48];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return ruma_sysfile_each_line(path, sigkill_line, NULL) == 1;
}

bool ruma_sysinfo_pid_exiting(int pid)
{
	char path[48], line[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int rc = ruma_sysfile_read(path, line, sizeof(line));
	if (rc)
		return rc == -ENOENT;
	/* "pid (comm) state ppid pgrp session tty_nr tpgid flags ..."; comm may hold ')' */
	const char *p = strrchr(line, ')');
	char state;
	unsigned flags;
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
		return false;
	return state == 'Z' || state == 'X' || (flags & PF_EXITING_FLAG) || sigkill_pending(pid);
}
