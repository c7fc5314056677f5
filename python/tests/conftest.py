"""Shared fixtures: the installed package, the real models and real audio clips.

The suite runs against the INSTALLED package (python/run-tests.sh: a fresh venv, the
package built and installed from the repository root with ``pip install .``), never
against python/ctxscribe/ in the source tree. Models come from ``make setup``
(``models/``, or ``$CTXSCRIBE_TEST_MODELS``), audio from ``../shared/eval/real``
(``$CTXSCRIBE_SHARED``) and ``target/fixtures/real`` (``scripts/prepare-eval.sh``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ctxscribe

from support import REPO, THREADS

MODELS = Path(os.environ.get("CTXSCRIBE_TEST_MODELS", REPO / "models"))
SHARED = Path(os.environ.get("CTXSCRIBE_SHARED", REPO.parent / "shared"))
SHARED_REAL = SHARED / "eval" / "real"
PREPARED_REAL = REPO / "target" / "fixtures" / "real"


def _require(path: Path, hint: str) -> Path:
    if not path.is_file():
        pytest.fail(f"{path} is missing: {hint}", pytrace=False)
    return path


@pytest.fixture(scope="session")
def base_model() -> Path:
    return _require(MODELS / "ggml-base.bin", "run `make setup`")


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    return _require(MODELS / "ggml-tiny.en.bin", "run `make setup`")


@pytest.fixture(scope="session")
def base(base_model: Path) -> ctxscribe.ContextTranscriber:
    """The multilingual default model (f16 base), loaded once for the session."""
    return ctxscribe.ContextTranscriber(base_model, threads=THREADS)


@pytest.fixture(scope="session")
def tiny(tiny_model: Path) -> ctxscribe.ContextTranscriber:
    """The English-only tiny model: quick, for most tests."""
    return ctxscribe.ContextTranscriber(tiny_model, threads=THREADS)


@pytest.fixture(scope="session")
def jfk_wav() -> Path:
    """11 s of JFK, 16-bit wav (converted from the shared flac by prepare-eval.sh)."""
    return _require(
        PREPARED_REAL / "en_whisper_jfk.wav",
        "run `bash scripts/prepare-eval.sh target/fixtures/real`",
    )


@pytest.fixture(scope="session")
def jfk_bytes(jfk_wav: Path) -> bytes:
    return jfk_wav.read_bytes()


@pytest.fixture(scope="session")
def jfk_flac() -> Path:
    """The original JFK clip: flac is not a supported container."""
    return _require(SHARED_REAL / "en_whisper_jfk.flac", "set CTXSCRIBE_SHARED")


@pytest.fixture(scope="session")
def german_wav() -> Path:
    """5 s of German speech."""
    return _require(SHARED_REAL / "de_picovoice.wav", "set CTXSCRIBE_SHARED")


@pytest.fixture(scope="session")
def short_wav() -> Path:
    """1.8 s of English speech: "how old is the Brooklyn Bridge"."""
    return _require(SHARED_REAL / "en_google_brooklyn_bridge.wav", "set CTXSCRIBE_SHARED")
