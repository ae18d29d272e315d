/* kv.c — a durable key/value store with include/ruma/db.h (docs/db.md). */
#include <ruma/db.h>
#include <stdio.h>
#define TRY(call) do { int rc_ = (call); if (rc_) { fprintf(stderr, "%s: %s\n", #call, ruma_strerror(rc_)); return 1; } } while (0)
int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "kv.store";
	ruma_db *db; ruma_db_txn *x; ruma_db_table *t; ruma_db_cursor *c;
	char kb[16], vb[32];
	ruma_val k = { 0, kb }, v = { 0, vb };
	TRY(ruma_db_open(path, NULL, &db));                  /* created if missing, durable */
	for (int i = 0; i < 100000; i += 1000) {              /* 100 000 puts, 1000 per transaction */
		TRY(ruma_db_begin(db, 0, &x));
		TRY(ruma_db_table_open(x, "users", RUMA_DB_CREATE, &t));
		for (int j = i; j < i + 1000; j++) {
			k.len = (size_t)sprintf(kb, "user%06d", j);
			v.len = (size_t)sprintf(vb, "name of %d", j);
			TRY(ruma_db_put(x, t, &k, &v, 0));
		}
		TRY(ruma_db_commit(x));
	}
	TRY(ruma_db_close(db));
	TRY(ruma_db_open(path, NULL, &db));                  /* reopen: everything is there */
	TRY(ruma_db_begin(db, 0, &x));
	TRY(ruma_db_table_open(x, "users", 0, &t));
	k.len = (size_t)sprintf(kb, "user%06d", 4242);
	TRY(ruma_db_get(x, t, &k, &v));                       /* a point read */
	printf("%.*s -> %.*s\n", (int)k.len, kb, (int)v.len, (char *)v.data);
	TRY(ruma_db_cursor_open(x, t, &c));                   /* a range scan: 5 keys from user050000 */
	k.len = (size_t)sprintf(kb, "user%06d", 50000);
	int rc = ruma_db_cursor_seek(c, &k);
	for (int n = 0; !rc && n < 5; n++, rc = ruma_db_cursor_next(c)) {
		ruma_val ck, cv; TRY(ruma_db_cursor_get(c, &ck, &cv));
		TRY(ruma_db_cursor_del(c));                   /* and delete them */
		printf("deleted %.*s (%.*s)\n", (int)ck.len, (char *)ck.data, (int)cv.len, (char *)cv.data);
	}
	ruma_db_cursor_close(c);
	TRY(ruma_db_commit(x));
	return ruma_db_close(db) != 0;
}
