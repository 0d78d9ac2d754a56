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

}  // namespace
}  // namespace kiln::frontend
