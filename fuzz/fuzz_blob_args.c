/*
 * fuzz_blob_args.c — libFuzzer harness for the command line of `ruma blob`
 * (ruma_blob_parse, bench/blob/blob_cli.c), its system table and the
 * object contents every mode writes and checks (bench/blob/systems.c).
 *
 * The input, split at NUL bytes, gives up to 24 arguments; the harness
 * calls ruma_blob_parse (nothing is run) with RUMA_SEED=1 as the only
 * environment.  It must return 0 or RUMA_EPARSE with a message
 * "ruma blob: ...\n"; a configuration it accepts must be runnable as
 * given: a system of the table, 1 .. RUMA_BLOB_MAX_SIZES sizes of 1 byte
 * .. 1 GiB, at least one operation and none beyond delete, threads in
 * range, a pool of at least 16 MiB, min size <= max size, a non-empty
 * directory, the streaming put mode and --batch only for a system with
 * them, the crash mode only for a system with a store check.  On every argument
 * ruma_blob_find_system gives NULL or the system of that very name.  The
 * last 8 bytes of the input, as a number v: an object of id v, version
 * v >> 7 and v mod 3000 bytes made in pieces (ruma_blob_fill_range, cut at
 * v's bits) equals one filled whole, verifies, and its checksum is the
 * CRC-32C of its bytes.
 * stdout/stderr are unused; run.sh uses -close_fd_mask=3 like the other CLI
 * harnesses.
 */
#include "bench/blob/blob.h"

#include <ruma/core.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_cli.h"
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define H "fuzz_blob_args"

static FILE *report;

static void fail(const char *what, const char *s)
{
	fprintf(report, "%s: %s ('%s')\n", H, what, s ? s : "");
	abort();
}

static const char *sizes_wrong(const ruma_blob_opts *o)
{
	if (o->nsizes < 1 || o->nsizes > RUMA_BLOB_MAX_SIZES)
		return "no sizes, or too many";
	for (unsigned i = 0; i < o->nsizes; i++)
		if (o->sizes[i] < 1 || o->sizes[i] > (1ull << 30))
			return "a size out of range";
	return NULL;
}

static void check_accepted(const ruma_blob_opts *o)
{
	const char *why = NULL;
	if (!o->sys)
		why = "no system";
	else if ((why = sizes_wrong(o)))
		;
	else if (!o->ops || o->ops >= 1u << RUMA_BLOB_NOPS)
		why = "no operation, or one beyond delete";
	else if (o->threads < 1 || o->threads > RUMA_BLOB_MAX_THREADS)
		why = "threads out of range";
	else if (o->memory < (16ull << 20) || o->min_size > o->max_size || !o->piece)
		why = "memory, sizes or piece out of range";
	else if (!o->dir || !*o->dir)
		why = "empty directory";
	else if (o->stream && !o->sys->put_stream)
		why = "streaming puts for a system without them";
	else if (o->batch && !o->sys->batch)
		why = "transactions over several objects for a system without them";
	else if (o->mode == RUMA_BLOB_CRASH && !o->sys->check)
		why = "a crash mode for a system without a store check";
	if (why)
		fail("accepted, but", why);
}

static void check_contents(uint64_t v)
{
	static unsigned char whole[3000], parts[3000];
	size_t len = (size_t)(v % 3000);
	uint64_t id = v, version = v >> 7;
	char why[320];
	ruma_blob_fill(whole, len, id, version);
	for (size_t off = 0, bit = 0; off < len; bit = (bit + 1) % 64) {
		size_t n = 1 + (size_t)((v >> bit) % 97);
		n = n < len - off ? n : len - off;
		ruma_blob_fill_range(parts + off, off, n, id, version);
		off += n;
	}
	if (memcmp(whole, parts, len))
		fail("an object made in pieces differs from one made whole", "");
	if (ruma_blob_verify(whole, len, id, true, NULL, why, sizeof(why)))
		fail("a filled object does not verify", why);
	if (ruma_blob_crc(id, version, len) != ruma_crc32c(0, whole, len))
		fail("the content checksum is not the CRC-32C of the bytes", "");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	report = fz_open_report();
	return 0;
}

/* ruma_blob_find_system gives NULL or the system of that very name. */
static void check_name(const char *s)
{
	const ruma_blob_system *sys = ruma_blob_find_system(s);
	if (sys && strcmp(sys->name, s))
		fail("ruma_blob_find_system returned another system", s);
}

/* ruma_blob_parse, and check_accepted on what it accepts. */
static int parse(int argc, char **argv, char **envp, char *err, size_t len)
{
	ruma_blob_opts o;
	int rc = ruma_blob_parse(argc, argv, envp, &o, err, len);
	if (!rc && !o.help)
		check_accepted(&o);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const fz_cli cli = { H, "blob", "ruma_blob_parse", report, check_name, parse,
			     check_contents };
	return fz_cli_run(&cli, data, size);
}
