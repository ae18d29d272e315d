#!/usr/bin/env python3
"""icount_guard.py — the instruction-count guard of the hot paths (docs/guard.md).

Runs `ruma guard` under callgrind (instructions only, no cache or branch
simulation; collection and instrumentation off until each case's measured
operations, on the measuring thread only), reads one profile per case,
divides its instructions by the case's operations and compares them with the
committed baseline.  Prints a table (case, baseline, now, change %) and exits
1 when a case's instructions per operation grew by more than the threshold
(default 3 %), when a case has no baseline, or when a baseline case was not
measured; 2 when the run itself failed.

    scripts/icount_guard.py [RUMA]                  compare (RUMA: build-guard/ruma)
    scripts/icount_guard.py [RUMA] --update REASON  rewrite the baseline
    scripts/icount_guard.py --self-test             test the comparison logic

The baseline is tied to the build (Release, the compiler of CI); updating it
is a reviewed commit whose reason is its comment line.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, "bench", "guard", "baseline.txt")
VALGRIND = ["valgrind", "--tool=callgrind", "--cache-sim=no", "--branch-sim=no",
            "--collect-atstart=no", "--instr-atstart=no"]
LABEL = re.compile(r"^desc: Trigger: Client Request: guard (\S+) ops=(\d+)\s*$")


def parse_profile(text):
    """(case, instructions per op) of one callgrind dump, or None."""
    case = ops = total = None
    for line in text.splitlines():
        m = LABEL.match(line)
        if m:
            case, ops = m.group(1), int(m.group(2))
        elif line.startswith("summary:") or (total is None and line.startswith("totals:")):
            total = int(line.split()[1])
    if case is None or total is None or not ops:
        return None
    return case, total / ops


def run_guard(ruma, cases):
    """Run the guard under callgrind: {case: instr/op}."""
    with tempfile.TemporaryDirectory(prefix="ruma-guard-") as tmp:
        cmd = VALGRIND + ["--callgrind-out-file=" + os.path.join(tmp, "cg.out"),
                          ruma, "guard", "--dir", tmp]
        if cases:
            cmd += ["--case", cases]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr[-4000:])
            raise SystemExit("icount_guard: `%s` failed (exit %d)" % (" ".join(cmd), p.returncode))
        found = {}
        for path in sorted(glob.glob(os.path.join(tmp, "cg.out.*"))):
            with open(path, encoding="utf-8", errors="replace") as f:
                r = parse_profile(f.read())
            if r:
                found[r[0]] = r[1]
        if not found:
            raise SystemExit("icount_guard: no profiles: was %s built with <valgrind/callgrind.h>?"
                             % ruma)
        return found


def build_info(ruma):
    """The build type and compiler of ruma's build tree, and valgrind's version."""
    tree = os.path.dirname(os.path.abspath(ruma))
    found = {}
    files = [os.path.join(tree, "CMakeCache.txt")]
    files += glob.glob(os.path.join(tree, "CMakeFiles", "*", "CMakeCCompiler.cmake"))
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        for key in ("CMAKE_BUILD_TYPE", "CMAKE_C_COMPILER_ID", "CMAKE_C_COMPILER_VERSION"):
            m = re.search(r"^(?:%s:\w+=(.*)|set\(%s \"(.*)\"\))$" % (key, key), text, re.M)
            if m and key not in found:
                found[key] = m.group(1) or m.group(2)
    try:
        vg = subprocess.run(["valgrind", "--version"], stdout=subprocess.PIPE, text=True).stdout
    except OSError:
        vg = "?"
    return "%s, %s %s, %s" % (found.get("CMAKE_BUILD_TYPE", "?"),
                              found.get("CMAKE_C_COMPILER_ID", "?"),
                              found.get("CMAKE_C_COMPILER_VERSION", "?"), vg.strip())


def read_baseline(path):
    """{case: instr/op} and the comment lines of a baseline file."""
    base, comments = {}, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                comments.append(line)
                continue
            name, value = line.split()
            base[name] = float(value)
    return base, comments


def write_baseline(path, now, reason, build):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Instructions per operation of `ruma guard`'s cases under callgrind,\n")
        f.write("# written by scripts/icount_guard.py --update (docs/guard.md).\n")
        f.write("# build: %s\n" % build)
        f.write("# reason: %s\n" % reason.replace("\n", " "))
        for name in sorted(now):
            f.write("%-20s %.3f\n" % (name, now[name]))


def compare(base, now, threshold):
    """Rows (case, baseline, now, change %, verdict) and whether the guard fails."""
    rows, fail = [], False
    for name in list(base) + [n for n in now if n not in base]:
        b, n = base.get(name), now.get(name)
        if b is None:
            rows.append((name, b, n, None, "no baseline (--update)"))
            fail = True
        elif n is None:
            rows.append((name, b, n, None, "not measured"))
            fail = True
        else:
            change = (n - b) / b * 100.0
            verdict = "ok"
            if change > threshold:
                verdict, fail = "SLOWER", True
            elif change < -threshold:
                verdict = "faster (update the baseline)"
            rows.append((name, b, n, change, verdict))
    return rows, fail


def fmt(v, spec):
    if v is None:
        return "-"
    if spec == ".1f" and abs(v) < 100:
        spec = ".3f"
    return format(v, spec)


def print_table(rows, threshold):
    print("%-16s %12s %12s %9s  %s" % ("case", "baseline", "now", "change", "verdict"))
    for name, b, n, change, verdict in rows:
        print("%-16s %12s %12s %9s  %s" % (name, fmt(b, ".1f"), fmt(n, ".1f"),
                                           fmt(change, "+.2f") + ("%" if change is not None else ""),
                                           verdict))
    print("(instructions per operation, callgrind; fails above +%g %%)" % threshold)


def self_test():
    base = {"a": 100.0, "b": 200.0, "c": 50.0}
    rows, fail = compare(base, {"a": 103.0, "b": 190.0, "c": 50.0}, 3.0)
    assert not fail and [r[4] for r in rows] == ["ok", "faster (update the baseline)", "ok"]
    rows, fail = compare(base, {"a": 103.1, "b": 200.0, "c": 50.0}, 3.0)
    assert fail and rows[0][4] == "SLOWER"
    rows, fail = compare(base, {"a": 100.0, "b": 200.0}, 3.0)
    assert fail and rows[2][4] == "not measured"
    rows, fail = compare(base, {"a": 100.0, "b": 200.0, "c": 50.0, "d": 1.0}, 3.0)
    assert fail and rows[3][4].startswith("no baseline")
    prof = "desc: Trigger: Client Request: guard tpcc ops=2000\nevents: Ir\nsummary: 130000000\n"
    assert parse_profile(prof) == ("tpcc", 65000.0)
    assert parse_profile("desc: Trigger: Program termination\nsummary: 5\n") is None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "b.txt")
        write_baseline(path, {"x": 12.34, "y": 5.0}, "why", "Release")
        b, comments = read_baseline(path)
        assert b == {"x": 12.34, "y": 5.0} and "# reason: why" in comments
    print("icount_guard: self-test passed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ruma", nargs="?", default=os.path.join(ROOT, "build-guard", "ruma"),
                    help="the ruma binary (a Release build; default build-guard/ruma)")
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--threshold", type=float, default=3.0, help="allowed growth in %%")
    ap.add_argument("--case", help="only these cases (comma separated)")
    ap.add_argument("--update", metavar="REASON", help="rewrite the baseline, with this reason")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return 0
    if a.update is not None and a.case:
        raise SystemExit("icount_guard: --update measures every case; drop --case")
    now = run_guard(a.ruma, a.case)
    if a.update is not None:
        if not a.update.strip():
            raise SystemExit("icount_guard: --update needs a reason")
        write_baseline(a.baseline, now, a.update, build_info(a.ruma))
        print_table(compare(now, now, a.threshold)[0], a.threshold)
        print("icount_guard: wrote %s; commit it with the reason" % a.baseline)
        return 0
    base, comments = read_baseline(a.baseline)
    build = "# build: " + build_info(a.ruma)
    if build not in comments:
        print("icount_guard: note: the baseline was taken with another build or tool "
              "(%s; this one: %s): the counts may differ for that reason alone"
              % ("; ".join(c for c in comments if c.startswith("# build:")) or "unknown", build))
    if a.case:
        wanted = a.case.split(",")
        base = {k: v for k, v in base.items() if k in wanted}
    rows, fail = compare(base, now, a.threshold)
    print_table(rows, a.threshold)
    if fail:
        print("icount_guard: FAILED (a hot path grew by more than %g %%, or the cases and the "
              "baseline differ)" % a.threshold)
        return 1
    print("icount_guard: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
