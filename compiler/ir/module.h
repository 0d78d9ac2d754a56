// IRModule: the unit every compiler step maps to a new one. Global functions — Relax Functions
// and TIR PrimFuncs side by side — keyed by name, plus module attributes.
#ifndef KILN_COMPILER_IR_MODULE_H_
#define KILN_COMPILER_IR_MODULE_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/tir_stmt.h"

namespace kiln::ir {

class IRModuleNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kIRModule; }
  IRModuleNode() : Object(NodeKind::kIRModule) {}
  void VisitFields(FieldVisitor& v) const override;

  // name -> (the GlobalVar, a relax::Function or a PrimFunc). Ordered by name, so printing,
  // hashing and iteration are deterministic.
  std::map<std::string, std::pair<relax::GlobalVar, ObjectRef>> functions;
  Attrs attrs;

  relax::GlobalVar GetGlobalVar(const std::string& name) const;
  ObjectRef Lookup(const std::string& name) const;
};
using IRModule = Ref<IRModuleNode>;

// A module builder: modules are immutable once wrapped in IRModule.
class IRModuleBuilder {
 public:
  IRModuleBuilder();
  explicit IRModuleBuilder(const IRModule& from);  // starts from a copy of `from`
  // Adds `func` (relax::Function or PrimFunc) under `gv`'s name. Fails on a duplicate name or a
  // value that is not a function.
  absl::Status Add(const relax::GlobalVar& gv, ObjectRef func);
  // Adds or replaces.
  void Update(const relax::GlobalVar& gv, ObjectRef func);
  void SetAttr(std::string key, ObjectRef value);
  IRModule Build();

 private:
  std::unique_ptr<IRModuleNode> node_;
};

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_MODULE_H_
