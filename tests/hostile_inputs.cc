#include "tests/hostile_inputs.h"

#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/testing/onnx_builder.h"
#include "compiler/ir/module.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/tir_expr.h"
#include "compiler/ir/tir_stmt.h"
#include "compiler/wire/ir_proto.h"

namespace kiln::testing {
namespace {

constexpr char kHeader[] = "@I.ir_module\nclass Module:\n";
constexpr char kTensor[] = "R.Tensor((4,), \"float32\")";

std::string PrimFuncOf(const std::string& body) {
  return absl::StrCat(
      kHeader, "    @T.prim_func\n",
      "    def f(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n",
      "        for i in range(4):\n", body);
}

// A module of one PrimFunc `f(A, B)` storing `value(A[0])` into B[0].
std::string StoreProto(const std::function<ir::PrimExpr(const ir::PrimExpr&)>& value) {
  using ir::DataType;
  ir::PrimExpr zero = ir::IntImm(DataType::Int(64), 0);
  ir::Buffer a = ir::MakeBuffer("A", DataType::Float(32), {ir::IntImm(DataType::Int(64), 4)});
  ir::Buffer b = ir::MakeBuffer("B", DataType::Float(32), {ir::IntImm(DataType::Int(64), 4)});
  ir::PrimExpr load =
      ir::Make<ir::BufferLoadNode>(DataType::Float(32), a, std::vector<ir::PrimExpr>{zero});
  auto* f = new ir::PrimFuncNode();
  ir::Var pa = ir::MakeVar("A_handle", DataType::Handle());
  ir::Var pb = ir::MakeVar("B_handle", DataType::Handle());
  f->params = {pa, pb};
  f->buffer_map = {{pa, a}, {pb, b}};
  f->body = ir::Make<ir::BufferStoreNode>(b, value(load), std::vector<ir::PrimExpr>{zero});
  f->attrs = ir::WithAttr({}, "global_symbol", ir::Make<ir::StringImmNode>("f"));
  ir::IRModuleBuilder mb;
  (void)mb.Add(ir::relax::MakeGlobalVar("f"), ir::PrimFunc(f));
  return wire::SerializeModule(mb.Build());
}

std::string Repeat(const std::string& piece, int times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (int k = 0; k < times; ++k) out += piece;
  return out;
}

}  // namespace

std::string TirSumChain(int terms) {
  std::string sum = "A[i]";
  for (int k = 1; k < terms; ++k) sum += " + A[i]";
  return PrimFuncOf(
      absl::StrCat("            with T.block(\"b\"):\n                B[i] = ", sum, "\n"));
}

std::string TirElifChain(int branches) {
  std::string body = "            if A[i] < T.float32(0):\n                B[i] = T.float32(0)\n";
  for (int k = 1; k <= branches; ++k) {
    absl::StrAppend(&body, "            elif A[i] < T.float32(", k, "):\n",
                    "                B[i] = T.float32(", k, ")\n");
  }
  absl::StrAppend(&body, "            else:\n                B[i] = A[i]\n");
  return PrimFuncOf(body);
}

std::string RelaxNestedCalls(int depth) {
  std::string e = "x";
  for (int k = 0; k < depth; ++k) e = absl::StrCat("R.add(", e, ", x)");
  return absl::StrCat(kHeader, "    @R.function\n    def main(x: ", kTensor, "):\n        y = ", e,
                      "\n        return y\n");
}

std::string RelaxParentheses(int depth) {
  return absl::StrCat(kHeader, "    @R.function\n    def main(x: ", kTensor,
                      "):\n        y = ", std::string(depth, '('), "x", std::string(depth, ')'),
                      "\n        return y\n");
}

std::string RelaxBindings(int count) {
  std::string text = absl::StrCat(kHeader, "    @R.function\n    def main(x: ", kTensor,
                                  "):\n        with R.dataflow():\n            v0 = R.add(x, x)\n");
  for (int k = 1; k < count; ++k)
    absl::StrAppend(&text, "            v", k, " = R.add(v", k - 1, ", x)\n");
  absl::StrAppend(&text, "            R.output(v", count - 1, ")\n        return v", count - 1,
                  "\n");
  return text;
}

std::string RelaxFlatTuple(int width) {
  std::string items = "x";
  for (int k = 1; k < width; ++k) items += ", x";
  return absl::StrCat(kHeader, "    @R.function\n    def main(x: ", kTensor, "):\n        y = (",
                      items, ")\n        return y\n");
}

std::string RelaxNestedTupleAccess(int depth) {
  std::string access = "t";
  for (int k = 0; k < depth; ++k) access += "[0]";
  return absl::StrCat(kHeader, "    @R.function\n    def main(x: ", kTensor,
                      "):\n        t = ", std::string(depth, '('), "x", Repeat(",)", depth),
                      "\n        y = ", access, "\n        return y\n");
}

std::string RelaxCallChain(int count) {
  std::string text = kHeader;
  for (int k = 0; k < count; ++k) {
    absl::StrAppend(&text, "    @R.function\n    def ", k == 0 ? "main" : absl::StrCat("f", k),
                    "(x: ", kTensor, ") -> ", kTensor, ":\n");
    if (k + 1 < count) {
      absl::StrAppend(&text, "        cls = Module\n        y = cls.f", k + 1,
                      "(x)\n        return y\n");
    } else {
      absl::StrAppend(&text, "        return x\n");
    }
  }
  return text;
}

std::string TirManyFunctions(int count) {
  std::string text = kHeader;
  for (int k = 0; k < count; ++k) {
    absl::StrAppend(&text, "    @T.prim_func\n    def f", k,
                    "(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n",
                    "        for i in range(4):\n            with T.block(\"b\"):\n",
                    "                B[i] = A[i] + T.float32(", k, ")\n");
  }
  return text;
}

std::string TirBlockAxes(int axes) {
  std::string body = "            with T.block(\"b\"):\n";
  for (int k = 0; k < axes; ++k) {
    absl::StrAppend(&body, "                v", k, " = T.axis.spatial(1, 0)\n");
  }
  absl::StrAppend(&body, "                B[i] = A[i]\n");
  return PrimFuncOf(body);
}

std::string TirOrChain(int terms) {
  std::string cond = "A[i] < T.float32(0)";
  for (int k = 1; k < terms; ++k) absl::StrAppend(&cond, " or A[i] < T.float32(", k, ")");
  return PrimFuncOf(absl::StrCat("            with T.block(\"b\"):\n                if ", cond,
                                 ":\n                    B[i] = A[i]\n"));
}

std::string SharedDagProto(int levels) {
  return StoreProto([levels](const ir::PrimExpr& load) {
    ir::PrimExpr e = load;
    for (int k = 0; k < levels; ++k) e = e + e;
    return e;
  });
}

std::string ChainProto(int depth) {
  return StoreProto([depth](const ir::PrimExpr& load) {
    ir::PrimExpr e = load;
    for (int k = 1; k < depth; ++k) e = e + load;
    return e;
  });
}

std::string MixedTypeAddProto() {
  return StoreProto([](const ir::PrimExpr& load) {
    return ir::Make<ir::BinaryNode>(ir::NodeKind::kAdd, load->dtype, load,
                                    ir::IntImm(ir::DataType::Int(32), 1));
  });
}

std::string FlatTupleProto(int width) {
  std::vector<ir::relax::Expr> fields;
  fields.reserve(width);
  for (int k = 0; k < width; ++k) {
    fields.push_back(ir::Make<ir::relax::PrimValueNode>(ir::IntImm(ir::DataType::Int(64), k)));
  }
  ir::IRModuleBuilder b;
  (void)b.Add(ir::relax::MakeGlobalVar("main"),
              ir::relax::MakeFunction(
                  {}, ir::relax::MakeTuple(std::move(fields)), nullptr, true,
                  ir::WithAttr({}, "global_symbol", ir::Make<ir::StringImmNode>("main"))));
  return wire::SerializeModule(b.Build());
}

std::string HugeRangeOnnx(int64_t elements) {
  frontend::testing::GraphBuilder g(13);
  g.Output("y", 7)  // INT64
      .Init(frontend::testing::IntTensor("start", {}, {0}))
      .Init(frontend::testing::IntTensor("limit", {}, {elements}))
      .Init(frontend::testing::IntTensor("delta", {}, {1}));
  g.Node("Range", {"start", "limit", "delta"}, {"y"});
  return g.Serialize();
}

std::string HighRankOnnx(int rank) {
  frontend::testing::GraphBuilder g(13);
  g.Input("x", 1, std::vector<int64_t>(rank, 1)).Output("y", 1);  // FLOAT
  g.Node("Relu", {"x"}, {"y"});
  return g.Serialize();
}

std::string WideSequenceOnnx(int elements) {
  frontend::testing::GraphBuilder g(13);
  g.Input("x", 1, {4}).Output("y", 1).Init(frontend::testing::IntTensor("zero", {}, {0}));
  g.Node("SequenceConstruct", std::vector<std::string>(elements, "x"), {"s"});
  g.Node("SequenceAt", {"s", "zero"}, {"y"});
  return g.Serialize();
}

std::string WideGraphOnnx(int nodes) {
  frontend::testing::GraphBuilder g(13);
  g.Input("x", 1, {4});
  for (int k = 0; k < nodes; ++k) {
    const std::string c = absl::StrCat("c", k), y = absl::StrCat("y", k);
    g.Init(frontend::testing::FloatTensor(c, {}, {static_cast<float>(k)}));
    g.Node("Add", {"x", c}, {y}).Output(y, 1);
  }
  return g.Serialize();
}

std::string SquaredDimensionOnnx(int times) {
  using frontend::testing::IntTensor;
  frontend::testing::GraphBuilder g(13);
  g.Input("x", 1, {-1, -1}, {"a", "b"}).Output("y", 1);
  g.Init(IntTensor("i0", {}, {0})).Init(IntTensor("i1", {}, {1})).Init(IntTensor("one", {}, {1}));
  g.Init(IntTensor("axes", {1}, {0}));
  g.Node("Shape", {"x"}, {"s"}).Node("Gather", {"s", "i0"}, {"d0"});
  g.Node("Gather", {"s", "i1"}, {"d1"}).Node("Add", {"d0", "d1"}, {"t"});
  g.Node("Add", {"t", "one"}, {"v0"});
  for (int i = 0; i < times; ++i) {
    g.Node("Mul", {absl::StrCat("v", i), absl::StrCat("v", i)}, {absl::StrCat("v", i + 1)});
  }
  g.Node("Unsqueeze", {absl::StrCat("v", times), "axes"}, {"shape"});
  g.Node("ConstantOfShape", {"shape"}, {"y"});
  return g.Serialize();
}

std::string BroadcastBlowupOnnx() {
  std::vector<int64_t> iota(1024);
  for (int64_t i = 0; i < 1024; ++i) iota[i] = i;
  frontend::testing::GraphBuilder g(13);
  g.Output("y", 7)
      .Init(frontend::testing::IntTensor("a", {1024, 1}, iota))
      .Init(frontend::testing::IntTensor("b", {1, 1024}, iota))
      .Init(frontend::testing::IntTensor("c", {1024, 1, 1}, iota));
  g.Node("Add", {"a", "b"}, {"ab"}).Node("Add", {"ab", "c"}, {"y"});
  return g.Serialize();
}

}  // namespace kiln::testing
