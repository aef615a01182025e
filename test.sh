#!/usr/bin/env bash
# The whole test suite: style (ruff), types (mypy), pytest (with a throwaway PostgreSQL
# server, .ci/postgres) and the TypeScript runtime's checks (`npm run check` in runtime-ts:
# tsc, eslint, vitest). Run ./setup.sh once first.
# Extra arguments go to pytest, e.g. ./test.sh -k lint -x
# pytest runs on one worker per core (pytest-xdist; FLOWC_TEST_WORKERS=N for N workers), unless
# the arguments choose for themselves (-n N, -p no:xdist, --pdb). mypy and the TypeScript checks
# run meanwhile, as the tests wait on processes and sockets, and their reports follow pytest's.
# With arguments (a chosen part of pytest) the TypeScript checks are left out.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  echo "test: no .venv here; run ./setup.sh first" >&2
  exit 2
fi
ts_check=$([ $# -eq 0 ] && echo yes || echo no)
if [ "$ts_check" = yes ] && [ ! -x runtime-ts/node_modules/.bin/tsc ]; then
  echo "test: no runtime-ts/node_modules; run ./setup.sh first" >&2
  exit 2
fi
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .

pg_dir=""
mypy_pid=""
mypy_log=$(mktemp)
ts_pid=""
ts_log=$(mktemp)
cleanup() {
  if [ -n "$mypy_pid" ]; then kill -- "-$mypy_pid" 2>/dev/null || kill "$mypy_pid" 2>/dev/null || true; fi
  if [ -n "$ts_pid" ]; then kill -- "-$ts_pid" 2>/dev/null || kill "$ts_pid" 2>/dev/null || true; fi
  if [ -n "$pg_dir" ]; then .ci/postgres stop "$pg_dir"; fi
  rm -f "$mypy_log" "$ts_log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# In a process group of its own (setsid), so that an interrupted run stops mypy too.
setsid .ci/typecheck >"$mypy_log" 2>&1 &
mypy_pid=$!
if [ "$ts_check" = yes ]; then
  setsid npm --prefix runtime-ts run --silent check >"$ts_log" 2>&1 &
  ts_pid=$!
fi

echo "== pytest"
# A throwaway PostgreSQL server for the store tests, stopped on any exit. A URL already set in
# FLOWC_TEST_POSTGRES_URL is used as it is. With CI=true its tests must run, so no server fails.
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
workers=(-n "${FLOWC_TEST_WORKERS:-auto}" --dist worksteal)
for arg in "$@"; do
  case "$arg" in
  -n | -n* | --numprocesses* | no:xdist | -pno:xdist | --pdb | --trace) workers=() ;;
  esac
done
pytest_status=0
.venv/bin/python -m pytest "${workers[@]}" "$@" || pytest_status=$?

echo "== mypy"
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
mypy_pid=""
cat "$mypy_log"
ts_status=0
if [ -n "$ts_pid" ]; then
  echo "== runtime-ts (tsc, eslint, vitest)"
  wait "$ts_pid" || ts_status=$?
  ts_pid=""
  cat "$ts_log"
fi
if [ "$pytest_status" -ne 0 ]; then exit "$pytest_status"; fi
if [ "$mypy_status" -ne 0 ]; then exit "$mypy_status"; fi
exit "$ts_status"
