#!/usr/bin/env bash
# Runs the runtime's tests (tensors, kernel libraries, the thread pool, the VM) under
# AddressSanitizer and LeakSanitizer, built with clang under a separate output base so that the
# main build cache stays valid. Ends with "asan: passed" or "asan: FAILED"; exit 0 only on passed.
set -uo pipefail
cd "$(dirname "$0")/.."

CACHE="${HOME}/.cache/kiln"
mkdir -p "$CACHE/bazel-disk"
LOG="$CACHE/asan.log"
if bazel --output_base="$CACHE/bazel-asan-base" test --config=asan --symlink_prefix=/ --disk_cache="$CACHE/bazel-disk" \
    --color=no --curses=no --test_output=errors //runtime:all >"$LOG" 2>&1; then
  echo "asan: passed ($(grep -Ec '^//[^ ]+ +(\(cached\) )?PASSED' "$LOG") runtime test targets)"
  exit 0
fi
tail -60 "$LOG"
echo "asan: FAILED"
exit 1
