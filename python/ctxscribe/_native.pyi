"""Type stubs of the native module ``ctxscribe._native`` (checked by ``mypy.stubtest``)."""

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Protocol, final

import numpy
from typing_extensions import TypeAlias

__all__ = [
    "AudioDecodeError",
    "AudioTooLongError",
    "CancelToken",
    "CancelledError",
    "ContextTranscriber",
    "DeadlineExceededError",
    "Event",
    "FileTooLargeError",
    "InvalidRequestError",
    "ModelUnavailableError",
    "Segment",
    "Transcript",
    "TranscriptStream",
    "TranscriptWarning",
    "TranscriptionError",
    "TranscriptionFailedError",
    "UnsupportedAudioTypeError",
    "__version__",
    "_cli_main",
]

__version__: str

def _cli_main(argv: list[str], python: str) -> int:
    """Runs the ``ctxscribe`` command line; returns its exit status."""

class _BinaryReader(Protocol):
    def read(self) -> bytes | bytearray: ...

# PCM samples: a numpy array (float32, float64 or int16; (frames,) or (frames, channels)).
_PcmArray: TypeAlias = numpy.ndarray[Any, numpy.dtype[numpy.float32 | numpy.float64 | numpy.int16]]
# Encoded audio (wav, webm, mp3, m4a, ogg): its bytes, a path to it, or a binary file object.
_Audio: TypeAlias = bytes | bytearray | memoryview | str | os.PathLike[str] | _BinaryReader
# [{"role": "system" | "user", "content": str | [{"type": "text", "text": str}]}], or JSON text.
_Messages: TypeAlias = Sequence[Mapping[str, Any]] | str
# "auto", "de", "german", "de,en", '["de", "en"]', or ["de", "en"].
_Languages: TypeAlias = str | Iterable[str]
# ["kubectl", "Ramipril"], or "kubectl, Ramipril", or '["kubectl", "Ramipril"]'.
_Dictionary: TypeAlias = str | Iterable[str]
# How dictionary terms are said: {"Nguyen": ["win", "nuh win"]}, or its JSON text.
_SoundsLike: TypeAlias = str | Mapping[str, Iterable[str]]

@final
class ContextTranscriber:
    """Transcribes audio files with an embedded Whisper model, helped by context.

    Load it once and share it: the model is loaded by the constructor, and one instance
    may be used from many threads at once (every call has its own decoder state). The GIL
    is released while the model loads and while a transcription runs.
    """

    def __new__(
        cls,
        model: str | os.PathLike[str] | None = None,
        *,
        threads: int | None = None,
        vad: bool | str | os.PathLike[str] = True,
        beam_size: int | None = None,
        timeout: float | None = None,
        max_file_bytes: int | None = None,
        max_duration_secs: float | None = None,
    ) -> ContextTranscriber:
        """Loads a whisper.cpp ggml/gguf model.

        - ``model``: the model file; default ``$CTXSCRIBE_MODEL``, else ``ggml-base.bin``
          from ``$CTXSCRIBE_MODEL_DIR``, else ``~/.local/share/ctxscribe/models`` (where
          ``ctxscribe models fetch`` installs it). A name of a model ``ctxscribe models
          fetch`` installs (``"tiny.en"``) is that model's file in those directories.
        - ``threads``: engine threads per transcription (default ``$CTXSCRIBE_THREADS``,
          else all cores).
        - ``vad``: ``True`` uses the Silero VAD model next to the model (if there is one),
          ``False`` turns voice activity detection off, a path selects a VAD model.
        - ``beam_size``: beam search with this many beams (default: greedy decoding).
        - ``timeout``: give up on a transcription after this many seconds
          (:class:`DeadlineExceededError`).
        - ``max_file_bytes`` / ``max_duration_secs``: input limits (default 25 MiB / 1 h).

        Raises :class:`ModelUnavailableError` when a model is missing or cannot be loaded,
        :class:`InvalidRequestError` for an out-of-range option.
        """

    def transcribe(
        self,
        audio: _Audio | _PcmArray,
        *,
        sample_rate: int | None = None,
        messages: _Messages | None = None,
        languages: _Languages | None = None,
        dictionary: _Dictionary | None = None,
        sounds_like: _SoundsLike | None = None,
        cancel: CancelToken | None = None,
    ) -> Transcript:
        """Transcribes one audio file (wav, webm, mp3, m4a or ogg), or PCM samples.

        PCM samples are a numpy array of float32 (in [-1, 1]), float64 or int16, shaped
        ``(frames,)`` or ``(frames, channels)``, with its ``sample_rate`` in Hz (required
        then, refused otherwise); channels are averaged.

        The GIL is released while the file is read, decoded and transcribed.
        ``cancel.cancel()`` from another thread stops the call with
        :class:`CancelledError`.

        Raises the :class:`TranscriptionError` subclass of the failure's code (an
        :class:`InvalidRequestError` for an array of another dtype or shape, with a
        non-finite sample, or without its ``sample_rate``), or an :class:`OSError`
        (:class:`FileNotFoundError`, ...) when ``audio`` is a path that cannot be read.
        """

    def transcribe_async(
        self,
        audio: _Audio | _PcmArray,
        *,
        sample_rate: int | None = None,
        messages: _Messages | None = None,
        languages: _Languages | None = None,
        dictionary: _Dictionary | None = None,
        sounds_like: _SoundsLike | None = None,
        cancel: CancelToken | None = None,
    ) -> asyncio.Future[Transcript]:
        """``await transcriber.transcribe_async(...)``: :meth:`transcribe` on the running
        event loop's default executor; the loop goes on while it runs. Errors are raised
        when the future is awaited. Needs a running event loop.
        """

    def stream(
        self,
        audio: _Audio | _PcmArray,
        *,
        messages: _Messages | None = None,
        languages: _Languages | None = None,
        dictionary: _Dictionary | None = None,
        sounds_like: _SoundsLike | None = None,
        sample_rate: int | None = None,
        cancel: CancelToken | None = None,
    ) -> TranscriptStream:
        """The events of one transcription as it runs, ending with a ``"done"`` event
        that carries the :class:`Transcript`. The arguments are :meth:`transcribe`'s;
        invalid ones raise here, the transcription's own failures during the iteration.
        """

    @property
    def is_multilingual(self) -> bool:
        """Whether the loaded model knows more languages than English."""

    @property
    def backend(self) -> dict[str, str | None] | None:
        """The device the engine runs on: ``name`` (``"CPU"``, or the GPU's ggml name such
        as ``"Vulkan0"``), ``description``, and ``fallback`` (why no GPU was used, or None);
        None with a remote speech provider."""

@final
class CancelToken:
    """Stops a running transcription from any thread (:class:`CancelledError`)."""

    def __new__(cls) -> CancelToken: ...
    def cancel(self) -> None:
        """Cancels every call and stream holding this token; idempotent."""

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""

@final
class Event:
    """One event of a :class:`TranscriptStream`."""

    @property
    def type(self) -> Literal["delta", "segment", "progress", "done"]: ...
    @property
    def text(self) -> str | None:
        """The delta's text, or the segment's."""

    @property
    def segment(self) -> Segment | None:
        """The segment of a ``"segment"`` event."""

    @property
    def done_secs(self) -> float | None:
        """Seconds of audio transcribed so far (``"progress"``)."""

    @property
    def total_secs(self) -> float | None:
        """The audio's length in seconds (``"progress"``)."""

    @property
    def transcript(self) -> Transcript | None:
        """The final transcript (``"done"``)."""

@final
class TranscriptStream:
    """The events of one transcription; iterate it, :meth:`close` stops the run."""

    def __iter__(self) -> TranscriptStream: ...
    def __next__(self) -> Event: ...
    def close(self) -> None:
        """Stops the run if it still runs; idempotent."""

    def __enter__(self) -> TranscriptStream: ...
    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool: ...

@final
class Transcript:
    """The result of one transcription; ``str(transcript)`` is its text."""

    @property
    def text(self) -> str:
        """The transcript; empty when the audio holds no speech."""
    @property
    def language(self) -> str | None:
        """The language code it was transcribed in (``"en"``); ``None`` without speech."""
    @property
    def audio_secs(self) -> float:
        """Duration of the input audio in seconds."""
    @property
    def decode_secs(self) -> float:
        """Seconds spent reading and decoding the audio."""
    @property
    def engine_secs(self) -> float:
        """Seconds spent in the engine (speech and language detection, decoding)."""
    @property
    def total_secs(self) -> float:
        """Seconds the whole call took."""
    @property
    def segments(self) -> list[Segment]:
        """The text in timed pieces, in order (times never go back); their texts joined by
        spaces are ``text``. Empty when ``text`` is."""
    @property
    def warnings(self) -> list[TranscriptWarning]:
        """What the caller should know although the call succeeded (``audio_truncated``:
        the file was cut short, the audio before the cut is transcribed)."""

@final
class TranscriptWarning:
    """Something a successful transcription tells its caller; ``str(w)`` is
    ``"code: message"``."""

    @property
    def code(self) -> str:
        """The stable code (``"audio_truncated"``)."""
    @property
    def message(self) -> str:
        """A sentence saying where and how much."""

@final
class Segment:
    """One timed piece of a transcript; ``str(segment)`` is its text."""

    @property
    def start(self) -> float:
        """Where the piece starts, in seconds from the start of the audio."""
    @property
    def end(self) -> float:
        """Where the piece ends, in seconds from the start of the audio (never before
        ``start``)."""
    @property
    def text(self) -> str:
        """The piece's text, without leading or trailing whitespace."""

class TranscriptionError(Exception):
    """Base class of every error ctxscribe raises."""

    code: str
    """The contract code: ``"invalid_request"``, ``"audio_decode_failed"``, ..."""
    param: str | None
    """The request field the error is about (``"dictionary"``, ``"file"``, ...), if any."""

class InvalidRequestError(TranscriptionError, ValueError):
    """``invalid_request``: a malformed or wrongly typed field, audio argument or option."""

class UnsupportedAudioTypeError(TranscriptionError, ValueError):
    """``unsupported_audio_type``: not wav, webm, mp3, m4a or ogg."""

class AudioDecodeError(TranscriptionError, ValueError):
    """``audio_decode_failed``: a supported type that cannot be decoded."""

class FileTooLargeError(TranscriptionError, ValueError):
    """``file_too_large``: the encoded audio is over ``max_file_bytes``."""

class AudioTooLongError(TranscriptionError, ValueError):
    """``audio_too_long``: the decoded audio is over ``max_duration_secs``."""

class ModelUnavailableError(TranscriptionError):
    """``model_unavailable``: the model is missing or cannot be loaded."""

class TranscriptionFailedError(TranscriptionError):
    """``transcription_failed``: the engine or a remote provider failed."""

class CancelledError(TranscriptionFailedError):
    """``cancelled``: the call was cancelled through its :class:`CancelToken`."""

class DeadlineExceededError(TranscriptionFailedError):
    """``deadline_exceeded``: the call ran past ``timeout``."""
