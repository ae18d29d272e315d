#!/bin/bash
# fuzz/run.sh — build the libFuzzer harnesses of fuzz/*.c with clang
# (-fsanitize=fuzzer,address,undefined) straight from the module sources
# into build-fuzz/, then run each one for a given number of seconds on its
# corpus (fuzz/corpus/<target>/ seeds and the reproducers of fixed bugs in
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
# The library sources are compiled with the same instrumentation (coverage
# feedback from inside the library), RUMA_ASSERT on.  docs/fuzzing.md has
# what each harness checks.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out="$root/build-fuzz"
secs=${1:-30}
[ $# -gt 0 ] && shift
CC=${CC:-clang}

case "$secs" in
*[!0-9]* | '') echo "fuzz/run.sh: seconds-per-target must be a whole number, got '$secs'" >&2; exit 2 ;;
esac
if ! command -v "$CC" >/dev/null 2>&1; then
	echo "fuzz/run.sh: $CC not found (libFuzzer needs clang; install clang and libclang-rt-dev)" >&2
	exit 2
fi

all_targets="fuzz_parse fuzz_art fuzz_btree fuzz_micro_args fuzz_vmcache_config"
targets=${*:-$all_targets}

# Modules each harness links (module = folder, as in the CMake build); extra
# single source files are listed after a colon.
modules_of() {
	case "$1" in
	fuzz_parse) echo "src/core src/os" ;;
	fuzz_art) echo "src/art src/alloc src/core src/os" ;;
	fuzz_btree) echo "src/btree src/bm src/wal src/core src/os" ;;
	fuzz_micro_args) echo "bench/micro bench/art bench/rewire bench/common src/art src/rewire src/alloc src/core src/os" ;;
	fuzz_vmcache_config) echo "bench/vmcache src/btree src/bm src/wal src/core src/os tools/cmd_vmcache.c" ;;
	*) echo "fuzz/run.sh: unknown target '$1' (known: $all_targets)" >&2; return 1 ;;
	esac
}

cflags="-std=c11 -D_GNU_SOURCE -DRUMA_BUILDING_LIBRARY -g -O1 -fno-omit-frame-pointer
 -fno-sanitize-recover=undefined -Wall -Wextra -Wshadow -Wstrict-prototypes
 -Wmissing-prototypes -Wno-unused-parameter -msse4.2
 -I$root/include -I$root/src -I$root/bench"
libs="-luring -lpthread -lm"

mkdir -p "$out/obj"

# Newest header of the tree: an object older than it is rebuilt.
newest_header=$(find "$root/include" "$root/src" "$root/bench" "$here" -name '*.h' -newer "$out/obj" \
	2>/dev/null | head -n 1)
[ -n "$newest_header" ] && rm -rf "$out/obj" && mkdir -p "$out/obj"

# compile <source.c>: echoes the object path, compiling only when stale.
compile() {
	src=$1
	rel=${src#"$root"/}
	obj="$out/obj/$(echo "$rel" | tr / _).o"
	if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ]; then
		# shellcheck disable=SC2086
		"$CC" $cflags -fsanitize=fuzzer-no-link,address,undefined -c "$src" -o "$obj.tmp" >&2
		mv "$obj.tmp" "$obj"
	fi
	echo "$obj"
}

build() {
	t=$1
	objs=""
	for m in $(modules_of "$t"); do
		case "$m" in
		*.c) srcs="$root/$m" ;;
		*) srcs=$(find "$root/$m" -name '*.c' | sort) ;;
		esac
		for s in $srcs; do
			o=$(compile "$s") || return 1
			objs="$objs $o"
		done
	done
	h=$(compile "$here/$t.c") || return 1
	# shellcheck disable=SC2086
	"$CC" -fsanitize=fuzzer,address,undefined $h $objs $libs -o "$out/$t"
}

touch_stamp() { touch "$out/obj"; }

status=0
for t in $targets; do
	modules_of "$t" >/dev/null || exit 2
	echo "== build $t" >&2
	if ! build "$t"; then
		echo "fuzz/run.sh: building $t failed" >&2
		exit 2
	fi
done
touch_stamp
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

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
	fuzz_micro_args | fuzz_vmcache_config) extra="-max_len=512 -close_fd_mask=3" ;;
	fuzz_art) extra="-max_len=4096 -len_control=20" ;;
	fuzz_btree) extra="-max_len=2048 -len_control=20" ;;
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
