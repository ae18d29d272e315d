/*
 * blob_cli.c — the command line of `ruma blob` (blob.h): the options table
 * (bench/common/opt.h), the names and lists resolved after it, every value
 * checked before anything runs; a bad one gives "ruma blob: ...\n" and
 * exit status 2.  The usage text.
 *
 * No system calls; RUMA_SEED comes from the caller's envp.
 */
#include "bench/blob/blob.h"
#include "bench/common/opt.h"

#include <ruma/core.h>

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MAX_OBJECT (1ull << 30)

/* The names and lists as given; resolved after the table parsed. */
struct raw {
	ruma_blob_opts o;
	const char *system, *mode, *sizes, *ops, *durability, *cache, *put_mode, *buffers;
};

#define O(f) offsetof(struct raw, o.f)
#define S(f) offsetof(struct raw, f)

static const ruma_opt options[] = {
	{ "--system", RUMA_OPT_STR, S(system), 0, 0, "a system name", NULL, RUMA_OPT_NONEMPTY },
	{ "--mode", RUMA_OPT_STR, S(mode), 0, 0, "ops, churn or crash", NULL, RUMA_OPT_NONEMPTY },
	{ "--sizes", RUMA_OPT_STR, S(sizes), 0, 0, "a list of sizes", NULL, RUMA_OPT_NONEMPTY },
	{ "--ops", RUMA_OPT_STR, S(ops), 0, 0, "a list of operations", NULL, RUMA_OPT_NONEMPTY },
	{ "--durability", RUMA_OPT_STR, S(durability), 0, 0, "sync or none", NULL,
	  RUMA_OPT_NONEMPTY },
	{ "--cache", RUMA_OPT_STR, S(cache), 0, 0, "cold or warm", NULL, RUMA_OPT_NONEMPTY },
	{ "--put-mode", RUMA_OPT_STR, S(put_mode), 0, 0, "whole or stream", NULL,
	  RUMA_OPT_NONEMPTY },
	{ "--buffers", RUMA_OPT_STR, S(buffers), 0, 0, "huge or small", NULL, RUMA_OPT_NONEMPTY },
	{ "--objects", RUMA_OPT_U64, O(objects), 0, 1ull << 32, "0 .. 2^32 objects", NULL, 0 },
	{ "--data", RUMA_OPT_BYTES, O(data), 1, 1ull << 40, "1 byte .. 1 TiB", NULL, 0 },
	{ "--piece", RUMA_OPT_BYTES, O(piece), 1, MAX_OBJECT, "1 byte .. 1 GiB", NULL, 0 },
	{ "--threads", RUMA_OPT_UINT, O(threads), 1, RUMA_BLOB_MAX_THREADS, "1 .. 64 threads",
	  NULL, 0 },
	{ "--verify", RUMA_OPT_FLAG, O(verify), 0, 0, NULL, NULL, 0 },
	{ "--memory-limit", RUMA_OPT_BYTES, O(memory), 16ull << 20, 1ull << 40,
	  "16 MiB .. 1 TiB (K, M, G suffixes)", NULL, 0 },
	{ "--dir", RUMA_OPT_STR, O(dir), 0, 0, "a directory", NULL, RUMA_OPT_NONEMPTY },
	{ "--cgroup", RUMA_OPT_FLAG, O(cgroup), 0, 0, NULL, NULL, 0 },
	{ "--cgroup-limit", RUMA_OPT_BYTES, O(cgroup_limit), 16ull << 20, 1ull << 40,
	  "16 MiB .. 1 TiB (K, M, G suffixes)", NULL, 0 },
	{ "--churn-ops", RUMA_OPT_U64, O(churn_ops), 1, 1ull << 40, "1 .. 2^40 operations", NULL,
	  0 },
	{ "--churn-keys", RUMA_OPT_U64, O(churn_keys), 1, 1ull << 32, "1 .. 2^32 keys", NULL, 0 },
	{ "--min-size", RUMA_OPT_BYTES, O(min_size), 1, MAX_OBJECT, "1 byte .. 1 GiB", NULL, 0 },
	{ "--max-size", RUMA_OPT_BYTES, O(max_size), 1, MAX_OBJECT, "1 byte .. 1 GiB", NULL, 0 },
	{ "--probe-size", RUMA_OPT_BYTES, O(probe_size), 1, MAX_OBJECT, "1 byte .. 1 GiB", NULL,
	  0 },
	{ "--probes", RUMA_OPT_UINT, O(probes), 1, 1000, "1 .. 1000 puts", NULL, 0 },
	{ "--kills", RUMA_OPT_UINT, O(kills), 0, 100000, "0 .. 100000 rounds", NULL, 0 },
	{ "--powerloss", RUMA_OPT_UINT, O(powerloss), 0, 100000, "0 .. 100000 rounds", NULL, 0 },
	{ "--batch", RUMA_OPT_UINT, O(batch), 0, 4096, "0 .. 4096 objects", NULL, 0 },
	{ "--max-run", RUMA_OPT_U64, O(max_run_ms), 10, 3600000, "10 .. 3600000 ms", NULL, 0 },
	{ "--seed", RUMA_OPT_U64, O(seed), 0, UINT64_MAX, "a whole number", NULL, 0 },
	{ "--result", RUMA_OPT_STR, O(result), 0, 0, "a file name", NULL, RUMA_OPT_NONEMPTY },
	{ "--quiet", RUMA_OPT_FLAG, O(quiet), 0, 0, NULL, NULL, 0 },
	{ "--list", RUMA_OPT_FLAG, O(list), 0, 0, NULL, NULL, 0 },
	{ "--help", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, O(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
};

/* "ruma blob: <message>\n" into err; RUMA_EPARSE. */
#define fail(err, len, ...) ruma_opt_say("blob", err, len, __VA_ARGS__)

/* --sizes: comma-separated sizes (K, M, G suffixes), 1 byte .. 1 GiB each. */
static int parse_sizes(const char *s, ruma_blob_opts *o, char *err, size_t len)
{
	char buf[512], *save = NULL;
	if (strlen(s) >= sizeof(buf))
		return fail(err, len, "--sizes: list too long");
	snprintf(buf, sizeof(buf), "%s", s);
	o->nsizes = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (o->nsizes == RUMA_BLOB_MAX_SIZES)
			return fail(err, len, "--sizes '%s': at most %u sizes", s,
				    RUMA_BLOB_MAX_SIZES);
		if (ruma_parse_size(t, &v) || v == 0 || v > MAX_OBJECT)
			return fail(err, len, "--sizes '%s': '%s' is no size of 1 byte .. 1 GiB "
				    "(K, M, G suffixes)", s, t);
		o->sizes[o->nsizes++] = v;
	}
	return o->nsizes ? 0 : fail(err, len, "--sizes '%s': no size", s);
}

/* --ops: comma-separated operations into a bit set. */
static int parse_ops(const char *s, ruma_blob_opts *o, char *err, size_t len)
{
	static const char *const names[] = { "put", "get", "overwrite", "delete" };
	char buf[256], *save = NULL;
	if (strlen(s) >= sizeof(buf))
		return fail(err, len, "--ops: list too long");
	snprintf(buf, sizeof(buf), "%s", s);
	o->ops = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int i = ruma_opt_enum(t, names, RUMA_BLOB_NOPS);
		if (i < 0)
			return fail(err, len, "--ops '%s': '%s' is no operation (put, get, "
				    "overwrite, delete)", s, t);
		o->ops |= 1u << i;
	}
	return o->ops ? 0 : fail(err, len, "--ops '%s': no operation", s);
}

/* A name that must be one of two words: *flag = (s == yes); the default when absent. */
static int two_words(const char *opt, const char *s, const char *yes, const char *no,
		     bool *flag, char *err, size_t len)
{
	if (!s)
		return 0;
	if (strcmp(s, yes) && strcmp(s, no))
		return fail(err, len, "%s '%s': expected %s or %s", opt, s, yes, no);
	*flag = !strcmp(s, yes);
	return 0;
}

static int resolve(struct raw *w, char *err, size_t len)
{
	static const char *const modes[] = { "ops", "churn", "crash" };
	ruma_blob_opts *o = &w->o;
	char names[256];
	int rc;
	o->sys = ruma_blob_find_system(w->system ? w->system : "ruma");
	if (!o->sys)
		return fail(err, len, "--system '%s': unknown (built: %s)", w->system,
			    ruma_blob_system_names(names, sizeof(names)));
	int m = w->mode ? ruma_opt_enum(w->mode, modes, 3) : 0;
	if (m < 0)
		return fail(err, len, "--mode '%s': expected ops, churn or crash", w->mode);
	o->mode = (ruma_blob_mode)m;
	if ((rc = parse_sizes(w->sizes ? w->sizes : "100K,1M,10M", o, err, len)) ||
	    (rc = parse_ops(w->ops ? w->ops : "put,get,overwrite,delete", o, err, len)) ||
	    (rc = two_words("--durability", w->durability, "sync", "none", &o->sync, err, len)) ||
	    (rc = two_words("--cache", w->cache, "cold", "warm", &o->cold, err, len)) ||
	    (rc = two_words("--put-mode", w->put_mode, "stream", "whole", &o->stream, err, len)) ||
	    (rc = two_words("--buffers", w->buffers, "huge", "small", &o->huge_buffers, err, len)))
		return rc;
	if (o->stream && !o->sys->put_stream)
		return fail(err, len, "--put-mode stream: %s has no streaming interface", o->sys->name);
	if (o->min_size > o->max_size)
		return fail(err, len, "--min-size %" PRIu64 " is above --max-size %" PRIu64,
			    o->min_size, o->max_size);
	if (o->batch && !o->sys->batch)
		return fail(err, len, "--batch: %s has no transaction over several objects",
			    o->sys->name);
	if (o->mode == RUMA_BLOB_CRASH && !o->sys->check)
		return fail(err, len, "--mode crash: %s cannot be crash-tested (no store check, "
			    "no simulated power loss of its files)", o->sys->name);
	return 0;
}

int ruma_blob_parse(int argc, char **argv, char *const *envp, ruma_blob_opts *o, char *err,
		    size_t errlen)
{
	struct raw w = { .o = {
		.data = 256ull << 20, .threads = 1, .sync = true, .cold = true, .huge_buffers = true,
		.memory = 1ull << 30, .piece = 64u << 10, .dir = "/tmp/ruma-blob", .churn_ops = 10000,
		.churn_keys = 256, .min_size = 100, .max_size = 10ull << 20,
		.probe_size = 10ull << 20, .probes = 5, .kills = 100, .powerloss = 50,
		.max_run_ms = 1000, .seed = ruma_opt_env_seed(envp),
	} };
	bool help;
	memset(o, 0, sizeof(*o));
	int rc = ruma_opt_parse_driver("blob", options, RUMA_ARRAY_SIZE(options), argc, argv, &w,
				       &help, err, errlen);
	if (rc || help) {
		o->help = help;
		return rc;
	}
	if ((rc = resolve(&w, err, errlen)))
		return rc;
	*o = w.o;
	return 0;
}

void ruma_blob_usage(FILE *f)
{
	char names[256];
	fprintf(f,
		"usage: ruma blob [options]\n"
		"\n"
		"Large values (BLOBs) in ruma's store against one file per object\n"
		"(docs/bench/blob.md).\n"
		"Options:\n"
		"  --system S         built: %s  [ruma]\n"
		"  --mode M           ops: put, get, overwrite, delete per size;\n"
		"                     churn: random overwrites and deletes, then a\n"
		"                     large put against a fresh store;\n"
		"                     crash: kill -9 and power-loss rounds     [ops]\n"
		"  --sizes L          object sizes, comma-separated            [100K,1M,10M]\n"
		"  --ops L            of put,get,overwrite,delete (in that order) [all]\n"
		"  --objects N        objects per size (0: --data / size)      [0]\n"
		"  --data B           payload per phase when --objects is 0    [256M]\n"
		"  --threads N        threads (1..64), objects split among them [1]\n"
		"  --durability M     sync: every commit durable when it returns;\n"
		"                     none: no commit waits for the disk       [sync]\n"
		"  --cache C          cold: reads after the store is settled and\n"
		"                     evicted (ruma: reopened; files: page cache\n"
		"                     dropped); warm: after a read pass        [cold]\n"
		"  --put-mode P       whole or stream (ruma's streaming interface) [whole]\n"
		"  --piece B          bytes a streaming append hands over      [64K]\n"
		"  --buffers B        the memory every system puts from and reads\n"
		"                     into: huge (ruma_db_buffer_alloc: 2 MiB\n"
		"                     aligned, huge pages) or small (4 KiB pages) [huge]\n"
		"  --verify           compare every byte read (else the header)\n"
		"  --memory-limit B   the store's buffer pool                  [1G]\n"
		"  --cgroup           run inside a child memory cgroup (as ruma kv)\n"
		"  --cgroup-limit B   --cgroup with this limit\n"
		"  --dir D            stores go in D/kv-blob-<system>, emptied before\n"
		"                     and removed after the run               [/tmp/ruma-blob]\n"
		"churn:\n"
		"  --churn-ops N      overwrites and deletes                   [10000]\n"
		"  --churn-keys N     the key space they fall on               [256]\n"
		"  --min-size B, --max-size B   log-uniform sizes              [100, 10M]\n"
		"  --probe-size B     the put timed after the churn            [10M]\n"
		"  --probes N         how many (median)                        [5]\n"
		"crash (ids and sizes from --churn-keys, --min-size, --max-size):\n"
		"  --kills N          rounds ended by SIGKILL                  [100]\n"
		"  --powerloss N      rounds ended by a simulated power loss   [50]\n"
		"  --max-run MS       a round ends within this many ms         [1000]\n"
		"  --batch N          also transactions of up to N small puts and\n"
		"                     deletes (one in 8 operations)            [0: none]\n"
		"  --seed N           random seed                  [$RUMA_SEED or the clock]\n"
		"  --result F         every figure as rows metric,unit,value,params\n"
		"  --quiet            no CSV on stdout\n"
		"  --list             the systems, then exit\n"
		"  --help\n"
		"Output: CSV on stdout, one row per phase (docs/bench/blob.md names the\n"
		"columns); the configuration and summaries on stderr.\n"
		"Exit: 0 ok, 1 failure (an error of the store, an object read back wrong,\n"
		"a crash round that lost or invented data), 2 bad option or a store that\n"
		"cannot be opened.\n", ruma_blob_system_names(names, sizeof(names)));
}
