/*
 * rwbench_cli.c — the command line of `ruma rwbench <bench>` as data (option
 * table, ruma_rwbench_parse) and ruma_rwbench_run: optionally reserve huge
 * pages for the run (and put the old value back), open the --csv and
 * --result outputs, run the bench, map results to exit codes: 0 ok
 * (variants that a machine limit ruled out are reported on stderr), 1 a
 * measurement failed or output was lost, 2 bad usage.
 *
 * Syscalls: none directly (stdio for the outputs; sysinfo writes
 * nr_hugepages).
 */
#include "bench/common/opt.h"
#include "bench/rewire/rwbench.h"

#include <ruma/partition.h>
#include "core/sysinfo_ext.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

static const char *const benches[] = { "vector", "access", "partition", "pool", "snapshot" };
static int (*const bench_fn[])(const ruma_rwbench_opts *) = {
	ruma_rwbench_vector, ruma_rwbench_access, ruma_rwbench_partition, ruma_rwbench_pool,
	ruma_rwbench_snapshot,
};

static int parse_parts(const char *s, void *opts)
{
	ruma_rwbench_opts *o = opts;
	char buf[512];
	char *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	o->nparts = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t p;
		if (ruma_parse_u64(tok, &p) || p == 0 || p > RUMA_PART_MAX_PARTITIONS ||
		    (p & (p - 1)) || o->nparts == RUMA_RWB_MAX_LIST)
			return -EINVAL;
		o->parts[o->nparts++] = (uint32_t)p;
	}
	return o->nparts ? 0 : -EINVAL;
}

#define OPT(f) offsetof(ruma_rwbench_opts, f)

static const ruma_opt rwbench_options[] = {
	{ "--help", RUMA_OPT_FLAG, OPT(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "-h", RUMA_OPT_FLAG, OPT(help), 0, 0, NULL, NULL, RUMA_OPT_STOP },
	{ "--huge", RUMA_OPT_FLAG, OPT(huge), 0, 0, NULL, NULL, 0 },
	{ "--plus-one", RUMA_OPT_FLAG, OPT(plus_one), 0, 0, NULL, NULL, 0 },
	{ "--reps", RUMA_OPT_UINT, OPT(reps), 1, 64, NULL, NULL, 0 },
	{ "--seed", RUMA_OPT_U64, OPT(seed), 0, UINT64_MAX, NULL, NULL, 0 },
	{ "--reserve-huge", RUMA_OPT_U64, OPT(reserve_huge), 0, 100000, NULL, NULL, 0 },
	{ "--only", RUMA_OPT_STR, OPT(only), 0, 0, NULL, NULL, 0 },
	{ "--min-log", RUMA_OPT_UINT, OPT(min_log), 4, 30, NULL, NULL, 0 },
	{ "--max-log", RUMA_OPT_UINT, OPT(max_log), 4, 30, NULL, NULL, 0 },
	{ "--n", RUMA_OPT_BYTES, OPT(n), 1, (uint64_t)1 << 34, NULL, NULL, 0 },
	{ "--partitions", RUMA_OPT_FUNC, 0, 0, 0, NULL, parse_parts, 0 },
	{ "--pages-per-block", RUMA_OPT_SIZET, OPT(pages_per_block), 1, 4096, NULL, NULL, 0 },
	{ "--extent-pages", RUMA_OPT_SIZET, OPT(extent_pages), 1, (uint64_t)1 << 24, NULL, NULL, 0 },
	{ "--run-pages", RUMA_OPT_SIZET, OPT(run_pages), 1, (uint64_t)1 << 20, NULL, NULL, 0 },
	{ "--csv", RUMA_OPT_STR, OPT(csv_path), 0, 0, NULL, NULL, 0 },
	{ "--result", RUMA_OPT_STR, OPT(result), 0, 0, NULL, NULL, RUMA_OPT_NONEMPTY },
};

static void defaults(ruma_rwbench_opts *o, char *const *envp)
{
	memset(o, 0, sizeof(*o));
	o->reps = 5;
	o->min_log = 20;
	o->max_log = 24;
	o->pages_per_block = 1;
	o->extent_pages = 1024;
	o->run_pages = 64;
	o->seed = ruma_opt_env_seed(envp);
	o->parts[0] = 16, o->parts[1] = 64, o->parts[2] = 256, o->parts[3] = 1024;
	o->nparts = 4;
}

static int bench_index(const char *which)
{
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(benches); i++)
		if (!strcmp(which, benches[i]))
			return (int)i;
	return -1;
}

static int option_error(ruma_rwbench_opts *o, const ruma_opt_error *e, char *err, size_t len)
{
	if (e->status == RUMA_OPT_UNKNOWN || e->status == RUMA_OPT_TOOMANY) {
		snprintf(err, len, "ruma rwbench: unknown option '%s'\n", e->arg);
		o->usage_after = true;
	} else {
		snprintf(err, len, "ruma rwbench: invalid value for %s: '%s'\n", e->opt->name,
			 e->value ? e->value : "(missing)");
	}
	return RUMA_EPARSE;
}

int ruma_rwbench_parse(int argc, char **argv, char *const *envp, ruma_rwbench_opts *o, char *err,
		       size_t errlen)
{
	ruma_opt_error e;

	defaults(o, envp);
	err[0] = '\0';
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		o->help = argc >= 2;
		o->usage_after = argc < 2;
		return argc < 2 ? RUMA_EPARSE : 0;
	}
	o->which = argv[1];
	if (bench_index(o->which) < 0) {
		snprintf(err, errlen, "ruma rwbench: unknown benchmark '%s'\n", o->which);
		o->usage_after = true;
		return RUMA_EPARSE;
	}
	if (ruma_opt_parse(rwbench_options, RUMA_ARRAY_SIZE(rwbench_options), argc, argv, 2, o,
			   NULL, 0, NULL, &e))
		return e.status == RUMA_OPT_STOPPED ? 0 : option_error(o, &e, err, errlen);
	if (o->min_log > o->max_log) {
		snprintf(err, errlen, "ruma rwbench: --min-log %u > --max-log %u\n", o->min_log,
			 o->max_log);
		return RUMA_EPARSE;
	}
	if (!o->n)
		o->n = !strcmp(o->which, "pool") || !strcmp(o->which, "snapshot") ?
			       (uint64_t)128 << 20 : (uint64_t)1 << 24;
	return 0;
}

/* Raise vm.nr_hugepages by o->reserve_huge; true when *prev must be restored. */
static bool reserve_huge(const ruma_rwbench_opts *o, uint64_t *prev)
{
	uint64_t actual = 0, cur = 0;

	if (!o->reserve_huge)
		return false;
	if (ruma_sysinfo_read_nr_hugepages(2048, -1, &cur) ||
	    ruma_sysinfo_set_nr_hugepages_ex(2048, cur + o->reserve_huge, prev, &actual)) {
		fprintf(stderr, "ruma rwbench: cannot raise vm.nr_hugepages (needs root); "
				"2 MiB variants use what is free\n");
		return false;
	}
	fprintf(stderr, "ruma rwbench: vm.nr_hugepages %llu -> %llu for this run\n",
		(unsigned long long)*prev, (unsigned long long)actual);
	return true;
}

int ruma_rwbench_run(const ruma_rwbench_opts *opts)
{
	ruma_rwbench_opts o = *opts;
	uint64_t prev_huge = 0;
	ruma_outputs out;
	int rc;

	if (ruma_outputs_open(&out, "rwbench", o.csv_path, o.result))
		return 2;
	o.csv = out.csv;
	o.res = ruma_outputs_result(&out);
	bool reserved = reserve_huge(&o, &prev_huge);
	fprintf(stderr, "ruma rwbench %s: seed %llu, %u repetitions + 1 warm-up\n", o.which,
		(unsigned long long)o.seed, o.reps);
	rc = bench_fn[bench_index(o.which)](&o);
	if (reserved)
		(void)ruma_sysinfo_set_nr_hugepages_ex(2048, prev_huge, NULL, NULL);
	if (ruma_outputs_close(&out))
		return 1; /* results lost: never exit 0 (stdout is checked by main) */
	if (rc == RUMA_ENOHUGE || rc == RUMA_EMAPLIMIT) {
		fprintf(stderr, "ruma rwbench: some variants did not run: %s\n", ruma_strerror(rc));
		return 0;
	}
	if (rc == -EINVAL)
		return 2;
	return rc ? 1 : 0;
}
