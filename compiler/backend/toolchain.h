// The toolchain after LLVM: linking an object into a shared library with ld.lld-16 (for any target
// triple), through the runtime's one subprocess helper; and the short path from a module of
// PrimFuncs to a loadable kernel library that tests, benchmarks and constant folding use.
#ifndef KILN_COMPILER_BACKEND_TOOLCHAIN_H_
#define KILN_COMPILER_BACKEND_TOOLCHAIN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"
#include "runtime/library.h"
#include "runtime/value.h"

namespace kiln::backend {

// Links `objects` (ELF relocatables) into one shared library's bytes; the temporary files live
// in a private directory removed before returning. A missing or failing linker is an Internal
// error with its output.
absl::StatusOr<std::string> LinkSharedLibrary(const std::vector<std::string>& objects);
absl::StatusOr<std::string> LinkSharedLibrary(const std::string& object);

// How many objects (threads) LLVM code generation splits a module's kernels into: the machine's
// cores, at most 4.
int CodegenThreads();

// The default schedule where none was given, the TIR lowering passes, LLVM and the link: the
// bytes of a loadable kernel library of every PrimFunc in `mod`. `quick`: LLVM at O1, for
// kernels run once (FoldConstant).
absl::StatusOr<std::string> BuildKernelLibrary(const ir::IRModule& mod, absl::string_view target,
                                               bool quick = false);

// The PrimFuncs of `kernels` made runnable on this machine: what FoldConstant runs on constants
// (its relax::HostKernelCompiler). Those of at most kMaxInterpretedIterations scalar steps are
// interpreted (tir/interpret.h: a batch norm's parameters over 512 channels take microseconds,
// where LLVM, the link and the load take a hundred milliseconds); the rest are compiled at O1.
inline constexpr int64_t kMaxInterpretedIterations = int64_t{1} << 20;
absl::StatusOr<std::map<std::string, runtime::Function>> LoadHostKernels(
    const ir::IRModule& kernels);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_TOOLCHAIN_H_
