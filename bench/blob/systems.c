/*
 * systems.c — the table of `ruma blob`'s systems, the adapters' error
 * helpers and the contents every object gets (blob.h): a 24-byte header
 * (id, version, a magic word) and a stream of splitmix64 words drawn from id and
 * version, so that a read can be checked from the bytes alone and the
 * crash mode can name an object's checksum without keeping its bytes.
 *
 * No system calls.
 */
#include "bench/blob/blob.h"

#include <ruma/core.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

extern const ruma_blob_system ruma_blob_sys_ruma;
extern const ruma_blob_system ruma_blob_sys_ruma_read;
extern const ruma_blob_system ruma_blob_sys_rows;
extern const ruma_blob_system ruma_blob_sys_files;

const ruma_blob_system *const ruma_blob_systems[] = {
	&ruma_blob_sys_ruma,
	&ruma_blob_sys_ruma_read,
	&ruma_blob_sys_rows,
	&ruma_blob_sys_files,
	NULL,
};

const ruma_blob_system *ruma_blob_find_system(const char *name)
{
	for (size_t i = 0; ruma_blob_systems[i]; i++)
		if (!strcmp(ruma_blob_systems[i]->name, name))
			return ruma_blob_systems[i];
	return NULL;
}

const char *ruma_blob_system_names(char *buf, size_t len)
{
	size_t at = 0;
	if (len)
		buf[0] = '\0';
	for (size_t i = 0; ruma_blob_systems[i] && at < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
				 ruma_blob_systems[i]->name);
		if (n < 0)
			break;
		at += (size_t)n;
	}
	return buf;
}

int ruma_blob_fail(ruma_blob_thread *th, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(th->err, sizeof(th->err), fmt, ap);
	va_end(ap);
	return code;
}

int ruma_blob_open_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

const char *ruma_blob_op_name(ruma_blob_op op)
{
	static const char *const names[] = { "put", "get", "overwrite", "delete" };
	return op < RUMA_BLOB_NOPS ? names[op] : "?";
}

/* ---- contents ----------------------------------------------------------------- */

/* Word w of the content (its bytes 8w .. 8w + 7): the header words, then
 * splitmix64's output for counter w of the object's stream, so any range
 * is computed without the bytes before it, and an object grown by appends
 * of its own stream equals one put whole at its final length. */
static uint64_t word_at(uint64_t id, uint64_t version, uint64_t w)
{
	if (w < RUMA_BLOB_HEADER / 8)
		return w == 0 ? id : w == 1 ? version : RUMA_BLOB_MAGIC;
	uint64_t z = (id * 0x2545f4914f6cdd1dull ^ version) + w * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void ruma_blob_fill_range(void *buf, uint64_t off, size_t n, uint64_t id, uint64_t version)
{
	unsigned char *out = buf;
	for (size_t i = 0; i < n;) {
		uint64_t pos = off + i, word = word_at(id, version, pos / 8);
		size_t at = (size_t)(pos % 8), k = 8 - at < n - i ? 8 - at : n - i;
		memcpy(out + i, (const unsigned char *)&word + at, k);
		i += k;
	}
}

void ruma_blob_fill(void *buf, size_t len, uint64_t id, uint64_t version)
{
	ruma_blob_fill_range(buf, 0, len, id, version);
}

uint32_t ruma_blob_crc(uint64_t id, uint64_t version, size_t len)
{
	unsigned char chunk[8192];
	uint32_t crc = 0;
	for (size_t off = 0; off < len; off += sizeof(chunk)) {
		size_t n = len - off < sizeof(chunk) ? len - off : sizeof(chunk);
		ruma_blob_fill_range(chunk, off, n, id, version);
		crc = ruma_crc32c(crc, chunk, n);
	}
	return crc;
}

int ruma_blob_verify(const void *data, size_t len, uint64_t id, bool full, uint64_t *version,
		     char *why, size_t whylen)
{
	uint64_t head[3] = { 0, 0, 0 };
	memcpy(head, data, len < sizeof(head) ? len : sizeof(head));
	if (len >= RUMA_BLOB_HEADER && (head[0] != id || head[2] != RUMA_BLOB_MAGIC)) {
		snprintf(why, whylen, "object %" PRIu64 ": %zu bytes read whose header says "
			 "object %" PRIu64 " (magic %016" PRIx64 ")", id, len, head[0], head[2]);
		return -EIO;
	}
	if (version)
		*version = head[1];
	if (!full && len >= RUMA_BLOB_HEADER)
		return 0;
	unsigned char want[8192];
	for (size_t off = 0; off < len; off += sizeof(want)) {
		size_t n = len - off < sizeof(want) ? len - off : sizeof(want);
		ruma_blob_fill_range(want, off, n, id, head[1]);
		if (memcmp(want, (const unsigned char *)data + off, n)) {
			snprintf(why, whylen, "object %" PRIu64 " version %" PRIu64 ": the bytes "
				 "at %zu..%zu differ from what was written", id, head[1], off,
				 off + n);
			return -EIO;
		}
	}
	return 0;
}
