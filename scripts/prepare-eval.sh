#!/usr/bin/env bash
# Makes every clip of ../shared/eval/real available in a supported container: wav files
# are linked, the others (flac, aiff) converted to 16-bit wav at their own rate by ffmpeg.
# Usage: prepare-eval.sh OUT_DIR. Idempotent.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${CTXSCRIBE_SHARED:-"$ROOT/../shared"}
OUT=${1:-"$ROOT/target/fixtures/real"}
mkdir -p "$OUT"
tail -n +2 "$SHARED/eval/real/manifest.tsv" | while IFS=$'\t' read -r id file _rest; do
  src="$SHARED/eval/real/$file"
  dst="$OUT/$id.wav"
  [ -s "$dst" ] && continue
  case "$file" in
    *.wav) ln -sf "$src" "$dst" ;;
    *) ffmpeg -nostdin -loglevel error -y -i "$src" -c:a pcm_s16le "$dst" ;;
  esac
done
