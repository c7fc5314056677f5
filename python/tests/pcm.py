"""Audio as numpy arrays, for the tests and python/benches (which put this folder on
sys.path): decoding a file to 16 kHz mono float32 and writing such samples as a wav."""

from __future__ import annotations

import subprocess
import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt


def float32_16k_mono(path: Path) -> npt.NDArray[np.float32]:
    """`path` decoded by ffmpeg to 16 kHz mono float32 (what faster-whisper users pass)."""
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(path),
         "-ar", "16000", "-ac", "1", "-f", "f32le", "-"],
        check=True, capture_output=True,
    ).stdout
    return np.frombuffer(raw, dtype="<f4")


def write_wav_16k(path: Path, samples: npt.NDArray[np.float32]) -> None:
    """16 kHz mono float32 `samples` (clipped to [-1, 1]) as a 16-bit wav file."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
