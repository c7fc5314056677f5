#!/usr/bin/env bash
# Creates the Python virtual environment of the server's OpenAI SDK test
# (tests/server.rs, openai_python_sdk): target/venv-openai with the official `openai`
# package at a pinned version. Idempotent: does nothing when it is already there.
#   usage: scripts/setup-test-venv.sh [VENV_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${1:-"$ROOT/target/venv-openai"}
OPENAI_VERSION=3.54.0

if [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import openai, sys; sys.exit(openai.__version__ != '$OPENAI_VERSION')" 2>/dev/null; then
    exit 0
fi
command -v python3 >/dev/null || { echo "setup-test-venv: python3 is required" >&2; exit 1; }
echo "setup-test-venv: installing openai==$OPENAI_VERSION into $VENV"
python3 -m venv "$VENV" || {
    echo "setup-test-venv: python3 -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
}
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "openai==$OPENAI_VERSION"
"$VENV/bin/python" -c "import openai; print('setup-test-venv: openai', openai.__version__)"
