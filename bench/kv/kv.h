/*
 * kv.h — `ruma kv`: YCSB's core workloads and db_bench's fills and reads
 * run against ruma's store (db.h) and against the embedded stores a user
 * would pick instead, each behind one small adapter (docs/bench/ycsb.md).
 *
 * The adapter interface: open a store in its own directory with the run's
 * memory budget and durability, per-thread handles, transactions
 * (begin/commit/abort), get/put/del, a scan of n entries from a key and,
 * where the system keeps one, the size of its version store.
 * Each system is one file bench/kv/sys_<name>.c; the peers are compiled
 * only with -DRUMA_PEERS=ON (RUMA_KV_HAVE_<NAME> defined by the build).
 *
 * The driver (driver.c): the options below, a load phase, a timed (or
 * counted) run phase on --threads threads, one row per second, latency
 * percentiles per operation from log-bucket histograms (hist.h).
 */
#ifndef RUMA_BENCH_KV_H
#define RUMA_BENCH_KV_H

#include "bench/kv/gen.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- adapters ------------------------------------------------------------- */

/* What a store is opened with. */
typedef struct ruma_kv_conf {
	const char *dir;      /* the system's own directory: exists, empty */
	uint64_t memory;      /* cache or buffer pool, bytes (--memory-limit) */
	bool sync;            /* every commit durable when it returns */
	unsigned threads;     /* threads using the store at once */
	uint64_t records;     /* expected entries (for a map size) */
	size_t key_max, value_size; /* largest key, value size */
	/* A setting the system cannot honour, or honours only in part:
	 * setting ("memory", "sync", "compression", "direct_io") and why. */
	void (*note)(void *ctx, const char *setting, const char *text);
	void *note_ctx;
} ruma_kv_conf;

/* ruma_kv_system.begin's flags. */
#define RUMA_KV_WRITE 1u /* the transaction writes */
#define RUMA_KV_ONE 2u   /* the transaction is one get, put, del or scan */

/* The first member of every adapter's thread handle: its last error. */
typedef struct ruma_kv_thread {
	char err[256];
} ruma_kv_thread;

/* A scan's visitor: one entry; false stops the scan. */
typedef bool (*ruma_kv_visit)(void *ctx, const void *key, size_t klen, const void *val,
			      size_t vlen);

/*
 * One system.  Every int function returns 0 or a negative code:
 * RUMA_ENOTFOUND (get: no such key; del: no such key, where the system
 * can tell: RocksDB, LevelDB and WiredTiger delete blindly and return 0),
 * RUMA_ECONFLICT (the transaction
 * met another: the caller aborts and retries), others are failures, with
 * the message in the thread handle's err (open: in err).  get's *val
 * stays valid until the next call on the thread.  scan visits at most n
 * entries from the first key >= key (reverse: the last key <= key,
 * backwards; key NULL: from the first or last key) and returns how many it
 * visited.  Every operation runs between begin and commit (or abort);
 * begin's flags say whether the transaction will write (RUMA_KV_WRITE)
 * and whether it is one call (RUMA_KV_ONE: one get, put, del or scan,
 * which a system may run as a single-statement transaction, as SQLite's
 * autocommit mode does).  commit ends the
 * transaction whatever it returns (a commit that fails has rolled back);
 * abort ends one whose operation failed, and does nothing after a begin
 * that failed.
 */
typedef struct ruma_kv_system {
	const char *name;
	/* the library's version, as text */
	const char *(*version)(void);
	int (*open)(const ruma_kv_conf *c, void **store, char *err, size_t errlen);
	int (*close)(void *store, char *err, size_t errlen);
	int (*thread_open)(void *store, ruma_kv_thread **th, char *err, size_t errlen);
	void (*thread_close)(ruma_kv_thread *th);
	int (*begin)(ruma_kv_thread *th, unsigned flags);
	int (*commit)(ruma_kv_thread *th);
	void (*abort)(ruma_kv_thread *th);
	int (*get)(ruma_kv_thread *th, const void *key, size_t klen, const void **val,
		   size_t *vlen);
	int (*put)(ruma_kv_thread *th, const void *key, size_t klen, const void *val,
		   size_t vlen);
	int (*del)(ruma_kv_thread *th, const void *key, size_t klen);
	int64_t (*scan)(ruma_kv_thread *th, const void *key, size_t klen, unsigned n,
			bool reverse, ruma_kv_visit fn, void *ctx);
	/* optional (NULL: the system has no such figure): the memory its
	 * version store holds for snapshots, bytes, into *bytes; callable
	 * from any thread while others run */
	int (*versions)(void *store, uint64_t *bytes);
} ruma_kv_system;

/* ruma_kv_fail — format th->err and return code (for the adapters). */
int ruma_kv_fail(ruma_kv_thread *th, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ruma_kv_open_fail — format err and return code (adapters' open). */
int ruma_kv_open_fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The systems built into this binary, NULL-terminated (ruma first). */
extern const ruma_kv_system *const ruma_kv_systems[];

/* ruma_kv_find_system — the system named name, or NULL. */
const ruma_kv_system *ruma_kv_find_system(const char *name);

/* ruma_kv_system_names — the names of the built systems, comma-separated. */
const char *ruma_kv_system_names(char *buf, size_t len);

/* ---- workloads ------------------------------------------------------------ */

/* The operations a workload mixes (and the latency rows). */
typedef enum ruma_kv_op {
	RUMA_KV_READ,
	RUMA_KV_UPDATE,
	RUMA_KV_INSERT,
	RUMA_KV_SCAN,
	RUMA_KV_RMW,     /* read, then write the record back (YCSB F) */
	RUMA_KV_NOPS
} ruma_kv_op;

/* ruma_kv_op_name — "read", "update", "insert", "scan", "rmw". */
const char *ruma_kv_op_name(ruma_kv_op op);

/* How a workload picks its keys and what it loads first. */
typedef enum ruma_kv_keys {
	RUMA_KV_KEYS_YCSB,     /* "user" + fnv(n): YCSB's hashed insert order */
	RUMA_KV_KEYS_DBBENCH,  /* n as 16 decimal digits: db_bench's keys */
} ruma_kv_keys;

typedef enum ruma_kv_pattern {
	RUMA_KV_MIX,        /* the proportions below, keys by the distribution */
	RUMA_KV_FILLSEQ,    /* inserts of ascending new keys */
	RUMA_KV_FILLRANDOM, /* puts of uniform keys in [0, records) (db_bench) */
	RUMA_KV_READSEQ,    /* the whole table in key order, 100 entries a scan */
	RUMA_KV_READREVERSE,
	RUMA_KV_SCANFULL,   /* an operation is the whole table in one read transaction */
} ruma_kv_pattern;

typedef struct ruma_kv_workload {
	const char *name;        /* "a" .. "f", "fillseq", ... */
	const char *what;        /* one line for --help */
	ruma_kv_keys keys;
	ruma_kv_pattern pattern;
	double mix[RUMA_KV_NOPS]; /* proportions (sum 1) of RUMA_KV_MIX */
	ruma_kv_dist dist;       /* default request distribution */
	bool load;               /* a load phase of --records entries first */
	bool force_sync;         /* every commit durable whatever --durability */
	bool writer;             /* one more thread overwriting uniform keys */
	unsigned max_scan;       /* scans: uniform length 1..max_scan */
} ruma_kv_workload;

/* The workloads, NULL-terminated. */
extern const ruma_kv_workload *const ruma_kv_workloads[];

/* ruma_kv_find_workload — by name, or NULL. */
const ruma_kv_workload *ruma_kv_find_workload(const char *name);

/* ruma_kv_key — the key of key number n into buf (>= RUMA_KV_KEY_MAX
 * bytes); returns its length. */
#define RUMA_KV_KEY_MAX 32u
size_t ruma_kv_key(ruma_kv_keys keys, uint64_t n, char *buf);

/* ---- the driver ----------------------------------------------------------- */

#define RUMA_KV_MAX_THREADS 64u

typedef enum ruma_kv_durability {
	RUMA_KV_SYNC,    /* every commit durable when it returns */
	RUMA_KV_NONE,    /* commits never wait for the disk */
} ruma_kv_durability;

typedef struct ruma_kv_opts {
	const ruma_kv_system *sys;      /* --system [ruma] */
	const ruma_kv_workload *wl;     /* --workload [a] */
	ruma_kv_dist dist;              /* --distribution [the workload's] */
	const char *dir;                /* --dir [/tmp/ruma-kv] */
	uint64_t records;               /* --records [1e6] */
	uint64_t value_size;            /* --value-size [1000] */
	uint64_t memory;                /* --memory-limit [1 GiB] */
	bool cgroup;                    /* --cgroup: run in a child memory cgroup */
	uint64_t cgroup_limit;          /* --cgroup-limit (implies --cgroup) [0: from memory] */
	unsigned threads;               /* --threads [1] */
	uint64_t runfor;                /* --runfor seconds [10] */
	uint64_t ops;                   /* --ops per thread (0: --runfor decides) */
	uint64_t load_batch;            /* --load-batch: inserts per load transaction [1000] */
	ruma_kv_durability durability;  /* --durability [sync] */
	uint64_t seed;                  /* --seed [$RUMA_SEED or clock] */
	const char *result;             /* --result FILE */
	bool quiet;                     /* --quiet: no per-second CSV on stdout */
	bool check;                     /* --check: verify the table after the run */
	bool list;                      /* --list: the systems and workloads */
	bool help;
} ruma_kv_opts;

/*
 * ruma_kv_parse — `ruma kv [options]` (argv[0] is the command) into *o,
 * every value checked, nothing run; envp gives RUMA_SEED.  Returns 0, or
 * RUMA_EPARSE with "ruma kv: ...\n" in err (exit status 2).
 */
int ruma_kv_parse(int argc, char **argv, char *const *envp, ruma_kv_opts *o, char *err,
		  size_t errlen);

/* ruma_kv_usage — the usage text. */
void ruma_kv_usage(FILE *f);

/*
 * ruma_kv_run — load, run, report: the per-second CSV
 * "ts,ops,system,workload,threads,durability" on stdout (unless quiet),
 * the configuration, load time, what the system cannot honour and the
 * latency percentiles on stderr, all of it as result rows with --result.
 * Returns the exit status: 0, 1 (a failure: an error of the store, a read
 * that found the wrong value or none), 2 (a store that cannot be opened,
 * a directory that cannot be used), 130 / 143 (stopped by SIGINT / SIGTERM:
 * what ran is reported, the store closed and removed).
 */
int ruma_kv_run(const ruma_kv_opts *o);

#endif
