/*
 * plot.c — charts of a sweep with gnuplot (pngcairo terminal):
 *
 *   DIR/all/<metric>.png        every variant, median per size with min-max
 *                               error bars, against size
 *   DIR/ratio/<metric>.png      each variant / its baseline per size, with the
 *                               95% bootstrap interval of compare and a line at
 *                               1: the picture of the verdicts
 *   DIR/data/<metric>__<variant>.dat        the numbers plotted (size median min max n)
 *   DIR/data/ratio_<metric>__<variant>.dat  (size ratio ci_lo ci_hi)
 *   DIR/plot.gp                 the generated gnuplot script
 *
 * Invariants: only measured (non-warm-up), successful rows are plotted; a
 * metric whose medians are all zero gets no chart (it is named instead); a
 * chart is listed as written only when gnuplot exited 0 and the file exists
 * and is not empty.  The x axis is logarithmic when the sizes span 10x or
 * more, the y axis when the values span more than 10x and none is 0 (else
 * it starts at 0).
 * Variants are shown by their readable labels (label.c), variant k of the
 * CSV in colour k of Okabe & Ito's palette in every chart; titles name the
 * system and the settings every run shared.
 *
 * Syscalls: mkdir (output folders); gnuplot runs as a child via child.c
 * (fork/exec with DIR as working directory); stat of the charts.
 */
#include "tools/exp/exp.h"
#include "core/core_ext.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ruma_exp_mkdirs(const char *path)
{
	char buf[4096];
	size_t l = strlen(path);

	if (l == 0 || l >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, l + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		return -errno;
	return 0;
}

const char *ruma_exp_gnuplot_path(void)
{
	static char found[4096];
	const char *path = getenv("PATH");

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		const char *c = strchr(p, ':');
		size_t l = c ? (size_t)(c - p) : strlen(p);

		if (l && l + 9 < sizeof(found)) {
			snprintf(found, sizeof(found), "%.*s/gnuplot", (int)l, p);
			if (access(found, X_OK) == 0)
				return found;
		}
		if (!c)
			break;
		p = c + 1;
	}
	return NULL;
}

static void sanitize(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 1 < len; s++) {
		char c = *s;
		int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   c == '-' || c == '.';
		out[o++] = keep ? c : '_';
	}
	out[o] = '\0';
}

/* gnuplot single-quoted string: ' doubled */
static void gp_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct names {
	const char **s;
	size_t n;
};

static int names_add(struct names *l, const char *s, size_t cap)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->s[i], s))
			return 0;
	if (l->n == cap)
		return -ENOSPC;
	l->s[l->n++] = s;
	return 0;
}

/* the range of the values written: smallest positive min and largest max */
struct span {
	double lo, hi;
	double median_hi; /* the largest median */
	bool zero;        /* a value <= 0: no log axis (it would hide the point) */
};

/* write data/<metric>__<variant>.dat; returns number of sizes written */
static size_t write_data(const ruma_exp_table *t, const char *dir, const char *metric,
			 const char *variant, const double *sizes, size_t nsizes, double *vals,
			 struct span *sp)
{
	char path[4096], m[128], v[256];
	size_t lines = 0;
	FILE *f;

	sanitize(metric, m, sizeof(m));
	sanitize(variant, v, sizeof(v));
	snprintf(path, sizeof(path), "%s/data/%s__%s.dat", dir, m, v);
	f = fopen(path, "w");
	if (!f)
		return 0;
	fprintf(f, "# %s of %s: size median min max n\n", metric, variant);
	for (size_t s = 0; s < nsizes; s++) {
		size_t n = 0;
		ruma_summary sum;

		for (size_t i = 0; i < t->n; i++) {
			const struct ruma_exp_row *r = &t->rows[i];
			if (r->ok && !r->warmup && r->size == sizes[s] &&
			    !strcmp(r->metric, metric) && !strcmp(r->variant, variant))
				vals[n++] = r->value;
		}
		if (!n || ruma_summarize(vals, n, &sum))
			continue;
		fprintf(f, "%.17g %.17g %.17g %.17g %zu\n", sizes[s], sum.median, sum.min, sum.max,
			n);
		if (sum.min > 0 && (!(sp->lo > 0) || sum.min < sp->lo))
			sp->lo = sum.min;
		if (sum.max > sp->hi)
			sp->hi = sum.max;
		if (sum.median > sp->median_hi)
			sp->median_hi = sum.median;
		if (sum.min <= 0)
			sp->zero = true;
		lines++;
	}
	if (fclose(f))
		return 0;
	return lines;
}

/* gnuplot double-quoted string: \ and " escaped, "\n" (two characters) kept as
 * gnuplot's line break */
static void gp_dstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || (*s == '\\' && s[1] != 'n'))
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* the x axis of a chart: sizes, logarithmic when they span 10x or more */
static void chart_head(FILE *gp, const char *out, const char *title, const char *xlabel,
		       const char *ylabel, double xmin, double xmax)
{
	int logx = xmin > 0 && xmax / xmin >= 10;
	double pad = logx ? 1.3 : (xmax > xmin ? (xmax - xmin) * 0.05 : (xmin ? xmin * 0.1 : 1));

	fprintf(gp, "set output ");
	gp_str(gp, out);
	fprintf(gp, "\nset title ");
	gp_dstr(gp, title);
	fprintf(gp, "\nset xlabel ");
	gp_str(gp, xlabel);
	fprintf(gp, "\nset ylabel ");
	gp_str(gp, ylabel);
	fprintf(gp, "\n%s\n", logx ? "set logscale x" : "unset logscale x");
	if (logx)
		fprintf(gp, "set xrange [%.17g:%.17g]\n", xmin / pad, xmax * pad);
	else
		fprintf(gp, "set xrange [%.17g:%.17g]\n", xmin - pad, xmax + pad);
}

/* "2.00k" -> "2k", "5.50 ms" -> "5.5 ms": a tic's label without trailing zeros */
static void trim_zeros(char *s)
{
	char *dot = strchr(s, '.'), *end;

	if (!dot)
		return;
	end = dot + 1;
	while (*end >= '0' && *end <= '9')
		end++;
	char *z = end;
	while (z > dot + 1 && z[-1] == '0')
		z--;
	if (z == dot + 1)
		z = dot;
	memmove(z, end, strlen(end) + 1);
}

/* one labelled y tic at v, in the unit's short form ("500 us", "38.9k") */
static void y_tic(FILE *gp, double v, const char *unit, int *first)
{
	char label[32];

	if (unit)
		ruma_exp_fmt_value(v, unit, label, sizeof(label));
	else
		snprintf(label, sizeof(label), "%g", v);
	trim_zeros(label);
	fprintf(gp, "%s", *first ? "set ytics (" : ", ");
	gp_str(gp, label);
	fprintf(gp, " %.17g", v);
	*first = 0;
}

/* y range [lo, hi] and its tics: on a log axis 1-2-5 per decade, on a linear
 * one about six steps of 1, 2 or 5 times a power of ten */
static void y_range(FILE *gp, double lo, double hi, int logy, const char *unit)
{
	int first = 1;

	fprintf(gp, "%s\nset yrange [%.17g:%.17g]\n", logy ? "set logscale y" : "unset logscale y",
		lo, hi);
	if (logy) {
		for (double d = pow(10, floor(log10(lo))); d <= hi; d *= 10)
			for (int k = 0; k < 3; k++) {
				double v = d * (k == 0 ? 1 : k == 1 ? 2 : 5);
				if (v >= lo && v <= hi)
					y_tic(gp, v, unit, &first);
			}
	} else {
		double raw = (hi - lo) / 6, mag = pow(10, floor(log10(raw))), step;
		step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag :
								   10 * mag;
		for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
			y_tic(gp, fabs(v) < step * 1e-9 ? 0 : v, unit, &first);
	}
	fprintf(gp, "%s\n", first ? "set ytics autofreq" : ")");
}

/* the y axis of values: logarithmic when they span more than 10x, else from 0 */
static void y_axis(FILE *gp, const struct span *sp, const char *unit)
{
	if (!sp->zero && sp->lo > 0 && sp->hi / sp->lo > 10)
		y_range(gp, sp->lo / 1.5, sp->hi * 1.5, 1, unit);
	else
		y_range(gp, 0, sp->hi * 1.1, 0, unit);
}

/* a tic at every size, labelled in short form ("100k", "1M", "0.01") */
static void x_tics(FILE *gp, const double *sizes, size_t n)
{
	fprintf(gp, "set xtics (");
	for (size_t i = 0; i < n; i++) {
		char label[32];

		ruma_exp_fmt_value(sizes[i], "", label, sizeof(label));
		trim_zeros(label);
		fprintf(gp, "%s", i ? ", " : "");
		gp_str(gp, label);
		fprintf(gp, " %.17g", sizes[i]);
	}
	fprintf(gp, ")\n");
}

static void plot_line(FILE *gp, const char *metric, const char *variant, int first, int style)
{
	char m[128], v[256], path[4096], label[2 * RUMA_EXP_STR];

	sanitize(metric, m, sizeof(m));
	sanitize(variant, v, sizeof(v));
	snprintf(path, sizeof(path), "data/%s__%s.dat", m, v);
	ruma_exp_variant_label(variant, label, sizeof(label));
	fprintf(gp, "%s", first ? "plot " : ", \\\n     ");
	gp_str(gp, path);
	fprintf(gp, " using 1:2:3:4 with yerrorlines linestyle %d title ", style);
	gp_str(gp, label);
}

static int chart_ok(const char *dir, const char *rel)
{
	char path[4096];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return 0;
	return stat(path, &st) == 0 && st.st_size > 0;
}

/* Okabe & Ito's palette, readable with colour blindness; variant k of the
 * CSV (order of first appearance) has colour k in every chart */
static const char *const palette[] = { "#0072B2", "#D55E00", "#009E73", "#E69F00",
				       "#56B4E9", "#CC79A7", "#000000", "#F0E442" };
#define NCOLOURS ((int)RUMA_ARRAY_SIZE(palette))

enum { MAXN = 256, MAXCHARTS = MAXN * 2 };

struct plot {
	const ruma_exp_table *t;
	const char *dir, *baseline;
	const char *ms[MAXN], *vs[MAXN];
	struct names metrics, variants;
	double *sizes, *vals;
	size_t nsizes;
	unsigned char *has; /* has[m * variants + v]: a line of data */
	FILE *gp;
	char (*charts)[512];
	size_t ncharts;
	char xlabel[160], system[32];
};

/* whether name is one of the comma-separated list */
static bool in_list(const char *list, const char *name)
{
	size_t l = strlen(name);

	for (const char *p = list; (p = strstr(p, name)); p += l)
		if ((p == list || p[-1] == ',') && (p[l] == ',' || p[l] == '\0'))
			return true;
	return false;
}

/* the metrics, variants and sizes of the measured rows (metric: only those) */
static int collect(struct plot *p, const char *metric, char *err, size_t errlen)
{
	const ruma_exp_table *t = p->t;

	for (size_t i = 0; i < t->n; i++) {
		const struct ruma_exp_row *r = &t->rows[i];
		int seen = 0;

		if (!r->ok || r->warmup || (metric && !in_list(metric, r->metric)))
			continue;
		ruma_exp_size_label(r->system, r->size_param, p->xlabel, sizeof(p->xlabel));
		snprintf(p->system, sizeof(p->system), "%s", r->system);
		if (names_add(&p->metrics, r->metric, MAXN) ||
		    names_add(&p->variants, r->variant, MAXN)) {
			snprintf(err, errlen, "more than %d metrics or variants", MAXN);
			return -E2BIG;
		}
		for (size_t s = 0; s < p->nsizes; s++)
			seen |= p->sizes[s] == r->size;
		if (!seen)
			p->sizes[p->nsizes++] = r->size;
	}
	if (!p->metrics.n) {
		snprintf(err, errlen, metric ? "no measured rows of metric '%s'" :
				      "no successful measured rows to plot%s",
			 metric ? metric : "");
		return -EINVAL;
	}
	qsort(p->sizes, p->nsizes, sizeof(*p->sizes), cmp_dbl);
	return 0;
}

static const char *unit_of(const ruma_exp_table *t, const char *metric)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].ok && !strcmp(t->rows[i].metric, metric))
			return t->rows[i].unit;
	return "";
}

/* "vmcache (workload=rndread threads=2)": the system and what every run shared */
static void config_text(const struct plot *p, char *buf, size_t len)
{
	if (p->t->context[0])
		snprintf(buf, len, "ruma %s, %s", p->system, p->t->context);
	else
		snprintf(buf, len, "ruma %s", p->system);
}

/* all/<metric>.png: every variant's median per size, bars min-max */
static void all_chart(struct plot *p, size_t m, const struct span *sp)
{
	const char *metric = p->metrics.s[m], *unit = unit_of(p->t, metric);
	char mname[128], title[1024], ylabel[256], config[600];

	sanitize(metric, mname, sizeof(mname));
	ruma_exp_metric_label(metric, unit, ylabel, sizeof(ylabel));
	config_text(p, config, sizeof(config));
	snprintf(title, sizeof(title), "%s, %s\\n%s; median of the repetitions, bars min-max",
		 ylabel,
		 ruma_exp_unit_better(unit) == RUMA_EXP_LOWER ? "lower is better" :
		 ruma_exp_unit_better(unit) == RUMA_EXP_HIGHER ? "higher is better" :
								 "neither direction is better",
		 config);
	snprintf(p->charts[p->ncharts], sizeof(p->charts[0]), "all/%s.png", mname);
	chart_head(p->gp, p->charts[p->ncharts], title, p->xlabel, ylabel, p->sizes[0],
		   p->sizes[p->nsizes - 1]);
	p->ncharts++;
	x_tics(p->gp, p->sizes, p->nsizes);
	y_axis(p->gp, sp, unit);
	for (size_t v = 0, first = 1; v < p->variants.n; v++) {
		if (!p->has[m * p->variants.n + v])
			continue;
		plot_line(p->gp, metric, p->variants.s[v], (int)first, (int)(v % NCOLOURS) + 1);
		first = 0;
	}
	fprintf(p->gp, "\n");
}

/* data/ratio_<metric>__<variant>.dat: size ratio lo hi per size of one
 * variant, x moved by a few percent per variant so bars do not overlap */
static int write_ratio_data(const struct plot *p, const ruma_exp_cmp_list *l, const char *metric,
			    size_t v, struct span *sp, const struct ruma_exp_cmp **overall)
{
	char path[4096], m[128], vn[256];
	double shift = 1 + 0.03 * ((double)v - (double)(p->variants.n - 1) / 2);
	int lines = 0;
	FILE *f;

	*overall = NULL;
	for (size_t i = 0; i < l->n && !lines; i++)
		lines = !strcmp(l->c[i].metric, metric) && !strcmp(l->c[i].variant, p->variants.s[v]);
	if (!lines) /* the baseline itself, or a variant without one */
		return 0;
	lines = 0;
	sanitize(metric, m, sizeof(m));
	sanitize(p->variants.s[v], vn, sizeof(vn));
	snprintf(path, sizeof(path), "%s/data/ratio_%s__%s.dat", p->dir, m, vn);
	f = fopen(path, "w");
	if (!f)
		return 0;
	fprintf(f, "# %s of %s / its baseline: size ratio ci_lo ci_hi\n", metric, p->variants.s[v]);
	for (size_t i = 0; i < l->n; i++) {
		const struct ruma_exp_cmp *c = &l->c[i];

		if (strcmp(c->metric, metric) || strcmp(c->variant, p->variants.s[v]) ||
		    !isfinite(c->ratio) || c->ratio <= 0)
			continue;
		if (c->overall) {
			*overall = c;
			continue;
		}
		double lo = isfinite(c->lo) ? c->lo : c->ratio, hi = isfinite(c->hi) ? c->hi : c->ratio;
		fprintf(f, "%.17g %.17g %.17g %.17g\n", c->size * shift, c->ratio, lo, hi);
		sp->lo = lo > 0 && (!(sp->lo > 0) || lo < sp->lo) ? lo : sp->lo;
		sp->hi = hi > sp->hi ? hi : sp->hi;
		lines++;
	}
	return fclose(f) ? 0 : lines;
}

/* ratio/<metric>.png: each variant's ratio to its baseline per size with its
 * 95% bootstrap interval, a line at 1 — the picture of compare's verdicts */
static void ratio_chart(struct plot *p, const ruma_exp_cmp_list *l, size_t m)
{
	const char *metric = p->metrics.s[m], *unit = unit_of(p->t, metric);
	char mname[128], title[1024], ylabel[256], config[600], base[2 * RUMA_EXP_STR];
	struct span sp = { 1, 1, 0, false };
	const struct ruma_exp_cmp *ov[MAXN];
	int lines[MAXN], any = 0;

	for (size_t v = 0; v < p->variants.n; v++) {
		lines[v] = write_ratio_data(p, l, metric, v, &sp, &ov[v]);
		any |= lines[v] > 0;
	}
	if (!any)
		return;
	sanitize(metric, mname, sizeof(mname));
	ruma_exp_variant_label(p->baseline, base, sizeof(base));
	config_text(p, config, sizeof(config));
	snprintf(title, sizeof(title),
		 "%s: each variant / %s (%s)\\n%s; ratio of medians, bars 95%% bootstrap "
		 "interval",
		 metric, base,
		 ruma_exp_unit_better(unit) == RUMA_EXP_LOWER ? "below 1 = faster" :
		 ruma_exp_unit_better(unit) == RUMA_EXP_HIGHER ? "above 1 = faster" :
								 "neither direction is better",
		 config);
	snprintf(ylabel, sizeof(ylabel), "ratio of %s to the baseline's", metric);
	snprintf(p->charts[p->ncharts], sizeof(p->charts[0]), "ratio/%s.png", mname);
	chart_head(p->gp, p->charts[p->ncharts], title, p->xlabel, ylabel, p->sizes[0] * 0.9,
		   p->sizes[p->nsizes - 1] * 1.1);
	p->ncharts++;
	x_tics(p->gp, p->sizes, p->nsizes);
	if (sp.lo > 0 && sp.hi / sp.lo > 10)
		y_range(p->gp, sp.lo / 1.3, sp.hi * 1.3, 1, NULL);
	else
		y_range(p->gp, sp.lo * 0.9, sp.hi * 1.1, 0, NULL);
	fprintf(p->gp, "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 "
		       "linecolor rgb '#555555'\n");
	for (size_t v = 0, first = 1; v < p->variants.n; v++) {
		char vn[256], path[4096], label[2 * RUMA_EXP_STR], key[512];

		if (!lines[v])
			continue;
		sanitize(p->variants.s[v], vn, sizeof(vn));
		snprintf(path, sizeof(path), "data/ratio_%s__%s.dat", mname, vn);
		ruma_exp_variant_label(p->variants.s[v], label, sizeof(label));
		if (ov[v] && isfinite(ov[v]->lo))
			snprintf(key, sizeof(key), "%s: overall %.2f [%.2f, %.2f], %s", label,
				 ov[v]->ratio, ov[v]->lo, ov[v]->hi, ov[v]->verdict);
		else
			snprintf(key, sizeof(key), "%s", label);
		fprintf(p->gp, "%s", first ? "plot " : ", \\\n     ");
		gp_str(p->gp, path);
		fprintf(p->gp, " using 1:2:3:4 with yerrorlines linestyle %d title ",
			(int)(v % NCOLOURS) + 1);
		gp_str(p->gp, key);
		first = 0;
	}
	fprintf(p->gp, "\nunset arrow 1\n");
}

static void script_head(FILE *gp, size_t nvariants)
{
	fprintf(gp, "# generated by ruma plot: run with 'gnuplot plot.gp' in this folder\n"
		    "set terminal pngcairo size 1000,600 noenhanced font 'sans,10'\n"
		    "set grid\nset key below center horizontal\nset bars small\n"
		    "set format x '%%g'\n");
	for (size_t k = 0; k < nvariants && k < (size_t)NCOLOURS; k++)
		fprintf(gp, "set linestyle %zu linecolor rgb '%s' linewidth 2 pointtype %zu\n",
			k + 1, palette[k], k + 5);
}

/* run gnuplot plot.gp in dir */
static int run_gnuplot(const char *gnuplot, const char *dir, char *err, size_t errlen)
{
	char *argv[] = { (char *)"gnuplot", (char *)"plot.gp", NULL };
	struct ruma_exp_exec x;
	char status[48];
	int rc = ruma_exp_exec(gnuplot, argv, dir, NULL, 300, &x);

	if (rc) {
		snprintf(err, errlen, "cannot run %s: %s", gnuplot, strerror(-rc));
		return rc;
	}
	ruma_exp_exec_status(&x, status, sizeof(status));
	if (strcmp(status, "ok")) {
		size_t l = strlen(x.err);
		snprintf(err, errlen, "gnuplot failed (%s): %s", status,
			 x.err + (l > 200 ? l - 200 : 0));
		rc = -EIO;
	}
	free(x.out);
	free(x.err);
	return rc;
}

static int make_dirs(const char *dir, char *err, size_t errlen)
{
	static const char *const subs[] = { "", "/all", "/ratio", "/data" };
	char sub[4096];
	int rc;

	for (size_t i = 0; i < RUMA_ARRAY_SIZE(subs); i++) {
		snprintf(sub, sizeof(sub), "%s%s", dir, subs[i]);
		if ((rc = ruma_exp_mkdirs(sub))) {
			snprintf(err, errlen, "cannot create %s: %s", sub, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* the charts of every metric into the script; all-zero metrics named in zero */
static void write_charts(struct plot *p, const ruma_exp_cmp_list *l, char *zero, size_t zlen)
{
	zero[0] = '\0';
	for (size_t m = 0; m < p->metrics.n && p->ncharts + 2 <= MAXCHARTS; m++) {
		struct span sp = { 0, 0, 0, false };

		for (size_t v = 0; v < p->variants.n; v++)
			p->has[m * p->variants.n + v] =
				write_data(p->t, p->dir, p->metrics.s[m], p->variants.s[v], p->sizes,
					   p->nsizes, p->vals, &sp) > 0;
		if (!(sp.median_hi > 0)) { /* every median 0: a flat line at 0, no chart */
			size_t used = strlen(zero);
			snprintf(zero + used, zlen - used, "%s%s", used ? ", " : "", p->metrics.s[m]);
			continue;
		}
		all_chart(p, m, &sp);
		if (l)
			ratio_chart(p, l, m);
	}
}

int ruma_exp_plot(const ruma_exp_table *t, const char *dir, const char *baseline,
		  const char *metric, size_t *npng, char *zero, size_t zlen, char *err,
		  size_t errlen)
{
	struct plot p;
	const char *gnuplot = ruma_exp_gnuplot_path();
	char scriptp[4096], cerr[RUMA_EXP_ERR];
	ruma_exp_cmp_list l = { 0 };
	int rc = 0, have_cmp = 0;

	*npng = 0;
	zero[0] = '\0';
	memset(&p, 0, sizeof(p));
	p.t = t;
	p.dir = dir;
	p.baseline = baseline;
	p.metrics.s = p.ms;
	p.variants.s = p.vs;
	p.sizes = calloc(t->n + 1, sizeof(double));
	p.vals = calloc(t->n + 1, sizeof(double));
	p.charts = calloc(MAXCHARTS, sizeof(*p.charts));
	if (!p.sizes || !p.vals || !p.charts) {
		rc = -ENOMEM;
		goto out;
	}
	if (!gnuplot) {
		snprintf(err, errlen,
			 "gnuplot is not installed (Debian: apt-get install gnuplot-nox); the CSV "
			 "is unchanged");
		rc = RUMA_EUNSUPP;
		goto out;
	}
	if ((rc = collect(&p, metric, err, errlen)) || (rc = make_dirs(dir, err, errlen)))
		goto out;
	p.has = calloc(p.metrics.n * p.variants.n, 1);
	if (!p.has) {
		rc = -ENOMEM;
		goto out;
	}
	have_cmp = ruma_exp_compare(t, baseline, NULL, 2000, 1, &l, cerr, sizeof(cerr)) == 0;
	snprintf(scriptp, sizeof(scriptp), "%s/plot.gp", dir);
	p.gp = fopen(scriptp, "w");
	if (!p.gp) {
		rc = -errno;
		snprintf(err, errlen, "cannot write %s: %s", scriptp, strerror(errno));
		goto out;
	}
	script_head(p.gp, p.variants.n);
	write_charts(&p, have_cmp ? &l : NULL, zero, zlen);
	fprintf(p.gp, "set output\n");
	rc = fclose(p.gp) ? -EIO : 0;
	p.gp = NULL;
	if (rc) {
		snprintf(err, errlen, "cannot write %s", scriptp);
		goto out;
	}
	if (p.ncharts && (rc = run_gnuplot(gnuplot, dir, err, errlen)))
		goto out;
	for (size_t i = 0; i < p.ncharts; i++)
		*npng += chart_ok(dir, p.charts[i]);
	if (*npng < p.ncharts) {
		snprintf(err, errlen, "gnuplot wrote %zu of %zu charts", *npng, p.ncharts);
		rc = -EIO;
	}
out:
	if (p.gp)
		fclose(p.gp);
	if (have_cmp)
		ruma_exp_cmp_free(&l);
	free(p.has);
	free(p.charts);
	free(p.sizes);
	free(p.vals);
	return rc;
}
