#include "compiler/tune/shipped_cost_model.h"

namespace kiln::tune {

// Defined by the generated shipped_cost_model_data.cc (BUILD: the JSON as a string literal).
extern const char kShippedCostModelJson[];

const std::string& ShippedCostModel() {
  static const std::string* model = new std::string(kShippedCostModelJson);
  return *model;
}

}  // namespace kiln::tune
