/*
 * cmd_db.c — `ruma db <sub> STORE ...`: a store of include/ruma/db.h from
 * the shell: stat, get, put, del, drop, scan, check, copy, dump
 * and load.
 *
 * Keys and values on the command line are text with C-style escapes
 * (\\ and \xNN) or, with --hex, hex digits; scan prints the same escapes.
 * The dump format is text, one line per item, streaming in both
 * directions (docs/db.md):
 *   ruma-db-dump 1              header
 *   table <name, escaped>       the entries of one table follow
 *   <hex key> <hex value|->     one entry ("-": an empty value)
 *   end <entries>               the table's end and its count
 *   end-dump                    the last line: a dump without it is truncated
 *
 * Invariants: the read sub-commands (stat, get, scan, check, dump) open the
 * store RUMA_DB_READONLY, so they never write through db.h.  Exit status:
 * 0 ok, 1 failure (missing key, damaged store, store in use, bad dump),
 * 2 bad usage.
 */
#include "bench/common/opt.h"

#include <ruma/core.h>
#include <ruma/db.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ruma_cmd_db(int argc, char **argv);
extern const char ruma_cmd_db_summary[];
const char ruma_cmd_db_summary[] =
	"the db.h store from the shell: stat, get/put/del, drop, scan, check, copy, dump, load";

#define LOAD_BATCH 1000u

typedef struct db_cli {
	bool help, hex, no_overwrite, create, reverse;
	uint64_t pool, limit;
	const char *from, *to;
} db_cli;

#define OPT_HELP                                                                          \
	{ "--help", RUMA_OPT_FLAG, offsetof(db_cli, help), 0, 0, NULL, NULL, RUMA_OPT_STOP }, \
	{ "-h", RUMA_OPT_FLAG, offsetof(db_cli, help), 0, 0, NULL, NULL, RUMA_OPT_STOP }
#define OPT_POOL                                                                            \
	{ "--pool", RUMA_OPT_BYTES, offsetof(db_cli, pool), 1u << 20, UINT64_MAX,          \
	  "--pool must be a size of at least 1M", NULL, 0 }
#define OPT_HEX { "--hex", RUMA_OPT_FLAG, offsetof(db_cli, hex), 0, 0, NULL, NULL, 0 }

static const ruma_opt opt_plain[] = { OPT_HELP, OPT_POOL };
static const ruma_opt opt_key[] = { OPT_HELP, OPT_POOL, OPT_HEX };
static const ruma_opt opt_put[] = {
	OPT_HELP, OPT_POOL, OPT_HEX,
	{ "--no-overwrite", RUMA_OPT_FLAG, offsetof(db_cli, no_overwrite), 0, 0, NULL, NULL, 0 },
	{ "--create", RUMA_OPT_FLAG, offsetof(db_cli, create), 0, 0, NULL, NULL, 0 },
};
static const ruma_opt opt_scan[] = {
	OPT_HELP, OPT_POOL, OPT_HEX,
	{ "--from", RUMA_OPT_STR, offsetof(db_cli, from), 0, 0, "a key", NULL, RUMA_OPT_NONEMPTY },
	{ "--to", RUMA_OPT_STR, offsetof(db_cli, to), 0, 0, "a key", NULL, RUMA_OPT_NONEMPTY },
	{ "--limit", RUMA_OPT_U64, offsetof(db_cli, limit), 1, UINT64_MAX, "--limit must be > 0",
	  NULL, 0 },
	{ "--reverse", RUMA_OPT_FLAG, offsetof(db_cli, reverse), 0, 0, NULL, NULL, 0 },
};
static const ruma_opt opt_load[] = {
	OPT_HELP, OPT_POOL,
	{ "--no-overwrite", RUMA_OPT_FLAG, offsetof(db_cli, no_overwrite), 0, 0, NULL, NULL, 0 },
};

static void say(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "ruma db: %s\n", line);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "ruma db: %s: %s\n", what, ruma_strerror(rc));
	return 1;
}

/* ---- keys and values as text ------------------------------------------------- */

/* Each byte's value as a hex digit plus one (0: not a digit), so that a
 * load parses its keys and values with one table lookup per digit. */
static const unsigned char hex_digit[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
	['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
	['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15,
	['F'] = 16,
};

static int parse_hex(const char *s, size_t n, unsigned char *out, size_t cap, size_t *len)
{
	if (n % 2 || n / 2 > cap)
		return n % 2 ? -EINVAL : RUMA_ETOOBIG;
	const unsigned char *p = (const unsigned char *)s;
	bool bad = false;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned hi = hex_digit[p[2 * i]], lo = hex_digit[p[2 * i + 1]];
		bad |= !hi | !lo;
		out[i] = (unsigned char)((hi - 1) * 16 + lo - 1);
	}
	*len = n / 2;
	return bad ? -EINVAL : 0;
}

/* Text with \\ and \xNN escapes. */
static int parse_escaped(const char *s, unsigned char *out, size_t cap, size_t *len)
{
	size_t n = 0;
	while (*s) {
		if (n == cap)
			return RUMA_ETOOBIG;
		if (*s != '\\') {
			out[n++] = (unsigned char)*s++;
		} else if (s[1] == '\\') {
			out[n++] = '\\';
			s += 2;
		} else if (s[1] == 'x' && hex_digit[(unsigned char)s[2]] &&
			   hex_digit[(unsigned char)s[3]]) {
			out[n++] = (unsigned char)((hex_digit[(unsigned char)s[2]] - 1) * 16 +
						   hex_digit[(unsigned char)s[3]] - 1);
			s += 4;
		} else {
			return -EINVAL;
		}
	}
	*len = n;
	return 0;
}

static int parse_arg(const db_cli *o, const char *what, const char *s, unsigned char *out,
		     size_t cap, ruma_val *v)
{
	int rc = o->hex ? parse_hex(s, strlen(s), out, cap, &v->len)
			: parse_escaped(s, out, cap, &v->len);
	if (rc)
		fprintf(stderr, "ruma db: %s '%s': %s\n", what, s,
			rc == RUMA_ETOOBIG ? "too long" :
			o->hex ? "not an even number of hex digits" : "bad escape (\\\\ or \\xNN)");
	v->data = out;
	return rc;
}

/* Hex digits of v in one write (dumps print every key and value so). */
static void print_hex(const ruma_val *v)
{
	static const char digits[] = "0123456789abcdef";
	char buf[2 * RUMA_DB_MAX_INLINE];
	const unsigned char *p = v->data;
	for (size_t done = 0, n; done < v->len; done += n, p += n) {
		n = RUMA_MIN(v->len - done, sizeof(buf) / 2);
		for (size_t i = 0; i < n; i++) {
			buf[2 * i] = digits[p[i] >> 4];
			buf[2 * i + 1] = digits[p[i] & 15];
		}
		fwrite(buf, 1, 2 * n, stdout);
	}
}

static void print_bytes(const ruma_val *v, bool hex)
{
	const unsigned char *p = v->data;
	if (hex) {
		print_hex(v);
		return;
	}
	for (size_t i = 0; i < v->len; i++) {
		if (p[i] == '\\')
			fputs("\\\\", stdout);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			putchar(p[i]);
		else
			printf("\\x%02x", p[i]);
	}
}

/* ---- opening ------------------------------------------------------------------------ */

typedef enum { OPEN_READ, OPEN_WRITE, OPEN_CREATE } open_mode;

static int open_store(const char *path, const db_cli *o, open_mode mode, ruma_db **db)
{
	ruma_db_options opt;
	ruma_db_options_default(&opt);
	opt.pool_bytes = o->pool ? o->pool : 64ull << 20;
	opt.message = say;
	opt.flags = mode == OPEN_READ ? RUMA_DB_READONLY : mode == OPEN_WRITE ? RUMA_DB_NOCREATE : 0;
	int rc = ruma_db_open(path, &opt, db);
	if (rc)
		fprintf(stderr, "ruma db: cannot open %s: %s\n", path, ruma_strerror(rc));
	return rc;
}

/* Open path and begin a transaction; a table too when name is given. */
static int open_txn(const char *path, const db_cli *o, open_mode mode, const char *name,
		    ruma_db **db, ruma_db_txn **x, ruma_db_table **t)
{
	if (open_store(path, o, mode, db))
		return 1;
	/* reads pass around the pool: a one-shot tool gains nothing from filling
	 * it, and a scan of large values then holds one at a time */
	int rc = ruma_db_begin(*db, mode == OPEN_READ ? RUMA_DB_RDONLY | RUMA_DB_NOFILL : 0, x);
	if (!rc && name) {
		rc = ruma_db_table_open(*x, name, mode == OPEN_CREATE ? RUMA_DB_CREATE : 0, t);
		if (rc == RUMA_ENOTFOUND)
			fprintf(stderr, "ruma db: no table '%s' in %s\n", name, path);
	}
	if (rc) {
		if (rc != RUMA_ENOTFOUND)
			fail("begin", rc);
		if (*x)
			ruma_db_abort(*x);
		ruma_db_close(*db);
		return 1;
	}
	return 0;
}

/* End the transaction (commit or abort) and close; the exit status. */
static int finish(ruma_db *db, ruma_db_txn *x, int status)
{
	int rc = status ? ruma_db_abort(x) : ruma_db_commit(x);
	if (rc && !status)
		status = fail("commit", rc);
	rc = ruma_db_close(db);
	if (rc && !status)
		status = fail("close", rc);
	return status;
}

/* ---- sub-commands ------------------------------------------------------------ */

typedef struct table_list {
	char (*names)[RUMA_DB_MAX_NAME + 1];
	size_t n, cap;
} table_list;

static bool add_name(const char *name, void *ctx)
{
	table_list *l = ctx;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *p = realloc(l->names, cap * sizeof(*l->names));
		if (!p)
			return false;
		l->names = p;
		l->cap = cap;
	}
	snprintf(l->names[l->n++], sizeof(*l->names), "%s", name);
	return true;
}

static int sub_stat(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	ruma_db *db;
	ruma_db_txn *x;
	if (open_txn(pos[0], o, OPEN_READ, NULL, &db, &x, NULL))
		return 1;
	ruma_db_stats s;
	table_list l = { 0 };
	int rc = ruma_db_stat(db, &s);
	if (!rc)
		rc = ruma_db_table_list(x, add_name, &l);
	if (rc) {
		free(l.names);
		return finish(db, x, fail("stat", rc));
	}
	printf("store %s: %" PRIu64 " tables, %" PRIu64 " pages (%" PRIu64 " free), pool %" PRIu64
	       " bytes\n", pos[0], s.tables, s.pages, s.pages_free, s.pool_bytes);
	printf("%-32s %12s %10s %6s %14s\n", "table", "entries", "pages", "depth", "bytes");
	for (size_t i = 0; i < l.n && !rc; i++) {
		ruma_db_table *t;
		ruma_db_table_stats ts;
		rc = ruma_db_table_open(x, l.names[i], 0, &t);
		if (!rc)
			rc = ruma_db_table_stat(x, t, &ts);
		if (!rc)
			printf("%-32s %12" PRIu64 " %10" PRIu64 " %6u %14" PRIu64 "\n", l.names[i],
			       ts.entries, ts.pages, ts.depth, ts.bytes);
	}
	free(l.names);
	return finish(db, x, rc ? fail("stat", rc) : 0);
}

static int sub_get(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	unsigned char kb[RUMA_DB_MAX_KEY];
	ruma_val k, v;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	if (parse_arg(o, "key", pos[2], kb, sizeof(kb), &k))
		return 2;
	if (open_txn(pos[0], o, OPEN_READ, pos[1], &db, &x, &t))
		return 1;
	int rc = ruma_db_get(x, t, &k, &v);
	if (rc)
		return finish(db, x, fail(rc == RUMA_ENOTFOUND ? "get: no such key" : "get", rc));
	print_bytes(&v, o->hex);
	putchar('\n');
	return finish(db, x, 0);
}

static int sub_put(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	unsigned char kb[RUMA_DB_MAX_KEY];
	size_t vcap = strlen(pos[3]) + 1; /* decoded, never longer */
	unsigned char *vb = malloc(vcap);
	ruma_val k, v;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	if (!vb)
		return fail("put", -ENOMEM);
	if (parse_arg(o, "key", pos[2], kb, sizeof(kb), &k) ||
	    parse_arg(o, "value", pos[3], vb, vcap, &v)) {
		free(vb);
		return 2;
	}
	int st = 1;
	if (!open_txn(pos[0], o, o->create ? OPEN_CREATE : OPEN_WRITE, pos[1], &db, &x, &t)) {
		int rc = ruma_db_put(x, t, &k, &v, o->no_overwrite ? RUMA_DB_NOOVERWRITE : 0);
		st = finish(db, x, rc ? fail("put", rc) : 0);
	}
	free(vb);
	return st;
}

static int sub_del(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	unsigned char kb[RUMA_DB_MAX_KEY];
	ruma_val k;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	if (parse_arg(o, "key", pos[2], kb, sizeof(kb), &k))
		return 2;
	if (open_txn(pos[0], o, OPEN_WRITE, pos[1], &db, &x, &t))
		return 1;
	int rc = ruma_db_del(x, t, &k);
	return finish(db, x, rc ? fail(rc == RUMA_ENOTFOUND ? "del: no such key" : "del", rc) : 0);
}

/* memcmp order, a prefix first (btree.h). */
static int val_cmp(const ruma_val *a, const ruma_val *b)
{
	int c = memcmp(a->data, b->data, RUMA_MIN(a->len, b->len));
	return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Position c for a scan: from --from (or the end) in the scan's direction. */
static int scan_start(ruma_db_cursor *c, const db_cli *o, const ruma_val *from, const ruma_val *to)
{
	int rc = to ? ruma_db_cursor_set_upper(c, to) : 0;
	if (rc)
		return rc;
	if (!o->reverse)
		return from ? ruma_db_cursor_seek(c, from) : ruma_db_cursor_first(c);
	return ruma_db_cursor_last(c);
}

static int sub_scan(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	unsigned char fb[RUMA_DB_MAX_KEY], tb[RUMA_DB_MAX_KEY];
	ruma_val from, to;
	if ((o->from && parse_arg(o, "--from", o->from, fb, sizeof(fb), &from)) ||
	    (o->to && parse_arg(o, "--to", o->to, tb, sizeof(tb), &to)))
		return 2;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_cursor *c;
	if (open_txn(pos[0], o, OPEN_READ, pos[1], &db, &x, &t))
		return 1;
	int rc = ruma_db_cursor_open(x, t, &c);
	if (rc)
		return finish(db, x, fail("scan", rc));
	rc = scan_start(c, o, o->from ? &from : NULL, o->to ? &to : NULL);
	for (uint64_t n = 0; !rc && (!o->limit || n < o->limit); n++) {
		ruma_val k, v;
		if ((rc = ruma_db_cursor_get(c, &k, &v)))
			break;
		if (o->reverse && o->from && val_cmp(&k, &from) < 0)
			break; /* reverse: --from is the lower end, inclusive */
		print_bytes(&k, o->hex);
		putchar('\t');
		print_bytes(&v, o->hex);
		putchar('\n');
		rc = o->reverse ? ruma_db_cursor_prev(c) : ruma_db_cursor_next(c);
	}
	ruma_db_cursor_close(c);
	return finish(db, x, rc && rc != RUMA_ENOTFOUND ? fail("scan", rc) : 0);
}

static int sub_drop(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	if (open_txn(pos[0], o, OPEN_WRITE, pos[1], &db, &x, &t))
		return 1;
	int rc = ruma_db_table_drop(x, t);
	return finish(db, x, rc ? fail("drop", rc) : 0);
}

static int sub_copy(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	ruma_db *db;
	if (open_store(pos[0], o, OPEN_WRITE, &db))
		return 1;
	int rc = ruma_db_copy(db, pos[1], 0);
	int crc = ruma_db_close(db);
	if (rc)
		return fail("copy", rc);
	if (crc)
		return fail("close", crc);
	return 0;
}

static int sub_check(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	ruma_db *db;
	if (open_store(pos[0], o, OPEN_READ, &db))
		return 1;
	int rc = ruma_db_check(db);
	int crc = ruma_db_close(db);
	if (rc)
		return fail("check", rc);
	if (crc)
		return fail("close", crc);
	printf("%s: healthy\n", pos[0]);
	return 0;
}

/* ---- dump and load ---------------------------------------------------------------- */

#define DUMP_HEADER "ruma-db-dump 1"
#define DUMP_STDIO_BUFFER (1u << 20)

/* A dump streams gigabytes through stdio, often into a pipe to a load:
 * a 1 MiB stdio buffer and, where fd is a pipe, a pipe of 1 MiB (the
 * default most for unprivileged users) turn a write and a wake-up of the
 * reader per 4 KiB into one per megabyte.  Best effort: a failure leaves
 * the defaults, which work. */
static void stream_buffers(FILE *f, int fd)
{
	static char buf[DUMP_STDIO_BUFFER]; /* one stream per sub-command */
	(void)setvbuf(f, buf, _IOFBF, sizeof(buf)); /* glibc ignores the size without buf */
	(void)fcntl(fd, F_SETPIPE_SZ, (int)DUMP_STDIO_BUFFER);
}

static void print_hex_or_dash(const ruma_val *v)
{
	if (!v->len)
		putchar('-');
	else
		print_bytes(v, true);
}

static int dump_table(ruma_db_txn *x, const char *name)
{
	ruma_db_table *t;
	ruma_db_cursor *c;
	int rc = ruma_db_table_open(x, name, 0, &t);
	if (rc == RUMA_ENOTFOUND)
		fprintf(stderr, "ruma db: dump: no table '%s'\n", name);
	if (rc || (rc = ruma_db_cursor_open(x, t, &c)))
		return rc;
	ruma_val nv = { strlen(name), (void *)name };
	printf("table ");
	print_bytes(&nv, false);
	putchar('\n');
	uint64_t n = 0;
	for (rc = ruma_db_cursor_first(c); !rc; rc = ruma_db_cursor_next(c), n++) {
		ruma_val k, v;
		if ((rc = ruma_db_cursor_get(c, &k, &v)))
			break;
		print_bytes(&k, true);
		putchar(' ');
		print_hex_or_dash(&v);
		putchar('\n');
	}
	ruma_db_cursor_close(c);
	if (rc != RUMA_ENOTFOUND)
		return rc;
	printf("end %" PRIu64 "\n", n);
	return 0;
}

static int sub_dump(const db_cli *o, const char **pos, int npos)
{
	ruma_db *db;
	ruma_db_txn *x;
	table_list l = { 0 };
	if (open_txn(pos[0], o, OPEN_READ, NULL, &db, &x, NULL))
		return 1;
	stream_buffers(stdout, STDOUT_FILENO);
	int rc = 0;
	for (int i = 1; i < npos; i++)
		if (!add_name(pos[i], &l))
			rc = -ENOMEM;
	if (npos == 1)
		rc = ruma_db_table_list(x, add_name, &l);
	printf("%s\n", DUMP_HEADER);
	for (size_t i = 0; i < l.n && !rc; i++)
		rc = dump_table(x, l.names[i]);
	free(l.names);
	if (!rc)
		printf("end-dump\n");
	if (!rc && (fflush(stdout) || ferror(stdout)))
		rc = -EIO;
	return finish(db, x, rc ? fail("dump", rc) : 0);
}

/* The state of a load: the open transaction and table, or the bulk load
 * of the table (ruma_db_load_*), counts, the line. */
typedef struct loader {
	ruma_db *db;
	ruma_db_txn *x;
	ruma_db_table *t;
	ruma_db_loader *bulk;
	bool no_overwrite;
	uint64_t line, in_table, pending, total;
	unsigned char kb[RUMA_DB_MAX_KEY];
	char name[RUMA_DB_MAX_NAME + 1];
} loader;

/* Between a 'table' line and its 'end': the table is open one way or the other. */
static bool load_in_table(const loader *l)
{
	return l->t || l->bulk;
}

static int load_bad(const loader *l, const char *what)
{
	fprintf(stderr, "ruma db: load: line %" PRIu64 ": %s\n", l->line, what);
	return RUMA_EPARSE;
}

/* Commit what is pending and begin the next transaction (async: only the
 * last commit of a load waits for the log). */
static int load_commit(loader *l, bool last)
{
	int rc = ruma_db_commit(l->x);
	l->x = NULL;
	l->pending = 0;
	if (!rc && !last)
		rc = ruma_db_begin(l->db, RUMA_DB_ASYNC, &l->x);
	return rc;
}

/* A table opened for puts in a fresh transaction (after a bulk load of it
 * ended: an older snapshot may not write it). */
static int load_by_puts(loader *l)
{
	int rc = load_commit(l, false);
	return rc ? rc : ruma_db_table_open(l->x, l->name, RUMA_DB_CREATE, &l->t);
}

/* key -> val into the table: bulk while keys ascend, else by puts (a
 * dump not in key order: what was bulk-loaded stays, the rest is put). */
static int load_pair(loader *l, const ruma_val *k, const ruma_val *v)
{
	if (l->bulk) {
		int rc = ruma_db_load_put(l->bulk, k, v);
		if (rc != RUMA_EEXISTS)
			return rc;
		rc = ruma_db_load_end(l->bulk, NULL);
		l->bulk = NULL;
		if (rc || (rc = load_by_puts(l)))
			return rc;
	}
	int rc = ruma_db_put(l->x, l->t, k, v, l->no_overwrite ? RUMA_DB_NOOVERWRITE : 0);
	return rc ? rc : ++l->pending >= LOAD_BATCH ? load_commit(l, false) : 0;
}

static int load_entry(loader *l, char *line)
{
	char *sp = strchr(line, ' ');
	ruma_val k, v;
	if (!load_in_table(l))
		return load_bad(l, "an entry before any 'table' line");
	if (!sp)
		return load_bad(l, "not '<hex key> <hex value>'");
	*sp = '\0';
	char *vs = sp + 1; /* the value is decoded in place (never longer) */
	int rc = parse_hex(line, strlen(line), l->kb, sizeof(l->kb), &k.len);
	if (!rc)
		rc = !strcmp(vs, "-") ? (v.len = 0, 0) :
				       parse_hex(vs, strlen(vs), (unsigned char *)vs,
						 RUMA_DB_MAX_VALUE, &v.len);
	if (rc || !k.len)
		return load_bad(l, rc == RUMA_ETOOBIG ? "a value beyond RUMA_DB_MAX_VALUE"
						      : "bad hex key or value");
	k.data = l->kb;
	v.data = vs;
	if ((rc = load_pair(l, &k, &v)))
		return rc;
	l->in_table++;
	l->total++;
	return 0;
}

/* A 'table' line: an empty (or new) table is bulk-loaded, one with
 * entries gets puts. */
static int load_table_start(loader *l, const char *name)
{
	strcpy(l->name, name);
	l->in_table = 0;
	int rc = ruma_db_load_begin(l->db, name, &l->bulk);
	if (rc == -ENOTEMPTY)
		return ruma_db_table_open(l->x, name, RUMA_DB_CREATE, &l->t);
	return rc;
}

/* An 'end' line: a bulk load becomes the table, durably. */
static int load_table_end(loader *l)
{
	l->t = NULL;
	if (!l->bulk)
		return 0;
	int rc = ruma_db_load_end(l->bulk, NULL);
	l->bulk = NULL;
	return rc;
}

/* One line of the dump; *done set by "end-dump". */
static int load_line(loader *l, char *line, bool *done)
{
	size_t n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[--n] = '\0';
	if (l->line == 1)
		return strcmp(line, DUMP_HEADER) ? load_bad(l, "not a ruma db dump (header)") : 0;
	if (!strncmp(line, "table ", 6)) {
		unsigned char name[RUMA_DB_MAX_NAME + 1];
		size_t len;
		if (load_in_table(l))
			return load_bad(l, "'table' before the previous table's 'end'");
		if (parse_escaped(line + 6, name, RUMA_DB_MAX_NAME, &len) || memchr(name, 0, len))
			return load_bad(l, "bad table name");
		name[len] = '\0';
		return load_table_start(l, (char *)name);
	}
	if (!strncmp(line, "end ", 4)) {
		uint64_t want;
		if (!load_in_table(l) || ruma_parse_u64(line + 4, &want) || want != l->in_table)
			return load_bad(l, "'end' without a table or with a wrong count");
		return load_table_end(l);
	}
	if (!strcmp(line, "end-dump")) {
		*done = true;
		return load_in_table(l) ? load_bad(l, "'end-dump' inside a table") : 0;
	}
	return load_entry(l, line);
}

static int sub_load(const db_cli *o, const char **pos, int npos)
{
	(void)npos;
	loader l = { .no_overwrite = o->no_overwrite };
	if (open_txn(pos[0], o, OPEN_CREATE, NULL, &l.db, &l.x, NULL))
		return 1;
	stream_buffers(stdin, STDIN_FILENO);
	char *line = NULL;
	size_t cap = 0;
	bool done = false;
	int rc = 0;
	while (!rc && !done && getline(&line, &cap, stdin) >= 0) {
		l.line++;
		rc = load_line(&l, line, &done);
	}
	free(line);
	if (!rc && !done)
		rc = load_bad(&l, l.line ? "the dump ends early (no 'end-dump': truncated)"
					 : "empty input");
	if (!rc)
		rc = load_commit(&l, true);
	if (l.bulk && rc == RUMA_EPARSE) /* what was loaded before the bad line stays */
		(void)ruma_db_load_end(l.bulk, NULL);
	else
		ruma_db_load_abort(l.bulk);
	if (rc && l.x)
		ruma_db_abort(l.x);
	int crc = ruma_db_close(l.db);
	if (rc)
		return rc == RUMA_EPARSE ? 1 : fail("load", rc);
	if (crc)
		return fail("close", crc);
	fprintf(stderr, "ruma db: loaded %" PRIu64 " entries\n", l.total);
	return 0;
}

/* ---- dispatch ---------------------------------------------------------------------- */

typedef struct db_sub {
	const char *name;
	const ruma_opt *opts;
	size_t nopts;
	int minpos, maxpos;
	const char *usage;
	int (*run)(const db_cli *o, const char **pos, int npos);
} db_sub;

#define SUB(n, t, lo, hi, u) { #n, t, RUMA_ARRAY_SIZE(t), lo, hi, u, sub_##n }

static const db_sub subs[] = {
	SUB(stat, opt_plain, 1, 1, "stat STORE                 store and per-table figures"),
	SUB(get, opt_key, 3, 3, "get STORE TABLE KEY [--hex]  print the value"),
	SUB(put, opt_put, 4, 4,
	    "put STORE TABLE KEY VALUE [--hex] [--no-overwrite] [--create]"),
	SUB(del, opt_key, 3, 3, "del STORE TABLE KEY [--hex]"),
	SUB(drop, opt_plain, 2, 2, "drop STORE TABLE           remove the table and free its pages"),
	SUB(scan, opt_scan, 2, 2,
	    "scan STORE TABLE [--from K] [--to K] [--limit N] [--reverse] [--hex]\n"
	    "                             key<TAB>value lines; [--from, --to)"),
	SUB(check, opt_plain, 1, 1, "check STORE                tables and pages (none leaked); exit 1 if damaged"),
	SUB(copy, opt_plain, 2, 2, "copy STORE DEST            a consistent copy (DEST and DEST.wal must not exist)"),
	SUB(dump, opt_plain, 1, 64, "dump STORE [TABLE...]      the text dump on stdout"),
	SUB(load, opt_load, 1, 1, "load STORE [--no-overwrite] a dump from stdin (store created if missing)"),
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ruma db <sub-command> STORE ... [--pool BYTES]\n");
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(subs); i++)
		fprintf(f, "  %s\n", subs[i].usage);
	fprintf(f, "Keys and values: text with \\\\ and \\xNN escapes, or hex digits with --hex.\n"
		   "stat, get, scan, check and dump open the store read-only.  copy takes the\n"
		   "store's lock like every sub-command: a program that has the store open copies\n"
		   "it while it writes with ruma_db_copy (db.h).  --pool: the buffer\n"
		   "pool (default 64M).  Exit: 0 ok, 1 failure (missing key, damaged store, store\n"
		   "in use, bad dump), 2 bad usage.\n");
}

static int parse_sub(const db_sub *s, int argc, char **argv, db_cli *o, const char **pos,
		     int *npos)
{
	ruma_opt_error e;
	memset(o, 0, sizeof(*o));
	if (ruma_opt_parse(s->opts, s->nopts, argc, argv, 2, o, pos, s->maxpos, npos, &e)) {
		if (e.status == RUMA_OPT_STOPPED) {
			printf("usage: ruma db %s\n", s->usage);
			return 0;
		}
		fprintf(stderr, "ruma db %s: %s: '%s' (see ruma db --help)\n", s->name,
			e.status == RUMA_OPT_UNKNOWN ? "unknown option" :
			e.status == RUMA_OPT_TOOMANY ? "too many arguments" :
			e.status == RUMA_OPT_MISSING ? "missing value" :
			e.opt && e.opt->help ? e.opt->help : "bad value",
			e.value ? e.value : e.arg);
		return 2;
	}
	if (*npos < s->minpos) {
		fprintf(stderr, "usage: ruma db %s\n", s->usage);
		return 2;
	}
	return -1;
}

int ruma_cmd_db(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < RUMA_ARRAY_SIZE(subs); i++) {
		if (strcmp(argv[1], subs[i].name))
			continue;
		db_cli o;
		const char *pos[64];
		int npos = 0, rc = parse_sub(&subs[i], argc, argv, &o, pos, &npos);
		return rc >= 0 ? rc : subs[i].run(&o, pos, npos);
	}
	fprintf(stderr, "ruma db: unknown sub-command '%s' (see ruma db --help)\n", argv[1]);
	return 2;
}
