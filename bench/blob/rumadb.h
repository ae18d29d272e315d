/*
 * rumadb.h — what the two adapters over ruma's store (sys_rows.c, and
 * sys_ruma.c where the store has BLOBs) share: the store <dir>/store with
 * its log, opened with the run's pool, one table "blob", a transaction per
 * operation, close-and-reopen as the settle step, the store check with its
 * messages kept.
 */
#ifndef RUMA_BENCH_BLOB_RUMADB_H
#define RUMA_BENCH_BLOB_RUMADB_H

#include "bench/blob/blob.h"

#include <ruma/db.h>

typedef struct ruma_blob_db {
	ruma_db *db;
	ruma_db_table *table;
	ruma_blob_conf conf;
	char path[4096];
	char last[256];      /* the store's last message (for the check's failure) */
} ruma_blob_db;

/* ruma_blob_db_open — open <c->dir>/store and table "blob" into a new
 * *out.  0 or a negative code with the reason in err. */
int ruma_blob_db_open(const ruma_blob_conf *c, ruma_blob_db **out, char *err, size_t errlen);

/* ruma_blob_db_close — close and free (NULL accepted).  0 or the close's code with err. */
int ruma_blob_db_close(ruma_blob_db *s, char *err, size_t errlen);

/* ruma_blob_db_settle — close the store (a clean close writes every page)
 * and open it again with an empty pool.  0 or a negative code with err. */
int ruma_blob_db_settle(ruma_blob_db *s, char *err, size_t errlen);

/* ruma_blob_db_load_index — read every key of the table once (the B-tree's
 * pages into the pool, no BLOB's bytes): a cold read then finds its index
 * in memory, as a file's read finds its directory entry and inode in the
 * kernel's caches.  0 or a negative code with err. */
int ruma_blob_db_load_index(ruma_blob_db *s, char *err, size_t errlen);

/* ruma_blob_db_check — ruma_db_check; its failure's last message in err. */
int ruma_blob_db_check(ruma_blob_db *s, char *err, size_t errlen);

/* ruma_blob_db_begin — a transaction of the store's durability (flags
 * RUMA_DB_RDONLY for reads); 0 or the code with the message in th. */
int ruma_blob_db_begin(ruma_blob_db *s, ruma_blob_thread *th, unsigned flags, ruma_db_txn **txn);

/* ruma_blob_db_end — commit txn when rc is 0, else abort it; returns rc,
 * or the commit's code with the message in th. */
int ruma_blob_db_end(ruma_blob_thread *th, ruma_db_txn *txn, int rc);

#endif
