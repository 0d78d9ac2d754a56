#!/usr/bin/env bash
# Tuning through kilnd against the same tuning in this process: the same model, trials and seed,
# each into a fresh database. Prints the wall time of each, the service's overhead, and trials per
# minute through kilnd with one and with two agents (each agent measures one candidate at a
# time). Optimized binaries, loopback only.
# usage: bash bench/tune_service.sh [MODEL] [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-tests/models/tiny_resnet.onnx}"
trials="${2:-64}"
bash tools/setup.sh
bazel build --config=opt //client:kiln //server:kilnd //server:kiln-worker \
  //runtime/agent:kiln-agent >/dev/null 2>&1
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
kiln=bazel-bin/client/kiln

seconds() { python3 -c 'import json,sys; print(json.load(sys.stdin)["elapsed_s"])'; }

local_s=$("$kiln" tune "$model" --trials "$trials" --seed 1 --tuning-db "$work/local.db" --json \
  2>/dev/null | seconds)

# A fresh kilnd (and store) with N agents of key "cpu"; prints the tune's elapsed seconds.
through_kilnd() {
  local agents=$1 port=$((20000 + RANDOM % 20000)) store="$work/store$1"
  bazel-bin/server/kilnd --listen "127.0.0.1:$port" --store "$store" --metrics-port 0 \
    >"$work/kilnd$agents.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q "listening" "$work/kilnd$agents.log" && break; sleep 0.1; done
  for i in $(seq 1 "$agents"); do
    bazel-bin/runtime/agent/kiln-agent --server "127.0.0.1:$port" --device-key cpu \
      --cache-dir "$work/agent$agents-$i" --trusted-keys "$store/signing_key.pem.pub" \
      >"$work/agent$agents-$i.log" 2>&1 &
    pids+=($!)
  done
  sleep 1
  "$kiln" tune "$model" --trials "$trials" --seed 1 --server "127.0.0.1:$port" --device cpu \
    --json 2>/dev/null | seconds
}
one_s=$(through_kilnd 1)
two_s=$(through_kilnd 2)
python3 - "$model" "$trials" "$local_s" "$one_s" "$two_s" <<'PY'
import sys
model, trials, local, one, two = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:])
print(f"| {model}, {trials} trials, seed 1 | wall s | trials/min | vs in-process |")
print("|---|---|---|---|")
print(f"| in-process (`kiln tune --tuning-db`) | {local:.1f} | {trials / local * 60:.0f} | 1.00x |")
for name, s in (("kilnd + 1 agent", one), ("kilnd + 2 agents", two)):
    print(f"| {name} | {s:.1f} | {trials / s * 60:.0f} | {s / local:.2f}x |")
PY
