/*
 * ruma.h — version, export macro, error codes and ruma_strerror.
 *
 * Every fallible ruma call returns int: 0 on success, a negative errno
 * (-ENOMEM, -EINVAL, -EIO, -ENOSPC, ...) for an operating-system condition,
 * or one of the RUMA_E* codes below (all <= -10000) for a library condition.
 * Results come back through out-parameters.  There is no global error state.
 */
#ifndef RUMA_RUMA_H
#define RUMA_RUMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUMA_VERSION_MAJOR 0
#define RUMA_VERSION_MINOR 1
#define RUMA_VERSION_PATCH 0
#define RUMA_VERSION_STRING "0.1.0"

/* Marks a symbol as part of the exported API; everything else is hidden. */
#define RUMA_API __attribute__((visibility("default")))

/* Library error codes (negative, at or below -10000). */
enum {
	RUMA_EBASE      = -10000,
	RUMA_ERESTART   = -10001, /* optimistic latch lost: caller retries */
	RUMA_ENOHUGE    = -10002, /* no free huge pages: raise vm.nr_hugepages */
	RUMA_EMAPLIMIT  = -10003, /* mapping budget exhausted: raise vm.max_map_count */
	RUMA_EPARSE     = -10004, /* malformed number, size or option */
	RUMA_ENOTFOUND  = -10005, /* key or object not found */
	RUMA_ESHORTIO   = -10006, /* short read or write (file too small?) */
	RUMA_EVIRTFULL  = -10007, /* virtual reservation exhausted: raise virt_bytes */
	RUMA_ECORRUPT   = -10008, /* on-disk data fails a consistency check */
	RUMA_EUNSUPP    = -10009, /* the kernel or machine does not offer this */
	RUMA_ETOOBIG    = -10010, /* key or value larger than the documented maximum */
	RUMA_EEXISTS    = -10011, /* key already present */
	RUMA_EBADCOMBO  = -10012, /* invalid combination of options */
	RUMA_ELOCKED    = -10013, /* the store is in use by another opener (locked) */
	RUMA_EUNCLEAN   = -10014, /* the store was not closed cleanly: recreate it */
	RUMA_ENOTSTORE  = -10015, /* the file exists and is not a ruma store: not overwritten */
	RUMA_ECONFLICT  = -10016, /* a transaction conflicts with another on a row: abort, retry */
	RUMA_ESNAPTOOOLD = -10017, /* a snapshot's old versions were dropped (memory bound): retry */
	RUMA_ELAST      = -10018
};

/* Historic name used by latch code: a restart is a return value, not an exception. */
#define RUMA_RESTART RUMA_ERESTART

/*
 * ruma_strerror — a static, human-readable description of an error code.
 * Accepts 0, negative errno values and RUMA_E* codes; never returns NULL.
 * Thread-safe (uses strerrordesc_np-style static strings, no buffer).
 */
RUMA_API const char *ruma_strerror(int err);

/* ruma_version — the library version string, e.g. "0.1.0". */
RUMA_API const char *ruma_version(void);

/*
 * ruma_message_fn — the diagnostics channel of a ruma object: a callback
 * and a ctx pointer given at creation (or to a checker's call) that
 * receive one line of text at a time, without a newline, valid only during
 * the call.  A NULL callback means the object's default: the buffer
 * manager, the log and the store (db.h) write the line to stderr with a
 * prefix naming them (see ruma_bm_config), every other object stays
 * silent.  Nothing else in the library prints.
 */
typedef void (*ruma_message_fn)(void *ctx, const char *line);

/* Called by RUMA_ASSERT on a broken invariant: prints file:line and aborts. */
RUMA_API void ruma_assert_fail(const char *expr, const char *file, int line);

#ifdef NDEBUG
#define RUMA_ASSERT(cond) ((void)0)
#else
#define RUMA_ASSERT(cond) ((cond) ? (void)0 : ruma_assert_fail(#cond, __FILE__, __LINE__))
#endif

#define RUMA_LIKELY(x) __builtin_expect(!!(x), 1)
#define RUMA_UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifdef __cplusplus
}
#endif
#endif
