/*
 * stats.c — summaries over benchmark repetitions: median, min, max, mean,
 * sample standard deviation.  The median is what ruma reports; min and max
 * show the spread on these noisy shared machines.  No syscalls.
 */
#include "core/core_ext.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_sorted(const double *v, size_t n)
{
	if (n == 0)
		return 0.0;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int ruma_summarize(const double *v, size_t n, ruma_summary *out)
{
	double *tmp, sum = 0.0, sq = 0.0;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, v, n * sizeof(*tmp));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += tmp[i];
	out->n = n;
	out->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += (tmp[i] - out->mean) * (tmp[i] - out->mean);
	out->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
	out->min = tmp[0];
	out->max = tmp[n - 1];
	out->median = median_sorted(tmp, n);
	free(tmp);
	return 0;
}

double ruma_median(const double *v, size_t n)
{
	ruma_summary s;

	if (ruma_summarize(v, n, &s))
		return NAN;
	return s.median;
}
