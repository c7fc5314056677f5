#!/usr/bin/env bash
# Long-dictation set "longdict": six English dictations of 11-12 sentences, each spoken
# by one Kokoro and one espeak-ng voice (12 files, 38-52 s), sentences joined with 0.6 s
# pauses.
#
# Usage: benches/longdict/synthesize.sh [OUT]      (OUT defaults to target/longdict)
#
# tuning.jsonl (t1-t3) and validation.jsonl (v1-v3): fields id, voice (kokoro:NAME, or
# espeak:VOICE at 160 wpm), sentences. The halves share no dictation: tune on tuning/,
# report validation/. The sentences are ordinary dictation (status notes, minutes) whose
# nouns ("the billing module", "the job") a decoder may write with a capital.
# Kokoro is set up by ../kokoro-setup.sh into a venv beside OUT (OUT/../venv-tts).
# Output (idempotent): OUT/{tuning,validation}/{cases.jsonl,audio/<id>.wav}, 16 kHz mono
# 16-bit, 0.3 s of silence at both ends. Scored by benches/longdict/bench.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/longdict}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
venv="${CTXSET_TTS_VENV:-$(dirname "$out")/venv-tts}"
command -v espeak-ng >/dev/null || { echo "longdict: espeak-ng is required" >&2; exit 1; }
# shellcheck source=../kokoro-setup.sh
source "$here/../kokoro-setup.sh"
setup_kokoro || { echo "longdict: Kokoro could not be set up (see above)" >&2; exit 1; }
export OMP_NUM_THREADS=1
"$venv/bin/python" - "$here" "$out" "$venv/kokoro" <<'PY'
import json, os, subprocess, sys, tempfile, wave
import numpy as np
from scipy.signal import resample_poly

here, out, kdir = sys.argv[1:4]
SR = 16000
kokoro = None


def espeak(voice, text):
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["espeak-ng", "-v", voice, "-s", "160", "-w", tmp.name, text], check=True)
        with wave.open(tmp.name) as w:
            rate = w.getframerate()
            a = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    return resample_poly(a, SR // 1000, rate // 1000)


def kokoro_speak(voice, text):
    global kokoro
    if kokoro is None:
        import onnxruntime as rt
        from kokoro_onnx import Kokoro
        so = rt.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
        sess = rt.InferenceSession(os.path.join(kdir, "kokoro.onnx"), so,
                                   providers=["CPUExecutionProvider"])
        kokoro = Kokoro.from_session(sess, os.path.join(kdir, "voices.npz"))
    audio, rate = kokoro.create(text, voice=voice, lang="en-gb" if voice[0] == "b" else "en-us")
    return resample_poly(np.asarray(audio, np.float32), SR // 1000, rate // 1000)


for half in ("tuning", "validation"):
    cases = [json.loads(l) for l in open(os.path.join(here, f"{half}.jsonl")) if l.strip()]
    audio = os.path.join(out, half, "audio")
    os.makedirs(audio, exist_ok=True)
    durs = []
    for c in cases:
        path = os.path.join(audio, f"{c['id']}.wav")
        key = json.dumps([c["voice"], c["sentences"]])
        stamp = path + ".key"
        if not (os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == key):
            engine, _, name = c["voice"].partition(":")
            pause = np.zeros(int(0.6 * SR), np.float32)
            parts = [np.zeros(int(0.3 * SR), np.float32)]
            for s in c["sentences"]:
                parts += [(kokoro_speak if engine == "kokoro" else espeak)(name, s), pause]
            parts[-1] = np.zeros(int(0.3 * SR), np.float32)
            pcm = np.clip(np.concatenate(parts), -1, 1)
            with wave.open(path + ".tmp", "wb") as w:
                w.setnchannels(1); w.setsampwidth(2); w.setframerate(SR)
                w.writeframes((pcm * 32767).round().astype("<i2").tobytes())
            os.replace(path + ".tmp", path)
            open(stamp, "w").write(key)
        with wave.open(path) as w:
            durs.append(w.getnframes() / SR)
    with open(os.path.join(out, half, "cases.jsonl"), "w") as f:
        for c in cases:
            f.write(json.dumps({**c, "reference": " ".join(c["sentences"])}) + "\n")
    print(f"longdict: {half}: {len(cases)} files, {min(durs):.1f}-{max(durs):.1f} s")
PY
