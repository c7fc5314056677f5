#!/usr/bin/env bash
# The real clips of ../shared/eval/real with context (make eval-real-context):
#   fbai             LibriSpeech rare words among 100 distractors (Le et al. 2021 lists)
#   irrelevant       another clip's list + unrelated messages (no term spoken)
#   irrelevant-1000  1000 unrelated terms + unrelated messages
# Each set without context (layers none) and with the library's default layers; prints
# score.py's rare-word recall, inserted terms and WER side by side, and the per-language
# WER of the real clips. Prints numbers, asserts nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CARGO=${CARGO:-cargo}
SHARED=${CTXSCRIBE_SHARED:-"$ROOT/../shared"}
OUT=target/realctx
bash scripts/prepare-eval.sh target/fixtures/real
python3 benches/realctx/make_sets.py target/fixtures/real "$OUT"
$CARGO bench --bench eval --no-run
rows=()
for set in fbai irrelevant irrelevant-1000; do
  for layers in none default; do
    # Without context the two irrelevant sets are the same decoding: run it once.
    if [ "$set" = irrelevant-1000 ] && [ "$layers" = none ]; then continue; fi
    line=$(CTXSCRIBE_EVAL_CONTEXT_DIR="$OUT/$set" $CARGO bench --bench eval -- context \
      --layers "$layers" | tee "target/bench/realctx-$set-$layers.log" | grep '^term_recall=' || true)
    log="target/bench/realctx-$set-$layers.log"
    hyps=$(sed -n 's/^written: //p' "$log")
    if [ "$set" = fbai ]; then
      # Scored in lower case (half of the references are in capitals); 9 of the clips,
      # so no per-language WER.
      python3 -c 'import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip():
        d = json.loads(line); d["text"] = (d.get("text") or "").lower(); print(json.dumps(d))' \
        "$hyps" >"$hyps.lower"
      python3 "$SHARED/eval/score.py" context "$OUT/fbai/cases.jsonl" "$hyps.lower" >"$log.lower"
      line="$(tail -n 1 "$log.lower" | sed 's/^summary: //') ${line#* wer=* }"
      real=""
      grep '^ERR' "$log.lower" || true
    else
      real=$(python3 "$SHARED/eval/score.py" real "$SHARED/eval/real/manifest.tsv" "$hyps" \
        | tail -n 1 | sed 's/^summary: //')
      grep '^ERR' "$log" | grep -v "inserted=\[\]" || true
    fi
    rows+=("$(printf '%-16s %-8s %s | %s' "$set" "$layers" "$line" "$real")")
  done
done
printf '%s\n' "${rows[@]}"
