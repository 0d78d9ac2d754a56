#include "compiler/relax/op_registry.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "compiler/relax/ops/op_common.h"

namespace kiln::ir::relax {
namespace {

// Built once, on first use, and read-only afterwards: lookups need no lock.
const std::map<std::string, OpInfo, std::less<>>& Registry() {
  static const auto* registry = [] {
    std::vector<OpInfo> ops;
    RegisterBuiltinOps(&ops);
    RegisterTensorOps(&ops);
    ops::RegisterElementwiseOps(&ops);
    ops::RegisterReduceOps(&ops);
    ops::RegisterNNOps(&ops);
    ops::RegisterNormAndImageOps(&ops);
    ops::RegisterManipulateOps(&ops);
    ops::RegisterIndexOps(&ops);
    ops::RegisterQuantizedOps(&ops);
    auto* map = new std::map<std::string, OpInfo, std::less<>>();
    for (OpInfo& op : ops) {
      std::string name = op.name;
      map->emplace(std::move(name), std::move(op));
    }
    return map;
  }();
  return *registry;
}

}  // namespace

const OpInfo* LookupOp(absl::string_view name) {
  const auto& registry = Registry();
  auto it = registry.find(std::string_view(name.data(), name.size()));
  return it == registry.end() ? nullptr : &it->second;
}

std::vector<const OpInfo*> ListOps() {
  std::vector<const OpInfo*> out;
  for (const auto& [name, info] : Registry()) out.push_back(&info);
  return out;
}

absl::StatusOr<StructInfo> InferOpCall(const CallNode& call, const OpInferContext& ctx) {
  const auto* op = call.op.as<OpNode>();
  if (op == nullptr) return absl::InvalidArgumentError("InferOpCall: the callee is not an Op");
  const OpInfo* info = LookupOp(op->name);
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown operator '", op->name, "'"));
  }
  if (info->num_args >= 0 && static_cast<int>(call.args.size()) != info->num_args) {
    return absl::InvalidArgumentError(
        absl::StrCat(op->name, " takes ", info->num_args, " arguments, got ", call.args.size()));
  }
  return info->infer(call, ctx);
}

}  // namespace kiln::ir::relax
