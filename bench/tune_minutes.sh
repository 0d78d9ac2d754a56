#!/usr/bin/env bash
# Tuning in minutes: each model tuned for BUDGET (one thread, a fresh database each run) twice,
# with Kiln's shipped cost model and from scratch (--from-scratch), the two runs one after the
# other. Prints a Markdown table: trials, the estimate before and after, the trials and seconds
# to 50 / 90 / 95 % of the gain, the whole model measured untuned and tuned (the model check) and
# how far the estimate is from it, and how well the shipped model ranked what the run measured.
# With CURVES_DIR set, each run's curve is written as CURVES_DIR/NAME.{shipped,scratch}.svg and
# its report beside it as .json.
# A model is a path to an .onnx file or a name: NAME.onnx in tests/models, or one of the
# full-size models bench/make_full_models.py writes (exported here first if need be).
# usage: [CURVES_DIR=DIR] bash bench/tune_minutes.sh BUDGET MODEL ...   (e.g. 3m resnet18)
set -euo pipefail
cd "$(dirname "$0")/.."
budget=$1
shift
curves=${CURVES_DIR:-}
[[ -z $curves ]] || mkdir -p "$curves"
bash tools/setup.sh
bazel build --config=opt //client:kiln >/dev/null 2>&1
full=bench/full_models  # ignored by git
models=()
for model in "$@"; do
  if [[ $model == *.onnx ]]; then
    models+=("$model")
  elif [[ -f tests/models/$model.onnx ]]; then
    models+=("tests/models/$model.onnx")
  else
    [[ -f $full/manifest.json ]] || /usr/bin/python3 bench/make_full_models.py "$full" 2>/dev/null
    models+=("$full/$model.onnx")
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp bazel-bin/client/kiln "$work/kiln"  # not a binary rebuilt meanwhile
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date +%F)," \
  "one thread, budget $budget a run"
for model in "${models[@]}"; do
  name=$(basename "$model" .onnx)
  for run in shipped scratch; do
    flags=()
    [[ $run == scratch ]] && flags=(--from-scratch)
    [[ -n $curves ]] && flags+=(--curve-svg "$curves/$name.$run.svg")
    "$work/kiln" tune "$model" --tuning-db "$work/$name.$run.db" --budget "$budget" --json \
      "${flags[@]}" >"$work/$name.$run.json" 2>/dev/null
    if [[ -n $curves ]]; then cp "$work/$name.$run.json" "$curves/"; fi
  done
done
python3 - "$work" "${models[@]}" <<'PY'
import json, os, sys
work, models = sys.argv[1], sys.argv[2:]
print("\n| model | run | trials | estimated ms before → after | 50 / 90 / 95 % of the gain "
      "(trials, s) | measured ms untuned → tuned | estimate vs measured (tuned) | shipped model "
      "ranked |")
print("|---|---|---|---|---|---|---|---|")
for model in models:
    name = os.path.basename(model)[:-5]
    for run in ("shipped", "scratch"):
        r = json.load(open(f"{work}/{name}.{run}.json"))
        c = r["curve"]
        ms = ", ".join(f"{m['trials']} ({m['elapsed_s']:.0f} s)" for m in r["milestones"]) or "-"
        m = r.get("model_check", {})
        measured = (f"{m['untuned_measured_seconds'] * 1e3:.3f} → "
                    f"{m['tuned_measured_seconds'] * 1e3:.3f}") if m else "-"
        off = (f"{(m['tuned_estimated_seconds'] / m['tuned_measured_seconds'] - 1) * 100:+.0f} %"
               f" ({(m['tuned_calibrated_seconds'] / m['tuned_measured_seconds'] - 1) * 100:+.0f} %"
               " calibrated)" if m else "-")
        acc = (f"{r['shipped_model_accuracy'] * 100:.0f} % of {r['shipped_model_pairs']} pairs"
               if "shipped_model_accuracy" in r else "-")
        print(f"| {name} | {run} | {r['trials']} | {c[0]['estimated_seconds'] * 1e3:.3f} → "
              f"{c[-1]['estimated_seconds'] * 1e3:.3f} | {ms} | {measured} | {off} | {acc} |")
PY
