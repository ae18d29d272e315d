#!/usr/bin/env python3
"""kv_table.py — the tables of docs/bench/ycsb.md from a `ruma sweep kv` CSV.

usage: scripts/kv_table.py SWEEP.csv [--base ruma]

For every (workload, threads) cell: each store's throughput, the median with
min–max of its measured repetitions (warm-up rows and failed runs left out);
then the base store's ratio to the best peer, computed per repetition (the
runs of one round ran interleaved, so a round's ratio compares runs taken at
the same time) and given as the median with min–max, naming the peer with
the highest median.  A second table gives, per cell, the p99 latency of each
operation of the workload (medians over the repetitions, µs) for the base
store and that best peer.  Prints Markdown on stdout.
"""
import csv
import statistics
import sys
from collections import defaultdict

NAMES = {"ruma": "ruma", "lmdb": "LMDB", "rocksdb": "RocksDB", "wiredtiger": "WiredTiger",
         "leveldb": "LevelDB", "sqlite": "SQLite"}
ORDER = ["a", "b", "c", "d", "e", "f", "fillseq", "fillrandom", "overwrite", "fillsync",
         "readrandom", "readseq", "readreverse", "readwhilewriting", "scanfull",
         "scanwhilewriting"]


def fmt_rate(v):
    if v >= 1e6:
        return f"{v / 1e6:.2f} M"
    if v >= 1e3:
        return f"{v / 1e3:.1f} k" if v < 1e5 else f"{v / 1e3:.0f} k"
    return f"{v:.0f}"


def spread(vals, f):
    return f"{f(statistics.median(vals))} [{f(min(vals))}–{f(max(vals))}]"


def load(path):
    thr = defaultdict(dict)   # (workload, threads) -> store -> rep -> ops/s
    p99 = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))  # cell -> store -> op -> [s]
    for r in csv.DictReader(open(path)):
        if r["status"] != "ok" or r["warmup"] != "0":
            continue
        cell = (r["workload"], int(r["threads"]))
        if r["metric"] == "throughput":
            thr[cell].setdefault(r["store"], {})[int(r["rep"])] = float(r["value"])
        elif r["metric"].endswith("_p99"):
            p99[cell][r["store"]][r["metric"][:-4]].append(float(r["value"]))
    return thr, p99


def order_key(cell):
    w, t = cell
    return (ORDER.index(w) if w in ORDER else len(ORDER), w, t)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    base = args[args.index("--base") + 1] if "--base" in args else "ruma"
    thr, p99 = load(args[0])
    stores = sorted({s for c in thr.values() for s in c},
                    key=lambda s: (s != base, list(NAMES).index(s) if s in NAMES else 99))
    peers = [s for s in stores if s != base]
    print("| workload | threads | " + " | ".join(NAMES.get(s, s) for s in stores) +
          f" | {base} / best peer |")
    print("|---|---|" + "---|" * (len(stores) + 1))
    best_of = {}
    for cell in sorted(thr, key=order_key):
        runs = thr[cell]
        row = [spread(list(runs[s].values()), fmt_rate) if s in runs else "—" for s in stores]
        have = [p for p in peers if p in runs]
        ratio = "—"
        if base in runs and have:
            best = max(have, key=lambda p: statistics.median(runs[p].values()))
            best_of[cell] = best
            per = [runs[base][k] / max(runs[p][k] for p in have if k in runs[p])
                   for k in runs[base] if any(k in runs[p] for p in have)]
            ratio = f"**{spread(per, lambda v: f'{v:.2f}')}** ({NAMES.get(best, best)})"
        print(f"| {cell[0]} | {cell[1]} | " + " | ".join(row) + f" | {ratio} |")
    print()
    print(f"p99 latency (µs, medians of the runs), {base} / the best peer of the cell:")
    print()
    print("| workload | threads | operation | " + NAMES.get(base, base) + " | best peer |")
    print("|---|---|---|---|---|")
    for cell in sorted(best_of, key=order_key):
        best = best_of[cell]
        for op in sorted(p99[cell][base]):
            mine = statistics.median(p99[cell][base][op]) * 1e6
            theirs = p99[cell][best].get(op)
            other = f"{statistics.median(theirs) * 1e6:.1f} ({NAMES.get(best, best)})" \
                if theirs else "—"
            print(f"| {cell[0]} | {cell[1]} | {op} | {mine:.1f} | {other} |")


if __name__ == "__main__":
    main()
