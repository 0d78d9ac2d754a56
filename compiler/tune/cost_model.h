// The learned cost model: gradient-boosted trees (XGBoost's C API) over program features
// (features.h), trained online on every measured record of the run. Its label is a candidate's
// normalized speed within its task (the task's best seconds / its seconds; a failure 0), so one
// model serves every task; it ranks candidates, it does not predict seconds.
#ifndef KILN_COMPILER_TUNE_COST_MODEL_H_
#define KILN_COMPILER_TUNE_COST_MODEL_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::tune {

class CostModel {
 public:
  CostModel() = default;
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Retrains on all of `features` (rows of kFeatures) with labels `scores`; deterministic (one
  // thread, no sampling).
  absl::Status Train(const std::vector<std::vector<float>>& features,
                     const std::vector<float>& scores);
  // Predicted scores, higher is faster; all zero before the first training.
  std::vector<float> Predict(const std::vector<std::vector<float>>& features) const;
  bool trained() const { return booster_ != nullptr; }

  // The trained model as XGBoost's JSON, and back: a model shipped with Kiln
  // (shipped_cost_model.h) or kept between runs. Load replaces whatever was trained; a text that
  // is not such a model is InvalidArgument.
  absl::StatusOr<std::string> Save() const;
  absl::Status Load(const std::string& json);

 private:
  void* booster_ = nullptr;  // BoosterHandle
};

// Candidates of one workload: their features and measured seconds (absent: failed).
struct MeasuredGroup {
  std::vector<std::vector<float>> features;
  std::vector<std::optional<double>> seconds;
};

// How far `model`'s ranking agrees with measurements: of every pair of measured candidates of one
// group whose times differ by more than 2 % (less is the measurement's noise), the fraction it
// orders as the times do; `pairs` receives how many pairs there were. Nothing without a pair.
std::optional<double> PairwiseAccuracy(const CostModel& model,
                                       const std::vector<MeasuredGroup>& groups,
                                       int64_t* pairs = nullptr);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_COST_MODEL_H_
