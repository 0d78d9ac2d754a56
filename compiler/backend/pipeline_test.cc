// The build pipeline as a whole: dumps, timing, the order of its passes, and verification after
// every pass over the shared models. Each pass has its own test beside it.
#include "compiler/backend/pipeline.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/frontend/load_module.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/script/script_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::backend {
namespace {

namespace relax = ir::relax;
using ::testing::HasSubstr;

ir::IRModule Parse(const std::string& text) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "test.py");
  EXPECT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> normalized = relax::NormalizeModule(*mod);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return *normalized;
}

TEST(PipelineTest, DumpsAfterTheNamedPassesInOrder) {
  BuildOptions options;
  options.dump_after = {"LegalizeOps", "FuseOps", "VMCodegen", "LLVM", "Link"};
  std::vector<std::string> seen;
  std::map<std::string, std::string> text_after;
  options.dump = [&](const std::string& pass, const std::string& text) {
    seen.push_back(pass);
    text_after[pass] = text;
  };
  absl::StatusOr<BuiltModule> built = Build(Parse(relax::testing::MlpScript("n")), "llvm", options);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_THAT(seen, ::testing::ElementsAre("LegalizeOps", "FuseOps", "VMCodegen", "LLVM", "Link"));
  const std::string& after_fuse = text_after["FuseOps"];
  EXPECT_THAT(after_fuse, HasSubstr("def fused_matmul_add_relu_multiply_exp("));
  // Code generation dumps what it made: the executable, the LLVM IR, the library.
  EXPECT_THAT(text_after["VMCodegen"], HasSubstr("fused_matmul_add_relu_multiply_exp"));
  EXPECT_THAT(text_after["LLVM"], HasSubstr("define "));
  EXPECT_THAT(text_after["Link"],
              HasSubstr(absl::StrCat("kernel library: ", built->kernels.size(), " bytes")));
  // The round trip: what a dump shows parses back.
  EXPECT_TRUE(script::ParseScript(after_fuse, "dump.py").ok());
}

TEST(PipelineTest, UnknownPassNamesAreRefusedWithTheList) {
  BuildOptions options;
  options.dump_after = {"FuseTIR"};
  absl::StatusOr<BuiltModule> built = Build(Parse(relax::testing::MlpScript("n")), "llvm", options);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("no pass is called 'FuseTIR'"));
  EXPECT_THAT(
      built.status().message(),
      HasSubstr("CanonicalizeBindings, FallbackInt8Ops, ConvertConvLayout, PackConstantWeights, "
                "LegalizeOps"));
}

TEST(PipelineTest, EveryPassAndCodeGenerationStepIsTimedInOrder) {
  pass::PassTimer timer;
  BuildOptions options;
  options.timer = &timer;
  ASSERT_TRUE(Build(Parse(relax::testing::MlpScript("n")), "llvm", options).ok());
  std::vector<std::string> steps;
  for (const auto& e : timer.entries()) steps.push_back(e.pass);
  EXPECT_THAT(steps, ::testing::ElementsAre(
                         "CanonicalizeBindings", "FallbackInt8Ops", "ConvertConvLayout",
                         "PackConstantWeights", "LegalizeOps", "FoldConstant",
                         "DeadCodeElimination", "FuseOps", "DeadCodeElimination", "DefaultSchedule",
                         "ToNonDataflow", "CallTIRRewrite", "StaticPlanBlockMemory", "VMCodegen",
                         "LowerInitBlock", "ConvertBlocksToLoops", "Simplify", "CompactAllocations",
                         "FlattenBuffers", "VectorizeLoops", "Simplify", "LLVM", "Link"));
  EXPECT_THAT(timer.Report(), HasSubstr("total"));
}

TEST(PipelineTest, ThePipelineIsInAnOrderItsPassesAccept) {
  EXPECT_TRUE(pass::PassContext::CheckOrder(Pipeline({})).ok());
  BuildOptions unfused;
  unfused.fuse = false;
  unfused.fold_constants = false;
  EXPECT_TRUE(pass::PassContext::CheckOrder(Pipeline(unfused)).ok());
}

// Verification after every pass over every shared model: the well-formedness checker finds no
// pass that breaks the IR.
class VerifiedPipelineTest : public ::testing::TestWithParam<const char*> {};

TEST_P(VerifiedPipelineTest, NoPassBreaksTheIR) {
  absl::StatusOr<frontend::SourceForm> form = frontend::FormFromPath(GetParam());
  ASSERT_TRUE(form.ok());
  std::ifstream in(GetParam(), std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<ir::IRModule> mod = frontend::LoadModule(*form, bytes.str(), GetParam());
  ASSERT_TRUE(mod.ok()) << mod.status();
  BuildOptions options;
  options.verify = true;
  absl::StatusOr<BuiltModule> built = Build(*mod, "llvm", options);
  EXPECT_TRUE(built.ok()) << built.status();
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, VerifiedPipelineTest,
    ::testing::Values("compiler/script/testdata/tvm_mlp.py", "tests/models/mlp_784_128_10.onnx",
                      "tests/models/mlp_dynamic_batch.onnx", "tests/models/mobilenet_v2.onnx",
                      "tests/models/tiny_encoder_gelu.onnx",
                      "tests/models/tiny_encoder_opset17.onnx", "tests/models/tiny_resnet.onnx"));

}  // namespace
}  // namespace kiln::backend
