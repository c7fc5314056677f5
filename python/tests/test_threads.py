"""One transcriber shared by threads; the GIL is released while the engine runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ctxscribe

from support import normalized


def test_threads_share_one_transcriber(
    tiny: ctxscribe.ContextTranscriber, short_wav: Path
) -> None:
    intervals: list[tuple[float, float]] = []

    def work(_: int) -> str:
        started = time.perf_counter()
        text = tiny.transcribe(short_wav).text
        intervals.append((started, time.perf_counter()))
        return normalized(text)

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(work, range(3)))
    assert results == ["how old is the brooklyn bridge"] * 3
    # The calls overlapped in time: none waited for another to return before starting.
    assert max(start for start, _ in intervals) < min(end for _, end in intervals)


def ticks_during(call: Callable[[], object]) -> tuple[int, float]:
    """How often a Python thread that needs the GIL every millisecond ticked during
    `call`, and the seconds `call` took. Were the GIL held during the call, the thread
    could not tick at all until it returned."""
    ticks = 0
    stop = threading.Event()

    def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        time.sleep(0.05)
        before = ticks
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        during = ticks - before
    finally:
        stop.set()
        thread.join()
    return during, elapsed


def test_the_gil_is_released_during_transcription(
    base: ctxscribe.ContextTranscriber, jfk_wav: Path
) -> None:
    # base on the 11 s jfk clip: long enough to count ticks (tiny on a short clip now
    # returns in about 0.06 s).
    during, elapsed = ticks_during(lambda: base.transcribe(jfk_wav))
    assert elapsed > 0.1, "the call is too quick to tell"
    # At most 1 tick per ms; allow for a busy machine, but far more than the ~1 tick
    # a GIL-holding call would leave room for.
    assert during >= 20, f"{during} ticks in {elapsed:.2f} s"


def test_loading_a_model_releases_the_gil(tiny_model: Path) -> None:
    during, elapsed = ticks_during(lambda: ctxscribe.ContextTranscriber(tiny_model))
    if elapsed > 0.1:
        assert during >= 10, f"{during} ticks in {elapsed:.2f} s"
