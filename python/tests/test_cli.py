"""The ``ctxscribe`` console script that ``pip install .`` installs: the Rust CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ctxscribe

from support import THREADS


def _ctxscribe(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "ctxscribe"
    env = dict(os.environ, CTXSCRIBE_THREADS=str(THREADS))
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=env)


def test_console_script_prints_the_library_transcript(
    tiny: ctxscribe.ContextTranscriber, tiny_model: Path, jfk_wav: Path
) -> None:
    done = _ctxscribe("transcribe", "--json", "--model", str(tiny_model), str(jfk_wav))
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["text"] == tiny.transcribe(jfk_wav).text
    assert [s["text"] for s in line["segments"]] == [
        s.text for s in tiny.transcribe(jfk_wav).segments
    ]


def test_console_script_errors_and_exit_statuses(tiny_model: Path, tmp_path: Path) -> None:
    done = _ctxscribe("transcribe", "--model", str(tiny_model), str(tmp_path / "missing.wav"))
    assert done.returncode == 1
    assert "invalid_request" in done.stderr and "missing.wav" in done.stderr
    done = _ctxscribe("transcribe", "--model", str(tmp_path / "none.bin"), "a.wav")
    assert done.returncode == 3
    assert "ctxscribe models fetch" in done.stderr
    assert _ctxscribe("--version").stdout.startswith("ctxscribe ")
    assert _ctxscribe("no-such-command").returncode == 2
