#!/usr/bin/env bash
# Builds a fuzzer with clang + libFuzzer + AddressSanitizer and runs it on its seed corpus: the
# TVMScript parser (compiler/script/testdata) by default, the ONNX importer with --target onnx
# (the per-op models in compiler/frontend/onnx/testdata/ops).
#   bash tools/fuzz.sh                 # 5 minutes
#   bash tools/fuzz.sh --seconds 60
#   bash tools/fuzz.sh --runs 20000    # deterministic (fixed seed): what tools/test.sh runs
#   bash tools/fuzz.sh --target onnx --seconds 120
# Ends with a line "fuzz: passed (...)" or "fuzz: FAILED (...)"; exit status 0 only on passed.
set -uo pipefail
cd "$(dirname "$0")/.."

limit=(-max_total_time=300)
target=//compiler/script:parser_fuzzer
seeds="compiler/script/testdata/*.py"
max_len=16384
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2" -seed=1); shift 2 ;;
    --target)
      [ "$2" = onnx ] || { echo "fuzz: unknown target $2 (onnx)" >&2; exit 2; }
      target=//compiler/frontend/onnx:import_fuzzer
      seeds="compiler/frontend/onnx/testdata/ops/*.onnx"
      max_len=65536
      shift 2 ;;
    *) echo "usage: tools/fuzz.sh [--target onnx] [--seconds S | --runs N]" >&2; exit 2 ;;
  esac
done

CACHE="${HOME}/.cache/kiln"
mkdir -p "$CACHE/bazel-disk"
if ! bazel --output_base="$CACHE/bazel-fuzz-base" build --config=fuzz --symlink_prefix=/ --disk_cache="$CACHE/bazel-disk" \
    --color=no --curses=no "$target" >"$CACHE/fuzz-build.log" 2>&1; then
  tail -30 "$CACHE/fuzz-build.log"
  echo "fuzz: FAILED (build)"
  exit 1
fi
target_path=${target#//}
FUZZER="$(bazel --output_base="$CACHE/bazel-fuzz-base" info --config=fuzz bazel-bin 2>/dev/null)/${target_path/://}"

# libFuzzer adds what it finds to the first corpus directory: keep the checkout clean.
CORPUS=$(mktemp -d)
trap 'rm -rf "$CORPUS"' EXIT
# shellcheck disable=SC2086  # $seeds is a glob
cp $seeds "$CORPUS/"
LOG="$CACHE/fuzz-run.log"
"$FUZZER" "${limit[@]}" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$CACHE/fuzz-crash-" "$CORPUS" >"$LOG" 2>&1
rc=$?
summary=$(grep -E '^(#[0-9]+|Done)' "$LOG" | tail -1)
execs=$(grep -Eo 'exec/s: [0-9]+' "$LOG" | tail -1)
if [ "$rc" -ne 0 ]; then
  tail -40 "$LOG"
  echo "fuzz: FAILED (see $LOG and $CACHE/fuzz-crash-*)"
  exit 1
fi
echo "fuzz: passed (${summary}; ${execs})"
