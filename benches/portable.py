"""The portable engine beside the -march=native one, in one run on this machine.

The portable build (the default: linked-in x86-64-v2 kernels, the best embedded variant
loaded at run time) and a CTXSCRIBE_NATIVE=1 build (whisper-rs-sys's -march=native, in
target/native) transcribe the same files with the base model, 2 threads, alternating run
by run. Each row gives the median engine time (the CLI's `--json` timings: decode and
model load excluded) of each, their ratio, and whether the texts are identical.

    python3 benches/portable.py [--runs 5]     (`make bench-portable`; after `make setup`)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PORTABLE = REPO / "target" / "release" / "ctxscribe"
NATIVE_DIR = REPO / "target" / "native"
NATIVE = NATIVE_DIR / "release" / "ctxscribe"
CLIPS = REPO / "target" / "fixtures" / "real"


def build() -> None:
    cargo = os.environ.get("CARGO", "cargo")
    subprocess.run([cargo, "build", "--release", "--bin", "ctxscribe"], cwd=REPO, check=True)
    env = dict(os.environ, CTXSCRIBE_NATIVE="1", CARGO_TARGET_DIR=str(NATIVE_DIR))
    subprocess.run([cargo, "build", "--release", "--bin", "ctxscribe"], cwd=REPO, env=env, check=True)


def joined_english(seconds: float, out: Path) -> Path:
    """English real clips (16 kHz mono wav) joined, cycled, until `seconds` long."""
    frames = bytearray()
    clips = sorted(CLIPS.glob("en_*.wav"))
    while len(frames) < seconds * 16000 * 2:
        for clip in clips:
            with wave.open(str(clip)) as w:
                if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (16000, 1, 2):
                    continue
                frames += w.readframes(w.getnframes())
            if len(frames) >= seconds * 16000 * 2:
                break
    with wave.open(str(out), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(bytes(frames[: int(seconds * 16000) * 2]))
    return out


def transcribe(binary: Path, clip: Path) -> dict:
    env = dict(os.environ, CTXSCRIBE_THREADS="2", CTXSCRIBE_MODEL_DIR=str(REPO / "models"))
    done = subprocess.run(
        [str(binary), "transcribe", "--json", str(clip)],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(done.stdout.splitlines()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    subprocess.run(["bash", "scripts/prepare-eval.sh", str(CLIPS)], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    build()
    with tempfile.TemporaryDirectory() as tmp:
        files = [CLIPS / "en_whisper_jfk.wav", CLIPS / "de_picovoice.wav",
                 joined_english(60.0, Path(tmp) / "joined-60s.wav")]
        kernels = transcribe(PORTABLE, files[0])["cpu_kernels"]["variant"]
        print(f"portable build: {kernels} kernels; native: -march=native; base model, 2 threads, "
              f"median of {args.runs} runs each, alternating")
        print(f"{'file':<24} {'audio s':>8} {'native s':>9} {'portable s':>11} {'ratio':>6}  same text")
        ratios = []
        for clip in files:
            times: dict[Path, list[float]] = {NATIVE: [], PORTABLE: []}
            texts: dict[Path, set[str]] = {NATIVE: set(), PORTABLE: set()}
            for _ in range(args.runs):
                for binary in (NATIVE, PORTABLE):
                    line = transcribe(binary, clip)
                    times[binary].append(line["timings"]["engine_secs"])
                    texts[binary].add(line["text"])
            native, portable = (statistics.median(times[b]) for b in (NATIVE, PORTABLE))
            ratios.append(portable / native)
            same = "yes" if texts[NATIVE] == texts[PORTABLE] else "no"
            audio = transcribe(PORTABLE, clip)["audio_secs"]
            print(f"{clip.name:<24} {audio:>8.1f} {native:>9.3f} {portable:>11.3f} "
                  f"{portable / native:>6.3f}  {same}")
        print(f"geometric mean ratio: {statistics.geometric_mean(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
