/*
 * cmd_kv.c — `ruma kv`: YCSB's core workloads and db_bench's fills and
 * reads against ruma's store and the embedded stores built in as peers
 * (docs/bench/ycsb.md).  The parser and usage are bench/kv/kv_cli.c, the
 * driver bench/kv/driver.c.
 */
#include "bench/common/opt.h"
#include "bench/kv/kv.h"

#include <stdio.h>

const char ruma_cmd_kv_summary[] =
	"YCSB A-F and db_bench workloads on ruma's store and its peers (LMDB, RocksDB, ...)";

extern char **environ;

/* --list: one line per system (with its library version) and workload. */
static int list(void)
{
	for (size_t i = 0; ruma_kv_systems[i]; i++)
		printf("system %s %s\n", ruma_kv_systems[i]->name, ruma_kv_systems[i]->version());
	for (size_t i = 0; ruma_kv_workloads[i]; i++)
		printf("workload %s %s\n", ruma_kv_workloads[i]->name, ruma_kv_workloads[i]->what);
	return 0;
}

int ruma_cmd_kv(int argc, char **argv);
int ruma_cmd_kv(int argc, char **argv)
{
	ruma_kv_opts o;
	char err[512];

	int rc = ruma_kv_parse(argc, argv, environ, &o, err, sizeof(err));
	int st = ruma_opt_outcome(rc, err, false, o.help, ruma_kv_usage);
	if (st >= 0)
		return st;
	return o.list ? list() : ruma_kv_run(&o);
}
