#include "runtime/agent/task_runner.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/agent/channel.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/artifact.h"
#include "runtime/artifact_signing.h"
#include "runtime/device_info.h"
#include "runtime/kernel_measure.h"
#include "runtime/kernel_profile.h"
#include "runtime/support/status_macros.h"
#include "runtime/time_evaluator.h"

namespace kiln::runtime {
namespace {

// The arguments: given tensors by name (or in order when unnamed), random ones when none are
// given and `random_ok`.
absl::StatusOr<std::vector<Value>> Arguments(const v1::EntryFunction& entry, const v1::Task& task,
                                             bool random_ok) {
  std::vector<Value> args;
  if (task.inputs().empty()) {
    if (!random_ok && entry.params_size() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", entry.name(), "' takes ", entry.params_size(), " inputs, got none"));
    }
    for (int i = 0; i < entry.params_size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Tensor t, RandomArgument(entry.params(i), i));
      args.emplace_back(std::move(t));
    }
    return args;
  }
  if (task.inputs_size() != entry.params_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", entry.name(), "' takes ", entry.params_size(), " inputs, got ", task.inputs_size()));
  }
  std::map<std::string, const v1::TensorValue*> by_name;
  for (const v1::TensorValue& v : task.inputs()) {
    if (!v.name().empty()) by_name[v.name()] = &v;
  }
  for (int i = 0; i < entry.params_size(); ++i) {
    const v1::TensorValue* given = &task.inputs(i);
    if (!by_name.empty()) {
      auto it = by_name.find(entry.params(i).name());
      if (it == by_name.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("no input for parameter '", entry.params(i).name(), "'"));
      }
      given = it->second;
    }
    KILN_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(*given));
    args.emplace_back(std::move(t));
  }
  return args;
}

absl::Status Run(const v1::LocalTask& local, const std::string& bytes, v1::TaskResult* result) {
  const v1::Task& task = local.task();
  if (task.kind() == v1::JOB_KIND_TUNE) {  // a tuning candidate: no artifact, two libraries
    KILN_ASSIGN_OR_RETURN(double seconds, MeasureKernel(task.measure()));
    result->set_measured_seconds(seconds);
    return absl::OkStatus();
  }
  // The signature again, on the very bytes loaded (the cache file could have changed since the
  // agent checked it), before anything of them is mapped.
  KILN_ASSIGN_OR_RETURN(TrustedKeys trusted,
                        TrustedKeys::FromPem(local.trusted_keys_pem(), "the agent's keys"));
  KILN_ASSIGN_OR_RETURN(v1::ArtifactProto artifact, ParseArtifact(bytes, /*check_host=*/true));
  KILN_RETURN_IF_ERROR(CheckArtifactSignature(artifact, trusted));
  int threads = local.threads() > 0 ? local.threads() : ThreadPool::DefaultThreads();
  KILN_ASSIGN_OR_RETURN(LoadedArtifact loaded,
                        LoadParsedArtifact(artifact, std::make_shared<ThreadPool>(threads)));
  bool profile = task.kind() == v1::JOB_KIND_PROFILE;
  std::string function = profile ? task.profile().function() : task.function();
  if (function.empty()) function = "main";
  const v1::EntryFunction* entry = FindEntryFunction(loaded.manifest, function);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("the artifact has no function '", function, "'"));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value> args, Arguments(*entry, task, profile));
  const vm::VirtualMachine& vm = *loaded.vm;
  if (!profile) {
    KILN_ASSIGN_OR_RETURN(Value out, vm.Invoke(function, args));
    KILN_ASSIGN_OR_RETURN(std::vector<v1::TensorValue> outputs, ResultToProtos(out));
    for (v1::TensorValue& t : outputs) *result->mutable_inference()->add_outputs() = std::move(t);
    return absl::OkStatus();
  }
  TimeEvaluatorOptions options;
  const v1::ProfileOptions& p = task.profile();
  options.warmup = p.warmup();
  options.number = std::max(1, p.number());
  options.repeat = p.repeat() > 0 ? p.repeat() : 10;
  options.min_repeat_ms = p.min_repeat_ms();
  options.cooldown_ms = p.cooldown_ms();
  int64_t number_used = options.number;
  options.number_used = &number_used;
  KILN_ASSIGN_OR_RETURN(
      std::vector<double> times,
      TimeFunction([&]() { return vm.Invoke(function, args).status(); }, options));
  v1::ProfileResult* out = result->mutable_profile();
  out->set_function(function);
  out->set_number(static_cast<int32_t>(std::min<int64_t>(number_used, INT32_MAX)));
  out->set_emulated(LocalDeviceAttributes().emulated());
  Summarize(times, out);
  if (p.per_kernel()) {
    KILN_RETURN_IF_ERROR(ProfileKernels(vm, function, args, loaded.manifest, options.repeat, out));
  }
  return absl::OkStatus();
}

}  // namespace

void Summarize(const std::vector<double>& seconds_per_call, v1::ProfileResult* out) {
  out->clear_seconds_per_call();
  for (double s : seconds_per_call) out->add_seconds_per_call(s);
  if (seconds_per_call.empty()) return;
  std::vector<double> sorted = seconds_per_call;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = Median(sorted);
  double mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  double variance = 0;
  for (double s : sorted) variance += (s - mean) * (s - mean);
  out->set_median_seconds(median);
  out->set_mean_seconds(mean);
  out->set_min_seconds(sorted.front());
  out->set_max_seconds(sorted.back());
  out->set_stddev_seconds(n > 1 ? std::sqrt(variance / static_cast<double>(n - 1)) : 0.0);
}

v1::TaskResult RunLocalTask(const v1::LocalTask& task, const std::string& artifact) {
  v1::TaskResult result;
  result.set_task_id(task.task().task_id());
  absl::Status status = Run(task, artifact, &result);
  result.set_ok(status.ok());
  if (!status.ok()) {
    result.clear_profile();
    result.clear_inference();
    result.set_error(std::string(status.message()));
  }
  return result;
}

}  // namespace kiln::runtime
