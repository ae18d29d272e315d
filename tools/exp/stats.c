/*
 * stats.c — compare variants of a sweep against a baseline.
 *
 * Per size: ratio = median(variant) / median(baseline) over the measured
 * repetitions, with a 95% percentile-bootstrap interval (both samples
 * resampled with replacement, `resamples` times, generator seeded), and the
 * min-max of the per-repetition ratios (variant and baseline of the same
 * round ran back to back, so these pairs share the machine's state).
 * Overall: the geometric mean of the per-size ratios; its interval comes from
 * the same bootstrap draws (geometric mean of the resampled per-size ratios).
 * Values are never summed across sizes: a sum is dominated by the sizes with
 * the largest numbers and hides a slowdown at the others.
 *
 * Verdict: the interval containing 1.0 means "no difference beyond the noise".
 * Otherwise the direction follows the unit: tx/s, ops/s and Mops are better
 * higher, seconds and retries better lower; MiB/s (bytes moved) is neither,
 * so it says higher or lower.  Fewer than 3 repetitions on either side give
 * no verdict.
 *
 * Syscalls: none.
 */
#include "bench/common/opt.h"
#include "tools/exp/exp.h"
#include "core/core_ext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ruma_exp_unit_better(const char *unit)
{
	static const char *const lower[] = { "s", "ns/op", "B/B", "bytes", "faults", "retries" };

	if (ruma_opt_enum(unit, lower, sizeof(lower) / sizeof(lower[0])) >= 0)
		return RUMA_EXP_LOWER;
	if (!strcmp(unit, "MiB/s"))
		return RUMA_EXP_NEUTRAL;
	return RUMA_EXP_HIGHER;
}

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* distinct strings in first-seen order */
struct strlist {
	const char **s;
	size_t n, cap;
};

static int strlist_add(struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->s[i], s))
			return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		const char **ns = realloc(l->s, cap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		l->s = ns;
		l->cap = cap;
	}
	l->s[l->n++] = s;
	return 0;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_inplace(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double resample_median(ruma_rng *rng, const double *v, size_t n, double *scratch)
{
	for (size_t i = 0; i < n; i++)
		scratch[i] = v[ruma_rng_below(rng, n)];
	return median_inplace(scratch, n);
}

/* percentile interval of n sorted-on-return values */
static void interval(double *v, size_t n, double *lo, double *hi)
{
	size_t a, b;

	qsort(v, n, sizeof(*v), cmp_dbl);
	a = (size_t)floor(0.025 * (double)(n - 1));
	b = (size_t)ceil(0.975 * (double)(n - 1));
	*lo = v[a];
	*hi = v[b];
}

static const char *verdict(const char *unit, double ratio, double lo, double hi, size_t na,
			   size_t nb)
{
	int better = ruma_exp_unit_better(unit);

	if (!isfinite(ratio))
		return "n/a (baseline median is 0)";
	if (na < 3 || nb < 3)
		return "too few repetitions (need 3)";
	if (lo <= 1.0 && hi >= 1.0)
		return "no difference beyond the noise";
	if (better == RUMA_EXP_NEUTRAL)
		return lo > 1.0 ? "higher" : "lower";
	if (better == RUMA_EXP_HIGHER)
		return lo > 1.0 ? "faster" : "slower";
	return lo > 1.0 ? "slower" : "faster";
}

/* values (and reps) of variant/metric/size among the measured ok rows */
static size_t collect(const ruma_exp_table *t, const char *variant, const char *metric,
		      double size, double *v, long *rep)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct ruma_exp_row *r = &t->rows[i];

		if (r->ok && !r->warmup && r->size == size && !strcmp(r->variant, variant) &&
		    !strcmp(r->metric, metric)) {
			v[n] = r->value;
			rep[n++] = r->rep;
		}
	}
	return n;
}

/* value of key k in "k=v,k2=v2"; copies into buf; 0 when found */
static int variant_get(const char *variant, const char *k, char *buf, size_t len)
{
	size_t kl = strlen(k);

	for (const char *p = variant; *p;) {
		const char *c = ruma_exp_next_comma(p);
		size_t l = c ? (size_t)(c - p) : strlen(p);

		if (l > kl && !strncmp(p, k, kl) && p[kl] == '=') {
			snprintf(buf, len, "%.*s", (int)(l - kl - 1), p + kl + 1);
			return 0;
		}
		if (!c)
			break;
		p = c + 1;
	}
	return -1;
}

/* partner of variant: baseline's k=v pairs put in; "" if a key is missing */
void ruma_exp_partner(const char *variant, const char *baseline, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (const char *p = variant; *p && off < len;) {
		const char *c = ruma_exp_next_comma(p), *eq;
		size_t l = c ? (size_t)(c - p) : strlen(p);
		char key[RUMA_EXP_STR], val[RUMA_EXP_STR];
		int w;

		eq = memchr(p, '=', l);
		if (!eq)
			return;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
		if (variant_get(baseline, key, val, sizeof(val)))
			snprintf(val, sizeof(val), "%.*s", (int)(l - (size_t)(eq - p) - 1), eq + 1);
		w = snprintf(out + off, len - off, "%s%s=%s", off ? "," : "", key, val);
		off += w > 0 ? (size_t)w : 0;
		if (!c)
			break;
		p = c + 1;
	}
}

static int list_push(ruma_exp_cmp_list *l, const struct ruma_exp_cmp *c)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct ruma_exp_cmp *nc = realloc(l->c, cap * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		l->c = nc;
		l->cap = cap;
	}
	l->c[l->n++] = *c;
	return 0;
}

static void cmp_init(struct ruma_exp_cmp *c, const char *variant, const char *base,
		     const char *metric, const char *unit, const char *size_param)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->variant, sizeof(c->variant), "%s", variant);
	snprintf(c->baseline, sizeof(c->baseline), "%s", base);
	snprintf(c->metric, sizeof(c->metric), "%s", metric);
	snprintf(c->unit, sizeof(c->unit), "%s", unit);
	snprintf(c->size_param, sizeof(c->size_param), "%s", size_param);
}

struct work {
	double *a, *b, *sa, *sb, *boot; /* values, scratch, draws [size][resample] */
	long *ra, *rb;
};

/* one variant vs its partner for one metric: per-size rows, then overall */
static int compare_pair(const ruma_exp_table *t, const char *variant, const char *base,
			const char *metric, const char *unit, const double *sizes, size_t nsizes,
			unsigned resamples, ruma_rng *rng, struct work *w, ruma_exp_cmp_list *out)
{
	size_t used = 0;
	double logsum = 0;
	struct ruma_exp_cmp c;
	const char *size_param = "";

	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->rows[i].variant, variant)) {
			size_param = t->rows[i].size_param;
			break;
		}
	for (size_t s = 0; s < nsizes; s++) {
		size_t na = collect(t, variant, metric, sizes[s], w->a, w->ra);
		size_t nb = collect(t, base, metric, sizes[s], w->b, w->rb);
		double *draw = w->boot + used * resamples;

		if (!na || !nb)
			continue;
		cmp_init(&c, variant, base, metric, unit, size_param);
		c.size = sizes[s];
		if (ruma_summarize(w->a, na, &c.v) || ruma_summarize(w->b, nb, &c.b))
			return -ENOMEM;
		c.ratio = c.b.median != 0 ? c.v.median / c.b.median : NAN;
		c.rep_min = INFINITY;
		c.rep_max = -INFINITY;
		for (size_t i = 0; i < na; i++)
			for (size_t j = 0; j < nb; j++)
				if (w->ra[i] == w->rb[j] && w->b[j] != 0) {
					c.rep_min = RUMA_MIN(c.rep_min, w->a[i] / w->b[j]);
					c.rep_max = RUMA_MAX(c.rep_max, w->a[i] / w->b[j]);
				}
		if (!isfinite(c.rep_min))
			c.rep_min = c.rep_max = NAN;
		for (unsigned k = 0; k < resamples; k++) {
			double mb = resample_median(rng, w->b, nb, w->sb);
			draw[k] = mb != 0 ? resample_median(rng, w->a, na, w->sa) / mb : c.ratio;
		}
		c.lo = c.hi = NAN;
		if (isfinite(c.ratio)) {
			double *tmp = w->sa; /* sa is large enough for resamples values */
			memcpy(tmp, draw, resamples * sizeof(*tmp));
			interval(tmp, resamples, &c.lo, &c.hi);
			logsum += log(c.ratio);
			used++;
		}
		c.verdict = verdict(unit, c.ratio, c.lo, c.hi, na, nb);
		if (list_push(out, &c))
			return -ENOMEM;
	}
	if (!used)
		return 0;
	cmp_init(&c, variant, base, metric, unit, size_param);
	c.size = NAN;
	c.overall = 1;
	c.ratio = exp(logsum / (double)used);
	for (unsigned k = 0; k < resamples; k++) {
		double ls = 0;

		for (size_t s = 0; s < used; s++)
			ls += log(w->boot[s * resamples + k]);
		w->sa[k] = exp(ls / (double)used);
	}
	interval(w->sa, resamples, &c.lo, &c.hi);
	c.rep_min = c.rep_max = NAN;
	/* the overall verdict needs at least 2 reps in every size used: reuse the
	 * per-size rows' counts */
	{
		size_t minn = SIZE_MAX;
		for (size_t i = out->n - used; i < out->n; i++)
			minn = RUMA_MIN(minn, RUMA_MIN(out->c[i].v.n, out->c[i].b.n));
		c.v.n = c.b.n = minn;
		c.verdict = verdict(unit, c.ratio, c.lo, c.hi, minn, minn);
	}
	return list_push(out, &c);
}

void ruma_exp_default_baseline(const ruma_exp_table *t, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < t->n; i++)
		if (!t->rows[i].warmup) {
			snprintf(buf, len, "%s", t->rows[i].variant);
			return;
		}
	if (t->n)
		snprintf(buf, len, "%s", t->rows[0].variant);
}

static int check_baseline(const struct strlist *variants, const char *baseline, char *err,
			  size_t len)
{
	char val[RUMA_EXP_STR];

	for (const char *p = baseline; *p;) {
		const char *c = ruma_exp_next_comma(p), *eq = strchr(p, '=');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		char key[RUMA_EXP_STR], want[RUMA_EXP_STR];
		int key_seen = 0, val_seen = 0;

		if (!eq || (c && eq > c) || eq == p)
			return fail(err, len, -EINVAL, "--baseline '%s': expected VAR=VALUE[,VAR=VALUE]",
				    baseline);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
		snprintf(want, sizeof(want), "%.*s", (int)(l - (size_t)(eq - p) - 1), eq + 1);
		for (size_t i = 0; i < variants->n; i++)
			if (!variant_get(variants->s[i], key, val, sizeof(val))) {
				key_seen = 1;
				val_seen |= !strcmp(val, want);
			}
		if (!key_seen)
			return fail(err, len, -EINVAL, "--baseline: the sweep has no variable '%s'",
				    key);
		if (!val_seen)
			return fail(err, len, -EINVAL, "--baseline: no measured rows with %s=%s", key,
				    want);
		if (!c)
			break;
		p = c + 1;
	}
	return 0;
}

int ruma_exp_check_baseline(const ruma_exp_table *t, const char *baseline, char *err,
			    size_t len)
{
	struct strlist variants = { 0 };
	int rc = 0;

	for (size_t i = 0; i < t->n && !rc; i++)
		if (t->rows[i].ok && !t->rows[i].warmup)
			rc = strlist_add(&variants, t->rows[i].variant);
	if (!rc)
		rc = check_baseline(&variants, baseline, err, len);
	free(variants.s);
	return rc;
}

/* The scratch arrays of a comparison: maxv values per side, the draws. */
static int work_alloc(struct work *w, size_t maxv, unsigned resamples)
{
	w->a = calloc(maxv, sizeof(double));
	w->b = calloc(maxv, sizeof(double));
	w->sa = calloc(RUMA_MAX(maxv, resamples), sizeof(double));
	w->sb = calloc(maxv, sizeof(double));
	w->ra = calloc(maxv, sizeof(long));
	w->rb = calloc(maxv, sizeof(long));
	return w->a && w->b && w->sa && w->sb && w->ra && w->rb ? 0 : -ENOMEM;
}

static void work_free(struct work *w)
{
	free(w->a);
	free(w->b);
	free(w->sa);
	free(w->sb);
	free(w->ra);
	free(w->rb);
	free(w->boot);
}

/* What the measured rows hold: their variants, their metrics (metric
 * alone when given), their sizes in ascending order. */
struct compare_axes {
	struct strlist variants, metrics;
	double *sizes;
	size_t nsizes;
};

static int collect_axes(const ruma_exp_table *t, const char *metric, struct compare_axes *x)
{
	int rc = 0;

	for (size_t i = 0; i < t->n && !rc; i++) {
		const struct ruma_exp_row *r = &t->rows[i];
		int seen = 0;

		if (!r->ok || r->warmup)
			continue;
		rc = strlist_add(&x->variants, r->variant);
		if (!rc && (!metric || !strcmp(metric, r->metric)))
			rc = strlist_add(&x->metrics, r->metric);
		for (size_t s = 0; s < x->nsizes; s++)
			seen |= x->sizes[s] == r->size;
		if (!seen)
			x->sizes[x->nsizes++] = r->size;
	}
	if (!rc)
		qsort(x->sizes, x->nsizes, sizeof(*x->sizes), cmp_dbl);
	return rc;
}

/* The unit of metric: that of its first successful row. */
static const char *metric_unit(const ruma_exp_table *t, const char *metric)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].ok && !strcmp(t->rows[i].metric, metric))
			return t->rows[i].unit;
	return "";
}

/* Every variant that has a baseline partner in the sweep against it, for one metric. */
static int compare_metric(const ruma_exp_table *t, const struct compare_axes *x,
			  const char *metric, const char *baseline, unsigned resamples,
			  uint64_t seed, struct work *w, ruma_exp_cmp_list *out)
{
	const char *unit = metric_unit(t, metric);
	ruma_rng rng;
	int rc = 0;

	for (size_t v = 0; v < x->variants.n && !rc; v++) {
		char partner[RUMA_EXP_STR * 2];
		int have = 0;

		ruma_exp_partner(x->variants.s[v], baseline, partner, sizeof(partner));
		if (!partner[0] || !strcmp(partner, x->variants.s[v]))
			continue;
		for (size_t k = 0; k < x->variants.n; k++)
			have |= !strcmp(x->variants.s[k], partner);
		if (!have)
			continue;
		/* one stream per (metric, variant): intervals do not depend on
		 * which other metrics were asked for */
		ruma_rng_seed(&rng, seed ^ str_hash(metric) ^ (str_hash(x->variants.s[v]) << 1));
		rc = compare_pair(t, x->variants.s[v], partner, metric, unit, x->sizes, x->nsizes,
				  resamples, &rng, w, out);
	}
	return rc;
}

/* Rows to compare, the metric asked for among them, the baseline among the variants. */
static int check_axes(const struct compare_axes *x, const char *baseline, const char *metric,
		      char *err, size_t len)
{
	if (!x->variants.n)
		return fail(err, len, -EINVAL, "no successful measured rows in the sweep");
	if (!x->metrics.n)
		return fail(err, len, -EINVAL, "no metric '%s' in the sweep", metric);
	return check_baseline(&x->variants, baseline, err, len);
}

int ruma_exp_compare(const ruma_exp_table *t, const char *baseline, const char *metric,
		     unsigned resamples, uint64_t seed, ruma_exp_cmp_list *out, char *err,
		     size_t len)
{
	struct compare_axes x = { .sizes = calloc(t->n + 1, sizeof(double)) };
	struct work w = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (resamples < 100)
		resamples = 100;
	rc = !x.sizes ? -ENOMEM : work_alloc(&w, t->n + 1, resamples);
	if (!rc && !(rc = collect_axes(t, metric, &x)) &&
	    !(rc = check_axes(&x, baseline, metric, err, len))) {
		w.boot = calloc((x.nsizes + 1) * resamples, sizeof(double));
		rc = w.boot ? 0 : -ENOMEM;
	}
	for (size_t m = 0; m < x.metrics.n && !rc; m++)
		rc = compare_metric(t, &x, x.metrics.s[m], baseline, resamples, seed, &w, out);
	if (!rc && !out->n)
		rc = fail(err, len, -EINVAL,
			  "nothing to compare: no variant differs from its baseline partner (%s)",
			  baseline);
	free(x.variants.s);
	free(x.metrics.s);
	free(x.sizes);
	work_free(&w);
	if (rc)
		ruma_exp_cmp_free(out);
	return rc;
}

void ruma_exp_cmp_free(ruma_exp_cmp_list *l)
{
	free(l->c);
	memset(l, 0, sizeof(*l));
}

static const char *better_text(const char *unit)
{
	switch (ruma_exp_unit_better(unit)) {
	case RUMA_EXP_LOWER:
		return "lower is better";
	case RUMA_EXP_NEUTRAL:
		return "bytes moved: neither direction is better";
	default:
		return "higher is better";
	}
}


/* "method=22 is rewired vector, method=24 is std::vector": the labels of the
 * variants whose raw names say little, once, before the tables */
static void print_labels(const ruma_exp_cmp_list *l, FILE *f)
{
	const char *sep = "variants: ";

	for (size_t i = 0; i < l->n; i++) {
		const char *names[2] = { l->c[i].baseline, l->c[i].variant };

		for (int k = 0; k < 2; k++) {
			char label[2 * RUMA_EXP_STR];
			bool seen = false;

			for (size_t j = 0; j < i && !seen; j++)
				seen = !strcmp(l->c[j].baseline, names[k]) ||
				       !strcmp(l->c[j].variant, names[k]);
			seen |= k == 1 && !strcmp(names[0], names[1]);
			ruma_exp_variant_label(names[k], label, sizeof(label));
			if (seen || !strcmp(label, names[k]))
				continue;
			fprintf(f, "%s%s is %s", sep, names[k], label);
			sep = ", ";
		}
	}
	if (sep[0] == ',')
		fprintf(f, "\n\n");
}

void ruma_exp_cmp_print(const ruma_exp_cmp_list *l, FILE *f)
{
	const char *cur = NULL;
	int wv = 7, wb = 8, ws = 19;

	for (size_t i = 0; i < l->n; i++) {
		wv = RUMA_MAX(wv, (int)strlen(l->c[i].variant));
		wb = RUMA_MAX(wb, (int)strlen(l->c[i].baseline));
		ws = RUMA_MAX(ws, (int)strlen(l->c[i].size_param) + 12);
	}
	print_labels(l, f);
	for (size_t i = 0; i < l->n; i++) {
		const struct ruma_exp_cmp *c = &l->c[i];
		char size[160], vr[96], br[96], ci[64], reps[64];

		if (!cur || strcmp(cur, c->metric)) {
			cur = c->metric;
			fprintf(f, "%s%s (%s, %s), ratio = variant / baseline\n", i ? "\n" : "",
				c->metric, c->unit, better_text(c->unit));
			fprintf(f, "  %-*s  %-*s  %-*s  %-30s  %-30s  %6s  %-16s  %-13s  %s\n", ws,
				"size", wv, "variant", wb, "baseline", "variant median [min-max]",
				"baseline median [min-max]", "ratio", "95% CI", "per-rep", "verdict");
		}
		if (c->overall) {
			snprintf(size, sizeof(size), "overall (geo. mean)");
			vr[0] = br[0] = '\0';
			snprintf(reps, sizeof(reps), "-");
		} else {
			char num[32];

			ruma_exp_fmt_num(c->size, num, sizeof(num));
			snprintf(size, sizeof(size), "%s=%s", c->size_param, num);
			ruma_exp_fmt_summary(&c->v, c->unit, vr, sizeof(vr));
			ruma_exp_fmt_summary(&c->b, c->unit, br, sizeof(br));
			if (isfinite(c->rep_min))
				snprintf(reps, sizeof(reps), "%.3f-%.3f", c->rep_min, c->rep_max);
			else
				snprintf(reps, sizeof(reps), "-");
		}
		if (isfinite(c->lo))
			snprintf(ci, sizeof(ci), "[%.3f, %.3f]", c->lo, c->hi);
		else
			snprintf(ci, sizeof(ci), "-");
		fprintf(f, "  %-*s  %-*s  %-*s  %-30s  %-30s  %6.3f  %-16s  %-13s  %s\n", ws, size,
			wv, c->variant, wb, c->baseline, vr, br, c->ratio, ci, reps, c->verdict);
	}
}

void ruma_exp_cmp_csv(const ruma_exp_cmp_list *l, FILE *f)
{
	static const char *const head[] = {
		"metric",      "unit",     "variant",     "baseline",  "size_param",   "size",
		"n",           "median",   "min",         "max",       "base_n",       "base_median",
		"base_min",    "base_max", "ratio",       "ci_lo",     "ci_hi",        "rep_ratio_min",
		"rep_ratio_max", "verdict", "variant_label", "baseline_label", NULL
	};
	ruma_csv c;

	ruma_csv_init(&c, f);
	ruma_csv_header(&c, head);
	for (size_t i = 0; i < l->n; i++) {
		const struct ruma_exp_cmp *x = &l->c[i];
		char num[32], label[2 * RUMA_EXP_STR];

		ruma_csv_str(&c, x->metric);
		ruma_csv_str(&c, x->unit);
		ruma_csv_str(&c, x->variant);
		ruma_csv_str(&c, x->baseline);
		ruma_csv_str(&c, x->size_param);
		if (x->overall) {
			ruma_csv_str(&c, "overall");
		} else {
			ruma_exp_fmt_num(x->size, num, sizeof(num));
			ruma_csv_str(&c, num);
		}
		if (x->overall) {
			for (int k = 0; k < 8; k++)
				ruma_csv_str(&c, "");
		} else {
			ruma_csv_u64(&c, x->v.n);
			ruma_csv_dbl(&c, x->v.median);
			ruma_csv_dbl(&c, x->v.min);
			ruma_csv_dbl(&c, x->v.max);
			ruma_csv_u64(&c, x->b.n);
			ruma_csv_dbl(&c, x->b.median);
			ruma_csv_dbl(&c, x->b.min);
			ruma_csv_dbl(&c, x->b.max);
		}
		ruma_csv_dbl(&c, x->ratio);
		ruma_csv_dbl(&c, x->lo);
		ruma_csv_dbl(&c, x->hi);
		ruma_csv_dbl(&c, x->rep_min);
		ruma_csv_dbl(&c, x->rep_max);
		ruma_csv_str(&c, x->verdict);
		ruma_exp_variant_label(x->variant, label, sizeof(label));
		ruma_csv_str(&c, label);
		ruma_exp_variant_label(x->baseline, label, sizeof(label));
		ruma_csv_str(&c, label);
		ruma_csv_end(&c);
	}
}
