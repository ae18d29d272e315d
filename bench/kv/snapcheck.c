/*
 * snapcheck.c — the one-snapshot check of a full-table scan (snapcheck.h).
 *
 * The check follows the scan entry by entry, at a cost per entry of a
 * 16-byte key comparison against the expected key (kept as text and
 * incremented in place, not formatted again) and two 8-byte loads, small
 * beside the copy of the value every scan makes; so it runs in every scan
 * of both workloads, and the two are compared doing the same work.
 *
 * No system calls.
 */
#include "bench/kv/snapcheck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool ruma_kv_stamped(const ruma_kv_workload *wl)
{
	return wl->pattern == RUMA_KV_SCANFULL;
}

void ruma_kv_stamp_value(unsigned char *val, uint64_t number, uint64_t stamp)
{
	memcpy(val, &number, 8);
	memcpy(val + 8, &stamp, 8);
}

void ruma_kv_snapcheck_start(ruma_kv_snapcheck *c, uint64_t records, uint64_t value_size)
{
	memset(c, 0, sizeof(*c));
	c->records = records;
	c->value_size = value_size;
	c->want_len = ruma_kv_key(RUMA_KV_KEYS_DBBENCH, 0, c->want);
}

__attribute__((format(printf, 2, 3)))
static bool broken(ruma_kv_snapcheck *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	c->bad = true;
	return false;
}

/* The expected key moves to the next key number (decimal increment). */
static void advance(ruma_kv_snapcheck *c)
{
	c->next++;
	for (size_t i = c->want_len; i-- > 0;) {
		if (c->want[i] != '9') {
			c->want[i]++;
			return;
		}
		c->want[i] = '0';
	}
	c->want_len = ruma_kv_key(RUMA_KV_KEYS_DBBENCH, c->next, c->want); /* one digit more */
}

/* A key for a message: at most RUMA_KV_KEY_MAX bytes of it. */
#define KEYF "\"%.*s\""
#define KEYA(k, len) (int)((len) < RUMA_KV_KEY_MAX ? (len) : RUMA_KV_KEY_MAX), (const char *)(k)

static bool meta_entry(ruma_kv_snapcheck *c, const void *key, size_t klen, const void *val,
		       size_t vlen)
{
	uint64_t number, stamp;
	if (klen != RUMA_KV_META_KLEN || memcmp(key, RUMA_KV_META_KEY, klen))
		return broken(c, "the first entry is " KEYF ", not the meta row \"%s\"",
			      KEYA(key, klen), RUMA_KV_META_KEY);
	if (vlen != c->value_size)
		return broken(c, "the meta row has a value of %zu bytes, %" PRIu64 " written", vlen,
			      c->value_size);
	memcpy(&number, val, 8);
	memcpy(&stamp, (const unsigned char *)val + 8, 8);
	if (number != RUMA_KV_META_NUMBER)
		return broken(c, "the meta row holds a value written for key number %" PRIu64,
			      number);
	c->meta = stamp;
	c->meta_seen = true;
	return true;
}

/* The key found is not the one expected: a key missing, or one out of order. */
static bool wrong_key(ruma_kv_snapcheck *c, const void *key, size_t klen)
{
	size_t m = klen < c->want_len ? klen : c->want_len;
	int cmp = memcmp(key, c->want, m);
	if (cmp > 0 || (cmp == 0 && klen > c->want_len))
		return broken(c, "key number %" PRIu64 " " KEYF " missing: the scan went on at " KEYF,
			      c->next, KEYA(c->want, c->want_len), KEYA(key, klen));
	return broken(c, "key " KEYF " out of order or seen twice: key number %" PRIu64 " " KEYF
		      " expected", KEYA(key, klen), c->next, KEYA(c->want, c->want_len));
}

bool ruma_kv_snapcheck_entry(ruma_kv_snapcheck *c, const void *key, size_t klen,
			     const void *val, size_t vlen)
{
	uint64_t number, stamp;
	if (c->bad)
		return false;
	if (!c->meta_seen)
		return meta_entry(c, key, klen, val, vlen);
	if (c->next >= c->records)
		return broken(c, "an entry " KEYF " after the last key number %" PRIu64,
			      KEYA(key, klen), c->records - 1);
	if (klen != c->want_len || memcmp(key, c->want, klen))
		return wrong_key(c, key, klen);
	if (vlen != c->value_size)
		return broken(c, "key " KEYF ": a value of %zu bytes, %" PRIu64 " written",
			      KEYA(key, klen), vlen, c->value_size);
	memcpy(&number, val, 8);
	memcpy(&stamp, (const unsigned char *)val + 8, 8);
	if (number != c->next)
		return broken(c, "key " KEYF ": its value was written for key number %" PRIu64,
			      KEYA(key, klen), number);
	if (stamp > c->meta)
		return broken(c, "key " KEYF " has stamp %" PRIu64 ", newer than the meta row's "
			      "%" PRIu64 ": the scan mixes committed states", KEYA(key, klen),
			      stamp, c->meta);
	if (stamp > c->max) {
		c->max = stamp;
		c->max_at = c->next;
	}
	advance(c);
	return true;
}

int ruma_kv_snapcheck_end(ruma_kv_snapcheck *c)
{
	char key[RUMA_KV_KEY_MAX];
	if (c->bad)
		return -EIO;
	if (!c->meta_seen) {
		broken(c, "the scan found no meta row \"%s\" (an empty table)", RUMA_KV_META_KEY);
		return -EIO;
	}
	if (c->next != c->records) {
		broken(c, "the scan ended after %" PRIu64 " of %" PRIu64 " keys: key number %" PRIu64
		       " " KEYF " missing", c->next, c->records, c->next,
		       KEYA(c->want, c->want_len));
		return -EIO;
	}
	if (c->max != c->meta && !c->max) {
		broken(c, "the meta row's stamp %" PRIu64 " is newer than every row's (all 0): the "
		       "scan mixes committed states", c->meta);
		return -EIO;
	}
	if (c->max != c->meta) {
		size_t klen = ruma_kv_key(RUMA_KV_KEYS_DBBENCH, c->max_at, key);
		broken(c, "the meta row's stamp %" PRIu64 " is newer than every row's (the largest, "
		       "%" PRIu64 ", at key " KEYF "): the scan mixes committed states", c->meta,
		       c->max, KEYA(key, klen));
		return -EIO;
	}
	return 0;
}
