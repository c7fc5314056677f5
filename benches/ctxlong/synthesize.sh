#!/usr/bin/env bash
# Long dictation with context, "ctxlong": the English sentences of benches/ctxset joined
# into dictations of 12-14 sentences (41-66 s), each with the union of its sentences'
# context, spoken whole by one Kokoro and one espeak-ng voice.
#
# Usage: benches/ctxlong/synthesize.sh [OUT]      (OUT defaults to target/ctxlong)
#
# Each half of benches/ctxset gives its own dictations (tune on tuning/, report
# validation/): its English cases in file order (every class: identifiers, paths, CLI
# tools, products, acronyms, names, drugs and the negatives; not the cases whose
# dictionary is the 1000-term file), split into five runs of consecutive cases. A
# dictation's fields are those of a ctxset case: "say" and "reference" the sentences'
# joined, "terms" and "dictionary" the union of theirs, "messages" the union of theirs
# (each distinct message once, system messages first), "distractors" the union of theirs
# less the dictation's terms, "languages" absent (detected), "voice" one of
# kokoro:NAME (Kokoro-82M, ../kokoro-setup.sh) or espeak:VOICE (espeak-ng at 150 wpm),
# "cases" the ctxset ids it joins. Sentences are joined with 0.6 s pauses
# (../dictation_tts.py, as for benches/longdict).
# Output (idempotent): OUT/{tuning,validation}/{cases.jsonl,audio/<id>.wav}, 16 kHz mono
# 16-bit, 0.3 s of silence at both ends. Scored like the ctxset: `--sets
# ctxlong-tuning,ctxlong-validation` of the speed bench, or the eval bench with
# CTXSCRIBE_EVAL_CONTEXT_DIR=OUT/HALF.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/ctxlong}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
venv="${CTXSET_TTS_VENV:-$(dirname "$out")/venv-tts}"
command -v espeak-ng >/dev/null || { echo "ctxlong: espeak-ng is required" >&2; exit 1; }
# shellcheck source=../kokoro-setup.sh
source "$here/../kokoro-setup.sh"
setup_kokoro || { echo "ctxlong: Kokoro could not be set up (see above)" >&2; exit 1; }
export OMP_NUM_THREADS=1
"$venv/bin/python" - "$root/benches" "$out" "$venv/kokoro" <<'PY'
import json, os, sys

import numpy as np

benches, out, kdir = sys.argv[1:4]
sys.path.insert(0, benches)
from dictation_tts import dictation  # noqa: E402

DICTATIONS = 5
KOKORO = ["af_heart", "bm_george", "af_bella", "am_michael", "bf_emma"]
ESPEAK = ["en-us", "en-gb", "en-us+m3", "en+f2", "en-us+f4"]


def unique(items):
    seen, kept = set(), []
    for item in items:
        key = json.dumps(item, sort_keys=True)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def joined(cases, ident, voice):
    terms = unique(t for c in cases for t in c.get("terms", []))
    messages = unique(m for c in cases for m in c.get("messages", []))
    messages.sort(key=lambda m: m["role"] != "system")
    case = {
        "id": ident,
        "say": " ".join(c["say"] for c in cases),
        "reference": " ".join(c["reference"] for c in cases),
        "terms": terms,
        "messages": messages,
        "dictionary": unique(t for c in cases for t in c.get("dictionary", [])),
        "distractors": [t for t in unique(t for c in cases for t in c.get("distractors", []))
                        if t not in terms],
        "voice": voice,
        "cases": [c["id"] for c in cases],
    }
    return {k: v for k, v in case.items() if v != [] or k in ("terms", "distractors")}


for half in ("tuning", "validation"):
    english = [c for c in map(json.loads, open(os.path.join(benches, "ctxset", f"{half}.jsonl")))
               if not c.get("languages") and not c.get("language")
               and "dictionary_file" not in c]
    bounds = np.linspace(0, len(english), DICTATIONS + 1).round().astype(int)
    audio = os.path.join(out, half, "audio")
    os.makedirs(audio, exist_ok=True)
    written, durs = [], []
    for n in range(DICTATIONS):
        part = english[bounds[n]:bounds[n + 1]]
        for engine, name in (("kokoro", KOKORO[n]), ("espeak", ESPEAK[n])):
            case = joined(part, f"{half[0]}{n + 1}_{engine}", f"{engine}:{name}")
            path = os.path.join(audio, f"{case['id']}.wav")
            durs.append(dictation(path, case["voice"], [c["say"] for c in part], kdir, 150))
            written.append(case)
    with open(os.path.join(out, half, "cases.jsonl"), "w") as f:
        for case in written:
            f.write(json.dumps(case) + "\n")
    print(f"ctxlong: {half}: {len(written)} files, {min(durs):.1f}-{max(durs):.1f} s, "
          f"{sum(len(c['terms']) for c in written) // 2} terms per voice")
PY
