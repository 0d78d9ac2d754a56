#include "server/worker/worker_tune.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/tune/measure.h"
#include "compiler/tune/shipped_cost_model.h"
#include "compiler/tune/task.h"
#include "compiler/tune/tuner.h"
#include "compiler/version.h"
#include "runtime/agent/confine.h"
#include "runtime/device_info.h"
#include "server/worker_frames.h"

namespace kiln::server {
namespace {

// The tuner's runner in the service: each batch of candidates goes up to kilnd as a
// MeasureBatch, which kilnd spreads over the idle agents of the job's device key; the answer
// comes back in the batch's order.
// Checks a candidate's numbers against the reference, in this worker (not on the agent's word).
using CandidateCheck =
    std::function<absl::Status(const tune::TuneTask&, const std::string&, const std::string&,
                               const tune::LocalRunnerOptions&)>;

class KilndRunner : public tune::Runner {
 public:
  // `check`: what a candidate an agent reports as the fastest so far must pass before its time
  // counts; none where the operator trusts the agents' own check (--candidate-checker ARCH=agent).
  explicit KilndRunner(CandidateCheck check) : check_(std::move(check)) {}

  std::vector<tune::RunResult> Run(const tune::TuneTask& task, const std::string& reference,
                                   const std::vector<std::string>& libraries) override {
    std::vector<tune::RunResult> out(libraries.size());
    WorkerMessage message;
    for (size_t i = 0; i < libraries.size(); ++i) {
      absl::StatusOr<v1::KernelMeasure> m =
          tune::MeasureRequest(task, reference, libraries[i], options_);
      if (!m.ok()) return Failed(libraries.size(), m.status().message());
      *message.mutable_measure()->add_candidates() = *std::move(m);
    }
    std::optional<std::string> answer;
    if (WriteFrame(stdout, message)) answer = ReadFrame(stdin);
    MeasureResults results;
    if (!answer.has_value() || !results.ParseFromString(*answer) ||
        results.results_size() != static_cast<int>(libraries.size())) {
      // kilnd went away (or broke the conversation): nothing was measured, so nothing is
      // recorded; the records so far stay in the database.
      std::fprintf(stderr, "kiln-worker: kilnd sent no measurements; the tune ends\n");
      std::_Exit(1);
    }
    double& best = best_seconds_.try_emplace(task.name, HUGE_VAL).first->second;
    for (size_t i = 0; i < libraries.size(); ++i) {
      const MeasureResult& r = results.results(static_cast<int>(i));
      if (!r.ok()) {
        out[i].error = absl::StrCat("run: ", r.error());
        continue;
      }
      // Only the fastest so far could ever be applied: it is checked here, not on the agent's
      // word alone (a wrong kernel with a fast time would otherwise become the record).
      if (check_ && r.seconds() < best) {
        absl::Status checked = check_(task, reference, libraries[i], options_);
        ++checked_;
        if (!checked.ok()) {
          out[i].error = absl::StrCat("run: the agent timed it at ", r.seconds(),
                                      " s, but kiln-worker's check failed: ", checked.message());
          continue;
        }
      }
      best = std::min(best, r.seconds());
      out[i].seconds = r.seconds();
    }
    return out;
  }

  int checked() const { return checked_; }

 private:
  static std::vector<tune::RunResult> Failed(size_t n, absl::string_view why) {
    return std::vector<tune::RunResult>(n, {std::nullopt, absl::StrCat("run: ", why)});
  }

  tune::LocalRunnerOptions options_;  // the timing and the tolerance the agents apply
  const CandidateCheck check_;
  int checked_ = 0;
  std::map<std::string, double> best_seconds_;  // by task: the fastest checked so far
};

// Where a candidate for `work`'s target is checked: here where its code runs on this machine,
// else in the kiln-agent kilnd names for the target's architecture (under an emulator), else
// nowhere if kilnd says the agents are trusted; with none of these the tune cannot be trusted,
// and is refused.
absl::StatusOr<CandidateCheck> CheckFor(const TuneWork& work) {
  absl::StatusOr<codegen::LlvmTargetInfo> info = codegen::ParseTarget(work.target());
  if (!info.ok()) return info.status();
  if (runtime::CheckCodeRunsOn(info->triple, info->device_features,
                               runtime::LocalDeviceAttributes())
          .ok()) {
    return CandidateCheck(tune::CheckCandidate);
  }
  const std::string arch = info->triple.substr(0, info->triple.find('-'));
  for (const CandidateChecker& checker : work.candidate_checkers()) {
    if (checker.arch() != arch) continue;
    if (checker.command().empty()) return CandidateCheck();  // the operator trusts the agents
    std::vector<std::string> command(checker.command().begin(), checker.command().end());
    absl::StatusOr<v1::TaskConfinement> confinement =
        runtime::PlanConfinement("nobody", {}, /*emulated=*/true);
    if (!confinement.ok()) return confinement.status();
    return CandidateCheck([command, c = *confinement](
                              const tune::TuneTask& task, const std::string& reference,
                              const std::string& library, const tune::LocalRunnerOptions& options) {
      return tune::CheckCandidateIn(command, c, task, reference, library, options);
    });
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "kilnd cannot check tuning candidates for ", arch, " (", work.target(),
      ") itself, and an agent's own check is not trusted: start kilnd with --candidate-checker ",
      arch, "=\"EMULATOR KILN-AGENT\" (a kiln-agent built for ", arch, "), or --candidate-checker ",
      arch, "=agent to trust the agents"));
}

TuneOutcome Failure(const absl::Status& status) {
  TuneOutcome outcome;
  outcome.set_ok(false);
  outcome.set_code(static_cast<int>(status.code()));
  outcome.set_error(ValidUtf8(status.message()));
  return outcome;
}

}  // namespace

TuneOutcome TuneInWorker(const TuneWork& work, const ir::IRModule& mod) {
  absl::StatusOr<std::vector<tune::TuneTask>> tasks = tune::ExtractTasksFor(mod, work.target());
  if (!tasks.ok()) return Failure(tasks.status());
  absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> db =
      tune::TuningDatabase::Open(work.tuning_db_path());
  if (!db.ok()) return Failure(db.status());
  (*db)->set_owner(work.records_owner());
  tune::LocalBuilderOptions builder_options;
  builder_options.target = work.target();
  std::unique_ptr<tune::Builder> builder = tune::MakeLocalBuilder(builder_options);
  absl::StatusOr<CandidateCheck> check = CheckFor(work);
  if (!check.ok()) return Failure(check.status());
  KilndRunner runner(*std::move(check));
  tune::TuneOptions options;
  options.target = work.target();
  options.trials = work.trials();
  options.max_trials_per_task = work.max_trials_per_task();
  options.seed = work.seed();
  options.budget_s = work.budget_s();
  options.initial_model = tune::ShippedCostModel();
  options.compiler = CompilerIdentity();
  options.measured_on = work.device_key();
  absl::StatusOr<tune::TuneReport> report =
      tune::Tune(*tasks, **db, *builder, runner, options, [&](const tune::TuneReport& progress) {
        WorkerMessage message;
        *message.mutable_tune_progress() = tune::ToProto(progress, work.trials());
        WriteFrame(stdout, message);
      });
  if (!report.ok()) return Failure(report.status());
  TuneOutcome outcome;
  outcome.set_ok(true);
  *outcome.mutable_result() = tune::ToProto(*report, work.trials());
  outcome.mutable_result()->set_candidates_checked(runner.checked());
  return outcome;
}

}  // namespace kiln::server
