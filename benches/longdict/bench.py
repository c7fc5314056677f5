#!/usr/bin/env python3
"""Long dictation (benches/longdict, made by its synthesize.sh): WER, sentences written
twice and capitals mid-sentence, ctxscribe beside faster-whisper.

Usage: benches/longdict/bench.py [--half tuning|validation|both] [--fw-python PYTHON]
                                 [--binary PATH] [-v]
ctxscribe: its CLI (`transcribe --json --model base`, languages detected). faster-whisper:
models/ct2/base, int8, 2 threads, 5 beams, its defaults otherwise (conditioned on the
previous text). Per file and in total:
  WER       lowercased, punctuation removed;
  repeats   word 6-grams of the reference that the transcript holds more often than the
            reference (a sentence written twice adds about its length minus 5);
  capitals  words the reference writes in lowercase that the transcript capitalises
            where no sentence starts (after a word that does not end . ! ?);
  secs      the transcription's time.
-v prints the capitalised words and the repeated passages.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benches"))
from clip_bench import edits, run_ctxscribe, run_fw  # noqa: E402

def norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


def tokens(text: str) -> list[str]:
    """Written words, punctuation attached; empty normalised words dropped."""
    return [w for w in text.split() if norm(w)]


def repeats(reference: list[str], hypothesis: list[str], n: int = 6) -> list[str]:
    grams = lambda ws: Counter(tuple(ws[i:i + n]) for i in range(len(ws) - n + 1))
    ref, hyp = grams(reference), grams(hypothesis)
    return [" ".join(g) for g, c in hyp.items() if g in ref and c > ref[g] for _ in range(c - ref[g])]


def capitals(reference: list[str], hypothesis: list[str]) -> list[str]:
    ref_n, hyp_n = [norm(w) for w in reference], [norm(w) for w in hypothesis]
    found = []
    matcher = difflib.SequenceMatcher(a=ref_n, b=hyp_n, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            r, h = reference[block.a + k], hypothesis[block.b + k]
            j = block.b + k
            starts = j == 0 or hypothesis[j - 1].rstrip("\"')").endswith((".", "!", "?"))
            r_word, h_word = r.strip("\"'(),.!?;:"), h.strip("\"'(),.!?;:")
            if not starts and h_word[:1].isupper() and r_word[:1].islower():
                found.append(h_word)
    return found


def report(name: str, cases: list[dict], rows: list[dict], verbose: bool) -> None:
    totals = Counter()
    cells = []
    for case, row in zip(cases, rows, strict=True):
        ref, hyp = tokens(case["reference"]), tokens(row["text"])
        errors = edits([norm(w) for w in ref], [norm(w) for w in hyp])
        rep, caps = repeats([norm(w) for w in ref], [norm(w) for w in hyp]), capitals(ref, hyp)
        totals.update(edits=errors, words=len(ref), repeats=len(rep), capitals=len(caps),
                      secs=row["secs"], files_repeating=bool(rep))
        cells.append(f"{errors / len(ref):.3f} / {len(rep)} / {len(caps)}")
        if verbose and (rep or caps):
            print(f"    {name} {case['id']}: capitals {caps}; repeated: {rep[:3]}")
    print(f"| {name} | {' | '.join(cells)} | {totals['edits'] / totals['words']:.3f} | "
          f"{totals['files_repeating']} ({totals['repeats']}) | {totals['capitals']} | "
          f"{totals['secs']:.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--half", default="both", choices=["tuning", "validation", "both"])
    parser.add_argument("--fw-python")
    parser.add_argument("--binary", default=str(ROOT / "target/release/ctxscribe"))
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    for half in ["tuning", "validation"] if args.half == "both" else [args.half]:
        folder = ROOT / "target/longdict" / half
        cases = [json.loads(l) for l in open(folder / "cases.jsonl", encoding="utf-8")]
        paths = [str(folder / "audio" / f"{c['id']}.wav") for c in cases]
        print(f"\n{half}: per file WER / repeated 6-grams / capitals mid-sentence")
        print(f"| engine | {' | '.join(c['id'] for c in cases)} | WER | files repeating "
              f"(6-grams) | capitals | secs |")
        print("|---" * (len(cases) + 6) + "|")
        report("ctxscribe", cases, run_ctxscribe(args.binary, paths), args.v)
        if args.fw_python:
            report("faster-whisper", cases, run_fw(args.fw_python, paths), args.v)


if __name__ == "__main__":
    main()
