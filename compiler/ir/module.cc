#include "compiler/ir/module.h"

#include "absl/strings/str_cat.h"

namespace kiln::ir {

void IRModuleNode::VisitFields(FieldVisitor& v) const {
  v.Visit("attrs", attrs);
  for (const auto& [name, entry] : functions) {
    v.Visit("global", entry.first);
    v.Visit("function", entry.second);
  }
}

relax::GlobalVar IRModuleNode::GetGlobalVar(const std::string& name) const {
  auto it = functions.find(name);
  return it == functions.end() ? nullptr : it->second.first;
}

ObjectRef IRModuleNode::Lookup(const std::string& name) const {
  auto it = functions.find(name);
  return it == functions.end() ? nullptr : it->second.second;
}

IRModuleBuilder::IRModuleBuilder() : node_(std::make_unique<IRModuleNode>()) {}

IRModuleBuilder::IRModuleBuilder(const IRModule& from) : IRModuleBuilder() {
  node_->functions = from->functions;
  node_->attrs = from->attrs;
}

absl::Status IRModuleBuilder::Add(const relax::GlobalVar& gv, ObjectRef func) {
  if (!gv || !func) return absl::InvalidArgumentError("IRModule: null global var or function");
  if (!func.as<relax::FunctionNode>() && !func.as<PrimFuncNode>()) {
    return absl::InvalidArgumentError(absl::StrCat("IRModule: '", gv->name_hint, "' is bound to a ",
                                                   NodeKindName(func->kind()),
                                                   ", not a Function or PrimFunc"));
  }
  if (node_->functions.count(gv->name_hint)) {
    return absl::AlreadyExistsError(
        absl::StrCat("IRModule: function '", gv->name_hint, "' is defined twice"));
  }
  node_->functions[gv->name_hint] = {gv, std::move(func)};
  return absl::OkStatus();
}

void IRModuleBuilder::Update(const relax::GlobalVar& gv, ObjectRef func) {
  node_->functions[gv->name_hint] = {gv, std::move(func)};
}

void IRModuleBuilder::SetAttr(std::string key, ObjectRef value) {
  node_->attrs = WithAttr(std::move(node_->attrs), std::move(key), std::move(value));
}

IRModule IRModuleBuilder::Build() {
  IRModule mod(node_.release());
  node_ = std::make_unique<IRModuleNode>();
  return mod;
}

}  // namespace kiln::ir
