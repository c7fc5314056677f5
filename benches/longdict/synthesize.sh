#!/usr/bin/env bash
# Long-dictation set "longdict": six English dictations of 11-12 sentences, each spoken
# by one Kokoro and one espeak-ng voice (12 files, 38-52 s), sentences joined with 0.6 s
# pauses (../dictation_tts.py).
#
# Usage: benches/longdict/synthesize.sh [OUT]      (OUT defaults to target/longdict)
#
# tuning.jsonl (t1-t3) and validation.jsonl (v1-v3): fields id, voice (kokoro:NAME, or
# espeak:VOICE at 160 wpm), sentences. The halves share no dictation: tune on tuning/,
# report validation/. The sentences are ordinary dictation (status notes, minutes) whose
# nouns ("the billing module", "the job") a decoder may write with a capital.
# Kokoro is set up by ../kokoro-setup.sh into a venv beside OUT (OUT/../venv-tts).
# Output (idempotent): OUT/{tuning,validation}/{cases.jsonl,audio/<id>.wav}, 16 kHz mono
# 16-bit, 0.3 s of silence at both ends. Scored by benches/longdict/bench.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/longdict}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
venv="${CTXSET_TTS_VENV:-$(dirname "$out")/venv-tts}"
command -v espeak-ng >/dev/null || { echo "longdict: espeak-ng is required" >&2; exit 1; }
# shellcheck source=../kokoro-setup.sh
source "$here/../kokoro-setup.sh"
setup_kokoro || { echo "longdict: Kokoro could not be set up (see above)" >&2; exit 1; }
export OMP_NUM_THREADS=1
"$venv/bin/python" - "$here" "$out" "$venv/kokoro" <<'PY'
import json, os, sys

here, out, kdir = sys.argv[1:4]
sys.path.insert(0, os.path.dirname(here))
from dictation_tts import dictation  # noqa: E402

for half in ("tuning", "validation"):
    cases = [json.loads(l) for l in open(os.path.join(here, f"{half}.jsonl")) if l.strip()]
    audio = os.path.join(out, half, "audio")
    os.makedirs(audio, exist_ok=True)
    durs = [dictation(os.path.join(audio, f"{c['id']}.wav"), c["voice"], c["sentences"], kdir, 160)
            for c in cases]
    with open(os.path.join(out, half, "cases.jsonl"), "w") as f:
        for c in cases:
            f.write(json.dumps({**c, "reference": " ".join(c["sentences"])}) + "\n")
    print(f"longdict: {half}: {len(cases)} files, {min(durs):.1f}-{max(durs):.1f} s")
PY
