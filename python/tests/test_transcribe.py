"""Transcribing real audio with the real engine: inputs, context arguments, results."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import pytest

import ctxscribe

from support import JFK_TEXT, REPO, THREADS, assert_segments_cover, normalized


def test_jfk_exact_with_the_base_model(
    base: ctxscribe.ContextTranscriber, jfk_wav: Path
) -> None:
    transcript = base.transcribe(jfk_wav)
    # Word-exact: with the encoder trimmed to the clip, Whisper may drop the first comma.
    assert normalized(transcript.text) == normalized(JFK_TEXT)
    assert transcript.text.startswith("And so my fellow Americans")
    assert transcript.language == "en"
    assert str(transcript) == transcript.text
    assert transcript.audio_secs == pytest.approx(11.0, abs=0.05)
    assert 0 < transcript.decode_secs < transcript.total_secs
    assert 0 < transcript.engine_secs < transcript.total_secs
    assert repr(transcript) == (
        f"Transcript(text={transcript.text!r}, language='en', audio_secs=11.00)"
    )
    assert_segments_cover(transcript)
    first = transcript.segments[0]
    assert isinstance(first, ctxscribe.Segment)
    assert str(first) == first.text
    assert repr(first).startswith(f"Segment(start={first.start:.2f}, ")


def test_a_truncated_file_is_transcribed_with_a_warning(
    tiny: ctxscribe.ContextTranscriber, jfk_bytes: bytes
) -> None:
    whole = tiny.transcribe(jfk_bytes)
    assert whole.warnings == []
    cut = tiny.transcribe(jfk_bytes[: len(jfk_bytes) // 2])
    assert cut.text and len(cut.text) < len(whole.text)
    assert cut.audio_secs == pytest.approx(whole.audio_secs / 2, abs=0.1)
    [warning] = cut.warnings
    assert isinstance(warning, ctxscribe.TranscriptWarning)
    assert warning.code == "audio_truncated"
    assert "WAV data chunk" in warning.message
    assert str(warning) == f"audio_truncated: {warning.message}"
    assert repr(warning).startswith("TranscriptWarning(code='audio_truncated', message=")


def test_engine_threads_poll_briefly_before_they_sleep() -> None:
    # libgomp reads GOMP_SPINCOUNT when the native module loads it: importing the package
    # sets the engine's 1000 unless the user set a value.
    script = "import os, ctxscribe; print(os.environ['GOMP_SPINCOUNT'])"
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    for preset, expected in [(None, "1000"), ("7", "7")]:
        if preset is not None:
            env["GOMP_SPINCOUNT"] = preset
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == expected


def test_default_model_is_the_multilingual_base() -> None:
    # No model argument: $CTXSCRIBE_MODEL, else ggml-base.bin from the model directories
    # ($CTXSCRIBE_MODEL_DIR: run-tests.sh points it at the checkout's models/).
    transcriber = ctxscribe.ContextTranscriber(threads=THREADS)
    assert transcriber.is_multilingual
    # A wheel built without a GPU backend runs on the CPU, and says so.
    backend = transcriber.backend
    assert backend is not None and backend["name"] == "CPU" and backend["fallback"] is None
    assert backend["description"]
    assert repr(transcriber).startswith("ContextTranscriber(multilingual=True")


def test_english_only_model(tiny: ctxscribe.ContextTranscriber) -> None:
    assert not tiny.is_multilingual


def _as(kind: str, path: Path) -> Any:
    """The file at `path` as the audio argument of one of the accepted kinds."""
    if kind == "bytes":
        return path.read_bytes()
    if kind == "bytearray":
        return bytearray(path.read_bytes())
    if kind == "memoryview":
        return memoryview(path.read_bytes())
    if kind == "str path":
        return str(path)
    if kind == "pathlib.Path":
        return path
    if kind == "open file":
        return path.open("rb")
    if kind == "BytesIO":
        return io.BytesIO(path.read_bytes())
    raise AssertionError(kind)


KINDS = ["bytes", "bytearray", "memoryview", "str path", "pathlib.Path", "open file", "BytesIO"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_audio_kind_reaches_the_decoder(
    tiny: ctxscribe.ContextTranscriber, jfk_flac: Path, kind: str
) -> None:
    # The flac's content arrives intact (and is recognized) whatever the argument's kind.
    audio = _as(kind, jfk_flac)
    try:
        with pytest.raises(ctxscribe.UnsupportedAudioTypeError, match="flac"):
            tiny.transcribe(audio)
    finally:
        if isinstance(audio, io.IOBase):
            audio.close()


def test_a_path_that_is_not_utf8(
    tiny: ctxscribe.ContextTranscriber, jfk_flac: Path, tmp_path: Path
) -> None:
    # A file name with a byte that is not UTF-8, as os.listdir() returns it.
    path = tmp_path / os.fsdecode(b"clip-\xff.flac")
    path.write_bytes(jfk_flac.read_bytes())
    with pytest.raises(ctxscribe.UnsupportedAudioTypeError, match="flac"):
        tiny.transcribe(os.fspath(path))


@pytest.mark.parametrize("kind", ["memoryview", "str path", "open file"])
def test_audio_as_bytes_path_or_file(
    tiny: ctxscribe.ContextTranscriber, short_wav: Path, kind: str
) -> None:
    audio = _as(kind, short_wav)
    try:
        transcript = tiny.transcribe(audio)
    finally:
        if isinstance(audio, io.IOBase):
            audio.close()
    assert normalized(transcript.text) == "how old is the brooklyn bridge"
    assert transcript.language == "en"


def test_context_arguments_with_real_audio(
    tiny: ctxscribe.ContextTranscriber, short_wav: Path
) -> None:
    transcript = tiny.transcribe(
        short_wav,
        messages=[
            {"role": "system", "content": "Questions about New York City landmarks."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Bridges of Manhattan"}],
                "name": "ignored extra field",
            },
        ],
        languages=["en"],
        dictionary=["Brooklyn Bridge", "Manhattan"],
    )
    # The context may change the wording (it conditions the decoder), not the content.
    assert "brooklyn bridge" in normalized(transcript.text)
    assert_segments_cover(transcript)


@pytest.mark.parametrize(
    ("messages", "languages", "dictionary"),
    [
        ("", "", ""),
        ('[{"role": "user", "content": "New York"}]', "en", "Brooklyn, Manhattan"),
        (({"role": "user", "content": "New York"},), ("en",), {"Brooklyn"}),
        ([{"role": "user", "content": "New York"}], "english", '["Brooklyn", "Manhattan"]'),
    ],
    ids=["empty-strings", "strings", "tuples-and-set", "json-dictionary"],
)
def test_every_accepted_form_of_the_context_fields(
    tiny: ctxscribe.ContextTranscriber,
    short_wav: Path,
    messages: Any,
    languages: Any,
    dictionary: Any,
) -> None:
    transcript = tiny.transcribe(
        short_wav, messages=messages, languages=languages, dictionary=dictionary
    )
    assert "brooklyn bridge" in normalized(transcript.text)


@pytest.mark.parametrize("languages", ["de", ["de", "en"]], ids=["str", "list"])
def test_languages_with_the_multilingual_model(
    base: ctxscribe.ContextTranscriber, german_wav: Path, languages: Any
) -> None:
    transcript = base.transcribe(german_wav, languages=languages)
    assert transcript.language == "de"
    assert "portal" in normalized(transcript.text)


def test_a_language_set_constrains_detection(
    base: ctxscribe.ContextTranscriber, german_wav: Path
) -> None:
    transcript = base.transcribe(german_wav, languages="en,fr")
    assert transcript.language in {"en", "fr"}


def test_silence_is_an_empty_transcript(
    tiny: ctxscribe.ContextTranscriber, tmp_path: Path
) -> None:
    path = tmp_path / "silence.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\0\0" * 16000 * 2)
    transcript = tiny.transcribe(path)
    assert transcript.text == ""
    assert transcript.language is None
    assert transcript.audio_secs == pytest.approx(2.0)
    assert transcript.segments == []


def test_options(tiny_model: Path, short_wav: Path) -> None:
    vad_model = tiny_model.parent / "silero-v6.2.0-ggml.bin"
    options: dict[str, Any]
    for options in (
        {"vad": False, "beam_size": 2, "threads": 1},
        {"vad": vad_model, "timeout": 60.0, "max_file_bytes": 10**7, "max_duration_secs": 30.0},
    ):
        transcriber = ctxscribe.ContextTranscriber(os.fspath(tiny_model), **options)
        assert "brooklyn bridge" in normalized(transcriber.transcribe(short_wav).text)


@pytest.fixture(scope="session")
def chumley_wav() -> Path:
    """espeak-ng saying "Lord Chumley arrives at noon" (tests/fixtures/make-sounds-like.sh)."""
    out = REPO / "target" / "fixtures" / "sounds-like"
    subprocess.run(
        ["bash", str(REPO / "tests" / "fixtures" / "make-sounds-like.sh"), str(out)], check=True
    )
    return out / "cholmondeley_en_us.wav"


@pytest.mark.parametrize(
    "sounds_like",
    [{"Cholmondeley": ["chumley"]}, {"Cholmondeley": ("chumley",)}, '{"Cholmondeley": ["chumley"]}'],
    ids=["dict-of-lists", "dict-of-tuples", "json"],
)
def test_sounds_like_writes_a_name_said_unlike_its_spelling(
    base: ctxscribe.ContextTranscriber, chumley_wav: Path, sounds_like: Any
) -> None:
    plain = base.transcribe(chumley_wav, dictionary=["Cholmondeley"]).text
    assert "Cholmondeley" not in plain
    text = base.transcribe(chumley_wav, dictionary=["Cholmondeley"], sounds_like=sounds_like).text
    assert "Lord Cholmondeley arrives" in text, text
