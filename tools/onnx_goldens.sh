#!/usr/bin/env bash
# Regenerates the reference outputs of the ONNX importer's per-op tests with ONNX Runtime:
# writes every case (compiler/frontend/onnx/testing/op_cases.cc) with its inputs, runs them
# through onnxruntime-node, and puts models, inputs and outputs in
# compiler/frontend/onnx/testdata/ops/. Run after adding or changing a case; commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_ort.sh
out=compiler/frontend/onnx/testdata/ops
rm -rf "$out"
mkdir -p "$out"
bazel run -c opt //compiler/frontend/onnx:write_op_cases -- "$PWD/$out"
node tools/ort/reference.js "$out"
