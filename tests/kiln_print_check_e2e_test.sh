#!/usr/bin/env bash
# End to end: `kiln print` and `kiln check` on protobuf IR files — a good module, an ill-formed
# one, a mistyped one and garbage — checking output and the exit-status contract (0/1/2).
set -euo pipefail

KILN="$1"
WRITE_EXAMPLES="$2"
WORK="${TEST_TMPDIR:-$(mktemp -d)}"
"$WRITE_EXAMPLES" "$WORK"

fail() { echo "FAIL: $*"; exit 1; }
run() {  # run CMD... ; sets rc, out, err
  set +e
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"; rc=$?
  set -e
  out=$(cat "$WORK/out.txt"); err=$(cat "$WORK/err.txt")
}

# A good module prints normalized: StructInfo is inferred for every binding.
run "$KILN" print "$WORK/good.pb"
[ "$rc" -eq 0 ] || fail "print good.pb exited $rc: $err"
grep -q 'lv1: R.Tensor((n \* 4,), dtype="float32") = R.flatten(lv0)' "$WORK/out.txt" ||
  { echo "$out"; fail "flatten's inferred StructInfo is missing"; }
cp "$WORK/out.txt" "$WORK/good.py"
run "$KILN" check "$WORK/good.pb"
[ "$rc" -eq 0 ] || fail "check good.pb exited $rc: $out $err"
grep -q 'ok (2 functions)' "$WORK/out.txt" || fail "check good.pb: $out"

# The printed TVMScript reads back: print -> check -> print again gives the same text.
run "$KILN" check "$WORK/good.py"
[ "$rc" -eq 0 ] || fail "check good.py exited $rc: $out $err"
run "$KILN" print "$WORK/good.py"
[ "$rc" -eq 0 ] || fail "print good.py exited $rc: $err"
cmp -s "$WORK/out.txt" "$WORK/good.py" || { diff "$WORK/good.py" "$WORK/out.txt"; fail "print is not stable"; }

# A TVMScript syntax error names file:line:col and shows the line.
sed 's/R.flatten(lv0)/R.flatten(lv0/' "$WORK/good.py" >"$WORK/broken.py"
run "$KILN" check "$WORK/broken.py"
[ "$rc" -eq 1 ] || fail "check broken.py exited $rc"
grep -Eq "broken.py:[0-9]+:[0-9]+: '\\(' was never closed" "$WORK/out.txt" || { echo "$out"; fail "no located error"; }
grep -q 'R.flatten(lv0' "$WORK/out.txt" || fail "the offending line is not shown"
[ "$(wc -l <"$WORK/err.txt")" -eq 1 ] || fail "broken.py: more than one line on stderr"

# Every violation is reported, with its place; exit 1.
run "$KILN" check "$WORK/illformed.pb"
[ "$rc" -eq 1 ] || fail "check illformed.pb exited $rc"
grep -q "\[WF1\] in function 'main', binding 'lv': DataflowVar 'lv' is bound outside" "$WORK/out.txt" ||
  { echo "$out"; fail "WF1 not reported"; }
grep -q "\[WF3\] in function 'main', binding 'a': variable 'b' is used before it is bound" "$WORK/out.txt" ||
  { echo "$out"; fail "WF3 not reported"; }
grep -q '2 errors' "$WORK/err.txt" || fail "error count: $err"

# StructInfo errors name the function and binding.
run "$KILN" check "$WORK/mistyped.pb"
[ "$rc" -eq 1 ] || fail "check mistyped.pb exited $rc"
grep -q "binding 'sum': relax.add: operand dtypes differ (float32 vs int32)" "$WORK/out.txt" ||
  { echo "$out"; fail "dtype mismatch not reported"; }
run "$KILN" print "$WORK/mistyped.pb"
[ "$rc" -eq 1 ] || fail "print mistyped.pb exited $rc"

# Garbage and missing files are user errors with one line on stderr; no args is a usage error.
run "$KILN" print "$WORK/garbage.pb"
[ "$rc" -eq 1 ] || fail "print garbage.pb exited $rc"
grep -q 'not a serialized IRModuleProto' "$WORK/err.txt" || fail "garbage: $err"
[ "$(wc -l <"$WORK/err.txt")" -eq 1 ] || fail "garbage: more than one line on stderr"
run "$KILN" check "$WORK/missing.pb"
[ "$rc" -eq 1 ] || fail "check missing.pb exited $rc"
run "$KILN" check
[ "$rc" -eq 2 ] || fail "check without FILE exited $rc"
echo "PASS"
