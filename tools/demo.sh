#!/usr/bin/env bash
# The main job, end to end, on one machine: set up, build the binaries, start kilnd with the
# embedded store and a local kiln-agent, compile an example model through the daemon (a second
# submit is served by the artifact cache), profile it on the agent, run it there on its reference
# input, tune its kernels through kilnd (measured on the agent) and compile with the service's
# records; then an emulated Arm board (the packaged aarch64 agent under qemu-aarch64) joins, a
# model is compiled for it (the target from what it registered), timed and run on it; list jobs
# and devices, and stop everything cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
# Optimized binaries: the profile measures the runtime, not debug code.
bazel build --config=opt //server:kilnd //server:kiln-worker //runtime/agent:kiln-agent \
  //runtime/agent:kiln-agent-aarch64.tar.gz //client:kiln --disk_cache="${HOME}/.cache/kiln/bazel-disk" --color=no --curses=no

BIN=bazel-bin
KILN="$BIN/client/kiln"
WORK=$(mktemp -d)
KILND_PID=""
AGENT_PID=""
BOARD_PID=""
cleanup() {
  [ -n "$BOARD_PID" ] && kill "$BOARD_PID" 2>/dev/null || true
  [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null || true
  [ -n "$KILND_PID" ] && kill "$KILND_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# Waits for "PREFIX<value>" in a log file and prints the value.
wait_for() {
  local file="$1" prefix="$2" value=""
  for _ in $(seq 1 300); do
    value=$(sed -n "s/^${prefix}\([^ ]*\).*/\1/p" "$file" | head -1)
    [ -n "$value" ] && { echo "$value"; return 0; }
    sleep 0.1
  done
  cat "$file" >&2
  return 1
}

echo "== kilnd (store in $WORK/store)"
"$BIN/server/kilnd" --listen 127.0.0.1:0 --store "$WORK/store" --metrics-port 0 \
  >"$WORK/kilnd.out" 2>"$WORK/kilnd.log" &
KILND_PID=$!
port=$(wait_for "$WORK/kilnd.out" "kilnd: listening on port ")
metrics_port=$(wait_for "$WORK/kilnd.out" "kilnd: metrics on port ")
SERVER="127.0.0.1:$port"
"$KILN" info --server "$SERVER"

echo "== kiln-agent (device key 'local-cpu')"
# The agent runs only artifacts signed by the key kilnd made in its store.
"$BIN/runtime/agent/kiln-agent" --server "$SERVER" --device-key local-cpu \
  --trusted-keys "$WORK/store/signing_key.pem.pub" \
  --cache-dir "$WORK/agent-cache" --threads 1 2>"$WORK/agent.log" &
AGENT_PID=$!
wait_for "$WORK/agent.log" "kiln-agent: registered as " >/dev/null
"$KILN" devices --server "$SERVER"

# An ONNX model exported from PyTorch (a small residual CNN): imported by kilnd, compiled in a
# kiln-worker process, stored, downloaded.
MODEL=tests/models/tiny_resnet.onnx
echo "== kiln compile $MODEL --server $SERVER"
"$KILN" compile "$MODEL" --target llvm --server "$SERVER" -o "$WORK/tiny_resnet.kiln"
echo "== the same compile again: an artifact cache hit, no worker"
"$KILN" compile "$MODEL" --target llvm --server "$SERVER" -o "$WORK/tiny_resnet.kiln"

echo "== kiln bench --server $SERVER --device local-cpu (a profile job on the agent)"
"$KILN" bench "$WORK/tiny_resnet.kiln" --server "$SERVER" --device local-cpu \
  --repeat 10 --min-repeat-ms 50

echo "== kiln run --server $SERVER --device local-cpu (reference input; the output checked against PyTorch's)"
"$KILN" run "$WORK/tiny_resnet.kiln" --server "$SERVER" --device local-cpu \
  --input input=tests/models/tiny_resnet.input.npy --output-dir "$WORK/outputs" \
  --expect output=tests/models/tiny_resnet.output.npy --tolerance 1e-4

# Auto-tuning through kilnd: a short tune job whose candidates are built in a kiln-worker and
# measured on the agent; its records land in the service's tuning database, which the next
# compile applies (a new artifact, checked against PyTorch again), timed beside the untuned one.
echo "== kiln tune $MODEL --server $SERVER --device local-cpu (24 trials, measured on the agent)"
"$KILN" tune "$MODEL" --target llvm --trials 24 --server "$SERVER" --device local-cpu
echo "== kiln compile --server: the service's best records applied (--no-tuning: the untuned one)"
"$KILN" compile "$MODEL" --target llvm --server "$SERVER" -o "$WORK/tuned.kiln"
"$KILN" compile "$MODEL" --target llvm --server "$SERVER" --no-tuning -o "$WORK/untuned.kiln"
"$KILN" run "$WORK/tuned.kiln" --server "$SERVER" --device local-cpu \
  --input input=tests/models/tiny_resnet.input.npy --output-dir "$WORK/tuned-outputs" \
  --expect output=tests/models/tiny_resnet.output.npy --tolerance 1e-4
for which in untuned tuned; do
  "$KILN" bench "$WORK/$which.kiln" --server "$SERVER" --device local-cpu --repeat 10 \
    --min-repeat-ms 50 | tail -1 | sed "s/^/$which: /"
done

# An edge board: the agent package for aarch64 (what one copies to a board) runs under qemu-user
# as a Cortex-A72, connects out to kilnd and registers its real attributes, marked emulated.
echo "== an emulated Arm board joins (kiln-agent-aarch64.tar.gz under qemu-aarch64 -cpu cortex-a72)"
mkdir -p "$WORK/board"
tar -xzf "$BIN/runtime/agent/kiln-agent-aarch64.tar.gz" -C "$WORK/board"
QEMU_CPU=cortex-a72 qemu-aarch64 "$WORK/board/kiln-agent/bin/kiln-agent" --server "$SERVER" \
  --device-key edge-board --cache-dir "$WORK/board-cache" --threads 1 \
  --trusted-keys "$WORK/store/signing_key.pem.pub" \
  --task-launcher /usr/bin/qemu-aarch64 2>"$WORK/board.log" &
BOARD_PID=$!
wait_for "$WORK/board.log" "kiln-agent: registered as " >/dev/null
"$KILN" devices --server "$SERVER"
echo "== kiln compile $MODEL --server $SERVER --device edge-board (the board's target)"
"$KILN" compile "$MODEL" --server "$SERVER" --device edge-board -o "$WORK/board.kiln"
echo "== kiln bench on the board, chosen by attributes (arch=aarch64,features~neon)"
"$KILN" bench "$WORK/board.kiln" --server "$SERVER" --device "arch=aarch64,features~neon" \
  --repeat 5 --min-repeat-ms 50
echo "== kiln run on the board (the output checked against PyTorch's)"
"$KILN" run "$WORK/board.kiln" --server "$SERVER" --device edge-board \
  --input input=tests/models/tiny_resnet.input.npy --output-dir "$WORK/board-outputs" \
  --expect output=tests/models/tiny_resnet.output.npy --tolerance 1e-4
echo "== the x86-64 artifact sent to the board is refused by its agent"
"$KILN" run "$WORK/tiny_resnet.kiln" --server "$SERVER" --device edge-board \
  --input input=tests/models/tiny_resnet.input.npy --output-dir "$WORK/refused" || true

echo "== kiln jobs"
"$KILN" jobs --server "$SERVER"
echo "== metrics (http://127.0.0.1:$metrics_port/metrics)"
exec 3<>"/dev/tcp/127.0.0.1/$metrics_port"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep -E '^kiln_(jobs|cache_hits_total|cache_misses_total|agents_connected)' <&3 || true
exec 3>&-

echo "== stopping the agents and kilnd"
kill -TERM "$BOARD_PID"
wait "$BOARD_PID" || true
BOARD_PID=""
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" || true
AGENT_PID=""
kill -TERM "$KILND_PID"
wait "$KILND_PID"
KILND_PID=""
tail -1 "$WORK/kilnd.out"
echo "== demo finished"
