#!/usr/bin/env bash
# Regenerates compiler/quantize/testdata: tiny_resnet quantized by `kiln quantize` (16 random
# calibration inputs), two inputs, and ONNX Runtime's outputs of the QDQ model — its reference
# execution (optimizations off: the QDQ operators one by one) and its int8 path (optimizations
# on: ORT fuses the pairs into QLinearConv and the like). quantize_test compares Kiln with both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_ort.sh
bazel build --config=opt //client:kiln >/dev/null
out=compiler/quantize/testdata
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out" "$work/cal"
/usr/bin/python3 - "$work/cal" "$out" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(2026)
for i in range(16):
    np.save(f"{sys.argv[1]}/{i:02d}.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
for k in range(2):
    np.save(f"{sys.argv[2]}/tiny_resnet_int8.input_{k}.npy",
            rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
PY
bazel-bin/client/kiln quantize tests/models/tiny_resnet.onnx --calibration "$work/cal" \
  -o "$out/tiny_resnet_int8.onnx" >/dev/null
# reference.js feeds NAME.input_K.npy to input K; here both files feed the one input in turn.
for k in 0 1; do
  mkdir -p "$work/run$k"
  cp "$out/tiny_resnet_int8.onnx" "$work/run$k/"
  cp "$out/tiny_resnet_int8.input_$k.npy" "$work/run$k/tiny_resnet_int8.input_0.npy"
  node tools/ort/reference.js "$work/run$k" >/dev/null
  node tools/ort/reference.js "$work/run$k" optimized >/dev/null
  cp "$work/run$k/tiny_resnet_int8.output_0.npy" "$out/tiny_resnet_int8.output_$k.npy"
  cp "$work/run$k/tiny_resnet_int8.optimized_output_0.npy" \
    "$out/tiny_resnet_int8.optimized_output_$k.npy"
done
ls "$out"
