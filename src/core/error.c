/*
 * error.c — ruma_strerror, the assertion hook and ruma_say.
 *
 * Library codes get fixed messages that name the limit and the fix; negative
 * errno values are delegated to strerrordesc_np (static strings, thread-safe).
 * No syscalls.
 */
#include "core/core_ext.h"
#include <ruma/ruma.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const lib_messages[] = {
	[0] = "ruma error",
	[1] = "optimistic latch restart",
	[2] = "no free huge pages (raise vm.nr_hugepages: echo N > /proc/sys/vm/nr_hugepages)",
	[3] = "mapping budget exhausted (raise vm.max_map_count: sysctl -w vm.max_map_count=16777216)",
	[4] = "malformed number, size or option",
	[5] = "not found",
	[6] = "short read or write (file or device too small?)",
	[7] = "virtual reservation exhausted (raise virt_bytes)",
	[8] = "data fails a consistency check (corrupt file?)",
	[9] = "not supported by this kernel or machine",
	[10] = "key or value larger than the supported maximum",
	[11] = "key already exists",
	[12] = "invalid combination of options",
	[13] = "the store is in use: another process (or another open in this one) holds its lock",
	[14] = "the store was not closed cleanly: pages may be newer than metadata (recreate it)",
	[15] = "the file exists and is not a ruma store (not overwritten unless forced)",
	[16] = "the transaction conflicts with another one on a row (abort it and retry)",
	[17] = ("snapshot too old: versions it needed were dropped at the version-store bound "
		"(end it and retry, or raise ruma_txn_set_version_limit)"),
};

_Static_assert(RUMA_ARRAY_SIZE(lib_messages) == RUMA_EBASE - RUMA_ELAST,
	       "one message per library error code");

const char *ruma_strerror(int err)
{
	if (err == 0)
		return "success";
	if (err <= RUMA_EBASE && err > RUMA_ELAST)
		return lib_messages[RUMA_EBASE - err];
	if (err < 0 && err > RUMA_EBASE) {
		const char *s = strerrordesc_np(-err);
		return s ? s : "unknown error";
	}
	return "unknown error";
}

const char *ruma_version(void)
{
	return RUMA_VERSION_STRING;
}

void ruma_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "ruma: assertion failed: %s (%s:%d)\n", expr, file, line);
	abort();
}

void ruma_say(void (*fn)(void *ctx, const char *line), void *ctx, const char *prefix,
	      const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (fn)
		fn(ctx, line);
	else
		fprintf(stderr, "%s: %s\n", prefix, line);
}
