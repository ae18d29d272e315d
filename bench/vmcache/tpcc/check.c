/*
 * check.c — TPC-C consistency conditions 1-4 (clause 3.3.2.1-3.3.2.4) and
 * row-count checks, from one full scan of each table involved.
 *
 *  1. W_YTD = sum of D_YTD over the warehouse's districts.
 *  2. D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district.
 *  3. max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW-ORDER rows per district.
 *  4. sum of O_OL_CNT = number of ORDER-LINE rows per district.
 * Conditions 2 (NEW-ORDER part) and 3 are skipped for a district without
 * NEW-ORDER rows (max and min are undefined then).  tpcc_check reads each
 * table separately, so it is meaningful only when no transaction runs;
 * tpcc_check_snapshot reads them all in one read-only transaction (one
 * snapshot of committed data), so it holds while transactions run.
 * tpcc_check_orders verifies a list of committed New-Orders (the driver's
 * commit log, the oracle of the crash tests) by point lookups.
 * No syscalls of its own.
 */
#include "bench/vmcache/tpcc/tpcc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

typedef struct dist_acc {
	int64_t d_ytd;
	uint32_t next_o_id;
	uint32_t max_o_id;
	uint64_t sum_ol_cnt;
	uint64_t orders;
	uint32_t no_min, no_max;
	uint64_t no_count;
	uint64_t no_pending;
	uint64_t lines;
	bool seen;
} dist_acc;

typedef struct check_state {
	tpcc_db *db;
	ruma_txn *x;      /* the snapshot the scans read (NULL: plain scans) */
	dist_acc *d;      /* [warehouses * 10] */
	int64_t *w_ytd;   /* [warehouses] */
	bool *w_seen;
	uint64_t rows;    /* of the table being scanned */
	uint64_t bad_rows;
} check_state;

static dist_acc *acc_of(check_state *s, uint32_t w, uint32_t d)
{
	if (w < 1 || w > s->db->sz.warehouses || d < 1 || d > TPCC_DISTRICTS) {
		s->bad_rows++;
		return NULL;
	}
	return &s->d[(size_t)(w - 1) * TPCC_DISTRICTS + (d - 1)];
}

static bool visit_warehouse(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	check_state *s = arg;
	tpcc_warehouse w_r;
	const tpcc_warehouse *w = tpcc_row_in(&w_r, sizeof(w_r), v, vl);
	s->rows++;
	if (vl != sizeof(*w) || w->w_id < 1 || w->w_id > s->db->sz.warehouses ||
	    s->w_seen[w->w_id - 1]) {
		s->bad_rows++;
		return true;
	}
	s->w_seen[w->w_id - 1] = true;
	s->w_ytd[w->w_id - 1] = w->w_ytd;
	return true;
}

static bool visit_district(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	check_state *s = arg;
	tpcc_district d_r;
	const tpcc_district *d = tpcc_row_in(&d_r, sizeof(d_r), v, vl);
	s->rows++;
	dist_acc *a = vl == sizeof(*d) ? acc_of(s, d->d_w_id, d->d_id) : NULL;
	if (!a || a->seen) {
		s->bad_rows += a != NULL || vl != sizeof(*d);
		return true;
	}
	a->seen = true;
	a->d_ytd = d->d_ytd;
	a->next_o_id = d->d_next_o_id;
	return true;
}

static bool visit_order(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	check_state *s = arg;
	tpcc_order o_r;
	const tpcc_order *o = tpcc_row_in(&o_r, sizeof(o_r), v, vl);
	s->rows++;
	dist_acc *a = vl == sizeof(*o) ? acc_of(s, o->o_w_id, o->o_d_id) : NULL;
	if (!a) {
		s->bad_rows += vl != sizeof(*o);
		return true;
	}
	if (o->o_id > a->max_o_id)
		a->max_o_id = o->o_id;
	a->sum_ol_cnt += o->o_ol_cnt;
	a->orders++;
	return true;
}

static bool visit_new_order(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	check_state *s = arg;
	tpcc_new_order no_r;
	const tpcc_new_order *no = tpcc_row_in(&no_r, sizeof(no_r), v, vl);
	s->rows++;
	dist_acc *a = vl == sizeof(*no) ? acc_of(s, no->no_w_id, no->no_d_id) : NULL;
	if (!a) {
		s->bad_rows += vl != sizeof(*no);
		return true;
	}
	if (a->no_count == 0 || no->no_o_id < a->no_min)
		a->no_min = no->no_o_id;
	if (no->no_o_id > a->no_max)
		a->no_max = no->no_o_id;
	a->no_count++;
	a->no_pending += no->no_ready == 0;
	return true;
}

static bool visit_order_line(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	check_state *s = arg;
	tpcc_order_line ol_r;
	const tpcc_order_line *ol = tpcc_row_in(&ol_r, sizeof(ol_r), v, vl);
	s->rows++;
	dist_acc *a = vl == sizeof(*ol) ? acc_of(s, ol->ol_w_id, ol->ol_d_id) : NULL;
	if (!a) {
		s->bad_rows += vl != sizeof(*ol);
		return true;
	}
	a->lines++;
	return true;
}

static bool visit_count(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	((check_state *)arg)->rows++;
	return true;
}

/* Scan a whole table with fn; rows counted in s->rows (reset first). */
static int scan_table(check_state *s, enum tpcc_table t, ruma_btree_scan_fn fn, uint64_t *rows)
{
	s->rows = 0;
	int rc = s->x ? ruma_txn_scan_asc(s->x, s->db->t[t], NULL, 0, fn, s)
		      : ruma_btree_scan_asc(s->db->t[t], NULL, 0, fn, s);
	*rows = s->rows;
	return rc;
}

#define MAX_REPORTS 20

static void violation(FILE *f, unsigned *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void violation(FILE *f, unsigned *n, const char *fmt, ...)
{
	if (f && (*n)++ < MAX_REPORTS) {
		va_list ap;
		va_start(ap, fmt);
		fputs("tpcc check: ", f);
		vfprintf(f, fmt, ap);
		fputc('\n', f);
		va_end(ap);
	} else if (!f) {
		(*n)++;
	}
}

static void check_conditions(check_state *s, FILE *f, unsigned *bad)
{
	uint32_t W = s->db->sz.warehouses;
	for (uint32_t w = 1; w <= W; w++) {
		if (!s->w_seen[w - 1]) {
			violation(f, bad, "warehouse %" PRIu32 " is missing", w);
			continue;
		}
		int64_t sum = 0;
		for (uint32_t d = 1; d <= TPCC_DISTRICTS; d++)
			sum += s->d[(size_t)(w - 1) * TPCC_DISTRICTS + d - 1].d_ytd;
		if (sum != s->w_ytd[w - 1])
			violation(f, bad,
				  "condition 1 (W_YTD = sum(D_YTD)) failed: warehouse %" PRIu32
				  ": w_ytd %" PRId64 " cents, sum of d_ytd %" PRId64 " cents",
				  w, s->w_ytd[w - 1], sum);
		for (uint32_t d = 1; d <= TPCC_DISTRICTS; d++) {
			dist_acc *a = &s->d[(size_t)(w - 1) * TPCC_DISTRICTS + d - 1];
			if (!a->seen) {
				violation(f, bad, "warehouse %" PRIu32 " district %" PRIu32
					  " is missing", w, d);
				continue;
			}
			if (a->next_o_id - 1 != a->max_o_id ||
			    (a->no_count && a->no_max != a->max_o_id))
				violation(f, bad,
					  "condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)) "
					  "failed: warehouse %" PRIu32 " district %" PRIu32
					  ": d_next_o_id - 1 = %" PRIu32 ", max o_id %" PRIu32
					  ", max no_o_id %" PRIu32 " (%" PRIu64 " new-order rows)",
					  w, d, a->next_o_id - 1, a->max_o_id, a->no_max,
					  a->no_count);
			if (a->no_count && (uint64_t)a->no_max - a->no_min + 1 != a->no_count)
				violation(f, bad,
					  "condition 3 (max(NO_O_ID) - min(NO_O_ID) + 1 = rows) "
					  "failed: warehouse %" PRIu32 " district %" PRIu32
					  ": max %" PRIu32 ", min %" PRIu32 ", rows %" PRIu64,
					  w, d, a->no_max, a->no_min, a->no_count);
			if (a->sum_ol_cnt != a->lines)
				violation(f, bad,
					  "condition 4 (sum(O_OL_CNT) = order-line rows) failed: "
					  "warehouse %" PRIu32 " district %" PRIu32
					  ": sum o_ol_cnt %" PRIu64 ", order-line rows %" PRIu64,
					  w, d, a->sum_ol_cnt, a->lines);
			if (a->no_pending)
				violation(f, bad,
					  "warehouse %" PRIu32 " district %" PRIu32 ": %" PRIu64
					  " new-order rows still pending (an unfinished New-Order)",
					  w, d, a->no_pending);
		}
	}
}

static void check_count(FILE *f, unsigned *bad, enum tpcc_table t, uint64_t got, uint64_t want)
{
	if (got != want)
		violation(f, bad, "table %s has %" PRIu64 " rows, expected %" PRIu64,
			  tpcc_table_names[t], got, want);
}

static int scan_all(check_state *s, FILE *f, unsigned *bad)
{
	const tpcc_sizes *sz = &s->db->sz;
	uint64_t W = sz->warehouses, n, orders;
	int rc;

	if ((rc = scan_table(s, TPCC_WAREHOUSE, visit_warehouse, &n)))
		return rc;
	check_count(f, bad, TPCC_WAREHOUSE, n, W);
	if ((rc = scan_table(s, TPCC_DISTRICT, visit_district, &n)))
		return rc;
	check_count(f, bad, TPCC_DISTRICT, n, W * TPCC_DISTRICTS);
	if ((rc = scan_table(s, TPCC_ORDER, visit_order, &orders)) ||
	    (rc = scan_table(s, TPCC_NEW_ORDER, visit_new_order, &n)) ||
	    (rc = scan_table(s, TPCC_ORDER_LINE, visit_order_line, &n)))
		return rc;
	if ((rc = scan_table(s, TPCC_ORDER_WDC, visit_count, &n)))
		return rc;
	check_count(f, bad, TPCC_ORDER_WDC, n, orders);
	if ((rc = scan_table(s, TPCC_CUSTOMER, visit_count, &n)))
		return rc;
	check_count(f, bad, TPCC_CUSTOMER, n, W * TPCC_DISTRICTS * sz->customers);
	if ((rc = scan_table(s, TPCC_CUSTOMER_WDL, visit_count, &n)))
		return rc;
	check_count(f, bad, TPCC_CUSTOMER_WDL, n, W * TPCC_DISTRICTS * sz->customers);
	if ((rc = scan_table(s, TPCC_ITEM, visit_count, &n)))
		return rc;
	check_count(f, bad, TPCC_ITEM, n, sz->items);
	if ((rc = scan_table(s, TPCC_STOCK, visit_count, &n)))
		return rc;
	check_count(f, bad, TPCC_STOCK, n, W * sz->items);
	if ((rc = scan_table(s, TPCC_HISTORY, visit_count, &n)))
		return rc;
	if (n < W * TPCC_DISTRICTS * sz->customers)
		violation(f, bad, "table %s has %" PRIu64 " rows, fewer than the %" PRIu64
			  " loaded", tpcc_table_names[TPCC_HISTORY], n,
			  W * TPCC_DISTRICTS * sz->customers);
	if (s->bad_rows)
		violation(f, bad, "%" PRIu64 " rows with a wrong size or out-of-range ids",
			  s->bad_rows);
	check_conditions(s, f, bad);
	return 0;
}

/* The conditions and counts over scans in x (NULL: plain), then with trees
 * each tree's structure. */
static int check_in(tpcc_db *db, ruma_txn *x, bool trees, FILE *report)
{
	uint32_t W = db->sz.warehouses;
	check_state s = { db, x, calloc((size_t)W * TPCC_DISTRICTS, sizeof(dist_acc)),
			  calloc(W, sizeof(int64_t)), calloc(W, sizeof(bool)), 0, 0 };
	unsigned bad = 0;
	int rc = 0;

	if (!s.d || !s.w_ytd || !s.w_seen)
		rc = -ENOMEM;
	for (int t = 0; t < TPCC_NTABLES && trees && !rc; t++) {
		rc = ruma_btree_check(db->t[t], report);
		if (rc == RUMA_ECORRUPT) {
			violation(report, &bad, "B-tree %s fails its structural check",
				  tpcc_table_names[t]);
			rc = 0;
		}
	}
	if (!rc)
		rc = scan_all(&s, report, &bad);
	free(s.d);
	free(s.w_ytd);
	free(s.w_seen);
	if (!rc && bad) {
		if (report && bad > MAX_REPORTS)
			fprintf(report, "tpcc check: ... %u problems in all\n", bad);
		rc = RUMA_ECORRUPT;
	}
	return rc;
}

int tpcc_check(tpcc_db *db, bool trees, FILE *report)
{
	return check_in(db, NULL, trees, report);
}

int tpcc_check_snapshot(tpcc_db *db, FILE *report)
{
	ruma_txn *x;
	int rc = ruma_txn_begin(db->bm, RUMA_TXN_RDONLY, &x);
	if (rc)
		return rc;
	rc = check_in(db, x, false, report);
	int cr = ruma_txn_commit(x);
	return rc ? rc : cr;
}

/* ---- committed orders ------------------------------------------------------------ */

static int lookup_row(tpcc_db *db, enum tpcc_table t, const tpcc_key *k, void *row, size_t len,
		      bool *found)
{
	uint8_t buf[RUMA_BTREE_MAX_VALUE];
	size_t got = 0;
	int rc = ruma_btree_lookup(db->t[t], k->b, k->n, buf, sizeof(buf), &got);
	*found = rc == 0;
	if (rc == RUMA_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (got != len)
		return RUMA_ECORRUPT;
	if (row)
		tpcc_row_in(row, len, buf, got);
	return 0;
}

/* One committed order: its ORDER row, the district's next id beyond it, its
 * ORDER-LINE rows, and its NEW-ORDER row exactly while it is undelivered. */
static int check_one_order(tpcc_db *db, const tpcc_order_ref *o, FILE *f, unsigned *bad)
{
	tpcc_order od;
	tpcc_district di;
	tpcc_key k;
	bool found;
	int rc;

	if (o->w < 1 || o->w > db->sz.warehouses || o->d < 1 || o->d > TPCC_DISTRICTS ||
	    o->o_id == 0) {
		violation(f, bad, "commit log: order (%" PRIu32 ", %" PRIu32 ", %" PRIu32
			  ") names no district of this database", o->w, o->d, o->o_id);
		return 0;
	}
	k = tk_order(o->w, (uint8_t)o->d, o->o_id);
	if ((rc = lookup_row(db, TPCC_ORDER, &k, &od, sizeof(od), &found)))
		return rc;
	if (!found) {
		violation(f, bad, "commit log: committed order %" PRIu32 " of warehouse %" PRIu32
			  " district %" PRIu32 " is missing (its commit was lost)",
			  o->o_id, o->w, o->d);
		return 0;
	}
	k = tk_district(o->w, (uint8_t)o->d);
	if ((rc = lookup_row(db, TPCC_DISTRICT, &k, &di, sizeof(di), &found)))
		return rc;
	if (!found || di.d_next_o_id <= o->o_id)
		violation(f, bad, "commit log: order %" PRIu32 " of warehouse %" PRIu32
			  " district %" PRIu32 " is not below the district's next order id",
			  o->o_id, o->w, o->d);
	for (uint32_t n = 1; n <= od.o_ol_cnt + 1u; n++) {
		k = tk_order_line(o->w, (uint8_t)o->d, o->o_id, (uint8_t)n);
		if ((rc = lookup_row(db, TPCC_ORDER_LINE, &k, NULL, sizeof(tpcc_order_line),
				     &found)))
			return rc;
		if (found != (n <= od.o_ol_cnt))
			violation(f, bad, "commit log: order %" PRIu32 " of warehouse %" PRIu32
				  " district %" PRIu32 " has %s order line %" PRIu32
				  " (o_ol_cnt %u)", o->o_id, o->w, o->d,
				  found ? "an extra" : "no", n, od.o_ol_cnt);
	}
	k = tk_order(o->w, (uint8_t)o->d, o->o_id);
	if ((rc = lookup_row(db, TPCC_NEW_ORDER, &k, NULL, sizeof(tpcc_new_order), &found)))
		return rc;
	if (found != (od.o_carrier_id == 0))
		violation(f, bad, "commit log: order %" PRIu32 " of warehouse %" PRIu32
			  " district %" PRIu32 " is %s but %s a NEW-ORDER row", o->o_id, o->w,
			  o->d, od.o_carrier_id ? "delivered" : "undelivered",
			  found ? "has" : "has no");
	return 0;
}

int tpcc_check_orders(tpcc_db *db, const tpcc_order_ref *orders, size_t n, FILE *report)
{
	unsigned bad = 0;
	for (size_t i = 0; i < n; i++) {
		int rc = check_one_order(db, &orders[i], report, &bad);
		if (rc)
			return rc;
	}
	if (bad && report && bad > MAX_REPORTS)
		fprintf(report, "tpcc check: ... %u problems in all\n", bad);
	return bad ? RUMA_ECORRUPT : 0;
}
