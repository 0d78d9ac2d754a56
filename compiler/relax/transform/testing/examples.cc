#include "compiler/relax/transform/testing/examples.h"

#include "absl/strings/str_cat.h"

namespace kiln::ir::relax::testing {

std::vector<Binding> Bindings(const IRModule& mod, const std::string& name) {
  std::vector<Binding> out;
  const auto* f = mod->Lookup(name).as<FunctionNode>();
  if (f == nullptr) return out;
  for (const BindingBlock& b : f->body.as<SeqExprNode>()->blocks)
    out.insert(out.end(), b->bindings.begin(), b->bindings.end());
  return out;
}

std::vector<std::string> KernelCalls(const IRModule& mod) {
  std::vector<std::string> names;
  for (const Binding& b : Bindings(mod, "main")) {
    const auto* call = b->value.as<CallNode>();
    if (call == nullptr || !call->op.as<OpNode>() ||
        call->op.as<OpNode>()->name != "relax.call_tir") {
      continue;
    }
    names.push_back(call->args[0].as<GlobalVarNode>()->name_hint);
  }
  return names;
}

std::string MlpScript(const std::string& n) {
  return absl::StrCat(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((")",
                      n, R"(", 16), dtype="float32"), w: R.Tensor((16, 32), dtype="float32"),
             b: R.Tensor((32,), dtype="float32")):
        with R.dataflow():
            m = R.matmul(x, w)
            a = R.add(m, b)
            r = R.nn.relu(a)
            e = R.exp(R.multiply(r, R.const(0.5, "float32")))
            s = R.nn.softmax(e, axis=-1)
            gv = R.multiply(s, s)
            R.output(gv)
        return gv
)");
}

const char kKernelChain[] = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def neg(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("neg"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] * T.float32(-1)

    @R.function
    def main(x: R.Tensor((64,), dtype="float32")) -> R.Tensor((64,), dtype="float32"):
        cls = Module
        a = R.call_tir(cls.neg, (x,), out_sinfo=R.Tensor((64,), dtype="float32"))
        b = R.call_tir(cls.neg, (a,), out_sinfo=R.Tensor((64,), dtype="float32"))
        c = R.call_tir(cls.neg, (b,), out_sinfo=R.Tensor((64,), dtype="float32"))
        gv = R.call_tir(cls.neg, (c,), out_sinfo=R.Tensor((64,), dtype="float32"))
        return gv
)";

}  // namespace kiln::ir::relax::testing
