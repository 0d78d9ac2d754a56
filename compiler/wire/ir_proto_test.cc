#include "compiler/wire/ir_proto.h"

#include <random>

#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/testing/examples.h"
#include "compiler/relax/block_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/kiln/v1/ir.pb.h"
#include "runtime/support/large_stack.h"

namespace kiln::wire {
namespace {

using ::testing::HasSubstr;
using namespace ir;  // NOLINT: test brevity

IRModule WithPrimFunc(const std::string& name, PrimFunc f) {
  IRModuleBuilder b;
  EXPECT_TRUE(b.Add(relax::MakeGlobalVar(name), f).ok());
  b.SetAttr("target", Make<StringImmNode>("llvm -mcpu=native"));
  return b.Build();
}

std::vector<std::pair<std::string, IRModule>> Modules() {
  std::vector<std::pair<std::string, IRModule>> out = {
      {"matmul", WithPrimFunc("matmul", testing::MatmulPrimFunc(16, 16, 16))},
      {"every_tir_kind", WithPrimFunc("f", testing::EveryTirKindPrimFunc())},
      {"small_relax", testing::SmallRelaxModule()},
      {"chain", testing::ChainModule(30)},
  };
  absl::StatusOr<IRModule> normalized = relax::NormalizeModule(testing::SmallRelaxModule());
  EXPECT_TRUE(normalized.ok());
  out.push_back({"small_relax_normalized", *normalized});
  return out;
}

TEST(IrProtoTest, RoundTripIsStructurallyEqualAndStable) {
  for (const auto& [name, mod] : Modules()) {
    SCOPED_TRACE(name);
    std::string bytes = SerializeModule(mod);
    absl::StatusOr<IRModule> back = DeserializeModule(bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    absl::Status equal = CheckStructuralEqual(mod, *back);
    EXPECT_TRUE(equal.ok()) << equal;
    EXPECT_EQ(StructuralHash(mod), StructuralHash(*back));
    // Names travel too: the printed text is identical, and so are the bytes the second time.
    EXPECT_EQ(DebugPrint(mod), DebugPrint(*back));
    EXPECT_EQ(SerializeModule(*back), bytes);
  }
}

TEST(IrProtoTest, SharedNodesAreSentOnceAndVariablesKeepIdentity) {
  IRModule chain = testing::ChainModule(200);
  v1::IRModuleProto proto;
  ModuleToProto(chain, &proto);
  // 200 bindings, but the kernel PrimFunc, the op and the output StructInfo's dims are shared.
  EXPECT_LT(proto.nodes_size(), 200 * 8);
  absl::StatusOr<IRModule> back = ModuleFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  const auto* main = (*back)->Lookup("main").as<relax::FunctionNode>();
  const auto* seq = main->body.as<relax::SeqExprNode>();
  // The variable bound by binding 0 is the very object used by binding 1.
  const auto* call = seq->blocks[0]->bindings[1]->value.as<relax::CallNode>();
  const auto* args = call->args[1].as<relax::TupleNode>();
  EXPECT_EQ(args->fields[0].get(), seq->blocks[0]->bindings[0]->var.get());
}

TEST(IrProtoTest, ConstantsTravelAsRawBytes) {
  std::string data(4 * 6, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  relax::Var x = relax::MakeVar(
      "x", relax::TensorSInfo({IntImm(DataType::Int(64), 2), IntImm(DataType::Int(64), 3)},
                              DataType::Float(32)));
  relax::Var y = relax::MakeVar("y", nullptr);
  relax::Expr weight = relax::MakeConstant(DataType::Float(32), {2, 3}, data);
  relax::Function f = relax::MakeFunction(
      {x}, relax::MakeSeq({relax::MakeBlock({relax::MakeBinding(
                              y, relax::MakeCall(relax::GetOp("relax.add"), {x, weight}))})},
                          y));
  IRModuleBuilder b;
  ASSERT_TRUE(b.Add(relax::MakeGlobalVar("main"), f).ok());
  IRModule mod = b.Build();
  v1::IRModuleProto proto;
  ModuleToProto(mod, &proto);
  bool found = false;
  for (const v1::IRNodeProto& node : proto.nodes()) {
    if (node.kind() != "Constant") continue;
    found = true;
    EXPECT_EQ(node.fields(node.fields_size() - 1).bytes_value(), data);
  }
  EXPECT_TRUE(found);
  absl::StatusOr<IRModule> back = ModuleFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(StructuralEqual(mod, *back));
}

// Each malformed input is rejected with a message naming the problem (and the node).
TEST(IrProtoTest, MalformedInputsAreErrors) {
  v1::IRModuleProto good;
  ModuleToProto(testing::SmallRelaxModule(), &good);
  auto expect_error = [&](const v1::IRModuleProto& p, const std::string& text) {
    absl::StatusOr<IRModule> m = ModuleFromProto(p);
    ASSERT_FALSE(m.ok()) << "expected an error with: " << text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(m.status().message(), HasSubstr(text));
  };
  auto find = [&](v1::IRModuleProto& p, const std::string& kind) -> v1::IRNodeProto* {
    for (v1::IRNodeProto& n : *p.mutable_nodes()) {
      if (n.kind() == kind) return &n;
    }
    ADD_FAILURE() << "no " << kind;
    return p.mutable_nodes(0);
  };

  EXPECT_THAT(DeserializeModule("\xff\xff garbage").status().message(),
              HasSubstr("not a serialized IRModuleProto"));
  v1::IRModuleProto p = good;
  p.set_schema_version(99);
  expect_error(p, "schema version 99 is not supported");
  p = good;
  find(p, "Add")->set_kind("Frobnicate");
  expect_error(p, "unknown node kind 'Frobnicate'");
  p = good;
  find(p, "Add")->mutable_fields(1)->set_ref(static_cast<uint64_t>(p.nodes_size()));
  expect_error(p, "which is not earlier");
  p = good;
  find(p, "IntImm")->mutable_fields(0)->set_int_value(3);
  expect_error(p, "(IntImm): field 'dtype' has the wrong type");
  p = good;
  find(p, "IntImm")->mutable_fields()->RemoveLast();
  expect_error(p, "(IntImm): missing field 'value'");
  p = good;
  find(p, "IntImm")->add_fields()->set_int_value(1);
  expect_error(p, "1 unexpected extra fields");
  p = good;
  find(p, "Constant")->mutable_fields()->rbegin()->set_bytes_value("abc");
  expect_error(p, "needs 8 bytes, got 3");
  p = good;
  find(p, "IntImm")->mutable_fields(0)->mutable_dtype()->set_code(17);
  expect_error(p, "invalid dtype (code 17");
  p = good;
  find(p, "FloatImm")->mutable_fields(0)->mutable_dtype()->set_code(0);
  expect_error(p, "a FloatImm must have a float dtype");
  p = good;
  p.set_root(1);
  expect_error(p, "not an IRModule");
  p = good;
  p.set_root(0);
  expect_error(p, "does not name a node");
  p = good;
  find(p, "For")->mutable_fields(3)->set_int_value(9);
  expect_error(p, "for_kind 9 is out of range");
  p = good;
  find(p, "Add")->mutable_fields(1)->set_ref(0);
  expect_error(p, "(Add): field 'a' is required");
  // A Buffer where a PrimExpr belongs.
  p = good;
  {
    int buffer_index = -1;
    for (int i = 0; i < p.nodes_size(); ++i) {
      if (p.nodes(i).kind() == "Buffer") buffer_index = i;
      if (p.nodes(i).kind() == "Add" && buffer_index >= 0) {
        p.mutable_nodes(i)->mutable_fields(1)->set_ref(buffer_index + 1);
        break;
      }
    }
  }
  expect_error(p, "refers to a Buffer");
  // Two functions under one name.
  p = good;
  {
    v1::IRNodeProto* mod = p.mutable_nodes(p.nodes_size() - 1);
    *mod->add_fields() = mod->fields(1);
    *mod->add_fields() = mod->fields(2);
  }
  expect_error(p, "(IRModule):");
}

// A module whose main returns the integer `value`.
IRModule Returning(const PrimExpr& value) {
  IRModuleBuilder b;
  EXPECT_TRUE(b.Add(relax::MakeGlobalVar("main"),
                    relax::MakeFunction({}, Make<relax::PrimValueNode>(value)))
                  .ok());
  return b.Build();
}

// A node table can describe in a few dozen nodes an expression of 2^60 nodes (each node using the
// one before twice): decoding refuses it at once instead of leaving every walk to expand it.
TEST(IrProtoTest, SharingThatExpandsExponentiallyIsRefused) {
  PrimExpr e = MakeVar("x");
  for (int level = 0; level < 60; ++level) e = e + e;
  std::string bytes = SerializeModule(Returning(e));
  EXPECT_LT(bytes.size(), 4000u);
  absl::StatusOr<IRModule> m = DeserializeModule(bytes);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("(Add): stands for more than 16777216 nodes once the sub-expressions it "
                        "shares are written out"));
  // Twenty levels (a million nodes written out) are fine.
  e = MakeVar("x");
  for (int level = 0; level < 20; ++level) e = e + e;
  EXPECT_TRUE(DeserializeModule(SerializeModule(Returning(e))).ok());
}

// Nesting is bounded by ir::kMaxNestingDepth, as in the text form.
TEST(IrProtoTest, NestingPastTheLimitIsRefused) {
  runtime::RunWithStack(runtime::kCompilerStackBytes, [] {
    auto chain = [](int depth) {
      PrimExpr e = MakeVar("x");
      for (int level = 1; level < depth; ++level) e = e + 1;
      return SerializeModule(Returning(e));
    };
    absl::StatusOr<IRModule> deep = DeserializeModule(chain(kMaxNestingDepth + 100));
    EXPECT_FALSE(deep.ok());
    EXPECT_THAT(deep.status().message(), HasSubstr("nested more than 20000 levels deep"));
    absl::StatusOr<IRModule> ok = DeserializeModule(chain(kMaxNestingDepth - 100));
    EXPECT_TRUE(ok.ok()) << ok.status();
    if (ok.ok()) {
      EXPECT_NE(StructuralHash(*ok), 0u);
    }
    return 0;
  });
}

// Random corruption of a valid serialization: every result is a module or an error.
TEST(IrProtoTest, CorruptedBytesNeverCrash) {
  std::string good = SerializeModule(testing::SmallRelaxModule());
  std::mt19937 rng(1234);
  int decoded = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    if (trial % 7 == 0) bytes.resize(rng() % bytes.size());
    absl::StatusOr<IRModule> m = DeserializeModule(bytes);
    if (m.ok()) {
      ++decoded;
      (void)DebugPrint(*m);
      (void)StructuralHash(*m);
    }
  }
  EXPECT_LT(decoded, 3000);  // most corruptions are detected
}

}  // namespace
}  // namespace kiln::wire
