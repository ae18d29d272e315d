/*
 * fuzz_cli.h — what the command-line harnesses of `ruma kv` and
 * `ruma blob` (fuzz_kv_args.c, fuzz_blob_args.c) share: the input split
 * at NUL bytes into an argv, the verdict on the parser's result (0, or
 * RUMA_EPARSE with a message "ruma <command>: ...\n"), and the number the
 * input's last 8 bytes give.  A failed check is written to the harness's
 * report stream (fz_open_report) and aborts.  Header-only, static
 * functions.
 */
#ifndef RUMA_FUZZ_CLI_H
#define RUMA_FUZZ_CLI_H

#include <ruma/ruma.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fz_cli {
	const char *harness;	       /* the name each report starts with */
	const char *command;	       /* argv[0]; messages start "ruma <command>: " */
	FILE *report;		       /* fz_open_report's stream */
	void (*each)(const char *arg); /* checks every argument first, or NULL */
} fz_cli;

/* argv[1..] from the input split at NUL bytes, at most max of them, each
 * given to cli->each first; argv[0] is the command and argv[*argc] NULL
 * (argv holds max + 2).  Returns the copy of the input the arguments
 * point into (the caller frees it), NULL when out of memory. */
static inline char *fz_cli_argv(const fz_cli *cli, const uint8_t *data, size_t size,
				char **argv, int max, int *argc)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return NULL;
	memcpy(buf, data, size);
	buf[size] = '\0';
	*argc = 1;
	argv[0] = (char *)cli->command;
	for (char *p = buf, *end = buf + size; p < end && *argc <= max; p += strlen(p) + 1) {
		if (cli->each)
			cli->each(p);
		argv[(*argc)++] = p;
	}
	argv[*argc] = NULL;
	return buf;
}

/* Whether the parser (named `parser` in reports) accepted the command
 * line: rc 0.  RUMA_EPARSE must come with a message "ruma <command>: ...\n";
 * any other rc, or a refusal without that message, is reported and
 * aborts. */
static inline bool fz_cli_accepted(const fz_cli *cli, const char *parser, int rc,
				   const char *err)
{
	if (rc == RUMA_EPARSE) {
		char prefix[64];
		size_t n = strlen(err), np;
		snprintf(prefix, sizeof(prefix), "ruma %s: ", cli->command);
		np = strlen(prefix);
		if (strncmp(err, prefix, np) || n < np + 1 || err[n - 1] != '\n') {
			fprintf(cli->report, "%s: %s ('%s')\n", cli->harness,
				"a refusal without its message", err);
			abort();
		}
		return false;
	}
	if (rc) {
		fprintf(cli->report, "%s: %s returned %d\n", cli->harness, parser, rc);
		abort();
	}
	return true;
}

/* The input's last 8 bytes as a number; 0 for a shorter input. */
static inline uint64_t fz_cli_tail(const uint8_t *data, size_t size)
{
	uint64_t v = 0;
	if (size >= 8)
		memcpy(&v, data + size - 8, 8);
	return v;
}

#endif
