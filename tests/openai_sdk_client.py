#!/usr/bin/env python3
"""Drives the ctxscribe server with the official OpenAI Python SDK (run by tests/server/sdk.rs).

usage: openai_sdk_client.py BASE_URL API_KEY AUDIO_FILE

Prints one JSON object: for each case either {"text": ...} or the error the SDK raised,
{"status", "code", "param", "type", "keys"} (keys: those of the body's error object).
"""

import json
import sys
from pathlib import Path

import openai
from openai import OpenAI


def error_of(exc: openai.APIStatusError) -> dict:
    body = exc.body if isinstance(exc.body, dict) else {}
    return {
        "status": exc.status_code,
        "code": exc.code,
        "param": exc.param,
        "type": exc.type,
        "keys": sorted(body.keys()),
    }


def run(call) -> dict:
    try:
        result = call()
    except openai.APIStatusError as exc:
        return error_of(exc)
    text = result if isinstance(result, str) else result.text
    return {"text": text}


def main() -> None:
    base_url, api_key, audio = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)
    transcriptions = client.audio.transcriptions
    results = {}

    # The example: a dictionary through extra_body (sent as dictionary[] fields).
    with audio.open("rb") as file:
        results["dictionary"] = run(lambda: transcriptions.create(
            model="whisper-1",
            file=file,
            extra_body={"dictionary": ["kubectl", "Grafana"]},
        ))

    # OpenAI's own fields plus context: messages and languages as SDK-flattened lists.
    with audio.open("rb") as file:
        results["context"] = run(lambda: transcriptions.create(
            model="whisper-1",
            file=file,
            prompt="A speech by President Kennedy.",
            language="en",
            temperature=0.0,
            response_format="json",
            extra_body={
                "messages": [
                    {"role": "system", "content": "Inaugural address, 1961."},
                    {"role": "user", "content": "Transcribe the speech."},
                ],
                "languages": ["en"],
            },
        ))

    # A (name, bytes, content type) tuple instead of a file object.
    results["tuple_file"] = run(lambda: transcriptions.create(
        model="whisper-1",
        file=("speech.wav", audio.read_bytes(), "audio/wav"),
        extra_body={"dictionary": "kubectl, Grafana"},
    ))

    results["text_format"] = run(lambda: transcriptions.create(
        model="whisper-1",
        file=("speech.wav", audio.read_bytes(), "audio/wav"),
        response_format="text",
    ))

    results["bad_languages"] = run(lambda: transcriptions.create(
        model="whisper-1",
        file=("speech.wav", audio.read_bytes(), "audio/wav"),
        extra_body={"languages": "xx"},
    ))

    # sounds_like through extra_body: the SDK sends sounds_like[TERM][] fields.
    results["sounds_like"] = run(lambda: transcriptions.create(
        model="whisper-1",
        file=("speech.wav", audio.read_bytes(), "audio/wav"),
        extra_body={"dictionary": ["Americans"], "sounds_like": {"Americans": ["a merry cans"]}},
    ))
    results["bad_sounds_like"] = run(lambda: transcriptions.create(
        model="whisper-1",
        file=("speech.wav", audio.read_bytes(), "audio/wav"),
        extra_body={"dictionary": ["Americans"], "sounds_like": {"Kennedy": ["kenn e dee"]}},
    ))

    results["no_file_type"] = run(lambda: transcriptions.create(
        model="whisper-1",
        file=("notes.mp3", b"just some text, not audio\n", "audio/mpeg"),
    ))

    wrong = OpenAI(base_url=base_url, api_key="sk-not-the-key", max_retries=0, timeout=60)
    results["bad_key"] = run(lambda: wrong.audio.transcriptions.create(
        model="whisper-1",
        file=("speech.wav", audio.read_bytes(), "audio/wav"),
    ))

    json.dump(results, sys.stdout)
    print()


if __name__ == "__main__":
    main()
