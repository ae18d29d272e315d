#!/usr/bin/env bash
# micro_bench.sh — interleaved, repeated runs of `ruma micro`, median [min–max] per phase.
#
# Usage:
#   scripts/micro_bench.sh [-b RUMA] [-r ROUNDS] [-w WARMUP] [-o CSV] [-s SEED] [-f]
#                          <test> <number_of_entries> <method> [<method> ...]
#
#   scripts/micro_bench.sh -r 10 -o a.csv 9 2097152 1 2 3 "6(1)" "6(64)" "7(64)" "10(64,0)"
#
#   <test>     a `ruma micro` test type, e.g. 9, "2(50)", 15, 11
#   <method>   a `ruma micro` method with its parameters, e.g. 1, "6(64)", "12(64,1,0)".
#              The FIRST method is the baseline of the ratio column.
#   -b RUMA    the ruma binary (default: build-bench/ruma, else build/ruma, next to this script's repo)
#   -r ROUNDS  measured rounds (default 5; at least 1, use >= 5 for a claim)
#   -w WARMUP  warm-up rounds, run and discarded (default 1)
#   -o CSV     write the per-run CSV here (default: stdout, before the summary)
#   -s SEED    passed to `ruma micro --seed` (default: ruma's default)
#   -f         pass --fallback: a huge-page method without free 2 MiB pages runs on 4 KiB pages
#              (ruma says so on stderr; this script then tags the method "<method>[4K]")
#
# What it does:
#   - Every run is its own process: `ruma micro <method> <test> <n> 1 false`
#     (number_of_repetitions 1, so nothing is warm from an earlier repetition in the same process).
#   - Rounds interleave the methods and rotate their order: round r runs the list starting at
#     method (r mod M), so every method takes every position in a round (equally often when
#     the number of rounds is a multiple of M).  Within a round the order stays cyclic, so a
#     method mostly runs right after the same other method.
#   - The warm-up rounds are run the same way and then dropped.
#   - From each run's summary table it takes the row after the header line (the 33 field names)
#     — the run's own row, not the average row — and keeps every field that is non-zero in at
#     least one measured run of that method.  Two derived phases are added per run:
#       sum:build  the sum of the fields the test does not produce (the method's setup/build
#                  phases; test fields are known for tests 1–23, see test_fields below)
#       sum:total  the sum of all 33 fields
#
# Output:
#   CSV, one row per (round, method, phase):  round,method,phase,seconds
#   (round 1..ROUNDS; warm-up rounds are not written; method is quoted because of its commas).
#   Summary table on stdout: per method and phase the number of runs, median [min–max] in
#   milliseconds, the ratio of medians against the first method's same phase (when it has
#   that phase), and "separate" when the min–max ranges of the two do not overlap, else "overlap".
#   A method/test combination that ruma rejects as bad input (exit 2) stops the script (exit 2).
#   A run that fails otherwise (exit 1, e.g. a missing resource) is reported on stderr with its message and left out;
#   the script then exits 1 at the end (the summary of the other runs is still printed).
#
# Exit: 0 ok; 1 some run failed; 2 bad usage.
# Timings are only meaningful on a machine that is otherwise idle; record `uptime` around it.
set -u

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

script_dir=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$script_dir")
ruma=""
rounds=5
warmup=1
csv_out=""
seed=""
fallback=0

while getopts "b:r:w:o:s:fh" opt; do
    case $opt in
        b) ruma=$OPTARG ;;
        r) rounds=$OPTARG ;;
        w) warmup=$OPTARG ;;
        o) csv_out=$OPTARG ;;
        s) seed=$OPTARG ;;
        f) fallback=1 ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] || usage
case $rounds in ''|*[!0-9]*) echo "micro_bench.sh: -r needs a positive integer" >&2; exit 2 ;; esac
case $warmup in ''|*[!0-9]*) echo "micro_bench.sh: -w needs an integer >= 0" >&2; exit 2 ;; esac
[ "$rounds" -ge 1 ] || { echo "micro_bench.sh: -r needs at least 1" >&2; exit 2; }

if [ -z "$ruma" ]; then
    for cand in "$repo/build-bench/ruma" "$repo/build/ruma"; do
        [ -x "$cand" ] && { ruma=$cand; break; }
    done
fi
if [ -z "$ruma" ] || [ ! -x "$ruma" ]; then
    echo "micro_bench.sh: no ruma binary (give -b PATH)" >&2
    exit 2
fi

test_type=$1
n=$2
shift 2
methods=("$@")
m=${#methods[@]}

# Fields each test writes into the table (docs/micro.md, "Test types"); the rest are build phases.
test_fields() {
    case ${1%%(*} in
        1) echo "read-seq-src" ;;        2) echo "read-seq-dst" ;;
        3) echo "read-rand-src" ;;       4) echo "read-rand-dst" ;;
        5) echo "write-seq-src" ;;       6) echo "write-seq-dst" ;;
        7) echo "write-rand-src" ;;      8) echo "write-rand-dst" ;;
        9) echo "read-seq-dst read2-seq-dst" ;;
        10) echo "read-seq-dst" ;;       11) echo "merge read-seq-dst" ;;
        12|13) echo "merge radix-sort" ;; 14) echo "indirection radix-sort" ;;
        15) echo "vector-insert" ;;      18) echo "write-seq-dst" ;;
        19) echo "indirection read-rand-dst" ;;
        20) echo "write-seq-dst write2-seq-dst" ;;
        21|22) echo "read-rand-dst" ;;   23) echo "read-seq-dst" ;;
        *) echo "" ;;
    esac
}

raw=$(mktemp)
errf=$(mktemp)
trap 'rm -f "$raw" "$errf"' EXIT
failed=0
seed_args=()
[ -n "$seed" ] && seed_args=(--seed "$seed")
[ "$fallback" -eq 1 ] && seed_args+=(--fallback)

# One run: append "round<TAB>method<TAB>header<TAB>row" to $raw.
run_one() {
    local round=$1 method=$2 out rc header row
    out=$("$ruma" micro "${seed_args[@]}" "$method" "$test_type" "$n" 1 false 2>"$errf")
    rc=$?
    if [ $rc -eq 2 ]; then
        # ruma rejected the arguments: every later round would fail the same way.
        echo "micro_bench.sh: method $method, test $test_type, n $n: bad input: $(head -c 300 "$errf")" >&2
        exit 2
    fi
    if [ $rc -ne 0 ]; then
        echo "micro_bench.sh: round $round method $method: exit $rc: $(head -c 300 "$errf")" >&2
        failed=1
        return
    fi
    # The header is the line with 33 comma-separated field names starting with malloc-src.
    header=$(printf '%s\n' "$out" | awk -F', ' '/^malloc-src, / && NF == 33 { print; exit }')
    row=$(printf '%s\n' "$out" | awk -F', ' 'found { print; exit } /^malloc-src, / && NF == 33 { found = 1 }')
    if [ -z "$header" ] || [ -z "$row" ]; then
        echo "micro_bench.sh: round $round method $method: no summary table in the output" >&2
        failed=1
        return
    fi
    # With --fallback, ruma names a fallback on stderr; tag such a run so it is never mistaken
    # for a huge-page measurement.
    grep -q 'falling back to 4 KiB pages' "$errf" && method="${method}[4K]" && tag4k["${2}"]=1
    [ "$round" -ge 1 ] && printf '%s\t%s\t%s\t%s\n' "$round" "$method" "$header" "$row" >>"$raw"
}

declare -A tag4k=()
total_rounds=$((warmup + rounds))
for ((k = 0; k < total_rounds; k++)); do
    round=$((k - warmup + 1))            # <= 0 for warm-up rounds
    echo "micro_bench.sh: round $round ($([ $round -ge 1 ] && echo measured || echo warm-up)), loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    for ((j = 0; j < m; j++)); do
        run_one "$round" "${methods[$(((j + k) % m))]}"
    done
done

# Methods that fell back are listed under their tagged name.
for ((j = 0; j < m; j++)); do
    [ -n "${tag4k[${methods[$j]}]:-}" ] && methods[j]="${methods[$j]}[4K]"
done

# Post-processing: CSV rows and the summary.
process() {
    awk -F'\t' -v mode="$1" -v testf="$(test_fields "$test_type")" -v base="${methods[0]}" \
        -v order="$(printf '%s\034' "${methods[@]}")" '
    function sortnum(a, k,   i, j, t) {
        for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    }
    BEGIN {
        nt = split(testf, tf, " "); for (i = 1; i <= nt; i++) istest[tf[i]] = 1
        nm = split(order, mo, "\034"); nm--
    }
    {
        round = $1; meth = $2
        nf = split($3, names, ", "); split($4, vals, ", ")
        build = 0; total = 0
        for (i = 1; i <= nf; i++) {
            v = vals[i] + 0; total += v
            if (!(names[i] in istest)) build += v
            val[meth, round, names[i]] = v
            if (v != 0 && !((meth, names[i]) in used)) { used[meth, names[i]] = 1; ph[meth, ++nph[meth]] = names[i] }
        }
        val[meth, round, "sum:build"] = build; val[meth, round, "sum:total"] = total
        runs[meth, ++nr[meth]] = round
    }
    END {
        for (mi = 1; mi <= nm; mi++) {
            meth = mo[mi]
            if (!(meth in nph)) nph[meth] = 0
            ph[meth, ++nph[meth]] = "sum:build"; ph[meth, ++nph[meth]] = "sum:total"
        }
        if (mode == "csv") {
            print "round,method,phase,seconds"
            for (mi = 1; mi <= nm; mi++) {
                meth = mo[mi]
                for (r = 1; r <= nr[meth]; r++)
                    for (p = 1; p <= nph[meth]; p++)
                        printf "%d,\"%s\",%s,%.6f\n", runs[meth, r], meth, ph[meth, p], val[meth, runs[meth, r], ph[meth, p]]
            }
            exit
        }
        for (mi = 1; mi <= nm; mi++) {
            meth = mo[mi]
            for (p = 1; p <= nph[meth]; p++) {
                name = ph[meth, p]; k = 0
                for (r = 1; r <= nr[meth]; r++) a[++k] = val[meth, runs[meth, r], name] * 1000
                if (k == 0) continue
                sortnum(a, k)
                med[meth, name] = (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
                lo[meth, name] = a[1]; hi[meth, name] = a[k]; cnt[meth, name] = k
            }
        }
        printf "%-14s %-24s %4s %30s %8s  %s\n", "method", "phase", "runs", "median [min-max] ms", "ratio", "vs " base
        for (mi = 1; mi <= nm; mi++) {
            meth = mo[mi]
            for (p = 1; p <= nph[meth]; p++) {
                name = ph[meth, p]
                if (!((meth, name) in cnt)) continue
                s = sprintf("%.3f [%.3f-%.3f]", med[meth, name], lo[meth, name], hi[meth, name])
                ratio = "-"; verdict = ""
                if (meth != base && (base, name) in cnt && med[base, name] > 0) {
                    ratio = sprintf("%.3f", med[meth, name] / med[base, name])
                    verdict = (hi[meth, name] < lo[base, name] || lo[meth, name] > hi[base, name]) ? "separate" : "overlap"
                }
                printf "%-14s %-24s %4d %30s %8s  %s\n", meth, name, cnt[meth, name], s, ratio, verdict
            }
        }
    }' "$raw"
}

if [ -n "$csv_out" ]; then
    process csv >"$csv_out"
else
    process csv
    echo
fi
echo "# ruma micro, test $test_type, n = $n, $rounds measured rounds after $warmup warm-up, interleaved and rotated; $ruma"
process summary
exit $failed
