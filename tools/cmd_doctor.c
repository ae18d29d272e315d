/*
 * cmd_doctor.c — `ruma doctor`: checks the machine settings ruma depends on
 * (the RUMA setup section: huge pages, overcommit, max_map_count, THP) plus
 * perf counters, io_uring, O_DIRECT, the buffer manager's I/O paths and
 * the kernel features ruma uses, and prints for each the current value, what it affects, a status (ok / warn /
 * n/a) and the command that fixes it.  --json prints the same as one JSON
 * object; --apply (root) applies the recommended settings and prints how to
 * restore the previous ones.
 *
 * Invariants: every value printed is read from the machine at run time; the
 * probes (io_uring, perf, O_DIRECT) really try the feature and clean up.
 * Without --apply nothing on the system is changed.
 *
 * Syscalls: through src/core/sysinfo.c and perf.c (reads of /proc and /sys,
 * probes via the OS layer); with --apply, writes to files under /proc/sys/vm
 * and to /sys/kernel/mm/transparent_hugepage/enabled, through
 * ruma_sysinfo_write_u64_file / ruma_sysinfo_write_file.
 */
#include "bench/common/opt.h"
#include <ruma/bm.h>
#include <ruma/core.h>
#include "core/perf_ext.h"
#include "core/sysinfo_ext.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ruma_cmd_doctor(int argc, char **argv);
extern const char ruma_cmd_doctor_summary[];
const char ruma_cmd_doctor_summary[] =
	"check huge pages, THP, vm limits, perf counters, io_uring and O_DIRECT; --apply fixes";

/* Recommended settings (see docs/doctor.md for the reasoning). */
#define REC_NR_HUGEPAGES 64u            /* 64 x 2 MiB = 128 MiB */
#define REC_MAX_MAP_COUNT 16777216u     /* 2^24, as the RUMA setup */
#define REC_THP "madvise"
#define THP_ENABLED_PATH "/sys/kernel/mm/transparent_hugepage/enabled"
#define MAX_DIRS 16

enum status { ST_OK, ST_WARN, ST_NA };
static const char *const status_name[] = { "ok", "warn", "n/a" };

struct check {
	char name[64];
	char value[640];
	const char *affects;
	enum status status;
	char fix[320];
};

struct report {
	struct check *c;
	size_t n, cap;
	int oom;
};

struct options {
	const char *dirs[MAX_DIRS];
	size_t ndirs;
	bool json, apply, help;
};

/* ---- collecting checks --------------------------------------------------------- */

static struct check *add_check(struct report *r, enum status st, const char *affects,
			       const char *name)
{
	static struct check scratch;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct check *c = realloc(r->c, cap * sizeof(*c));
		if (!c) {
			r->oom = 1;
			memset(&scratch, 0, sizeof(scratch));
			return &scratch;
		}
		r->c = c;
		r->cap = cap;
	}
	struct check *c = &r->c[r->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->status = st;
	c->affects = affects;
	return c;
}

static void setf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
}

#define SETV(c, ...) setf((c)->value, sizeof((c)->value), __VA_ARGS__)
#define SETFIX(c, ...) setf((c)->fix, sizeof((c)->fix), __VA_ARGS__)

static const char *errno_name(int neg)
{
	return ruma_strerror(neg);
}

/* ---- kernel ---------------------------------------------------------------------- */

struct feature {
	const char *name;
	int major, minor;
	const char *affects;
};

static const struct feature features[] = {
	{ "MADV_POPULATE_WRITE", 5, 14,
	  "prefaulting without touching memory: the *populate* methods of ruma micro and "
	  "rewired areas created with populate" },
	{ "process_madvise(self)", 6, 13,
	  "batched advice over many ranges in one syscall (vmcache eviction, rewire "
	  "release); before 6.13 the own process accepts only a few advice values" },
	{ "memfd MFD_HUGETLB", 4, 14,
	  "huge-page physical pools of rewire and the huge-page allocator (no hugetlbfs needed)" },
	{ "remap_file_pages", 4, 0,
	  "ruma micro methods 15/16; since 4.0 the kernel emulates it with one VMA per page, "
	  "so it is slow and counts against vm.max_map_count" },
};

static void check_kernel(struct report *r, const ruma_kernel_version *kv, int kv_rc)
{
	struct check *c = add_check(r, kv_rc ? ST_NA : ST_OK,
				    "which of the kernel features below ruma can use", "kernel");
	if (kv_rc) {
		SETV(c, "uname failed: %s", errno_name(kv_rc));
		return;
	}
	SETV(c, "%s (parsed %d.%d.%d)", kv->release, kv->major, kv->minor, kv->patch);
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(features); i++) {
		const struct feature *f = &features[i];
		bool ok = ruma_sysinfo_kernel_at_least(f->major, f->minor);
		char name[64];
		snprintf(name, sizeof(name), "kernel: %s", f->name);
		c = add_check(r, ok ? ST_OK : ST_NA, f->affects, name);
		SETV(c, "needs Linux >= %d.%d: %s", f->major, f->minor, ok ? "present" : "missing");
		if (!ok)
			SETFIX(c, "run a kernel >= %d.%d", f->major, f->minor);
	}
	c = add_check(r, ST_OK, "every page-granular operation (rewiring, page tables, I/O)",
		      "page size");
	SETV(c, "%zu bytes", ruma_sysinfo_page_size());
}

/* ---- huge pages ------------------------------------------------------------------ */

static const char huge_affects[] =
	"huge-page variants: ruma micro huge-page methods, rewire pools with huge pages, the "
	"2 MB huge-page allocator of ruma art; without free pages a hugetlb mapping fails "
	"with ENOMEM (RUMA_ENOHUGE)";

static void format_nodes(char *buf, size_t cap, const ruma_hugepage_pool *p)
{
	size_t len = strlen(buf);

	for (size_t i = 0; i < p->nnodes && len + 1 < cap; i++) {
		const ruma_hugepage_counts *n = &p->per_node[i];
		int w = snprintf(buf + len, cap - len,
				 "; node%d: total %" PRIu64 ", free %" PRIu64 ", surplus %" PRIu64,
				 p->node[i], n->total, n->free, n->surplus);
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

static void check_huge_pool(struct report *r, const ruma_hugepage_pool *p, bool is_default)
{
	char name[64];
	const ruma_hugepage_counts *a = &p->all;

	snprintf(name, sizeof(name), "hugepages %" PRIu64 "kB%s", p->size_kb,
		 is_default ? " (default)" : "");
	bool enough = a->free >= REC_NR_HUGEPAGES;
	struct check *c = add_check(r, !is_default || enough ? ST_OK : ST_WARN,
				    is_default ? huge_affects
					       : "optional size; used only when a run asks for "
						 "this page size explicitly",
				    name);
	SETV(c, "total %" PRIu64 ", free %" PRIu64 ", reserved %" PRIu64 ", surplus %" PRIu64,
	     a->total, a->free, a->reserved, a->surplus);
	format_nodes(c->value, sizeof(c->value), p);
	if (is_default && !enough) {
		uint64_t target = a->total + (REC_NR_HUGEPAGES - a->free);
		SETFIX(c, "echo %" PRIu64 " > /proc/sys/vm/nr_hugepages   (%u free = %u MiB; "
		       "per node: /sys/devices/system/node/node<N>/hugepages/hugepages-%" PRIu64
		       "kB/nr_hugepages)",
		       target, REC_NR_HUGEPAGES, REC_NR_HUGEPAGES * (unsigned)(p->size_kb / 1024),
		       p->size_kb);
	}
}

static void check_huge(struct report *r)
{
	uint64_t sizes[RUMA_SYSINFO_MAX_HUGE_SIZES], def = 0;
	size_t n = 0;
	int rc = ruma_sysinfo_huge_sizes(sizes, RUMA_ARRAY_SIZE(sizes), &n);

	ruma_sysinfo_default_huge_kb(&def);
	if (rc || n == 0) {
		struct check *c = add_check(r, ST_NA, huge_affects, "hugepages");
		SETV(c, "no hugetlb support%s%s", rc ? ": " : "", rc ? errno_name(rc) : "");
		SETFIX(c, "use a kernel built with CONFIG_HUGETLBFS");
		return;
	}
	ruma_hugepage_pool *pool = malloc(sizeof(*pool));
	if (!pool) {
		r->oom = 1;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		rc = ruma_sysinfo_huge_pool(sizes[i], pool);
		if (rc) {
			struct check *c = add_check(r, ST_NA, huge_affects, "hugepages");
			SETV(c, "%" PRIu64 "kB: cannot read: %s", sizes[i], errno_name(rc));
			continue;
		}
		check_huge_pool(r, pool, sizes[i] == def);
	}
	free(pool);
	struct check *c = add_check(r, ST_OK,
				    "nothing: ruma allocates huge pages with "
				    "memfd_create(MFD_HUGETLB) and MAP_HUGETLB",
				    "hugetlbfs mount");
	SETV(c, "not needed (the original RUMA mounted /mnt/hugetlbfs)");
}

/* ---- THP and vm sysctls ------------------------------------------------------------ */

static void check_thp(struct report *r)
{
	ruma_thp_info t;
	int rc = ruma_sysinfo_thp(&t);
	struct check *c;

	if (rc) {
		c = add_check(r, ST_NA, "THP variants of the allocators and of ruma micro",
			      "THP enabled");
		SETV(c, "no transparent huge pages: %s", errno_name(rc));
		SETFIX(c, "use a kernel built with CONFIG_TRANSPARENT_HUGEPAGE");
		return;
	}
	bool ok = strcmp(t.enabled, REC_THP) == 0;
	c = add_check(r, ok ? ST_OK : ST_WARN,
		      "anonymous memory: with 'madvise' only regions ruma marks MADV_HUGEPAGE get "
		      "THP, so 4 KiB and huge-page variants stay separate; 'always' puts THP under "
		      "4 KiB baselines, 'never' disables the THP variants",
		      "THP enabled");
	SETV(c, "%s", t.enabled);
	if (!ok)
		SETFIX(c, "echo " REC_THP " > " THP_ENABLED_PATH);
	c = add_check(r, ST_OK, "how hard a THP fault compacts memory (latency of first touch)",
		      "THP defrag");
	SETV(c, "%s", t.defrag[0] ? t.defrag : "(not present)");
	bool shm_ok = !t.shmem_enabled[0] || !strcmp(t.shmem_enabled, "never") ||
		      !strcmp(t.shmem_enabled, "advise") || !strcmp(t.shmem_enabled, "deny");
	c = add_check(r, shm_ok ? ST_OK : ST_WARN,
		      "memfd pools ruma rewires at 4 KiB granularity: huge shmem pages would be "
		      "split by rewiring and mix page sizes in measurements",
		      "THP shmem_enabled");
	SETV(c, "%s", t.shmem_enabled[0] ? t.shmem_enabled : "(not present)");
	if (!shm_ok)
		SETFIX(c, "echo never > /sys/kernel/mm/transparent_hugepage/shmem_enabled");
}

static void check_vm(struct report *r)
{
	ruma_vm_info vm;
	uint64_t maps = 0;
	int rc = ruma_sysinfo_vm(&vm);
	struct check *c;

	if (rc) {
		c = add_check(r, ST_NA, "mapping limits", "vm sysctls");
		SETV(c, "cannot read /proc/sys/vm: %s", errno_name(rc));
		return;
	}
	bool oc_ok = vm.overcommit_memory != 2;
	c = add_check(r, oc_ok ? ST_OK : ST_WARN,
		      "large virtual reservations (rewired areas, vmcache VIRTGB): ruma maps them "
		      "with MAP_NORESERVE, which modes 0 and 1 do not charge; mode 2 charges every "
		      "private writable mapping and large reservations fail with ENOMEM",
		      "vm.overcommit_memory");
	SETV(c, "%" PRIu64 " (ratio %" PRIu64 "%%); 0 is fine for ruma (the original RUMA needed 1)",
	     vm.overcommit_memory, vm.overcommit_ratio);
	if (!oc_ok)
		SETFIX(c, "sysctl -w vm.overcommit_memory=0");

	bool mm_ok = vm.max_map_count >= REC_MAX_MAP_COUNT;
	c = add_check(r, mm_ok ? ST_OK : ST_WARN,
		      "rewiring: every run of pages mapped from a different file offset is its own "
		      "mapping; scattered 4 KiB rewiring needs up to one mapping per page, so the "
		      "limit caps rewired memory (65530 maps = 256 MiB of scattered 4 KiB pages)",
		      "vm.max_map_count");
	if (ruma_sysinfo_map_count(&maps) == 0)
		SETV(c, "%" PRIu64 " (this process uses %" PRIu64 "); recommended %u", vm.max_map_count,
		     maps, REC_MAX_MAP_COUNT);
	else
		SETV(c, "%" PRIu64 "; recommended %u", vm.max_map_count, REC_MAX_MAP_COUNT);
	if (!mm_ok)
		SETFIX(c, "sysctl -w vm.max_map_count=%u", REC_MAX_MAP_COUNT);
}

/* ---- probes ------------------------------------------------------------------------ */

static void perf_fix(struct check *c, int err)
{
	if (err == -ENOENT || err == -EOPNOTSUPP)
		SETFIX(c, "no PMU visible (virtual machine?): run on bare metal or enable the "
			  "vPMU; software counters still work");
	else if (err == -EACCES || err == -EPERM)
		SETFIX(c, "sysctl -w kernel.perf_event_paranoid=1   (or run as root)");
	else if (err == -ENOSYS)
		SETFIX(c, "use a kernel built with CONFIG_PERF_EVENTS");
	else
		SETFIX(c, "see perf_event_open(2) for %s", errno_name(err));
}

static void check_perf(struct report *r, ruma_perf *p, int create_rc)
{
	for (int e = 0; e < RUMA_PERF_NEVENTS; e++) {
		char name[64];
		int err = create_rc ? create_rc : ruma_perf_error(p, e);
		snprintf(name, sizeof(name), "perf %s", ruma_perf_event_name(e));
		struct check *c = add_check(r, err ? ST_NA : ST_OK,
					    "the counter table of ruma art and ruma micro detailed "
					    "mode (missing counters print n/a)",
					    name);
		if (err) {
			SETV(c, "unavailable: %s (errno %d)", errno_name(err), -err);
			perf_fix(c, err);
		} else {
			SETV(c, "%s", ruma_perf_user_only(p, e) ? "ok, user space only "
								  "(exclude_kernel=1)"
								: "ok");
		}
	}
}

static void check_uring(struct report *r)
{
	int rc = ruma_sysinfo_probe_uring();
	struct check *c = add_check(r, rc ? ST_NA : ST_OK,
				    "asynchronous page I/O of the vmcache buffer manager",
				    "io_uring");
	if (rc == 0) {
		SETV(c, "ok (2-entry ring set up and torn down)");
		return;
	}
	SETV(c, "unavailable: %s (errno %d)", errno_name(rc), -rc);
	if (rc == -ENOSYS)
		SETFIX(c, "run a kernel >= 5.1 built with CONFIG_IO_URING");
	else if (rc == -EPERM || rc == -EACCES)
		SETFIX(c, "sysctl -w kernel.io_uring_disabled=0");
	else if (rc == -ENOMEM)
		SETFIX(c, "ulimit -l unlimited   (locked memory limit for the ring)");
	else
		SETFIX(c, "see io_uring_setup(2) for %s", errno_name(rc));
}

/* Which write-back, eviction and read paths a store opened with the
 * defaults uses here (the same probes ruma_bm_open runs). */
static void check_bm_paths(struct report *r)
{
	ruma_bm_io_support io;
	ruma_bm_probe_io(&io);
	struct check *c = add_check(r, io.uring || io.process_madvise ? ST_WARN : ST_OK,
				    "the I/O paths the vmcache buffer manager chooses by default",
				    "bm I/O paths");
	SETV(c, "write-back: %s; eviction: %s; INFLIGHT>1 reads: %s",
	     io.uring ? "pwrite/pwritev per run (io_uring refused)"
		      : "io_uring, one submission per batch",
	     io.process_madvise ? "madvise per page (process_madvise refused)"
				: "process_madvise, one call per batch",
	     io.uring ? "synchronous" : "io_uring");
	if (io.uring)
		SETFIX(c, "see the io_uring check above");
	else if (io.process_madvise)
		SETFIX(c, "run a kernel >= 6.13 for batched eviction (process_madvise on self)");
}

static void check_odirect(struct report *r, const char *dir)
{
	const char *step = "";
	int rc = ruma_sysinfo_probe_odirect(dir, &step);
	char name[64];

	snprintf(name, sizeof(name), "O_DIRECT %s", dir);
	struct check *c = add_check(r, rc ? ST_NA : ST_OK,
				    "vmcache data files: pages are read and written with O_DIRECT, "
				    "bypassing the page cache",
				    name);
	if (rc == 0) {
		SETV(c, "ok (aligned 4096-byte pwrite + pread)");
		return;
	}
	SETV(c, "fails at %s: %s (errno %d)", step, errno_name(rc), rc > -10000 ? -rc : 0);
	if (rc == -EINVAL && !strcmp(step, "open"))
		SETFIX(c, "put data files on ext4 or xfs (this file system refuses O_DIRECT); "
			  "check another directory with: ruma doctor --dir PATH");
	else if (rc == -EACCES || rc == -EPERM || rc == -EROFS)
		SETFIX(c, "use a writable directory: ruma doctor --dir PATH");
	else
		SETFIX(c, "use a directory on a local ext4/xfs file system: ruma doctor --dir PATH");
}

/* ---- --apply ---------------------------------------------------------------------- */

struct applied {
	char setting[64];
	char previous[32];
	char now[32];
	char restore[160];
	int rc;
};

static size_t apply_huge(struct applied *a)
{
	uint64_t def, total, prev = 0, now = 0;

	if (ruma_sysinfo_default_huge_kb(&def) != 0 ||
	    ruma_sysinfo_read_nr_hugepages(def, -1, &total) != 0 || total >= REC_NR_HUGEPAGES)
		return 0;
	snprintf(a->setting, sizeof(a->setting), "vm.nr_hugepages (%" PRIu64 "kB)", def);
	a->rc = ruma_sysinfo_set_nr_hugepages_ex(def, REC_NR_HUGEPAGES, &prev, &now);
	snprintf(a->previous, sizeof(a->previous), "%" PRIu64, a->rc ? total : prev);
	snprintf(a->now, sizeof(a->now), "%" PRIu64, a->rc ? total : now);
	snprintf(a->restore, sizeof(a->restore), "echo %" PRIu64 " > /proc/sys/vm/nr_hugepages",
		 a->rc ? total : prev);
	return 1;
}

static size_t apply_sysctl(struct applied *a, const char *name, const char *path,
			   bool (*wrong)(uint64_t), uint64_t want)
{
	uint64_t prev, now = 0;

	if (ruma_sysinfo_read_u64_file(path, &prev) != 0 || !wrong(prev))
		return 0;
	snprintf(a->setting, sizeof(a->setting), "%s", name);
	a->rc = ruma_sysinfo_write_u64_file(path, want);
	if (a->rc == 0)
		a->rc = ruma_sysinfo_read_u64_file(path, &now);
	snprintf(a->previous, sizeof(a->previous), "%" PRIu64, prev);
	snprintf(a->now, sizeof(a->now), "%" PRIu64, a->rc ? prev : now);
	snprintf(a->restore, sizeof(a->restore), "sysctl -w %s=%" PRIu64, name, prev);
	return 1;
}

static bool map_count_low(uint64_t v)
{
	return v < REC_MAX_MAP_COUNT;
}

static bool overcommit_strict(uint64_t v)
{
	return v == 2;
}

static size_t apply_thp(struct applied *a)
{
	ruma_thp_info t, after;

	if (ruma_sysinfo_thp(&t) != 0 || !strcmp(t.enabled, REC_THP))
		return 0;
	snprintf(a->setting, sizeof(a->setting), "THP enabled");
	a->rc = ruma_sysinfo_write_file(THP_ENABLED_PATH, REC_THP);
	if (a->rc == 0)
		a->rc = ruma_sysinfo_thp(&after);
	snprintf(a->previous, sizeof(a->previous), "%s", t.enabled);
	snprintf(a->now, sizeof(a->now), "%s", a->rc ? t.enabled : after.enabled);
	snprintf(a->restore, sizeof(a->restore), "echo %s > " THP_ENABLED_PATH, t.enabled);
	return 1;
}

/* Apply every recommended setting that differs; returns how many were tried. */
static size_t apply_all(struct applied *a)
{
	size_t n = 0;

	n += apply_huge(&a[n]);
	n += apply_sysctl(&a[n], "vm.max_map_count", "/proc/sys/vm/max_map_count", map_count_low,
			  REC_MAX_MAP_COUNT);
	n += apply_sysctl(&a[n], "vm.overcommit_memory", "/proc/sys/vm/overcommit_memory",
			  overcommit_strict, 0);
	n += apply_thp(&a[n]);
	return n;
}

/* ---- output ------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void json_kv_str(FILE *f, const char *key, const char *v, bool comma)
{
	json_str(f, key);
	fputc(':', f);
	json_str(f, v);
	if (comma)
		fputc(',', f);
}

static void json_kv_u64(FILE *f, const char *key, uint64_t v, bool comma)
{
	json_str(f, key);
	fprintf(f, ":%" PRIu64 "%s", v, comma ? "," : "");
}

static void json_facts(FILE *f, const ruma_kernel_version *kv)
{
	ruma_vm_info vm;
	ruma_thp_info thp;
	uint64_t maps = 0, def = 0;

	fputs("\"kernel\":{", f);
	json_kv_str(f, "release", kv->release, true);
	fprintf(f, "\"major\":%d,\"minor\":%d,\"patch\":%d},", kv->major, kv->minor, kv->patch);
	json_kv_u64(f, "page_size", ruma_sysinfo_page_size(), true);
	if (ruma_sysinfo_default_huge_kb(&def) == 0)
		json_kv_u64(f, "default_huge_kb", def, true);
	if (ruma_sysinfo_vm(&vm) == 0) {
		fputs("\"vm\":{", f);
		json_kv_u64(f, "max_map_count", vm.max_map_count, true);
		json_kv_u64(f, "overcommit_memory", vm.overcommit_memory, true);
		json_kv_u64(f, "overcommit_ratio", vm.overcommit_ratio, false);
		fputs("},", f);
	}
	if (ruma_sysinfo_map_count(&maps) == 0)
		json_kv_u64(f, "map_count", maps, true);
	if (ruma_sysinfo_thp(&thp) == 0) {
		fputs("\"thp\":{", f);
		json_kv_str(f, "enabled", thp.enabled, true);
		json_kv_str(f, "defrag", thp.defrag, true);
		json_kv_str(f, "shmem_enabled", thp.shmem_enabled, false);
		fputs("},", f);
	}
}

static void json_counts(FILE *f, const ruma_hugepage_counts *c)
{
	json_kv_u64(f, "total", c->total, true);
	json_kv_u64(f, "free", c->free, true);
	if (c->has_reserved)
		json_kv_u64(f, "reserved", c->reserved, true);
	json_kv_u64(f, "surplus", c->surplus, false);
}

static void json_hugepages(FILE *f)
{
	uint64_t sizes[RUMA_SYSINFO_MAX_HUGE_SIZES];
	size_t n = 0;
	ruma_hugepage_pool *pool = malloc(sizeof(*pool));

	fputs("\"hugepages\":[", f);
	if (pool && ruma_sysinfo_huge_sizes(sizes, RUMA_ARRAY_SIZE(sizes), &n) == 0) {
		bool first = true;
		for (size_t i = 0; i < n; i++) {
			if (ruma_sysinfo_huge_pool(sizes[i], pool) != 0)
				continue;
			fputs(first ? "{" : ",{", f);
			first = false;
			json_kv_u64(f, "size_kb", pool->size_kb, true);
			json_counts(f, &pool->all);
			fputs(",\"nodes\":[", f);
			for (size_t k = 0; k < pool->nnodes; k++) {
				fprintf(f, "%s{\"node\":%d,", k ? "," : "", pool->node[k]);
				json_counts(f, &pool->per_node[k]);
				fputc('}', f);
			}
			fputs("]}", f);
		}
	}
	fputs("],", f);
	free(pool);
}

static void json_perf(FILE *f, ruma_perf *p, int create_rc)
{
	fputs("\"perf\":[", f);
	for (int e = 0; e < RUMA_PERF_NEVENTS; e++) {
		int err = create_rc ? create_rc : ruma_perf_error(p, e);
		fputs(e ? ",{" : "{", f);
		json_kv_str(f, "event", ruma_perf_event_name(e), true);
		json_kv_str(f, "status", err ? "n/a" : "ok", true);
		fprintf(f, "\"errno\":%d,", -err);
		json_kv_str(f, "error", err ? ruma_strerror(err) : "", true);
		fprintf(f, "\"user_only\":%s}", !err && ruma_perf_user_only(p, e) ? "true" : "false");
	}
	fputs("],", f);
}

static void json_applied(FILE *f, const struct applied *a, size_t n)
{
	fputs("\"applied\":[", f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{" : "{", f);
		json_kv_str(f, "setting", a[i].setting, true);
		json_kv_str(f, "previous", a[i].previous, true);
		json_kv_str(f, "now", a[i].now, true);
		json_kv_str(f, "restore", a[i].restore, true);
		json_kv_str(f, "error", a[i].rc ? ruma_strerror(a[i].rc) : "", false);
		fputc('}', f);
	}
	fputs("],", f);
}

static void json_checks(FILE *f, const struct report *r)
{
	size_t count[3] = { 0, 0, 0 };

	fputs("\"checks\":[", f);
	for (size_t i = 0; i < r->n; i++) {
		const struct check *c = &r->c[i];
		count[c->status]++;
		fputs(i ? ",{" : "{", f);
		json_kv_str(f, "name", c->name, true);
		json_kv_str(f, "value", c->value, true);
		json_kv_str(f, "affects", c->affects, true);
		json_kv_str(f, "status", status_name[c->status], true);
		json_kv_str(f, "fix", c->fix, false);
		fputc('}', f);
	}
	fprintf(f, "],\"summary\":{\"ok\":%zu,\"warn\":%zu,\"na\":%zu}", count[ST_OK],
		count[ST_WARN], count[ST_NA]);
}

static void print_json(FILE *f, const struct report *r, const ruma_kernel_version *kv,
		       ruma_perf *p, int perf_rc, const struct applied *a, size_t na, bool applied)
{
	fputc('{', f);
	json_kv_str(f, "ruma_version", ruma_version(), true);
	fprintf(f, "\"root\":%s,", geteuid() == 0 ? "true" : "false");
	json_facts(f, kv);
	json_hugepages(f);
	json_perf(f, p, perf_rc);
	if (applied)
		json_applied(f, a, na);
	json_checks(f, r);
	fputs("}\n", f);
}

static void print_text(FILE *f, const struct report *r)
{
	size_t count[3] = { 0, 0, 0 };

	for (size_t i = 0; i < r->n; i++) {
		const struct check *c = &r->c[i];
		count[c->status]++;
		fprintf(f, "%-5s %-32s %s\n", status_name[c->status], c->name, c->value);
		fprintf(f, "      affects: %s\n", c->affects);
		if (c->fix[0])
			fprintf(f, "      fix:     %s\n", c->fix);
	}
	fprintf(f, "\nsummary: %zu ok, %zu warn, %zu n/a\n", count[ST_OK], count[ST_WARN],
		count[ST_NA]);
	fprintf(f, "notes:\n"
		   "  - nr_hugepages %u (= %u MiB of 2 MiB pages) covers the huge-page tests and "
		   "small benchmark runs;\n"
		   "    a run over N bytes of huge-page memory needs N / 2 MiB free pages (1 GiB: "
		   "512).\n"
		   "  - no hugetlbfs mount is needed: ruma uses memfd_create(MFD_HUGETLB) and "
		   "MAP_HUGETLB.\n"
		   "  - vm.overcommit_memory 0 is fine: ruma reserves address space with "
		   "MAP_NORESERVE.\n"
		   "  - hugetlb memory is not counted in RSS; ruma reads Private_Hugetlb from "
		   "/proc/self/smaps_rollup.\n"
		   "  - 'ruma doctor --apply' (root) applies the recommended settings.\n",
		REC_NR_HUGEPAGES, REC_NR_HUGEPAGES * 2);
}

static void print_applied_text(FILE *f, const struct applied *a, size_t n)
{
	if (n == 0) {
		fprintf(f, "apply: every setting already has its recommended value\n\n");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (a[i].rc)
			fprintf(f, "apply: %s: FAILED (%s), still %s\n", a[i].setting,
				ruma_strerror(a[i].rc), a[i].previous);
		else
			fprintf(f, "apply: %s: %s -> %s   restore: %s\n", a[i].setting,
				a[i].previous, a[i].now, a[i].restore);
	}
	fputc('\n', f);
}

/* ---- arguments -------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma doctor [--dir PATH]... [--json] [--apply]\n"
		"\n"
		"Checks the settings ruma depends on and prints, for each, the current value,\n"
		"what it affects, a status (ok / warn / n/a) and the command that fixes it.\n"
		"\n"
		"  --dir PATH  check O_DIRECT in PATH (repeatable; default: /tmp and .)\n"
		"  --json      print one JSON object instead of text\n"
		"  --apply     (root) apply the recommended settings: nr_hugepages >= %u,\n"
		"              vm.max_map_count >= %u, overcommit_memory != 2, THP %s;\n"
		"              prints the previous values and the commands to restore them\n"
		"  --help      this text\n"
		"\n"
		"Exit status: 0 (also with warnings), 1 when --apply fails or the report\n"
		"cannot be written, 2 for bad arguments.\n",
		REC_NR_HUGEPAGES, REC_MAX_MAP_COUNT, REC_THP);
}

/* --dir PATH (repeatable): an existing directory; the message printed here. */
static int add_dir(const char *dir, void *opts)
{
	struct options *o = opts;
	struct stat st;

	if (o->ndirs == MAX_DIRS) {
		fprintf(stderr, "ruma doctor: at most %d --dir options\n", MAX_DIRS);
		return -EINVAL;
	}
	if (stat(dir, &st) != 0) {
		fprintf(stderr, "ruma doctor: --dir %s: %s\n", dir, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "ruma doctor: --dir %s: not a directory\n", dir);
		return -EINVAL;
	}
	o->dirs[o->ndirs++] = dir;
	return 0;
}

#define FLAG(name, field, fl) { name, RUMA_OPT_FLAG, offsetof(struct options, field), 0, 0, NULL, NULL, fl }
static const ruma_opt options[] = {
	FLAG("--json", json, 0),
	FLAG("--apply", apply, 0),
	{ "--dir", RUMA_OPT_FUNC, 0, 0, 0, NULL, add_dir, 0 },
	FLAG("--help", help, RUMA_OPT_STOP),
	FLAG("-h", help, RUMA_OPT_STOP),
};

/* Returns 0, 1 for --help (exit 0), or 2 for bad arguments (message printed). */
static int parse_args(int argc, char **argv, struct options *o)
{
	ruma_opt_error e;

	if (ruma_opt_parse(options, RUMA_ARRAY_SIZE(options), argc, argv, 1, o, NULL, 0, NULL, &e) &&
	    e.status != RUMA_OPT_STOPPED) {
		if (e.status == RUMA_OPT_MISSING) {
			fprintf(stderr, "ruma doctor: --dir needs a PATH\n");
		} else if (e.status != RUMA_OPT_BADVALUE) { /* add_dir said why */
			fprintf(stderr, "ruma doctor: unknown argument '%s'\n\n", e.arg);
			usage(stderr);
		}
		return 2;
	}
	if (o->help) {
		usage(stdout);
		return 1;
	}
	if (o->ndirs == 0) {
		o->dirs[o->ndirs++] = "/tmp";
		o->dirs[o->ndirs++] = ".";
	}
	return 0;
}

int ruma_cmd_doctor(int argc, char **argv)
{
	struct options o = { .ndirs = 0 };
	struct report r = { .n = 0 };
	struct applied applied[8];
	size_t napplied = 0;
	ruma_kernel_version kv;
	ruma_perf *perf = NULL;
	int rc = parse_args(argc, argv, &o), status = 0;

	if (rc)
		return rc == 1 ? 0 : rc;
	if (o.apply && geteuid() != 0) {
		fprintf(stderr, "ruma doctor: --apply changes kernel settings and needs root "
				"(run it as root, e.g. sudo ruma doctor --apply)\n");
		return 1;
	}
	if (o.apply) {
		napplied = apply_all(applied);
		for (size_t i = 0; i < napplied; i++)
			status |= applied[i].rc != 0;
		if (!o.json)
			print_applied_text(stdout, applied, napplied);
	}
	memset(&kv, 0, sizeof(kv));
	int kv_rc = ruma_sysinfo_kernel(&kv);
	int perf_rc = ruma_perf_create(&perf);

	check_kernel(&r, &kv, kv_rc);
	check_huge(&r);
	check_thp(&r);
	check_vm(&r);
	check_perf(&r, perf, perf_rc);
	check_uring(&r);
	check_bm_paths(&r);
	for (size_t i = 0; i < o.ndirs; i++)
		check_odirect(&r, o.dirs[i]);
	if (r.oom) {
		fprintf(stderr, "ruma doctor: out of memory\n");
		status = 1;
	} else if (o.json) {
		print_json(stdout, &r, &kv, perf, perf_rc, applied, napplied, o.apply);
	} else {
		printf("ruma doctor %s: kernel %s, %s\n\n", ruma_version(),
		       kv_rc ? "?" : kv.release, geteuid() == 0 ? "running as root" : "not root");
		print_text(stdout, &r);
	}
	ruma_perf_destroy(perf);
	free(r.c);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ruma doctor: writing the report to stdout failed: %s\n",
			strerror(errno));
		status = 1;
	}
	return status;
}
