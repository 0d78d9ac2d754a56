#include "compiler/tune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>

#include "absl/strings/ascii.h"
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

absl::StatusOr<std::string> CostModel::Save() const {
  if (booster_ == nullptr) return absl::FailedPreconditionError("cost model: not trained");
  bst_ulong len = 0;
  const char* bytes = nullptr;
  if (XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &len, &bytes) != 0)
    return XgbError("saving");
  return std::string(bytes, len);
}

absl::Status CostModel::Load(const std::string& json) {
  BoosterHandle booster = nullptr;
  if (XGBoosterCreate(nullptr, 0, &booster) != 0) return XgbError("creating the booster");
  // XGBoost tells JSON from its binary formats by the first byte.
  const absl::string_view text = absl::StripAsciiWhitespace(json);
  if (XGBoosterLoadModelFromBuffer(booster, text.data(), text.size()) != 0 ||
      XGBoosterSetParam(booster, "nthread", "1") != 0) {
    absl::Status status = absl::InvalidArgumentError(
        absl::StrCat("cost model: not an XGBoost model: ", XGBGetLastError()));
    XGBoosterFree(booster);
    return status;
  }
  if (booster_ != nullptr) XGBoosterFree(booster_);
  booster_ = booster;
  return absl::OkStatus();
}

std::optional<double> PairwiseAccuracy(const CostModel& model,
                                       const std::vector<MeasuredGroup>& groups, int64_t* pairs) {
  constexpr double kNoise = 0.02;
  int64_t total = 0, agree = 0;
  for (const MeasuredGroup& g : groups) {
    const std::vector<float> scores = model.Predict(g.features);
    for (size_t a = 0; a < g.seconds.size(); ++a) {
      for (size_t b = a + 1; b < g.seconds.size(); ++b) {
        if (!g.seconds[a] || !g.seconds[b]) continue;
        const double fast = std::min(*g.seconds[a], *g.seconds[b]);
        const double slow = std::max(*g.seconds[a], *g.seconds[b]);
        if (slow <= fast * (1 + kNoise)) continue;
        ++total;
        // Higher scores are faster.
        agree += (*g.seconds[a] < *g.seconds[b]) == (scores[a] > scores[b]);
      }
    }
  }
  if (pairs != nullptr) *pairs = total;
  if (total == 0) return std::nullopt;
  return static_cast<double>(agree) / static_cast<double>(total);
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
