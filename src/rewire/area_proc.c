/*
 * area_proc.c — what the kernel says about mappings: vm.max_map_count, the
 * process's mapping count, and a check of an area's translation table
 * against /proc/self/maps.
 *
 * Invariants: read-only; nothing here changes an area.  The check treats the
 * table as the claim and /proc/self/maps as the truth.
 *
 * Syscalls: open + pread (through the OS layer) on /proc/self/maps for the
 * check, close, and fstat (ruma_os_file_probe) on the pool memfds (inode
 * numbers); the check reports through the caller's message callback; the mapping
 * count and vm.max_map_count are read by the core module (sysinfo.h).
 */
#include "rewire/area_internal.h"

#include "os/os.h"


#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- small /proc files --------------------------------------------------------- */

static int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 1 << 16, used = 0;
	char *b = malloc(cap);

	if (!b)
		return -ENOMEM;
	for (;;) {
		if (cap - used < 4096) {
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t got = ruma_os_pread(fd, b + used, cap - used - 1, (off_t)used);
		if (got < 0) {
			free(b);
			return (int)got;
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	b[used] = '\0';
	*buf = b;
	*len = used;
	return 0;
}

int area_read_file(const char *path, char **buf, size_t *len)
{
	int fd;
	int rc = ruma_os_open(path, O_RDONLY | O_CLOEXEC, 0, &fd);

	if (rc)
		return rc;
	rc = read_all(fd, buf, len);
	close(fd);
	return rc;
}

/* ---- the table check -------------------------------------------------------------- */

struct vma_line {
	uintptr_t start, end;
	char perms[5];
	uint64_t off;
	uint64_t inode;
};

static bool parse_line(const char *line, struct vma_line *v)
{
	unsigned long s, e;
	unsigned long long off, ino;
	unsigned dmaj, dmin;

	if (sscanf(line, "%lx-%lx %4s %llx %x:%x %llu", &s, &e, v->perms, &off, &dmaj, &dmin,
		   &ino) != 7)
		return false;
	v->start = s;
	v->end = e;
	v->off = off;
	v->inode = ino;
	return true;
}

struct check_ctx {
	const ruma_area *a;
	uint64_t inodes[RUMA_AREA_MAX_POOLS];
	ruma_message_fn message; /* NULL: stop at the first mismatch, silently */
	void *message_ctx;
	uint64_t covered; /* pages seen in some line */
	uint64_t vmas;
	int bad;
};

static bool report(struct check_ctx *c, uint64_t v, const char *why)
{
	if (c->message && !c->bad) {
		char line[160];
		snprintf(line, sizeof(line), "virtual page %" PRIu64 ": %s", v, why);
		c->message(c->message_ctx, line);
	}
	c->bad = RUMA_ECORRUPT;
	return false;
}

/* Does virtual page v (inside line m) match its table entry? */
static bool page_matches(struct check_ctx *c, const struct vma_line *m, uint64_t v)
{
	const ruma_area *a = c->a;
	uint64_t e = area_ent(a, v);
	uintptr_t addr = (uintptr_t)area_addr(a, v);

	if (!e) {
		if (strncmp(m->perms, "---p", 4) || m->inode)
			return report(c, v, "table says unmapped, kernel has a mapping");
		return true;
	}
	if (m->inode != c->inodes[ent_slot(e) - 1])
		return report(c, v, "mapped to another file than its pool");
	if (m->perms[3] != (e & ENT_PRIVATE ? 'p' : 's') || m->perms[0] != 'r' ||
	    m->perms[1] != (e & ENT_RDONLY ? '-' : 'w'))
		return report(c, v, "wrong protection or sharing mode");
	if (m->off + (addr - m->start) != ent_page(e) << a->shift)
		return report(c, v, "wrong file offset (physical page)");
	return true;
}

static void check_line(struct check_ctx *c, const struct vma_line *m)
{
	const ruma_area *a = c->a;
	uintptr_t lo = (uintptr_t)a->base, hi = lo + area_bytes(a, a->pages);
	uintptr_t s = RUMA_MAX(m->start, lo), e = RUMA_MIN(m->end, hi);

	if (s >= e)
		return;
	c->vmas++;
	for (uintptr_t p = s; p < e; p += (uintptr_t)1 << a->shift) {
		c->covered++;
		if (!page_matches(c, m, (p - lo) >> a->shift) && !c->message)
			return;
	}
}

static int pool_inodes(struct check_ctx *c)
{
	for (unsigned i = 0; i < c->a->npools; i++) {
		ruma_os_file_info fi;
		int rc = ruma_os_file_probe(ruma_phys_fd(c->a->pools[i]), &fi);
		if (rc)
			return rc;
		c->inodes[i] = fi.ino;
	}
	return 0;
}

static int check_maps(const ruma_area *a, ruma_message_fn message, void *message_ctx,
		      uint64_t *vmas)
{
	struct check_ctx c = { .a = a, .message = message, .message_ctx = message_ctx };
	char *buf;
	size_t len;
	int rc = pool_inodes(&c);

	if (!rc)
		rc = area_read_file("/proc/self/maps", &buf, &len);
	if (rc)
		return rc;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		struct vma_line m;
		if (parse_line(line, &m))
			check_line(&c, &m);
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	if (c.covered != a->pages && !c.bad) {
		if (message) {
			char line[160];
			snprintf(line, sizeof(line),
				 "%" PRIu64 " of %" PRIu64 " pages are not mapped at all "
				 "(reservation lost)", a->pages - c.covered, a->pages);
			message(message_ctx, line);
		}
		c.bad = RUMA_ECORRUPT;
	}
	if (vmas)
		*vmas = c.vmas;
	return c.bad;
}

int ruma_area_check(const ruma_area *a, ruma_message_fn message, void *message_ctx)
{
	return check_maps(a, message, message_ctx, NULL);
}

int ruma_area_kernel_maps(const ruma_area *a, uint64_t *out)
{
	int rc = check_maps(a, NULL, NULL, out);
	return rc == RUMA_ECORRUPT ? 0 : rc;
}
