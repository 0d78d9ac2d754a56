// The TVMScript printer: an IRModule as the text TVM prints (`@I.ir_module class Module:`,
// `@T.prim_func`, `@R.function`, `T.grid`, `with T.block(...)`, `R.Tensor((n, 4),
// dtype="float32")`, ...). Deterministic, and exact: ParseScript(PrintScript(m)) is
// structurally equal to m for modules in normal form, and printing that again gives the same
// bytes.
//
// Conventions that keep it exact: literals carry their dtype unless the context implies it (a
// bare integer is int32 in TIR and int64 in Relax shapes; an operand's sibling fixes a bare
// literal's dtype); every shape variable is declared at the top of its function
// (`n = T.int64()`); a function without `global_symbol` is printed `private=True`.
#ifndef KILN_COMPILER_SCRIPT_PRINTER_H_
#define KILN_COMPILER_SCRIPT_PRINTER_H_

#include <string>

#include "compiler/ir/module.h"

namespace kiln::script {

std::string PrintScript(const ir::IRModule& mod);

}  // namespace kiln::script

#endif  // KILN_COMPILER_SCRIPT_PRINTER_H_
