# ctxscribe: the two README commands are `make serve` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
HOST ?= 127.0.0.1
PORT ?= 8080
export CTXSCRIBE_SHARED ?= $(abspath $(CURDIR)/../shared)

.PHONY: setup serve test lint fmt bench eval bench-venv header c-test python-test

## Install system packages, fetch + verify + convert the models (idempotent).
setup:
	bash scripts/setup.sh

## Set up if needed, then serve the embedded default model on $(HOST):$(PORT).
serve: setup
	$(CARGO) run --release --features server --example server -- --host $(HOST) --port $(PORT)

## Everything CI checks: formatting, lints, all tests on real audio and the real engine.
test: setup lint
	bash tests/fixtures/make-fixtures.sh target/fixtures/audio
	bash scripts/setup-test-venv.sh
	$(CARGO) test --release --workspace --all-features
	bash ffi/tests/run-c-tests.sh
	bash python/run-tests.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets --all-features -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --release --no-deps -p ctxscribe
	bash ffi/scripts/gen-header.sh --check

fmt:
	$(CARGO) fmt --all

## Side by side with faster-whisper (int8, same CTranslate2 weights, local venv): median
## latency, ratio, real-time factor, peak RSS, WER per clip size and on the context dev
## set; requests/s at 1, 2, 4 concurrent requests. BENCH_ARGS e.g. "--threads 1 --runs 3".
FW_VENV := target/venv-fw
bench: setup bench-venv
	$(CARGO) bench --bench speed -- --python $(FW_VENV)/bin/python --concurrency $(BENCH_ARGS)

bench-venv:
	@[ -x $(FW_VENV)/bin/python ] || python3 -m venv $(FW_VENV)
	@$(FW_VENV)/bin/python -c 'import faster_whisper' 2>/dev/null \
	  || $(FW_VENV)/bin/pip install --quiet -r benches/fw-requirements.txt

## Latency, real-time factor and WER per clip of ../shared/eval/real (ctxscribe alone).
eval: setup
	$(CARGO) bench --bench eval -- real

## Regenerate include/ctxscribe.h after changing ffi/src (pinned cbindgen); commit it.
header:
	bash ffi/scripts/gen-header.sh

## The C ABI's C/C++ tests alone (ASan + UBSan), on the real models.
c-test: setup
	bash ffi/tests/run-c-tests.sh

## The Python package alone: fresh venv, `pip install .`, stubtest, mypy --strict, pytest.
python-test: setup
	bash python/run-tests.sh
