"""numpy arrays as audio: dtypes, shapes, rates, layouts and bad arrays, on real audio."""

from __future__ import annotations

import time
import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import ctxscribe

from pcm import float32_16k_mono, write_wav_16k
from support import assert_segments_cover, normalized


def _int16_frames(path: Path) -> tuple[npt.NDArray[np.int16], int]:
    """A 16-bit wav's samples as (frames, channels) and its rate."""
    with wave.open(str(path), "rb") as wav:
        assert wav.getsampwidth() == 2
        frames = wav.readframes(wav.getnframes())
        channels, rate = wav.getnchannels(), wav.getframerate()
    return np.frombuffer(frames, dtype="<i2").reshape(-1, channels), rate


def _is_jfk(text: str) -> bool:
    words = normalized(text)
    return "my fellow americans" in words and "ask not what your country can do for you" in words


def test_int16_stereo_at_44k(tiny: ctxscribe.ContextTranscriber, jfk_wav: Path) -> None:
    samples, rate = _int16_frames(jfk_wav)
    assert samples.shape[1] == 2 and rate == 44100
    transcript = tiny.transcribe(samples, sample_rate=rate)
    assert _is_jfk(transcript.text), transcript.text
    assert transcript.audio_secs == pytest.approx(11.0, abs=0.05)
    assert_segments_cover(transcript)
    # One channel, as a strided (non-contiguous) view.
    column = samples[:, 0]
    assert not column.flags["C_CONTIGUOUS"]
    assert _is_jfk(tiny.transcribe(column, sample_rate=rate).text)


def test_float_arrays_match_the_wav_file_and_are_not_slower(
    tiny: ctxscribe.ContextTranscriber, jfk_wav: Path, tmp_path: Path
) -> None:
    mono = float32_16k_mono(jfk_wav)
    wav_path = tmp_path / "jfk16k.wav"
    write_wav_16k(wav_path, mono)
    tiny.transcribe(mono, sample_rate=16000)  # warm up
    started = time.perf_counter()
    from_wav = tiny.transcribe(wav_path)
    wav_secs = time.perf_counter() - started
    started = time.perf_counter()
    from_array = tiny.transcribe(mono, sample_rate=16000)
    array_secs = time.perf_counter() - started
    print(f"jfk 16 kHz: wav file {wav_secs:.3f} s, float32 array {array_secs:.3f} s")
    assert normalized(from_array.text) == normalized(from_wav.text)
    assert_segments_cover(from_array)
    as_float64 = tiny.transcribe(mono.astype(np.float64), sample_rate=16000)
    assert normalized(as_float64.text) == normalized(from_array.text)


@pytest.mark.parametrize(
    ("array", "match"),
    [
        (np.zeros(16000, dtype=np.int32), "float32, float64 or int16"),
        (np.zeros((10, 10, 2), dtype=np.float32), "1-D"),
        (np.zeros((2, 16000), dtype=np.float32), r"\(frames, channels\)"),
        (np.zeros((), dtype=np.float32), "1-D"),
        (np.array([0.0, np.nan, 0.1], dtype=np.float32), "non-finite sample .* at frame 1"),
        (np.array([0.0, 0.1, np.inf], dtype=np.float64), "non-finite sample .* at frame 2"),
    ],
    ids=["int32", "3-D", "channels-first", "0-D", "nan", "inf"],
)
def test_bad_arrays_are_invalid_requests(
    tiny: ctxscribe.ContextTranscriber, array: npt.NDArray[np.generic], match: str
) -> None:
    with pytest.raises(ctxscribe.InvalidRequestError, match=match) as raised:
        tiny.transcribe(array, sample_rate=16000)  # type: ignore[arg-type]
    assert raised.value.code == "invalid_request"


def test_sample_rate_is_required_for_arrays_and_only_for_them(
    tiny: ctxscribe.ContextTranscriber, short_wav: Path
) -> None:
    silence = np.zeros(16000, dtype=np.float32)
    with pytest.raises(ctxscribe.InvalidRequestError, match="sample_rate=16000") as raised:
        tiny.transcribe(silence)
    assert raised.value.param == "sample_rate"
    for rate in (-1, True, "16000", 16000.0):
        with pytest.raises(ctxscribe.InvalidRequestError, match="positive int"):
            tiny.transcribe(silence, sample_rate=rate)  # type: ignore[arg-type]
    with pytest.raises(ctxscribe.InvalidRequestError, match="sample rate"):
        tiny.transcribe(silence, sample_rate=0)
    with pytest.raises(ctxscribe.InvalidRequestError, match="for numpy arrays"):
        tiny.transcribe(short_wav, sample_rate=16000)
    assert tiny.transcribe(silence, sample_rate=16000).text == ""
