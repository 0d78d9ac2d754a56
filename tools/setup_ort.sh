#!/usr/bin/env bash
# Installs ONNX Runtime's Node.js package (its CPU binaries ship inside it) into tools/ort, for
# the importer's reference outputs and the ONNX benchmarks. The install script, which would
# download GPU binaries, is skipped. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/ort"
[ -f node_modules/onnxruntime-node/package.json ] && exit 0
command -v npm >/dev/null || { echo "setup_ort: npm is required (Node.js 18+)" >&2; exit 1; }
npm install --ignore-scripts --no-audit --no-fund --silent >/dev/null
