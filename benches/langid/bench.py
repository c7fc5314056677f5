#!/usr/bin/env python3
"""Short clips in six languages (benches/langid, made by its synthesize.sh): is the speech
heard, and in which language, for each form of `languages`, beside faster-whisper.

Usage: benches/langid/bench.py [--half tuning|validation|both] [--fw-python PYTHON]
                               [--binary PATH] [-v]
ctxscribe runs its CLI (`transcribe --json --model base`, model loaded once per form):
  auto  languages detected among all of Whisper's;
  one   the clip's own language forced;
  set   es,fr,de,it,pt,en allowed.
faster-whisper (models/ct2/base, int8, 2 threads, 5 beams) detects among all.
Per form: clips returned empty, clips heard in another language, WER (lowercased, no
punctuation) and latency (median, 90th percentile, worst, total). -v lists every miss.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches"))
from clip_bench import edits, run_ctxscribe, run_fw  # noqa: E402

SET = "es,fr,de,it,pt,en"


def words(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text.lower())
    return re.sub(r"[^\w' ]", " ", text).split()


def report(name: str, cases: list[dict], rows: list[dict], verbose: bool) -> None:
    empty = wrong = errors = total = 0
    for case, row in zip(cases, rows, strict=True):
        misses = []
        if not row["text"].strip():
            empty += 1
            misses.append("EMPTY")
        if row["language"] != case["language"]:
            wrong += 1
            misses.append(f"heard as {row['language']}")
        reference = words(case["reference"])
        errors += edits(reference, words(row["text"]))
        total += len(reference)
        if misses and verbose:
            print(f"    {case['id']} {case['language']} {case['voice']}: {', '.join(misses)}: "
                  f"{row['text']}")
    secs = sorted(r["secs"] for r in rows)
    p90 = secs[min(len(secs) - 1, int(0.9 * len(secs)))]
    print(f"| {name} | {empty} | {wrong} | {errors / max(total, 1):.3f} | "
          f"{statistics.median(secs):.2f} | {p90:.2f} | {secs[-1]:.2f} | {sum(secs):.1f} |",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--half", default="both", choices=["tuning", "validation", "both"])
    parser.add_argument("--fw-python")
    parser.add_argument("--binary", default=str(ROOT / "target/release/ctxscribe"))
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    halves = ["tuning", "validation"] if args.half == "both" else [args.half]
    for half in halves:
        folder = ROOT / "target/langid" / half
        cases = [json.loads(l) for l in open(folder / "cases.jsonl", encoding="utf-8")]
        paths = [str(folder / "audio" / f"{c['id']}.wav") for c in cases]
        print(f"\n{half}: {len(cases)} clips")
        print("| engine, languages | empty | other language | WER | p50 s | p90 s | max s | total s |")
        print("|---|---|---|---|---|---|---|---|")
        report("ctxscribe, auto", cases, run_ctxscribe(args.binary, paths, None), args.v)
        forced = []
        for language in sorted({c["language"] for c in cases}):
            own = [i for i, c in enumerate(cases) if c["language"] == language]
            rows = run_ctxscribe(args.binary, [paths[i] for i in own], language)
            forced += zip(own, rows)
        report("ctxscribe, its language", cases, [r for _, r in sorted(forced)], args.v)
        report(f"ctxscribe, {SET}", cases, run_ctxscribe(args.binary, paths, SET), args.v)
        if args.fw_python:
            report("faster-whisper, auto", cases, run_fw(args.fw_python, paths), args.v)


if __name__ == "__main__":
    main()
