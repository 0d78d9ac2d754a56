#!/usr/bin/env bash
# Batch-1 latency of every model in tests/models, and of the full-size models
# bench/make_full_models.py exports (ResNet-18, a BERT-base layer, a 32 MB MLP; random weights),
# compiled by Kiln, against ONNX Runtime (CPU, the onnxruntime-node package) in the same run, on 1
# and 2 threads. Prints a Markdown table, with each model's cold compile time, under a line naming
# the CPU, its vector ISA and Kiln's target.
# usage: KILN_TARGET=... bash bench/onnx_models.sh [REPEAT] [MIN_REPEAT_MS] [TUNING_DB_DIR]
# With TUNING_DB_DIR, a model with a database DIR/NAME.db (from `kiln tune`) is compiled with it.
# KILN_TARGET (default "llvm", this CPU) compiles Kiln for another x86-64 CPU this one can run,
# e.g. "llvm -mcpu=haswell" for AVX2 on an AVX-512 machine (ONNX Runtime cannot be held to an
# ISA: it still uses the machine's, which the table's line says).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/setup_ort.sh
bazel build --config=opt //client:kiln >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
full=bench/full_models  # ignored by git: 108 MB of random weights, exported once
[[ -f $full/manifest.json ]] || /usr/bin/python3 bench/make_full_models.py "$full" 2>/dev/null
target=${KILN_TARGET:-llvm}
for dir in tests/models "$full"; do
  for model in "$dir"/*.onnx; do
    name=$(basename "$model" .onnx)
    tuned=()
    if [[ -n "${3:-}" && -f "$3/$name.db" ]]; then tuned=(--tuning-db "$3/$name.db"); fi
    start=$(date +%s%N)
    bazel-bin/client/kiln compile "$model" --target "$target" -o "$work/$name.kiln" "${tuned[@]}" \
      >/dev/null
    echo "$name $((($(date +%s%N) - start) / 1000000))" >>"$work/compile_ms"
  done
done
isa=avx2
grep -qw avx512f /proc/cpuinfo && isa=avx512
grep -qw avx2 /proc/cpuinfo || isa=sse
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), ISA $isa," \
  "Kiln target \"$target\", $(date +%F)"
echo
node bench/onnx_models.js bazel-bin/client/kiln "$work" "${1:-15}" "${2:-200}" tests/models "$full"
