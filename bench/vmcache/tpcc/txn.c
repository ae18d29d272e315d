/*
 * txn.c — the five TPC-C transactions (clause 2.4-2.8) and the standard mix.
 *
 * Two ways to run them, chosen by db->txn:
 *
 * Plain (a store without a log, the benchmark's default): there are no
 * multi-row transactions; each row read is one validated lookup, each
 * read-modify-write of a row is one ruma_btree_update (the callback runs
 * under the leaf's exclusive latch, so it is atomic), and inserts/removes
 * are single-row operations.  The orderings that keep the consistency
 * conditions true (docs/tpcc.md, "Concurrency"):
 *  - New-Order validates every item before it writes anything, so the 1%
 *    with the unused item roll back with nothing to undo.
 *  - The D_NEXT_O_ID increment and the insert of the (pending) NEW-ORDER row
 *    happen together inside the district row's update callback: order ids are
 *    unique, and NEW-ORDER rows of a district appear in o_id order with no
 *    gaps.  The row is marked ready after the ORDER and ORDER-LINE rows exist.
 *  - Delivery takes the oldest NEW-ORDER row of a district only when it is
 *    ready, and removing it decides between concurrent deliveries: the one
 *    whose remove fails with RUMA_ENOTFOUND looks again.
 *
 * Transactions (a store with a log, `ruma vmcache --durable`): each
 * transaction of the mix is one ruma_txn (include/ruma/txn.h) that every row
 * access goes through (wk->x): rows are locked until commit (strict 2PL),
 * the rollback of New-Order is ruma_txn_abort, a crash undoes whatever had
 * not committed.  A row held by another transaction (RUMA_ECONFLICT) aborts
 * the attempt; tpcc_run_one runs it again with the same input after a
 * backoff.  The district row is locked from the order-id increment to the
 * commit, so New-Order inserts its NEW-ORDER row as ready after the update
 * (no nested insert in the callback).  New-Order reads its warehouse,
 * customer and item rows without locks: it uses only columns that no
 * transaction writes.  Order-Status and Stock-Level are read-only
 * transactions (RUMA_TXN_RDONLY): their point reads and scans see one
 * snapshot of committed data, take no locks and never conflict.
 * Delivery runs under snapshot isolation (RUMA_TXN_SNAPSHOT): its scans
 * see the committed state as of its start, never another transaction's
 * uncommitted row, and a row it then writes that another transaction
 * changed since its start (a concurrent delivery's removal of the same
 * NEW-ORDER row) is a conflict: it retries with a new snapshot.
 *
 * No syscalls (time(2) via the vDSO for dates) but sched_yield and nanosleep
 * in the conflict backoff.
 */
#include "bench/vmcache/tpcc/tpcc.h"
#include "bm/bm_ext.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void tpcc_worker_init(tpcc_worker *wk, tpcc_db *db, uint32_t thread, uint64_t seed)
{
	memset(wk, 0, sizeof(*wk));
	wk->db = db;
	wk->thread = thread;
	ruma_rng_seed(&wk->rng, seed);
	wk->home = thread % db->sz.warehouses + 1;
}

/* A read of columns that no transaction ever writes (ITEM rows; W_TAX;
 * C_DISCOUNT, C_LAST, C_CREDIT): every version of the row has the same
 * values there, so no row lock is needed (it would only make New-Order
 * conflict with Payment on the warehouse and customer rows).  The B-tree
 * lookup itself returns a consistent image of the row. */
static int get_fixed_columns(tpcc_worker *wk, enum tpcc_table t, const tpcc_key *k, void *row,
			     size_t len)
{
	size_t got = 0;
	int rc = ruma_btree_lookup(wk->db->t[t], k->b, k->n, row, len, &got);
	return rc == 0 && got != len ? RUMA_ECORRUPT : rc;
}

/* Row access of the running transaction: through wk->x (row locks, undo)
 * when the database runs transactions, the plain B-tree calls when it is
 * NULL (what ruma_txn_* do with x == NULL, without the extra call). */
static int get(tpcc_worker *wk, enum tpcc_table t, const tpcc_key *k, void *row, size_t len)
{
	if (!wk->x)
		return get_fixed_columns(wk, t, k, row, len);
	size_t got = 0;
	int rc = ruma_txn_lookup(wk->x, wk->db->t[t], k->b, k->n, row, len, &got);
	return rc == 0 && got != len ? RUMA_ECORRUPT : rc;
}

static int put(tpcc_worker *wk, enum tpcc_table t, const tpcc_key *k, const void *row,
	       size_t len)
{
	ruma_btree *tr = wk->db->t[t];
	return wk->x ? ruma_txn_insert(wk->x, tr, k->b, k->n, row, len)
		     : ruma_btree_insert(tr, k->b, k->n, row, len);
}

static int upd(tpcc_worker *wk, enum tpcc_table t, const tpcc_key *k,
	       void (*fn)(void *val, size_t vlen, void *ctx), void *ctx)
{
	ruma_btree *tr = wk->db->t[t];
	return wk->x ? ruma_txn_update(wk->x, tr, k->b, k->n, fn, ctx)
		     : ruma_btree_update(tr, k->b, k->n, fn, ctx);
}

/* ---- New-Order (2.4) ----------------------------------------------------------- */

struct district_no_ctx {
	tpcc_worker *wk; /* NULL: the caller inserts the NEW-ORDER row itself */
	uint32_t o_id;
	int32_t d_tax;
	int rc;
};

/* Under the district row's latch: take the next order id and (without
 * transactions) insert its pending NEW-ORDER row (another tree, so no
 * self-deadlock; nothing ever waits for a district latch while holding a
 * NEW-ORDER latch).  In a transaction the district row stays locked until
 * commit, so the caller inserts the row after this update instead. */
static void district_take_o_id(void *val, size_t vlen, void *arg)
{
	struct district_no_ctx *x = arg;
	tpcc_district d;
	if (vlen != sizeof(d)) {
		x->rc = RUMA_ECORRUPT;
		return;
	}
	tpcc_row_in(&d, sizeof(d), val, vlen);
	x->rc = 0;
	if (x->wk) {
		tpcc_new_order no = { d.d_w_id, d.d_id, d.d_next_o_id, 0 };
		tpcc_key k = tk_order(d.d_w_id, d.d_id, d.d_next_o_id);
		x->rc = put(x->wk, TPCC_NEW_ORDER, &k, &no, sizeof(no));
		if (x->rc)
			return;
	}
	x->o_id = d.d_next_o_id++;
	x->d_tax = d.d_tax;
	tpcc_row_out(val, vlen, &d, sizeof(d));
}

struct stock_ctx {
	uint32_t quantity;
	bool remote;
	uint8_t d;
	int32_t s_quantity; /* after */
	bool original;
	char dist_info[25];
	int rc;
};

static void stock_take(void *val, size_t vlen, void *arg)
{
	struct stock_ctx *x = arg;
	tpcc_stock s_r, *s = &s_r;
	if (vlen != sizeof(*s)) {
		x->rc = RUMA_ECORRUPT;
		return;
	}
	tpcc_row_in(s, sizeof(*s), val, vlen);
	int32_t q = (int32_t)x->quantity;
	if (s->s_quantity >= q + 10)
		s->s_quantity -= q;
	else
		s->s_quantity = s->s_quantity - q + 91;
	s->s_ytd += x->quantity;
	s->s_order_cnt++;
	if (x->remote)
		s->s_remote_cnt++;
	x->s_quantity = s->s_quantity;
	x->original = strstr(s->s_data, "ORIGINAL") != NULL;
	memcpy(x->dist_info, s->s_dist[x->d - 1], sizeof(x->dist_info));
	tpcc_row_out(val, vlen, s, sizeof(*s));
	x->rc = 0;
}

static void new_order_ready(void *val, size_t vlen, void *arg)
{
	tpcc_new_order no;
	if (vlen == sizeof(no)) {
		tpcc_row_in(&no, sizeof(no), val, vlen);
		no.no_ready = 1;
		tpcc_row_out(val, vlen, &no, sizeof(no));
	} else {
		*(int *)arg = RUMA_ECORRUPT;
	}
}

/* Item i_id of a New-Order line: 0, TPCC_ROLLED_BACK for the unused id
 * (counted), or the lookup's error. */
static int new_order_item(tpcc_worker *wk, uint32_t i_id, tpcc_item *item)
{
	tpcc_key k = tk_item(i_id);
	int rc = get_fixed_columns(wk, TPCC_ITEM, &k, item, sizeof(*item));
	if (rc == RUMA_ENOTFOUND) {
		wk->rolled_back++;
		return TPCC_ROLLED_BACK;
	}
	return rc;
}

int tpcc_tx_new_order(tpcc_worker *wk, const tpcc_new_order_in *in, tpcc_new_order_out *out)
{
	tpcc_warehouse wh;
	tpcc_customer cu;
	tpcc_item items[TPCC_MAX_OL];
	tpcc_key k;
	int rc;

	if (in->ol_cnt < 1 || in->ol_cnt > TPCC_MAX_OL)
		return -EINVAL;
	k = tk_warehouse(in->w);
	if ((rc = get_fixed_columns(wk, TPCC_WAREHOUSE, &k, &wh, sizeof(wh))))
		return rc;
	k = tk_customer(in->w, (uint8_t)in->d, in->c);
	if ((rc = get_fixed_columns(wk, TPCC_CUSTOMER, &k, &cu, sizeof(cu))))
		return rc;
	/* Without transactions the items come first: ITEM is never written, so
	 * finding the unused id here and rolling back before any write has the
	 * spec's outcome.  In a transaction each item is read where the
	 * specification reads it, in its order line (clause 2.4.2.2), so the
	 * unused one is met after the district, the order and the earlier lines
	 * were written and the rollback is an abort that undoes them. */
	if (!wk->x) {
		for (uint32_t i = 0; i < in->ol_cnt; i++)
			if ((rc = new_order_item(wk, in->i_id[i], &items[i])))
				return rc;
	}

	struct district_no_ctx dx = { wk->x ? NULL : wk, 0, 0, RUMA_ECORRUPT };
	k = tk_district(in->w, (uint8_t)in->d);
	if ((rc = upd(wk, TPCC_DISTRICT, &k, district_take_o_id, &dx)) || (rc = dx.rc))
		return rc;
	uint32_t o_id = dx.o_id;
	if (wk->x) { /* ready at once: nobody else sees it before the commit */
		tpcc_new_order no = { in->w, (uint8_t)in->d, o_id, 1 };
		k = tk_order(in->w, (uint8_t)in->d, o_id);
		if ((rc = put(wk, TPCC_NEW_ORDER, &k, &no, sizeof(no))))
			return rc;
	}

	bool all_local = true;
	for (uint32_t i = 0; i < in->ol_cnt; i++)
		all_local &= in->supply_w[i] == in->w;
	tpcc_order od = { in->w, (uint8_t)in->d, o_id, in->c, (uint64_t)time(NULL), 0,
			  (uint8_t)in->ol_cnt, all_local };
	k = tk_order(in->w, (uint8_t)in->d, o_id);
	if ((rc = put(wk, TPCC_ORDER, &k, &od, sizeof(od))))
		return rc;
	k = tk_order_wdc(in->w, (uint8_t)in->d, in->c, o_id);
	if ((rc = put(wk, TPCC_ORDER_WDC, &k, NULL, 0)))
		return rc;

	int64_t sum = 0;
	for (uint32_t i = 0; i < in->ol_cnt; i++) {
		if (wk->x && (rc = new_order_item(wk, in->i_id[i], &items[i])))
			return rc;
		struct stock_ctx sx = { in->quantity[i], in->supply_w[i] != in->w, (uint8_t)in->d,
					0, false, { 0 }, RUMA_ECORRUPT };
		k = tk_stock(in->supply_w[i], in->i_id[i]);
		if ((rc = upd(wk, TPCC_STOCK, &k, stock_take, &sx)) || (rc = sx.rc))
			return rc;
		tpcc_order_line ol;
		memset(&ol, 0, sizeof(ol));
		ol.ol_w_id = in->w;
		ol.ol_d_id = (uint8_t)in->d;
		ol.ol_o_id = o_id;
		ol.ol_number = (uint8_t)(i + 1);
		ol.ol_i_id = in->i_id[i];
		ol.ol_supply_w_id = in->supply_w[i];
		ol.ol_quantity = (uint8_t)in->quantity[i];
		ol.ol_amount = (int64_t)in->quantity[i] * items[i].i_price;
		memcpy(ol.ol_dist_info, sx.dist_info, sizeof(ol.ol_dist_info));
		k = tk_order_line(in->w, (uint8_t)in->d, o_id, ol.ol_number);
		if ((rc = put(wk, TPCC_ORDER_LINE, &k, &ol, sizeof(ol))))
			return rc;
		sum += ol.ol_amount;
		if (out) {
			out->amount[i] = ol.ol_amount;
			out->s_quantity[i] = sx.s_quantity;
			out->brand[i] =
				sx.original && strstr(items[i].i_data, "ORIGINAL") ? 'B' : 'G';
		}
	}
	int nrc = 0;
	k = tk_order(in->w, (uint8_t)in->d, o_id);
	if (!wk->x && ((rc = upd(wk, TPCC_NEW_ORDER, &k, new_order_ready, &nrc)) || (rc = nrc)))
		return rc;
	if (out) {
		out->o_id = o_id;
		out->total = sum * (10000 - cu.c_discount) * (10000 + wh.w_tax + dx.d_tax) /
			     100000000;
	}
	return 0;
}

/* ---- customer selection by last name (2.5.2.2, 2.6.2.2) ----------------------- */

#define NAME_MAX_HITS 1024

struct name_scan {
	const uint8_t *prefix;
	size_t plen;
	uint32_t n;
	uint32_t ids[NAME_MAX_HITS];
};

static bool name_visit(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct name_scan *x = arg;
	if (klen != x->plen + 16 + 4 || memcmp(key, x->prefix, x->plen) != 0)
		return false;
	if (x->n < NAME_MAX_HITS)
		x->ids[x->n] = tk_get_u32((const uint8_t *)key + klen - 4);
	x->n++;
	return true;
}

/* The customer at position ceil(n/2) of those named `last` in (w, d),
 * ordered by first name.  RUMA_ENOTFOUND if nobody has the name. */
static int customer_by_name(tpcc_db *db, uint32_t w, uint32_t d, const char *last, uint32_t *c)
{
	tpcc_key k = tk_district(w, (uint8_t)d);
	tk_str(&k, last, 16);
	struct name_scan *x = malloc(sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->prefix = k.b;
	x->plen = k.n;
	x->n = 0;
	int rc = ruma_btree_scan_asc(db->t[TPCC_CUSTOMER_WDL], k.b, k.n, name_visit, x);
	if (!rc && x->n == 0)
		rc = RUMA_ENOTFOUND;
	if (!rc) {
		uint32_t pos = (x->n + 1) / 2 - 1;
		*c = x->ids[pos < NAME_MAX_HITS ? pos : NAME_MAX_HITS - 1];
	}
	free(x);
	return rc;
}

/* ---- Payment (2.5) ------------------------------------------------------------- */

struct ytd_ctx {
	int64_t amount;
	char name[11];
	int rc;
};

static void warehouse_pay(void *val, size_t vlen, void *arg)
{
	struct ytd_ctx *x = arg;
	tpcc_warehouse w;
	if (vlen != sizeof(w))
		return;
	tpcc_row_in(&w, sizeof(w), val, vlen);
	w.w_ytd += x->amount;
	memcpy(x->name, w.w_name, sizeof(x->name));
	tpcc_row_out(val, vlen, &w, sizeof(w));
	x->rc = 0;
}

static void district_pay(void *val, size_t vlen, void *arg)
{
	struct ytd_ctx *x = arg;
	tpcc_district d;
	if (vlen != sizeof(d))
		return;
	tpcc_row_in(&d, sizeof(d), val, vlen);
	d.d_ytd += x->amount;
	memcpy(x->name, d.d_name, sizeof(x->name));
	tpcc_row_out(val, vlen, &d, sizeof(d));
	x->rc = 0;
}

struct customer_pay_ctx {
	const tpcc_payment_in *in;
	int64_t balance;
	int rc;
};

static void customer_pay(void *val, size_t vlen, void *arg)
{
	struct customer_pay_ctx *x = arg;
	tpcc_customer c_r, *c = &c_r;
	if (vlen != sizeof(*c))
		return;
	tpcc_row_in(c, sizeof(*c), val, vlen);
	c->c_balance -= x->in->amount;
	c->c_ytd_payment += x->in->amount;
	c->c_payment_cnt++;
	if (!strcmp(c->c_credit, "BC")) {
		char buf[sizeof(c->c_data) + 64];
		int n = snprintf(buf, sizeof(buf), "%" PRIu32 " %u %" PRIu32 " %" PRIu32 " %" PRIu32
				 " %" PRId64 ".%02" PRId64 " ",
				 c->c_id, c->c_d_id, c->c_w_id, x->in->d, x->in->w,
				 x->in->amount / 100, x->in->amount % 100);
		if (n > 0 && (size_t)n < sizeof(buf))
			snprintf(buf + n, sizeof(buf) - (size_t)n, "%s", c->c_data);
		size_t len = strnlen(buf, sizeof(c->c_data) - 1);
		memcpy(c->c_data, buf, len);
		memset(c->c_data + len, 0, sizeof(c->c_data) - len);
	}
	x->balance = c->c_balance;
	tpcc_row_out(val, vlen, c, sizeof(*c));
	x->rc = 0;
}

int tpcc_tx_payment(tpcc_worker *wk, const tpcc_payment_in *in, tpcc_payment_out *out)
{
	tpcc_db *db = wk->db;
	tpcc_key k;
	int rc;

	uint32_t c = in->c;
	if (in->by_name && (rc = customer_by_name(db, in->c_w, in->c_d, in->c_last, &c)))
		return rc;
	struct ytd_ctx wx = { in->amount, { 0 }, RUMA_ECORRUPT };
	struct ytd_ctx dx = { in->amount, { 0 }, RUMA_ECORRUPT };
	k = tk_warehouse(in->w);
	if ((rc = upd(wk, TPCC_WAREHOUSE, &k, warehouse_pay, &wx)) || (rc = wx.rc))
		return rc;
	k = tk_district(in->w, (uint8_t)in->d);
	if ((rc = upd(wk, TPCC_DISTRICT, &k, district_pay, &dx)) || (rc = dx.rc))
		return rc;
	struct customer_pay_ctx cx = { in, 0, RUMA_ECORRUPT };
	k = tk_customer(in->c_w, (uint8_t)in->c_d, c);
	if ((rc = upd(wk, TPCC_CUSTOMER, &k, customer_pay, &cx)) || (rc = cx.rc))
		return rc;

	tpcc_history h;
	memset(&h, 0, sizeof(h));
	h.h_c_id = c;
	h.h_c_d_id = (uint8_t)in->c_d;
	h.h_c_w_id = in->c_w;
	h.h_d_id = (uint8_t)in->d;
	h.h_w_id = in->w;
	h.h_date = (uint64_t)time(NULL);
	h.h_amount = in->amount;
	snprintf(h.h_data, sizeof(h.h_data), "%.10s    %.10s", wx.name, dx.name);
	k = tk_history(in->c_w, (uint8_t)in->c_d, c, db->run, wk->thread, ++wk->hist_seq);
	if ((rc = put(wk, TPCC_HISTORY, &k, &h, sizeof(h))))
		return rc;
	if (out) {
		out->c = c;
		out->c_balance = cx.balance;
	}
	return 0;
}

/* ---- Order-Status (2.6) -------------------------------------------------------- */

struct last_order_scan {
	tpcc_key prefix;
	uint32_t o_id;
};

static bool last_order_visit(const void *key, size_t klen, const void *val, size_t vlen,
			     void *arg)
{
	struct last_order_scan *x = arg;
	if (klen == x->prefix.n + 4 && memcmp(key, x->prefix.b, x->prefix.n) == 0)
		x->o_id = tk_get_u32((const uint8_t *)key + x->prefix.n);
	return false;
}

struct lines_scan {
	tpcc_key prefix;
	uint32_t n;
	tpcc_order_line *ol;
};

static bool lines_visit(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct lines_scan *x = arg;
	if (klen != x->prefix.n + 1 || memcmp(key, x->prefix.b, x->prefix.n) != 0)
		return false;
	if (x->n < TPCC_MAX_OL && vlen == sizeof(tpcc_order_line))
		memcpy(&x->ol[x->n++], val, vlen);
	return true;
}

int tpcc_tx_order_status(tpcc_worker *wk, const tpcc_order_status_in *in,
		      tpcc_order_status_out *out)
{
	tpcc_db *db = wk->db;
	tpcc_customer cu;
	tpcc_key k;
	int rc;

	memset(out, 0, sizeof(*out));
	uint32_t c = in->c;
	if (in->by_name && (rc = customer_by_name(db, in->w, in->d, in->c_last, &c)))
		return rc;
	k = tk_customer(in->w, (uint8_t)in->d, c);
	if ((rc = get(wk, TPCC_CUSTOMER, &k, &cu, sizeof(cu))))
		return rc;
	out->c = c;
	out->c_balance = cu.c_balance;

	struct last_order_scan lx = { tk_customer(in->w, (uint8_t)in->d, c), 0 };
	k = tk_order_wdc(in->w, (uint8_t)in->d, c, UINT32_MAX);
	if ((rc = ruma_txn_scan_desc(wk->x, db->t[TPCC_ORDER_WDC], k.b, k.n, last_order_visit,
				     &lx)))
		return rc;
	if (lx.o_id == 0)
		return 0;
	tpcc_order od;
	k = tk_order(in->w, (uint8_t)in->d, lx.o_id);
	if ((rc = get(wk, TPCC_ORDER, &k, &od, sizeof(od))))
		return rc;
	out->o_id = lx.o_id;
	out->carrier = od.o_carrier_id;
	struct lines_scan sx = { k, 0, out->ol };
	if ((rc = ruma_txn_scan_asc(wk->x, db->t[TPCC_ORDER_LINE], k.b, k.n, lines_visit, &sx)))
		return rc;
	out->ol_cnt = sx.n;
	return 0;
}

/* ---- Delivery (2.7) ------------------------------------------------------------ */

struct oldest_scan {
	tpcc_key prefix;
	uint32_t o_id;
	bool ready;
};

static bool oldest_visit(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct oldest_scan *x = arg;
	if (klen == x->prefix.n + 4 && memcmp(key, x->prefix.b, x->prefix.n) == 0 &&
	    vlen == sizeof(tpcc_new_order)) {
		x->o_id = tk_get_u32((const uint8_t *)key + x->prefix.n);
		tpcc_new_order no;
		tpcc_row_in(&no, sizeof(no), val, vlen);
		x->ready = no.no_ready != 0;
	}
	return false;
}

struct deliver_order_ctx {
	uint8_t carrier;
	uint32_t c_id;
	uint8_t ol_cnt;
	int rc;
};

static void order_deliver(void *val, size_t vlen, void *arg)
{
	struct deliver_order_ctx *x = arg;
	tpcc_order o;
	if (vlen != sizeof(o))
		return;
	tpcc_row_in(&o, sizeof(o), val, vlen);
	o.o_carrier_id = x->carrier;
	x->c_id = o.o_c_id;
	x->ol_cnt = o.o_ol_cnt;
	tpcc_row_out(val, vlen, &o, sizeof(o));
	x->rc = 0;
}

struct deliver_line_ctx {
	uint64_t now;
	int64_t amount;
	int rc;
};

static void line_deliver(void *val, size_t vlen, void *arg)
{
	struct deliver_line_ctx *x = arg;
	tpcc_order_line ol;
	if (vlen != sizeof(ol))
		return;
	tpcc_row_in(&ol, sizeof(ol), val, vlen);
	ol.ol_delivery_d = x->now;
	x->amount += ol.ol_amount;
	tpcc_row_out(val, vlen, &ol, sizeof(ol));
	x->rc = 0;
}

static void customer_deliver(void *val, size_t vlen, void *arg)
{
	struct deliver_line_ctx *x = arg;
	tpcc_customer c;
	if (vlen != sizeof(c))
		return;
	tpcc_row_in(&c, sizeof(c), val, vlen);
	c.c_balance += x->amount;
	c.c_delivery_cnt++;
	tpcc_row_out(val, vlen, &c, sizeof(c));
	x->rc = 0;
}

/*
 * Claim the oldest ready NEW-ORDER row of (w, d): *o_id = 0 if none.
 *
 * A delivery must not skip over another's uncommitted removal of the
 * oldest row: were it to claim the next order, an abort of the first
 * would bring its order back behind a delivered one — a hole that breaks
 * consistency condition 3.  In a transaction under snapshot isolation (as
 * exec_in_txn runs it) the scan sees the committed rows as of the
 * delivery's start, so this one removes the same row and meets the other's
 * lock (or, once it committed, its newer version) as RUMA_ECONFLICT, and
 * runs again.  In a transaction without a snapshot, whose scan sees
 * uncommitted removals, the district's deliveries are made serial by a
 * lock on the row (w, d, 0) of NEW-ORDER, which no order has (a locking
 * read; under a snapshot the same read is a plain one).  Without
 * transactions the tree is read as it is, and the remove decides: the one
 * whose remove fails with RUMA_ENOTFOUND looks again.
 */
static int claim_oldest(tpcc_worker *wk, uint32_t w, uint8_t d, uint32_t *o_id)
{
	tpcc_db *db = wk->db;
	if (wk->x) {
		tpcc_key lk = tk_order(w, d, 0);
		int rc = ruma_txn_lookup(wk->x, db->t[TPCC_NEW_ORDER], lk.b, lk.n, NULL, 0, NULL);
		if (rc != RUMA_ENOTFOUND)
			return rc ? rc : RUMA_ECORRUPT; /* RUMA_ECONFLICT: retried; a row 0: corrupt */
	}
	for (;;) {
		struct oldest_scan x = { tk_district(w, d), 0, false };
		tpcc_key k = tk_order(w, d, 0);
		int rc = ruma_txn_scan_asc(wk->x, db->t[TPCC_NEW_ORDER], k.b, k.n, oldest_visit, &x);
		if (rc)
			return rc;
		*o_id = 0;
		if (x.o_id == 0 || !x.ready)
			return 0;
		k = tk_order(w, d, x.o_id);
		rc = ruma_txn_remove(wk->x, db->t[TPCC_NEW_ORDER], k.b, k.n);
		if (rc == RUMA_ENOTFOUND && !wk->x)
			continue; /* a concurrent delivery took it */
		if (rc == RUMA_ENOTFOUND)
			return RUMA_ECONFLICT; /* taken since the snapshot: run again */
		if (rc)
			return rc;
		*o_id = x.o_id;
		return 0;
	}
}

int tpcc_tx_delivery(tpcc_worker *wk, uint32_t w, uint8_t carrier, tpcc_delivery_out *out)
{
	uint64_t now = (uint64_t)time(NULL);
	uint64_t skipped = 0; /* counted only when the delivery succeeds */
	tpcc_key k;
	int rc;

	for (uint8_t d = 1; d <= TPCC_DISTRICTS; d++) {
		uint32_t o_id;
		if ((rc = claim_oldest(wk, w, d, &o_id)))
			return rc;
		if (out)
			out->o_id[d - 1] = o_id;
		if (o_id == 0) {
			skipped++;
			continue;
		}
		struct deliver_order_ctx ox = { carrier, 0, 0, RUMA_ECORRUPT };
		k = tk_order(w, d, o_id);
		if ((rc = upd(wk, TPCC_ORDER, &k, order_deliver, &ox)) || (rc = ox.rc))
			return rc;
		struct deliver_line_ctx lx = { now, 0, 0 };
		for (uint8_t n = 1; n <= ox.ol_cnt; n++) {
			lx.rc = RUMA_ECORRUPT;
			k = tk_order_line(w, d, o_id, n);
			if ((rc = upd(wk, TPCC_ORDER_LINE, &k, line_deliver, &lx)) || (rc = lx.rc))
				return rc;
		}
		lx.rc = RUMA_ECORRUPT;
		k = tk_customer(w, d, ox.c_id);
		if ((rc = upd(wk, TPCC_CUSTOMER, &k, customer_deliver, &lx)) || (rc = lx.rc))
			return rc;
	}
	wk->skipped_districts += skipped;
	return 0;
}

/* ---- Stock-Level (2.8) --------------------------------------------------------- */

struct recent_lines_scan {
	tpcc_key prefix;     /* (w, d) */
	uint32_t below;      /* o_id < below */
	uint32_t n;
	uint32_t items[20 * TPCC_MAX_OL];
	uint32_t tmp[20 * TPCC_MAX_OL]; /* sort_items' second buffer */
};

static bool recent_visit(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct recent_lines_scan *x = arg;
	if (klen != x->prefix.n + 5 || memcmp(key, x->prefix.b, x->prefix.n) != 0)
		return false;
	if (tk_get_u32((const uint8_t *)key + x->prefix.n) >= x->below)
		return false;
	if (x->n < 20 * TPCC_MAX_OL && vlen == sizeof(tpcc_order_line)) {
		tpcc_order_line ol;
		tpcc_row_in(&ol, sizeof(ol), val, vlen);
		x->items[x->n++] = ol.ol_i_id;
	}
	return true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Sort the scan's item ids ascending (the stock lookups then go through
 * the stock tree in key order).  Item ids are below 2^18 (100 000 items):
 * two passes of a 9-bit radix sort, a few instructions per id, where qsort
 * costs a call of its comparison per compare; qsort for larger ids. */
#define ITEM_RADIX_BITS 9u
static void sort_items(struct recent_lines_scan *x)
{
	uint32_t max = 0;
	for (uint32_t i = 0; i < x->n; i++)
		max = x->items[i] > max ? x->items[i] : max;
	if (max >> (2 * ITEM_RADIX_BITS)) {
		qsort(x->items, x->n, sizeof(uint32_t), cmp_u32);
		return;
	}
	uint32_t *from = x->items, *to = x->tmp;
	for (unsigned shift = 0; shift < 2 * ITEM_RADIX_BITS; shift += ITEM_RADIX_BITS) {
		uint32_t at[(1u << ITEM_RADIX_BITS) + 1] = { 0 };
		for (uint32_t i = 0; i < x->n; i++)
			at[((from[i] >> shift) & ((1u << ITEM_RADIX_BITS) - 1)) + 1]++;
		for (unsigned b = 0; b < (1u << ITEM_RADIX_BITS); b++)
			at[b + 1] += at[b];
		for (uint32_t i = 0; i < x->n; i++)
			to[at[(from[i] >> shift) & ((1u << ITEM_RADIX_BITS) - 1)]++] = from[i];
		uint32_t *t = from;
		from = to;
		to = t;
	}
	/* an even number of passes: the result is back in x->items */
}

int tpcc_tx_stock_level(tpcc_worker *wk, uint32_t w, uint32_t d, int32_t threshold, uint32_t *low)
{
	tpcc_db *db = wk->db;
	tpcc_district di;
	tpcc_key k = tk_district(w, (uint8_t)d);
	int rc = get(wk, TPCC_DISTRICT, &k, &di, sizeof(di));
	if (rc)
		return rc;
	struct recent_lines_scan *x = malloc(sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->prefix = k;
	x->below = di.d_next_o_id;
	x->n = 0;
	uint32_t from = di.d_next_o_id > 20 ? di.d_next_o_id - 20 : 1;
	k = tk_order(w, (uint8_t)d, from);
	rc = ruma_txn_scan_asc(wk->x, db->t[TPCC_ORDER_LINE], k.b, k.n, recent_visit, x);
	uint32_t count = 0;
	if (!rc) {
		sort_items(x);
		for (uint32_t i = 0; i < x->n && !rc; i++) {
			if (i > 0 && x->items[i] == x->items[i - 1])
				continue;
			tpcc_stock s;
			k = tk_stock(w, x->items[i]);
			rc = get(wk, TPCC_STOCK, &k, &s, sizeof(s));
			if (!rc && s.s_quantity < threshold)
				count++;
		}
	}
	free(x);
	if (!rc)
		*low = count;
	return rc;
}

/* ---- input generation and the mix (5.2.3) -------------------------------------- */

static uint32_t other_warehouse(tpcc_worker *wk, uint32_t w)
{
	uint32_t n = wk->db->sz.warehouses;
	uint32_t o = tpcc_urand(&wk->rng, 1, n - 1);
	return o >= w ? o + 1 : o;
}

void tpcc_gen_new_order(tpcc_worker *wk, uint32_t w, tpcc_new_order_in *in)
{
	tpcc_db *db = wk->db;
	ruma_rng *r = &wk->rng;
	in->w = w;
	in->d = tpcc_urand(r, 1, TPCC_DISTRICTS);
	in->c = tpcc_rand_customer(db, r);
	in->ol_cnt = tpcc_urand(r, 5, 15);
	bool rollback = tpcc_urand(r, 1, 100) == 1;
	for (uint32_t i = 0; i < in->ol_cnt; i++) {
		in->i_id[i] = tpcc_rand_item(db, r);
		if (rollback && i == in->ol_cnt - 1)
			in->i_id[i] = db->sz.items + 1; /* unused: forces the rollback */
		in->supply_w[i] = w;
		if (db->sz.warehouses > 1 && tpcc_urand(r, 1, 100) == 1)
			in->supply_w[i] = other_warehouse(wk, w);
		in->quantity[i] = tpcc_urand(r, 1, 10);
	}
}

static void gen_customer(tpcc_worker *wk, bool *by_name, uint32_t *c, char *last)
{
	*by_name = tpcc_urand(&wk->rng, 1, 100) <= 60;
	*c = 0;
	last[0] = '\0';
	if (*by_name)
		tpcc_last_name(tpcc_rand_last_number(wk->db, &wk->rng, false), last);
	else
		*c = tpcc_rand_customer(wk->db, &wk->rng);
}

void tpcc_gen_payment(tpcc_worker *wk, uint32_t w, tpcc_payment_in *in)
{
	ruma_rng *r = &wk->rng;
	in->w = w;
	in->d = tpcc_urand(r, 1, TPCC_DISTRICTS);
	if (wk->db->sz.warehouses == 1 || tpcc_urand(r, 1, 100) <= 85) {
		in->c_w = w;
		in->c_d = in->d;
	} else {
		in->c_w = other_warehouse(wk, w);
		in->c_d = tpcc_urand(r, 1, TPCC_DISTRICTS);
	}
	gen_customer(wk, &in->by_name, &in->c, in->c_last);
	in->amount = tpcc_urand(r, 100, 500000);
}

/* One transaction of the mix with its input, drawn before the first attempt
 * so that a retry runs the same transaction again. */
struct mix_tx {
	enum tpcc_tx kind;
	union {
		tpcc_new_order_in no;
		tpcc_payment_in pay;
		tpcc_order_status_in os;
		struct { uint32_t w; uint8_t carrier; } dl;
		struct { uint32_t w, d; int32_t threshold; } sl;
	} in;
};

static void gen_mix(tpcc_worker *wk, struct mix_tx *m)
{
	tpcc_db *db = wk->db;
	ruma_rng *r = &wk->rng;
	uint32_t w = db->home_per_thread ? wk->home : tpcc_urand(r, 1, db->sz.warehouses);
	uint32_t x = tpcc_urand(r, 1, 100);

	if (x <= 45) {
		m->kind = TPCC_TX_NEW_ORDER;
		tpcc_gen_new_order(wk, w, &m->in.no);
	} else if (x <= 88) {
		m->kind = TPCC_TX_PAYMENT;
		tpcc_gen_payment(wk, w, &m->in.pay);
	} else if (x <= 92) {
		m->kind = TPCC_TX_ORDER_STATUS;
		m->in.os.w = w;
		m->in.os.d = tpcc_urand(r, 1, TPCC_DISTRICTS);
		gen_customer(wk, &m->in.os.by_name, &m->in.os.c, m->in.os.c_last);
	} else if (x <= 96) {
		m->kind = TPCC_TX_DELIVERY;
		m->in.dl.w = w;
		m->in.dl.carrier = (uint8_t)tpcc_urand(r, 1, 10);
	} else {
		m->kind = TPCC_TX_STOCK_LEVEL;
		m->in.sl.w = w;
		m->in.sl.d = tpcc_urand(r, 1, TPCC_DISTRICTS);
		m->in.sl.threshold = (int32_t)tpcc_urand(r, 10, 20);
	}
}

/* Run m once (in wk->x when there is one): 0, TPCC_ROLLED_BACK or an error. */
static int exec_mix(tpcc_worker *wk, const struct mix_tx *m, tpcc_order_status_out *os_out)
{
	switch (m->kind) {
	case TPCC_TX_NEW_ORDER: {
		tpcc_new_order_out out;
		int rc = tpcc_tx_new_order(wk, &m->in.no, &out);
		if (rc == 0) {
			wk->no_w = m->in.no.w;
			wk->no_d = m->in.no.d;
			wk->no_o_id = out.o_id;
		}
		return rc;
	}
	case TPCC_TX_PAYMENT:
		return tpcc_tx_payment(wk, &m->in.pay, NULL);
	case TPCC_TX_ORDER_STATUS:
		return tpcc_tx_order_status(wk, &m->in.os, os_out);
	case TPCC_TX_DELIVERY:
		return tpcc_tx_delivery(wk, m->in.dl.w, m->in.dl.carrier, NULL);
	case TPCC_TX_STOCK_LEVEL: {
		uint32_t low;
		return tpcc_tx_stock_level(wk, m->in.sl.w, m->in.sl.d, m->in.sl.threshold, &low);
	}
	}
	return -EINVAL;
}

/* exec_mix as one ruma_txn when the database runs transactions: commit on
 * success (without waiting when wk->pipelined: wk->commit_at says when it
 * is durable), abort on the rollback (TPCC_ROLLED_BACK is returned after the
 * abort), on a row conflict and on any error. */
static int exec_in_txn(tpcc_worker *wk, const struct mix_tx *m, tpcc_order_status_out *os_out)
{
	if (!wk->db->txn)
		return exec_mix(wk, m, os_out);
	bool rdonly = m->kind == TPCC_TX_ORDER_STATUS || m->kind == TPCC_TX_STOCK_LEVEL;
	unsigned flags = rdonly ? RUMA_TXN_RDONLY
			 : m->kind == TPCC_TX_DELIVERY ? RUMA_TXN_SNAPSHOT : RUMA_TXN_LOCKING;
	int rc = ruma_txn_begin(wk->db->bm, flags, &wk->x);
	if (rc)
		return rc;
	rc = exec_mix(wk, m, os_out);
	ruma_txn *x = wk->x;
	wk->x = NULL;
	if (rc == 0)
		return wk->pipelined ? ruma_txn_commit_nowait(x, &wk->commit_at) : ruma_txn_commit(x);
	int ar = ruma_txn_abort(x);
	return ar ? ar : rc;
}

/* Wait before attempt `attempt` + 1 after a conflict: a short spin first.
 * A holder that commits without waiting for the disk (no log, ASYNC, or a
 * pipelined commit, which releases its locks before its log is durable)
 * lets go within microseconds, so the next attempts give it the core
 * (sched_yield); only then, or at once when the holder may be waiting for
 * its commit's fdatasync (SYNC), sleeps that double from 1 us up to 1 ms
 * (randomised). */
static void conflict_backoff(tpcc_worker *wk, unsigned attempt)
{
	if (attempt < 3) {
		unsigned spins = 64u << attempt;
		spins += (unsigned)(ruma_rng_next(&wk->rng) % spins);
		for (volatile unsigned i = 0; i < spins; i++)
			;
		return;
	}
	bool holder_syncs = !wk->pipelined &&
			    ruma_bm_durability_of(wk->db->bm) == RUMA_BM_DURABLE_SYNC;
	if (!holder_syncs && attempt < 3 + TPCC_YIELD_ATTEMPTS) {
		sched_yield();
		return;
	}
	unsigned shift = attempt - 3 < 10 ? attempt - 3 : 10;
	uint64_t us = 1ull << shift;
	us += ruma_rng_next(&wk->rng) % us;
	struct timespec ts = { 0, (long)(us * 1000) };
	nanosleep(&ts, NULL);
}

int tpcc_run_one(tpcc_worker *wk, enum tpcc_tx *kind, bool *rolled_back)
{
	struct mix_tx m;
	tpcc_order_status_out *os_out = NULL;
	int rc;

	gen_mix(wk, &m);
	*kind = m.kind;
	*rolled_back = false;
	if (m.kind == TPCC_TX_ORDER_STATUS && !(os_out = malloc(sizeof(*os_out))))
		return -ENOMEM;
	for (unsigned attempt = 0;; attempt++) {
		rc = exec_in_txn(wk, &m, os_out);
		if (rc != RUMA_ECONFLICT)
			break;
		if (attempt + 1 >= TPCC_MAX_ATTEMPTS) {
			wk->gave_up++;
			free(os_out);
			return 0;
		}
		wk->retries++;
		conflict_backoff(wk, attempt);
	}
	free(os_out);
	if (rc == TPCC_ROLLED_BACK) {
		*rolled_back = true;
		rc = 0;
	}
	if (rc == 0 && !*rolled_back)
		wk->committed[m.kind]++;
	return rc;
}
