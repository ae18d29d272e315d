/*
 * opt.h — the command-line parser shared by the benchmark drivers: a table
 * of options (name, kind, target, range, help) replaces per-driver strcmp
 * chains.  A driver describes its options once, calls ruma_opt_parse, and
 * turns a failure (ruma_opt_error: what went wrong, with which option and
 * value) into its own message, so every driver keeps its wording.
 *
 * Syntax: "--name VALUE" and "--name=VALUE" for options with a value, "--name"
 * for flags; an argument that does not start with "--" (and is no table
 * entry such as "-h") is positional.  A tooling API, not part of libruma.
 */
#ifndef RUMA_BENCH_OPT_H
#define RUMA_BENCH_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

typedef enum ruma_opt_kind {
	RUMA_OPT_FLAG,  /* bool target set to true */
	RUMA_OPT_U64,   /* uint64_t target, ruma_parse_u64 ("1e6" accepted) */
	RUMA_OPT_UINT,  /* unsigned target, ruma_parse_u64, max <= UINT_MAX */
	RUMA_OPT_SIZET, /* size_t target, ruma_parse_u64 */
	RUMA_OPT_BYTES, /* uint64_t target, a count or a size with K/M/G suffix */
	RUMA_OPT_STR,   /* const char * target (points into argv) */
	RUMA_OPT_FUNC,  /* parse(value, opts) stores what it parsed */
} ruma_opt_kind;

/* Option flags. */
enum {
	RUMA_OPT_STOP = 1,     /* parsing ends when this option is seen (--help) */
	RUMA_OPT_NONEMPTY = 2, /* RUMA_OPT_STR: the value must not be empty */
	RUMA_OPT_BARE = 4,     /* RUMA_OPT_STR: the value only as --name=VALUE; a bare
				  --name stores ruma_opt_bare (it never takes the next
				  argument) */
};

/* What a bare RUMA_OPT_BARE option stores: compare the pointer. */
extern const char ruma_opt_bare[];

typedef struct ruma_opt {
	const char *name;   /* "--reps" (or "-h") */
	ruma_opt_kind kind;
	size_t off;         /* offsetof the target in the options struct */
	uint64_t min, max;  /* accepted range of the numeric kinds (inclusive) */
	const char *help;   /* what a valid value is, for the driver's messages */
	/* RUMA_OPT_FUNC: parse value into opts; 0 or a negative error */
	int (*parse)(const char *value, void *opts);
	unsigned flags;
} ruma_opt;

typedef enum ruma_opt_status {
	RUMA_OPT_OK,
	RUMA_OPT_UNKNOWN,    /* an argument starting with "--" that is no option */
	RUMA_OPT_MISSING,    /* option without its value */
	RUMA_OPT_BADVALUE,   /* value is no number of the kind (rc: -EINVAL, -ERANGE, parse's) */
	RUMA_OPT_RANGE,      /* number outside [min, max] */
	RUMA_OPT_TOOMANY,    /* more positional arguments than the driver takes */
	RUMA_OPT_STOPPED,    /* a RUMA_OPT_STOP option was seen (parsing ended there) */
} ruma_opt_status;

/* What ruma_opt_parse found wrong (or where it stopped). */
typedef struct ruma_opt_error {
	ruma_opt_status status;
	const ruma_opt *opt; /* the option concerned, NULL for UNKNOWN and TOOMANY */
	const char *arg;     /* the argument as given ("--reps" or "--reps=x") */
	const char *value;   /* its value, NULL when missing */
	int rc;              /* BADVALUE: the parser's code (-ERANGE for overflow) */
	int index;           /* argv index of arg */
} ruma_opt_error;

/*
 * ruma_opt_parse — parse argv[first..argc) against table[0..n) into the
 * struct opts.  Positional arguments go to pos[0..maxpos) in order (*npos
 * gets their count; pos may be NULL when maxpos is 0).  Returns 0 when
 * everything parsed, else RUMA_EPARSE with *e saying what and where (also
 * for a RUMA_OPT_STOP option: e->status RUMA_OPT_STOPPED).
 */
int ruma_opt_parse(const ruma_opt *table, size_t n, int argc, char **argv, int first,
		   void *opts, const char **pos, int maxpos, int *npos, ruma_opt_error *e);

/* ruma_opt_find — the table entry named name (without "=value"), or NULL. */
const ruma_opt *ruma_opt_find(const ruma_opt *table, size_t n, const char *name);

/*
 * ruma_opt_outcome — what a command does after its driver's parser: on a
 * parse error (rc != 0) print err and, when usage_after, the usage to stderr:
 * exit status 2; for help, the usage to stdout: status 0; else -1 (run the
 * driver).  usage(f) prints the command's usage text to f.
 */
int ruma_opt_outcome(int rc, const char *err, bool usage_after, bool help,
		     void (*usage)(FILE *f));

/*
 * ruma_opt_report — the message of a failed parse on stderr, one wording
 * for the commands that use the table: "<cmd>: unknown option '--x' (see
 * --help)", "<cmd>: --x needs a value (see --help)", "<cmd>: --x: <help>"
 * for a bad or out-of-range value (func_err instead for a RUMA_OPT_FUNC
 * entry: the message its parse wrote), and for one positional argument too
 * many "<cmd>: <too_many>" followed by " (got '<arg>')" when name_extra.
 * Returns 2, the exit status of a bad command line.
 */
int ruma_opt_report(const char *cmd, const ruma_opt_error *e, const char *func_err,
		    const char *too_many, bool name_extra);

/*
 * ruma_opt_vsay — "ruma <cmd>: <message>\n" into err (cut to len), the
 * message formatted from fmt and ap: how a driver's parser words what it
 * refuses.  Returns RUMA_EPARSE.
 */
int ruma_opt_vsay(const char *cmd, char *err, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
/* ruma_opt_say — ruma_opt_vsay with the arguments in the call. */
int ruma_opt_say(const char *cmd, char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * ruma_opt_explain — a failed ruma_opt_parse into err as ruma_opt_vsay
 * words it: "unknown option '--x' (see --help)", "unexpected argument 'x'
 * (see --help)", "--x needs a value", "--x V: out of range: expected
 * <help>", "--x 'V': expected <help>" (" (too large)" on overflow).
 * Returns RUMA_EPARSE.
 */
int ruma_opt_explain(const char *cmd, const ruma_opt_error *e, char *err, size_t len);

/*
 * ruma_opt_parse_driver — a driver's command line (argv[0] its command,
 * no positional arguments) against table into opts: 0 (*help set when
 * --help or another RUMA_OPT_STOP option ended it), or RUMA_EPARSE with
 * ruma_opt_explain's message for cmd in err.
 */
int ruma_opt_parse_driver(const char *cmd, const ruma_opt *table, size_t n, int argc, char **argv,
			  void *opts, bool *help, char *err, size_t len);

/*
 * ruma_opt_enum — the index of s in names[0..n) (exact, case-sensitive
 * match), or -1: the parse of a name into an enum whose values are the
 * indexes of its name table.
 */
int ruma_opt_enum(const char *s, const char *const *names, size_t n);

/*
 * ruma_opt_enum_list — names[0..n) for a message, "a, b or c", into buf
 * (cut to len); returns buf.
 */
const char *ruma_opt_enum_list(const char *const *names, size_t n, char *buf, size_t len);

/* ruma_opt_getenv — value of name in envp ("K=V" strings, NULL-terminated;
 * envp NULL = empty), or NULL. */
const char *ruma_opt_getenv(char *const *envp, const char *name);

/* ruma_opt_env_seed — RUMA_SEED of envp when set and valid, else a seed from
 * the clock (ruma_seed_default). */
uint64_t ruma_opt_env_seed(char *const *envp);

#endif
