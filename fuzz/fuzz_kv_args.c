/*
 * fuzz_kv_args.c — libFuzzer harness for the command line of `ruma kv`
 * (ruma_kv_parse, bench/kv/kv_cli.c), the names of its tables (systems,
 * workloads, distributions), its key formats and its latency histogram's
 * buckets (bench/kv).
 *
 * The input, split at NUL bytes, gives up to 24 arguments; the harness
 * calls ruma_kv_parse (nothing is run) with RUMA_SEED=1 as the only
 * environment.  It must return 0 or RUMA_EPARSE with a message
 * "ruma kv: ...\n" (an argument quoted in it may hold line breaks); a
 * configuration it accepts must be runnable as given
 * (a system and workload of the tables, every number in its range, a
 * non-empty directory, at least one record per thread for readseq and
 * readreverse).  On every argument: ruma_kv_find_system,
 * ruma_kv_find_workload and ruma_kv_dist_parse give NULL / false or the
 * entry of that very name.  The last 8 bytes of the input, as a number v:
 * both key formats of v are shorter than RUMA_KV_KEY_MAX and as long as
 * snprintf says, and v's histogram bucket is in range with v <=
 * upper(bucket) and v > upper(bucket - 1).
 * stdout/stderr are unused; run.sh uses -close_fd_mask=3 like the other CLI
 * harnesses.
 */
#include "bench/kv/hist.h"
#include "bench/kv/kv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_cli.h"
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define H "fuzz_kv_args"

static FILE *report;

static void fail(const char *what, const char *s)
{
	fprintf(report, "%s: %s ('%s')\n", H, what, s ? s : "");
	abort();
}

static void check_names(const char *s)
{
	const ruma_kv_system *sys = ruma_kv_find_system(s);
	if (sys && strcmp(sys->name, s))
		fail("ruma_kv_find_system returned another system", s);
	const ruma_kv_workload *wl = ruma_kv_find_workload(s);
	if (wl && strcmp(wl->name, s))
		fail("ruma_kv_find_workload returned another workload", s);
	ruma_kv_dist d;
	if (ruma_kv_dist_parse(s, &d) && strcmp(ruma_kv_dist_name(d), s))
		fail("ruma_kv_dist_parse: the name does not parse back", s);
}

static void check_accepted(const ruma_kv_opts *o)
{
	const char *why = NULL;
	if (!o->sys || !o->wl)
		why = "no system or workload";
	else if (o->threads < 1 || o->threads > RUMA_KV_MAX_THREADS)
		why = "threads out of range";
	else if (o->value_size < 8 || o->value_size > (1u << 20))
		why = "value size out of range";
	else if (o->memory < (16ull << 20) || o->records < 1 || o->runfor < 1 ||
		 o->load_batch < 1)
		why = "memory, records, runfor or load batch out of range";
	else if (!o->dir || !*o->dir)
		why = "empty directory";
	else if ((o->wl->pattern == RUMA_KV_READSEQ || o->wl->pattern == RUMA_KV_READREVERSE) &&
		 o->records < o->threads)
		why = "fewer records than threads for a sequential read";
	if (why)
		fail("accepted, but", why);
}

static void check_keys_and_hist(uint64_t v)
{
	char key[RUMA_KV_KEY_MAX];
	for (int k = 0; k < 2; k++) {
		size_t len = ruma_kv_key(k ? RUMA_KV_KEYS_DBBENCH : RUMA_KV_KEYS_YCSB, v, key);
		if (len >= RUMA_KV_KEY_MAX || strlen(key) != len)
			fail("a key longer than RUMA_KV_KEY_MAX or of another length", key);
	}
	unsigned b = ruma_kv_hist_bucket(v);
	if (b >= RUMA_KV_HIST_BUCKETS || ruma_kv_hist_upper(b) < v ||
	    (b && ruma_kv_hist_upper(b - 1) >= v)) {
		fprintf(report, "%s: value %" PRIu64 " in bucket %u [.., %" PRIu64 "]\n", H, v, b,
			b < RUMA_KV_HIST_BUCKETS ? ruma_kv_hist_upper(b) : 0);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	report = fz_open_report();
	return 0;
}

/* ruma_kv_parse, and check_accepted on what it accepts. */
static int parse(int argc, char **argv, char **envp, char *err, size_t len)
{
	ruma_kv_opts o;
	int rc = ruma_kv_parse(argc, argv, envp, &o, err, len);
	if (!rc && !o.help)
		check_accepted(&o);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const fz_cli cli = { H, "kv", "ruma_kv_parse", report, check_names, parse,
			     check_keys_and_hist };
	return fz_cli_run(&cli, data, size);
}
