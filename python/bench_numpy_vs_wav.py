"""numpy input against a WAV file: the same 16 kHz mono audio, median time per call.

    target/venv-py/bin/python python/bench_numpy_vs_wav.py [--runs 5] [--threads 2]

(after python/run-tests.sh, or any venv with the package and numpy). For each model
(tiny.en, base from ``$CTXSCRIBE_MODEL_DIR``, default the checkout's models/) and each
clip (JFK 11 s, and it repeated to 60 s), it prints the median of ``--runs`` calls of
``transcribe(path)`` on a 16-bit 16 kHz WAV file, ``transcribe(bytes)`` of that file and
``transcribe(float32_array, sample_rate=16000)`` of the same samples. A benchmark: it
prints, it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

import ctxscribe

REPO = Path(__file__).resolve().parents[1]
MODELS = Path(os.environ.get("CTXSCRIBE_MODEL_DIR") or REPO / "models")
JFK = REPO / "target" / "fixtures" / "real" / "en_whisper_jfk.wav"


def pcm16k(path: Path) -> npt.NDArray[np.float32]:
    with wave.open(str(path)) as w:
        assert w.getframerate() == 16000 and w.getsampwidth() == 2, "a 16 kHz 16-bit wav"
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        pcm = pcm.reshape(-1, w.getnchannels()).mean(axis=1)
    return (pcm / 32768).astype(np.float32)


def write_wav(path: Path, samples: npt.NDArray[np.float32]) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def median_secs(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    jfk = pcm16k(JFK)
    clips = {"jfk 11 s": jfk, "jfk x5.5 60 s": np.tile(jfk, 6)[: 60 * 16000]}
    print(f"median of {args.runs} calls, {args.threads} engine threads; seconds")
    print(f"{'model':<8} {'clip':<14} {'wav path':>9} {'wav bytes':>10} {'float32':>8} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("tiny.en", "base"):
            file = "ggml-tiny.en.bin" if model == "tiny.en" else "ggml-base.bin"
            transcriber = ctxscribe.ContextTranscriber(MODELS / file, threads=args.threads)
            for name, samples in clips.items():
                wav = Path(tmp) / "clip.wav"
                write_wav(wav, samples)
                data = wav.read_bytes()
                # The array the WAV file holds, so both inputs are the same samples.
                same = (np.frombuffer(data[44:], dtype="<i2") / 32768).astype(np.float32)
                transcriber.transcribe(same, sample_rate=16000)  # warm up
                path_secs = median_secs(lambda: transcriber.transcribe(wav), args.runs)
                bytes_secs = median_secs(lambda: transcriber.transcribe(data), args.runs)
                array_secs = median_secs(
                    lambda: transcriber.transcribe(same, sample_rate=16000), args.runs
                )
                print(
                    f"{model:<8} {name:<14} {path_secs:>9.3f} {bytes_secs:>10.3f} "
                    f"{array_secs:>8.3f} {array_secs / path_secs:>6.2f}"
                )


if __name__ == "__main__":
    main()
