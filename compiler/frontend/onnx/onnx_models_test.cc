// The shared test models (tests/models, exported from PyTorch) imported, compiled once each and
// run against PyTorch's reference outputs (rtol = atol = 1e-4); the dynamic-batch model at batch
// 4, 1 and 7 from one compiled module.
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "compiler/backend/build.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/testing/onnx_builder.h"
#include "compiler/ir/printer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/device_info.h"
#include "runtime/library.h"
#include "runtime/npy.h"
#include "runtime/thread_pool.h"
#include "runtime/vm/vm.h"

namespace kiln::frontend {
namespace {

const char kModels[] = "tests/models/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

runtime::Tensor ReadTensor(const std::string& file) {
  std::string path = kModels + file;
  absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(ReadFile(path), path);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : runtime::Tensor();
}

void ExpectClose(const runtime::Tensor& got, const runtime::Tensor& want, const std::string& what) {
  backend::testing::Array g = backend::testing::FromTensor(got);
  backend::testing::Array w = backend::testing::FromTensor(want);
  ASSERT_EQ(g.shape, w.shape) << what;
  double worst = 0;
  for (int64_t i = 0; i < w.size(); ++i) {
    double err = std::abs(g.data[i] - w.data[i]);
    ASSERT_LE(err, 1e-4 + 1e-4 * std::abs(w.data[i])) << what << " element " << i;
    worst = std::max(worst, err);
  }
  std::printf("%s: max |error| %.3g over %lld elements\n", what.c_str(), worst,
              static_cast<long long>(w.size()));
}

// `mod` built for `target` and loaded into a VM (two kernel threads).
absl::StatusOr<std::unique_ptr<runtime::vm::VirtualMachine>> Loaded(const ir::IRModule& mod,
                                                                    const std::string& target,
                                                                    const std::string& name) {
  absl::StatusOr<backend::BuiltModule> built = backend::Build(mod, target);
  if (!built.ok()) return built.status();
  absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
      runtime::KernelLibrary::LoadFromMemory(built->kernels, name);
  if (!lib.ok()) return lib.status();
  absl::StatusOr<runtime::vm::Executable> exec =
      runtime::vm::Executable::Deserialize(built->executable);
  if (!exec.ok()) return exec.status();
  return runtime::vm::VirtualMachine::Create(
      std::make_shared<const runtime::vm::Executable>(std::move(*exec)), *lib,
      std::make_shared<runtime::ThreadPool>(2), nullptr);
}

nlohmann::json Manifest() {
  return nlohmann::json::parse(ReadFile(std::string(kModels) + "manifest.json"));
}

// Each model is compiled for this machine and for the x86-64 ISAs whose kernels are shaped
// differently (target::PolicyFor): AVX2 with 16 registers of 8 lanes, AVX-512 with 32 of 16.
// A target this machine cannot run is skipped (the aarch64 NEON build of every model is run
// under qemu by tests:edge_e2e_test).
struct ModelTarget {
  const char* name;    // the test's name for it
  const char* target;  // the target string
};
constexpr ModelTarget kTargets[] = {
    {"host", "llvm"},
    {"avx2", "llvm -mcpu=haswell"},
    {"avx512", "llvm -mcpu=skylake-avx512"},
};

class OnnxModelTest : public ::testing::TestWithParam<std::tuple<std::string, ModelTarget>> {};

TEST_P(OnnxModelTest, MatchesReference) {
  const std::string& name = std::get<0>(GetParam());
  const ModelTarget& target = std::get<1>(GetParam());
  absl::StatusOr<codegen::LlvmTargetInfo> info = codegen::ParseTarget(target.target);
  ASSERT_TRUE(info.ok()) << info.status();
  if (absl::Status runs = runtime::CheckCodeRunsOn(info->triple, info->device_features,
                                                   runtime::LocalDeviceAttributes());
      !runs.ok()) {
    GTEST_SKIP() << runs.message();
  }
  nlohmann::json entry = Manifest()["models"][name];
  std::string file = entry["file"];
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(ReadFile(kModels + file), file);
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::unique_ptr<runtime::vm::VirtualMachine>> vm =
      Loaded(*mod, target.target, name);
  ASSERT_TRUE(vm.ok()) << vm.status();

  std::vector<std::pair<std::string, nlohmann::json>> runs = {{"reference", entry}};
  for (auto& [batch, pair] : entry["more_batches"].items()) runs.push_back({batch, pair});
  for (const auto& [label, pair] : runs) {
    runtime::Tensor input = ReadTensor(pair["input"]);
    runtime::Tensor expected = ReadTensor(pair["output"]);
    absl::StatusOr<runtime::Value> out = (*vm)->Invoke("main", {runtime::Value(input)});
    ASSERT_TRUE(out.ok()) << label << ": " << out.status();
    ASSERT_NE(out->as_tensor(), nullptr);
    ExpectClose(*out->as_tensor(), expected, name + " " + target.name + " " + label);
  }
  if (entry["dynamic_batch"].get<bool>()) {
    EXPECT_GE(runs.size(), 3u);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxModelTest,
                         ::testing::Combine(::testing::Values("mlp_784_128_10", "mlp_dynamic_batch",
                                                              "tiny_resnet", "mobilenet_v2",
                                                              "tiny_encoder_gelu",
                                                              "tiny_encoder_opset17"),
                                            ::testing::ValuesIn(kTargets)),
                         [](const ::testing::TestParamInfo<OnnxModelTest::ParamType>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                         });

// Every model of the manifest is one of the cases above.
TEST(OnnxModels, ManifestIsCovered) {
  std::set<std::string> tested = {"mlp_784_128_10", "mlp_dynamic_batch", "tiny_resnet",
                                  "mobilenet_v2",   "tiny_encoder_gelu", "tiny_encoder_opset17"};
  for (auto& [name, entry] : Manifest()["models"].items()) EXPECT_TRUE(tested.count(name)) << name;
}

// The dynamic batch is one symbolic variable in the imported signature: one module serves all
// batch sizes, and a wrong feature width is refused at the call.
TEST(OnnxModels, DynamicBatchIsSymbolic) {
  absl::StatusOr<ir::IRModule> mod =
      ImportOnnx(ReadFile(std::string(kModels) + "mlp_dynamic_batch.onnx"), "mlp");
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::string printed = ir::DebugPrint(*mod);
  EXPECT_NE(printed.find("batch"), std::string::npos) << printed;
  absl::StatusOr<runtime::Value> bad = backend::testing::CompileModuleAndRun(
      *mod, {runtime::Value(backend::testing::ToTensor(backend::testing::Zeros({2, 63})))});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("63"), std::string::npos) << bad.status();
}

// Issue 49's decoder pattern, exported from PyTorch (testdata/models/make_tiny_gpt.py): positions
// Range(0, seq) and a causal mask built from the sequence length, a symbolic dimension used as
// data. Compiled once, it matches PyTorch's logits at three lengths.
TEST(OnnxModels, ATinyGptCompilesOnceForEveryLength) {
  const std::string dir = "compiler/frontend/onnx/testdata/models/";
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(ReadFile(dir + "tiny_gpt.onnx"), "tiny_gpt.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::unique_ptr<runtime::vm::VirtualMachine>> vm =
      Loaded(*mod, "llvm", "tiny_gpt");
  ASSERT_TRUE(vm.ok()) << vm.status();
  for (int length : {3, 7, 12}) {
    const std::string stem = dir + "tiny_gpt.seq" + std::to_string(length);
    absl::StatusOr<runtime::Tensor> ids = runtime::ReadNpy(ReadFile(stem + ".input.npy"), stem);
    absl::StatusOr<runtime::Tensor> want = runtime::ReadNpy(ReadFile(stem + ".output.npy"), stem);
    ASSERT_TRUE(ids.ok() && want.ok());
    absl::StatusOr<runtime::Value> got = (*vm)->Invoke("main", {runtime::Value(*ids)});
    ASSERT_TRUE(got.ok()) << "seq " << length << ": " << got.status();
    ASSERT_NE(got->as_tensor(), nullptr);
    ExpectClose(*got->as_tensor(), *want, "tiny_gpt at seq " + std::to_string(length));
  }
}

}  // namespace
}  // namespace kiln::frontend
