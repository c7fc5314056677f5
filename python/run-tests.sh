#!/usr/bin/env bash
# Tests the Python package as a user gets it: a fresh venv and `pip install` of the
# manylinux abi3 wheel `make wheel` builds (what `pip install .` builds, audited for its
# manylinux tag; test_new_user.py installs the same wheel into a venv of its own, outside
# the checkout, with an empty HOME and no build tools on PATH), then
#   1. mypy.stubtest: python/ctxscribe/_native.pyi matches the compiled module,
#   2. mypy --strict on the tests: the stubs type real usage (and reject wrong types),
#   3. pytest python/tests against the INSTALLED package (real models, real audio).
# Usage: bash python/run-tests.sh [pytest arguments...]   (after `make setup`)
# Environment: PYTHON (default python3), CTXSCRIBE_PY_VENV (default target/venv-py),
# CARGO_TARGET_DIR (default target/, shared with cargo so the core is not rebuilt),
# CTXSCRIBE_MODEL_DIR (default models/: the library never looks into the checkout).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
VENV=${CTXSCRIBE_PY_VENV:-$ROOT/target/venv-py}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
export PIP_DISABLE_PIP_VERSION_CHECK=1

step() { printf '\n== python: %s\n' "$*"; }
elapsed() { echo "   ($(( $(date +%s) - $1 )) s)"; }

step "fixtures (real clips from the shared eval set)"
bash scripts/prepare-eval.sh "$ROOT/target/fixtures/real"

step "fresh venv $VENV ($("$PYTHON" --version))"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" || {
  echo "python/run-tests.sh: '$PYTHON -m venv' failed; on Debian install python3-venv" >&2
  exit 1
}
PY=$VENV/bin/python

step "make wheel (maturin builds the manylinux wheel; the first build compiles whisper.cpp)"
t=$(date +%s)
bash scripts/build-wheel.sh
WHEEL=$(ls "$ROOT"/target/wheels/ctxscribe-*.whl)
"$PY" -m pip install --quiet "$WHEEL"
elapsed "$t"
export CTXSCRIBE_TEST_WHEEL=$WHEEL
"$PY" -m pip show --files ctxscribe | grep -E '^(Name|Version|Location):|_native|py.typed'

step "test tools"
"$PY" -m pip install --quiet -r "$ROOT/python/requirements-test.txt"

# Run from a directory without a `ctxscribe` folder, so only the installed one is found.
cd "$VENV"
step "stubtest: _native.pyi against the compiled module"
"$PY" -m mypy.stubtest --mypy-config-file "$ROOT/python/tests/mypy.ini" ctxscribe

step "mypy --strict on the tests (the stubs as users see them)"
"$PY" -m mypy --config-file "$ROOT/python/tests/mypy.ini" --cache-dir "$ROOT/target/mypy-cache" "$ROOT/python/tests"

step "pytest against the installed package"
cd "$ROOT"
export CTXSCRIBE_MODEL_DIR=${CTXSCRIBE_MODEL_DIR:-$ROOT/models}
"$VENV/bin/pytest" -c "$ROOT/pyproject.toml" --rootdir "$ROOT" "$@"
