/*
 * snapcheck.h — the check that a full-table scan of `ruma kv`'s
 * scanfull and scanwhilewriting workloads read one snapshot
 * (snapcheck.c).
 *
 * The table: db_bench's keys 0 .. records-1 and a meta row whose key
 * (RUMA_KV_META_KEY) sorts before every one of them.  Every value, the
 * meta row's too, starts with two 8-byte words (host order): the key
 * number it was written for (the meta row: RUMA_KV_META_NUMBER) and a
 * stamp.  The load writes stamp 0 everywhere; the one writer's commit
 * number s (1, 2, ...) writes stamp s into one data row and into the meta
 * row, in the same transaction.  A scan that reads one committed state
 * therefore sees the meta row first, then every key once in order, and
 * the largest stamp of the data rows equal to the meta row's: the row the
 * last commit wrote carries it, and no later commit is visible.  A scan
 * that mixes states sees a row newer than the meta row, or a meta row
 * newer than every row.
 */
#ifndef RUMA_BENCH_KV_SNAPCHECK_H
#define RUMA_BENCH_KV_SNAPCHECK_H

#include "bench/kv/kv.h"

/* The meta row's key: a prefix of every 16-digit key, so it sorts first. */
#define RUMA_KV_META_KEY "0"
#define RUMA_KV_META_KLEN 1u
/* The key-number word of the meta row's value. */
#define RUMA_KV_META_NUMBER UINT64_MAX
/* The bytes a stamped value needs at least: key number and stamp. */
#define RUMA_KV_STAMPED_MIN 16u

/* One scan's check (fed entry by entry). */
typedef struct ruma_kv_snapcheck {
	uint64_t records;       /* data keys expected: 0 .. records-1 */
	uint64_t value_size;    /* every value's length */
	uint64_t next;          /* the key number expected next */
	char want[RUMA_KV_KEY_MAX]; /* its key */
	size_t want_len;
	bool meta_seen;
	uint64_t meta;          /* the meta row's stamp */
	uint64_t max, max_at;   /* the largest data stamp and its key number */
	bool bad;
	char msg[300];          /* what failed, when bad */
} ruma_kv_snapcheck;

/* ruma_kv_stamped — whether wl's values carry stamps (scanfull, scanwhilewriting). */
bool ruma_kv_stamped(const ruma_kv_workload *wl);

/* ruma_kv_stamp_value — the key-number and stamp words into val
 * (>= RUMA_KV_STAMPED_MIN bytes). */
void ruma_kv_stamp_value(unsigned char *val, uint64_t number, uint64_t stamp);

/* ruma_kv_snapcheck_start — before a scan of a table of records keys. */
void ruma_kv_snapcheck_start(ruma_kv_snapcheck *c, uint64_t records, uint64_t value_size);

/* ruma_kv_snapcheck_entry — the scan's next entry; false (and c->bad,
 * c->msg) when it breaks the rules: the scan should stop. */
bool ruma_kv_snapcheck_entry(ruma_kv_snapcheck *c, const void *key, size_t klen,
			     const void *val, size_t vlen);

/* ruma_kv_snapcheck_end — after the scan: 0, or -EIO with c->msg saying
 * which key and which stamps (or which entry) broke the rules. */
int ruma_kv_snapcheck_end(ruma_kv_snapcheck *c);

#endif
