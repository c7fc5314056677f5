#!/usr/bin/env bash
# Speaks benches/heldout/cases.jsonl with espeak-ng into OUT/audio/<id>.wav and copies
# the cases next to them, so `CTXSCRIBE_EVAL_CONTEXT_DIR=OUT cargo bench --bench eval --
# context` scores the held-out set like the dev set. Usage: synthesize.sh [OUT]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../../target/heldout}"
mkdir -p "$out/audio"
cp "$here/cases.jsonl" "$out/cases.jsonl"
python3 - "$here/cases.jsonl" "$out/audio" <<'PY'
import json, subprocess, sys
cases, audio = sys.argv[1], sys.argv[2]
voices = {"de": "de", "fr": "fr"}
for line in open(cases, encoding="utf-8"):
    if not line.strip():
        continue
    case = json.loads(line)
    voice = voices.get(case.get("voice", ""), "en-us")
    subprocess.run(
        ["espeak-ng", "-v", voice, "-s", "150", "-w", f"{audio}/{case['id']}.wav", case["say"]],
        check=True,
    )
PY
echo "held-out set: $out"
