#!/bin/bash
# fuzz/run.sh — build the libFuzzer harnesses (the ruma_fuzzer() calls of
# CMakeLists.txt) with CMake and clang in build-fuzz/ (-DRUMA_FUZZ=ON: every
# object, library included, built with -fsanitize=fuzzer-no-link,address,undefined),
# then run each one for a given number of seconds on its corpus
# (fuzz/corpus/<target>/ seeds and the reproducers of fixed bugs in
# fuzz/crashes/<target>/; new inputs kept in build-fuzz/corpus/<target>/).
#
#   fuzz/run.sh [seconds-per-target] [target...]     (default 30 s, all targets)
#   FUZZ_BUILD_ONLY=1 fuzz/run.sh                     build only
#   CC=clang-14 fuzz/run.sh                           another clang
#
# A harness that finds a crash, leak, sanitizer report or timeout stops; its
# reproducer is kept in build-fuzz/crashes/<target>/ and the script exits 1
# after running the remaining targets.  Reproduce with
#   build-fuzz/<target> <file>
# The library is compiled with the same instrumentation (coverage feedback
# from inside the library), RUMA_ASSERT on.  docs/fuzzing.md has what each
# harness checks.  The normal build replays the reproducers and a corpus
# sample without libFuzzer (ctest -L fuzz).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out="$root/build-fuzz"
secs=${1:-30}
[ $# -gt 0 ] && shift
CC=${CC:-clang}
JOBS=$(nproc 2>/dev/null || echo 2)

case "$secs" in
*[!0-9]* | '') echo "fuzz/run.sh: seconds-per-target must be a whole number, got '$secs'" >&2; exit 2 ;;
esac
if ! command -v "$CC" >/dev/null 2>&1; then
	echo "fuzz/run.sh: $CC not found (libFuzzer needs clang; install clang and libclang-rt-dev)" >&2
	exit 2
fi

# The harnesses: one ruma_fuzzer(<harness> <module> ...) call each in CMakeLists.txt.
all_targets=$(sed -n 's/^[[:space:]]*ruma_fuzzer(\([a-z0-9_]*\)[[:space:]].*/\1/p' "$root/CMakeLists.txt" | tr '\n' ' ')
all_targets=${all_targets% }
targets=${*:-$all_targets}
for t in $targets; do
	case " $all_targets " in
	*" $t "*) ;;
	*) echo "fuzz/run.sh: unknown target '$t' (known: $all_targets)" >&2; exit 2 ;;
	esac
done

mkdir -p "$out"
echo "== build $targets" >&2
# shellcheck disable=SC2086
if ! cmake -S "$root" -B "$out" -DRUMA_FUZZ=ON -DCMAKE_C_COMPILER="$CC" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" >"$out/cmake.log" 2>&1 ||
	! cmake --build "$out" -j "$JOBS" --target $targets >&2; then
	[ -f "$out/cmake.log" ] && tail -n 20 "$out/cmake.log" >&2
	echo "fuzz/run.sh: building the harnesses failed" >&2
	exit 2
fi
rm -f "$out/cmake.log"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

status=0
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
for t in $targets; do
	corpus="$out/corpus/$t"
	crashes="$out/crashes/$t"
	mkdir -p "$corpus" "$crashes"
	# seeds: the checked-in corpus and the reproducers of fixed bugs (a regression
	# replays them as crashes on the first run)
	seeds=""
	for d in "$here/corpus/$t" "$here/crashes/$t"; do
		[ -d "$d" ] && seeds="$seeds $d"
	done
	# Extra per-target options: the CLI harnesses print usage/errors on every input.
	# Longer inputs sooner for the operation-sequence harnesses (-len_control).
	extra="-max_len=512"
	case "$t" in
	fuzz_micro_args | fuzz_vmcache_config | fuzz_kv_args | fuzz_blob_args) extra="-max_len=512 -close_fd_mask=3" ;;
	fuzz_art) extra="-max_len=4096 -len_control=20" ;;
	fuzz_btree) extra="-max_len=2048 -len_control=20" ;;
	fuzz_store_pages) extra="-max_len=256 -len_control=20" ;;
	fuzz_wal_redo) extra="-max_len=8400" ;; # two full page images and their heads
	esac
	echo "== run $t for ${secs}s" >&2
	start=$(date +%s)
	# shellcheck disable=SC2086
	if "$out/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 \
		-print_final_stats=1 -artifact_prefix="$crashes/" $extra \
		"$corpus" $seeds >"$out/$t.log" 2>&1; then
		echo "   $t: ok ($(($(date +%s) - start)) s, $(grep -c . "$out/$t.log") log lines," \
			"$(find "$corpus" -type f | wc -l) corpus inputs)" >&2
	else
		status=1
		echo "   $t: FAILED — reproducer(s) in $crashes/, log in $out/$t.log:" >&2
		ls "$crashes" >&2
		grep -m 5 -E 'ERROR|runtime error|SUMMARY|abort|FUZZ:' "$out/$t.log" >&2 || true
	fi
done
exit $status
