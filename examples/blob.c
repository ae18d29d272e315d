/* blob.c — a large value with include/ruma/db.h (docs/blob.md): a file streamed into the
 * store, then read back whole (one pointer, no copy), in pieces, and once more whole around
 * the buffer pool into memory of huge pages. */
#include <ruma/db.h>
#include <stdio.h>
#define TRY(call) do { int rc_ = (call); if (rc_) { fprintf(stderr, "%s: %s\n", #call, ruma_strerror(rc_)); return 1; } } while (0)
int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "blob.store", *file = argc > 2 ? argv[2] : argv[0];
	ruma_db *db; ruma_db_txn *x; ruma_db_table *t; ruma_db_blob *b;
	ruma_val key = { 4, "file" }, v;
	char buf[1 << 16];
	size_t n, got;
	FILE *in = fopen(file, "rb");
	if (!in) { perror(file); return 1; }
	TRY(ruma_db_open(path, NULL, &db));
	TRY(ruma_db_begin(db, 0, &x));
	TRY(ruma_db_table_open(x, "files", RUMA_DB_CREATE, &t));
	TRY(ruma_db_blob_create(x, t, &key, 0, &b));          /* size unknown: extents grow in tiers */
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		TRY(ruma_db_blob_append(b, buf, n));
	fclose(in);
	TRY(ruma_db_blob_close(b));
	TRY(ruma_db_commit(x));                               /* durable: extents synced, state logged */
	TRY(ruma_db_begin(db, RUMA_DB_RDONLY, &x));
	TRY(ruma_db_get(x, t, &key, &v));                     /* the whole value, valid until commit */
	printf("%s: %zu bytes stored, first byte 0x%02x\n", file, v.len,
	       v.len ? *(unsigned char *)v.data : 0);
	TRY(ruma_db_blob_open(x, t, &key, &b));               /* or a range of it */
	TRY(ruma_db_blob_read(b, ruma_db_blob_size(b) / 2, buf, 16, &got));
	printf("%zu bytes read from the middle\n", got);
	size_t size = (size_t)ruma_db_blob_size(b);
	TRY(ruma_db_blob_close(b));
	TRY(ruma_db_commit(x));
	void *whole;                                          /* huge pages: fewer device segments */
	TRY(ruma_db_buffer_alloc(size ? size : 1, &whole));
	TRY(ruma_db_begin(db, RUMA_DB_RDONLY | RUMA_DB_NOFILL, &x)); /* read once: around the pool */
	TRY(ruma_db_blob_open(x, t, &key, &b));
	TRY(ruma_db_blob_read(b, 0, whole, size, &got));
	printf("%zu bytes read whole around the pool\n", got);
	TRY(ruma_db_blob_close(b));
	TRY(ruma_db_commit(x));
	ruma_db_buffer_free(whole);
	return ruma_db_close(db) != 0;
}
