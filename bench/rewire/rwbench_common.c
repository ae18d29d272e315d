/*
 * rwbench_common.c — shared pieces of the structure benchmarks: variant
 * selection, their repetition plan, the results table (labelled cells over
 * the repetition engine's samples, common/rep.h) and its summary (median,
 * min, max; ratios to a baseline cell computed per repetition), the
 * phased benchmarks' loop, and the free huge page count.
 *
 * Syscalls: none (stdio reads of /proc/meminfo).
 */
#include "bench/rewire/rwbench.h"
#include "core/core_ext.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool ruma_rwb_selected(const ruma_rwbench_opts *o, const char *name)
{
	const char *p = o->only;
	size_t len = strlen(name);

	if (!p || !*p)
		return true;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == len && !strncmp(p, name, len))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

void ruma_rwb_rep_init(ruma_rep *rep, const ruma_rwbench_opts *o, size_t nsel, size_t groups)
{
	ruma_rep_init(rep, nsel, groups, 1, o->reps, RUMA_REP_ROTATE, o->seed);
}

int ruma_rwb_table_init(ruma_rwb_table *t, size_t ncells, size_t reps)
{
	memset(t, 0, sizeof(*t));
	t->ncells = ncells;
	t->reps = reps;
	t->label = calloc(ncells ? ncells : 1, sizeof(*t->label));
	t->baseline = malloc((ncells ? ncells : 1) * sizeof(*t->baseline));
	if (ruma_rep_samples_init(&t->s, ncells, reps) || !t->label || !t->baseline) {
		ruma_rwb_table_free(t);
		return -ENOMEM;
	}
	for (size_t c = 0; c < ncells; c++)
		t->baseline[c] = -1;
	return 0;
}

void ruma_rwb_table_free(ruma_rwb_table *t)
{
	ruma_rep_samples_free(&t->s);
	free(t->label);
	free(t->baseline);
	memset(t, 0, sizeof(*t));
}

void ruma_rwb_table_print(const ruma_rwb_table *t, const char *title, const double *ops_per_cell)
{
	ruma_summary s, rs;

	fprintf(stderr, "\n== %s (%zu measured repetitions, warm-up discarded) ==\n", title, t->reps);
	fprintf(stderr, "%-44s %12s %12s %12s %12s  %s\n", "variant", "median s", "min s",
		"max s", "ns/op", "ratio to baseline: median (min..max)");
	for (size_t c = 0; c < t->ncells; c++) {
		if (ruma_rep_summary(&t->s, c, &s)) {
			fprintf(stderr, "%-44s %12s\n", t->label[c], "not run");
			continue;
		}
		fprintf(stderr, "%-44s %12.6f %12.6f %12.6f", t->label[c], s.median, s.min, s.max);
		if (ops_per_cell && ops_per_cell[c] > 0)
			fprintf(stderr, " %12.3f", s.median * 1e9 / ops_per_cell[c]);
		else
			fprintf(stderr, " %12s", "-");
		int b = t->baseline[c];
		if (b >= 0 && (size_t)b != c) {
			if (!ruma_rep_ratio_summary(&t->s, c, (size_t)b, &rs))
				fprintf(stderr, "  %.3f (%.3f..%.3f) vs %s", rs.median, rs.min, rs.max,
					t->label[b]);
		} else if (b >= 0) {
			fprintf(stderr, "  baseline");
		}
		fputc('\n', stderr);
	}
}

uint64_t ruma_rwb_free_huge_pages(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %llu", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* ---- variants x phases ---------------------------------------------------- */

static const char *vname(const ruma_rwb_phased *b, size_t k)
{
	bool huge;
	return b->variant(k, &huge);
}

static size_t phased_select(const ruma_rwbench_opts *o, const ruma_rwb_phased *b, size_t *sel)
{
	size_t nsel = 0;

	for (size_t k = 0; k < b->nvariants && nsel < RUMA_RWB_MAX_LIST; k++) {
		bool huge;
		const char *name = b->variant(k, &huge);
		if (ruma_rwb_selected(o, name) && (!huge || o->huge))
			sel[nsel++] = k;
	}
	return nsel;
}

static void phased_label(const ruma_rwbench_opts *o, const ruma_rwb_phased *b, const size_t *sel,
			 size_t nsel, ruma_rwb_table *t, double *ops)
{
	for (size_t ph = 0; ph < b->nphases; ph++)
		for (size_t j = 0; j < nsel; j++) {
			size_t c = ph * nsel + j;
			snprintf(t->label[c], sizeof(t->label[c]), "%s %s", b->phases[ph],
				 vname(b, sel[j]));
			t->baseline[c] = (int)(ph * nsel);
			if (ops)
				ops[c] = (double)((o->n + 4095) / 4096); /* per 4 KiB */
		}
}

static void phased_csv_row(const ruma_rwbench_opts *o, const ruma_rwb_phased *b, size_t v,
			   unsigned rep, size_t ph, double sec, uint64_t count)
{
	fprintf(o->csv, "%s,%s,%llu,%u,%s,%.9f,%llu", b->bench, vname(b, v),
		(unsigned long long)o->n, rep, b->phases[ph], sec, (unsigned long long)count);
	if (b->per_count_column)
		fprintf(o->csv, ",%.3f", count ? sec * 1e6 / (double)count : 0.0);
	fputc('\n', o->csv);
	(void)ruma_result_setu(o->res, "bytes", o->n);
	(void)ruma_result_set(o->res, "phase", b->phases[ph]);
	(void)ruma_result_setu(o->res, "rep", rep);
	ruma_result_add(o->res, vname(b, v), "s", sec);
}

struct phased_run {
	const ruma_rwbench_opts *o;
	const ruma_rwb_phased *b;
	const size_t *sel;
	size_t nsel;
	ruma_rwb_table *t;
	int rc;
};

/* one turn: run variant sel[j] once; keep its phases when measured */
static int phased_turn(void *ctx, const ruma_rep_turn *turn)
{
	struct phased_run *p = ctx;
	const ruma_rwb_phased *b = p->b;
	size_t j = turn->variant;
	double sec[RUMA_RWB_MAX_PHASES];
	uint64_t count = 0;
	int prc = b->run(p->sel[j], p->o->n, p->o->seed + turn->round, sec, &count);

	if (prc) {
		if (turn->round == 0)
			fprintf(stderr, "rwbench %s: %s: %s\n", b->bench, vname(b, p->sel[j]),
				ruma_strerror(prc));
		p->rc = p->rc ? p->rc : prc;
		return 0;
	}
	if (turn->warmup)
		return 0;
	for (size_t ph = 0; ph < b->nphases; ph++) {
		ruma_rep_put(&p->t->s, ph * p->nsel + j, turn->rep, sec[ph]);
		phased_csv_row(p->o, b, p->sel[j], turn->rep + 1, ph, sec[ph], count);
	}
	fflush(p->o->csv);
	return 0;
}

int ruma_rwb_run_phased(const ruma_rwbench_opts *o, const ruma_rwb_phased *b)
{
	size_t sel[RUMA_RWB_MAX_LIST], nsel = phased_select(o, b, sel);
	ruma_rwb_table t;
	ruma_rep rep;
	struct phased_run p = { .o = o, .b = b, .sel = sel, .nsel = nsel, .t = &t };
	int rc;

	if (!nsel || o->n < 4096 || b->nphases > RUMA_RWB_MAX_PHASES) {
		fprintf(stderr, "rwbench %s: no variant selected or n < 4096 bytes\n", b->bench);
		return -EINVAL;
	}
	if (ruma_rwb_table_init(&t, nsel * b->nphases, o->reps))
		return -ENOMEM;
	double *ops = calloc(nsel * b->nphases, sizeof(*ops));
	phased_label(o, b, sel, nsel, &t, ops);
	fprintf(o->csv, "bench,variant,bytes,rep,phase,seconds,%s%s%s\n", b->count_name,
		b->per_count_column ? "," : "", b->per_count_column ? b->per_count_column : "");
	ruma_rwb_rep_init(&rep, o, nsel, 1);
	rc = ruma_rep_run(&rep, phased_turn, &p);
	ruma_rwb_table_print(&t, b->title, ops);
	free(ops);
	ruma_rwb_table_free(&t);
	return rc ? rc : p.rc;
}
