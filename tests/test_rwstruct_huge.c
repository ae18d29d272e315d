/*
 * test_rwstruct_huge.c — the rewiring core and snapshot sources with 2 MiB
 * hugetlb pages.
 *
 * The test reserves huge pages itself: it reads /proc/sys/vm/nr_hugepages,
 * writes previous + RESERVE, and checks HugePages_Free in /proc/meminfo.  The
 * previous value is ALWAYS written back: at exit, and from a handler for
 * SIGSEGV/SIGBUS/SIGABRT/SIGINT/SIGTERM.  When the reservation is impossible
 * (not root, no memory) or RUMA_TEST_NO_RESERVE=1, every case that needs
 * huge pages skips (exit 77 when all skip).  Without free huge pages, pool
 * creation must fail with RUMA_ENOHUGE — that is checked before reserving.
 */
#include <ruma/area.h>
#include <ruma/snapshot.h>
#include "rewire/rewire_ext.h"
#include "rwstruct/rwstruct_ext.h"

#include "os/os.h"
#include "test.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define HP RUMA_PAGE_2M
#define RESERVE 8
#define NR_PATH "/proc/sys/vm/nr_hugepages"

static long saved_nr = -1;       /* nr_hugepages before the test, -1 = untouched */
static char saved_text[32];      /* the same, ready for the signal handler */
static size_t saved_len;
static bool have_huge;           /* the reservation worked */




static void restore_nr(void)
{
	if (saved_nr < 0)
		return;
	if (!test_write_long(NR_PATH, saved_nr))
		fprintf(stderr, "rwstruct_huge: could not restore %s to %ld\n", NR_PATH, saved_nr);
	saved_nr = -1;
}

static void restore_on_signal(int sig)
{
	if (saved_nr >= 0) {
		int fd = open(NR_PATH, O_WRONLY);
		if (fd >= 0) {
			ssize_t w = write(fd, saved_text, saved_len);
			(void)w;
			close(fd);
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void reserve_huge_pages(void)
{
	const char *no = getenv("RUMA_TEST_NO_RESERVE");
	long prev = test_read_long(NR_PATH);

	if ((no && *no && strcmp(no, "0")) || prev < 0)
		return;
	saved_len = (size_t)snprintf(saved_text, sizeof(saved_text), "%ld\n", prev);
	saved_nr = prev;
	atexit(restore_nr);
	int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGINT, SIGTERM };
	for (size_t i = 0; i < TEST_N(sigs); i++)
		signal(sigs[i], restore_on_signal);
	if (!test_write_long(NR_PATH, prev + RESERVE)) {
		saved_nr = -1;
		return;
	}
	have_huge = test_meminfo("HugePages_Free") >= RESERVE;
	printf("rwstruct_huge: nr_hugepages %ld -> %ld, HugePages_Free %ld\n", prev,
	       test_read_long(NR_PATH), test_meminfo("HugePages_Free"));
}

/* The reservation, made once, by the first case that needs huge pages
 * (after enohuge_without_reservation, which must run without it). */
static bool huge_ready(void)
{
	static bool tried;
	if (!tried) {
		tried = true;
		reserve_huge_pages();
	}
	return have_huge;
}

#define NEED_HUGE()                                                                        \
	do {                                                                               \
		if (!huge_ready())                                                         \
			SKIP("no free 2 MiB huge pages (could not raise vm.nr_hugepages; " \
			     "run as root, or RUMA_TEST_NO_RESERVE is set)");              \
	} while (0)

static uint64_t marker(uint64_t ppage)
{
	return 0x4855474500000000ull + ppage;
}

/* hugetlbfs has no write(2): markers go in through the area (vpage v = ppage v). */
static void write_markers(ruma_area *a, uint64_t n)
{
	for (uint64_t v = 0; v < n; v++)
		*(volatile uint64_t *)ruma_area_addr(a, v) = marker(v);
}

static uint64_t word(ruma_area *a, uint64_t v)
{
	return *(volatile uint64_t *)ruma_area_addr(a, v);
}


static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* ---- cases ------------------------------------------------------------------ */

/* Runs before the reservation: with no huge page free, creation says ENOHUGE. */
static int t_enohuge_without_reservation(void)
{
	ruma_phys *p = NULL;
	const char *no = getenv("RUMA_TEST_NO_RESERVE");

	if (no && *no && strcmp(no, "0"))
		SKIP("RUMA_TEST_NO_RESERVE: the huge-page path is not exercised");
	if (test_meminfo("HugePages_Free") != 0 || test_read_long("/proc/sys/vm/nr_overcommit_hugepages") != 0)
		SKIP("huge pages are available before reserving; the injected case covers ENOHUGE");
	int rc = ruma_phys_create(&(ruma_phys_options){ .page_size = HP }, &p);
	if (rc == RUMA_EUNSUPP)
		SKIP("kernel without hugetlb memfd");
	CHECK_EQ(rc, RUMA_ENOHUGE);
	CHECK(strstr(ruma_strerror(rc), "nr_hugepages") != NULL);
	return TEST_PASS;
}

static int t_huge_pool(void)
{
	ruma_phys *p;
	ruma_phys_stats st;
	uint64_t first;

	NEED_HUGE();
	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = HP,
							 .flags = RUMA_PHYS_PREPOPULATE },
				  &p));
	CHECK(ruma_phys_is_huge(p));
	CHECK_EQ(ruma_phys_page_size(p), HP);
	/*
	 * Other processes may take or free huge pages meanwhile, so the system
	 * counters are only printed; the file's own block count is checked.
	 */
	long free0 = test_meminfo("HugePages_Free");
	CHECK_OK(ruma_phys_alloc(p, 4, &first));
	CHECK_EQ(first, 0);
	long free1 = test_meminfo("HugePages_Free");
	CHECK_OK(ruma_phys_get_stats(p, &st));
	CHECK_EQ(st.bytes_resident, 4 * HP); /* prepopulate took them now */
	CHECK_EQ(st.file_size % HP, 0);
	CHECK_OK(ruma_phys_free(p, 1, 2));
	CHECK_OK(ruma_phys_get_stats(p, &st));
	CHECK_EQ(st.bytes_resident, 2 * HP); /* the punch gave them back */
	CHECK_EQ(st.punches, 1);
	long free2 = test_meminfo("HugePages_Free");
	CHECK_OK(ruma_phys_alloc(p, 2, &first));
	CHECK_EQ(first, 1);
	ruma_phys_destroy(p);
	printf("  HugePages_Free: %ld before, %ld after allocating 4, %ld after freeing 2, %ld at "
	       "the end\n", free0, free1, free2, test_meminfo("HugePages_Free"));
	return TEST_PASS;
}

static int t_huge_area(void)
{
	ruma_phys *p;
	ruma_area *a;
	uint64_t first, pp;
	ruma_area_result r;
	ruma_populate_method how;

	NEED_HUGE();
	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = HP }, &p));
	CHECK_OK(ruma_phys_alloc(p, 4, &first));
	CHECK_OK(ruma_area_create(HP, 16, &a));
	CHECK(((uintptr_t)ruma_area_base(a) & (HP - 1)) == 0);
	CHECK_OK(ruma_area_map_run(a, 0, p, 0, 4, RUMA_AREA_POPULATE, &how));
	CHECK(how != RUMA_POPULATE_NONE);
	write_markers(a, 4);
	for (uint64_t v = 0; v < 4; v++)
		CHECK_EQ(word(a, v), marker(v));
	/* aliasing: page 8 shows physical page 2 */
	CHECK_OK(ruma_area_map_run(a, 8, p, 2, 1, 0, NULL));
	((volatile uint64_t *)ruma_area_addr(a, 2))[1000] = 77;
	CHECK_EQ(((volatile uint64_t *)ruma_area_addr(a, 8))[1000], 77);
	/* a reversed batch: one mmap per page */
	ruma_rewire_pair pairs[4] = { { 4, 3 }, { 5, 2 }, { 6, 1 }, { 7, 0 } };
	uint64_t mm = ruma_os_count(RUMA_SYS_MMAP);
	CHECK_OK(ruma_area_rewire_batch(a, p, pairs, 4, RUMA_AREA_POPULATE, &r));
	CHECK_EQ(ruma_os_count(RUMA_SYS_MMAP) - mm, 4);
	CHECK_EQ(r.runs, 4);
	for (uint64_t v = 4; v < 8; v++)
		CHECK_EQ(word(a, v), marker(7 - v));
	/* mremap move keeps the populated pages */
	CHECK_OK(ruma_area_move(a, 0, 12, 4, &r));
	long f0 = minor_faults();
	for (uint64_t v = 12; v < 16; v++)
		CHECK_EQ(word(a, v), marker(v - 12));
	if (!test_sanitized()) /* sanitizer shadow memory faults on its own */
		CHECK(minor_faults() - f0 < 4);
	CHECK_OK(ruma_area_translate(a, 13, NULL, &pp, NULL));
	CHECK_EQ(pp, 1);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static int t_huge_mixed_sizes(void)
{
	ruma_phys *p;
	ruma_area *a;
	uint64_t first;

	NEED_HUGE();
	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = HP }, &p));
	CHECK_OK(ruma_phys_alloc(p, 1, &first));
	CHECK_OK(ruma_area_create(RUMA_PAGE_4K, 1024, &a));
	CHECK_EQ(ruma_area_map_run(a, 0, p, 0, 1, 0, NULL), -EINVAL); /* page sizes differ */
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* More pages mapped than free huge pages: the mmap reservation fails, ENOHUGE. */
static int t_huge_exhausted(void)
{
	ruma_phys *p;
	ruma_area *a;
	uint64_t first;

	NEED_HUGE();
	/* well above what is free, so pages freed by other processes meanwhile do not matter */
	uint64_t n = (uint64_t)(test_meminfo("HugePages_Free") - test_meminfo("HugePages_Rsvd")) + 64;
	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = HP }, &p));
	CHECK_OK(ruma_phys_alloc(p, n, &first));
	CHECK_OK(ruma_area_create(HP, n, &a));
	int rc = ruma_area_map_run(a, 0, p, 0, n, 0, NULL);
	if (rc == 0 && test_read_long("/proc/sys/vm/nr_overcommit_hugepages") > 0)
		SKIP("surplus huge pages (nr_overcommit_hugepages) let the mapping succeed");
	CHECK_EQ(rc, RUMA_ENOHUGE);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	/* and the prepopulate path: fallocate says ENOSPC */
	CHECK_EQ(ruma_phys_prepopulate(p, 0, n), RUMA_ENOHUGE);
	/* an injected ENOMEM from mmap on a hugetlb pool reads the same */
	ruma_os_inject(RUMA_SYS_MMAP, 1, ENOMEM, false);
	rc = ruma_area_map_run(a, 0, p, 0, 1, 0, NULL);
	ruma_os_inject_clear();
	CHECK_EQ(rc, RUMA_ENOHUGE);
	CHECK_OK(ruma_area_check(a, test_say, "ruma_area_check"));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

static off_t file_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) ? -1 : st.st_size;
}

/*
 * RUMA_PHYS_SIZE_BY_MAP: pages are handed out without ftruncate, the first
 * writable mapping sizes the file, and a later read-only mapping of those
 * pages reads them (no SIGBUS).  4 KiB pools refuse the flag.
 */
static int t_size_by_map(void)
{
	ruma_phys *p;
	ruma_area *a;
	uint64_t first;
	unsigned f = RUMA_PHYS_NO_PROBE | RUMA_PHYS_SIZE_BY_MAP;

	CHECK_EQ(ruma_phys_create(&(ruma_phys_options){ .flags = RUMA_PHYS_SIZE_BY_MAP }, &p), -EINVAL);
	NEED_HUGE();
	CHECK_OK(ruma_phys_create(&(ruma_phys_options){ .page_size = HP, .flags = f }, &p));
	uint64_t ft = ruma_os_count(RUMA_SYS_FTRUNCATE);
	CHECK_OK(ruma_phys_alloc(p, 3, &first));
	CHECK_EQ(ruma_os_count(RUMA_SYS_FTRUNCATE), ft);
	CHECK_EQ(file_size(ruma_phys_fd(p)), 0);
	CHECK(ruma_phys_file_pages(p) >= 3);
	CHECK_OK(ruma_area_create(HP, 6, &a));
	CHECK_OK(ruma_area_map_run(a, 0, p, first, 3, 0, NULL));
	CHECK_EQ(file_size(ruma_phys_fd(p)), (off_t)(3 * HP));
	write_markers(a, 3);
	CHECK_OK(ruma_area_map_run(a, 3, p, first, 3, RUMA_AREA_RDONLY, NULL));
	for (uint64_t v = 0; v < 3; v++)
		CHECK_EQ(word(a, 3 + v), marker(v));
	ruma_area_destroy(a);
	ruma_phys_destroy(p);
	return TEST_PASS;
}

/* A 2 MiB snapshot source is sized by its mapping: no ftruncate, data intact. */
static int t_huge_snap_src(void)
{
	ruma_snap_src *src;
	ruma_snap *snap;
	ruma_snap_options o;

	NEED_HUGE();
	uint64_t ft = ruma_os_count(RUMA_SYS_FTRUNCATE);
	ruma_snap_src_options so = { .bytes = 2 * HP, .flags = RUMA_SNAP_SRC_HUGE };
	CHECK_OK(ruma_snap_src_create(&so, &src));
	CHECK_EQ(ruma_os_count(RUMA_SYS_FTRUNCATE), ft);
	uint64_t *d = ruma_snap_src_data(src);
	for (size_t i = 0; i < 2 * HP / 8; i += 4096)
		d[i] = i + 1;
	ruma_snap_options_default(&o);
	o.method = RUMA_SNAP_REWIRED_COW;
	CHECK_OK(ruma_snap_reserve(&o, src, &snap));
	CHECK_OK(ruma_snap_build(snap));
	uint64_t *v = ruma_snap_data(snap);
	for (size_t i = 0; i < 2 * HP / 8; i += 4096)
		CHECK_EQ(v[i], i + 1);
	/* a copied page lies beyond the source's pages: its writable mapping sizes the file */
	CHECK_OK(ruma_snap_make_writable(snap, 1, 1));
	size_t at = HP / 8 + 8;
	CHECK_EQ(v[at], 0);
	CHECK_EQ(v[HP / 8], HP / 8 + 1);
	v[at] = 99;
	CHECK_EQ(d[at], 0);
	ruma_snap_destroy(snap);
	ruma_snap_src_destroy(src);
	return TEST_PASS;
}

/* Whether the mapping holding addr is registered with a userfaultfd (VmFlags "um"). */
static bool uffd_registered(const void *addr)
{
	char line[512];
	bool in = false, um = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && !strncmp(line, "VmFlags:", 8))
			um = strstr(line, " um") != NULL;
	}
	if (f)
		fclose(f);
	return um;
}

/*
 * A 2 MiB rewired copy is filled by UFFDIO_COPY (no zeroing of the fresh
 * page); without userfaultfd, or when a step of it fails, by memcpy.  The
 * copy reads as the source either way, a write to it stays private, and no
 * range stays registered, also when unregistering fails (a later fault
 * there would block with nobody to serve it).  The copy itself takes no
 * page fault; the memcpy fallback takes one per 2 MiB page.
 */
static int t_huge_snap_uffd_copy(void)
{
	static const ruma_sys sys[] = { RUMA_SYS_COUNT_, RUMA_SYS_USERFAULTFD,
					RUMA_SYS_UFFDIO_API, RUMA_SYS_UFFDIO_REGISTER,
					RUMA_SYS_UFFDIO_COPY, RUMA_SYS_UFFDIO_UNREGISTER };
	ruma_snap_src *src;
	ruma_snap_options o;
	bool uffd_seen = false;

	NEED_HUGE();
	ruma_snap_src_options so = {
		.bytes = 3 * HP,
		.flags = RUMA_SNAP_SRC_HUGE | RUMA_SNAP_SRC_POPULATE,
	};
	CHECK_OK(ruma_snap_src_create(&so, &src));
	uint64_t *d = ruma_snap_src_data(src);
	for (size_t i = 0; i < 3 * HP / 8; i += 512)
		d[i] = i * 3 + 1;
	ruma_snap_options_default(&o);
	o.method = RUMA_SNAP_REWIRED_COW;
	for (size_t k = 0; k < TEST_N(sys); k++) {
		ruma_snap *snap;
		CHECK_OK(ruma_snap_create(&o, src, &snap));
		uint64_t copies = ruma_os_count(RUMA_SYS_UFFDIO_COPY);
		if (sys[k] != RUMA_SYS_COUNT_)
			ruma_os_inject(sys[k], 1, EINVAL, false);
		long f0 = minor_faults();
		int rc = ruma_snap_make_writable(snap, 0, 2);
		long faults = minor_faults() - f0;
		ruma_os_inject_clear();
		CHECK_OK(rc);
		uint64_t *v = ruma_snap_data(snap);
		CHECK(!uffd_registered(v));
		CHECK_OK(ruma_snap_make_writable(snap, 2, 1)); /* the next copy works too */
		CHECK(!uffd_registered((uint8_t *)v + 2 * HP));
		if (sys[k] == RUMA_SYS_COUNT_) {
			uffd_seen = ruma_os_count(RUMA_SYS_UFFDIO_COPY) - copies == 2;
			if (uffd_seen)
				CHECK_EQ(faults, 0);
		}
		for (size_t i = 0; i < 3 * HP / 8; i += 512) {
			CHECK_EQ(v[i], i * 3 + 1);
			v[i] = 5;
		}
		for (size_t i = 0; i < 3 * HP / 8; i += 512)
			CHECK_EQ(d[i], i * 3 + 1);
		ruma_snap_destroy(snap);
	}
	ruma_snap_src_destroy(src);
	if (!uffd_seen)
		SKIP("no userfaultfd for hugetlbfs here: the copies were made by memcpy");
	return TEST_PASS;
}

/*
 * RUMA_SNAP_SRC_NORESERVE and ruma_snap_options.noreserve: a 2 MiB source
 * and its COW view reserve no huge pages (HugePages_Rsvd stays), and still
 * hold the data and copy on write; without them both reserve their pages.
 */
static int t_huge_snap_noreserve(void)
{
	const size_t pages = 3;

	NEED_HUGE();
	for (int noreserve = 0; noreserve <= 1; noreserve++) {
		ruma_snap_src *src;
		ruma_snap *snap;
		ruma_snap_options o;
		long r0 = test_meminfo("HugePages_Rsvd");

		ruma_snap_src_options so = {
			.bytes = pages * HP,
			.flags = RUMA_SNAP_SRC_HUGE | (noreserve ? RUMA_SNAP_SRC_NORESERVE : 0),
		};
		CHECK_OK(ruma_snap_src_create(&so, &src));
		long r1 = test_meminfo("HugePages_Rsvd");
		CHECK_EQ(r1 - r0, noreserve ? 0 : (long)pages);
		uint64_t *d = ruma_snap_src_data(src);
		for (size_t i = 0; i < pages * HP / 8; i += 512)
			d[i] = i + 7;
		ruma_snap_options_default(&o);
		o.noreserve = noreserve;
		CHECK_OK(ruma_snap_create(&o, src, &snap));
		long r2 = test_meminfo("HugePages_Rsvd");
		CHECK_EQ(r2 - r0, noreserve ? 0 : (long)pages); /* the source's reservation is used up */
		uint64_t *v = ruma_snap_data(snap);
		for (size_t i = 0; i < pages * HP / 8; i += 512) {
			CHECK_EQ(v[i], i + 7);
			v[i] = 1;
			CHECK_EQ(d[i], i + 7);
		}
		ruma_snap_destroy(snap);
		ruma_snap_src_destroy(src);
		CHECK_EQ(test_meminfo("HugePages_Rsvd"), r0);
	}
	return TEST_PASS;
}

static const struct test_case cases[] = {
	{ "enohuge_without_reservation", t_enohuge_without_reservation },
	{ "huge_pool", t_huge_pool },
	{ "huge_area", t_huge_area },
	{ "huge_mixed_sizes", t_huge_mixed_sizes },
	{ "huge_exhausted", t_huge_exhausted },
	{ "size_by_map", t_size_by_map },
	{ "huge_snap_src", t_huge_snap_src },
	{ "huge_snap_uffd_copy", t_huge_snap_uffd_copy },
	{ "huge_snap_noreserve", t_huge_snap_noreserve },
};

int main(int argc, char **argv)
{
	int rc = test_main("rwstruct_huge", cases, TEST_N(cases), argc, argv);
	restore_nr();
	printf("rwstruct_huge: nr_hugepages now %ld\n", test_read_long(NR_PATH));
	return rc;
}
