#!/bin/bash
# kiln tune -> kiln compile --tuning-db -> kiln run: the tuned MLP still matches PyTorch's output,
# its manifest names the tuned kernels, a second tune continues the same database, and Ctrl-C
# stops a run cleanly with its records kept.
set -euo pipefail
KILN="$1"
MODELS="$(dirname "$2")"
TMP="${TEST_TMPDIR:-/tmp}/tune_e2e"
rm -rf "$TMP" && mkdir -p "$TMP"
DB="$TMP/tuning.db"
MODEL="$MODELS/mlp_784_128_10.onnx"

"$KILN" tune "$MODEL" --trials 8 --tuning-db "$DB" --json --curve-svg "$TMP/curve.svg" \
  > "$TMP/report.json" 2> "$TMP/progress.txt"
TUNED=$(python3 - "$TMP/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["trials"] == 8, r
assert len(r["tasks"]) == 2, r
assert all(t["weight"] == 1 and "default_seconds" in t for t in r["tasks"]), r
assert any("best_seconds" in t for t in r["tasks"]), r
assert r["curve"][0]["trials"] == 0 and r["curve"][-1]["trials"] == 8, r
# A record is applied when it beat the untuned kernel by more than the noise (3 %), and the
# report says which.
for t in r["tasks"]:
    if "best_seconds" in t:
        assert t["record_applied"] == (t["best_seconds"] * 1.03 < t["default_seconds"]), t
print(sum(1 for t in r["tasks"] if t.get("record_applied")))
PY
)
grep -q "8/8 trials" "$TMP/progress.txt" || { cat "$TMP/progress.txt"; exit 1; }
grep -q "<polyline" "$TMP/curve.svg"

"$KILN" compile "$MODEL" --target llvm --tuning-db "$DB" -o "$TMP/tuned.kiln" > "$TMP/compile.txt"
grep -q "tuned kernels: $TUNED" "$TMP/compile.txt" || { cat "$TMP/compile.txt"; exit 1; }
"$KILN" run "$TMP/tuned.kiln" --input "input=$MODELS/mlp_784_128_10.input.npy" \
  --output-dir "$TMP/out" --expect "output=$MODELS/mlp_784_128_10.output.npy" > /dev/null

# The table form, continuing the database: a header, both tasks, the curve.
"$KILN" tune "$MODEL" --trials 4 --tuning-db "$DB" > "$TMP/table.txt" 2> /dev/null
grep -q "fused_matmul_add_relu" "$TMP/table.txt" && grep -q "^curve: " "$TMP/table.txt" \
  || { cat "$TMP/table.txt"; exit 1; }

# Ctrl-C: the run ends with status 0 after its current round, "(stopped)", records kept.
"$KILN" tune "$MODEL" --trials 100000 --tuning-db "$DB" > "$TMP/stopped.txt" \
  2> "$TMP/stopped.log" &
PID=$!
for _ in $(seq 1 600); do
  grep -q "\[tune\]" "$TMP/stopped.log" 2>/dev/null && break
  sleep 0.1
done
kill -INT "$PID"
wait "$PID"
grep -q "(stopped)" "$TMP/stopped.txt" || { cat "$TMP/stopped.txt"; exit 1; }

# The records as JSON lines into another database: the same records, applied the same way; a
# second import adds none.
"$KILN" tuning-records export --tuning-db "$DB" -o "$TMP/records.jsonl" 2> /dev/null
LINES=$(wc -l < "$TMP/records.jsonl")
[ "$LINES" -ge 12 ] || { echo "exported $LINES records"; exit 1; }
"$KILN" tuning-records import --tuning-db "$TMP/copy.db" "$TMP/records.jsonl" > "$TMP/import.txt"
grep -q "^$LINES records imported" "$TMP/import.txt" || { cat "$TMP/import.txt"; exit 1; }
"$KILN" tuning-records import --tuning-db "$TMP/copy.db" "$TMP/records.jsonl" > "$TMP/import.txt"
grep -q "^0 records imported .* ($LINES already there)" "$TMP/import.txt" \
  || { cat "$TMP/import.txt"; exit 1; }
"$KILN" tuning-records list --tuning-db "$TMP/copy.db" > "$TMP/list.txt"
[ "$(grep -c "llvm -mtriple" "$TMP/list.txt")" = 2 ] || { cat "$TMP/list.txt"; exit 1; }
# The copy applies the same records as the database it came from.
"$KILN" compile "$MODEL" --target llvm --tuning-db "$DB" -o "$TMP/original.kiln" \
  > "$TMP/original.txt"
"$KILN" compile "$MODEL" --target llvm --tuning-db "$TMP/copy.db" -o "$TMP/copied.kiln" \
  > "$TMP/copied.txt"
[ "$(grep "tuned kernels" "$TMP/original.txt")" = "$(grep "tuned kernels" "$TMP/copied.txt")" ] \
  || { cat "$TMP/original.txt" "$TMP/copied.txt"; exit 1; }
echo '{"workload_key": 1}' > "$TMP/bad.jsonl"
set +e
MESSAGE=$("$KILN" tuning-records import --tuning-db "$TMP/copy.db" "$TMP/bad.jsonl" 2>&1)
STATUS=$?
set -e
[ "$STATUS" = 1 ] && echo "$MESSAGE" | grep -qF "bad.jsonl: line 1:" \
  || { echo "$STATUS: $MESSAGE"; exit 1; }

# A database that is not one: exit 1 naming it.
echo "not a database" > "$TMP/garbage.db"
set +e
MESSAGE=$("$KILN" compile "$MODEL" --tuning-db "$TMP/garbage.db" -o "$TMP/x.kiln" 2>&1)
STATUS=$?
set -e
[ "$STATUS" = 1 ] || { echo "expected exit 1, got $STATUS: $MESSAGE"; exit 1; }
echo "$MESSAGE" | grep -qF "garbage.db" || { echo "$MESSAGE"; exit 1; }
echo "PASS"
