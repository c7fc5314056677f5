#!/usr/bin/env bash
# Runs every fuzz target for SECS seconds each (default 300), one after the other, and
# prints one summary line per target. Exits non-zero if any target crashed (libFuzzer
# writes the input to fuzz/artifacts/<target>/).
#
#   usage: fuzz/run.sh [SECS] [TARGET...]
#
# FUZZ_RUNS=N stops each target after N executions instead (SECS is then a safety cap).
# Inputs slower than 1 s are reported in the log (-report_slow_units). The summary line
# gives the executions, their rate and the coverage; the corpora grow in fuzz/corpus/
# (not committed; fuzz/seed-corpus.sh regenerates the seeds, fuzz/minimize.sh merges a
# grown corpus down).
#
# cargo-fuzz is installed into target/tools/cargo-fuzz on first use (crates.io, --locked).
# Toolchain: the default one; stable is enough, because without a sanitizer (`-s none`)
# cargo-fuzz passes only stable flags (-Cpasses=sancov-module, -Cllvm-args=..., --cfg
# fuzzing). FUZZ_TOOLCHAIN=nightly (or any rustup toolchain) runs on another.
# Sanitizer: none. The targets run safe Rust (the only `unsafe` is the engine binding,
# not fuzzed) plus C decoders (libopus) that the sanitizer flags would not instrument
# anyway; without ASan each target runs 2-3x more executions. Debug assertions are on
# everywhere, overflow checks in our crates (fuzz/Cargo.toml says why not in the
# dependencies), so integer overflow in our code panics.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SECS=${1:-300}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(audio_ingest context_fields multipart_form)

# The targets never run the engine, but the crate links whisper.cpp: build it for this CPU
# only (whisper-rs-sys's -march=native), not the portable engine's eight kernel variants,
# which would add ~10 min of compiling on 2 cores to every fresh fuzz/target.
export CTXSCRIBE_NATIVE=1

TOOLS=$ROOT/target/tools/cargo-fuzz
if [ ! -x "$TOOLS/bin/cargo-fuzz" ]; then
    cargo install cargo-fuzz --version 0.13.2 --locked --root "$TOOLS"
fi
export PATH=$TOOLS/bin:$PATH
bash "$HERE/seed-corpus.sh"
cd "$HERE"
TOOLCHAIN=()
[ -z "${FUZZ_TOOLCHAIN:-}" ] || TOOLCHAIN=("+$FUZZ_TOOLCHAIN")
cargo "${TOOLCHAIN[@]}" fuzz build -s none

# audio_ingest: the seeds are 1-32 KiB; longer inputs only make executions slower.
declare -A MAX_LEN=([audio_ingest]=32768 [context_fields]=65536 [multipart_form]=131072)
RUNS_FLAG=()
[ -z "${FUZZ_RUNS:-}" ] || RUNS_FLAG=(-runs="$FUZZ_RUNS")
status=0
for target in "${TARGETS[@]}"; do
    log=$HERE/artifacts/$target.log
    mkdir -p "$HERE/artifacts/$target"
    started=$(date +%s)
    if cargo "${TOOLCHAIN[@]}" fuzz run -s none "$target" "corpus/$target" -- \
        -max_total_time="$SECS" "${RUNS_FLAG[@]}" -max_len="${MAX_LEN[$target]:-65536}" \
        -timeout=30 -rss_limit_mb=2048 -report_slow_units=1 -print_final_stats=1 \
        >"$log" 2>&1; then
        result=ok
    else
        result=CRASH
        status=1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
    secs=$(($(date +%s) - started))
    slow=$(grep -c 'Slowest unit' "$log" || true)
    echo "fuzz: $target: $result, $runs executions in ${secs}s ($((${runs//\?/0} / (secs > 0 ? secs : 1)))/s), coverage $cov edges, $slow slow-unit reports (log: $log)"
done
exit $status
