/*
 * cgroup.c — a child memory cgroup for one `ruma kv` run (cgroup.h).
 *
 * Where the process's cgroup is: /proc/self/cgroup names it per hierarchy,
 * "N:memory:/path" for the v1 memory controller (mounted at
 * /sys/fs/cgroup/memory) and "0::/path" for the unified v2 hierarchy
 * (mounted at /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1).  v1 is
 * used where it exists: its memory.limit_in_bytes counts page cache, and
 * memory.memsw.limit_in_bytes (where swap accounting is on) keeps anonymous
 * memory from going to swap instead.  v2 needs the memory controller
 * enabled for the parent's children (cgroup.subtree_control); its limits
 * are memory.max and memory.swap.max.
 *
 * Moving the process (cgroup.procs) moves all its threads; the run's page
 * cache and anonymous memory are charged to the child from then on.
 */
#include "bench/kv/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define V1_ROOT "/sys/fs/cgroup/memory"

uint64_t ruma_kv_cgroup_limit(uint64_t memory)
{
	uint64_t slack = memory / 4;
	return memory + (slack < (64ull << 20) ? 64ull << 20 : slack);
}

static int say(char *err, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int say(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* Write text to dir/file; 0 or -errno. */
static int put(const char *dir, const char *file, const char *text)
{
	char path[640];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int rc = w == (ssize_t)n ? 0 : w < 0 ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

/* A number from dir/file; false where there is none. */
static bool get(const char *dir, const char *file, uint64_t *v)
{
	char path[640];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fscanf(f, "%" SCNu64, v) == 1;
	fclose(f);
	return ok;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The process's cgroup directory: v1 memory where mounted, else v2. */
/* cg->parent = root + path; a path too long for it is refused, not cut. */
static int set_parent(ruma_kv_cgroup *cg, const char *root, const char *path, char *err,
		      size_t len)
{
	int n = snprintf(cg->parent, sizeof(cg->parent), "%s%s", root, path);
	if (n < 0 || (size_t)n >= sizeof(cg->parent))
		return say(err, len, -ENAMETOOLONG, "the memory cgroup %s%s: a path longer than %zu "
			   "bytes", root, path, sizeof(cg->parent) - 1);
	return 0;
}

static int find_parent(ruma_kv_cgroup *cg, char *err, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return say(err, len, -errno, "cannot read /proc/self/cgroup: %s", strerror(errno));
	char line[600], v1[520] = "", v2[520] = "";
	bool has_v1 = false, has_v2 = false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*b = 0;
		if (strcmp(a + 1, "memory") == 0 && strlen(b + 1) < sizeof(v1)) {
			has_v1 = true;
			snprintf(v1, sizeof(v1), "%s", b + 1);
		} else if (strncmp(line, "0", 2) == 0 && a[1] == 0 && strlen(b + 1) < sizeof(v2)) {
			has_v2 = true;
			snprintf(v2, sizeof(v2), "%s", b + 1);
		}
	}
	fclose(f);
	if (has_v1 && is_dir(V1_ROOT)) {
		cg->version = 1;
		return set_parent(cg, V1_ROOT, v1, err, len);
	}
	const char *roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	for (unsigned i = 0; has_v2 && i < 2; i++) {
		char ctl[600];
		snprintf(ctl, sizeof(ctl), "%s/cgroup.controllers", roots[i]);
		if (access(ctl, R_OK) == 0) {
			cg->version = 2;
			return set_parent(cg, roots[i], v2, err, len);
		}
	}
	return say(err, len, -ENOENT, "no memory cgroup hierarchy is mounted (%s, "
		   "/sys/fs/cgroup with cgroup.controllers)", V1_ROOT);
}

static int set_limits(ruma_kv_cgroup *cg, char *err, size_t len)
{
	char v[32];
	snprintf(v, sizeof(v), "%" PRIu64, cg->limit);
	const char *file = cg->version == 1 ? "memory.limit_in_bytes" : "memory.max";
	int rc = put(cg->child, file, v);
	if (rc)
		return say(err, len, rc, "cannot set %s/%s: %s%s", cg->child, file, strerror(-rc),
			   cg->version == 2 ? " (is the memory controller enabled in the parent's "
					      "cgroup.subtree_control?)" : "");
	/* no swapping past the limit, where swap is accounted */
	if (cg->version == 1)
		(void)put(cg->child, "memory.memsw.limit_in_bytes", v);
	else
		(void)put(cg->child, "memory.swap.max", "0");
	return 0;
}

int ruma_kv_cgroup_enter(ruma_kv_cgroup *cg, uint64_t limit, char *err, size_t len)
{
	memset(cg, 0, sizeof(*cg));
	cg->limit = limit;
	int rc = find_parent(cg, err, len);
	if (rc)
		return rc;
	snprintf(cg->child, sizeof(cg->child), "%s/ruma-kv-%ld", cg->parent, (long)getpid());
	if (mkdir(cg->child, 0755) && errno != EEXIST)
		return say(err, len, -errno, "cannot make the memory cgroup %s: %s", cg->child,
			   strerror(errno));
	if ((rc = set_limits(cg, err, len))) {
		(void)rmdir(cg->child);
		return rc;
	}
	char pid[24];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if ((rc = put(cg->child, "cgroup.procs", pid))) {
		(void)rmdir(cg->child);
		return say(err, len, rc, "cannot move the process into %s: %s", cg->child,
			   strerror(-rc));
	}
	cg->entered = true;
	return 0;
}

void ruma_kv_cgroup_usage(const ruma_kv_cgroup *cg, uint64_t *peak, uint64_t *hits)
{
	*peak = *hits = 0;
	if (cg->version == 1) {
		(void)get(cg->child, "memory.max_usage_in_bytes", peak);
		(void)get(cg->child, "memory.failcnt", hits);
		return;
	}
	(void)get(cg->child, "memory.peak", peak);
	char path[640];
	snprintf(path, sizeof(path), "%s/memory.events", cg->child);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char key[32];
	uint64_t v;
	while (fscanf(f, "%31s %" SCNu64, key, &v) == 2)
		if (strcmp(key, "max") == 0)
			*hits = v;
	fclose(f);
}

int ruma_kv_cgroup_leave(ruma_kv_cgroup *cg, char *err, size_t len)
{
	if (!cg->entered)
		return 0;
	char pid[24];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	int rc = put(cg->parent, "cgroup.procs", pid);
	if (rc)
		return say(err, len, rc, "cannot move the process back to %s: %s", cg->parent,
			   strerror(-rc));
	cg->entered = false;
	/* the kernel may still be moving the last charges: retry for up to 1 s */
	for (int i = 0; i < 100; i++) {
		if (rmdir(cg->child) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			break;
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	return say(err, len, -errno, "cannot remove the memory cgroup %s: %s", cg->child,
		   strerror(errno));
}
