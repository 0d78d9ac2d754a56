// The toolchain after LLVM: linking an object into a shared library with ld.lld-16 (for any target
// triple), through the runtime's one subprocess helper; and the short path from a module of
// PrimFuncs to a loadable kernel library that tests, benchmarks and constant folding use.
#ifndef KILN_COMPILER_BACKEND_TOOLCHAIN_H_
#define KILN_COMPILER_BACKEND_TOOLCHAIN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"

namespace kiln::backend {

// Links `object` (an ELF relocatable) into a shared library's bytes; the temporary files live in
// a private directory removed before returning. A missing or failing linker is an Internal error
// with its output.
absl::StatusOr<std::string> LinkSharedLibrary(const std::string& object);

// The default schedule where none was given, the TIR lowering passes, LLVM and the link: the
// bytes of a loadable kernel library of every PrimFunc in `mod`.
absl::StatusOr<std::string> BuildKernelLibrary(const ir::IRModule& mod, absl::string_view target);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_TOOLCHAIN_H_
