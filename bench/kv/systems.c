/*
 * systems.c — the table of the systems `ruma kv` was built with (ruma
 * always; each peer when the build found its library, RUMA_KV_HAVE_<NAME>)
 * and the adapters' error helpers.
 */
#include "bench/kv/kv.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

extern const ruma_kv_system ruma_kv_sys_ruma;
#ifdef RUMA_KV_HAVE_LMDB
extern const ruma_kv_system ruma_kv_sys_lmdb;
#endif
#ifdef RUMA_KV_HAVE_ROCKSDB
extern const ruma_kv_system ruma_kv_sys_rocksdb;
#endif
#ifdef RUMA_KV_HAVE_SQLITE
extern const ruma_kv_system ruma_kv_sys_sqlite;
#endif
#ifdef RUMA_KV_HAVE_LEVELDB
extern const ruma_kv_system ruma_kv_sys_leveldb;
#endif
#ifdef RUMA_KV_HAVE_WIREDTIGER
extern const ruma_kv_system ruma_kv_sys_wiredtiger;
#endif

const ruma_kv_system *const ruma_kv_systems[] = {
	&ruma_kv_sys_ruma,
#ifdef RUMA_KV_HAVE_LMDB
	&ruma_kv_sys_lmdb,
#endif
#ifdef RUMA_KV_HAVE_ROCKSDB
	&ruma_kv_sys_rocksdb,
#endif
#ifdef RUMA_KV_HAVE_SQLITE
	&ruma_kv_sys_sqlite,
#endif
#ifdef RUMA_KV_HAVE_LEVELDB
	&ruma_kv_sys_leveldb,
#endif
#ifdef RUMA_KV_HAVE_WIREDTIGER
	&ruma_kv_sys_wiredtiger,
#endif
	NULL,
};

const ruma_kv_system *ruma_kv_find_system(const char *name)
{
	for (size_t i = 0; ruma_kv_systems[i]; i++)
		if (!strcmp(ruma_kv_systems[i]->name, name))
			return ruma_kv_systems[i];
	return NULL;
}

const char *ruma_kv_system_names(char *buf, size_t len)
{
	size_t at = 0;
	if (len)
		buf[0] = '\0';
	for (size_t i = 0; ruma_kv_systems[i] && at < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", ruma_kv_systems[i]->name);
		if (n < 0)
			break;
		at += (size_t)n;
	}
	return buf;
}

int ruma_kv_fail(ruma_kv_thread *th, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(th->err, sizeof(th->err), fmt, ap);
	va_end(ap);
	return code;
}

int ruma_kv_open_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}
