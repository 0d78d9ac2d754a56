#!/usr/bin/env bash
# Builds the fuzzers with clang + libFuzzer + AddressSanitizer and runs them on their seed corpora:
# the TVMScript parser (compiler/script/testdata), the ONNX importer (the per-op models in
# compiler/frontend/onnx/testdata/ops) and the IR proto decoder (the example modules, written by
# //compiler/wire:write_seeds); each corpus also gets a seed per class of hostile input of issue
# 52 (//tests:write_hostile_seeds: long chains, deep nests, wide tuples and graphs, high ranks,
# shared DAGs, squared symbolic dimensions, broadcast and range blow-ups). The parser's and the decoder's targets have structure-aware
# mutators that build deep nests, long chains and shared nodes.
#   bash tools/fuzz.sh                          # the parser, 5 minutes
#   bash tools/fuzz.sh --target onnx --seconds 120
#   bash tools/fuzz.sh --target ir_proto --seconds 120
#   bash tools/fuzz.sh --target all --runs 20000  # each, deterministic: what tools/test.sh runs
# Ends with a line "fuzz: passed (...)" or "fuzz: FAILED (...)"; exit status 0 only on passed.
set -uo pipefail
cd "$(dirname "$0")/.."

limit=(-max_total_time=300)
targets=(parser)
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2" -seed=1); shift 2 ;;
    --target)
      case "$2" in
        parser | onnx | ir_proto) targets=("$2") ;;
        all) targets=(parser onnx ir_proto) ;;
        *) echo "fuzz: unknown target $2 (parser, onnx, ir_proto, all)" >&2; exit 2 ;;
      esac
      shift 2 ;;
    *) echo "usage: tools/fuzz.sh [--target parser|onnx|ir_proto|all] [--seconds S | --runs N]" >&2; exit 2 ;;
  esac
done

label() {
  case "$1" in
    parser) echo //compiler/script:parser_fuzzer ;;
    onnx) echo //compiler/frontend/onnx:import_fuzzer ;;
    ir_proto) echo //compiler/wire:ir_proto_fuzzer ;;
  esac
}

CACHE="${HOME}/.cache/kiln"
mkdir -p "$CACHE/bazel-disk"
BAZEL=(bazel --output_base="$CACHE/bazel-fuzz-base")
labels=()
for t in "${targets[@]}"; do labels+=("$(label "$t")"); done
if [[ " ${targets[*]} " == *" ir_proto "* ]]; then labels+=(//compiler/wire:write_seeds); fi
labels+=(//tests:write_hostile_seeds)
if ! "${BAZEL[@]}" build --config=fuzz --symlink_prefix=/ --disk_cache="$CACHE/bazel-disk" \
    --color=no --curses=no "${labels[@]}" >"$CACHE/fuzz-build.log" 2>&1; then
  tail -30 "$CACHE/fuzz-build.log"
  echo "fuzz: FAILED (build)"
  exit 1
fi
BIN="$("${BAZEL[@]}" info --config=fuzz bazel-bin 2>/dev/null)"

summaries=()
for t in "${targets[@]}"; do
  target=$(label "$t")
  target_path=${target#//}
  FUZZER="$BIN/${target_path/://}"
  # libFuzzer adds what it finds to the first corpus directory: keep the checkout clean.
  CORPUS=$(mktemp -d)
  case "$t" in
    parser) cp compiler/script/testdata/*.py "$CORPUS/"; max_len=32768 ;;
    onnx) cp compiler/frontend/onnx/testdata/ops/*.onnx "$CORPUS/"; max_len=32768 ;;
    ir_proto) "$BIN/compiler/wire/write_seeds" "$CORPUS"; max_len=131072 ;;
  esac
  "$BIN/tests/write_hostile_seeds" "$t" "$CORPUS" || { echo "fuzz: FAILED (seeds)"; exit 1; }
  LOG="$CACHE/fuzz-run-$t.log"
  "$FUZZER" "${limit[@]}" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 \
    -artifact_prefix="$CACHE/fuzz-crash-$t-" "$CORPUS" >"$LOG" 2>&1
  rc=$?
  rm -rf "$CORPUS"
  summary=$(grep -E '^(#[0-9]+|Done)' "$LOG" | tail -1)
  execs=$(grep -Eo 'exec/s: [0-9]+' "$LOG" | tail -1)
  if [ "$rc" -ne 0 ]; then
    tail -40 "$LOG"
    echo "fuzz: FAILED ($t; see $LOG and $CACHE/fuzz-crash-$t-*)"
    exit 1
  fi
  summaries+=("$t: ${summary}; ${execs}")
done
( IFS=';'; echo "fuzz: passed (${summaries[*]})" )
