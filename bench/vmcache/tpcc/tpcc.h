/*
 * tpcc.h — TPC-C on the ruma B-tree: database handle, generators, loader,
 * the five transactions and the consistency checks (docs/tpcc.md).
 *
 * Internal to the vmcache bench module (the `ruma vmcache` workload in
 * workload.c and the tests use it).  All functions return 0 or a negative
 * error (ruma.h codes) unless stated otherwise.
 */
#ifndef RUMA_BENCH_TPCC_H
#define RUMA_BENCH_TPCC_H

#include "bench/vmcache/tpcc/schema.h"

#include <ruma/bm.h>
#include <ruma/btree.h>
#include <ruma/core.h>
#include <ruma/txn.h>

#include <stdio.h>

/* Full-scale cardinalities (clause 4.3.3.1). */
#define TPCC_ITEMS 100000u
#define TPCC_DISTRICTS 10u
#define TPCC_CUSTOMERS 3000u  /* per district; also orders per district */
#define TPCC_NEW_ORDERS 900u  /* per district: the last 900 orders */
#define TPCC_MAX_OL 15u

/* A new-order returned this when it met the unused item id and rolled back. */
#define TPCC_ROLLED_BACK 1

enum tpcc_table {
	TPCC_WAREHOUSE,
	TPCC_DISTRICT,
	TPCC_CUSTOMER,
	TPCC_CUSTOMER_WDL, /* secondary: (w, d, last, first, c) */
	TPCC_HISTORY,
	TPCC_NEW_ORDER,
	TPCC_ORDER,
	TPCC_ORDER_WDC,    /* secondary: (w, d, c, o) */
	TPCC_ORDER_LINE,
	TPCC_ITEM,
	TPCC_STOCK,
	TPCC_META,
	TPCC_NTABLES
};

extern const char *const tpcc_table_names[TPCC_NTABLES];

/* Sizes of one database.  `scale` divides items, customers, orders and
 * new-orders per district (1 = the specification; larger values are a
 * test-only reduced scale that the benchmark never uses). */
typedef struct tpcc_sizes {
	uint32_t warehouses;
	uint32_t scale;
	uint32_t items;      /* = stock rows per warehouse */
	uint32_t customers;  /* per district = orders per district */
	uint32_t new_orders; /* per district after load */
	uint32_t names;      /* last-name numbers used: min(1000, customers) */
} tpcc_sizes;

/* The run-time constants C of NURand (clause 2.1.6). */
typedef struct tpcc_cconst {
	uint32_t c_last;
	uint32_t c_id;
	uint32_t ol_i_id;
} tpcc_cconst;

typedef struct tpcc_db {
	ruma_bm *bm;
	ruma_btree *t[TPCC_NTABLES];
	tpcc_sizes sz;
	tpcc_cconst c_load; /* C values used by the loader (stored in meta) */
	tpcc_cconst c_run;  /* C values of this run (C_LAST obeys 2.1.6.1) */
	uint32_t run;       /* number of this measured phase (history keys) */
	bool home_per_thread; /* home warehouse fixed per thread (else random) */
	bool txn;           /* tpcc_run_one runs each transaction as one ruma_txn
			       (set for a store with a log; see docs/tpcc.md) */
} tpcc_db;

/* tpcc_sizes_init — sizes for `warehouses` at `scale` (1 = full). -EINVAL
 * for 0 warehouses, scale 0 or a scale that leaves too few rows. */
int tpcc_sizes_init(tpcc_sizes *sz, uint32_t warehouses, uint32_t scale);

/* tpcc_db_create — create the trees (empty) and the meta row in bm; picks
 * C_load from rng.  RUMA_EEXISTS when the store already holds TPC-C. */
int tpcc_db_create(ruma_bm *bm, const tpcc_sizes *sz, ruma_rng *rng, tpcc_db **out);

/* tpcc_db_open — open the TPC-C trees of an existing store (sizes and C_load
 * from meta); RUMA_ENOTFOUND when the store holds no TPC-C database,
 * RUMA_EBADCOMBO when its load never completed, RUMA_EUNSUPP when its meta
 * row has another format version, RUMA_ECORRUPT for a bad meta row. */
int tpcc_db_open(ruma_bm *bm, tpcc_db **out);

/* tpcc_db_mark_loaded — record in meta that the population is complete. */
int tpcc_db_mark_loaded(tpcc_db *db);

/* tpcc_db_begin_run — number a new measured phase (stored in meta) and draw
 * the run-time C constants. */
int tpcc_db_begin_run(tpcc_db *db, ruma_rng *rng);

/* tpcc_db_close — release the handles (the trees stay in bm).  NULL ok. */
void tpcc_db_close(tpcc_db *db);

/* ---- generators (gen.c) ------------------------------------------------------- */

/* Uniform integer in [lo, hi]. */
uint32_t tpcc_urand(ruma_rng *r, uint32_t lo, uint32_t hi);
/* NURand(A, x, y) with constant C (clause 2.1.6). */
uint32_t tpcc_nurand(ruma_rng *r, uint32_t a, uint32_t c, uint32_t x, uint32_t y);
/* Random a-string / n-string of length in [lo, hi] into out (hi + 1 bytes). */
void tpcc_astring(ruma_rng *r, char *out, unsigned lo, unsigned hi);
void tpcc_nstring(ruma_rng *r, char *out, unsigned lo, unsigned hi);
/* Zip code: 4 random digits + "11111" (out: 10 bytes). */
void tpcc_zip(ruma_rng *r, char *out);
/* i_data / s_data: a-string [26, 50], "ORIGINAL" at a random place in 10%. */
void tpcc_data_original(ruma_rng *r, char *out);
/* Last name of number n (0..999) from the syllables (out: 17 bytes). */
void tpcc_last_name(uint32_t n, char *out);
/* Draw run-time C constants: C_LAST differs from load's by 65..119,
 * not 96 or 112 (clause 2.1.6.1).  With load == NULL: load constants. */
void tpcc_cconst_draw(ruma_rng *r, const tpcc_cconst *load, tpcc_cconst *out);
/* NURand-drawn ids within the database's sizes. */
uint32_t tpcc_rand_customer(const tpcc_db *db, ruma_rng *r);
uint32_t tpcc_rand_item(const tpcc_db *db, ruma_rng *r);
uint32_t tpcc_rand_last_number(const tpcc_db *db, ruma_rng *r, bool load);

/* ---- loader (load.c) ----------------------------------------------------------- */

/* Warehouses [*first, *last) loaded by thread tid of n: disjoint ranges
 * that cover 1..warehouses exactly once (empty when n > warehouses). */
void tpcc_load_range(uint32_t warehouses, unsigned tid, unsigned n, uint32_t *first,
		     uint32_t *last);
/* Thread tid's share of a parallel load by n threads: ITEM when tid is 0,
 * then its warehouse range; its generator is seeded from seed and tid. */
int tpcc_load_share(tpcc_db *db, unsigned tid, unsigned n, uint64_t seed);
/* The ITEM table (once). */
int tpcc_load_items(tpcc_db *db, ruma_rng *r);
/* Warehouse w with its stock, districts, customers, history, orders,
 * order lines and new-orders. */
int tpcc_load_warehouse(tpcc_db *db, uint32_t w, ruma_rng *r);

/* ---- transactions (txn.c) ------------------------------------------------------ */

/* Attempts of one transaction that meets row conflicts (db->txn) before
 * tpcc_run_one gives it up. */
#define TPCC_MAX_ATTEMPTS 1000u
/* Attempts after the first spins that yield the core before sleeping, when
 * row holders do not wait for the disk (txn.c: conflict_backoff). */
#define TPCC_YIELD_ATTEMPTS 8u

/* A terminal: its random generator, ids for history keys, statistics. */
typedef struct tpcc_worker {
	tpcc_db *db;
	ruma_txn *x;          /* the transaction running now (db->txn), else NULL:
				 the tpcc_tx_* functions use it for every row */
	ruma_rng rng;
	uint32_t thread;      /* worker number (history keys) */
	uint32_t home;        /* home warehouse when db->home_per_thread */
	uint64_t hist_seq;
	uint64_t committed[5];
	uint64_t rolled_back; /* new-orders with the unused item */
	uint64_t skipped_districts; /* delivery: no deliverable order */
	uint64_t retries;     /* attempts aborted on RUMA_ECONFLICT and run again */
	uint64_t gave_up;     /* transactions abandoned after TPCC_MAX_ATTEMPTS */
	uint32_t no_w, no_d, no_o_id; /* the last new-order tpcc_run_one committed */
	bool pipelined;       /* commit with ruma_txn_commit_nowait ... */
	uint64_t commit_at;   /* ... and the last commit is durable at this LSN */
} tpcc_worker;

enum tpcc_tx { TPCC_TX_NEW_ORDER, TPCC_TX_PAYMENT, TPCC_TX_ORDER_STATUS, TPCC_TX_DELIVERY,
	       TPCC_TX_STOCK_LEVEL };

void tpcc_worker_init(tpcc_worker *wk, tpcc_db *db, uint32_t thread, uint64_t seed);

typedef struct tpcc_new_order_in {
	uint32_t w, d, c;
	uint32_t ol_cnt;
	uint32_t i_id[TPCC_MAX_OL];
	uint32_t supply_w[TPCC_MAX_OL];
	uint32_t quantity[TPCC_MAX_OL];
} tpcc_new_order_in;

typedef struct tpcc_new_order_out {
	uint32_t o_id;
	int64_t total;  /* cents, with discount and taxes */
	int64_t amount[TPCC_MAX_OL];
	int32_t s_quantity[TPCC_MAX_OL];
	char brand[TPCC_MAX_OL]; /* 'B' or 'G' */
} tpcc_new_order_out;

/* 0 committed, TPCC_ROLLED_BACK, or an error.  On the rollback nothing was
 * written without a transaction; in one (wk->x) the caller's abort undoes
 * what the lines before the unused item wrote. */
int tpcc_tx_new_order(tpcc_worker *wk, const tpcc_new_order_in *in, tpcc_new_order_out *out);

typedef struct tpcc_payment_in {
	uint32_t w, d;        /* the terminal's warehouse and district */
	uint32_t c_w, c_d;    /* the customer's */
	bool by_name;
	uint32_t c;           /* when !by_name */
	char c_last[17];      /* when by_name */
	int64_t amount;       /* cents */
} tpcc_payment_in;

typedef struct tpcc_payment_out {
	uint32_t c;           /* customer chosen */
	int64_t c_balance;    /* after */
} tpcc_payment_out;

int tpcc_tx_payment(tpcc_worker *wk, const tpcc_payment_in *in, tpcc_payment_out *out);

typedef struct tpcc_order_status_in {
	uint32_t w, d;
	bool by_name;
	uint32_t c;
	char c_last[17];
} tpcc_order_status_in;

typedef struct tpcc_order_status_out {
	uint32_t c;
	int64_t c_balance;
	uint32_t o_id;        /* 0: the customer has no order */
	uint8_t carrier;
	uint32_t ol_cnt;      /* order lines found */
	tpcc_order_line ol[TPCC_MAX_OL];
} tpcc_order_status_out;

int tpcc_tx_order_status(tpcc_worker *wk, const tpcc_order_status_in *in,
		      tpcc_order_status_out *out);

typedef struct tpcc_delivery_out {
	uint32_t o_id[TPCC_DISTRICTS]; /* delivered order per district, 0 = skipped */
} tpcc_delivery_out;

int tpcc_tx_delivery(tpcc_worker *wk, uint32_t w, uint8_t carrier, tpcc_delivery_out *out);

/* *low = number of distinct items of the district's last 20 orders whose
 * stock in w is below threshold. */
int tpcc_tx_stock_level(tpcc_worker *wk, uint32_t w, uint32_t d, int32_t threshold,
		     uint32_t *low);

/* Generate and run one transaction of the standard mix; *kind tells which,
 * *rolled_back whether a new-order rolled back.  With db->txn the
 * transaction is one ruma_txn (begin ... commit; the rollback is a real
 * ruma_txn_abort) and a row conflict aborts it and runs it again with the
 * same input after a backoff (wk->retries), at most TPCC_MAX_ATTEMPTS times
 * (then wk->gave_up counts it and 0 is returned without committing it).
 * When the commit of a new-order returned, wk->no_w/no_d/no_o_id name it.
 * 0 or an error. */
int tpcc_run_one(tpcc_worker *wk, enum tpcc_tx *kind, bool *rolled_back);

/* Input generators of the transactions (clause 2.x.1), exposed for tests. */
void tpcc_gen_new_order(tpcc_worker *wk, uint32_t w, tpcc_new_order_in *in);
void tpcc_gen_payment(tpcc_worker *wk, uint32_t w, tpcc_payment_in *in);

/* ---- checks (check.c) ---------------------------------------------------------- */

/* Consistency conditions 1-4 of clause 3.3.2 plus row counts of the static
 * tables and of the secondary indexes, and (with trees) ruma_btree_check of
 * every tree.  Run while no transaction is active.  Each violation is
 * printed on `report` (condition, warehouse, district, values); returns 0
 * or RUMA_ECORRUPT or a bm error. */
int tpcc_check(tpcc_db *db, bool trees, FILE *report);

/* tpcc_check_snapshot — the conditions and row counts of tpcc_check (no
 * tree structure) in one read-only transaction: they hold in every snapshot
 * while transactions (db->txn) run.  Violations on `report`; 0,
 * RUMA_ESNAPTOOOLD (the version store's bound dropped versions it needed:
 * run it again), RUMA_ECORRUPT or a bm error. */
int tpcc_check_snapshot(tpcc_db *db, FILE *report);

/* A committed New-Order, as the driver's commit log records it. */
typedef struct tpcc_order_ref {
	uint32_t w, d, o_id;
} tpcc_order_ref;

/* tpcc_check_orders — every order of orders[0, n) (each one whose commit
 * returned) is in the database: its ORDER row, an order id below the
 * district's D_NEXT_O_ID, exactly O_OL_CNT ORDER-LINE rows, and a NEW-ORDER
 * row exactly when it is not delivered.  Violations on `report`; 0 or
 * RUMA_ECORRUPT or a bm error.  Run while no transaction is active. */
int tpcc_check_orders(tpcc_db *db, const tpcc_order_ref *orders, size_t n, FILE *report);

/* Bytes of storage one warehouse needs (estimate for the space check). */
uint64_t tpcc_bytes_per_warehouse(void);

#endif
