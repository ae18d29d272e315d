/*
 * cmd_art.c — `ruma art <n> <mode> [--alloc NAME] [--reps R] [--seed S]
 * [--lookups T] [--batch W]`:
 * Leis's ART benchmark (ART.cpp, JigaoLuo/duckdb) on ruma's ART over one of ruma's
 * allocator backends (u64 mode and its fast path for modes 0-2, TID mode
 * for mode 3).  A run whose keys and tree cannot fit into the memory the
 * machine and the cgroup leave is refused before it starts (exit 2).  Prints the node sizes, then per repetition the
 * lines insert,n,Mops / lookup,n,Mops / erase,n,Mops, each followed by the
 * per-operation counter table and faults/memory lines; a summary for R > 1.
 * Argument parsing only; the driver is bench/art/artbench.c.  No system
 * calls (available memory is read from /proc and /sys by the core module).
 */
#include "bench/art/artbench.h"

#include <ruma/art.h>
#include <ruma/sysinfo.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int ruma_cmd_art(int argc, char **argv);
extern const char ruma_cmd_art_summary[];
const char ruma_cmd_art_summary[] =
	"Leis's ART benchmark: insert/lookup/erase n keys (modes 0-2) over an allocator";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma art <n> <mode> [--alloc NAME] [--reps R] [--seed S] [--lookups T]\n"
		"                [--batch W]\n"
		"  n        number of keys (> 0; \"1e6\" style accepted)\n"
		"  mode     as Leis's ART.cpp, keys from the C library's rand() after srand(seed):\n"
		"           0 = dense keys 1..n inserted sorted, 1 = the same keys shuffled\n"
		"           (std::random_shuffle's method), 2 = keys (rand() << 32) | rand();\n"
		"           the key is its own TID.  3 = random keys using all 64 bits (ruma's\n"
		"           generator; TIDs are row numbers, keys found through keys[tid])\n"
		"  --alloc  libc (default), pool, mempool, huge (also huge-thp, huge-4k);\n"
		"           compare glibc/jemalloc/mimalloc with LD_PRELOAD and --alloc libc\n"
		"  --reps   repeat the insert/lookup/erase cycle R times (default 1); for R > 1\n"
		"           a summary (median/min/max Mops, first repetition discarded) follows\n"
		"  --seed   key seed (default 1: the keys of Leis's ART.cpp, which never\n"
		"           calls srand; modes 0-2 use srand(seed mod 2^32))\n"
		"  --lookups T  lookups in total: the key array is looked up max(1, T/n) times\n"
		"           (default 1e7, as Leis's benchmark)\n"
		"  --batch W  0 (default) = one lookup at a time; 1..%d = batched lookups\n"
		"           with W in flight (ruma_art_u64_lookup_batch, %d keys per call;\n"
		"           modes 0-2 only, mode 3 stays single)\n",
		RUMA_ART_BATCH_MAX, ARTBENCH_BATCH_CHUNK);
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "ruma art: %s: '%s'\n", what, arg);
	usage(stderr);
	return 2;
}

/* Refuse (message, false) a run whose keys and tree need more memory than
 * the machine and the cgroup leave: it would end in an OOM kill. */
static bool fits_in_memory(const artbench_config *cfg)
{
	ruma_mem_avail m;
	uint64_t need = artbench_bytes_needed(cfg->mode, cfg->n);
	char need_s[32], have_s[32];

	if (ruma_sysinfo_mem_available(&m) != 0 || m.bytes == 0 || need <= m.bytes)
		return true;
	ruma_format_size(need, need_s, sizeof(need_s));
	ruma_format_size(m.bytes, have_s, sizeof(have_s));
	fprintf(stderr,
		"ruma art: %" PRIu64 " keys of mode %d need about %s of memory (keys and tree), "
		"but only %s is available (%s); use fewer keys\n",
		cfg->n, cfg->mode, need_s, have_s, m.limited_by);
	return false;
}

int ruma_cmd_art(int argc, char **argv)
{
	artbench_config cfg = { 0, 0, "libc", 1, 1, 10000000, 0 };
	const char *pos[2] = { NULL, NULL };
	int npos = 0, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--alloc") || !strcmp(a, "--reps") || !strcmp(a, "--seed") ||
		    !strcmp(a, "--lookups") || !strcmp(a, "--batch")) {
			if (i + 1 >= argc)
				return bad("missing value for option", a);
			const char *v = argv[++i];
			uint64_t x;
			if (!strcmp(a, "--alloc")) {
				ruma_alloc_kind kind;
				if (ruma_alloc_kind_by_name(v, &kind) != 0)
					return bad("unknown allocator (" RUMA_ALLOC_NAMES ")", v);
				cfg.alloc_name = v;
			} else if ((rc = ruma_parse_u64(v, &x)) != 0) {
				return bad(rc == -ERANGE ? "number larger than 2^64 - 1" :
							   "not a non-negative integer", v);
			} else if (!strcmp(a, "--reps")) {
				if (x == 0 || x > 1000)
					return bad("--reps must be 1..1000", v);
				cfg.reps = (unsigned)x;
			} else if (!strcmp(a, "--batch")) {
				if (x > RUMA_ART_BATCH_MAX)
					return bad("--batch must be 0..32", v);
				cfg.batch = (unsigned)x;
			} else if (!strcmp(a, "--lookups")) {
				if (x == 0)
					return bad("--lookups must be > 0", v);
				cfg.lookups = x;
			} else {
				cfg.seed = x;
			}
			continue;
		}
		if (a[0] == '-' && a[1] == '-')
			return bad("unknown option", a);
		if (npos == 2)
			return bad("too many arguments", a);
		pos[npos++] = a;
	}
	if (npos < 2) {
		fprintf(stderr, "ruma art: need <n> and <mode>\n");
		usage(stderr);
		return 2;
	}
	if (ruma_parse_u64(pos[0], &cfg.n) != 0 || cfg.n == 0)
		return bad("n must be a positive integer", pos[0]);
	if (cfg.n > (UINT64_C(1) << 32))
		return bad("n larger than 2^32 keys", pos[0]);
	if (strlen(pos[1]) != 1 || pos[1][0] < '0' || pos[1][0] > '0' + ARTBENCH_NMODES - 1)
		return bad("mode must be 0, 1, 2 or 3", pos[1]);
	cfg.mode = pos[1][0] - '0';
	if (!fits_in_memory(&cfg))
		return 2;
	fprintf(stderr, "ruma art: n=%" PRIu64 " mode=%d alloc=%s reps=%u seed=%" PRIu64 "%s\n", cfg.n,
		cfg.mode, cfg.alloc_name, cfg.reps, cfg.seed,
		cfg.mode == ARTBENCH_SPARSE64 ? " (TIDs are row numbers; keys from keys[tid])" : "");
	printf("Node4 Size: %d\nNode16 Size: %d\nNode48 Size: %d\nNode256 Size: %d\n",
	       RUMA_ART_NODE4_SIZE, RUMA_ART_NODE16_SIZE, RUMA_ART_NODE48_SIZE, RUMA_ART_NODE256_SIZE);
	rc = artbench_run(&cfg, &artbench_art_index, stdout, stderr);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ruma art: writing the results to stdout failed: %s\n",
			strerror(errno));
		return 1;
	}
	return rc == 0 ? 0 : 1;
}
