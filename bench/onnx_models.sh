#!/usr/bin/env bash
# Batch-1 latency of every model in tests/models, compiled by Kiln, against ONNX Runtime (CPU,
# the onnxruntime-node package) in the same run, on 1 and 2 threads. Prints a Markdown table.
# usage: bash bench/onnx_models.sh [REPEAT] [MIN_REPEAT_MS] [TUNING_DB_DIR]
# With TUNING_DB_DIR, a model with a database DIR/NAME.db (from `kiln tune`) is compiled with it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/setup_ort.sh
bazel build --config=opt //client:kiln >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in tests/models/*.onnx; do
  name=$(basename "$model" .onnx)
  tuned=()
  if [[ -n "${3:-}" && -f "$3/$name.db" ]]; then tuned=(--tuning-db "$3/$name.db"); fi
  bazel-bin/client/kiln compile "$model" -o "$work/$name.kiln" "${tuned[@]}" >/dev/null
done
node bench/onnx_models.js bazel-bin/client/kiln "$work" "${1:-15}" "${2:-200}"
