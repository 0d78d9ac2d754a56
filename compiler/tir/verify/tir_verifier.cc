#include "compiler/tir/verify/tir_verifier.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/tir/verify/verify_prim_func.h"

namespace kiln::tir {

absl::Status TirVerifier::AfterPass(const pass::PassInfo& pass, const ir::IRModule& mod) {
  if (pass.level == pass::IRLevel::kNone) return absl::OkStatus();  // no IR changed
  std::vector<std::string> found;
  std::map<std::string, ir::ObjectRef> now;
  for (const auto& [name, entry] : mod->functions) {
    const ir::ObjectRef& func = entry.second;
    if (func.as<ir::PrimFuncNode>() == nullptr) continue;
    now[name] = func;
    auto last = last_.find(name);
    if (last != last_.end() && last->second == func) continue;  // unchanged: verified before
    ++verified_;
    for (const TirViolation& v : FindTirViolations(name, func.as_ref<ir::PrimFuncNode>())) {
      found.push_back(v.ToString());
    }
  }
  last_ = std::move(now);
  if (found.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("the TIR is not valid after pass ", pass.name, ":\n",
                                          absl::StrJoin(found, "\n")));
}

}  // namespace kiln::tir
