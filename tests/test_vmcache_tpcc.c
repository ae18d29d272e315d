/*
 * test_vmcache_tpcc.c — TPC-C on the ruma B-tree (bench/vmcache/tpcc):
 * key encodings, generators, the loader (population rules, disjoint
 * parallel warehouse ranges, no duplicated warehouse), each transaction's
 * effects compared with values computed here, the rollback, the
 * consistency checks (and that each broken condition is reported with its
 * warehouse and district), close/reopen, and the `ruma vmcache` CLI.
 *
 * Most cases use a reduced scale (TEST_SCALE: items, customers, orders and
 * new-orders per district divided by 10; a test-only mode of tpcc_sizes
 * that the benchmark never uses); one case loads a full-scale warehouse.
 */
#include "tpcc_util.h"

#define TEST_SCALE 10


/* The single-threaded cases' database, with the worker they run it through. */
static int fx_setup(fixture *f, uint32_t warehouses, uint32_t scale, unsigned threads,
		    uint64_t phys)
{
	int rc = fx_setup_durable(f, warehouses, scale, threads, phys, RUMA_BM_DURABLE_OFF);
	if (rc == 0)
		tpcc_worker_init(&f->wk, f->db, 0, ruma_rng_next(&test_rng));
	return rc;
}

/* One warehouse at the reduced scale, loaded by one thread, 256 MiB of pool. */
static int fx_setup_small(fixture *f)
{
	return fx_setup(f, 1, TEST_SCALE, 1, 256ull << 20);
}

/* The database passes every consistency check (tpcc_check); then f is
 * closed and its file removed.  The check's result. */
static int fx_check_close(fixture *f)
{
	int rc = tpcc_check(f->db, true, stderr);
	fx_close(f, true);
	return rc;
}

static int get_row(tpcc_db *db, enum tpcc_table t, tpcc_key k, void *row, size_t len)
{
	size_t got = 0;
	int rc = ruma_btree_lookup(db->t[t], k.b, k.n, row, len, &got);
	return rc ? rc : got == len ? 0 : RUMA_ECORRUPT;
}

/* Fingerprint of a whole table: count and FNV-1a over keys and values. */
struct fp {
	uint64_t n, h;
};

static bool fp_visit(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct fp *f = arg;
	const uint8_t *b = k;
	f->n++;
	for (size_t i = 0; i < kl; i++)
		f->h = (f->h ^ b[i]) * 0x100000001b3ull;
	b = v;
	for (size_t i = 0; i < vl; i++)
		f->h = (f->h ^ b[i]) * 0x100000001b3ull;
	return true;
}

static int fingerprint(tpcc_db *db, struct fp out[TPCC_NTABLES])
{
	for (int t = 0; t < TPCC_NTABLES; t++) {
		out[t] = (struct fp){ 0, 0xcbf29ce484222325ull };
		int rc = ruma_btree_scan_asc(db->t[t], NULL, 0, fp_visit, &out[t]);
		if (rc)
			return rc;
	}
	return 0;
}

static bool bytes_visit(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	(void)k;
	(void)v;
	*(uint64_t *)arg += kl + vl;
	return true;
}

/* Key + value bytes of every row of every table. */
static uint64_t row_bytes(tpcc_db *db)
{
	uint64_t sum = 0;
	for (int t = 0; t < TPCC_NTABLES; t++)
		ruma_btree_scan_asc(db->t[t], NULL, 0, bytes_visit, &sum);
	return sum;
}

/*
 * Key + value bytes of one loaded warehouse (with the 100 000 items) in
 * viktorleis/vmcache, from sizeof of its row structs (tpcc/Schema.hpp,
 * g++ x86-64) plus its folded keys: item 100k x (96+4), warehouse 112+4,
 * district 10 x (120+8), customer 30k x (712+12), customer_wdl 30k x
 * (4 + 8 + two NUL-terminated names, ~26), history 30k x (72+8), new-order
 * 9k x (1+12), order 30k x (40+12), order_wdc 30k x (1+16), order-line
 * ~300k x (64+16), stock 100k x (352+8).
 */
#define VMCACHE_ROW_BYTES_PER_WH 97.4e6

static uint64_t table_rows(tpcc_db *db, enum tpcc_table t)
{
	struct fp f = { 0, 0 };
	ruma_btree_scan_asc(db->t[t], NULL, 0, fp_visit, &f);
	return f.n;
}

/* ---- keys and generators ------------------------------------------------------ */

static int t_keys_order(void)
{
	for (int i = 0; i < 20000; i++) {
		uint32_t a = (uint32_t)ruma_rng_next(&test_rng), b = (uint32_t)ruma_rng_next(&test_rng);
		if (i & 1)
			b = a + (uint32_t)ruma_rng_below(&test_rng, 3) - 1;
		uint8_t d1 = (uint8_t)ruma_rng_below(&test_rng, 11), d2 = (uint8_t)ruma_rng_below(&test_rng, 11);
		tpcc_key x = tk_order(a, d1, b), y = tk_order(b, d2, a);
		int want = a != b ? (a < b ? -1 : 1) : (d1 != d2 ? (d1 < d2 ? -1 : 1) : 0);
		if (want == 0)
			want = b < a ? -1 : b > a;
		int got = memcmp(x.b, y.b, x.n);
		CHECK_EQ(got < 0 ? -1 : got > 0, want);
		CHECK_EQ(tk_get_u32(x.b), a);
	}
	/* Names: a prefix sorts first; first names order within a last name. */
	tpcc_key p = tk_customer_wdl(1, 1, "BAR", "Z", 9), q = tk_customer_wdl(1, 1, "BARBAR", "A", 1);
	CHECK(memcmp(p.b, q.b, p.n) < 0);
	p = tk_customer_wdl(1, 1, "ABLE", "anna", 9);
	q = tk_customer_wdl(1, 1, "ABLE", "bob", 1);
	CHECK(memcmp(p.b, q.b, p.n) < 0);
	CHECK_EQ(p.n, 4 + 1 + 16 + 16 + 4);
	CHECK_EQ(tk_history(1, 2, 3, 4, 5, 6).n, 4 + 1 + 4 + 4 + 4 + 8);
	return TEST_PASS;
}

static int t_generators(void)
{
	char s[600];
	tpcc_last_name(0, s);
	CHECK(!strcmp(s, "BARBARBAR"));
	tpcc_last_name(371, s);
	CHECK(!strcmp(s, "PRICALLYOUGHT"));
	tpcc_last_name(999, s);
	CHECK(!strcmp(s, "EINGEINGEING"));
	unsigned original = 0;
	for (int i = 0; i < 10000; i++) {
		uint32_t v = tpcc_nurand(&test_rng, 255, 123, 0, 999);
		CHECK(v <= 999);
		v = tpcc_nurand(&test_rng, 8191, 77, 1, 100000);
		CHECK(v >= 1 && v <= 100000);
		tpcc_astring(&test_rng, s, 8, 16);
		CHECK(strlen(s) >= 8 && strlen(s) <= 16);
		tpcc_nstring(&test_rng, s, 16, 16);
		CHECK_EQ(strlen(s), 16);
		CHECK(strspn(s, "0123456789") == 16);
		tpcc_zip(&test_rng, s);
		CHECK(strlen(s) == 9 && !strcmp(s + 4, "11111"));
		tpcc_data_original(&test_rng, s);
		CHECK(strlen(s) >= 26 && strlen(s) <= 50);
		original += strstr(s, "ORIGINAL") != NULL;
		tpcc_cconst load, run;
		tpcc_cconst_draw(&test_rng, NULL, &load);
		tpcc_cconst_draw(&test_rng, &load, &run);
		uint32_t delta = run.c_last > load.c_last ? run.c_last - load.c_last
							   : load.c_last - run.c_last;
		CHECK(delta >= 65 && delta <= 119 && delta != 96 && delta != 112);
		CHECK(run.c_id <= 1023 && run.ol_i_id <= 8191);
	}
	/* 10% have ORIGINAL: 1000 expected, a generous band. */
	CHECK(original > 800 && original < 1200);
	return TEST_PASS;
}

static int t_load_ranges(void)
{
	for (uint32_t w = 1; w <= 64; w++)
		for (unsigned n = 1; n <= 17; n++) {
			uint32_t next = 1;
			for (unsigned t = 0; t < n; t++) {
				uint32_t a, b;
				tpcc_load_range(w, t, n, &a, &b);
				CHECK_EQ(a, next); /* contiguous, disjoint */
				CHECK(b >= a);
				next = b;
			}
			CHECK_EQ(next, w + 1); /* all covered, each once */
		}
	return TEST_PASS;
}

/* ---- loader ------------------------------------------------------------------- */

static int t_parallel_load_no_duplicates(void)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup(&f, 5, 50, 3, 256ull << 20));
	/* Every warehouse once: the checker counts rows per table. */
	CHECK_OK(tpcc_check(f.db, true, stderr));
	CHECK_EQ(table_rows(f.db, TPCC_WAREHOUSE), 5);
	CHECK_EQ(table_rows(f.db, TPCC_STOCK), 5 * f.db->sz.items);
	/* Loading a warehouse a second time is refused, not duplicated. */
	ruma_rng r;
	ruma_rng_seed(&r, 1);
	CHECK_EQ(tpcc_load_warehouse(f.db, 3, &r), RUMA_EEXISTS);
	fx_close(&f, true);
	return TEST_PASS;
}

struct pop {
	uint64_t customers, bc, orders, lines, carrier_null, no;
	uint32_t min_ol, max_ol;
};

static bool pop_customer(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct pop *p = arg;
	tpcc_customer c_r;
	const tpcc_customer *c = tpcc_row_in(&c_r, sizeof(c_r), v, vl);
	char name[17];
	if (c->c_id <= 1000) {
		tpcc_last_name(c->c_id - 1, name);
		if (strcmp(name, c->c_last))
			return false;
	}
	p->customers++;
	p->bc += !strcmp(c->c_credit, "BC");
	return c->c_balance == -1000 && c->c_ytd_payment == 1000 && c->c_payment_cnt == 1;
}

static bool pop_order(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct pop *p = arg;
	tpcc_order o_r;
	const tpcc_order *o = tpcc_row_in(&o_r, sizeof(o_r), v, vl);
	p->orders++;
	p->lines += o->o_ol_cnt;
	p->carrier_null += o->o_carrier_id == 0;
	if (o->o_ol_cnt < p->min_ol)
		p->min_ol = o->o_ol_cnt;
	if (o->o_ol_cnt > p->max_ol)
		p->max_ol = o->o_ol_cnt;
	/* Orders 2101..3000 are undelivered, the others have a carrier. */
	return (o->o_id >= 2101) == (o->o_carrier_id == 0);
}

static bool pop_new_order(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct pop *p = arg;
	tpcc_new_order no_r;
	const tpcc_new_order *no = tpcc_row_in(&no_r, sizeof(no_r), v, vl);
	p->no++;
	return no->no_o_id >= 2101 && no->no_o_id <= 3000 && no->no_ready == 1;
}

static int t_full_scale_population(void)
{
	if (test_sanitized())
		SKIP("a full-scale warehouse takes too long under sanitizers");
	fixture f = { 0 };
	struct pop p = { .min_ol = 99 };
	CHECK_OK(fx_setup(&f, 1, 1, 2, 512ull << 20));
	CHECK_EQ(f.db->sz.items, 100000);
	CHECK_EQ(table_rows(f.db, TPCC_ITEM), 100000);
	CHECK_EQ(table_rows(f.db, TPCC_STOCK), 100000);
	CHECK_OK(ruma_btree_scan_asc(f.db->t[TPCC_CUSTOMER], NULL, 0, pop_customer, &p));
	CHECK_EQ(p.customers, 30000);
	CHECK(p.bc > 2500 && p.bc < 3500); /* 10% bad credit */
	CHECK_OK(ruma_btree_scan_asc(f.db->t[TPCC_ORDER], NULL, 0, pop_order, &p));
	CHECK_EQ(p.orders, 30000);
	CHECK_EQ(p.carrier_null, 9000);
	CHECK_EQ(p.min_ol, 5);
	CHECK_EQ(p.max_ol, 15);
	CHECK_EQ(table_rows(f.db, TPCC_ORDER_LINE), p.lines);
	CHECK_OK(ruma_btree_scan_asc(f.db->t[TPCC_NEW_ORDER], NULL, 0, pop_new_order, &p));
	CHECK_EQ(p.no, 9000);
	CHECK_EQ(table_rows(f.db, TPCC_HISTORY), 30000);
	CHECK_EQ(table_rows(f.db, TPCC_CUSTOMER_WDL), 30000);
	tpcc_district d;
	CHECK_OK(get_row(f.db, TPCC_DISTRICT, tk_district(1, 7), &d, sizeof(d)));
	CHECK_EQ(d.d_next_o_id, 3001);
	CHECK_EQ(d.d_ytd, 3000000);
	CHECK_OK(tpcc_check(f.db, true, stderr));
	ruma_bm_stats st;
	ruma_bm_get_stats(f.bm, &st);
	double rows = (double)row_bytes(f.db);
	printf("  one full-scale warehouse: %.1f MB in the store, %.1f MB of keys and rows "
	       "(vmcache's rows: %.1f MB)\n",
	       (double)st.pages_allocated * RUMA_BM_PAGE_SIZE / 1e6, rows / 1e6,
	       VMCACHE_ROW_BYTES_PER_WH / 1e6);
	/* rows as large as the original's (and the specification's, clause 1.3) */
	CHECK(rows > 0.9 * VMCACHE_ROW_BYTES_PER_WH && rows < 1.1 * VMCACHE_ROW_BYTES_PER_WH);
	fx_close(&f, true);
	return TEST_PASS;
}

/* A load that never completed is not taken for a database. */
static int t_interrupted_load(void)
{
	fixture f = { 0 };
	tpcc_sizes sz;
	snprintf(f.path, sizeof(f.path), "/tmp/ruma-test-tpcc-%d", (int)getpid());
	CHECK_OK(fx_open_bm(&f, 64ull << 20, true));
	CHECK_OK(tpcc_sizes_init(&sz, 1, 50));
	CHECK_OK(tpcc_db_create(f.bm, &sz, &test_rng, &f.db));
	CHECK_OK(tpcc_load_items(f.db, &test_rng));
	fx_close(&f, false);
	CHECK_OK(fx_open_bm(&f, 64ull << 20, false));
	CHECK_EQ(tpcc_db_open(f.bm, &f.db), RUMA_EBADCOMBO);
	CHECK(f.db == NULL);
	fx_close(&f, true);
	return TEST_PASS;
}

/* ---- transactions ----------------------------------------------------------------- */

static int t_new_order(void)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup(&f, 2, TEST_SCALE, 1, 256ull << 20));
	tpcc_new_order_in in = { .w = 1, .d = 4, .c = 17, .ol_cnt = 6 };
	for (uint32_t i = 0; i < in.ol_cnt; i++) {
		in.i_id[i] = 1 + (uint32_t)ruma_rng_below(&test_rng, f.db->sz.items);
		in.supply_w[i] = i == 2 ? 2 : 1; /* one remote line */
		in.quantity[i] = 1 + i;
	}
	in.i_id[4] = in.i_id[3]; /* the same item twice: stock changes twice */
	tpcc_district d0, d1;
	tpcc_stock s0[TPCC_MAX_OL], s1;
	tpcc_warehouse wh;
	tpcc_customer cu;
	CHECK_OK(get_row(f.db, TPCC_DISTRICT, tk_district(1, 4), &d0, sizeof(d0)));
	CHECK_OK(get_row(f.db, TPCC_WAREHOUSE, tk_warehouse(1), &wh, sizeof(wh)));
	CHECK_OK(get_row(f.db, TPCC_CUSTOMER, tk_customer(1, 4, 17), &cu, sizeof(cu)));
	for (uint32_t i = 0; i < in.ol_cnt; i++)
		CHECK_OK(get_row(f.db, TPCC_STOCK, tk_stock(in.supply_w[i], in.i_id[i]), &s0[i],
				 sizeof(s0[i])));
	uint64_t lines0 = table_rows(f.db, TPCC_ORDER_LINE);

	tpcc_new_order_out out;
	CHECK_OK(tpcc_tx_new_order(&f.wk, &in, &out));
	CHECK_EQ(out.o_id, d0.d_next_o_id);
	CHECK_OK(get_row(f.db, TPCC_DISTRICT, tk_district(1, 4), &d1, sizeof(d1)));
	CHECK_EQ(d1.d_next_o_id, d0.d_next_o_id + 1);
	tpcc_order o;
	CHECK_OK(get_row(f.db, TPCC_ORDER, tk_order(1, 4, out.o_id), &o, sizeof(o)));
	CHECK_EQ(o.o_c_id, 17);
	CHECK_EQ(o.o_ol_cnt, 6);
	CHECK_EQ(o.o_carrier_id, 0);
	CHECK_EQ(o.o_all_local, 0);
	tpcc_new_order no;
	CHECK_OK(get_row(f.db, TPCC_NEW_ORDER, tk_order(1, 4, out.o_id), &no, sizeof(no)));
	CHECK_EQ(no.no_ready, 1);
	tpcc_key k = tk_order_wdc(1, 4, 17, out.o_id);
	CHECK_OK(ruma_btree_lookup(f.db->t[TPCC_ORDER_WDC], k.b, k.n, NULL, 0, NULL));
	CHECK_EQ(table_rows(f.db, TPCC_ORDER_LINE), lines0 + 6);
	int64_t sum = 0;
	for (uint32_t i = 0; i < in.ol_cnt; i++) {
		tpcc_order_line ol;
		tpcc_item it;
		CHECK_OK(get_row(f.db, TPCC_ORDER_LINE, tk_order_line(1, 4, out.o_id, (uint8_t)(i + 1)),
				 &ol, sizeof(ol)));
		CHECK_OK(get_row(f.db, TPCC_ITEM, tk_item(in.i_id[i]), &it, sizeof(it)));
		CHECK_EQ(ol.ol_i_id, in.i_id[i]);
		CHECK_EQ(ol.ol_supply_w_id, in.supply_w[i]);
		CHECK_EQ(ol.ol_quantity, in.quantity[i]);
		CHECK_EQ(ol.ol_amount, (int64_t)in.quantity[i] * it.i_price);
		CHECK_EQ(ol.ol_delivery_d, 0);
		CHECK_EQ(out.amount[i], ol.ol_amount);
		sum += ol.ol_amount;
		if (i == 3)
			continue; /* checked with line 4 (same item) */
		/* Expected stock after this (and, for item 3/4, both) lines. */
		int32_t q = s0[i].s_quantity;
		uint32_t ytd = s0[i].s_ytd, cnt = s0[i].s_order_cnt;
		for (uint32_t j = 0; j <= i; j++) {
			if (in.i_id[j] != in.i_id[i] || in.supply_w[j] != in.supply_w[i])
				continue;
			int32_t oq = (int32_t)in.quantity[j];
			q = q >= oq + 10 ? q - oq : q - oq + 91;
			ytd += in.quantity[j];
			cnt++;
		}
		CHECK_OK(get_row(f.db, TPCC_STOCK, tk_stock(in.supply_w[i], in.i_id[i]), &s1,
				 sizeof(s1)));
		CHECK_EQ(s1.s_quantity, q);
		CHECK_EQ(out.s_quantity[i], q);
		CHECK_EQ(s1.s_ytd, ytd);
		CHECK_EQ(s1.s_order_cnt, cnt);
		CHECK_EQ(s1.s_remote_cnt, s0[i].s_remote_cnt + (in.supply_w[i] != 1));
		CHECK(!memcmp(ol.ol_dist_info, s1.s_dist[3], 25));
		char brand = strstr(it.i_data, "ORIGINAL") && strstr(s1.s_data, "ORIGINAL") ? 'B' : 'G';
		CHECK_EQ(out.brand[i], brand);
	}
	CHECK_EQ(out.total,
		 sum * (10000 - cu.c_discount) * (10000 + wh.w_tax + d1.d_tax) / 100000000);
	CHECK_OK(fx_check_close(&f));
	return TEST_PASS;
}

/* A New-Order of warehouse 1 whose last line names the unused item. */
static void gen_rolled_back_order(fixture *f, tpcc_new_order_in *in)
{
	tpcc_gen_new_order(&f->wk, 1, in);
	in->i_id[in->ol_cnt - 1] = f->db->sz.items + 1;
}

/* TEST_PASS when every tree has the rows and hash of `before`. */
static int fingerprint_unchanged(tpcc_db *db, const struct fp before[TPCC_NTABLES])
{
	struct fp after[TPCC_NTABLES];
	CHECK_OK(fingerprint(db, after));
	for (int t = 0; t < TPCC_NTABLES; t++) {
		CHECK_EQ(after[t].n, before[t].n);
		CHECK(after[t].h == before[t].h);
	}
	return TEST_PASS;
}

/* One New-Order that uses the unused item, in a transaction: the district's
 * next order id was taken before the rollback, and the abort succeeds. */
static int rolled_back_in_txn(fixture *f, tpcc_new_order_in *in)
{
	tpcc_district d0, d1;
	tpcc_key dk = tk_district(in->w, (uint8_t)in->d);
	CHECK_OK(get_row(f->db, TPCC_DISTRICT, dk, &d0, sizeof(d0)));
	CHECK_OK(ruma_txn_begin(f->db->bm, RUMA_TXN_LOCKING, &f->wk.x));
	CHECK_EQ(tpcc_tx_new_order(&f->wk, in, NULL), TPCC_ROLLED_BACK);
	/* written before the abort: the order id was taken */
	CHECK_OK(get_row(f->db, TPCC_DISTRICT, dk, &d1, sizeof(d1)));
	CHECK_EQ(d1.d_next_o_id, d0.d_next_o_id + 1);
	ruma_txn *x = f->wk.x;
	f->wk.x = NULL;
	CHECK_OK(ruma_txn_abort(x));
	return TEST_PASS;
}

/* 20 New-Orders that use the unused item on a fresh small database, each
 * rolled back (in a transaction when txn): every tree is as before.  The
 * open fixture goes to *out. */
static int rollbacks(bool txn, fixture *out)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup_small(&f));
	struct fp before[TPCC_NTABLES];
	CHECK_OK(fingerprint(f.db, before));
	for (int rep = 0; rep < 20; rep++) {
		tpcc_new_order_in in;
		gen_rolled_back_order(&f, &in);
		if (txn)
			CHECK(rolled_back_in_txn(&f, &in) == TEST_PASS);
		else
			CHECK_EQ(tpcc_tx_new_order(&f.wk, &in, NULL), TPCC_ROLLED_BACK);
	}
	CHECK_EQ(f.wk.rolled_back, 20);
	CHECK(fingerprint_unchanged(f.db, before) == TEST_PASS);
	*out = f;
	return TEST_PASS;
}

/* In a transaction the unused item is met in its order line, after the
 * district, the order and the earlier lines were written: the rollback is a
 * real abort, and after it every tree is as before. */
static int t_new_order_rollback_txn(void)
{
	fixture f;
	CHECK(rollbacks(true, &f) == TEST_PASS);
	CHECK_OK(fx_check_close(&f));
	return TEST_PASS;
}

/* Two deliveries of one warehouse in concurrent transactions (flags: 0,
 * or RUMA_TXN_SNAPSHOT as the mix runs them): the second must not claim
 * the orders after the ones the first took, or an abort of the first would
 * leave delivered orders behind undelivered ones (condition 3).  It
 * conflicts instead, and runs once the first has ended. */
static int delivery_serial(unsigned flags)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup_small(&f));
	tpcc_worker other;
	tpcc_worker_init(&other, f.db, 1, test_seed + 1);
	tpcc_delivery_out a_out, b_out;
	ruma_txn *a, *b;
	CHECK_OK(ruma_txn_begin(f.db->bm, flags, &a));
	f.wk.x = a;
	CHECK_OK(tpcc_tx_delivery(&f.wk, 1, 3, &a_out));
	CHECK(a_out.o_id[0] != 0);
	CHECK_OK(ruma_txn_begin(f.db->bm, flags, &b));
	other.x = b;
	int rc = tpcc_tx_delivery(&other, 1, 4, &b_out);
	other.x = f.wk.x = NULL;
	CHECK_OK(ruma_txn_abort(b));
	CHECK_OK(ruma_txn_abort(a)); /* its orders are undelivered again */
	CHECK_EQ(rc, RUMA_ECONFLICT);
	CHECK_OK(tpcc_check(f.db, true, stderr));
	/* after the first ended, the second claims the oldest orders */
	CHECK_OK(ruma_txn_begin(f.db->bm, flags, &b));
	other.x = b;
	CHECK_OK(tpcc_tx_delivery(&other, 1, 4, &b_out));
	other.x = NULL;
	CHECK_OK(ruma_txn_commit(b));
	CHECK_EQ(b_out.o_id[0], a_out.o_id[0]);
	CHECK_OK(fx_check_close(&f));
	return TEST_PASS;
}

static int t_delivery_serial_txn(void)
{
	int r = delivery_serial(RUMA_TXN_LOCKING);
	return r != TEST_PASS ? r : delivery_serial(RUMA_TXN_SNAPSHOT);
}

static int t_new_order_rollback(void)
{
	fixture f;
	CHECK(rollbacks(false, &f) == TEST_PASS);
	/* The generator makes about 1% of new-orders use the unused item. */
	unsigned rb = 0;
	for (int i = 0; i < 20000; i++) {
		tpcc_new_order_in in;
		tpcc_gen_new_order(&f.wk, 1, &in);
		rb += in.i_id[in.ol_cnt - 1] == f.db->sz.items + 1;
		for (uint32_t j = 0; j + 1 < in.ol_cnt; j++)
			CHECK(in.i_id[j] >= 1 && in.i_id[j] <= f.db->sz.items);
	}
	CHECK(rb > 100 && rb < 320);
	fx_close(&f, true);
	return TEST_PASS;
}

/* The customer a by-name selection must pick, computed from CUSTOMER. */
struct by_name {
	const char *last;
	uint32_t w, d, n;
	tpcc_customer *rows;
};

static bool by_name_visit(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct by_name *b = arg;
	tpcc_customer c_r;
	const tpcc_customer *c = tpcc_row_in(&c_r, sizeof(c_r), v, vl);
	if (c->c_w_id == b->w && c->c_d_id == b->d && !strcmp(c->c_last, b->last))
		b->rows[b->n++] = *c;
	return true;
}

static int cmp_first(const void *a, const void *b)
{
	return strcmp(((const tpcc_customer *)a)->c_first, ((const tpcc_customer *)b)->c_first);
}

static uint32_t expected_by_name(tpcc_db *db, uint32_t w, uint32_t d, const char *last)
{
	struct by_name b = { last, w, d, 0, malloc(sizeof(tpcc_customer) * db->sz.customers) };
	ruma_btree_scan_asc(db->t[TPCC_CUSTOMER], NULL, 0, by_name_visit, &b);
	uint32_t c = 0;
	if (b.n) {
		qsort(b.rows, b.n, sizeof(tpcc_customer), cmp_first);
		c = b.rows[(b.n + 1) / 2 - 1].c_id;
	}
	free(b.rows);
	return c;
}

static int t_payment(void)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup(&f, 2, TEST_SCALE, 1, 256ull << 20));
	for (int rep = 0; rep < 40; rep++) {
		tpcc_payment_in in;
		tpcc_gen_payment(&f.wk, 1 + (uint32_t)(rep & 1), &in);
		if (rep % 3 == 0) { /* a remote customer */
			in.c_w = in.w == 1 ? 2 : 1;
			in.c_d = 1 + (uint32_t)ruma_rng_below(&test_rng, 10);
		}
		uint32_t c = in.c;
		if (in.by_name)
			c = expected_by_name(f.db, in.c_w, in.c_d, in.c_last);
		CHECK(c != 0);
		tpcc_warehouse w0, w1;
		tpcc_district d0, d1;
		tpcc_customer c0, c1;
		CHECK_OK(get_row(f.db, TPCC_WAREHOUSE, tk_warehouse(in.w), &w0, sizeof(w0)));
		CHECK_OK(get_row(f.db, TPCC_DISTRICT, tk_district(in.w, (uint8_t)in.d), &d0, sizeof(d0)));
		CHECK_OK(get_row(f.db, TPCC_CUSTOMER, tk_customer(in.c_w, (uint8_t)in.c_d, c), &c0,
				 sizeof(c0)));
		uint64_t hist0 = table_rows(f.db, TPCC_HISTORY);
		tpcc_payment_out out;
		CHECK_OK(tpcc_tx_payment(&f.wk, &in, &out));
		CHECK_EQ(out.c, c);
		CHECK_OK(get_row(f.db, TPCC_WAREHOUSE, tk_warehouse(in.w), &w1, sizeof(w1)));
		CHECK_OK(get_row(f.db, TPCC_DISTRICT, tk_district(in.w, (uint8_t)in.d), &d1, sizeof(d1)));
		CHECK_OK(get_row(f.db, TPCC_CUSTOMER, tk_customer(in.c_w, (uint8_t)in.c_d, c), &c1,
				 sizeof(c1)));
		CHECK_EQ(w1.w_ytd, w0.w_ytd + in.amount);
		CHECK_EQ(d1.d_ytd, d0.d_ytd + in.amount);
		CHECK_EQ(c1.c_balance, c0.c_balance - in.amount);
		CHECK_EQ(out.c_balance, c1.c_balance);
		CHECK_EQ(c1.c_ytd_payment, c0.c_ytd_payment + in.amount);
		CHECK_EQ(c1.c_payment_cnt, c0.c_payment_cnt + 1);
		if (!strcmp(c0.c_credit, "BC")) {
			char head[80];
			snprintf(head, sizeof(head), "%u %u %u %u %u ", c, in.c_d, in.c_w, in.d, in.w);
			CHECK(!strncmp(c1.c_data, head, strlen(head)));
			CHECK(strlen(c1.c_data) <= 500);
		} else {
			CHECK(!strcmp(c1.c_data, c0.c_data));
		}
		CHECK_EQ(table_rows(f.db, TPCC_HISTORY), hist0 + 1);
		tpcc_history h;
		CHECK_OK(get_row(f.db, TPCC_HISTORY,
				 tk_history(in.c_w, (uint8_t)in.c_d, c, f.db->run, 0, f.wk.hist_seq),
				 &h, sizeof(h)));
		CHECK_EQ(h.h_amount, in.amount);
		CHECK_EQ(h.h_w_id, in.w);
		CHECK(!strncmp(h.h_data, w0.w_name, strlen(w0.w_name)));
	}
	CHECK_OK(fx_check_close(&f));
	return TEST_PASS;
}

struct latest {
	uint32_t w, d, c, o;
};

static bool latest_visit(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct latest *l = arg;
	tpcc_order o_r;
	const tpcc_order *o = tpcc_row_in(&o_r, sizeof(o_r), v, vl);
	if (o->o_w_id == l->w && o->o_d_id == l->d && o->o_c_id == l->c && o->o_id > l->o)
		l->o = o->o_id;
	return true;
}

static int t_order_status(void)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup_small(&f));
	/* Give some customers a fresh order first. */
	for (int i = 0; i < 30; i++) {
		tpcc_new_order_in in;
		tpcc_gen_new_order(&f.wk, 1, &in);
		in.i_id[in.ol_cnt - 1] = 1;
		CHECK_OK(tpcc_tx_new_order(&f.wk, &in, NULL));
	}
	tpcc_order_status_out *out = malloc(sizeof(*out));
	for (int rep = 0; rep < 40; rep++) {
		tpcc_order_status_in in = { .w = 1, .d = 1 + (uint32_t)ruma_rng_below(&test_rng, 10) };
		in.by_name = rep & 1;
		uint32_t c;
		if (in.by_name) {
			tpcc_last_name(tpcc_rand_last_number(f.db, &test_rng, false), in.c_last);
			c = expected_by_name(f.db, 1, in.d, in.c_last);
		} else {
			c = in.c = tpcc_rand_customer(f.db, &test_rng);
		}
		CHECK_OK(tpcc_tx_order_status(&f.wk, &in, out));
		CHECK_EQ(out->c, c);
		tpcc_customer cu;
		CHECK_OK(get_row(f.db, TPCC_CUSTOMER, tk_customer(1, (uint8_t)in.d, c), &cu, sizeof(cu)));
		CHECK_EQ(out->c_balance, cu.c_balance);
		struct latest l = { 1, in.d, c, 0 };
		ruma_btree_scan_asc(f.db->t[TPCC_ORDER], NULL, 0, latest_visit, &l);
		CHECK_EQ(out->o_id, l.o);
		if (!l.o)
			continue;
		tpcc_order o;
		CHECK_OK(get_row(f.db, TPCC_ORDER, tk_order(1, (uint8_t)in.d, l.o), &o, sizeof(o)));
		CHECK_EQ(out->carrier, o.o_carrier_id);
		CHECK_EQ(out->ol_cnt, o.o_ol_cnt);
		for (uint32_t i = 0; i < out->ol_cnt; i++) {
			tpcc_order_line ol;
			CHECK_OK(get_row(f.db, TPCC_ORDER_LINE,
					 tk_order_line(1, (uint8_t)in.d, l.o, (uint8_t)(i + 1)), &ol,
					 sizeof(ol)));
			CHECK(!memcmp(&ol, &out->ol[i], sizeof(ol)));
		}
	}
	free(out);
	fx_close(&f, true);
	return TEST_PASS;
}

struct min_no {
	uint32_t w, d, min;
};

static bool min_no_visit(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct min_no *m = arg;
	tpcc_new_order no_r;
	const tpcc_new_order *no = tpcc_row_in(&no_r, sizeof(no_r), v, vl);
	if (no->no_w_id == m->w && no->no_d_id == m->d && (m->min == 0 || no->no_o_id < m->min))
		m->min = no->no_o_id;
	return true;
}

static int t_delivery(void)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup_small(&f));
	for (int rep = 0; rep < 3; rep++) {
		uint32_t oldest[10];
		tpcc_order o0[10];
		tpcc_customer c0[10];
		int64_t sum[10];
		for (uint8_t d = 1; d <= 10; d++) {
			struct min_no m = { 1, d, 0 };
			ruma_btree_scan_asc(f.db->t[TPCC_NEW_ORDER], NULL, 0, min_no_visit, &m);
			oldest[d - 1] = m.min;
			CHECK(m.min != 0);
			CHECK_OK(get_row(f.db, TPCC_ORDER, tk_order(1, d, m.min), &o0[d - 1],
					 sizeof(o0[0])));
			CHECK_OK(get_row(f.db, TPCC_CUSTOMER, tk_customer(1, d, o0[d - 1].o_c_id),
					 &c0[d - 1], sizeof(c0[0])));
			sum[d - 1] = 0;
			for (uint8_t n = 1; n <= o0[d - 1].o_ol_cnt; n++) {
				tpcc_order_line ol;
				CHECK_OK(get_row(f.db, TPCC_ORDER_LINE, tk_order_line(1, d, m.min, n),
						 &ol, sizeof(ol)));
				sum[d - 1] += ol.ol_amount;
			}
		}
		tpcc_delivery_out out;
		uint64_t no0 = table_rows(f.db, TPCC_NEW_ORDER);
		CHECK_OK(tpcc_tx_delivery(&f.wk, 1, (uint8_t)(3 + rep), &out));
		CHECK_EQ(table_rows(f.db, TPCC_NEW_ORDER), no0 - 10);
		for (uint8_t d = 1; d <= 10; d++) {
			CHECK_EQ(out.o_id[d - 1], oldest[d - 1]);
			tpcc_key k = tk_order(1, d, oldest[d - 1]);
			CHECK_EQ(ruma_btree_lookup(f.db->t[TPCC_NEW_ORDER], k.b, k.n, NULL, 0, NULL),
				 RUMA_ENOTFOUND);
			tpcc_order o;
			CHECK_OK(get_row(f.db, TPCC_ORDER, k, &o, sizeof(o)));
			CHECK_EQ(o.o_carrier_id, 3 + rep);
			for (uint8_t n = 1; n <= o.o_ol_cnt; n++) {
				tpcc_order_line ol;
				CHECK_OK(get_row(f.db, TPCC_ORDER_LINE, tk_order_line(1, d, o.o_id, n),
						 &ol, sizeof(ol)));
				CHECK(ol.ol_delivery_d != 0);
			}
			tpcc_customer c1;
			CHECK_OK(get_row(f.db, TPCC_CUSTOMER, tk_customer(1, d, o.o_c_id), &c1,
					 sizeof(c1)));
			CHECK_EQ(c1.c_balance, c0[d - 1].c_balance + sum[d - 1]);
			CHECK_EQ(c1.c_delivery_cnt, c0[d - 1].c_delivery_cnt + 1);
		}
	}
	CHECK_OK(tpcc_check(f.db, true, stderr));
	/* Deliver everything: then districts are skipped, not an error. */
	for (uint32_t i = 0; i < f.db->sz.new_orders; i++)
		CHECK_OK(tpcc_tx_delivery(&f.wk, 1, 1, NULL));
	CHECK_EQ(table_rows(f.db, TPCC_NEW_ORDER), 0);
	CHECK(f.wk.skipped_districts >= 30);
	tpcc_delivery_out out;
	CHECK_OK(tpcc_tx_delivery(&f.wk, 1, 1, &out));
	for (int d = 0; d < 10; d++)
		CHECK_EQ(out.o_id[d], 0);
	CHECK_OK(fx_check_close(&f));
	return TEST_PASS;
}

struct recent {
	uint32_t w, d, from, below, n;
	uint32_t items[400];
};

static bool recent_visit(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	struct recent *r = arg;
	tpcc_order_line ol_r;
	const tpcc_order_line *ol = tpcc_row_in(&ol_r, sizeof(ol_r), v, vl);
	if (ol->ol_w_id == r->w && ol->ol_d_id == r->d && ol->ol_o_id >= r->from &&
	    ol->ol_o_id < r->below) {
		bool dup = false;
		for (uint32_t i = 0; i < r->n; i++)
			dup |= r->items[i] == ol->ol_i_id;
		if (!dup)
			r->items[r->n++] = ol->ol_i_id;
	}
	return true;
}

static int t_stock_level(void)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup_small(&f));
	for (int i = 0; i < 60; i++) {
		enum tpcc_tx kind;
		bool rb;
		CHECK_OK(tpcc_run_one(&f.wk, &kind, &rb));
	}
	for (int rep = 0; rep < 20; rep++) {
		uint32_t d = 1 + (uint32_t)ruma_rng_below(&test_rng, 10);
		int32_t threshold = (int32_t)tpcc_urand(&test_rng, 10, 20);
		if (rep == 0)
			threshold = 101; /* every item counts */
		tpcc_district di;
		CHECK_OK(get_row(f.db, TPCC_DISTRICT, tk_district(1, (uint8_t)d), &di, sizeof(di)));
		struct recent r = { 1, d, di.d_next_o_id - 20, di.d_next_o_id, 0, { 0 } };
		ruma_btree_scan_asc(f.db->t[TPCC_ORDER_LINE], NULL, 0, recent_visit, &r);
		uint32_t want = 0;
		for (uint32_t i = 0; i < r.n; i++) {
			tpcc_stock s;
			CHECK_OK(get_row(f.db, TPCC_STOCK, tk_stock(1, r.items[i]), &s, sizeof(s)));
			want += s.s_quantity < threshold;
		}
		uint32_t low = 0;
		CHECK_OK(tpcc_tx_stock_level(&f.wk, 1, d, threshold, &low));
		CHECK_EQ(low, want);
		if (rep == 0)
			CHECK_EQ(low, r.n);
	}
	fx_close(&f, true);
	return TEST_PASS;
}

/* ---- mix, checks, reopen ---------------------------------------------------------- */

static int t_mix_and_reopen(void)
{
	fixture f = { 0 };
	unsigned n = test_sanitized() ? 3000 : 20000;
	CHECK_OK(fx_setup(&f, 2, TEST_SCALE, 2, 256ull << 20));
	CHECK_OK(tpcc_check(f.db, true, stderr));
	uint64_t kinds[5] = { 0 };
	unsigned rolled = 0;
	for (unsigned i = 0; i < n; i++) {
		enum tpcc_tx kind;
		bool rb;
		CHECK_OK(tpcc_run_one(&f.wk, &kind, &rb));
		kinds[kind]++;
		rolled += rb;
	}
	/* The mix: 45/43/4/4/4 within generous bands. */
	CHECK(kinds[TPCC_TX_NEW_ORDER] > n * 40 / 100 && kinds[TPCC_TX_NEW_ORDER] < n * 50 / 100);
	CHECK(kinds[TPCC_TX_PAYMENT] > n * 38 / 100 && kinds[TPCC_TX_PAYMENT] < n * 48 / 100);
	for (int k = 2; k < 5; k++)
		CHECK(kinds[k] > n * 2 / 100 && kinds[k] < n * 6 / 100);
	CHECK(rolled > 0 && rolled < kinds[TPCC_TX_NEW_ORDER] * 3 / 100);
	CHECK_OK(tpcc_check(f.db, true, stderr));
	struct fp before[TPCC_NTABLES], after[TPCC_NTABLES];
	CHECK_OK(fingerprint(f.db, before));

	/* Close and reopen: same contents, still consistent, runs go on. */
	uint32_t run = f.db->run;
	fx_close(&f, false);
	CHECK_OK(fx_open_bm(&f, 64ull << 20, false));
	CHECK_OK(tpcc_db_open(f.bm, &f.db));
	CHECK_EQ(f.db->sz.warehouses, 2);
	CHECK_EQ(f.db->sz.scale, TEST_SCALE);
	CHECK_OK(fingerprint(f.db, after));
	for (int t = 0; t < TPCC_NTABLES; t++) {
		CHECK_EQ(after[t].n, before[t].n);
		CHECK(after[t].h == before[t].h);
	}
	CHECK_OK(tpcc_check(f.db, true, stderr));
	CHECK_OK(tpcc_db_begin_run(f.db, &test_rng));
	CHECK_EQ(f.db->run, run + 1);
	tpcc_worker_init(&f.wk, f.db, 0, 99);
	for (unsigned i = 0; i < n / 4; i++) {
		enum tpcc_tx kind;
		bool rb;
		CHECK_OK(tpcc_run_one(&f.wk, &kind, &rb));
	}
	CHECK_OK(fx_check_close(&f));
	return TEST_PASS;
}

static bool contains(const char *s, const char *a, const char *b)
{
	const char *p = strstr(s, a);
	return p && (!b || strstr(p, b));
}

/* Break each condition once and look for the report naming it. */
static void set_ytd(void *v, size_t l, void *c)
{
	tpcc_district d;
	tpcc_row_in(&d, sizeof(d), v, l);
	d.d_ytd += 1;
	tpcc_row_out(v, l, &d, sizeof(d));
}

static void set_next(void *v, size_t l, void *c)
{
	tpcc_district d;
	tpcc_row_in(&d, sizeof(d), v, l);
	d.d_next_o_id += 1;
	tpcc_row_out(v, l, &d, sizeof(d));
}

static void set_ol_cnt(void *v, size_t l, void *c)
{
	tpcc_order o;
	tpcc_row_in(&o, sizeof(o), v, l);
	o.o_ol_cnt -= 1;
	tpcc_row_out(v, l, &o, sizeof(o));
}

static int expect_violation(tpcc_db *db, const char *what, const char *where)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	CHECK(m != NULL);
	int rc = tpcc_check(db, false, m);
	fclose(m);
	CHECK_EQ(rc, RUMA_ECORRUPT);
	if (!contains(buf, what, where))
		fprintf(stderr, "  report was: %s\n", buf);
	CHECK(contains(buf, what, where));
	free(buf);
	return TEST_PASS;
}

static int t_check_reports(void)
{
	fixture f = { 0 };
	CHECK_OK(fx_setup(&f, 2, 50, 1, 128ull << 20));
	CHECK_OK(tpcc_check(f.db, true, NULL));
	tpcc_key k = tk_district(2, 7);
	CHECK_OK(ruma_btree_update(f.db->t[TPCC_DISTRICT], k.b, k.n, set_ytd, NULL));
	CHECK_EQ(expect_violation(f.db, "condition 1", "warehouse 2"), TEST_PASS);
	ruma_btree_update(f.db->t[TPCC_DISTRICT], k.b, k.n, set_next, NULL);
	CHECK_EQ(expect_violation(f.db, "condition 2", "warehouse 2 district 7"), TEST_PASS);
	/* condition 3: a hole in NEW-ORDER of (1, 3) */
	k = tk_order(1, 3, f.db->sz.customers - 2);
	CHECK_OK(ruma_btree_remove(f.db->t[TPCC_NEW_ORDER], k.b, k.n));
	CHECK_EQ(expect_violation(f.db, "condition 3", "warehouse 1 district 3"), TEST_PASS);
	/* condition 4: O_OL_CNT of an order of (2, 5) off by one */
	k = tk_order(2, 5, 11);
	CHECK_OK(ruma_btree_update(f.db->t[TPCC_ORDER], k.b, k.n, set_ol_cnt, NULL));
	CHECK_EQ(expect_violation(f.db, "condition 4", "warehouse 2 district 5"), TEST_PASS);
	fx_close(&f, true);
	return TEST_PASS;
}

/* ---- the CLI ---------------------------------------------------------------------- */

static int t_cli(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/ruma-test-tpcc-cli-%d", (int)getpid());
	test_cli r = { 0 };
	/* A pool that holds the data: the checks run from memory (eviction is
	 * covered by test_vmcache_tpcc_mt). */
	test_setenv_list("BLOCK", path, "VIRTGB", "2", "PHYSGB", "0.5", "DATASIZE", "1", "THREADS",
			 "2", "RUNFOR", "1", "RNDREAD", "0", (char *)NULL);
	char *argv1[] = { NULL, "vmcache", "--check", NULL };
	test_cli_argv(&r, argv1);
	CHECK(test_cli_ok(&r));
	CHECK_HAS(r.out, "ts,tx,rmb,wmb", ",tpcc,");
	CHECK_HAS(r.err, "tpcc check: consistency conditions 1-4", "space:");

	/* --keep: reopen without loading, still consistent after another run. */
	char *argv2[] = { NULL, "vmcache", "--check", "--keep", NULL };
	test_cli_argv(&r, argv2);
	CHECK(test_cli_ok(&r));
	CHECK_HAS(r.err, "load: skipped", "tpcc check: consistency conditions 1-4");

	/* Break condition 1 in the file; --keep --check must fail with exit 1. */
	fixture f = { 0 };
	snprintf(f.path, sizeof(f.path), "%s", path);
	CHECK_OK(fx_open_bm(&f, 64ull << 20, false));
	CHECK_OK(tpcc_db_open(f.bm, &f.db));
	tpcc_key k = tk_district(1, 9);
	CHECK_OK(ruma_btree_update(f.db->t[TPCC_DISTRICT], k.b, k.n, set_ytd, NULL));
	fx_close(&f, false);
	CHECK_EQ(test_cli_argv(&r, argv2), 1);
	CHECK(contains(r.err, "condition 1", "warehouse 1"));

	/* A different DATASIZE with --keep is refused (exit 2). */
	setenv("DATASIZE", "2", 1);
	CHECK_EQ(test_cli_argv(&r, argv2), 2);
	CHECK(strstr(r.err, "DATASIZE") != NULL);
	/* DATASIZE 0 warehouses is refused. */
	setenv("DATASIZE", "0", 1);
	CHECK_EQ(test_cli_argv(&r, argv1), 2);
	test_cli_free(&r);
	unlink(path);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "keys_order", t_keys_order },
	{ "generators", t_generators },
	{ "load_ranges", t_load_ranges },
	{ "parallel_load_no_duplicates", t_parallel_load_no_duplicates },
	{ "full_scale_population", t_full_scale_population },
	{ "interrupted_load", t_interrupted_load },
	{ "new_order", t_new_order },
	{ "new_order_rollback", t_new_order_rollback },
	{ "new_order_rollback_txn", t_new_order_rollback_txn },
	{ "delivery_serial_txn", t_delivery_serial_txn },
	{ "payment", t_payment },
	{ "order_status", t_order_status },
	{ "delivery", t_delivery },
	{ "stock_level", t_stock_level },
	{ "mix_and_reopen", t_mix_and_reopen },
	{ "check_reports", t_check_reports },
	{ "cli", t_cli },
};

int main(int argc, char **argv)
{
	return test_main("vmcache_tpcc", cases, TEST_N(cases), argc, argv);
}
