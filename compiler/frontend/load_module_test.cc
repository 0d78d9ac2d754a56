// The front ends' one entry point: every form loads to the same normalized module it stands for,
// and errors name the input and keep the parsers' codes.
#include "compiler/frontend/load_module.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/testing/onnx_builder.h"
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

// ONNX external data (how models over 2 GB keep their weights): an initializer's bytes read from
// the file its entry names beside the model, at its offset, into the same module as the model
// with its weights inside. A name that leaves the model's directory, a short file, a length that
// disagrees with the tensor, and bytes without a file to be beside are refused naming the tensor.
TEST(LoadModuleTest, WeightsInExternalDataFilesBesideTheModel) {
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  testing::GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::FLOAT, {2, 3})
      .Output("y", onnx::TensorProto::FLOAT)
      .Init(testing::FloatTensor("w", {2, 3}, w))
      .Node("Add", {"x", "w"}, {"y"});
  absl::StatusOr<ir::IRModule> inside = ImportOnnx(g.Serialize(), "inside.onnx");
  ASSERT_TRUE(inside.ok()) << inside.status();

  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir = std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / "ext";
  std::filesystem::create_directories(dir / "weights");
  std::string data(8, 'j');  // 8 bytes before the tensor's: its offset
  data.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  std::ofstream(dir / "weights" / "w.bin", std::ios::binary) << data;
  auto write_model = [&](const std::string& name, const std::string& location,
                         const std::string& length) {
    onnx::ModelProto model = g.model();
    onnx::TensorProto* t = model.mutable_graph()->mutable_initializer(0);
    t->clear_float_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", location},
                                     {"offset", "8"},
                                     {"length", length}}) {
      onnx::StringStringEntryProto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    std::ofstream(dir / name, std::ios::binary) << model.SerializeAsString();
    return (dir / name).string();
  };
  const std::string good = write_model("good.onnx", "weights/w.bin", "24");
  absl::StatusOr<ir::IRModule> outside = ParseModuleFile(good);
  ASSERT_TRUE(outside.ok()) << outside.status();
  EXPECT_TRUE(ir::StructuralEqual(*outside, *inside));

  auto refused = [&](const std::string& path, const char* says) {
    absl::StatusOr<ir::IRModule> m = ParseModuleFile(path);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << path << ": " << m.status();
    EXPECT_THAT(m.status().message(), HasSubstr("tensor 'w'")) << m.status();
    EXPECT_THAT(m.status().message(), HasSubstr(says)) << m.status();
  };
  refused(write_model("up.onnx", "../ext/weights/w.bin", "24"), "not a file name relative");
  refused(write_model("absolute.onnx", (dir / "weights" / "w.bin").string(), "24"),
          "not a file name relative");
  refused(write_model("length.onnx", "weights/w.bin", "20"), "24 expected");
  std::ofstream(dir / "weights" / "short.bin", std::ios::binary) << data.substr(0, 20);
  refused(write_model("short.onnx", "weights/short.bin", "24"), "fewer than 24 bytes");
  refused(write_model("missing.onnx", "weights/none.bin", "24"), "cannot open");
  // The same model as bytes alone (a kilnd submit): nothing to read its data from.
  absl::StatusOr<ir::IRModule> bytes_only = ImportOnnx(ReadFile(good), "good.onnx");
  EXPECT_EQ(bytes_only.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes_only.status().message(), HasSubstr("external file"));
}

}  // namespace
}  // namespace kiln::frontend
