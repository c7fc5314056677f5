"""Context-aware speech-to-text on an embedded Whisper engine (whisper.cpp).

Load the model once, then transcribe from any number of threads::

    import ctxscribe

    transcriber = ctxscribe.ContextTranscriber()          # the default model
    transcript = transcriber.transcribe(
        "note.webm",                                      # bytes, a path or a binary file
        messages=[{"role": "user", "content": "Editing user_service.py"}],
        languages=["en", "de"],                           # or "auto", "de", "de,en"
        dictionary=["kubectl", "user_service.py"],        # or "kubectl, user_service.py"
    )
    print(transcript.text, transcript.language)

Or follow it as it runs, and stop it from another thread::

    token = ctxscribe.CancelToken()                       # token.cancel() stops the run
    for event in transcriber.stream("note.webm", cancel=token):
        if event.type == "delta":
            print(event.text, end="", flush=True)

Every error is a :class:`TranscriptionError` whose ``code`` is the contract code
(``"invalid_request"``, ``"unsupported_audio_type"``, ``"audio_decode_failed"``,
``"file_too_large"``, ``"audio_too_long"``, ``"model_unavailable"``,
``"transcription_failed"``, and its two subclasses ``"cancelled"`` and
``"deadline_exceeded"``), raised as the subclass of that code. A missing audio file is
a :class:`FileNotFoundError`.
"""

import os as _os

# libgomp, which runs the engine's threads, reads this once, when the native module loads
# it: a waiting thread polls 1000 times, not 300,000, before it sleeps, so that another
# process on the same cores does not stall the engine (ctxscribe::config).
_os.environ.setdefault("GOMP_SPINCOUNT", "1000")

from ._native import (  # noqa: E402
    AudioDecodeError,
    AudioTooLongError,
    CancelledError,
    CancelToken,
    ContextTranscriber,
    DeadlineExceededError,
    Event,
    FileTooLargeError,
    InvalidRequestError,
    ModelUnavailableError,
    Segment,
    Transcript,
    TranscriptStream,
    TranscriptWarning,
    TranscriptionError,
    TranscriptionFailedError,
    UnsupportedAudioTypeError,
    __version__,
)

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
]
