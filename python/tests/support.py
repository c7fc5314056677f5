"""Constants and helpers shared by the tests (on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import ctxscribe

REPO = Path(__file__).resolve().parents[2]

JFK_TEXT = (
    "And so my fellow Americans, ask not what your country can do for you, "
    "ask what you can do for your country."
)

# Engine threads per call: the machine has 2 cores.
THREADS = 2


def normalized(text: str) -> str:
    """Lowercase words without punctuation, for comparisons that ignore formatting."""
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


def assert_segments_cover(transcript: ctxscribe.Transcript) -> None:
    """Segments in order, within the audio, their texts together the transcript's."""
    segments = transcript.segments
    assert bool(segments) == bool(transcript.text)
    previous_end = 0.0
    for segment in segments:
        assert previous_end <= segment.start <= segment.end <= transcript.audio_secs + 0.01
        previous_end = segment.end
    joined = " ".join(segment.text for segment in segments)
    assert joined == " ".join(transcript.text.split())


class Session:
    """Commands run in a new user's shell: HOME empty, no ``CTXSCRIBE_*`` or ``XDG_*``
    variable, cwd ``work``; PATH starts with the venv's bin (``venv``, default
    ``work/.venv``: where a quickstart's ``python3 -m venv .venv`` puts it) and
    ``extra_path``. ``threads``: ``CTXSCRIBE_THREADS`` to set, if any."""

    def __init__(
        self,
        root: Path,
        venv: Path | None = None,
        extra_path: list[Path] | None = None,
        threads: int | None = 2,
    ) -> None:
        self.home = root / "home"
        self.work = root / "work"
        self.venv = venv or self.work / ".venv"
        for path in (self.home, self.work):
            path.mkdir()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CTXSCRIBE_", "XDG_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH")
        }
        search = [str(p) for p in (self.venv / "bin", *(extra_path or []))]
        env.update(
            HOME=str(self.home),
            PATH=os.pathsep.join([*search, os.environ.get("PATH", "")]),
        )
        if threads is not None:
            env["CTXSCRIBE_THREADS"] = str(threads)
        cache = _real_pip_cache()
        if cache:
            env["PIP_CACHE_DIR"] = cache
        self.env = env

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        started = time.perf_counter()
        done = subprocess.run(
            list(args), cwd=self.work, env=self.env, capture_output=True, text=True
        )
        shown = " ".join(a if "\n" not in a else "'...'" for a in args)
        print(f"$ {shown}   # exit {done.returncode}, {time.perf_counter() - started:.1f} s")
        for line in (done.stdout + done.stderr).splitlines():
            print(f"  {line}")
        if check:
            assert done.returncode == 0, f"{shown}\n{done.stdout}\n{done.stderr}"
        return done


def _real_pip_cache() -> str | None:
    """This machine's pip cache (the new user's HOME is empty, the download need not be)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True
    )
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None
