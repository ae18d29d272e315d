/*
 * rwbench_vector.c — `ruma rwbench vector`: push throughput and peak memory
 * of the growable vectors (vector.h): rewired (4 KiB; with prepopulation;
 * with its pool filled at creation; 2 MiB with --huge), copy
 * (std::vector-like), mremap, glibc realloc and software indirection —
 * against the baseline `array`: the same n stores into a malloc'ed array of
 * n entries (allocated before the clock starts, its pages faulted by the
 * stores).  The vectors fill their page tables ahead of the pushes
 * (populate-ahead, vector.h); `rewired-fault` and `copy-fault` turn that
 * off, so every 4 KiB page faults in at its first store as in the array.
 *
 * Each measurement runs in a forked child: it creates the vector (untimed),
 * pushes 0..n-1 (timed; inline ruma_vec_push_u64; a second time covers
 * creation + pushes + destruction, every cost of the vector), checks a
 * sample of the elements, reads the memory it holds (/proc/self/smaps_rollup:
 * Rss + hugetlb) and reports through a pipe.  The
 * parent takes the child's peak RSS from wait4's rusage (ru_maxrss), minus
 * the peak of an idle child.  Hugetlb pages are not part of RSS: for 2 MiB
 * variants the peak column adds the hugetlb bytes held at the end.
 *
 * Syscalls: fork, pipe, read/write, wait4 (process control, not memory
 * management; the vectors make their own calls through the library).
 */
#include "bench/rewire/rwbench.h"

#include "core/perf_ext.h"
#include <ruma/vector.h>
#include "core/core_ext.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct vec_variant {
	const char *name;
	ruma_vec_kind kind;
	bool huge, prepopulate;
	bool pool;  /* REWIRED: pool of n entries filled at creation (pool_bytes) */
	bool array; /* the baseline: stores into a preallocated array, no vector */
	bool fault; /* populate-ahead off: every 4 KiB page faults in at its first store */
} vec_variant;

static const vec_variant variants[] = {
	{ "array", RUMA_VEC_COPY, false, false, false, true, false },
	{ "rewired", RUMA_VEC_REWIRED, false, false, false, false, false },
	{ "rewired-prepop", RUMA_VEC_REWIRED, false, true, false, false, false },
	{ "rewired-pool", RUMA_VEC_REWIRED, false, false, true, false, false },
	{ "rewired-fault", RUMA_VEC_REWIRED, false, false, false, false, true },
	{ "copy", RUMA_VEC_COPY, false, false, false, false, false },
	{ "copy-fault", RUMA_VEC_COPY, false, false, false, false, true },
	{ "mremap", RUMA_VEC_MREMAP, false, false, false, false, false },
	{ "realloc", RUMA_VEC_REALLOC, false, false, false, false, false },
	{ "indirect-4k", RUMA_VEC_INDIRECT, false, false, false, false, false },
	{ "indirect-2m", RUMA_VEC_INDIRECT, true, false, false, false, false },
	{ "rewired-2m", RUMA_VEC_REWIRED, true, false, false, false, false },
	{ "rewired-2m-prepop", RUMA_VEC_REWIRED, true, true, false, false, false },
	{ "rewired-2m-pool", RUMA_VEC_REWIRED, true, false, true, false, false },
	{ "mremap-2m", RUMA_VEC_MREMAP, true, false, false, false, false },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

/* What a child reports. */
typedef struct child_report {
	int rc;
	double sec;             /* the push loop */
	double all_sec;         /* create + push loop + destroy: every cost of the vector */
	uint64_t held_bytes;    /* Rss + hugetlb at the end */
	uint64_t hugetlb_bytes;
} child_report;

/* The baseline: n stores into an array allocated (not touched) before the clock starts. */
static int array_run(uint64_t n, child_report *rep)
{
	double t_all = ruma_now_sec();
	uint64_t *a = malloc((size_t)(n ? n : 1) * sizeof(*a));
	ruma_perf_memory mem;

	if (!a)
		return -ENOMEM;
	double t0 = ruma_now_sec();
	for (uint64_t i = 0; i < n; i++)
		((volatile uint64_t *)a)[i] = i;
	rep->sec = ruma_now_sec() - t0;
	for (uint64_t i = 0; i < n; i += 1 + n / 1000)
		if (a[i] != i) {
			free(a);
			return RUMA_ECORRUPT;
		}
	if (!ruma_perf_memory_read(&mem))
		rep->held_bytes = mem.rss;
	double t_check = ruma_now_sec() - (t0 + rep->sec); /* untimed: the check and the read */
	free(a);
	rep->all_sec = ruma_now_sec() - t_all - t_check;
	return 0;
}

static void child_run(const vec_variant *v, uint64_t n, int fd)
{
	child_report rep = { 0 };
	ruma_vec_options o;
	ruma_vec *vec = NULL;
	ruma_perf_memory mem;

	if (v->array) {
		rep.rc = array_run(n, &rep);
		if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
			_exit(3);
		_exit(0);
	}
	ruma_vec_options_default(&o);
	o.kind = v->kind;
	o.huge = v->huge;
	o.prepopulate = v->prepopulate;
	if (v->fault)
		o.populate_ahead = RUMA_VEC_POPULATE_AHEAD_OFF;
	o.max_bytes = (size_t)(n * 8 * 2 + ((size_t)64 << 20));
	if (v->pool)
		o.pool_bytes = (size_t)(n * 8);
	double t_all = ruma_now_sec(), t_check = 0;
	rep.rc = ruma_vec_create(&o, &vec);
	if (!rep.rc) {
		double t0 = ruma_now_sec();
		for (uint64_t i = 0; i < n; i++)
			if (RUMA_UNLIKELY((rep.rc = ruma_vec_push_u64(vec, i)) != 0))
				break;
		rep.sec = ruma_now_sec() - t0;
	}
	double t_check0 = ruma_now_sec();
	if (!rep.rc)
		for (uint64_t i = 0; i < n; i += 1 + n / 1000)
			if (ruma_vec_get_u64(vec, i) != i) {
				rep.rc = RUMA_ECORRUPT;
				break;
			}
	if (!rep.rc && !ruma_perf_memory_read(&mem)) {
		rep.hugetlb_bytes = mem.private_hugetlb + mem.shared_hugetlb;
		rep.held_bytes = mem.rss + rep.hugetlb_bytes;
	}
	t_check = ruma_now_sec() - t_check0;
	ruma_vec_destroy(vec);
	rep.all_sec = ruma_now_sec() - t_all - t_check;
	if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(3);
	_exit(0);
}

/* Fork a child for one measurement; *peak gets its ru_maxrss in bytes. */
static int measure(const vec_variant *v, uint64_t n, child_report *out, uint64_t *peak)
{
	int pfd[2], status;
	struct rusage ru;
	pid_t pid;

	if (pipe(pfd))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return e;
	}
	if (pid == 0) {
		close(pfd[0]);
		if (v)
			child_run(v, n, pfd[1]);
		child_report idle = { 0 };
		if (write(pfd[1], &idle, sizeof(idle)) != (ssize_t)sizeof(idle))
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	ssize_t got = read(pfd[0], out, sizeof(*out));
	close(pfd[0]);
	if (wait4(pid, &status, 0, &ru) != pid)
		return -errno;
	if (got != (ssize_t)sizeof(*out) || !WIFEXITED(status) || WEXITSTATUS(status))
		return -ECHILD;
	*peak = (uint64_t)ru.ru_maxrss * 1024;
	return 0;
}

/* The --result rows of one measurement: push seconds, all costs, peak bytes. */
static void result_rows(const ruma_rwbench_opts *o, const char *name, uint64_t n, unsigned rep,
			double sec, double all_sec, uint64_t peak)
{
	char metric[80];

	(void)ruma_result_setu(o->res, "n", n);
	(void)ruma_result_setu(o->res, "rep", rep);
	ruma_result_add(o->res, name, "s", sec);
	snprintf(metric, sizeof(metric), "%s_all", name);
	ruma_result_add(o->res, metric, "s", all_sec);
	snprintf(metric, sizeof(metric), "%s_peak", name);
	ruma_result_add(o->res, metric, "bytes", (double)peak);
}

/* the state of one vector bench run, for its turns */
struct vec_run {
	const ruma_rwbench_opts *o;
	const size_t *sel;
	size_t nsel;
	uint64_t idle_peak;
	ruma_rwb_table *t, *ta; /* push seconds, all seconds */
	ruma_rep_samples *peaks; /* peak bytes */
	int rc;
};

/* one turn: variant sel[variant] pushes 2^(min_log + group) (+1) elements in a child */
static int vec_turn(void *ctx, const ruma_rep_turn *turn)
{
	struct vec_run *p = ctx;
	const ruma_rwbench_opts *o = p->o;
	const vec_variant *v = &variants[p->sel[turn->variant]];
	uint64_t n = ((uint64_t)1 << (o->min_log + turn->group)) + o->plus_one, peak;
	size_t c = turn->group * p->nsel + turn->variant;
	unsigned r = turn->rep + 1;
	child_report rep;
	int mrc = measure(v, n, &rep, &peak);

	if (!mrc)
		mrc = rep.rc;
	if (mrc) {
		fprintf(stderr, "rwbench vector: %s n=%llu: %s\n", v->name, (unsigned long long)n,
			ruma_strerror(mrc));
		p->rc = p->rc ? p->rc : mrc;
		return 0;
	}
	if (turn->warmup)
		return 0;
	uint64_t pk = (peak > p->idle_peak ? peak - p->idle_peak : 0) + rep.hugetlb_bytes;
	ruma_rep_put(&p->t->s, c, turn->rep, rep.sec);
	ruma_rep_put(&p->ta->s, c, turn->rep, rep.all_sec);
	ruma_rep_put(p->peaks, c, turn->rep, (double)pk);
	fprintf(o->csv, "vector,%s,%llu,%u,%.9f,%.3f,%llu,%llu,%llu,%.9f\n", v->name,
		(unsigned long long)n, r, rep.sec, n / rep.sec / 1e6, (unsigned long long)pk,
		(unsigned long long)rep.held_bytes, (unsigned long long)rep.hugetlb_bytes,
		rep.all_sec);
	result_rows(o, v->name, n, r, rep.sec, rep.all_sec, pk);
	fflush(o->csv);
	return 0;
}

int ruma_rwbench_vector(const ruma_rwbench_opts *o)
{
	size_t nsizes = o->max_log - o->min_log + 1, sel[NVAR], nsel = 0;
	ruma_rwb_table t, ta;
	child_report rep;
	uint64_t idle_peak = 0;
	ruma_rep_samples peaks;
	double *ops;
	int rc = 0;

	for (size_t k = 0; k < NVAR; k++) {
		if (!ruma_rwb_selected(o, variants[k].name))
			continue;
		if (variants[k].huge && variants[k].kind != RUMA_VEC_INDIRECT && !o->huge)
			continue;
		sel[nsel++] = k;
	}
	if (!nsel) {
		fprintf(stderr, "rwbench vector: no variant selected\n");
		return -EINVAL;
	}
	if (o->huge)
		fprintf(stderr, "rwbench vector: %llu huge pages free; 2 MiB variants that need more "
			"are reported as failed with RUMA_ENOHUGE\n",
			(unsigned long long)ruma_rwb_free_huge_pages());
	rc = measure(NULL, 0, &rep, &idle_peak);
	if (rc)
		return rc;
	if (ruma_rwb_table_init(&t, nsel * nsizes, o->reps))
		return -ENOMEM;
	if (ruma_rwb_table_init(&ta, nsel * nsizes, o->reps)) {
		ruma_rwb_table_free(&t);
		return -ENOMEM;
	}
	ops = calloc(nsel * nsizes, sizeof(*ops));
	if (!ops || ruma_rep_samples_init(&peaks, nsel * nsizes, o->reps)) {
		free(ops);
		ruma_rwb_table_free(&t);
		ruma_rwb_table_free(&ta);
		return -ENOMEM;
	}
	for (size_t s = 0; s < nsizes; s++)
		for (size_t k = 0; k < nsel; k++) {
			size_t c = s * nsel + k;
			snprintf(t.label[c], sizeof(t.label[c]), "n=2^%zu%s %s", o->min_log + s,
				 o->plus_one ? "+1" : "", variants[sel[k]].name);
			t.baseline[c] = (int)(s * nsel); /* the first selected variant */
			memcpy(ta.label[c], t.label[c], sizeof(ta.label[c]));
			ta.baseline[c] = t.baseline[c];
			ops[c] = (double)(((uint64_t)1 << (o->min_log + s)) + o->plus_one);
		}
	fprintf(o->csv, "bench,variant,n,rep,seconds,mpush_per_s,peak_rss_bytes,held_bytes,hugetlb_bytes,"
		"all_seconds\n");
	struct vec_run vr = { .o = o, .sel = sel, .nsel = nsel, .idle_peak = idle_peak, .t = &t,
			      .ta = &ta, .peaks = &peaks };
	ruma_rep plan;
	ruma_rwb_rep_init(&plan, o, nsel, nsizes);
	(void)ruma_rep_run(&plan, vec_turn, &vr);
	rc = vr.rc;
	ruma_rwb_table_print(&t, "vector push (ns/op = per push; ratio to the first variant)", ops);
	ruma_rwb_table_print(&ta, "vector, all costs: create + push + destroy (ns/op = per push; "
			     "ratio to the first variant)", ops);
	fprintf(stderr, "\npeak memory (child ru_maxrss minus an idle child's, plus hugetlb held), MiB:\n");
	for (size_t c = 0; c < t.ncells; c++) {
		ruma_summary sm;
		if (ruma_rep_summary(&peaks, c, &sm))
			continue;
		sm.median /= 1048576.0;
		fprintf(stderr, "%-44s %10.1f (%.1f..%.1f)  = %.2f x the data\n", t.label[c], sm.median,
			sm.min / 1048576.0, sm.max / 1048576.0, sm.median * 1048576.0 / (ops[c] * 8));
	}
	free(ops);
	ruma_rep_samples_free(&peaks);
	ruma_rwb_table_free(&t);
	ruma_rwb_table_free(&ta);
	return rc;
}
