// The TVM-printed corpus (tests/tvm_printed/): modules written in the form Apache TVM 0.20's
// printer gives them (implicit root blocks, T.axis.remap, T.init, B[()], symbolic dimensions
// built from expressions, tir_vars, If and tuples). Each one is a fixed point of `kiln print`,
// compiles, and matches the NumPy references of make_references.py — at three values of each
// symbolic dimension where it has one.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "gtest/gtest.h"
#include "runtime/npy.h"

namespace kiln {
namespace {

using backend::testing::Array;
using backend::testing::FromTensor;

constexpr const char* kDir = "tests/tvm_printed/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

struct Corpus {
  const char* module;
  std::vector<const char*> cases;
};

class TvmPrintedTest : public ::testing::TestWithParam<Corpus> {};

// Every element within 1e-4 x (1 + |reference|); integers exactly.
void ExpectMatches(const runtime::Tensor& got, const std::string& reference_path) {
  absl::StatusOr<runtime::Tensor> want = runtime::ReadNpy(ReadFile(reference_path), reference_path);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got.shape(), want->shape()) << reference_path;
  ASSERT_EQ(got.dtype().code, want->dtype().code) << reference_path;
  Array g = FromTensor(got), w = FromTensor(*want);
  for (int64_t i = 0; i < w.size(); ++i) {
    ASSERT_LE(std::fabs(g.data[i] - w.data[i]), 1e-4 * (1 + std::fabs(w.data[i])))
        << reference_path << " element " << i << ": " << g.data[i] << " against " << w.data[i];
  }
}

TEST_P(TvmPrintedTest, PrintsToAFixedPointCompilesAndMatchesNumPy) {
  const Corpus& c = GetParam();
  std::string path = absl::StrCat(kDir, c.module, ".py");
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(ReadFile(path), path);
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::string printed = script::PrintScript(*mod);
  absl::StatusOr<ir::IRModule> reparsed = script::ParseScript(printed, "printed.py");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << printed;
  EXPECT_EQ(script::PrintScript(*reparsed), printed);

  const auto* main = (*mod)->Lookup("main").as<ir::relax::FunctionNode>();
  ASSERT_NE(main, nullptr);
  for (const char* case_name : c.cases) {
    SCOPED_TRACE(case_name);
    std::string prefix = absl::StrCat(kDir, c.module, ".", case_name, ".");
    std::vector<runtime::Value> inputs;
    for (const ir::relax::Var& p : main->params) {
      std::string file = absl::StrCat(prefix, p->name_hint, ".npy");
      absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(ReadFile(file), file);
      ASSERT_TRUE(t.ok()) << t.status();
      inputs.emplace_back(*t);
    }
    // The printed text, not the file: what TVM would read back is what runs.
    absl::StatusOr<runtime::Value> out = backend::testing::CompileAndRun(printed, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<runtime::Value> outputs = {*out};
    if (const runtime::Tuple* t = out->as_tuple()) outputs = *t;
    for (size_t k = 0; k < outputs.size(); ++k) {
      ASSERT_NE(outputs[k].as_tensor(), nullptr) << "output " << k;
      ExpectMatches(*outputs[k].as_tensor(), absl::StrCat(prefix, "out", k, ".npy"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, TvmPrintedTest,
                         ::testing::Values(Corpus{"conv_block.legalized", {"c0"}},
                                           Corpus{"softmax_scale.legalized", {"c0"}},
                                           Corpus{"attention_dynamic", {"c0", "c1", "c2"}},
                                           Corpus{"reshape_chain_dynamic", {"c0", "c1", "c2"}},
                                           Corpus{"call_tir_tir_vars", {"c0", "c1", "c2"}},
                                           Corpus{"if_tuple", {"c0", "c1"}}),
                         [](const ::testing::TestParamInfo<Corpus>& info) {
                           std::string name = info.param.module;
                           for (char& ch : name) {
                             if (ch == '.') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kiln
