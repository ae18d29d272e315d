/*
 * gen.c — TPC-C random generators: uniform and NURand integers with the
 * run-time constants C (clause 2.1.6), a-strings, n-strings, zip codes,
 * i_data/s_data with "ORIGINAL" in 10% of rows (4.3.3.1), and last names
 * from the ten syllables (4.3.2.3).
 *
 * All randomness comes from the caller's ruma_rng, so a seed replays a run.
 * No syscalls.
 */
#include "bench/vmcache/tpcc/tpcc.h"

uint32_t tpcc_urand(ruma_rng *r, uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)ruma_rng_below(r, (uint64_t)hi - lo + 1);
}

uint32_t tpcc_nurand(ruma_rng *r, uint32_t a, uint32_t c, uint32_t x, uint32_t y)
{
	uint32_t v = tpcc_urand(r, 0, a) | tpcc_urand(r, x, y);
	return (v + c) % (y - x + 1) + x;
}

static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

void tpcc_astring(ruma_rng *r, char *out, unsigned lo, unsigned hi)
{
	unsigned n = tpcc_urand(r, lo, hi);
	for (unsigned i = 0; i < n; i++)
		out[i] = alnum[ruma_rng_below(r, sizeof(alnum) - 1)];
	out[n] = '\0';
}

void tpcc_nstring(ruma_rng *r, char *out, unsigned lo, unsigned hi)
{
	unsigned n = tpcc_urand(r, lo, hi);
	for (unsigned i = 0; i < n; i++)
		out[i] = (char)('0' + ruma_rng_below(r, 10));
	out[n] = '\0';
}

void tpcc_zip(ruma_rng *r, char *out)
{
	tpcc_nstring(r, out, 4, 4);
	memcpy(out + 4, "11111", 6);
}

void tpcc_data_original(ruma_rng *r, char *out)
{
	tpcc_astring(r, out, 26, 50);
	if (ruma_rng_below(r, 10) == 0) {
		size_t n = strlen(out);
		size_t at = ruma_rng_below(r, n - 8 + 1);
		memcpy(out + at, "ORIGINAL", 8);
	}
}

static const char *const syllables[10] = { "BAR",  "OUGHT", "ABLE",  "PRI",   "PRES",
					   "ESE",  "ANTI",  "CALLY", "ATION", "EING" };

void tpcc_last_name(uint32_t n, char *out)
{
	out[0] = '\0';
	strcat(out, syllables[(n / 100) % 10]);
	strcat(out, syllables[(n / 10) % 10]);
	strcat(out, syllables[n % 10]);
}

static bool c_last_delta_ok(uint32_t run, uint32_t load)
{
	uint32_t delta = run > load ? run - load : load - run;
	return delta >= 65 && delta <= 119 && delta != 96 && delta != 112;
}

void tpcc_cconst_draw(ruma_rng *r, const tpcc_cconst *load, tpcc_cconst *out)
{
	out->c_id = tpcc_urand(r, 0, 1023);
	out->ol_i_id = tpcc_urand(r, 0, 8191);
	do
		out->c_last = tpcc_urand(r, 0, 255);
	while (load && !c_last_delta_ok(out->c_last, load->c_last));
}

uint32_t tpcc_rand_customer(const tpcc_db *db, ruma_rng *r)
{
	return tpcc_nurand(r, 1023, db->c_run.c_id, 1, db->sz.customers);
}

uint32_t tpcc_rand_item(const tpcc_db *db, ruma_rng *r)
{
	return tpcc_nurand(r, 8191, db->c_run.ol_i_id, 1, db->sz.items);
}

uint32_t tpcc_rand_last_number(const tpcc_db *db, ruma_rng *r, bool load)
{
	uint32_t c = load ? db->c_load.c_last : db->c_run.c_last;
	return tpcc_nurand(r, 255, c, 0, db->sz.names - 1);
}
