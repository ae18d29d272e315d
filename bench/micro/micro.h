/*
 * micro.h — internal interface of `ruma micro`, the Rewiring_Microbench driver.
 *
 * A run is: a method builds working data (micro_data) while timing its phases,
 * a test type works on that data (timed, with a checksum), cleanup frees it.
 * Every phase adds its seconds to one of the 33 fields of the original's summary
 * table (micro_field, in the original's column order).
 *
 * Data kinds decide which test types fit a method:
 *   MICRO_CONTIG       one contiguous dst array of n entries (+ src)
 *   MICRO_PARTITIONED  partitions, given as segments in partition order; when
 *                      `dst` is set the segments are consecutive inside it
 *   MICRO_VECTOR       a growable vector (test 15 only)
 *   MICRO_INDIRECT     a directory of pages (software indirection)
 */
#ifndef RUMA_BENCH_MICRO_H
#define RUMA_BENCH_MICRO_H

#include <ruma/core.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

/* The 33 phase fields of the summary table, in the original's column order. */
typedef enum micro_field {
	MF_MALLOC_SRC,
	MF_INIT_MALLOC_SRC,
	MF_MALLOC_DST,
	MF_MEMCPY,
	MF_SHM_SRC,
	MF_MMAP_SRC,
	MF_INIT_SHM_SRC,
	MF_MMAP_DST,
	MF_REMAP_DST,
	MF_SHM_SRC_HUGE,
	MF_READ_SEQ_SRC,
	MF_READ_SEQ_DST,
	MF_READ2_SEQ_DST,
	MF_READ_RAND_SRC,
	MF_READ_RAND_DST,
	MF_WRITE_SEQ_SRC,
	MF_WRITE_SEQ_DST,
	MF_WRITE_RAND_SRC,
	MF_WRITE_RAND_DST,
	MF_WRITE_SEQ_DST_PER_ELEM,
	MF_BUILD_HISTOGRAM,
	MF_SQUEEZE_AREA_COPY,
	MF_SQUEEZE_AREA_MMAP,
	MF_SHM_DST,
	MF_SHM_DST_HUGE,
	MF_MERGE,
	MF_RADIX_SORT,
	MF_INDIRECTION,
	MF_VECTOR_INSERT,
	MF_CRACK_IN_PLACE,
	MF_INDEX_INSERT,
	MF_INDEX_ACCESS,
	MF_WRITE2_SEQ_DST,
	MF_COUNT_
} micro_field;

/* "malloc-src", ... as printed in phase lines and the summary header. */
const char *micro_field_name(micro_field f);

/* ---- run context and phase timer ------------------------------------------ */

struct micro_detail; /* per-phase counters for `detailed true` (micro_report.c) */

typedef struct micro_ctx {
	double fields[MF_COUNT_]; /* this run's seconds per field (phases accumulate) */
	bool detailed;
	bool verify;   /* --verify: compare the result with a reference */
	bool fallback; /* --fallback: huge-page methods may use 4 KiB pages */
	bool corrupt;  /* --corrupt (testing aid): change one entry after the test */
	uint64_t seed; /* for shuffles and random tests (fixed default: reproducible) */
	double t0;
	struct micro_detail *detail;
} micro_ctx;

/* micro_phase_begin — start timing a phase (also snapshots counters when detailed). */
void micro_phase_begin(micro_ctx *c);
/* micro_phase_end — stop, add to field f, print "seconds,name" (+ detail lines). */
void micro_phase_end(micro_ctx *c, micro_field f);
/* micro_phase_end_total — as micro_phase_end, with " //total=N" appended. */
void micro_phase_end_total(micro_ctx *c, micro_field f, uint64_t total);
/*
 * micro_phase_stop / micro_phase_print_total — micro_phase_end_total in two
 * steps, for a checksum computed after the clock stopped (outside the timed
 * region): stop books the seconds under f and returns them.
 */
double micro_phase_stop(micro_ctx *c, micro_field f);
void micro_phase_print_total(micro_ctx *c, micro_field f, double sec, uint64_t total);

/*
 * micro_urand64_fill — n random 64-bit keys as the original draws them:
 * urand64() = (lrand48() << 42) + (lrand48() << 21) + lrand48(), with the
 * generator state set as srand48(seed) sets it (the POSIX 48-bit linear
 * congruential generator; the same sequence as glibc's).
 */
void micro_urand64_fill(uint64_t *keys, size_t n, uint64_t seed);

/*
 * micro_permutation — 0..n-1 with the first `shuffled` (<= n) entries in a
 * random order drawn from seed (ruma_rng), the rest in place; malloc'ed,
 * NULL when out of memory.
 */
uint64_t *micro_permutation(size_t n, size_t shuffled, uint64_t seed);

/* micro_detail_open / close — set up the counters for detailed output. */
int micro_detail_open(micro_ctx *c);
void micro_detail_close(micro_ctx *c);

/* micro_summary_print — the original's summary table: name, header, rows, average. */
void micro_summary_print(FILE *f, const char *method_name, const double (*rows)[MF_COUNT_],
			 size_t runs);

/* ---- parameters ------------------------------------------------------------------ */

typedef struct micro_params {
	/* method parameters */
	uint64_t pages_per_chunk;
	bool init_dst;
	uint64_t num_partitions;
	uint64_t pages_per_block;
	bool prefault_dst;
	bool huge, file, shared, populate, by_option, init_file, shuffle, random;
	/* test parameters */
	double percent;
	bool test_huge;
	uint64_t accesses; /* test 22: dependent accesses per random start */
	/* derived */
	bool populate_cow; /* methods 3, 5, 7, 9: populate the COW views */
	bool vec_prepopulate; /* methods 30, 31 */
	bool contiguous;      /* method 21's second parameter: build one contiguous output
			       * from 4 KiB pages (0, the default: the original's 2 MiB blocks
			       * from huge pages, left as chains) */
	bool use_huge; /* this run maps 2 MiB pages (false after --fallback) */
	bool fell_back;
	bool hugetlb;    /* --hugetlb: 11 and 37 map hugetlb pages */
	bool reserve;    /* --reserve: 4 and 5 reserve their 2 MiB pages when they map
			  * (default: MAP_NORESERVE, as the original) */
	bool huge_units; /* 11 and 37 without hugetlb pages, as the original: 2 MiB
			  * chunks (11) and a 2 MiB first mapping (37) in ordinary
			  * memory */
} micro_params;

/* ---- working data ------------------------------------------------------------------ */

typedef enum micro_kind {
	MICRO_CONTIG,
	MICRO_PARTITIONED,
	MICRO_VECTOR,
	MICRO_INDIRECT,
} micro_kind;

typedef struct micro_data micro_data;

struct micro_data {
	micro_kind kind;
	size_t n;        /* logical number of entries */
	uint64_t *src;   /* may be NULL (vectors, allocation methods) */
	uint64_t *dst;   /* contiguous destination, or NULL */
	bool src_aliases_dst; /* dst is a shared view of src's pages (writes show in both) */
	bool dst_zero;        /* dst starts zero-filled (the allocation methods) */
	bool src_zero;        /* src starts zero-filled instead of src[i] = i (method 32) */
	/* expected order of dst (for --verify): dst[i] == src_value(order[i]) when set */
	uint64_t *chunk_perm;     /* chunk c of dst holds source chunk chunk_perm[c] */
	size_t chunk_entries;     /* entries per chunk for chunk_perm */
	size_t nchunks_perm;
	/* random keys (partitioning): src[i] = micro_urand64_fill(seed)[i], else src[i] = i */
	bool random_keys;
	uint64_t key_seed;
	/* partitions: partition of key k is ruma_part_of(k, part_shift, nparts) */
	unsigned part_shift;
	size_t nparts;
	bool part_unordered; /* order inside a partition is not promised (mapped squeeze) */
	size_t *hist;        /* entries per partition */
	size_t nseg;         /* segments (blocks) in partition order */
	uint64_t **seg_ptr;
	size_t *seg_len;
	uint32_t *seg_part;  /* partition of each segment */
	/* software indirection: dir[i >> page_shift][i & page_mask] */
	uint64_t **dir;
	unsigned page_shift;
	/* vector (test 15 pushes through a push cursor of vector.h, ruma_vec_cursor_push) */
	struct ruma_vec *vec;
	uint64_t vec_probe; /* the key pushed at position n / 2 (for --corrupt) */
	/* the original prints no blank line between a vector method and "Starting tests:" */
	bool no_blank_line;
	/* the method's cleanup: prints "Freeing ..." lines, releases everything */
	void (*cleanup)(micro_data *d);
	void *priv;
};

/* ---- methods --------------------------------------------------------------------------- */

typedef int (*micro_build_fn)(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);

typedef struct micro_method {
	int id;
	const char *name;       /* summary / name line, e.g. "Traditional memcpy" */
	micro_kind kind;
	unsigned nparams;       /* parameters in "(...)" */
	const char *param_doc;  /* "(pagesPerChunk)" */
	micro_build_fn build;
} micro_method;

/* micro_method_find — the method with number id, or NULL. */
const micro_method *micro_method_find(int id);
/* micro_method_defaults — fill the documented defaults of method m into p. */
void micro_method_defaults(const micro_method *m, micro_params *p);
/* micro_method_set_params — assign parsed values v[0..k) to m's parameters. */
int micro_method_set_params(const micro_method *m, const double *v, unsigned k, micro_params *p,
			    char *why, size_t whylen);
/* micro_method_wants_huge — does method m with parameters p map 2 MiB pages? */
bool micro_method_wants_huge(const micro_method *m, const micro_params *p);
/* micro_method_huge_pages — how many 2 MiB pages a run needs at most. */
uint64_t micro_method_huge_pages(const micro_method *m, const micro_params *p, size_t n);

/* Builders, one per method family (m_*.c). */
int micro_build_memcpy(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_cow(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_cow_shuffle(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_cow_shuffle_rfp(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_memcpy_shuffle(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_mix(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_map_populate(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_part_histo(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_part_mapped(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_part_chains(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_part_mapped_chains(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_part_adaptive(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_part_mremap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_vec_rewired(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_vec_copying(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_vec_mremap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_vec_indirect(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_alloc_rewired(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_alloc_indirect(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);
int micro_build_alloc_mmap(micro_ctx *c, const micro_params *p, size_t n, micro_data *d);

/* ---- tests ------------------------------------------------------------------------------- */

typedef struct micro_test {
	int id;
	const char *desc;
	unsigned min_params, max_params;
} micro_test;

const micro_test *micro_test_find(int id);
/* micro_test_set_params — assign parsed values to the test's parameters. */
int micro_test_set_params(const micro_test *t, const double *v, unsigned k, micro_params *p,
			  char *why, size_t whylen);
/*
 * micro_combo_check — NULL when test t fits method m, else a sentence saying
 * why not (e.g. "method 24 (STL vector) produces a vector; test 2 needs ...").
 */
const char *micro_combo_check(const micro_method *m, const micro_test *t, const micro_params *p,
			      char *buf, size_t len);
/*
 * micro_test_run — run test t on d (prints "Starting tests:" and the timed
 * lines).  With c->verify, also replays the test on a reference built without
 * rewiring and compares checksum and contents.  Returns 0, 1 on a failed
 * verification (message on stderr), or a negative errno.
 */
int micro_test_run(micro_ctx *c, const micro_test *t, const micro_params *p, micro_data *d);

/* ---- helpers shared by the method files ---------------------------------------------------- */

#define MICRO_SMALL_PAGE 4096ul
#define MICRO_HUGE_PAGE (2ul << 20)

/* micro_round_up — round x up to a multiple of the power of two a. */
static inline size_t micro_round_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/*
 * micro_report_sigbus — from now on a SIGBUS ends the process with a message
 * that names a shortage of huge pages and --reserve, and status 1.
 */
void micro_report_sigbus(void);

/* micro_fail — print "ruma micro: <what>: <strerror(rc)>" to stderr; returns rc. */
int micro_fail(const char *what, int rc);

/* micro_free_data — release the segment / histogram arrays of d (not the memory they point to). */
void micro_free_data_arrays(micro_data *d);

/* ---- the command line ------------------------------------------------------------------ */

typedef struct micro_opts {
	bool verify, fallback, hugetlb, reserve, help, corrupt;
	uint64_t seed;
	const char *result;      /* --result FILE, NULL = none */
	const char *pos[6];      /* the positional arguments */
	int npos;
	/* parsed from pos */
	int mid, tid;
	const micro_method *m;
	const micro_test *t;
	micro_params prm;
	uint64_t n, runs;
	bool detailed;
	const char *out_path;    /* <output_file>, NULL = stdout */
	/* after a parse error */
	int progress;            /* "Parsing copy method." / "Parsing test type." lines to print */
	bool usage_stdout;       /* fewer than five arguments: the usage text to stdout */
} micro_opts;

/*
 * micro_parse — `ruma micro [options] <method> <test> <n> <runs> <detailed>
 * [<output_file>]` (argv[0] is the command) into *o: options, method and
 * test specifications with their parameters, counts, the method/test
 * combination.  envp is unused.  Returns 0 (run it, or print the help when
 * o->help) or RUMA_EPARSE with the message for stderr in err (empty when
 * o->usage_stdout); exit status 2.
 */
int micro_parse(int argc, char **argv, char *const *envp, micro_opts *o, char *err, size_t len);

/*
 * micro_run — run parsed options: memory and huge page checks, the runs, the
 * summary table; with o->result also every run's phase times as rows
 * (metric = field name, unit s, parameters method, test, n, runs, seed,
 * rep).  Returns the exit status: 0, 1 (resources, verification, lost
 * output) or 2 (too little memory, output file).
 */
int micro_run(const micro_opts *o);

#endif
