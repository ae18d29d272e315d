/*
 * load.c — the TPC-C initial population (clause 4.3.3.1).
 *
 * ITEM is loaded once; each warehouse is loaded by exactly one thread with
 * its STOCK, DISTRICT, CUSTOMER (+ secondary index by last name), HISTORY,
 * ORDER (+ secondary index by customer), ORDER-LINE and NEW-ORDER rows.
 * Threads get disjoint, contiguous warehouse ranges (tpcc_load_range); a
 * warehouse loaded twice would fail with RUMA_EEXISTS on its first insert.
 * A SIGINT/SIGTERM seen by the driver stops a share between warehouses (-EINTR).
 * No syscalls besides what the buffer manager does for the trees.
 */
#include "bench/vmcache/tpcc/tpcc.h"
#include "bench/vmcache/workload.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

void tpcc_load_range(uint32_t warehouses, unsigned tid, unsigned n, uint32_t *first,
		     uint32_t *last)
{
	uint64_t w = warehouses;
	*first = (uint32_t)(1 + w * tid / n);
	*last = (uint32_t)(1 + w * (tid + 1) / n);
}

static int put(tpcc_db *db, enum tpcc_table t, const tpcc_key *k, const void *row, size_t len)
{
	return ruma_btree_insert(db->t[t], k->b, k->n, row, len);
}

static void gen_address(ruma_rng *r, tpcc_address *a)
{
	tpcc_astring(r, a->street_1, 10, 20);
	tpcc_astring(r, a->street_2, 10, 20);
	tpcc_astring(r, a->city, 10, 20);
	tpcc_astring(r, a->state, 2, 2);
	tpcc_zip(r, a->zip);
}

int tpcc_load_items(tpcc_db *db, ruma_rng *r)
{
	for (uint32_t i = 1; i <= db->sz.items; i++) {
		tpcc_item it;
		memset(&it, 0, sizeof(it));
		it.i_id = i;
		it.i_im_id = tpcc_urand(r, 1, 10000);
		tpcc_astring(r, it.i_name, 14, 24);
		it.i_price = tpcc_urand(r, 100, 10000);
		tpcc_data_original(r, it.i_data);
		tpcc_key k = tk_item(i);
		int rc = put(db, TPCC_ITEM, &k, &it, sizeof(it));
		if (rc)
			return rc;
	}
	return 0;
}

static int load_stock(tpcc_db *db, uint32_t w, ruma_rng *r)
{
	for (uint32_t i = 1; i <= db->sz.items; i++) {
		tpcc_stock s;
		memset(&s, 0, sizeof(s));
		s.s_w_id = w;
		s.s_i_id = i;
		s.s_quantity = (int32_t)tpcc_urand(r, 10, 100);
		for (int d = 0; d < 10; d++)
			tpcc_astring(r, s.s_dist[d], 24, 24);
		tpcc_data_original(r, s.s_data);
		tpcc_key k = tk_stock(w, i);
		int rc = put(db, TPCC_STOCK, &k, &s, sizeof(s));
		if (rc)
			return rc;
	}
	return 0;
}

static int load_customer(tpcc_db *db, uint32_t w, uint8_t d, uint32_t c, uint64_t now,
			 ruma_rng *r)
{
	tpcc_customer cu;
	memset(&cu, 0, sizeof(cu));
	cu.c_w_id = w;
	cu.c_d_id = d;
	cu.c_id = c;
	tpcc_astring(r, cu.c_first, 8, 16);
	memcpy(cu.c_middle, "OE", 3);
	uint32_t name = c <= db->sz.names ? c - 1 : tpcc_rand_last_number(db, r, true);
	tpcc_last_name(name, cu.c_last);
	gen_address(r, &cu.c_addr);
	tpcc_nstring(r, cu.c_phone, 16, 16);
	cu.c_since = now;
	memcpy(cu.c_credit, ruma_rng_below(r, 10) == 0 ? "BC" : "GC", 3);
	cu.c_credit_lim = 5000000;
	cu.c_discount = (int32_t)tpcc_urand(r, 0, 5000);
	cu.c_balance = -1000;
	cu.c_ytd_payment = 1000;
	cu.c_payment_cnt = 1;
	cu.c_delivery_cnt = 0;
	tpcc_astring(r, cu.c_data, 300, 500);
	tpcc_key k = tk_customer(w, d, c);
	int rc = put(db, TPCC_CUSTOMER, &k, &cu, sizeof(cu));
	if (rc)
		return rc;
	k = tk_customer_wdl(w, d, cu.c_last, cu.c_first, c);
	if ((rc = put(db, TPCC_CUSTOMER_WDL, &k, NULL, 0)))
		return rc;

	tpcc_history h;
	memset(&h, 0, sizeof(h));
	h.h_c_id = c;
	h.h_c_d_id = d;
	h.h_c_w_id = w;
	h.h_d_id = d;
	h.h_w_id = w;
	h.h_date = now;
	h.h_amount = 1000;
	tpcc_astring(r, h.h_data, 12, 24);
	k = tk_history(w, d, c, 0, 0, 0);
	return put(db, TPCC_HISTORY, &k, &h, sizeof(h));
}

static int load_order(tpcc_db *db, uint32_t w, uint8_t d, uint32_t o, uint32_t c, uint64_t now,
		      ruma_rng *r)
{
	uint32_t first_new = db->sz.customers - db->sz.new_orders + 1;
	bool delivered = o < first_new;
	tpcc_order od;
	memset(&od, 0, sizeof(od));
	od.o_w_id = w;
	od.o_d_id = d;
	od.o_id = o;
	od.o_c_id = c;
	od.o_entry_d = now;
	od.o_carrier_id = delivered ? (uint8_t)tpcc_urand(r, 1, 10) : 0;
	od.o_ol_cnt = (uint8_t)tpcc_urand(r, 5, 15);
	od.o_all_local = 1;
	tpcc_key k = tk_order(w, d, o);
	int rc = put(db, TPCC_ORDER, &k, &od, sizeof(od));
	if (rc)
		return rc;
	k = tk_order_wdc(w, d, c, o);
	if ((rc = put(db, TPCC_ORDER_WDC, &k, NULL, 0)))
		return rc;
	for (uint8_t n = 1; n <= od.o_ol_cnt; n++) {
		tpcc_order_line ol;
		memset(&ol, 0, sizeof(ol));
		ol.ol_w_id = w;
		ol.ol_d_id = d;
		ol.ol_o_id = o;
		ol.ol_number = n;
		ol.ol_i_id = tpcc_urand(r, 1, db->sz.items);
		ol.ol_supply_w_id = w;
		ol.ol_delivery_d = delivered ? now : 0;
		ol.ol_quantity = 5;
		ol.ol_amount = delivered ? 0 : tpcc_urand(r, 1, 999999);
		tpcc_astring(r, ol.ol_dist_info, 24, 24);
		k = tk_order_line(w, d, o, n);
		if ((rc = put(db, TPCC_ORDER_LINE, &k, &ol, sizeof(ol))))
			return rc;
	}
	if (!delivered) {
		tpcc_new_order no = { w, d, o, 1 };
		k = tk_order(w, d, o);
		rc = put(db, TPCC_NEW_ORDER, &k, &no, sizeof(no));
	}
	return rc;
}

static int load_district(tpcc_db *db, uint32_t w, uint8_t d, uint64_t now, ruma_rng *r)
{
	tpcc_district di;
	memset(&di, 0, sizeof(di));
	di.d_w_id = w;
	di.d_id = d;
	tpcc_astring(r, di.d_name, 6, 10);
	gen_address(r, &di.d_addr);
	di.d_tax = (int32_t)tpcc_urand(r, 0, 2000);
	di.d_ytd = 3000000;
	di.d_next_o_id = db->sz.customers + 1;
	tpcc_key k = tk_district(w, d);
	int rc = put(db, TPCC_DISTRICT, &k, &di, sizeof(di));
	for (uint32_t c = 1; c <= db->sz.customers && !rc; c++)
		rc = load_customer(db, w, d, c, now, r);
	if (rc)
		return rc;

	/* Orders go to a random permutation of the customers. */
	uint64_t *perm = malloc(sizeof(uint64_t) * db->sz.customers);
	if (!perm)
		return -ENOMEM;
	for (uint32_t c = 0; c < db->sz.customers; c++)
		perm[c] = c + 1;
	ruma_rng_shuffle_u64(r, perm, db->sz.customers);
	for (uint32_t o = 1; o <= db->sz.customers && !rc; o++)
		rc = load_order(db, w, d, o, (uint32_t)perm[o - 1], now, r);
	free(perm);
	return rc;
}

int tpcc_load_warehouse(tpcc_db *db, uint32_t w, ruma_rng *r)
{
	uint64_t now = (uint64_t)time(NULL);
	tpcc_warehouse wh;
	memset(&wh, 0, sizeof(wh));
	wh.w_id = w;
	tpcc_astring(r, wh.w_name, 6, 10);
	gen_address(r, &wh.w_addr);
	wh.w_tax = (int32_t)tpcc_urand(r, 0, 2000);
	wh.w_ytd = 30000000;
	tpcc_key k = tk_warehouse(w);
	int rc = put(db, TPCC_WAREHOUSE, &k, &wh, sizeof(wh));
	if (!rc)
		rc = load_stock(db, w, r);
	for (uint8_t d = 1; d <= TPCC_DISTRICTS && !rc; d++)
		rc = load_district(db, w, d, now, r);
	return rc;
}

int tpcc_load_share(tpcc_db *db, unsigned tid, unsigned n, uint64_t seed)
{
	ruma_rng rng;
	uint32_t first, last;
	int rc = 0;

	ruma_rng_seed(&rng, seed ^ (0x9e3779b97f4a7c15ull * (tid + 1)));
	if (tid == 0)
		rc = tpcc_load_items(db, &rng);
	tpcc_load_range(db->sz.warehouses, tid, n, &first, &last);
	for (uint32_t w = first; w < last && !rc; w++)
		rc = ruma_vmcache_interrupted() ? -EINTR : tpcc_load_warehouse(db, w, &rng);
	return rc;
}
