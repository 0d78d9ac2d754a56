#!/usr/bin/env bash
# Sets up a Debian 12 machine and runs every test. Ends with the line "N passed, N failed",
# counted from Bazel's test summary (one count per test target) plus the docs' references
# (tools/check_docs.py), the bounded fuzzer run of tools/fuzz.sh and the sanitizer run of
# tools/asan.sh. Exit status 0 only when the build succeeded and every test passed.
#
# The tree is built once, optimized: the tests run on what ships and what the benchmarks time
# (and -O2 finds warnings -O0 does not). The fuzzers and the sanitizer build only their own
# targets, each under its own output base. Each stage's time is printed.
set -uo pipefail
cd "$(dirname "$0")/.."

stage_start=$SECONDS
stage() {  # prints how long the stage that just ended took
  echo "stage: $1 took $((SECONDS - stage_start)) s"
  stage_start=$SECONDS
}

bash tools/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
stage "setup"

# The disk cache lives under $HOME so repeated runs on one machine are incremental.
DISK_CACHE="${HOME}/.cache/kiln/bazel-disk"
mkdir -p "$DISK_CACHE"
LOG=$(mktemp)
bazel test --config=opt //... --disk_cache="$DISK_CACHE" --test_summary=short --color=no --curses=no \
  "$@" 2>&1 | tee "$LOG"
bazel_rc=${PIPESTATUS[0]}

passed=$(grep -Ec '^//[^ ]+ +(\(cached\) )?PASSED' "$LOG")
failed=$(grep -Ec '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY|FAILED TO BUILD)' "$LOG")
# What each failed test said (its assertions and last lines), so that a CI log explains a red run.
for target in $(grep -E '^//[^ ]+ +(FAILED|TIMEOUT|FLAKY)' "$LOG" | awk '{print $1}'); do
  path=${target#//}
  log="bazel-testlogs/${path/://}/test.log"
  [ -f "$log" ] || continue
  echo "---- ${target}: failures ----"
  grep -aE '(Failure|FAILED|Expected|Which is|Value of|Actual|error:)' "$log" | grep -av linux-sandbox | head -30
  tail -n 15 "$log" | grep -av linux-sandbox
done
rm -f "$LOG"

stage "build and test (optimized)"

# Every path and Bazel target the README, docs/ and bench/README.md name exists: one more test.
if python3 tools/check_docs.py; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
stage "docs"

# The fuzzers of the three front ends (clang + libFuzzer: the TVMScript parser, the ONNX importer,
# the IR proto decoder), bounded and deterministic: counts as one more test.
if bash tools/fuzz.sh --target all --runs 5000; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
stage "fuzzers"

# The runtime's tests (the VM included) under AddressSanitizer + LeakSanitizer: one more test.
if bash tools/asan.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
stage "sanitizer"

# A build or analysis failure that kept Bazel from listing any test still counts as a failure.
if [ "$bazel_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "${passed} passed, ${failed} failed"
[ "$bazel_rc" -eq 0 ] && [ "$failed" -eq 0 ]
