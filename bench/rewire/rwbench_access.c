/*
 * rwbench_access.c — `ruma rwbench access`: the access penalty of rewired
 * memory.  Sequential and random reads and writes of 8-byte words over
 * memory from: malloc (the baseline), one anonymous mmap, a rewiring pool
 * wired sequentially (one mapping), a rewiring pool wired randomly (one
 * mapping per page: the worst case for the page-table walk and VMA count),
 * a software-indirection pool (every access through the page directory),
 * and with --huge the 2 MiB versions of mmap and the sequential rewiring pool.
 *
 * All memory is allocated with population and written once before timing,
 * so no page faults are measured.  Random accesses use a xorshift index
 * stream (no index array) and n/4 operations.  The ratio column of the
 * summary is time(variant) / time(malloc) of the same repetition.
 *
 * Syscalls: none directly (the pools make theirs through the library).
 */
#include "bench/rewire/rwbench.h"

#include <ruma/pool.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct acc_variant {
	const char *name;
	int pool_kind; /* -1: malloc */
	bool huge, random;
} acc_variant;

static const acc_variant variants[] = {
	{ "malloc", -1, false, false },
	{ "mmap", RUMA_POOL_MMAP, false, false },
	{ "rewired", RUMA_POOL_REWIRED, false, false },
	{ "rewired-random", RUMA_POOL_REWIRED, false, true },
	{ "indirect", RUMA_POOL_INDIRECT, false, false },
	{ "mmap-2m", RUMA_POOL_MMAP, true, false },
	{ "rewired-2m", RUMA_POOL_REWIRED, true, false },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

static const char *const tests[] = { "seq-read", "seq-write", "rand-read", "rand-write" };
#define NTEST 4

typedef struct acc_mem {
	uint64_t *base;          /* contiguous kinds */
	uint64_t *const *dir;    /* indirect: pages of 512 words */
	ruma_pool *pool;
	void *heap;
} acc_mem;

static volatile uint64_t sink;

static inline uint64_t xs(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Index in [0, n) from 64 random bits (multiply-shift). */
static inline uint64_t idx(uint64_t r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

static double run_flat(uint64_t *a, uint64_t n, int test, uint64_t seed)
{
	uint64_t s = seed | 1, sum = 0, ops = n / 4;
	double t0 = ruma_now_sec();

	switch (test) {
	case 0:
		for (uint64_t i = 0; i < n; i++)
			sum += a[i];
		break;
	case 1:
		for (uint64_t i = 0; i < n; i++)
			a[i] = i;
		break;
	case 2:
		for (uint64_t i = 0; i < ops; i++)
			sum += a[idx(xs(&s), n)];
		break;
	default:
		for (uint64_t i = 0; i < ops; i++)
			a[idx(xs(&s), n)] = i;
		break;
	}
	double t = ruma_now_sec() - t0;
	sink += sum;
	return t;
}

/* Through the directory: word i is dir[i / 512][i % 512] (4 KiB pages). */
static double run_dir(uint64_t *const *dir, uint64_t n, int test, uint64_t seed)
{
	uint64_t s = seed | 1, sum = 0, ops = n / 4;
	double t0 = ruma_now_sec();

	switch (test) {
	case 0:
		for (uint64_t i = 0; i < n; i++)
			sum += dir[i >> 9][i & 511];
		break;
	case 1:
		for (uint64_t i = 0; i < n; i++)
			dir[i >> 9][i & 511] = i;
		break;
	case 2:
		for (uint64_t i = 0; i < ops; i++) {
			uint64_t j = idx(xs(&s), n);
			sum += dir[j >> 9][j & 511];
		}
		break;
	default:
		for (uint64_t i = 0; i < ops; i++) {
			uint64_t j = idx(xs(&s), n);
			dir[j >> 9][j & 511] = i;
		}
		break;
	}
	double t = ruma_now_sec() - t0;
	sink += sum;
	return t;
}

static int mem_create(const acc_variant *v, uint64_t n, acc_mem *m)
{
	ruma_pool_options po;
	int rc;

	memset(m, 0, sizeof(*m));
	if (v->pool_kind < 0) {
		m->heap = aligned_alloc(4096, (n * 8 + 4095) / 4096 * 4096);
		if (!m->heap)
			return -ENOMEM;
		m->base = m->heap;
		memset(m->base, 1, n * 8);
		return 0;
	}
	ruma_pool_options_default(&po);
	po.kind = (ruma_pool_kind)v->pool_kind;
	po.huge = v->huge;
	po.random = v->random;
	po.populate = true;
	rc = ruma_pool_create(&po, n * 8, &m->pool);
	if (rc)
		return rc;
	m->base = ruma_pool_base(m->pool);
	m->dir = (uint64_t *const *)ruma_pool_directory(m->pool);
	if (m->dir)
		for (uint64_t i = 0; i < n; i++)
			m->dir[i >> 9][i & 511] = 1;
	else
		memset(m->base, 1, n * 8);
	return 0;
}

static void mem_destroy(acc_mem *m)
{
	ruma_pool_destroy(m->pool);
	free(m->heap);
}

/* the state of one access bench run, for its turns */
struct access_run {
	const ruma_rwbench_opts *o;
	const size_t *sel;
	size_t nsel;
	acc_mem *mem;
	ruma_rwb_table *t;
};

/* one turn: test `group` over variant sel[variant]'s memory */
static int access_turn(void *ctx, const ruma_rep_turn *turn)
{
	struct access_run *a = ctx;
	const ruma_rwbench_opts *o = a->o;
	size_t te = turn->group, j = turn->variant;
	acc_mem *m = &a->mem[j];
	uint64_t n = o->n, nops = te < 2 ? n : n / 4;
	unsigned r = turn->rep + 1;
	double sec;

	if (!m->base && !m->dir)
		return 0;
	if (m->dir)
		sec = run_dir(m->dir, n, (int)te, o->seed + turn->round);
	else
		sec = run_flat(m->base, n, (int)te, o->seed + turn->round);
	if (turn->warmup)
		return 0;
	ruma_rep_put(&a->t->s, te * a->nsel + j, turn->rep, sec);
	fprintf(o->csv, "access,%s,%s,%llu,%llu,%u,%.9f,%.4f\n", variants[a->sel[j]].name,
		tests[te], (unsigned long long)n, (unsigned long long)nops, r, sec,
		sec * 1e9 / nops);
	(void)ruma_result_set(o->res, "test", tests[te]);
	(void)ruma_result_setu(o->res, "n", n);
	(void)ruma_result_setu(o->res, "rep", r);
	ruma_result_add(o->res, variants[a->sel[j]].name, "s", sec);
	fflush(o->csv);
	return 0;
}

int ruma_rwbench_access(const ruma_rwbench_opts *o)
{
	size_t sel[NVAR], nsel = 0;
	acc_mem mem[NVAR];
	ruma_rwb_table t;
	double *ops;
	uint64_t n = o->n;
	int rc = 0;

	for (size_t k = 0; k < NVAR; k++)
		if (ruma_rwb_selected(o, variants[k].name) && (!variants[k].huge || o->huge))
			sel[nsel++] = k;
	if (!nsel || n < 1024) {
		fprintf(stderr, "rwbench access: no variant selected or n < 1024\n");
		return -EINVAL;
	}
	/* allocate everything once; a variant that cannot be built is reported and left out */
	for (size_t j = 0; j < nsel; j++) {
		int mrc = mem_create(&variants[sel[j]], n, &mem[j]);
		if (mrc) {
			fprintf(stderr, "rwbench access: %s: %s (left out)\n", variants[sel[j]].name,
				ruma_strerror(mrc));
			memset(&mem[j], 0, sizeof(mem[j]));
			rc = rc ? rc : mrc;
		}
	}
	if (ruma_rwb_table_init(&t, nsel * NTEST, o->reps)) {
		for (size_t j = 0; j < nsel; j++)
			mem_destroy(&mem[j]);
		return -ENOMEM;
	}
	ops = calloc(nsel * NTEST, sizeof(*ops));
	for (size_t te = 0; te < NTEST; te++)
		for (size_t j = 0; j < nsel; j++) {
			size_t c = te * nsel + j;
			snprintf(t.label[c], sizeof(t.label[c]), "%s %s", tests[te], variants[sel[j]].name);
			t.baseline[c] = (int)(te * nsel); /* the first selected (malloc by default) */
			if (ops)
				ops[c] = te < 2 ? (double)n : (double)(n / 4);
		}
	fprintf(o->csv, "bench,variant,test,n,ops,rep,seconds,ns_per_op\n");
	struct access_run ar = { .o = o, .sel = sel, .nsel = nsel, .mem = mem, .t = &t };
	ruma_rep rep;
	ruma_rwb_rep_init(&rep, o, nsel, NTEST);
	(void)ruma_rep_run(&rep, access_turn, &ar);
	ruma_rwb_table_print(&t, "access penalty (ratio = time / time of the first variant)", ops);
	fprintf(stderr, "(checksum %llu)\n", (unsigned long long)sink);
	free(ops);
	ruma_rwb_table_free(&t);
	for (size_t j = 0; j < nsel; j++)
		mem_destroy(&mem[j]);
	return rc;
}
