#!/usr/bin/env python3
"""vmcache_sbs.py — ruma vmcache and the original vmcache side by side.

Runs the named cases (see add() below: in-memory random lookups and TPC-C, out
of memory, durable modes) in interleaved rounds, each round in a new seeded
order, and appends one row per run to OUT.csv: round, case/system, the mean
tx/s over the case's window of per-second rows, the time and the 1-minute
load.  Round 0 is the warm-up; scripts/vmcache_sbs_summary.py summarises.

usage: ORIG=path/to/vmcache RUMA=build/ruma [RUMA_BASE=old/ruma] \
           vmcache_sbs.py OUT.csv ROUNDS case[,case...]
RUMA_BASE, when set, is a second ruma binary (the code before a change) run
as system "base" beside the other two in every case that runs the original.
The original is viktorleis/vmcache built by its own Makefile (not part of
this repository); it opens BLOCK without creating it, so the file is made
empty before each of its runs."""
import os, subprocess, sys, random, statistics, time, csv
ORIG = os.environ.get("ORIG", "vmcache")  # the original, built by its own Makefile
RUMA = os.environ.get("RUMA", "build/ruma")
RUMA_BASE = os.environ.get("RUMA_BASE")  # optional: ruma before a change
BLK = os.environ.get("BLOCK_FILE", "/tmp/sbs_blk")
def env_common(physgb, virtgb, datasize, runfor, threads, rnd):
    return dict(BLOCK=BLK, PHYSGB=str(physgb), VIRTGB=str(virtgb), DATASIZE=str(datasize),
                RUNFOR=str(runfor), THREADS=str(threads), RNDREAD="1" if rnd else "0")
CASES = {
  # name: (system, env, extra args, window)
}
def add(name, rnd, datasize, threads, physgb=4, virtgb=8, runfor=10, win=(3, 9), extra_ruma=(), orig=True):
    e = env_common(physgb, virtgb, datasize, runfor, threads, rnd)
    if orig:
        CASES[name + "/orig"] = ("orig", e, [], win)
        if RUMA_BASE:
            CASES[name + "/base"] = ("base", e, list(extra_ruma), win)
    CASES[name + "/ruma"] = ("ruma", e, list(extra_ruma), win)
for t in (1, 2):
    add(f"rnd1e6-t{t}", True, "1e6", t)
    add(f"tpcc2-t{t}", False, 2, t)
    add(f"oom1e7-t{t}", True, "1e7", t, physgb=1, virtgb=8, runfor=10)
    add(f"oom1e7inf32-t{t}", True, "1e7", t, physgb=1, virtgb=8, runfor=10, extra_ruma=["--inflight", "32"], orig=False)
# durable ratios, in memory, 2 threads, 8 s (seconds 2-7)
for mode in ("plain", "async", "pipeline", "sync"):
    ex = [] if mode == "plain" else [f"--durable={mode}"]
    add(f"dur8-{mode}", False, 2, 2, runfor=8, win=(2, 7), extra_ruma=ex, orig=False)
    add(f"dur20-{mode}", False, 4, 2, runfor=20, win=(3, 18), extra_ruma=ex + ["--checkpoint", "10"], orig=False)

def run(name):
    sysname, e, extra, (a, b) = CASES[name]
    for p in (BLK, BLK + ".wal"):
        try: os.unlink(p)
        except FileNotFoundError: pass
    if sysname == 'orig': open(BLK, 'w').close()
    env = dict(os.environ); env.update(e)
    binary = {"orig": ORIG, "base": RUMA_BASE}.get(sysname, RUMA)
    cmd = [binary] if sysname == "orig" else [binary, "vmcache"] + extra
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
    if p.returncode != 0:
        print(name, "rc", p.returncode, p.stderr[-500:], file=sys.stderr); return None
    rows = [l.split(",") for l in p.stdout.splitlines() if l and l[0].isdigit()]
    tx = [float(r[1]) for r in rows if a <= int(r[0]) <= b]
    return statistics.mean(tx) if tx else None

def main():
    out, rounds, sel = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    names = [n for n in CASES if any(n.startswith(s + "/") for s in sel)]
    rng = random.Random(42)
    with open(out, "a") as f:
        w = csv.writer(f)
        for r in range(rounds):
            order = names[:]; rng.shuffle(order)
            for n in order:
                v = run(n)
                w.writerow([r, n, v, time.strftime("%H:%M:%S"), os.getloadavg()[0]]); f.flush()
                print(r, n, v, file=sys.stderr)
main()
