#!/usr/bin/env bash
# One-time (idempotent) machine and project setup: system packages, the CLI, the models.
#   - Debian packages: C/C++ toolchain pieces for whisper.cpp and libopus, ffmpeg (test
#     fixtures only), espeak-ng, curl (the README's server examples), nginx-light (the
#     load balancer of tests/scale.rs and `make scale-test`; only started by them, never
#     as a system service), chromium and chromium-driver (the browser page test,
#     tests/browser_page.rs, headless).
#   - The `ctxscribe` command line, built in release mode (target/release/ctxscribe).
#   - The models (scripts/prepare-models.sh): `ctxscribe models fetch`, the command users
#     run, into the library's own model directory (`ctxscribe models dir`:
#     $CTXSCRIBE_MODEL_DIR if you set it, else ~/.local/share/ctxscribe/models), so the
#     CLI, the Python package, the C library and the server find them with no variable.
#     The checkout's models/ is a link to that directory for the repository's tools.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

APT_PACKAGES=(cmake clang libclang-dev g++ pkg-config ffmpeg espeak-ng libopenblas-dev sox curl nginx-light chromium chromium-driver qemu-user)
source scripts/apt-install.sh
apt_install_missing setup "${APT_PACKAGES[@]}"

echo "setup: building the ctxscribe command line (the first build compiles whisper.cpp: several minutes)"
# $CARGO: the cargo that runs this (cargo sets it for the tests it runs; `true` skips it).
"${CARGO:-cargo}" build --release --features "${FEATURES:-server}" --bin ctxscribe
CLI="$ROOT/target/release/ctxscribe"

# The directory the library searches: the user's own CTXSCRIBE_MODEL_DIR, else the default.
if ! MODELS_DIR=$("$CLI" models dir); then
  echo "setup: no model directory: set HOME or CTXSCRIBE_MODEL_DIR" >&2
  exit 1
fi
MODELS_DIR=$(realpath -m "$MODELS_DIR")
# A link that leads nowhere (its directory was removed) is made again below.
if [ -L models ] && [ ! -e models ]; then rm models; fi
# A checkout set up before models/ became a link holds the models itself: move them.
if [ -d models ] && [ ! -L models ] && [ ! -e "$MODELS_DIR/ggml-base.bin" ]; then
  echo "setup: moving the checkout's models/ to $MODELS_DIR"
  mkdir -p "$(dirname "$MODELS_DIR")"
  if [ -d "$MODELS_DIR" ]; then rmdir "$MODELS_DIR" 2>/dev/null || true; fi
  mv models "$MODELS_DIR"
fi

CTXSCRIBE_CLI="$CLI" bash scripts/prepare-models.sh

# Link models/ there, unless it is that directory (or a link to it) already: under cargo,
# .cargo/config.toml points CTXSCRIBE_MODEL_DIR at models/ itself.
if [ "$MODELS_DIR" != "$(realpath -m models)" ] && { [ -L models ] || [ ! -e models ]; }; then
  ln -sfn "$MODELS_DIR" models
fi
echo "setup: done; models in $MODELS_DIR (ctxscribe models list shows them; models/ links there)"
echo "setup: the command line is $CLI"
