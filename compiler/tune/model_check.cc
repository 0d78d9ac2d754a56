#include "compiler/tune/model_check.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/tune/apply.h"
#include "compiler/tune/measure.h"
#include "runtime/artifact.h"
#include "runtime/time_evaluator.h"

namespace kiln::tune {
namespace {

// In the child: load the artifact, call its function on random inputs, and answer the median
// seconds per call as 8 bytes.
absl::StatusOr<std::string> TimeArtifact(const std::string& artifact,
                                         const ModelCheckOptions& options) {
  absl::StatusOr<runtime::LoadedArtifact> loaded =
      runtime::LoadArtifact(artifact, std::make_shared<runtime::ThreadPool>(options.threads));
  if (!loaded.ok()) return loaded.status();
  const v1::EntryFunction* entry = runtime::FindEntryFunction(loaded->manifest, options.function);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("the model has no function '", options.function, "'"));
  }
  std::vector<runtime::Value> args;
  for (int i = 0; i < entry->params_size(); ++i) {
    absl::StatusOr<runtime::Tensor> t = runtime::RandomArgument(entry->params(i), i);
    if (!t.ok()) return t.status();
    args.emplace_back(*std::move(t));
  }
  runtime::TimeEvaluatorOptions timing;
  timing.warmup = 2;
  timing.repeat = options.repeat;
  timing.min_repeat_ms = options.min_repeat_ms;
  const runtime::vm::VirtualMachine& vm = *loaded->vm;
  absl::StatusOr<std::vector<double>> times =
      runtime::TimeFunction([&]() { return vm.Invoke(options.function, args).status(); }, timing);
  if (!times.ok()) return times.status();
  const double median = runtime::Median(*times);
  return std::string(reinterpret_cast<const char*>(&median), sizeof median);
}

}  // namespace

absl::StatusOr<ModelTimes> MeasureModel(const ir::IRModule& mod,
                                        std::shared_ptr<const TuningDatabase> db,
                                        const ModelCheckOptions& options) {
  backend::BuildOptions untuned_options;
  absl::StatusOr<std::string> untuned =
      backend::BuildArtifact(mod, options.target, untuned_options);
  if (!untuned.ok()) {
    return absl::Status(untuned.status().code(),
                        absl::StrCat("the untuned model: ", untuned.status().message()));
  }
  backend::BuildOptions tuned_options;
  tuned_options.schedule_passes.push_back(
      ApplyTuningRecordsPass(std::move(db), options.target, [](const std::string&) {}));
  absl::StatusOr<std::string> tuned = backend::BuildArtifact(mod, options.target, tuned_options);
  if (!tuned.ok()) {
    return absl::Status(tuned.status().code(),
                        absl::StrCat("the tuned model: ", tuned.status().message()));
  }
  ModelTimes out;
  absl::StatusOr<v1::ArtifactManifest> manifest = runtime::ReadArtifactManifest(*tuned);
  if (!manifest.ok()) return manifest.status();
  out.tuned_kernels = manifest->tuned_kernels_size();
  std::vector<double> untuned_times, tuned_times;
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    for (const auto& [artifact, times, what] :
         {std::tuple{&*untuned, &untuned_times, "the untuned model"},
          std::tuple{&*tuned, &tuned_times, "the tuned model"}}) {
      // One child at a time: the two must not share the machine.
      std::vector<absl::StatusOr<std::string>> ran = RunInChildren(
          {[&, a = artifact] { return TimeArtifact(*a, options); }}, 1, options.timeout_s);
      if (!ran[0].ok()) {
        return absl::Status(ran[0].status().code(),
                            absl::StrCat(what, ": ", ran[0].status().message()));
      }
      if (ran[0]->size() != sizeof(double)) {
        return absl::InternalError(absl::StrCat(what, ": a malformed answer from its child"));
      }
      double seconds;
      std::memcpy(&seconds, ran[0]->data(), sizeof seconds);
      times->push_back(seconds);
    }
  }
  out.untuned_seconds = runtime::Median(untuned_times);
  out.tuned_seconds = runtime::Median(tuned_times);
  return out;
}

}  // namespace kiln::tune
