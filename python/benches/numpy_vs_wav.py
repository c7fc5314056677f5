"""numpy input against a WAV file: the same 16 kHz mono audio, median time per call.

    target/venv-py/bin/python python/benches/numpy_vs_wav.py [--runs 5] [--threads 2]

(after python/run-tests.sh, or any venv with the package and numpy). For each model
(``--models``, default tiny.en and base, from ``$CTXSCRIBE_MODEL_DIR``, default the
checkout's models/) and each clip (JFK 11 s; with ``--long`` also JFK repeated to 60 s),
it prints the median of ``--runs`` calls, taken in turns, of
``transcribe(path)`` on a 16-bit 16 kHz WAV file, ``transcribe(bytes)`` of that file and
``transcribe(float32_array, sample_rate=16000)`` of the same samples. A benchmark: it
prints, it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import ctxscribe

REPO = Path(__file__).resolve().parents[2]
# The tests' audio helpers (python/tests/pcm.py), shared with this bench.
sys.path.insert(0, str(REPO / "python" / "tests"))
from pcm import float32_16k_mono, write_wav_16k  # noqa: E402
MODELS = Path(os.environ.get("CTXSCRIBE_MODEL_DIR") or REPO / "models")
JFK = REPO / "target" / "fixtures" / "real" / "en_whisper_jfk.wav"


def interleaved_medians(calls: list[Callable[[], object]], runs: int) -> list[float]:
    """The median seconds of each call, run in turns (a load change hits all alike)."""
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(runs):
        for call, spent in zip(calls, times):
            started = time.perf_counter()
            call()
            spent.append(time.perf_counter() - started)
    return [statistics.median(spent) for spent in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default="tiny.en,base", help="comma list")
    parser.add_argument("--long", action="store_true", help="also a 60 s clip")
    args = parser.parse_args()
    jfk = float32_16k_mono(JFK)
    clips = {"jfk 11 s": jfk}
    if args.long:
        clips["jfk x6 60 s"] = np.tile(jfk, 6)[: 60 * 16000]
    print(f"median of {args.runs} calls in turns, {args.threads} engine threads; seconds")
    print(f"{'model':<8} {'clip':<12} {'wav path':>9} {'wav bytes':>10} {'float32':>8} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            transcriber = ctxscribe.ContextTranscriber(MODELS / f"ggml-{model}.bin", threads=args.threads)
            for name, samples in clips.items():
                wav = Path(tmp) / "clip.wav"
                write_wav_16k(wav, samples)
                data = wav.read_bytes()
                # The array the WAV file holds, so both inputs are the same samples.
                same = (np.frombuffer(data[44:], dtype="<i2") / 32768).astype(np.float32)
                transcriber.transcribe(same, sample_rate=16000)  # warm up
                path_secs, bytes_secs, array_secs = interleaved_medians(
                    [
                        lambda: transcriber.transcribe(wav),
                        lambda: transcriber.transcribe(data),
                        lambda: transcriber.transcribe(same, sample_rate=16000),
                    ],
                    args.runs,
                )
                print(
                    f"{model:<8} {name:<12} {path_secs:>9.3f} {bytes_secs:>10.3f} "
                    f"{array_secs:>8.3f} {array_secs / path_secs:>6.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
