// Every per-operator case (testing/op_cases.cc) imported, compiled for the host and run, its
// outputs compared with ONNX Runtime's (testdata/ops/, written by tools/onnx_goldens.sh).
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/backend/testing/model_test_util.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/testing/op_cases.h"
#include "gtest/gtest.h"
#include "runtime/npy.h"

namespace kiln::frontend {
namespace {

using backend::testing::CompileModuleAndRun;
using backend::testing::FromTensor;

const char kTestdata[] = "compiler/frontend/onnx/testdata/ops/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class OnnxOpTest : public ::testing::TestWithParam<testing::OpCase> {};

TEST_P(OnnxOpTest, MatchesOnnxRuntime) {
  const testing::OpCase& c = GetParam();
  std::string stem = std::string(kTestdata) + c.name;
  // The committed references belong to exactly this graph and these inputs.
  std::string model = c.graph.Serialize();
  ASSERT_EQ(ReadFile(stem + ".onnx"), model)
      << c.name << " changed since its reference was made: run tools/onnx_goldens.sh";
  std::vector<runtime::Value> inputs;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    absl::StatusOr<std::string> npy = runtime::WriteNpy(c.inputs[k]);
    ASSERT_TRUE(npy.ok());
    ASSERT_EQ(ReadFile(stem + ".input_" + std::to_string(k) + ".npy"), *npy)
        << c.name << " input " << k << " changed: run tools/onnx_goldens.sh";
    inputs.emplace_back(c.inputs[k]);
  }

  absl::StatusOr<ir::IRModule> mod = ImportOnnx(model, c.name + ".onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<runtime::Value> result = CompileModuleAndRun(*mod, inputs);
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<runtime::Tensor> outputs;
  if (const auto* tuple = result->as_tuple()) {
    for (const runtime::Value& v : *tuple) outputs.push_back(*v.as_tensor());
  } else {
    outputs.push_back(*result->as_tensor());
  }
  ASSERT_EQ(outputs.size(), static_cast<size_t>(c.graph.model().graph().output_size()));
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string path = stem + ".output_" + std::to_string(k) + ".npy";
    absl::StatusOr<runtime::Tensor> expected = runtime::ReadNpy(ReadFile(path), path);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_EQ(runtime::DataTypeToString(outputs[k].dtype()),
              runtime::DataTypeToString(expected->dtype()))
        << "output " << k;
    backend::testing::Array got = FromTensor(outputs[k]);
    backend::testing::Array want = FromTensor(*expected);
    ASSERT_EQ(got.shape, want.shape) << "output " << k;
    // Integers exactly; 8-bit quantized values within one step (a tie rounded after another
    // order of float operations).
    const bool exact = expected->dtype().code != kDLFloat;
    const bool quantized = exact && expected->dtype().bits == 8;
    for (int64_t i = 0; i < want.size(); ++i) {
      double tol = quantized ? 1 : exact ? 0 : 1e-4 + 1e-4 * std::abs(want.data[i]);
      ASSERT_NEAR(got.data[i], want.data[i], tol) << "output " << k << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OnnxOpTest, ::testing::ValuesIn(testing::AllOpCases()),
                         [](const ::testing::TestParamInfo<testing::OpCase>& info) {
                           return info.param.name;
                         });

// Every operator the issue names has at least one case here.
TEST(OnnxOpCoverage, EveryListedOperatorHasACase) {
  std::set<std::string> covered;
  for (const testing::OpCase& c : testing::AllOpCases()) {
    for (const auto& node : c.graph.model().graph().node()) covered.insert(node.op_type());
  }
  for (const char* op : {"Conv",
                         "Gemm",
                         "MatMul",
                         "Add",
                         "Sub",
                         "Mul",
                         "Div",
                         "Pow",
                         "Sqrt",
                         "Neg",
                         "Exp",
                         "Log",
                         "Erf",
                         "Tanh",
                         "Sigmoid",
                         "Relu",
                         "LeakyRelu",
                         "Clip",
                         "HardSigmoid",
                         "HardSwish",
                         "Softmax",
                         "LogSoftmax",
                         "LayerNormalization",
                         "BatchNormalization",
                         "InstanceNormalization",
                         "MaxPool",
                         "AveragePool",
                         "GlobalAveragePool",
                         "Flatten",
                         "Reshape",
                         "Transpose",
                         "Concat",
                         "Split",
                         "Slice",
                         "Gather",
                         "Unsqueeze",
                         "Squeeze",
                         "Expand",
                         "Shape",
                         "Constant",
                         "ConstantOfShape",
                         "Cast",
                         "Where",
                         "Equal",
                         "Less",
                         "Greater",
                         "Not",
                         "ReduceMean",
                         "ReduceSum",
                         "ReduceMax",
                         "ReduceMin",
                         "ArgMax",
                         "Identity",
                         "Dropout",
                         "Pad",
                         "Resize",
                         "Tile",
                         "Range",
                         "Min",
                         "Max",
                         "Einsum"}) {
    EXPECT_TRUE(covered.count(op)) << op << " has no per-op case";
  }
}

}  // namespace
}  // namespace kiln::frontend
