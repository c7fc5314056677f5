#!/usr/bin/env bash
# Language-identification set "langid": short sentences (2-4 s) in English, Spanish,
# French, German, Italian and Portuguese, each spoken by one espeak-ng and one Kokoro voice.
#
# Usage: benches/langid/synthesize.sh [OUT]      (OUT defaults to target/langid in the repo)
#
# tuning.jsonl (t001..) and validation.jsonl (v001..): 48 clips each (8 per language, 4
# sentences x 2 voices), no sentence shared between the halves: tune on tuning/, report
# validation/. Fields: id, language (what is spoken), voice (espeak:VOICE at 150 wpm, or
# kokoro:NAME), reference. Kokoro speaks the non-English sentences from espeak phonemes
# (no German Kokoro voice: ef_dora and am_michael read German phonemes, accented); it is
# set up by ../kokoro-setup.sh into a venv beside OUT (OUT/../venv-tts).
# Output (idempotent): OUT/{tuning,validation}/{cases.jsonl,audio/<id>.wav}, 16 kHz mono
# 16-bit with 0.3 s of silence at both ends. Scored by `cargo bench --bench langid`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/langid}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
venv="${CTXSET_TTS_VENV:-$(dirname "$out")/venv-tts}"
command -v espeak-ng >/dev/null || { echo "langid: espeak-ng is required" >&2; exit 1; }
command -v sox >/dev/null || { echo "langid: sox is required" >&2; exit 1; }
# shellcheck source=../kokoro-setup.sh
source "$here/../kokoro-setup.sh"
setup_kokoro || { echo "langid: Kokoro could not be set up (see above)" >&2; exit 1; }
export OMP_NUM_THREADS=1
"$venv/bin/python" - "$here" "$out" "$venv/kokoro" <<'PY'
import json, os, subprocess, sys, tempfile, wave
import numpy as np
from scipy.signal import resample_poly

here, out, kdir = sys.argv[1:4]
SR = 16000
PAD = np.zeros(int(0.3 * SR), np.float32)
ESPEAK_LANG = {"de": "de", "fr": "fr-fr", "es": "es", "it": "it", "pt": "pt-br"}
kokoro, phonemizers = None, {}


def write_wav(path, samples):
    pcm = np.concatenate([PAD, np.clip(samples, -1.0, 1.0), PAD])
    with wave.open(path + ".tmp", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(SR)
        w.writeframes((pcm * 32767.0).round().astype("<i2").tobytes())
    os.replace(path + ".tmp", path)


def espeak(voice, text, path):
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", tmp.name, text], check=True)
        subprocess.run(["sox", tmp.name, "-r", str(SR), "-c", "1", "-b", "16", path,
                        "pad", "0.3", "0.3"], check=True)


def kokoro_speak(voice, text, language, path):
    global kokoro
    if kokoro is None:
        import onnxruntime as rt
        from kokoro_onnx import Kokoro
        so = rt.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
        sess = rt.InferenceSession(os.path.join(kdir, "kokoro.onnx"), so,
                                   providers=["CPUExecutionProvider"])
        kokoro = Kokoro.from_session(sess, os.path.join(kdir, "voices.npz"))
    if language in ESPEAK_LANG:
        if language not in phonemizers:
            from phonemizer.backend import EspeakBackend
            phonemizers[language] = EspeakBackend(
                ESPEAK_LANG[language], preserve_punctuation=True, with_stress=True,
                language_switch="remove-flags")
        ph = phonemizers[language].phonemize([text], strip=True)[0]
        audio, rate = kokoro.create(ph, voice=voice, is_phonemes=True)
    else:
        audio, rate = kokoro.create(text, voice=voice, lang="en-gb" if voice[0] == "b" else "en-us")
    audio = resample_poly(np.asarray(audio, np.float32), SR // 1000, rate // 1000)
    write_wav(path, audio.astype(np.float32))


for half in ("tuning", "validation"):
    cases = [json.loads(l) for l in open(os.path.join(here, f"{half}.jsonl"), encoding="utf-8")
             if l.strip()]
    audio = os.path.join(out, half, "audio")
    os.makedirs(audio, exist_ok=True)
    made, durs = 0, []
    for c in cases:
        path = os.path.join(audio, f"{c['id']}.wav")
        stamp = path + ".key"
        key = json.dumps([c["voice"], c["reference"], c["language"]], ensure_ascii=False)
        if not (os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == key):
            engine, _, name = c["voice"].partition(":")
            if engine == "kokoro":
                kokoro_speak(name, c["reference"], c["language"], path)
            else:
                espeak(name, c["reference"], path)
            open(stamp, "w").write(key)
            made += 1
        with wave.open(path) as w:
            durs.append(w.getnframes() / SR)
    with open(os.path.join(out, half, "cases.jsonl"), "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"langid: {half}: {len(cases)} clips, {made} made, {min(durs):.1f}-{max(durs):.1f} s")
PY
