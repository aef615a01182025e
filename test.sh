#!/usr/bin/env bash
# The whole test suite: style (ruff), types (mypy) and pytest (with a throwaway PostgreSQL
# server, .ci/postgres). Run ./setup.sh once first.
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
# A throwaway PostgreSQL server for the store tests, stopped on any exit. A URL already set in
# FLOWC_TEST_POSTGRES_URL is used as it is. With CI=true its tests must run, so no server fails.
pg_dir=""
stop_postgres() { if [ -n "$pg_dir" ]; then .ci/postgres stop "$pg_dir"; fi; }
trap stop_postgres EXIT
trap 'exit 130' INT TERM
if [ -z "${FLOWC_TEST_POSTGRES_URL:-}" ]; then
  pg_dir=$(mktemp -d)
  if url=$(.ci/postgres start "$pg_dir" -c fsync=off -c full_page_writes=off); then
    export FLOWC_TEST_POSTGRES_URL=$url
    echo "test: PostgreSQL at $url"
  elif [ "${CI:-}" = "true" ]; then
    echo "test: could not start PostgreSQL, and CI needs its tests" >&2
    exit 1
  else
    echo "test: no PostgreSQL server; its tests are skipped" >&2
  fi
fi
.venv/bin/python -m pytest "$@"
