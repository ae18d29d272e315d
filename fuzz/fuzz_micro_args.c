/*
 * fuzz_micro_args.c — libFuzzer harness for the argument handling of
 * `ruma micro` (bench/micro) and of the other drivers' parsers that share
 * the option table of bench/common (`ruma art`, `ruma rewire`, `ruma
 * rwbench`).
 *
 * The harness calls the parsers directly: it never runs a benchmark.  A
 * parser must return 0 or RUMA_EPARSE; on RUMA_EPARSE its message must be
 * terminated inside the buffer and be empty only when the usage text is due;
 * on 0 the parsed values must be set and in range (or help asked for).  Any
 * other outcome or a crash is a bug.
 *
 * Input byte 0, bit 0 chooses the mode:
 *   0  the rest, split at NUL bytes (at most 16 pieces), is argv[1..] of
 *      the parser that bits 1-2 choose: 0 micro_parse, 1 artbench_parse,
 *      2 ruma_rewirebench_parse, 3 ruma_rwbench_parse;
 *   1  the exported pieces directly: micro_method_find / micro_test_find of
 *      any int id, micro_method_set_params / micro_test_set_params with up
 *      to 9 finite parameter values (the CLI passes only finite ones), then
 *      micro_combo_check, micro_method_wants_huge and micro_method_huge_pages
 *      for entry counts 0 .. UINT64_MAX / 64 (micro_run passes 1 and up).  Error texts go into heap buffers of exactly the
 *      input-chosen length (ASan sees any overflow) and must be terminated.
 *      Return codes must be 0 or RUMA_EPARSE.
 * stdout/stderr carry the driver's messages; run.sh runs this harness with
 * -close_fd_mask=3.  No syscalls of its own; deterministic.
 */
#include "bench/art/artbench.h"
#include "bench/micro/micro.h"
#include "bench/rewire/rewirebench.h"
#include "bench/rewire/rwbench.h"

#include <ruma/art.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define H "fuzz_micro_args"
#define MAX_ARGS 16

/* The harness's own reports (fz_open_report). */
static FILE *report;

static void fail(const char *what)
{
	fprintf(report, "%s: %s\n", H, what);
	abort();
}

/* Check the outcome common to every parser: return code and message. */
static void check_outcome(const char *who, int rc, const char *err, size_t len, bool silent_ok)
{
	char what[96];

	snprintf(what, sizeof(what), "%s: return code %d", who, rc);
	if (rc != 0 && rc != RUMA_EPARSE)
		fail(what);
	snprintf(what, sizeof(what), "%s: error text not terminated", who);
	if (!memchr(err, '\0', len))
		fail(what);
	snprintf(what, sizeof(what), "%s: failed without a message", who);
	if (rc && !err[0] && !silent_ok)
		fail(what);
}

static void parse_micro(int argc, char **argv, char *err, size_t len)
{
	micro_opts o;
	int rc = micro_parse(argc, argv, NULL, &o, err, len);

	check_outcome("micro_parse", rc, err, len, o.usage_stdout);
	if (!rc && !o.help && (!o.m || !o.t || o.n == 0 || o.runs == 0 || o.runs > 100000))
		fail("micro_parse: accepted without a method, test or counts");
}

static void parse_art(int argc, char **argv, char *err, size_t len)
{
	artbench_opts o;
	int rc = artbench_parse(argc, argv, NULL, &o, err, len);

	check_outcome("artbench_parse", rc, err, len, false);
	if (!rc && !o.help &&
	    (o.cfg.n == 0 || o.cfg.n > (UINT64_C(1) << 32) || o.cfg.mode < 0 ||
	     o.cfg.mode >= ARTBENCH_NMODES || o.cfg.reps == 0 || o.cfg.reps > 1000 ||
	     o.cfg.lookups == 0 || o.cfg.batch > RUMA_ART_BATCH_MAX || !o.cfg.alloc_name))
		fail("artbench_parse: accepted a value out of range");
}

static void parse_rewire(int argc, char **argv, char *err, size_t len)
{
	ruma_rewirebench_opts o;
	int rc = ruma_rewirebench_parse(argc, argv, NULL, &o, err, len);

	check_outcome("ruma_rewirebench_parse", rc, err, len, false);
	if (!rc && !o.help && (o.pages == 0 || o.pages > ((uint64_t)1 << 22) || o.reps == 0 ||
			       o.reps > 10000 || o.reserve_huge > 65536))
		fail("ruma_rewirebench_parse: accepted a value out of range");
}

static void parse_rwbench(int argc, char **argv, char *err, size_t len)
{
	ruma_rwbench_opts o;
	int rc = ruma_rwbench_parse(argc, argv, NULL, &o, err, len);

	check_outcome("ruma_rwbench_parse", rc, err, len, o.usage_after);
	if (!rc && !o.help &&
	    (!o.which || o.reps == 0 || o.reps > 64 || o.min_log > o.max_log || o.max_log > 30 ||
	     o.n == 0 || o.nparts == 0 || o.nparts > RUMA_RWB_MAX_LIST || o.pages_per_block == 0))
		fail("ruma_rwbench_parse: accepted a value out of range");
}

static void run_main(const uint8_t *data, size_t size, unsigned which)
{
	static void (*const parsers[4])(int, char **, char *, size_t) = {
		parse_micro, parse_art, parse_rewire, parse_rwbench,
	};
	static const char *const names[4] = { "micro", "art", "rewire", "rwbench" };
	char *buf = malloc(size + 1), *argv[MAX_ARGS + 2], err[1024];
	int argc = 1;

	if (!buf)
		return;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[0] = (char *)names[which];
	for (char *p = buf; p <= buf + size && argc <= MAX_ARGS; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	memset(err, 'E', sizeof(err));
	parsers[which](argc, argv, err, sizeof(err));
	free(buf);
}

/* A finite parameter value: small integers mostly, sometimes any double. */
static double next_param(fz_in *in)
{
	uint8_t kind = fz_u8(in);
	if (kind < 160)
		return (double)(int8_t)fz_u8(in);
	if (kind < 200)
		return (double)fz_u16(in) * (kind & 1 ? 1024.0 : 1.0);
	double d;
	uint8_t raw[8];
	fz_bytes(in, raw, 8);
	memcpy(&d, raw, 8);
	return isfinite(d) ? d : 0.5;
}

static char *why_buf(fz_in *in, size_t *len)
{
	*len = 1u + fz_u8(in) % 160;
	char *w = malloc(*len);
	if (!w)
		abort();
	memset(w, 'W', *len);
	w[*len - 1] = '\0';
	return w;
}

static void check_text(const char *w, size_t len, const char *what)
{
	if (!memchr(w, '\0', len))
		fail(what);
}

static void run_api(const uint8_t *data, size_t size)
{
	fz_in in = { data, size };
	double mv[9], tv[9];
	micro_params p;
	size_t wl;

	memset(&p, 0, sizeof(p));
	int mid = (int)(int16_t)fz_u16(&in), tid = (int)(int16_t)fz_u16(&in);
	if (fz_u8(&in) & 1) { /* mostly ids that exist */
		mid = (int)((unsigned)mid % 48);
		tid = (int)((unsigned)tid % 26);
	}
	unsigned mk = fz_u8(&in) % 10, tk = fz_u8(&in) % 4;
	for (unsigned i = 0; i < mk; i++)
		mv[i] = next_param(&in);
	for (unsigned i = 0; i < tk; i++)
		tv[i] = next_param(&in);
	uint64_t n;
	fz_bytes(&in, (uint8_t *)&n, sizeof(n));

	const micro_method *m = micro_method_find(mid);
	const micro_test *t = micro_test_find(tid);
	if (m && m->id != mid)
		fail("micro_method_find returned another id");
	if (t && t->id != tid)
		fail("micro_test_find returned another id");
	if (!m || !t)
		return;
	char *why = why_buf(&in, &wl);
	int rc = micro_method_set_params(m, mv, mk, &p, why, wl);
	if (rc != 0 && rc != RUMA_EPARSE)
		fail("micro_method_set_params: return code");
	check_text(why, wl, "micro_method_set_params: error text not terminated");
	free(why);
	if (rc)
		return;
	why = why_buf(&in, &wl);
	rc = micro_test_set_params(t, tv, tk, &p, why, wl);
	if (rc != 0 && rc != RUMA_EPARSE)
		fail("micro_test_set_params: return code");
	check_text(why, wl, "micro_test_set_params: error text not terminated");
	free(why);
	if (rc)
		return;
	why = why_buf(&in, &wl);
	const char *c = micro_combo_check(m, t, &p, why, wl);
	if (c)
		check_text(why, wl, "micro_combo_check: text not terminated");
	free(why);
	/* micro_run passes 1 .. UINT64_MAX / 64; 0 is tried too (it divided by
	 * zero for methods 14, 19, 44 before 167fe84) */
	n %= UINT64_MAX / 64 + 1;
	if (micro_method_wants_huge(m, &p))
		(void)micro_method_huge_pages(m, &p, (size_t)n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	report = fz_open_report();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		run_api(data + 1, size - 1);
	else
		run_main(data + 1, size - 1, (data[0] >> 1) & 3);
	return 0;
}
