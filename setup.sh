#!/usr/bin/env bash
# Set up flowc on a fresh Debian/Ubuntu machine, then check every seed flow.
#   - Debian packages: graphviz (the `dot` renderer), python3-venv and postgresql, when missing
#   - a virtual environment in .venv with flowc (editable) and its development tools
#   - Node.js and npm (Debian's nodejs, npm) when missing, and the TypeScript runtime's pinned
#     development tools (`npm ci` in runtime-ts/)
#   - `flowc check --strict flows/` as a first real run
# Safe to run again: every step skips what is already there.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}

# quietly WHAT COMMAND...: run COMMAND with its output in a log, shown only if it fails (apt's
# debconf notes and pip's notes about this machine's package indexes are noise when all is well).
quietly() {
  local what=$1 log status=0
  shift
  log=$(mktemp)
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "setup: $what failed (exit $status); its output:" >&2
    cat "$log" >&2
    rm -f "$log"
    exit "$status"
  fi
  rm -f "$log"
}

apt_install() {
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  echo "setup: installing Debian packages: $*"
  # env inside sudo: sudo drops the caller's environment, and debconf would then try a dialog.
  quietly "apt-get update" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  quietly "apt-get install $*" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q "$@"
}

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
if ! "$PYTHON" -c "import ensurepip, venv" >/dev/null 2>&1; then missing+=(python3-venv); fi
# The PostgreSQL server binaries, for the throwaway server test.sh starts (.ci/postgres).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then missing+=(postgresql); fi
# A headless browser and its driver, for the inspector's browser test (tests/inspector).
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
# Node.js and npm for the TypeScript runtime (runtime-ts/): Debian's are recent enough (18+).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
quietly "pip install --upgrade pip setuptools wheel" \
  .venv/bin/python -m pip install --upgrade pip setuptools wheel
echo "setup: installing flowc (editable) and its development tools"
quietly "pip install -e .[dev]" .venv/bin/python -m pip install -e ".[dev]"

echo "setup: installing the TypeScript runtime's development tools (npm ci in runtime-ts)"
quietly "npm ci" npm --prefix runtime-ts ci --no-audit --no-fund

echo "setup: flowc $(.venv/bin/flowc --version | cut -d' ' -f2) installed; checking the seed flows"
.venv/bin/flowc check --strict flows/
