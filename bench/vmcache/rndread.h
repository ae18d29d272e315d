/*
 * rndread.h — the data set of the random-read workload (rndread.c), shared
 * with the scan workloads (scan.c): DATASIZE tuples, 8-byte big-endian keys
 * 0..n-1, 120-byte payloads derived from the key, in the tree "rndread".
 * A store loaded by one of these workloads with --keep is used as it is by
 * the others.
 */
#ifndef RUMA_BENCH_VMCACHE_RNDREAD_H
#define RUMA_BENCH_VMCACHE_RNDREAD_H

#include "bench/vmcache/workload.h"

#include <ruma/btree.h>

#define RND_PAYLOAD 120u

/* The key bytes of tuple k, and back. */
void ruma_vmcache_rnd_key(uint64_t k, unsigned char out[8]);
uint64_t ruma_vmcache_rnd_key_decode(const unsigned char in[8]);
/* The payload of tuple k: 15 native-endian words, word i of which is
 * ruma_vmcache_rnd_payload_word(k, i) (splitmix64 seeded by k). */
void ruma_vmcache_rnd_payload(uint64_t k, unsigned char out[RND_PAYLOAD]);
uint64_t ruma_vmcache_rnd_payload_word(uint64_t k, unsigned i);

/* The workload hooks of the data set (see workload.h for each). */
uint64_t ruma_vmcache_rnd_space(uint64_t n);
const char *ruma_vmcache_rnd_check_datasize(uint64_t n);
int ruma_vmcache_rnd_setup(ruma_vmcache_ctx *ctx);
/* The one tree of the rndread data set (also the scans'). */
bool ruma_vmcache_rnd_owns_tree(const char *name, size_t len);
int ruma_vmcache_rnd_load(ruma_vmcache_ctx *ctx, unsigned tid, unsigned nthreads);
int ruma_vmcache_rnd_load_done(ruma_vmcache_ctx *ctx);
int ruma_vmcache_rnd_check(ruma_vmcache_ctx *ctx);
/* Frees ctx->wl; first says on stderr how deep the asynchronous reads were
 * queued (ruma_bm_stats.aio_wait_depth / aio_waits) when there were any. */
void ruma_vmcache_rnd_teardown(ruma_vmcache_ctx *ctx);

/* The tree of the data set (after setup). */
ruma_btree *ruma_vmcache_rnd_tree(ruma_vmcache_ctx *ctx);

#endif
