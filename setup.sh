#!/usr/bin/env bash
# Set up flowc on a fresh Debian/Ubuntu machine, then check every seed flow.
#   - Debian packages: graphviz (the `dot` renderer), python3-venv and postgresql, when missing
#   - a virtual environment in .venv with flowc (editable) and its development tools
#   - `flowc check --strict flows/` as a first real run
# Safe to run again: every step skips what is already there.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing Debian packages: $*"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
if ! "$PYTHON" -c "import ensurepip, venv" >/dev/null 2>&1; then missing+=(python3-venv); fi
# The PostgreSQL server binaries, for the throwaway server test.sh starts (.ci/postgres).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then missing+=(postgresql); fi
# A headless browser and its driver, for the inspector's browser test (tests/inspect).
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip setuptools wheel
.venv/bin/python -m pip install -q -e ".[dev]"

echo "setup: flowc $(.venv/bin/flowc --version | cut -d' ' -f2) installed; checking the seed flows"
.venv/bin/flowc check --strict flows/
