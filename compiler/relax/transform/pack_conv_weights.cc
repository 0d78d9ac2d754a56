// PackConvWeights (transform.h).
#include <string>

#include "absl/strings/str_cat.h"

#include "compiler/ir/relax_functor.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/transform/transform.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

// Output channels per weight block: one AVX-512 vector of float32.
constexpr int64_t kBlock = 16;

std::string StringAttrOr(const Attrs& attrs, const char* key, const std::string& fallback) {
  ObjectRef v = GetAttr(attrs, key);
  const auto* s = v ? v.as<ir::StringImmNode>() : nullptr;
  return s ? s->value : fallback;
}

// A float32 weight [O, I, H, W] with O a multiple of kBlock, as [O / kBlock, I, H, W, kBlock].
Expr PackedWeight(const ConstantNode& w) {
  const int64_t o = w.shape[0], rest = w.shape[1] * w.shape[2] * w.shape[3];
  std::string bytes(w.bytes->size(), '\0');
  const auto* src = reinterpret_cast<const float*>(w.bytes->data());
  auto* dst = reinterpret_cast<float*>(bytes.data());
  for (int64_t oc = 0; oc < o; ++oc) {
    for (int64_t r = 0; r < rest; ++r)
      dst[((oc / kBlock) * rest + r) * kBlock + oc % kBlock] = src[oc * rest + r];
  }
  return MakeConstant(w.dtype, {o / kBlock, w.shape[1], w.shape[2], w.shape[3], kBlock},
                      std::move(bytes));
}

class WeightPacker : public ExprMutator {
 public:
  Expr VisitExpr(const Expr& e) override {
    Expr visited = DefaultVisitExpr(e);
    const auto* call = visited.as<CallNode>();
    const auto* op = call != nullptr ? call->op.as<OpNode>() : nullptr;
    if (op == nullptr || op->name != "relax.nn.conv2d" || call->args.size() != 2) return visited;
    const auto* w = call->args[1].as<ConstantNode>();
    if (w == nullptr || w->dtype != DataType::Float(32) || w->shape.size() != 4 ||
        w->shape[0] % kBlock != 0 ||
        static_cast<int64_t>(w->bytes->size()) !=
            w->shape[0] * w->shape[1] * w->shape[2] * w->shape[3] * 4) {
      return visited;
    }
    ObjectRef groups = GetAttr(call->attrs, "groups");
    PrimExpr g = groups && groups.as<PrimExprNode>() ? groups.as_ref<PrimExprNode>() : PrimExpr();
    if ((groups && (!g || AsConstInt(g) == nullptr || *AsConstInt(g) != 1)) ||
        StringAttrOr(call->attrs, "data_layout", "NCHW") != "NCHW" ||
        StringAttrOr(call->attrs, "kernel_layout", "OIHW") != "OIHW") {
      return visited;
    }
    Attrs attrs = WithAttr(call->attrs, "kernel_layout",
                           Make<ir::StringImmNode>(absl::StrCat("OIHW", kBlock, "o")));
    return MakeCall(call->op, {call->args[0], PackedWeight(*w)}, call->sinfo_args, attrs);
  }
};

}  // namespace

absl::StatusOr<IRModule> PackConvWeights(const IRModule& mod) {
  IRModuleBuilder out(mod);
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<FunctionNode>();
    if (f == nullptr) continue;
    Expr body = WeightPacker().VisitExpr(f->body);
    out.Update(entry.first,
               MakeFunction(f->params, body, f->ret_struct_info, f->is_pure, f->attrs));
  }
  return NormalizeModule(out.Build());
}

}  // namespace kiln::ir::relax
