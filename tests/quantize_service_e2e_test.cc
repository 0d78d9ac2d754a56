// Quantize jobs end to end on loopback: a real kilnd whose kiln-worker (the build with test hooks)
// calibrates, evaluates and builds, a real kiln-agent that runs the int8 artifact, and the faults
// a quantize job must survive: bad calibration data, a cancel, a deadline and a killed worker
// mid-calibration, none of which leaves anything to download.
//
// Arguments: kilnd, kiln-agent, kiln, kiln-worker-test-hooks.
#include <signal.h>

#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/quantize/calibration.h"
#include "compiler/quantize/quantize.h"
#include "compiler/quantize/quantize_proto.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/agent/tensor_value.h"
#include "tests/service_test_util.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kCnn[] = "tests/models/tiny_resnet.onnx";
constexpr char kCnnInput[] = "tests/models/tiny_resnet.input.npy";
constexpr char kCnnOutput[] = "tests/models/tiny_resnet.output.npy";

// Normal(0, 1) inputs of tiny_resnet ([1, 3, 32, 32] "input").
std::vector<quantize::Sample> RandomSamples(int n, uint32_t seed,
                                            std::vector<int64_t> shape = {1, 3, 32, 32}) {
  std::vector<quantize::Sample> samples;
  for (int i = 0; i < n; ++i) {
    runtime::Tensor t = *runtime::Tensor::Empty(shape, DLDataType{kDLFloat, 32, 1});
    std::mt19937 rng(seed + i);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    float* v = static_cast<float*>(t.data());
    for (int64_t k = 0; k < t.NumElements(); ++k) v[k] = dist(rng);
    samples.push_back({absl::StrCat("img", i), {std::move(t)}});
  }
  return samples;
}

v1::SubmitQuantizeRequest Request(const std::vector<quantize::Sample>& calibration,
                                  const std::vector<quantize::Sample>& eval,
                                  const std::string& name = "tiny_resnet.onnx") {
  v1::SubmitQuantizeRequest request;
  request.mutable_model()->set_onnx(ReadFileBytes(kCnn));
  request.mutable_model()->set_name(name);
  for (const quantize::Sample& s : calibration)
    quantize::SampleToProto(s, {"input"}, request.add_calibration());
  for (const quantize::Sample& s : eval) quantize::SampleToProto(s, {"input"}, request.add_eval());
  return request;
}

class QuantizeServiceTest : public ClusterTest {
 protected:
  void Start(const std::string& name) {
    StartWithAgents(name, 1, {"--worker", WorkerWithTestHooks()});
  }

  std::string Submit(const v1::SubmitQuantizeRequest& request) {
    absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitQuantize(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return "";
    EXPECT_EQ(submitted->job().kind(), v1::JOB_KIND_QUANTIZE);
    return submitted->job().id();
  }

  // The job as it ended, and every event's message.
  v1::Job Wait(const std::string& id, std::vector<std::string>* messages = nullptr,
               const std::function<void(const v1::JobEvent&)>& on_event = nullptr) {
    absl::StatusOr<v1::Job> job = client_->Wait(id, [&](const v1::JobEvent& e) {
      if (messages != nullptr) messages->push_back(e.message());
      // The model's bytes never ride on an event.
      EXPECT_TRUE(e.job().quantize().model().empty());
      if (on_event) on_event(e);
    });
    EXPECT_TRUE(job.ok()) << job.status();
    return job.value_or(v1::Job());
  }

  // A job that ended without success left nothing to download.
  void ExpectNothingServed(const v1::Job& job) {
    EXPECT_TRUE(job.artifact_digest().empty()) << job.artifact_digest();
    EXPECT_EQ(job.quantize().model_size(), 0);
    absl::StatusOr<std::vector<v1::TensorValue>> model = client_->DownloadOutputs(job.id());
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition) << model.status();
  }
};

TEST_F(QuantizeServiceTest, QuantizesAsKilnQuantizeDoesAndTheArtifactRunsOnAnAgent) {
  Start("quantize_ok");
  const std::vector<quantize::Sample> calibration = RandomSamples(8, 100);
  const std::vector<quantize::Sample> eval = RandomSamples(8, 1000);
  std::vector<std::string> messages;
  const v1::Job job = Wait(Submit(Request(calibration, eval)), &messages);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  // Its stages came as events while it ran.
  const std::string all = absl::StrJoin(messages, "\n");
  EXPECT_THAT(all, HasSubstr("calibrating on 8 inputs"));
  EXPECT_THAT(all, HasSubstr("evaluating on 8 held-out inputs"));
  EXPECT_THAT(all, HasSubstr("building the int8 model for llvm"));

  const v1::QuantizeResult& r = job.quantize();
  EXPECT_EQ(r.method(), "minmax");
  EXPECT_EQ(r.calibration_inputs(), 8);
  EXPECT_EQ(r.eval_inputs(), 8);
  EXPECT_TRUE(r.held_out());
  ASSERT_EQ(r.outputs_size(), 1);
  EXPECT_GT(r.outputs(0).sqnr_db(), 25);
  EXPECT_EQ(r.outputs(0).top1_total(), 8);
  EXPECT_GT(r.layers_size(), 3);
  for (const v1::QuantizedLayerAccuracy& l : r.layers()) EXPECT_GT(l.sqnr_db(), 10) << l.name();

  // The QDQ model is byte for byte what `kiln quantize` writes from the same inputs, and its
  // report says the same.
  absl::StatusOr<std::string> model = client_->DownloadQuantizedModel(job);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(static_cast<int64_t>(model->size()), r.model_size());
  absl::StatusOr<quantize::QuantizedModel> local = quantize::QuantizeOnnxModel(
      ReadFileBytes(kCnn), "tiny_resnet.onnx", calibration, eval, quantize::QuantizeOptions{});
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_TRUE(local->qdq_model == *model);
  EXPECT_DOUBLE_EQ(local->report.outputs[0].sqnr_db, r.outputs(0).sqnr_db());

  // The artifact built from it is stored, and computes the model on an agent.
  ASSERT_FALSE(job.artifact_digest().empty());
  v1::SubmitInferenceRequest run;
  run.mutable_artifact()->set_digest(job.artifact_digest());
  run.set_device_key("cpu");
  runtime::TensorToProto(Npy(kCnnInput), "input", run.add_inputs());
  absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitInference(run);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> ran = client_->Wait(submitted->job().id());
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_EQ(ran->state(), v1::JOB_STATE_SUCCEEDED) << ran->reason();
  absl::StatusOr<runtime::Tensor> got = runtime::TensorFromProto(ran->inference().outputs(0));
  const runtime::Tensor want = Npy(kCnnOutput);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->NumElements(), want.NumElements());
  quantize::SqnrAccumulator sqnr;
  sqnr.Add(static_cast<const float*>(want.data()), static_cast<const float*>(got->data()),
           want.NumElements());
  EXPECT_GT(sqnr.Db(), 20);

  // A listing and GetJob name the model's size, never its bytes.
  absl::StatusOr<v1::Job> listed = client_->GetJob(job.id());
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->quantize().model().empty());
  EXPECT_EQ(listed->quantize().model_size(), r.model_size());
}

TEST_F(QuantizeServiceTest, BadCalibrationDataIsRefusedNamingTheSampleAndTheInput) {
  Start("quantize_bad_data");
  // What kilnd refuses at once, without parsing the model.
  auto refused = [&](const v1::SubmitQuantizeRequest& request, const std::string& why) {
    absl::StatusOr<v1::SubmitResponse> submitted = client_->SubmitQuantize(request);
    ASSERT_FALSE(submitted.ok()) << why;
    EXPECT_EQ(submitted.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(submitted.status().message()), HasSubstr(why));
  };
  refused(Request({}, {}), "calibration: no samples");
  v1::SubmitQuantizeRequest script = Request(RandomSamples(1, 1), {});
  script.mutable_model()->set_tvmscript("@I.ir_module\nclass M: pass\n");
  refused(script, "quantize takes an ONNX model");
  v1::SubmitQuantizeRequest method = Request(RandomSamples(1, 1), {});
  method.set_method("kl");
  refused(method, "method 'kl'");
  v1::SubmitQuantizeRequest empty_sample = Request(RandomSamples(1, 1), {});
  empty_sample.add_calibration();
  refused(empty_sample, "calibration sample 1: no tensors");

  // What only the model says: the job fails with INVALID_ARGUMENT naming the sample and input.
  auto fails = [&](const v1::SubmitQuantizeRequest& request, const std::vector<std::string>& why) {
    const v1::Job job = Wait(Submit(request));
    EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
    EXPECT_EQ(job.error_code(), static_cast<int>(absl::StatusCode::kInvalidArgument))
        << job.reason();
    for (const std::string& w : why) EXPECT_THAT(job.reason(), HasSubstr(w));
    ExpectNothingServed(job);
  };
  std::vector<quantize::Sample> samples = RandomSamples(2, 1);
  samples.push_back(RandomSamples(1, 2, {1, 3, 16, 16})[0]);
  fails(Request(samples, {}),
        {"calibration", "sample 2 'img0'", "input 'input'", "[1, 3, 16, 16]", "[1, 3, 32, 32]"});

  v1::SubmitQuantizeRequest doubles = Request(RandomSamples(2, 1), RandomSamples(1, 5));
  v1::TensorValue& t = *doubles.mutable_eval(0)->mutable_inputs(0);
  t.set_dtype("float64");
  t.mutable_data()->append(t.data());  // the right size for float64
  fails(doubles, {"evaluation", "input 'input'", "float64", "float32"});

  v1::SubmitQuantizeRequest short_bytes = Request(RandomSamples(2, 1), {});
  short_bytes.mutable_calibration(1)->mutable_inputs(0)->mutable_data()->resize(100);
  fails(short_bytes, {"calibration sample 1 'img1'", "input 'input'"});

  v1::SubmitQuantizeRequest unknown = Request(RandomSamples(1, 1), {});
  unknown.mutable_calibration(0)->mutable_inputs(0)->set_name("image");
  fails(unknown, {"calibration sample 0 'img0'", "no input 'image'", "its inputs: input"});
}

TEST_F(QuantizeServiceTest, CancelDeadlineAndAKilledWorkerMidCalibrationLeaveNothingServed) {
  Start("quantize_faults");
  // The hooked worker pauses once calibration has begun: each fault strikes mid-calibration.
  const v1::SubmitQuantizeRequest slow =
      Request(RandomSamples(4, 1), {}, "kiln-test-slow-calibration");

  // Cancelled while it calibrates.
  const std::string cancelled_id = Submit(slow);
  const v1::Job cancelled = Wait(cancelled_id, nullptr, [&](const v1::JobEvent& e) {
    if (absl::StartsWith(e.message(), "calibrating")) {
      absl::StatusOr<v1::Job> c = client_->Cancel(cancelled_id, "test");
      EXPECT_TRUE(c.ok()) << c.status();
    }
  });
  EXPECT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED) << cancelled.reason();
  ExpectNothingServed(cancelled);

  // Its deadline passes while it calibrates (or before: either way the worker is killed).
  v1::SubmitQuantizeRequest late = slow;
  late.set_deadline_ms(2500);
  const v1::Job timed_out = Wait(Submit(late));
  EXPECT_EQ(timed_out.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(timed_out.error_code(), static_cast<int>(absl::StatusCode::kDeadlineExceeded))
      << timed_out.reason();
  EXPECT_THAT(timed_out.reason(), HasSubstr("deadline"));
  ExpectNothingServed(timed_out);

  // Its worker killed while it calibrates: the job fails, naming the signal.
  int killed_pid = 0;
  const v1::Job killed = Wait(Submit(slow), nullptr, [&](const v1::JobEvent& e) {
    if (absl::StartsWith(e.message(), "calibrating") && killed_pid == 0) {
      killed_pid = e.job().worker_pid();
      ASSERT_GT(killed_pid, 0);
      ::kill(killed_pid, SIGKILL);
    }
  });
  ASSERT_GT(killed_pid, 0);
  EXPECT_EQ(killed.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(killed.error_code(), static_cast<int>(absl::StatusCode::kInternal)) << killed.reason();
  EXPECT_THAT(killed.reason(), HasSubstr(absl::StrCat("pid ", killed_pid)));
  ExpectNothingServed(killed);

  // kilnd carries on: the next quantize succeeds.
  const v1::Job next = Wait(Submit(Request(RandomSamples(2, 7), {})));
  EXPECT_EQ(next.state(), v1::JOB_STATE_SUCCEEDED) << next.reason();
  EXPECT_FALSE(next.artifact_digest().empty());
  EXPECT_FALSE(next.quantize().held_out());
}

}  // namespace
}  // namespace kiln::testing
