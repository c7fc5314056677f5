#!/usr/bin/env python3
"""Streams a transcription with the official OpenAI Python SDK (run by tests/server_streaming.rs).

usage: openai_sdk_stream.py BASE_URL API_KEY AUDIO_FILE

Prints one JSON object: the non-streamed text (`plain`), the streamed deltas joined
(`deltas`), the done event's text (`done`), the event types in order (`types`), and the
error the SDK raised for a streamed request of bytes that are no audio (`bad_stream`).
"""

import json
import sys
from pathlib import Path

import openai
from openai import OpenAI


def main() -> None:
    base_url, api_key, audio = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)
    transcriptions = client.audio.transcriptions
    result = {}

    with audio.open("rb") as file:
        result["plain"] = transcriptions.create(model="whisper-1", file=file).text

    deltas, types, done = [], [], None
    with audio.open("rb") as file:
        stream = transcriptions.create(model="whisper-1", file=file, stream=True)
        for event in stream:
            types.append(event.type)
            if event.type == "transcript.text.delta":
                deltas.append(event.delta)
            elif event.type == "transcript.text.done":
                done = event.text
    result.update(deltas="".join(deltas), done=done, types=types)

    try:
        transcriptions.create(
            model="whisper-1", file=("a.wav", b"not audio at all"), stream=True
        )
        result["bad_stream"] = {"status": None}
    except openai.APIStatusError as exc:
        result["bad_stream"] = {"status": exc.status_code, "code": exc.code}

    print(json.dumps(result))


if __name__ == "__main__":
    main()
