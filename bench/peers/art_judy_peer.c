/*
 * art_judy_peer.c — JudyL (libjudy, Debian libjudy-dev) as the packaged
 * radix-tree peer of `ruma art`: the same driver (bench/art/artbench.c), the
 * same keys, timing, counter table, faults and memory lines, with JudyL
 * mapping each 64-bit key to its TID.  JudyL allocates with malloc (it has no
 * allocator hook), so LD_PRELOAD picks its allocator, as for `--alloc libc`.
 *
 * Not part of the ruma binary (that would add -lJudy to every build); the
 * CMake option RUMA_PEERS builds it as <build>/art_judy_peer:
 *   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DRUMA_PEERS=ON
 *   cmake --build build-rel --target art_judy_peer
 * usage: art_judy_peer <n> <mode> [--reps R] [--seed S]   (output as `ruma art`)
 * Without --seed the key seed is RUMA_SEED, which `ruma sweep art --peer
 * judyl=build/art_judy_peer --var impl=ruma,judyl ...` sets to ruma's key seed.
 */
#include "bench/art/artbench.h"

#include <Judy.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct judy {
	Pvoid_t array;
	uint64_t count;
};

static int judy_open(void **self, const ruma_alloc *a, const artbench_keys *keys)
{
	(void)a;
	(void)keys;
	struct judy *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*self = j;
	return 0;
}

static int judy_insert(void *self, uint64_t key, uint64_t tid)
{
	struct judy *j = self;
	PWord_t v = (PWord_t)JudyLIns(&j->array, (Word_t)key, PJE0);
	if (v == PJERR)
		return -ENOMEM;
	if (*v == 0)
		j->count++;
	*v = (Word_t)tid + 1; /* 0 marks a fresh slot */
	return 0;
}

static int judy_lookup(void *self, uint64_t key, uint64_t *tid)
{
	struct judy *j = self;
	PWord_t v = (PWord_t)JudyLGet(j->array, (Word_t)key, PJE0);
	if (!v || v == PJERR)
		return RUMA_ENOTFOUND;
	*tid = (uint64_t)*v - 1;
	return 0;
}

static int judy_erase(void *self, uint64_t key)
{
	struct judy *j = self;
	int rc = JudyLDel(&j->array, (Word_t)key, PJE0);
	if (rc != 1)
		return RUMA_ENOTFOUND;
	j->count--;
	return 0;
}

static uint64_t judy_count(void *self)
{
	return ((struct judy *)self)->count;
}

static uint64_t judy_bytes(void *self)
{
	return (uint64_t)JudyLMemUsed(((struct judy *)self)->array);
}

static void judy_close(void *self)
{
	struct judy *j = self;
	JudyLFreeArray(&j->array, PJE0);
	free(j);
}

/* Whole phases as loops of direct calls, as the ART's (keys are their own TIDs). */
static int judy_insert_keys(void *self, const uint64_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = judy_insert(self, keys[i], keys[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static uint64_t judy_lookup_keys(void *self, const uint64_t *keys, size_t n)
{
	uint64_t missing = 0, tid;

	for (size_t i = 0; i < n; i++)
		missing += judy_lookup(self, keys[i], &tid) != 0 || tid != keys[i];
	return missing;
}

static uint64_t judy_erase_keys(void *self, const uint64_t *keys, size_t n)
{
	uint64_t missing = 0;

	for (size_t i = 0; i < n; i++)
		missing += judy_erase(self, keys[i]) != 0;
	return missing;
}

static const artbench_index judy_index = {
	.name = "judyl", .open = judy_open, .insert = judy_insert, .lookup = judy_lookup,
	.erase = judy_erase, .count = judy_count, .bytes = judy_bytes, .close = judy_close,
	.insert_keys = judy_insert_keys, .lookup_keys = judy_lookup_keys,
	.erase_keys = judy_erase_keys,
};

int main(int argc, char **argv)
{
	artbench_config cfg = { 0, 0, NULL, 1, 1, 10000000, 0 };
	uint64_t x;

	if (argc < 3 || ruma_parse_u64(argv[1], &cfg.n) || cfg.n == 0 || strlen(argv[2]) != 1 ||
	    argv[2][0] < '0' || argv[2][0] > '2') {
		fprintf(stderr, "usage: art_judy_peer <n> <mode 0-2> [--reps R] [--seed S]\n");
		return 2;
	}
	cfg.mode = argv[2][0] - '0';
	cfg.seed = ruma_seed_default();
	for (int i = 3; i + 1 < argc; i += 2) {
		if (ruma_parse_u64(argv[i + 1], &x)) {
			fprintf(stderr, "art_judy_peer: not a number: '%s'\n", argv[i + 1]);
			return 2;
		}
		if (!strcmp(argv[i], "--reps") && x > 0 && x <= 1000)
			cfg.reps = (unsigned)x;
		else if (!strcmp(argv[i], "--seed"))
			cfg.seed = x;
		else {
			fprintf(stderr, "art_judy_peer: bad option '%s %s'\n", argv[i], argv[i + 1]);
			return 2;
		}
	}
	fprintf(stderr, "art_judy_peer: n=%" PRIu64 " mode=%d reps=%u seed=%" PRIu64 "\n", cfg.n,
		cfg.mode, cfg.reps, cfg.seed);
	return artbench_measure(&cfg, &judy_index, stdout, stderr, NULL) == 0 ? 0 : 1;
}
