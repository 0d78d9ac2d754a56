#include "compiler/tune/task.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"

namespace kiln::tune {
namespace {

// Counts the references to each global function from Relax function bodies: a call_tir names
// its kernel once per call site.
class CallSiteCounter : public ir::relax::ExprVisitor {
 public:
  void VisitExpr(const ir::relax::Expr& e) override {
    if (const auto* gv = e.as<ir::relax::GlobalVarNode>()) ++counts[gv->name_hint];
    DefaultVisitExpr(e);
  }
  std::map<std::string, int> counts;
};

}  // namespace

std::string WorkloadKey(const ir::PrimFunc& func) {
  return absl::StrFormat("%016x", ir::StructuralHash(func));
}

std::string FamilyKey(const ir::PrimFunc& func) {
  return absl::StrFormat("%016x", ir::StructuralHashIgnoringConstants(func));
}

absl::StatusOr<std::string> TuningTarget(const std::string& target) {
  absl::StatusOr<codegen::LlvmTargetInfo> info = codegen::ParseTarget(target);
  if (!info.ok()) return info.status();
  // The features too: "llvm" on a host LLVM calls "generic" is that CPU's detected features.
  return absl::StrCat("llvm -mtriple=", info->triple, " -mcpu=", info->cpu,
                      info->features.empty() ? "" : " -mattr=", info->features);
}

absl::StatusOr<std::string> IsaClass(const std::string& target) {
  absl::StatusOr<codegen::LlvmTargetInfo> info = codegen::ParseTarget(target);
  if (!info.ok()) return info.status();
  const target::CpuTarget cpu = codegen::DescribeTarget(*info);
  return absl::StrCat(cpu.arch, " ", cpu.vector_bits, "x", cpu.vector_registers,
                      cpu.masked_memory ? " masked" : "");
}

absl::StatusOr<TuneTask> TaskFromPrimFunc(const ir::IRModule& mod, const std::string& name,
                                          const target::CpuPolicy& policy) {
  ir::PrimFunc func = mod->Lookup(name).as_ref<ir::PrimFuncNode>();
  if (!func) return absl::NotFoundError(absl::StrCat("no PrimFunc '", name, "' in the module"));
  TuneTask task;
  task.name = name;
  ir::IRModuleBuilder builder;
  if (absl::Status s = builder.Add(mod->GetGlobalVar(name), func); !s.ok()) return s;
  task.mod = builder.Build();
  task.workload_hash = ir::StructuralHash(func);
  task.weight = 1;
  task.policy = policy;
  std::set<std::string> dims;
  for (const auto& [param, buffer] : func->buffer_map) {
    for (const ir::PrimExpr& d : buffer->shape) {
      ir::PostOrderVisit(d, [&](const ir::PrimExpr& e) {
        if (const auto* v = e.as<ir::VarNode>()) dims.insert(v->name);
      });
    }
  }
  task.symbolic_dims.assign(dims.begin(), dims.end());
  return task;
}

std::vector<pass::PassPtr> PassesBeforeScheduling(const backend::BuildOptions& options) {
  std::vector<pass::PassPtr> passes;
  for (pass::PassPtr& p : backend::Pipeline(options)) {
    if (p->name() == "DefaultSchedule") break;
    passes.push_back(std::move(p));
  }
  return passes;
}

absl::StatusOr<std::vector<TuneTask>> ExtractTasks(const ir::IRModule& mod,
                                                   const backend::BuildOptions& options) {
  absl::StatusOr<ir::IRModule> fused =
      backend::RunPasses(mod, PassesBeforeScheduling(options), options);
  if (!fused.ok()) return fused.status();
  CallSiteCounter counter;
  bool has_graph = false;
  for (const auto& [name, entry] : (*fused)->functions) {
    if (entry.second.as<ir::relax::FunctionNode>() != nullptr) {
      has_graph = true;
      counter.VisitExpr(entry.second.as_ref<ir::relax::FunctionNode>());
    }
  }
  std::vector<TuneTask> tasks;
  std::map<uint64_t, size_t> by_hash;
  for (const auto& [name, entry] : (*fused)->functions) {
    const auto* f = entry.second.as<ir::PrimFuncNode>();
    if (f == nullptr || ir::GetAttr(f->attrs, "tir.is_scheduled")) continue;
    int weight = has_graph ? counter.counts[name] : 1;
    if (weight == 0) continue;  // not called (a shape function's helper, say)
    absl::StatusOr<TuneTask> task = TaskFromPrimFunc(*fused, name, target::PolicyFor(options.cpu));
    if (!task.ok()) return task.status();
    auto [it, fresh] = by_hash.emplace(task->workload_hash, tasks.size());
    if (!fresh) {
      tasks[it->second].weight += weight;
      continue;
    }
    task->weight = weight;
    tasks.push_back(*std::move(task));
  }
  return tasks;
}

absl::StatusOr<std::vector<TuneTask>> ExtractTasksFor(const ir::IRModule& mod,
                                                      const std::string& target) {
  absl::StatusOr<codegen::LlvmTargetInfo> info = codegen::ParseTarget(target);
  if (!info.ok()) return info.status();
  backend::BuildOptions options;
  options.cpu = codegen::DescribeTarget(*info);
  return ExtractTasks(mod, options);
}

}  // namespace kiln::tune
