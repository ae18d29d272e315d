/*
 * blob.h — `ruma blob`: large values (BLOBs of 100 KB to 10 MB and more)
 * put, read whole, overwritten and deleted in ruma's store and the ways a
 * user would keep them otherwise, each behind one small adapter
 * (docs/bench/blob.md).
 *
 * The systems: ruma-rows (the value split into rows of at most 1 KB under
 * key + chunk number, all in one transaction: every payload byte goes
 * through the log), files (one file per object in a directory, written and
 * fdatasync'ed per commit) and, where the store has them, ruma (BLOBs
 * through db.h).  Each is one file bench/blob/sys_<name>.c.
 *
 * Three modes share the adapters:
 *   ops    for each size, on a fresh store: put N new objects, read them
 *          back whole (cold or warm), overwrite them, delete them; per
 *          phase objects/s, MB/s, p50/p99 latency, device bytes written per
 *          committed payload byte and store size against live bytes
 *          (driver.c, iostat.c);
 *   churn  random overwrites and deletes of log-uniform sizes, then the
 *          latency of a large put on the churned store against a fresh one,
 *          and store size against live bytes (churn.c);
 *   crash  a child process doing puts, streaming puts, overwrites and
 *          deletes with a side record of what committed, killed (SIGKILL)
 *          or power-lost at random instants; every round reopens the store
 *          and checks every object byte for byte (crash.c).
 */
#ifndef RUMA_BENCH_BLOB_H
#define RUMA_BENCH_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- adapters ------------------------------------------------------------- */

/* What a store is opened with. */
typedef struct ruma_blob_conf {
	const char *dir;      /* the system's own directory: exists */
	uint64_t memory;      /* buffer pool or cache, bytes (--memory-limit) */
	bool sync;            /* every commit durable when it returns */
	bool huge_buffers;    /* threads' buffers from ruma_blob_buffer with huge (--buffers) */
	bool powerloss;       /* crash mode: writes must go where the simulated
				 power loss tracks them (pwrite, not io_uring) */
	void (*say)(void *ctx, const char *line); /* the store's messages (NULL: stderr) */
	void *say_ctx;
} ruma_blob_conf;

/* The first member of every adapter's thread handle: its last error. */
typedef struct ruma_blob_thread {
	char err[256];
} ruma_blob_thread;

/*
 * One system.  Every int function returns 0 or a negative code, with the
 * message in the thread handle's err (open, close, settle, check: in err).
 *   put    store object id (new or existing) as data[0..len): one
 *          committed transaction, durable on return when conf.sync;
 *   get    the whole object id: *data valid until the next call on the
 *          thread; RUMA_ENOTFOUND when there is none;
 *   put_stream  put through the system's streaming interface: created
 *          with len as its size hint, data appended piece bytes at a time
 *          (NULL: the system has none);
 *   append add data[0..len) at the end of object id (which exists): one
 *          committed transaction (NULL: the system cannot append in one);
 *   batch  one transaction over n objects: ids[i] gets data[i][0..lens[i]),
 *          or is deleted where data[i] is NULL (it must exist: else
 *          RUMA_ENOTFOUND and nothing changes); ids distinct (NULL: the
 *          system has no transaction over several objects);
 *   del    remove object id: one committed transaction; RUMA_ENOTFOUND when
 *          there is none;
 *   settle make everything written so far durable and, with cold, leave no
 *          object in memory (ruma: the store closed and reopened, and
 *          for BLOBs its keys read back; files: every file synced and
 *          dropped from the page cache, its inode and directory entry
 *          staying cached); no thread handle may be open;
 *   check  the store's own consistency check (NULL: none).
 */
typedef struct ruma_blob_system {
	const char *name;
	const char *what; /* one line for --list and --help */
	int (*open)(const ruma_blob_conf *c, void **store, char *err, size_t errlen);
	int (*close)(void *store, char *err, size_t errlen);
	int (*thread_open)(void *store, ruma_blob_thread **th, char *err, size_t errlen);
	void (*thread_close)(ruma_blob_thread *th);
	int (*put)(ruma_blob_thread *th, uint64_t id, const void *data, size_t len);
	int (*put_stream)(ruma_blob_thread *th, uint64_t id, const void *data, size_t len,
			  size_t piece);
	int (*append)(ruma_blob_thread *th, uint64_t id, const void *data, size_t len);
	int (*batch)(ruma_blob_thread *th, size_t n, const uint64_t *ids, const void *const *data,
		     const size_t *lens);
	int (*get)(ruma_blob_thread *th, uint64_t id, const void **data, size_t *len);
	int (*del)(ruma_blob_thread *th, uint64_t id);
	int (*settle)(void *store, bool cold, char *err, size_t errlen);
	int (*check)(void *store, char *err, size_t errlen);
} ruma_blob_system;

/* ruma_blob_buffer — *buf of at least len bytes (contents not kept), *cap
 * its size: from ruma_db_buffer_alloc (2 MiB aligned, huge pages advised)
 * when huge, else 4096-byte aligned, the same for every system.  0 or
 * -ENOMEM.  ruma_blob_buffer_free releases one (NULL accepted). */
int ruma_blob_buffer(void **buf, size_t *cap, size_t len, bool huge);
void ruma_blob_buffer_free(void *buf, bool huge);

/* ruma_blob_fail — format th->err and return code (for the adapters). */
int ruma_blob_fail(ruma_blob_thread *th, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ruma_blob_open_fail — format err and return code (adapters' open, close, settle). */
int ruma_blob_open_fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The systems built into this binary, NULL-terminated. */
extern const ruma_blob_system *const ruma_blob_systems[];

/* ruma_blob_find_system — the system named name, or NULL. */
const ruma_blob_system *ruma_blob_find_system(const char *name);

/* ruma_blob_system_names — the names of the built systems, comma-separated. */
const char *ruma_blob_system_names(char *buf, size_t len);

/* ---- object contents -------------------------------------------------------- */

/* The bytes an object gets: a header of id, version and RUMA_BLOB_MAGIC
 * (24 bytes, little-endian) and then a stream drawn from id and version,
 * so that any object read back can be checked against what its header
 * claims, and an object grown by appends equals one put whole. */
#define RUMA_BLOB_HEADER 24u
#define RUMA_BLOB_MAGIC 0x424f4c42414d5552ull /* "RUMABLOB" */

/* ruma_blob_fill — the content of (id, version) of len bytes into buf. */
void ruma_blob_fill(void *buf, size_t len, uint64_t id, uint64_t version);

/* ruma_blob_fill_range — bytes [off, off + n) of the content of (id, version). */
void ruma_blob_fill_range(void *buf, uint64_t off, size_t n, uint64_t id, uint64_t version);

/* ruma_blob_crc — the CRC-32C of the content of (id, version, len) (no buffer). */
uint32_t ruma_blob_crc(uint64_t id, uint64_t version, size_t len);

/*
 * ruma_blob_verify — data[0..len) is the content of object id as its header
 * says (id, version) and fill would write it; with full, every byte is
 * compared, else the header only.  *version (may be NULL) gets the version.
 * Returns 0 or -EIO with the reason in why.
 */
int ruma_blob_verify(const void *data, size_t len, uint64_t id, bool full, uint64_t *version,
		     char *why, size_t whylen);

/* ---- device and store accounting (iostat.c) --------------------------------- */

typedef struct ruma_blob_io {
	uint64_t proc_write;   /* /proc/self/io write_bytes */
	uint64_t dev_write;    /* the device's sectors written x 512 (when dev_ok) */
	bool dev_ok;
} ruma_blob_io;

/* ruma_blob_dev_stat — "/sys/dev/block/<major>:<minor>/stat" of the block
 * device dir is on, into path; false when there is none (tmpfs, overlay). */
bool ruma_blob_dev_stat(const char *dir, char *path, size_t len);

/* ruma_blob_io_read — the counters now (dev_stat: the device's stat file,
 * NULL or "" for none).  Returns 0 or -errno when /proc/self/io cannot be read. */
int ruma_blob_io_read(const char *dev_stat, ruma_blob_io *out);

/* ruma_blob_dir_bytes — the disk space of the regular files under dir
 * (the store, its log, every object file): their allocated blocks, so a
 * hole takes none and space reserved ahead counts.  0 or -errno. */
int ruma_blob_dir_bytes(const char *dir, uint64_t *bytes);

/* ---- the driver ----------------------------------------------------------- */

#define RUMA_BLOB_MAX_THREADS 64u
#define RUMA_BLOB_MAX_SIZES 16u

typedef enum ruma_blob_mode { RUMA_BLOB_OPS, RUMA_BLOB_CHURN, RUMA_BLOB_CRASH } ruma_blob_mode;

/* The operations of the ops mode, in the order a run does them. */
typedef enum ruma_blob_op {
	RUMA_BLOB_PUT,
	RUMA_BLOB_GET,
	RUMA_BLOB_OVERWRITE,
	RUMA_BLOB_DELETE,
	RUMA_BLOB_NOPS
} ruma_blob_op;

/* ruma_blob_op_name — "put", "get", "overwrite", "delete". */
const char *ruma_blob_op_name(ruma_blob_op op);

typedef struct ruma_blob_opts {
	const ruma_blob_system *sys;  /* --system [ruma] */
	ruma_blob_mode mode;          /* --mode [ops] */
	uint64_t sizes[RUMA_BLOB_MAX_SIZES]; /* --sizes [100K,1M,10M] */
	unsigned nsizes;
	unsigned ops;                 /* --ops: bit per ruma_blob_op [all] */
	uint64_t objects;             /* --objects per size (0: --data / size) */
	uint64_t data;                /* --data: payload per phase [256M] */
	unsigned threads;             /* --threads [1] */
	bool sync;                    /* --durability sync [sync] */
	bool cold;                    /* --cache cold [cold] */
	bool huge_buffers;            /* --buffers huge [huge] */
	bool verify;                  /* --verify: every byte read compared */
	bool stream;                  /* --put-mode stream (ruma) */
	uint64_t piece;               /* --piece: bytes a streaming append hands over [64K] */
	uint64_t memory;              /* --memory-limit [1G] */
	const char *dir;              /* --dir [/tmp/ruma-blob] */
	bool cgroup;                  /* --cgroup */
	uint64_t cgroup_limit;        /* --cgroup-limit */
	/* churn */
	uint64_t churn_ops;           /* --churn-ops [10000] */
	uint64_t churn_keys;          /* --churn-keys [256] */
	uint64_t min_size, max_size;  /* --min-size [100], --max-size [10M] */
	uint64_t probe_size;          /* --probe-size [10M] */
	unsigned probes;              /* --probes [5] */
	/* crash */
	unsigned kills, powerloss;    /* --kills [100], --powerloss [50] */
	unsigned batch;               /* --batch: objects of a multi-object transaction [0: none] */
	uint64_t max_run_ms;          /* --max-run [1000 ms] */
	uint64_t seed;                /* --seed [$RUMA_SEED or clock] */
	const char *result;           /* --result FILE */
	bool quiet;                   /* --quiet: no CSV on stdout */
	bool list, help;
} ruma_blob_opts;

/*
 * ruma_blob_parse — `ruma blob [options]` (argv[0] is the command) into *o,
 * every value checked, nothing run; envp gives RUMA_SEED.  Returns 0, or
 * RUMA_EPARSE with "ruma blob: ...\n" in err (exit status 2).
 */
int ruma_blob_parse(int argc, char **argv, char *const *envp, ruma_blob_opts *o, char *err,
		    size_t errlen);

/* ruma_blob_usage — the usage text. */
void ruma_blob_usage(FILE *f);

/*
 * ruma_blob_run — the run the options ask for: CSV rows on stdout (unless
 * quiet; columns in docs/bench/blob.md), the configuration and summaries
 * on stderr, every figure as result rows with --result.  Returns the exit
 * status: 0, 1 (a failure: an error of the store, an object read back
 * wrong, a crash round that lost or invented data), 2 (a store or
 * directory that cannot be used).
 */
int ruma_blob_run(const ruma_blob_opts *o);

#endif
