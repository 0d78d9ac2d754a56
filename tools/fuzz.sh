#!/usr/bin/env bash
# Builds the TVMScript parser fuzzer with clang + libFuzzer + AddressSanitizer and runs it on the
# seed corpus (compiler/script/testdata).
#   bash tools/fuzz.sh                 # 5 minutes
#   bash tools/fuzz.sh --seconds 60
#   bash tools/fuzz.sh --runs 20000    # deterministic (fixed seed): what tools/test.sh runs
# Ends with a line "fuzz: passed (...)" or "fuzz: FAILED (...)"; exit status 0 only on passed.
set -uo pipefail
cd "$(dirname "$0")/.."

limit=(-max_total_time=300)
case "${1:-}" in
  --seconds) limit=(-max_total_time="$2") ;;
  --runs) limit=(-runs="$2" -seed=1) ;;
  "") ;;
  *) echo "usage: tools/fuzz.sh [--seconds S | --runs N]" >&2; exit 2 ;;
esac

CACHE="${HOME}/.cache/kiln"
mkdir -p "$CACHE/bazel-disk"
if ! bazel --output_base="$CACHE/bazel-fuzz-base" build --config=fuzz --disk_cache="$CACHE/bazel-disk" \
    --color=no --curses=no //compiler/script:parser_fuzzer >"$CACHE/fuzz-build.log" 2>&1; then
  tail -30 "$CACHE/fuzz-build.log"
  echo "fuzz: FAILED (build)"
  exit 1
fi
FUZZER="$(bazel --output_base="$CACHE/bazel-fuzz-base" info --config=fuzz bazel-bin 2>/dev/null)/compiler/script/parser_fuzzer"

# libFuzzer adds what it finds to the first corpus directory: keep the checkout clean.
CORPUS=$(mktemp -d)
trap 'rm -rf "$CORPUS"' EXIT
cp compiler/script/testdata/*.py "$CORPUS/"
LOG="$CACHE/fuzz-run.log"
"$FUZZER" "${limit[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
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
