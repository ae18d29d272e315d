/*
 * cmd_blob.c — `ruma blob`: large values (BLOBs) in ruma's store against
 * one file per object: put, get, overwrite and delete throughput and
 * latency, bytes written per committed byte, store size against live
 * bytes, a churn mode and a crash mode (docs/bench/blob.md).  The parser
 * and usage are bench/blob/blob_cli.c, the driver bench/blob/driver.c.
 */
#include "bench/blob/blob.h"
#include "bench/common/opt.h"

#include <stdio.h>

const char ruma_cmd_blob_summary[] =
	"large values: BLOBs in ruma's store against one file per object (put/get, churn, crash)";

extern char **environ;

/* --list: one line per system. */
static int list(void)
{
	for (size_t i = 0; ruma_blob_systems[i]; i++)
		printf("system %s %s\n", ruma_blob_systems[i]->name, ruma_blob_systems[i]->what);
	return 0;
}

int ruma_cmd_blob(int argc, char **argv);
int ruma_cmd_blob(int argc, char **argv)
{
	ruma_blob_opts o;
	char err[512];

	int rc = ruma_blob_parse(argc, argv, environ, &o, err, sizeof(err));
	int st = ruma_opt_outcome(rc, err, false, o.help, ruma_blob_usage);
	if (st >= 0)
		return st;
	return o.list ? list() : ruma_blob_run(&o);
}
