/*
 * micro_report.c — phase timing, `detailed` counters and the summary table of
 * `ruma micro`.
 *
 * Phase lines are "%f,<field>" (six decimals, seconds of CLOCK_MONOTONIC);
 * a phase adds its time to its field of the current run, so a field that
 * occurs twice in a run holds the sum.  With `detailed true` every phase
 * line is followed by lines that start with "#" (so a reader of the original's
 * format can skip them):
 *     # rusage minflt=N majflt=N nvcsw=N nivcsw=N utime=S stime=S
 *     # perf cycles=V instructions=V ... page-faults=V   (n/a: event missing)
 *     # memory rss=B private_hugetlb=B shared_hugetlb=B anon_huge=B
 * The summary is the method name, the 33 field names, one row per run and an
 * average row, values "%f" separated by ", ", exactly as the original
 * Rewiring_Microbench prints it (BigDataAnalyticsGroup/rewiring).
 *
 * Syscalls: sigaction, and write and _exit in the SIGBUS handler of the
 * methods that map huge pages without reservation (micro_report_sigbus);
 * getrusage, perf_event_open and /proc reads happen in the core perf module.
 */
#include "bench/micro/micro.h"

#include "core/perf_ext.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const field_names[MF_COUNT_] = {
	[MF_MALLOC_SRC] = "malloc-src",
	[MF_INIT_MALLOC_SRC] = "init-malloc-src",
	[MF_MALLOC_DST] = "malloc-dst",
	[MF_MEMCPY] = "memcpy",
	[MF_SHM_SRC] = "shm-src",
	[MF_MMAP_SRC] = "mmap-src",
	[MF_INIT_SHM_SRC] = "init-shm-src",
	[MF_MMAP_DST] = "mmap-dst",
	[MF_REMAP_DST] = "remap-dst",
	[MF_SHM_SRC_HUGE] = "shm-src-huge",
	[MF_READ_SEQ_SRC] = "read-seq-src",
	[MF_READ_SEQ_DST] = "read-seq-dst",
	[MF_READ2_SEQ_DST] = "read2-seq-dst",
	[MF_READ_RAND_SRC] = "read-rand-src",
	[MF_READ_RAND_DST] = "read-rand-dst",
	[MF_WRITE_SEQ_SRC] = "write-seq-src",
	[MF_WRITE_SEQ_DST] = "write-seq-dst",
	[MF_WRITE_RAND_SRC] = "write-rand-src",
	[MF_WRITE_RAND_DST] = "write-rand-dst",
	[MF_WRITE_SEQ_DST_PER_ELEM] = "write-seq-dst-per-elem",
	[MF_BUILD_HISTOGRAM] = "build-histogram",
	[MF_SQUEEZE_AREA_COPY] = "squeeze-area-copy",
	[MF_SQUEEZE_AREA_MMAP] = "squeeze-area-mmap",
	[MF_SHM_DST] = "shm-dst",
	[MF_SHM_DST_HUGE] = "shm-dst-huge",
	[MF_MERGE] = "merge",
	[MF_RADIX_SORT] = "radix-sort",
	[MF_INDIRECTION] = "indirection",
	[MF_VECTOR_INSERT] = "vector-insert",
	[MF_CRACK_IN_PLACE] = "crack-in-place",
	[MF_INDEX_INSERT] = "index-insert",
	[MF_INDEX_ACCESS] = "index-access",
	[MF_WRITE2_SEQ_DST] = "write2-seq-dst",
};

const char *micro_field_name(micro_field f)
{
	return (unsigned)f < MF_COUNT_ ? field_names[f] : "?";
}

struct micro_detail {
	ruma_perf *perf;
};

int micro_detail_open(micro_ctx *c)
{
	struct micro_detail *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return -ENOMEM;
	rc = ruma_perf_create(&d->perf);
	if (rc) {
		free(d);
		return rc;
	}
	c->detail = d;
	return 0;
}

void micro_detail_close(micro_ctx *c)
{
	if (!c->detail)
		return;
	ruma_perf_destroy(c->detail->perf);
	free(c->detail);
	c->detail = NULL;
}

void micro_phase_begin(micro_ctx *c)
{
	if (c->detailed && c->detail)
		ruma_perf_start(c->detail->perf);
	c->t0 = ruma_now_sec();
}

static void print_detail(micro_ctx *c)
{
	ruma_perf_sample s;
	ruma_perf_memory m;

	ruma_perf_sample_get(c->detail->perf, &s);
	printf("# rusage minflt=%" PRId64 " majflt=%" PRId64 " nvcsw=%" PRId64 " nivcsw=%" PRId64
	       " utime=%.6f stime=%.6f\n",
	       s.rusage.minor_faults, s.rusage.major_faults, s.rusage.voluntary_switches,
	       s.rusage.involuntary_switches, s.rusage.user_sec, s.rusage.sys_sec);
	printf("# perf");
	for (int e = 0; e < RUMA_PERF_NEVENTS; e++) {
		if (s.err[e])
			printf(" %s=n/a", ruma_perf_event_name(e));
		else
			printf(" %s=%.0f", ruma_perf_event_name(e), s.value[e]);
	}
	printf("\n");
	if (ruma_perf_memory_read(&m) == 0)
		printf("# memory rss=%" PRIu64 " private_hugetlb=%" PRIu64 " shared_hugetlb=%" PRIu64
		       " anon_huge=%" PRIu64 "\n",
		       m.rss, m.private_hugetlb, m.shared_hugetlb, m.anon_huge);
	else
		printf("# memory n/a\n");
}

static double phase_stop(micro_ctx *c, micro_field f)
{
	double dt = ruma_now_sec() - c->t0;

	if (c->detailed && c->detail)
		ruma_perf_stop(c->detail->perf);
	c->fields[f] += dt;
	return dt;
}

void micro_phase_end(micro_ctx *c, micro_field f)
{
	double dt = phase_stop(c, f);

	printf("%f,%s\n", dt, micro_field_name(f));
	if (c->detailed && c->detail)
		print_detail(c);
}

void micro_phase_end_total(micro_ctx *c, micro_field f, uint64_t total)
{
	micro_phase_print_total(c, f, phase_stop(c, f), total);
}

double micro_phase_stop(micro_ctx *c, micro_field f)
{
	return phase_stop(c, f);
}

void micro_phase_print_total(micro_ctx *c, micro_field f, double sec, uint64_t total)
{
	printf("%f,%s //total=%" PRIu64 "\n", sec, micro_field_name(f), total);
	if (c->detailed && c->detail)
		print_detail(c);
}

static void print_row(FILE *f, const double *v)
{
	for (int i = 0; i < MF_COUNT_; i++)
		fprintf(f, "%f%s", v[i], i < MF_COUNT_ - 1 ? ", " : "\n");
}

void micro_summary_print(FILE *f, const char *method_name, const double (*rows)[MF_COUNT_],
			 size_t runs)
{
	double avg[MF_COUNT_] = { 0 };

	fprintf(f, "%s\n", method_name);
	for (int i = 0; i < MF_COUNT_; i++)
		fprintf(f, "%s%s", field_names[i], i < MF_COUNT_ - 1 ? ", " : "\n");
	for (size_t r = 0; r < runs; r++) {
		print_row(f, rows[r]);
		for (int i = 0; i < MF_COUNT_; i++)
			avg[i] += rows[r][i];
	}
	for (int i = 0; i < MF_COUNT_; i++)
		avg[i] = runs ? avg[i] / (double)runs : 0.0;
	print_row(f, avg);
}

/*
 * A SIGBUS in a run that mapped 2 MiB pages without reservation is almost
 * surely a huge page the kernel had no free page for.  The handler says so
 * with async-signal-safe calls only and ends the process with status 1.
 */
static void on_sigbus(int sig)
{
	static const char msg[] =
		"ruma micro: SIGBUS: a 2 MiB page could not be allocated (the method maps its "
		"huge pages without reservation, as the original does); reserve more huge pages "
		"or pass --reserve, which makes a shortage fail the mapping instead\n";
	ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);

	(void)w;
	(void)sig;
	_exit(1);
}

void micro_report_sigbus(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, NULL);
}

int micro_fail(const char *what, int rc)
{
	fprintf(stderr, "ruma micro: %s: %s\n", what, ruma_strerror(rc));
	return rc;
}

void micro_free_data_arrays(micro_data *d)
{
	free(d->hist);
	free(d->seg_ptr);
	free(d->seg_len);
	free(d->seg_part);
	d->hist = NULL;
	d->seg_ptr = NULL;
	d->seg_len = NULL;
	d->seg_part = NULL;
	d->nseg = 0;
}
