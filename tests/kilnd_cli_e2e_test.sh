#!/usr/bin/env bash
# End to end: start the real kilnd binary on a free loopback port, query it with the real kiln
# client, then stop it with SIGTERM and check that it shuts down cleanly.
set -euo pipefail

KILND="$1"
KILN="$2"
WORK="${TEST_TMPDIR:-$(mktemp -d)}"

# The log exists before kilnd starts: the loop below may read it before the shell that starts
# kilnd has opened it.
: >"$WORK/kilnd.log"
"$KILND" --listen 127.0.0.1:0 --store "$WORK/store" >"$WORK/kilnd.log" 2>&1 &
KILND_PID=$!
trap 'kill "$KILND_PID" 2>/dev/null || true' EXIT

port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/^kilnd: listening on port \([0-9]*\)$/\1/p' "$WORK/kilnd.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "kilnd did not start:"; cat "$WORK/kilnd.log"; exit 1; }

"$KILN" info --server "127.0.0.1:$port" >"$WORK/info.txt"
cat "$WORK/info.txt"
grep -Eq '^llvm +16\.' "$WORK/info.txt" || { echo "FAIL: no LLVM 16 in server info"; exit 1; }
grep -Eq '^kiln +[0-9]' "$WORK/info.txt" || { echo "FAIL: no kiln version in server info"; exit 1; }

# A usage error is exit status 2; an unreachable server is a user error, exit status 1.
set +e
"$KILN" info >/dev/null 2>&1; usage_rc=$?
"$KILN" info --server 127.0.0.1:1 --timeout 1 >/dev/null 2>&1; unreachable_rc=$?
set -e
[ "$usage_rc" -eq 2 ] || { echo "FAIL: usage error exited $usage_rc, want 2"; exit 1; }
[ "$unreachable_rc" -eq 1 ] || { echo "FAIL: unreachable server exited $unreachable_rc, want 1"; exit 1; }

kill -TERM "$KILND_PID"
wait "$KILND_PID"; rc=$?
trap - EXIT
[ "$rc" -eq 0 ] || { echo "FAIL: kilnd exited $rc after SIGTERM"; exit 1; }
grep -q '^kilnd: stopped$' "$WORK/kilnd.log" || { echo "FAIL: kilnd did not drain"; exit 1; }
# A crash leaves a last line with the signal and a stack trace.
: >"$WORK/crash.log"
"$KILND" --listen 127.0.0.1:0 --store "$WORK/store2" >"$WORK/crash.log" 2>&1 &
CRASH_PID=$!
for _ in $(seq 1 100); do grep -q '^kilnd: listening' "$WORK/crash.log" && break; sleep 0.1; done
kill -SEGV "$CRASH_PID"
set +e
wait "$CRASH_PID"; crash_rc=$?
set -e
[ "$crash_rc" -ne 0 ] || { echo "FAIL: kilnd survived SIGSEGV"; exit 1; }
grep -q 'SIGSEGV' "$WORK/crash.log" || { echo "FAIL: no signal line:"; cat "$WORK/crash.log"; exit 1; }
grep -q '@ ' "$WORK/crash.log" || { echo "FAIL: no stack trace:"; cat "$WORK/crash.log"; exit 1; }
echo "PASS"
