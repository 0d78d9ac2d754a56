#!/usr/bin/env bash
# The main job, end to end, on one machine: set up, build the binaries, start kilnd on loopback,
# talk to it with the kiln client, stop it; then compile an example model (TVM's import of an
# ONNX MLP) into a .kiln artifact, run it on its reference input and benchmark it. Each issue that
# adds a capability extends this path (next: a local agent, compile and bench through kilnd).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
# Optimized binaries: the benchmark at the end measures the runtime, not debug code.
bazel build --config=opt //server:kilnd //client:kiln --disk_cache="${HOME}/.cache/kiln/bazel-disk" \
  --color=no --curses=no

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

# The same model compiled (Kiln legalizes each operator into a TIR kernel), run and benchmarked.
OUT=$(mktemp -d)
echo "== kiln compile $MODEL"
"$BIN/client/kiln" compile "$MODEL" --target llvm -o "$OUT/mlp.kiln"
echo "== kiln run (reference input of ../shared/models/mlp_dynamic_batch)"
"$BIN/client/kiln" run "$OUT/mlp.kiln" --input input=runtime/testdata/mlp_dynamic_batch.input.npy \
  --output-dir "$OUT/outputs"
echo "== kiln bench"
"$BIN/client/kiln" bench "$OUT/mlp.kiln" --repeat 10 --min-repeat-ms 50 --threads 1
rm -rf "$OUT"
echo "== demo finished"
