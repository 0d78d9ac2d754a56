// The tuner: evolutionary search over each task's design space (space.h), guided by the cost
// model (cost_model.h), measured through a Builder and a Runner (measure.h), every record kept
// in the tuning database (database.h).
//
// Per round, for the task the scheduler picks, the search proposes a batch of candidates never
// measured before: a population of fresh samples plus the database's best records, evolved for a
// few generations by mutating one decision at a time and keeping the children the model ranks
// highest; from it, the top-ranked candidates, and with probability epsilon a random one
// (exploration). Without a trained model (or with use_cost_model off: random search) the batch
// is fresh samples.
//
// The task scheduler spends each round where it reduces the model's weighted latency
// (sum of weight x best seconds) most: after one round per task (the costliest first), the task
// with the largest
// weight x (its recent improvement per round, or an optimistic share of its latency when it has
// not improved yet) — not round-robin.
#ifndef KILN_COMPILER_TUNE_TUNER_H_
#define KILN_COMPILER_TUNE_TUNER_H_

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/tune/cost_model.h"
#include "compiler/tune/database.h"
#include "compiler/tune/measure.h"
#include "compiler/tune/space.h"
#include "proto/kiln/v1/jobs.pb.h"

namespace kiln::tune {

struct TuneOptions {
  std::string target = "llvm";
  int trials = 64;              // in all
  int max_trials_per_task = 0;  // 0: no limit but `trials`
  int batch = 8;                // candidates per round
  uint64_t seed = 1;
  bool use_cost_model = true;  // off: random search
  int population = 48;
  int generations = 3;
  double epsilon = 0.2;
  std::string measured_on = "localhost";
  std::string compiler;  // identity written with each record
  // Seconds the whole tune may take (0: no limit but `trials`): anytime tuning. The search does
  // not start a round it expects to end past it (the rounds so far tell how long one takes) and
  // returns what it has; every record so far is kept.
  double budget_s = 0;
  // Start each task from the best records of its family (FamilyKey: the same operator at other
  // shapes) measured for the same target on any device, adapted to its shapes.
  bool transfer = true;
  // A cost model's JSON (CostModel::Save; Kiln's shipped one, shipped_cost_model.h) that ranks
  // candidates from the first round, until the run has measured enough to train its own; "" none.
  std::string initial_model;
  // Set (e.g. by SIGINT) to stop after the current round; every record so far is kept.
  const std::atomic<bool>* stop = nullptr;
};

struct TaskReport {
  std::string name;
  std::string workload_key;
  int weight = 0;
  int trials = 0;       // measured this run
  int failures = 0;     // of those
  int transferred = 0;  // candidates adapted from its family's records (measured first)
  std::optional<double> default_seconds;  // the untuned kernel
  std::optional<double> best_seconds;     // the best known, database included
  std::string error;                      // why the task could not be tuned at all
};

struct CurvePoint {
  int trials;
  double estimated_seconds;  // sum over tasks of weight x best (default where none)
  double elapsed_s;
};

// Why a tune ended.
enum class TuneEnd {
  kTrials,       // the trial budget is spent
  kBudget,       // the time budget (TuneOptions::budget_s) is
  kInterrupted,  // TuneOptions::stop was set
  kExhausted,    // no task can propose a candidate not measured before
};

struct TuneReport {
  std::vector<TaskReport> tasks;
  std::vector<CurvePoint> curve;
  int trials = 0;
  double elapsed_s = 0;
  TuneEnd end = TuneEnd::kTrials;
  bool stopped() const { return end == TuneEnd::kInterrupted; }
  double budget_s = 0;  // the time budget it ran under (0: none)
  // Each round's winner is measured twice before it becomes a record (the slower time counts):
  // how many were, and |second - first| / the faster of the two for each.
  int winners_remeasured = 0;
  std::vector<double> remeasure_differences;
  // How well the initial model ranked what this run measured (PairwiseAccuracy), if it had one.
  std::optional<double> initial_model_accuracy;
  int64_t initial_model_pairs = 0;
};

// The point of the curve where the tune had reached `fraction` of its whole gain (the estimated
// model latency's drop from the first point to the last).
struct GainMilestone {
  double fraction;
  int trials;
  double elapsed_s;
};

// The milestones for 50, 90 and 95 % of the gain; none when the tune gained nothing.
std::vector<GainMilestone> GainMilestones(const TuneReport& report);

// What doubling the trials would take off the estimated model latency, in seconds, extrapolated
// from the curve: the gain of the last doubling (trials T/2 .. T) times how much it shrank
// against the doubling before (T/4 .. T/2), a ratio kept below 1. Nothing before 16 trials, or
// when the tune gained nothing.
std::optional<double> ProjectedGainOfDoubling(const TuneReport& report);

using ProgressFn = std::function<void(const TuneReport&)>;

// Tunes `tasks`, adding every measured candidate to `db`. Fails only on a database error.
absl::StatusOr<TuneReport> Tune(const std::vector<TuneTask>& tasks, TuningDatabase& db,
                                Builder& builder, Runner& runner, const TuneOptions& options,
                                const ProgressFn& progress = nullptr);

// One task's search state: what the tuner asks for each round. Exposed for tests: given the same
// seed, database and measurements, it proposes the same candidates.
class TaskSearch {
 public:
  TaskSearch(const TuneTask& task, const TuneOptions& options, uint64_t seed);

  // Reads the task's records from `db` (measured set, parents, training data).
  absl::Status Load(const TuningDatabase& db, const WorkloadId& workload);
  // Up to `n` candidates not measured before.
  std::vector<tir::Schedule> Propose(int n, const CostModel& model);
  // Remembers a measured candidate (and its features for the model).
  void Record(const tir::Schedule& sch, std::optional<double> seconds);
  // The default schedule (the rules' heuristic decisions) measured at `seconds`: a parent the
  // search mutates from its first round, never proposed itself; not a tuning result.
  void StartFrom(const tir::Schedule& default_schedule, double seconds);
  // Records of other tasks of its family: their decisions replayed onto this task (a decision
  // that does not fit its shapes becomes the rules' own), proposed before anything else. How
  // many new candidates that gave.
  int Transfer(const std::vector<v1::TraceProto>& traces);

  const std::vector<std::vector<float>>& features() const { return features_; }
  const std::vector<std::optional<double>>& seconds() const { return seconds_; }
  std::optional<double> best() const { return best_; }

 private:
  uint64_t Next();
  // A measured schedule: never proposed again, training data, and a parent when it ran.
  void Remember(const tir::Schedule& sch, std::optional<double> seconds);

  const TuneTask& task_;
  TuneOptions options_;
  uint64_t rng_;
  std::set<std::string> measured_;
  std::vector<std::pair<double, v1::TraceProto>> parents_;  // measured, fastest first
  std::vector<tir::Schedule> transferred_;                  // to propose first
  std::vector<std::vector<float>> features_;
  std::vector<std::optional<double>> seconds_;
  std::optional<double> best_;
};

// The tuning curve as a small SVG plot (trials -> estimated model latency).
std::string CurveSvg(const TuneReport& report);

// The report as the service carries it (Job.tune), with the trial budget it ran under.
v1::TuneResult ToProto(const TuneReport& report, int budget);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_TUNER_H_
