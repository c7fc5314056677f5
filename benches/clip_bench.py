"""What the clip benches (benches/langid, benches/longdict) share: the word edit distance,
ctxscribe's CLI and faster-whisper run over a list of files.

ctxscribe: `transcribe --json --model base` (model loaded once per call).
faster-whisper: models/ct2/base, int8, 2 threads, 5 beams, its defaults otherwise
(language detection, conditioning on the previous text).
Both give one row per file: {"text", "language", "secs"} (secs: that file's transcription).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FW = """
import json, sys, time
from faster_whisper import WhisperModel
model = WhisperModel(sys.argv[1], device="cpu", compute_type="int8", cpu_threads=2)
for path in sys.argv[2:]:
    started = time.perf_counter()
    segments, info = model.transcribe(path, beam_size=5)
    text = " ".join(s.text.strip() for s in segments)
    print(json.dumps({"text": text, "language": info.language,
                      "secs": time.perf_counter() - started}), flush=True)
"""


def edits(reference: list[str], hypothesis: list[str]) -> int:
    """Word edit distance (substitutions, insertions, deletions)."""
    row = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        diagonal, row[0] = row[0], i
        for j, h in enumerate(hypothesis, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (r != h))
    return row[-1]


def run_ctxscribe(binary: str, paths: list[str], languages: str | None = None) -> list[dict]:
    command = [binary, "transcribe", "--json", "--model", "base"]
    if languages:
        command += ["--languages", languages]
    out = subprocess.run([*command, *paths], capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [{"text": r["text"], "language": r.get("language"),
             "secs": r["timings"]["total_secs"]} for r in rows]


def run_fw(python: str, paths: list[str]) -> list[dict]:
    out = subprocess.run([python, "-c", FW, str(ROOT / "models/ct2/base"), *paths],
                         capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]
