"""``await transcriber.transcribe_async(...)`` leaves the event loop running."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import ctxscribe

from support import normalized


def test_a_ticker_keeps_ticking_while_two_transcriptions_run(
    tiny: ctxscribe.ContextTranscriber, jfk_wav: Path, short_wav: Path
) -> None:
    async def run() -> tuple[list[ctxscribe.Transcript], list[float], float]:
        ticks: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            while not done.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        started = time.monotonic()
        results = await asyncio.gather(
            tiny.transcribe_async(jfk_wav), tiny.transcribe_async(short_wav)
        )
        elapsed = time.monotonic() - started
        done.set()
        await task
        return list(results), ticks, elapsed

    (jfk, bridge), ticks, elapsed = asyncio.run(run())
    assert "ask not what your country can do for you" in normalized(jfk.text)
    assert normalized(bridge.text) == "how old is the brooklyn bridge"
    gaps = [later - earlier for earlier, later in zip(ticks, ticks[1:])]
    print(f"two transcriptions: {elapsed:.2f} s, {len(ticks)} ticks, longest gap {max(gaps):.3f} s")
    # Blocked, the loop would not tick during the transcriptions at all.
    assert len(ticks) >= 10
    assert max(gaps) < max(0.25, elapsed / 5)


def test_errors_are_raised_when_awaited(tiny: ctxscribe.ContextTranscriber) -> None:
    async def run() -> None:
        future = tiny.transcribe_async(b"not audio at all")
        with pytest.raises(ctxscribe.UnsupportedAudioTypeError):
            await future

    asyncio.run(run())


def test_it_needs_a_running_event_loop(tiny: ctxscribe.ContextTranscriber, short_wav: Path) -> None:
    with pytest.raises(RuntimeError, match="running event loop"):
        tiny.transcribe_async(short_wav)
