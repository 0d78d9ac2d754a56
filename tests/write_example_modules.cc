// Writes example modules as protobuf IR for the CLI end-to-end test:
//   good.pb       SmallRelaxModule (well formed, not yet normalized)
//   illformed.pb  a module with two well-formedness violations (WF1, WF3)
//   mistyped.pb   well formed, but adds a float32 tensor to an int32 one
//   garbage.pb    bytes that are not a module
#include <cstdio>
#include <fstream>
#include <string>

#include "compiler/ir/testing/examples.h"
#include "compiler/wire/ir_proto.h"

namespace {

using namespace kiln::ir::relax;  // NOLINT: a small tool
using kiln::ir::DataType;
using kiln::ir::IRModule;
using kiln::ir::IRModuleBuilder;
using kiln::ir::Make;
using kiln::ir::PrimExpr;

bool Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

IRModule Main(std::vector<Var> params, Expr body) {
  IRModuleBuilder b;
  (void)b.Add(
      MakeGlobalVar("main"),
      MakeFunction(std::move(params), body, nullptr, true,
                   kiln::ir::WithAttr({}, "global_symbol", Make<kiln::ir::StringImmNode>("main"))));
  return b.Build();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_example_modules DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  PrimExpr n = kiln::ir::MakeSizeVar("n");
  Var x = MakeVar("x", TensorSInfo({n}, DataType::Float(32)));
  Var i = MakeVar("i", TensorSInfo({n}, DataType::Int(32)));
  Var lv = MakeDataflowVar("lv", nullptr);
  Var a = MakeVar("a", nullptr), b = MakeVar("b", nullptr), sum = MakeVar("sum", nullptr);
  Expr exp_x = MakeCall(GetOp("relax.exp"), {x});
  IRModule illformed = Main(
      {x},
      MakeSeq({MakeBlock({MakeBinding(lv, exp_x), MakeBinding(a, MakeCall(GetOp("relax.exp"), {b})),
                          MakeBinding(b, exp_x)})},
              a));
  IRModule mistyped = Main(
      {x, i}, MakeSeq({MakeBlock({MakeBinding(sum, MakeCall(GetOp("relax.add"), {x, i}))})}, sum));
  bool ok =
      Write(dir + "/good.pb", kiln::wire::SerializeModule(kiln::ir::testing::SmallRelaxModule())) &&
      Write(dir + "/illformed.pb", kiln::wire::SerializeModule(illformed)) &&
      Write(dir + "/mistyped.pb", kiln::wire::SerializeModule(mistyped)) &&
      Write(dir + "/garbage.pb", "\x08\xff\xff\xff this is not a module");
  return ok ? 0 : 1;
}
