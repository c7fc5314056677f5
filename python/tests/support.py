"""Constants and helpers shared by the tests (on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

from pathlib import Path

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
