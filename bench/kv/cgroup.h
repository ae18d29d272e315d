/*
 * cgroup.h — `ruma kv --cgroup`: the whole run inside a child memory cgroup
 * of the driver's own, so that every system gets the same memory, page cache
 * included (docs/bench/ycsb.md, "Out of memory, fairly").
 *
 * The child is made under the cgroup the process is in (the v1 memory
 * controller's hierarchy, or the unified v2 one), limited, the process moved
 * into it before the store is opened, moved back after the store is closed,
 * and the child removed.  A machine where no such cgroup can be made gets a
 * clear error, never a run without the limit.
 */
#ifndef RUMA_BENCH_KV_CGROUP_H
#define RUMA_BENCH_KV_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ruma_kv_cgroup {
	char parent[512]; /* the cgroup the process was in (a directory) */
	char child[560];  /* ours, under it */
	int version;      /* 1 or 2 */
	bool entered;     /* the process is in child */
	uint64_t limit;   /* bytes */
} ruma_kv_cgroup;

/* The limit for a cache of `memory` bytes: the cache plus the process's own
 * memory, memory / 4 but at least 64 MiB. */
uint64_t ruma_kv_cgroup_limit(uint64_t memory);

/* Make the child with `limit` bytes (swap not allowed past it) and move the
 * process into it.  0, or -errno with what failed in err. */
int ruma_kv_cgroup_enter(ruma_kv_cgroup *cg, uint64_t limit, char *err, size_t errlen);

/* The child's peak usage and how often the limit was hit (0 where the
 * kernel does not say). */
void ruma_kv_cgroup_usage(const ruma_kv_cgroup *cg, uint64_t *peak, uint64_t *hits);

/* Move the process back and remove the child (retried while the kernel
 * still releases its charges).  0, or -errno with what failed in err. */
int ruma_kv_cgroup_leave(ruma_kv_cgroup *cg, char *err, size_t errlen);

#endif
