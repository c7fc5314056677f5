#!/usr/bin/env bash
# `make scale-test`: ctxscribe-server replicas on loopback behind nginx
# (deploy/nginx/ctxscribe.conf.template), loaded by examples/loadgen.rs (`make load`'s
# client: 6 in 10 requests a valid clip, the rest invalid), in four runs:
#   1 replica | 2 replicas | 2 replicas, one SIGTERMed half-way (then restarted: it
#   reloads its model while nginx sends everything to the other) | 2 replicas, one
#   SIGKILLed half-way.
# Prints one table row per run: requests answered, lost (no answer, or a 5xx other than
# 503 from the balancer), valid clips with a wrong text (loadgen --expect-text: the text
# of a direct call to a replica), p50/p99 latency, requests/s and the replicas' peak RSS
# (VmHWM, since each replica started).
#
#   usage: scripts/scale-test.sh   env: SECS=30 CONCURRENCY=8 SCALE_MODEL=models/ggml-tiny.en.bin
#                                       SCALE_THREADS=1 SERVER_ARGS=... NGINX=nginx
# Fails if a run lost a request or gave a wrong text, or a SIGTERMed replica did not
# exit 0 (it drains: finishes its requests in flight).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SECS=${SECS:-30}
CONCURRENCY=${CONCURRENCY:-8}
MODEL=${SCALE_MODEL:-models/ggml-tiny.en.bin}
THREADS=${SCALE_THREADS:-1}
NGINX=${NGINX:-nginx}
CARGO=${CARGO:-cargo}
command -v "$NGINX" >/dev/null || NGINX=/usr/sbin/nginx
[ -x "$(command -v "$NGINX")" ] || { echo "scale-test: nginx is missing; run make setup" >&2; exit 1; }

"$CARGO" build --release --features server --bin ctxscribe-server --example loadgen
bash scripts/prepare-eval.sh target/fixtures/real >/dev/null
CLIP=target/fixtures/real/en_google_brooklyn_bridge.wav
SERVER=target/release/ctxscribe-server
LOADGEN=target/release/examples/loadgen

RUN=$(mktemp -d "${TMPDIR:-/tmp}/ctxscribe-scale.XXXXXX")
chmod 755 "$RUN" # nginx's workers may run as another user when started as root
declare -A PID=() PORT=()
NGINX_PID=
cleanup() {
    for name in "${!PID[@]}"; do kill -KILL "${PID[$name]}" 2>/dev/null || true; done
    [ -z "$NGINX_PID" ] || kill -TERM "$NGINX_PID" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_health PORT: until GET /health answers 200 (the server listens once its model is loaded).
wait_health() {
    for _ in $(seq 1200); do
        curl -sf -o /dev/null "http://127.0.0.1:$1/health" && return 0
        sleep 0.1
    done
    echo "scale-test: nothing healthy on port $1" >&2
    return 1
}

# start_replica NAME: a server on PORT[NAME] (a new free port the first time).
start_replica() {
    local name=$1
    [ -n "${PORT[$name]:-}" ] || PORT[$name]=$(free_port)
    # shellcheck disable=SC2086
    "$SERVER" --host 127.0.0.1 --port "${PORT[$name]}" --log-format json --model "$MODEL" \
        --threads "$THREADS" ${SERVER_ARGS:-} 2>>"$RUN/$name.log" &
    PID[$name]=$!
    wait_health "${PORT[$name]}"
}

# start_nginx NAME...: the balancer in front of those replicas, on a new port.
start_nginx() {
    if [ -n "$NGINX_PID" ]; then
        kill -TERM "$NGINX_PID"
        wait "$NGINX_PID" || true
    fi
    LB_PORT=$(free_port)
    local upstreams=""
    for name in "$@"; do
        upstreams+="        server 127.0.0.1:${PORT[$name]} max_fails=1 fail_timeout=2s;\\n"
    done
    sed -e "s|@RUNDIR@|$RUN|g" -e "s|@LISTEN@|127.0.0.1:$LB_PORT|" \
        -e "s|@UPSTREAMS@|$upstreams|" deploy/nginx/ctxscribe.conf.template >"$RUN/nginx.conf"
    "$NGINX" -p "$RUN" -c "$RUN/nginx.conf" -e "$RUN/error.log" &
    NGINX_PID=$!
    wait_health "$LB_PORT"
}

ROWS=()
# load LABEL [EVENT]: loadgen through the balancer for SECS s; EVENT (term|kill) hits
# replica b half-way.
load() {
    local label=$1 event=${2:-} out="$RUN/load-$1.txt" status=0
    # shellcheck disable=SC2086
    "$LOADGEN" --addr "127.0.0.1:$LB_PORT" --concurrency "$CONCURRENCY" --secs "$SECS" \
        --clip "$CLIP" --expect-text "$EXPECTED" ${LOADGEN_ARGS:-} >"$out" 2>&1 &
    local client=$!
    if [ -n "$event" ]; then
        sleep "$((SECS / 2))"
        if [ "$event" = term ]; then
            kill -TERM "${PID[b]}"
            wait "${PID[b]}" || { echo "scale-test: replica b exited with $? after SIGTERM" >&2; status=1; }
            grep -h '"shutting down' "$RUN/b.log" | tail -1 | grep -o '"in_flight":[0-9]*,"waiting":[0-9]*' \
                | sed 's/^/scale-test: replica b at SIGTERM: /' || true
            # Back again: it loads its model while nginx sends everything to a.
            start_replica b
        else
            kill -KILL "${PID[b]}"
            wait "${PID[b]}" 2>/dev/null || true
            unset 'PID[b]'
        fi
    fi
    wait "$client" || status=1
    cat "$out"
    echo "scale-test: nginx retried on another replica so far: $(grep -c 'upstream' "$RUN/error.log" || true) times"
    field() { awk -F'|' -v k="$1" '$2 ~ k { gsub(/^ +| +$/, "", $3); print $3; exit }' "$out"; }
    local valid; valid=$(awk -F'|' '$2 ~ /Valid/ && $3 ~ /200/ { gsub(/^ +| +$/, "", $4); print $4 }' "$out")
    local wrong; wrong=$(grep -o 'than .*: [0-9]*$' "$out" | grep -o '[0-9]*$' || echo "?")
    local rss="" name
    for name in a b; do
        [ -n "${PID[$name]:-}" ] || continue
        rss+="$name $(awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/${PID[$name]}/status" 2>/dev/null || echo '?') MiB "
    done
    ROWS+=("| $label | $(field 'requests answered') | $(field 'requests lost') | ${wrong} | ${valid:-0} | $(field 'latency p50') | $(field 'latency p99') | $(field throughput) | ${rss% } |")
    return $status
}

start_replica a
start_replica b
EXPECTED=$(curl -sf "http://127.0.0.1:${PORT[a]}/v1/audio/transcriptions" -F "file=@$CLIP" \
    -F dictionary=Brooklyn | python3 -c 'import json, sys; print(json.load(sys.stdin)["text"])')
echo "scale-test: expected text (a direct call): $EXPECTED"
echo "scale-test: $CONCURRENCY clients, $SECS s per run, $(basename "$MODEL"), $THREADS thread(s) per replica, $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

failed=0
start_nginx a
load "1 replica" || failed=1
start_nginx a b
load "2 replicas" || failed=1
load "2 replicas, SIGTERM one half-way" term || failed=1
load "2 replicas, SIGKILL one half-way" kill || failed=1

echo
echo "| run | answered | lost | wrong text | valid 200 | p50 | p99 | throughput | peak RSS (VmHWM) |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo "scale-test: load average after: $(cut -d' ' -f1-3 /proc/loadavg); logs in $RUN"
[ "$failed" -eq 0 ] || echo "scale-test: FAILED" >&2
exit "$failed"
