// The tuner end to end on a real matmul with the local builder and runner, its reproducibility,
// and that failures and a stop request are records and reports, not errors.
#include "compiler/tune/tuner.h"

#include "compiler/testing/schedule_workloads.h"
#include "compiler/testing/temp_path.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/schedule_rules/schedule_rules.h"
#include "compiler/tune/features.h"
#include "compiler/tune/shipped_cost_model.h"
#include "compiler/tune/training_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tune {
namespace {

using ::testing::HasSubstr;

using ::kiln::testing::FreshTempPath;

std::vector<TuneTask> MatmulTasks() {
  absl::StatusOr<ir::IRModule> mod = tir::testing::Parse(tir::testing::MatmulScript(64, 64, 64));
  EXPECT_TRUE(mod.ok());
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*mod);
  EXPECT_TRUE(tasks.ok());
  return *tasks;
}

std::vector<std::string> Keys(const std::vector<tir::Schedule>& s) {
  std::vector<std::string> out;
  for (const tir::Schedule& x : s) out.push_back(WorkloadKey(x.func()));
  return out;
}

TEST(TunerTest, TunesAMatmulAndKeepsEveryRecord) {
  std::vector<TuneTask> tasks = MatmulTasks();
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath("t.db"));
  ASSERT_TRUE(db.ok());
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  std::unique_ptr<Runner> runner = MakeLocalRunner({.min_repeat_ms = 2});
  TuneOptions options;
  options.trials = 16;
  options.batch = 8;
  int progress_calls = 0;
  absl::StatusOr<TuneReport> report =
      Tune(tasks, **db, *builder, *runner, options, [&](const TuneReport&) { ++progress_calls; });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->trials, 16);
  EXPECT_EQ(progress_calls, 2);
  ASSERT_EQ(report->tasks.size(), 1u);
  const TaskReport& t = report->tasks[0];
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.trials, 16);
  ASSERT_TRUE(t.default_seconds.has_value());
  ASSERT_TRUE(t.best_seconds.has_value());
  ASSERT_EQ(report->curve.size(), 3u);
  EXPECT_EQ(report->curve.back().trials, 16);
  EXPECT_LE(report->curve.back().estimated_seconds, report->curve[1].estimated_seconds);
  absl::StatusOr<std::vector<TuningRecord>> records =
      (*db)->Records({t.workload_key, *TuningTarget("llvm"), ""});
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 16u);
  std::set<std::string> keys;
  for (const TuningRecord& r : *records) {
    EXPECT_TRUE(keys.insert(r.candidate_key).second) << "measured twice: " << r.candidate_key;
    EXPECT_TRUE(r.seconds.has_value() || !r.error.empty());
  }
  EXPECT_DOUBLE_EQ(*(*records)[0].seconds, *t.best_seconds);
  // A second run continues from the database: nothing measured again.
  options.trials = 8;
  absl::StatusOr<TuneReport> again = Tune(tasks, **db, *builder, *runner, options);
  ASSERT_TRUE(again.ok());
  records = (*db)->Records({t.workload_key, *TuningTarget("llvm"), ""});
  ASSERT_EQ(records->size(), 24u);
  keys.clear();
  for (const TuningRecord& r : *records) EXPECT_TRUE(keys.insert(r.candidate_key).second);
  EXPECT_THAT(CurveSvg(*report), HasSubstr("<polyline"));
}

TEST(TunerTest, SameSeedSameDatabaseSameProposals) {
  std::vector<TuneTask> tasks = MatmulTasks();
  TuneOptions options;
  CostModel untrained;
  TaskSearch a(tasks[0], options, 7), b(tasks[0], options, 7), c(tasks[0], options, 8);
  std::vector<tir::Schedule> pa = a.Propose(6, untrained), pb = b.Propose(6, untrained);
  EXPECT_EQ(Keys(pa), Keys(pb));
  EXPECT_NE(Keys(pa), Keys(c.Propose(6, untrained)));
  // The same measurements and the same model: the same guided proposals.
  CostModel model;
  std::vector<std::vector<float>> features;
  std::vector<float> labels;
  for (size_t k = 0; k < pa.size(); ++k) {
    const double seconds = 1e-3 * static_cast<double>(k + 1);
    a.Record(pa[k], seconds);
    b.Record(pb[k], seconds);
    features.push_back(ExtractFeatures(pa[k].func()));
    labels.push_back(1.0f / static_cast<float>(k + 1));
  }
  for (int k = 0; k < 4; ++k) {
    features.push_back(features[k]);
    labels.push_back(labels[k]);
  }
  ASSERT_TRUE(model.Train(features, labels).ok());
  std::vector<tir::Schedule> ga = a.Propose(4, model), gb = b.Propose(4, model);
  ASSERT_EQ(ga.size(), 4u);
  EXPECT_EQ(Keys(ga), Keys(gb));
  for (const std::string& k : Keys(ga)) {
    for (const std::string& measured : Keys(pa)) EXPECT_NE(k, measured);
  }
}

// Before the cost model has learned anything, a task's first candidates are neighbours of the
// best it knows (the default schedule): each differs from it in few decisions, where random
// samples of the space differ in most.
TEST(TunerTest, FirstProposalsAreNeighboursOfTheDefault) {
  std::vector<TuneTask> tasks = MatmulTasks();
  TuneOptions options;
  CostModel untrained;
  absl::StatusOr<tir::Schedule> fallback =
      tir::DefaultSchedule(tasks[0].mod, tasks[0].name, tasks[0].policy);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  const tir::Decisions base = tir::DecisionsOf(fallback->trace());
  auto changed = [&](const tir::Schedule& sch) {
    const tir::Decisions d = tir::DecisionsOf(sch.trace());
    size_t n = d.size() > base.size() ? d.size() - base.size() : base.size() - d.size();
    for (size_t k = 0; k < std::min(d.size(), base.size()); ++k) n += d[k] != base[k];
    return n;
  };
  TaskSearch near(tasks[0], options, 3);
  near.StartFrom(*fallback, 1e-3);
  TuneOptions random = options;
  random.use_cost_model = false;
  TaskSearch far(tasks[0], random, 3);
  far.StartFrom(*fallback, 1e-3);
  // A neighbour resamples one decision; a tiling's later decisions may follow it.
  size_t near_changes = 0, far_changes = 0, close = 0;
  std::vector<tir::Schedule> proposed = near.Propose(6, untrained);
  ASSERT_EQ(proposed.size(), 6u);
  for (const tir::Schedule& sch : proposed) {
    near_changes += changed(sch);
    close += changed(sch) <= 2;
  }
  for (const tir::Schedule& sch : far.Propose(6, untrained)) far_changes += changed(sch);
  EXPECT_GE(close, 3u);
  EXPECT_LT(near_changes, far_changes);
}

TEST(TunerTest, FailingBuildsAreRecordedAndAStopIsClean) {
  std::vector<TuneTask> tasks = MatmulTasks();
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath("f.db"));
  ASSERT_TRUE(db.ok());
  // Every candidate's build fails; the untuned kernel (built first) succeeds.
  int builds = 0;
  LocalBuilderOptions bo;
  std::unique_ptr<Builder> good = MakeLocalBuilder({});
  bo.build = [](const ir::IRModule&) -> absl::StatusOr<std::string> {
    return absl::InternalError("no linker today");
  };
  std::unique_ptr<Builder> bad = MakeLocalBuilder(bo);
  struct Switching : Builder {
    Builder* first;
    Builder* rest;
    int* count;
    std::vector<BuildResult> Build(const std::vector<ir::IRModule>& m) override {
      return (*count)++ == 0 ? first->Build(m) : rest->Build(m);
    }
  } builder;
  builder.first = good.get();
  builder.rest = bad.get();
  builder.count = &builds;
  std::unique_ptr<Runner> runner = MakeLocalRunner({.min_repeat_ms = 2});
  TuneOptions options;
  options.trials = 8;
  absl::StatusOr<TuneReport> report = Tune(tasks, **db, builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tasks[0].trials, 8);
  EXPECT_EQ(report->tasks[0].failures, 8);
  EXPECT_FALSE(report->tasks[0].best_seconds.has_value());
  absl::StatusOr<std::vector<TuningRecord>> records =
      (*db)->Records({report->tasks[0].workload_key, *TuningTarget("llvm"), ""});
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 8u);
  EXPECT_THAT((*records)[0].error, HasSubstr("no linker today"));
  // A stop requested before the first round: no trials, a report all the same.
  std::atomic<bool> stop{true};
  options.stop = &stop;
  report = Tune(tasks, **db, *good, *runner, options);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->stopped());
  EXPECT_EQ(report->trials, 0);
}

// The untuned kernel is timed twice, in two children, and keeps the faster time.
TEST(TunerTest, TheUntunedKernelKeepsTheFasterOfTwoTimes) {
  struct Watching : Runner {
    Runner* real;
    std::vector<double> untuned;
    std::vector<RunResult> Run(const TuneTask& task, const std::string& reference,
                               const std::vector<std::string>& libraries) override {
      std::vector<RunResult> out = real->Run(task, reference, libraries);
      if (libraries.size() == 1 && libraries[0] == reference && out[0].seconds) {
        untuned.push_back(*out[0].seconds);
      }
      return out;
    }
  } runner;
  std::unique_ptr<Runner> real = MakeLocalRunner({.min_repeat_ms = 2});
  runner.real = real.get();
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath("u.db"));
  ASSERT_TRUE(db.ok());
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  TuneOptions options;
  options.trials = 0;
  absl::StatusOr<TuneReport> report = Tune(MatmulTasks(), **db, *builder, runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(runner.untuned.size(), 2u);
  EXPECT_DOUBLE_EQ(*report->tasks[0].default_seconds,
                   std::min(runner.untuned[0], runner.untuned[1]));
}

TEST(TunerTest, ATimeBudgetEndsTheSearchAndSaysSo) {
  std::vector<TuneTask> tasks = MatmulTasks();
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath("b.db"));
  ASSERT_TRUE(db.ok());
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  std::unique_ptr<Runner> runner = MakeLocalRunner({.min_repeat_ms = 2});
  TuneOptions options;
  options.trials = 1000;
  // Spent before the search starts (measuring the untuned kernel takes longer): no round, the
  // untuned kernel's time kept, and the report says why it ended.
  options.budget_s = 1e-9;
  absl::StatusOr<TuneReport> report = Tune(tasks, **db, *builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->end, TuneEnd::kBudget);
  EXPECT_EQ(report->trials, 0);
  EXPECT_FALSE(report->stopped());
  EXPECT_TRUE(report->tasks[0].default_seconds.has_value());
  v1::TuneResult proto = ToProto(*report, options.trials);
  EXPECT_TRUE(proto.out_of_time());
  EXPECT_DOUBLE_EQ(proto.budget_s(), 1e-9);
  // A budget that is not reached: the trials end it.
  options.trials = 8;
  options.budget_s = 1e6;
  report = Tune(tasks, **db, *builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->end, TuneEnd::kTrials);
  EXPECT_EQ(report->trials, 8);
  EXPECT_FALSE(ToProto(*report, options.trials).out_of_time());
}

// A task starts from the best records of its family: a matmul of other shapes tuned before.
TEST(TunerTest, ANewShapeStartsFromItsFamilysRecords) {
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath("x.db"));
  ASSERT_TRUE(db.ok());
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  std::unique_ptr<Runner> runner = MakeLocalRunner({.min_repeat_ms = 2});
  TuneOptions options;
  options.trials = 8;
  ASSERT_TRUE(Tune(MatmulTasks(), **db, *builder, *runner, options).ok());
  absl::StatusOr<ir::IRModule> other = tir::testing::Parse(tir::testing::MatmulScript(48, 96, 32));
  ASSERT_TRUE(other.ok());
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*other);
  ASSERT_TRUE(tasks.ok() && tasks->size() == 1u);
  const auto func = [](const TuneTask& t) {
    return t.mod->Lookup(t.name).as_ref<ir::PrimFuncNode>();
  };
  EXPECT_NE(WorkloadKey(func((*tasks)[0])), WorkloadKey(func(MatmulTasks()[0])));
  EXPECT_EQ(FamilyKey(func((*tasks)[0])), FamilyKey(func(MatmulTasks()[0])));
  EXPECT_NE(
      FamilyKey(func((*tasks)[0])),
      FamilyKey(func((*ExtractTasks(*tir::testing::Parse(tir::testing::SoftmaxScript())))[0])));
  options.batch = 1;
  options.trials = 1;
  absl::StatusOr<TuneReport> report = Tune(*tasks, **db, *builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tasks[0].transferred, 1);
  EXPECT_EQ(report->trials, 1);
  // Without transfer, none.
  options.transfer = false;
  report = Tune(*tasks, **db, *builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tasks[0].transferred, 0);
}

// Records of another CPU of the same ISA (here: this machine's target under another CPU name)
// are where a search starts, though a compile never applies them; another ISA's are not.
TEST(TunerTest, AnotherCpuOfTheSameIsaLendsItsRecordsToTheSearch) {
  absl::StatusOr<std::unique_ptr<TuningDatabase>> tuned =
      TuningDatabase::Open(FreshTempPath("tuned.db"));
  ASSERT_TRUE(tuned.ok());
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  std::unique_ptr<Runner> runner = MakeLocalRunner({.min_repeat_ms = 2});
  TuneOptions options;
  options.trials = 8;
  ASSERT_TRUE(Tune(MatmulTasks(), **tuned, *builder, *runner, options).ok());
  absl::StatusOr<std::string> here = TuningTarget(options.target);
  ASSERT_TRUE(here.ok()) << here.status();
  // The same ISA under another CPU's name, and an Arm board.
  std::string same_isa = *here;
  const size_t cpu_at = same_isa.find(" -mcpu=");
  ASSERT_NE(cpu_at, std::string::npos);
  same_isa.replace(cpu_at, same_isa.find(' ', cpu_at + 1) - cpu_at, " -mcpu=generic");
  const std::string arm = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72";
  EXPECT_EQ(*IsaClass(same_isa), *IsaClass(*here));
  EXPECT_NE(*IsaClass(arm), *IsaClass(*here));
  absl::StatusOr<std::vector<WorkloadId>> workloads = (*tuned)->Workloads();
  ASSERT_TRUE(workloads.ok() && !workloads->empty());
  auto copied_to = [&](const std::string& target) {
    absl::StatusOr<std::unique_ptr<TuningDatabase>> db =
        TuningDatabase::Open(FreshTempPath("copied.db"));
    EXPECT_TRUE(db.ok());
    for (const WorkloadId& w : *workloads) {
      WorkloadId moved = w;
      moved.target = target;
      absl::StatusOr<std::string> script = (*tuned)->Module(w);
      absl::StatusOr<std::vector<TuningRecord>> records = (*tuned)->Records(w);
      EXPECT_TRUE(script.ok() && records.ok());
      if (!script.ok() || !records.ok()) continue;
      EXPECT_TRUE((*db)->AddWorkload(moved, *script).ok());
      for (const TuningRecord& r : *records) EXPECT_TRUE((*db)->AddRecord(moved, r).ok());
    }
    return *std::move(db);
  };
  absl::StatusOr<ir::IRModule> other = tir::testing::Parse(tir::testing::MatmulScript(48, 96, 32));
  ASSERT_TRUE(other.ok());
  absl::StatusOr<std::vector<TuneTask>> tasks = ExtractTasks(*other);
  ASSERT_TRUE(tasks.ok() && tasks->size() == 1u);
  options.batch = 1;
  options.trials = 1;
  std::unique_ptr<TuningDatabase> lent = copied_to(same_isa);
  absl::StatusOr<TuneReport> report = Tune(*tasks, *lent, *builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tasks[0].transferred, 1);
  std::unique_ptr<TuningDatabase> foreign = copied_to(arm);
  report = Tune(*tasks, *foreign, *builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->tasks[0].transferred, 0);
}

// Every new best of a task was measured twice, in two children, and its record keeps the slower
// time: the real runner, its measurements watched.
TEST(TunerTest, AWinnerIsMeasuredTwiceAndKeepsTheSlowerTime) {
  // A run of one library that was in the batch before it is a second measurement.
  struct Watching : Runner {
    Runner* real;
    std::map<std::string, double> batch;  // the last batch's times, by library
    int again = 0;
    std::set<double> slower;  // of each pair of measurements
    std::vector<RunResult> Run(const TuneTask& task, const std::string& reference,
                               const std::vector<std::string>& libraries) override {
      std::vector<RunResult> out = real->Run(task, reference, libraries);
      if (libraries.size() == 1 && libraries[0] == reference) return out;  // the untuned kernel
      auto first = batch.find(libraries[0]);
      if (libraries.size() == 1 && first != batch.end()) {
        ++again;
        if (out[0].seconds) slower.insert(std::max(first->second, *out[0].seconds));
        return out;
      }
      batch.clear();
      for (size_t k = 0; k < out.size(); ++k) {
        if (out[k].seconds) batch[libraries[k]] = *out[k].seconds;
      }
      return out;
    }
  } runner;
  std::unique_ptr<Runner> real = MakeLocalRunner({.min_repeat_ms = 2});
  runner.real = real.get();
  std::vector<TuneTask> tasks = MatmulTasks();
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath("w.db"));
  ASSERT_TRUE(db.ok());
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  TuneOptions options;
  options.trials = 24;
  absl::StatusOr<TuneReport> report = Tune(tasks, **db, *builder, runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(runner.again, report->winners_remeasured);
  EXPECT_LE(report->remeasure_differences.size(), static_cast<size_t>(runner.again));
  const TaskReport& t = report->tasks[0];
  if (t.best_seconds && *t.best_seconds < *t.default_seconds) {
    EXPECT_EQ(runner.slower.count(*t.best_seconds), 1u) << "the best record was measured once";
  }
}

// The cost model's way from records to a shipped model and back into a tune: read from a
// database, trained with a held-out score, saved, loaded (the same rankings), and used as a
// tune's initial model, whose accuracy on what the tune measured is reported.
TEST(CostModelTest, ATrainedModelTravelsAsJsonAndStartsATune) {
  absl::StatusOr<std::unique_ptr<TuningDatabase>> db = TuningDatabase::Open(FreshTempPath("m.db"));
  ASSERT_TRUE(db.ok());
  std::unique_ptr<Builder> builder = MakeLocalBuilder({});
  std::unique_ptr<Runner> runner = MakeLocalRunner({.min_repeat_ms = 2});
  TuneOptions options;
  options.trials = 24;
  ASSERT_TRUE(Tune(MatmulTasks(), **db, *builder, *runner, options).ok());
  std::vector<MeasuredGroup> groups;
  absl::StatusOr<int64_t> read = ReadMeasuredGroups(**db, &groups);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, 24);
  ASSERT_EQ(groups.size(), 1u);
  absl::StatusOr<TrainedModel> trained = TrainModel(groups);
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_EQ(trained->records, 24);
  EXPECT_FALSE(trained->held_out_accuracy.has_value());  // one workload: nothing to hold out
  CostModel a, b;
  ASSERT_TRUE(a.Load(trained->json).ok());
  ASSERT_TRUE(b.Load(*a.Save()).ok());
  EXPECT_EQ(a.Predict(groups[0].features), b.Predict(groups[0].features));
  // Trained on these very records, it ranks most of their pairs as measured.
  int64_t pairs = 0;
  std::optional<double> accuracy = PairwiseAccuracy(a, groups, &pairs);
  ASSERT_TRUE(accuracy.has_value());
  EXPECT_GT(pairs, 0);
  EXPECT_GT(*accuracy, 0.6);
  EXPECT_EQ(a.Load("not a model").code(), absl::StatusCode::kInvalidArgument);
  // As a tune's initial model: another matmul, ranked from the first round; the report says how
  // well.
  absl::StatusOr<std::unique_ptr<TuningDatabase>> fresh =
      TuningDatabase::Open(FreshTempPath("m2.db"));
  ASSERT_TRUE(fresh.ok());
  absl::StatusOr<std::vector<TuneTask>> tasks =
      ExtractTasks(*tir::testing::Parse(tir::testing::MatmulScript(32, 64, 48)));
  ASSERT_TRUE(tasks.ok());
  options.trials = 16;
  options.initial_model = trained->json;
  absl::StatusOr<TuneReport> report = Tune(*tasks, **fresh, *builder, *runner, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(report->initial_model_pairs, 0);
  ASSERT_TRUE(report->initial_model_accuracy.has_value());
  EXPECT_EQ(ToProto(*report, 16).initial_model_pairs(), report->initial_model_pairs);
  options.initial_model = "garbage";
  EXPECT_FALSE(Tune(*tasks, **fresh, *builder, *runner, options).ok());
}

// The model built into Kiln loads (its JSON is compiled in as a string literal; a stray byte
// before the '{' once made XGBoost read it as a binary model) and ranks.
TEST(CostModelTest, TheShippedModelLoads) {
  ASSERT_FALSE(ShippedCostModel().empty());
  CostModel model;
  ASSERT_TRUE(model.Load(ShippedCostModel()).ok());
  EXPECT_EQ(model.Predict({std::vector<float>(kFeatures, 1.f)}).size(), 1u);
}

TEST(CostModelTest, PairwiseAccuracyCountsPairsApartByMoreThanNoise) {
  // A model trained to prefer a larger first feature.
  CostModel model;
  std::vector<std::vector<float>> rows;
  std::vector<float> labels;
  for (int k = 0; k < 16; ++k) {
    rows.push_back(std::vector<float>(kFeatures, static_cast<float>(k)));
    labels.push_back(static_cast<float>(k) / 16);
  }
  ASSERT_TRUE(model.Train(rows, labels).ok());
  MeasuredGroup g;
  // 8 and 14 measured as the model ranks them; 2 and 8 the other way; 14 and 15 within noise;
  // a failure is in no pair.
  g.features = {rows[2], rows[8], rows[14], rows[15], rows[15]};
  g.seconds = {1.0, 2.0, 1.0, 1.01, std::nullopt};
  int64_t pairs = 0;
  std::optional<double> accuracy = PairwiseAccuracy(model, {g}, &pairs);
  ASSERT_TRUE(accuracy.has_value());
  // Pairs apart by more than 2 %: (2, 8), (8, 14), (8, 15). The model orders 14 and 15 before 8
  // (right: faster) and 8 before 2 (wrong: 2 ran faster).
  EXPECT_EQ(pairs, 3);
  EXPECT_NEAR(*accuracy, 2.0 / 3.0, 1e-9);
}

TEST(TuneReportTest, MilestonesAndTheProjectionComeFromTheCurve) {
  TuneReport report;
  report.trials = 64;
  // 10 ms untuned; the gain of each doubling of the trials halves.
  report.curve = {{0, 10e-3, 1}, {8, 6e-3, 2}, {16, 5e-3, 3}, {32, 4.5e-3, 5}, {64, 4.25e-3, 9}};
  std::vector<GainMilestone> m = GainMilestones(report);
  ASSERT_EQ(m.size(), 3u);
  // The whole gain is 5.75 ms: half of it by trial 8 (4 ms), 90 and 95 % by trial 32 (5.5 ms).
  EXPECT_EQ(m[0].trials, 8);
  EXPECT_DOUBLE_EQ(m[0].elapsed_s, 2);
  EXPECT_EQ(m[1].trials, 32);
  EXPECT_EQ(m[2].trials, 32);
  // The last doubling gained 0.25 ms, half the one before: the next, about 0.125 ms.
  std::optional<double> more = ProjectedGainOfDoubling(report);
  ASSERT_TRUE(more.has_value());
  EXPECT_NEAR(*more, 0.125e-3, 1e-9);
  // No gain: neither.
  report.curve = {{0, 10e-3, 1}, {64, 10e-3, 9}};
  EXPECT_TRUE(GainMilestones(report).empty());
  EXPECT_FALSE(ProjectedGainOfDoubling(report).has_value());
  // Too few trials to extrapolate.
  report.trials = 8;
  report.curve = {{0, 10e-3, 1}, {8, 6e-3, 2}};
  EXPECT_FALSE(ProjectedGainOfDoubling(report).has_value());
}

TEST(TuningTargetTest, RecordsAreKeptByTheResolvedTripleAndCpu) {
  // "llvm" is this host: "-mcpu=native" shares its records; another CPU or triple does not.
  absl::StatusOr<std::string> host = TuningTarget("llvm");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_THAT(*host, ::testing::StartsWith("llvm -mtriple="));
  EXPECT_EQ(*TuningTarget("llvm -mcpu=native"), *host);
  EXPECT_NE(*TuningTarget("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"), *host);
  EXPECT_FALSE(TuningTarget("cuda").ok());
}

}  // namespace
}  // namespace kiln::tune
