// The build pipeline: the passes (compiler/pass/pass.h) a module goes through, in order, each
// with a name that `kiln compile --dump-after=NAME` shows the module after and
// `--time-passes` times.
//
//   CanonicalizeBindings  aliases, no-op match_casts and tuple projections removed
//   LegalizeOps           operators -> call_tir of TIR kernels
//   FoldConstant          kernels on constants evaluated now
//   DeadCodeElimination   unused bindings and private functions removed
//   FuseOps               chains and epilogues merged into fused kernels
//   DeadCodeElimination   the kernels fusion replaced removed
//   (schedule_passes)     e.g. ApplyTuningRecords: tuned kernels get their best record
//   DefaultSchedule       every kernel without a schedule gets the default one
//   ToNonDataflow         dataflow blocks become plain binding blocks
//   CallTIRRewrite        call_tir -> explicit output allocation + a direct kernel call
//   StaticPlanBlockMemory intermediates placed in one storage with reuse
//   (relax/transform/transform.h)
//
// Code generation follows as passes of the same context (codegen_passes.h): VMCodegen (with
// VMShapeLower — parameter and match_cast checks, symbolic dimensions in the shape heap,
// computed ones by generated shape functions), the TIR lowering passes over every PrimFunc
// (tir/transform/transform.h: LowerInitBlock ... Simplify), LLVM and Link; build.h runs them all.
#ifndef KILN_COMPILER_BACKEND_PIPELINE_H_
#define KILN_COMPILER_BACKEND_PIPELINE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/pass/instruments.h"
#include "compiler/pass/pass.h"
#include "compiler/relax/transform/fold_constant.h"
#include "compiler/target/cpu_target.h"

namespace kiln::backend {

// Whether the verifiers run after every pass unless asked: in debug builds, and wherever the
// environment sets KILN_VERIFY_PASSES=1 (every test does: .bazelrc), off otherwise.
bool VerifyPassesByDefault();

// This machine's CPU, described once (compiler/target/cpu_target.h).
const target::CpuTarget& HostCpuTarget();

struct BuildOptions {
  // The CPU the code is for: what layout conversion, weight packing and the schedule rules
  // shape kernels by (target::PolicyFor). Build() sets it from its target string.
  target::CpuTarget cpu = HostCpuTarget();
  bool fuse = true;            // FuseOps (off: one kernel per operator)
  bool fold_constants = true;  // FoldConstant
  bool pack_weights = true;    // PackConstantWeights (conv2d and matmul weights in vector blocks)
  bool nhwc_convs = true;      // ConvertConvLayout (NCHW convolutions computed in NHWC)
  ir::relax::FoldLimits fold_limits;
  // Pass names to dump after ("all" for every pass); each dump goes to `dump` as text.
  std::vector<std::string> dump_after;
  std::function<void(const std::string& pass, const std::string& text)> dump;
  // The Relax well-formedness checker and the TIR verifier after every pass, naming the pass
  // that broke the IR.
  bool verify = VerifyPassesByDefault();
  // When set, every pass and code generation step is timed into it.
  pass::PassTimer* timer = nullptr;
  // Passes run just before DefaultSchedule: kernels they schedule (mark "tir.is_scheduled")
  // keep that schedule. `kiln compile --tuning-db` puts ApplyTuningRecords here.
  std::vector<pass::PassPtr> schedule_passes;
};

// The graph-level passes `options` selects, in order (through StaticPlanBlockMemory).
std::vector<pass::PassPtr> Pipeline(const BuildOptions& options);

// The pass context `options` asks for: dumps, verification, timing.
pass::PassContext MakePassContext(const BuildOptions& options);

// Every name --dump-after accepts, the code-generation passes included.
std::vector<std::string> DumpablePassNames();

// Fails on a dump_after name that is not a pass, listing the valid ones.
absl::Status CheckDumpAfter(const BuildOptions& options);

// Normalizes `mod` and runs `passes` over it in MakePassContext(options). A failing pass's error
// is prefixed with its name.
absl::StatusOr<ir::IRModule> RunPasses(const ir::IRModule& mod,
                                       const std::vector<pass::PassPtr>& passes,
                                       const BuildOptions& options);

// Whether `options` asks for a dump after `pass`.
bool WantsDump(const BuildOptions& options, const std::string& pass);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_PIPELINE_H_
