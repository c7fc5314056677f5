"""The installed package: what it exports, its exception hierarchy, its type information."""

from __future__ import annotations

import pickle
import sys
from importlib import metadata
from pathlib import Path

import pytest

import ctxscribe
from ctxscribe import _native

from support import REPO

CODES = {
    ctxscribe.InvalidRequestError: "invalid_request",
    ctxscribe.UnsupportedAudioTypeError: "unsupported_audio_type",
    ctxscribe.AudioDecodeError: "audio_decode_failed",
    ctxscribe.FileTooLargeError: "file_too_large",
    ctxscribe.AudioTooLongError: "audio_too_long",
    ctxscribe.ModelUnavailableError: "model_unavailable",
    ctxscribe.TranscriptionFailedError: "transcription_failed",
    ctxscribe.CancelledError: "cancelled",
    ctxscribe.DeadlineExceededError: "deadline_exceeded",
}
# The codes about the caller's input (HTTP 4xx) are also ValueErrors.
VALUE_ERRORS = {
    ctxscribe.InvalidRequestError,
    ctxscribe.UnsupportedAudioTypeError,
    ctxscribe.AudioDecodeError,
    ctxscribe.FileTooLargeError,
    ctxscribe.AudioTooLongError,
}


def test_the_installed_package_is_under_test() -> None:
    package_dir = Path(ctxscribe.__file__).resolve().parent
    assert package_dir != (REPO / "python" / "ctxscribe").resolve(), (
        "tests must import the installed package, not the source tree"
    )
    assert "site-packages" in package_dir.parts
    assert Path(_native.__file__).parent == package_dir
    # One abi3 extension for every CPython >= 3.9.
    assert Path(_native.__file__).name.endswith(".abi3.so")


def test_version_matches_the_distribution() -> None:
    assert ctxscribe.__version__ == metadata.version("ctxscribe")


def test_type_information_is_installed() -> None:
    package_dir = Path(ctxscribe.__file__).parent
    assert (package_dir / "py.typed").is_file()
    assert (package_dir / "_native.pyi").is_file()


def test_public_names() -> None:
    # The compiled module's `__all__` (its exceptions made from the Rust code list, one
    # class per `ErrorCode`) is the package's, but for the command line's entry point.
    # python/src/errors.rs tests the literal lists of __init__.py and _native.pyi too.
    assert sorted(ctxscribe.__all__) == sorted(set(_native.__all__) - {"_cli_main"})
    assert {"ContextTranscriber", "Segment", "Transcript", "__version__"} <= set(ctxscribe.__all__)
    for name in ctxscribe.__all__:
        assert getattr(ctxscribe, name) is getattr(_native, name)
    assert ctxscribe.ContextTranscriber.__module__ == "ctxscribe"
    assert ctxscribe.TranscriptionError.__module__ == "ctxscribe"


@pytest.mark.parametrize("cls", list(CODES), ids=lambda cls: cls.__name__)
def test_one_subclass_per_code(cls: type[ctxscribe.TranscriptionError]) -> None:
    assert issubclass(cls, ctxscribe.TranscriptionError)
    assert issubclass(cls, Exception)
    assert cls.code == CODES[cls]
    assert cls.param is None
    assert issubclass(cls, ValueError) == (cls in VALUE_ERRORS)
    assert cls.__doc__


def test_every_exception_class_has_its_code() -> None:
    classes = {
        value
        for value in vars(_native).values()
        if isinstance(value, type) and issubclass(value, ctxscribe.TranscriptionError)
    }
    assert classes == set(CODES) | {ctxscribe.TranscriptionError}
    exported = {name for name in ctxscribe.__all__ if name.endswith("Error")}
    assert {cls.__name__ for cls in classes} == exported


def test_codes_are_distinct() -> None:
    assert len(set(CODES.values())) == len(CODES)
    assert not issubclass(ctxscribe.TranscriptionError, ValueError)
    # A stopped run is a failed transcription to code that predates the two classes.
    for stopped in (ctxscribe.CancelledError, ctxscribe.DeadlineExceededError):
        assert issubclass(stopped, ctxscribe.TranscriptionFailedError)


def test_errors_survive_pickling(tiny: ctxscribe.ContextTranscriber) -> None:
    # Errors cross process boundaries (multiprocessing, concurrent.futures) by pickle.
    with pytest.raises(ctxscribe.InvalidRequestError) as caught:
        tiny.transcribe(b"", dictionary=["ok", "bad\x07term"])
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is ctxscribe.InvalidRequestError
    assert (copy.code, copy.param, str(copy)) == ("invalid_request", "dictionary", str(caught.value))


def test_transcriber_is_final() -> None:
    with pytest.raises(TypeError):
        type("Sub", (ctxscribe.ContextTranscriber,), {})


def test_transcript_has_no_public_constructor() -> None:
    with pytest.raises(TypeError):
        ctxscribe.Transcript()
    with pytest.raises(TypeError):
        ctxscribe.Segment()


def test_runs_on_a_supported_python() -> None:
    assert sys.version_info >= (3, 9)
