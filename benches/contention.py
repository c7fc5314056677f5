#!/usr/bin/env python3
"""Latency under CPU contention: ctxscribe (and faster-whisper) on four real clips, quiet,
beside one CPU-bound process, and as two processes transcribing at once.

Usage: benches/contention.py [--runs N] [--fw-python PYTHON] [--env NAME=VALUE ...]
  --fw-python: a Python with faster-whisper (`make bench-venv`: target/venv-fw/bin/python);
               it runs the same clips on models/ct2/base (int8, 2 threads, 5 beams).
  --env:       extra environment for ctxscribe (e.g. GOMP_SPINCOUNT=300000, libgomp's own
               default, to compare with the engine's 1000).
Each engine transcribes the clips RUNS times per scenario in one process (model loaded
once); a time is one clip's transcription. Ratios are per clip: a clip's time under load
over its median quiet time; the table gives their median and maximum.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CTXSCRIBE_SHARED", ROOT.parent / "shared"))
CLIPS = [
    "en_ls_1995-1837-0001.wav",
    "en_google_fare.wav",
    "en_lh_LJ002-0020.wav",
    "en_ls_2830-3980-0043.wav",
]
FW = """
import json, sys, time
from faster_whisper import WhisperModel
model = WhisperModel(sys.argv[1], device="cpu", compute_type="int8", cpu_threads=2)
for path in sys.argv[2:]:
    started = time.perf_counter()
    segments, _ = model.transcribe(path, beam_size=5)
    text = " ".join(s.text for s in segments)
    print(json.dumps({"text": text, "secs": time.perf_counter() - started}), flush=True)
"""


def engines(args: argparse.Namespace, clips: list[str]) -> dict[str, list[str]]:
    runs = clips * args.runs
    found = {
        "ctxscribe": [str(ROOT / "target/release/ctxscribe"), "transcribe", "--json",
                      "--model", "base", *runs],
    }
    if args.fw_python:
        found["faster-whisper"] = [args.fw_python, "-c", FW, str(ROOT / "models/ct2/base"), *runs]
    return found


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def times(process: subprocess.Popen[str]) -> list[float]:
    out, _ = process.communicate()
    secs = []
    for line in out.splitlines():
        row = json.loads(line)
        secs.append(row["timings"]["total_secs"] if "timings" in row else row["secs"])
    return secs


def ratios(secs: list[float], quiet: list[float], n: int) -> str:
    per_clip = [statistics.median(quiet[i::n]) for i in range(n)]
    r = [t / per_clip[i % n] for i, t in enumerate(secs)]
    return f"{statistics.median(r):.1f}x / {max(r):.1f}x"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--fw-python")
    parser.add_argument("--env", action="append", default=[])
    args = parser.parse_args()
    clips = [str(SHARED / "eval/real" / c) for c in CLIPS]
    env = dict(os.environ, **dict(e.split("=", 1) for e in args.env))
    print("| engine | quiet median s | one CPU-bound process: median / max ratio "
          "| two processes at once: median / max ratio |")
    print("|---|---|---|---|")
    for name, command in engines(args, clips).items():
        quiet = times(start(command, env))
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.5)
        loaded = times(start(command, env))
        hog.kill()
        hog.wait()
        a, b = start(command, env), start(command, env)
        two = times(a) + times(b)
        n = len(clips)
        print(f"| {name} | {statistics.median(quiet):.3f} | {ratios(loaded, quiet, n)} "
              f"| {ratios(two, quiet, n)} |", flush=True)


if __name__ == "__main__":
    main()
