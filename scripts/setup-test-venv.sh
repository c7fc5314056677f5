#!/usr/bin/env bash
# Creates the Python virtual environment of the server's OpenAI SDK tests
# (tests/server/, tests/server_apps.rs, tests/server_streaming.rs) and its browser page
# test (tests/browser_page.rs):
# target/venv-openai with the official `openai` package and Selenium (which drives
# Debian's chromium through Debian's chromedriver; scripts/setup.sh installs both), at
# pinned versions. Idempotent: does nothing when they are already there.
#   usage: scripts/setup-test-venv.sh [VENV_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${1:-"$ROOT/target/venv-openai"}
OPENAI_VERSION=3.54.0
SELENIUM_VERSION=4.50.0

if [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import openai, selenium, sys; sys.exit(openai.__version__ != '$OPENAI_VERSION' or selenium.__version__ != '$SELENIUM_VERSION')" 2>/dev/null; then
    exit 0
fi
command -v python3 >/dev/null || { echo "setup-test-venv: python3 is required" >&2; exit 1; }
echo "setup-test-venv: installing openai==$OPENAI_VERSION selenium==$SELENIUM_VERSION into $VENV"
python3 -m venv "$VENV" || {
    echo "setup-test-venv: python3 -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
}
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "openai==$OPENAI_VERSION" "selenium==$SELENIUM_VERSION"
"$VENV/bin/python" -c "import openai, selenium; print('setup-test-venv: openai', openai.__version__, 'selenium', selenium.__version__)"
