#!/usr/bin/env python3
"""db_gen_dump.py — write a `ruma db load` dump of random tables to stdout.

The input of the dump/load round-trip measurement in docs/db.md: TABLES
tables named t0, t1, ... of ENTRIES entries each, random 16-byte keys and
random values of 500 to 1000 bytes, each table's entries in a random order
(so that loading it builds the store the way random inserts do).  The same
--seed gives the same dump.

    python3 scripts/db_gen_dump.py --tables 10 --entries 140000 > random.dump
    ruma db load A --pool 1G < random.dump
"""
import argparse
import random
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=10)
    p.add_argument("--entries", type=int, default=140000, help="entries per table")
    p.add_argument("--min-value", type=int, default=500)
    p.add_argument("--max-value", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.tables < 1 or a.entries < 0 or not 0 <= a.min_value <= a.max_value:
        p.error("need --tables >= 1, --entries >= 0, 0 <= --min-value <= --max-value")
    rng = random.Random(a.seed)
    out = sys.stdout
    out.write("ruma-db-dump 1\n")
    for t in range(a.tables):
        keys = set()
        while len(keys) < a.entries:
            keys.add(rng.getrandbits(128).to_bytes(16, "big"))
        keys = list(keys)
        rng.shuffle(keys)  # a set's order is not random enough to rely on
        out.write("table t%d\n" % t)
        for k in keys:
            n = rng.randint(a.min_value, a.max_value)
            v = rng.getrandbits(8 * n).to_bytes(n, "big") if n else b""
            out.write("%s %s\n" % (k.hex(), v.hex() if n else "-"))
        out.write("end %d\n" % a.entries)
    out.write("end-dump\n")


if __name__ == "__main__":
    main()
