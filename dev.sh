#!/bin/sh
# dev.sh — the quick-start entry point.  Installs the Debian packages it is
# missing (as root, apt-get), configures, builds and runs.
#
#   ./dev.sh demo        build build/ruma (Release) and run `ruma demo`
#                        (build output goes to <build folder>/build.log)
#   ./dev.sh test        build (asserts on) and run the whole test suite
#   ./dev.sh test-asan   the whole suite under AddressSanitizer + UBSan
#   ./dev.sh test-tsan   the concurrent tests under ThreadSanitizer
#                        (test*: extra arguments go to ctest, e.g. -R art;
#                        a filter that matches no test fails)
#   ./dev.sh fuzz [SEC]  build the libFuzzer harnesses, run each SEC seconds
#   ./dev.sh build       Release build only (build/ruma)
#   ./dev.sh guard [--update REASON]  instruction counts of the hot paths
#                        under callgrind vs bench/guard/baseline.txt
#                        (Release build-guard/; docs/guard.md)
#   ./dev.sh lib         libruma alone (build-lib/, -DRUMA_LIBRARY_ONLY=ON)
#   ./dev.sh deps        install the packages only
#   ./dev.sh bench-deps  also the packages benchmarks compare against
#                        (jemalloc, mimalloc, fio, the LMDB and Judy peers,
#                        ruma kv's LMDB, RocksDB, SQLite, LevelDB, WiredTiger)
set -eu
cd "$(dirname "$0")"

# The library needs LIB_PKGS; the tool, its tests and `ruma plot` also gnuplot.
# The peer programs of the benchmarks (bench/peers/art_judy_peer.c,
# bench/peers/vmcache_peer_lmdb.c) need Judy and LMDB, ruma kv's adapters (bench/kv)
# the embedded stores it compares against: only bench-deps installs them.
LIB_PKGS="build-essential cmake pkg-config liburing-dev"
PKGS="$LIB_PKGS gnuplot-nox"
BENCH_PKGS="libjemalloc2 libmimalloc2.0 fio libjudy-dev liblmdb-dev librocksdb-dev libsqlite3-dev
	libleveldb-dev libwiredtiger-dev"
JOBS=$(nproc 2>/dev/null || echo 2)

install_missing() {
	missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "dev.sh: installing missing packages:$missing" >&2
	if [ "$(id -u)" != 0 ]; then
		echo "dev.sh: need root to install packages (or install them yourself:$missing)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	# shellcheck disable=SC2086
	apt-get install -y -qq $missing >&2
}

# Configure and build quietly: the output of both goes to <dir>/build.log, and
# only a failure shows it (its last lines and the log's path, on stderr).
# BUILD_TARGET, when set, builds that target alone (the demo needs only ruma).
configure_build() { # dir, cmake args...
	dir=$1
	shift
	mkdir -p "$dir"
	log="$dir/build.log"
	echo "dev.sh: building in $dir (log: $log)" >&2
	if ! { cmake -S . -B "$dir" "$@" &&
		cmake --build "$dir" -j "$JOBS" ${BUILD_TARGET:+--target "$BUILD_TARGET"}; } >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		echo "dev.sh: the build failed; the whole log is $log" >&2
		exit 1
	fi
}

run_ctest() { # dir, ctest args...
	dir=$1
	shift
	(cd "$dir" && ctest --no-tests=error --output-on-failure -j "$JOBS" "$@")
}

cmd=${1:-}
case "$cmd" in
deps) install_missing $PKGS ;;
bench-deps) install_missing $PKGS $BENCH_PKGS ;;
build)
	install_missing $PKGS
	configure_build build -DCMAKE_BUILD_TYPE=Release
	;;
guard)
	install_missing $PKGS valgrind
	BUILD_TARGET=ruma configure_build build-guard -DCMAKE_BUILD_TYPE=Release
	shift
	scripts/icount_guard.py build-guard/ruma "$@"
	;;
lib)
	install_missing $LIB_PKGS
	configure_build build-lib -DCMAKE_BUILD_TYPE=Release -DRUMA_LIBRARY_ONLY=ON
	;;
demo)
	install_missing $PKGS
	BUILD_TARGET=ruma configure_build build -DCMAKE_BUILD_TYPE=Release
	shift
	./build/ruma demo "$@"
	;;
test)
	install_missing $PKGS
	configure_build build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUMA_WERROR=ON
	shift
	run_ctest build-test "$@"
	;;
test-asan)
	install_missing $PKGS
	shift
	configure_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUMA_WERROR=ON -DRUMA_SANITIZE=address,undefined
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		RUMA_TEST_SANITIZED=1 run_ctest build-asan "$@"
	;;
test-tsan)
	install_missing $PKGS clang libclang-rt-14-dev
	shift
	configure_build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUMA_WERROR=ON -DRUMA_SANITIZE=thread \
		-DCMAKE_C_COMPILER=clang
	TSAN_OPTIONS=halt_on_error=1 RUMA_TEST_SANITIZED=1 run_ctest build-tsan -L concurrent "$@"
	;;
fuzz)
	install_missing $PKGS clang libclang-rt-14-dev
	fuzz/run.sh "${2:-30}"
	;;
*)
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
	[ -z "$cmd" ] && exit 2
	echo "dev.sh: unknown command '$cmd'" >&2
	exit 2
	;;
esac
