"""Constants and helpers shared by the tests (on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

from pathlib import Path

import ctxscribe

REPO = Path(__file__).resolve().parents[2]

JFK_TEXT = (
    "And so my fellow Americans, ask not what your country can do for you, "
    "ask what you can do for your country."
)

# Engine threads per call: the machine has 2 cores.
THREADS = 2


def normalized(text: str) -> str:
    """Lowercase words without punctuation, for comparisons that ignore formatting."""
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


def assert_segments_cover(transcript: ctxscribe.Transcript) -> None:
    """Segments in order, within the audio, their texts together the transcript's."""
    segments = transcript.segments
    assert bool(segments) == bool(transcript.text)
    previous_end = 0.0
    for segment in segments:
        assert previous_end <= segment.start <= segment.end <= transcript.audio_secs + 0.01
        previous_end = segment.end
    joined = " ".join(segment.text for segment in segments)
    assert joined == " ".join(transcript.text.split())
