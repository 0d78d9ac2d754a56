#!/usr/bin/env bash
# int8 against float32, Kiln against ONNX Runtime, in the same run: ResNet-18 (the full-size export
# of bench/make_full_models.py) and MobileNetV2 (tests/models) quantized by
# `kiln quantize` on 32 random calibration inputs, their accuracy on 64 held-out ones; each
# float and QDQ model compiled by Kiln and timed with `kiln bench`, and run by ONNX Runtime
# (which runs a QDQ model on its int8 kernels). Prints a Markdown table under a line naming the
# CPU and its int8 instructions.
# usage: KILN_TARGET=... bash bench/int8_models.sh [REPEAT] [MIN_REPEAT_MS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/setup_ort.sh
bazel build --config=opt //client:kiln >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
full=bench/full_models  # ignored by git, exported once
[[ -f $full/manifest.json ]] || /usr/bin/python3 bench/make_full_models.py "$full" 2>/dev/null
target=${KILN_TARGET:-llvm}
/usr/bin/python3 - "$work" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(50)
for part, n in (("calibration", 32), ("eval", 64)):
    for i in range(n):
        x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
        np.save(f"{sys.argv[1]}/{part}_{i:02d}.npy", x)
PY
mkdir -p "$work/calibration" "$work/eval"
mv "$work"/calibration_*.npy "$work/calibration/"
mv "$work"/eval_*.npy "$work/eval/"
kiln=bazel-bin/client/kiln
for model in "$full/resnet18.onnx" tests/models/mobilenet_v2.onnx; do
  name=$(basename "$model" .onnx)
  $kiln quantize "$model" --calibration "$work/calibration" --eval "$work/eval" \
    -o "$work/$name.int8.onnx" --report "$work/$name.report.json" >/dev/null
  $kiln compile "$model" --target "$target" -o "$work/$name.kiln" >/dev/null
  $kiln compile "$work/$name.int8.onnx" --target "$target" -o "$work/$name.int8.kiln" >/dev/null
  cp "$model" "$work/$name.onnx"
done
int8=none
grep -qw avx2 /proc/cpuinfo && int8="AVX2"
grep -qw avx512_vnni /proc/cpuinfo && int8="AVX-512 VNNI"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), int8: $int8," \
  "Kiln target \"$target\", $(date +%F)"
echo
node bench/int8_models.js "$kiln" "$work" "${1:-15}" "${2:-200}" resnet18 mobilenet_v2
