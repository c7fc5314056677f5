"""Streaming and cancellation: `ContextTranscriber.stream`, `CancelToken`, and the
`CancelledError` / `DeadlineExceededError` a stopped run raises."""

from __future__ import annotations

import threading
import time
import wave
from pathlib import Path
from typing import Any

import numpy
import pytest

import ctxscribe

from support import JFK_TEXT, THREADS, assert_segments_cover, normalized


PcmClip = tuple[numpy.ndarray[Any, numpy.dtype[numpy.int16]], int]


def long_pcm(jfk_wav: Path, copies: int = 6) -> PcmClip:
    """jfk said `copies` times in a row (about 11 s each): a long file, as PCM samples
    and their rate."""
    with wave.open(str(jfk_wav)) as reader:
        assert reader.getsampwidth() == 2
        channels, rate = reader.getnchannels(), reader.getframerate()
        frames = reader.readframes(reader.getnframes())
    clip = numpy.frombuffer(frames, dtype=numpy.int16).reshape(-1, channels)
    return numpy.tile(clip, (copies, 1)), rate


def test_a_stream_reports_deltas_segments_and_progress_then_the_transcript(
    tiny: ctxscribe.ContextTranscriber, jfk_wav: Path
) -> None:
    events = list(tiny.stream(jfk_wav))
    kinds = [event.type for event in events]
    assert kinds[-1] == "done" and kinds.count("done") == 1, kinds
    assert {"delta", "segment", "progress"} <= set(kinds), kinds
    transcript = events[-1].transcript
    assert transcript is not None
    assert normalized(transcript.text) == normalized(JFK_TEXT)
    assert_segments_cover(transcript)
    deltas = "".join(event.text or "" for event in events if event.type == "delta")
    assert deltas == transcript.text
    segments = [event.segment for event in events if event.type == "segment"]
    assert " ".join(s.text for s in segments if s is not None) == transcript.text
    progress = [(e.done_secs, e.total_secs) for e in events if e.type == "progress"]
    done = [d for d, _ in progress if d is not None]
    assert done == sorted(done) and progress[-1][1] == pytest.approx(transcript.audio_secs)
    assert done[-1] == pytest.approx(transcript.audio_secs, abs=0.5)
    # The stream is used up; a new one runs again.
    assert [e.type for e in tiny.stream(jfk_wav)][-1] == "done"


def test_the_first_event_of_a_long_file_comes_before_the_end(
    tiny: ctxscribe.ContextTranscriber, jfk_wav: Path
) -> None:
    started = time.perf_counter()
    samples, rate = long_pcm(jfk_wav)
    stream = tiny.stream(samples, sample_rate=rate)
    first = next(stream)
    first_at = time.perf_counter() - started
    rest = list(stream)
    total = time.perf_counter() - started
    assert first.type == "delta" and rest[-1].type == "done"
    print(f"66 s file: first event after {first_at:.2f} s, done after {total:.2f} s")
    assert first_at < total / 2


def test_cancelling_from_another_thread_stops_a_stream_and_a_call(
    tiny: ctxscribe.ContextTranscriber, jfk_wav: Path
) -> None:
    pcm, rate = long_pcm(jfk_wav)
    started = time.perf_counter()
    tiny.transcribe(pcm, sample_rate=rate)
    whole = time.perf_counter() - started

    token = ctxscribe.CancelToken()
    stream = tiny.stream(pcm, sample_rate=rate, cancel=token)
    assert next(stream).type == "delta"
    cancelled_at = time.perf_counter()
    threading.Thread(target=token.cancel).start()
    with pytest.raises(ctxscribe.CancelledError) as raised:
        for _ in stream:
            pass
    stopped_after = time.perf_counter() - cancelled_at
    assert raised.value.code == "cancelled"
    assert isinstance(raised.value, ctxscribe.TranscriptionFailedError)
    print(f"stream stopped {stopped_after:.3f} s after cancel (whole run {whole:.2f} s)")
    assert stopped_after < whole / 4
    assert token.cancelled

    token = ctxscribe.CancelToken()
    timer = threading.Timer(1.0, token.cancel)
    timer.start()
    started = time.perf_counter()
    with pytest.raises(ctxscribe.CancelledError):
        tiny.transcribe(pcm, sample_rate=rate, cancel=token)
    assert time.perf_counter() - started < whole / 2
    timer.join()


def test_a_token_cancelled_before_twice_or_after_is_harmless(
    tiny: ctxscribe.ContextTranscriber, jfk_wav: Path
) -> None:
    token = ctxscribe.CancelToken()
    assert not token.cancelled
    token.cancel()
    token.cancel()
    with pytest.raises(ctxscribe.CancelledError):
        tiny.transcribe(jfk_wav, cancel=token)
    with pytest.raises(ctxscribe.CancelledError):
        list(tiny.stream(jfk_wav, cancel=token))
    fresh = ctxscribe.CancelToken()
    transcript = tiny.transcribe(jfk_wav, cancel=fresh)
    fresh.cancel()
    assert normalized(transcript.text) == normalized(JFK_TEXT)
    assert repr(fresh) == "CancelToken(cancelled=True)"


def test_leaving_a_stream_early_stops_its_run_and_keeps_the_callers_token(
    tiny: ctxscribe.ContextTranscriber, jfk_wav: Path
) -> None:
    token = ctxscribe.CancelToken()
    pcm, rate = long_pcm(jfk_wav)
    with tiny.stream(pcm, sample_rate=rate, cancel=token) as stream:
        for event in stream:
            assert event.type == "delta"
            break
    assert list(stream) == []
    assert not token.cancelled, "closing a stream does not cancel the caller's token"
    # The engine is free again: a call with the same token runs to its end.
    assert normalized(tiny.transcribe(jfk_wav, cancel=token).text) == normalized(JFK_TEXT)
    # A consumer that raises mid-stream: the stream is dropped and its run stops.

    def consume() -> None:
        for _ in tiny.stream(pcm, sample_rate=rate):
            raise RuntimeError("the consumer failed")

    with pytest.raises(RuntimeError):
        consume()
    assert normalized(tiny.transcribe(jfk_wav).text) == normalized(JFK_TEXT)


def test_a_run_past_its_timeout_raises_deadline_exceeded(tiny_model: Path, jfk_wav: Path) -> None:
    hurried = ctxscribe.ContextTranscriber(tiny_model, threads=THREADS, timeout=0.05)
    with pytest.raises(ctxscribe.DeadlineExceededError) as raised:
        hurried.transcribe(jfk_wav)
    assert raised.value.code == "deadline_exceeded"
    assert isinstance(raised.value, ctxscribe.TranscriptionFailedError)
    with pytest.raises(ctxscribe.DeadlineExceededError):
        list(hurried.stream(jfk_wav))


def test_invalid_stream_arguments_raise_at_once(tiny: ctxscribe.ContextTranscriber) -> None:
    with pytest.raises(ctxscribe.InvalidRequestError):
        tiny.stream(b"RIFF", languages="klingon")
    with pytest.raises(FileNotFoundError):
        tiny.stream("/nonexistent/note.webm")
