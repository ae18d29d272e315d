/*
 * schema.h — TPC-C tables as fixed-size row structs, and their B-tree keys.
 *
 * Every table is one ruma B-tree (plus the two secondary indexes and a small
 * meta tree).  Keys are built with the key builder below: unsigned integers
 * in big-endian byte order (so memcmp order = numeric order; all ids are
 * positive, so no sign bit needs flipping) and fixed-width, NUL-padded
 * strings (so a shorter name sorts before a longer one with the same
 * prefix, as in the spec's ordering by name).
 *
 * Money is kept in integer cents (int64_t) and rates (tax, discount) in
 * integer units of 1/10000, so sums are exact and consistency condition 1
 * (W_YTD = sum D_YTD) is an equality, not a float comparison.  Dates are
 * seconds since the epoch; 0 means null (O_CARRIER_ID 0 means null too).
 * Strings are char arrays one byte longer than the spec's maximum, always
 * NUL-terminated.
 */
#ifndef RUMA_BENCH_TPCC_SCHEMA_H
#define RUMA_BENCH_TPCC_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct tpcc_address {
	char street_1[21];
	char street_2[21];
	char city[21];
	char state[3];
	char zip[10];
} tpcc_address;

typedef struct tpcc_warehouse {
	uint32_t w_id;
	char w_name[11];
	tpcc_address w_addr;
	int32_t w_tax;   /* 1/10000 */
	int64_t w_ytd;   /* cents */
} tpcc_warehouse;

typedef struct tpcc_district {
	uint32_t d_w_id;
	uint8_t d_id;
	char d_name[11];
	tpcc_address d_addr;
	int32_t d_tax;
	int64_t d_ytd;
	uint32_t d_next_o_id;
} tpcc_district;

typedef struct tpcc_customer {
	uint32_t c_w_id;
	uint8_t c_d_id;
	uint32_t c_id;
	char c_first[17];
	char c_middle[3];
	char c_last[17];
	tpcc_address c_addr;
	char c_phone[17];
	uint64_t c_since;
	char c_credit[3];
	int64_t c_credit_lim;
	int32_t c_discount;
	int64_t c_balance;
	int64_t c_ytd_payment;
	uint32_t c_payment_cnt;
	uint32_t c_delivery_cnt;
	char c_data[501];
} tpcc_customer;

typedef struct tpcc_history {
	uint32_t h_c_id;
	uint8_t h_c_d_id;
	uint32_t h_c_w_id;
	uint8_t h_d_id;
	uint32_t h_w_id;
	uint64_t h_date;
	int64_t h_amount;
	char h_data[25];
} tpcc_history;

/* NEW-ORDER row.  no_ready is an implementation column: the row is inserted
 * (pending, 0) together with the D_NEXT_O_ID increment and set to 1 when the
 * order and all its lines exist; Delivery does not take a pending order. */
typedef struct tpcc_new_order {
	uint32_t no_w_id;
	uint8_t no_d_id;
	uint32_t no_o_id;
	uint8_t no_ready;
} tpcc_new_order;

typedef struct tpcc_order {
	uint32_t o_w_id;
	uint8_t o_d_id;
	uint32_t o_id;
	uint32_t o_c_id;
	uint64_t o_entry_d;
	uint8_t o_carrier_id; /* 0 = null */
	uint8_t o_ol_cnt;
	uint8_t o_all_local;
} tpcc_order;

typedef struct tpcc_order_line {
	uint32_t ol_w_id;
	uint8_t ol_d_id;
	uint32_t ol_o_id;
	uint8_t ol_number;
	uint32_t ol_i_id;
	uint32_t ol_supply_w_id;
	uint64_t ol_delivery_d; /* 0 = null */
	uint8_t ol_quantity;
	int64_t ol_amount;
	char ol_dist_info[25];
} tpcc_order_line;

typedef struct tpcc_item {
	uint32_t i_id;
	uint32_t i_im_id;
	char i_name[25];
	int64_t i_price;
	char i_data[51];
} tpcc_item;

typedef struct tpcc_stock {
	uint32_t s_w_id;
	uint32_t s_i_id;
	int32_t s_quantity;
	char s_dist[10][25]; /* S_DIST_01 .. S_DIST_10 */
	uint32_t s_ytd;
	uint32_t s_order_cnt;
	uint32_t s_remote_cnt;
	char s_data[51];
} tpcc_stock;

/* Values handed to B-tree callbacks are not aligned for these structs:
 * callbacks copy a row into an aligned local (tpcc_row_in) and, when they
 * modify it, copy it back (tpcc_row_out).  Copies min(len, size) bytes;
 * the rest of the local is zeroed. */
static inline void *tpcc_row_in(void *row, size_t size, const void *val, size_t len)
{
	memset(row, 0, size);
	memcpy(row, val, len < size ? len : size);
	return row;
}

static inline void tpcc_row_out(void *val, size_t len, const void *row, size_t size)
{
	memcpy(val, row, len < size ? len : size);
}

/* ---- key builder ------------------------------------------------------------ */

#define TPCC_KEY_MAX 64

typedef struct tpcc_key {
	uint8_t b[TPCC_KEY_MAX];
	size_t n;
} tpcc_key;

static inline void tk_init(tpcc_key *k) { k->n = 0; }

static inline void tk_u8(tpcc_key *k, uint8_t v) { k->b[k->n++] = v; }

static inline void tk_u32(tpcc_key *k, uint32_t v)
{
	k->b[k->n++] = (uint8_t)(v >> 24);
	k->b[k->n++] = (uint8_t)(v >> 16);
	k->b[k->n++] = (uint8_t)(v >> 8);
	k->b[k->n++] = (uint8_t)v;
}

static inline void tk_u64(tpcc_key *k, uint64_t v)
{
	tk_u32(k, (uint32_t)(v >> 32));
	tk_u32(k, (uint32_t)v);
}

/* A string in exactly `width` bytes, NUL-padded (truncated if longer). */
static inline void tk_str(tpcc_key *k, const char *s, size_t width)
{
	size_t l = strnlen(s, width);
	memcpy(k->b + k->n, s, l);
	memset(k->b + k->n + l, 0, width - l);
	k->n += width;
}

static inline uint32_t tk_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Keys of the tables (layout in docs/tpcc.md). */
static inline tpcc_key tk_warehouse(uint32_t w)
{
	tpcc_key k;
	tk_init(&k);
	tk_u32(&k, w);
	return k;
}

static inline tpcc_key tk_district(uint32_t w, uint8_t d)
{
	tpcc_key k = tk_warehouse(w);
	tk_u8(&k, d);
	return k;
}

static inline tpcc_key tk_customer(uint32_t w, uint8_t d, uint32_t c)
{
	tpcc_key k = tk_district(w, d);
	tk_u32(&k, c);
	return k;
}

/* customer_wdl: (w, d, c_last, c_first, c_id) → empty value. */
static inline tpcc_key tk_customer_wdl(uint32_t w, uint8_t d, const char *last, const char *first,
				       uint32_t c)
{
	tpcc_key k = tk_district(w, d);
	tk_str(&k, last, 16);
	tk_str(&k, first, 16);
	tk_u32(&k, c);
	return k;
}

/* history: (w, d, c, run, thread, seq) — run numbers the measured phases of
 * this store (0 = load), thread the worker, seq its private counter. */
static inline tpcc_key tk_history(uint32_t w, uint8_t d, uint32_t c, uint32_t run,
				  uint32_t thread, uint64_t seq)
{
	tpcc_key k = tk_customer(w, d, c);
	tk_u32(&k, run);
	tk_u32(&k, thread);
	tk_u64(&k, seq);
	return k;
}

/* new_order, order: (w, d, o). */
static inline tpcc_key tk_order(uint32_t w, uint8_t d, uint32_t o)
{
	tpcc_key k = tk_district(w, d);
	tk_u32(&k, o);
	return k;
}

/* order_wdc: (w, d, c, o) → empty value. */
static inline tpcc_key tk_order_wdc(uint32_t w, uint8_t d, uint32_t c, uint32_t o)
{
	tpcc_key k = tk_customer(w, d, c);
	tk_u32(&k, o);
	return k;
}

/* order_line: (w, d, o, number). */
static inline tpcc_key tk_order_line(uint32_t w, uint8_t d, uint32_t o, uint8_t number)
{
	tpcc_key k = tk_order(w, d, o);
	tk_u8(&k, number);
	return k;
}

static inline tpcc_key tk_item(uint32_t i)
{
	return tk_warehouse(i);
}

/* stock: (w, i). */
static inline tpcc_key tk_stock(uint32_t w, uint32_t i)
{
	tpcc_key k = tk_warehouse(w);
	tk_u32(&k, i);
	return k;
}

#endif
