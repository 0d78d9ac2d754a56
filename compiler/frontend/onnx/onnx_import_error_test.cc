// Unsupported and malformed models: each is refused with a status that names what is wrong and
// where (node name, op type, opset), and no input crashes the importer.
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/testing/onnx_builder.h"
#include "compiler/frontend/onnx/testing/op_cases.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using testing::AttrFloat;
using testing::AttrInt;
using testing::FloatTensor;
using testing::GraphBuilder;
using testing::IntTensor;

constexpr int kF = onnx::TensorProto::FLOAT;

absl::Status Import(const GraphBuilder& g) { return ImportOnnx(g.Serialize(), "m.onnx").status(); }

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& fragment) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(OnnxImportError, GarbageBytes) {
  ExpectError(ImportOnnx("this is not a model \x01\x02\xff", "junk.onnx").status(),
              absl::StatusCode::kInvalidArgument, "junk.onnx: not an ONNX model");
  ExpectError(ImportOnnx("", "empty.onnx").status(), absl::StatusCode::kInvalidArgument,
              "not an ONNX model");
}

TEST(OnnxImportError, UnsupportedOperatorNamesNodeTypeAndOpset) {
  GraphBuilder g(13);
  g.Input("x", kF, {2}).Output("y", kF).Node("Relu", {"x"}, {"r"}).Node("Unique", {"r"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kUnimplemented,
              "m.onnx: ONNX node 'Unique_2' (Unique, opset 13): operator Unique is not supported");
}

TEST(OnnxImportError, OtherDomain) {
  GraphBuilder g(13);
  g.Input("x", kF, {2}).Output("y", kF).Node("Relu", {"x"}, {"y"});
  auto model = g.model();
  model.mutable_graph()->mutable_node(0)->set_domain("org.example");
  ExpectError(ImportOnnx(model.SerializeAsString(), "m.onnx").status(),
              absl::StatusCode::kUnimplemented, "domain 'org.example'");
  // ONNX Runtime's domain: its quantized operators are converted, the others named.
  model.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  ExpectError(ImportOnnx(model.SerializeAsString(), "m.onnx").status(),
              absl::StatusCode::kUnimplemented, "operator com.microsoft.Relu is not supported");
}

TEST(OnnxImportError, OpsetOutOfRange) {
  GraphBuilder old(0), future(21);
  old.Input("x", kF, {2}).Output("y", kF).Node("Relu", {"x"}, {"y"});
  future.Input("x", kF, {2}).Output("y", kF).Node("Relu", {"x"}, {"y"});
  ExpectError(Import(old), absl::StatusCode::kUnimplemented, "opset 0 is not supported (1 to 18)");
  ExpectError(Import(future), absl::StatusCode::kUnimplemented, "opset 21 is not supported");
}

// Issue 52, finding 8: opset 2^32 + 13 was read as 13, and two graph outputs could share a name.
TEST(OnnxImportError, OpsetReadWholeAndOutputsNamedOnce) {
  GraphBuilder g(13);
  g.Input("x", kF, {2}).Output("y", kF).Node("Relu", {"x"}, {"y"});
  auto model = g.model();
  model.mutable_opset_import(0)->set_version((int64_t{1} << 32) + 13);
  ExpectError(ImportOnnx(model.SerializeAsString(), "m.onnx").status(),
              absl::StatusCode::kUnimplemented, "opset 4294967309 is not supported (1 to 18)");
  GraphBuilder twice(13);
  twice.Input("x", kF, {2}).Output("y", kF).Output("y", kF).Node("Relu", {"x"}, {"y"});
  ExpectError(Import(twice), absl::StatusCode::kInvalidArgument, "graph output 'y' is named twice");
}

TEST(OnnxImportError, ConstantOfANegativeShape) {
  GraphBuilder g(13);
  g.Output("y", kF)
      .Init(IntTensor("shape", {2}, {-1, 5}))
      .Node("ConstantOfShape", {"shape"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "shape dimension 0 is -1: a dimension is never negative");
}

// Issue 52, finding 4: 783 bytes of ONNX — d0 + d1 + 1 from Shape, squared 24 times, into
// ConstantOfShape — held a worker until its deadline. Each walk over the shape is linear in its
// nodes now, and a dimension written out past 2,000 terms is refused, at once.
TEST(OnnxImportError, ASymbolicDimensionSquaredAgainAndAgain) {
  GraphBuilder g(13);
  g.Input("x", kF, {-1, -1}, {"a", "b"}).Output("y", kF);
  g.Init(IntTensor("i0", {}, {0})).Init(IntTensor("i1", {}, {1})).Init(IntTensor("one", {}, {1}));
  g.Init(IntTensor("axes", {1}, {0}));
  g.Node("Shape", {"x"}, {"s"}).Node("Gather", {"s", "i0"}, {"d0"});
  g.Node("Gather", {"s", "i1"}, {"d1"}).Node("Add", {"d0", "d1"}, {"t"});
  g.Node("Add", {"t", "one"}, {"v0"});
  for (int i = 0; i < 24; ++i) {
    g.Node("Mul", {absl::StrCat("v", i), absl::StrCat("v", i)}, {absl::StrCat("v", i + 1)});
  }
  g.Node("Unsqueeze", {"v24", "axes"}, {"shape"}).Node("ConstantOfShape", {"shape"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "is an expression of more than 2000 terms written out");
}

// Issue 52, finding 8: Pad by 2^62 on both sides wrapped to a dimension of -2^63 + 2.
TEST(OnnxImportError, PadPast2To63) {
  GraphBuilder g(13);
  g.Input("x", kF, {2, 3}).Output("y", kF);
  g.Init(IntTensor("pads", {4}, {0, int64_t{1} << 62, 0, int64_t{1} << 62}));
  g.Node("Pad", {"x", "pads"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "pad_width of axis 1 (4611686018427387904, 4611686018427387904) makes it larger "
              "than 2^63");
}

TEST(OnnxImportError, DanglingInput) {
  GraphBuilder g(13);
  g.Input("x", kF, {2}).Output("y", kF).Node("Add", {"x", "nowhere"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "(Add, opset 13): input 'nowhere' is not a graph input");
}

TEST(OnnxImportError, MissingGraphOutput) {
  GraphBuilder g(13);
  g.Input("x", kF, {2}).Output("z", kF).Node("Relu", {"x"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "graph output 'z' is produced by no node");
}

TEST(OnnxImportError, AttributeOfTheWrongType) {
  GraphBuilder g(13);
  g.Input("x", kF, {2, 3}).Output("y", kF).Node("Softmax", {"x"}, {"y"}, {AttrFloat("axis", 1)});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "(Softmax, opset 13): attribute 'axis' has type FLOAT, expected INT");
}

TEST(OnnxImportError, ShapeMismatchNamesTheNode) {
  GraphBuilder g(13);
  g.Input("a", kF, {3, 4}).Input("b", kF, {5, 6}).Output("y", kF).Node("MatMul", {"a", "b"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "ONNX node 'MatMul_1' (MatMul, opset 13): ");
}

TEST(OnnxImportError, UnsupportedElementType) {
  GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::BFLOAT16, {2}).Output("y", kF).Node("Relu", {"x"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "graph input 'x': tensor element type BFLOAT16 is not supported");
}

TEST(OnnxImportError, ResizeScalesOfTheWrongLength) {
  GraphBuilder g(13);
  g.Input("x", kF, {1, 1, 2, 2}).Input("s", kF, {3}).Output("y", kF);
  g.Node("Resize", {"x", "", "s"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument, "scales must have 4 values");
}

TEST(OnnxImportError, BadInitializer) {
  GraphBuilder g(13);
  onnx::TensorProto t = IntTensor("w", {2, 3}, {1, 2, 3});  // 3 values for 6 elements
  g.Input("x", onnx::TensorProto::INT64, {2, 3}).Output("y", onnx::TensorProto::INT64).Init(t);
  g.Node("Add", {"x", "w"}, {"y"});
  ExpectError(Import(g), absl::StatusCode::kInvalidArgument,
              "initializer tensor 'w': holds 3 values, 6 expected");
}

TEST(OnnxImportError, UnsupportedAttributeValue) {
  GraphBuilder g(13);
  g.Input("x", kF, {1, 1, 4, 4}).Output("y", kF).Init(testing::FloatTensor("s", {4}, {1, 1, 2, 2}));
  g.Node("Resize", {"x", "", "s"}, {"y"}, {testing::AttrString("mode", "area")});
  ExpectError(Import(g), absl::StatusCode::kUnimplemented, "Resize mode \"area\"");
}

// What the importer fuzzer found: each is now a clean error.
TEST(OnnxImportError, FuzzerFindings) {
  GraphBuilder zero_stride(13);
  zero_stride.Input("x", kF, {1, 1, 7, 7}).Output("y", kF);
  zero_stride.Node("MaxPool", {"x"}, {"y"},
                   {testing::AttrInts("kernel_shape", {3, 3}), testing::AttrInts("strides", {2, 0}),
                    testing::AttrString("auto_pad", "SAME_UPPER")});
  ExpectError(Import(zero_stride), absl::StatusCode::kInvalidArgument,
              "(MaxPool, opset 13): kernel_shape, strides and dilations must be >= 1");

  GraphBuilder huge(13);
  onnx::TensorProto t = testing::FloatTensor("w", {1 << 20, 1 << 20, 1 << 20}, {});
  huge.Input("x", kF, {2}).Output("y", kF).Init(t).Node("Add", {"x", "w"}, {"y"});
  ExpectError(Import(huge), absl::StatusCode::kInvalidArgument, "tensor 'w': too many elements");
  // [2^40, 2^40]: the product wraps to 0 in 64 bits; it must still be refused.
  GraphBuilder wraps(13);
  onnx::TensorProto w = testing::FloatTensor("w", {int64_t{1} << 40, int64_t{1} << 40}, {});
  wraps.Input("x", kF, {2}).Output("y", kF).Init(w).Node("Add", {"x", "w"}, {"y"});
  ExpectError(Import(wraps), absl::StatusCode::kInvalidArgument, "tensor 'w': too many elements");

  GraphBuilder zero_dim(13);
  zero_dim.Input("x", kF, {2, 3}).Output("y", kF).Init(IntTensor("s", {2}, {0, -1}));
  zero_dim.Node("Reshape", {"x", "s"}, {"y"}, {AttrInt("allowzero", 1)});
  ExpectError(Import(zero_dim), absl::StatusCode::kInvalidArgument,
              "cannot infer a -1 dimension next to a 0");
}

// A model of a hundred bytes can ask for a constant of any size: what the importer computes
// itself stays within the constant limit, and integer arithmetic it cannot keep small is left to
// run time instead of being expanded element by element.
TEST(OnnxImportError, ConstantsAModelAsksForAreBounded) {
  auto range = [](int64_t limit) {
    GraphBuilder g(13);
    g.Output("y", onnx::TensorProto::INT64)
        .Init(IntTensor("start", {}, {0}))
        .Init(IntTensor("limit", {}, {limit}))
        .Init(IntTensor("delta", {}, {1}));
    g.Node("Range", {"start", "limit", "delta"}, {"y"});
    return g.Serialize();
  };
  // 2^28 int64 elements are 2 GiB: refused before anything is built.
  ExpectError(ImportOnnx(range(int64_t{1} << 28), "m.onnx").status(),
              absl::StatusCode::kResourceExhausted,
              "Range of 268435456 elements (2048 MiB) is larger than the 64 MiB");
  EXPECT_TRUE(ImportOnnx(range(1 << 20), "m.onnx").ok());  // 8 MiB
  ExpectError(ImportOnnx(range(1 << 20), "m.onnx", 1 << 20).status(),
              absl::StatusCode::kResourceExhausted, "larger than the 1 MiB");

  // [1024, 1] + [1, 1024] + [1024, 1, 1]: a billion elements if computed while importing.
  std::vector<int64_t> iota(1024);
  for (int64_t i = 0; i < 1024; ++i) iota[i] = i;
  GraphBuilder g(13);
  g.Output("y", onnx::TensorProto::INT64)
      .Init(IntTensor("a", {1024, 1}, iota))
      .Init(IntTensor("b", {1, 1024}, iota))
      .Init(IntTensor("c", {1024, 1, 1}, iota));
  g.Node("Add", {"a", "b"}, {"ab"}).Node("Add", {"ab", "c"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "m.onnx");
  EXPECT_TRUE(mod.ok()) << mod.status();

  // The index constants of one-hot masks (OneHot's depth, a loss's classes, Trilu's rows) are
  // bounded the same way: a declared dimension costs the model nothing.
  GraphBuilder one_hot(13);
  one_hot.Input("i", onnx::TensorProto::INT64, {3})
      .Output("y", kF)
      .Init(IntTensor("depth", {}, {int64_t{1} << 40}))
      .Init(FloatTensor("values", {2}, {0, 1}));
  one_hot.Node("OneHot", {"i", "depth", "values"}, {"y"});
  ExpectError(Import(one_hot), absl::StatusCode::kResourceExhausted,
              "(OneHot, opset 13): an index constant of 1099511627776 elements is larger than "
              "the 64 MiB");
  GraphBuilder trilu(14);
  trilu.Input("x", kF, {int64_t{1} << 40, 2}).Output("y", kF).Node("Trilu", {"x"}, {"y"});
  ExpectError(Import(trilu), absl::StatusCode::kResourceExhausted, "(Trilu, opset 14): an index");
  GraphBuilder nll(13);
  nll.Input("x", kF, {2, int64_t{1} << 33})
      .Input("t", onnx::TensorProto::INT64, {2})
      .Output("y", kF)
      .Node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"});
  ExpectError(Import(nll), absl::StatusCode::kResourceExhausted,
              "(NegativeLogLikelihoodLoss, opset 13): an index");
}

// Truncations and random byte flips of a real model import or fail; they never crash.
TEST(OnnxImportError, CorruptedModelsNeverCrash) {
  std::ifstream in("tests/models/tiny_resnet.onnx", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string model = bytes.str();
  ASSERT_GT(model.size(), 1000u);
  ASSERT_TRUE(ImportOnnx(model, "tiny_resnet.onnx").ok());
  int failed = 0;
  for (size_t cut : {size_t{10}, model.size() / 3, model.size() - 7}) {
    failed += !ImportOnnx(model.substr(0, cut), "cut.onnx").ok();
  }
  EXPECT_EQ(failed, 3);
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::string mutated = model;
    for (int k = 0; k < 4; ++k) mutated[rng() % mutated.size()] = static_cast<char>(rng());
    absl::StatusOr<ir::IRModule> mod = ImportOnnx(mutated, "mutated.onnx");
    if (!mod.ok()) {
      EXPECT_FALSE(mod.status().message().empty());
    }
  }
}

// Every per-op case with one thing taken away or changed at a time: an input dropped, the input
// list cut short, an attribute removed or given another type, an extra input. Each imports or
// fails with a message; none crashes.
TEST(OnnxImportError, StructuredMutationsNeverCrash) {
  int imported = 0, refused = 0;
  auto check = [&](const onnx::ModelProto& m) {
    absl::StatusOr<ir::IRModule> mod = ImportOnnx(m.SerializeAsString(), "mutant.onnx");
    if (mod.ok()) {
      ++imported;
    } else {
      ++refused;
      EXPECT_FALSE(mod.status().message().empty());
    }
  };
  for (const testing::OpCase& c : testing::AllOpCases()) {
    const onnx::ModelProto& model = c.graph.model();
    for (int n = 0; n < model.graph().node_size(); ++n) {
      const onnx::NodeProto& node = model.graph().node(n);
      for (int i = 0; i < node.input_size(); ++i) {
        onnx::ModelProto m = model;
        m.mutable_graph()->mutable_node(n)->set_input(i, "");
        check(m);
        m = model;
        auto* inputs = m.mutable_graph()->mutable_node(n)->mutable_input();
        inputs->DeleteSubrange(i, inputs->size() - i);
        check(m);
      }
      onnx::ModelProto extra = model;
      extra.mutable_graph()->mutable_node(n)->add_input(node.input_size() > 0 ? node.input(0) : "");
      check(extra);
      for (int a = 0; a < node.attribute_size(); ++a) {
        onnx::ModelProto m = model;
        m.mutable_graph()->mutable_node(n)->mutable_attribute()->DeleteSubrange(a, 1);
        check(m);
        for (int type : {onnx::AttributeProto::INT, onnx::AttributeProto::FLOAT,
                         onnx::AttributeProto::INTS, onnx::AttributeProto::STRING}) {
          m = model;
          m.mutable_graph()->mutable_node(n)->mutable_attribute(a)->set_type(
              static_cast<onnx::AttributeProto::AttributeType>(type));
          check(m);
        }
      }
    }
  }
  EXPECT_GT(imported, 0);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace kiln::frontend
