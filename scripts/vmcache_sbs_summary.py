#!/usr/bin/env python3
"""vmcache_sbs_summary.py OUT.csv — median [min-max] per case and system of
scripts/vmcache_sbs.py's rows (round 0 discarded), ruma / original per
case (with the range of the per-round ratios), the same for ruma against
"base" (RUMA_BASE) where it ran, and each durable mode against the plain
run."""
import csv, sys, statistics, collections
d = collections.defaultdict(list)
by_round = collections.defaultdict(dict)  # (case/system) -> {round: tx/s}
for r in csv.reader(open(sys.argv[1])):
    if int(r[0]) == 0 or r[2] in ("", "None"): continue   # round 0 = warm-up
    d[r[1]].append(float(r[2]))
    by_round[r[1]][int(r[0])] = float(r[2])
def ratios(a, b):
    """Per-round a/b over the rounds where both ran."""
    return [by_round[a][k] / by_round[b][k] for k in by_round[a] if k in by_round[b]]
def s(v): return f"{statistics.median(v)/1e3:9.1f}k [{min(v)/1e3:.1f}-{max(v)/1e3:.1f}] n={len(v)}"
for k in sorted(d): print(f"{k:28s} {s(d[k])}")
for k in sorted(d):
    case, sysn = k.rsplit("/", 1)
    for other in ("orig", "base"):
        if sysn == "ruma" and f"{case}/{other}" in d:
            pr = ratios(k, f"{case}/{other}")
            print(f"{case:28s} ruma/{other} = {statistics.median(d[k])/statistics.median(d[case+'/'+other]):.2f}"
                  f" (per round {min(pr):.2f}-{max(pr):.2f})")
for pre in ("dur8", "dur20"):
    if f"{pre}-plain/ruma" in d:
        p = statistics.median(d[f"{pre}-plain/ruma"])
        for m in ("async", "pipeline", "sync"):
            if f"{pre}-{m}/ruma" in d:
                print(f"{pre}-{m}: {statistics.median(d[f'{pre}-{m}/ruma'])/p:.2f}x plain")
