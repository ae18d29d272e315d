/*
 * crash.c — `ruma blob --mode crash` (blob.h).
 */
#include "bench/blob/run.h"

int ruma_blob_crash(ruma_blob_ctx *ctx)
{
	fprintf(stderr, "ruma blob: --mode crash: not in this build of %s\n", ctx->o->sys->name);
	return 2;
}
