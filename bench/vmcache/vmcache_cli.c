/*
 * vmcache_cli.c — the configuration of `ruma vmcache`: vmcache's environment
 * variables (BLOCK, VIRTGB, PHYSGB, BATCH, RUNFOR, RNDREAD, THREADS, DATASIZE,
 * EXMAP, and the test-only TPCC_SCALE and TPCC_HOME) and ruma's flags (flags
 * win), parsed into ruma_vmcache_opts with the drivers' option table
 * (bench/common/opt.h).  The buffer manager's part is written straight into
 * its configuration (ruma_vmcache_opts.bm), starting from
 * ruma_bm_config_default: one set of defaults, the library's, except the
 * store's path, which the library leaves to the caller (/tmp/bm here).
 * Every value is checked here, before anything runs; a bad one gives the
 * message the command prints ("ruma vmcache: NAME=value: why") and exit
 * status 2.  The buffer manager's messages, which name its configuration
 * fields, are printed with what those fields are on this command line
 * (ruma_vmcache_say).
 *
 * No system calls; the environment comes from the caller (envp).
 */
#include "bench/common/opt.h"
#include "bench/vmcache/driver.h"

#include <ruma/core.h>

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define GIB ((double)(1ull << 30))

/* The flags as given (NULL = not given; the environment or default then). */
struct raw {
	const char *block, *virtgb, *physgb, *batch, *runfor, *threads, *datasize, *workload,
		*wait, *evict, *write, *seed, *inflight, *durable, *checkpoint, *commit_log, *result;
	bool no_reuse, no_cleaner, keep, check, force, salvage_log, txn, help;
};

#define STR(flag, field) { flag, RUMA_OPT_STR, offsetof(struct raw, field), 0, 0, NULL, NULL, 0 }
#define FLAG(flag, field, fl) { flag, RUMA_OPT_FLAG, offsetof(struct raw, field), 0, 0, NULL, NULL, fl }

static const ruma_opt options[] = {
	STR("--block", block),       STR("--virtgb", virtgb),     STR("--physgb", physgb),
	STR("--batch", batch),       STR("--runfor", runfor),     STR("--threads", threads),
	STR("--datasize", datasize), STR("--workload", workload), STR("--wait", wait),
	STR("--evict", evict),       STR("--write", write),       STR("--seed", seed),
	STR("--inflight", inflight), STR("--checkpoint", checkpoint),
	STR("--commit-log", commit_log), STR("--result", result),
	{ "--durable", RUMA_OPT_STR, offsetof(struct raw, durable), 0, 0, NULL, NULL, RUMA_OPT_BARE },
	FLAG("--no-reuse", no_reuse, 0), FLAG("--no-cleaner", no_cleaner, 0),
	FLAG("--keep", keep, 0),     FLAG("--force", force, 0),
	FLAG("--check", check, 0),   FLAG("--help", help, RUMA_OPT_STOP),
	FLAG("--salvage-log", salvage_log, 0), FLAG("--txn", txn, 0),
	FLAG("-h", help, RUMA_OPT_STOP),
};

/* Where a parse writes its message. */
struct msg {
	char *buf;
	size_t len;
};

/* The message for stderr: "ruma vmcache: ...\n"; one that does not fit
 * (a very long argument) is cut and ends in "...\n". */
static int fail(const struct msg *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(m->buf, m->len, "ruma vmcache: ");
	if (n >= 0 && (size_t)n < m->len) {
		int k = vsnprintf(m->buf + n, m->len - (size_t)n, fmt, ap);
		if (k >= 0 && (size_t)n + (size_t)k >= m->len && m->len >= 5)
			memcpy(m->buf + m->len - 5, "...\n", 5);
	}
	va_end(ap);
	return RUMA_EPARSE;
}

static int bad(const struct msg *m, const char *what, const char *val, const char *why)
{
	return fail(m, "%s=%s: %s\n", what, val ? val : "", why);
}

/* The flag's value, else the variable's (when set and not empty), else def. */
static const char *envor(char *const *envp, const char *flag_val, const char *name,
			 const char *def)
{
	if (flag_val)
		return flag_val;
	const char *e = name ? ruma_opt_getenv(envp, name) : NULL;
	return e && *e ? e : def;
}

static int parse_gb(const struct msg *m, const char *name, const char *s, double *out)
{
	if (ruma_parse_double(s, out) || !(*out > 0))
		return bad(m, name, s, "expected a positive number of GiB (fractions allowed)");
	if (*out > 1 << 20)
		return bad(m, name, s, "unreasonably large");
	return 0;
}

static int parse_count(const struct msg *m, const char *name, const char *s, uint64_t lo,
		       uint64_t hi, uint64_t *out)
{
	char why[96];
	if (ruma_parse_u64(s, out))
		return bad(m, name, s, "expected a whole number");
	if (*out < lo || *out > hi) {
		snprintf(why, sizeof(why), "must be in %" PRIu64 "..%" PRIu64, lo, hi);
		return bad(m, name, s, why);
	}
	return 0;
}

static int parse_bool_var(const struct msg *m, char *const *envp, const char *name, bool *out)
{
	const char *s = envor(envp, NULL, name, "0");
	return ruma_parse_bool(s, out) ? bad(m, name, s, "expected 0 or 1") : 0;
}

/* The flags (--durable takes its mode only as --durable=MODE; bare, it is sync). */
static int parse_flags(const struct msg *m, int argc, char **argv, struct raw *w)
{
	ruma_opt_error e;
	int r = ruma_opt_parse(options, RUMA_ARRAY_SIZE(options), argc, argv, 1, w, NULL, 0, NULL,
			       &e);
	if (!r || e.status == RUMA_OPT_STOPPED)
		return 0;
	if (e.status == RUMA_OPT_MISSING)
		return fail(m, "%s needs a value\n", e.arg);
	return fail(m, "unknown argument '%s' (see --help)\n", e.arg);
}

/* --durable[=sync|pipeline|async] / DURABLE. */
static int parse_durable(const struct msg *m, char *const *envp, const struct raw *w,
			 ruma_vmcache_opts *o)
{
	const char *d = w->durable == ruma_opt_bare ? "sync" : envor(envp, w->durable, "DURABLE", "0");
	bool b;
	if (!strcmp(d, "sync")) {
		o->bm.durability = RUMA_BM_DURABLE_SYNC;
	} else if (!strcmp(d, "pipeline")) {
		o->bm.durability = RUMA_BM_DURABLE_SYNC;
		o->commit_pipeline = RUMA_VMCACHE_COMMIT_PIPELINE;
	} else if (!strcmp(d, "async")) {
		o->bm.durability = RUMA_BM_DURABLE_ASYNC;
	} else if (!ruma_parse_bool(d, &b)) {
		o->bm.durability = b ? RUMA_BM_DURABLE_SYNC : RUMA_BM_DURABLE_OFF;
	} else {
		return bad(m, w->durable ? "--durable" : "DURABLE", d,
			   "expected sync, pipeline or async (DURABLE: 0, 1, sync, pipeline or async)");
	}
	return 0;
}

/* --checkpoint / CHECKPOINT, --commit-log, --txn, RUMA_POWER_LOSS_* (tests). */
static int parse_log_options(const struct msg *m, char *const *envp, const struct raw *w,
			     ruma_vmcache_opts *o)
{
	const char *ck = envor(envp, w->checkpoint, "CHECKPOINT", "10");
	if (ruma_parse_double(ck, &o->checkpoint_secs) || !(o->checkpoint_secs >= 0) ||
	    o->checkpoint_secs > 86400)
		return bad(m, "--checkpoint", ck, "expected seconds between checkpoints, 0 .. 86400 "
						  "(0 = none; fractions allowed)");
	if (o->checkpoint_secs > 0 && o->checkpoint_secs < 0.001)
		return bad(m, "--checkpoint", ck, "at least 0.001 s (or 0 = none)");
	o->commit_log = w->commit_log;
	if (o->commit_log && !*o->commit_log)
		return bad(m, "--commit-log", o->commit_log, "empty path");
	if (o->commit_log && strcmp(o->wl->name, "tpcc"))
		return bad(m, "--commit-log", o->commit_log, "only the tpcc workload records commits");
	o->tpcc_txn = w->txn;
	if (o->tpcc_txn && strcmp(o->wl->name, "tpcc"))
		return fail(m, "--txn: only the tpcc workload runs transactions\n");
	const char *pl = envor(envp, NULL, "RUMA_POWER_LOSS_AFTER_MS", "0");
	if (ruma_parse_u64(pl, &o->powerloss_ms) || o->powerloss_ms > 86400000ull)
		return bad(m, "RUMA_POWER_LOSS_AFTER_MS", pl, "expected milliseconds, 0 = off");
	return parse_bool_var(m, envp, "RUMA_POWER_LOSS_TORN", &o->powerloss_torn);
}

/* GiB as given, in whole pages. */
static uint64_t gib_to_bytes(double g)
{
	return (uint64_t)(g * GIB) / RUMA_BM_PAGE_SIZE * RUMA_BM_PAGE_SIZE;
}

/* A number as text, for a default of the library's that a variable may override. */
static const char *num(char *buf, size_t size, double v)
{
	snprintf(buf, size, "%g", v);
	return buf;
}

/* BLOCK, VIRTGB, PHYSGB, BATCH, RUNFOR, THREADS (defaults: the library's). */
static int parse_sizes(const struct msg *m, char *const *envp, const struct raw *w,
		       ruma_vmcache_opts *o)
{
	char d1[32], d2[32], d3[32];
	uint64_t v;
	int r;
	o->bm.path = envor(envp, w->block, "BLOCK", RUMA_VMCACHE_DEFAULT_BLOCK);
	if (!*o->bm.path)
		return bad(m, "BLOCK", o->bm.path, "empty path");
	if ((r = parse_gb(m, "VIRTGB", envor(envp, w->virtgb, "VIRTGB",
					     num(d1, sizeof(d1), (double)o->bm.virt_bytes / GIB)),
			  &o->virtgb)) ||
	    (r = parse_gb(m, "PHYSGB", envor(envp, w->physgb, "PHYSGB",
					     num(d2, sizeof(d2), (double)o->bm.phys_bytes / GIB)),
			  &o->physgb)))
		return r;
	if (o->physgb > o->virtgb)
		return fail(m, "PHYSGB=%g exceeds VIRTGB=%g; the buffer pool must fit in the "
			       "virtual reservation\n", o->physgb, o->virtgb);
	o->bm.virt_bytes = gib_to_bytes(o->virtgb);
	o->bm.phys_bytes = gib_to_bytes(o->physgb);
	if (!o->bm.phys_bytes) /* (then VIRTGB, the larger, may be too) */
		return fail(m, "%s=%g is less than one 4 KiB page\n",
			    o->bm.virt_bytes ? "PHYSGB" : "VIRTGB",
			    o->bm.virt_bytes ? o->physgb : o->virtgb);
	if ((r = parse_count(m, "BATCH", envor(envp, w->batch, "BATCH", num(d3, sizeof(d3), o->bm.batch)),
			     1, 1024, &v)))
		return r;
	o->bm.batch = (unsigned)v;
	if ((r = parse_count(m, "RUNFOR", envor(envp, w->runfor, "RUNFOR", "30"), 0, 1000000,
			     &o->runfor)))
		return r;
	if ((r = parse_count(m, "THREADS", envor(envp, w->threads, "THREADS", "1"), 1,
			     RUMA_VMCACHE_MAX_THREADS, &v)))
		return r;
	o->threads = (unsigned)v;
	o->bm.max_threads = o->threads + 3; /* workers, main, checkpointer, spare */
	return 0;
}

/* TPCC_SCALE and TPCC_HOME (tests and experiments with the TPC-C workload). */
static int parse_tpcc(const struct msg *m, char *const *envp, ruma_vmcache_opts *o)
{
	static const char *const homes[] = { "random", "thread" };
	uint64_t v;
	int r;
	const char *home = envor(envp, NULL, "TPCC_HOME", "random");
	int h = ruma_opt_enum(home, homes, RUMA_ARRAY_SIZE(homes));
	if (h < 0)
		return bad(m, "TPCC_HOME", home, "expected random or thread");
	o->tpcc_home_thread = h == 1;
	if ((r = parse_count(m, "TPCC_SCALE", envor(envp, NULL, "TPCC_SCALE", "1"), 1, 100, &v)))
		return r;
	o->tpcc_scale = (uint32_t)v;
	return 0;
}

/* The fields of ruma_bm_config a library message may name, as this command's options. */
static const char *const bm_fields[][2] = {
	{ "fresh", "a run without --keep" },
	{ "force", "--force" },
	{ "virt_bytes", "VIRTGB" },
	{ "phys_bytes", "PHYSGB" },
	{ "batch", "BATCH" },
	{ "max_threads", "THREADS + 3" },
	{ "durability", "--durable" },
	{ "salvage_log", "--salvage-log" },
};

/* Whether word occurs in line as a whole word (not inside another name). */
static bool has_word(const char *line, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(line, word); p; p = strstr(p + 1, word)) {
		bool start = p == line || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
		bool end = !(isalnum((unsigned char)p[n]) || p[n] == '_');
		if (start && end)
			return true;
	}
	return false;
}

void ruma_vmcache_say(void *ctx, const char *line)
{
	const char *sep = " [ruma vmcache: ";

	(void)ctx;
	fprintf(stderr, "ruma bm: %s", line);
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(bm_fields); i++) {
		if (!has_word(line, bm_fields[i][0]))
			continue;
		fprintf(stderr, "%s%s = %s", sep, bm_fields[i][0], bm_fields[i][1]);
		sep = "; ";
	}
	fputs(sep[0] == ';' ? "]\n" : "\n", stderr);
}

/* The names of every workload of the table, comma-separated, into buf. */
static const char *workload_names(char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; ruma_vmcache_workloads[i] && len < size; i++) {
		int n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
				 ruma_vmcache_workloads[i]->name);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	return buf;
}

/* The workload (--workload or RNDREAD), DATASIZE and INFLIGHT. */
static int parse_workload(const struct msg *m, char *const *envp, const struct raw *w,
			  ruma_vmcache_opts *o)
{
	uint64_t v;
	bool b;
	int r;
	const char *ds = envor(envp, w->datasize, "DATASIZE", "10");
	if ((r = parse_count(m, "DATASIZE", ds, 0, UINT64_MAX / 256, &o->datasize)))
		return r;
	const char *wname = w->workload;
	if (!wname) {
		if ((r = parse_bool_var(m, envp, "RNDREAD", &b)))
			return r;
		wname = b ? "rndread" : "tpcc";
	}
	o->wl = ruma_vmcache_find_workload(wname);
	if (!o->wl) {
		char known[128];
		return fail(m, "unknown workload '%s' (known: %s)\n", wname,
			    workload_names(known, sizeof(known)));
	}
	const char *why = o->wl->check_datasize ? o->wl->check_datasize(o->datasize) : NULL;
	if (why)
		return bad(m, "DATASIZE", ds, why);
	if ((r = parse_count(m, "INFLIGHT", envor(envp, w->inflight, "INFLIGHT", "1"), 1,
			     RUMA_BM_AIO_MAX, &v)))
		return r;
	o->inflight = (unsigned)v;
	return 0;
}

/* --wait, --evict, --write, --no-reuse, --no-cleaner, --keep, --force / FORCE, --check,
 * --salvage-log. */
static int parse_modes(const struct msg *m, char *const *envp, const struct raw *w,
		       ruma_vmcache_opts *o)
{
	bool b;
	int r;
	if (w->wait && ruma_bm_wait_parse(w->wait, &o->bm.wait))
		return bad(m, "--wait", w->wait, "expected spin, yield, futex or mutex");
	if (w->evict && ruma_bm_evict_parse(w->evict, &o->bm.evict))
		return bad(m, "--evict", w->evict, "expected madvise or process_madvise");
	if (w->write && ruma_bm_write_parse(w->write, &o->bm.write))
		return bad(m, "--write", w->write, "expected pwrite or uring");
	if (w->no_reuse)
		o->bm.reuse_pages = false;
	if (w->no_cleaner)
		o->bm.cleaner = false;
	o->bm.fresh = !w->keep;
	if ((r = parse_bool_var(m, envp, "FORCE", &b)))
		return r;
	o->bm.force = w->force || b;
	o->check = w->check;
	o->bm.salvage_log = w->salvage_log;
	o->result = w->result;
	if (o->result && !*o->result)
		return bad(m, "--result", o->result, "empty path");
	return 0;
}

int ruma_vmcache_parse(int argc, char **argv, char *const *envp, ruma_vmcache_opts *o, char *err,
		       size_t errlen)
{
	struct msg m = { err, errlen };
	struct raw w = { 0 };
	bool exmap;
	int r;

	memset(o, 0, sizeof(*o));
	ruma_bm_config_default(&o->bm);
	o->bm.message = ruma_vmcache_say; /* library fields named as this command's options */
	if (errlen)
		err[0] = '\0';
	if ((r = parse_flags(&m, argc, argv, &w)))
		return r;
	if (w.help) {
		o->help = true;
		return 0;
	}
	if ((r = parse_bool_var(&m, envp, "EXMAP", &exmap)))
		return r;
	if (exmap)
		return fail(&m, "EXMAP=1 is not supported: the exmap kernel module cannot be used "
				"here (it needs a kernel with module support and per-version fixes); "
				"ruma evicts with madvise or process_madvise (--evict) instead\n");
	if ((r = parse_sizes(&m, envp, &w, o)) || (r = parse_workload(&m, envp, &w, o)) ||
	    (r = parse_modes(&m, envp, &w, o)) || (r = parse_durable(&m, envp, &w, o)) ||
	    (r = parse_log_options(&m, envp, &w, o)) || (r = parse_tpcc(&m, envp, o)))
		return r;
	o->seed = ruma_opt_env_seed(envp);
	if (w.seed && ruma_parse_u64(w.seed, &o->seed))
		return bad(&m, "--seed", w.seed, "expected a whole number");
	return 0;
}
