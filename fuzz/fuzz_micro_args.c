/*
 * fuzz_micro_args.c — libFuzzer harness for the argument handling of
 * `ruma micro` (bench/micro).
 *
 * The command-line parser of micro_cli.c (parse_cli, parse_spec) is static,
 * so the harness reaches it through micro_main itself, without ever running
 * a benchmark: every argument that ruma_parse_bool would accept gets a '?'
 * appended, so the fifth positional argument (detailed true|false) can never
 * be valid and micro_main must stop with exit status 2 after parsing the
 * options, the method and test specifications ("6(512)", "12(64,1,0)"),
 * their parameters and the two counts — or print the help and return 0 for
 * --help/-h.  Any other status (1 = it tried to run) or a crash is a bug.
 *
 * Input byte 0, bit 0 chooses the mode:
 *   0  the rest, split at NUL bytes (at most 16 pieces), is argv[1..] of
 *      micro_main, as above;
 *   1  the exported pieces directly: micro_method_find / micro_test_find of
 *      any int id, micro_method_set_params / micro_test_set_params with up
 *      to 9 finite parameter values (the CLI passes only finite ones), then
 *      micro_combo_check, micro_method_wants_huge and micro_method_huge_pages
 *      for entry counts 0 .. UINT64_MAX / 64 (micro_main passes 1 and up).  Error texts go into heap buffers of exactly the
 *      input-chosen length (ASan sees any overflow) and must be terminated.
 *      Return codes must be 0 or RUMA_EPARSE.
 * stdout/stderr carry the driver's messages; run.sh runs this harness with
 * -close_fd_mask=3.  No syscalls of its own; deterministic.
 */
#include "bench/micro/micro.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define H "fuzz_micro_args"
#define MAX_ARGS 16

/* The harness's own reports (fz_open_report). */
static FILE *report;

static void fail(const char *what)
{
	fprintf(report, "%s: %s\n", H, what);
	abort();
}

static void run_main(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *argv[MAX_ARGS + 2], *owned[MAX_ARGS];
	int argc = 1, nowned = 0;
	bool help = false;

	if (!buf)
		return;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[0] = (char *)"micro";
	for (char *p = buf; p <= buf + size && argc <= MAX_ARGS; p += strlen(p) + 1) {
		bool b;
		char *a = p;
		if (ruma_parse_bool(a, &b) == 0) { /* never a valid `detailed` */
			a = malloc(strlen(p) + 2);
			if (!a)
				break;
			strcpy(a, p);
			strcat(a, "?");
			owned[nowned++] = a;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			help = true;
		argv[argc++] = a;
	}
	argv[argc] = NULL;
	int rc = micro_main(argc, argv);
	if (rc != 2 && !(rc == 0 && help)) {
		fprintf(report, "%s: micro_main returned %d for:", H, rc);
		for (int i = 1; i < argc; i++)
			fprintf(report, " '%s'", argv[i]);
		fprintf(report, "\n");
		abort();
	}
	for (int i = 0; i < nowned; i++)
		free(owned[i]);
	free(buf);
}

/* A finite parameter value: small integers mostly, sometimes any double. */
static double next_param(fz_in *in)
{
	uint8_t kind = fz_u8(in);
	if (kind < 160)
		return (double)(int8_t)fz_u8(in);
	if (kind < 200)
		return (double)fz_u16(in) * (kind & 1 ? 1024.0 : 1.0);
	double d;
	uint8_t raw[8];
	fz_bytes(in, raw, 8);
	memcpy(&d, raw, 8);
	return isfinite(d) ? d : 0.5;
}

static char *why_buf(fz_in *in, size_t *len)
{
	*len = 1u + fz_u8(in) % 160;
	char *w = malloc(*len);
	if (!w)
		abort();
	memset(w, 'W', *len);
	w[*len - 1] = '\0';
	return w;
}

static void check_text(const char *w, size_t len, const char *what)
{
	if (!memchr(w, '\0', len))
		fail(what);
}

static void run_api(const uint8_t *data, size_t size)
{
	fz_in in = { data, size };
	double mv[9], tv[9];
	micro_params p;
	size_t wl;

	memset(&p, 0, sizeof(p));
	int mid = (int)(int16_t)fz_u16(&in), tid = (int)(int16_t)fz_u16(&in);
	if (fz_u8(&in) & 1) { /* mostly ids that exist */
		mid = (int)((unsigned)mid % 48);
		tid = (int)((unsigned)tid % 26);
	}
	unsigned mk = fz_u8(&in) % 10, tk = fz_u8(&in) % 4;
	for (unsigned i = 0; i < mk; i++)
		mv[i] = next_param(&in);
	for (unsigned i = 0; i < tk; i++)
		tv[i] = next_param(&in);
	uint64_t n;
	fz_bytes(&in, (uint8_t *)&n, sizeof(n));

	const micro_method *m = micro_method_find(mid);
	const micro_test *t = micro_test_find(tid);
	if (m && m->id != mid)
		fail("micro_method_find returned another id");
	if (t && t->id != tid)
		fail("micro_test_find returned another id");
	if (!m || !t)
		return;
	char *why = why_buf(&in, &wl);
	int rc = micro_method_set_params(m, mv, mk, &p, why, wl);
	if (rc != 0 && rc != RUMA_EPARSE)
		fail("micro_method_set_params: return code");
	check_text(why, wl, "micro_method_set_params: error text not terminated");
	free(why);
	if (rc)
		return;
	why = why_buf(&in, &wl);
	rc = micro_test_set_params(t, tv, tk, &p, why, wl);
	if (rc != 0 && rc != RUMA_EPARSE)
		fail("micro_test_set_params: return code");
	check_text(why, wl, "micro_test_set_params: error text not terminated");
	free(why);
	if (rc)
		return;
	why = why_buf(&in, &wl);
	const char *c = micro_combo_check(m, t, &p, why, wl);
	if (c)
		check_text(why, wl, "micro_combo_check: text not terminated");
	free(why);
	/* micro_main passes 1 .. UINT64_MAX / 64; 0 is tried too (it divided by
	 * zero for methods 14, 19, 44 before 167fe84) */
	n %= UINT64_MAX / 64 + 1;
	if (micro_method_wants_huge(m, &p))
		(void)micro_method_huge_pages(m, &p, (size_t)n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	report = fz_open_report();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		run_api(data + 1, size - 1);
	else
		run_main(data + 1, size - 1);
	return 0;
}
