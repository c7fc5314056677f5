#!/usr/bin/env bash
# `make load`: the reference server on loopback under SECS seconds of CONCURRENCY clients
# (examples/loadgen.rs: 6 in 10 requests a valid 1.8 s clip, 1 of them stream=true, the
# rest invalid), then a table of requests/s, p50/p99 latency, statuses, lost requests and
# the server's peak RSS.
#
#   usage: scripts/load.sh          env: SECS=60 CONCURRENCY=32 LOAD_MODEL=models/ggml-tiny.en.bin
#                                        LOAD_THREADS=1 SERVER_ARGS="--max-queue 8" LOADGEN_ARGS=--backoff
# Fails if a request got no answer or a status other than 200 / 4xx / 503.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SECS=${SECS:-60}
CONCURRENCY=${CONCURRENCY:-32}
MODEL=${LOAD_MODEL:-models/ggml-tiny.en.bin}
THREADS=${LOAD_THREADS:-1}
CARGO=${CARGO:-cargo}

"$CARGO" build --release --features server --example server --example loadgen
bash scripts/prepare-eval.sh target/fixtures/real >/dev/null
CLIP=target/fixtures/real/en_google_brooklyn_bridge.wav

LOG=$(mktemp -d)/server.log
# shellcheck disable=SC2086
target/release/examples/server --host 127.0.0.1 --port 0 --log-format json \
    --model "$MODEL" --threads "$THREADS" ${SERVER_ARGS:-} 2>"$LOG" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
ADDR=
for _ in $(seq 600); do
    ADDR=$(grep -o '"addr":"[^"]*"' "$LOG" | head -1 | cut -d'"' -f4 || true)
    [ -n "$ADDR" ] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; exit 1; }
    sleep 0.1
done
[ -n "$ADDR" ] || { echo "load: the server did not start" >&2; cat "$LOG"; exit 1; }
grep -o '"max_concurrent":[0-9]*,"max_queue":[0-9]*' "$LOG" | head -1
echo "load: $CONCURRENCY clients for $SECS s against $ADDR ($(basename "$MODEL"), $THREADS thread(s)); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
# shellcheck disable=SC2086
target/release/examples/loadgen --addr "$ADDR" --concurrency "$CONCURRENCY" --secs "$SECS" \
    --clip "$CLIP" --pid "$SERVER" ${LOADGEN_ARGS:-} || status=$?
echo "load: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# The server is still healthy and idle afterwards.
kill -TERM "$SERVER"
wait "$SERVER" || { echo "load: the server exited with $?" >&2; status=1; }
trap - EXIT
grep -c '"message":"request"' "$LOG" | sed 's/^/load: access-log lines: /'
exit $status
