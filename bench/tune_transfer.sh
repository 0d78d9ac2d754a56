#!/usr/bin/env bash
# Transfer across models: ResNet-34 tuned after ResNet-18 (the first tune's records in its
# database, Kiln's shipped cost model) against ResNet-34 tuned from scratch (a fresh database,
# --from-scratch: no shipped model, no transfer), the same time budget each, one thread. Prints,
# for each run, the trials and seconds to 50 / 90 / 95 % of its gain, the estimate before and
# after, and the whole model measured untuned and tuned; then how many trials each ResNet-34
# run needed for the scratch run's final gain (as a fraction of its untuned estimate: the two
# runs' untuned kernels are timed apart, about 1 % apart).
# usage: bash bench/tune_transfer.sh [FIRST_BUDGET] [SECOND_BUDGET]   (default 3m 3m)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel build --config=opt //client:kiln >/dev/null 2>&1
full=bench/full_models  # ignored by git
[[ -f $full/manifest.json ]] || /usr/bin/python3 bench/make_full_models.py "$full" 2>/dev/null
[[ -f $full/transfer/resnet34.onnx ]] ||
  /usr/bin/python3 bench/make_full_models.py "$full/transfer" resnet34 2>/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kiln=bazel-bin/client/kiln
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date +%F), one thread"
"$kiln" tune "$full/resnet18.onnx" --tuning-db "$work/transfer.db" --budget "${1:-3m}" \
  --no-model-check --json >"$work/first.json" 2>/dev/null
"$kiln" tune "$full/transfer/resnet34.onnx" --tuning-db "$work/transfer.db" --budget "${2:-3m}" \
  --json >"$work/transfer.json" 2>/dev/null
"$kiln" tune "$full/transfer/resnet34.onnx" --tuning-db "$work/scratch.db" --budget "${2:-3m}" \
  --from-scratch --json >"$work/scratch.json" 2>/dev/null
python3 - "$work" <<'PY'
import json, sys
runs = {k: json.load(open(f"{sys.argv[1]}/{k}.json")) for k in ("first", "transfer", "scratch")}
print("\n| run | trials | seconds | estimated ms (before → after) | 50 / 90 / 95 % of the gain "
      "(trials, s) | measured ms untuned → tuned |")
print("|---|---|---|---|---|---|")
names = {"first": "ResNet-18 first", "transfer": "ResNet-34 after it",
         "scratch": "ResNet-34 from scratch"}
for key, r in runs.items():
    c = r["curve"]
    ms = ", ".join(f"{m['trials']} ({m['elapsed_s']:.0f} s)" for m in r["milestones"]) or "no gain"
    check = r.get("model_check")
    measured = (f"{check['untuned_measured_seconds'] * 1e3:.2f} → "
                f"{check['tuned_measured_seconds'] * 1e3:.2f}") if check else "-"
    print(f"| {names[key]} | {r['trials']} | {r['elapsed_s']:.0f} | "
          f"{c[0]['estimated_seconds'] * 1e3:.2f} → {c[-1]['estimated_seconds'] * 1e3:.2f} | {ms} | "
          f"{measured} |")
def gain(run, point):
    return 1 - point["estimated_seconds"] / run["curve"][0]["estimated_seconds"]
target = gain(runs["scratch"], runs["scratch"]["curve"][-1])
def first_at(run):
    return next((p["trials"] for p in run["curve"] if gain(run, p) >= target), None)
t, s = first_at(runs["transfer"]), first_at(runs["scratch"])
transferred = sum(x.get("transferred", 0) for x in runs["transfer"]["tasks"])
print(f"\nThe scratch run's final gain ({target * 100:.1f} % of its untuned estimate): after {s} "
      f"trials from scratch, after {t} with the first model's records and the shipped model "
      f"({transferred} candidates adapted from a family).")
PY
