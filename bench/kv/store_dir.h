/*
 * store_dir.h — the directory a system's store lives in during a `ruma kv`
 * run: <dir>/kv-<system>, marked as the driver's own by a file .ruma-kv,
 * emptied before each run (only when it carries that mark, so that a
 * directory the driver did not make is never deleted).
 */
#ifndef RUMA_BENCH_KV_STORE_DIR_H
#define RUMA_BENCH_KV_STORE_DIR_H

#include <stddef.h>

/*
 * ruma_kv_store_dir — make <dir>/kv-<system> empty (created, with dir, if
 * missing; its contents removed if it carries the mark; refused if it
 * exists without it) and write the mark; its path into path.  Returns 0 or
 * a negative errno with the reason in err.
 */
int ruma_kv_store_dir(const char *dir, const char *system, char *path, size_t len, char *err,
		      size_t errlen);

/* ruma_kv_store_dir_remove — remove the directory ruma_kv_store_dir made
 * (after the run); 0 or a negative errno. */
int ruma_kv_store_dir_remove(const char *path);

#endif
