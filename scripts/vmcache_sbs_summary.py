#!/usr/bin/env python3
"""vmcache_sbs_summary.py OUT.csv — median [min-max] per case and system of
scripts/vmcache_sbs.py's rows (round 0 discarded), ruma / original per
case, and each durable mode against the plain run."""
import csv, sys, statistics, collections
d = collections.defaultdict(list)
for r in csv.reader(open(sys.argv[1])):
    if int(r[0]) == 0 or r[2] in ("", "None"): continue   # round 0 = warm-up
    d[r[1]].append(float(r[2]))
def s(v): return f"{statistics.median(v)/1e3:9.1f}k [{min(v)/1e3:.1f}-{max(v)/1e3:.1f}] n={len(v)}"
for k in sorted(d): print(f"{k:28s} {s(d[k])}")
base = {}
for k in sorted(d):
    case, sysn = k.rsplit("/", 1)
    if sysn == "ruma" and case + "/orig" in d:
        print(f"{case:28s} ruma/orig = {statistics.median(d[k])/statistics.median(d[case+'/orig']):.2f}")
for pre in ("dur8", "dur20"):
    if f"{pre}-plain/ruma" in d:
        p = statistics.median(d[f"{pre}-plain/ruma"])
        for m in ("async", "pipeline", "sync"):
            if f"{pre}-{m}/ruma" in d:
                print(f"{pre}-{m}: {statistics.median(d[f'{pre}-{m}/ruma'])/p:.2f}x plain")
