/*
 * test_core_perf.c — perf counters, rusage deltas, smaps_rollup memory and
 * the counter table in the layout of PerfEvent's report.
 *
 * The machine may lack a PMU (hardware events fail with ENOENT in a VM):
 * every check accepts "available and counting" or "unavailable with an
 * errno", never a broken mix.  The table format is checked byte for byte
 * against PerfEvent's line for a sample built from the numbers of Leis's published run.
 */
#include "test.h"

#include "core/perf_ext.h"

#include "os/os.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

static volatile uint64_t sink;

/* Spin until this thread used at least ms of CPU time. */
static void burn_cpu_ms(double ms)
{
	struct timespec t0, t;
	uint64_t x = 1;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) * 1e-6 <
		 ms);
	sink = x;
}

/* Map and touch n fresh pages, then unmap: n page faults. */
static int touch_pages(size_t n)
{
	size_t len = n * 4096;
	void *m;

	if (ruma_os_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			 &m) != 0)
		return -1;
	char *p = m;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)i;
	return ruma_os_munmap(p, len);
}

static char *print_to_string(const ruma_perf_sample *s, uint64_t scale, unsigned flags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	ruma_perf_print_sample(s, f, scale, flags);
	fclose(f);
	return buf;
}

static int t_names(void)
{
	CHECK(!strcmp(ruma_perf_event_name(RUMA_PERF_CYCLES), "cycles"));
	CHECK(!strcmp(ruma_perf_event_name(RUMA_PERF_L1_MISSES), "L1-misses"));
	CHECK(!strcmp(ruma_perf_event_name(RUMA_PERF_DTLB_STORE_MISSES), "dTLB-store-misses"));
	CHECK(!strcmp(ruma_perf_event_name(RUMA_PERF_TASK_CLOCK), "task-clock"));
	CHECK(!strcmp(ruma_perf_event_name(RUMA_PERF_PAGE_FAULTS), "page-faults"));
	CHECK(!strcmp(ruma_perf_event_name(RUMA_PERF_NEVENTS), "?"));
	CHECK(!strcmp(ruma_perf_event_name(-1), "?"));
	return TEST_PASS;
}

/* Software events count a busy loop and fresh-page faults. */
static int t_software_events(void)
{
	ruma_perf *p;
	double tc = 0, pf = 0;
	ruma_perf_rusage ru;

	CHECK_OK(ruma_perf_create(&p));
	if (!ruma_perf_available(p, RUMA_PERF_TASK_CLOCK)) {
		int e = ruma_perf_error(p, RUMA_PERF_TASK_CLOCK);
		ruma_perf_destroy(p);
		SKIP("software counters unavailable here: %s", ruma_strerror(e));
	}
	CHECK_OK(ruma_perf_start(p));
	burn_cpu_ms(20);
	CHECK_EQ(touch_pages(256), 0);
	CHECK_OK(ruma_perf_stop(p));
	CHECK_OK(ruma_perf_value(p, RUMA_PERF_TASK_CLOCK, &tc));
	CHECK(tc >= 15e6); /* at least 15 of the 20 ms of CPU, in ns */
	if (ruma_perf_available(p, RUMA_PERF_PAGE_FAULTS)) {
		CHECK_OK(ruma_perf_value(p, RUMA_PERF_PAGE_FAULTS, &pf));
		CHECK(pf >= 200);
	}
	ruma_perf_rusage_get(p, &ru);
	CHECK(ru.minor_faults >= 200);
	CHECK(ru.user_sec + ru.sys_sec > 0.010);
	CHECK(ru.major_faults >= 0 && ru.voluntary_switches >= 0 && ru.involuntary_switches >= 0);
	ruma_perf_destroy(p);
	return TEST_PASS;
}

/* Hardware events either count or are unavailable with an errno. */
static int t_hardware_events(void)
{
	ruma_perf *p;
	int navail = 0;

	CHECK_OK(ruma_perf_create(&p));
	CHECK_OK(ruma_perf_start(p));
	burn_cpu_ms(5);
	ruma_perf_stop(p);
	for (int e = RUMA_PERF_CYCLES; e <= RUMA_PERF_BRANCH_MISSES; e++) {
		double v = -1;
		int rc = ruma_perf_value(p, e, &v);
		if (ruma_perf_available(p, e)) {
			CHECK_EQ(rc, 0);
			CHECK_EQ(ruma_perf_error(p, e), 0);
			CHECK(v >= 0);
			navail++;
		} else {
			CHECK_EQ(rc, RUMA_EUNSUPP);
			CHECK(ruma_perf_error(p, e) < 0);
			CHECK(v == 0);
		}
	}
	if (ruma_perf_available(p, RUMA_PERF_CYCLES)) {
		double c;
		CHECK_OK(ruma_perf_value(p, RUMA_PERF_CYCLES, &c));
		CHECK(c > 1e5); /* 5 ms of spinning is millions of cycles */
	}
	printf("    %d of 7 hardware events available\n", navail);
	double v;
	CHECK_EQ(ruma_perf_value(p, RUMA_PERF_NEVENTS, &v), -EINVAL);
	CHECK_EQ(ruma_perf_error(p, -1), -EINVAL);
	ruma_perf_destroy(p);
	return TEST_PASS;
}

static void *spin_thread(void *arg)
{
	burn_cpu_ms(*(double *)arg);
	return NULL;
}

/* inherit=1: a thread created after create() is counted. */
static int t_inherit_threads(void)
{
	ruma_perf *p;
	pthread_t th;
	double ms = 30, tc;

	CHECK_OK(ruma_perf_create(&p));
	if (!ruma_perf_available(p, RUMA_PERF_TASK_CLOCK)) {
		ruma_perf_destroy(p);
		SKIP("task-clock unavailable");
	}
	CHECK_OK(ruma_perf_start(p));
	CHECK_EQ(pthread_create(&th, NULL, spin_thread, &ms), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_OK(ruma_perf_stop(p));
	CHECK_OK(ruma_perf_value(p, RUMA_PERF_TASK_CLOCK, &tc));
	CHECK(tc >= 25e6);
	ruma_perf_destroy(p);
	return TEST_PASS;
}

/* Two measurements with one object: the second reports only its own work. */
static int t_restart(void)
{
	ruma_perf *p;
	double a, b;

	CHECK_OK(ruma_perf_create(&p));
	if (!ruma_perf_available(p, RUMA_PERF_TASK_CLOCK)) {
		ruma_perf_destroy(p);
		SKIP("task-clock unavailable");
	}
	CHECK_OK(ruma_perf_start(p));
	burn_cpu_ms(30);
	CHECK_OK(ruma_perf_stop(p));
	CHECK_OK(ruma_perf_value(p, RUMA_PERF_TASK_CLOCK, &a));
	CHECK_OK(ruma_perf_start(p));
	CHECK_OK(ruma_perf_stop(p));
	CHECK_OK(ruma_perf_value(p, RUMA_PERF_TASK_CLOCK, &b));
	CHECK(a >= 25e6);
	CHECK(b < a / 2);
	ruma_perf_destroy(p);
	return TEST_PASS;
}

/* The header up to the scale column (whose width depends on the scale). */
static const char seed_prefix[] =
	"cycles, instructions, L1-misses, LLC-misses, dTLB-load-misses, dTLB-store-misses, "
	"branch-misses, task-clock, ";
static const char seed_header[] =
	"cycles, instructions, L1-misses, LLC-misses, dTLB-load-misses, dTLB-store-misses, "
	"branch-misses, task-clock,    scale,  IPC, CPUs,  GHz \n";
static const char seed_data[] =
	" 70.64,       196.10,      0.34,       0.01,             0.01,              0.01,  "
	"        0.03,      21.80, 10000000, 2.78, 1.00, 3.24 \n";

/* The published insert measurement, as raw totals over 10 M keys. */
static void seed_sample(ruma_perf_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->value[RUMA_PERF_CYCLES] = 706.4e6;
	s->value[RUMA_PERF_INSTRUCTIONS] = 1961.0e6;
	s->value[RUMA_PERF_L1_MISSES] = 3.4e6;
	s->value[RUMA_PERF_LLC_MISSES] = 0.1e6;
	s->value[RUMA_PERF_DTLB_LOAD_MISSES] = 0.1e6;
	s->value[RUMA_PERF_DTLB_STORE_MISSES] = 0.1e6;
	s->value[RUMA_PERF_BRANCH_MISSES] = 0.3e6;
	s->value[RUMA_PERF_TASK_CLOCK] = 218.0e6;
	s->value[RUMA_PERF_PAGE_FAULTS] = 25000;
	s->wall_sec = 0.218;
}

static int t_table_seed_format(void)
{
	ruma_perf_sample s;
	char expect[512];

	seed_sample(&s);
	char *out = print_to_string(&s, 10000000, RUMA_PERF_PRINT_NO_PAGE_FAULTS);
	CHECK(out != NULL);
	snprintf(expect, sizeof(expect), "%s%s", seed_header, seed_data);
	if (strcmp(out, expect) != 0)
		fprintf(stderr, "  got:\n%s  expected:\n%s", out, expect);
	CHECK(strcmp(out, expect) == 0);
	free(out);

	/* Default: a page-faults column after GHz. */
	out = print_to_string(&s, 10000000, 0);
	CHECK(out != NULL);
	CHECK(strncmp(out, seed_header, strlen(seed_header) - 2) == 0);
	CHECK(strstr(out, "  GHz, page-faults \n") != NULL);
	CHECK(strstr(out, " 3.24,        0.00 \n") != NULL);
	free(out);
	return TEST_PASS;
}

static int t_table_na(void)
{
	ruma_perf_sample s;

	seed_sample(&s);
	for (int e = RUMA_PERF_CYCLES; e <= RUMA_PERF_BRANCH_MISSES; e++)
		s.err[e] = -ENOENT;
	char *out = print_to_string(&s, 1000, 0);
	CHECK(out != NULL);
	char *nl = strchr(out, '\n');
	CHECK(nl != NULL);
	CHECK(strncmp(out, seed_prefix, strlen(seed_prefix)) == 0);
	CHECK(strstr(out, "task-clock, scale, IPC, CPUs, GHz, page-faults \n") != NULL);
	/* cycles column is 6 wide: "   n/a"; IPC and GHz are n/a (3 wide), CPUs is not. */
	CHECK(strncmp(nl + 1, "   n/a,          n/a,       n/a,        n/a,", 44) == 0);
	CHECK(strstr(nl + 1, ",  1000, n/a, 1.00, n/a,       25.00 \n") != NULL);
	free(out);

	/* Missing task-clock: CPUs and GHz are n/a, IPC still printed. */
	seed_sample(&s);
	s.err[RUMA_PERF_TASK_CLOCK] = -EACCES;
	out = print_to_string(&s, 10000000, RUMA_PERF_PRINT_NO_PAGE_FAULTS);
	CHECK(out != NULL);
	CHECK(strstr(out, "        n/a, 10000000, 2.78,  n/a, n/a \n") != NULL);
	free(out);
	return TEST_PASS;
}

/* The live printer: header right, unavailable events as n/a. */
static int t_table_live(void)
{
	ruma_perf *p;
	char *buf = NULL;
	size_t len = 0;

	CHECK_OK(ruma_perf_create(&p));
	ruma_perf_start(p);
	burn_cpu_ms(2);
	ruma_perf_stop(p);
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL);
	ruma_perf_print(p, f, 100);
	fclose(f);
	CHECK(strncmp(buf, seed_prefix, strlen(seed_prefix)) == 0);
	CHECK(strstr(buf, "GHz, page-faults \n") != NULL);
	bool any_missing = false;
	for (int e = 0; e < RUMA_PERF_NEVENTS; e++)
		any_missing |= !ruma_perf_available(p, e);
	CHECK((strstr(strchr(buf, '\n'), "n/a") != NULL) == any_missing);
	free(buf);
	ruma_perf_destroy(p);
	return TEST_PASS;
}

/* An injected ENOENT on the first perf_event_open disables exactly cycles. */
static int t_inject_first_event(void)
{
	ruma_perf *ref, *p;

	CHECK_OK(ruma_perf_create(&ref));
	uint64_t injected0 = ruma_os_injected(RUMA_SYS_PERF_EVENT_OPEN);
	ruma_os_inject(RUMA_SYS_PERF_EVENT_OPEN, 1, ENOENT, false);
	int rc = ruma_perf_create(&p);
	ruma_os_inject_clear();
	CHECK_OK(rc);
	CHECK_EQ(ruma_os_injected(RUMA_SYS_PERF_EVENT_OPEN) - injected0, 1);
	CHECK_EQ(ruma_perf_error(p, RUMA_PERF_CYCLES), -ENOENT);
	CHECK(!ruma_perf_available(p, RUMA_PERF_CYCLES));
	for (int e = RUMA_PERF_CYCLES + 1; e < RUMA_PERF_NEVENTS; e++) {
		CHECK_EQ(ruma_perf_available(p, e), ruma_perf_available(ref, e));
		CHECK_EQ(ruma_perf_error(p, e), ruma_perf_error(ref, e));
	}
	CHECK(ruma_perf_available(p, RUMA_PERF_TASK_CLOCK));
	CHECK(ruma_perf_available(p, RUMA_PERF_PAGE_FAULTS));
	CHECK_OK(ruma_perf_start(p));
	burn_cpu_ms(5);
	CHECK_OK(ruma_perf_stop(p));
	double tc;
	CHECK_OK(ruma_perf_value(p, RUMA_PERF_TASK_CLOCK, &tc));
	CHECK(tc > 0);
	ruma_perf_destroy(p);
	ruma_perf_destroy(ref);
	return TEST_PASS;
}

/* Every open failing: all events unavailable, start/stop still fine. */
static int t_inject_all(void)
{
	ruma_perf *p;

	ruma_os_inject(RUMA_SYS_PERF_EVENT_OPEN, 1, EACCES, true);
	int rc = ruma_perf_create(&p);
	ruma_os_inject_clear();
	CHECK_OK(rc);
	for (int e = 0; e < RUMA_PERF_NEVENTS; e++)
		CHECK_EQ(ruma_perf_error(p, e), -EACCES);
	CHECK_OK(ruma_perf_start(p));
	CHECK_OK(ruma_perf_stop(p));
	ruma_perf_sample s;
	ruma_perf_sample_get(p, &s);
	char *out = print_to_string(&s, 1, RUMA_PERF_PRINT_NO_PAGE_FAULTS);
	CHECK(out != NULL);
	CHECK(strstr(out, "n/a,     1, n/a,  n/a, n/a \n") != NULL);
	free(out);
	ruma_perf_destroy(p);
	return TEST_PASS;
}

static int t_smaps_memory(void)
{
	ruma_perf_memory m0, m1;
	size_t len = 16u << 20;

	CHECK_OK(ruma_perf_memory_read(&m0));
	CHECK(m0.rss > 0);
	void *m;
	CHECK_OK(ruma_os_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			      0, &m));
	char *p = m;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	CHECK_OK(ruma_perf_memory_read(&m1));
	CHECK_OK(ruma_os_munmap(p, len));
	CHECK(m1.rss >= m0.rss + len / 2);
	CHECK(m1.anon_huge <= m1.rss);
	return TEST_PASS;
}

/* The counter ioctls and reads go through the OS layer: an injected
 * failure of each reaches the caller of start/stop and marks that event. */
static int t_inject_ioctl_and_read(void)
{
	ruma_perf *p;

	CHECK_OK(ruma_perf_create(&p));
	if (!ruma_perf_available(p, RUMA_PERF_TASK_CLOCK)) {
		ruma_perf_destroy(p);
		SKIP("software counters unavailable here");
	}
	uint64_t n0 = ruma_os_count(RUMA_SYS_PERF_IOCTL), r0 = ruma_os_count(RUMA_SYS_READ);
	CHECK_OK(ruma_perf_start(p));
	CHECK_OK(ruma_perf_stop(p));
	CHECK(ruma_os_count(RUMA_SYS_PERF_IOCTL) - n0 >= 3); /* reset, enable, disable */
	CHECK(ruma_os_count(RUMA_SYS_READ) - r0 >= 2);        /* baseline and end */
	ruma_os_inject(RUMA_SYS_PERF_IOCTL, 1, EBADF, true);
	CHECK_EQ(ruma_perf_start(p), -EBADF);
	ruma_os_inject_clear();
	CHECK_EQ(ruma_perf_error(p, RUMA_PERF_TASK_CLOCK), -EBADF);
	CHECK_OK(ruma_perf_start(p));
	ruma_os_inject(RUMA_SYS_READ, 1, 0, true); /* empty reads: a short counter read */
	CHECK_EQ(ruma_perf_stop(p), RUMA_ESHORTIO);
	ruma_os_inject_clear();
	CHECK_EQ(ruma_perf_error(p, RUMA_PERF_TASK_CLOCK), RUMA_ESHORTIO);
	ruma_perf_destroy(p);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "names", t_names },
	{ "software_events", t_software_events },
	{ "hardware_events", t_hardware_events },
	{ "inherit_threads", t_inherit_threads },
	{ "restart", t_restart },
	{ "table_seed_format", t_table_seed_format },
	{ "table_na", t_table_na },
	{ "table_live", t_table_live },
	{ "inject_first_event", t_inject_first_event },
	{ "inject_all", t_inject_all },
	{ "smaps_memory", t_smaps_memory },
	{ "inject_ioctl_and_read", t_inject_ioctl_and_read },
};

int main(int argc, char **argv)
{
	return test_main("core_perf", cases, TEST_N(cases), argc, argv);
}
