#!/bin/sh
# install-check.sh — install a build into a temporary prefix and build
# examples/hello_ruma.c against it with pkg-config, shared and static, and
# examples/kv.c (a store through db.h), run in the prefix.  A
# full build also installs the ruma binary; a -DRUMA_LIBRARY_ONLY=ON build
# installs the library alone.
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
# shellcheck disable=SC2046
cc -Wall -Wextra -o "$prefix/kv" "$root/examples/kv.c" $(pkg-config --cflags --libs ruma)
LD_LIBRARY_PATH="$libdir" "$prefix/kv" "$prefix/kv.store" >/dev/null
if grep -q '^RUMA_LIBRARY_ONLY:BOOL=ON$' "$build/CMakeCache.txt"; then
	test ! -e "$prefix/bin"
else
	test -x "$prefix/bin/ruma"
	"$prefix/bin/ruma" --version
fi
echo "install-check: ok"
