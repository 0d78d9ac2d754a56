#!/usr/bin/env bash
# Every kernel family (bench/make_kernel_families.py: dense, pointwise, depthwise, grouped,
# strided, dilated and 3-D convolutions, batch-1 and batched linear layers) compiled by Kiln
# against oneDNN in the same run, one thread, for each ISA this machine can run: its own, and
# AVX2 where it has AVX-512 (Kiln compiled for -mcpu=haswell, oneDNN held by
# ONEDNN_MAX_CPU_ISA=AVX2). Prints a Markdown table per ISA: throughput of each, and Kiln's as a
# fraction of oneDNN's.
# usage: bash bench/kernel_families.sh [MIN_REPEAT_MS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel build --config=opt //client:kiln //bench:dnnl_bench >/dev/null 2>&1
families=bench/kernel_families  # ignored by git: exported once
[[ -f $families/manifest.json ]] || /usr/bin/python3 bench/make_kernel_families.py "$families" \
  2>/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
min_ms=${1:-200}

isas=("native|llvm|ALL")
if grep -qw avx512f /proc/cpuinfo; then
  isas+=("AVX2|llvm -mcpu=haswell|AVX2")
else
  echo "(this CPU has no AVX-512: the AVX-512 rows are skipped)"
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
for entry in "${isas[@]}"; do
  IFS='|' read -r isa target dnnl_isa <<<"$entry"
  : >"$work/kiln.jsonl"
  for model in "$families"/*.onnx; do
    name=$(basename "$model" .onnx)
    bazel-bin/client/kiln compile "$model" --target "$target" -o "$work/$name.kiln" >/dev/null
    seconds=$(bazel-bin/client/kiln bench "$work/$name.kiln" --threads 1 --repeat 10 \
      --min-repeat-ms "$min_ms" --json | /usr/bin/python3 -c \
      'import json, sys; print(json.load(sys.stdin)["median_seconds"])')
    echo "{\"name\": \"$name\", \"seconds\": $seconds}" >>"$work/kiln.jsonl"
  done
  OMP_NUM_THREADS=1 ONEDNN_MAX_CPU_ISA="$dnnl_isa" bazel-bin/bench/dnnl_bench \
    "$families/manifest.json" "$(awk "BEGIN {print $min_ms / 1000}")" >"$work/dnnl.out"
  dnnl_isa_line=$(grep -m1 '"isa"' "$work/dnnl.out" | sed 's/.*"isa": *"\([^"]*\)".*/\1/')
  grep '"name"' "$work/dnnl.out" >"$work/dnnl.jsonl" || true
  echo
  echo "### $isa: $cpu, Kiln target \"$target\", oneDNN ${dnnl_isa_line:-?}, 1 thread, $(date +%F)"
  /usr/bin/python3 - "$families/manifest.json" "$work/kiln.jsonl" "$work/dnnl.jsonl" <<'EOF'
import json, sys
manifest = {p["name"]: p for p in json.load(open(sys.argv[1]))}
def seconds(path):
    return {r["name"]: r["seconds"] for r in map(json.loads, open(path))}
kiln, dnnl = seconds(sys.argv[2]), seconds(sys.argv[3])
print("| family | GFLOP | Kiln GFLOP/s | oneDNN GFLOP/s | Kiln / oneDNN |")
print("|---|---:|---:|---:|---:|")
for name, p in manifest.items():
    g = p["flops"] / 1e9
    k, d = kiln.get(name), dnnl.get(name)
    ks = f"{g / k:.1f}" if k else "-"
    ds = f"{g / d:.1f}" if d else "-"
    ratio = f"{d / k:.2f}" if k and d else "-"
    print(f"| {name} | {g:.3f} | {ks} | {ds} | {ratio} |")
EOF
done
