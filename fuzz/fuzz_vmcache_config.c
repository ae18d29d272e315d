/*
 * fuzz_vmcache_config.c — libFuzzer harness for the configuration of
 * `ruma vmcache`: environment variables and flags (ruma_vmcache_parse,
 * bench/vmcache/vmcache_cli.c), the workload table and DATASIZE checks
 * (bench/vmcache), and the buffer manager's option names (bm.h).
 *
 * The harness calls ruma_vmcache_parse (it never runs anything) with the
 * arguments and an environment made from the input: it must return 0 or
 * RUMA_EPARSE with a message "ruma vmcache: ...\n"; a configuration it
 * accepts must be one the driver can run as given (a workload, PHYSGB <=
 * VIRTGB, THREADS, BATCH, INFLIGHT and TPCC_SCALE in range, DATASIZE
 * accepted by the workload, the buffer manager's configuration in opts.bm
 * matching).
 *
 * Input: byte 0 is a mask of the variables BLOCK VIRTGB PHYSGB BATCH RUNFOR
 * RNDREAD THREADS DATASIZE (bit 0..7), byte 1 bit 0 adds EXMAP, bits 2 and 3
 * the test knobs TPCC_SCALE and TPCC_HOME (parsed with the rest); the rest,
 * split at NUL bytes, gives first the values of the selected variables (in
 * that order), then up to 16 arguments.  The environment holds only the
 * selected variables, so each run is independent of the process's.
 *
 * Also checked on the same strings: ruma_vmcache_find_workload returns NULL
 * or the workload of that name; ruma_bm_{wait,evict,write}_parse give 0 or
 * RUMA_EPARSE and, on success, name() of the result parses to the same
 * value; and for a DATASIZE the command line lets through (0 .. 2^64/256)
 * that a workload accepts, its space_estimate is at least DATASIZE and not
 * smaller than the estimate for half of it (no 64-bit wrap, which would
 * let the space check before a run pass for a data set that cannot fit).
 * stdout/stderr carry the command's messages; run.sh uses -close_fd_mask=3.
 */
#include "bench/vmcache/driver.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define H "fuzz_vmcache_config"
#define MAX_ARGS 16

/* The harness's own reports (fz_open_report). */
static FILE *report;

static const char *const vars[] = { "BLOCK",  "VIRTGB",  "PHYSGB",   "BATCH",
				    "RUNFOR", "RNDREAD", "THREADS", "DATASIZE" };

static void fail(const char *what, const char *s)
{
	fprintf(report, "%s: %s ('%s')\n", H, what, s ? s : "");
	abort();
}

static void check_names(const char *s)
{
	ruma_bm_wait w;
	ruma_bm_evict e;
	ruma_bm_write wr;
	int r;

	if ((r = ruma_bm_wait_parse(s, &w)) == 0) {
		ruma_bm_wait w2;
		if (ruma_bm_wait_parse(ruma_bm_wait_name(w), &w2) != 0 || w2 != w)
			fail("wait name does not parse back", s);
	} else if (r != RUMA_EPARSE) {
		fail("ruma_bm_wait_parse: return code", s);
	}
	if ((r = ruma_bm_evict_parse(s, &e)) == 0) {
		ruma_bm_evict e2;
		if (ruma_bm_evict_parse(ruma_bm_evict_name(e), &e2) != 0 || e2 != e)
			fail("evict name does not parse back", s);
	} else if (r != RUMA_EPARSE) {
		fail("ruma_bm_evict_parse: return code", s);
	}
	if ((r = ruma_bm_write_parse(s, &wr)) == 0) {
		ruma_bm_write wr2;
		if (ruma_bm_write_parse(ruma_bm_write_name(wr), &wr2) != 0 || wr2 != wr)
			fail("write name does not parse back", s);
	} else if (r != RUMA_EPARSE) {
		fail("ruma_bm_write_parse: return code", s);
	}
	const ruma_vmcache_workload *wl = ruma_vmcache_find_workload(s);
	if (wl && strcmp(wl->name, s) != 0)
		fail("ruma_vmcache_find_workload returned another workload", s);
}

static void check_estimates(uint64_t d)
{
	d %= UINT64_MAX / 256 + 1; /* DATASIZE's range on the command line */
	for (size_t i = 0; ruma_vmcache_workloads[i]; i++) {
		const ruma_vmcache_workload *wl = ruma_vmcache_workloads[i];
		if (!wl->space_estimate || (wl->check_datasize && wl->check_datasize(d)))
			continue;
		uint64_t est = wl->space_estimate(d), half = wl->space_estimate(d / 2);
		if (est < d || est < half) {
			fprintf(report,
				"%s: workload %s: space_estimate(%" PRIu64 ") = %" PRIu64
				" wrapped (estimate for half: %" PRIu64 ")\n",
				H, wl->name, d, est, half);
			abort();
		}
	}
}

/* A configuration the parser accepted must be runnable as given. */
static void check_accepted(const ruma_vmcache_opts *o, char **argv, int argc)
{
	const char *why = NULL;
	if (!o->wl)
		why = "no workload";
	else if (!(o->physgb > 0) || o->physgb > o->virtgb || o->bm.phys_bytes > o->bm.virt_bytes)
		why = "PHYSGB not in (0, VIRTGB]";
	else if (o->threads < 1 || o->threads > RUMA_VMCACHE_MAX_THREADS)
		why = "THREADS out of range";
	else if (o->bm.batch < 1 || o->bm.batch > 1024)
		why = "BATCH out of range";
	else if (o->inflight < 1 || o->inflight > RUMA_BM_AIO_MAX)
		why = "INFLIGHT out of range";
	else if (o->wl->check_datasize && o->wl->check_datasize(o->datasize))
		why = "DATASIZE the workload refuses";
	else if (!o->bm.path || !*o->bm.path)
		why = "empty BLOCK";
	else if (o->tpcc_scale < 1 || o->tpcc_scale > 100)
		why = "TPCC_SCALE out of range";
	else if (o->bm.max_threads != o->threads + 3 || o->bm.batch < 1 || !o->bm.virt_bytes)
		why = "a buffer-manager configuration that does not match the options";
	if (!why)
		return;
	fprintf(report, "%s: accepted, but %s:", H, why);
	for (int i = 1; i < argc; i++)
		fprintf(report, " '%s'", argv[i]);
	fprintf(report, "\n");
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	report = fz_open_report();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 2], *envp[12], env[11][96];
	int argc = 1, nenv = 0;

	if (size < 2)
		return 0;
	uint8_t mask = data[0], more = data[1];
	char *buf = malloc(size - 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 2, size - 2);
	buf[size - 2] = '\0';
	char *p = buf, *end = buf + size - 2;

	for (size_t i = 0; i < 8; i++) {
		if ((mask >> i & 1) && p <= end) {
			snprintf(env[nenv], sizeof(env[nenv]), "%s=%s", vars[i], p);
			envp[nenv] = env[nenv];
			nenv++;
			check_names(p);
			p += strlen(p) + 1;
		}
	}
	if (more & 1) {
		snprintf(env[nenv], sizeof(env[nenv]), "EXMAP=%s", (more & 2) ? "1" : "0");
		envp[nenv] = env[nenv];
		nenv++;
	}
	static const char *const test_vars[] = { "TPCC_SCALE", "TPCC_HOME" };
	for (size_t i = 0; i < 2; i++) {
		if ((more >> (2 + i) & 1) && p <= end) {
			snprintf(env[nenv], sizeof(env[nenv]), "%s=%s", test_vars[i], p);
			envp[nenv] = env[nenv];
			nenv++;
			p += strlen(p) + 1;
		}
	}
	envp[nenv] = NULL;
	argv[0] = (char *)"vmcache";
	for (; p <= end && argc <= MAX_ARGS; p += strlen(p) + 1) {
		check_names(p);
		argv[argc++] = p;
	}
	argv[argc] = NULL;

	ruma_vmcache_opts o;
	char err[512];
	int rc = ruma_vmcache_parse(argc, argv, envp, &o, err, sizeof(err));
	if (rc == RUMA_EPARSE) {
		if (strncmp(err, "ruma vmcache: ", 14) || !strchr(err, '\n'))
			fail("a refusal without its message", err);
	} else if (rc != 0) {
		fprintf(report, "%s: ruma_vmcache_parse returned %d\n", H, rc);
		abort();
	} else if (!o.help) {
		check_accepted(&o, argv, argc);
	}

	uint64_t d = 0;
	if (size >= 10)
		memcpy(&d, data + size - 8, 8);
	check_estimates(d);
	free(buf);
	return 0;
}
