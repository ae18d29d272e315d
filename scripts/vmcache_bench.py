#!/usr/bin/env python3
"""vmcache_bench.py — the interleaved benchmark behind docs/bench/vmcache.md.

Runs `ruma vmcache` (random reads) in memory and out of memory for every
wait strategy, eviction mode and write path, the LMDB peer
(scripts/vmcache_peer_lmdb.c, built by hand) and fio for the device's
4 KiB random-read ceiling.  Every experiment runs ROUNDS rounds; round 0 is
a warm-up and is discarded; within a round the variants are interleaved
(rotated start).  Prints a markdown report with median [min, max].

usage: scripts/vmcache_bench.py RUMA_BIN PEER_LMDB_BIN WORKDIR [ROUNDS]
"""
import json, os, re, statistics, subprocess, sys

ruma, peer, work = sys.argv[1], sys.argv[2], sys.argv[3]
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 6
os.makedirs(work, exist_ok=True)
ENV = {k: v for k, v in os.environ.items()
       if k not in ("BLOCK", "VIRTGB", "PHYSGB", "BATCH", "RUNFOR", "RNDREAD", "THREADS",
                    "DATASIZE", "EXMAP")}
raw = []


def rows(out):
    res = []
    for line in out.splitlines()[1:]:
        f = line.split(",")
        if len(f) == 9:
            res.append((int(f[0]), int(f[1]), float(f[2]), float(f[3])))
    return res


def run_ruma(args):
    p = subprocess.run([ruma, "vmcache", "--workload", "rndread"] + args, env=ENV,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write("FAILED: %s\n%s\n" % (" ".join(args), p.stderr))
    m = re.search(r"load: DATASIZE=\d+ of rndread in ([0-9.]+) s", p.stderr)
    return rows(p.stdout), (float(m.group(1)) if m else None), p.returncode


def mean(v):
    return sum(v) / len(v) if v else float("nan")


def experiment(name, variants, measure):
    """variants: list of (label, callable) -> dict of metrics; interleaved rounds."""
    results = {label: [] for label, _ in variants}
    for r in range(ROUNDS):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for label, fn in order:
            m = fn()
            raw.append({"exp": name, "variant": label, "round": r, **m})
            if r > 0:
                results[label].append(m)
            sys.stderr.write("%s r%d %s %s\n" % (name, r, label, m))
    return results


def summ(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    return "%.0f [%.0f, %.0f]" % (statistics.median(vals), min(vals), max(vals))


# ---- A: in memory ------------------------------------------------------------
MEM = ["--block", work + "/mem.store", "--virtgb", "4", "--physgb", "1", "--datasize", "1e6",
       "--runfor", "4", "--write", "uring"]


def ruma_mem(wait, threads):
    def f():
        rs, load, rc = run_ruma(MEM + ["--wait", wait, "--threads", str(threads)])
        return {"tx": mean([r[1] for r in rs]), "rc": rc}
    return f


def lmdb_mem(n, threads, runfor):
    def f():
        p = subprocess.run([peer, work + "/lmdb", n, str(runfor), str(threads), "4"],
                           capture_output=True, text=True)
        rs = rows(p.stdout)
        return {"tx": mean([r[1] for r in rs]), "rmb": mean([r[2] for r in rs]), "rc": p.returncode}
    return f


# ---- B: out of memory lookups (store loaded once, --keep) ---------------------
OOM_STORE = work + "/oom.store"
OOM = ["--block", OOM_STORE, "--virtgb", "4", "--physgb", "0.1", "--datasize", "1.2e6"]


def ruma_oom(wait, evict, threads):
    def f():
        rs, _, rc = run_ruma(OOM + ["--keep", "--runfor", "8", "--wait", wait, "--evict", evict,
                                    "--threads", str(threads)])
        steady = [r for r in rs if r[0] >= 3]
        return {"tx": mean([r[1] for r in steady]), "rmb": mean([r[2] for r in steady]), "rc": rc}
    return f


# ---- C: out of memory load (write-back heavy) -------------------------------------
def ruma_load(write, evict, threads):
    def f():
        rs, load, rc = run_ruma(["--block", work + "/load.store", "--virtgb", "4", "--physgb", "0.1",
                                 "--datasize", "1.2e6", "--runfor", "1", "--write", write,
                                 "--evict", evict, "--threads", str(threads)])
        return {"tuples_per_s": 1.2e6 / load if load else None, "load_s": load, "rc": rc}
    return f


# ---- D: fio ------------------------------------------------------------------------
def fio(jobs, engine, depth):
    def f():
        p = subprocess.run(["fio", "--name=rr", "--filename=" + work + "/fio.dat", "--size=512M",
                            "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=" + engine,
                            "--iodepth=%d" % depth, "--runtime=5", "--time_based",
                            "--numjobs=%d" % jobs, "--group_reporting", "--output-format=json"],
                           capture_output=True, text=True)
        j = json.loads(p.stdout[p.stdout.index("{"):])
        iops = j["jobs"][0]["read"]["iops"]
        return {"iops": iops, "mibs": iops * 4096 / 1048576}
    return f


WAITS = ["spin", "yield", "futex", "mutex"]
EVICTS = ["madvise", "process_madvise"]
report = []

A = experiment("mem", [("ruma %s %dt" % (w, t), ruma_mem(w, t)) for t in (1, 2) for w in WAITS] +
               [("lmdb %dt" % t, lmdb_mem("1e6", t, 4)) for t in (1, 2)], None)
report.append("### A. Random lookups in memory (1e6 tuples, PHYSGB=1, RUNFOR=4): lookups/s\n")
report.append("| variant | lookups/s median [min, max] |\n|---|---|")
for k, v in A.items():
    report.append("| %s | %s |" % (k, summ([m["tx"] for m in v])))

# load the out-of-memory store once
subprocess.run([ruma, "vmcache", "--workload", "rndread"] + OOM + ["--runfor", "1", "--threads", "2"],
               env=ENV, capture_output=True, text=True, check=True)
B = experiment("oom", [("ruma %s %s %dt" % (w, e, t), ruma_oom(w, e, t))
                       for t in (1, 2) for w in WAITS for e in EVICTS], None)
report.append("\n### B. Random lookups out of memory (1.2e6 tuples = 0.32 GiB, PHYSGB=0.1, "
              "--keep, mean of seconds 3..7 of RUNFOR=8)\n")
report.append("| variant | lookups/s median [min, max] | read MiB/s median [min, max] |\n|---|---|---|")
for k, v in B.items():
    report.append("| %s | %s | %s |" % (k, summ([m["tx"] for m in v]), summ([m["rmb"] for m in v])))
L = experiment("lmdb-oomsize", [("lmdb %dt" % t, lmdb_mem("1.2e6", t, 8)) for t in (1, 2)], None)
report.append("\nLMDB on the same 1.2e6 tuples (page cache, not limited to 0.1 GiB):\n")
report.append("| variant | lookups/s median [min, max] |\n|---|---|")
for k, v in L.items():
    report.append("| %s | %s |" % (k, summ([m["tx"] for m in v])))

C = experiment("load", [("ruma %s %s %dt" % (w, e, t), ruma_load(w, e, t))
                        for t in (1, 2) for w in ("pwrite", "uring") for e in EVICTS], None)
report.append("\n### C. Loading out of memory (1.2e6 tuples into PHYSGB=0.1: eviction + write-back)\n")
report.append("| variant | tuples/s median [min, max] |\n|---|---|")
for k, v in C.items():
    report.append("| %s | %s |" % (k, summ([m["tuples_per_s"] for m in v])))

D = experiment("fio", [("fio psync qd1 %dj" % j, fio(j, "psync", 1)) for j in (1, 2)] +
               [("fio io_uring qd32 1j", fio(1, "io_uring", 32))], None)
report.append("\n### D. fio 4 KiB random reads, O_DIRECT, same file system (512 MiB file, 5 s)\n")
report.append("| variant | IOPS median [min, max] | MiB/s median [min, max] |\n|---|---|---|")
for k, v in D.items():
    report.append("| %s | %s | %s |" % (k, summ([m["iops"] for m in v]), summ([m["mibs"] for m in v])))

with open(work + "/raw.json", "w") as f:
    json.dump(raw, f, indent=1)
print("\n".join(report))
