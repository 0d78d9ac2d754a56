#!/usr/bin/env bash
# The main job, end to end, on one machine: set up, build the binaries, start kilnd on loopback,
# talk to it with the kiln client, stop it; then import an ONNX model, compile it into a .kiln
# artifact, run it on its reference input and benchmark it. Each issue that
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

# The TVMScript front end on a model as TVM prints it (an ONNX MLP, weights in the metadata
# section): parse and check every well-formedness rule and StructInfo.
echo "== kiln check compiler/script/testdata/tvm_mlp.py"
"$BIN/client/kiln" check compiler/script/testdata/tvm_mlp.py

# An ONNX model exported from PyTorch (a small residual CNN): imported to Relax, compiled (each
# operator lowered to a TIR kernel, fused, memory planned), run on its reference input and
# benchmarked.
MODEL=tests/models/tiny_resnet.onnx
OUT=$(mktemp -d)
echo "== kiln print $MODEL (main)"
"$BIN/client/kiln" print "$MODEL" | sed -n '/def main/,/return/p'
echo "== kiln compile $MODEL"
"$BIN/client/kiln" compile "$MODEL" --target llvm -o "$OUT/tiny_resnet.kiln"
echo "== kiln run (reference input; PyTorch's output is tests/models/tiny_resnet.output.npy)"
"$BIN/client/kiln" run "$OUT/tiny_resnet.kiln" --input input=tests/models/tiny_resnet.input.npy \
  --output-dir "$OUT/outputs"
echo "== kiln bench"
"$BIN/client/kiln" bench "$OUT/tiny_resnet.kiln" --repeat 10 --min-repeat-ms 50 --threads 1
rm -rf "$OUT"
echo "== demo finished"
