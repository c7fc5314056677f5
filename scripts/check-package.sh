#!/usr/bin/env bash
# The crate as crates.io would ship it: `cargo package -p ctxscribe` (no path-only
# dependency, every file the build needs included, the size), then README's Rust
# quickstart (examples/quickstart.rs) built in a scratch project OUTSIDE the checkout
# against the unpacked package, and run on jfk.
# The scratch build shares this checkout's target directory and Cargo.lock (so the
# dependencies are not compiled again) and sets CMAKE_PROJECT_INCLUDE to the packaged
# ggml-cpu-variants.cmake, as a crate user who wants the portable engine does.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-"$ROOT/target"}
$CARGO package -p ctxscribe --no-verify --allow-dirty --locked
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
CRATE=$TARGET/package/ctxscribe-$VERSION.crate
bytes=$(stat -c %s "$CRATE")
echo "check-package: $CRATE: $bytes bytes (crates.io's limit is 10 MiB)"
[ "$bytes" -lt $((10 * 1024 * 1024)) ]

SCRATCH=$(mktemp -d /tmp/ctxscribe-package.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
tar -xzf "$CRATE" -C "$SCRATCH"
mkdir -p "$SCRATCH/app/src"
cp examples/quickstart.rs "$SCRATCH/app/src/main.rs"
cp Cargo.lock "$SCRATCH/app/Cargo.lock"
cat > "$SCRATCH/app/Cargo.toml" <<TOML
[package]
name = "quickstart-app"
version = "0.1.0"
edition = "2024"

[dependencies]
ctxscribe = { path = "../ctxscribe-$VERSION" }

# The workspace's release profile, so that the shared target directory's builds are reused.
[profile.release]
debug = 1
panic = "unwind"
TOML
cd "$SCRATCH/app"
CMAKE_PROJECT_INCLUDE=$SCRATCH/ctxscribe-$VERSION/src/engine/ggml-cpu-variants.cmake \
  CARGO_TARGET_DIR=$TARGET $CARGO build --release
cp "$ROOT/target/fixtures/real/en_whisper_jfk.wav" note.webm 2>/dev/null \
  || { bash "$ROOT/scripts/prepare-eval.sh" "$ROOT/target/fixtures/real" >/dev/null
       cp "$ROOT/target/fixtures/real/en_whisper_jfk.wav" note.webm; }
out=$(CTXSCRIBE_MODEL_DIR=${CTXSCRIBE_MODEL_DIR:-$ROOT/models} "$TARGET/release/quickstart-app")
echo "check-package: $out"
echo "$out" | tr 'A-Z' 'a-z' | grep -q "ask not what your country can do for you"
