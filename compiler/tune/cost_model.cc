#include "compiler/tune/cost_model.h"

#include <xgboost/c_api.h>

#include "absl/strings/str_cat.h"
#include "compiler/tune/features.h"

namespace kiln::tune {
namespace {

constexpr int kRounds = 40;

absl::Status XgbError(const char* what) {
  return absl::InternalError(absl::StrCat("cost model: ", what, ": ", XGBGetLastError()));
}

// Row-major float matrix of `rows`, each padded or cut to kFeatures.
std::vector<float> Flatten(const std::vector<std::vector<float>>& rows) {
  std::vector<float> flat(rows.size() * kFeatures, 0.f);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < rows[r].size() && c < static_cast<size_t>(kFeatures); ++c) {
      flat[r * kFeatures + c] = rows[r][c];
    }
  }
  return flat;
}

}  // namespace

CostModel::~CostModel() {
  if (booster_ != nullptr) XGBoosterFree(booster_);
}

absl::Status CostModel::Train(const std::vector<std::vector<float>>& features,
                              const std::vector<float>& scores) {
  if (features.empty() || features.size() != scores.size()) {
    return absl::InvalidArgumentError("cost model: no records, or labels that do not match");
  }
  std::vector<float> flat = Flatten(features);
  DMatrixHandle data = nullptr;
  if (XGDMatrixCreateFromMat(flat.data(), features.size(), kFeatures, -1.f, &data) != 0)
    return XgbError("creating the training matrix");
  absl::Status status = absl::OkStatus();
  BoosterHandle booster = nullptr;
  if (XGDMatrixSetFloatInfo(data, "label", scores.data(), scores.size()) != 0 ||
      XGBoosterCreate(&data, 1, &booster) != 0) {
    status = XgbError("creating the booster");
  }
  for (const auto& [key, value] :
       std::vector<std::pair<const char*, const char*>>{{"objective", "reg:squarederror"},
                                                        {"max_depth", "6"},
                                                        {"eta", "0.2"},
                                                        {"min_child_weight", "1"},
                                                        {"nthread", "1"},
                                                        {"seed", "0"},
                                                        {"verbosity", "0"}}) {
    if (status.ok() && XGBoosterSetParam(booster, key, value) != 0)
      status = XgbError("setting a parameter");
  }
  for (int round = 0; status.ok() && round < kRounds; ++round) {
    if (XGBoosterUpdateOneIter(booster, round, data) != 0) status = XgbError("training");
  }
  XGDMatrixFree(data);
  if (!status.ok()) {
    if (booster != nullptr) XGBoosterFree(booster);
    return status;
  }
  if (booster_ != nullptr) XGBoosterFree(booster_);
  booster_ = booster;
  return absl::OkStatus();
}

std::vector<float> CostModel::Predict(const std::vector<std::vector<float>>& features) const {
  std::vector<float> out(features.size(), 0.f);
  if (booster_ == nullptr || features.empty()) return out;
  std::vector<float> flat = Flatten(features);
  DMatrixHandle data = nullptr;
  if (XGDMatrixCreateFromMat(flat.data(), features.size(), kFeatures, -1.f, &data) != 0) return out;
  bst_ulong len = 0;
  const float* result = nullptr;
  if (XGBoosterPredict(booster_, data, 0, 0, 0, &len, &result) == 0 && len == features.size()) {
    out.assign(result, result + len);
  }
  XGDMatrixFree(data);
  return out;
}

}  // namespace kiln::tune
