/*
 * fuzz_cli.h — the run of one input that the command-line harnesses of
 * `ruma kv` and `ruma blob` (fuzz_kv_args.c, fuzz_blob_args.c) share: the
 * input, split at NUL bytes, gives up to FZ_CLI_MAX_ARGS arguments (each
 * checked by the harness first); the harness's parser gets them with
 * RUMA_SEED=1 as the only environment and must return 0 or RUMA_EPARSE
 * with a message "ruma <command>: ...\n"; the input's last 8 bytes, as a
 * number, go to the harness's own check.  A failed check is written to
 * the harness's report stream (fz_open_report) and aborts.  Header-only,
 * static functions.
 */
#ifndef RUMA_FUZZ_CLI_H
#define RUMA_FUZZ_CLI_H

#include <ruma/ruma.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_CLI_MAX_ARGS 24

typedef struct fz_cli {
	const char *harness; /* the name each report starts with */
	const char *command; /* argv[0]; messages start "ruma <command>: " */
	const char *parser;  /* the parser's name in reports */
	FILE *report;	     /* fz_open_report's stream */
	/* checks every argument first, or NULL */
	void (*each)(const char *arg);
	/* the parser, which also checks a configuration it accepts: its result */
	int (*parse)(int argc, char **argv, char **envp, char *err, size_t len);
	/* the check of the number the input's last 8 bytes give */
	void (*tail)(uint64_t v);
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

/* The verdict on the parser's result rc: 0, or RUMA_EPARSE with a message
 * "ruma <command>: ...\n"; any other rc, or a refusal without that
 * message, is reported and aborts. */
static inline void fz_cli_verdict(const fz_cli *cli, int rc, const char *err)
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
	} else if (rc) {
		fprintf(cli->report, "%s: %s returned %d\n", cli->harness, cli->parser, rc);
		abort();
	}
}

/* The input's last 8 bytes as a number; 0 for a shorter input. */
static inline uint64_t fz_cli_tail(const uint8_t *data, size_t size)
{
	uint64_t v = 0;
	if (size >= 8)
		memcpy(&v, data + size - 8, 8);
	return v;
}

/* One input through the harness's checks (see the top of this file). */
static inline int fz_cli_run(const fz_cli *cli, const uint8_t *data, size_t size)
{
	char *argv[FZ_CLI_MAX_ARGS + 2], err[512];
	char seed[] = "RUMA_SEED=1";
	char *envp[] = { seed, NULL };
	int argc;
	char *buf = fz_cli_argv(cli, data, size, argv, FZ_CLI_MAX_ARGS, &argc);
	if (!buf)
		return 0;
	fz_cli_verdict(cli, cli->parse(argc, argv, envp, err, sizeof(err)), err);
	cli->tail(fz_cli_tail(data, size));
	free(buf);
	return 0;
}

#endif
