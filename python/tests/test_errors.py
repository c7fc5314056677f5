"""Every error: its class, its contract code, its param, its message."""

from __future__ import annotations

import errno
import io
from pathlib import Path
from typing import Any

import pytest

import ctxscribe

from support import THREADS


def check(
    error: ctxscribe.TranscriptionError,
    cls: type[ctxscribe.TranscriptionError],
    code: str,
    param: str | None,
    *fragments: str,
) -> None:
    assert type(error) is cls
    assert error.code == code
    assert error.param == param
    for fragment in fragments:
        assert fragment in str(error)


# --- audio ------------------------------------------------------------------------------


def test_unsupported_audio_type_flac(tiny: ctxscribe.ContextTranscriber, jfk_flac: Path) -> None:
    with pytest.raises(ctxscribe.UnsupportedAudioTypeError) as caught:
        tiny.transcribe(jfk_flac)
    check(caught.value, ctxscribe.UnsupportedAudioTypeError, "unsupported_audio_type", "file", "flac")
    assert isinstance(caught.value, ValueError)


def test_unsupported_audio_type_text(tiny: ctxscribe.ContextTranscriber) -> None:
    with pytest.raises(ctxscribe.UnsupportedAudioTypeError) as caught:
        tiny.transcribe(b"this is a text file, not audio\n" * 10)
    check(caught.value, ctxscribe.UnsupportedAudioTypeError, "unsupported_audio_type", "file")


def test_empty_audio_is_an_unsupported_type(tiny: ctxscribe.ContextTranscriber) -> None:
    with pytest.raises(ctxscribe.UnsupportedAudioTypeError) as caught:
        tiny.transcribe(b"")
    check(caught.value, ctxscribe.UnsupportedAudioTypeError, "unsupported_audio_type", "file", "empty")


def test_audio_decode_failed(tiny: ctxscribe.ContextTranscriber, jfk_bytes: bytes) -> None:
    # A wav header without any sample data.
    with pytest.raises(ctxscribe.AudioDecodeError) as caught:
        tiny.transcribe(jfk_bytes[:44])
    check(caught.value, ctxscribe.AudioDecodeError, "audio_decode_failed", "file")


def test_audio_decode_failed_corrupt(tiny: ctxscribe.ContextTranscriber, jfk_bytes: bytes) -> None:
    # A valid RIFF/WAVE header whose format chunk is garbage.
    corrupt = jfk_bytes[:12] + b"fmt " + b"\xff" * 200
    with pytest.raises(ctxscribe.AudioDecodeError):
        tiny.transcribe(corrupt)


def test_file_too_large(tiny_model: Path, jfk_wav: Path, jfk_bytes: bytes) -> None:
    transcriber = ctxscribe.ContextTranscriber(tiny_model, threads=THREADS, max_file_bytes=1000)
    for audio in (jfk_bytes, jfk_wav, io.BytesIO(jfk_bytes)):
        with pytest.raises(ctxscribe.FileTooLargeError) as caught:
            transcriber.transcribe(audio)
        check(
            caught.value, ctxscribe.FileTooLargeError, "file_too_large", "file",
            f"{len(jfk_bytes)} bytes", "1000 bytes",
        )


def test_audio_too_long(tiny_model: Path, jfk_wav: Path) -> None:
    transcriber = ctxscribe.ContextTranscriber(tiny_model, threads=THREADS, max_duration_secs=5)
    with pytest.raises(ctxscribe.AudioTooLongError) as caught:
        transcriber.transcribe(jfk_wav)
    check(caught.value, ctxscribe.AudioTooLongError, "audio_too_long", "file", "5 s")


def test_deadline_exceeded_on_timeout(tiny_model: Path, jfk_bytes: bytes) -> None:
    transcriber = ctxscribe.ContextTranscriber(tiny_model, threads=THREADS, timeout=0.001)
    with pytest.raises(ctxscribe.TranscriptionFailedError) as caught:
        transcriber.transcribe(jfk_bytes)
    check(caught.value, ctxscribe.DeadlineExceededError, "deadline_exceeded", None)
    assert not isinstance(caught.value, ValueError)


# --- missing files and models -------------------------------------------------------------


def test_missing_audio_path_is_file_not_found(
    tiny: ctxscribe.ContextTranscriber, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere.wav"
    for audio in (missing, str(missing)):
        with pytest.raises(FileNotFoundError) as caught:
            tiny.transcribe(audio)
        assert caught.value.errno == errno.ENOENT
        assert caught.value.filename == str(missing)
        assert not isinstance(caught.value, ctxscribe.TranscriptionError)


def test_directory_path_is_an_os_error(tiny: ctxscribe.ContextTranscriber, tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        tiny.transcribe(tmp_path)


def test_missing_model(tmp_path: Path) -> None:
    with pytest.raises(ctxscribe.ModelUnavailableError) as caught:
        ctxscribe.ContextTranscriber(tmp_path / "ggml-missing.bin")
    check(caught.value, ctxscribe.ModelUnavailableError, "model_unavailable", None, "ggml-missing.bin")
    assert not isinstance(caught.value, ValueError)


def test_unloadable_model(tmp_path: Path) -> None:
    bogus = tmp_path / "ggml-bogus.bin"
    bogus.write_bytes(b"not a model" * 100)
    with pytest.raises(ctxscribe.ModelUnavailableError):
        ctxscribe.ContextTranscriber(bogus)


def test_missing_default_model_names_the_setup_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CTXSCRIBE_MODEL", str(tmp_path / "ggml-base.bin"))
    with pytest.raises(ctxscribe.ModelUnavailableError) as caught:
        ctxscribe.ContextTranscriber()
    assert caught.value.code == "model_unavailable"


def test_missing_vad_model(tiny_model: Path, tmp_path: Path) -> None:
    with pytest.raises(ctxscribe.ModelUnavailableError):
        ctxscribe.ContextTranscriber(tiny_model, vad=tmp_path / "no-vad.bin")


# --- request fields -------------------------------------------------------------------------

INVALID_FIELDS: list[tuple[str, Any, str]] = [
    ("messages", [{"role": "assistant", "content": "hi"}], 'messages[0].role must be "system" or "user"'),
    ("messages", [{"role": 1, "content": "hi"}], "messages[0].role"),
    ("messages", [{"role": "user"}], "messages[0].content is missing"),
    ("messages", [{"role": "user", "content": 42}], "messages[0].content"),
    ("messages", [{"role": "user", "content": [{"type": "image_url"}]}], "messages[0].content[0]"),
    ("messages", [{"role": "user", "content": "a\x00b"}], "NUL"),
    ("messages", [{"role": "user", "content": "x" * 20_000}], "the limit is 16384 bytes"),
    ("messages", [{"role": "user", "content": "hi"}] * 101, "too many messages"),
    ("messages", {"role": "user", "content": "hi"}, "must be a JSON array"),
    ("messages", [object()], "not JSON serializable"),
    ("messages", 42, "messages"),
    ("messages", "[not json", "messages"),
    ("languages", "xx", "unknown language"),
    ("languages", "en-US", "did you mean"),
    ("languages", ["de", 1], "languages[1] must be a str, got int"),
    ("languages", [], "languages"),
    ("languages", ["auto", "de"], "auto"),
    ("languages", 42, "languages must be a str or a list of str language codes, got int"),
    ("languages", b"de", "got bytes"),
    ("languages", "\ud800", "not valid Unicode"),
    ("dictionary", 42, "dictionary must be a str or a list of str terms, got int"),
    ("dictionary", ["ok", 3], "dictionary[1] must be a str, got int"),
    ("dictionary", ["bad\nterm"], "dictionary[0]"),
    ("dictionary", ["x" * 101], "dictionary[0]"),
    ("dictionary", [f"term{i}" for i in range(1001)], "1000"),
    ("dictionary", '{"not": "a list"}', "dictionary"),
    ("dictionary", ["ok", "\udc80"], "dictionary[1] is not valid Unicode"),
    ("sounds_like", 42, "sounds_like must be a mapping of dictionary terms"),
    ("sounds_like", {"Nguyen": "win"}, 'sounds_like["Nguyen"] must be a list of str'),
    ("sounds_like", {"Nguyen": ["win", 3]}, 'sounds_like["Nguyen"][1] must be a str, got int'),
    ("sounds_like", {1: ["win"]}, "sounds_like keys must be str"),
    ("sounds_like", {"Nguyen": ["w1n"]}, "letters, spaces, apostrophes and hyphens"),
    ("sounds_like", {"Nguyen": [f"form {chr(97 + i)}" for i in range(11)]}, "10"),
    ("sounds_like", {"Nguyen": ["win"]}, "not a term of the dictionary"),
    ("sounds_like", '["win"]', "must be a JSON object"),
]


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    INVALID_FIELDS,
    ids=[f"{field}-{index}" for index, (field, _, _) in enumerate(INVALID_FIELDS)],
)
def test_invalid_request_fields(
    tiny: ctxscribe.ContextTranscriber, jfk_bytes: bytes, field: str, value: Any, fragment: str
) -> None:
    with pytest.raises(ctxscribe.InvalidRequestError) as caught:
        tiny.transcribe(jfk_bytes, **{field: value})
    check(caught.value, ctxscribe.InvalidRequestError, "invalid_request", field, fragment)
    assert isinstance(caught.value, ValueError)


def test_fields_are_validated_before_the_audio_is_read(
    tiny: ctxscribe.ContextTranscriber, tmp_path: Path
) -> None:
    with pytest.raises(ctxscribe.InvalidRequestError):
        tiny.transcribe(tmp_path / "missing.wav", dictionary=42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("audio", "fragment"),
    [
        (42, "audio must be bytes, a path (str or os.PathLike) or a binary file object, got int"),
        (None, "got NoneType"),
        (io.StringIO("text"), "read() returned str"),
    ],
    ids=["int", "None", "text-file"],
)
def test_invalid_audio_argument(
    tiny: ctxscribe.ContextTranscriber, audio: Any, fragment: str
) -> None:
    with pytest.raises(ctxscribe.InvalidRequestError) as caught:
        tiny.transcribe(audio)
    check(caught.value, ctxscribe.InvalidRequestError, "invalid_request", "file", fragment)


def test_wrong_types_are_also_rejected_by_the_type_stubs(
    tiny: ctxscribe.ContextTranscriber, jfk_bytes: bytes
) -> None:
    # The `type: ignore`s are checked too: mypy --strict warns about unused ones.
    with pytest.raises(ctxscribe.InvalidRequestError):
        tiny.transcribe(42)  # type: ignore[arg-type]
    with pytest.raises(ctxscribe.InvalidRequestError):
        tiny.transcribe(jfk_bytes, languages=42)  # type: ignore[arg-type]
    with pytest.raises(ctxscribe.InvalidRequestError):
        tiny.transcribe(jfk_bytes, messages=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        tiny.transcribe(jfk_bytes, None)  # type: ignore[call-arg]  # keyword-only


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("threads", 0),
        ("threads", -1),
        ("beam_size", 0),
        ("beam_size", 1000),
        ("timeout", 0.0),
        ("timeout", -1.0),
        ("timeout", float("nan")),
        ("max_file_bytes", 0),
        ("max_duration_secs", float("inf")),
    ],
)
def test_invalid_options(tiny_model: Path, option: str, value: float) -> None:
    options: dict[str, Any] = {option: value}
    with pytest.raises(ctxscribe.InvalidRequestError) as caught:
        ctxscribe.ContextTranscriber(tiny_model, **options)
    check(caught.value, ctxscribe.InvalidRequestError, "invalid_request", option, option)


def test_wrongly_typed_options_are_type_errors(tiny_model: Path) -> None:
    with pytest.raises(TypeError):
        ctxscribe.ContextTranscriber(tiny_model, threads="2")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ctxscribe.ContextTranscriber(42)  # type: ignore[arg-type]
