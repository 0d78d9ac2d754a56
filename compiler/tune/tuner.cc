#include "compiler/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tune/features.h"
#include "compiler/tune/training_data.h"
#include "runtime/time_evaluator.h"

namespace kiln::tune {
namespace {

constexpr size_t kParents = 8;
constexpr size_t kMinRecordsToTrain = 8;
// With an initial model: the measurements of a few rounds rank worse than it does.
constexpr size_t kRecordsToReplaceInitial = 64;

std::string CandidateKey(const tir::Schedule& sch) { return WorkloadKey(sch.func()); }

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

TaskSearch::TaskSearch(const TuneTask& task, const TuneOptions& options, uint64_t seed)
    : task_(task), options_(options), rng_(seed * 0x9E3779B97F4A7C15ull + 1) {}

uint64_t TaskSearch::Next() {
  // splitmix64: a stream that depends only on the seed.
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

absl::Status TaskSearch::Load(const TuningDatabase& db, const WorkloadId& workload) {
  absl::StatusOr<std::vector<TuningRecord>> records = db.Records(workload);
  if (!records.ok()) return records.status();
  for (const TuningRecord& r : *records) {
    measured_.insert(r.candidate_key);
    v1::TraceProto trace = r.trace;
    trace.set_func_name(task_.name);
    absl::StatusOr<tir::Schedule> sch = tir::ReplayTrace(task_.mod, trace);
    if (!sch.ok()) continue;  // recorded by another compiler: its key still counts as measured
    features_.push_back(ExtractFeatures(sch->func()));
    seconds_.push_back(r.seconds);
    if (r.seconds) {
      parents_.emplace_back(*r.seconds, sch->trace());
      if (!best_ || *r.seconds < *best_) best_ = r.seconds;
    }
  }
  std::stable_sort(parents_.begin(), parents_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return absl::OkStatus();
}

std::vector<tir::Schedule> TaskSearch::Propose(int n, const CostModel& model) {
  std::vector<tir::Schedule> out;
  std::set<std::string> seen = measured_;
  // The family's records first: adapted from tasks of the same operator, they are the likeliest
  // good points.
  while (!transferred_.empty() && static_cast<int>(out.size()) < n) {
    seen.insert(CandidateKey(transferred_.front()));
    out.push_back(std::move(transferred_.front()));
    transferred_.erase(transferred_.begin());
  }
  n -= static_cast<int>(out.size());
  if (n == 0) return out;
  std::vector<tir::Schedule> pool;
  std::vector<std::vector<float>> pool_features;
  auto add = [&](absl::StatusOr<tir::Schedule> sch) {
    if (sch.ok() && seen.insert(CandidateKey(*sch)).second) {
      pool_features.push_back(ExtractFeatures(sch->func()));
      pool.push_back(*std::move(sch));
    }
  };
  const bool guided = options_.use_cost_model && model.trained();
  // Neighbours of the best measured schedules (from the first round on, the default's); random
  // search, the baseline, samples only. Until the model is trained they are proposed first:
  // the default is a good point, most random samples of a convolution's space are not (2 to
  // 20 times slower), and a task given a few trials should spend them near the best.
  if (options_.use_cost_model && !parents_.empty()) {
    const size_t neighbours = guided ? std::min(parents_.size(), kParents) : static_cast<size_t>(n);
    for (size_t k = 0; k < neighbours; ++k) {
      add(Mutate(task_, parents_[k % std::min(parents_.size(), kParents)].second, Next(), Next()));
    }
  }
  for (int i = 0; i < options_.population; ++i) add(GenerateSchedule(task_, Next()));
  if (guided) {
    for (int g = 0; g < options_.generations; ++g) {
      std::vector<float> scores = model.Predict(pool_features);
      std::vector<size_t> order(pool.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return scores[a] > scores[b]; });
      const size_t keep = std::min<size_t>(order.size(), options_.population / 2);
      for (size_t k = 0; k < keep; ++k) {
        v1::TraceProto parent = pool[order[k]].trace();
        add(Mutate(task_, parent, Next(), Next()));
      }
    }
  }
  std::vector<size_t> order(pool.size());
  std::iota(order.begin(), order.end(), 0);
  if (guided) {
    std::vector<float> scores = model.Predict(pool_features);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  }
  std::vector<bool> taken(order.size(), false);
  const size_t wanted = out.size() + n;
  for (size_t k = 0; k < order.size() && out.size() < wanted; ++k) {
    size_t pick = k;
    // Exploration: now and then a random candidate from the rest instead of the next best.
    if (guided && static_cast<double>(Next() % 1000) < options_.epsilon * 1000) {
      pick = k + Next() % (order.size() - k);
    }
    while (taken[pick]) pick = (pick + 1) % order.size();
    taken[pick] = true;
    out.push_back(pool[order[pick]]);
  }
  return out;
}

void TaskSearch::Record(const tir::Schedule& sch, std::optional<double> seconds) {
  Remember(sch, seconds);
  if (seconds && (!best_ || *seconds < *best_)) best_ = seconds;
}

void TaskSearch::StartFrom(const tir::Schedule& default_schedule, double seconds) {
  Remember(default_schedule, seconds);
}

int TaskSearch::Transfer(const std::vector<v1::TraceProto>& traces) {
  std::set<std::string> queued;
  for (const tir::Schedule& sch : transferred_) queued.insert(CandidateKey(sch));
  int added = 0;
  for (const v1::TraceProto& trace : traces) {
    absl::StatusOr<tir::Schedule> sch =
        GenerateSchedule(task_, Next(), DecisionsOf(trace), tir::UnsetDecisions::kHeuristic);
    if (!sch.ok()) continue;
    const std::string key = CandidateKey(*sch);
    if (measured_.count(key) || !queued.insert(key).second) continue;
    transferred_.push_back(*std::move(sch));
    ++added;
  }
  return added;
}

void TaskSearch::Remember(const tir::Schedule& sch, std::optional<double> seconds) {
  measured_.insert(CandidateKey(sch));
  features_.push_back(ExtractFeatures(sch.func()));
  seconds_.push_back(seconds);
  if (!seconds) return;
  auto at = std::upper_bound(parents_.begin(), parents_.end(), *seconds,
                             [](double s, const auto& p) { return s < p.first; });
  parents_.insert(at, {*seconds, sch.trace()});
}

namespace {

struct TaskState {
  WorkloadId workload;
  std::unique_ptr<TaskSearch> search;
  std::string reference;
  std::vector<double> history;  // estimated seconds after each round
  bool exhausted = false;
};

// A winner is measured again before it becomes a task's best: the batch's fastest, where it
// beats the best known (the untuned kernel included), runs once more in a fresh child, and its
// record keeps the slower of the two times (or the second run's error), so that one lucky
// measurement cannot make a record. Until the fastest is one measured twice: the slower time can
// leave another of the batch in front. How far the two times disagreed goes into the report.
void ConfirmWinner(const TuneTask& task, const TaskState& s, const std::vector<BuildResult>& built,
                   Runner& runner, std::vector<TuningRecord>& records, TuneReport& report) {
  std::vector<bool> twice(records.size(), false);
  while (true) {
    std::optional<double> best = s.search->best();
    int winner = -1;
    for (size_t c = 0; c < records.size(); ++c) {
      const std::optional<double>& sec = records[c].seconds;
      if (sec && (!best || *sec < *best)) {
        best = sec;
        winner = static_cast<int>(c);
      }
    }
    if (winner < 0 || twice[winner]) return;
    twice[winner] = true;
    TuningRecord& r = records[winner];
    RunResult again = runner.Run(task, s.reference, {built[winner].library})[0];
    ++report.winners_remeasured;
    if (!again.seconds) {
      r.seconds.reset();
      r.error = absl::StrCat("measured again: ", again.error);
      continue;
    }
    const double first = *r.seconds;
    report.remeasure_differences.push_back(std::abs(*again.seconds - first) /
                                           std::min(*again.seconds, first));
    r.seconds = std::max(first, *again.seconds);
  }
}

// What the kernel will take when compiled with the database: the best record where it beats the
// untuned kernel (RecordBeatsUntuned), else the untuned kernel.
double Estimate(const TaskReport& t) {
  if (t.best_seconds && t.default_seconds) {
    return RecordBeatsUntuned(*t.best_seconds, *t.default_seconds) ? *t.best_seconds
                                                                   : *t.default_seconds;
  }
  if (t.best_seconds) return *t.best_seconds;
  return t.default_seconds.value_or(0);
}

double EstimatedModel(const TuneReport& report) {
  double total = 0;
  for (const TaskReport& t : report.tasks) total += t.weight * Estimate(t);
  return total;
}

// The task whose next round should reduce the weighted latency most; -1 when none can go on.
int PickTask(const std::vector<TaskState>& states, const TuneReport& report,
             const TuneOptions& options) {
  int best = -1;
  double best_score = -1;
  for (size_t i = 0; i < states.size(); ++i) {
    const TaskReport& t = report.tasks[i];
    if (!t.error.empty() || states[i].exhausted ||
        (options.max_trials_per_task > 0 && t.trials >= options.max_trials_per_task)) {
      continue;
    }
    const std::vector<double>& h = states[i].history;
    double score;
    if (h.empty()) {
      // Every task gets a first round, the costliest (weight x untuned time) first.
      score = 1e6 + t.weight * t.default_seconds.value_or(0);
    } else {
      const double before = h.size() >= 2 ? h[h.size() - 2] : t.default_seconds.value_or(h.back());
      const double gradient = std::max(0.0, before - h.back());
      const double optimism = h.back() * 0.05 / static_cast<double>(h.size());
      score = t.weight * (gradient + optimism);
    }
    if (score > best_score) {
      best_score = score;
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::string Now() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

// Each family's best records (FamilyKey -> workload and its best record), fastest first: of the
// tuning target and of every other target of its ISA class.
using FamilyRecords = std::map<std::string, std::vector<std::pair<WorkloadId, TuningRecord>>>;

// The best record of every workload `db` holds for `target` (on any device), by the family of
// its kernel (FamilyKey of the module kept with the workload), fastest first: what a new task
// of a family starts from. A workload whose module no longer parses is skipped.
absl::StatusOr<FamilyRecords> RecordsByFamily(const TuningDatabase& db, const std::string& target) {
  FamilyRecords out;
  absl::StatusOr<std::vector<WorkloadId>> workloads = db.Workloads();
  if (!workloads.ok()) return workloads.status();
  // Records of this target, and of every other CPU (or device) of its ISA.
  absl::StatusOr<std::string> isa = IsaClass(target);
  if (!isa.ok()) return isa.status();
  std::map<std::string, bool> same_isa = {{target, true}};
  auto shares_isa = [&](const std::string& other) {
    auto [it, added] = same_isa.try_emplace(other, false);
    if (added) {
      absl::StatusOr<std::string> other_isa = IsaClass(other);
      it->second = other_isa.ok() && *other_isa == *isa;
    }
    return it->second;
  };
  for (const WorkloadId& w : *workloads) {
    if (!shares_isa(w.target)) continue;
    absl::StatusOr<std::optional<TuningRecord>> best = db.Best(w);
    if (!best.ok()) return best.status();
    if (!best->has_value()) continue;
    absl::StatusOr<std::string> script = db.Module(w);
    if (!script.ok()) return script.status();
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(*script);
    if (!mod.ok()) continue;
    for (const auto& [name, entry] : (*mod)->functions) {
      ir::PrimFunc f = entry.second.as_ref<ir::PrimFuncNode>();
      if (!f) continue;
      out[FamilyKey(f)].emplace_back(w, **best);
      break;
    }
  }
  for (auto& [family, records] : out) {
    std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
      return *a.second.seconds < *b.second.seconds;
    });
  }
  return out;
}

}  // namespace

absl::StatusOr<TuneReport> Tune(const std::vector<TuneTask>& tasks, TuningDatabase& db,
                                Builder& builder, Runner& runner, const TuneOptions& options,
                                const ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> target = TuningTarget(options.target);
  if (!target.ok()) return target.status();
  TuneReport report;
  FamilyRecords families;
  if (options.transfer) {
    absl::StatusOr<FamilyRecords> f = RecordsByFamily(db, *target);
    if (!f.ok()) return f.status();
    families = *std::move(f);
  }
  std::vector<TaskState> states(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TuneTask& task = tasks[i];
    TaskState& s = states[i];
    TaskReport t;
    t.name = task.name;
    t.weight = task.weight;
    t.workload_key = WorkloadKey(task.mod->Lookup(task.name).as_ref<ir::PrimFuncNode>());
    s.workload = {t.workload_key, *target, ""};
    if (absl::Status st = db.AddWorkload(s.workload, script::PrintScript(task.mod)); !st.ok())
      return st;
    s.search = std::make_unique<TaskSearch>(task, options, options.seed + i);
    if (absl::Status st = s.search->Load(db, s.workload); !st.ok()) return st;
    t.best_seconds = s.search->best();
    std::vector<BuildResult> ref =
        builder.Build({tir::ApplyDefaultSchedule(task.mod, task.policy)});
    if (!ref[0].error.empty()) {
      t.error = absl::StrCat("the untuned kernel: ", ref[0].error);
    } else {
      s.reference = ref[0].library;
      std::vector<RunResult> ran = runner.Run(task, s.reference, {s.reference});
      // The untuned kernel is measured twice too, and keeps the faster time: a record must beat
      // its best showing with its own worst (ConfirmWinner), or a slow moment while the
      // untuned kernel was timed becomes a gain no compile delivers.
      if (ran[0].seconds) {
        RunResult again = runner.Run(task, s.reference, {s.reference})[0];
        if (again.seconds) ran[0].seconds = std::min(*ran[0].seconds, *again.seconds);
      }
      if (ran[0].seconds) {
        t.default_seconds = ran[0].seconds;
        if (absl::Status st = db.SetDefaultSeconds(s.workload, *ran[0].seconds); !st.ok())
          return st;
        absl::StatusOr<tir::Schedule> default_schedule =
            tir::DefaultSchedule(task.mod, task.name, task.policy);
        if (default_schedule.ok()) s.search->StartFrom(*default_schedule, *ran[0].seconds);
        auto family =
            families.find(FamilyKey(task.mod->Lookup(task.name).as_ref<ir::PrimFuncNode>()));
        if (family != families.end()) {
          std::vector<v1::TraceProto> traces;
          for (const auto& [workload, record] : family->second) {
            // Its own records are loaded already; the same kernel's on another CPU of the
            // ISA are a start like any of the family's.
            if (workload.workload_key == s.workload.workload_key &&
                workload.target == s.workload.target && workload.device_key.empty()) {
              continue;
            }
            if (traces.size() == static_cast<size_t>(options.batch)) break;
            traces.push_back(record.trace);
          }
          t.transferred = s.search->Transfer(traces);
        }
      } else {
        t.error = absl::StrCat("the untuned kernel: ", ran[0].error);
      }
    }
    report.tasks.push_back(std::move(t));
  }
  report.budget_s = options.budget_s;
  report.curve.push_back({0, EstimatedModel(report), Seconds(start)});
  // The initial model (Kiln's shipped one) ranks until the run has measured enough to train its
  // own on what this machine measured.
  CostModel initial, model;
  if (!options.initial_model.empty()) {
    if (absl::Status st = initial.Load(options.initial_model); !st.ok()) return st;
  }
  const size_t retrain_after = initial.trained() ? kRecordsToReplaceInitial : kMinRecordsToTrain;
  auto groups = [&] {
    std::vector<MeasuredGroup> out;
    for (const TaskState& st : states) out.push_back({st.search->features(), st.search->seconds()});
    return out;
  };
  const double search_start_s = Seconds(start);
  int rounds = 0;
  while (report.trials < options.trials) {
    if (options.stop && options.stop->load()) {
      report.end = TuneEnd::kInterrupted;
      break;
    }
    if (options.budget_s > 0) {
      // A round takes about what the rounds so far took on average.
      const double now_s = Seconds(start);
      const double round_s = rounds > 0 ? (now_s - search_start_s) / rounds : 0;
      if (now_s + round_s > options.budget_s) {
        report.end = TuneEnd::kBudget;
        break;
      }
    }
    const int i = PickTask(states, report, options);
    if (i < 0) {
      report.end = TuneEnd::kExhausted;
      break;
    }
    TaskState& s = states[i];
    TaskReport& t = report.tasks[i];
    int n = std::min(options.batch, options.trials - report.trials);
    if (options.max_trials_per_task > 0) n = std::min(n, options.max_trials_per_task - t.trials);
    std::vector<tir::Schedule> candidates = s.search->Propose(n, model.trained() ? model : initial);
    if (candidates.empty()) {
      s.exhausted = true;
      continue;
    }
    std::vector<ir::IRModule> mods;
    for (const tir::Schedule& c : candidates) mods.push_back(ScheduledModule(c));
    std::vector<BuildResult> built = builder.Build(mods);
    std::vector<std::string> libs;
    for (const BuildResult& b : built) {
      if (b.error.empty()) libs.push_back(b.library);
    }
    std::vector<RunResult> ran = runner.Run(tasks[i], s.reference, libs);
    std::vector<TuningRecord> records(candidates.size());
    size_t next_run = 0;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (built[c].error.empty()) {
        records[c].seconds = ran[next_run].seconds;
        records[c].error = ran[next_run].error;
        ++next_run;
      } else {
        records[c].error = built[c].error;
      }
    }
    ConfirmWinner(tasks[i], s, built, runner, records, report);
    for (size_t c = 0; c < candidates.size(); ++c) {
      TuningRecord& r = records[c];
      r.candidate_key = CandidateKey(candidates[c]);
      r.trace = candidates[c].trace();
      r.measured_at = Now();
      r.measured_on = options.measured_on;
      r.compiler = options.compiler;
      if (absl::Status st = db.AddRecord(s.workload, r); !st.ok()) return st;
      s.search->Record(candidates[c], r.seconds);
      ++t.trials;
      ++report.trials;
      if (!r.seconds) ++t.failures;
    }
    t.best_seconds = s.search->best();
    s.history.push_back(Estimate(t));
    report.elapsed_s = Seconds(start);
    report.curve.push_back({report.trials, EstimatedModel(report), report.elapsed_s});
    if (options.use_cost_model) {
      std::vector<std::vector<float>> features;
      std::vector<float> labels;
      LabelledRows(groups(), &features, &labels);
      if (features.size() >= retrain_after) (void)model.Train(features, labels);
    }
    ++rounds;
    if (progress) progress(report);
  }
  if (initial.trained()) {
    report.initial_model_accuracy =
        PairwiseAccuracy(initial, groups(), &report.initial_model_pairs);
  }
  report.elapsed_s = Seconds(start);
  return report;
}

namespace {

// The estimated model latency after `trials` trials: the last curve point at or before them.
double EstimateAfter(const TuneReport& report, double trials) {
  double at = report.curve.front().estimated_seconds;
  for (const CurvePoint& p : report.curve) {
    if (p.trials > trials) break;
    at = p.estimated_seconds;
  }
  return at;
}

}  // namespace

std::vector<GainMilestone> GainMilestones(const TuneReport& report) {
  std::vector<GainMilestone> out;
  if (report.curve.empty()) return out;
  const double first = report.curve.front().estimated_seconds;
  const double gain = first - report.curve.back().estimated_seconds;
  if (gain <= 0) return out;
  for (double fraction : {0.5, 0.9, 0.95}) {
    for (const CurvePoint& p : report.curve) {
      if (first - p.estimated_seconds >= fraction * gain) {
        out.push_back({fraction, p.trials, p.elapsed_s});
        break;
      }
    }
  }
  return out;
}

std::optional<double> ProjectedGainOfDoubling(const TuneReport& report) {
  constexpr int kMinTrials = 16;
  constexpr double kMaxRatio = 0.9;
  if (report.trials < kMinTrials || GainMilestones(report).empty()) return std::nullopt;
  const double t = report.trials;
  const double last = EstimateAfter(report, t / 2) - EstimateAfter(report, t);
  const double before = EstimateAfter(report, t / 4) - EstimateAfter(report, t / 2);
  const double ratio = before > 0 ? std::min(last / before, kMaxRatio) : (last > 0 ? kMaxRatio : 0);
  return std::max(0.0, last * ratio);
}

v1::TuneResult ToProto(const TuneReport& report, int budget) {
  v1::TuneResult out;
  out.set_trials(report.trials);
  out.set_budget(budget);
  out.set_elapsed_s(report.elapsed_s);
  out.set_stopped(report.stopped());
  out.set_budget_s(report.budget_s);
  out.set_out_of_time(report.end == TuneEnd::kBudget);
  for (const GainMilestone& m : GainMilestones(report)) {
    v1::TuneMilestone* milestone = out.add_milestones();
    milestone->set_fraction(m.fraction);
    milestone->set_trials(m.trials);
    milestone->set_elapsed_s(m.elapsed_s);
  }
  out.set_winners_remeasured(report.winners_remeasured);
  if (report.initial_model_accuracy) {
    out.set_initial_model_accuracy(*report.initial_model_accuracy);
    out.set_initial_model_pairs(report.initial_model_pairs);
  }
  out.set_remeasure_median_difference(runtime::Median(report.remeasure_differences));
  if (std::optional<double> more = ProjectedGainOfDoubling(report)) {
    out.set_projected_gain_of_doubling_s(*more);
  }
  for (const TaskReport& t : report.tasks) {
    v1::TuneTaskResult* task = out.add_tasks();
    task->set_name(t.name);
    task->set_workload_key(t.workload_key);
    task->set_weight(t.weight);
    task->set_trials(t.trials);
    task->set_failures(t.failures);
    task->set_transferred(t.transferred);
    task->set_default_seconds(t.default_seconds.value_or(0));
    task->set_best_seconds(t.best_seconds.value_or(0));
    task->set_record_applied(
        t.best_seconds.has_value() &&
        (!t.default_seconds || RecordBeatsUntuned(*t.best_seconds, *t.default_seconds)));
    task->set_error(t.error);
  }
  for (const CurvePoint& p : report.curve) {
    v1::TuneCurvePoint* point = out.add_curve();
    point->set_trials(p.trials);
    point->set_estimated_seconds(p.estimated_seconds);
    point->set_elapsed_s(p.elapsed_s);
  }
  return out;
}

std::string CurveSvg(const TuneReport& report) {
  const double w = 480, h = 240, pad = 40;
  double max_trials = 1, lo = 0, hi = 0;
  for (size_t k = 0; k < report.curve.size(); ++k) {
    const CurvePoint& p = report.curve[k];
    max_trials = std::max(max_trials, static_cast<double>(p.trials));
    lo = k == 0 ? p.estimated_seconds : std::min(lo, p.estimated_seconds);
    hi = k == 0 ? p.estimated_seconds : std::max(hi, p.estimated_seconds);
  }
  // The axis spans the curve, not zero to its top: a gain of a few percent must show.
  if (hi - lo < hi * 1e-3) {
    hi += hi * 5e-4 + 1e-12;
    lo -= lo * 5e-4;
  }
  std::string points;
  for (const CurvePoint& p : report.curve) {
    absl::StrAppendFormat(&points, "%.1f,%.1f ", pad + (w - 2 * pad) * p.trials / max_trials,
                          h - pad - (h - 2 * pad) * (p.estimated_seconds - lo) / (hi - lo));
  }
  const double seconds = report.curve.empty() ? 0 : report.curve.back().elapsed_s;
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
      "<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\"%s\"/>\n"
      "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">trials (%d in %.0f s)</text>\n"
      "<text x=\"4\" y=\"%.0f\" font-size=\"12\">est. model latency, ms: %.4g</text>\n"
      "<text x=\"4\" y=\"%.0f\" font-size=\"12\">%.4g</text>\n"
      "</svg>\n",
      w, h, pad, h - pad, w - pad, h - pad, pad, pad, pad, h - pad, points, w / 2 - 40, h - 10,
      static_cast<int>(max_trials), seconds, pad - 10, hi * 1e3, h - pad + 14, lo * 1e3);
}

}  // namespace kiln::tune
