/*
 * fuzz_model.h — helpers shared by the fuzz harnesses: a reader over the
 * fuzzer's input and a reference model of an ordered byte-string map (a
 * sorted array, memcmp order with a proper prefix first) to compare index
 * structures against, and the key generators of the index harnesses (fresh
 * keys, keys derived from the model, bulk ranges).  Header-only, static
 * functions; no syscalls.
 */
#ifndef RUMA_FUZZ_MODEL_H
#define RUMA_FUZZ_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- input reader --------------------------------------------------------- */

typedef struct fz_in {
	const uint8_t *p;
	size_t n;
} fz_in;

static inline bool fz_empty(const fz_in *in)
{
	return in->n == 0;
}

/* Next byte, 0 once the input is used up. */
static inline uint8_t fz_u8(fz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t fz_u16(fz_in *in)
{
	uint16_t lo = fz_u8(in);
	return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

/* Copy up to len bytes of input into out (zeros once it is used up). */
static inline void fz_bytes(fz_in *in, uint8_t *out, size_t len)
{
	size_t k = len < in->n ? len : in->n;
	memcpy(out, in->p, k);
	memset(out + k, 0, len - k);
	in->p += k;
	in->n -= k;
}

/* splitmix64: values derived from a counter, so runs are deterministic. */
static inline uint64_t fz_mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* ---- failure reporting --------------------------------------------------- */

__attribute__((noreturn)) static inline void fz_fail(const char *harness, const char *what, const uint8_t *key, size_t len)
{
	fprintf(stderr, "%s: mismatch with the model: %s", harness, what);
	if (key) {
		fprintf(stderr, " (key of %zu bytes:", len);
		for (size_t i = 0; i < len && i < 64; i++)
			fprintf(stderr, " %02x", key[i]);
		fprintf(stderr, "%s)", len > 64 ? " ..." : "");
	}
	fprintf(stderr, "\n");
	abort();
}

/* ---- reference model -------------------------------------------------------- */

typedef struct fz_entry {
	uint8_t *key;
	size_t len;
	uint8_t *val; /* value bytes (B-tree) or NULL */
	size_t vlen;
	uint64_t v;   /* 64-bit value (ART) */
} fz_entry;

typedef struct fz_model {
	fz_entry *e;
	size_t n, cap;
} fz_model;

static inline int fz_keycmp(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	size_t m = la < lb ? la : lb;
	int c = m ? memcmp(a, b, m) : 0;
	if (c)
		return c;
	return la < lb ? -1 : la > lb ? 1 : 0;
}

/* Index of the first entry >= key. */
static inline size_t fz_lower_bound(const fz_model *m, const uint8_t *key, size_t len)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fz_keycmp(m->e[mid].key, m->e[mid].len, key, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entry with key, or NULL. */
static inline fz_entry *fz_find(fz_model *m, const uint8_t *key, size_t len)
{
	size_t i = fz_lower_bound(m, key, len);
	if (i < m->n && fz_keycmp(m->e[i].key, m->e[i].len, key, len) == 0)
		return &m->e[i];
	return NULL;
}

static inline uint8_t *fz_dup(const void *p, size_t len)
{
	uint8_t *d = malloc(len ? len : 1);
	if (!d)
		abort();
	if (len)
		memcpy(d, p, len);
	return d;
}

/* Insert or replace key; returns true if it replaced. */
static inline bool fz_put(fz_model *m, const uint8_t *key, size_t len, uint64_t v,
			  const void *val, size_t vlen)
{
	size_t i = fz_lower_bound(m, key, len);
	if (i < m->n && fz_keycmp(m->e[i].key, m->e[i].len, key, len) == 0) {
		free(m->e[i].val);
		m->e[i].val = val ? fz_dup(val, vlen) : NULL;
		m->e[i].vlen = vlen;
		m->e[i].v = v;
		return true;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->e = realloc(m->e, m->cap * sizeof(*m->e));
		if (!m->e)
			abort();
	}
	memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof(*m->e));
	m->e[i] = (fz_entry){ .key = fz_dup(key, len), .len = len,
			      .val = val ? fz_dup(val, vlen) : NULL, .vlen = vlen, .v = v };
	m->n++;
	return false;
}

/* Remove key; returns true if it was there. */
static inline bool fz_del(fz_model *m, const uint8_t *key, size_t len)
{
	size_t i = fz_lower_bound(m, key, len);
	if (i >= m->n || fz_keycmp(m->e[i].key, m->e[i].len, key, len) != 0)
		return false;
	free(m->e[i].key);
	free(m->e[i].val);
	memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof(*m->e));
	m->n--;
	return true;
}

static inline void fz_model_free(fz_model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->e[i].key);
		free(m->e[i].val);
	}
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/*
 * fz_key_derived — a key near an existing one: model entry i (chosen by the
 * input), cut at some length, plus up to 3 input bytes; written to key (room
 * for the longest model key + 3).  Returns its length, or SIZE_MAX when the
 * model is empty (the caller makes a fresh key instead).
 */
static inline size_t fz_key_derived(fz_in *in, const fz_model *m, uint8_t *key)
{
	if (m->n == 0)
		return SIZE_MAX;
	const fz_entry *e = &m->e[fz_u16(in) % m->n];
	uint8_t cut = fz_u8(in), ext = fz_u8(in) % 4;
	size_t len = e->len - (cut % (e->len + 1)) * (cut >> 7);
	memcpy(key, e->key, len);
	fz_bytes(in, key + len, ext);
	return len + ext;
}

/*
 * fz_keyspec — how a harness draws a fresh key from the input: a length
 * byte, then that many bytes.  A length byte below 255 gives l % modulo
 * bytes; 255 (when the caller allows it) an oversized key of
 * max + 1 + (next byte % over_span) bytes of `fill`, its first `head` bytes
 * from the input.
 */
typedef struct fz_keyspec {
	size_t modulo;
	size_t max;
	size_t over_span;
	uint8_t fill;
	size_t head;
} fz_keyspec;

/* fz_key_fresh — a key drawn as *s says, written to key; returns its length. */
static inline size_t fz_key_fresh(fz_in *in, const fz_keyspec *s, bool oversized, uint8_t *key)
{
	uint8_t l = fz_u8(in);
	if (l == 255 && oversized) {
		size_t len = s->max + 1 + fz_u8(in) % s->over_span;
		memset(key, s->fill, len);
		fz_bytes(in, key, s->head);
		return len;
	}
	fz_bytes(in, key, l % s->modulo);
	return l % s->modulo;
}

/* fz_key_next — a key derived from a model entry (fz_key_derived) when
 * `derived` and the model is not empty, else a fresh one (fz_key_fresh). */
static inline size_t fz_key_next(fz_in *in, const fz_model *m, const fz_keyspec *s,
				 bool oversized, bool derived, uint8_t *key)
{
	size_t len = derived ? fz_key_derived(in, m, key) : SIZE_MAX;
	return len != SIZE_MAX ? len : fz_key_fresh(in, s, oversized, key);
}

/*
 * fz_bulk_from_model — the start of a bulk range at a model entry chosen by
 * the input: the entry's key less its last w bytes (at most max bytes) into
 * prefix and *plen, and those w bytes, big-endian, into *first (0 when the
 * key is shorter).  False, reading nothing, when the model is empty.
 */
static inline bool fz_bulk_from_model(fz_in *in, const fz_model *m, size_t w, size_t max,
				      uint8_t *prefix, size_t *plen, unsigned *first)
{
	if (m->n == 0)
		return false;
	const fz_entry *e = &m->e[fz_u16(in) % m->n];
	size_t n = e->len >= w ? e->len - w : 0;
	n = n > max ? max : n;
	memcpy(prefix, e->key, n);
	*first = 0;
	if (e->len >= n + w)
		for (size_t i = 0; i < w; i++)
			*first = *first << 8 | e->key[n + i];
	*plen = n;
	return true;
}

/* fz_bulk_key — key = prefix, then k's low w bytes big-endian; returns its length. */
static inline size_t fz_bulk_key(uint8_t *key, const uint8_t *prefix, size_t plen, unsigned k,
				 size_t w)
{
	memcpy(key, prefix, plen);
	for (size_t i = 0; i < w; i++)
		key[plen + i] = (uint8_t)(k >> 8 * (w - 1 - i));
	return plen + w;
}

/*
 * fz_open_report — the harness's own report stream: a copy of stderr taken
 * before libFuzzer's -close_fd_mask closes it (the code under test writes its
 * messages to the closed one).  Unbuffered; falls back to stderr.
 */
static inline FILE *fz_open_report(void)
{
	int fd = dup(2);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f)
		f = stderr;
	setvbuf(f, NULL, _IONBF, 0);
	return f;
}

#endif
