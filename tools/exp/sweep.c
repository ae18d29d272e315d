/*
 * sweep.c — run a grid and write the tidy CSV: one row per metric of every
 * measurement, every parameter a column:
 *
 *   system,variant,<vars...>,<sets...>,size_param,size,rep,warmup,seed,
 *   metric,unit,value,status,note
 *
 * A failed measurement is one row with empty metric/unit/value, its status
 * (exit=N, signal=N, timeout, no-output) and the tail of its stderr as note.
 *
 * Invariants: rows are flushed after every run, so an interrupt loses at most
 * the run in progress.  A measurement is identified by its parameter columns
 * (variant, vars, sets, size) plus rep and warmup; --resume keeps the rows of
 * all measurements in the file except a last one that may have been cut off
 * mid-write (fewer rows than the other measurements of its variant and size,
 * or none to compare with), then runs only the measurements still missing.  The output is
 * never overwritten silently: an existing file needs --resume or force.
 *
 * Syscalls: through child.c (fork/exec per run); isatty, unlink of the
 * private vmcache store and of the files of its peers' scratch directory
 * "<store>.peer" (nftw, rmdir), rename of the rewritten CSV.
 */
#include "tools/exp/exp.h"
#include "core/core_ext.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the header row for this grid */
static void header_fields(const ruma_exp_grid *g, const char **f, size_t *n)
{
	static const char *const head[] = { "system", "variant" };
	static const char *const tail[] = { "size_param", "size", "rep",  "warmup", "seed",
					    "metric",     "unit", "value", "status", "note" };
	size_t k = 0;

	for (size_t i = 0; i < 2; i++)
		f[k++] = head[i];
	for (size_t i = 0; i < g->nvars; i++)
		f[k++] = g->vars[i].name;
	for (size_t i = 0; i < g->nsets; i++)
		f[k++] = g->sets[i].key;
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(tail); i++)
		f[k++] = tail[i];
	*n = k;
}

#define MAX_COLS (2 + RUMA_EXP_MAX_VARS + RUMA_EXP_MAX_SETS + 10)

/* key of a measurement: the fields up to "size", rep and warmup, joined by \x1f */
static void run_key(const ruma_exp_grid *g, const struct ruma_exp_run *r, char *buf, size_t len)
{
	char variant[RUMA_EXP_STR * 2];
	size_t off = 0;
	int w;

	ruma_exp_grid_variant_name(g, r->variant, variant, sizeof(variant));
	w = snprintf(buf, len, "%s\x1f%s", ruma_exp_system_name(g->system), variant);
	off = w > 0 ? (size_t)w : 0;
	for (size_t i = 0; i < g->nvars && off < len; i++) {
		w = snprintf(buf + off, len - off, "\x1f%s", ruma_exp_variant_value(g, r->variant, i));
		off += w > 0 ? (size_t)w : 0;
	}
	for (size_t i = 0; i < g->nsets && off < len; i++) {
		w = snprintf(buf + off, len - off, "\x1f%s", g->sets[i].value);
		off += w > 0 ? (size_t)w : 0;
	}
	if (off < len)
		snprintf(buf + off, len - off, "\x1f%s\x1f%s\x1f%ld\x1f%d", g->size_name,
			 g->sizes[r->size], r->rep, r->warmup);
}

/* the same key from a CSV row split into fields: its first n fields (all
 * parameter columns are fields 0 .. nparam-1; then size_param, size, rep,
 * warmup, so n = nparam + 4 is the measurement and nparam + 2 its cell) */
static void row_key(char **f, size_t n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? "\x1f" : "", f[i]);
		off += w > 0 ? (size_t)w : 0;
	}
}

/* key of line (copied, split) with its first n fields; returns the status field */
static const char *line_key(const char *line, size_t nparam, size_t n, char *key, size_t len)
{
	static char copy[8192];
	char *fields[MAX_COLS];

	snprintf(copy, sizeof(copy), "%s", line);
	if (ruma_exp_csv_split(copy, fields, MAX_COLS) != nparam + 10) {
		key[0] = '\0';
		return "";
	}
	row_key(fields, n, key, len);
	return fields[nparam + 8];
}

/*
 * Is the last measurement of the file (lines[from..n)) complete?  A failed
 * measurement is one row; a successful one has as many rows as the other
 * measurements of the same variant and size.  Unknown (no other) = no.
 */
static int last_complete(char **lines, size_t from, size_t n, size_t nparam)
{
	char cell[4096], prev[4096] = "";
	size_t expected = 0, run = 0;

	if (strcmp(line_key(lines[from], nparam, nparam + 2, cell, sizeof(cell)), "ok"))
		return 1;
	for (size_t i = 0; i <= from; i++) {
		char mk[4096] = "";

		if (i < from)
			line_key(lines[i], nparam, nparam + 4, mk, sizeof(mk));
		if (i == from || strcmp(mk, prev)) { /* a measurement ends before line i */
			if (run && !strncmp(prev, cell, strlen(cell)) &&
			    prev[strlen(cell)] == '\x1f')
				expected = RUMA_MAX(expected, run);
			run = 0;
			snprintf(prev, sizeof(prev), "%s", mk);
		}
		run++;
	}
	return expected > 0 && n - from >= expected;
}

struct keyset {
	char **k;
	size_t n, cap;
};

static int keyset_add(struct keyset *s, const char *k)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char **nk = realloc(s->k, cap * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		s->k = nk;
		s->cap = cap;
	}
	s->k[s->n] = strdup(k);
	if (!s->k[s->n])
		return -ENOMEM;
	s->n++;
	return 0;
}

static int keyset_has(const struct keyset *s, const char *k)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->k[i], k))
			return 1;
	return 0;
}

static void keyset_free(struct keyset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->k[i]);
	free(s->k);
}

static void header_line(const ruma_exp_grid *g, char *buf, size_t len)
{
	const char *f[MAX_COLS];
	size_t n, off = 0;

	header_fields(g, f, &n);
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? "," : "", f[i]);
		off += w > 0 ? (size_t)w : 0;
	}
}

/*
 * Read the existing CSV for --resume: check the header, collect the keys of
 * its measurements, rewrite it without the last measurement's rows.
 */
static int load_done(const ruma_exp_grid *g, const char *path, struct keyset *done, char *err,
		     size_t errlen)
{
	FILE *f = fopen(path, "r"), *o = NULL;
	char want[4096], line[8192], copy[8192], key[4096], last[4096] = "", tmp[4096];
	char **lines = NULL;
	size_t nlines = 0, cap = 0, keep, nparam = 2 + g->nvars + g->nsets;
	int rc = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	header_line(g, want, sizeof(want));
	if (!fgets(line, sizeof(line), f)) {
		rc = ferror(f) ? (errno ? -errno : -EIO) : 0; /* a read error is not empty */
		fclose(f);
		return rc; /* 0: an empty file starts afresh */
	}
	line[strcspn(line, "\r\n")] = '\0';
	if (strcmp(line, want)) {
		fclose(f);
		snprintf(err, errlen,
			 "%s was written by a different grid (header differs); resume needs the same "
			 "--var/--set names, or choose another --out",
			 path);
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), f)) {
		char *fields[MAX_COLS];
		size_t nf;

		if (!strchr(line, '\n'))
			break; /* a cut-off last line */
		line[strcspn(line, "\r\n")] = '\0';
		snprintf(copy, sizeof(copy), "%s", line);
		nf = ruma_exp_csv_split(copy, fields, MAX_COLS);
		if (nf != nparam + 10)
			continue;
		if (nlines == cap) {
			char **nl = realloc(lines, (cap = cap ? cap * 2 : 256) * sizeof(*nl));
			if (!nl) {
				rc = -ENOMEM;
				goto out;
			}
			lines = nl;
		}
		if (!(lines[nlines] = strdup(line))) {
			rc = -ENOMEM;
			goto out;
		}
		nlines++;
		row_key(fields, nparam + 4, key, sizeof(key));
		snprintf(last, sizeof(last), "%s", key);
	}
	if (ferror(f)) { /* rewriting what was read would drop the rest */
		rc = errno ? -errno : -EIO;
		goto out;
	}
	/* drop the rows of the last measurement unless it is known complete: a
	 * crash or a full disk may have cut it off */
	keep = nlines;
	while (keep > 0) {
		line_key(lines[keep - 1], nparam, nparam + 4, key, sizeof(key));
		if (strcmp(key, last))
			break;
		keep--;
	}
	if (keep < nlines && last_complete(lines, keep, nlines, nparam))
		keep = nlines;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	o = fopen(tmp, "w");
	if (!o) {
		rc = -errno;
		goto out;
	}
	fprintf(o, "%s\n", want);
	for (size_t i = 0; i < keep; i++) {
		fprintf(o, "%s\n", lines[i]);
		line_key(lines[i], nparam, nparam + 4, key, sizeof(key));
		if (!keyset_has(done, key) && (rc = keyset_add(done, key)))
			goto out;
	}
	if (fclose(o)) {
		o = NULL;
		rc = -EIO;
		goto out;
	}
	o = NULL;
	if (rename(tmp, path))
		rc = -errno;
out:
	if (o)
		fclose(o);
	for (size_t i = 0; i < nlines; i++)
		free(lines[i]);
	free(lines);
	fclose(f);
	return rc;
}

static void write_rows(ruma_csv *c, const ruma_exp_grid *g, const struct ruma_exp_run *r,
		       const struct ruma_exp_result *res)
{
	char variant[RUMA_EXP_STR * 2];
	size_t n = res->ok ? res->nm : 1;

	ruma_exp_grid_variant_name(g, r->variant, variant, sizeof(variant));
	for (size_t m = 0; m < n; m++) {
		ruma_csv_str(c, ruma_exp_system_name(g->system));
		ruma_csv_str(c, variant);
		for (size_t i = 0; i < g->nvars; i++)
			ruma_csv_str(c, ruma_exp_variant_value(g, r->variant, i));
		for (size_t i = 0; i < g->nsets; i++)
			ruma_csv_str(c, g->sets[i].value);
		ruma_csv_str(c, g->size_name);
		ruma_csv_str(c, g->sizes[r->size]);
		ruma_csv_i64(c, r->rep);
		ruma_csv_i64(c, r->warmup);
		ruma_csv_u64(c, r->seed);
		ruma_csv_str(c, res->ok ? res->m[m].name : "");
		ruma_csv_str(c, res->ok ? res->m[m].unit : "");
		if (res->ok)
			ruma_csv_dbl(c, res->m[m].value);
		else
			ruma_csv_str(c, "");
		ruma_csv_str(c, res->status);
		ruma_csv_str(c, res->note);
		ruma_csv_end(c);
	}
}

static void fmt_secs(double s, char *buf, size_t len)
{
	if (s < 0 || !isfinite(s))
		snprintf(buf, len, "?");
	else if (s >= 3600)
		snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
	else if (s >= 60)
		snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else if (s >= 10)
		snprintf(buf, len, "%.0fs", s);
	else
		snprintf(buf, len, "%.1fs", s);
}

static void progress(const ruma_exp_grid *g, const struct ruma_exp_run *r, size_t done,
		     size_t total, double elapsed, size_t measured, int tty,
		     const struct ruma_exp_result *res)
{
	char variant[RUMA_EXP_STR * 2], eta[32], took[32];
	double per = measured ? elapsed / (double)measured : NAN;

	ruma_exp_grid_variant_name(g, r->variant, variant, sizeof(variant));
	fmt_secs(per * (double)(total - done), eta, sizeof(eta));
	if (tty) {
		char bar[31];
		size_t fill = total ? done * 30 / total : 30;

		for (size_t i = 0; i < 30; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[30] = '\0';
		fprintf(stderr, "\r\033[K[%s] %zu/%zu ETA %s  %s %s=%s rep %ld%s", bar, done, total,
			eta, variant, g->size_name, g->sizes[r->size], r->rep,
			r->warmup ? " (warm-up)" : "");
		if (res && !res->ok)
			fprintf(stderr, "\n  failed: %s %s\n", res->status, res->note);
		if (done == total)
			fputc('\n', stderr);
	} else if (res) {
		fmt_secs(res->seconds, took, sizeof(took));
		fprintf(stderr, "sweep: %zu/%zu %s %s=%s rep %ld%s: %s (%s, ETA %s)%s%s\n", done,
			total, variant, g->size_name, g->sizes[r->size], r->rep,
			r->warmup ? " warm-up" : "", res->status, took, eta, res->ok ? "" : " — ",
			res->ok ? "" : res->note);
	}
	fflush(stderr);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* the scratch directory a vmcache peer filled ("<store>.peer"), if any */
static void remove_peer_dir(const char *store)
{
	char dir[300];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s.peer", store);
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		(void)nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Every run's arguments through its driver's parser, before the first run:
 * a value the driver refuses fails the sweep now, naming the variant. */
static int check_runs(const ruma_exp_grid *g, const struct ruma_exp_run *runs, size_t n,
		      const char *store, char *err, size_t errlen)
{
	char why[RUMA_EXP_ERR], variant[RUMA_EXP_STR * 2];

	for (size_t i = 0; i < n; i++) {
		if (!ruma_exp_check_run(g, &runs[i], store, why, sizeof(why)))
			continue;
		ruma_exp_grid_variant_name(g, runs[i].variant, variant, sizeof(variant));
		snprintf(err, errlen, "variant %s %s=%s would be refused, nothing ran: %s", variant,
			 g->size_name, g->sizes[runs[i].size], why);
		return RUMA_EPARSE;
	}
	return 0;
}

/* One sweep in progress: the plan, what the output already holds, the output. */
struct sweep {
	const ruma_exp_grid *g;
	const struct ruma_exp_sweep_opts *opts;
	struct keyset done;   /* the runs already in the output (--resume) */
	struct ruma_exp_run *runs;
	size_t nruns, pending, count, measured;
	char store[256];      /* the vmcache store of the children */
	int tty, fresh;       /* stderr is a terminal; the output starts empty */
	FILE *f;
	ruma_csv c;
	struct ruma_exp_result *res;
};

/* With --resume, what the output already holds; without, refuse an output
 * with contents unless --force.  0, or an error with err set. */
static int prepare_out(struct sweep *w, char *err, size_t errlen)
{
	const struct ruma_exp_sweep_opts *opts = w->opts;
	struct stat st;

	w->fresh = 1;
	if (opts->resume) {
		int rc = load_done(w->g, opts->out, &w->done, err, errlen);
		if (rc) {
			if (!err[0])
				snprintf(err, errlen, "cannot resume from %s: %s", opts->out,
					 strerror(-rc));
			return rc;
		}
		w->fresh = stat(opts->out, &st) != 0 || st.st_size == 0;
	} else if (!opts->force && stat(opts->out, &st) == 0 && st.st_size > 0) {
		snprintf(err, errlen,
			 "%s exists: pass --resume to continue that sweep or --force to overwrite it",
			 opts->out);
		return -EEXIST;
	}
	return 0;
}

/* The output opened (appended to when resumed), the header first when it starts empty. */
static int open_out(struct sweep *w, char *err, size_t errlen)
{
	w->res = malloc(sizeof(*w->res));
	w->f = fopen(w->opts->out, w->fresh ? "w" : "a");
	if (!w->res || !w->f) {
		int rc = !w->res ? -ENOMEM : -errno;
		snprintf(err, errlen, "cannot write %s: %s", w->opts->out, strerror(-rc));
		return rc;
	}
	ruma_csv_init(&w->c, w->f);
	if (w->fresh) {
		const char *h[MAX_COLS + 1];
		size_t nh;

		header_fields(w->g, h, &nh);
		h[nh] = NULL;
		ruma_csv_header(&w->c, h);
		fflush(w->f);
	}
	return 0;
}

/* The runs still to do (those not in the output), said when resuming. */
static void count_pending(struct sweep *w)
{
	char key[4096];

	for (size_t i = 0; i < w->nruns; i++) {
		run_key(w->g, &w->runs[i], key, sizeof(key));
		w->pending += !keyset_has(&w->done, key);
	}
	if (!w->opts->quiet && w->pending < w->nruns)
		fprintf(stderr, "sweep: resuming, %zu of %zu runs already in %s\n",
			w->nruns - w->pending, w->nruns, w->opts->out);
}

/* Measure every run not done yet, its rows written and flushed after it;
 * stops at an interrupt.  0 or an error with err set. */
static int run_all(struct sweep *w, size_t *failed, char *err, size_t errlen)
{
	const ruma_exp_grid *g = w->g;
	int quiet = w->opts->quiet;
	char key[4096];
	double t0 = ruma_now_sec();

	for (size_t i = 0; i < w->nruns && !ruma_exp_interrupted(); i++) {
		run_key(g, &w->runs[i], key, sizeof(key));
		if (keyset_has(&w->done, key))
			continue;
		if (!quiet && w->tty)
			progress(g, &w->runs[i], w->count, w->pending, ruma_now_sec() - t0,
				 w->measured, 1, NULL);
		int rc = ruma_exp_measure(g, &w->runs[i], w->store, w->res);
		if (rc) {
			snprintf(err, errlen, "cannot start a child: %s", strerror(-rc));
			return rc;
		}
		if (ruma_exp_interrupted())
			break;
		write_rows(&w->c, g, &w->runs[i], w->res);
		if (fflush(w->f)) {
			int e = errno;
			snprintf(err, errlen, "writing %s: %s", w->opts->out, strerror(e));
			return -e;
		}
		w->count++;
		w->measured++;
		*failed += !w->res->ok;
		if (!quiet)
			progress(g, &w->runs[i], w->count, w->pending, ruma_now_sec() - t0,
				 w->measured, w->tty, w->res);
	}
	return 0;
}

int ruma_exp_sweep(const ruma_exp_grid *g, const struct ruma_exp_sweep_opts *opts,
		   size_t *failed, char *err, size_t errlen)
{
	struct sweep w = { .g = g, .opts = opts, .tty = isatty(STDERR_FILENO) };
	const char *tmpdir = getenv("TMPDIR");
	int rc;

	*failed = 0;
	snprintf(w.store, sizeof(w.store), "%s/ruma-sweep-%ld.store", tmpdir ? tmpdir : "/tmp",
		 (long)getpid());
	if (!(rc = prepare_out(&w, err, errlen)) && !(rc = ruma_exp_plan(g, &w.runs, &w.nruns)) &&
	    !(rc = check_runs(g, w.runs, w.nruns, w.store, err, errlen)) &&
	    !(rc = open_out(&w, err, errlen))) {
		count_pending(&w);
		rc = run_all(&w, failed, err, errlen);
	}
	if (!rc) {
		if (g->system == RUMA_EXP_VMCACHE) {
			unlink(w.store);
			remove_peer_dir(w.store);
		}
		rc = ruma_exp_interrupted() ? -EINTR : 0;
		if (rc && !opts->quiet)
			fprintf(stderr,
				"%ssweep: interrupted after %zu of %zu runs; rows so far are in %s\n",
				w.tty ? "\n" : "", w.count, w.pending, opts->out);
	}
	if (w.f && fclose(w.f) && !rc)
		rc = -EIO;
	keyset_free(&w.done);
	free(w.runs);
	free(w.res);
	return rc;
}
