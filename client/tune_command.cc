#include "client/tune_command.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_format.h"
#include "compiler/frontend/load_module.h"
#include "compiler/tune/tuner.h"
#include "compiler/version.h"
#include "nlohmann/json.hpp"

namespace kiln::client {
namespace {

std::atomic<bool> g_stop{false};

void OnInterrupt(int) {
  g_stop.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

std::string Ms(std::optional<double> s) {
  return s ? absl::StrFormat("%.4f", *s * 1e3) : std::string("-");
}

nlohmann::json ToJson(const tune::TuneReport& report) {
  nlohmann::json out;
  out["trials"] = report.trials;
  out["elapsed_s"] = report.elapsed_s;
  out["stopped"] = report.stopped;
  for (const tune::TaskReport& t : report.tasks) {
    nlohmann::json task = {{"name", t.name},
                           {"workload_key", t.workload_key},
                           {"weight", t.weight},
                           {"trials", t.trials},
                           {"failures", t.failures}};
    if (t.default_seconds) task["default_seconds"] = *t.default_seconds;
    if (t.best_seconds) task["best_seconds"] = *t.best_seconds;
    if (!t.error.empty()) task["error"] = t.error;
    out["tasks"].push_back(task);
  }
  for (const tune::CurvePoint& p : report.curve) {
    out["curve"].push_back({{"trials", p.trials},
                            {"estimated_seconds", p.estimated_seconds},
                            {"elapsed_s", p.elapsed_s}});
  }
  return out;
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
  absl::StatusOr<std::vector<tune::TuneTask>> tasks = tune::ExtractTasks(*mod);
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
  std::fprintf(stderr, "kiln tune: %zu tasks from %s, %d trials, database %s\n", tasks->size(),
               flags.model.c_str(), flags.trials, flags.database.c_str());
  const bool tty = isatty(STDERR_FILENO);
  absl::StatusOr<tune::TuneReport> report =
      tune::Tune(*tasks, **db, *builder, *runner, options, [&](const tune::TuneReport& r) {
        std::fprintf(
            stderr, "%s[tune] %d/%d trials, %zu tasks, est. model %.4f ms (from %.4f ms), %.1f s%s",
            tty ? "\r" : "", r.trials, flags.trials, r.tasks.size(),
            r.curve.back().estimated_seconds * 1e3, r.curve.front().estimated_seconds * 1e3,
            r.elapsed_s, tty ? "" : "\n");
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
  if (flags.json) {
    std::printf("%s\n", ToJson(*report).dump(1).c_str());
    return 0;
  }
  std::printf("%-40s %6s %6s %12s %12s %8s\n", "task", "weight", "trials", "default ms", "best ms",
              "speedup");
  for (const tune::TaskReport& t : report->tasks) {
    std::string speedup = "-";
    if (t.default_seconds && t.best_seconds) {
      speedup = absl::StrFormat("%.2fx", *t.default_seconds / *t.best_seconds);
    }
    std::printf("%-40s %6d %6d %12s %12s %8s%s\n", t.name.c_str(), t.weight, t.trials,
                Ms(t.default_seconds).c_str(), Ms(t.best_seconds).c_str(), speedup.c_str(),
                t.error.empty() ? "" : ("  " + t.error).c_str());
  }
  const tune::CurvePoint& first = report->curve.front();
  const tune::CurvePoint& last = report->curve.back();
  std::printf("estimated model latency: %.4f ms -> %.4f ms after %d trials in %.1f s%s\n",
              first.estimated_seconds * 1e3, last.estimated_seconds * 1e3, report->trials,
              report->elapsed_s, report->stopped ? " (stopped)" : "");
  std::printf("curve: %s\n", ToJson(*report)["curve"].dump().c_str());
  return 0;
}

}  // namespace kiln::client
