# ctxscribe: the two README commands are `make serve` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
HOST ?= 127.0.0.1
PORT ?= 8080
export CTXSCRIBE_SHARED ?= $(abspath $(CURDIR)/../shared)

.PHONY: setup serve test lint fmt bench header c-test python-test

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

## Latency, real-time factor and WER per clip of ../shared/eval/real.
bench: setup
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
