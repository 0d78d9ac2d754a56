#include "compiler/tune/training_data.h"

#include <algorithm>

#include "compiler/script/script_parser.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tune/features.h"

namespace kiln::tune {

void LabelledRows(const std::vector<MeasuredGroup>& groups,
                  std::vector<std::vector<float>>* features, std::vector<float>* labels) {
  for (const MeasuredGroup& g : groups) {
    std::optional<double> best;
    for (const std::optional<double>& s : g.seconds) {
      if (s && (!best || *s < *best)) best = s;
    }
    for (size_t k = 0; k < g.features.size(); ++k) {
      features->push_back(g.features[k]);
      labels->push_back(g.seconds[k] && best ? static_cast<float>(*best / *g.seconds[k]) : 0.f);
    }
  }
}

absl::StatusOr<int64_t> ReadMeasuredGroups(const TuningDatabase& db,
                                           std::vector<MeasuredGroup>* groups) {
  absl::StatusOr<std::vector<WorkloadId>> workloads = db.Workloads();
  if (!workloads.ok()) return workloads.status();
  int64_t count = 0;
  for (const WorkloadId& w : *workloads) {
    absl::StatusOr<std::string> script = db.Module(w);
    if (!script.ok()) return script.status();
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(*script);
    if (!mod.ok()) continue;  // a kernel this compiler no longer reads
    std::string name;
    for (const auto& [n, entry] : (*mod)->functions) {
      if (entry.second.as<ir::PrimFuncNode>() != nullptr) name = n;
    }
    absl::StatusOr<std::vector<TuningRecord>> records = db.Records(w);
    if (!records.ok()) return records.status();
    MeasuredGroup group;
    bool measured = false;
    for (const TuningRecord& r : *records) {
      v1::TraceProto trace = r.trace;
      trace.set_func_name(name);
      absl::StatusOr<tir::Schedule> sch = tir::ReplayTrace(*mod, trace);
      if (!sch.ok()) continue;
      group.features.push_back(ExtractFeatures(sch->func()));
      group.seconds.push_back(r.seconds);
      measured |= r.seconds.has_value();
    }
    if (!measured) continue;
    count += static_cast<int64_t>(group.seconds.size());
    groups->push_back(std::move(group));
  }
  return count;
}

absl::StatusOr<TrainedModel> TrainModel(const std::vector<MeasuredGroup>& groups) {
  TrainedModel out;
  out.groups = static_cast<int>(groups.size());
  std::vector<MeasuredGroup> train, held_out;
  for (size_t k = 0; k < groups.size(); ++k) {
    out.records += static_cast<int64_t>(groups[k].seconds.size());
    (k % 5 == 4 ? held_out : train).push_back(groups[k]);
  }
  std::vector<std::vector<float>> features;
  std::vector<float> labels;
  if (!held_out.empty() && !train.empty()) {
    LabelledRows(train, &features, &labels);
    CostModel partial;
    if (absl::Status s = partial.Train(features, labels); !s.ok()) return s;
    out.held_out_accuracy = PairwiseAccuracy(partial, held_out, &out.held_out_pairs);
  }
  features.clear();
  labels.clear();
  LabelledRows(groups, &features, &labels);
  CostModel model;
  if (absl::Status s = model.Train(features, labels); !s.ok()) return s;
  absl::StatusOr<std::string> json = model.Save();
  if (!json.ok()) return json.status();
  out.json = *std::move(json);
  return out;
}

}  // namespace kiln::tune
