#!/usr/bin/env bash
# kilnd's resident memory over a mixed load (bench/rss_mixed_load.py): a fresh kilnd (2 workers)
# and one agent on loopback, optimized binaries. Prints RSS per minute, its peak and end state.
# usage: bash bench/rss_mixed_load.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
bazel build --config=opt //server:kilnd //server:kiln-worker //runtime/agent:kiln-agent \
  //client/python:kiln_python >/dev/null 2>&1
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# Copies of the binaries (kilnd starts kiln-worker from beside itself): a rebuild during the
# run changes nothing here.
mkdir -p "$work/bin"
cp bazel-bin/server/kilnd bazel-bin/server/kiln-worker bazel-bin/runtime/agent/kiln-agent "$work/bin/"
cp -rL bazel-bin/client/python "$work/python"
port=$((20000 + RANDOM % 20000))
"$work/bin/kilnd" --listen "127.0.0.1:$port" --store "$work/store" --metrics-port 0 \
  --max-jobs-per-minute 0 --max-stored-jobs 0 \
  >"$work/kilnd.log" 2>&1 &
kilnd=$!
pids+=("$kilnd")
for _ in $(seq 1 100); do grep -q "listening" "$work/kilnd.log" && break; sleep 0.1; done
"$work/bin/kiln-agent" --server "127.0.0.1:$port" --device-key cpu \
  --cache-dir "$work/agent" --trusted-keys "$work/store/signing_key.pem.pub" \
  >"$work/agent.log" 2>&1 &
pids+=($!)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
# Debian's interpreter: its dist-packages hold python3-grpcio.
PYTHONPATH="$work/python" /usr/bin/python3 bench/rss_mixed_load.py "127.0.0.1:$port" "$kilnd" \
  "$seconds"
