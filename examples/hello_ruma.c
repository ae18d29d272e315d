/*
 * hello_ruma.c — a first program against the installed libruma.
 *
 *   cc hello_ruma.c $(pkg-config --cflags --libs ruma) -o hello_ruma
 *
 * 1. Rewiring: one physical page of a memfd pool is wired into two virtual
 *    pages of a reserved area; a write through one is seen through the other.
 * 2. ART: 100000 keys in an Adaptive Radix Tree over the huge-page allocator.
 * Every call's result is checked; errors are printed with ruma_strerror.
 */
#include <ruma/alloc.h>
#include <ruma/area.h>
#include <ruma/art.h>
#include <ruma/phys.h>
#include <ruma/ruma.h>

#include <stdio.h>
#include <string.h>

static int fail(const char *what, int rc)
{
	fprintf(stderr, "hello_ruma: %s: %s\n", what, ruma_strerror(rc));
	return 1;
}

static int rewiring(void)
{
	ruma_phys *pool;
	ruma_area *area;
	uint64_t page;
	int rc;

	if ((rc = ruma_phys_create(NULL, &pool)))
		return fail("phys_create", rc);
	if ((rc = ruma_area_create(4096, 16, &area)))
		return fail("area_create", rc);
	if ((rc = ruma_phys_alloc(pool, 1, &page)))
		return fail("phys_alloc", rc);
	if ((rc = ruma_area_map_run(area, 0, pool, page, 1, 0, NULL)) ||
	    (rc = ruma_area_map_run(area, 7, pool, page, 1, 0, NULL)))
		return fail("map_run", rc);
	strcpy(ruma_area_addr(area, 0), "written through virtual page 0");
	printf("read through virtual page 7: %s\n", (char *)ruma_area_addr(area, 7));
	ruma_area_destroy(area);
	ruma_phys_destroy(pool);
	return 0;
}

static int art(void)
{
	ruma_alloc alloc;
	ruma_art_options opt = { .keys = RUMA_ART_TID, .alloc = &alloc };
	ruma_art *tree;
	int rc;

	if ((rc = ruma_alloc_create(RUMA_ALLOC_HUGE, &alloc)))
		return fail("alloc_create", rc);
	if ((rc = ruma_art_create(&opt, &tree)))
		return fail("art_create", rc);
	for (uint64_t k = 1; k <= 100000; k++)
		if ((rc = ruma_art_insert_tid(tree, k, NULL)))
			return fail("art_insert_tid", rc);
	uint64_t key = 4242, value = 0;
	uint8_t kb[8];
	ruma_art_default_load_key(key, kb, NULL);
	if ((rc = ruma_art_lookup(tree, kb, 8, &value)))
		return fail("art_lookup", rc);
	printf("ART holds %zu keys; lookup(4242) = %llu\n", ruma_art_size(tree),
	       (unsigned long long)value);
	ruma_art_destroy(tree);
	ruma_alloc_destroy(&alloc);
	return value == key ? 0 : 1;
}

int main(void)
{
	printf("ruma %s\n", ruma_version());
	return rewiring() || art();
}
