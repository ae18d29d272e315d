/*
 * result.h — results as data: the tidy CSV a benchmark driver writes with
 * `--result FILE` next to its human (and original-compatible) output, and
 * its reader, used by `ruma sweep` to turn a child's measurements into rows.
 *
 * Format (docs/experiments.md, "Result files"): a header line
 *
 *     metric,unit,value,params
 *
 * then one row per measured value: metric name, unit ("s", "Mops", "ns/page",
 * ...), the value (%.17g, finite) and the parameters of that measurement as
 * "k=v;k=v" pairs in a fixed order (fields are quoted as RFC 4180 says when
 * they contain a comma or a quote).  Keys are words; in values ';' and '%'
 * are written %3B and %25 (ruma_result_param decodes them).  A fact that is
 * text, not a number (where the huge-page allocator got its pages), is a
 * note row: unit "note", value 1, the text in the parameter "note".  A
 * tooling API, not part of libruma.
 */
#ifndef RUMA_BENCH_RESULT_H
#define RUMA_BENCH_RESULT_H

#include <stddef.h>
#include <stdio.h>

#define RUMA_RESULT_MAX_PARAMS 16
#define RUMA_RESULT_KEY 32
#define RUMA_RESULT_VALUE 96
#define RUMA_RESULT_HEADER "metric,unit,value,params"

/* A result file being written; all calls are no-ops when it is not open
 * (or r is NULL). */
typedef struct ruma_result {
	FILE *f;
	size_t nparams;
	char key[RUMA_RESULT_MAX_PARAMS][RUMA_RESULT_KEY];
	char value[RUMA_RESULT_MAX_PARAMS][RUMA_RESULT_VALUE];
} ruma_result;

/*
 * ruma_result_open — start the result file path (truncated) with its header;
 * path NULL leaves r closed (every later call does nothing).  Returns 0 or
 * -errno when the file cannot be created.
 */
int ruma_result_open(ruma_result *r, const char *path);

/*
 * ruma_result_set — set parameter key of the rows that follow (a new key is
 * appended, an existing one keeps its place and gets the new value).  Returns
 * 0, -EINVAL for a key that is no word or a value with ';' or of
 * RUMA_RESULT_VALUE bytes or more, -ENOSPC when RUMA_RESULT_MAX_PARAMS keys
 * are set.
 */
int ruma_result_set(ruma_result *r, const char *key, const char *value);
/* ruma_result_setu — ruma_result_set with an unsigned integer value. */
int ruma_result_setu(ruma_result *r, const char *key, unsigned long long value);

/* ruma_result_add — one row: metric, unit, value and the parameters set now.
 * A value that is not finite (not measured) writes no row. */
void ruma_result_add(ruma_result *r, const char *metric, const char *unit, double value);

/*
 * ruma_result_note — one note row: metric, unit "note", value 1, the
 * parameters set now and note=<text> (line breaks dropped; cut to fit a
 * row's params).  Read it back with ruma_result_param(row, "note", ...).
 */
void ruma_result_note(ruma_result *r, const char *metric, const char *text);

/*
 * ruma_result_close — finish the file.  Returns 0 when every row reached the
 * file, else -errno (-EIO when the error is not known); r is closed either way.
 */
int ruma_result_close(ruma_result *r);

/*
 * ruma_output_close — finish a results stream of a driver: flush it, and
 * close it unless it is stdout.  Any write error seen on the stream,
 * including one an earlier fflush met and stdio then forgot (glibc's fclose
 * succeeds after a failed fflush emptied the buffer), is reported on stderr
 * as "ruma <cmd>: cannot write <what>: <reason>" and returns -EIO (or
 * -errno).  Returns 0 when everything written reached the file.
 */
int ruma_output_close(FILE *f, const char *cmd, const char *what);

/* The outputs of a driver with a CSV: the CSV (a file or stdout) and the result rows. */
typedef struct ruma_outputs {
	const char *cmd, *csv_path, *result_path;
	FILE *csv;
	ruma_result res;
} ruma_outputs;

/*
 * ruma_outputs_open — open csv_path (NULL = stdout) and result_path (NULL =
 * none) for driver cmd ("rewire").  A file that cannot be created is
 * reported as "ruma <cmd>: cannot write <path>: <reason>" and returns -errno
 * with nothing left open.
 */
int ruma_outputs_open(ruma_outputs *o, const char *cmd, const char *csv_path,
		      const char *result_path);

/* ruma_outputs_result — the result writer, NULL when no result file was asked for. */
ruma_result *ruma_outputs_result(ruma_outputs *o);

/*
 * ruma_outputs_close — finish both outputs (stdout is flushed, not closed);
 * every loss is reported on stderr.  Returns 0, or a negative error when
 * something written did not reach its file.
 */
int ruma_outputs_close(ruma_outputs *o);

/* ---- reading ----------------------------------------------------------- */

typedef struct ruma_result_row {
	char metric[64];
	char unit[16];
	double value;
	char params[RUMA_RESULT_MAX_PARAMS * (RUMA_RESULT_KEY + RUMA_RESULT_VALUE)];
} ruma_result_row;

/*
 * ruma_result_read — load the result file path: *rows (malloc'ed, caller
 * frees) gets *n rows.  Returns 0, -errno when it cannot be read, RUMA_EPARSE
 * when it is not a result file (no header, a row without four fields or with
 * a value that is no number), -ENOMEM.
 */
int ruma_result_read(const char *path, ruma_result_row **rows, size_t *n);

/* ruma_result_param — value of key in row (into buf), or NULL when absent. */
const char *ruma_result_param(const ruma_result_row *row, const char *key, char *buf,
			      size_t len);

#endif
