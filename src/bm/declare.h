/*
 * declare.h — the inline test in front of ruma_bm_wrote, for the B-tree's
 * node code (internal to the library): a thread that is not inside a
 * declaring operation (ruma_bm_op_declare) pays one thread-local load and a
 * predicted branch per write it names, not a call.  See mtr.c.
 */
#ifndef RUMA_BM_DECLARE_H
#define RUMA_BM_DECLARE_H

#include "bm/bm_ext.h"

struct bm_mtr;

/* The calling thread's declaring mini-transaction, NULL outside one (mtr.c). */
extern __thread __attribute__((tls_model("initial-exec"))) struct bm_mtr *bm_declaring_mtr;

/* ruma_bm_wrote, with its common "not declaring" case inline. */
static inline void bm_wrote(const void *p, size_t len)
{
	if (__builtin_expect(bm_declaring_mtr != NULL, 0))
		ruma_bm_wrote(p, len);
}

/* ruma_bm_moved, with its common "not declaring" case inline. */
static inline void bm_moved(const void *dst, const void *src, size_t len)
{
	if (__builtin_expect(bm_declaring_mtr != NULL, 0))
		ruma_bm_moved(dst, src, len);
}

#endif
