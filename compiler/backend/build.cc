#include "compiler/backend/build.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "compiler/backend/codegen_passes.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/tir_expr.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/op_registry.h"
#include "compiler/target/cpu_policy.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/flops.h"
#include "compiler/tir/transform/transform.h"
#include "compiler/version.h"
#include "runtime/artifact.h"
#include "runtime/support/status_macros.h"

namespace kiln::backend {

namespace {

// The Relax operators a kernel computes, read off its name: LegalizeOps names a kernel after its
// operator ("conv2d", "add1"), FuseOps joins the members' names after "fused_". Longest match
// first, since operator names have underscores of their own ("log_softmax").
std::vector<std::string> KernelOperators(absl::string_view kernel) {
  static const auto* by_short_name = [] {
    auto* m = new std::map<std::string, std::string, std::greater<>>();
    for (const ir::relax::OpInfo* op : ir::relax::ListOps()) {
      m->emplace(op->name.substr(op->name.rfind('.') + 1), op->name);
    }
    return m;
  }();
  std::vector<std::string> ops;
  absl::string_view rest = kernel;
  const bool fused = absl::ConsumePrefix(&rest, "fused_");
  while (!rest.empty()) {
    const std::string* found = nullptr;
    size_t length = 0;
    for (const auto& [short_name, full] : *by_short_name) {
      if (short_name.size() > length && absl::StartsWith(rest, short_name)) {
        found = &full;
        length = short_name.size();
      }
    }
    if (found == nullptr) break;
    ops.push_back(*found);
    rest.remove_prefix(length);
    while (!rest.empty() && absl::ascii_isdigit(rest.front())) rest.remove_prefix(1);
    if (!fused) break;
    if (!absl::ConsumePrefix(&rest, "_")) break;
  }
  return ops;
}

// The pipeline and code generation in one pass context (timed, dumped and verified alike).
absl::StatusOr<BuiltModule> BuildWithOptions(const ir::IRModule& mod,
                                             const codegen::LlvmTargetInfo& target,
                                             const BuildOptions& options) {
  auto products = std::make_shared<CodegenProducts>();
  std::vector<pass::PassPtr> passes = Pipeline(options);
  for (pass::PassPtr& p : CodegenPasses(target, target::PolicyFor(options.cpu), products)) {
    passes.push_back(std::move(p));
  }
  KILN_RETURN_IF_ERROR(RunPasses(mod, passes, options).status());
  BuiltModule out;
  out.graph = std::move(products->graph);
  KILN_ASSIGN_OR_RETURN(out.executable, products->vm.executable.Serialize());
  out.kernels = std::move(products->kernels);
  out.memory = std::move(products->vm.memory);
  return out;
}

void Signature(const ir::relax::StructInfo& sinfo, kiln::v1::ValueSignature* out) {
  namespace relax = ir::relax;
  if (const auto* t = sinfo.as<relax::TensorStructInfoNode>()) {
    out->set_kind("tensor");
    if (!t->dtype.is_void()) out->set_dtype(t->dtype.ToString());
    if (const std::vector<ir::PrimExpr>* dims = t->dims()) {
      for (const ir::PrimExpr& d : *dims) {
        if (const int64_t* c = ir::AsConstInt(d)) {
          out->add_dims(std::to_string(*c));
        } else if (const auto* v = d.as<ir::VarNode>()) {
          out->add_dims(v->name);
        } else {
          out->add_dims("?");
        }
      }
    } else {
      for (int i = 0; i < t->ndim; ++i) out->add_dims("?");
    }
  } else if (const auto* tup = sinfo.as<relax::TupleStructInfoNode>()) {
    out->set_kind("tuple");
    for (const relax::StructInfo& f : tup->fields) Signature(f, out->add_fields());
  } else if (sinfo.as<relax::ShapeStructInfoNode>()) {
    out->set_kind("shape");
  } else if (sinfo.as<relax::PrimStructInfoNode>()) {
    out->set_kind("prim");
  } else {
    out->set_kind("object");
  }
}

}  // namespace

absl::StatusOr<BuiltModule> Build(const ir::IRModule& mod, absl::string_view target,
                                  const BuildOptions& given) {
  KILN_ASSIGN_OR_RETURN(codegen::LlvmTargetInfo info, codegen::ParseTarget(target));
  BuildOptions options = given;
  options.cpu = codegen::DescribeTarget(info);
  return BuildWithOptions(mod, info, options);
}

absl::StatusOr<std::string> BuildArtifact(const ir::IRModule& mod, absl::string_view target,
                                          const BuildOptions& given) {
  KILN_ASSIGN_OR_RETURN(codegen::LlvmTargetInfo info, codegen::ParseTarget(target));
  BuildOptions options = given;
  options.cpu = codegen::DescribeTarget(info);
  KILN_ASSIGN_OR_RETURN(BuiltModule built, BuildWithOptions(mod, info, options));
  const ir::IRModule& normalized = built.graph;
  kiln::v1::ArtifactProto artifact;
  kiln::v1::ArtifactManifest* manifest = artifact.mutable_manifest();
  manifest->set_compiler_version(CompilerIdentity());
  manifest->set_target(std::string(target));
  manifest->set_target_triple(info.triple);
  for (const std::string& feature : info.device_features) manifest->add_cpu_features(feature);
  for (const auto& [name, entry] : normalized->functions) {
    const auto* kernel = entry.second.as<ir::PrimFuncNode>();
    if (kernel != nullptr && ir::GetAttr(kernel->attrs, "kiln.tuned")) {
      manifest->add_tuned_kernels(name);
    }
    if (kernel != nullptr) {
      kiln::v1::KernelInfo* info = manifest->add_kernels();
      info->set_name(name);
      for (const std::string& op : KernelOperators(name)) info->add_fused_ops(op);
      info->set_flops(tir::EstimateFlops(entry.second.as_ref<ir::PrimFuncNode>()));
    }
    const auto* f = entry.second.as<ir::relax::FunctionNode>();
    if (f == nullptr) continue;
    kiln::v1::EntryFunction* fn = manifest->add_functions();
    fn->set_name(name);
    if (auto it = built.memory.find(name); it != built.memory.end()) {
      fn->set_planned_storage_bytes(it->second.storage_bytes);
      fn->set_planned_tensor_bytes(it->second.tensor_bytes);
    }
    for (const ir::relax::Var& p : f->params) {
      kiln::v1::ValueSignature* sig = fn->add_params();
      sig->set_name(p->name_hint);
      Signature(p->struct_info(), sig);
    }
    Signature(f->body->struct_info(), fn->mutable_result());
  }
  *artifact.mutable_executable() = std::move(built.executable);
  *artifact.mutable_kernels() = std::move(built.kernels);
  return runtime::SerializeArtifact(std::move(artifact));
}

}  // namespace kiln::backend
