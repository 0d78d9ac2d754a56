#!/usr/bin/env bash
# Two builds of kiln on the same models, before and after a change: each model compiled by both
# for TARGET, then timed with `kiln bench` (one thread, --repeat 7), the two artifacts alternating,
# three times each; prints each model's median per-call time in both and their ratio, and whether
# the two artifacts are byte-identical (same digest).
# usage: bash bench/compare_builds.sh BEFORE_KILN AFTER_KILN TARGET MODEL.onnx...
#   e.g. build the earlier commit in a git worktree, then
#   bash bench/compare_builds.sh /tmp/old/bazel-bin/client/kiln bazel-bin/client/kiln \
#       "llvm -mcpu=haswell" tests/models/*.onnx
# A model's reference input (NAME.input.npy beside it) is used when there is one.
set -euo pipefail
before=$1 after=$2 target=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median_us() {  # ARTIFACT INPUT_ARGS...
  local artifact=$1
  shift
  "$after" bench "$artifact" "$@" --threads 1 --repeat 7 --min-repeat-ms 100 --json |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["median_seconds"] * 1e6)'
}
echo "| model | before µs | after µs | after / before | same artifact |"
echo "|---|---:|---:|---:|---|"
for model in "$@"; do
  name=$(basename "$model" .onnx)
  a=$("$before" compile "$model" --target "$target" -o "$work/a.kiln" | grep -o 'digest [0-9a-f]*')
  b=$("$after" compile "$model" --target "$target" -o "$work/b.kiln" | grep -o 'digest [0-9a-f]*')
  input=()
  [[ -f ${model%.onnx}.input.npy ]] && input=(--input "input=${model%.onnx}.input.npy")
  times_a=() times_b=()
  for _ in 1 2 3; do
    times_a+=("$(median_us "$work/a.kiln" "${input[@]}")")
    times_b+=("$(median_us "$work/b.kiln" "${input[@]}")")
  done
  same=no
  [[ $a == "$b" ]] && same=yes
  /usr/bin/python3 -c "
import statistics as s
a = s.median([${times_a[*]/%/,}]); b = s.median([${times_b[*]/%/,}])
print(f'| $name | {a:,.1f} | {b:,.1f} | {b / a:.2f} | $same |')"
done
