#!/usr/bin/env bash
# The bench (docs/typescript.md, "Figures"): compiles bench/*.flow with flowc, bundles
# bench/run.ts with esbuild and runs it; then the bundle size of the runtime (minified +
# gzipped), beside XState's for the same use (createMachine, createActor, assign).
# Run from anywhere, after `npm ci` in runtime-ts/ and ./setup.sh at the root (for flowc).
set -euo pipefail
cd "$(dirname "$0")/.."
flowc=${FLOWC:-../.venv/bin/flowc}
esbuild=node_modules/.bin/esbuild
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for flow in flat chart; do
  if ! log=$("$flowc" compile "bench/$flow.flow" -o "$work/$flow.json" 2>&1); then
    echo "$log" >&2
    exit 1
  fi
done
"$esbuild" bench/run.ts --bundle --platform=node --format=esm --log-level=warning \
  --outfile="$work/bench.mjs"
node --expose-gc "$work/bench.mjs" "$work/flat.json" "$work/chart.json"

gzipped() { gzip -9 -c "$1" | wc -c; }
"$esbuild" src/index.ts --bundle --minify --format=esm --platform=neutral --log-level=warning \
  --outfile="$work/flowc.min.js"
"$esbuild" bench/xstate-entry.ts --bundle --minify --format=esm --platform=neutral \
  --main-fields=module,main --log-level=warning --outfile="$work/xstate.min.js"
echo "bundle (minified + gzipped): flowc runtime $(gzipped "$work/flowc.min.js") B" \
  "(minified $(wc -c <"$work/flowc.min.js") B); xstate $(gzipped "$work/xstate.min.js") B" \
  "(minified $(wc -c <"$work/xstate.min.js") B)"
