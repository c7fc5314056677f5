"""Ray Data batch transcription: ``examples/python/ray_batch.py`` on a local Ray instance.

The example runs as a user runs it (a subprocess of this venv's Python, with Ray from
``requirements-test.txt``): docs/deploy.md's command over ``../shared/eval/real`` (64
files), then a Parquet of paths with per-file context and bad files. Every row must match a
direct call in this process: the same text and language, or the same error code.
Prints files/s of Ray Data (2 actors x 1 thread) against a plain loop. About 2-3 min
on 2 cores.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Any

import pytest

import ctxscribe

from conftest import PREPARED_REAL
from support import REPO

EXAMPLE = REPO / "examples" / "python" / "ray_batch.py"
# A limit under the 40 s bad input and over every real clip (the longest is 20 s).
MAX_SECS = 30.0


def run_example(args: list[str], out: Path) -> tuple[list[dict[str, Any]], str]:
    """The example's rows (by path) and its stderr; it must exit 0."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args, "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return rows, done.stderr


def direct(
    transcriber: ctxscribe.ContextTranscriber,
    path: str,
    messages: str | None = None,
    languages: str | None = None,
    dictionary: str | None = None,
) -> dict[str, Any]:
    """What a direct call gives: text and language, or the error code."""
    try:
        transcript = transcriber.transcribe(
            path, messages=messages, languages=languages, dictionary=dictionary
        )
    except ctxscribe.TranscriptionError as e:
        return {"error_code": e.code}
    except OSError:
        return {"error_code": "invalid_request"}
    return {"text": transcript.text, "language": transcript.language, "error_code": None}


def bad_inputs(folder: Path) -> dict[str, str]:
    """Files that must become error rows, with their codes."""
    not_audio = folder / "not_audio.wav"
    not_audio.write_text("this is not audio\n", encoding="utf-8")
    too_long = folder / "too_long.wav"
    with wave.open(str(too_long), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x00\x01" * int(16000 * (MAX_SECS + 10)))
    return {
        str(not_audio): "unsupported_audio_type",
        str(too_long): "audio_too_long",
        str(folder / "missing.wav"): "invalid_request",
    }


def readme_command() -> list[str]:
    """docs/deploy.md's Ray command ("Batch with Ray Data"), as an argument list for this
    venv's Python."""
    readme = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    (line,) = [
        line.strip()
        for line in readme.splitlines()
        if line.strip().startswith("python examples/python/ray_batch.py ")
    ]
    args = shlex.split(line)
    shared = os.environ.get("CTXSCRIBE_SHARED")
    return [sys.executable] + [
        a.replace("../shared", shared, 1) if shared and a.startswith("../shared") else a
        for a in args[1:]
    ]


def test_readme_command_equals_direct_calls(
    base_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/deploy.md's command over ../shared/eval/real: every wav transcribed as by a
    direct call, every other file (flac, aiff, the manifest) an ``unsupported_audio_type``
    row."""
    command = readme_command()
    out = REPO / command[command.index("--out") + 1]
    out.unlink(missing_ok=True)
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    folder = REPO / command[2]
    paths = sorted(str(p) for p in folder.iterdir() if p.is_file())
    assert [str(REPO / r["path"]) for r in rows] == paths, "one row per file, in order"
    assert sum(r["error_code"] is None for r in rows) >= 55, rows

    transcriber = ctxscribe.ContextTranscriber(base_model, threads=1)
    started = time.perf_counter()
    expected = [direct(transcriber, p) for p in paths]
    loop_secs = time.perf_counter() - started
    for row, want in zip(rows, expected, strict=True):
        assert row["error_code"] == want["error_code"], row
        if want["error_code"] is None:
            assert (row["text"], row["language"]) == (want["text"], want["language"]), row
            assert row["audio_secs"] > 0 and row["total_secs"] > 0, row
        else:
            assert row["text"] is None and row["error"], row
    ray_line = next(line for line in done.stderr.splitlines() if " files/s " in line)
    with capsys.disabled():
        print(
            f"\n{ray_line}\nplain loop in this process (model loaded before, 1 thread): "
            f"{len(paths) / loop_secs:.2f} files/s ({loop_secs:.1f} s)"
        )


def test_parquet_context_and_bad_files(base_model: Path, tmp_path: Path) -> None:
    """A Parquet of paths with per-file context; bad files and bad context are rows with
    their contract codes, and the job finishes."""
    pa = importlib.import_module("pyarrow")
    parquet = importlib.import_module("pyarrow.parquet")
    rows: list[dict[str, str | None]] = [
        {
            "path": str(PREPARED_REAL / "en_google_brooklyn_bridge.wav"),
            "messages": json.dumps([{"role": "user", "content": "Bridges of New York"}]),
            "languages": "en",
            "dictionary": "Brooklyn Bridge",
        },
        {
            "path": str(PREPARED_REAL / "de_picovoice.wav"),
            "messages": None,
            "languages": "de,en",
            "dictionary": None,
        },
        {
            "path": str(PREPARED_REAL / "en_whisper_jfk.wav"),
            "messages": None,
            "languages": None,
            "dictionary": '["not", "a", 1]',
        },
    ]
    codes = bad_inputs(tmp_path)
    rows += [
        {"path": path, "messages": None, "languages": None, "dictionary": None}
        for path in sorted(codes)
    ]
    table = tmp_path / "paths.parquet"
    parquet.write_table(pa.Table.from_pylist(rows), str(table))
    out, _ = run_example(
        [str(table), "--model", str(base_model), "--threads", "1", "--actors", "2"]
        + ["--batch-size", "2", "--max-duration-secs", str(MAX_SECS)],
        tmp_path / "ray.jsonl",
    )
    transcriber = ctxscribe.ContextTranscriber(base_model, threads=1, max_duration_secs=MAX_SECS)
    for row, given in zip(out, rows, strict=True):
        want = direct(
            transcriber,
            str(given["path"]),
            messages=given["messages"],
            languages=given["languages"],
            dictionary=given["dictionary"],
        )
        assert row["path"] == given["path"]
        assert row["error_code"] == want["error_code"], row
        assert row.get("text") == want.get("text"), row
    assert out[1]["language"] == "de", out[1]
    assert out[2]["error_code"] == "invalid_request", out[2]
    assert {r["path"]: r["error_code"] for r in out[3:]} == codes
