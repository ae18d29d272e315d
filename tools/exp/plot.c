/*
 * plot.c — charts of a sweep with gnuplot (pngcairo terminal):
 *
 *   DIR/all/<metric>.png                   every variant, median per size with
 *                                          min-max error bars, against size
 *   DIR/vs_baseline/<metric>__<variant>.png one variant and its baseline
 *   DIR/data/<metric>__<variant>.dat       the numbers plotted (size median min max n)
 *   DIR/plot.gp                            the generated gnuplot script
 *
 * Invariants: only measured (non-warm-up), successful rows are plotted; a
 * chart is listed as written only when gnuplot exited 0 and the file exists
 * and is not empty.  The x axis is logarithmic when the sizes span 10x or more.
 *
 * Syscalls: mkdir (output folders); gnuplot runs as a child via child.c
 * (fork/exec with DIR as working directory); stat of the charts.
 */
#include "tools/exp/exp.h"

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

/* write data/<metric>__<variant>.dat; returns number of sizes written */
static size_t write_data(const ruma_exp_table *t, const char *dir, const char *metric,
			 const char *variant, const double *sizes, size_t nsizes, double *vals)
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
		lines++;
	}
	if (fclose(f))
		return 0;
	return lines;
}

static void chart_head(FILE *gp, const char *out, const char *title, const char *xlabel,
		       const char *ylabel, double xmin, double xmax)
{
	int logx = xmin > 0 && xmax / xmin >= 10;
	double pad = logx ? 1.3 : (xmax > xmin ? (xmax - xmin) * 0.05 : (xmin ? xmin * 0.1 : 1));

	fprintf(gp, "set output ");
	gp_str(gp, out);
	fprintf(gp, "\nset title ");
	gp_str(gp, title);
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

static void plot_line(FILE *gp, const char *dir, const char *metric, const char *variant,
		      int first, int style)
{
	char m[128], v[256], path[4096];

	sanitize(metric, m, sizeof(m));
	sanitize(variant, v, sizeof(v));
	snprintf(path, sizeof(path), "data/%s__%s.dat", m, v);
	(void)dir;
	fprintf(gp, "%s", first ? "plot " : ", \\\n     ");
	gp_str(gp, path);
	fprintf(gp, " using 1:2:3:4 with yerrorlines linestyle %d title ", style);
	gp_str(gp, variant);
}

static int chart_ok(const char *dir, const char *rel)
{
	char path[4096];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return 0;
	return stat(path, &st) == 0 && st.st_size > 0;
}

int ruma_exp_plot(const ruma_exp_table *t, const char *dir, const char *baseline,
		  const char *metric, size_t *npng, char *err, size_t errlen)
{
	enum { MAXN = 256 };
	const char *ms[MAXN], *vs[MAXN];
	struct names metrics = { ms, 0 }, variants = { vs, 0 };
	double *sizes = calloc(t->n + 1, sizeof(double)), *vals = calloc(t->n + 1, sizeof(double));
	char sub[4096], (*charts)[512] = calloc(MAXN * 4, 512), scriptp[4096];
	size_t nsizes = 0, ncharts = 0;
	const char *gnuplot = ruma_exp_gnuplot_path(), *xlabel = "size";
	FILE *gp = NULL;
	unsigned char *has = NULL;
	int rc = 0;

	*npng = 0;
	if (!sizes || !vals || !charts) {
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
	for (size_t i = 0; i < t->n; i++) {
		const struct ruma_exp_row *r = &t->rows[i];
		int seen = 0;

		if (!r->ok || r->warmup || (metric && strcmp(metric, r->metric)))
			continue;
		xlabel = r->size_param;
		if (names_add(&metrics, r->metric, MAXN) || names_add(&variants, r->variant, MAXN)) {
			snprintf(err, errlen, "more than %d metrics or variants", MAXN);
			rc = -E2BIG;
			goto out;
		}
		for (size_t s = 0; s < nsizes; s++)
			seen |= sizes[s] == r->size;
		if (!seen)
			sizes[nsizes++] = r->size;
	}
	if (!metrics.n) {
		snprintf(err, errlen, metric ? "no measured rows of metric '%s'" :
				      "no successful measured rows to plot%s",
			 metric ? metric : "");
		rc = -EINVAL;
		goto out;
	}
	qsort(sizes, nsizes, sizeof(*sizes), cmp_dbl);
	{
		static const char *const subs[] = { "", "/all", "/vs_baseline", "/data" };

		for (size_t i = 0; i < RUMA_ARRAY_SIZE(subs); i++) {
			snprintf(sub, sizeof(sub), "%s%s", dir, subs[i]);
			if ((rc = ruma_exp_mkdirs(sub))) {
				snprintf(err, errlen, "cannot create %s: %s", sub, strerror(-rc));
				goto out;
			}
		}
	}
	has = calloc(metrics.n * variants.n, 1);
	if (!has) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t m = 0; m < metrics.n; m++)
		for (size_t v = 0; v < variants.n; v++)
			has[m * variants.n + v] = write_data(t, dir, metrics.s[m], variants.s[v],
							     sizes, nsizes, vals) > 0;
	snprintf(scriptp, sizeof(scriptp), "%s/plot.gp", dir);
	gp = fopen(scriptp, "w");
	if (!gp) {
		rc = -errno;
		snprintf(err, errlen, "cannot write %s: %s", scriptp, strerror(errno));
		goto out;
	}
	fprintf(gp, "# generated by ruma plot: run with 'gnuplot plot.gp' in this folder\n"
		    "set terminal pngcairo size 960,600 noenhanced font 'sans,10'\n"
		    "set grid\nset key outside right top\nset bars small\nset yrange [0:*]\n"
		    "set format x '%%g'\n");
	for (int k = 1; k <= 8; k++)
		fprintf(gp, "set linestyle %d linewidth 2 pointtype %d\n", k, k + 4);
	for (size_t m = 0; m < metrics.n && ncharts < MAXN * 4; m++) {
		const char *unit = "";
		char mname[128], title[512], ylabel[160];

		for (size_t i = 0; i < t->n; i++)
			if (t->rows[i].ok && !strcmp(t->rows[i].metric, metrics.s[m])) {
				unit = t->rows[i].unit;
				break;
			}
		sanitize(metrics.s[m], mname, sizeof(mname));
		snprintf(ylabel, sizeof(ylabel), "%s (%s)", metrics.s[m], unit);
		snprintf(charts[ncharts], sizeof(charts[0]), "all/%s.png", mname);
		snprintf(title, sizeof(title), "%s: median, bars min-max over repetitions",
			 metrics.s[m]);
		chart_head(gp, charts[ncharts], title, xlabel, ylabel, sizes[0], sizes[nsizes - 1]);
		ncharts++;
		for (size_t v = 0, first = 1; v < variants.n; v++) {
			if (!has[m * variants.n + v])
				continue;
			plot_line(gp, dir, metrics.s[m], variants.s[v], (int)first, (int)(v % 8) + 1);
			first = 0;
		}
		fprintf(gp, "\n");
		for (size_t v = 0; v < variants.n && ncharts < MAXN * 4; v++) {
			char partner[RUMA_EXP_STR * 2], vname[256];
			int have = 0;

			ruma_exp_partner(variants.s[v], baseline, partner, sizeof(partner));
			if (!partner[0] || !strcmp(partner, variants.s[v]))
				continue;
			for (size_t k = 0; k < variants.n; k++)
				have |= !strcmp(variants.s[k], partner) && has[m * variants.n + k];
			if (!have || !has[m * variants.n + v])
				continue;
			sanitize(variants.s[v], vname, sizeof(vname));
			if (snprintf(charts[ncharts], sizeof(charts[0]), "vs_baseline/%s__%s.png",
				     mname, vname) >= (int)sizeof(charts[0]))
				continue;
			snprintf(title, sizeof(title), "%s: %s vs %s (median, min-max)",
				 metrics.s[m], variants.s[v], partner);
			chart_head(gp, charts[ncharts], title, xlabel, ylabel, sizes[0],
				   sizes[nsizes - 1]);
			ncharts++;
			plot_line(gp, dir, metrics.s[m], partner, 1, 1);
			plot_line(gp, dir, metrics.s[m], variants.s[v], 0, 2);
			fprintf(gp, "\n");
		}
	}
	fprintf(gp, "set output\n");
	if (fclose(gp)) {
		gp = NULL;
		rc = -EIO;
		snprintf(err, errlen, "cannot write %s", scriptp);
		goto out;
	}
	gp = NULL;
	{
		char *argv[] = { (char *)"gnuplot", (char *)"plot.gp", NULL };
		struct ruma_exp_exec x;
		char status[48];

		rc = ruma_exp_exec(gnuplot, argv, dir, NULL, 300, &x);
		if (rc) {
			snprintf(err, errlen, "cannot run %s: %s", gnuplot, strerror(-rc));
			goto out;
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
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < ncharts; i++)
		*npng += chart_ok(dir, charts[i]);
	if (*npng < ncharts) {
		snprintf(err, errlen, "gnuplot wrote %zu of %zu charts", *npng, ncharts);
		rc = -EIO;
	}
out:
	if (gp)
		fclose(gp);
	free(has);
	free(charts);
	free(sizes);
	free(vals);
	return rc;
}
