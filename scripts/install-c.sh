#!/usr/bin/env bash
# Installs the C library for C and C++ hosts (`make install PREFIX=...`):
#   <prefix>/lib/libctxscribe.so, libctxscribe.a     the C ABI (ctxscribe-ffi), release build
#   <prefix>/include/ctxscribe.h                     the cbindgen header
#   <prefix>/lib/pkgconfig/ctxscribe.pc              pkg-config --cflags --libs ctxscribe
#   <prefix>/lib/cmake/ctxscribe/*.cmake             find_package(ctxscribe)
# Usage: scripts/install-c.sh PREFIX   (DESTDIR=... stages the tree, as with make).
# The engine's CPU kernels travel inside the library: nothing else needs installing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${1:?usage: install-c.sh PREFIX}
LIBDIR=${LIBDIR:-lib}
case "$PREFIX" in
  /*) ;;
  *) echo "install: PREFIX must be an absolute path (got '$PREFIX')" >&2; exit 2 ;;
esac
DEST=${DESTDIR:-}$PREFIX
# Say what is wrong with the prefix before building anything.
probe=$DEST
while [ ! -e "$probe" ]; do probe=$(dirname "$probe"); done
if [ ! -d "$probe" ]; then
  echo "install: cannot install into $DEST: $probe is not a directory" >&2; exit 1
fi
if [ ! -w "$probe" ]; then
  echo "install: cannot install into $DEST: $probe is not writable (choose PREFIX=... you can write, or run as its owner)" >&2
  exit 1
fi

cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-"$ROOT/target"}
${CARGO:-cargo} build --release -p ctxscribe-ffi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

install -d "$DEST/$LIBDIR/pkgconfig" "$DEST/$LIBDIR/cmake/ctxscribe" "$DEST/include"
install -m 0755 "$TARGET/release/libctxscribe_ffi.so" "$DEST/$LIBDIR/libctxscribe.so"
install -m 0644 "$TARGET/release/libctxscribe_ffi.a" "$DEST/$LIBDIR/libctxscribe.a"
install -m 0644 include/ctxscribe.h "$DEST/include/ctxscribe.h"
sed -e "s|@PREFIX@|$PREFIX|" -e "s|@LIBDIR@|$LIBDIR|" -e "s|@VERSION@|$VERSION|" \
  ffi/install/ctxscribe.pc.in > "$DEST/$LIBDIR/pkgconfig/ctxscribe.pc"
install -m 0644 ffi/install/ctxscribeConfig.cmake "$DEST/$LIBDIR/cmake/ctxscribe/ctxscribeConfig.cmake"
cat > "$DEST/$LIBDIR/cmake/ctxscribe/ctxscribeConfigVersion.cmake" <<VERSION_FILE
set(PACKAGE_VERSION "$VERSION")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  string(REGEX MATCH "^[0-9]+\\\\.[0-9]+" _have "\${PACKAGE_VERSION}")
  string(REGEX MATCH "^[0-9]+\\\\.[0-9]+" _want "\${PACKAGE_FIND_VERSION}")
  if(PACKAGE_FIND_VERSION AND NOT _have STREQUAL _want)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
VERSION_FILE
echo "install: ctxscribe $VERSION installed under $DEST"
find "$DEST" -path "$DEST/$LIBDIR/*ctxscribe*" -o -path "$DEST/include/ctxscribe.h" | sort | sed 's/^/  /'
