/*
 * label.c — the words a reader sees instead of the grid's parameter values:
 * variant labels ("rewired vector" for method=22, "huge-page allocator" for
 * alloc=huge), axis labels with meaning and unit ("buffer pool (PHYSGB),
 * GiB"), and measured values in a fixed, short format with a unit suffix
 * ("38.9k", "12.3 ms").  Used by compare's CSV, plot's legends and titles,
 * and the demo's tables; the raw "key=value" names stay what --baseline and
 * the sweep CSV use.
 *
 * Invariants: a value no table knows is shown as it is ("key=value"), so a
 * label is never empty and never wrong.  Syscalls: none.
 */
#include "bench/micro/micro.h"
#include "tools/exp/exp.h"
#include "core/core_ext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* key=value -> label, for values whose raw form says little */
static const char *const value_labels[][2] = {
	{ "method=22", "rewired vector" },
	{ "method=24", "std::vector" },
	{ "alloc=libc", "libc malloc" },
	{ "alloc=huge", "huge-page allocator" },
	{ "alloc=huge-thp", "huge-page allocator (THP)" },
	{ "alloc=huge-4k", "huge-page allocator (4 KiB pages)" },
	{ "alloc=pool", "pool allocator" },
	{ "alloc=mempool", "memory pool" },
	{ "wait=spin", "spin waiting" },
	{ "wait=yield", "yield waiting" },
	{ "wait=futex", "futex waiting" },
	{ "wait=mutex", "mutex waiting" },
};

/* one "key=value" pair (len bytes of pair) as a label, appended to buf */
static void pair_label(const char *pair, size_t plen, char *buf, size_t len)
{
	size_t used = strlen(buf);
	int id;
	char tail;

	for (size_t i = 0; i < RUMA_ARRAY_SIZE(value_labels); i++)
		if (strlen(value_labels[i][0]) == plen && !strncmp(pair, value_labels[i][0], plen)) {
			snprintf(buf + used, len - used, "%s", value_labels[i][1]);
			return;
		}
	if (plen > 7 && !strncmp(pair, "method=", 7) && sscanf(pair + 7, "%d%c", &id, &tail) >= 1) {
		const micro_method *m = micro_method_find(id);
		if (m) { /* parameters, if any, stay as written: "6(64)" */
			snprintf(buf + used, len - used, "%.*s: %s", (int)(plen - 7), pair + 7,
				 m->name);
			return;
		}
	}
	snprintf(buf + used, len - used, "%.*s", (int)plen, pair);
}

void ruma_exp_variant_label(const char *variant, char *buf, size_t len)
{
	const char *p = variant;

	if (!len)
		return;
	buf[0] = '\0';
	while (*p) {
		/* pairs are split at commas outside parentheses ("method=12(64,1,0)") */
		size_t l = 0;
		int depth = 0;
		for (; p[l] && (p[l] != ',' || depth); l++)
			depth += p[l] == '(' ? 1 : p[l] == ')' ? -1 : 0;
		if (buf[0])
			snprintf(buf + strlen(buf), len - strlen(buf), ", ");
		pair_label(p, l, buf, len);
		p += l + (p[l] == ',');
	}
}

/* size parameters: what they count, per system ("" = any system) */
static const char *const size_labels[][3] = {
	{ "micro", "n", "n, elements (number_of_entries)" },
	{ "art", "n", "n, keys inserted" },
	{ "vmcache", "physgb", "buffer pool (PHYSGB), GiB" },
	{ "vmcache", "virtgb", "virtual memory (VIRTGB), GiB" },
	{ "vmcache", "datasize", "data size (DATASIZE: tuples, or TPC-C warehouses)" },
	{ "vmcache", "threads", "worker threads" },
	{ "rewire", "pages", "pages rewired" },
	{ "", "n", "n, elements" },
	{ "", "log", "log2 of the number of elements" },
	{ "", "partitions", "partitions" },
};

void ruma_exp_size_label(const char *system, const char *size_param, char *buf, size_t len)
{
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(size_labels); i++)
		if ((!size_labels[i][0][0] || !strcmp(size_labels[i][0], system)) &&
		    !strcmp(size_labels[i][1], size_param)) {
			snprintf(buf, len, "%s", size_labels[i][2]);
			return;
		}
	snprintf(buf, len, "%s", size_param);
}

/* metrics whose names are abbreviations */
static const char *const metric_words[][2] = {
	{ "tx", "throughput" },
	{ "rmb", "read bandwidth from the store" },
	{ "wmb", "write bandwidth to the store" },
	{ "insert", "insert throughput" },
	{ "lookup", "lookup throughput" },
	{ "erase", "erase throughput" },
	{ "total", "total of all phases" },
	{ "vector-insert", "pushing the elements" },
	{ "shm-src", "creating the shared-memory pool" },
	{ "mmap-src", "mapping the pool" },
};

/* units: what one of them is */
static const char *const unit_words[][2] = {
	{ "tx/s", "transactions per second" },
	{ "Mops", "million operations per second" },
	{ "s", "seconds" },
	{ "MiB/s", "MiB per second" },
	{ "ns/op", "nanoseconds per operation" },
	{ "B/B", "bytes per byte of data" },
	{ "bytes", "bytes" },
	{ "faults", "page faults" },
	{ "ops/s", "operations per second" },
	{ "retries", "transactions retried after a conflict" },
};

void ruma_exp_metric_label(const char *metric, const char *unit, char *buf, size_t len)
{
	const char *what = metric, *per = unit;

	for (size_t i = 0; i < RUMA_ARRAY_SIZE(metric_words); i++)
		if (!strcmp(metric_words[i][0], metric))
			what = metric_words[i][1];
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(unit_words); i++)
		if (!strcmp(unit_words[i][0], unit))
			per = unit_words[i][1];
	if (what == metric)
		snprintf(buf, len, "%s, %s (%s)", metric, per, unit);
	else
		snprintf(buf, len, "%s (%s), %s (%s)", what, metric, per, unit);
}

/* v with a k/M/G suffix and three significant digits: "38.9k", "1.23M", "512" */
static void fmt_suffixed(double v, char *buf, size_t len)
{
	static const char *const suffix[] = { "", "k", "M", "G", "T" };
	double a = fabs(v);
	size_t k = 0;

	if (a < 0.995) { /* small values: three significant digits, no suffix */
		snprintf(buf, len, "%.3g", v);
		return;
	}
	while (a >= 999.5 && k + 1 < RUMA_ARRAY_SIZE(suffix)) {
		a /= 1000;
		v /= 1000;
		k++;
	}
	snprintf(buf, len, a >= 99.95 ? "%.0f%s" : a >= 9.995 ? "%.1f%s" : "%.2f%s", v, suffix[k]);
}

void ruma_exp_fmt_value(double v, const char *unit, char *buf, size_t len)
{
	if (!isfinite(v) || v == 0) {
		snprintf(buf, len, isfinite(v) ? "0" : "-");
		return;
	}
	if (!strcmp(unit, "s")) { /* seconds: s, ms or us, three significant digits */
		double a = fabs(v);
		const char *u = a >= 0.9995 ? "s" : a >= 0.0009995 ? "ms" : "us";
		double x = a >= 0.9995 ? v : a >= 0.0009995 ? v * 1e3 : v * 1e6;
		double ax = fabs(x);
		snprintf(buf, len, ax >= 99.95 ? "%.0f %s" : ax >= 9.995 ? "%.1f %s" : "%.2f %s", x,
			 u);
		return;
	}
	fmt_suffixed(v, buf, len);
}

void ruma_exp_fmt_summary(const ruma_summary *s, const char *unit, char *buf, size_t len)
{
	char med[24], lo[24], hi[24];

	ruma_exp_fmt_value(s->median, unit, med, sizeof(med));
	ruma_exp_fmt_value(s->min, unit, lo, sizeof(lo));
	ruma_exp_fmt_value(s->max, unit, hi, sizeof(hi));
	snprintf(buf, len, "%s [%s - %s] n=%zu", med, lo, hi, s->n);
}
