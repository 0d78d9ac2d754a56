#!/usr/bin/env bash
# Cold compile: wall seconds of `kiln compile` for each model, RUNS times, and the range, under a
# line naming the CPU. With a second kiln binary, the two alternate run by run (a build from
# before a change against today's, in the same minutes of the machine's noise).
# usage: bash bench/cold_compile.sh [RUNS] [OTHER_KILN] -- MODEL.onnx ...
#   bash bench/cold_compile.sh 5 -- tests/models/mobilenet_v2.onnx
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
other="${2:-}"
shift 2 || true
[ "${1:-}" = "--" ] && shift
bazel build --config=opt //client:kiln >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp bazel-bin/client/kiln "$work/kiln"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
  "$(grep -o 'avx512f\|avx2' /proc/cpuinfo | sort -u | tail -1)"
seconds() { /usr/bin/time -f "%e" "$1" compile "$2" -o "$work/out.kiln" 2>&1 >/dev/null | tail -1; }
for model in "$@"; do
  now=() before=()
  for _ in $(seq 1 "$runs"); do
    [ -n "$other" ] && before+=("$(seconds "$other" "$model")")
    now+=("$(seconds "$work/kiln" "$model")")
  done
  line="$(basename "$model"): ${now[*]} s"
  [ -n "$other" ] && line="$line (other build: ${before[*]} s)"
  echo "$line"
done
