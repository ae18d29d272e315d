/*
 * sysinfo.h — the machine's limits behind ruma's resource errors: the huge
 * page pools (RUMA_ENOHUGE: per size and per NUMA node), the mapping budget
 * (RUMA_EMAPLIMIT: vm.max_map_count and the mappings the process has) and
 * the memory the machine and the process's cgroup leave (what a buffer pool
 * can be sized from).  The wider system report of `ruma doctor` (kernel,
 * THP modes, sysctl writers, feature probes) is not part of the installed
 * API (src/core/sysinfo_ext.h).
 *
 * All functions are thread-safe and keep no global state.  Values are read
 * from /proc and /sys on every call (nothing is cached).
 */
#ifndef RUMA_SYSINFO_H
#define RUMA_SYSINFO_H

#include <ruma/ruma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- huge page pools -------------------------------------------------------- */

#define RUMA_SYSINFO_MAX_NODES 64

/*
 * Counts of one huge page pool.  System-wide pools have all four values;
 * per-node pools have no reservation count (the kernel keeps none per node):
 * there has_reserved is false and reserved is 0.
 */
typedef struct ruma_hugepage_counts {
	uint64_t total;    /* persistent pages (what vm.nr_hugepages sets; surplus not counted) */
	uint64_t free;     /* free_hugepages */
	uint64_t reserved; /* resv_hugepages: promised to mappings, not yet faulted */
	uint64_t surplus;  /* surplus_hugepages (overcommitted pages) */
	bool has_reserved;
} ruma_hugepage_counts;

/* One huge page size with its system-wide and per-node counts. */
typedef struct ruma_hugepage_pool {
	uint64_t size_kb;
	ruma_hugepage_counts all;
	size_t nnodes;                              /* entries in node/per_node */
	int node[RUMA_SYSINFO_MAX_NODES];           /* NUMA node ids, ascending */
	ruma_hugepage_counts per_node[RUMA_SYSINFO_MAX_NODES];
} ruma_hugepage_pool;

/*
 * ruma_sysinfo_huge_pool — counts of the pool of size_kb, system-wide and
 * for every NUMA node.  Returns 0, -ENOENT when that size does not exist.
 */
RUMA_API int ruma_sysinfo_huge_pool(uint64_t size_kb, ruma_hugepage_pool *out);

/* ---- mappings ------------------------------------------------------------------ */

/*
 * ruma_sysinfo_max_map_count — vm.max_map_count, current at every call,
 * read through a descriptor the process keeps open after the first call
 * (one pread per call; the rewiring layer asks before it adds mappings).
 * Returns 0, a negative errno, or RUMA_EPARSE.
 */
RUMA_API int ruma_sysinfo_max_map_count(uint64_t *v);

/*
 * ruma_sysinfo_map_count — the number of mappings this process has now
 * (lines of /proc/self/maps), to compare with vm.max_map_count.
 * Returns 0 or a negative errno.
 */
RUMA_API int ruma_sysinfo_map_count(uint64_t *n);

/* ---- memory -------------------------------------------------------------------- */

/* Memory a new allocation can expect to get, and what limits it. */
typedef struct ruma_mem_avail {
	uint64_t bytes;         /* the smaller of the two below that is known */
	uint64_t meminfo;       /* MemAvailable of /proc/meminfo (0 = unknown) */
	uint64_t cgroup;        /* memory.max - memory.current of the process's cgroup
				 * (v2 memory.max - memory.current, v1 limit_in_bytes -
				 * usage_in_bytes; UINT64_MAX = no limit or unknown) */
	const char *limited_by; /* "MemAvailable", "cgroup memory limit" or "unknown" */
} ruma_mem_avail;

/*
 * ruma_sysinfo_mem_available — how much memory the machine and the process's
 * memory cgroup (v2 or v1; the tightest limit on the path to the root) leave for this
 * process.  Returns 0 (bytes 0 and limited_by "unknown" when neither could be
 * read).
 */
RUMA_API int ruma_sysinfo_mem_available(ruma_mem_avail *out);

#ifdef __cplusplus
}
#endif
#endif
