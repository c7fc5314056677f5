#!/usr/bin/env bash
# Runs every fuzz target for SECS seconds each (default 300), one after the other, on
# the nightly toolchain, and prints one summary line per target. Exits non-zero if any
# target crashed (libFuzzer writes the input to fuzz/artifacts/<target>/).
#
#   usage: fuzz/run.sh [SECS] [TARGET...]
#
# cargo-fuzz is installed into target/tools/cargo-fuzz on first use (crates.io, --locked).
# Sanitizer: none. The targets run safe Rust (the only `unsafe` is the engine binding,
# not fuzzed) plus C decoders (libopus) that the sanitizer flags would not instrument
# anyway; without ASan each target runs 2-3x more executions. Debug assertions (-a) are
# on, so integer overflow panics.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SECS=${1:-300}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(audio_ingest context_fields multipart_form)

TOOLS=$ROOT/target/tools/cargo-fuzz
if [ ! -x "$TOOLS/bin/cargo-fuzz" ]; then
    cargo install cargo-fuzz --version 0.13.2 --locked --root "$TOOLS"
fi
export PATH=$TOOLS/bin:$PATH
bash "$HERE/seed-corpus.sh"
cd "$HERE"
cargo +nightly fuzz build -s none -a

declare -A MAX_LEN=([audio_ingest]=131072 [context_fields]=65536 [multipart_form]=131072)
status=0
for target in "${TARGETS[@]}"; do
    log=$HERE/artifacts/$target.log
    mkdir -p "$HERE/artifacts/$target"
    if cargo +nightly fuzz run -s none -a "$target" "corpus/$target" -- \
        -max_total_time="$SECS" -max_len="${MAX_LEN[$target]:-65536}" -timeout=30 \
        -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        result=ok
    else
        result=CRASH
        status=1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
    echo "fuzz: $target: $result, $runs executions in ${SECS}s, coverage $cov edges (log: $log)"
done
exit $status
