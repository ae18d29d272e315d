/*
 * workloads.c — the table of workloads `ruma vmcache` can run.
 *
 * A workload is added by listing the address of its descriptor before the
 * NULL below (TPC-C: ruma_vmcache_tpcc_workload, bench/vmcache/tpcc/).  A
 * name missing from this table is refused at start with exit status 2.
 */
#include "bench/vmcache/workload.h"

#include <string.h>

const ruma_vmcache_workload *const ruma_vmcache_workloads[] = {
	&ruma_vmcache_rndread_workload,
	&ruma_vmcache_scan_workload,
	&ruma_vmcache_scandesc_workload,
	&ruma_vmcache_tpcc_workload,
	NULL,
};

const ruma_vmcache_workload *ruma_vmcache_find_workload(const char *name)
{
	for (size_t i = 0; ruma_vmcache_workloads[i]; i++)
		if (!strcmp(ruma_vmcache_workloads[i]->name, name))
			return ruma_vmcache_workloads[i];
	return NULL;
}
