// The edge flow for real: an x86-64 kilnd, an x86-64 agent, and the packaged aarch64 agent
// (//runtime/agent:kiln-agent-aarch64.tar.gz) running under qemu-aarch64 as a Cortex-A72 board.
// Models are compiled for the board through kilnd (the target comes from what it registered),
// run on it and checked against PyTorch's outputs; code the board cannot run is refused by it.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/agent/tensor_value.h"
#include "runtime/artifact.h"
#include "runtime/device_info.h"
#include "runtime/npy.h"
#include "tests/cluster_test.h"
#include "tests/service_cluster.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

std::string g_agent_package;  // the tarball, from the test's arguments

constexpr char kQemu[] = "/usr/bin/qemu-aarch64";  // Debian's qemu-user
// The board's target as kilnd derives it from a Cortex-A72's registration (NEON only).
constexpr char kBoardTarget[] = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon";

runtime::Tensor Npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(bytes.str(), path);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// This machine has AVX-512 VNNI (its int8 kernels are vpdpbusd's).
bool HostHasVnni() {
  const v1::DeviceAttributes host = runtime::LocalDeviceAttributes();
  int found = 0;
  for (const std::string& f : host.cpu_features()) found += f == "avx512_vnni" || f == "avx512vl";
  return found == 2;
}

class EdgeTest : public ClusterTest {
 protected:
  void SetUp() override {
    board_dir_ = Cluster::TmpPath("board");
    const std::string& dir = board_dir_;
    std::string untar =
        absl::StrCat("mkdir -p ", dir, " && tar -xzf ", g_agent_package, " -C ", dir);
    ASSERT_EQ(std::system(untar.c_str()), 0) << untar;
    // qemu-user emulates a Cortex-A72 for the agent and (through --task-launcher) its children,
    // and for kiln-worker's check of the board's tuning candidates (--candidate-checker).
    setenv("QEMU_CPU", "cortex-a72", 1);
    StartWithAgents("edge", 1,  // the x86-64 agent, device "cpu"
                    {"--candidate-checker",
                     absl::StrCat("aarch64=", kQemu, " ", dir, "/kiln-agent/bin/kiln-agent")});
    absl::StatusOr<std::string> board = cluster_->StartAgentCommand(
        {kQemu, dir + "/kiln-agent/bin/kiln-agent"}, "board", {"--task-launcher", kQemu});
    ASSERT_TRUE(board.ok()) << board.status();
    board_agent_ = *board;
  }

  v1::Job Finish(const absl::StatusOr<v1::SubmitResponse>& submitted) {
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return v1::Job();
    absl::StatusOr<v1::Job> job = client_->Wait(submitted->job().id());
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : v1::Job();
  }

  v1::Job Compile(const std::string& model, const std::string& device_key,
                  const std::string& target = "") {
    v1::SubmitCompileRequest request;
    absl::StatusOr<v1::ModuleSource> source = client::ModuleSourceFromFile(model);
    EXPECT_TRUE(source.ok()) << source.status();
    *request.mutable_module() = *source;
    request.set_device_key(device_key);
    request.set_target(target);
    return Finish(client_->SubmitCompile(request));
  }

  v1::Job Infer(const std::string& digest, const std::string& device_key,
                const runtime::Tensor& input) {
    v1::SubmitInferenceRequest request;
    request.mutable_artifact()->set_digest(digest);
    request.set_device_key(device_key);
    runtime::TensorToProto(input, "", request.add_inputs());
    return Finish(client_->SubmitInference(request));
  }

  void ExpectReference(const v1::Job& job, const std::string& reference) {
    ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
    ASSERT_EQ(job.inference().outputs_size(), 1);
    absl::StatusOr<runtime::Tensor> got = runtime::TensorFromProto(job.inference().outputs(0));
    ASSERT_TRUE(got.ok()) << got.status();
    runtime::Tensor want = Npy(reference);
    ASSERT_EQ(got->NumElements(), want.NumElements());
    const float* g = static_cast<const float*>(got->data());
    const float* w = static_cast<const float*>(want.data());
    for (int64_t i = 0; i < want.NumElements(); ++i) {
      ASSERT_NEAR(g[i], w[i], 1e-4 * (1 + std::abs(w[i]))) << reference << " element " << i;
    }
  }

  // Whether an artifact's kernels include int8 ones (else its int8 operators run in float32).
  bool HasInt8Kernels(const std::string& digest) {
    absl::StatusOr<std::string> bytes = client_->DownloadArtifact(digest);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<v1::ArtifactProto> artifact = runtime::ParseArtifact(bytes.value_or(""), false);
    EXPECT_TRUE(artifact.ok()) << artifact.status();
    if (!artifact.ok()) return false;
    for (const v1::KernelInfo& k : artifact->manifest().kernels()) {
      for (const std::string& op : k.fused_ops()) {
        if (op == "relax.qnn.conv2d_int8") return true;
      }
    }
    return false;
  }

  std::string board_dir_;
  std::string board_agent_;
};

TEST_F(EdgeTest, TheBoardRegistersWhatItIs) {
  absl::StatusOr<std::vector<v1::Device>> devices = client_->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  const v1::Device& board = (*devices)[0].key() == "board" ? (*devices)[0] : (*devices)[1];
  const v1::Device& cpu = (*devices)[0].key() == "board" ? (*devices)[1] : (*devices)[0];
  EXPECT_EQ(board.attributes().target_triple(), "aarch64-unknown-linux-gnu");
  EXPECT_TRUE(board.attributes().emulated());
  EXPECT_THAT(board.attributes().cpu_model(), HasSubstr("emulated aarch64 (qemu-user on "));
  // A Cortex-A72's hwcaps: NEON, no dot product, no SVE.
  EXPECT_THAT(board.attributes().cpu_features(), ::testing::ElementsAre("asimd"));
  EXPECT_GT(board.attributes().cores(), 0);
  EXPECT_GT(board.attributes().memory_bytes(), 0);
  EXPECT_THAT(cpu.attributes().target_triple(), ::testing::StartsWith("x86_64-"));
  EXPECT_FALSE(cpu.attributes().emulated());
}

TEST_F(EdgeTest, TheSharedModelsRunOnTheBoardAndOnTheHost) {
  for (const char* name : {"mlp_784_128_10", "mlp_dynamic_batch", "tiny_resnet", "mobilenet_v2",
                           "tiny_encoder_gelu", "tiny_encoder_opset17"}) {
    SCOPED_TRACE(name);
    const std::string base = absl::StrCat("tests/models/", name);
    v1::Job board = Compile(base + ".onnx", "board");
    ASSERT_EQ(board.state(), v1::JOB_STATE_SUCCEEDED) << board.reason();
    EXPECT_EQ(board.target(), kBoardTarget);
    EXPECT_EQ(board.device_key(), "board");
    v1::Job ran = Infer(board.artifact_digest(), "board", Npy(base + ".input.npy"));
    EXPECT_EQ(ran.agent_id(), board_agent_);
    ExpectReference(ran, base + ".output.npy");

    v1::Job host = Compile(base + ".onnx", "cpu");
    ASSERT_EQ(host.state(), v1::JOB_STATE_SUCCEEDED) << host.reason();
    EXPECT_EQ(host.target(), "llvm");  // the agent is this machine's CPU: native code
    ExpectReference(Infer(host.artifact_digest(), "cpu", Npy(base + ".input.npy")),
                    base + ".output.npy");
  }
  // A symbolic batch stays correct on the board for other batch sizes.
  v1::Job dynamic = Compile("tests/models/mlp_dynamic_batch.onnx", "board");
  ASSERT_EQ(dynamic.state(), v1::JOB_STATE_SUCCEEDED) << dynamic.reason();
  EXPECT_TRUE(dynamic.cache_hit());
  ExpectReference(Infer(dynamic.artifact_digest(), "board",
                        Npy("tests/models/mlp_dynamic_batch.batch7.input.npy")),
                  "tests/models/mlp_dynamic_batch.batch7.output.npy");
}

TEST_F(EdgeTest, AnInt8ModelRunsOnTheBoardAsOnnxRuntimeRunsIt) {
  // kiln quantize's QDQ model (compiler/quantize/testdata) on every machine — int8 kernels where
  // the CPU has an int8 dot product (VNNI; Arm's dot product or i8mm), float32 arithmetic where it
  // has none — against ONNX Runtime's output.
  const std::string base = "compiler/quantize/testdata/tiny_resnet_int8.";
  // A second board, emulated as qemu's "max" CPU: the Arm dot product and i8mm. Built for it,
  // the int8 kernels are usdot's; built for a Cortex-A76 (the dot product, no i8mm), udot's.
  setenv("QEMU_CPU", "max", 1);
  absl::StatusOr<std::string> dot_board = cluster_->StartAgentCommand(
      {kQemu, board_dir_ + "/kiln-agent/bin/kiln-agent"}, "board-i8mm", {"--task-launcher", kQemu});
  setenv("QEMU_CPU", "cortex-a72", 1);
  ASSERT_TRUE(dot_board.ok()) << dot_board.status();
  struct Build {
    const char* device;
    std::string target;  // "": the device's
    bool int8_kernels;
  };
  const std::vector<Build> builds = {
      {"board", "", false},  // a Cortex-A72: no int8 dot product
      {"board-i8mm", "", true},
      {"board-i8mm", "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76", true},
      {"cpu", "", HostHasVnni()},
  };
  for (const Build& b : builds) {
    SCOPED_TRACE(absl::StrCat(b.device, " ", b.target));
    v1::Job compiled = Compile(base + "onnx", b.device, b.target);
    ASSERT_EQ(compiled.state(), v1::JOB_STATE_SUCCEEDED) << compiled.reason();
    EXPECT_EQ(HasInt8Kernels(compiled.artifact_digest()), b.int8_kernels);
    for (int k = 0; k < 2; ++k) {
      ExpectReference(
          Infer(compiled.artifact_digest(), b.device, Npy(absl::StrCat(base, "input_", k, ".npy"))),
          absl::StrCat(base, "output_", k, ".npy"));
    }
  }
}

TEST_F(EdgeTest, SelectorsPickDevicesAndBoardTimingsSayEmulated) {
  v1::SubmitCompileRequest request;
  absl::StatusOr<v1::ModuleSource> source =
      client::ModuleSourceFromFile("tests/models/tiny_resnet.onnx");
  ASSERT_TRUE(source.ok()) << source.status();
  *request.mutable_module() = *source;
  request.set_device_selector("arch=aarch64,features~neon,min_cores=1");
  v1::Job compiled = Finish(client_->SubmitCompile(request));
  ASSERT_EQ(compiled.state(), v1::JOB_STATE_SUCCEEDED) << compiled.reason();
  EXPECT_EQ(compiled.device_key(), "board");
  EXPECT_EQ(compiled.target(), kBoardTarget);

  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_selector("arch=aarch64,emulated=true");
  profile.mutable_options()->set_repeat(3);
  v1::Job timed = Finish(client_->SubmitProfile(profile));
  ASSERT_EQ(timed.state(), v1::JOB_STATE_SUCCEEDED) << timed.reason();
  EXPECT_EQ(timed.device_key(), "board");
  EXPECT_TRUE(timed.profile().emulated());
  EXPECT_GT(timed.profile().median_seconds(), 0);

  // Nothing matches: the error lists what there is. A selector that does not parse says why.
  // (Another test registers an emulated board with SVE: more cores than any has, then.)
  request.set_device_selector("arch=aarch64,features~sve,min_cores=4096");
  absl::StatusOr<v1::SubmitResponse> none = client_->SubmitCompile(request);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(),
              HasSubstr("no device matches 'arch=aarch64,features~sve,min_cores=4096'"));
  EXPECT_THAT(none.status().message(), HasSubstr("board: aarch64-unknown-linux-gnu"));
  request.set_device_selector("gpus=8");
  absl::StatusOr<v1::SubmitResponse> bad = client_->SubmitCompile(request);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'gpus=8': unknown attribute"));
}

TEST_F(EdgeTest, ATuneForTheBoardIsMeasuredOnIt) {
  v1::SubmitTuneRequest request;
  absl::StatusOr<v1::ModuleSource> source =
      client::ModuleSourceFromFile("tests/models/mlp_784_128_10.onnx");
  ASSERT_TRUE(source.ok()) << source.status();
  *request.mutable_module() = *source;
  request.set_device_key("board");
  request.set_trials(4);
  v1::Job tuned = Finish(client_->SubmitTune(request));
  ASSERT_EQ(tuned.state(), v1::JOB_STATE_SUCCEEDED) << tuned.reason();
  EXPECT_EQ(tuned.target(), kBoardTarget);
  EXPECT_EQ(tuned.tune().trials(), 4);
  int measured = 0;
  for (const v1::TuneTaskResult& t : tuned.tune().tasks()) {
    measured += t.trials() - t.failures();
    EXPECT_GT(t.default_seconds(), 0) << t.name();  // timed on the board
  }
  EXPECT_EQ(measured, 4);
  EXPECT_THAT(cluster_->agent(board_agent_).Log(), HasSubstr("(JOB_KIND_TUNE)"));
  // Not on the board's word alone: kiln-worker checked the fastest candidates again, in the
  // aarch64 kiln-agent under qemu (--candidate-checker).
  EXPECT_GE(tuned.tune().candidates_checked(), 1);
}

TEST_F(EdgeTest, TheBoardRefusesCodeItCannotRun) {
  runtime::Tensor input = Npy("tests/models/tiny_resnet.input.npy");
  // x86-64 code.
  v1::Job host = Compile("tests/models/tiny_resnet.onnx", "cpu");
  ASSERT_EQ(host.state(), v1::JOB_STATE_SUCCEEDED) << host.reason();
  v1::Job refused = Infer(host.artifact_digest(), "board", input);
  EXPECT_EQ(refused.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(refused.reason(), HasSubstr("the artifact was compiled for x86_64"));
  EXPECT_THAT(refused.reason(), HasSubstr("this device is aarch64-unknown-linux-gnu"));
  // aarch64 code that needs SVE (and the half-precision arithmetic SVE implies), which a
  // Cortex-A72 lacks.
  v1::Job sve = Compile("tests/models/tiny_resnet.onnx", "board",
                        "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+sve");
  ASSERT_EQ(sve.state(), v1::JOB_STATE_SUCCEEDED) << sve.reason();
  refused = Infer(sve.artifact_digest(), "board", input);
  EXPECT_EQ(refused.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(
      refused.reason(),
      HasSubstr("uses CPU features this device lacks: asimdhp, sve (the device has asimd)"));
  // And the board goes on serving what it can run.
  v1::Job good = Compile("tests/models/tiny_resnet.onnx", "board");
  ExpectReference(Infer(good.artifact_digest(), "board", input),
                  "tests/models/tiny_resnet.output.npy");
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 5) {
    std::fprintf(stderr, "usage: edge_e2e_test KILND KILN_AGENT KILN AARCH64_AGENT.tar.gz\n");
    return 2;
  }
  kiln::testing::TestBinaries() = {argv[1], argv[2], argv[3], ""};
  kiln::testing::g_agent_package = argv[4];
  return RUN_ALL_TESTS();
}
