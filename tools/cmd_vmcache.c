/*
 * cmd_vmcache.c — `ruma vmcache`: the vmcache benchmark (random reads or
 * TPC-C on the B-tree over the buffer manager), configured like the
 * original by BLOCK, VIRTGB, PHYSGB, BATCH, RUNFOR, RNDREAD, THREADS,
 * DATASIZE and EXMAP, or by command-line flags (flags win).  Prints
 * ts,tx,rmb,wmb,system,threads,datasize,workload,batch and one row per
 * second on stdout; configuration and space on stderr.
 * --durable[=sync|pipeline|async] opens the store with a write-ahead log (docs/wal.md,
 * docs/tpcc.md "Durable runs").
 * Exit status: 0 ok, 1 failure, 2 bad configuration or unusable store,
 * 130/143 stopped by SIGINT/SIGTERM (store closed cleanly), 86 after a
 * simulated power loss (RUMA_POWER_LOSS_AFTER_MS, tests).
 * Usage text only; the parser is bench/vmcache/vmcache_cli.c, the driver
 * bench/vmcache/driver.c.
 */
#include "bench/common/opt.h"
#include "bench/vmcache/driver.h"

#include <ruma/core.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char ruma_cmd_vmcache_summary[] =
	"vmcache buffer manager + B-tree benchmark: rndread, scan, scandesc, tpcc (its env vars)";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ruma vmcache [options]\n"
		"\n"
		"Runs the vmcache benchmark on the ruma buffer manager (src/bm) and B-tree.\n"
		"Environment (as in vmcache; flags override):\n"
		"  BLOCK=path     store: regular file (created) or block device   [/tmp/bm]\n"
		"  VIRTGB=g       virtual reservation in GiB, fractions allowed   [16]\n"
		"  PHYSGB=g       buffer pool in GiB (e.g. 0.5 = 512 MiB)         [4]\n"
		"  BATCH=n        pages per eviction round (1..1024)              [64]\n"
		"  RUNFOR=s       seconds to measure (0 = load/check only)        [30]\n"
		"  RNDREAD=0|1    1 = random-read workload, 0 = TPC-C             [0]\n"
		"  THREADS=n      worker threads (1..128)                         [1]\n"
		"  DATASIZE=n     tuples (rndread, 1e6 accepted) or warehouses    [10]\n"
		"  INFLIGHT=n     rndread lookups in flight per thread (1..256;   [1]\n"
		"                 1 = one synchronous read at a time); scan and\n"
		"                 scandesc: leaves read ahead (1 = default, 32)\n"
		"  EXMAP=0        exmap is not supported (1 is refused)\n"
		"  FORCE=0|1      as --force                                      [0]\n"
		"  DURABLE=0|1|sync|pipeline|async  as --durable (1 = sync)       [0]\n"
		"  CHECKPOINT=s   as --checkpoint                                 [10]\n"
		"  TPCC_SCALE=n   tests only (not TPC-C): divide items, customers and [1]\n"
		"                 orders per warehouse by n (1..100)\n"
		"  RUMA_POWER_LOSS_AFTER_MS=ms  tests only: ms after start, simulate a\n"
		"                 power loss (every write no fsync covered is undone; write-\n"
		"                 back uses pwrite) and exit 86 at once              [0]\n"
		"  RUMA_POWER_LOSS_TORN=1  tests only: that power loss also tears the\n"
		"                 unsynced page writes (first half of each 4 KiB reaches the file)\n"
		"Options:\n"
		"  --block PATH --virtgb G --physgb G --batch N --runfor S --threads N\n"
		"  --datasize N   as the variables above\n"
		"  --workload W   rndread, scan, scandesc or tpcc (overrides RNDREAD)\n"
		"  --wait W       spin | yield | futex | mutex      latch wait strategy [spin]\n"
		"  --inflight N   as INFLIGHT\n"
		"  --evict E      process_madvise | madvise         page drop [process_madvise]\n"
		"  --write W      uring | pwrite                    write-back [uring]\n"
		"  --no-reuse     never reuse freed page ids\n"
		"  --no-cleaner   no page cleaner thread: evicting threads write every dirty\n"
		"                 victim themselves and wait for it (as the original vmcache)\n"
		"  --keep         open the store with its contents (default: start fresh);\n"
		"                 a store holding trees other than the workload's is refused\n"
		"  --force        without --keep: overwrite BLOCK even if it is a file that is\n"
		"                 not a ruma store (refused otherwise)\n"
		"  --check        verify the whole data set after the load (or reopen) and\n"
		"                 after the run, then the store: every page reached once,\n"
		"                 none free, none leaked\n"
		"  --salvage-log  recovery of a log damaged in the middle: replay it up to the\n"
		"                 damage and discard the rest, saying how many records and\n"
		"                 bytes (default: refuse such a log)\n"
		"  --durable[=sync|pipeline|async]  keep a write-ahead log BLOCK.wal: every\n"
		"                 TPC-C transaction is one atomic transaction; sync (default):\n"
		"                 commit returns once durable (group commit); pipeline: as\n"
		"                 durable, but a thread goes on while up to 64 of its commits\n"
		"                 are written, each counted once durable; async: commit\n"
		"                 returns at once, a crash loses the last few ms of commits\n"
		"  --txn          tpcc without --durable: run each transaction as one ruma\n"
		"                 transaction all the same (row locks, snapshot reads for\n"
		"                 Order-Status, Stock-Level and Delivery, rollback by abort);\n"
		"                 without it such a run takes the plain path, whose readers\n"
		"                 may see other transactions half done\n"
		"  --checkpoint S with a log: fuzzy checkpoint every S seconds, keeps the log\n"
		"                 short (0 = none; fractions allowed)                [10]\n"
		"  --commit-log F tpcc: append \"w d o_id\" of each New-Order after its commit\n"
		"                 returned (truncated unless --keep); --check verifies every\n"
		"                 recorded order is in the store (crash tests)\n"
		"  --seed N       random seed (default: $RUMA_SEED or clock)\n"
		"  --result F     also write each second's tx, rmb, wmb as rows\n"
		"                 metric,unit,value,params (docs/experiments.md)\n"
		"  --help\n"
		"Output: CSV ts,tx,rmb,wmb,system,threads,datasize,workload,batch on stdout,\n"
		"one row per second (tx = operations that second, rmb/wmb = MiB read/written);\n"
		"configuration and space used on stderr.\n"
		"Store: locked while in use (a second run on it is refused); marked open until\n"
		"closed cleanly.  A store whose run was killed is refused on --keep (recreate\n"
		"it: run without --keep) unless it ran --durable: then --keep recovers it\n"
		"from its log (stderr says what recovery did and how long it took).\n"
		"SIGINT/SIGTERM stop the run and close the store cleanly.\n"
		"Exit: 0 ok, 1 failure (I/O error, corrupt page, wrong data), 2 bad\n"
		"configuration or unusable store (in use, not closed cleanly, not a ruma\n"
		"store, PHYSGB above available memory), 130/143 stopped by SIGINT/SIGTERM.\n");
	ruma_bm_io_support io;
	ruma_bm_probe_io(&io);
	fprintf(f,
		"This machine: io_uring %s; process_madvise on self %s.\n"
		"Chosen by default: write-back %s, eviction %s, INFLIGHT>1 reads %s.\n",
		io.uring ? ruma_strerror(io.uring) : "works",
		io.process_madvise ? ruma_strerror(io.process_madvise) : "works",
		io.uring ? "pwrite/pwritev per run of pages (io_uring refused)"
			 : "one io_uring submission per batch",
		io.process_madvise ? "madvise per page (process_madvise refused)"
				   : "one process_madvise per batch",
		io.uring ? "synchronous (io_uring refused)" : "through io_uring");
}

extern char **environ;

int ruma_cmd_vmcache(int argc, char **argv);
int ruma_cmd_vmcache(int argc, char **argv)
{
	ruma_vmcache_opts o;
	char err[512];

	int rc = ruma_vmcache_parse(argc, argv, environ, &o, err, sizeof(err));
	int st = ruma_opt_outcome(rc, err, false, o.help, usage);
	return st >= 0 ? st : ruma_vmcache_run(&o);
}
