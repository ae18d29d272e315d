/*
 * blob.c — large values (BLOBs) of the store: see docs/blob.md.
 */
#include "db/db_int.h"

int ruma_db_blob_create(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key,
			uint64_t size_hint, ruma_db_blob **out)
{
	(void)txn, (void)t, (void)key, (void)size_hint, (void)out;
	return -ENOSYS;
}

int ruma_db_blob_open(ruma_db_txn *txn, ruma_db_table *t, const ruma_val *key, ruma_db_blob **out)
{
	(void)txn, (void)t, (void)key, (void)out;
	return -ENOSYS;
}

int ruma_db_blob_append(ruma_db_blob *b, const void *data, size_t len)
{
	(void)b, (void)data, (void)len;
	return -ENOSYS;
}

int ruma_db_blob_read(ruma_db_blob *b, uint64_t off, void *buf, size_t len, size_t *got)
{
	(void)b, (void)off, (void)buf, (void)len, (void)got;
	return -ENOSYS;
}

uint64_t ruma_db_blob_size(const ruma_db_blob *b)
{
	(void)b;
	return 0;
}

int ruma_db_blob_close(ruma_db_blob *b)
{
	(void)b;
	return -ENOSYS;
}
