// The cost model Kiln ships: XGBoost JSON trained by bench/train_cost_model.sh on tuning runs
// over Kiln's own test and bench models (`kiln tuning-records train-model`), built into the
// binary from shipped_cost_model.json. A tune ranks its first candidates with it
// (TuneOptions::initial_model) instead of sampling blind, and reports how well it ranked them.
#ifndef KILN_COMPILER_TUNE_SHIPPED_COST_MODEL_H_
#define KILN_COMPILER_TUNE_SHIPPED_COST_MODEL_H_

#include <string>

namespace kiln::tune {

// The model's JSON ("" where Kiln was built without one).
const std::string& ShippedCostModel();

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_SHIPPED_COST_MODEL_H_
