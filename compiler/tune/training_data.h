// The cost model's training data, from tuning databases, and the model Kiln ships: every
// workload's records replayed onto its kernel (the TVMScript kept with the workload) and
// featurized, each labelled by its speed within its workload.
#ifndef KILN_COMPILER_TUNE_TRAINING_DATA_H_
#define KILN_COMPILER_TUNE_TRAINING_DATA_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/tune/cost_model.h"
#include "compiler/tune/database.h"

namespace kiln::tune {

// Rows and labels for CostModel::Train: a candidate's label is its group's best seconds / its
// seconds (1 for the fastest), a failure's 0.
void LabelledRows(const std::vector<MeasuredGroup>& groups,
                  std::vector<std::vector<float>>* features, std::vector<float>* labels);

// Every workload of `db` with a measured record, as a group (records whose trace no longer
// replays are skipped). Appends to `groups`; how many records went in.
absl::StatusOr<int64_t> ReadMeasuredGroups(const TuningDatabase& db,
                                           std::vector<MeasuredGroup>* groups);

struct TrainedModel {
  std::string json;  // the model trained on every group (CostModel::Save)
  int64_t records = 0;
  int groups = 0;
  // Trained on four groups in five, ranking the fifth: how well the model ranks kernels it has
  // not seen.
  std::optional<double> held_out_accuracy;
  int64_t held_out_pairs = 0;
};

// What `kiln tuning-records train-model` does with the records of its databases.
absl::StatusOr<TrainedModel> TrainModel(const std::vector<MeasuredGroup>& groups);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_TRAINING_DATA_H_
