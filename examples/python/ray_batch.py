"""Batch transcription with Ray Data: one ContextTranscriber per actor.

    python examples/python/ray_batch.py INPUT --out results.jsonl [--model PATH]
        [--actors N] [--threads T] [--batch-size B] [--max-duration-secs S] [--plain]

INPUT is one of
  - a directory: every file in it (sorted; not recursive), no context;
  - a text file (``.txt``): one path per line, no context;
  - a Parquet file (``.parquet``): a ``path`` column and optional per-file context
    columns ``messages`` (JSON text), ``languages`` (``"de,en"``, ``"auto"``) and
    ``dictionary`` (``"kubectl, Ramipril"`` or a JSON array), read as the library
    reads the server's form fields.

Every file becomes one JSON line in ``--out``: ``path``, ``text``, ``language``,
``audio_secs``, ``decode_secs``, ``engine_secs``, ``total_secs``, ``error_code`` and
``error``. A file that is not audio, cannot be decoded, is too long
(``--max-duration-secs``) or too large is a row with the library's contract code
(``unsupported_audio_type``, ``audio_decode_failed``, ``audio_too_long``,
``file_too_large``, ``invalid_request`` for bad context); a path that cannot be read
is ``invalid_request`` too (the contract has no I/O code: the row names a file that is
not there). The job always finishes; the exit status is 0 unless Ray itself fails.

Ray Data runs ``map_batches`` with a callable class: each actor loads the model once
(``ContextTranscriber`` in ``__init__``) and transcribes its batches; ``--actors``
actors (default: cores / threads) use ``--threads`` engine threads each (default 1),
so the actors together keep every core busy. ``--plain`` runs the same rows in a plain
loop in this process instead (one transcriber), for comparison. Both print files/s.

Ray starts a local instance (``ray.init``) unless ``RAY_ADDRESS`` names a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterable

import ctxscribe

CONTEXT_COLUMNS = ("messages", "languages", "dictionary")
OUTPUT_COLUMNS = (
    "path",
    "text",
    "language",
    "audio_secs",
    "decode_secs",
    "engine_secs",
    "total_secs",
    "error_code",
    "error",
)


def read_input(source: Path) -> list[dict[str, Any]]:
    """The rows to transcribe: ``{"path": ..., "messages": ..., ...}`` (context may be None)."""
    if source.is_dir():
        paths = sorted(str(p) for p in source.iterdir() if p.is_file())
        rows: list[dict[str, Any]] = [{"path": p} for p in paths]
    elif source.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(source)
        if "path" not in table.column_names:
            raise SystemExit(f"{source}: no `path` column")
        rows = table.to_pylist()
    else:
        lines = source.read_text(encoding="utf-8").splitlines()
        rows = [{"path": line.strip()} for line in lines if line.strip()]
    return [
        {"path": str(row["path"]), **{c: _text_or_none(row.get(c)) for c in CONTEXT_COLUMNS}}
        for row in rows
    ]


def _text_or_none(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):  # NaN from pandas
        return None
    return str(value) if str(value) else None


def transcribe_row(
    transcriber: ctxscribe.ContextTranscriber, row: dict[str, Any]
) -> dict[str, Any]:
    """One output row; errors become rows with their contract code."""
    out: dict[str, Any] = dict.fromkeys(OUTPUT_COLUMNS)
    out["path"] = row["path"]
    try:
        transcript = transcriber.transcribe(
            row.get("file") or row["path"],
            messages=row.get("messages"),
            languages=row.get("languages"),
            dictionary=row.get("dictionary"),
        )
    except ctxscribe.TranscriptionError as e:
        out["error_code"], out["error"] = e.code, str(e)
        return out
    except OSError as e:
        out["error_code"], out["error"] = "invalid_request", f"cannot read the file: {e}"
        return out
    out.update(
        text=transcript.text,
        language=transcript.language,
        audio_secs=transcript.audio_secs,
        decode_secs=transcript.decode_secs,
        engine_secs=transcript.engine_secs,
        total_secs=transcript.total_secs,
    )
    return out


class Transcribe:
    """The Ray Data callable class: one model per actor, loaded once."""

    def __init__(self, model: str | None, threads: int, max_duration_secs: float | None) -> None:
        self.transcriber = ctxscribe.ContextTranscriber(
            model, threads=threads, max_duration_secs=max_duration_secs
        )

    def __call__(self, batch: Any) -> Any:
        import pandas as pd

        rows = batch.to_dict("records")
        return pd.DataFrame(
            [transcribe_row(self.transcriber, r) for r in rows], columns=list(OUTPUT_COLUMNS)
        )


def start_ray() -> None:
    """A local Ray instance (or the cluster in ``RAY_ADDRESS``), quiet."""
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True


def run_ray(rows: list[dict[str, Any]], args: argparse.Namespace) -> Iterable[dict[str, Any]]:
    import ray

    # Absent context as "" (read as "not given"): every block has the same Arrow schema.
    # `file`: the absolute path, for actors whose working directory is not ours.
    items = [
        {
            "file": os.path.abspath(row["path"]),
            **{c: row.get(c) or "" for c in ("path", *CONTEXT_COLUMNS)},
        }
        for row in rows
    ]
    blocks = max(1, -(-len(items) // args.batch_size))
    dataset = ray.data.from_items(items, override_num_blocks=blocks).map_batches(
        Transcribe,
        fn_constructor_kwargs={
            "model": args.model,
            "threads": args.threads,
            "max_duration_secs": args.max_duration_secs,
        },
        batch_size=args.batch_size,
        batch_format="pandas",
        compute=ray.data.ActorPoolStrategy(size=args.actors),
        num_cpus=args.threads,
    )
    for row in dataset.iter_rows():
        yield {c: _plain(row.get(c)) for c in OUTPUT_COLUMNS}


def _plain(value: Any) -> Any:
    """Arrow/pandas values as JSON values (NaN and NA as null)."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def run_plain(rows: list[dict[str, Any]], args: argparse.Namespace) -> Iterable[dict[str, Any]]:
    transcriber = ctxscribe.ContextTranscriber(
        args.model, threads=args.threads, max_duration_secs=args.max_duration_secs
    )
    for row in rows:
        yield transcribe_row(transcriber, row)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", type=Path, help="a directory, a .txt of paths or a .parquet")
    parser.add_argument("--out", type=Path, required=True, help="the JSON lines to write")
    parser.add_argument("--model", help="model file (default: the library's default)")
    parser.add_argument("--threads", type=int, default=1, help="engine threads per actor")
    parser.add_argument("--actors", type=int, help="actors (default: cores / threads)")
    parser.add_argument("--batch-size", type=int, default=4, help="files per batch")
    parser.add_argument("--max-duration-secs", type=float, help="longest audio (default 1 h)")
    parser.add_argument("--plain", action="store_true", help="a plain loop, without Ray")
    args = parser.parse_args(argv)
    if args.actors is None:
        args.actors = max(1, (os.cpu_count() or 1) // args.threads)
    rows = read_input(args.input)
    if not args.plain:
        started = time.perf_counter()
        start_ray()
        print(f"ray_batch: Ray started in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    started = time.perf_counter()
    runner = run_plain if args.plain else run_ray
    errors = 0
    with args.out.open("w", encoding="utf-8") as out:
        for result in runner(rows, args):
            errors += result["error_code"] is not None
            out.write(json.dumps(result, ensure_ascii=False) + "\n")
    took = time.perf_counter() - started
    mode = "plain loop" if args.plain else f"Ray Data, {args.actors} actor(s)"
    print(
        f"ray_batch: {len(rows)} files ({errors} error rows) in {took:.1f} s: "
        f"{len(rows) / took:.2f} files/s ({mode}, {args.threads} thread(s) each; "
        "model loading included)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
