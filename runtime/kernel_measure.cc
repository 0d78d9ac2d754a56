#include "runtime/kernel_measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "runtime/library.h"
#include "runtime/support/status_macros.h"
#include "runtime/tensor.h"
#include "runtime/time_evaluator.h"

namespace kiln::runtime {
namespace {

// The arguments as `measure` describes them; the tensors are also kept in `tensors`, in order.
absl::StatusOr<std::vector<Value>> Arguments(const v1::KernelMeasure& measure, uint32_t seed,
                                             std::vector<Tensor>* tensors) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<Value> args;
  for (const v1::KernelArgument& a : measure.arguments()) {
    if (a.is_scalar()) {
      args.emplace_back(a.scalar());
      continue;
    }
    KILN_ASSIGN_OR_RETURN(DLDataType dtype, ParseDataType(a.dtype()));
    std::vector<int64_t> shape(a.shape().begin(), a.shape().end());
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, dtype));
    const int64_t n = t.NumElements();
    if (dtype.code == kDLFloat && dtype.bits == 32) {
      float* p = static_cast<float*>(t.data());
      for (int64_t i = 0; i < n; ++i) p[i] = dist(rng);
    } else {
      std::memset(t.data(), 0, static_cast<size_t>(n) * DataTypeBytes(dtype));
    }
    tensors->push_back(t);
    args.emplace_back(t);
  }
  return args;
}

absl::Status Compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                     double tolerance) {
  for (size_t b = 0; b < want.size(); ++b) {
    if (want[b].dtype().code != kDLFloat || want[b].dtype().bits != 32) continue;
    const float* g = static_cast<const float*>(got[b].data());
    const float* w = static_cast<const float*>(want[b].data());
    for (int64_t i = 0; i < want[b].NumElements(); ++i) {
      if (!(std::abs(g[i] - w[i]) <= tolerance * (1 + std::abs(w[i])))) {
        return absl::DataLossError(absl::StrCat("wrong result: buffer ", b, " element ", i, " is ",
                                                g[i], ", the untuned kernel gives ", w[i]));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> MeasureKernel(const v1::KernelMeasure& measure) {
  auto pool = std::make_shared<ThreadPool>(std::max(1, measure.threads()));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<KernelLibrary> reference,
                        KernelLibrary::LoadFromMemory(measure.reference(), "reference"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<KernelLibrary> candidate,
                        KernelLibrary::LoadFromMemory(measure.candidate(), "candidate"));
  KILN_ASSIGN_OR_RETURN(Function want_fn, reference->GetFunction(measure.function(), pool));
  KILN_ASSIGN_OR_RETURN(Function fn, candidate->GetFunction(measure.function(), pool));
  // The same seed for both: the candidate sees the reference's inputs.
  constexpr uint32_t kSeed = 17;
  std::vector<Tensor> want, got;
  KILN_ASSIGN_OR_RETURN(std::vector<Value> want_args, Arguments(measure, kSeed, &want));
  KILN_ASSIGN_OR_RETURN(std::vector<Value> args, Arguments(measure, kSeed, &got));
  KILN_RETURN_IF_ERROR(want_fn(want_args).status());
  KILN_RETURN_IF_ERROR(fn(args).status());
  KILN_RETURN_IF_ERROR(Compare(got, want, measure.tolerance()));
  TimeEvaluatorOptions timing;
  timing.repeat = std::max(1, measure.repeat());
  timing.min_repeat_ms = measure.min_repeat_ms();
  KILN_ASSIGN_OR_RETURN(std::vector<double> times,
                        TimeFunction([&]() -> absl::Status { return fn(args).status(); }, timing));
  if (times.empty()) return absl::InternalError("the time evaluator returned no repeat");
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace kiln::runtime
