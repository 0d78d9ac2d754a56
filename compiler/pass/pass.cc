#include "compiler/pass/pass.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::pass {
namespace {

class ModulePass : public Pass {
 public:
  ModulePass(PassInfo info, ModuleFn fn) : Pass(std::move(info)), fn_(std::move(fn)) {}
  absl::StatusOr<ir::IRModule> Run(const ir::IRModule& mod) const override { return fn_(mod); }

 private:
  ModuleFn fn_;
};

class PrimFuncPass : public Pass {
 public:
  PrimFuncPass(PassInfo info, PrimFuncFn fn) : Pass(std::move(info)), fn_(std::move(fn)) {}
  absl::StatusOr<ir::IRModule> Run(const ir::IRModule& mod) const override {
    ir::IRModuleBuilder out(mod);
    for (const auto& [name, entry] : mod->functions) {
      auto f = entry.second.as_ref<ir::PrimFuncNode>();
      if (!f) continue;
      absl::StatusOr<ir::PrimFunc> next = fn_(f);
      if (!next.ok()) {
        return absl::Status(next.status().code(),
                            absl::StrCat("PrimFunc '", name, "': ", next.status().message()));
      }
      if (!next->same_as(f)) out.Update(entry.first, *next);
    }
    return out.Build();
  }

 private:
  PrimFuncFn fn_;
};

}  // namespace

PassPtr MakeModulePass(std::string name, ModuleFn fn, std::vector<std::string> required,
                       IRLevel level) {
  return std::make_shared<ModulePass>(PassInfo{std::move(name), level, std::move(required), {}},
                                      std::move(fn));
}

PassPtr MakeModulePass(PassInfo info, ModuleFn fn) {
  return std::make_shared<ModulePass>(std::move(info), std::move(fn));
}

PassPtr MakePrimFuncPass(std::string name, PrimFuncFn fn, std::vector<std::string> required) {
  return std::make_shared<PrimFuncPass>(
      PassInfo{std::move(name), IRLevel::kPrimFunc, std::move(required), {}}, std::move(fn));
}

void PassContext::AddInstrument(std::shared_ptr<PassInstrument> instrument) {
  instruments_.push_back(std::move(instrument));
}

absl::Status PassContext::CheckOrder(const std::vector<PassPtr>& passes) {
  std::vector<std::string> done;
  for (const PassPtr& p : passes) {
    for (const std::string& r : p->info().required) {
      if (std::find(done.begin(), done.end(), r) == done.end()) {
        return absl::InternalError(
            absl::StrCat("pass pipeline: ", p->name(), " requires ", r, " to run before it"));
      }
    }
    done.push_back(p->name());
  }
  return absl::OkStatus();
}

absl::StatusOr<ir::IRModule> PassContext::Run(const ir::IRModule& mod,
                                              const std::vector<PassPtr>& passes) const {
  if (check_requirements_) {
    if (absl::Status s = CheckOrder(passes); !s.ok()) return s;
  }
  ir::IRModule current = mod;
  for (const PassPtr& p : passes) {
    for (const auto& instrument : instruments_) instrument->BeforePass(p->info(), current);
    absl::StatusOr<ir::IRModule> next = p->Run(current);
    if (!next.ok()) {
      return absl::Status(next.status().code(),
                          absl::StrCat(p->name(), ": ", next.status().message()));
    }
    current = *std::move(next);
    for (const auto& instrument : instruments_) {
      if (absl::Status s = instrument->AfterPass(p->info(), current); !s.ok()) return s;
    }
  }
  return current;
}

}  // namespace kiln::pass
