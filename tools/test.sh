#!/usr/bin/env bash
# Sets up a Debian 12 machine and runs every test. Ends with the line "N passed, N failed",
# counted from Bazel's test summary (one count per test target) plus the optimized build of
# everything, the docs' references (tools/check_docs.py), the bounded fuzzer run of tools/fuzz.sh
# and the sanitizer run of tools/asan.sh. Exit status 0 only when the build succeeded and every test passed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

# The disk cache lives under $HOME so repeated runs on one machine are incremental.
DISK_CACHE="${HOME}/.cache/kiln/bazel-disk"
mkdir -p "$DISK_CACHE"
LOG=$(mktemp)
bazel test //... --disk_cache="$DISK_CACHE" --test_summary=short --color=no --curses=no \
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

# Everything also builds optimized (the demo and the benchmarks run that way, and -O2 finds
# warnings -O0 does not): one more test.
if bazel build --config=opt //... --disk_cache="$DISK_CACHE" --color=no --curses=no >"$LOG.opt" 2>&1; then
  passed=$((passed + 1))
  echo "opt build: passed"
else
  failed=$((failed + 1))
  grep -E "error:|ERROR" "$LOG.opt" | head -20
  echo "opt build: FAILED"
fi
rm -f "$LOG.opt"

# Every path and Bazel target the README, docs/ and bench/README.md name exists: one more test.
if python3 tools/check_docs.py; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# The fuzzers of the three front ends (clang + libFuzzer: the TVMScript parser, the ONNX importer,
# the IR proto decoder), bounded and deterministic: counts as one more test.
if bash tools/fuzz.sh --target all --runs 5000; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# The runtime's tests (the VM included) under AddressSanitizer + LeakSanitizer: one more test.
if bash tools/asan.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# A build or analysis failure that kept Bazel from listing any test still counts as a failure.
if [ "$bazel_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "${passed} passed, ${failed} failed"
[ "$bazel_rc" -eq 0 ] && [ "$failed" -eq 0 ]
