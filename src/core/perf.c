/*
 * perf.c — per-event perf counters (Leis's PerfEvent model, each event on its
 * own), getrusage deltas, smaps_rollup memory and the counter table printer.
 *
 * Invariants: fd[i] >= 0 exactly when open_err[i] == 0; an unavailable event
 * never stops the others.  A measurement is (start, stop): start resets and
 * enables every open counter and reads its baseline {value, time_enabled,
 * time_running}; stop reads again and disables; the delta is scaled by
 * enabled/running to correct for multiplexing.
 *
 * Syscalls: perf_event_open, ioctl(PERF_EVENT_IOC_RESET/ENABLE/DISABLE) and
 * read of the counters through the OS layer (counted, injectable); close
 * directly; getrusage; /proc/self/smaps_rollup through sysfile.
 */
#include <ruma/core.h>
#include "core/perf_ext.h"

#include "core/perf_open.h"
#include "core/sysfile.h"
#include "os/os.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct event_def {
	const char *name;
	uint32_t type;
	uint64_t config;
};

#define HW_CACHE(cache, op, result) \
	((uint64_t)(cache) | ((uint64_t)(op) << 8) | ((uint64_t)(result) << 16))

static const struct event_def events[RUMA_PERF_NEVENTS] = {
	[RUMA_PERF_CYCLES] = { "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	[RUMA_PERF_INSTRUCTIONS] = { "instructions", PERF_TYPE_HARDWARE,
				     PERF_COUNT_HW_INSTRUCTIONS },
	[RUMA_PERF_L1_MISSES] = { "L1-misses", PERF_TYPE_HW_CACHE,
				  HW_CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
					   PERF_COUNT_HW_CACHE_RESULT_MISS) },
	[RUMA_PERF_LLC_MISSES] = { "LLC-misses", PERF_TYPE_HARDWARE,
				   PERF_COUNT_HW_CACHE_MISSES },
	[RUMA_PERF_DTLB_LOAD_MISSES] = { "dTLB-load-misses", PERF_TYPE_HW_CACHE,
					 HW_CACHE(PERF_COUNT_HW_CACHE_DTLB,
						  PERF_COUNT_HW_CACHE_OP_READ,
						  PERF_COUNT_HW_CACHE_RESULT_MISS) },
	[RUMA_PERF_DTLB_STORE_MISSES] = { "dTLB-store-misses", PERF_TYPE_HW_CACHE,
					  HW_CACHE(PERF_COUNT_HW_CACHE_DTLB,
						   PERF_COUNT_HW_CACHE_OP_WRITE,
						   PERF_COUNT_HW_CACHE_RESULT_MISS) },
	[RUMA_PERF_BRANCH_MISSES] = { "branch-misses", PERF_TYPE_HARDWARE,
				      PERF_COUNT_HW_BRANCH_MISSES },
	[RUMA_PERF_TASK_CLOCK] = { "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	[RUMA_PERF_PAGE_FAULTS] = { "page-faults", PERF_TYPE_SOFTWARE,
				    PERF_COUNT_SW_PAGE_FAULTS },
};

/* What read(2) returns with TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING. */
struct reading {
	uint64_t value, enabled, running;
};

struct ruma_perf {
	int fd[RUMA_PERF_NEVENTS];
	int open_err[RUMA_PERF_NEVENTS];
	bool user_only[RUMA_PERF_NEVENTS];
	struct reading base[RUMA_PERF_NEVENTS];
	struct rusage ru0;
	uint64_t t0_ns;
	ruma_perf_sample cur;
};

/* ---- opening ------------------------------------------------------------------ */

static int open_attr(uint32_t type, uint64_t config, bool user_only, int *fd)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.disabled = 1;
	a.inherit = 1;
	a.exclude_kernel = user_only;
	a.exclude_hv = user_only;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return ruma_os_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC, fd);
}

int ruma_perf_open_counter(uint32_t type, uint64_t config, int *fd, bool *user_only)
{
	int rc = open_attr(type, config, false, fd);

	*user_only = false;
	if (rc == -EACCES || rc == -EPERM) {
		rc = open_attr(type, config, true, fd);
		*user_only = rc == 0;
	}
	return rc;
}

const char *ruma_perf_event_name(int event)
{
	return event >= 0 && event < RUMA_PERF_NEVENTS ? events[event].name : "?";
}

int ruma_perf_create(ruma_perf **out)
{
	ruma_perf *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	for (int i = 0; i < RUMA_PERF_NEVENTS; i++) {
		p->fd[i] = -1;
		p->open_err[i] = ruma_perf_open_counter(events[i].type, events[i].config, &p->fd[i],
							&p->user_only[i]);
		if (p->open_err[i])
			p->fd[i] = -1;
		p->cur.err[i] = p->open_err[i];
	}
	*out = p;
	return 0;
}

void ruma_perf_destroy(ruma_perf *p)
{
	if (!p)
		return;
	for (int i = 0; i < RUMA_PERF_NEVENTS; i++)
		if (p->fd[i] >= 0)
			close(p->fd[i]);
	free(p);
}

/* ---- measuring ---------------------------------------------------------------- */

static int read_counter(int fd, struct reading *r)
{
	ssize_t n = ruma_os_read(fd, r, sizeof(*r));

	if (n < 0)
		return (int)n;
	return n == (ssize_t)sizeof(*r) ? 0 : RUMA_ESHORTIO;
}

static double tv_sec(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

int ruma_perf_start(ruma_perf *p)
{
	int first_err = 0;

	if (getrusage(RUSAGE_SELF, &p->ru0) != 0)
		first_err = -errno;
	for (int i = 0; i < RUMA_PERF_NEVENTS; i++) {
		int rc = 0;
		p->cur.err[i] = p->open_err[i];
		if (p->fd[i] < 0)
			continue;
		rc = ruma_os_perf_ioctl(p->fd[i], PERF_EVENT_IOC_RESET);
		if (rc == 0)
			rc = ruma_os_perf_ioctl(p->fd[i], PERF_EVENT_IOC_ENABLE);
		if (rc == 0)
			rc = read_counter(p->fd[i], &p->base[i]);
		if (rc) {
			p->cur.err[i] = rc;
			first_err = first_err ? first_err : rc;
		}
	}
	p->t0_ns = ruma_now_ns();
	return first_err;
}

/* Multiplexing-corrected difference of two readings. */
static double corrected_delta(const struct reading *a, const struct reading *b)
{
	double value = (double)(b->value - a->value);
	uint64_t enabled = b->enabled - a->enabled, running = b->running - a->running;

	if (running == 0 || running == enabled)
		return value;
	return value * (double)enabled / (double)running;
}

static void rusage_delta(const struct rusage *a, const struct rusage *b, ruma_perf_rusage *d)
{
	d->minor_faults = b->ru_minflt - a->ru_minflt;
	d->major_faults = b->ru_majflt - a->ru_majflt;
	d->voluntary_switches = b->ru_nvcsw - a->ru_nvcsw;
	d->involuntary_switches = b->ru_nivcsw - a->ru_nivcsw;
	d->user_sec = tv_sec(b->ru_utime) - tv_sec(a->ru_utime);
	d->sys_sec = tv_sec(b->ru_stime) - tv_sec(a->ru_stime);
}

int ruma_perf_stop(ruma_perf *p)
{
	struct rusage ru1;
	int first_err = 0;

	for (int i = 0; i < RUMA_PERF_NEVENTS; i++) {
		struct reading now;
		int rc;
		p->cur.value[i] = 0;
		if (p->fd[i] < 0 || p->cur.err[i])
			continue;
		rc = read_counter(p->fd[i], &now);
		int off = ruma_os_perf_ioctl(p->fd[i], PERF_EVENT_IOC_DISABLE);
		if (rc == 0)
			rc = off;
		if (rc) {
			p->cur.err[i] = rc;
			first_err = first_err ? first_err : rc;
			continue;
		}
		p->cur.value[i] = corrected_delta(&p->base[i], &now);
	}
	p->cur.wall_sec = (double)(ruma_now_ns() - p->t0_ns) * 1e-9;
	if (getrusage(RUSAGE_SELF, &ru1) != 0) {
		memset(&p->cur.rusage, 0, sizeof(p->cur.rusage));
		return first_err ? first_err : -errno;
	}
	rusage_delta(&p->ru0, &ru1, &p->cur.rusage);
	return first_err;
}

/* ---- results -------------------------------------------------------------------- */

static bool valid_event(int event)
{
	return event >= 0 && event < RUMA_PERF_NEVENTS;
}

bool ruma_perf_available(const ruma_perf *p, int event)
{
	return valid_event(event) && p->cur.err[event] == 0;
}

int ruma_perf_error(const ruma_perf *p, int event)
{
	return valid_event(event) ? p->cur.err[event] : -EINVAL;
}

bool ruma_perf_user_only(const ruma_perf *p, int event)
{
	return valid_event(event) && p->user_only[event];
}

int ruma_perf_value(const ruma_perf *p, int event, double *v)
{
	*v = 0;
	if (!valid_event(event))
		return -EINVAL;
	if (p->cur.err[event])
		return RUMA_EUNSUPP;
	*v = p->cur.value[event];
	return 0;
}

void ruma_perf_sample_get(const ruma_perf *p, ruma_perf_sample *s)
{
	*s = p->cur;
}

void ruma_perf_rusage_get(const ruma_perf *p, ruma_perf_rusage *out)
{
	*out = p->cur.rusage;
}

/* ---- the table -------------------------------------------------------------------- */

enum { MAX_COLS = RUMA_PERF_NEVENTS + 4, CELL = 32 };

struct table {
	const char *name[MAX_COLS];
	char cell[MAX_COLS][CELL];
	int n;
};

static void add_col(struct table *t, const char *name, bool ok, const char *fmt, double v)
{
	t->name[t->n] = name;
	if (ok)
		snprintf(t->cell[t->n], CELL, fmt, v);
	else
		snprintf(t->cell[t->n], CELL, "n/a");
	t->n++;
}

static bool have(const ruma_perf_sample *s, int e)
{
	return s->err[e] == 0;
}

static void print_row(FILE *f, const struct table *t, bool header)
{
	for (int i = 0; i < t->n; i++) {
		int w = (int)RUMA_MAX(strlen(t->name[i]), strlen(t->cell[i]));
		fprintf(f, "%*s%s", w, header ? t->name[i] : t->cell[i],
			i + 1 < t->n ? ", " : " ");
	}
	fputc('\n', f);
}

void ruma_perf_print_sample(const ruma_perf_sample *s, FILE *f, uint64_t scale, unsigned flags)
{
	struct table t = { .n = 0 };
	double sc = scale ? (double)scale : 1.0;
	const double *v = s->value;

	for (int e = 0; e <= RUMA_PERF_TASK_CLOCK; e++)
		add_col(&t, events[e].name, have(s, e), "%.2f", v[e] / sc);
	t.name[t.n] = "scale";
	snprintf(t.cell[t.n++], CELL, "%" PRIu64, scale ? scale : 1);
	add_col(&t, "IPC", have(s, RUMA_PERF_CYCLES) && have(s, RUMA_PERF_INSTRUCTIONS) &&
			   v[RUMA_PERF_CYCLES] > 0,
		"%.2f", v[RUMA_PERF_INSTRUCTIONS] / v[RUMA_PERF_CYCLES]);
	add_col(&t, "CPUs", have(s, RUMA_PERF_TASK_CLOCK) && s->wall_sec > 0, "%.2f",
		v[RUMA_PERF_TASK_CLOCK] / (s->wall_sec * 1e9));
	add_col(&t, "GHz", have(s, RUMA_PERF_CYCLES) && have(s, RUMA_PERF_TASK_CLOCK) &&
			   v[RUMA_PERF_TASK_CLOCK] > 0,
		"%.2f", v[RUMA_PERF_CYCLES] / v[RUMA_PERF_TASK_CLOCK]);
	if (!(flags & RUMA_PERF_PRINT_NO_PAGE_FAULTS))
		add_col(&t, events[RUMA_PERF_PAGE_FAULTS].name, have(s, RUMA_PERF_PAGE_FAULTS),
			"%.2f", v[RUMA_PERF_PAGE_FAULTS] / sc);
	print_row(f, &t, true);
	print_row(f, &t, false);
}

void ruma_perf_print(const ruma_perf *p, FILE *f, uint64_t scale)
{
	ruma_perf_print_sample(&p->cur, f, scale, 0);
}

/* ---- memory footprint -------------------------------------------------------------- */

/* Value in kB of "Field:   123 kB" in text, as bytes; false when absent. */
static bool smaps_field(const char *text, const char *field, uint64_t *bytes)
{
	size_t flen = strlen(field);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
			*bytes = strtoull(p + flen + 1, NULL, 10) * 1024u;
			return true;
		}
	}
	return false;
}

int ruma_perf_memory_read(ruma_perf_memory *out)
{
	char buf[4096];
	int rc = ruma_sysfile_read("/proc/self/smaps_rollup", buf, sizeof(buf));

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	if (!smaps_field(buf, "Rss", &out->rss))
		return RUMA_EPARSE;
	/* Absent on kernels without THP or hugetlb: those count as 0. */
	smaps_field(buf, "AnonHugePages", &out->anon_huge);
	smaps_field(buf, "Private_Hugetlb", &out->private_hugetlb);
	smaps_field(buf, "Shared_Hugetlb", &out->shared_hugetlb);
	return 0;
}
