#!/usr/bin/env python3
"""faster-whisper as a persistent subprocess for benches/speed/fw.rs (model loaded once).

Usage: fw_driver.py CT2_MODEL_DIR THREADS [COMPUTE_TYPE (default int8)]
Protocol on stdin/stdout, one request at a time:
  request:  one JSON line {"n": SAMPLES, "prompt": str|null, "language": str|null,
            "beam": N (default 1)},
            then SAMPLES little-endian f32 (16 kHz mono) on stdin;
            or {"cmd": "rss"} for this process's peak RSS.
  response: one JSON line {"text", "language", "secs"} (secs: the transcribe call alone,
            generator consumed) or {"peak_rss_mb"}.
Settings: int8 weights (or COMPUTE_TYPE), greedy (beam_size=1) unless the request asks for beams, otherwise faster-whisper's defaults (language
detection when none is given, temperature fallback, conditioning on previous text).
"""
import json
import resource
import sys
import time

import numpy as np
from faster_whisper import WhisperModel


def main() -> None:
    model_dir, threads = sys.argv[1], int(sys.argv[2])
    compute_type = sys.argv[3] if len(sys.argv) > 3 else "int8"
    model = WhisperModel(
        model_dir,
        device="cpu",
        compute_type=compute_type,
        cpu_threads=threads,
        num_workers=1,
        local_files_only=True,
    )
    stdin, stdout = sys.stdin.buffer, sys.stdout
    stdout.write(json.dumps({"ready": True}) + "\n")
    stdout.flush()
    while True:
        line = stdin.readline()
        if not line:
            return
        request = json.loads(line)
        if request.get("cmd") == "rss":
            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            stdout.write(json.dumps({"peak_rss_mb": peak_kb / 1024.0}) + "\n")
            stdout.flush()
            continue
        n = int(request["n"])
        raw = stdin.read(4 * n)
        audio = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        started = time.perf_counter()
        segments, info = model.transcribe(
            audio,
            beam_size=int(request.get("beam") or 1),
            best_of=1,
            language=request.get("language"),
            initial_prompt=request.get("prompt") or None,
        )
        text = " ".join(segment.text.strip() for segment in segments)
        secs = time.perf_counter() - started
        stdout.write(
            json.dumps({"text": text, "language": info.language, "secs": secs}) + "\n"
        )
        stdout.flush()


if __name__ == "__main__":
    main()
