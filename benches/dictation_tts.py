"""Long dictations spoken sentence by sentence, for benches/longdict and benches/ctxlong
(run by their synthesize.sh in the Kokoro venv of kokoro-setup.sh).

`dictation(path, voice, sentences, kokoro_dir, espeak_rate)` writes PATH (16 kHz mono
16-bit): 0.3 s of silence, the sentences joined with 0.6 s pauses, 0.3 s of silence.
VOICE is kokoro:NAME (Kokoro-82M, en-gb for British voices, else en-us) or espeak:VOICE
(espeak-ng at ESPEAK_RATE words a minute). Idempotent: PATH.key holds the voice and the
sentences it was made from, and a file whose key matches is kept. Returns its seconds.
"""
import json
import os
import subprocess
import tempfile
import wave

import numpy as np
from scipy.signal import resample_poly

SR = 16000
_kokoro = None


def _espeak(voice, text, rate):
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-w", tmp.name, text],
                       check=True)
        with wave.open(tmp.name) as w:
            source_rate = w.getframerate()
            a = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    return resample_poly(a, SR // 1000, source_rate // 1000)


def _kokoro_speak(kokoro_dir, voice, text):
    global _kokoro
    if _kokoro is None:
        import onnxruntime as rt
        from kokoro_onnx import Kokoro
        so = rt.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
        sess = rt.InferenceSession(os.path.join(kokoro_dir, "kokoro.onnx"), so,
                                   providers=["CPUExecutionProvider"])
        _kokoro = Kokoro.from_session(sess, os.path.join(kokoro_dir, "voices.npz"))
    audio, rate = _kokoro.create(text, voice=voice, lang="en-gb" if voice[0] == "b" else "en-us")
    return resample_poly(np.asarray(audio, np.float32), SR // 1000, rate // 1000)


def dictation(path, voice, sentences, kokoro_dir, espeak_rate):
    key = json.dumps([voice, sentences])
    stamp = path + ".key"
    if not (os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == key):
        engine, _, name = voice.partition(":")
        pause = np.zeros(int(0.6 * SR), np.float32)
        parts = [np.zeros(int(0.3 * SR), np.float32)]
        for sentence in sentences:
            if engine == "kokoro":
                parts.append(_kokoro_speak(kokoro_dir, name, sentence))
            else:
                parts.append(_espeak(name, sentence, espeak_rate))
            parts.append(pause)
        parts[-1] = np.zeros(int(0.3 * SR), np.float32)
        pcm = np.clip(np.concatenate(parts), -1, 1)
        with wave.open(path + ".tmp", "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(SR)
            w.writeframes((pcm * 32767).round().astype("<i2").tobytes())
        os.replace(path + ".tmp", path)
        with open(stamp, "w") as f:
            f.write(key)
    with wave.open(path) as w:
        return w.getnframes() / SR
