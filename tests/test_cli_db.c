/*
 * test_cli_db.c — `ruma db`: sub-commands (drop and copy too), exit
 * statuses, dump/load round trips that are byte-identical (ten tables),
 * values of every size (BLOBs larger than the pool among them), and bad
 * inputs (a truncated dump, a dump of another format, a file that
 * is not a store, a store in use, a missing key, bad options).
 */
#include "fixture.h"

#include <ruma/db.h>

static char dir[128], store[192], copy[192], dump[192], dump2[192];

/* The fixture: a directory per case, the paths of a store, its copy and two dumps. */
static int setup(void)
{
	return test_dir_make(dir, sizeof(dir), "clidb", TEST_PATH(store, "s"), TEST_PATH(copy, "c"),
			     TEST_PATH(dump, "d"), TEST_PATH(dump2, "d2"), NULL);
}

static void teardown(void)
{
	test_dir_remove(dir);
}

/* Run `ruma db` with the NULL-terminated arguments; the exit status. */
static int db(char **out, ...)
{
	char *argv[16] = { NULL, "db" };
	va_list ap;
	va_start(ap, out);
	int n = 2;
	for (char *a; n < 15 && (a = va_arg(ap, char *)); n++)
		argv[n] = a;
	va_end(ap);
	argv[n] = NULL;
	char *err = NULL;
	int st = test_run_cli(argv, out, &err);
	if (err && *err)
		fprintf(stderr, "    %s", err);
	free(err);
	return st;
}

/* A shell command line; its exit status. */
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Load the dump of the store into the copy (`ruma db` options opt), dump
 * the copy: the two dumps are byte-identical and the copy is healthy. */
static int reload(const char *opt)
{
	CHECK_EQ(sh("%s db load %s %s < %s 2>/dev/null", RUMA_BIN, copy, opt, dump), 0);
	CHECK_EQ(sh("%s db dump %s %s > %s", RUMA_BIN, copy, opt, dump2), 0);
	CHECK_EQ(sh("cmp -s %s %s", dump, dump2), 0);
	CHECK_EQ(db(NULL, "check", copy, NULL), 0);
	return TEST_PASS;
}

static int t_commands(void)
{
	char *out = NULL;
	CHECK_EQ(db(NULL, "put", store, "t", "k1", "v1", NULL), 1); /* no store yet */
	CHECK_EQ(db(NULL, "put", store, "t", "k1", "v1", "--create", NULL), 0);
	CHECK_EQ(db(NULL, "put", store, "t", "k\\x00", "\\xff\\\\", NULL), 0);
	CHECK_EQ(db(NULL, "put", store, "t", "k1", "x", "--no-overwrite", NULL), 1);
	CHECK_EQ(db(&out, "get", store, "t", "k1", NULL), 0);
	CHECK(out && !strcmp(out, "v1\n"));
	free(out);
	CHECK_EQ(db(&out, "get", store, "t", "6b00", "--hex", NULL), 0);
	CHECK(out && !strcmp(out, "ff5c\n"));
	free(out);
	CHECK_EQ(db(&out, "scan", store, "t", NULL), 0);
	CHECK(out && !strcmp(out, "k\\x00\t\\xff\\\\\nk1\tv1\n"));
	free(out);
	CHECK_EQ(db(&out, "scan", store, "t", "--reverse", "--limit", "1", NULL), 0);
	CHECK(out && !strcmp(out, "k1\tv1\n"));
	free(out);
	CHECK_EQ(db(NULL, "get", store, "t", "nope", NULL), 1);
	CHECK_EQ(db(NULL, "get", store, "nosuchtable", "k1", NULL), 1);
	CHECK_EQ(db(NULL, "del", store, "t", "k1", NULL), 0);
	CHECK_EQ(db(NULL, "del", store, "t", "k1", NULL), 1);
	CHECK_EQ(db(&out, "stat", store, NULL), 0);
	CHECK(out && strstr(out, "1 tables"));
	free(out);
	CHECK_EQ(db(NULL, "check", store, NULL), 0);
	/* usage errors: 2; help: 0 */
	CHECK_EQ(db(NULL, NULL), 2);
	CHECK_EQ(db(NULL, "frob", NULL), 2);
	CHECK_EQ(db(NULL, "get", store, "t", NULL), 2);
	CHECK_EQ(db(NULL, "get", store, "t", "k", "--bogus", NULL), 2);
	CHECK_EQ(db(NULL, "get", store, "t", "\\q", NULL), 2);
	CHECK_EQ(db(NULL, "get", store, "t", "abc", "--hex", NULL), 2);
	CHECK_EQ(db(NULL, "--help", NULL), 0);
	CHECK_EQ(db(NULL, "scan", "--help", NULL), 0);
	return TEST_PASS;
}

static int t_dump_load(void)
{
	/* two tables, a few thousand entries, binary keys and empty values */
	ruma_db *d;
	CHECK_OK(test_db_open(store, 8u << 20, &d));
	ruma_db_txn *x;
	ruma_db_table *a, *b;
	CHECK_OK(ruma_db_begin(d, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "a", RUMA_DB_CREATE, &a));
	CHECK_OK(ruma_db_table_open(x, "b b", RUMA_DB_CREATE, &b));
	for (uint32_t i = 0; i < 5000; i++) {
		unsigned char kb[4] = { (unsigned char)(i >> 24), (unsigned char)(i >> 16),
					(unsigned char)(i >> 8), (unsigned char)i };
		ruma_val k = { sizeof(kb), kb }, v = { i % 7 * 20, kb };
		unsigned char vb[140];
		memset(vb, (int)i, sizeof(vb));
		v.data = vb;
		CHECK_OK(ruma_db_put(x, i % 3 ? a : b, &k, &v, 0));
	}
	CHECK_OK(ruma_db_commit(x));
	/* a store in use cannot be opened by the tool */
	CHECK_EQ(db(NULL, "stat", store, NULL), 1);
	CHECK_OK(ruma_db_close(d));
	CHECK_EQ(sh("%s db dump %s > %s", RUMA_BIN, store, dump), 0);
	CHECK_EQ(reload(""), TEST_PASS);
	/* keys out of order: bulk-loaded while they ascend, then put (the
	 * repeated key overwrites); into a table with entries: put */
	char *out = NULL, unsorted[200];
	snprintf(unsorted, sizeof(unsorted), "%s/u", dir);
	for (int round = 0; round < 2; round++) {
		CHECK_EQ(sh("printf 'ruma-db-dump 1\ntable u\n01 c1\n03 c3\n02 c2\n03 dd\n"
			    "end 4\nend-dump\n' | %s db load %s 2>/dev/null",
			    RUMA_BIN, unsorted),
			 0);
		CHECK_EQ(db(&out, "scan", unsorted, "u", "--hex", NULL), 0);
		CHECK(out && !strcmp(out, "01\tc1\n02\tc2\n03\tdd\n"));
		free(out);
		CHECK_EQ(db(NULL, "check", unsorted, NULL), 0);
	}
	/* bad inputs: truncated, another format, empty, not a store */
	CHECK_EQ(sh("head -n 100 %s | %s db load %s/t 2>/dev/null", dump, RUMA_BIN, dir), 1);
	CHECK_EQ(sh("sed 1s/1/2/ %s | %s db load %s/f 2>/dev/null", dump, RUMA_BIN, dir), 1);
	CHECK_EQ(sh("%s db load %s/e < /dev/null 2>/dev/null", RUMA_BIN, dir), 1);
	CHECK_EQ(sh("echo hello > %s/plain", dir), 0);
	char plain[200];
	snprintf(plain, sizeof(plain), "%s/plain", dir);
	CHECK_EQ(db(NULL, "stat", plain, NULL), 1);
	CHECK_EQ(db(NULL, "check", plain, NULL), 1);
	return TEST_PASS;
}

/* drop: the table goes with its pages; errors exit 1, usage 2. */
static int t_drop(void)
{
	char *out = NULL;
	CHECK_EQ(db(NULL, "drop", store, "t", NULL), 1); /* no store */
	char v[801];
	memset(v, 'v', sizeof(v) - 1);
	v[sizeof(v) - 1] = '\0';
	for (int i = 0; i < 40; i++) { /* "a" spans several pages */
		char k[16];
		snprintf(k, sizeof(k), "k%04d", i);
		CHECK_EQ(db(NULL, "put", store, i % 8 ? "a" : "b", k, v, "--create", NULL), 0);
	}
	CHECK_EQ(db(NULL, "drop", store, "a", NULL), 0);
	CHECK_EQ(db(NULL, "drop", store, "a", NULL), 1); /* gone */
	CHECK_EQ(db(NULL, "get", store, "a", "k0001", NULL), 1);
	CHECK_EQ(db(&out, "stat", store, NULL), 0);
	CHECK(out && strstr(out, "1 tables") && !strstr(out, "\na "));
	free(out);
	CHECK_EQ(db(&out, "get", store, "b", "k0000", NULL), 0);
	free(out);
	CHECK_EQ(db(NULL, "check", store, NULL), 0); /* no page leaked */
	CHECK_EQ(db(NULL, "drop", store, NULL), 2);
	CHECK_EQ(db(NULL, "drop", store, "b", "c", NULL), 2);
	/* a store in use */
	ruma_db *d;
	CHECK_OK(ruma_db_open(store, NULL, &d));
	CHECK_EQ(db(NULL, "drop", store, "b", NULL), 1);
	CHECK_OK(ruma_db_close(d));
	CHECK_EQ(db(NULL, "drop", store, "b", NULL), 0);
	CHECK_EQ(db(&out, "stat", store, NULL), 0);
	CHECK(out && strstr(out, "0 tables"));
	free(out);
	return TEST_PASS;
}

/* copy: a clean copy with the same dump; dest must not exist. */
static int t_copy(void)
{
	CHECK_EQ(db(NULL, "copy", store, copy, NULL), 1); /* no store */
	CHECK_EQ(db(NULL, "put", store, "t", "k1", "v1", "--create", NULL), 0);
	CHECK_EQ(db(NULL, "put", store, "u", "\\x00", "", "--create", NULL), 0);
	CHECK_EQ(db(NULL, "copy", store, copy, NULL), 0);
	CHECK_EQ(db(NULL, "copy", store, copy, NULL), 1); /* exists */
	CHECK_EQ(db(NULL, "copy", store, NULL), 2);
	ruma_db *d; /* a store in use: its lock is taken */
	CHECK_OK(ruma_db_open(store, NULL, &d));
	CHECK_EQ(db(NULL, "copy", store, dump, NULL), 1);
	CHECK_OK(ruma_db_close(d));
	CHECK_EQ(db(NULL, "check", copy, NULL), 0);
	CHECK_EQ(sh("%s db dump %s > %s && %s db dump %s > %s && cmp -s %s %s", RUMA_BIN, store,
		    dump, RUMA_BIN, copy, dump2, dump, dump2), 0);
	CHECK_EQ(sh("grep -c '^table ' %s | grep -qx 2", dump), 0);
	return TEST_PASS;
}

/* Fill table i of ten: binary keys (0x00 and 0xff bytes), empty and
 * largest values, a name with a space and an escape. */
static int fill_table(ruma_db_txn *x, int i, uint32_t rows)
{
	char name[32];
	snprintf(name, sizeof(name), i == 3 ? "t %d\\x" : "t%d", i);
	ruma_db_table *t;
	int rc = ruma_db_table_open(x, name, RUMA_DB_CREATE, &t);
	static unsigned char vb[RUMA_BTREE_MAX_ENTRY];
	for (uint32_t r = 0; !rc && r < rows; r++) {
		unsigned char kb[6] = { (unsigned char)(r % 3 ? 0 : 0xff), (unsigned char)(r >> 16),
					(unsigned char)(r >> 8), (unsigned char)r, 0, (unsigned char)i };
		size_t vlen = r % 5 == 0 ? 0 : r % 97 == 1 ? sizeof(vb) - sizeof(kb) : r % 50;
		memset(vb, (int)(r * 31 + (uint32_t)i), vlen);
		ruma_val k = { sizeof(kb), kb }, v = { vlen, vb };
		rc = ruma_db_put(x, t, &k, &v, 0);
	}
	return rc;
}

/* dump | load with ten tables round-trips exactly; a table subset too. */
static int t_dump_load_tables(void)
{
	ruma_db *d;
	CHECK_OK(test_db_open(store, 8u << 20, &d));
	for (int i = 0; i < 10; i++) {
		ruma_db_txn *x;
		CHECK_OK(ruma_db_begin(d, RUMA_DB_ASYNC, &x));
		CHECK_OK(fill_table(x, i, 1000u + 700u * (unsigned)i));
		CHECK_OK(ruma_db_commit(x));
	}
	CHECK_OK(ruma_db_close(d));
	CHECK_EQ(sh("%s db dump %s > %s", RUMA_BIN, store, dump), 0);
	CHECK_EQ(sh("grep -c '^table ' %s | grep -qx 10", dump), 0);
	CHECK_EQ(sh("grep -Fxc 'table t 3\\\\x' %s | grep -qx 1", dump), 0);
	CHECK_EQ(reload(""), TEST_PASS);
	/* two of the tables, named, in the order given */
	CHECK_EQ(sh("%s db dump %s t7 't 3\\x' > %s", RUMA_BIN, copy, dump2), 0);
	CHECK_EQ(sh("grep '^table ' %s | tr '\\n' , | grep -Fqx 'table t7,table t 3\\\\x,'",
		    dump2), 0);
	CHECK_EQ(sh("grep -qx 'end 5900' %s", dump2), 0);
	return TEST_PASS;
}

/* Values of every size round-trip: BLOBs beyond the inline limit, more
 * of them than half the pool holds at once, and one larger than the pool;
 * get and scan read them too (ruma db's reads copy around the pool). */
static int t_dump_load_large(void)
{
	static const size_t sizes[] = { RUMA_DB_MAX_INLINE, RUMA_DB_MAX_INLINE + 1, 100000,
					1u << 20, (5u << 20) + 3 };
	ruma_db *d;
	CHECK_OK(test_db_open(store, 4u << 20, &d));
	ruma_db_txn *x;
	ruma_db_table *t;
	CHECK_OK(ruma_db_begin(d, 0, &x));
	CHECK_OK(ruma_db_table_open(x, "big", RUMA_DB_CREATE, &t));
	unsigned char *vb = malloc(sizes[4]);
	CHECK(vb != NULL);
	for (uint32_t i = 0; i < 12; i++) {
		size_t n = sizes[i < 8 ? i % 4 : 4 - i % 2];
		for (size_t j = 0; j < n; j++)
			vb[j] = (unsigned char)(j * 7 + i);
		unsigned char kb[2] = { 'k', (unsigned char)('a' + i) };
		ruma_val k = { sizeof(kb), kb }, v = { n, vb };
		CHECK_OK(ruma_db_put(x, t, &k, &v, 0));
	}
	free(vb);
	CHECK_OK(ruma_db_commit(x));
	CHECK_OK(ruma_db_close(d));
	CHECK_EQ(sh("%s db dump %s --pool 4M > %s", RUMA_BIN, store, dump), 0);
	CHECK_EQ(reload("--pool 4M"), TEST_PASS);
	CHECK_EQ(sh("%s db get %s big 6b6b --hex --pool 4M | wc -c | grep -qx %zu", RUMA_BIN,
		    copy, 2 * sizes[4] + 1), 0); /* key "kk": the largest */
	CHECK_EQ(sh("%s db scan %s big --pool 4M | wc -l | grep -qx 12", RUMA_BIN, copy), 0);
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "dump_load_large", t_dump_load_large },
	{ "commands", t_commands },
	{ "drop", t_drop },
	{ "copy", t_copy },
	{ "dump_load_tables", t_dump_load_tables },
	{ "dump_load", t_dump_load },
};

int main(int argc, char **argv)
{
	static const struct test_fixture fixture = { setup, teardown };
	return test_main_fixture("cli_db", cases, TEST_N(cases), argc, argv, &fixture);
}
