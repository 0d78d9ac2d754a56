// `kiln tune MODEL --tuning-db DB ...`: auto-tunes a model's kernels on this machine
// (compiler/tune), printing a live progress line, then a table per task and the tuning curve;
// Ctrl-C stops after the current round and keeps every record. Returns the exit status; the
// table is remote_commands' PrintTuneResult, which `kiln tune --server` prints too. With
// --budget the search returns what it has when the time runs out; at the end the whole model is
// compiled without and with the records and timed (compiler/tune/model_check.h).
#ifndef KILN_CLIENT_TUNE_COMMAND_H_
#define KILN_CLIENT_TUNE_COMMAND_H_

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::client {

// --budget without --trials: as many trials as the budget allows.
inline constexpr int kUnlimitedTrials = INT_MAX;

struct TuneFlags {
  std::string model;
  std::string target = "llvm";
  std::string database;
  int trials = 64;
  int max_trials_per_task = 0;
  uint64_t seed = 1;
  double timeout_s = 20;
  int threads = 1;
  bool random_search = false;
  bool json = false;
  std::string curve_svg;      // where to write the curve as SVG ("" = not written)
  double budget_s = 0;        // seconds the search may take (0: no limit but trials)
  bool model_check = true;    // at the end, time the whole model untuned and tuned
  bool from_scratch = false;  // no shipped cost model, no records from a kernel's family
};

int TuneModel(const TuneFlags& flags);

// `kiln tuning-records list|export|import --tuning-db DB`: what a database holds, and its records
// as JSON lines (compiler/tune/records_io.h) to move between databases.
int ListTuningRecords(const std::string& database);
int ExportTuningRecords(const std::string& database, const std::string& output);
int ImportTuningRecords(const std::string& database, const std::string& input);
// `kiln tuning-records publish --owner NAME`: the tenant's records become every tenant's.
int PublishTuningRecords(const std::string& database, const std::string& owner);
// `kiln tuning-records train-model --tuning-db DB ... -o MODEL.json`: the tuner's cost model
// trained on every record of the databases (compiler/tune/training_data.h), with its pairwise
// accuracy on held-out workloads; how the model Kiln ships is made (bench/train_cost_model.sh).
int TrainCostModel(const std::vector<std::string>& databases, const std::string& output);

}  // namespace kiln::client

#endif  // KILN_CLIENT_TUNE_COMMAND_H_
