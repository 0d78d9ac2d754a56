#include "client/tune_command.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/remote_commands.h"
#include "compiler/frontend/load_module.h"
#include "compiler/tune/model_check.h"
#include "compiler/tune/records_io.h"
#include "compiler/tune/shipped_cost_model.h"
#include "compiler/tune/training_data.h"
#include "compiler/tune/tuner.h"
#include "compiler/version.h"

namespace kiln::client {
namespace {

std::atomic<bool> g_stop{false};

void OnInterrupt(int) {
  g_stop.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

}  // namespace

int TuneModel(const TuneFlags& flags) {
  std::signal(SIGINT, OnInterrupt);  // from the start: a Ctrl-C while loading also ends cleanly
  absl::StatusOr<ir::IRModule> mod = frontend::ParseModuleFile(flags.model);
  if (!mod.ok()) {
    std::fprintf(stderr, "kiln: %s: %s\n", flags.model.c_str(),
                 std::string(mod.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::vector<tune::TuneTask>> tasks = tune::ExtractTasksFor(*mod, flags.target);
  if (!tasks.ok()) {
    std::fprintf(stderr, "kiln: %s: %s\n", flags.model.c_str(),
                 std::string(tasks.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> db =
      tune::TuningDatabase::Open(flags.database);
  if (!db.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(db.status().message()).c_str());
    return 1;
  }
  tune::LocalBuilderOptions builder_options;
  builder_options.target = flags.target;
  tune::LocalRunnerOptions runner_options;
  runner_options.threads = flags.threads;
  runner_options.timeout_s = flags.timeout_s;
  std::unique_ptr<tune::Builder> builder = tune::MakeLocalBuilder(builder_options);
  std::unique_ptr<tune::Runner> runner = tune::MakeLocalRunner(runner_options);
  tune::TuneOptions options;
  options.target = flags.target;
  options.trials = flags.trials;
  options.max_trials_per_task = flags.max_trials_per_task;
  options.seed = flags.seed;
  options.use_cost_model = !flags.random_search;
  options.compiler = CompilerIdentity();
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  options.measured_on = host;
  options.stop = &g_stop;
  options.budget_s = flags.budget_s;
  options.transfer = !flags.from_scratch;
  if (!flags.from_scratch) options.initial_model = tune::ShippedCostModel();
  const std::string budget =
      flags.budget_s > 0 ? absl::StrFormat(" within %.0f s", flags.budget_s) : "";
  std::fprintf(stderr, "kiln tune: %zu tasks from %s, %s trials%s, database %s\n", tasks->size(),
               flags.model.c_str(),
               flags.trials == kUnlimitedTrials ? "as many" : std::to_string(flags.trials).c_str(),
               budget.c_str(), flags.database.c_str());
  const bool tty = isatty(STDERR_FILENO);
  absl::StatusOr<tune::TuneReport> report =
      tune::Tune(*tasks, **db, *builder, *runner, options, [&](const tune::TuneReport& r) {
        const std::string of =
            flags.trials == kUnlimitedTrials ? "" : absl::StrCat("/", flags.trials);
        std::fprintf(stderr,
                     "%s[tune] %d%s trials, %zu tasks, est. model %.4f ms (from %.4f ms), %.1f s%s",
                     tty ? "\r" : "", r.trials, of.c_str(), r.tasks.size(),
                     r.curve.back().estimated_seconds * 1e3,
                     r.curve.front().estimated_seconds * 1e3, r.elapsed_s, tty ? "" : "\n");
      });
  std::signal(SIGINT, SIG_DFL);
  if (tty) std::fprintf(stderr, "\n");
  if (!report.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  if (!flags.curve_svg.empty()) {
    std::ofstream(flags.curve_svg) << tune::CurveSvg(*report);
  }
  v1::TuneResult result = tune::ToProto(*report, flags.trials);
  if (flags.model_check && !report->stopped() && !report->curve.empty()) {
    std::fprintf(stderr, "kiln tune: timing the whole model, untuned and tuned\n");
    tune::ModelCheckOptions check;
    check.target = flags.target;
    check.threads = flags.threads;
    absl::StatusOr<tune::ModelTimes> times = tune::MeasureModel(
        *mod, std::shared_ptr<const tune::TuningDatabase>(std::move(*db)), check);
    if (!times.ok()) {
      std::fprintf(stderr, "kiln: the model check: %s\n",
                   std::string(times.status().message()).c_str());
      return 1;
    }
    v1::TuneModelCheck* out = result.mutable_model_check();
    out->set_untuned_estimated_seconds(report->curve.front().estimated_seconds);
    out->set_tuned_estimated_seconds(report->curve.back().estimated_seconds);
    out->set_untuned_measured_seconds(times->untuned_seconds);
    out->set_tuned_measured_seconds(times->tuned_seconds);
    out->set_tuned_kernels(times->tuned_kernels);
    if (out->untuned_estimated_seconds() > 0) {
      out->set_tuned_calibrated_seconds(out->tuned_estimated_seconds() * times->untuned_seconds /
                                        out->untuned_estimated_seconds());
    }
  }
  PrintTuneResult(result, flags.json);
  return 0;
}

namespace {

std::unique_ptr<tune::TuningDatabase> OpenOrSay(const std::string& path) {
  absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> db = tune::TuningDatabase::Open(path);
  if (!db.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(db.status().message()).c_str());
    return nullptr;
  }
  return std::move(*db);
}

int Say(const absl::Status& status) {
  std::fprintf(stderr, "kiln: %s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int ListTuningRecords(const std::string& database) {
  std::unique_ptr<tune::TuningDatabase> db = OpenOrSay(database);
  if (db == nullptr) return 1;
  absl::StatusOr<std::vector<tune::WorkloadId>> workloads = db->Workloads();
  if (!workloads.ok()) return Say(workloads.status());
  std::printf("%-18s %-10s %8s %8s %12s %12s  %s\n", "workload", "device", "records", "failed",
              "default ms", "best ms", "target");
  for (const tune::WorkloadId& w : *workloads) {
    absl::StatusOr<std::vector<tune::TuningRecord>> records = db->Records(w);
    if (!records.ok()) return Say(records.status());
    absl::StatusOr<std::optional<double>> untuned = db->DefaultSeconds(w);
    if (!untuned.ok()) return Say(untuned.status());
    int failed = 0;
    std::optional<double> best;
    for (const tune::TuningRecord& r : *records) {
      if (!r.seconds) ++failed;
      if (r.seconds && (!best || *r.seconds < *best)) best = r.seconds;
    }
    auto ms = [](std::optional<double> s) {
      return s ? absl::StrFormat("%.4f", *s * 1e3) : std::string("-");
    };
    std::printf("%-18s %-10s %8zu %8d %12s %12s  %s\n", w.workload_key.c_str(),
                w.device_key.empty() ? "-" : w.device_key.c_str(), records->size(), failed,
                ms(*untuned).c_str(), ms(best).c_str(), w.target.c_str());
  }
  return 0;
}

int PublishTuningRecords(const std::string& database, const std::string& owner) {
  std::unique_ptr<tune::TuningDatabase> db = OpenOrSay(database);
  if (db == nullptr) return 1;
  absl::StatusOr<int64_t> published = db->Publish(owner);
  if (!published.ok()) return Say(published.status());
  std::printf("published %lld records of %s\n", static_cast<long long>(*published), owner.c_str());
  return 0;
}

int ExportTuningRecords(const std::string& database, const std::string& output) {
  std::unique_ptr<tune::TuningDatabase> db = OpenOrSay(database);
  if (db == nullptr) return 1;
  std::ofstream file;
  if (!output.empty()) {
    file.open(output, std::ios::trunc);
    if (!file) return Say(absl::PermissionDeniedError(output + ": cannot write the file"));
  }
  absl::StatusOr<int64_t> n = tune::ExportRecords(*db, output.empty() ? std::cout : file);
  if (!n.ok()) return Say(n.status());
  std::fprintf(stderr, "kiln: %lld records exported from %s\n", static_cast<long long>(*n),
               database.c_str());
  return 0;
}

int TrainCostModel(const std::vector<std::string>& databases, const std::string& output) {
  std::vector<tune::MeasuredGroup> groups;
  for (const std::string& path : databases) {
    std::unique_ptr<tune::TuningDatabase> db = OpenOrSay(path);
    if (db == nullptr) return 1;
    absl::StatusOr<int64_t> read = tune::ReadMeasuredGroups(*db, &groups);
    if (!read.ok()) return Say(read.status());
  }
  if (groups.empty()) return Say(absl::NotFoundError("no measured records in the databases"));
  absl::StatusOr<tune::TrainedModel> model = tune::TrainModel(groups);
  if (!model.ok()) return Say(model.status());
  std::ofstream file(output, std::ios::trunc);
  file << model->json;
  if (!file) return Say(absl::PermissionDeniedError(output + ": cannot write the file"));
  std::printf("%s: trained on %lld records of %d workloads", output.c_str(),
              static_cast<long long>(model->records), model->groups);
  if (model->held_out_accuracy) {
    std::printf("; pairwise accuracy on held-out workloads %.3f (%lld pairs)",
                *model->held_out_accuracy, static_cast<long long>(model->held_out_pairs));
  }
  std::printf("\n");
  return 0;
}

int ImportTuningRecords(const std::string& database, const std::string& input) {
  std::unique_ptr<tune::TuningDatabase> db = OpenOrSay(database);
  if (db == nullptr) return 1;
  std::ifstream in(input);
  absl::StatusOr<tune::ImportCounts> counts = tune::ImportRecords(*db, in);
  if (!counts.ok())
    return Say(absl::Status(counts.status().code(),
                            input + ": " + std::string(counts.status().message())));
  std::printf("%lld records imported into %s (%lld already there)\n",
              static_cast<long long>(counts->imported), database.c_str(),
              static_cast<long long>(counts->already_there));
  return 0;
}

}  // namespace kiln::client
