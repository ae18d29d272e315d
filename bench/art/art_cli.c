/*
 * art_cli.c — the command line of `ruma art` as data: the option table, the
 * parser (artbench_parse) that checks every value before anything runs, and
 * artbench_run, which refuses a run whose keys and tree cannot fit into the
 * memory the machine and the cgroup leave (it would end in an OOM kill),
 * prints the node sizes and runs the benchmark (artbench.c) with its
 * optional --result rows.  Messages keep the wording "ruma art: <what>:
 * '<argument>'" followed by the usage.
 *
 * Syscalls: none (available memory is read from /proc and /sys by the core
 * module; the result file through stdio).
 */
#include "bench/art/artbench.h"
#include "bench/common/opt.h"

#include <ruma/art.h>
#include <ruma/sysinfo.h>

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

static int parse_alloc(const char *v, void *opts)
{
	ruma_alloc_kind kind;

	if (ruma_alloc_kind_by_name(v, &kind) != 0)
		return -EINVAL;
	((artbench_opts *)opts)->cfg.alloc_name = v;
	return 0;
}

#define CFG(f) offsetof(artbench_opts, cfg.f)

static const ruma_opt art_options[] = {
	{ "--help", RUMA_OPT_FLAG, offsetof(artbench_opts, help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, offsetof(artbench_opts, help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "--alloc", RUMA_OPT_FUNC, 0, 0, 0, "unknown allocator (" RUMA_ALLOC_NAMES ")",
	  parse_alloc, 0 },
	{ "--reps", RUMA_OPT_UINT, CFG(reps), 1, 1000, "--reps must be 1..1000", NULL, 0 },
	{ "--seed", RUMA_OPT_U64, CFG(seed), 0, UINT64_MAX, NULL, NULL, 0 },
	{ "--lookups", RUMA_OPT_U64, CFG(lookups), 1, UINT64_MAX, "--lookups must be > 0", NULL,
	  0 },
	{ "--batch", RUMA_OPT_UINT, CFG(batch), 0, RUMA_ART_BATCH_MAX, "--batch must be 0..32", NULL,
	  0 },
	{ "--result", RUMA_OPT_STR, offsetof(artbench_opts, result), 0, 0, "a file name", NULL,
	  RUMA_OPT_NONEMPTY },
};

/* "ruma art: <what>: '<arg>'" into err; the usage follows. */
static int bad(artbench_opts *o, char *err, size_t len, const char *what, const char *arg)
{
	snprintf(err, len, "ruma art: %s: '%s'\n", what, arg);
	o->usage_after = true;
	return RUMA_EPARSE;
}

static int option_error(artbench_opts *o, const ruma_opt_error *e, char *err, size_t len)
{
	switch (e->status) {
	case RUMA_OPT_UNKNOWN:
		return bad(o, err, len, "unknown option", e->arg);
	case RUMA_OPT_TOOMANY:
		return bad(o, err, len, "too many arguments", e->arg);
	case RUMA_OPT_MISSING:
		return bad(o, err, len, "missing value for option", e->arg);
	case RUMA_OPT_RANGE:
		return bad(o, err, len, e->opt->help, e->value);
	default:
		if (e->opt->kind == RUMA_OPT_FUNC || e->opt->kind == RUMA_OPT_STR)
			return bad(o, err, len, e->opt->help, e->value);
		return bad(o, err, len,
			   e->rc == -ERANGE ? "number larger than 2^64 - 1" :
					      "not a non-negative integer", e->value);
	}
}

int artbench_parse(int argc, char **argv, char *const *envp, artbench_opts *o, char *err,
		   size_t errlen)
{
	const char *pos[2] = { NULL, NULL };
	ruma_opt_error e;
	int npos = 0;

	(void)envp;
	memset(o, 0, sizeof(*o));
	o->cfg = (artbench_config){ 0, 0, "libc", 1, 1, 10000000, 0 };
	err[0] = '\0';
	if (ruma_opt_parse(art_options, RUMA_ARRAY_SIZE(art_options), argc, argv, 1, o, pos, 2,
			   &npos, &e))
		return e.status == RUMA_OPT_STOPPED ? 0 : option_error(o, &e, err, errlen);
	if (npos < 2) {
		snprintf(err, errlen, "ruma art: need <n> and <mode>\n");
		o->usage_after = true;
		return RUMA_EPARSE;
	}
	if (ruma_parse_u64(pos[0], &o->cfg.n) != 0 || o->cfg.n == 0)
		return bad(o, err, errlen, "n must be a positive integer", pos[0]);
	if (o->cfg.n > (UINT64_C(1) << 32))
		return bad(o, err, errlen, "n larger than 2^32 keys", pos[0]);
	if (strlen(pos[1]) != 1 || pos[1][0] < '0' || pos[1][0] > '0' + ARTBENCH_NMODES - 1)
		return bad(o, err, errlen, "mode must be 0, 1, 2 or 3", pos[1]);
	o->cfg.mode = pos[1][0] - '0';
	return 0;
}

/* Refuse (message, false) a run whose keys and tree need more memory than
 * the machine and the cgroup leave. */
static bool fits_in_memory(const artbench_config *cfg)
{
	ruma_mem_avail m;
	uint64_t need = artbench_bytes_needed(cfg->mode, cfg->n);
	char need_s[32], have_s[32];

	if (ruma_sysinfo_mem_available(&m) != 0 || m.bytes == 0 || need <= m.bytes)
		return true;
	ruma_format_size(need, need_s, sizeof(need_s));
	ruma_format_size(m.bytes, have_s, sizeof(have_s));
	fprintf(stderr,
		"ruma art: %" PRIu64 " keys of mode %d need about %s of memory (keys and tree), "
		"but only %s is available (%s); use fewer keys\n",
		cfg->n, cfg->mode, need_s, have_s, m.limited_by);
	return false;
}

/* The parameters every --result row carries. */
static void result_params(ruma_result *res, const artbench_config *cfg)
{
	(void)ruma_result_setu(res, "n", cfg->n);
	(void)ruma_result_setu(res, "mode", (unsigned)cfg->mode);
	(void)ruma_result_set(res, "alloc", cfg->alloc_name);
	(void)ruma_result_setu(res, "seed", cfg->seed);
	(void)ruma_result_setu(res, "lookups", cfg->lookups);
	(void)ruma_result_setu(res, "batch", cfg->batch);
}

int artbench_run(const artbench_opts *o)
{
	const artbench_config *cfg = &o->cfg;
	ruma_result res;
	int rc;

	if (!fits_in_memory(cfg))
		return 2;
	rc = ruma_result_open(&res, o->result);
	if (rc) {
		fprintf(stderr, "ruma art: cannot write %s: %s\n", o->result, ruma_strerror(rc));
		return 2;
	}
	result_params(&res, cfg);
	fprintf(stderr, "ruma art: n=%" PRIu64 " mode=%d alloc=%s reps=%u seed=%" PRIu64 "%s\n", cfg->n,
		cfg->mode, cfg->alloc_name, cfg->reps, cfg->seed,
		cfg->mode == ARTBENCH_SPARSE64 ? " (TIDs are row numbers; keys from keys[tid])" : "");
	printf("Node4 Size: %d\nNode16 Size: %d\nNode48 Size: %d\nNode256 Size: %d\n",
	       RUMA_ART_NODE4_SIZE, RUMA_ART_NODE16_SIZE, RUMA_ART_NODE48_SIZE, RUMA_ART_NODE256_SIZE);
	rc = artbench_measure(cfg, &artbench_art_index, stdout, stderr, o->result ? &res : NULL);
	int wrc = ruma_result_close(&res);
	if (wrc) {
		fprintf(stderr, "ruma art: cannot write %s: %s\n", o->result, ruma_strerror(wrc));
		return 1;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ruma art: writing the results to stdout failed: %s\n",
			strerror(errno));
		return 1;
	}
	return rc == 0 ? 0 : 1;
}
