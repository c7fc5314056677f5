# ctxscribe: the two README commands are `make serve` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
HOST ?= 127.0.0.1
PORT ?= 8080
# Cargo features of every build here: the server, plus a GPU backend if you name one
# (`make serve FEATURES=server,vulkan`; also cuda, metal, hipblas, openblas: each needs its
# toolkit). Never --all-features: that would ask for every GPU toolkit at once.
export FEATURES ?= server
export CTXSCRIBE_SHARED ?= $(abspath $(CURDIR)/../shared)
# The models: `make setup` installs them where the library looks (`ctxscribe models dir`,
# ~/.local/share/ctxscribe/models by default) and links the checkout's models/ there.

PREFIX ?= /usr/local

.PHONY: install wheel setup serve test test-vulkan lint fmt bench bench-contention bench-langid bench-longdict bench-ctxlong bench-ctxforeign bench-portable eval eval-real-context bench-venv header c-test python-test try-llm fuzz fuzz-smoke ingest-cost load scale-test

## Install system packages, fetch + verify + convert the models (idempotent).
setup:
	bash scripts/setup.sh

## Set up if needed, then serve the embedded default model on $(HOST):$(PORT)
## (`make serve PORT=9000 HOST=0.0.0.0`). The build shows its progress.
serve: setup
	$(CARGO) build --release --features $(FEATURES) --bin ctxscribe-server
	@echo "serve: starting target/release/ctxscribe-server on http://$(HOST):$(PORT)/ (Ctrl-C stops it)"
	target/release/ctxscribe-server --host $(HOST) --port $(PORT)

## Everything CI checks: formatting, lints, all tests on real audio and the real engine.
test: setup lint
	bash tests/fixtures/make-fixtures.sh target/fixtures/audio
	bash scripts/setup-test-venv.sh
	$(CARGO) test --release --workspace --features $(FEATURES)
	bash scripts/check-package.sh
	bash ffi/tests/run-c-tests.sh
	bash python/run-tests.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets --features $(FEATURES) -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --release --no-deps -p ctxscribe
	bash ffi/scripts/gen-header.sh --check

fmt:
	$(CARGO) fmt --all

## Side by side with faster-whisper (int8, same CTranslate2 weights, local venv): median
## latency, ratio, real-time factor, peak RSS, WER per clip size and on the context dev
## set; requests/s at 1, 2, 4 concurrent requests. BENCH_ARGS e.g. "--threads 1 --runs 3".
FW_VENV := target/venv-fw
bench: setup bench-venv
	bash benches/ctxset/synthesize.sh
	$(CARGO) bench --bench speed -- --python $(FW_VENV)/bin/python --concurrency $(BENCH_ARGS)

bench-venv:
	@[ -x $(FW_VENV)/bin/python ] || python3 -m venv $(FW_VENV)
	@$(FW_VENV)/bin/python -c 'import faster_whisper' 2>/dev/null \
	  || $(FW_VENV)/bin/pip install --quiet -r benches/fw-requirements.txt

## Latency on four real clips quiet, beside one CPU-bound process, and as two processes at
## once: ctxscribe beside faster-whisper (per-clip ratios to the quiet time).
bench-contention: setup bench-venv
	$(CARGO) build --release --features $(FEATURES) --bin ctxscribe
	python3 benches/contention.py --fw-python $(FW_VENV)/bin/python

## Short clips in six languages: empty transcripts, clips heard in another language, WER
## and latency for languages auto / forced / a set, beside faster-whisper (both halves).
bench-langid: setup bench-venv
	bash benches/langid/synthesize.sh
	$(CARGO) build --release --features $(FEATURES) --bin ctxscribe
	python3 benches/langid/bench.py --fw-python $(FW_VENV)/bin/python

## Long dictation (38-52 s, 11-12 sentences): WER, sentences written twice, capitals
## mid-sentence, beside faster-whisper (both halves).
bench-longdict: setup bench-venv
	bash benches/longdict/synthesize.sh
	$(CARGO) build --release --features $(FEATURES) --bin ctxscribe
	python3 benches/longdict/bench.py --fw-python $(FW_VENV)/bin/python

## Long dictation with context (41-66 s, 12-14 sentences, the union of their context):
## term recall, false insertions, WER and time beside faster-whisper prompted (both halves).
bench-ctxlong: setup bench-venv
	bash benches/ctxlong/synthesize.sh
	$(CARGO) bench --bench speed -- --python $(FW_VENV)/bin/python --runs 1 --sets ctxlong-tuning,ctxlong-validation

## Context on hard non-English audio: the German, French and Spanish cases of the ctxset
## spoken by espeak-ng voices of each language, beside faster-whisper prompted (both halves).
bench-ctxforeign: setup bench-venv
	CTXSET_FOREIGN_ESPEAK=1 bash benches/ctxset/synthesize.sh
	$(CARGO) bench --bench speed -- --python $(FW_VENV)/bin/python --runs 1 --sets ctxforeign-tuning,ctxforeign-validation

## Latency, real-time factor and WER per clip of ../shared/eval/real (ctxscribe alone).
eval: setup
	$(CARGO) bench --bench eval -- real

## The real clips with context: LibriSpeech rare-word lists (rare words right, no
## distractor inserted), an irrelevant context and 1000 unrelated terms (WER unchanged).
eval-real-context: setup
	bash benches/realctx/run.sh

## Regenerate include/ctxscribe.h after changing ffi/src (pinned cbindgen); commit it.
header:
	bash ffi/scripts/gen-header.sh

## The Python package as a manylinux abi3 wheel in target/wheels/ (portable engine; pip
## installs it without Rust or cmake).
wheel:
	bash scripts/build-wheel.sh

## The portable engine (run-time CPU kernels) beside a -march=native build
## (CTXSCRIBE_NATIVE=1, target/native), same files, one run.
bench-portable: setup
	python3 benches/portable.py

## The C library for C/C++ hosts: lib/libctxscribe.{so,a}, include/ctxscribe.h,
## lib/pkgconfig/ctxscribe.pc, lib/cmake/ctxscribe (`make install PREFIX=$$HOME/.local`).
install:
	bash scripts/install-c.sh $(PREFIX)

## The C ABI's C/C++ tests alone (ASan + UBSan), on the real models.
c-test: setup
	bash ffi/tests/run-c-tests.sh

## The engine's Vulkan build on Mesa's CPU Vulkan driver (lavapipe), so the GPU path keeps
## working without a GPU: builds `--features server,vulkan` and runs engine tests with
## CTXSCRIBE_DEVICE=gpu (a typed error, not a CPU run, if the device cannot start).
## CTXSCRIBE_NATIVE=1: the CPU beside the GPU gets whisper.cpp's -march=native kernels
## only, not the eight portable variants (~10 min of compiling on 2 cores that this test
## never runs); the Vulkan features are a build of their own in target/ either way.
VULKAN_TESTS ?= the_engine_says_which_device
test-vulkan: setup
	VULKAN_SDK=$$(bash scripts/setup-vulkan.sh) && export VULKAN_SDK \
	  && CTXSCRIBE_NATIVE=1 GGML_VK_VISIBLE_DEVICES=0 CTXSCRIBE_DEVICE=gpu $(CARGO) test --release \
	  --features server,vulkan --test engine -- $(VULKAN_TESTS)

## The Python package alone: fresh venv, `pip install .`, stubtest, mypy --strict, pytest.
python-test: setup
	bash python/run-tests.sh

## Try the LLM correction step with a real local LLM (manual; not run in CI). Start any
## OpenAI-compatible chat server first, e.g. llama.cpp's
##   llama-server -m qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --port 8081 -t 1
## (1 thread: 2 threads were ~18x slower on this 2-core machine; see ../shared/CONTEXT.md),
## then: make try-llm LLM_URL=http://127.0.0.1:8081 CLIP=note.wav DICTIONARY='["kubectl"]'
## It serves with CTXSCRIBE_LLM_URL set and posts CLIP; the server log shows the timings.
LLM_URL ?=
LLM_MODEL ?= local
CLIP ?=
DICTIONARY ?= []
TRY_PORT ?= 8090
try-llm: setup
	@test -n "$(LLM_URL)" || { echo "set LLM_URL to an OpenAI-compatible chat server"; exit 2; }
	@test -f "$(CLIP)" || { echo "set CLIP to an audio file"; exit 2; }
	$(CARGO) build --release --features server --example server
	CTXSCRIBE_LLM_URL='$(LLM_URL)' CTXSCRIBE_LLM_MODEL='$(LLM_MODEL)' \
	  target/release/examples/server --host 127.0.0.1 --port $(TRY_PORT) & pid=$$!; \
	  trap 'kill $$pid' EXIT; \
	  for i in $$(seq 120); do curl -sf http://127.0.0.1:$(TRY_PORT)/health >/dev/null && break; sleep 1; done; \
	  curl -s http://127.0.0.1:$(TRY_PORT)/v1/audio/transcriptions -F file=@'$(CLIP)' \
	    -F 'dictionary=$(DICTIONARY)'; echo

## Fuzz every target (fuzz/: cargo-fuzz, stable toolchain) for FUZZ_SECS seconds each, or FUZZ_RUNS
## executions each; crashes land in fuzz/artifacts/.
FUZZ_SECS ?= 300
fuzz:
	bash fuzz/run.sh $(FUZZ_SECS)

## CI's fuzz smoke: every target for 60 s (installs cargo-fuzz from crates.io if missing;
## the first build compiles whisper.cpp again, for this CPU only).
fuzz-smoke:
	bash fuzz/run.sh 60

## CPU time of audio ingestion over the fixtures, the hostile fixtures and the fuzz corpus:
## the worst ten per MiB; fails if one is over 2 s/MiB or a 2 h silence bomb takes >= 0.5 s.
ingest-cost:
	bash tests/fixtures/make-fixtures.sh target/fixtures/audio
	bash tests/fixtures/make-hostile.sh target/fixtures/hostile
	bash fuzz/seed-corpus.sh
	$(CARGO) run --release --example ingest_cost

## Load test on loopback: SECS=60 CONCURRENCY=32 clients, valid clips (some streamed) mixed with invalid requests.
load: setup
	bash scripts/load.sh

## Two replicas behind nginx on loopback (deploy/nginx/): SECS=30 CONCURRENCY=8 per run; 1 vs
## 2 replicas, then one SIGTERMed and one SIGKILLed mid-run. A table of answered, lost,
## wrong texts, p50/p99 and requests/s; fails if a request was lost or got a wrong text.
scale-test: setup
	bash scripts/scale-test.sh
