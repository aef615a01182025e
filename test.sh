#!/usr/bin/env bash
# The whole test suite: style (ruff), types (mypy) and pytest. Run ./setup.sh once first.
# Extra arguments go to pytest, e.g. ./test.sh -k lint -x
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  echo "test: no .venv here; run ./setup.sh first" >&2
  exit 2
fi
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.ci/typecheck
echo "== pytest"
.venv/bin/python -m pytest "$@"
