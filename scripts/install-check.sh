#!/bin/sh
# install-check.sh — install a build into a temporary prefix and build
# examples/hello_ruma.c against it: with pkg-config, shared and static, and
# as a small CMake project (find_package(ruma), ruma::ruma and
# ruma::ruma_static) that runs without LD_LIBRARY_PATH; examples/kv.c (a
# store through db.h) and examples/blob.c (a large value: the example's own
# binary stored and read back) are built with pkg-config and run in the
# prefix.  The examples are installed under share/doc/ruma/examples.  A full build also
# installs the ruma binary and ruma(1); a -DRUMA_LIBRARY_ONLY=ON build the
# library alone.
# Usage: scripts/install-check.sh <build-dir>
set -eu
build=${1:?usage: install-check.sh <build-dir>}
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mktemp -d /tmp/ruma-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name ruma.pc)")/..
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -Wall -Wextra -o "$prefix/hello_shared" "$root/examples/hello_ruma.c" $(pkg-config --cflags --libs ruma)
LD_LIBRARY_PATH="$libdir" "$prefix/hello_shared"
# shellcheck disable=SC2046
cc -Wall -Wextra -o "$prefix/hello_static" "$root/examples/hello_ruma.c" $(pkg-config --cflags ruma) \
	"$libdir/libruma.a" $(pkg-config --static --libs ruma | sed 's/-lruma\b//')
"$prefix/hello_static"
# find_package(ruma) from a CMake project, the way the README shows it
app="$prefix/cmake-app"
mkdir -p "$app"
cp "$root/examples/hello_ruma.c" "$app/"
cat >"$app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(app C)
find_package(ruma 0.1 REQUIRED)
add_executable(app hello_ruma.c)
target_link_libraries(app PRIVATE ruma::ruma)
add_executable(app_static hello_ruma.c)
target_link_libraries(app_static PRIVATE ruma::ruma_static)
CMAKE
cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$app/build" >/dev/null
"$app/build/app" # the installed libruma.so through the build's rpath
"$app/build/app_static"
test -f "$prefix/share/doc/ruma/examples/hello_ruma.c"
# shellcheck disable=SC2046
cc -Wall -Wextra -o "$prefix/kv" "$root/examples/kv.c" $(pkg-config --cflags --libs ruma)
LD_LIBRARY_PATH="$libdir" "$prefix/kv" "$prefix/kv.store" >/dev/null
cc -Wall -Wextra -o "$prefix/blob" "$root/examples/blob.c" $(pkg-config --cflags --libs ruma)
LD_LIBRARY_PATH="$libdir" "$prefix/blob" "$prefix/blob.store" "$prefix/blob" >/dev/null
if grep -q '^RUMA_LIBRARY_ONLY:BOOL=ON$' "$build/CMakeCache.txt"; then
	test ! -e "$prefix/bin"
else
	test -x "$prefix/bin/ruma"
	"$prefix/bin/ruma" --version
	grep -q '^\.SS ruma vmcache' "$prefix/share/man/man1/ruma.1"
fi
echo "install-check: ok"
