#!/bin/bash
# kiln schedule apply: a JSON trace replayed onto a module gives the scheduled TVMScript, which
# parses back; a broken trace is refused with exit status 1 and the instruction named.
set -euo pipefail
KILN="$1"
MODULE="$2"
TRACE="$3"
OUT="${TEST_TMPDIR:-/tmp}/scheduled.py"

"$KILN" schedule apply "$MODULE" --trace "$TRACE" -o "$OUT"
for want in 'T.parallel(4)' 'T.unroll(4)' 'T.vectorized(32)' 'with T.block("C_init")' \
            'with T.block("C_local")' 'scope="local"' '"tir.is_scheduled": T.bool(True)'; do
  grep -qF "$want" "$OUT" || { echo "missing: $want"; cat "$OUT"; exit 1; }
done
# The output is a module kiln reads back, and printing it again changes nothing.
"$KILN" print "$OUT" > "$OUT.again"
cmp <(grep -v '^#' "$OUT") <(grep -v '^#' "$OUT.again") || { echo "not a fixed point"; exit 1; }

# A decision that does not tile the loop: exit 1, naming the instruction.
BAD="${TEST_TMPDIR:-/tmp}/bad.json"
sed 's/"decision": \["4", "32"\]/"decision": ["5", "32"]/' "$TRACE" > "$BAD"
set +e
MESSAGE=$("$KILN" schedule apply "$MODULE" --trace "$BAD" 2>&1 >/dev/null)
STATUS=$?
set -e
[ "$STATUS" = 1 ] || { echo "expected exit 1, got $STATUS"; exit 1; }
echo "$MESSAGE" | grep -qF "trace instruction 3 (SamplePerfectTile)" || { echo "$MESSAGE"; exit 1; }
echo "PASS"
