#!/usr/bin/env bash
# Generates include/ctxscribe.h from ffi/src with a pinned cbindgen and ffi/cbindgen.toml.
#
#   bash ffi/scripts/gen-header.sh           rewrite include/ctxscribe.h (commit the result)
#   bash ffi/scripts/gen-header.sh --check   regenerate into a temporary file and fail,
#                                            printing the diff, if the committed header
#                                            differs in any byte (run by `make test`)
#
# cbindgen is installed once, with its own lock file, into target/tools/cbindgen-VERSION
# (or $CTXSCRIBE_TOOLS_DIR/cbindgen-VERSION); bumping CBINDGEN_VERSION reinstalls it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"

CBINDGEN_VERSION=0.29.4
TOOLS=${CTXSCRIBE_TOOLS_DIR:-"$ROOT/target/tools"}/cbindgen-$CBINDGEN_VERSION
CBINDGEN=$TOOLS/bin/cbindgen
HEADER=include/ctxscribe.h

mode=write
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! [ -x "$CBINDGEN" ] || [ "$("$CBINDGEN" --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]; then
  echo "gen-header: installing cbindgen $CBINDGEN_VERSION into $TOOLS (once)" >&2
  cargo install cbindgen --version "=$CBINDGEN_VERSION" --locked --root "$TOOLS" --quiet
fi

generate() { # OUT
  # cbindgen warns (on stderr) about items it skips; any real problem fails the command.
  "$CBINDGEN" --quiet --config ffi/cbindgen.toml --crate ctxscribe-ffi --output "$1" ffi
}

if [ "$mode" = write ]; then
  mkdir -p "$(dirname "$HEADER")"
  generate "$HEADER"
  echo "gen-header: wrote $HEADER"
  exit 0
fi

tmp=$(mktemp "${TMPDIR:-/tmp}/ctxscribe-header.XXXXXX")
trap 'rm -f "$tmp"' EXIT
generate "$tmp"
if [ ! -f "$HEADER" ]; then
  echo "gen-header: $HEADER is missing; run: bash ffi/scripts/gen-header.sh, then commit it" >&2
  exit 1
fi
if ! diff -u --label "$HEADER (committed)" --label "$HEADER (generated)" "$HEADER" "$tmp"; then
  echo "gen-header: $HEADER is out of date with ffi/src; run: bash ffi/scripts/gen-header.sh, then commit it" >&2
  exit 1
fi
echo "gen-header: $HEADER is up to date (cbindgen $CBINDGEN_VERSION)"
