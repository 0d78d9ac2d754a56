#!/usr/bin/env bash
# How the cost model Kiln ships (compiler/tune/shipped_cost_model.json) is made: every model of
# tests/models and the full-size ones (bench/make_full_models.py) tuned from scratch (no shipped model, no transfer) for
# TRIALS trials each, one thread, each into its own database under OUT_DIR (kept, for
# `kiln tuning-records`), then `kiln tuning-records train-model` on all of them, which prints the
# model's pairwise accuracy on held-out workloads. Rebuild kiln afterwards to ship the new model.
# usage: bash bench/train_cost_model.sh [TRIALS] [OUT_DIR]      (default 200, a temporary dir)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel build --config=opt //client:kiln >/dev/null 2>&1
full=bench/full_models  # ignored by git
[[ -f $full/manifest.json ]] || /usr/bin/python3 bench/make_full_models.py "$full" 2>/dev/null
out=${2:-$(mktemp -d)}
mkdir -p "$out"
# A copy: the runs below must not pick up a binary rebuilt meanwhile.
cp bazel-bin/client/kiln "$out/kiln"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date +%F)," \
  "${1:-200} trials per model, databases in $out"
dbs=()
for model in tests/models/*.onnx "$full"/*.onnx; do
  name=$(basename "$model" .onnx)
  "$out/kiln" tune "$model" --tuning-db "$out/$name.db" --trials "${1:-200}" --from-scratch \
    --no-model-check >/dev/null 2>&1
  echo "tuned $name"
  dbs+=(--tuning-db "$out/$name.db")
done
"$out/kiln" tuning-records train-model "${dbs[@]}" -o compiler/tune/shipped_cost_model.json
