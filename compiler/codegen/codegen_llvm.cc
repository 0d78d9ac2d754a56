#include "compiler/codegen/codegen_llvm.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/codegen/fast_math.h"
#include "compiler/codegen/kernel_codegen.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/tir_functor.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "runtime/kernel_abi.h"

namespace kiln::codegen {
namespace {

using namespace ir;  // NOLINT
using kernel::KernelCodeGen;

std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const LlvmTargetInfo& target) {
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (t == nullptr) return nullptr;
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;  // honor the contract flags on fmul/fadd
  return std::unique_ptr<llvm::TargetMachine>(
      t->createTargetMachine(target.triple, target.cpu, target.features, options, llvm::Reloc::PIC_,
                             std::nullopt, llvm::CodeGenOpt::Aggressive));
}

// The LLVM module of `mod`'s PrimFuncs, or of those `only` names when given; the ABI version
// symbol goes into the module that `with_abi_version` says (one per library).
absl::StatusOr<std::unique_ptr<llvm::Module>> BuildModule(
    llvm::LLVMContext& ctx, const IRModule& mod, const LlvmTargetInfo& target,
    const std::vector<std::string>* only = nullptr, bool with_abi_version = true) {
  auto module = std::make_unique<llvm::Module>("kiln", ctx);
  module->setTargetTriple(target.triple);
  module->setDataLayout(target.data_layout);
  const bool masked_tails = std::find(target.device_features.begin(), target.device_features.end(),
                                      "avx512f") != target.device_features.end();
  KernelCodeGen gen(ctx, module.get(), masked_tails, kernel::Int8DotFor(target.device_features));
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<PrimFuncNode>();
    if (f == nullptr) continue;
    if (only != nullptr && std::find(only->begin(), only->end(), name) == only->end()) continue;
    absl::Status s = gen.Generate(name, *f);
    if (!s.ok()) return s;
  }
  // Owned by the module.
  if (with_abi_version) {
    new llvm::GlobalVariable(
        *module, llvm::Type::getInt32Ty(ctx), true, llvm::GlobalValue::ExternalLinkage,
        llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), KILN_KERNEL_ABI_VERSION),
        "kiln_abi_version");
  }
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*module, &os)) {
    return absl::InternalError(
        absl::StrCat("code generation produced invalid LLVM IR: ", os.str()));
  }
  return module;
}

}  // namespace

absl::StatusOr<std::string> EmitLlvmIr(const IRModule& lowered, const LlvmTargetInfo& target) {
  llvm::LLVMContext ctx;
  absl::StatusOr<std::unique_ptr<llvm::Module>> module = BuildModule(ctx, lowered, target);
  if (!module.ok()) return module.status();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, nullptr);
  return os.str();
}

namespace {

// The largest kernels of the test and benchmark models are under 2,000 instructions.
constexpr size_t kHugeFunctionInstructions = 20000;

// Whether a function of `module` has more than `limit` instructions.
bool HasFunctionLargerThan(const llvm::Module& module, size_t limit) {
  for (const llvm::Function& f : module) {
    size_t count = 0;
    for (const llvm::BasicBlock& block : f) {
      if (kernel::CountPast(block, limit, &count)) return true;
    }
  }
  return false;
}

// LLVM's warnings and remarks off stderr: "loop not vectorized: the optimizer was unable to
// perform the requested transformation" is LLVM declining a loop hint of the schedule, not a
// fault of the kernel, and a tune's candidates printed dozens. Errors still take LLVM's way.
struct QuietDiagnostics : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    return info.getSeverity() != llvm::DS_Error;
  }
};

// One object of the PrimFuncs `only` names (all when null), in its own LLVM context.
absl::StatusOr<std::string> CompilePart(const IRModule& lowered, const LlvmTargetInfo& target,
                                        const std::vector<std::string>* only, bool with_abi_version,
                                        bool quick = false) {
  llvm::LLVMContext ctx;
  ctx.setDiagnosticHandler(std::make_unique<QuietDiagnostics>());
  absl::StatusOr<std::unique_ptr<llvm::Module>> module =
      BuildModule(ctx, lowered, target, only, with_abi_version);
  if (!module.ok()) return module.status();
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(target);
  if (!tm) return absl::InternalError(absl::StrCat("no LLVM target machine for ", target.triple));
  // LLVM's O3 pipeline and register allocation grow faster than a function (an expression of
  // 10^4 terms in one kernel: minutes). Only a hostile or absurd input makes a kernel this large:
  // its part gets LLVM's O0 pipeline and code generation (the fast register allocator), in time
  // linear in its size.
  const bool huge = HasFunctionLargerThan(**module, kHugeFunctionInstructions);
  if (huge) tm->setOptLevel(llvm::CodeGenOpt::None);
  // The new pass manager's O3 pipeline (O1 when quick, O0 when huge).
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      huge ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
           : pb.buildPerModuleDefaultPipeline(quick ? llvm::OptimizationLevel::O1
                                                    : llvm::OptimizationLevel::O3);
  mpm.run(**module, mam);
  // Object code.
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager emit;
  if (tm->addPassesToEmitFile(emit, out, nullptr, llvm::CGFT_ObjectFile)) {
    return absl::InternalError("LLVM cannot emit object files for this target");
  }
  emit.run(**module);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace

absl::StatusOr<std::string> CompileToObject(const IRModule& lowered, const LlvmTargetInfo& target) {
  return CompilePart(lowered, target, nullptr, true);
}

absl::StatusOr<std::vector<std::string>> CompileToObjects(const IRModule& lowered,
                                                          const LlvmTargetInfo& target, int parts,
                                                          bool quick) {
  // The kernels dealt out in turn, in the module's order (fused kernels of one model are of
  // comparable size).
  std::vector<std::vector<std::string>> names(static_cast<size_t>(std::max(parts, 1)));
  size_t next = 0;
  for (const auto& [name, entry] : lowered->functions) {
    if (!entry.second.as<PrimFuncNode>()) continue;
    names[next++ % names.size()].push_back(name);
  }
  while (names.size() > 1 && names.back().empty()) names.pop_back();
  std::vector<absl::StatusOr<std::string>> objects(names.size(), absl::UnknownError(""));
  std::vector<std::thread> threads;
  for (size_t p = 1; p < names.size(); ++p) {
    threads.emplace_back(
        [&, p] { objects[p] = CompilePart(lowered, target, &names[p], false, quick); });
  }
  objects[0] = CompilePart(lowered, target, &names[0], true, quick);
  for (std::thread& t : threads) t.join();
  std::vector<std::string> out;
  for (absl::StatusOr<std::string>& o : objects) {
    if (!o.ok()) return o.status();
    out.push_back(std::move(*o));
  }
  return out;
}

}  // namespace kiln::codegen
