// The toolchain after LLVM: linking an object into a shared library with ld.lld-16 (for any target
// triple), through the runtime's one subprocess helper; and the short path from a module of
// PrimFuncs to a loadable kernel library that tests, benchmarks and constant folding use.
#ifndef KILN_COMPILER_BACKEND_TOOLCHAIN_H_
#define KILN_COMPILER_BACKEND_TOOLCHAIN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"
#include "runtime/library.h"

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

// The PrimFuncs of `kernels` compiled quickly for this machine and loaded: what FoldConstant
// runs on constants (its relax::HostKernelCompiler).
absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> LoadHostKernels(
    const ir::IRModule& kernels);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_TOOLCHAIN_H_
