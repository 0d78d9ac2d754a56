#!/usr/bin/env bash
# The main job, end to end, on one machine: set up, build everything, start kilnd on loopback,
# talk to it with the kiln client, stop it. Each issue that adds a capability extends this path
# (next: a local agent, an example model compiled and benchmarked).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bazel build //... --disk_cache="${HOME}/.cache/kiln/bazel-disk" --color=no --curses=no

BIN=bazel-bin
echo "== kiln version"
"$BIN/client/kiln" version

LOG=$(mktemp)
"$BIN/server/kilnd" --listen 127.0.0.1:0 >"$LOG" 2>&1 &
KILND_PID=$!
trap 'kill "$KILND_PID" 2>/dev/null || true; rm -f "$LOG"' EXIT
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/^kilnd: listening on port \([0-9]*\)$/\1/p' "$LOG")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$LOG"; echo "demo: kilnd did not start" >&2; exit 1; }

echo "== kilnd on 127.0.0.1:$port: kiln info"
"$BIN/client/kiln" info --server "127.0.0.1:$port"

kill -TERM "$KILND_PID"
wait "$KILND_PID"
cat "$LOG"

# The compiler front end on a model as TVM prints it (an ONNX MLP, weights in the metadata
# section): parse, check, and print the normalized module with every StructInfo inferred.
MODEL=compiler/script/testdata/tvm_mlp.py
echo "== kiln check $MODEL"
"$BIN/client/kiln" check "$MODEL"
echo "== kiln print $MODEL (main)"
"$BIN/client/kiln" print "$MODEL" | sed -n '/def main/,/return/p'
echo "== demo finished"
