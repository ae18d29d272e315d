#!/usr/bin/env python3
"""art_bench.py — interleaved repetitions of `ruma art` over allocators and of
the JudyL peer, summarised as median/min/max (first round discarded as warm-up).

usage: art_bench.py --ruma BIN --peer BIN --n N [--modes 0,1,2,3] [--rounds 6]
                    [--variants glibc,pool,...] [--raw DIR]
Prints a markdown table per mode, with bytes per key (index bytes / n, and
what the allocator holds / n).  Variants: glibc (ruma --alloc libc), pool,
mempool, huge (ruma backends), jemalloc / mimalloc (--alloc libc with
LD_PRELOAD), judyl (the peer, glibc malloc).  Modes as `ruma art`: 0-2 are the
key sets of Leis's ART.cpp, 3 full 64-bit keys.

ruma against Leis's ART.cpp itself is measured with `ruma sweep art --peer
leis=/path/to/ART ...` (docs/bench/art.md), not with this script.
"""
import argparse, os, statistics, subprocess, sys

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
MIMALLOC = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
OPS = ("insert", "lookup", "erase")


def command(v, a, n, mode, seed):
    env = dict(os.environ)
    if v == "judyl":
        return [a.peer, str(n), str(mode), "--seed", str(seed)], env
    alloc = v if v in ("pool", "mempool", "huge", "huge-thp", "huge-4k") else "libc"
    if v == "jemalloc":
        env["LD_PRELOAD"] = JEMALLOC
    if v == "mimalloc":
        env["LD_PRELOAD"] = MIMALLOC
    return [a.ruma, "art", str(n), str(mode), "--alloc", alloc, "--seed", str(seed)], env


def parse(text):
    r = {}
    for line in text.splitlines():
        f = line.split(",")
        if f[0] in OPS and len(f) == 3:
            r[f[0] + ".mops"] = float(f[2])
        elif f[0] in ("faults", "memory") and len(f) > 2 and "=" in f[2]:
            for kv in f[2:]:
                k, _, val = kv.partition("=")
                try:
                    r[f"{f[1]}.{k}"] = float(val)
                except ValueError:
                    pass
    return r


def fmt(vals, scale=1.0, digits=2):
    if not vals:
        return "n/a"
    v = [x / scale for x in vals]
    return f"{statistics.median(v):.{digits}f} ({min(v):.{digits}f}–{max(v):.{digits}f})"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ruma", required=True)
    p.add_argument("--peer", required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--modes", default="0,1,2")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--variants", default="glibc,pool,mempool,huge,jemalloc,mimalloc,judyl")
    p.add_argument("--raw", default=None)
    a = p.parse_args()
    modes = [int(m) for m in a.modes.split(",")]
    variants = a.variants.split(",")
    res = {}  # (mode, variant) -> list of parsed runs (after warm-up)
    bad = 0
    for rnd in range(a.rounds):
        for mode in modes:
            order = variants if rnd % 2 == 0 else list(reversed(variants))
            for v in order:
                cmd, env = command(v, a, a.n, mode, a.seed)
                out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if a.raw:
                    os.makedirs(a.raw, exist_ok=True)
                    with open(f"{a.raw}/{mode}-{v}-{rnd}.txt", "w") as f:
                        f.write(out.stdout + "\n--- stderr ---\n" + out.stderr)
                if out.returncode != 0:
                    bad += 1
                    print(f"run failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr}", file=sys.stderr)
                    continue
                if rnd > 0:
                    r = parse(out.stdout)
                    r["round"] = rnd
                    res.setdefault((mode, v), []).append(r)
            print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr)
    for mode in modes:
        print(f"\n### n = {a.n}, mode {mode} ({a.rounds - 1} runs after a warm-up round)\n")
        print("| variant | insert Mops | lookup Mops | erase Mops | insert faults/key | "
              "footprint after insert MiB | index MiB | index bytes/key | allocator bytes/key |")
        print("|---|---|---|---|---|---|---|---|---|")
        for v in variants:
            runs = res.get((mode, v), [])
            col = lambda k: [r[k] for r in runs if k in r]
            print(f"| {v} | {fmt(col('insert.mops'))} | {fmt(col('lookup.mops'))} | "
                  f"{fmt(col('erase.mops'))} | {fmt(col('insert.per_op'), digits=4)} | "
                  f"{fmt(col('insert.footprint'), 2**20, 1)} | {fmt(col('insert.index_bytes'), 2**20, 1)} | "
                  f"{fmt(col('insert.bytes_per_key'))} | {fmt(col('insert.mapped_per_key'))} |")
        base = variants[0]
        print(f"\nRatio to {base} measured in the same round (median, min–max over rounds):\n")
        print("| variant | insert | lookup | erase |")
        print("|---|---|---|---|")
        for v in variants[1:]:
            cells = []
            for op in OPS:
                k = op + ".mops"
                b = {r["round"]: r[k] for r in res.get((mode, base), []) if k in r}
                q = [r[k] / b[r["round"]] for r in res.get((mode, v), []) if k in r and b.get(r["round"])]
                cells.append(fmt(q))
            print(f"| {v} | " + " | ".join(cells) + " |")
        print("\n| variant | private_hugetlb after insert MiB | AnonHugePages MiB | insert minor faults |")
        print("|---|---|---|---|")
        for v in variants:
            runs = res.get((mode, v), [])
            col = lambda k: [r[k] for r in runs if k in r]
            print(f"| {v} | {fmt(col('insert.private_hugetlb'), 2**20, 1)} | "
                  f"{fmt(col('insert.anon_huge'), 2**20, 1)} | {fmt(col('insert.minor'), digits=0)} |")
    if bad:
        print(f"\n{bad} runs failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
