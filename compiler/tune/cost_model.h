// The learned cost model: gradient-boosted trees (XGBoost's C API) over program features
// (features.h), trained online on every measured record of the run. Its label is a candidate's
// normalized speed within its task (the task's best seconds / its seconds; a failure 0), so one
// model serves every task; it ranks candidates, it does not predict seconds.
#ifndef KILN_COMPILER_TUNE_COST_MODEL_H_
#define KILN_COMPILER_TUNE_COST_MODEL_H_

#include <vector>

#include "absl/status/status.h"

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

 private:
  void* booster_ = nullptr;  // BoosterHandle
};

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_COST_MODEL_H_
