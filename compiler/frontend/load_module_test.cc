// The front ends' one entry point: every form loads to the same normalized module it stands for,
// and errors name the input and keep the parsers' codes.
#include "compiler/frontend/load_module.h"

#include <fstream>
#include <sstream>

#include "compiler/ir/structural.h"
#include "compiler/wire/ir_proto.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(LoadModuleTest, FormsFollowFileNames) {
  EXPECT_EQ(*FormFromPath("a/b.py"), SourceForm::kTvmScript);
  EXPECT_EQ(*FormFromPath("m.pb"), SourceForm::kIrProto);
  EXPECT_EQ(*FormFromPath("m.onnx"), SourceForm::kOnnx);
  EXPECT_EQ(FormFromPath("m.txt").status().code(), absl::StatusCode::kUnimplemented);
}

TEST(LoadModuleTest, ScriptAndItsProtobufFormLoadEqual) {
  std::string text = ReadFile("compiler/script/testdata/tvm_mlp.py");
  absl::StatusOr<ir::IRModule> from_script = LoadModule(SourceForm::kTvmScript, text, "mlp.py");
  ASSERT_TRUE(from_script.ok()) << from_script.status();
  std::string bytes = wire::SerializeModule(*from_script);
  absl::StatusOr<ir::IRModule> from_proto = LoadModule(SourceForm::kIrProto, bytes, "mlp.pb");
  ASSERT_TRUE(from_proto.ok()) << from_proto.status();
  EXPECT_TRUE(ir::StructuralEqual(*from_script, *from_proto));
}

TEST(LoadModuleTest, OnnxFileLoads) {
  absl::StatusOr<ir::IRModule> parsed = ParseModuleFile("tests/models/tiny_resnet.onnx");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<ir::IRModule> loaded =
      LoadModule(SourceForm::kOnnx, ReadFile("tests/models/tiny_resnet.onnx"), "cnn.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->Lookup("main").defined());
}

TEST(LoadModuleTest, ErrorsNameTheInput) {
  absl::StatusOr<ir::IRModule> bad =
      LoadModule(SourceForm::kTvmScript, "@I.ir_module\nclass M:\n  x = (\n", "broken.py");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("broken.py:"));

  absl::StatusOr<ir::IRModule> garbage = LoadModule(SourceForm::kIrProto, "\x01\x02xyz", "m.pb");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(garbage.status().message(), HasSubstr("m.pb: "));

  absl::StatusOr<ir::IRModule> onnx = LoadModule(SourceForm::kOnnx, "not a model", "x.onnx");
  ASSERT_FALSE(onnx.ok());
  EXPECT_THAT(onnx.status().message(), HasSubstr("x.onnx"));

  EXPECT_EQ(ParseModuleFile("no/such/file.py").status().code(), absl::StatusCode::kNotFound);
}

// A tensor of constant shape whose bytes cannot be counted in 64 bits is refused when loaded, as
// a parameter or as what an operator would make, naming the variable.
TEST(LoadModuleTest, TensorsThatCannotExistAreRefused) {
  const char* param = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1099511627776, 1099511627776), "float32")):
        return x
)";
  absl::StatusOr<ir::IRModule> m = LoadModule(SourceForm::kTvmScript, param, "param.py");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(),
              HasSubstr("param.py: in function 'main': 'x' is a R.Tensor((1099511627776, "
                        "1099511627776)"));
  EXPECT_THAT(m.status().message(), HasSubstr("more than 2^63 bytes"));
  // Nor one with a negative dimension (issue 52: a shape computed past 2^63 wraps negative).
  const char* negative = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((-1, 5), "float32")):
        return x
)";
  m = LoadModule(SourceForm::kTvmScript, negative, "negative.py");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("'x' is a R.Tensor((-1, 5), \"float32\"), a negative "
                                              "dimension"));
  const char* made = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        y = R.broadcast_to(x, R.shape([4611686018427387904, 4]))
        return y
)";
  m = LoadModule(SourceForm::kTvmScript, made, "made.py");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("'y' is a R.Tensor((4611686018427387904, 4)"));
  // 2^40 x 2^20 float32 is 4 PiB, which can be counted: left to the memory of the board.
  const char* big = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1099511627776, 1048576), "float32")):
        return x
)";
  EXPECT_TRUE(LoadModule(SourceForm::kTvmScript, big, "big.py").ok());
}

}  // namespace
}  // namespace kiln::frontend
